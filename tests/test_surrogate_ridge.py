"""The surrogate's ridge fit (:func:`autopdp.trust.surrogate._ridge_gcv`) against scikit-learn's RidgeCV and against
leave-one-out refits done one row at a time: the same penalty, coefficients, leave-one-out errors and importances."""

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import Ridge, RidgeCV

from autopdp.pd.data import as_frame
from autopdp.trust import surrogate as S


def _designs():
    """(name, centred design, y): well conditioned, rank-deficient (centred one-hot blocks beside splines), wide for
    its rows, and a rare level of two rows (hat values near 1)."""
    rng = np.random.default_rng(0)
    out = []
    X = rng.normal(loc=2.0, size=(400, 6))
    y = X @ rng.normal(size=6) + rng.normal(scale=0.5, size=400)
    out.append(("gaussian", X - X.mean(axis=0), y))
    n = 3000
    frame = pd.DataFrame({"a": rng.uniform(0, 1, n), "b": rng.gamma(1.0, 2.0, n),
                          "c": pd.Categorical(rng.choice(list("pqrst"), n, p=[0.5, 0.2, 0.2, 0.09, 0.01])),
                          "d": pd.Categorical(rng.choice(["u", "v"], n))})
    kinds = {"a": "numeric", "b": "numeric", "c": "categorical", "d": "categorical"}
    design, _ = S._design(as_frame(frame), np.arange(n), list(kinds), kinds, 6, None)
    y = np.sin(6 * frame["a"].to_numpy()) + np.log1p(frame["b"].to_numpy()) + (frame["c"] == "t").to_numpy() \
        + rng.normal(scale=0.3, size=n)
    out.append(("splines and one-hot", design, y))
    out.append(("few rows", design[:40] - design[:40].mean(axis=0), y[:40]))
    rare = np.zeros((60, 3))
    rare[:, 0] = rng.normal(size=60)
    rare[:2, 1] = 1.0  # a level of two rows
    rare[2:, 2] = 1.0
    rare -= rare.mean(axis=0)
    out.append(("a two-row level", rare, rare[:, 0] + 3 * (np.arange(60) < 2) + rng.normal(scale=0.1, size=60)))
    return out


@pytest.mark.parametrize("name,design,y", _designs(), ids=[d[0] for d in _designs()])
def test_the_ridge_fit_is_ridgecvs(name, design, y):
    alpha, coef, mse = S._ridge_gcv(design, y, S.ALPHAS)
    ref = RidgeCV(alphas=S.ALPHAS, gcv_mode="svd", store_cv_results=True).fit(design, y)
    assert alpha == ref.alpha_
    # the mean squared leave-one-out error of every penalty (RidgeCV keeps each row's squared error)
    np.testing.assert_allclose(mse, ref.cv_results_.mean(axis=0), rtol=1e-7)
    # the fitted values (the coefficients of a rank-deficient design are determined only on its row space)
    scale = np.std(y)
    np.testing.assert_allclose(design @ coef, design @ ref.coef_, rtol=0, atol=1e-7 * scale)
    if np.linalg.matrix_rank(design) == design.shape[1]:
        np.testing.assert_allclose(coef, ref.coef_, rtol=1e-6, atol=1e-9)


def test_the_leave_one_out_errors_are_those_of_refits_without_each_row():
    """An independent check of the formula: refit without row i (scikit-learn's Ridge, intercept fitted) and
    predict row i, for every row and three penalties."""
    rng = np.random.default_rng(3)
    n, p = 50, 4
    X = rng.normal(size=(n, p)) * [1.0, 3.0, 0.1, 1.0]
    X -= X.mean(axis=0)
    y = X @ [1.0, -0.5, 4.0, 0.0] + 2.0 + rng.normal(scale=0.7, size=n)
    alphas = np.array([1e-3, 0.5, 20.0])
    _, _, mse = S._ridge_gcv(X, y, alphas)
    for k, alpha in enumerate(alphas):
        errors = []
        for i in range(n):
            keep = np.arange(n) != i
            fit = Ridge(alpha=alpha).fit(X[keep], y[keep])
            errors.append(y[i] - fit.predict(X[i:i + 1])[0])
        np.testing.assert_allclose(mse[k], np.mean(np.square(errors)), rtol=1e-9)


def test_the_chunks_do_not_change_the_fit(monkeypatch):
    _, design, y = _designs()[1]
    whole = S._ridge_gcv(design, y, S.ALPHAS)
    monkeypatch.setattr(S, "_CHUNK", 7)  # 3000 rows in 429 chunks, the last of 4 rows
    chunked = S._ridge_gcv(design, y, S.ALPHAS)
    assert chunked[0] == whole[0]
    np.testing.assert_allclose(chunked[2], whole[2], rtol=1e-12)
    np.testing.assert_array_equal(chunked[1], whole[1])


def test_surrogate_importances_are_those_of_ridgecv():
    """The whole surrogate (its design on a 20,000-row sample of 30,000, its fit, the importances and the fidelity)
    against the same design fitted by RidgeCV."""
    rng = np.random.default_rng(5)
    n = 30_000
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.uniform(size=n),
                      "c": pd.Categorical(rng.choice(list("xyzw"), n)), "d": rng.integers(0, 2, n).astype(float)})
    kinds = {"a": "numeric", "b": "numeric", "c": "categorical", "d": "numeric"}
    preds = np.tanh(X["a"].to_numpy()) * (1 + X["b"].to_numpy()) + 0.3 * (X["c"] == "z").to_numpy() \
        + 0.1 * X["d"].to_numpy()
    got = S.fit_surrogate(preds, as_frame(X), kinds, random_state=2)
    rows = np.sort(np.random.default_rng(2).choice(n, size=20_000, replace=False))
    design, spans = S._design(as_frame(X), rows, list(kinds), kinds, 6, None)
    ref = RidgeCV(alphas=S.ALPHAS, gcv_mode="svd").fit(design, preds[rows])
    for name, lo, hi in zip(kinds, spans[:-1], spans[1:]):
        np.testing.assert_allclose(got.importance[name], np.std(design[:, lo:hi] @ ref.coef_[lo:hi]), rtol=1e-7)
    y = preds[rows]
    fidelity = 1 - np.sum((y - ref.predict(design)) ** 2) / np.sum((y - y.mean()) ** 2)
    np.testing.assert_allclose(got.fidelity, fidelity, rtol=1e-9)
    assert 0.9 < got.fidelity < 1.0

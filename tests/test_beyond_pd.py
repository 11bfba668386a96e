"""StratPD, ALE, out-of-distribution share and surrogate importance against known answers."""

import numpy as np
import pandas as pd
import pytest

import autopdp
from autopdp import AuditConfig
from autopdp import audit
from autopdp.trust.ale import ale_2d
from autopdp.pd.data import as_frame
from autopdp.trust.ood import SupportModel
from autopdp.trust.surrogate import fit_surrogate


def test_stratpd_recovers_the_report_example():
    rng = np.random.default_rng(0)
    n = 2000
    X = pd.DataFrame({"x1": rng.uniform(0, 3, n), "x2": rng.uniform(0, 3, n)})
    y = X.x1**2 + X.x2 + 100
    r1 = autopdp.stratpd(X, y, "x1")
    r2 = autopdp.stratpd(X, y, "x2")
    assert r1.pd[0] == 0 and r2.pd[0] == 0
    assert np.abs(r1.pd - (r1.x**2 - r1.x[0] ** 2)).max() < 0.15  # over a range of 9
    assert np.abs(r2.pd - (r2.x - r2.x[0])).max() < 0.05
    assert r1.counts.min() >= 5 and len(r1.x) > 1000


def test_stratpd_gives_a_near_copy_a_flat_curve():
    rng = np.random.default_rng(1)
    n = 3000
    x1 = rng.uniform(0, 3, n).round(1)
    X = pd.DataFrame({"x1": x1, "x2": (x1 + rng.normal(0, 0.1, n)).round(1)})
    r = autopdp.stratpd(X, x1**2, "x2")
    assert len(r.x) > 10 and np.abs(r.pd).max() < 0.05
    # while the PD of a model that learned x1 only is flat in x2 by construction, the marginal relation is steep
    assert np.corrcoef(X.x2, x1**2)[0, 1] > 0.9


def test_catstratpd_category_effects():
    rng = np.random.default_rng(2)
    n = 3000
    c = rng.choice(list("abc"), n)
    X = pd.DataFrame({"c": c, "z": rng.uniform(0, 1, n)})
    y = np.where(c == "a", 1.0, np.where(c == "b", 3.0, -1.0)) + 2 * X.z
    r = autopdp.stratpd(X, y, "c")
    assert list(r.x) == ["a", "b", "c"]
    np.testing.assert_allclose(r.pd, [0.0, 2.0, -2.0], rtol=0, atol=0.05)
    assert r.counts.sum() > 0.9 * n


def test_stratpd_with_the_columns_encoded_once_is_the_same_curve():
    """The audit encodes the columns once for every feature's StratPD; each curve must be the one computed
    alone, numeric and categorical, with missing values in both kinds of column."""
    from autopdp.errors import InputError
    from autopdp.trust.modelfree import encode_columns

    rng = np.random.default_rng(4)
    n = 2000
    X = pd.DataFrame({"c": pd.Categorical(rng.choice(list("abcd"), n)), "x": rng.normal(size=n),
                      "z": rng.uniform(0, 1, n)})
    X.loc[rng.choice(n, 60, replace=False), "x"] = np.nan
    X.loc[rng.choice(n, 40, replace=False), "c"] = np.nan
    y = X.x.fillna(0) ** 2 + (X.c == "b") + X.z
    encoded = encode_columns(X)
    assert encoded.shape == (n, 3)
    for f in X.columns:
        alone, shared = autopdp.stratpd(X, y, f), autopdp.stratpd(X, y, f, encoded=encoded)
        assert list(alone.x) == list(shared.x)
        np.testing.assert_array_equal(alone.pd, shared.pd)
        np.testing.assert_array_equal(alone.counts, shared.counts)
    with pytest.raises(InputError, match="encode_columns"):
        autopdp.stratpd(X, y, "x", encoded=encoded[:, :2])


def test_ale_of_a_linear_model_is_exact():
    rng = np.random.default_rng(3)
    X = pd.DataFrame({"a": rng.uniform(0, 1, 500), "b": rng.normal(size=500)})
    r = autopdp.ale(lambda d: 2 * d["a"].to_numpy() - d["b"].to_numpy(), X, "a")
    np.testing.assert_allclose(np.diff(r.pd) / np.diff(r.x), 2.0, rtol=0, atol=1e-10)
    mids = (r.pd[:-1] + r.pd[1:]) / 2
    assert abs(np.sum(mids * r.counts)) < 1e-9  # centred
    assert r.counts.sum() == 500


def test_ale_2d_of_a_product_is_the_centred_product():
    rng = np.random.default_rng(4)
    X = pd.DataFrame({"a": rng.uniform(0, 1, 20000), "b": rng.uniform(0, 1, 20000)})
    r = ale_2d(lambda d: d["a"].to_numpy() * d["b"].to_numpy(), X, ["a", "b"], bins=5)
    ea, eb = r.x
    np.testing.assert_allclose(r.pd, np.outer(ea - 0.5, eb - 0.5), rtol=0, atol=0.01)
    r0 = ale_2d(lambda d: d["a"].to_numpy() + d["b"].to_numpy() ** 2, X, ["a", "b"], bins=5)
    assert np.abs(r0.pd).max() < 1e-9  # additive: no interaction


@pytest.fixture(scope="module")
def correlated():
    rng = np.random.default_rng(5)
    n = 1500
    x1 = rng.uniform(0, 1, n)
    return pd.DataFrame({"x1": x1, "x2": x1 + rng.normal(0, 0.03, n), "x3": rng.uniform(0, 1, n)})


def test_pd_and_ale_differ_where_the_pd_extrapolates(correlated):
    X = correlated

    def model(d):  # far from the diagonal x1 = x2 the model does something the data never shows
        x1, x2, x3 = (d[c].to_numpy() for c in ("x1", "x2", "x3"))
        return x1 + 5 * (x2 - x1) ** 2 + x3

    a = audit(model, X, config=AuditConfig(pairs=False, grid_resolution=15))
    assert a.ranking("ale_divergence")["features"].iloc[0] in (("x1",), ("x2",))
    s1, s3 = a.score("x1", "ale_divergence"), a.score("x3", "ale_divergence")
    assert s1.value > 0.1 and s3.value < 1e-6
    ale_x1 = autopdp.ale(model, X, "x1")
    slope = np.polyfit(ale_x1.x, ale_x1.pd, 1)[0]
    assert abs(slope - 1.0) < 0.1  # locally the model moves like x1
    pd_x1 = a.pd("x1").average[0]
    assert pd_x1[0] > pd_x1[len(pd_x1) // 2] < pd_x1[-1]  # the PD is U-shaped from extrapolation


def test_ood_flags_corners_of_a_correlated_pair_and_near_copies(correlated):
    X = correlated
    a = audit(lambda d: d["x1"].to_numpy() + d["x3"].to_numpy(), X,
              config=AuditConfig(grid_resolution=10, grid_resolution_2d=8))
    s = a.score(("x1", "x2"), "ood_share")
    ood = s.details["ood"]
    assert ood[0, -1] > 0.9 and ood[-1, 0] > 0.9
    assert np.all(np.diag(ood) < 0.2)
    one_copy = a.score("x1", "ood_share").value
    one_indep = a.score("x3", "ood_share").value
    assert one_copy > 0.4 and one_indep < 0.1 and one_copy > 5 * one_indep
    html = a.to_html()
    assert "Can this PDP be trusted?" in html and "Caution: PDPs computed mostly from unrealistic rows" in html


def test_support_model_on_real_rows_is_mostly_inside(correlated):
    frame = as_frame(correlated)
    sm = SupportModel(frame, {c: "numeric" for c in correlated.columns})
    # the grid values of an independent feature keep rows realistic
    share = sm.share(("x3",), (np.linspace(0.05, 0.95, 10),))
    assert share.max() < 0.15


def test_surrogate_importance_orders_an_additive_model_like_its_coefficients():
    rng = np.random.default_rng(6)
    X = pd.DataFrame(rng.uniform(0, 1, size=(2000, 4)), columns=["a", "b", "c", "d"])
    coef = {"a": 0.5, "b": 3.0, "c": 1.5, "d": 0.0}
    preds = sum(v * X[k] for k, v in coef.items()).to_numpy()
    s = fit_surrogate(preds, as_frame(X), {c: "numeric" for c in X.columns})
    order = sorted(s.importance, key=s.importance.get, reverse=True)
    assert order == ["b", "c", "a", "d"]
    assert s.fidelity > 0.999
    np.testing.assert_allclose(s.importance["b"], 3.0 / np.sqrt(12), rtol=0.05)
    a = audit(lambda d: sum(v * d[k].to_numpy() for k, v in coef.items()), X,
              config=AuditConfig(grid_resolution=6, grid_resolution_2d=3))
    assert a.ranking("surrogate_importance")["features"].iloc[0] == ("b", "c")
    assert {"stratpd", "ale_divergence", "ood_share", "surrogate_importance"} <= set(a.scores.columns)


def test_surrogate_importance_of_features_with_bases_of_different_widths():
    """Each feature's importance is read from its own columns of the design: a categorical feature (one column
    per level) between numeric ones (a spline basis each, and a linear term for a 2-value one)."""
    rng = np.random.default_rng(7)
    n = 6000
    X = pd.DataFrame({"a": rng.uniform(0, 1, n), "c": pd.Categorical(rng.choice(["x", "y", "z"], n)),
                      "s": rng.integers(0, 2, n).astype(float), "b": rng.uniform(0, 1, n)})
    x = (X["c"] == "x").to_numpy()
    preds = X["a"].to_numpy() + 2.0 * x + 0.5 * X["s"].to_numpy()
    kinds = {"a": "numeric", "c": "categorical", "s": "numeric", "b": "numeric"}
    s = fit_surrogate(preds, as_frame(X), kinds)
    assert s.fidelity > 0.999
    np.testing.assert_allclose(s.importance["a"], np.std(X["a"]), rtol=0.01)
    np.testing.assert_allclose(s.importance["c"], 2.0 * np.std(x), rtol=0.01)
    np.testing.assert_allclose(s.importance["s"], 0.5 * np.std(X["s"]), rtol=0.01)
    assert s.importance["b"] < 0.01


def test_ale_divergence_on_2d_surfaces():
    rng = np.random.default_rng(8)
    n = 3000
    a_ = rng.uniform(0, 1, n)
    X = pd.DataFrame({"a": a_, "b": a_ + rng.normal(0, 0.03, n), "c": rng.uniform(0, 1, n), "d": rng.uniform(0, 1, n)})

    def model(d):
        a, b, c, e = (d[k].to_numpy() for k in "abcd")
        return a * b * 0 + 8 * np.maximum(b - a, 0) * np.maximum(a - b + 1, 0) * (b > a + 0.2) + c * e

    res = audit(model, X, config=AuditConfig(grid_resolution=8, grid_resolution_2d=6))
    independent = res.score(("c", "d"), "ale_divergence")
    correlated = res.score(("a", "b"), "ale_divergence")
    assert independent.available and correlated.available
    assert independent.details["relative"] < 0.1  # c*d: PD and ALE see the same product (up to binning)
    assert correlated.value > 4 * independent.value  # the PD's corner comes from rows the data never has

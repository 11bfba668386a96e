"""PD outside the grid from one walk per row and tree (issue 32): the same PD as partial_dependence at
those values, on the tree models and with sample weights."""

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestRegressor

from autopdp import partial_dependence
from autopdp.pd.data import as_frame
from autopdp.scores.coverage import _pd_at, outside_grid


def _data(seed=0, n=1500):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({
        "a": rng.lognormal(0, 1, n),  # skewed: rows well beyond the 95th percentile
        "b": rng.normal(size=n),
        "k": rng.integers(0, 60, n).astype(np.int64),
        "c": pd.Categorical(rng.choice(["u", "v", "w"], n)),
    })
    X.loc[rng.random(n) < 0.05, "b"] = np.nan
    z = np.log1p(X["a"]) - 0.8 * X["b"].fillna(0) + 0.03 * X["k"] + (X["c"] == "v")
    return X, z.to_numpy(), rng


@pytest.mark.parametrize("weighted", [False, True])
def test_pd_at_few_values_equals_partial_dependence(weighted):
    X, z, rng = _data()
    y = (z + rng.normal(size=z.size) > np.median(z)).astype(int)
    hgb = HistGradientBoostingClassifier(max_iter=40, categorical_features="from_dtype", random_state=0).fit(X, y)
    Xn = X.drop(columns="c")
    rf = RandomForestRegressor(n_estimators=15, max_depth=6, random_state=0).fit(Xn.fillna(0), z)
    w = rng.gamma(0.5, 2.0, z.size) if weighted else None
    values = {"a": np.array([0.01, 9.5]), "b": np.array([2.75]), "k": np.array([3, 57], dtype=np.int64)}
    for model, frame in ((hgb, X), (rf, Xn.fillna(0))):
        kwargs = dict(response="auto", target=None, method="auto", sample_weight=w)
        got = _pd_at(model, as_frame(frame), values, kwargs)
        ref = partial_dependence(model, frame, list(values), custom_values=values, kind="average",
                                 sample_weight=w, method="tree")
        for res in ref:
            grid, avg = got[res.features[0]]
            np.testing.assert_array_equal(grid, np.asarray(res.grid[0], dtype=float))
            np.testing.assert_allclose(avg, np.asarray(res.average), rtol=1e-12, atol=1e-12)
            assert avg.shape == np.asarray(res.average).shape


def test_outside_grid_is_the_same_on_the_walk_and_by_prediction():
    X, z, rng = _data(1)
    y = (z + rng.normal(size=z.size) > np.median(z)).astype(int)
    model = HistGradientBoostingClassifier(max_iter=30, categorical_features="from_dtype", random_state=0).fit(X, y)
    frame = as_frame(X)
    res1 = partial_dependence(model, X, ["a", "b", "k"], kind="average")
    sd = model.predict_proba(X).std(axis=0)
    walk = outside_grid(model, frame, res1, prediction_std=sd, materiality=0.05,
                        pd_kwargs=dict(method="auto"))
    brute = outside_grid(model, frame, res1, prediction_std=sd, materiality=0.05,
                         pd_kwargs=dict(method="brute"))
    assert len(walk) == len(brute) >= 2  # the skewed column has rows above its grid, at least
    for o, b in zip(walk, brute):
        assert (o.feature, o.side, o.share, o.median, o.material) == (b.feature, b.side, b.share, b.median, b.material)
        assert o.pd_beyond == pytest.approx(b.pd_beyond, abs=1e-12)


@pytest.mark.parametrize("seed", range(12))
def test_the_rows_beyond_each_grid_end_are_counted_and_their_median_found_as_numpy_does(seed):
    """Issue 54: the share of finite values beyond each end of a 1D grid and their median come from exact order
    statistics over the row partitions (no column read whole here); known answers from numpy on the column, with
    ties, missing and infinite values."""
    from types import SimpleNamespace

    from autopdp.pd.data import Frame
    from autopdp.scores.coverage import _beyond_grid, _rounded

    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 400))
    v = rng.integers(0, 30, n).astype(float) if seed % 2 else rng.standard_t(3, n)
    v[rng.random(n) < 0.1] = np.nan
    v[rng.random(n) < 0.02] = np.inf
    frame = Frame(data=pd.DataFrame({"x": v}), names=("x",), keys=("x",))
    finite = v[np.isfinite(v)]
    grid = np.quantile(finite, [0.1, 0.5, 0.85])
    r = SimpleNamespace(features=("x",), kinds=("numeric",), grid=[grid])
    expected = []
    for side, mask, edge in (("below", finite < grid[0], 0), ("above", finite > grid[-1], -1)):
        if mask.mean() >= 0.01:
            expected.append((side, mask.mean(), _rounded(float(np.median(finite[mask]))), edge))
    got = [(side, share, med, edge) for _, side, share, med, edge in _beyond_grid(frame, [r], 0.01)]
    assert got == expected

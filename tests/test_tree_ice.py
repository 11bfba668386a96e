"""The per-row exact tree kernel: ICE, PD and std equal brute force on every row.

Boosted classifiers' probabilities (sigmoid/softmax of the sum of trees), native
categorical splits and missing values, checked against the brute-force engine
(which predicts every augmented row with the model itself) on all rows.
"""

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import (
    GradientBoostingClassifier, HistGradientBoostingClassifier, HistGradientBoostingRegressor, RandomForestClassifier,
)

from autopdp import partial_dependence

FEATURES = ["a", "e", "b", ("a", "c"), ("e", "b"), ("d", "e")]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    n = 300
    X = pd.DataFrame(rng.normal(size=(n, 4)), columns=list("abcd"))
    X["e"] = pd.Categorical(rng.choice(list("pqrst"), n))
    score = X.a * X.c + 1.5 * (X.e == "q") - (X.e == "t") + X.b
    X.loc[rng.choice(n, 30, replace=False), "b"] = np.nan  # missing values the trees route
    y_bin = (score + rng.normal(0, 0.3, n) > 0.3).astype(int)
    y_multi = np.digitize(score, [-0.5, 0.8])
    y_count = rng.poisson(np.exp(0.3 * np.nan_to_num(score.to_numpy())))
    return X, y_bin, y_multi, y_count


def _numeric(X):
    return X.assign(e=X.e.cat.codes.astype(float), b=X.b.fillna(0.0))


def _check(model, X, atol=1e-9, **kw):
    fast = partial_dependence(model, X, FEATURES, kind="both", method="tree", grid_resolution=8, **kw)
    brute = partial_dependence(model, X, FEATURES, kind="both", method="brute", grid_resolution=8, **kw)
    for f, b in zip(fast, brute):
        assert f.method == "tree" and b.method == "brute"
        assert f.individual.shape == b.individual.shape == (len(f.targets), len(X), *f.grid_shape)
        np.testing.assert_allclose(f.individual, b.individual, rtol=0, atol=atol)
        np.testing.assert_allclose(f.average, b.average, rtol=0, atol=atol)
        np.testing.assert_allclose(f.std, b.std, rtol=0, atol=atol)
        np.testing.assert_allclose(f.stderr, b.stderr, rtol=0, atol=atol)
    return fast


def test_hgb_binary_probabilities_native_categorical_and_missing(data):
    X, y_bin, _, _ = data
    model = HistGradientBoostingClassifier(max_iter=40, categorical_features="from_dtype", random_state=0)
    fast = _check(model.fit(X, y_bin), X)
    assert any("exact" in n for n in fast[0].notes)


def test_hgb_multiclass_probabilities(data):
    X, _, y_multi, _ = data
    model = HistGradientBoostingClassifier(max_iter=25, categorical_features="from_dtype", random_state=0)
    fast = _check(model.fit(X, y_multi), X)
    assert fast[0].average.shape[0] == 3
    # class probabilities at each grid point sum to one, curve by curve
    np.testing.assert_allclose(fast[0].individual.sum(axis=0), 1.0, rtol=0, atol=1e-12)


def test_hgb_probabilities_with_sample_weights_and_a_chosen_class(data):
    X, _, y_multi, _ = data
    model = HistGradientBoostingClassifier(max_iter=15, categorical_features="from_dtype", random_state=0).fit(X, y_multi)
    w = np.random.default_rng(1).uniform(0.1, 4.0, len(X))
    _check(model, X, sample_weight=w, target=2)


def test_gradient_boosting_classifier_probabilities(data):
    X, y_bin, y_multi, _ = data
    Xn = _numeric(X)
    _check(GradientBoostingClassifier(n_estimators=30, max_depth=3, random_state=0).fit(Xn, y_bin), Xn)
    _check(GradientBoostingClassifier(n_estimators=10, max_depth=2, random_state=0).fit(Xn, y_multi), Xn)
    _check(GradientBoostingClassifier(n_estimators=20, loss="exponential", random_state=0).fit(Xn, y_bin), Xn)


def test_forest_ice_and_std_exact(data):
    X, _, y_multi, _ = data
    Xn = _numeric(X)
    _check(RandomForestClassifier(n_estimators=15, max_depth=6, random_state=0).fit(Xn, y_multi), Xn)


def test_poisson_link(data):
    X, _, _, y_count = data
    model = HistGradientBoostingRegressor(loss="poisson", max_iter=30, categorical_features="from_dtype", random_state=0)
    _check(model.fit(X, y_count), X)


def test_decision_function_margin_and_ice_subsample(data):
    X, y_bin, _, _ = data
    model = HistGradientBoostingClassifier(max_iter=20, categorical_features="from_dtype", random_state=0).fit(X, y_bin)
    (fast,) = partial_dependence(model, X, [("a", "e")], response="decision_function", subsample=40, random_state=2,
                                 method="tree")
    (brute,) = partial_dependence(model, X, [("a", "e")], response="decision_function", method="brute")
    np.testing.assert_allclose(fast.average, brute.average, rtol=0, atol=1e-9)
    np.testing.assert_allclose(fast.individual, brute.individual[:, fast.ice_rows], rtol=0, atol=1e-9)


def test_xgboost_classifier_categorical_and_missing(data):
    xgb = pytest.importorskip("xgboost")
    X, y_bin, y_multi, _ = data
    kw = dict(n_estimators=30, max_depth=4, enable_categorical=True, tree_method="hist", random_state=0)
    # XGBoost sums its trees in float32 (the model's own rounding, ~1e-7 on probabilities)
    _check(xgb.XGBClassifier(**kw).fit(X, y_bin), X, atol=2e-6)
    _check(xgb.XGBClassifier(**kw).fit(X, y_multi), X, atol=2e-6)


def test_xgboost_json_extraction_equals_the_tree_dump(data):
    """The JSON model (the fast path) and the tree dump (kept for deleted nodes and vector leaves) give the
    same trees: same splits, directions, categories and children; leaf values equal to the dump's printed
    precision (the JSON holds XGBoost's float32 values exactly)."""
    xgb = pytest.importorskip("xgboost")
    from autopdp.pd.tree.extract import CATEGORICAL, _xgboost_from_dump, _xgboost_from_json

    X, y_bin, y_multi, _ = data
    kw = dict(n_estimators=15, max_depth=4, enable_categorical=True, tree_method="hist", random_state=0)
    for y, objective in ((y_bin, "binary:logistic"), (y_multi, "multi:softprob")):
        booster = xgb.XGBClassifier(**kw).fit(X, y).get_booster()
        rounds = booster.num_boosted_rounds()
        a = _xgboost_from_json(booster, objective, rounds).build(1, float32=True)
        b = _xgboost_from_dump(booster, objective, rounds).build(1, float32=True)
        assert (a.kind == CATEGORICAL).any() and a.missing_left.any() and not a.missing_left.all()
        for field in ("feature", "threshold", "kind", "missing_left", "left", "right", "roots", "catbits", "catknown"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)
        np.testing.assert_allclose(a.value, b.value, rtol=1e-6, atol=1e-8)


def test_lightgbm_classifier_categorical_and_missing(data):
    lgb = pytest.importorskip("lightgbm")
    X, y_bin, y_multi, _ = data
    kw = dict(n_estimators=30, num_leaves=8, min_child_samples=5, verbose=-1, random_state=0)
    _check(lgb.LGBMClassifier(**kw).fit(X, y_bin), X)
    _check(lgb.LGBMClassifier(**kw).fit(X, y_multi), X)


def test_extraction_that_does_not_reproduce_the_model_is_refused(data):
    """A model whose trees are edited after the check still cannot fool the path: the check reads the model."""
    from autopdp.pd.data import as_frame
    from autopdp.pd.tree.fastpath import plan_tree_path
    from autopdp.pd.response import make_adapter
    from autopdp.pd.tree.exact_pd import TreePathUnavailable

    X, y_bin, _, _ = data
    model = HistGradientBoostingClassifier(max_iter=5, categorical_features="from_dtype", random_state=0).fit(X, y_bin)
    plan = plan_tree_path(model, make_adapter(model, probe=X.iloc[:5]), as_frame(X))
    plan.forest.value[:] *= 2.0  # a wrong extraction
    with pytest.raises(TreePathUnavailable, match="do not reproduce the model's predictions"):
        plan.kernel(np.ones(len(X)))


def test_xgboost_unlisted_categories_go_right_not_to_missing():
    """Adult-like: 40 levels, missing values routed left; a partition split lists only some levels and
    every unlisted level must follow XGBoost's No branch, not the missing-value direction."""
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(21)
    n = 600
    levels = [f"c{i:02d}" for i in range(40)]
    g = pd.Series(rng.choice(levels, n))
    g[rng.choice(n, 60, replace=False)] = np.nan
    X = pd.DataFrame({"g": pd.Categorical(g, categories=levels), "x": rng.normal(size=n)})
    effect = {lev: (1.5 if i % 3 == 0 else -1.0 if i % 3 == 1 else 0.2) for i, lev in enumerate(levels)}
    score = X.g.map(effect).astype(float).fillna(2.0) + X.x
    y = (score + rng.normal(0, 0.3, n) > 0.3).astype(int)
    model = xgb.XGBClassifier(n_estimators=25, max_depth=4, enable_categorical=True, tree_method="hist",
                              random_state=0).fit(X, y)
    fast = partial_dependence(model, X, ["g", ("g", "x")], kind="both", method="tree", grid_resolution=6)
    brute = partial_dependence(model, X, ["g", ("g", "x")], kind="both", method="brute", grid_resolution=6)
    for f, b in zip(fast, brute):
        assert f.method == "tree"
        np.testing.assert_allclose(f.individual, b.individual, rtol=0, atol=2e-6)
        np.testing.assert_allclose(f.std, b.std, rtol=0, atol=2e-6)


def test_pairs_on_deep_trees_with_three_way_interactions_equal_brute():
    """2D sets come from each row's 1D ICE plus the leaves with conditions on both features.

    Deep trees on a three-way interaction have many leaves whose paths break the row's own
    conditions on two or more features; every pair's ICE surface must still equal brute force,
    for a sigmoid and a softmax link, with grids of different sizes in one call.
    """
    rng = np.random.default_rng(11)
    n = 400
    X = pd.DataFrame(rng.normal(size=(n, 5)), columns=list("pqrst"))
    X["u"] = pd.Categorical(rng.choice(list("abcdef"), n))
    signal = X.p * X.q * X.r + np.sin(2 * X.s) * (X.u == "b") + X.t * X.p
    y2 = (signal + rng.normal(0, 0.2, n) > 0).astype(int)
    y3 = np.digitize(signal, [-0.4, 0.4])
    features = [("p", "q"), ("q", "r"), ("p", "r"), ("s", "u"), ("t", "u"), ("p", "t")]
    for y in (y2, y3):
        model = HistGradientBoostingClassifier(max_iter=30, max_leaf_nodes=63, min_samples_leaf=5,
                                               categorical_features="from_dtype", random_state=0).fit(X, y)
        custom = {"p": np.linspace(-2, 2, 13), "t": np.linspace(-1.5, 1.5, 5)}
        fast = partial_dependence(model, X, features, kind="both", method="tree", grid_resolution=9,
                                  custom_values=custom)
        brute = partial_dependence(model, X, features, kind="both", method="brute", grid_resolution=9,
                                   custom_values=custom)
        for f, b in zip(fast, brute):
            assert f.method == "tree" and f.grid_shape == b.grid_shape
            np.testing.assert_allclose(f.individual, b.individual, rtol=0, atol=1e-9)
            np.testing.assert_allclose(f.std, b.std, rtol=0, atol=1e-9)


def test_cell_corners_equal_the_ice_surface_at_those_points():
    """ALE reads each row's response at the 4 corners of its cell only (``ExactICE.moved``); they
    must be the full exact ICE surface's values there, for every row, class and pair."""
    from autopdp.pd.tree.exact_ice import ExactICE

    rng = np.random.default_rng(5)
    n = 300
    X = pd.DataFrame(rng.normal(size=(n, 4)), columns=list("pqrs"))
    X.loc[rng.choice(n, 20, replace=False), "r"] = np.nan
    signal = X.p * X.q + np.nan_to_num(X.r) * X.s + X.p
    for y in ((signal > 0).astype(int), np.digitize(signal, [-0.5, 0.5])):
        model = HistGradientBoostingClassifier(max_iter=25, max_leaf_nodes=31, random_state=0).fit(X, y)
        source = ExactICE(model, X)
        pairs = [(0, 1), (2, 3), (0, 3)]
        grids = [(np.linspace(-2, 2, 9), np.linspace(-1.5, 1.5, 6)), (np.linspace(-1, 1, 5), np.linspace(-2, 2, 11)),
                 (np.linspace(-2, 2, 9), np.linspace(-2, 2, 11))]
        lower = [np.column_stack([rng.integers(0, ga.size - 1, n), rng.integers(0, gb.size - 1, n)])
                 for ga, gb in grids]
        full = source.ice(pairs, grids)
        corners = source.moved(pairs, grids, lower)
        rows = np.arange(n)
        for surface, got, low in zip(full, corners, lower):
            assert got.shape == (surface.shape[0], n, 2, 2)
            for da in (0, 1):
                for db in (0, 1):
                    want = surface[:, rows, low[:, 0] + da, low[:, 1] + db]
                    np.testing.assert_allclose(got[:, :, da, db], want, rtol=0, atol=1e-12)


def test_pairs_of_a_sigmoid_model_equal_brute_whichever_way_each_row_is_computed(monkeypatch):
    """A binary model's 2D ICE takes each row's sigmoid from exp factors of its 1D ICE where no leaf
    has conditions on both features, and an exp per cell elsewhere and for rows whose scores are too
    large for the factors.  Rows forced onto the per-cell path must give the same surfaces."""
    import autopdp.pd.tree.pair_kernels as tk

    rng = np.random.default_rng(8)
    n = 300
    X = pd.DataFrame(rng.normal(size=(n, 4)), columns=list("pqrs"))
    y = (X.p * X.q + X.r - 0.5 * X.s + rng.normal(0, 0.3, n) > 0).astype(int)
    model = HistGradientBoostingClassifier(max_iter=30, random_state=0).fit(X, y)
    pairs = [("p", "q"), ("r", "s"), ("p", "s")]
    brute = partial_dependence(model, X, pairs, kind="both", method="brute", grid_resolution=7)
    factors = tk.sigmoid_factors

    def half_per_cell(r1, raw0, link, scale, lengths):
        e1, e0 = factors(r1, raw0, link, scale, lengths)
        assert e0.shape == (raw0.shape[0],) and (e0 > 0).all()
        e0[::2] = 0.0  # the per-cell path, as for a row with |score| >= 200
        return e1, e0

    for patch in (None, half_per_cell):
        if patch is not None:
            monkeypatch.setattr(tk, "sigmoid_factors", patch)
        fast = partial_dependence(model, X, pairs, kind="both", method="tree", grid_resolution=7)
        for f, b in zip(fast, brute):
            assert f.method == "tree"
            np.testing.assert_allclose(f.individual, b.individual, rtol=0, atol=1e-9)
            np.testing.assert_allclose(f.std, b.std, rtol=0, atol=1e-9)


def test_sigmoid_factors_leave_rows_with_large_scores_to_the_exp_per_cell():
    from autopdp.pd.tree.pair_kernels import sigmoid_factors

    r1 = np.zeros((3, 2, 4, 1))
    r1[0, 0, :2, 0] = [1.0, -2.0]
    r1[1, 1, 0, 0] = 250.0  # too large: exp(250) times another factor could overflow
    r1[2, 1, 3, 0] = 300.0  # padding beyond the slot's 3 grid points: not a score
    raw0 = np.array([[0.5], [0.0], [-1.0]])
    e1, e0 = sigmoid_factors(r1, raw0, 1, 1.0, np.array([4, 3]))
    np.testing.assert_array_equal(e0, [np.exp(0.5), 0.0, np.exp(-1.0)])
    np.testing.assert_array_equal(e1[0, 0, :2], np.exp([-1.0, 2.0]))
    assert sigmoid_factors(r1, raw0, 1, 300.0, np.array([4, 3]))[1].tolist() == [0.0, 0.0, 0.0]
    assert sigmoid_factors(r1, raw0, 0, 1.0, np.array([4, 3]))[1].size == 0  # identity link: no factors

"""The trust stage on the exact tree path: ALE from exact per-row ICE, one tree plan per audit.

ALE needs the model's value at the two edges of each row's interval (1D) or the
four corners of its cell (2D).  On the tree path those values are read from the
exact per-row kernel instead of predicting on modified copies of the data; the
curves must equal the predicted ones to floating-point accuracy.
"""

import itertools

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier, RandomForestRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OrdinalEncoder

import autopdp
from autopdp.auditing import pipeline as audit_module
from autopdp.pd.tree import fastpath
from autopdp.pd.response import make_adapter
from autopdp.trust.ale import ale, ale_2d, ale_curves_exact
from autopdp.config import AuditConfig
from autopdp.pd.data import as_frame
from autopdp.pd.tree.exact_ice import ExactICE
from autopdp.pd.tree.exact_pd import TreePathUnavailable


@pytest.fixture(scope="module")
def mixed():
    rng = np.random.default_rng(11)
    n = 400
    X = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
    X["d"] = rng.integers(0, 6, n).astype(float)
    X["g"] = pd.Categorical(rng.choice(list("xyz"), n))
    X.loc[rng.choice(n, 25, replace=False), "b"] = np.nan  # missing values the trees route
    y = ((X.a * X.d + np.nan_to_num(X.b) + (X.g == "y") + rng.normal(0, 0.3, n)) > 1).astype(int)
    return X, y


def _compare(model, X, numeric, atol=1e-9):
    frame = as_frame(X)
    source = ExactICE(model, X)
    pairs = list(itertools.combinations(numeric, 2))
    curves = ale_curves_exact(source, frame, numeric, pairs, bins_1d={c: 12 for c in numeric},
                              bins_2d={p: 6 for p in pairs})
    assert set(curves) == set(numeric) | set(pairs)
    for c in numeric:
        ref = ale(model, X, c, bins=12)
        np.testing.assert_array_equal(curves[c].x, ref.x)
        np.testing.assert_array_equal(curves[c].counts, ref.counts)
        np.testing.assert_allclose(curves[c].pd, ref.pd, rtol=0, atol=atol)
    for p in pairs:
        ref = ale_2d(model, X, p, bins=6)
        np.testing.assert_array_equal(curves[p].counts, ref.counts)
        np.testing.assert_allclose(curves[p].pd, ref.pd, rtol=0, atol=atol)
    # not a constant: the comparison has something to compare
    assert max(np.ptp(curves[c].pd) for c in numeric) > 0.05
    return curves


def test_exact_ale_equals_predicted_ale_hgb_native_categorical_and_missing(mixed):
    X, y = mixed
    model = HistGradientBoostingClassifier(max_iter=30, categorical_features="from_dtype", random_state=0).fit(X, y)
    _compare(model, X, ["a", "b", "d"])


def test_exact_ale_equals_predicted_ale_forest_behind_an_ordinal_encoder(mixed):
    X, y = mixed
    X = X.assign(b=X.b.fillna(0.0))
    enc = make_column_transformer((OrdinalEncoder(), ["g"]), remainder="passthrough", verbose_feature_names_out=False)
    model = make_pipeline(enc, RandomForestClassifier(n_estimators=30, min_samples_leaf=3, random_state=0)).fit(X, y)
    _compare(model, X, ["a", "c", "d"])


def test_exact_ice_refuses_a_model_without_trees(mixed):
    X, y = mixed
    with pytest.raises(TreePathUnavailable):
        ExactICE(lambda Z: np.zeros(len(Z)), X)


def test_audit_ale_divergence_same_on_tree_and_brute_paths():
    rng = np.random.default_rng(5)
    X = pd.DataFrame(rng.uniform(-1, 1, size=(300, 4)), columns=list("pqrs"))
    y = X.p * X.q + X.r ** 2 + rng.normal(0, 0.05, 300)
    model = RandomForestRegressor(n_estimators=25, min_samples_leaf=4, random_state=0).fit(X, y)
    base = dict(utilities=("monotonicity", "ale_divergence"), grid_resolution=8, grid_resolution_2d=5)
    tree = autopdp.audit(model, X, y, config=AuditConfig(**base))
    brute = autopdp.audit(model, X, y, config=AuditConfig(method="brute", **base))
    a = tree.scores["ale_divergence"].to_numpy(dtype=float)
    b = brute.scores["ale_divergence"].to_numpy(dtype=float)
    assert np.isfinite(a).all() and len(a) == 4 + 6
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-9)


def test_one_tree_plan_per_audit(monkeypatch):
    """1D PDs, 2D PDs, the outside-grid check and ALE share one extracted and verified plan."""
    built = []
    original = fastpath.TreePlan.__init__

    def counting(self, *args, **kwargs):
        built.append(1)
        original(self, *args, **kwargs)

    monkeypatch.setattr(fastpath.TreePlan, "__init__", counting)
    rng = np.random.default_rng(2)
    X = pd.DataFrame(rng.normal(size=(200, 3)), columns=list("uvw"))
    y = (X.u + X.v * X.w > 0).astype(int)
    model = RandomForestClassifier(n_estimators=10, random_state=0).fit(X, y)
    a = autopdp.audit(model, X, y, config=AuditConfig(grid_resolution=6, grid_resolution_2d=4))
    assert len(a.results_2d) == 3
    assert len(built) == 1
    # outside an audit every call plans for itself (nothing is kept)
    autopdp.partial_dependence(model, X, ["u"], kind="average")
    assert len(built) == 2


def test_the_models_response_on_every_row_is_predicted_once_per_audit_on_the_tree_path():
    """The trees' check against the model's own response on every row serves the scores too (issue 32): the model
    predicts the whole data once, and the scores read the same response as a prediction would give."""
    rng = np.random.default_rng(4)
    X = pd.DataFrame(rng.normal(size=(300, 3)), columns=list("uvw"))
    y = (X.u + X.v * X.w > 0).astype(int)
    data = X.to_numpy()

    class Counted(RandomForestClassifier):
        whole = []

        def predict_proba(self, X):
            # the data as it is (the audit's self-check also predicts all 300 rows, with a feature moved)
            if len(X) == 300 and np.array_equal(np.asarray(X, dtype=float), data):
                Counted.whole.append(1)
            return super().predict_proba(X)

    model = Counted(n_estimators=10, random_state=0).fit(X, y)
    seen = {}
    original = audit_module.ScoringInputs

    def keep(**kwargs):
        seen.update(kwargs)
        return original(**kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(audit_module, "ScoringInputs", keep)
        autopdp.audit(model, X, y, config=AuditConfig(grid_resolution=6, grid_resolution_2d=4))
    assert len(Counted.whole) == 1
    np.testing.assert_array_equal(seen["predictions"], model.predict_proba(X)[:, 1:])
    # outside an audit nothing is kept
    adapter = make_adapter(model, "auto", None, probe=X.iloc[:5])
    assert fastpath.model_response(model, adapter, as_frame(X)) is None


def test_beyond_max_rows_2d_tree_the_2d_pds_and_their_ale_use_the_same_sampled_rows():
    """On more rows than ``max_rows_2d_tree`` the tree path's 2D PDs average over that many sampled rows (the note
    says so, with the Monte-Carlo error), the 1D PDs still over every row, and each 2D ALE is computed on the 2D PDs'
    own rows.  Known answers: the row counts, the exact 2D ALE of those rows from a fresh source (the same curve), and
    the sampled 2D PD within 4.5 Monte-Carlo standard errors of the 2D PD over every row, cell by cell."""
    from autopdp.trust import checks

    rng = np.random.default_rng(3)
    n = 1500
    X = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
    y = X.a * X.b + X.c + rng.normal(0, 0.3, n)
    model = RandomForestRegressor(n_estimators=20, min_samples_leaf=5, random_state=0).fit(X, y)
    cfg = AuditConfig(max_rows_2d_tree=400, pairs=[("a", "b")], grid_resolution_2d=5)
    seen = {}
    original = checks._exact_ale_curves

    def spy(model_, frame, results, config, frame_2d=None, scheduler=None):
        out = original(model_, frame, results, config, frame_2d, scheduler)
        seen.update(frame=frame, frame_2d=frame_2d, curves=out)
        return out

    checks._exact_ale_curves = spy
    try:
        a = autopdp.audit(model, X, y, config=cfg, progress=False)
    finally:
        checks._exact_ale_curves = original
    one = {r.features: r for r in a.results if r.ndim == 1}
    two = [r for r in a.results if r.ndim == 2][0]
    assert all(r.n_rows == n for r in one.values()) and two.n_rows == 400
    assert any("400 of the 1,500 rows (max_rows_2d_tree; the exact tree path)" in note for note in a.notes)
    assert seen["frame"].n_rows == n and seen["frame_2d"].n_rows == 400
    curve_2d = seen["curves"][(("a", "b"), "prediction")]
    assert curve_2d.counts.sum() == 400 and seen["curves"][(("a",), "prediction")].counts.sum() == n
    fresh = ale_curves_exact(ExactICE(model, seen["frame_2d"]), seen["frame_2d"], [], [("a", "b")],
                             bins_1d={}, bins_2d={("a", "b"): checks._ale_bins_2d(two)})
    np.testing.assert_allclose(fresh[("a", "b")].pd, curve_2d.pd, rtol=0, atol=1e-12)
    full = autopdp.partial_dependence(model, X, [("a", "b")], custom_values={"a": two.grid[0], "b": two.grid[1]},
                                      kind="average")[0]
    gap = np.abs(np.asarray(two.average) - np.asarray(full.average)) / np.asarray(two.stderr)
    assert np.nanmax(gap) < 4.5, np.nanmax(gap)


def _moved_vs_ice(model, X, features, pairs, grid_points=7, source=None):
    """ExactICE.moved against the whole-grid ICE read at each row's interval ends and cell corners."""
    frame = as_frame(X)
    source = ExactICE(model, X) if source is None else source
    rng = np.random.default_rng(3)
    n = frame.n_rows
    grids = {f: np.unique(np.quantile(np.asarray(X[f], dtype=float)[np.isfinite(np.asarray(X[f], dtype=float))],
                                      np.linspace(0, 1, grid_points))) for f in features}
    lower = {f: rng.integers(0, grids[f].size - 1, n) for f in features}
    pos = {f: frame.position_of(f) for f in features}
    sets = [(f,) for f in features] + list(pairs)
    moved = source.moved([tuple(pos[f] for f in s) for s in sets], [tuple(grids[f] for f in s) for s in sets],
                         [np.column_stack([lower[f] for f in s]) for s in sets])
    rows = np.arange(n)
    for s, got in zip(sets, moved):
        (whole,) = source.ice([tuple(pos[f] for f in s)], [tuple(grids[f] for f in s)])
        if len(s) == 1:
            want = np.stack([whole[:, rows, lower[s[0]] + d] for d in (0, 1)], axis=-1)
        else:
            a, b = lower[s[0]], lower[s[1]]
            want = np.stack([np.stack([whole[:, rows, a + da, b + db] for db in (0, 1)], axis=-1) for da in (0, 1)],
                            axis=-2)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    return moved


def test_moved_equals_ice_hgb_multiclass_and_many_batches(mixed):
    """Softmax link (3 classes) and more sets than one walk takes (62 versions): 5 features and 10 pairs."""
    X, _ = mixed
    X = X.assign(e=np.random.default_rng(1).normal(size=len(X)))
    y = pd.cut(X.a + X.c, 3, labels=False)
    model = HistGradientBoostingClassifier(max_iter=15, categorical_features="from_dtype", random_state=0).fit(X, y)
    feats = ["a", "b", "c", "d", "e"]
    _moved_vs_ice(model, X, feats, list(itertools.combinations(feats, 2)) * 2)


def test_moved_equals_ice_forest_regressor(mixed):
    X, _ = mixed
    X = X.drop(columns="g").fillna(0.0)
    model = RandomForestRegressor(n_estimators=20, random_state=0).fit(X, X.a * X.c + X.d)
    _moved_vs_ice(model, X, ["a", "c", "d"], [("a", "c"), ("c", "d")])


def test_moved_equals_ice_xgboost_float32_and_lightgbm_zero_as_missing(mixed):
    xgb = pytest.importorskip("xgboost")
    lgb = pytest.importorskip("lightgbm")
    X, y = mixed
    X = X.drop(columns="g")
    X.loc[X.index[:40], "d"] = 0.0  # zeros LightGBM may route as missing
    xm = xgb.XGBClassifier(n_estimators=20, max_depth=4, random_state=0, n_jobs=1).fit(X, y)
    _moved_vs_ice(xm, X, ["a", "b", "d"], [("a", "b"), ("b", "d")])
    lm = lgb.LGBMRegressor(n_estimators=20, num_leaves=8, min_child_samples=5, verbose=-1, random_state=0,
                           zero_as_missing=True, n_jobs=1).fit(X, X.a - X.d)
    _moved_vs_ice(lm, X, ["a", "b", "d"], [("a", "d")])


def test_moved_keeps_apart_the_versions_of_one_column_with_other_grids_or_rows(mixed):
    """Versions moving one column share a split decision only with the same grid, lower indices and step: the
    same column with another grid, or the same grid with other rows' intervals, in one walk (issue 32)."""
    X, _ = mixed
    X = X.drop(columns="g").fillna(0.0)
    model = RandomForestRegressor(n_estimators=15, random_state=0).fit(X, X.a * X.b + X.d)
    frame = as_frame(X)
    source = ExactICE(model, X)
    rng = np.random.default_rng(5)
    n = frame.n_rows
    pa, pb = frame.position_of("a"), frame.position_of("b")
    ga7 = np.quantile(X.a, np.linspace(0, 1, 7))
    ga5 = np.quantile(X.a, np.linspace(0, 1, 5))
    gb = np.quantile(X.b, np.linspace(0, 1, 6))
    l7, l7b = rng.integers(0, 6, n), rng.integers(0, 6, n)
    l5, lb = rng.integers(0, 4, n), rng.integers(0, 5, n)
    sets = [((pa,), (ga7,), l7[:, None]), ((pa,), (ga7,), l7b[:, None]), ((pa,), (ga5,), l5[:, None]),
            ((pa, pb), (ga7, gb), np.column_stack([l7, lb])), ((pa, pb), (ga5, gb), np.column_stack([l5, lb]))]
    moved = source.moved([s[0] for s in sets], [s[1] for s in sets], [s[2] for s in sets])
    rows = np.arange(n)
    for (positions, grids, lower), got in zip(sets, moved):
        (whole,) = source.ice([positions], [grids])
        if len(positions) == 1:
            want = np.stack([whole[:, rows, lower[:, 0] + d] for d in (0, 1)], axis=-1)
        else:
            a, b = lower[:, 0], lower[:, 1]
            want = np.stack([np.stack([whole[:, rows, a + da, b + db] for db in (0, 1)], axis=-1) for da in (0, 1)],
                            axis=-2)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    # the walk's groups: column a moved to 3 distinct (grid, rows) pairs, two steps each
    from autopdp.pd.tree.moves import _groups

    requests = [(s[0], s[1]) for s in sets]
    _, fgroups, gmask, group_of, versions = _groups(requests, [s[2] for s in sets], list(range(len(sets))),
                                                    frame.n_features, False)
    assert versions == 2 + 2 + 2 + 4 + 4
    assert (fgroups[pa] >= 0).sum() == 6 and (fgroups[pb] >= 0).sum() == 2


def test_moved_maps_every_grid_in_one_preprocessing_call_and_checks_each_feature_once(mixed, monkeypatch):
    """Through a preprocessing step, ALE's grids reach the trees' columns with one preprocessing call for all of
    them, and whether a column is a function of its feature alone is checked over the data once per feature, not
    once per grid (issue 32: 12 probes of ~30 ms each on full Adult); the values still equal the ICE."""
    X, y = mixed
    X = X.drop(columns="g").fillna(0.0)
    pipe = make_pipeline(make_column_transformer((OrdinalEncoder(), ["d"]), remainder="passthrough"),
                         HistGradientBoostingClassifier(max_iter=10, random_state=0)).fit(X, y)
    source = ExactICE(pipe, X)
    plan = source.plan
    assert plan.encodes
    calls, checks = [], []
    real_pre = plan._pre
    monkeypatch.setattr(plan, "_pre", lambda Xp: calls.append(len(Xp)) or real_pre(Xp))
    real_groupby = pd.Series.groupby
    monkeypatch.setattr(pd.Series, "groupby", lambda self, *a, **k: checks.append(1) or real_groupby(self, *a, **k))
    moved = _moved_vs_ice(pipe, X, ["a", "d"], [("a", "d")], source=source)
    assert len(moved) == 3
    assert len(calls) == 1  # one call mapped both features' grids (the reference ICE reuses the maps)
    assert len(checks) == 2  # features a and d, over every row, once each
    c_a, _ = plan.mapped(source._specs([(0,)], [(np.array([0.0, 1.0]),)])[0][0])
    c_d, _ = plan.mapped(source._specs([(3,)], [(np.array([1.0, 2.0]),)])[0][0])
    assert len(calls) == 3 and len(checks) == 2  # new grids of the same features: probed, not checked again
    assert {(0, c_a), (3, c_d)} <= plan._function_of


def test_a_row_samples_own_scores_are_read_from_the_full_datas_plan():
    """2D ALE on the 2D PDs' row sample: the sample's plan reads its rows' own raw scores from the full data's
    checked kernel instead of walking the trees again, bit for bit the same as walking them."""
    import warnings

    from autopdp.pd.tree.fastpath import plan_tree_path, share_subset, shared_plans

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=3000), "b": rng.uniform(size=3000),
                      "c": pd.Categorical(rng.choice(list("xyz"), 3000))})
    y = (X["a"] + (X["c"] == "x") > 0.3).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = HistGradientBoostingClassifier(max_iter=30, categorical_features="from_dtype").fit(X, y)
    frame = as_frame(X)
    adapter = make_adapter(model, "auto", None, probe=X.iloc[:5])
    rows = np.sort(rng.choice(3000, 700, replace=False))
    sample = frame.take_rows(rows)
    with shared_plans():
        plan_tree_path(model, adapter, frame).prepare(np.ones(3000))
        share_subset(model, frame, rows, sample)
        kernel = plan_tree_path(model, adapter, sample).kernel(np.ones(700))
        assert kernel._own_raw is not None  # read, not walked
        read = kernel.own_raw().copy()
        kernel._own_raw = None
        np.testing.assert_array_equal(read, kernel.own_raw())  # walked again: the same bits

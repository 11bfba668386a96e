"""Brute force through a column-separable Pipeline (autopdp.pd.pipeline_blocks): the same numbers as the plain
brute-force path and as scikit-learn's brute-force partial_dependence, and the plain path wherever the
substitution does not apply."""

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.compose import make_column_transformer
from sklearn.impute import SimpleImputer
from sklearn.inspection import partial_dependence as sk_pd
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import (
    FunctionTransformer, KBinsDiscretizer, MaxAbsScaler, MinMaxScaler, OneHotEncoder, OrdinalEncoder,
    PolynomialFeatures, RobustScaler, StandardScaler,
)

from autopdp import partial_dependence
from autopdp.pd.data import as_frame
from autopdp.pd.engine import brute_force_many
from autopdp.pd.grids import build_spec
from autopdp.pd.pipeline_blocks import NOTE, BlocksUnavailable, plan_blocks
from autopdp.pd.response import make_adapter


def _frame(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({
        "a": rng.normal(size=n),
        "c": rng.choice(["red", "green", "blue", "grey"], n),
        "b": rng.uniform(0, 10, n),
        "k": rng.choice(["x", "y", "z"], n).astype(object),
        "d": rng.integers(0, 5, n).astype(float),
    })
    X.loc[rng.random(n) < 0.1, "k"] = np.nan
    X.loc[rng.random(n) < 0.1, "b"] = np.nan
    return X


def _target(X):
    b = X.b.fillna(5.0)
    return X.a * 2 + (X.c == "red") * 1.5 - (X.k == "y") * 1.0 + 0.3 * b + 0.2 * X.a * X.d


CATS = ["c", "k"]


def _classifier(sparse: bool):
    ct = make_column_transformer(
        (make_pipeline(SimpleImputer(strategy="most_frequent"),
                       OneHotEncoder(handle_unknown="ignore", sparse_output=sparse)), CATS),
        (make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), ["a", "b"]),
        remainder="passthrough", sparse_threshold=1.0 if sparse else 0.0)
    return make_pipeline(ct, LogisticRegression(max_iter=1000))


def _regressor():
    """Every other recognised per-column transformer, an intermediate step and a KBinsDiscretizer's one-hot."""
    ct = make_column_transformer(
        (make_pipeline(SimpleImputer(strategy="constant", fill_value="none"), OrdinalEncoder()), ["k"]),
        (OneHotEncoder(drop="first", sparse_output=False), ["c"]),
        (make_pipeline(SimpleImputer(add_indicator=True), RobustScaler()), ["b"]),
        (MinMaxScaler(), ["a"]),
        (KBinsDiscretizer(n_bins=3, encode="onehot-dense", quantile_method="averaged_inverted_cdf"), ["d"]),
        (MaxAbsScaler(), ["a", "d"]),
        sparse_threshold=0.0)
    return make_pipeline(ct, StandardScaler(), Ridge(alpha=0.5))


def _specs(frame, positions, resolution=7):
    return [build_spec(frame, p, categorical=frame.names[p] in CATS, grid_resolution=resolution,
                       percentiles=(0.05, 0.95), grid_method="quantile") for p in positions]


SETS = [[0], [1], [2], [3], [4], [0, 1], [3, 2], [1, 3]]


def _both(model, X, w=None, centered=False, sets=SETS):
    frame = as_frame(X)
    adapter = make_adapter(model, probe=X.iloc[:5])
    plan = plan_blocks(model, adapter, frame)
    spec_sets = [_specs(frame, s) for s in sets]
    kw = dict(sample_weight=w, keep_individual=True, centered=centered, max_batch_bytes=2e5)
    plain = brute_force_many(adapter, frame, spec_sets, **kw)
    fast = brute_force_many(adapter, frame, spec_sets, blocks=plan, **kw)
    return plan, plain, fast


def _same(plain, fast):
    for p, f in zip(plain, fast):
        assert f.method == p.method == "brute"
        assert NOTE in f.notes and NOTE not in p.notes
        for a, b in ((p.average, f.average), (p.std, f.std), (p.stderr, f.stderr), (p.individual, f.individual)):
            np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("weighted", [False, True])
def test_classifier_same_as_plain_and_sklearn(sparse, weighted):
    X = _frame()
    y = (_target(X) > 1.5).astype(int)
    model = _classifier(sparse).fit(X, y)
    w = np.random.default_rng(3).uniform(0.2, 3.0, len(X)) if weighted else None
    plan, plain, fast = _both(model, X, w)
    assert plan.sparse is sparse
    _same(plain, fast)
    for r in fast:
        fl = list(r.features)
        custom = {n: list(g) if k == "categorical" else g for n, g, k in zip(fl, r.grid, r.kinds)}
        ref = sk_pd(model, X, fl, custom_values=custom, categorical_features=[f for f in fl if f in CATS] or None,
                    method="brute", kind="average", sample_weight=w)
        np.testing.assert_allclose(r.average, ref["average"], rtol=0, atol=1e-12)


def test_classifier_ice_known_answer():
    """One row's ICE curve by substitution is the pipeline's own prediction with the feature set."""
    X = _frame()
    model = _classifier(True).fit(X, (_target(X) > 1.5).astype(int))
    _, _, fast = _both(model, X, sets=[[1], [2]])
    for r, name in zip(fast, ["c", "b"]):
        for i in (0, 17, 299):
            rows = pd.concat([X.iloc[[i]]] * len(r.grid[0]), ignore_index=True)
            rows[name] = list(r.grid[0])
            np.testing.assert_allclose(r.individual[0, i], model.predict_proba(rows)[:, 1], rtol=0, atol=1e-14)


@pytest.mark.parametrize("centered", [False, True])
def test_regressor_every_transformer(centered):
    X = _frame(seed=1)
    model = _regressor().fit(X, _target(X))
    plan, plain, fast = _both(model, X, centered=centered)
    assert not plan.sparse
    # a: MinMax + MaxAbs; c: 4 levels but the first dropped; b: value + missing indicator; k: its code; d: 3 bins + MaxAbs
    assert [len(b) for b in plan.blocks] == [2, 3, 2, 1, 4]
    _same(plain, fast)
    if not centered:
        for r in fast:
            fl = list(r.features)
            custom = {n: list(g) if k == "categorical" else g for n, g, k in zip(fl, r.grid, r.kinds)}
            ref = sk_pd(model, X, fl, custom_values=custom, categorical_features=[f for f in fl if f in CATS] or None,
                        method="brute", kind="average")
            np.testing.assert_allclose(r.average, ref["average"], rtol=0, atol=1e-12)


def test_pandas_output_and_multiclass():
    X = _frame(seed=2)
    t = _target(X)
    y = np.where(t > 2.5, "hi", np.where(t < 0.5, "lo", "mid"))
    model = _classifier(False).set_output(transform="pandas").fit(X, y)
    plan, plain, fast = _both(model, X)
    assert plan.columns is not None
    assert fast[0].average.shape[0] == 3
    _same(plain, fast)


def test_public_entry_uses_it_and_matches_sklearn():
    X = _frame(seed=4)
    model = _classifier(True).fit(X, (_target(X) > 1.5).astype(int))
    res = partial_dependence(model, X, ["a", "c", ("b", "k")], categorical_features=CATS, grid_resolution=6)
    for r in res:
        assert r.method == "brute" and NOTE in r.notes
        fl = list(r.features)
        custom = {n: list(g) if k == "categorical" else g for n, g, k in zip(fl, r.grid, r.kinds)}
        ref = sk_pd(model, X, fl, custom_values=custom, categorical_features=[f for f in fl if f in CATS] or None,
                    method="brute", kind="both")
        np.testing.assert_allclose(r.average, ref["average"], rtol=0, atol=1e-12)
        np.testing.assert_allclose(r.individual, ref["individual"], rtol=0, atol=1e-12)
    # the plan travels to joblib's worker processes with the setup: the same numbers there
    shared = partial_dependence(model, X, ["a", "c", ("b", "k")], categorical_features=CATS, grid_resolution=6,
                                n_jobs=2, max_batch_mb=0.05)
    for r, s in zip(res, shared):
        assert NOTE in s.notes
        np.testing.assert_allclose(s.average, r.average, rtol=0, atol=1e-13)
        np.testing.assert_allclose(s.std, r.std, rtol=0, atol=1e-13)


class _Custom(BaseEstimator, TransformerMixin):
    def fit(self, X, y=None):
        return self

    def transform(self, X):
        return np.asarray(X, dtype=float) * 2.0


class _Scaler(StandardScaler):
    """A subclass may change anything: not recognised."""


@pytest.mark.parametrize("step, why", [
    (FunctionTransformer(np.log1p), "FunctionTransformer"),
    (PolynomialFeatures(2), "PolynomialFeatures"),
    (_Custom(), "_Custom"),
    (_Scaler(), "_Scaler"),
])
def test_unrecognised_steps_take_the_plain_path(step, why):
    X = _frame(seed=5)[["a", "d"]].abs()
    model = make_pipeline(make_column_transformer((step, ["a"]), (StandardScaler(), ["d"])), Ridge()).fit(
        X, X.a * 3 + X.d)
    with pytest.raises(BlocksUnavailable, match=why):
        plan_blocks(model, make_adapter(model, probe=X.iloc[:5]), as_frame(X))
    (r,) = partial_dependence(model, X, ["a"], grid_resolution=5)
    assert NOTE not in r.notes
    ref = sk_pd(model, X, ["a"], custom_values={"a": r.grid[0]}, method="brute", kind="average")
    np.testing.assert_allclose(r.average, ref["average"], rtol=0, atol=1e-12)


def test_imputer_that_dropped_a_column_is_refused():
    X = _frame(seed=6)[["a", "b"]].copy()
    X["e"] = np.nan
    model = make_pipeline(SimpleImputer(), Ridge())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn warns that it skips the all-missing column
        model.fit(X, X.a)
        with pytest.raises(BlocksUnavailable, match="dropped all-missing"):
            plan_blocks(model, make_adapter(model, probe=X.iloc[:5]), as_frame(X))


def test_plain_models_and_columns_out_of_order_are_refused():
    X = _frame(seed=7)[["a", "b", "d"]].fillna(0.0)
    ridge = Ridge().fit(X, X.a)
    with pytest.raises(BlocksUnavailable, match="not a scikit-learn Pipeline"):
        plan_blocks(ridge, make_adapter(ridge, probe=X.iloc[:5]), as_frame(X))
    model = make_pipeline(StandardScaler(), Ridge()).fit(X, X.a)
    Y = X[["b", "a", "d"]]
    with pytest.raises(BlocksUnavailable, match="columns"):
        plan_blocks(model, make_adapter(model, probe=X.iloc[:5]), as_frame(Y))


def test_run_time_check_falls_back_when_substitution_disagrees():
    """A plan whose block map is wrong (here forced) fails the probe check: those sets take the plain path."""
    X = _frame(seed=8)
    model = _classifier(True).fit(X, (_target(X) > 1.5).astype(int))
    frame = as_frame(X)
    adapter = make_adapter(model, probe=X.iloc[:5])
    plan = plan_blocks(model, adapter, frame)
    plan.blocks[0] = plan.blocks[2]  # 'a' pointed at b's column
    spec_sets = [_specs(frame, [0]), _specs(frame, [2])]
    fast = brute_force_many(adapter, frame, spec_sets, blocks=plan)
    plain = brute_force_many(adapter, frame, spec_sets)
    assert "differ from the pipeline's" in plan.check(spec_sets[0])
    assert NOTE not in fast[0].notes and NOTE in fast[1].notes
    for p, f in zip(plain, fast):
        np.testing.assert_allclose(f.average, p.average, rtol=0, atol=1e-13)


def test_sparse_rows_are_the_pipelines_rows():
    """The augmented CSR rows equal the pipeline's own transform of the augmented data."""
    X = _frame(seed=9)
    model = _classifier(True).fit(X, (_target(X) > 1.5).astype(int))
    frame = as_frame(X)
    plan = plan_blocks(model, make_adapter(model, probe=X.iloc[:5]), frame)
    specs = _specs(frame, [1, 2])
    from autopdp.pd.engine import Augmenter, _grid_points, assemble

    points = _grid_points(specs)
    rows = np.array([0, 5, 6, 123])
    got = plan.substitution(specs, points)(rows, 3, 11)
    want = model[:-1].transform(assemble(frame, [Augmenter(frame, specs)(rows, [p[3:11] for p in points])]))
    assert sp.issparse(got) and sp.issparse(want)
    np.testing.assert_array_equal(got.toarray(), want.toarray())


# ---------------------------------------------------------------- ALE by prediction through the same substitution

def test_ale_through_blocks_same_as_plain_predictions():
    from autopdp.trust import ale as ale_module

    X = _frame(seed=10)
    model = _classifier(True).fit(X, (_target(X) > 1.5).astype(int))
    frame = as_frame(X)

    def plain(Z):  # the same model behind a plain callable: no Pipeline to see through
        return model.predict_proba(Z)[:, 1]

    for name in ("a", "b"):
        fast = ale_module.ale(model, frame, name, bins=8)
        assert ale_module._LAST_PLAN[0][2] is not None and ale_module._LAST_PLAN[0][2].sparse
        slow = ale_module.ale(plain, frame, name, bins=8)
        np.testing.assert_array_equal(fast.x, slow.x)
        np.testing.assert_array_equal(fast.counts, slow.counts)
        np.testing.assert_allclose(fast.pd, slow.pd, rtol=0, atol=1e-13)
    fast2 = ale_module.ale_2d(model, frame, ("a", "b"), bins=4)
    slow2 = ale_module.ale_2d(plain, frame, ("a", "b"), bins=4)
    np.testing.assert_allclose(fast2.pd, slow2.pd, rtol=0, atol=1e-13)
    np.testing.assert_array_equal(fast2.counts, slow2.counts)


def test_ale_of_a_scaled_linear_model_is_its_slope():
    """Known answer: after a StandardScaler a Ridge's ALE rises by coef / scale per unit of the feature."""
    from autopdp.trust.ale import ale

    X = _frame(seed=11)[["a", "d"]].assign(b=lambda f: f.index % 7 * 1.5)
    model = make_pipeline(make_column_transformer((StandardScaler(), ["a", "b"]), (MinMaxScaler(), ["d"])),
                          Ridge(alpha=1.0)).fit(X, X.a * 3 - X.b + X.d)
    ct, ridge = model[0], model[-1]
    scale = dict(zip(["a", "b"], ct.named_transformers_["standardscaler"].scale_))
    for j, name in enumerate(["a", "b"]):
        curve = ale(model, as_frame(X), name, bins=6)
        slopes = np.diff(curve.pd) / np.diff(np.asarray(curve.x, dtype=float))
        np.testing.assert_allclose(slopes, ridge.coef_[j] / scale[name], rtol=1e-10)
        np.testing.assert_allclose(np.sum((curve.pd[:-1] + curve.pd[1:]) / 2 * curve.counts), 0.0, atol=1e-10)


def test_numpy_input_and_pandas_categorical_columns():
    """An array X with columns chosen by position, and a frame whose text column is a pandas Categorical."""
    X = _frame(seed=12)
    A = X[["a", "b", "d"]].fillna(0.0).to_numpy()
    model = make_pipeline(make_column_transformer((StandardScaler(), [0, 2]), (KBinsDiscretizer(
        n_bins=4, quantile_method="averaged_inverted_cdf"), [1])), Ridge()).fit(A, A[:, 0] + A[:, 1] ** 2)
    res = partial_dependence(model, A, [0, 1, (1, 2)], grid_resolution=5)
    for r in res:
        assert NOTE in r.notes
        idx = [int(f[1:]) for f in r.features]
        ref = sk_pd(model, A, idx, custom_values=dict(zip(idx, r.grid)), method="brute", kind="average")
        np.testing.assert_allclose(r.average, ref["average"], rtol=0, atol=1e-12)
    Xc = X.assign(c=X.c.astype("category"))
    clf = _classifier(True).fit(Xc, (_target(X) > 1.5).astype(int))
    (r,) = partial_dependence(clf, Xc, ["c"])
    assert NOTE in r.notes
    ref = sk_pd(clf, Xc, ["c"], custom_values={"c": list(r.grid[0])}, categorical_features=["c"], method="brute",
                kind="average")
    np.testing.assert_allclose(r.average, ref["average"], rtol=0, atol=1e-12)


def test_audit_says_how_its_pds_were_computed():
    import autopdp
    from autopdp.config import AuditConfig
    from autopdp.pd.pipeline_blocks import WORDS

    X = _frame(seed=13)
    y = (_target(X) > 1.5).astype(int)
    model = _classifier(True).fit(X, y)
    a = autopdp.audit(model, X, y, config=AuditConfig(pairs=[("a", "c")], utilities=("slope",)), n_jobs=1)
    assert all(r.method == "brute" and NOTE in r.notes for r in a.results)
    said = [n for n in a.notes if WORDS in n]
    assert len(said) == 2 and said[0].startswith("The 1D PDs (") and said[1].startswith("The 2D PD (a × c)")
    assert not any(n == NOTE for n in a.notes)  # worded once per group, not repeated per PD

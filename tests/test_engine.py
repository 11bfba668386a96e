"""Numbers, not shapes: the PD engine against analytic answers and scikit-learn."""

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.ensemble import GradientBoostingRegressor, RandomForestClassifier
from sklearn.inspection import partial_dependence as sk_pd
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.tree import DecisionTreeClassifier

import autopdp
from autopdp import PDResult, compute_all, partial_dependence


def analytic(X):
    X = np.asarray(X, dtype=float)
    return 2 * X[:, 0] + X[:, 1] ** 2 + X[:, 0] * X[:, 2]


def test_analytic_model_pd_1d(uniform_xyz):
    X = uniform_xyz
    grid = np.linspace(0, 1, 11)
    (r1, r2, r3) = partial_dependence(analytic, X, ["x1", "x2", "x3"], custom_values={"x1": grid, "x2": grid, "x3": grid})
    m2, m3, m1 = (X["x2"] ** 2).mean(), X["x3"].mean(), X["x1"].mean()
    np.testing.assert_allclose(r1.average[0], 2 * grid + m2 + grid * m3, rtol=0, atol=1e-12)
    np.testing.assert_allclose(r2.average[0], 2 * m1 + grid**2 + (X.x1 * X.x3).mean(), rtol=0, atol=1e-12)
    np.testing.assert_allclose(r3.average[0], 2 * m1 + m2 + grid * m1, rtol=0, atol=1e-12)
    # ICE of row i at value v for x1: 2v + x2_i^2 + v x3_i
    i = 7
    np.testing.assert_allclose(r1.individual[0, i], 2 * grid + X.x2[i] ** 2 + grid * X.x3[i], rtol=0, atol=1e-12)
    # std of ICE at v for x1: std over rows of (x2^2 + v x3)
    v = grid[4]
    np.testing.assert_allclose(r1.std[0, 4], np.std(X.x2**2 + v * X.x3), rtol=0, atol=1e-12)
    np.testing.assert_allclose(r1.stderr[0, 4], np.std(X.x2**2 + v * X.x3) / np.sqrt(len(X)), rtol=0, atol=1e-12)


def test_analytic_model_pd_2d(uniform_xyz):
    X = uniform_xyz
    g = np.linspace(0, 1, 5)
    (r,) = partial_dependence(analytic, X, [("x1", "x3")], custom_values={"x1": g, "x3": g})
    expected = 2 * g[:, None] + (X.x2**2).mean() + g[:, None] * g[None, :]
    assert r.average.shape == (1, 5, 5)
    np.testing.assert_allclose(r.average[0], expected, rtol=0, atol=1e-12)
    assert r.individual.shape == (1, len(X), 5, 5)


def test_ice_mean_equals_pd_and_weighted(uniform_xyz):
    rng = np.random.default_rng(1)
    y = analytic(uniform_xyz) + rng.normal(0, 0.1, len(uniform_xyz))
    model = GradientBoostingRegressor(n_estimators=30, random_state=0).fit(uniform_xyz, y)
    w = rng.uniform(0.1, 3, len(uniform_xyz))
    res = partial_dependence(model, uniform_xyz, ["x1", ("x2", "x3")], sample_weight=w)
    for r in res:
        np.testing.assert_allclose(np.average(r.individual, axis=1, weights=w), r.average, rtol=0, atol=1e-12)
        var = np.average((r.individual - r.average[:, None]) ** 2, axis=1, weights=w)
        np.testing.assert_allclose(r.std, np.sqrt(var), rtol=0, atol=1e-10)


def test_small_batches_give_the_same_answer(uniform_xyz):
    """The memory cap splits rows and grid points; the result must not change."""
    model = GradientBoostingRegressor(n_estimators=20, random_state=0).fit(uniform_xyz, analytic(uniform_xyz))
    w = np.random.default_rng(3).uniform(0.5, 2, len(uniform_xyz))
    big = partial_dependence(model, uniform_xyz, ["x1", ("x1", "x2")], sample_weight=w, centered=True)
    tiny = partial_dependence(model, uniform_xyz, ["x1", ("x1", "x2")], sample_weight=w, centered=True, max_batch_mb=0.01)
    for a, b in zip(big, tiny):
        np.testing.assert_allclose(a.average, b.average, rtol=0, atol=1e-12)
        np.testing.assert_allclose(a.std, b.std, rtol=0, atol=1e-10)
        np.testing.assert_allclose(a.individual, b.individual, rtol=0, atol=1e-12)


def _float_frame(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(
        {
            "a": rng.normal(size=n),
            "b": rng.uniform(-2, 2, size=n),
            "c": rng.choice(["red", "green", "blue"], size=n),
            "d": rng.exponential(size=n),
        }
    )
    return X


def _pipe(clf):
    return make_pipeline(
        make_column_transformer((OneHotEncoder(handle_unknown="ignore"), ["c"]), remainder=StandardScaler()), clf
    )


@pytest.mark.parametrize("weighted", [False, True])
def test_matches_sklearn_regressor_numeric_categorical_2d(weighted):
    X = _float_frame()
    y = X.a * 2 + (X.c == "red") * 1.5 + X.b * X.d
    model = _pipe(GradientBoostingRegressor(n_estimators=40, random_state=0)).fit(X, y)
    w = np.random.default_rng(5).uniform(0.2, 2.0, len(X)) if weighted else None
    feats = ["a", "c", ("a", "b"), ("b", "c"), ("c", "a")]
    ours = partial_dependence(model, X, feats, sample_weight=w, categorical_features=["c"], kind="average")
    for r, f in zip(ours, feats):
        fl = list(f) if isinstance(f, tuple) else [f]
        custom = {name: list(g) if r.kinds[i] == "categorical" else g for i, (name, g) in enumerate(zip(fl, r.grid))}
        ref = sk_pd(model, X, fl, custom_values=custom, categorical_features=["c"], method="brute", kind="average", sample_weight=w)
        np.testing.assert_allclose(r.average, ref["average"], rtol=0, atol=1e-10)
        assert r.individual is None


def test_matches_sklearn_multiclass_pipeline():
    X = _float_frame(400, seed=2)
    y = np.where(X.a > 0.5, "hi", np.where(X.c == "red", "red", "lo"))
    model = _pipe(LogisticRegression(max_iter=500)).fit(X, y)
    res = partial_dependence(model, X, ["a", "c", ("a", "c")])
    assert res[0].targets == ("hi", "lo", "red")
    for r in res:
        fl = list(r.features)
        custom = {n: list(g) if k == "categorical" else g for n, g, k in zip(fl, r.grid, r.kinds)}
        ref = sk_pd(model, X, fl, custom_values=custom, categorical_features=["c"], method="brute", kind="average")
        assert r.average.shape == ref["average"].shape
        np.testing.assert_allclose(r.average, ref["average"], rtol=0, atol=1e-10)
    # probabilities over all classes sum to one at every grid point
    np.testing.assert_allclose(res[2].average.sum(axis=0), 1.0, rtol=0, atol=1e-12)


def test_binary_default_is_positive_class_and_target_selects():
    X = _float_frame(300, seed=4)
    y = (X.a + X.b > 0).astype(int)
    model = _pipe(LogisticRegression()).fit(X, y)
    (r,) = partial_dependence(model, X, ["a"])
    assert r.targets == (1,) and r.average.shape[0] == 1
    ref = sk_pd(model, X, ["a"], custom_values={"a": r.grid[0]}, method="brute", kind="average")
    np.testing.assert_allclose(r.average, ref["average"], rtol=0, atol=1e-10)
    (r0,) = partial_dependence(model, X, ["a"], target=0)
    np.testing.assert_allclose(r0.average + r.average, 1.0, rtol=0, atol=1e-12)
    (rd,) = partial_dependence(model, X, ["a"], response="decision_function")
    refd = sk_pd(model, X, ["a"], custom_values={"a": r.grid[0]}, method="brute", kind="average", response_method="decision_function")
    np.testing.assert_allclose(rd.average, refd["average"], rtol=0, atol=1e-10)


def test_numpy_input_matches_sklearn():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    y = X[:, 0] - 2 * X[:, 1] + X[:, 2] * X[:, 3]
    model = GradientBoostingRegressor(n_estimators=30, random_state=0).fit(X, y)
    res = partial_dependence(model, X, [0, (1, 2)])
    assert res[0].features == ("x0",) and res[1].features == ("x1", "x2")
    ref = sk_pd(model, X, [1, 2], custom_values={1: res[1].grid[0], 2: res[1].grid[1]}, method="brute", kind="average")
    np.testing.assert_allclose(res[1].average, ref["average"], rtol=0, atol=1e-10)


def test_crisp_classifier_counts_sum_to_rows():
    X = _float_frame(250, seed=7)
    y = np.where(X.a > 0.3, "A", np.where(X.b > 0, "B", "C"))
    model = _pipe(DecisionTreeClassifier(max_depth=4, random_state=0)).fit(X, y)
    r, r2 = partial_dependence(model, X, ["a", ("a", "c")], response="predict")
    assert r.response == "crisp" and r.targets == ("A", "B", "C")
    counts = r.class_counts()
    np.testing.assert_allclose(counts.sum(axis=0), len(X), rtol=0, atol=1e-12)
    np.testing.assert_allclose(r2.class_counts().sum(axis=0), len(X), rtol=0, atol=1e-12)
    # each class count equals a direct count of predicted labels at that grid value
    for j, v in enumerate(r.grid[0]):
        Xv = X.copy()
        Xv["a"] = v
        pred = model.predict(Xv)
        assert counts[0, j] == (pred == "A").sum()
        assert counts[2, j] == (pred == "C").sum()


def test_centered_curves_start_at_zero(uniform_xyz):
    res = partial_dependence(analytic, uniform_xyz, ["x1", ("x1", "x3")], centered=True)
    assert np.all(res[0].individual[..., 0] == 0)
    assert np.all(res[0].average[..., 0] == 0)
    assert np.all(res[1].average[..., 0, 0] == 0)
    plain = partial_dependence(analytic, uniform_xyz, ["x1"])[0]
    np.testing.assert_allclose(res[0].average, plain.average - plain.average[..., :1], rtol=0, atol=1e-12)


def test_subsample_keeps_ice_rows_but_pd_uses_all(uniform_xyz):
    full = partial_dependence(analytic, uniform_xyz, ["x1"])[0]
    sub = partial_dependence(analytic, uniform_xyz, ["x1"], subsample=50, random_state=3)[0]
    again = partial_dependence(analytic, uniform_xyz, ["x1"], subsample=50, random_state=3)[0]
    assert sub.individual.shape == (1, 50, full.grid_shape[0])
    np.testing.assert_array_equal(sub.ice_rows, again.ice_rows)
    np.testing.assert_allclose(sub.individual[0], full.individual[0, sub.ice_rows], rtol=0, atol=0)
    np.testing.assert_allclose(sub.average, full.average, rtol=0, atol=1e-12)


def test_density_counts_nearest_grid_point():
    X = pd.DataFrame({"v": [0.0, 0.1, 0.9, 1.0, 1.0, 2.2, np.nan], "w": list("aabbbca")})
    (r, rc, r2) = partial_dependence(lambda d: d["v"].fillna(0).to_numpy(), X, ["v", "w", ("v", "w")], custom_values={"v": [0, 1, 2]})
    np.testing.assert_array_equal(r.counts, [2, 3, 1])
    assert r.n_missing == (1,)
    np.testing.assert_array_equal(rc.counts, [3, 3, 1])
    assert r2.counts.sum() == 6 and r2.counts[1, 1] == 3
    np.testing.assert_allclose(r.density, np.array([2, 3, 1]) / 7, rtol=0, atol=1e-12)


def test_nan_constant_and_dominant_columns():
    rng = np.random.default_rng(0)
    n = 500
    X = pd.DataFrame(
        {
            "nan_col": np.where(rng.uniform(size=n) < 0.2, np.nan, rng.normal(size=n)),
            "const": np.full(n, 3.0),
            "dominant": np.where(rng.uniform(size=n) < 0.97, 0.0, rng.exponential(10, size=n)),
            "ok": rng.normal(size=n),
        }
    )
    f = lambda d: np.nan_to_num(d["nan_col"].to_numpy()) + d["const"].to_numpy() + np.log1p(d["dominant"].to_numpy())
    rn, rc, rd = partial_dependence(f, X, ["nan_col", "const", "dominant"])
    assert np.all(np.isfinite(rn.grid[0])) and rn.n_missing == (int(X.nan_col.isna().sum()),)
    assert rn.counts.sum() == n - rn.n_missing[0]
    assert rc.grid_shape == (1,) and rc.counts.tolist() == [n]
    # a 97% zero column still gets a grid that covers its spread
    assert rd.grid_shape[0] >= 10 and rd.grid[0][0] == 0.0 and rd.grid[0][-1] > 1.0
    assert np.all(np.diff(rd.grid[0]) > 0)


def test_grid_quantile_and_uniform_and_integers():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"f": rng.exponential(size=2000), "i": rng.integers(0, 100, size=2000), "few": rng.integers(0, 4, 2000)})
    f = lambda d: d["f"].to_numpy()
    rq, ru, ri, rf = partial_dependence(f, X, ["f", "f", "i", "few"], grid_resolution=10)[0:1] + partial_dependence(
        f, X, ["f"], grid_resolution=10, grid_method="uniform"
    ) + partial_dependence(f, X, ["i", "few"], grid_resolution=10)
    np.testing.assert_allclose(rq.grid[0], np.quantile(X.f, np.linspace(0.05, 0.95, 10)), rtol=0, atol=1e-12)
    np.testing.assert_allclose(ru.grid[0], np.linspace(*np.quantile(X.f, [0.05, 0.95]), 10), rtol=0, atol=1e-12)
    assert ri.grid[0].dtype.kind == "i" and np.all(np.diff(ri.grid[0]) > 0)
    assert rf.grid[0].tolist() == [0, 1, 2, 3]


def test_json_round_trip(uniform_xyz):
    X = uniform_xyz.assign(cat=np.where(uniform_xyz.x1 > 0.5, "hi", "lo"))
    res = partial_dependence(lambda d: d["x1"].to_numpy() * (d["cat"] == "hi"), X, ["x1", ("x1", "cat")])
    for r in res:
        text = r.to_json()
        json.loads(text)  # strict JSON
        back = PDResult.from_json(text)
        assert back.features == r.features and back.kinds == r.kinds and back.targets == r.targets
        for a, b in zip(back.grid, r.grid):
            assert list(a) == list(b)
        np.testing.assert_array_equal(back.average, r.average)
        np.testing.assert_array_equal(back.individual, r.individual)
        np.testing.assert_array_equal(back.counts, r.counts)


def test_result_is_frozen(uniform_xyz):
    (r,) = partial_dependence(analytic, uniform_xyz, ["x1"])
    with pytest.raises(Exception):
        r.features = ("y",)
    with pytest.raises(ValueError):
        r.average[0, 0] = 1.0


def test_multioutput_regression_targets():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(100, 2)), columns=["p", "q"])
    Y = np.c_[X.p * 2, X.q - X.p]
    model = LinearRegression().fit(X, Y)
    (r,) = partial_dependence(model, X, ["p"])
    assert r.targets == ("output_0", "output_1")
    np.testing.assert_allclose(np.diff(r.average[0]) / np.diff(r.grid[0]), 2.0, rtol=0, atol=1e-10)
    np.testing.assert_allclose(np.diff(r.average[1]) / np.diff(r.grid[0]), -1.0, rtol=0, atol=1e-10)
    (r1,) = partial_dependence(model, X, ["p"], target=1)
    assert r1.targets == ("output_1",)


def test_compute_all_every_feature_and_pair(german):
    X, y = german
    X = X.iloc[:200]
    y = y.iloc[:200]
    cat = X.select_dtypes(exclude="number").columns.tolist()
    model = make_pipeline(
        make_column_transformer((OneHotEncoder(handle_unknown="ignore"), cat), remainder="passthrough"),
        LogisticRegression(max_iter=300),
    ).fit(X, y)
    cols = ["age", "purpose", "credit_amount", "housing"]
    serial = compute_all(model, X, features=cols, grid_resolution=8)
    assert [r.features for r in serial] == [("age",), ("purpose",), ("credit_amount",), ("housing",)] + [
        ("age", "purpose"), ("age", "credit_amount"), ("age", "housing"), ("purpose", "credit_amount"),
        ("purpose", "housing"), ("credit_amount", "housing"),
    ]
    assert serial[0].individual is not None and serial[4].individual is None
    parallel = compute_all(model, X, features=cols, grid_resolution=8, n_jobs=2)
    for a, b in zip(serial, parallel):
        np.testing.assert_allclose(a.average, b.average, rtol=0, atol=1e-12)
    # 2D grid coarser when asked
    coarse = compute_all(model, X, features=["age", "credit_amount"], grid_resolution=8, grid_resolution_2d=4)
    assert coarse[2].grid_shape == (4, 4)


def test_german_credit_loader(german):
    X, y = german
    assert X.shape == (1000, 20) and y.shape == (1000,)
    assert int(y.sum()) == 300 and y.name == "bad_credit"
    assert list(X.columns[:3]) == ["checking_status", "duration_months", "credit_history"]
    assert "class" not in X.columns
    assert autopdp.datasets.GERMAN_CREDIT_CITATION.startswith("Hofmann")


def test_dataframe_dtypes_preserved_when_calling_model():
    X = pd.DataFrame(
        {
            "n": np.arange(20, dtype=np.int64),
            "c": pd.Categorical(list("ab") * 10, categories=["a", "b", "z"]),
            "s": pd.array(list("xy") * 10, dtype="string"),
            "flag": [True, False] * 10,
        }
    )
    seen = []

    def model(d):
        seen.append(d.dtypes.to_dict())
        assert list(d.columns) == ["n", "c", "s", "flag"]
        return d["n"].to_numpy() + (d["c"] == "b").to_numpy()

    partial_dependence(model, X, ["n", "c", "s", "flag", ("c", "flag")], grid_resolution=5)
    for dt in seen:
        assert dt == X.dtypes.to_dict()

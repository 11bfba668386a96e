"""The exact tree path equals brute force; where it does not apply, brute force is used and said."""

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.ensemble import (
    ExtraTreesClassifier, ExtraTreesRegressor, GradientBoostingClassifier, GradientBoostingRegressor,
    HistGradientBoostingClassifier, HistGradientBoostingRegressor, RandomForestClassifier, RandomForestRegressor,
)
from sklearn.inspection import partial_dependence as sk_pd
from sklearn.pipeline import make_pipeline
from sklearn.decomposition import PCA
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, PolynomialFeatures, StandardScaler
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from autopdp import partial_dependence


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    n = 400
    X = pd.DataFrame(rng.normal(size=(n, 5)), columns=list("abcde"))
    X["b"] = 0.9 * X.a + 0.1 * X.b  # correlated with a
    X["e"] = rng.integers(0, 5, n).astype(float)
    y_reg = X.a * X.c + np.sin(X.b) + 0.3 * X.e
    y_bin = (y_reg + rng.normal(0, 0.3, n) > 0.3).astype(int)
    y_multi = np.digitize(y_reg, [-0.5, 0.5])
    return X, y_reg, y_bin, y_multi


FEATURES = ["a", "e", ("a", "b"), ("c", "e"), ("d", "a")]


def _compare(model, X, response="auto", atol=1e-9, **kw):
    fast = partial_dependence(model, X, FEATURES, kind="average", response=response, method="tree", std_rows=0, **kw)
    brute = partial_dependence(model, X, FEATURES, kind="average", response=response, method="brute", **kw)
    for f, b in zip(fast, brute):
        assert f.method == "tree" and b.method == "brute"
        np.testing.assert_allclose(f.average, b.average, rtol=0, atol=atol)
    return fast, brute


MODELS = [
    ("tree clf", lambda: DecisionTreeClassifier(max_depth=6, random_state=0), "bin", "auto"),
    ("forest clf", lambda: RandomForestClassifier(n_estimators=25, random_state=0), "bin", "auto"),
    ("forest multiclass", lambda: RandomForestClassifier(n_estimators=15, random_state=0), "multi", "auto"),
    ("extra trees clf", lambda: ExtraTreesClassifier(n_estimators=15, random_state=0), "bin", "auto"),
    ("tree reg", lambda: DecisionTreeRegressor(max_depth=8, random_state=0), "reg", "auto"),
    ("forest reg", lambda: RandomForestRegressor(n_estimators=20, random_state=0), "reg", "auto"),
    ("extra trees reg", lambda: ExtraTreesRegressor(n_estimators=15, random_state=0), "reg", "auto"),
    ("gb reg", lambda: GradientBoostingRegressor(n_estimators=40, random_state=0), "reg", "auto"),
    ("hgb reg", lambda: HistGradientBoostingRegressor(max_iter=40, random_state=0), "reg", "auto"),
    ("gb clf margin", lambda: GradientBoostingClassifier(n_estimators=30, random_state=0), "bin", "decision_function"),
    ("hgb clf margin", lambda: HistGradientBoostingClassifier(max_iter=30, random_state=0), "bin", "decision_function"),
]


@pytest.mark.parametrize("label,make,target,response", MODELS, ids=[m[0] for m in MODELS])
def test_tree_path_equals_brute_force(data, label, make, target, response):
    X, y_reg, y_bin, y_multi = data
    y = {"reg": y_reg, "bin": y_bin, "multi": y_multi}[target]
    _compare(make().fit(X, y), X, response=response)


def test_tree_path_with_sample_weights_and_pipeline(data):
    X, y_reg, y_bin, _ = data
    Xc = X.assign(colour=np.where(X.c > 0, "red", np.where(X.d > 0, "blue", "green")))
    pre = make_column_transformer(
        (OrdinalEncoder(), ["colour"]), (StandardScaler(), ["a", "b", "c"]), remainder="passthrough",
    )
    model = make_pipeline(pre, RandomForestClassifier(n_estimators=20, random_state=0)).fit(Xc, y_bin)
    w = np.random.default_rng(0).uniform(0.2, 3, len(X))
    feats = ["colour", "a", ("colour", "b"), ("e", "a")]
    fast = partial_dependence(model, Xc, feats, kind="average", method="tree", sample_weight=w, std_rows=0)
    brute = partial_dependence(model, Xc, feats, kind="average", method="brute", sample_weight=w)
    for f, b in zip(fast, brute):
        assert f.method == "tree"
        np.testing.assert_allclose(f.average, b.average, rtol=0, atol=1e-9)


def test_differs_from_sklearn_recursion_under_correlation(data):
    """The tree path is the brute-force estimator; sklearn's recursion is another one."""
    X, y_reg, _, _ = data
    model = GradientBoostingRegressor(n_estimators=60, max_depth=3, random_state=0).fit(X, y_reg)
    (fast,) = partial_dependence(model, X, ["a"], kind="average", method="tree", std_rows=0)
    (rec,) = partial_dependence(model, X, ["a"], kind="average", method="recursion")
    ref = sk_pd(model, X, ["a"], custom_values={"a": fast.grid[0]}, method="brute", kind="average")
    np.testing.assert_allclose(fast.average, ref["average"], rtol=0, atol=1e-9)
    assert rec.method == "recursion" and "recursion" in rec.notes[0]
    assert np.abs(rec.average - fast.average).max() > 1e-3


def test_auto_falls_back_to_brute_and_says_so(data):
    from sklearn.ensemble import AdaBoostRegressor

    X, y_reg, _, _ = data
    ada = AdaBoostRegressor(n_estimators=5, random_state=0).fit(X, y_reg)  # a weighted median of trees
    (r,) = partial_dependence(ada, X, ["a"], kind="average")
    assert r.method == "brute"
    with pytest.raises(ValueError, match="method='tree' does not apply: AdaBoostRegressor is not a supported"):
        partial_dependence(ada, X, ["a"], method="tree")


NON_ELEMENTWISE = [
    ("one-hot", lambda: make_pipeline(make_column_transformer((OneHotEncoder(), ["e"]), remainder="passthrough"),
                                      RandomForestRegressor(n_estimators=15, random_state=0)), ["e", ("e", "a")]),
    ("PCA", lambda: make_pipeline(PCA(random_state=0), DecisionTreeRegressor(max_depth=6, random_state=0)),
     ["a", "e", ("a", "b")]),
    ("polynomial", lambda: make_pipeline(PolynomialFeatures(2), GradientBoostingRegressor(n_estimators=20, random_state=0)),
     ["a", "e", ("a", "b")]),
]


@pytest.mark.parametrize("label,make,refused", NON_ELEMENTWISE, ids=[m[0] for m in NON_ELEMENTWISE])
def test_non_elementwise_preprocessing_takes_the_brute_path_and_says_so(data, label, make, refused):
    """A feature that reaches the trees through several columns (one-hot, PCA, polynomial terms) cannot use the
    tree path: auto takes brute force, says why, and gives scikit-learn's brute-force PD on the same grid."""
    X, y_reg, _, _ = data
    model = make().fit(X, y_reg)
    results = partial_dependence(model, X, refused, kind="average")
    for r in results:
        assert r.method == "brute", (label, r.features)
        note = next(n for n in r.notes if n.startswith("Computed by brute force: the exact tree path does not apply"))
        assert "does not reach the trees as one column" in note, note
        ref = sk_pd(model, X, list(r.features), custom_values=dict(zip(r.features, r.grid)), method="brute",
                    kind="average")
        np.testing.assert_allclose(r.average, ref["average"], rtol=0, atol=1e-9)
    with pytest.raises(ValueError, match="method='tree' does not apply: .* does not reach the trees as one column"):
        partial_dependence(model, X, refused[:1], method="tree")


def test_one_hot_leaves_elementwise_columns_on_the_tree_path(data):
    """Only the one-hot encoded feature is refused: a passthrough column of the same pipeline stays exact."""
    X, y_reg, _, _ = data
    model = NON_ELEMENTWISE[0][1]().fit(X, y_reg)
    (a,) = partial_dependence(model, X, ["a"], kind="average", std_rows=0)
    ref = sk_pd(model, X, ["a"], custom_values={"a": a.grid[0]}, method="brute", kind="average")
    assert a.method == "tree"
    np.testing.assert_allclose(a.average, ref["average"], rtol=0, atol=1e-9)


def test_one_refused_feature_does_not_send_the_other_sets_of_its_call_to_brute_force(data):
    """In one call, the sets with the one-hot encoded feature take brute force (saying why) and the
    others stay on the exact tree path; every PD equals scikit-learn's brute force on the same grid."""
    X, y_reg, _, _ = data
    model = NON_ELEMENTWISE[0][1]().fit(X, y_reg)
    sets = ["a", "e", ("a", "b"), ("e", "a"), "c"]
    results = partial_dependence(model, X, sets, kind="average", std_rows=0)
    assert [r.method for r in results] == ["tree", "brute", "tree", "brute", "tree"]
    for r in results:
        if r.method == "brute":
            assert any("does not reach the trees as one column" in n for n in r.notes), r.notes
        ref = sk_pd(model, X, list(r.features), custom_values=dict(zip(r.features, r.grid)), method="brute",
                    kind="average")
        np.testing.assert_allclose(r.average, ref["average"], rtol=0, atol=1e-9)


def test_tree_path_spread_from_sampled_rows(data):
    X, y_reg, _, _ = data
    model = RandomForestRegressor(n_estimators=10, random_state=0).fit(X, y_reg)
    (fast,) = partial_dependence(model, X, [("a", "c")], kind="average", std=True, std_rows=400)
    (brute,) = partial_dependence(model, X, [("a", "c")], kind="average", method="brute")
    np.testing.assert_allclose(fast.average, brute.average, rtol=0, atol=1e-9)
    np.testing.assert_allclose(fast.std, brute.std, rtol=0, atol=1e-9)  # all 400 rows sampled: the same spread
    (ice,) = partial_dependence(model, X, ["a"], subsample=50, random_state=1)
    assert ice.method == "tree" and ice.individual.shape == (1, 50, ice.grid_shape[0])
    np.testing.assert_allclose(ice.individual.mean(axis=1), brute_mean_on(model, X, ice), rtol=0, atol=1e-9)


def brute_mean_on(model, X, res):
    sub = X.iloc[res.ice_rows]
    (b,) = partial_dependence(model, sub, ["a"], custom_values={"a": res.grid[0]}, method="brute", kind="average")
    return b.average


@pytest.mark.parametrize("package", ["xgboost", "lightgbm"])
def test_optional_boosters_equal_brute_force(data, package):
    pytest.importorskip(package, reason=f"{package} is an optional extra (pip install autopdp[boosters])")
    X, y_reg, _, _ = data
    if package == "xgboost":
        from xgboost import XGBRegressor

        model = XGBRegressor(n_estimators=40, max_depth=4, random_state=0).fit(X, y_reg)
        # XGBoost adds its leaf values in float32, so its own predictions carry float32 rounding
        _compare(model, X, atol=1e-5)
        return
    else:
        from lightgbm import LGBMRegressor

        model = LGBMRegressor(n_estimators=40, num_leaves=15, random_state=0, verbose=-1).fit(X, y_reg)
    _compare(model, X)


def test_kind_average_computes_averages_only(data):
    """kind='average' on the tree path runs no hidden ICE spread; std=True asks for it explicitly."""
    X, y_reg, _, _ = data
    model = RandomForestRegressor(n_estimators=10, random_state=0).fit(X, y_reg)
    (avg,) = partial_dependence(model, X, ["a"], kind="average")
    assert avg.method == "tree" and np.isnan(avg.std).all()
    assert any("kind='average'" in n for n in avg.notes)
    (with_std,) = partial_dependence(model, X, ["a"], kind="average", std=True, std_rows=400)
    (brute,) = partial_dependence(model, X, ["a"], kind="average", method="brute")
    np.testing.assert_allclose(with_std.std, brute.std, rtol=0, atol=1e-9)
    np.testing.assert_allclose(avg.average, brute.average, rtol=0, atol=1e-9)
    with pytest.raises(ValueError, match="std must be"):
        partial_dependence(model, X, ["a"], std="yes")

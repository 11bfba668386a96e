"""ONNX tree ensembles on the exact tree path (issue 56, item 3): the file's trees read into the node table, routed as
onnxruntime routes them (every node mode, missing-value tracks, base values, AVERAGE, the post transforms), their
PDs and ICE equal to onnxruntime's own brute force; untrusted attributes checked before any kernel walks them."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import autopdp
from autopdp.pd.tree.errors import TreePathUnavailable

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
skl2onnx = pytest.importorskip("skl2onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from sklearn.ensemble import (  # noqa: E402
    ExtraTreesRegressor, GradientBoostingClassifier, GradientBoostingRegressor, RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.tree import DecisionTreeClassifier  # noqa: E402

from autopdp.pd.tree.onnx_trees import onnx_forest  # noqa: E402


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(1)
    X = pd.DataFrame(rng.normal(size=(400, 3)).astype(np.float32), columns=["a", "b", "c"])
    return X, (X.a + X.b * X.c > 0).astype(int), np.digitize(X.a, [-0.5, 0.5]), X.a * 2 + X.b * X.c


def _file(model, X, path: Path, **kw) -> Path:
    path.write_bytes(skl2onnx.to_onnx(model, X[:1].to_numpy(), **kw).SerializeToString())
    return path


def _tree_equals_brute(m, X, features=("a", "b"), pd_tol=1e-6):
    """PD and ICE by the tree path and by onnxruntime's brute force; the path must be the tree's."""
    tree = autopdp.partial_dependence(m, X, list(features), kind="both", method="tree")
    brute = autopdp.partial_dependence(m, X, list(features), kind="both", method="brute")
    assert all(r.method == "tree" for r in tree) and all(r.method == "brute" for r in brute)
    scale = max(1.0, max(float(np.abs(np.asarray(r.individual)).max()) for r in brute))
    for t, b in zip(tree, brute):
        assert np.abs(np.asarray(t.average) - np.asarray(b.average)).max() <= pd_tol * scale
        # each row's prediction: onnxruntime's float32 sum against the forest's float64 one
        assert np.abs(np.asarray(t.individual) - np.asarray(b.individual)).max() <= 2e-5 * scale


CASES = {
    "forest, 2 classes": (lambda: RandomForestClassifier(20, max_depth=5, random_state=0), 1),
    "forest, 3 classes": (lambda: RandomForestClassifier(10, max_depth=4, random_state=0), 2),
    "boosting, 2 classes": (lambda: GradientBoostingClassifier(n_estimators=30, random_state=0), 1),
    "boosting, 3 classes": (lambda: GradientBoostingClassifier(n_estimators=20, random_state=0), 2),
    "tree, 3 classes": (lambda: DecisionTreeClassifier(max_depth=4, random_state=0), 2),
    "forest regressor": (lambda: RandomForestRegressor(20, max_depth=5, random_state=0), 3),
    "boosting regressor": (lambda: GradientBoostingRegressor(n_estimators=50, random_state=0), 3),
    "extra trees regressor": (lambda: ExtraTreesRegressor(10, max_depth=6, random_state=0), 3),
}


@pytest.mark.parametrize("case", list(CASES))
def test_converted_ensembles_take_the_tree_path_and_equal_onnxruntime(data, tmp_path, case):
    make, target = CASES[case]
    X = data[0]
    model = make().fit(X, data[target])
    kw = {"options": {"zipmap": False}} if hasattr(model, "classes_") else {}
    m = autopdp.load_model(_file(model, X, tmp_path / "m.onnx", **kw))
    assert m.tree_ensemble is not None, m.tree_unavailable
    _tree_equals_brute(m, X)
    # and the trained model's own PDs, to float32 rounding
    mine = autopdp.partial_dependence(m, X, ["a"], kind="average")[0]
    theirs = autopdp.partial_dependence(model, X, ["a"], kind="average")[0]
    assert np.abs(np.asarray(mine.average) - np.asarray(theirs.average)).max() < 1e-5


def test_a_double_input_compares_in_double(data, tmp_path):
    X = data[0].astype(np.float64) + 1e-9  # values a float32 cast would move across no threshold, but not all equal
    rf = RandomForestClassifier(10, max_depth=5, random_state=0).fit(X, data[1])
    m = autopdp.load_model(_file(rf, X, tmp_path / "d.onnx", options={"zipmap": False}))
    assert m.tree_ensemble["input_float32"] is False
    _tree_equals_brute(m, X)


def _attributes(node) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _rewrite(path: Path, out: Path, change) -> Path:
    """The file with its tree node's attributes changed by ``change(attrs)`` (in place)."""
    proto = onnx.load(str(path))
    node = next(n for n in proto.graph.node if n.op_type.startswith("TreeEnsemble"))
    attrs = _attributes(node)
    change(attrs)
    del node.attribute[:]
    node.attribute.extend([helper.make_attribute(k, v) for k, v in attrs.items()])
    out.write_bytes(proto.SerializeToString())
    return out


def _integer_data(seed, n=300):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.integers(0, 5, size=(n, 3)).astype(np.float32), columns=["a", "b", "c"])
    y = X.a - X.b * (X.c > 2) + rng.normal(size=n)
    return X, y


@pytest.mark.parametrize("seed", range(6))
def test_every_node_mode_and_missing_track_routes_as_onnxruntime(tmp_path, seed):
    """Random modes (LEQ, LT, GTE, GT, EQ, NEQ) and missing tracks on a boosted model's nodes, thresholds on the data's
    own values (so LT and LEQ, EQ and NEQ differ), NaNs in the data: the tree path equals onnxruntime."""
    X, y = _integer_data(seed)
    rng = np.random.default_rng(seed)
    if seed % 3 == 0:
        model, kw = GradientBoostingRegressor(n_estimators=20, max_depth=3, random_state=seed).fit(X, y), {}
    elif seed % 3 == 1:  # mixed-sign weights under LOGISTIC
        model, kw = GradientBoostingClassifier(n_estimators=20, random_state=seed).fit(X, y > 0), {"options": {"zipmap": False}}
    else:  # non-negative weights: onnxruntime's [1 - s, s]
        model, kw = RandomForestClassifier(8, max_depth=4, random_state=seed).fit(X, y > 0), {"options": {"zipmap": False}}
    modes = ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ"]

    def change(attrs):
        leaf = [m == b"LEAF" for m in attrs["nodes_modes"]]
        attrs["nodes_modes"] = [b"LEAF" if is_leaf else modes[rng.integers(len(modes))].encode() for is_leaf in leaf]
        attrs["nodes_values"] = [float(np.round(v)) if not is_leaf and rng.random() < 0.7 else v
                                 for v, is_leaf in zip(attrs["nodes_values"], leaf)]
        attrs["nodes_missing_value_tracks_true"] = [int(rng.integers(2)) for _ in leaf]

    path = _rewrite(_file(model, X, tmp_path / "m.onnx", **kw), tmp_path / "modes.onnx", change)
    m = autopdp.load_model(path)
    Xn = X.copy()
    Xn.loc[rng.random(len(X)) < 0.15, "b"] = np.nan
    Xn.loc[rng.random(len(X)) < 0.15, "c"] = np.nan
    _tree_equals_brute(m, Xn, features=("a", "b", "c"))


def _modern_file(path: Path, out: Path) -> Path:
    """A ``TreeEnsembleRegressor`` rewritten as opset 5's ``TreeEnsemble`` (splits and leaves apart)."""
    proto = onnx.load(str(path))
    node = next(n for n in proto.graph.node if n.op_type == "TreeEnsembleRegressor")
    a = _attributes(node)
    key = list(zip(a["nodes_treeids"], a["nodes_nodeids"]))
    leaf = {k: a["nodes_modes"][i] == b"LEAF" for i, k in enumerate(key)}
    splits = [i for i, k in enumerate(key) if not leaf[k]]
    split_pos = {key[i]: j for j, i in enumerate(splits)}
    weight = {(t, n): w for t, n, w in zip(a["target_treeids"], a["target_nodeids"], a["target_weights"])}
    leaves = [k for k in key if leaf[k]]
    leaf_pos = {k: j for j, k in enumerate(leaves)}
    code = {b"BRANCH_LEQ": 0, b"BRANCH_LT": 1, b"BRANCH_GTE": 2, b"BRANCH_GT": 3, b"BRANCH_EQ": 4, b"BRANCH_NEQ": 5}

    def child(t, c):
        return (1, leaf_pos[(t, c)]) if leaf[(t, c)] else (0, split_pos[(t, c)])

    true = [child(key[i][0], a["nodes_truenodeids"][i]) for i in splits]
    false = [child(key[i][0], a["nodes_falsenodeids"][i]) for i in splits]
    roots = [split_pos[(t, 0)] for t in sorted(set(a["nodes_treeids"]))]
    base = a.get("base_values", [0.0])[0]
    # the base value as one more leaf weight on every leaf of the first tree
    first = {k for k in leaves if k[0] == min(a["nodes_treeids"])}
    new = helper.make_node(
        "TreeEnsemble", node.input, node.output, domain="ai.onnx.ml", n_targets=1, aggregate_function=1,
        post_transform=0, tree_roots=roots, nodes_featureids=[a["nodes_featureids"][i] for i in splits],
        nodes_splits=numpy_helper.from_array(np.asarray([a["nodes_values"][i] for i in splits], dtype=np.float32)),
        nodes_modes=numpy_helper.from_array(np.asarray([code[a["nodes_modes"][i]] for i in splits], dtype=np.uint8)),
        nodes_truenodeids=[c for _, c in true], nodes_trueleafs=[lf for lf, _ in true],
        nodes_falsenodeids=[c for _, c in false], nodes_falseleafs=[lf for lf, _ in false],
        nodes_missing_value_tracks_true=[a["nodes_missing_value_tracks_true"][i] for i in splits],
        leaf_targetids=[0] * len(leaves),
        leaf_weights=numpy_helper.from_array(np.asarray([weight[k] + (base if k in first else 0.0) for k in leaves],
                                                        dtype=np.float32)))
    del proto.graph.node[:]
    proto.graph.node.extend([new])
    del proto.opset_import[:]
    proto.opset_import.extend([helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.ml", 5)])
    out.write_bytes(proto.SerializeToString())
    return out


def test_opset_5_tree_ensemble(tmp_path):
    X, y = _integer_data(7)
    gbr = GradientBoostingRegressor(n_estimators=15, max_depth=3, random_state=0).fit(X, y)
    classic = _file(gbr, X, tmp_path / "classic.onnx")
    m = autopdp.load_model(_modern_file(classic, tmp_path / "modern.onnx"))
    assert m.tree_ensemble is not None and m.tree_ensemble["op"] == "TreeEnsemble", m.tree_unavailable
    assert np.abs(m.predict(X) - gbr.predict(X)).max() < 1e-4
    _tree_equals_brute(m, X, features=("a", "b", "c"))


class _Fake:
    """A model whose tree attributes are handed over as they are: the checks come before any kernel."""
    _estimator_type = "regressor"
    n_features_in_ = 2

    def __init__(self, attrs):
        self.tree_ensemble = {"op": "TreeEnsembleRegressor", "attributes": attrs, "input_float32": True}


class _Adapter:
    response = "predict"


def _stump(**change):
    attrs = {"nodes_treeids": [0, 0, 0], "nodes_nodeids": [0, 1, 2], "nodes_featureids": [1, 0, 0],
             "nodes_modes": ["BRANCH_LEQ", "LEAF", "LEAF"], "nodes_values": [0.5, 0.0, 0.0],
             "nodes_truenodeids": [1, 0, 0], "nodes_falsenodeids": [2, 0, 0], "target_treeids": [0, 0],
             "target_nodeids": [1, 2], "target_ids": [0, 0], "target_weights": [1.0, 2.0], "base_values": [0.25],
             "post_transform": "NONE", "n_targets": 1}
    attrs.update(change)
    return _Fake(attrs)


def test_a_well_formed_stump_reads_as_its_two_leaves_and_the_base():
    forest, n_out = onnx_forest(_stump(), _Adapter())
    assert n_out == 1 and forest.roots.size == 2  # the stump and the base value's one-leaf tree
    assert sorted(forest.value[forest.feature < 0, 0].tolist()) == [0.25, 1.0, 2.0]
    assert forest.threshold[0] == 0.5 and forest.feature[0] == 1


@pytest.mark.parametrize("change, why", [
    ({"nodes_truenodeids": [0, 0, 0]}, "not a tree|does not reach"),  # the root its own child: a cycle
    ({"nodes_falsenodeids": [7, 0, 0]}, "child outside the tree"),
    ({"nodes_featureids": [2, 0, 0]}, "outside the input's 2 columns"),
    ({"nodes_featureids": [-1, 0, 0]}, "outside the input's 2 columns"),
    ({"nodes_nodeids": [0, 1, 1]}, "repeats a node id"),
    ({"nodes_modes": ["BRANCH_LEQ", "LEAF", "BRANCH_MEMBER"]}, "node modes BRANCH_MEMBER"),
    ({"nodes_values": [0.5, 0.0]}, "unequal lengths|not 3"),
    ({"target_nodeids": [0, 2]}, "not a leaf"),
    ({"target_ids": [0, 1]}, "several targets"),
    ({"post_transform": "PROBIT"}, "post_transform PROBIT"),
    ({"aggregate_function": "MAX"}, "aggregate_function MAX"),
    ({"nodes_treeids": [0, 0, 1], "target_treeids": [0, 1]}, "not a tree|outside the tree"),
])
def test_malformed_tree_attributes_refuse_the_path(change, why):
    with pytest.raises(TreePathUnavailable, match=why):
        onnx_forest(_stump(**change), _Adapter())


def test_a_graph_that_is_more_than_trees_is_brute_force_with_the_reason(data, tmp_path):
    X, y = data[0], data[1]
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    pipe = make_pipeline(StandardScaler(), RandomForestClassifier(5, max_depth=3, random_state=0)).fit(X, y)
    m = autopdp.load_model(_file(pipe, X, tmp_path / "p.onnx", options={"zipmap": False}))
    assert m.tree_ensemble is None and "Scaler" in m.tree_unavailable
    r = autopdp.partial_dependence(m, X, ["a"], kind="average")[0]
    assert r.method == "brute"
    assert np.abs(np.asarray(r.average) - np.asarray(
        autopdp.partial_dependence(pipe, X, ["a"], kind="average")[0].average)).max() < 1e-6

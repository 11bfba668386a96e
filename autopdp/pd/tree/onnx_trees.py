"""An ONNX file's tree ensemble as a :class:`~autopdp.pd.tree.extract.NodeForest`, routed as onnxruntime routes it.

Reads the attributes of ``TreeEnsembleRegressor`` / ``TreeEnsembleClassifier`` (``ai.onnx.ml`` 1-3) and
``TreeEnsemble`` (``ai.onnx.ml`` 5) that :attr:`autopdp.io.onnx_model.OnnxModel.tree_ensemble` hands over.  The
attributes are untrusted data: every id, child and feature index is checked, and every tree must be a tree (one
root, each node reached once) before the kernels walk it.

* Node modes: ``BRANCH_LEQ`` (``x <= t`` takes the true branch), ``BRANCH_LT``, ``BRANCH_GTE``, ``BRANCH_GT`` (as
  ``x <= t'`` with ``t'`` the threshold or its predecessor in the comparison's precision, the branches swapped for
  the ``G`` modes), ``BRANCH_EQ`` and ``BRANCH_NEQ`` (kind :data:`EQUAL`).  A missing value (NaN) takes the true
  branch where the node's missing-value track says so, else the false one, except under ``BRANCH_NEQ`` (NaN is not
  equal to any threshold: the true branch).  ``TreeEnsemble``'s ``BRANCH_MEMBER`` (set membership) is not read.
* Values compare in float32 when the input reaches the trees as float32 (onnxruntime's float kernel), else in
  double against the thresholds widened.
* The constant (``base_values``) is a one-leaf tree; ``AVERAGE`` divides every leaf by the number of trees.
* ``post_transform``: ``NONE`` is the identity, ``LOGISTIC`` of one binary score the sigmoid (``[1 - p, p]``),
  ``SOFTMAX`` the softmax.  onnxruntime's binary classifier of one score column: with every weight non-negative
  the probabilities are ``[1 - s, s]`` whatever the transform; with mixed signs ``[-s, s]`` (``NONE``) or the
  sigmoid (``LOGISTIC``).  Others (``PROBIT``, ``SOFTMAX_ZERO``, ``LOGISTIC`` of several columns, ``MIN``/``MAX``
  aggregation, several regression targets) are refused: the model's own predictions are then used.

Whoever uses the forest checks it against the model's predictions (:class:`autopdp.pd.tree.fastpath.TreePlan`).
"""

from __future__ import annotations

import numpy as np

from .errors import TreePathUnavailable
from .extract import EQUAL, NUMERIC, NodeForest, _Builder

__all__ = ["onnx_forest"]

_MODES = {"BRANCH_LEQ": 0, "BRANCH_LT": 1, "BRANCH_GTE": 2, "BRANCH_GT": 3, "BRANCH_EQ": 4, "BRANCH_NEQ": 5,
          "LEAF": -1}
_TRANSFORMS = {0: "NONE", 1: "SOFTMAX", 2: "LOGISTIC", 3: "SOFTMAX_ZERO", 4: "PROBIT"}
_AGGREGATES = {0: "AVERAGE", 1: "SUM", 2: "MIN", 3: "MAX"}


def onnx_forest(model, adapter) -> tuple[NodeForest, int]:
    """The node arrays of an ONNX file's tree ensemble and its number of response columns (see module docs)."""
    spec = getattr(model, "tree_ensemble", None)
    if spec is None:
        raise TreePathUnavailable(f"ONNX model: {getattr(model, 'tree_unavailable', 'no tree ensemble')}")
    attrs, op = spec["attributes"], spec["op"]
    table = _modern(attrs) if op == "TreeEnsemble" else _classic(attrs, "class" if op.endswith("Classifier") else
                                                                 "target")
    n_features = getattr(model, "n_features_in_", None)
    if not isinstance(n_features, int) or n_features < 1:
        raise TreePathUnavailable("ONNX model: its input's width is not known")
    classifier = op == "TreeEnsembleClassifier" or (op == "TreeEnsemble" and getattr(model, "_estimator_type", "")
                                                    == "classifier")
    if classifier:
        if adapter.response != "predict_proba":
            raise TreePathUnavailable(f"ONNX classifier with response {adapter.response!r}")
        n_classes = len(getattr(model, "classes_", []))
        return _classifier_forest(table, n_features, n_classes, spec["input_float32"])
    if adapter.response != "predict":
        raise TreePathUnavailable(f"ONNX regressor with response {adapter.response!r}")
    return _regressor_forest(table, n_features, spec["input_float32"])


def _array(value, name, n, kinds: str, dtype, what: str) -> np.ndarray:
    """An attribute as a flat array of ``dtype``, its elements of the numpy ``kinds`` and, when ``n`` is given,
    ``n`` of them; :class:`TreePathUnavailable` otherwise."""
    out = np.asarray([] if value is None else value).reshape(-1)
    if out.size and out.dtype.kind not in kinds:
        raise TreePathUnavailable(f"ONNX tree attribute {name} is not {what}")
    if n is not None and out.size != n:
        raise TreePathUnavailable(f"ONNX tree attribute {name} has {out.size} entries, not {n}")
    return out.astype(dtype)


def _ints(attrs, name, n=None) -> np.ndarray:
    return _array(attrs.get(name), name, n, "iu", np.int64, "integers")


def _floats(attrs, name, n=None) -> np.ndarray:
    return _array(attrs.get(name + "_as_tensor", attrs.get(name)), name, n, "fiu", np.float64, "numbers")


def _classic(attrs, prefix: str) -> dict:
    """The node table of ``TreeEnsembleRegressor`` / ``TreeEnsembleClassifier``: per node (tree, id, feature, mode,
    threshold, true id, false id, missing track) and per leaf weight (tree, node id, output column, weight)."""
    tree = _ints(attrs, "nodes_treeids")
    n = tree.size
    modes = attrs.get("nodes_modes") or []
    if len(modes) != n or any(m not in _MODES for m in modes):
        bad = sorted({str(m) for m in modes if m not in _MODES})
        raise TreePathUnavailable(f"ONNX tree node modes {', '.join(bad[:3])}" if bad else
                                  "ONNX tree attributes of unequal lengths")
    track = _ints(attrs, "nodes_missing_value_tracks_true")
    w_tree = _ints(attrs, f"{prefix}_treeids")
    m = w_tree.size
    return {"tree": tree, "node": _ints(attrs, "nodes_nodeids", n), "feature": _ints(attrs, "nodes_featureids", n),
            "mode": np.asarray([_MODES[x] for x in modes], dtype=np.int64), "threshold": _floats(attrs, "nodes_values", n),
            "true": _ints(attrs, "nodes_truenodeids", n), "false": _ints(attrs, "nodes_falsenodeids", n),
            "track": track if track.size else np.zeros(n, dtype=np.int64),
            "w_tree": w_tree, "w_node": _ints(attrs, f"{prefix}_nodeids", m), "w_out": _ints(attrs, f"{prefix}_ids", m),
            "weight": _floats(attrs, f"{prefix}_weights", m), "base": _floats(attrs, "base_values"),
            "transform": str(attrs.get("post_transform", "NONE")),
            "aggregate": str(attrs.get("aggregate_function", "SUM")), "targets": int(attrs.get("n_targets", 1))}


def _modern(attrs) -> dict:
    """``TreeEnsemble`` (opset 5) as the classic table: its splits and leaves live in separate arrays, and a branch's
    child is a leaf where ``nodes_trueleafs``/``nodes_falseleafs`` say so.  Walked from ``tree_roots``: a split
    reached twice or outside the arrays refuses the path; each branch to a leaf gets its own leaf node."""
    feature = _ints(attrs, "nodes_featureids")
    n = feature.size
    modes = _ints(attrs, "nodes_modes", n)
    splits = _floats(attrs, "nodes_splits", n)
    true_id, false_id = _ints(attrs, "nodes_truenodeids", n), _ints(attrs, "nodes_falsenodeids", n)
    true_leaf, false_leaf = _ints(attrs, "nodes_trueleafs", n), _ints(attrs, "nodes_falseleafs", n)
    target, weight = _ints(attrs, "leaf_targetids"), _floats(attrs, "leaf_weights")
    track = _ints(attrs, "nodes_missing_value_tracks_true")
    track = track if track.size == n else np.zeros(n, dtype=np.int64)
    if target.size != weight.size:
        raise TreePathUnavailable("ONNX TreeEnsemble leaf attributes of unequal lengths")
    rows, leaves, seen = [], [], np.zeros(n, dtype=bool)
    for t, root in enumerate(_ints(attrs, "tree_roots").tolist()):
        stack = [root]
        while stack:
            i = stack.pop()
            if not 0 <= i < n or seen[i]:
                raise TreePathUnavailable("ONNX TreeEnsemble: a tree reaches a split twice or outside the ensemble")
            seen[i] = True
            mode = int(modes[i])
            if not 0 <= mode <= 5:
                raise TreePathUnavailable(f"ONNX TreeEnsemble node mode {mode} (set membership is not read)")
            children = []
            for child, is_leaf in ((int(true_id[i]), int(true_leaf[i])), (int(false_id[i]), int(false_leaf[i]))):
                if is_leaf:
                    if not 0 <= child < weight.size:
                        raise TreePathUnavailable("ONNX TreeEnsemble: a branch names a leaf outside the ensemble")
                    key = ("leaf", len(leaves))
                    leaves.append((t, key, int(target[child]), float(weight[child])))
                else:
                    key = ("split", child)
                    stack.append(child)
                children.append(key)
            rows.append((t, ("split", i), int(feature[i]), mode, float(splits[i]), children[0], children[1],
                         int(track[i])))
    for t, key, _, _ in leaves:
        rows.append((t, key, 0, -1, 0.0, key, key, 0))
    code = {key: j for j, (_, key, *_) in enumerate(rows)}
    col = list(zip(*rows)) if rows else [()] * 8
    return {"tree": np.asarray(col[0], dtype=np.int64), "node": np.arange(len(rows)),
            "feature": np.asarray(col[2], dtype=np.int64), "mode": np.asarray(col[3], dtype=np.int64),
            "threshold": np.asarray(col[4], dtype=np.float64),
            "true": np.asarray([code[k] for k in col[5]], dtype=np.int64),
            "false": np.asarray([code[k] for k in col[6]], dtype=np.int64), "track": np.asarray(col[7], dtype=np.int64),
            "w_tree": np.asarray([x[0] for x in leaves], dtype=np.int64),
            "w_node": np.asarray([code[x[1]] for x in leaves], dtype=np.int64),
            "w_out": np.asarray([x[2] for x in leaves], dtype=np.int64),
            "weight": np.asarray([x[3] for x in leaves], dtype=np.float64), "base": np.zeros(0),
            "transform": _TRANSFORMS.get(int(attrs.get("post_transform", 0)), "?"),
            "aggregate": _AGGREGATES.get(int(attrs.get("aggregate_function", 1)), "?"),
            "targets": int(attrs.get("n_targets", 1))}


def _walk_order(table, n_features: int) -> list[np.ndarray]:
    """Each tree's node positions in pre-order from its root, after checking that it is a tree: ids unique in their
    tree, children in the same tree, one root, every node reached exactly once, split features inside the input."""
    tree, node, mode = table["tree"], table["node"], table["mode"]
    split = mode >= 0
    if split.any() and (table["feature"][split].min() < 0 or table["feature"][split].max() >= n_features):
        raise TreePathUnavailable(f"ONNX tree splits on a feature outside the input's {n_features} columns")
    order = []
    for t in np.unique(tree).tolist():
        at = np.flatnonzero(tree == t)
        index = {int(i): int(p) for i, p in zip(node[at], at)}
        if len(index) != at.size:
            raise TreePathUnavailable(f"ONNX tree {t} repeats a node id")
        children = []
        for p in at[split[at]].tolist():
            for c in (int(table["true"][p]), int(table["false"][p])):
                if c not in index:
                    raise TreePathUnavailable(f"ONNX tree {t} names a child outside the tree")
                children.append(index[c])
        roots = np.setdiff1d(at, children)
        if roots.size != 1 or len(children) != len(set(children)):
            raise TreePathUnavailable(f"ONNX tree {t} is not a tree (a node with two parents, or not one root)")
        walk, stack = [], [int(roots[0])]
        while stack:
            p = stack.pop()
            walk.append(p)
            if split[p]:
                stack.extend([index[int(table["false"][p])], index[int(table["true"][p])]])
        if len(walk) != at.size:
            raise TreePathUnavailable(f"ONNX tree {t} has nodes its root does not reach")
        order.append(np.asarray(walk, dtype=np.int64))
    return order


def _forest(table, n_features, columns, constant, link: int, float32: bool) -> NodeForest:
    """The checked table as a forest: ``columns`` (n_weights, K) is each leaf weight's contribution to the K raw
    outputs; ``constant`` (K,) a one-leaf tree of its own."""
    K = columns.shape[1]
    order = _walk_order(table, n_features)
    index = {(int(t), int(i)): p for p, (t, i) in enumerate(zip(table["tree"], table["node"]))}
    values = np.zeros((table["tree"].size, K))
    for wt, wn, row in zip(table["w_tree"].tolist(), table["w_node"].tolist(), columns):
        p = index.get((wt, wn))
        if p is None or table["mode"][p] >= 0:
            raise TreePathUnavailable("ONNX tree weights name a node that is not a leaf")
        values[p] += row
    b = _Builder(K)
    for walk in order:
        base = b.tree(walk.size)
        where = {int(p): base + j for j, p in enumerate(walk.tolist())}
        for p in walk.tolist():
            mode, t = int(table["mode"][p]), float(table["threshold"][p])
            if mode < 0:
                b.node(-1, value=values[p])
                continue
            true, false = where[index[(int(table["tree"][p]), int(table["true"][p]))]], \
                where[index[(int(table["tree"][p]), int(table["false"][p]))]]
            track = bool(table["track"][p])
            below = float(np.nextafter(t, -np.inf))  # x < t  <=>  x <= below, for every double x
            f = int(table["feature"][p])
            if mode == 0:  # LEQ
                b.node(f, t, NUMERIC, track, true, false)
            elif mode == 1:  # LT
                b.node(f, below, NUMERIC, track, true, false)
            elif mode == 2:  # GTE: x >= t is not x <= below
                b.node(f, below, NUMERIC, not track, false, true)
            elif mode == 3:  # GT
                b.node(f, t, NUMERIC, not track, false, true)
            elif mode == 4:  # EQ
                b.node(f, t, EQUAL, track, true, false)
            else:  # NEQ: NaN is not equal, so it takes the true branch
                b.node(f, t, EQUAL, False, false, true)
    b.tree(1)
    b.node(-1, value=np.asarray(constant, dtype=float))
    return b.build(link, float32=float32)


def _regressor_forest(table, n_features, float32) -> tuple[NodeForest, int]:
    if table["targets"] != 1 or (table["w_out"] != 0).any():
        raise TreePathUnavailable("ONNX regressor with several targets")
    if table["transform"] != "NONE":
        raise TreePathUnavailable(f"ONNX regressor with post_transform {table['transform']}")
    if table["aggregate"] not in ("SUM", "AVERAGE"):
        raise TreePathUnavailable(f"ONNX regressor with aggregate_function {table['aggregate']}")
    if table["base"].size > 1:
        raise TreePathUnavailable("ONNX regressor with several base values")
    n_trees = np.unique(table["tree"]).size
    scale = 1.0 / max(n_trees, 1) if table["aggregate"] == "AVERAGE" else 1.0
    constant = table["base"][:1] if table["base"].size else np.zeros(1)
    # AVERAGE: onnxruntime divides the trees' sum by their number and then adds the base value
    return _forest(table, n_features, table["weight"][:, None] * scale, constant, 0, float32), 1


def _classifier_forest(table, n_features, n_classes, float32) -> tuple[NodeForest, int]:
    """onnxruntime's classifier (see module docs): one binary score column, or a column per class."""
    w, out, base, transform = table["weight"], table["w_out"], table["base"], table["transform"]
    used = np.unique(out)
    if n_classes < 2 or (out < 0).any() or (out >= n_classes).any():
        raise TreePathUnavailable("ONNX classifier weights for classes outside its labels")
    if n_classes == 2 and used.size == 1:
        if used[0] != 0 or base.size > 1:
            raise TreePathUnavailable("ONNX binary classifier of one score column other than onnxruntime's usual")
        b0 = float(base[0]) if base.size else 0.0
        if transform == "PROBIT":
            raise TreePathUnavailable("ONNX classifier with post_transform PROBIT")
        if (w >= 0).all():  # onnxruntime: [1 - s, s], whatever the transform
            return _forest(table, n_features, np.column_stack([-w, w]), [1.0 - b0, b0], 0, float32), 2
        if transform == "LOGISTIC":
            return _forest(table, n_features, w[:, None], [b0], 1, float32), 2
        if transform == "NONE":
            return _forest(table, n_features, np.column_stack([-w, w]), [-b0, b0], 0, float32), 2
        raise TreePathUnavailable(f"ONNX binary classifier with post_transform {transform}")
    if n_classes == 2 and base.size == 2:
        raise TreePathUnavailable("ONNX binary classifier with two base values and two score columns")
    if base.size not in (0, n_classes) and not (n_classes == 2 and base.size == 1):
        raise TreePathUnavailable(f"ONNX classifier with {base.size} base values for {n_classes} classes")
    columns = np.zeros((w.size, n_classes))
    columns[np.arange(w.size), out] = w
    constant = np.zeros(n_classes)
    constant[: base.size] = base
    if transform == "NONE":
        return _forest(table, n_features, columns, constant, 0, float32), n_classes
    if transform == "SOFTMAX":
        return _forest(table, n_features, columns, constant, 2, float32), n_classes
    raise TreePathUnavailable(f"ONNX classifier of {n_classes} score columns with post_transform {transform}")

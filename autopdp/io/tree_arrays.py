"""The node arrays of scikit-learn's tree containers checked after a skops load, before anything predicts.

autopdp trusts ``sklearn.tree._tree.Tree`` and ``...predictor.TreePredictor`` by name when it loads a ``.skops``
file (:data:`autopdp.io.loading.DEFAULT_TRUSTED_TYPES`): skops rebuilds them from arrays without running code from
the file.  But scikit-learn's compiled predict walks those arrays without bounds checks, so a crafted file whose
nodes point outside the tree (a child index past the last node, a feature past the model's columns, a categorical
bitset that does not exist) would make predict read memory it does not own or loop for ever.  skops itself warns
of this for ``TreePredictor``.  :func:`check_tree_arrays` walks the loaded model and refuses any such tree:

* every split's children are nodes of the same tree and come after it (so every walk ends at a leaf);
* every split's feature is one of the model's columns (``n_features_in_`` of the estimator that holds the tree,
  where it has one) and, for ``Tree``, within its own ``n_features``;
* a categorical split's bitset row exists; ``Tree``'s values have one row per node.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError

__all__ = ["check_tree_arrays"]


def _refuse(label: str, what: str) -> InputError:
    return InputError(f"{label} holds a tree whose {what}: the file is damaged or crafted, and predicting with it "
                      "would read outside the tree's arrays; autopdp does not load it.")


def _check_predictor(p, n_features, label) -> None:
    nodes = np.asarray(p.nodes)
    n = nodes.shape[0]
    if n == 0:
        raise _refuse(label, "node array is empty")
    split = ~nodes["is_leaf"].astype(bool)
    idx = np.flatnonzero(split)
    for side in ("left", "right"):
        child = nodes[side][split].astype(np.int64)
        bad = (child <= idx) | (child >= n)
        if bad.any():
            i = int(idx[bad][0])
            raise _refuse(label, f"node {i} has {side} child {int(nodes[side][i])} (of {n} nodes, after the node)")
    feat = nodes["feature_idx"][split].astype(np.int64)
    limit = n_features if n_features is not None else np.iinfo(np.int64).max
    bad = (feat < 0) | (feat >= limit)
    if bad.any():
        i = int(idx[bad][0])
        raise _refuse(label, f"node {i} splits on feature {int(nodes['feature_idx'][i])} of a model with "
                             f"{n_features} columns")
    cat = split & nodes["is_categorical"].astype(bool)
    if cat.any():
        rows = np.asarray(p.raw_left_cat_bitsets).shape[0]
        bidx = nodes["bitset_idx"][cat].astype(np.int64)
        bad = (bidx < 0) | (bidx >= rows) | (bidx >= np.asarray(p.binned_left_cat_bitsets).shape[0])
        if bad.any():
            i = int(np.flatnonzero(cat)[bad][0])
            raise _refuse(label, f"categorical node {i} reads bitset {int(nodes['bitset_idx'][i])} of {rows}")


def _check_tree(t, n_features, label) -> None:
    state = t.__getstate__()
    nodes = np.asarray(state["nodes"])
    n = int(state["node_count"])
    if nodes.shape[0] != n or np.asarray(state["values"]).shape[0] != n or n == 0:
        raise _refuse(label, f"arrays disagree on its size ({nodes.shape[0]} nodes, {n} counted)")
    left, right = nodes["left_child"].astype(np.int64), nodes["right_child"].astype(np.int64)
    leaf = left == -1
    if (leaf != (right == -1)).any():
        i = int(np.flatnonzero(leaf != (right == -1))[0])
        raise _refuse(label, f"node {i} has one child only")
    idx = np.flatnonzero(~leaf)
    for side, child in (("left", left), ("right", right)):
        c = child[~leaf]
        bad = (c <= idx) | (c >= n)
        if bad.any():
            i = int(idx[bad][0])
            raise _refuse(label, f"node {i} has {side} child {int(child[i])} (of {n} nodes, after the node)")
    limit = min(int(t.n_features), n_features) if n_features is not None else int(t.n_features)
    feat = nodes["feature"][~leaf].astype(np.int64)
    bad = (feat < 0) | (feat >= limit)
    if bad.any():
        i = int(idx[bad][0])
        raise _refuse(label, f"node {i} splits on feature {int(nodes['feature'][i])} of {limit}")


def check_tree_arrays(model, label: str = "the model") -> int:
    """Refuse (InputError) a tree of ``model`` whose nodes point outside it (see module docs); returns how many
    trees were checked.  Walks the estimator's attributes, lists, tuples, dicts and object arrays."""
    from sklearn.ensemble._hist_gradient_boosting.predictor import TreePredictor
    from sklearn.tree._tree import Tree

    seen: set[int] = set()
    stack = [(model, None)]
    checked = 0
    while stack:
        obj, n_features = stack.pop()
        if id(obj) in seen or obj is None or isinstance(obj, (str, bytes, int, float, bool, np.generic)):
            continue
        seen.add(id(obj))
        if isinstance(obj, TreePredictor):
            _check_predictor(obj, n_features, label)
            checked += 1
            continue
        if isinstance(obj, Tree):
            _check_tree(obj, n_features, label)
            checked += 1
            continue
        if isinstance(obj, np.ndarray):
            if obj.dtype == object:
                stack.extend((o, n_features) for o in obj.ravel())
            continue
        if isinstance(obj, dict):
            stack.extend((v, n_features) for v in obj.values())
            continue
        if isinstance(obj, (list, tuple, set, frozenset)):
            stack.extend((v, n_features) for v in obj)
            continue
        attrs = getattr(obj, "__dict__", None)
        if isinstance(attrs, dict):
            nf = attrs.get("n_features_in_", n_features)
            nf = int(nf) if isinstance(nf, (int, np.integer)) else n_features
            stack.extend((v, nf) for v in attrs.values())
    return checked

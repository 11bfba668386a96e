"""The node arrays of scikit-learn's tree containers checked after a skops load, before anything predicts.

autopdp trusts ``sklearn.tree._tree.Tree`` and ``...predictor.TreePredictor`` by name when it loads a ``.skops``
file (:data:`autopdp.io.loading.DEFAULT_TRUSTED_TYPES`): skops rebuilds them from arrays without running code from
the file.  But scikit-learn's compiled predict walks those arrays without bounds checks, so a crafted file whose
nodes point outside the tree (a child index past the last node, a feature past the model's columns, a categorical
bitset that does not exist) would make predict read memory it does not own or loop for ever.  skops itself warns
of this for ``TreePredictor``.  :func:`check_tree_arrays` walks the loaded model and refuses any such tree:

* every split's children are nodes of the same tree and come after it (so every walk ends at a leaf);
* every split's feature is one of the columns the tree will see: the width its estimator declares
  (``n_features_in_``, capped by an ensemble's that holds it), else the data's width (checked again once the audit
  has read the data), and, for ``Tree``, within its own ``n_features``;
* a categorical split's bitset row exists and is 8 words wide, and (HistGradientBoosting) its feature is one the
  bin mapper flags as categorical, over as many columns as the model declares; ``Tree``'s values have one row per
  node.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from .boosters import binary_tree_fault, check_lightgbm_text, check_xgboost

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


def _check_hgb_categories(est, label) -> None:
    """HistGradientBoosting's predict looks a categorical split's feature up in its bin mapper's categorical flags
    (``_bin_mapper.is_categorical_``) and reads 256-bit bitsets: a split on a feature the mapper does not flag, or a
    bitset narrower than 8 words, reads outside those arrays."""
    predictors = est.__dict__.get("_predictors")
    if not isinstance(predictors, (list, tuple)):
        return
    mapper = est.__dict__.get("_bin_mapper")
    flags = getattr(mapper, "__dict__", {}).get("is_categorical_")
    is_cat = np.asarray(flags if flags is not None else [], dtype=bool).ravel()
    declared = _declared(est.__dict__)
    if flags is not None and declared is not None and is_cat.size != declared:
        raise _refuse(label, f"bin mapper flags {is_cat.size} columns as categorical or not, of a model with "
                             f"{declared} columns")
    for p in (p for row in predictors if isinstance(row, (list, tuple)) for p in row):
        nodes = getattr(p, "nodes", None)
        if not isinstance(nodes, np.ndarray) or nodes.dtype.names is None or "is_categorical" not in nodes.dtype.names:
            continue
        for name in ("raw_left_cat_bitsets", "binned_left_cat_bitsets"):
            bits = np.asarray(getattr(p, name, np.zeros((0, 8), np.uint32)))
            if bits.ndim != 2 or bits.shape[1] != 8:
                raise _refuse(label, f"categorical bitsets have shape {bits.shape}, not (n, 8)")
        cat = (nodes["is_categorical"].astype(bool)) & ~nodes["is_leaf"].astype(bool)
        feats = nodes["feature_idx"][cat].astype(np.int64)
        bad = (feats < 0) | (feats >= is_cat.size)
        bad[~bad] = ~is_cat[feats[~bad]]
        if bad.any():
            raise _refuse(label, f"categorical node {int(np.flatnonzero(cat)[bad][0])} splits on feature "
                                 f"{int(feats[bad][0])}, which its bin mapper does not flag as categorical")


def _check_tree(t, n_features, label) -> None:
    """``n_features``: the columns the tree will see (None: not known yet; its own ``n_features`` bounds it)."""
    state = t.__getstate__()
    nodes = np.asarray(state["nodes"])
    n = int(state["node_count"])
    if nodes.shape[0] != n or np.asarray(state["values"]).shape[0] != n or n == 0:
        raise _refuse(label, f"arrays disagree on its size ({nodes.shape[0]} nodes, {n} counted)")
    limit = min(int(t.n_features), n_features) if n_features is not None else int(t.n_features)
    fault = binary_tree_fault(nodes["left_child"].astype(np.int64), nodes["right_child"].astype(np.int64),
                              nodes["feature"].astype(np.int64), limit)
    if fault:
        raise _refuse(label, fault)


#: Estimators whose trees see exactly the columns the estimator itself was given: a tree they hold that declares no
#: width of its own is bounded by theirs.  Any other holder (a Pipeline's later steps, a ColumnTransformer, bagging
#: on feature subsets, stacking) may hand its trees other columns, so a tree there must declare its own width.
def _passes_width(obj) -> bool:
    from sklearn.ensemble import AdaBoostClassifier, AdaBoostRegressor
    from sklearn.ensemble._forest import BaseForest
    from sklearn.ensemble._gb import BaseGradientBoosting
    from sklearn.ensemble._hist_gradient_boosting.gradient_boosting import BaseHistGradientBoosting
    from sklearn.tree import BaseDecisionTree

    return isinstance(obj, (BaseDecisionTree, BaseForest, BaseGradientBoosting, BaseHistGradientBoosting,
                            AdaBoostClassifier, AdaBoostRegressor))


def _is_hgb(obj) -> bool:
    from sklearn.ensemble._hist_gradient_boosting.gradient_boosting import BaseHistGradientBoosting

    return isinstance(obj, BaseHistGradientBoosting)


def _booster_kind(obj) -> str:
    """"xgboost" or "lightgbm" for those libraries' Booster objects, else ""."""
    cls = type(obj)
    if cls.__name__ != "Booster":
        return ""
    module = cls.__module__.split(".")[0]
    return module if module in ("xgboost", "lightgbm") else ""


#: The width of a tree held by the model itself when nothing declares one: the data's, known when the audit reads it.
DATA_WIDTH = "the data's width"


def _declared(attrs: dict):
    nf = attrs.get("n_features_in_")
    return int(nf) if isinstance(nf, (int, np.integer)) and not isinstance(nf, bool) and nf >= 0 else None


def _children(obj, attrs: dict, width):
    """(child, width) for each value held by ``obj``: its own declared width (capped by what it was given), passed
    on only where :func:`_passes_width`; a Pipeline gives its first step what it was given."""
    own = _declared(attrs)
    if own is not None and isinstance(width, int):
        own = min(own, width)
    mine = own if own is not None else width
    if hasattr(obj, "steps") and isinstance(attrs.get("steps"), list):  # a Pipeline: only its first step sees X
        steps = [s[1] if isinstance(s, tuple) and len(s) == 2 else s for s in attrs["steps"]]
        return [(s, mine if i == 0 else None) for i, s in enumerate(steps)]
    passed = mine if _passes_width(obj) else own
    return [(v, passed) for v in attrs.values()]


def check_tree_arrays(model, label: str = "the model", n_columns: int | None = None) -> int:
    """Refuse (InputError) a tree of ``model`` whose nodes point outside it (see module docs); returns how many
    trees were checked.  Walks the estimator's attributes, lists, tuples, dicts and object arrays.

    A tree's features are bounded by the width its holder declares (``n_features_in_``, capped by an ensemble's);
    where no estimator declares one, by ``n_columns``, the width of the data (the audit checks again once it has
    read the data: :func:`autopdp.auditing.validation._validated_inputs`).  A tree whose width nothing bounds (held
    by a later Pipeline step, say, that declares none) is refused."""
    from sklearn.ensemble._hist_gradient_boosting.predictor import TreePredictor
    from sklearn.tree._tree import Tree

    seen: set[int] = set()
    stack = [(model, DATA_WIDTH)]
    checked = 0
    while stack:
        obj, width = stack.pop()
        if id(obj) in seen or obj is None or isinstance(obj, (str, bytes, int, float, bool, np.generic)):
            continue
        seen.add(id(obj))
        if isinstance(obj, (TreePredictor, Tree)):
            limit = n_columns if width is DATA_WIDTH else width
            if limit is None and width is not DATA_WIDTH:
                raise _refuse(label, "input width nothing declares (its estimator has no n_features_in_, which "
                                     "every scikit-learn fit sets)")
            (_check_predictor if isinstance(obj, TreePredictor) else _check_tree)(obj, limit, label)
            checked += 1
            continue
        booster = _booster_kind(obj)
        if booster:  # XGBoost's and LightGBM's own trees: read from their text forms (autopdp.io.boosters)
            checked += check_xgboost(obj, label) if booster == "xgboost" else check_lightgbm_text(
                obj.model_to_string(), label)
            continue
        if isinstance(obj, np.ndarray):
            if obj.dtype == object:
                stack.extend((o, width) for o in obj.ravel())
            continue
        if isinstance(obj, dict):
            stack.extend((v, width) for v in obj.values())
            continue
        if isinstance(obj, (list, tuple, set, frozenset)):
            stack.extend((v, width) for v in obj)
            continue
        attrs = getattr(obj, "__dict__", None)
        if isinstance(attrs, dict):
            if _is_hgb(obj):
                _check_hgb_categories(obj, label)
            stack.extend(_children(obj, attrs, width))
    return checked

"""XGBoost and LightGBM models checked before their own compiled code walks them.

An MLflow artifact (or any booster file) is data: a crafted one whose root points to child 1,000,000 loads
natively and then makes the library's predict (or LightGBM's own dump) read memory it does not own.  Both are
read here through their text forms, never walked:

* LightGBM: the text model file, parsed line by line *before* LightGBM loads it (:func:`check_booster_file`);
* XGBoost: the booster's JSON (``save_raw("json")``, which copies the node arrays without walking them), after
  it is loaded and before anything predicts (:func:`check_xgboost`).

Every tree must have children inside it and after their node (so every walk ends at a leaf, and no table
grows past the nodes), splits on declared features, leaves of the declared count, categorical splits whose
category lists exist, and at most :data:`MAX_BOOSTER_NODES` nodes in all.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..errors import InputError

__all__ = ["binary_tree_fault", "check_booster_file", "check_xgboost", "check_lightgbm_text", "MAX_BOOSTER_NODES"]

#: Most nodes of all a booster's trees together (a million-node tree file is ~10 MB).
MAX_BOOSTER_NODES = 20_000_000


def _refuse(uri: str, tree: int, what: str) -> InputError:
    return InputError(f"{uri} holds a tree (#{tree}) whose {what}: the file is damaged or crafted, and predicting "
                      "with it would read outside the tree's arrays; autopdp does not load it.")


def binary_tree_fault(left: np.ndarray, right: np.ndarray, feature: np.ndarray, n_features: int) -> str:
    """What is wrong with a binary tree's node arrays (child -1 marks a leaf), or "": a node with one child only, a
    child that is not a later node of the tree, a split on a feature outside ``[0, n_features)``.  Shared by
    XGBoost's trees and scikit-learn's (:mod:`autopdp.io.tree_arrays`)."""
    n = left.size
    leaf = left == -1
    if (leaf != (right == -1)).any():
        return f"node {int(np.flatnonzero(leaf != (right == -1))[0])} has one child only"
    idx = np.flatnonzero(~leaf)
    for side, child in (("left", left), ("right", right)):
        bad = (child[~leaf] <= idx) | (child[~leaf] >= n)
        if bad.any():
            i = int(idx[bad][0])
            return f"node {i} has {side} child {int(child[i])} (of {n} nodes, after the node)"
    bad = (feature[~leaf] < 0) | (feature[~leaf] >= n_features)
    if bad.any():
        i = int(idx[bad][0])
        return f"node {i} splits on feature {int(feature[i])} of a model with {n_features} columns"
    return ""


def check_booster_file(path: Path, kind: str, uri: str, max_mb: float) -> None:
    """A booster file's size (at most ``max_mb``) and, for LightGBM, its trees (:func:`check_lightgbm_text`)."""
    size = path.stat().st_size if path.is_file() else -1
    if size < 0:
        raise InputError(f"{uri}: the {kind} model file {path.name!r} is missing from the artifact.")
    if size > max_mb * 2 ** 20:
        raise InputError(f"{uri}: the {kind} model file is {size / 2 ** 20:,.0f} MB, over the {max_mb:,g} MB limit for a "
                         f"model; if it is really that large, rerun with --max-model-mb {int(size / 2 ** 20) + 1}.")
    if kind == "lightgbm":
        check_lightgbm_text(path.read_text(encoding="utf-8", errors="replace"), uri)


def _ints(text: str, key: str, uri: str, tree: int) -> np.ndarray:
    try:
        return np.array([int(float(v)) for v in text.split()], dtype=np.int64)
    except (ValueError, OverflowError):
        raise _refuse(uri, tree, f"{key} is not a list of numbers") from None


def _lightgbm_tree(fields: dict, tree: int, n_features: int, uri: str) -> int:
    """Check one ``Tree=`` block of a LightGBM text model; returns its node count."""
    try:
        leaves = int(fields.get("num_leaves", "0"))
        n_cat = int(fields.get("num_cat", "0"))
    except ValueError:
        raise _refuse(uri, tree, "num_leaves or num_cat is not a number") from None
    if leaves < 1 or n_cat < 0:
        raise _refuse(uri, tree, f"num_leaves is {leaves}")
    splits = leaves - 1
    if splits == 0:
        return 1
    arrays = {k: _ints(fields.get(k, ""), k, uri, tree) for k in ("split_feature", "left_child", "right_child",
                                                                    "decision_type")}
    for key, arr in arrays.items():
        if arr.size != splits:
            raise _refuse(uri, tree, f"{key} has {arr.size} entries for {splits} splits")
    for key, n in (("threshold", splits), ("leaf_value", leaves)):
        try:
            count = len([float(v) for v in fields.get(key, "").split()])
        except ValueError:
            raise _refuse(uri, tree, f"{key} is not a list of numbers") from None
        if count != n:
            raise _refuse(uri, tree, f"{key} has {count} entries for {n}")
    node = np.arange(splits)
    for side in ("left_child", "right_child"):
        c = arrays[side]
        inner_bad = (c >= 0) & ((c <= node) | (c >= splits))
        leaf_bad = (c < 0) & (~c >= leaves)
        if (inner_bad | leaf_bad).any():
            i = int(np.flatnonzero(inner_bad | leaf_bad)[0])
            raise _refuse(uri, tree, f"node {i} has {side.replace('_child', '')} child {int(c[i])} (of {splits} "
                                     f"splits and {leaves} leaves)")
    f = arrays["split_feature"]
    if ((f < 0) | (f >= n_features)).any():
        i = int(np.flatnonzero((f < 0) | (f >= n_features))[0])
        raise _refuse(uri, tree, f"node {i} splits on feature {int(f[i])} of a model with {n_features} columns")
    categorical = (arrays["decision_type"] & 1).astype(bool)
    if categorical.any():
        bounds = _ints(fields.get("cat_boundaries", ""), "cat_boundaries", uri, tree)
        cats = _ints(fields.get("cat_threshold", ""), "cat_threshold", uri, tree)
        index = _ints(fields.get("threshold", ""), "threshold", uri, tree)
        if bounds.size != n_cat + 1 or (np.diff(bounds) < 0).any() or (bounds.size and (bounds[0] < 0 or bounds[-1] > cats.size)) \
                or index.size != splits or ((index[categorical] < 0) | (index[categorical] >= n_cat)).any():
            raise _refuse(uri, tree, "categorical splits name category lists it does not have")
    return 2 * splits + 1


def check_lightgbm_text(text: str, uri: str = "the model") -> int:
    """Refuse a LightGBM text model whose trees point outside themselves; returns how many trees were checked."""
    lines = text.splitlines()
    header = dict(line.split("=", 1) for line in lines[:200] if "=" in line and not line.startswith("Tree="))
    try:
        n_features = int(header.get("max_feature_idx", "-1")) + 1
    except ValueError:
        n_features = 0
    if n_features <= 0:
        raise InputError(f"{uri}: the LightGBM model file declares no features (max_feature_idx); the file is damaged "
                         "or not a LightGBM model.")
    blocks: list[dict] = []
    starts, offset, end = [], 0, None
    for line in text.split("\n"):  # byte offsets as LightGBM counts them (tree_sizes)
        if line.startswith("Tree="):
            blocks.append({})
            starts.append(offset)
        elif line.startswith("end of trees"):
            end = offset
            break
        elif blocks and "=" in line:
            key, value = line.split("=", 1)
            blocks[-1][key] = value
        offset += len(line.encode("utf-8", "surrogateescape")) + 1
    declared = header.get("tree_sizes", "").split()
    measured = [b - a for a, b in zip(starts, [*starts[1:], end])] if end is not None else None
    if declared and measured != [int(v) if v.isdigit() else -1 for v in declared]:
        raise InputError(f"{uri}: the LightGBM model file's tree_sizes do not match its trees; the file is damaged or "
                         "crafted (LightGBM would abort reading it); autopdp does not load it.")
    total = 0
    for t, fields in enumerate(blocks):
        total += _lightgbm_tree(fields, t, n_features, uri)
        if total > MAX_BOOSTER_NODES:
            raise InputError(f"{uri} holds over {MAX_BOOSTER_NODES:,} tree nodes, over autopdp's limit for a model.")
    return len(blocks)


def _xgboost_tree(tree: dict, t: int, n_features: int, uri: str) -> int:
    try:
        n = int(tree["tree_param"]["num_nodes"])
        left = np.asarray(tree["left_children"], dtype=np.int64)
        right = np.asarray(tree["right_children"], dtype=np.int64)
        feature = np.asarray(tree["split_indices"], dtype=np.int64)
    except (KeyError, TypeError, ValueError):
        raise _refuse(uri, t, "node arrays are missing or not numbers") from None
    try:  # a leaf's value and a split's threshold are read from split_conditions, the way missing values go from
        # default_left: each must have an entry per node
        others = [len(tree[k]) for k in ("split_conditions", "default_left", "base_weights")]
    except (KeyError, TypeError):
        raise _refuse(uri, t, "node arrays are missing") from None
    if n < 1 or not (left.size == right.size == feature.size == n) or any(k < n for k in others):
        raise _refuse(uri, t, f"arrays disagree on its size ({n} nodes declared)")
    fault = binary_tree_fault(left, right, feature, n_features)
    if fault:
        raise _refuse(uri, t, fault)
    cat_nodes = np.asarray(tree.get("categories_nodes") or [], dtype=np.int64)
    if cat_nodes.size:
        seg = np.asarray(tree.get("categories_segments") or [], dtype=np.int64)
        size = np.asarray(tree.get("categories_sizes") or [], dtype=np.int64)
        n_cats = len(tree.get("categories") or [])
        if seg.size != cat_nodes.size or size.size != cat_nodes.size or ((cat_nodes < 0) | (cat_nodes >= n)).any() \
                or (seg < 0).any() or (size < 0).any() or (seg + size > n_cats).any():
            raise _refuse(uri, t, "categorical splits name category lists it does not have")
    return n


def check_xgboost(model, uri: str = "the model") -> int:
    """Refuse a loaded XGBoost model (a Booster or a scikit-learn wrapper) whose trees point outside themselves,
    read from its JSON (no tree walked); returns how many trees were checked."""
    booster = model.get_booster() if hasattr(model, "get_booster") else model
    try:
        learner = json.loads(booster.save_raw(raw_format="json"))["learner"]
        n_features = int(learner["learner_model_param"]["num_feature"])
        gb = learner["gradient_booster"]
        if gb.get("name") == "gblinear":
            return 0  # a linear booster: no trees
        trees = (gb["gbtree"] if gb.get("name") == "dart" else gb)["model"].get("trees", [])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InputError(f"{uri}: the XGBoost model's description cannot be read ({type(exc).__name__}: {exc}).") from None
    total = 0
    for t, tree in enumerate(trees):
        total += _xgboost_tree(tree, t, n_features, uri)
        if total > MAX_BOOSTER_NODES:
            raise InputError(f"{uri} holds over {MAX_BOOSTER_NODES:,} tree nodes, over autopdp's limit for a model.")
    return len(trees)

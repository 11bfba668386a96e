"""Tree ensembles as one node table: scikit-learn's trees and forests, HistGradientBoosting (native categories and
missing values), XGBoost and LightGBM, read into a :class:`NodeForest` the exact kernels walk
(:mod:`autopdp.pd.tree.ice`, :mod:`autopdp.pd.tree.moves`).

Splits are kept as the libraries route them: numeric thresholds, missing values (NaN) to the side each node
learnt, native categorical splits by the node's set of categories (scikit-learn's HistGradientBoosting bitsets
with unknown categories treated as missing, LightGBM's category sets, XGBoost's category lists).  The model's
link (identity, sigmoid, softmax, exp) is recorded beside the trees.  Whoever uses the forest checks it against
the model (:class:`autopdp.pd.tree.fastpath.TreePlan`): a reconstruction that does not reproduce the model's
predictions is refused.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import TreePathUnavailable

__all__ = ["NodeForest", "extract_forest", "LINKS", "NUMERIC", "CATEGORICAL", "ZERO_MISSING", "EQUAL", "MAX_GRID"]

#: link id -> name: identity, sigmoid(scale * raw) (binary: [1 - p, p]), softmax, exp
LINKS = {0: "identity", 1: "sigmoid", 2: "softmax", 3: "exp"}
NUMERIC, CATEGORICAL, ZERO_MISSING, EQUAL = 0, 1, 2, 3
MAX_GRID = 64
#: ``known`` of a categorical node whose unlisted categories all go right (XGBoost); codes up to
#: 32 * XGB_CATEGORY_WORDS - 1 are covered (a larger code routes as missing and the extraction's
#: check against the model refuses the path)
ALL_CATEGORIES = object()
XGB_CATEGORY_WORDS = 32


@dataclass(frozen=True, eq=False)
class NodeForest:
    """Flat node arrays of a tree ensemble (global node ids; ``feature < 0`` marks a leaf).

    ``kind``: 0 numeric (``x <= threshold`` goes left), 1 categorical (category
    in ``catbits`` goes left, in ``catknown`` right, else as missing), 2 numeric
    where 0 counts as missing (LightGBM), 3 equality (``x == threshold`` goes
    left: ONNX's ``BRANCH_EQ``/``BRANCH_NEQ``).  ``value[node, k]``: a leaf's
    contribution to raw output k.  ``link``/``scale``/``n_out``: how raw
    outputs become the model's response columns.
    """

    feature: np.ndarray
    threshold: np.ndarray
    kind: np.ndarray
    missing_left: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    roots: np.ndarray
    catbits: np.ndarray
    catknown: np.ndarray
    link: int
    scale: float
    float32: bool
    max_nodes: int

    @property
    def packed(self) -> np.ndarray:
        """(n_nodes, 5) int64: feature, left, right, kind, missing_left per node, one cache line apiece.

        The walk of :func:`autopdp.pd.tree.kernels.row_leaves` reads these together at every node;
        from one row of a table it runs ~1.8x faster than from five arrays.
        """
        if getattr(self, "_packed", None) is None:
            table = np.column_stack([self.feature, self.left, self.right, self.kind,
                                     self.missing_left.astype(np.int64)]).astype(np.int64)
            object.__setattr__(self, "_packed", np.ascontiguousarray(table))
        return self._packed


class _Builder:
    def __init__(self, K):
        self.K = K
        self.cols = {k: [] for k in ("feature", "threshold", "kind", "missing_left", "left", "right")}
        self.values, self.cats, self.roots = [], [], []
        self.max_nodes = 1

    def tree(self, n_nodes):
        base = len(self.cols["feature"])
        self.roots.append(base)
        self.max_nodes = max(self.max_nodes, n_nodes)
        return base

    def node(self, feature, threshold=0.0, kind=NUMERIC, missing_left=False, left=-1, right=-1, value=None,
             cats=None, known=None):
        self.cols["feature"].append(feature)
        self.cols["threshold"].append(threshold)
        self.cols["kind"].append(kind)
        self.cols["missing_left"].append(missing_left)
        self.cols["left"].append(left)
        self.cols["right"].append(right)
        v = np.zeros(self.K)
        if value is not None:
            v[:] = value
        self.values.append(v)
        self.cats.append((cats, known))

    def bulk(self, feature, threshold, kind, missing_left, left, right, values, cats=None):
        """Many nodes at once (arrays of one tree's nodes, as :meth:`node` takes them one by one); ``cats``: each
        node's ``(cats, known)`` as :meth:`node` takes them (default: none)."""
        for key, arr in (("feature", feature), ("threshold", threshold), ("kind", kind),
                         ("missing_left", missing_left), ("left", left), ("right", right)):
            self.cols[key].extend(np.asarray(arr).tolist())
        values = np.asarray(values, dtype=float).reshape(len(feature), self.K)
        self.values.extend(values)
        self.cats.extend([(None, None)] * len(feature) if cats is None else cats)

    def build(self, link, scale=1.0, float32=False) -> NodeForest:
        n = len(self.cols["feature"])
        top = max([int(max(c)) for c, _ in self.cats if c is not None and len(c)] + [0])
        words = top // 32 + 1
        if any(k is ALL_CATEGORIES for _, k in self.cats):
            words = max(words, XGB_CATEGORY_WORDS)
        catbits = np.zeros((n, words), dtype=np.uint32)
        catknown = np.zeros((n, words), dtype=np.uint32)
        for i, (cats, known) in enumerate(self.cats):
            if known is ALL_CATEGORIES:
                catknown[i, :] = np.uint32(0xFFFFFFFF)
                known = None
            for arr, target in ((cats, catbits), (known, catknown)):
                if arr is None:
                    continue
                for c in arr:
                    c = int(c)
                    if 0 <= c < 32 * words:
                        target[i, c >> 5] |= np.uint32(1 << (c & 31))
        return NodeForest(
            feature=np.asarray(self.cols["feature"], dtype=np.int64),
            threshold=np.asarray(self.cols["threshold"], dtype=np.float64),
            kind=np.asarray(self.cols["kind"], dtype=np.int64),
            missing_left=np.asarray(self.cols["missing_left"], dtype=np.bool_),
            left=np.asarray(self.cols["left"], dtype=np.int64), right=np.asarray(self.cols["right"], dtype=np.int64),
            value=np.vstack(self.values) if self.values else np.zeros((0, self.K)),
            roots=np.asarray(self.roots, dtype=np.int64), catbits=catbits, catknown=catknown,
            link=link, scale=float(scale), float32=float32, max_nodes=self.max_nodes,
        )


def _sklearn_tree(b: _Builder, tree, values):
    """Add one fitted sklearn ``Tree``; ``values``: (node_count, K) leaf contributions."""
    n = int(tree.node_count)
    base = b.tree(n)
    left = np.asarray(tree.children_left[:n], dtype=np.int64)
    right = np.asarray(tree.children_right[:n], dtype=np.int64)
    leaf = left == -1
    mleft = getattr(tree, "missing_go_to_left", None)
    missing = np.zeros(n, dtype=bool) if mleft is None else np.asarray(mleft[:n]).astype(bool) & ~leaf
    values = np.asarray(values, dtype=float).reshape(n, b.K)
    b.bulk(np.where(leaf, -1, np.asarray(tree.feature[:n], dtype=np.int64)),
           np.where(leaf, 0.0, np.asarray(tree.threshold[:n], dtype=np.float64)), np.full(n, NUMERIC, dtype=np.int64),
           missing, np.where(leaf, -1, base + left), np.where(leaf, -1, base + right),
           np.where(leaf[:, None], values, 0.0))


def _hgb(model, K):
    """The trees of a fitted HistGradientBoosting model, a tree's nodes at once (its categorical splits one by one)."""
    b = _Builder(K)
    known = None
    if getattr(model, "is_categorical_", None) is not None and np.any(model.is_categorical_):
        known_bitsets, f_idx_map = model._bin_mapper.make_known_categories_bitsets()
        known = (known_bitsets, f_idx_map)
    for predictors in model._predictors:
        for k, pred in enumerate(predictors):
            nodes = pred.nodes
            n = len(nodes)
            base = b.tree(n)
            leaf = nodes["is_leaf"].astype(bool)
            categorical = nodes["is_categorical"].astype(bool) & ~leaf
            values = np.zeros((n, K))
            values[leaf, k] = nodes["value"][leaf]
            cats = [(None, None)] * n
            if categorical.any():
                raw_bits = pred.raw_left_cat_bitsets
                for i in np.flatnonzero(categorical).tolist():
                    f = int(nodes["feature_idx"][i])
                    cats[i] = (_bits_to_list(raw_bits[int(nodes["bitset_idx"][i])]),
                               _bits_to_list(known[0][known[1][f]]) if known is not None else None)
            b.bulk(np.where(leaf, -1, nodes["feature_idx"].astype(np.int64)),
                   np.where(leaf | categorical, 0.0, nodes["num_threshold"].astype(np.float64)),
                   np.where(categorical, CATEGORICAL, NUMERIC).astype(np.int64),
                   nodes["missing_go_to_left"].astype(bool) & ~leaf,
                   np.where(leaf, -1, base + nodes["left"].astype(np.int64)),
                   np.where(leaf, -1, base + nodes["right"].astype(np.int64)), values, cats=cats)
    return b


def _bits_to_list(words) -> list[int]:
    out = []
    for w, word in enumerate(np.asarray(words, dtype=np.uint64)):
        for bit in range(32):
            if (int(word) >> bit) & 1:
                out.append(32 * w + bit)
    return out


#: Bytes each node of the trees costs the exact tree path's tables (its kernels' arrays).
NODE_BYTES = 100
#: Bytes each cell of the root-to-leaf table (leaves x the deepest leaf's depth) costs at its peak while it is built.
CELL_BYTES = 33
#: The tables' default bound: ``max_batch_mb``'s default (:class:`autopdp.PDOptions`, :class:`autopdp.AuditConfig`).
MAX_TREE_BYTES = 256e6


def extract_forest(model, adapter, max_bytes: float = MAX_TREE_BYTES) -> tuple[NodeForest, int]:
    """The node arrays of a supported fitted tree model and its number of response columns.

    Raises :class:`TreePathUnavailable` with the reason when the model is not supported, or when the exact path's
    tables for its trees would exceed ``max_bytes`` (``max_batch_mb``, the largest array an audit step builds: a
    crafted 16,001-node chain would ask for gigabytes); the audit then takes another exact path (leaf counting, or
    the model's own predictions) and notes why.
    """
    forest, n_out = _extract_forest(model, adapter)
    check_forest_size(forest, max_bytes)
    return forest, n_out


def _too_large(what: str, mb: float, max_bytes: float) -> TreePathUnavailable:
    return TreePathUnavailable(f"{what}: over {mb:,.0f} MB for the exact tree path's tables, above max_batch_mb "
                               f"({max_bytes / 1e6:g} MB); to use that path, raise it with --max-batch-mb")


def check_forest_size(forest: NodeForest, max_bytes: float = MAX_TREE_BYTES) -> None:
    """:class:`TreePathUnavailable` when the forest's nodes (:data:`NODE_BYTES` each) or its root-to-leaf table
    (leaves x the deepest leaf's depth, :data:`CELL_BYTES` a cell) would take more than ``max_bytes``; found level
    by level, before any table."""
    n = int(forest.feature.size)
    if n * NODE_BYTES > max_bytes:
        raise _too_large(f"the trees hold {n:,} nodes", n * NODE_BYTES / 1e6, max_bytes)
    split = forest.feature >= 0
    leaves = int(n - split.sum())
    level, depth = np.asarray(forest.roots, dtype=np.int64), 0
    while level.size:
        level = level[split[level]]
        if not level.size:
            break
        depth += 1
        if leaves * depth * CELL_BYTES > max_bytes or depth > n:
            raise _too_large(f"the trees' root-to-leaf table would hold over {leaves * depth:,} cells ({leaves:,} "
                             f"leaves, depth {depth} and more)", leaves * depth * CELL_BYTES / 1e6, max_bytes)
        level = np.unique(np.concatenate([forest.left[level], forest.right[level]]))  # a shared child counts once


def _extract_forest(model, adapter) -> tuple[NodeForest, int]:
    from sklearn.ensemble import (
        ExtraTreesClassifier, ExtraTreesRegressor, GradientBoostingClassifier, GradientBoostingRegressor,
        HistGradientBoostingClassifier, HistGradientBoostingRegressor, RandomForestClassifier, RandomForestRegressor,
    )
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    response = adapter.response
    if isinstance(model, (DecisionTreeClassifier, RandomForestClassifier, ExtraTreesClassifier)):
        if response != "predict_proba" or model.n_outputs_ != 1:
            raise TreePathUnavailable(f"{type(model).__name__} with response {response!r}")
        ests = [model] if isinstance(model, DecisionTreeClassifier) else model.estimators_
        K = len(model.classes_)
        b = _Builder(K)
        for est in ests:
            v = est.tree_.value[:, 0, :]
            v = v / np.maximum(v.sum(axis=1, keepdims=True), 1e-300) / len(ests)
            _sklearn_tree(b, est.tree_, v)
        return b.build(0, float32=True), K
    if isinstance(model, (DecisionTreeRegressor, RandomForestRegressor, ExtraTreesRegressor)):
        if model.n_outputs_ != 1:
            raise TreePathUnavailable("multi-output tree regressors")
        ests = [model] if isinstance(model, DecisionTreeRegressor) else model.estimators_
        b = _Builder(1)
        for est in ests:
            _sklearn_tree(b, est.tree_, est.tree_.value[:, 0, :1] / len(ests))
        return b.build(0, float32=True), 1
    if isinstance(model, (GradientBoostingRegressor, GradientBoostingClassifier)):
        K = model.estimators_.shape[1]
        b = _Builder(K)
        for row in model.estimators_:
            for k, est in enumerate(row):
                v = np.zeros((est.tree_.node_count, K))
                v[:, k] = est.tree_.value[:, 0, 0] * model.learning_rate
                _sklearn_tree(b, est.tree_, v)
        if isinstance(model, GradientBoostingRegressor):
            if model.loss not in ("squared_error", "absolute_error", "huber", "quantile"):
                raise TreePathUnavailable(f"GradientBoostingRegressor with loss={model.loss!r}")
            return b.build(0, float32=True), 1
        return _classifier_link(b, adapter, K, scale=2.0 if model.loss == "exponential" else 1.0, float32=True)
    if isinstance(model, (HistGradientBoostingRegressor, HistGradientBoostingClassifier)):
        K = int(model.n_trees_per_iteration_)
        b = _hgb(model, K)
        if isinstance(model, HistGradientBoostingRegressor):
            if model.loss in ("squared_error", "absolute_error", "quantile"):
                return b.build(0), 1
            if model.loss in ("poisson", "gamma"):
                return b.build(3), 1
            raise TreePathUnavailable(f"HistGradientBoostingRegressor with loss={model.loss!r}")
        return _classifier_link(b, adapter, K)
    module = type(model).__module__
    if module.startswith("xgboost"):
        return _xgboost(model, adapter)
    if module.startswith("lightgbm"):
        return _lightgbm(model, adapter)
    raise TreePathUnavailable(f"{type(model).__name__} is not a supported tree model")


def _classifier_link(b: _Builder, adapter, K, scale=1.0, float32=False):
    """Boosted classifier: decision_function is the raw score; predict_proba its sigmoid/softmax."""
    if adapter.response == "decision_function":
        return b.build(0, float32=float32), K
    if adapter.response != "predict_proba":
        raise TreePathUnavailable(f"response {adapter.response!r}")
    if K == 1:
        return b.build(1, scale=scale, float32=float32), 2
    return b.build(2, float32=float32), K


_XGB_LINKS = {"binary:logistic": 1, "multi:softprob": 2, "multi:softmax": 2, "reg:logistic": 1,
              "count:poisson": 3, "reg:gamma": 3, "reg:tweedie": 3}
_XGB_IDENTITY = ("reg:squarederror", "reg:absoluteerror", "reg:pseudohubererror", "reg:quantileerror",
                 "reg:squaredlogerror", "binary:logitraw")


def _xgboost(model, adapter):
    """XGBoost from the booster's JSON model (its tree dump when the JSON has deleted nodes or vector leaves):
    ``x < split`` left in float32, NaN to the default direction, a listed category to the right child."""
    booster = model.get_booster()
    objective = model.get_params().get("objective") or ("binary:logistic" if adapter.is_classifier else "reg:squarederror")
    if not isinstance(objective, str):
        raise TreePathUnavailable("XGBoost with a custom objective")
    if getattr(model, "best_iteration", None) is not None and \
            model.best_iteration + 1 < booster.num_boosted_rounds():
        raise TreePathUnavailable("an early-stopped XGBoost model predicts with part of its trees")
    rounds = max(1, booster.num_boosted_rounds())
    b = _xgboost_from_json(booster, objective, rounds)
    if b is None:
        b = _xgboost_from_dump(booster, objective, rounds)
    if adapter.response == "decision_function" or not adapter.is_classifier:
        link = _XGB_LINKS.get(objective, None) if not adapter.is_classifier else 0
        if link is None and objective not in _XGB_IDENTITY:
            raise TreePathUnavailable(f"XGBoost with objective {objective!r}")
        link = link or 0
        return b.build(link, float32=True), (b.K if link != 1 else 2) if adapter.is_classifier else 1
    if objective == "binary:logistic":
        return b.build(1, float32=True), 2
    if objective in ("multi:softprob", "multi:softmax"):
        return b.build(2, float32=True), b.K
    raise TreePathUnavailable(f"XGBoost classifier with objective {objective!r}")


def _xgboost_k(objective, n_trees, rounds) -> int:
    return max(1, n_trees // rounds) if objective.startswith("multi:") else 1


def _xgboost_from_json(booster, objective, rounds):
    """A :class:`_Builder` of the booster's trees read from its JSON model; None when a tree has deleted
    nodes or vector leaves (the tree dump handles those)."""
    import json

    model = json.loads(bytes(booster.save_raw("json")))["learner"]["gradient_booster"]["model"]
    trees = model["trees"]
    if any(str(t["tree_param"].get("num_deleted", "0")) != "0" or
           str(t["tree_param"].get("size_leaf_vector", "1")) not in ("0", "1") for t in trees):
        return None
    K = _xgboost_k(objective, len(trees), rounds)
    b = _Builder(K)
    for t, tree in enumerate(trees):
        left, right = np.asarray(tree["left_children"]), np.asarray(tree["right_children"])
        split = np.asarray(tree["split_conditions"], dtype=np.float32)
        below = np.nextafter(split, np.float32(-np.inf)).astype(float)  # x < split  <=>  x <= below (float32)
        feature, kind = tree["split_indices"], tree["split_type"]
        default_left = tree["default_left"]
        cats = {}
        for node, start, size in zip(tree["categories_nodes"], tree["categories_segments"], tree["categories_sizes"]):
            cats[int(node)] = [int(c) for c in tree["categories"][start: start + size]]
        base = b.tree(left.size)
        k = t % K
        for i in range(left.size):
            if left[i] == -1:
                v = np.zeros(K)
                v[k] = float(split[i])
                b.node(-1, value=v)
            elif kind[i] == 1:
                # XGBoost: a listed category goes right, every other category left, NaN the default way
                b.node(int(feature[i]), 0.0, CATEGORICAL, not default_left[i], base + int(right[i]),
                       base + int(left[i]), cats=cats.get(i, []), known=ALL_CATEGORIES)
            else:
                b.node(int(feature[i]), below[i], NUMERIC, bool(default_left[i]), base + int(left[i]),
                       base + int(right[i]))
    return b


def _xgboost_from_dump(booster, objective, rounds):
    """A :class:`_Builder` of the booster's trees read from its tree dump (``trees_to_dataframe``)."""
    df = booster.trees_to_dataframe()
    names = booster.feature_names
    index = {name: i for i, name in enumerate(names)} if names else None
    n_trees = int(df["Tree"].max()) + 1 if len(df) else 0
    K = _xgboost_k(objective, n_trees, rounds)
    b = _Builder(K)
    for t, tree in df.groupby("Tree", sort=True):
        ids = {row_id: i for i, row_id in enumerate(tree["ID"])}
        base = b.tree(len(ids))
        k = int(t) % K
        for row in tree.itertuples(index=False):
            if row.Feature == "Leaf":
                v = np.zeros(K)
                v[k] = float(row.Gain)
                b.node(-1, value=v)
                continue
            f = index[row.Feature] if index else int(str(row.Feature).lstrip("f"))
            left, right = base + ids[row.Yes], base + ids[row.No]
            mleft = row.Missing == row.Yes
            cats = getattr(row, "Category", None)
            if isinstance(cats, (list, tuple, np.ndarray)):
                # XGBoost: a listed category goes to Yes, every other category to No, NaN to Missing
                b.node(f, 0.0, CATEGORICAL, mleft, left, right, cats=[int(c) for c in cats], known=ALL_CATEGORIES)
            else:
                t32 = float(np.nextafter(np.float32(row.Split), np.float32(-np.inf)))
                b.node(f, t32, NUMERIC, mleft, left, right)
    return b


_LGBM_IDENTITY = ("regression", "regression_l2", "l2", "mean_squared_error", "mse", "regression_l1", "l1",
                  "mean_absolute_error", "mae", "huber", "fair", "quantile")


def _lightgbm(model, adapter):
    """LightGBM from ``dump_model()``: ``x <= threshold`` left, missing types None/Zero/NaN, category sets."""
    dump = model.booster_.dump_model()
    objective = str(dump.get("objective", "")).split(" ")[0]
    best = getattr(model, "best_iteration_", None)
    K = int(dump.get("num_tree_per_iteration", 1))
    trees = dump["tree_info"]
    if best:
        trees = trees[: best * K]
    b = _Builder(K)
    for t, info in enumerate(trees):
        k = t % K
        flat = []
        stack = [info["tree_structure"]]
        while stack:  # number the nodes in pre-order
            node = stack.pop()
            flat.append(node)
            if "leaf_value" not in node:
                stack.append(node["right_child"])
                stack.append(node["left_child"])
        pos = {id(n): i for i, n in enumerate(flat)}
        base = b.tree(len(flat))
        for node in flat:
            if "leaf_value" in node:
                v = np.zeros(K)
                v[k] = float(node["leaf_value"])
                b.node(-1, value=v)
                continue
            f = int(node["split_feature"])
            left, right = base + pos[id(node["left_child"])], base + pos[id(node["right_child"])]
            mtype = node.get("missing_type", "None")
            if node.get("decision_type", "<=") == "==":
                cats = [int(c) for c in str(node["threshold"]).split("||") if c != ""]
                b.node(f, 0.0, CATEGORICAL, False, left, right, cats=cats, known=None)
                continue
            thr = float(node["threshold"])
            default_left = bool(node.get("default_left", True))
            if mtype == "NaN":
                b.node(f, thr, NUMERIC, default_left, left, right)
            elif mtype == "Zero":
                b.node(f, thr, ZERO_MISSING, default_left, left, right)
            else:  # None: NaN is read as 0
                b.node(f, thr, NUMERIC, 0.0 <= thr, left, right)
    if adapter.is_classifier:
        if adapter.response == "decision_function":
            return b.build(0), K
        if objective == "binary":
            sig = 1.0
            for part in str(dump.get("objective", "")).split(" "):
                if part.startswith("sigmoid:"):
                    sig = float(part.split(":")[1])
            return b.build(1, scale=sig), 2
        if objective in ("multiclass", "softmax"):
            return b.build(2), K
        raise TreePathUnavailable(f"LightGBM classifier with objective {objective!r}")
    if objective in _LGBM_IDENTITY:
        return b.build(0), 1
    if objective in ("poisson", "gamma", "tweedie"):
        return b.build(3), 1
    raise TreePathUnavailable(f"LightGBM with objective {objective!r}")

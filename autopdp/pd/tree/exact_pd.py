"""Exact fast partial dependence for tree ensembles (the brute-force estimator, without predicting).

For a tree, the prediction is the value of the leaf a row reaches, and a row
reaches leaf L exactly when it satisfies every condition on L's path.  With
x_S set to v, row i reaches L when v satisfies L's conditions on S and x_C^(i)
satisfies all the others.  So the brute-force (interventional) PD is

    PD_S(v) = sum_L value_L * W_L(S) * 1[v in box_L(S)] / sum_i w_i

where W_L(S) is the weight of the background rows that satisfy every condition
of L's path except those on features in S.  Counting, per leaf, the rows that
violate no condition (c0), exactly one feature's conditions (c1, per feature
on the path) and exactly two features' (c2, per pair on the path) gives W_L(S)
for every S of size 1 and 2 at once:

    W_L({j}) = c0 + c1[j],   W_L({j, k}) = c0 + c1[j] + c1[k] + c2[j, k].

This is per-leaf counting in the spirit of FastPD (Liu et al., ICML 2025),
restricted to the subsets of size 1 and 2 autopdp needs; the counting kernel is
compiled with numba.  The result equals the brute-force engine's to rounding
(tested to 1e-9), unlike scikit-learn's ``method="recursion"``, which weights
paths by the training data and differs when features are correlated.

Supported: DecisionTree, RandomForest and ExtraTrees classifiers (predict_proba)
and regressors; GradientBoosting and HistGradientBoosting regressors with an
identity link, and the classifiers' decision_function (their probabilities go
through a sigmoid/softmax of the sum of trees, which does not decompose, so they
use the brute-force path); any of these as the last step of a Pipeline whose
earlier steps map each explained column to one column elementwise (scalers,
ordinal encoders, passthrough).  Trees with native categorical splits and data
with missing values in the columns the trees see use the brute-force path.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import TreePathUnavailable

__all__ = ["TreeEnsemble", "TreePD", "extract_ensemble", "boosting_offset", "TreePathUnavailable"]


@dataclass(frozen=True, eq=False)
class TreeEnsemble:
    """All leaves of an ensemble as boxes, ready for counting.

    ``feat[L, m]``, ``lo[L, m]``, ``hi[L, m]``: the m-th distinct feature on
    leaf L's path and its interval (lo, hi]; ``nf[L]`` how many; ``value[L, t]``
    the leaf's contribution to target t (ensemble weights applied);
    ``offset[t]`` the constant part of the prediction; ``float32``: whether
    the model compares float32 inputs (scikit-learn's classic trees).
    """

    feat: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    nf: np.ndarray
    value: np.ndarray
    offset: np.ndarray
    float32: bool
    n_features: int


def _boxes_sklearn_tree(tree, n_features):
    """Leaf boxes of a fitted sklearn ``Tree`` (x <= threshold goes left)."""
    left, right = tree.children_left, tree.children_right
    feature, threshold = tree.feature, tree.threshold
    leaves, boxes = [], []
    stack = [(0, {})]
    while stack:
        node, box = stack.pop()
        if left[node] == -1:
            leaves.append(node)
            boxes.append(box)
            continue
        f, t = int(feature[node]), float(threshold[node])
        lo, hi = box.get(f, (-np.inf, np.inf))
        lbox = dict(box)
        lbox[f] = (lo, min(hi, t))
        rbox = dict(box)
        rbox[f] = (max(lo, t), hi)
        stack.append((right[node], rbox))
        stack.append((left[node], lbox))
    return leaves, boxes


def _boxes_hgb_predictor(nodes):
    leaves, boxes = [], []
    stack = [(0, {})]
    while stack:
        node, box = stack.pop()
        rec = nodes[node]
        if rec["is_leaf"]:
            leaves.append(node)
            boxes.append(box)
            continue
        if rec["is_categorical"]:
            raise TreePathUnavailable("the model has native categorical splits")
        f, t = int(rec["feature_idx"]), float(rec["num_threshold"])
        lo, hi = box.get(f, (-np.inf, np.inf))
        lbox = dict(box)
        lbox[f] = (lo, min(hi, t))
        rbox = dict(box)
        rbox[f] = (max(lo, t), hi)
        stack.append((int(rec["right"]), rbox))
        stack.append((int(rec["left"]), lbox))
    return leaves, boxes


def _pack(all_boxes, values, n_features, offset, float32):
    n_leaves = len(all_boxes)
    width = max([len(b) for b in all_boxes] + [1])
    feat = np.full((n_leaves, width), -1, dtype=np.int64)
    lo = np.full((n_leaves, width), -np.inf)
    hi = np.full((n_leaves, width), np.inf)
    nf = np.zeros(n_leaves, dtype=np.int64)
    for i, box in enumerate(all_boxes):
        for m, (f, (a, b)) in enumerate(sorted(box.items())):
            feat[i, m], lo[i, m], hi[i, m] = f, a, b
        nf[i] = len(box)
    return TreeEnsemble(feat=feat, lo=lo, hi=hi, nf=nf, value=np.asarray(values, dtype=float),
                        offset=np.asarray(offset, dtype=float), float32=float32, n_features=n_features)


def _forest(estimators, n_features, columns, scale, classifier):
    boxes, values = [], []
    for est in estimators:
        tree = est.tree_
        leaves, bxs = _boxes_sklearn_tree(tree, n_features)
        v = tree.value[leaves][:, 0, :]  # (leaves, n_classes) or (leaves, 1)
        if classifier:
            v = v / np.maximum(v.sum(axis=1, keepdims=True), 1e-300)
        boxes.extend(bxs)
        values.append(v[:, columns] * scale)
    return boxes, np.vstack(values)


def extract_ensemble(model, adapter, n_features: int) -> TreeEnsemble:
    """The leaves of a supported fitted model (see module docs) for the adapter's targets.

    Raises :class:`TreePathUnavailable` with the reason when the fast path does not apply.
    """
    from sklearn.ensemble import (
        ExtraTreesClassifier, ExtraTreesRegressor, GradientBoostingClassifier, GradientBoostingRegressor,
        HistGradientBoostingClassifier, HistGradientBoostingRegressor, RandomForestClassifier, RandomForestRegressor,
    )
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    response = adapter.response
    cols = adapter.columns
    if isinstance(model, (DecisionTreeClassifier, RandomForestClassifier, ExtraTreesClassifier)):
        if response != "predict_proba" or model.n_outputs_ != 1:
            raise TreePathUnavailable(f"{type(model).__name__} with response {response!r}")
        ests = [model] if isinstance(model, DecisionTreeClassifier) else model.estimators_
        cols = np.arange(len(model.classes_)) if cols is None else cols
        boxes, values = _forest(ests, n_features, cols, 1.0 / len(ests), classifier=True)
        return _pack(boxes, values, n_features, np.zeros(len(cols)), float32=True)
    if isinstance(model, (DecisionTreeRegressor, RandomForestRegressor, ExtraTreesRegressor)):
        if model.n_outputs_ != 1:
            raise TreePathUnavailable("multi-output tree regressors")
        ests = [model] if isinstance(model, DecisionTreeRegressor) else model.estimators_
        boxes, values = _forest(ests, n_features, [0], 1.0 / len(ests), classifier=False)
        return _pack(boxes, values, n_features, np.zeros(1), float32=True)
    if isinstance(model, (GradientBoostingRegressor, GradientBoostingClassifier)):
        if isinstance(model, GradientBoostingClassifier):
            if response != "decision_function":
                raise TreePathUnavailable(
                    "boosted classifiers' probabilities are a sigmoid/softmax of the sum of trees, which does not "
                    "decompose over leaves (response='decision_function' does)"
                )
            if model.estimators_.shape[1] != 1:
                raise TreePathUnavailable("multiclass gradient boosting")
        boxes, vals = [], []
        for est in model.estimators_[:, 0]:
            leaves, bxs = _boxes_sklearn_tree(est.tree_, n_features)
            boxes.extend(bxs)
            vals.append(est.tree_.value[leaves][:, 0, :1] * model.learning_rate)
        return _pack(boxes, np.vstack(vals), n_features, np.full(1, np.nan), float32=True)
    if isinstance(model, (HistGradientBoostingRegressor, HistGradientBoostingClassifier)):
        if isinstance(model, HistGradientBoostingClassifier):
            if response != "decision_function" or model.n_trees_per_iteration_ != 1:
                raise TreePathUnavailable(
                    "boosted classifiers' probabilities are a sigmoid/softmax of the sum of trees, which does not "
                    "decompose over leaves (response='decision_function' does)"
                )
        elif model.loss not in ("squared_error", "absolute_error", "quantile"):
            raise TreePathUnavailable(f"HistGradientBoostingRegressor with loss={model.loss!r} has a non-identity link")
        if getattr(model, "is_categorical_", None) is not None and np.any(model.is_categorical_):
            raise TreePathUnavailable("the model has native categorical splits")
        boxes, vals = [], []
        for predictors in model._predictors:  # one list of per-class predictors per iteration
            nodes = predictors[0].nodes
            leaves, bxs = _boxes_hgb_predictor(nodes)
            boxes.extend(bxs)
            vals.append(nodes["value"][leaves][:, None])
        return _pack(boxes, np.vstack(vals), n_features, np.full(1, np.nan), float32=False)
    module = type(model).__module__
    if module.startswith("xgboost"):
        return _xgboost(model, adapter, n_features)
    if module.startswith("lightgbm"):
        return _lightgbm(model, adapter, n_features)
    raise TreePathUnavailable(f"{type(model).__name__} is not a supported tree model")


_IDENTITY_XGB = ("reg:squarederror", "reg:absoluteerror", "reg:pseudohubererror", "reg:quantileerror")
_IDENTITY_LGBM = ("regression", "regression_l2", "l2", "mean_squared_error", "mse", "regression_l1", "l1",
                  "mean_absolute_error", "mae", "huber", "fair", "quantile")


def _xgboost(model, adapter, n_features):
    """XGBoost regressors with an identity objective, from the trees :mod:`autopdp.pd.tree.extract` reads
    (the booster's JSON model, or its tree dump for deleted nodes and vector leaves).

    XGBoost sends ``x < split`` left and compares float32 values, so the split
    becomes ``x <= prev_float32(split)`` in autopdp's (lo, hi] boxes.
    """
    from .extract import CATEGORICAL, _xgboost_from_dump, _xgboost_from_json

    objective = model.get_params().get("objective") or "reg:squarederror"
    if adapter.is_classifier or not isinstance(objective, str) or objective not in _IDENTITY_XGB:
        raise TreePathUnavailable(f"XGBoost with objective {objective!r} (only identity-link regressors decompose)")
    booster = model.get_booster()
    rounds = max(1, booster.num_boosted_rounds())
    if getattr(model, "best_iteration", None) is not None and hasattr(model, "n_estimators") \
            and model.best_iteration + 1 < rounds:
        raise TreePathUnavailable("an early-stopped XGBoost model predicts with part of its trees")
    builder = _xgboost_from_json(booster, objective, rounds) or _xgboost_from_dump(booster, objective, rounds)
    forest = builder.build(0, float32=True)  # thresholds already x <= prev_float32(split)
    if (forest.kind == CATEGORICAL).any():
        raise TreePathUnavailable("the model has categorical splits")
    boxes, values = [], []
    for root in forest.roots:
        stack = [(int(root), {})]
        while stack:
            node, box = stack.pop()
            f = int(forest.feature[node])
            if f < 0:
                boxes.append(box)
                values.append([float(forest.value[node, 0])])
                continue
            t = float(forest.threshold[node])
            lo, hi = box.get(f, (-np.inf, np.inf))
            left, right = dict(box), dict(box)
            left[f] = (lo, min(hi, t))
            right[f] = (max(lo, t), hi)
            stack.append((int(forest.right[node]), right))
            stack.append((int(forest.left[node]), left))
    return _pack(boxes, np.asarray(values), n_features, np.full(1, np.nan), float32=True)


def _lightgbm(model, adapter, n_features):
    """LightGBM regressors with an identity objective, from ``dump_model()`` (x <= threshold goes left)."""
    objective = model.get_params().get("objective") or "regression"
    if adapter.is_classifier or not isinstance(objective, str) or objective not in _IDENTITY_LGBM:
        raise TreePathUnavailable(f"LightGBM with objective {objective!r} (only identity-link regressors decompose)")
    dump = model.booster_.dump_model()
    best = getattr(model, "best_iteration_", None)
    trees = dump["tree_info"]
    if best:
        trees = trees[:best]
    boxes, values = [], []
    for info in trees:
        stack = [(info["tree_structure"], {})]
        while stack:
            node, box = stack.pop()
            if "leaf_value" in node:
                boxes.append(box)
                values.append([float(node["leaf_value"])])
                continue
            if node.get("decision_type", "<=") != "<=":
                raise TreePathUnavailable("the model has categorical splits")
            f, t = int(node["split_feature"]), float(node["threshold"])
            lo, hi = box.get(f, (-np.inf, np.inf))
            left, right = dict(box), dict(box)
            left[f] = (lo, min(hi, t))
            right[f] = (max(lo, t), hi)
            stack.append((node["right_child"], right))
            stack.append((node["left_child"], left))
    return _pack(boxes, np.asarray(values), n_features, np.full(1, np.nan), float32=False)




def leaf_counts(ens: TreeEnsemble, Z: np.ndarray, w: np.ndarray):
    """c0 (leaves,), c1 (leaves, width), c2 (leaves, width, width): background weight by violations."""
    from .kernels import count
    X = np.ascontiguousarray(Z.astype(np.float32).astype(np.float64) if ens.float32 else Z.astype(np.float64))
    width = ens.feat.shape[1]
    c0 = np.zeros(ens.feat.shape[0])
    c1 = np.zeros((ens.feat.shape[0], width))
    c2 = np.zeros((ens.feat.shape[0], width, width))
    from .ice import in_parallel

    in_parallel(count, ens.feat.shape[0], X, np.ascontiguousarray(w, dtype=np.float64), ens.feat, ens.lo, ens.hi,
                ens.nf, c0, c1, c2)
    return c0, c1, c2




class TreePD:
    """Leaf counts of one ensemble on one background, answering PDs of any 1 or 2 features."""

    def __init__(self, ens: TreeEnsemble, Z: np.ndarray, w: np.ndarray):
        self.ens = ens
        self.total_w = float(np.sum(w))
        self.c0, self.c1, self.c2 = leaf_counts(ens, Z, w)
        self.float32 = ens.float32
        # slot[L, f]: where feature f sits on leaf L's path (-1: not on it)
        n_leaves, width = ens.feat.shape
        self.slot = np.full((n_leaves, max(ens.n_features, 1)), -1, dtype=np.int64)
        rows, slots = np.nonzero(ens.feat >= 0)
        self.slot[rows, ens.feat[rows, slots]] = slots

    def _grid(self, g):
        g = np.asarray(g, dtype=float)
        return g.astype(np.float32).astype(np.float64) if self.float32 else g

    def many(self, requests) -> list[np.ndarray]:
        """PDs (minus the offset) of ``[(positions, grids), ...]``; each (n_targets, *grid_shape).

        Grids must be sorted ascending (numeric grids are).
        """
        if not requests:
            return []
        p = self.ens.n_features
        gmax = max(len(g) for _, grids in requests for g in grids)
        grids_tab = np.full((p, gmax), np.inf)
        gn = np.zeros(p, dtype=np.int64)
        sets = np.full((len(requests), 2), -1, dtype=np.int64)
        for s, (positions, grids) in enumerate(requests):
            for m, (f, g) in enumerate(zip(positions, grids)):
                g = self._grid(g)
                if np.any(np.diff(g) < 0):
                    raise TreePathUnavailable("a grid is not sorted")
                if gn[f] and not np.array_equal(grids_tab[f, :gn[f]], g):
                    sub = self.many(requests[:s]) if s else []
                    return sub + self.many(requests[s:])  # another grid for the same feature: split the call
                grids_tab[f, :g.size] = g
                gn[f] = g.size
                sets[s, m] = f
        T = self.ens.value.shape[1]
        out = np.zeros((len(requests), T, gmax, gmax))
        from .ice import in_parallel
        from .kernels import pd_sets

        in_parallel(pd_sets, len(requests), sets, self.slot, (self.ens.lo, self.ens.hi, self.c0, self.c1, self.c2),
                    self.ens.value, grids_tab, gn, out)
        res = []
        for s, (positions, grids) in enumerate(requests):
            shape = tuple(len(g) for g in grids)
            block = out[s, :, :shape[0], :(shape[1] if len(shape) == 2 else 1)]
            res.append((block[:, :, 0] if len(shape) == 1 else block) / self.total_w)
        return res

    def pd_1d(self, j: int, grid) -> np.ndarray:
        """(n_targets, len(grid)) average prediction minus the offset."""
        return self.many([([j], [grid])])[0]

    def pd_2d(self, j: int, grid_j, k: int, grid_k) -> np.ndarray:
        """(n_targets, len(grid_j), len(grid_k)) average prediction minus the offset."""
        return self.many([([j, k], [grid_j, grid_k])])[0]


def boosting_offset(raw_predict, ens, z0):
    """Constant of a boosted model: its raw prediction minus the sum of the row's leaves."""
    X = z0.astype(np.float32).astype(np.float64) if ens.float32 else z0.astype(np.float64)
    inside = np.ones(ens.feat.shape[0], dtype=bool)
    for m in range(ens.feat.shape[1]):
        f = ens.feat[:, m]
        use = f >= 0
        x = np.where(use, X[0, np.maximum(f, 0)], 0.0)
        inside &= ~use | ((x > ens.lo[:, m]) & (x <= ens.hi[:, m]))
    tree_sum = ens.value[inside].sum(axis=0)
    raw = np.asarray(raw_predict(z0), dtype=float).reshape(-1)
    return raw - tree_sum

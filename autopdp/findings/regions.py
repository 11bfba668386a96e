"""For whom the effect differs: tested regional PDs (issue 55).

A feature whose ICE curves do not run parallel acts differently on different rows.  Following REPID (Herbinger et
al., AISTATS 2022) and GADGET (Herbinger et al., JMLR 2024), the rows are split on the *other* features so that
the centred ICE curves within each region are as alike as possible; each region's PD then says what the feature
does there.

* **Heterogeneity** of a set S of rows: ``H(S) = sum_{i in S} w_i ||c_i - c_S||^2``, the weighted spread of the
  centred curves ``c_i = ice_i - mean_g ice_i`` about their weighted mean ``c_S`` (the regional PD, centred).
* **Splits**: a numeric threshold (``<=`` / ``>``; a missing value goes with ``>``) or, for a categorical feature, a
  set of levels (``in`` / ``not in``; the levels ordered by their mean first principal component of the centred
  curves, then cut as a numeric would be).  Each side holds at least ``min_share`` of the weight.  Up to
  ``depth`` levels of splits (a region is split again when its own split passes its test).
* **A tested split, the search accounted for** (sample splitting): the rows are halved at random (``seed``); the
  split is chosen on the first half and tested on the second, whose rows the search never saw.  The test is a
  permutation test of the region labels on the second half (statistic: the heterogeneity between regions, the
  share of ``H`` the split explains); its p-value is exact for the null that the centred curves do not depend on
  the side of the split, whatever search chose it.  The p-values are adjusted across features
  (Benjamini-Hochberg) by the caller.
* **Material**: the split explains at least ``min_explained`` of the second half's heterogeneity, and the two
  regional centred PDs differ by more than ``threshold`` somewhere on the grid (on the second half).

Everything is conditional on the fitted model, as every finding: the curves are the model's, the rows are the
sample.  The numbers the report prints (shares, regional PDs) are over all the rows given.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

__all__ = ["Region", "RegionSplit", "find_regions", "MIN_SHARE", "MIN_EXPLAINED"]

#: the least share of the weight a region may hold
MIN_SHARE = 0.10
#: the least share of the ICE curves' heterogeneity a reported split explains: half, so that the regions are the
#: main story of the curves' spread.  A fitted model of an additive truth has heterogeneity of its own (a default
#: HistGradientBoosting on 1,000 rows: its best split explains 11-25% on 25 seeds, with regional PDs 3-5 times the
#: materiality threshold apart); a planted interaction half the size of the main effect is explained 76-86%
#: (``benchmarks/bench_regions.py``)
MIN_EXPLAINED = 0.5


@dataclass(frozen=True)
class Region:
    """One region: ``rule`` a tuple of ``(feature, op, value)`` conditions (``op`` one of ``<=``, ``>``, ``in``,
    ``not in``; a ``>`` condition on a feature with missing values carries a fourth element, True: the missing
    values go with it), its ``share`` of the weight, and its PD (``average``, on the ICE curves' scale) on ``grid``."""
    rule: tuple
    share: float
    average: np.ndarray
    #: the regional PD on the prediction's own scale, where the curves were on another (the figure draws it)
    average_prediction: np.ndarray | None = None
    #: the positions of its rows among the ICE curves given (the figure colours them)
    index: np.ndarray | None = None

    def to_dict(self, grid) -> dict:
        return {"rule": [{"feature": c[0], "op": c[1], "value": _plain(c[2]), **({"or_missing": True} if c[3:] else {})}
                         for c in self.rule],
                "share": float(self.share), "grid": np.asarray(grid).tolist(), "average": self.average.tolist(),
                **({} if self.average_prediction is None else
                   {"average_prediction": self.average_prediction.tolist()}),
                **({} if self.index is None else {"ice_index": np.asarray(self.index).tolist()})}


@dataclass(frozen=True)
class RegionSplit:
    """The regions of one feature: ``explained`` (the share of the second half's heterogeneity the first split
    explains), ``gap`` (the largest difference of its two regional centred PDs, second half), ``p`` (the permutation
    test's), ``material``, and the ``regions`` (leaves of the splits that passed); ``reason`` when no split was
    tested (too few rows, no heterogeneity, no admissible split)."""
    feature: str
    explained: float
    gap: float
    p: float
    material: bool
    regions: tuple = ()
    reason: str = ""
    adjusted_p: float = float("nan")
    finding: bool = False
    extra: dict = field(default_factory=dict)

    def to_dict(self, grid) -> dict:
        return {"feature": self.feature, "explained": _num(self.explained), "gap": _num(self.gap), "p": _num(self.p),
                "adjusted_p": _num(self.adjusted_p), "finding": bool(self.finding), "material": bool(self.material),
                "reason": self.reason, "regions": [r.to_dict(grid) for r in self.regions]}


def _num(x):
    return None if x is None or not np.isfinite(x) else float(x)


def _plain(v):
    if isinstance(v, (list, tuple, np.ndarray)):
        return [_plain(x) for x in v]
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        return float(v)
    return v if isinstance(v, (int, str, bool)) or v is None else str(v)


def _heterogeneity(C, w) -> float:
    sw = w.sum()
    if sw <= 0:
        return 0.0
    m = (w @ C) / sw
    return float(w @ ((C - m) ** 2).sum(axis=1))


def _cut_costs(C, w, order):
    """``H(left) + H(right)`` for every cut after position ``k`` of the rows in ``order`` (left: the first k+1)."""
    Cw = C[order] * w[order, None]
    sw = np.cumsum(w[order])
    s1 = np.cumsum(Cw, axis=0)
    s2 = np.cumsum(w[order] * (C[order] ** 2).sum(axis=1))
    tw, t1, t2 = sw[-1], s1[-1], s2[-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        left = s2 - (s1 ** 2).sum(axis=1) / sw
        rw = tw - sw
        right = (t2 - s2) - ((t1 - s1) ** 2).sum(axis=1) / np.where(rw > 0, rw, np.nan)
    return left + right, sw / tw


def _numeric_best(x, C, w, min_share):
    """(cost, threshold) of the best admissible ``x <= t`` cut, halfway between two different values (every such
    cut is tried: the costs of all come from one pass of cumulative sums); missing values go right."""
    ok = ~np.isnan(x)
    order = np.argsort(np.where(ok, x, np.inf), kind="stable")
    cost, share = _cut_costs(C, w, order)
    xs = np.where(ok, x, np.inf)[order]
    distinct = np.append(xs[1:] != xs[:-1], False) & np.isfinite(xs)  # a cut between two different values
    candidates = np.flatnonzero(distinct & (share >= min_share) & (share <= 1 - min_share))
    if not candidates.size:
        return np.inf, None
    k = candidates[np.argmin(cost[candidates])]
    return float(cost[k]), float((xs[k] + xs[k + 1]) / 2)  # halfway between the two sides' nearest values


def _categorical_best(x, C, w, min_share):
    """(cost, levels going left) of the best admissible level set; levels ordered by their mean first principal
    component of the centred curves, then cut in that order."""
    codes, levels = pd.factorize(pd.Series(x, dtype=object).where(pd.notna(x), "(missing)"), sort=True)
    if levels.size < 2:
        return np.inf, None
    centred = C - (w @ C) / w.sum()
    _, _, vt = np.linalg.svd(centred * np.sqrt(w)[:, None], full_matrices=False)
    score = centred @ vt[0]
    sums = np.bincount(codes, weights=w * score, minlength=levels.size)
    wsum = np.bincount(codes, weights=w, minlength=levels.size)
    rank = np.argsort(np.argsort(sums / np.maximum(wsum, 1e-300), kind="stable"), kind="stable")
    order = np.argsort(rank[codes], kind="stable")
    cost, share = _cut_costs(C, w, order)
    r = rank[codes][order]
    candidates = np.flatnonzero(np.append(r[1:] != r[:-1], False) & (share >= min_share) & (share <= 1 - min_share))
    if not candidates.size:
        return np.inf, None
    k = candidates[np.argmin(cost[candidates])]
    left = [levels[i] for i in range(levels.size) if rank[i] <= r[k]]
    return float(cost[k]), sorted(left, key=str)


def _side(x, op, value) -> np.ndarray:
    if op in ("in", "not in"):
        vals = pd.Series(x, dtype=object).where(pd.notna(x), "(missing)")
        inside = vals.isin(list(value)).to_numpy()
        return inside if op == "in" else ~inside
    x = np.asarray(x, dtype=float)
    return (x <= value) if op == "<=" else ~(x <= value)


def _best_split(others: pd.DataFrame, C, w, min_share):
    """(feature, left condition, right condition) of the best admissible split of these rows, or None."""
    best = (np.inf, None)
    for name in others.columns:
        col = others[name]
        if pd.api.types.is_numeric_dtype(col) and not isinstance(col.dtype, pd.CategoricalDtype):
            x = col.to_numpy(dtype=float)
            cost, t = _numeric_best(x, C, w, min_share)
            # a missing value goes with ">": the rule says so when the rows have one
            cond = None if t is None else ((name, "<=", t), (name, ">", t) + ((True,) if np.isnan(x).any() else ()))
        else:
            cost, left = _categorical_best(col.to_numpy(dtype=object), C, w, min_share)
            cond = None if left is None else ((name, "in", tuple(left)), (name, "not in", tuple(left)))
        if cond is not None and cost < best[0]:
            best = (cost, cond)
    return best[1]


def _between(C, w, labels) -> float:
    """The heterogeneity between the regions ``labels`` (0/1) defines: ``H(all) - H(0) - H(1)``."""
    return _heterogeneity(C, w) - _heterogeneity(C[labels], w[labels]) - _heterogeneity(C[~labels], w[~labels])


def _permutation_p(C, w, labels, rng, n_perm: int) -> float:
    """:func:`_permutation_between` of the two regions ``labels`` (bool) defines."""
    return _permutation_between(C, w, np.asarray(labels).astype(np.intp), rng, n_perm)


def _permutation_between(C, w, codes, rng, n_perm: int) -> float:
    """The share of ``n_perm`` random relabellings of the groups ``codes`` (0..k-1), with the observed one, whose
    heterogeneity between groups ``sum_g ||S_g||^2 / W_g - ||T||^2 / W`` (``S_g``, ``W_g``: the group's weighted sum of
    curves and weight) is at least the observed one's: an exact test of the null that the curves do not depend on
    the group."""
    wC = C * w[:, None]
    codes = np.asarray(codes, dtype=np.intp)
    P = np.vstack([codes] + [rng.permutation(codes) for _ in range(n_perm)])
    between = -float((wC.sum(axis=0) ** 2).sum() / w.sum()) * np.ones(P.shape[0])
    for g in range(int(codes.max()) + 1):
        M = (P == g).astype(float)
        Wg = M @ w
        with np.errstate(divide="ignore", invalid="ignore"):
            between += np.nan_to_num(((M @ wC) ** 2).sum(axis=1) / Wg, nan=0.0, posinf=0.0)
    tie = 1e-9 * float(w @ (C ** 2).sum(axis=1))  # sums' rounding, against the curves' own size
    return float(np.mean(between >= between[0] - tie))


def _tested(others, C, w, half, min_share, rng, n_perm):
    """The split chosen on ``~half`` and its test on ``half``: (conditions, explained, gap, p) or None."""
    choose = ~half
    split = _best_split(others[choose], C[choose], w[choose], min_share)
    if split is None:
        return None
    left = _side(others[split[0][0]].to_numpy(), *split[0][1:3])
    lb = left[half]
    if lb.all() or not lb.any():
        return None
    Cb, wb = C[half], w[half]
    total = _heterogeneity(Cb, wb)
    explained = _between(Cb, wb, lb) / total if total > 0 else 0.0
    mean = lambda m: (wb[m] @ Cb[m]) / wb[m].sum()  # noqa: E731 - the regional centred PD on the second half
    gap = float(np.max(np.abs(mean(lb) - mean(~lb))))
    return split, left, float(explained), gap, _permutation_p(Cb, wb, lb, rng, n_perm)


def find_regions(feature: str, ice, grid, others: pd.DataFrame, weights=None, *, threshold: float, seed: int = 0,
                 min_share: float = MIN_SHARE, min_explained: float = MIN_EXPLAINED, depth: int = 2,
                 n_perm: int = 1999, shown=None) -> RegionSplit:
    """The tested regions of ``feature`` (see module docs) from its ICE curves ``ice`` (rows x grid, on the
    criterion's scale), the rows' values of the other features ``others`` (same rows) and their ``weights``;
    ``shown``: the same curves on the prediction's scale, whose regional means the figure draws."""
    ice = np.asarray(ice, dtype=float)
    n = ice.shape[0]
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    C = ice - ice.mean(axis=1, keepdims=True)
    others = others.reset_index(drop=True)
    if n < 40 or others.shape[1] == 0:
        return RegionSplit(feature, np.nan, np.nan, np.nan, False, reason="too few rows or no other feature")
    if _heterogeneity(C, w) <= 1e-12 * max(1.0, float(w @ (ice ** 2).sum(axis=1))):
        return RegionSplit(feature, 0.0, 0.0, 1.0, False, reason="the ICE curves run parallel")
    rng = np.random.default_rng(seed)
    half = np.zeros(n, dtype=bool)
    half[rng.permutation(n)[: n // 2]] = True
    first = _tested(others, C, w, half, min_share, rng, n_perm)
    if first is None:
        return RegionSplit(feature, np.nan, np.nan, np.nan, False, reason="no split leaves each side "
                           f"{min_share:.0%} of the weight")
    split, left, explained, gap, p = first
    material = explained >= min_explained and gap > threshold
    leaves = []
    for cond, rows in ((split[0], left), (split[1], ~left)):
        sub = None
        if depth > 1 and rows.sum() >= 40:
            sub = _tested(others[rows].reset_index(drop=True), C[rows], w[rows], half[rows],
                          min_share * w.sum() / w[rows].sum(), rng, n_perm)
        if sub is not None and sub[4] <= 0.05 / 2 and sub[2] >= min_explained and sub[3] > threshold:
            inner = np.flatnonzero(rows)
            for c2, m2 in ((sub[0][0], sub[1]), (sub[0][1], ~sub[1])):
                leaves.append(((cond, c2), inner[m2]))
        else:
            leaves.append(((cond,), np.flatnonzero(rows)))
    mean = lambda v, idx: (w[idx] @ v[idx]) / w[idx].sum()  # noqa: E731 - a region's weighted PD
    regions = tuple(Region(rule, float(w[idx].sum() / w.sum()), mean(ice, idx),
                           None if shown is None else mean(np.asarray(shown, dtype=float), idx), idx)
                    for rule, idx in leaves)
    return RegionSplit(feature, explained, gap, p, material, regions)


def _curves_on_scale(result, inputs, config) -> tuple[np.ndarray, str]:
    """The kept ICE curves of a 1D PD (rows x grid, its first target) on the ICE-spread criterion's scale: the
    model's margin where the audit has it, else the log-odds of probabilities (``ice_variance_scale="link"``), else
    the prediction."""
    from ..pd.scales import link_scale

    link = getattr(inputs, "link", None)
    margin = None if link is None else link.curves.get(result.features)
    all_curves = np.asarray(result.individual, dtype=float)
    if config.ice_variance_scale == "link" and margin is not None:
        all_curves, name = np.asarray(margin, dtype=float), str(link.name)
    elif config.ice_variance_scale == "link":
        all_classes = bool(all_curves.shape[0] >= 3 and np.allclose(all_curves.sum(axis=0), 1.0, atol=1e-6))
        all_curves, name = link_scale(all_curves, result.response, all_classes=all_classes)
    else:
        name = "prediction"
    return all_curves[0].reshape(all_curves.shape[1], -1), name


def ice_row_positions(result) -> np.ndarray:
    """The frame positions of a PD's kept ICE curves: ``ice_rows``, or every row in order when it is None (the PD
    kept the curve of every row)."""
    if result.ice_rows is not None:
        return np.asarray(result.ice_rows, dtype=np.intp)
    return np.arange(np.asarray(result.individual).shape[1], dtype=np.intp)


def _flagged(evidence) -> list:
    """The features with an ICE-spread finding or in a pair with an interaction finding, in that order."""
    out = [f for (f, *rest), e in evidence.get("ice_variance", {}).items() if not rest and e.passed]
    for feats, e in evidence.get("interaction", {}).items():
        out.extend(f for f in feats if e.passed)
    return list(dict.fromkeys(out))


def audit_regions(inputs, results_1d, evidence, config, seed: int, features=None) -> dict:
    """``{feature: record}``: the tested regions (:func:`find_regions`) of every 1D PD with an ICE-spread or
    interaction finding and of those ``config.regions`` asks for (or of ``features``), on the ICE-spread criterion's
    scale against its threshold, the p-values adjusted across the features examined (``config.multiple_testing``);
    a record is a finding when its adjusted p is at most ``config.significance`` and it is material."""
    from .significance import adjust_p_values

    wanted = list(dict.fromkeys([*_flagged(evidence), *config.regions])) if features is None else list(features)
    by_feature = {r.features[0]: (i, r) for i, r in enumerate(results_1d) if len(r.features) == 1}
    frame, names = inputs.frame, list(inputs.frame.names)
    splits = []
    for f in wanted:
        if f not in by_feature:
            continue
        i, r = by_feature[f]
        if r.individual is None or f not in names:
            splits.append((RegionSplit(f, np.nan, np.nan, np.nan, False, reason="no ICE curves kept"), r, "", np.nan))
            continue
        curves, scale = _curves_on_scale(r, inputs, config)
        e = evidence.get("ice_variance", {}).get((f,))
        thr = float(e.threshold) if e is not None and np.isfinite(e.threshold) else \
            config.materiality * float(np.std(curves))
        rows = ice_row_positions(r)
        taken = frame.take_rows(rows)
        others = pd.DataFrame({n: taken.column(k) for k, n in enumerate(names) if n != f})
        w = None if inputs.sample_weight is None else inputs.sample_weight[rows]
        shown = None if scale == "prediction" else np.asarray(r.individual, dtype=float)[0]
        splits.append((find_regions(f, curves, r.grid[0], others, w, threshold=thr, seed=seed + i, shown=shown), r,
                       scale, thr))
    if not splits:
        return {}
    p = np.array([s.p if np.isfinite(s.p) else 1.0 for s, *_ in splits])
    adjusted = adjust_p_values(p, config.multiple_testing)
    out = {}
    for (s, r, scale, thr), q in zip(splits, adjusted):
        s = dataclasses.replace(s, adjusted_p=float(q) if np.isfinite(s.p) else np.nan,
                                finding=bool(np.isfinite(s.p) and q <= config.significance and s.material))
        out[s.feature] = {**s.to_dict(r.grid[0]), "scale": scale, "threshold": _num(thr),
                          "rows": 0 if r.individual is None else int(np.asarray(r.individual).shape[1]),
                          "min_explained": MIN_EXPLAINED}
    return out


def regions_across_refits(records: dict, results_1d, refits, inputs, config) -> dict:
    """``records`` with, for each region finding, whether its first split holds for each refit of the learner: the
    refit's ICE curves on the same rows (:mod:`autopdp.pd.refits` keeps them in the audit's row order), on the same
    scale, split by the same rule, must show the same materiality (the split explains at least
    :data:`MIN_EXPLAINED` of their heterogeneity and the regional curves differ by more than the threshold).  Adds
    ``refits: {fitted, holds, explained, gap}``; the records of an audit without refits are returned as they are."""
    from types import SimpleNamespace

    if refits is None or not getattr(refits, "assessed", False):
        return records
    position = {r.features[0]: i for i, r in enumerate(results_1d) if len(r.features) == 1}
    out = dict(records)
    for f, rec in records.items():
        if not rec.get("finding") or f not in position:
            continue
        i = position[f]
        rows = ice_row_positions(results_1d[i])
        w = np.ones(rows.size) if inputs.sample_weight is None else np.asarray(inputs.sample_weight, float)[rows]
        first = rec["regions"][0]["rule"][0]
        left = np.zeros(rows.size, dtype=bool)
        for g in rec["regions"]:
            if g["rule"][0] == first:
                left[np.asarray(g["ice_index"], dtype=np.intp)] = True
        explained, gaps = [], []
        for one in refits.pds:
            r = one.res1[i]
            if r.individual is None or np.asarray(r.individual).shape[1] != rows.size:
                continue
            curves, _ = _curves_on_scale(r, SimpleNamespace(link=one.link), config)
            C = curves - curves.mean(axis=1, keepdims=True)
            total = _heterogeneity(C, w)
            explained.append(_between(C, w, left) / total if total > 0 else 0.0)
            mean = lambda m: (w[m] @ C[m]) / w[m].sum()  # noqa: E731
            gaps.append(float(np.max(np.abs(mean(left) - mean(~left)))))
        thr = rec.get("threshold") or 0.0
        holds = sum(e >= MIN_EXPLAINED and g > thr for e, g in zip(explained, gaps))
        out[f] = {**rec, "refits": {"fitted": len(explained), "holds": int(holds), "explained": explained,
                                    "gap": gaps}}
    return out

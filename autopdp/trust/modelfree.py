"""Partial dependence without a model: StratPD and CatStratPD (Parr and Wilson).

StratPD (numeric x_j)
    A decision tree is fitted to y on every feature except x_j
    (``min_samples_leaf``; :mod:`autopdp.trust.strat_kernel`); its leaves group rows that are alike in everything
    but x_j.  In each leaf, rows are grouped by unique x_j, the mean y per
    value is taken, and discrete differences between adjacent values give slope
    estimates over [x_a, x_b).  Each unique x_j averages the slopes covering it;
    values covered by fewer than ``min_slopes_per_x`` slopes are dropped; the
    curve integrates the slopes from 0 at the smallest kept value.

CatStratPD (categorical x_j)
    In each leaf, the mean y per category; the category effects are the
    additive fit ``mean_y[c, leaf] ~ leaf_level + effect[c]`` weighted by the
    rows behind each mean, which aligns the per-leaf deltas across leaves as
    the report's iterative merging does.  Effects are centred to mean zero over
    the supported categories; ``counts`` are the rows in leaves that hold at
    least two categories (the only ones that inform a difference).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..pd.data import as_frame
from ..errors import InputError
from ..pd.grids import resolve_categorical

__all__ = ["ModelFreePD", "encode_columns", "stratpd"]


@dataclass(frozen=True, eq=False)
class ModelFreePD:
    """A partial dependence curve with its support.

    Attributes
    ----------
    feature : str
    kind : str
        "numeric" or "categorical".
    x : ndarray
        Values (numeric, increasing) or levels (categorical).
    pd : ndarray
        The curve at ``x`` (StratPD: 0 at the first value; CatStratPD and ALE:
        centred to mean zero).
    counts : ndarray
        Supporting slopes (StratPD), rows (CatStratPD) or rows per interval (ALE).
    method : str
    """

    feature: str
    kind: str
    x: np.ndarray
    pd: np.ndarray
    counts: np.ndarray
    method: str

    def to_dict(self) -> dict:
        from ..utils.jsonable import json_array

        return {"feature": self.feature, "kind": self.kind, "method": self.method, "x": json_array(self.x),
                "pd": json_array(self.pd), "counts": json_array(self.counts)}


def encode_columns(X, categorical_features=None) -> np.ndarray:
    """Every column of ``X`` as numbers, as the stratifying trees see them: categorical columns as codes
    (missing -1), numeric ones with missing values set to the column's median.  Computed once, it serves the
    StratPD of every feature (:func:`stratpd`'s ``encoded``)."""
    frame = as_frame(X)
    categorical = resolve_categorical(frame, categorical_features)
    cols = []
    for j in range(frame.n_features):
        v = frame.column(j)
        if categorical[j]:
            codes, _ = pd.factorize(pd.Series(v, dtype=object), use_na_sentinel=True)
            cols.append(codes.astype(float))
        else:
            cols.append(np.nan_to_num(np.asarray(v, dtype=float), nan=np.nanmedian(np.asarray(v, dtype=float))))
    return np.column_stack(cols) if cols else np.zeros((frame.n_rows, 0))


def _leaves(encoded, position, y, min_samples_leaf, sorted_rows=None):
    """Each row's leaf in the stratifying tree: y fitted on every column but ``position``
    (:func:`autopdp.trust.strat_kernel.tree_leaves`; ``sorted_rows``: the columns' sorted rows when the caller has
    them)."""
    from .strat_kernel import sorted_columns, tree_leaves

    if sorted_rows is None:
        sorted_rows = sorted_columns(encoded)
    keep = [j for j in range(encoded.shape[1]) if j != position]
    # the kept columns copied once, one per row of the copy, as the kernel reads them (its transpose is a view)
    return tree_leaves(encoded.T[keep].T, sorted_rows[keep], y, min_samples_leaf)


def stratpd(X, y, feature, *, min_samples_leaf: int = 10, min_slopes_per_x: int = 5, categorical_features=None,
            random_state: int = 0, encoded=None, sorted_rows=None) -> ModelFreePD:
    """Model-free partial dependence of ``y`` on ``feature`` (StratPD / CatStratPD).

    Parameters
    ----------
    X : DataFrame or ndarray
    y : array-like of numbers (for a classifier's target: 0/1)
    feature : column name or position
    min_samples_leaf : int
        Leaf size of the stratifying tree (a CART regression tree of ``y`` on the other columns,
        :mod:`autopdp.trust.strat_kernel`).
    min_slopes_per_x : int
        Numeric values supported by fewer slopes are dropped.
    categorical_features : optional
        As in :func:`autopdp.partial_dependence`.
    random_state : int
        Unused: the tree is the same on every run (equally good splits go to the first column, then the first
        boundary).  Kept so that calls written for earlier versions still work.
    encoded : ndarray, optional
        :func:`encode_columns` of ``X`` with the same ``categorical_features`` when the caller has it (the
        StratPD of many features of one data set); computed when omitted.
    sorted_rows : ndarray, optional
        :func:`autopdp.trust.strat_kernel.sorted_columns` of ``encoded``, likewise shared by the features' trees.
    """
    frame = as_frame(X)
    y = np.asarray(y, dtype=float).ravel()
    if y.shape[0] != frame.n_rows:
        raise InputError(f"y has {y.shape[0]} values but X has {frame.n_rows} rows; give one target per row.")
    pos = frame.position_of(feature)
    name = frame.names[pos]
    categorical = resolve_categorical(frame, categorical_features)
    if encoded is None:
        encoded = encode_columns(frame, categorical_features)
    elif np.shape(encoded) != (frame.n_rows, frame.n_features):
        raise InputError(f"encoded has shape {np.shape(encoded)}; it must be encode_columns(X), one column per "
                         f"feature of X ({frame.n_rows} x {frame.n_features}).")
    if isinstance(min_samples_leaf, bool) or not isinstance(min_samples_leaf, (int, np.integer)) or min_samples_leaf < 1:
        raise InputError(f"min_samples_leaf must be a whole number of rows, at least 1, got {min_samples_leaf!r}.")
    if not np.isfinite(y).all():
        raise InputError(f"y has {int((~np.isfinite(y)).sum())} missing or infinite values; StratPD needs a number "
                         "for every row: drop those rows or fill them.")
    if sorted_rows is not None and np.shape(sorted_rows) != (frame.n_features, frame.n_rows):
        raise InputError(f"sorted_rows has shape {np.shape(sorted_rows)}; it must be sorted_columns(encoded), "
                         f"{frame.n_features} x {frame.n_rows}.")
    leaves = _leaves(np.asarray(encoded, dtype=float), pos, y, min_samples_leaf, sorted_rows)
    if categorical[pos]:
        return _cat_stratpd(name, frame.column(pos), y, leaves)
    return _num_stratpd(name, np.asarray(frame.column(pos), dtype=float), y, leaves, min_slopes_per_x)


def _group_means(leaves, keys, y):
    """Rows grouped by (leaf, key), the groups sorted by leaf then key: each group's leaf, key, mean y and rows."""
    order = np.lexsort((keys, leaves))
    leaf, key, value = leaves[order], keys[order], y[order]
    if leaf.size == 0:
        return leaf, key, np.zeros(0), np.zeros(0, dtype=np.int64)
    new = np.ones(leaf.size, dtype=bool)
    new[1:] = (leaf[1:] != leaf[:-1]) | (key[1:] != key[:-1])
    starts = np.flatnonzero(new)
    counts = np.diff(np.append(starts, leaf.size))
    return leaf[starts], key[starts], np.add.reduceat(value, starts) / counts, counts


def _num_stratpd(name, x, y, leaves, min_slopes_per_x):
    ok = np.isfinite(x)
    ux = np.unique(x[ok])
    total = np.zeros(ux.size + 1)
    count = np.zeros(ux.size + 1)
    # the slopes between consecutive x values within each leaf (means are sorted by leaf, then x)
    leaf, xs, ys, _ = _group_means(leaves[ok], x[ok], y[ok])
    same = leaf[1:] == leaf[:-1]
    slopes = (ys[1:] - ys[:-1])[same] / (xs[1:] - xs[:-1])[same]
    ia = np.searchsorted(ux, xs[:-1][same], side="left")
    ib = np.searchsorted(ux, xs[1:][same], side="left")  # covers ux[ia:ib], i.e. a <= u < b
    # accumulated leaf by leaf, each leaf's starts then its ends (a fixed order of the float sums)
    group = np.cumsum(np.concatenate([[0], ~same]))[:-1][same]  # the leaf of each slope
    part = np.repeat([0, 1], slopes.size)
    order = np.lexsort((np.tile(np.arange(slopes.size), 2), part, np.tile(group, 2)))
    at = np.concatenate([ia, ib])[order]
    np.add.at(total, at, np.concatenate([slopes, -slopes])[order])
    np.add.at(count, at, np.repeat([1.0, -1.0], slopes.size)[order])
    n_slopes = np.cumsum(count)[:-1]
    sums = np.cumsum(total)[:-1]
    keep = n_slopes >= max(min_slopes_per_x, 1)
    if keep.sum() < 2:
        return ModelFreePD(name, "numeric", ux[keep], np.zeros(int(keep.sum())), n_slopes[keep].astype(int), "stratpd")
    kx = ux[keep]
    dydx = sums[keep] / n_slopes[keep]
    pdy = np.concatenate([[0.0], np.cumsum(dydx[:-1] * np.diff(kx))])
    return ModelFreePD(name, "numeric", kx, pdy, n_slopes[keep].astype(int), "stratpd")


def _cat_stratpd(name, x, y, leaves):
    from scipy.sparse import coo_matrix
    from scipy.sparse.linalg import lsqr

    s = pd.Series(x, dtype=object)
    ok = s.notna().to_numpy()
    raw = s[ok].to_numpy()
    codes, uniques = pd.factorize(raw)
    # levels are the values' strings, sorted (values with the same string are one level)
    names = [str(u) for u in uniques.tolist()]
    levels = sorted(set(names))
    cat_ids = {c: i for i, c in enumerate(levels)}
    cat = np.array([cat_ids[c] for c in names], dtype=np.int64)[codes]
    last = np.full(len(levels), -1, dtype=np.int64)
    np.maximum.at(last, cat, np.arange(cat.size))
    raw_of = {c: raw[last[i]] for i, c in enumerate(levels)}  # each level's raw value, from its last row
    g_leaf, g_cat, g_y, g_n = _group_means(leaves[ok], cat, y[ok])
    per_leaf = np.unique(g_leaf, return_inverse=True, return_counts=True)
    informative = (per_leaf[2] >= 2)[per_leaf[1]]  # leaves holding two or more levels
    g_leaf, g_cat, g_y, g_n = g_leaf[informative], g_cat[informative], g_y[informative], g_n[informative]
    if g_leaf.size == 0:
        out = np.empty(len(levels), dtype=object)
        out[:] = [raw_of[c] for c in levels]
        return ModelFreePD(name, "categorical", out, np.full(len(levels), np.nan), np.zeros(len(levels), int), "catstratpd")
    leaf_ids, li = np.unique(g_leaf, return_inverse=True)
    m = g_leaf.size
    rows = np.arange(m)
    sw = np.sqrt(g_n.astype(float))
    ci = g_cat
    A = coo_matrix(
        (np.concatenate([sw, sw]), (np.concatenate([rows, rows]), np.concatenate([li, len(leaf_ids) + ci]))),
        shape=(m, len(leaf_ids) + len(levels)),
    ).tocsr()
    sol = lsqr(A, g_y * sw, atol=1e-12, btol=1e-12, iter_lim=10000)[0]
    effect = sol[len(leaf_ids):]
    support = np.bincount(g_cat, weights=g_n, minlength=len(levels))
    effect = np.where(support > 0, effect, np.nan)
    effect = effect - np.nanmean(effect)
    out = np.empty(len(levels), dtype=object)
    out[:] = [raw_of[c] for c in levels]
    return ModelFreePD(name, "categorical", out, effect, support.astype(int), "catstratpd")

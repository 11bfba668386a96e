"""StratPD's stratifying tree (:mod:`autopdp.trust.modelfree`), grown on columns sorted once.

A regression tree (CART, squared error) of ``y`` on the columns of ``Z``: at each node the split, over every
column and every boundary between two distinct values of it, that most reduces the sum of squared errors, with
at least ``min_leaf`` rows on either side; a node is a leaf when it has fewer than ``2 min_leaf`` rows, when its
rows' ``y`` are all equal (variance at most machine epsilon, as scikit-learn's tree) or when no split leaves
``min_leaf`` rows on both sides.  Only the leaves are returned: StratPD groups the rows by them.

scikit-learn's ``DecisionTreeRegressor`` grows the same tree, sorting each column's values again at every node;
here each column is sorted once (:func:`sorted_columns`, shared by the trees of every feature) and a split
partitions the node's sorted rows stably into its two children, so a node costs its rows times the columns,
without a sort.  Ties between equally good splits go to the first column, then the first boundary, where
scikit-learn visits the columns in a random order: on data without such ties the two give the same leaves
(tested).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..utils.kernel_cache import install as _install_kernel_cache

_install_kernel_cache()  # the compiled kernels kept once per machine (autopdp.utils.kernel_cache), set before they are defined

__all__ = ["sorted_columns", "tree_leaves"]

#: a node whose y variance is at most this is pure (scikit-learn's tree uses the same epsilon)
EPSILON = float(np.finfo(np.float64).eps)


def sorted_columns(Z: np.ndarray) -> np.ndarray:
    """Each column's rows in increasing order of its values, ties in row order: ``(n_columns, n_rows)`` int32 (int64
    beyond 2**31 rows)."""
    Z = np.asarray(Z, dtype=np.float64)
    kind = np.int32 if Z.shape[0] < 2 ** 31 - 1 else np.int64
    out = np.empty((Z.shape[1], Z.shape[0]), dtype=kind)
    for j in range(Z.shape[1]):
        out[j] = np.argsort(Z[:, j], kind="stable")
    return out


def tree_leaves(Z: np.ndarray, order: np.ndarray, y: np.ndarray, min_leaf: int) -> np.ndarray:
    """Each row's leaf (numbered from 0) in the tree of ``y`` on ``Z`` (see the module docs).

    ``order``: :func:`sorted_columns` of ``Z`` (or its rows for the columns of ``Z``); it is not changed."""
    Z = np.asarray(Z, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    n = Z.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if Z.shape[1] == 0:
        return np.zeros(n, dtype=np.int64)
    leaves = np.empty(n, dtype=np.int64)
    # one column per row of the array: a node's scan of a column reads within that column only
    _grow(np.ascontiguousarray(Z.T), np.array(order, copy=True, order="C"), y, int(max(1, min_leaf)), EPSILON, leaves)
    return leaves


@njit(cache=True, nogil=True)
def _grow(columns, idx, y, min_leaf, eps, leaves):  # pragma: no cover - compiled
    """Grow the tree depth first; ``columns`` (columns, rows): the values; ``idx`` (columns, rows): each column's sorted rows, partitioned in place so that
    every node's rows are one segment of each column's row, sorted by that column."""
    d, n = idx.shape
    stack_lo = np.empty(n + 1, dtype=np.int64)
    stack_hi = np.empty(n + 1, dtype=np.int64)
    left = np.zeros(n, dtype=np.bool_)
    spare = np.empty(n, dtype=idx.dtype)
    top = 0
    stack_lo[0] = 0
    stack_hi[0] = n
    n_leaves = 0
    while top >= 0:
        lo = stack_lo[top]
        hi = stack_hi[top]
        top -= 1
        rows = hi - lo
        total = 0.0
        squares = 0.0
        for i in range(lo, hi):
            v = y[idx[0, i]]
            total += v
            squares += v * v
        mean = total / rows
        best_f = -1
        if rows >= 2 * min_leaf and squares / rows - mean * mean > eps:
            best = -np.inf
            best_at = 0
            for f in range(d):
                part = 0.0
                for i in range(lo, hi - 1):
                    r = idx[f, i]
                    part += y[r]
                    k = i - lo + 1  # rows on the left
                    if k < min_leaf:
                        continue
                    if rows - k < min_leaf:
                        break
                    if columns[f, idx[f, i + 1]] <= columns[f, r]:
                        continue  # no boundary between equal values
                    rest = total - part
                    proxy = part * part / k + rest * rest / (rows - k)
                    if proxy > best:
                        best = proxy
                        best_f = f
                        best_at = k
        if best_f < 0:
            for i in range(lo, hi):
                leaves[idx[0, i]] = n_leaves
            n_leaves += 1
            continue
        mid = lo + best_at
        for i in range(lo, hi):
            left[idx[best_f, i]] = i < mid
        for f in range(d):
            if f == best_f:
                continue
            a = lo
            b = 0
            for i in range(lo, hi):  # without a branch: each row is written to both sides, one kept
                r = idx[f, i]
                idx[f, a] = r
                spare[b] = r
                go = np.int64(left[r])
                a += go
                b += 1 - go
            for i in range(b):
                idx[f, a + i] = spare[i]
        top += 1
        stack_lo[top] = mid
        stack_hi[top] = hi
        top += 1
        stack_lo[top] = lo
        stack_hi[top] = mid
    return n_leaves

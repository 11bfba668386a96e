"""The compiled counting kernel of :mod:`autopdp.trust.ood` (module level so numba's disk cache is reused)."""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["count_outside"]


@njit(cache=True, inline="always", nogil=True)
def _term(kind, a, b):  # pragma: no cover - compiled
    if kind == 0:
        return (a - b) * (a - b)
    return 0.0 if a == b else 1.0


@njit(cache=True, inline="always", nogil=True)
def _visit(i, r, d2_ir, values, kinds, n_features, ga, gb, edge2, k, cnt, a_full, n_full):  # pragma: no cover
    """Count row r (squared distance ``d2_ir`` from row i) as a neighbour of row i's augmented rows
    within the edge; returns the new ``n_full``.

    ``a_full[a]``: how many cells of grid row a already have k neighbours (a full row is skipped).
    """
    base = d2_ir - _term(kinds[0], values[0, i], values[0, r])
    if n_features == 2:
        base -= _term(kinds[1], values[1, i], values[1, r])
    if base > edge2:
        return n_full
    A, B = cnt.shape
    for a in range(A):
        if a_full[a] == B:
            continue
        da = base + _term(kinds[0], ga[a], values[0, r])
        if da > edge2:
            continue
        for b in range(B):
            if cnt[a, b] >= k:
                continue
            if n_features == 2 and da + _term(kinds[1], gb[b], values[1, r]) > edge2:
                continue
            cnt[a, b] += 1
            if cnt[a, b] == k:
                n_full += 1
                a_full[a] += 1
    return n_full


@njit(cache=True, inline="always", nogil=True)
def _window(sorted_values, g, edge):  # pragma: no cover - compiled
    """[lo, hi) of the sorted values within the edge of g (slightly widened: callers check exactly)."""
    h = edge * (1.0 + 1e-9) + 1e-12
    return np.searchsorted(sorted_values, g - h, side="left"), np.searchsorted(sorted_values, g + h, side="right")


@njit(cache=True, nogil=True)
def count_outside(lo_, hi_, bounds, d2, near, near_d2, values, kinds, n_features, ga, gb, edge2, k, order, sorted_values,
                  outside):  # pragma: no cover - compiled
    """For blocks [lo_, hi_) of augmented rows: how many have fewer than k other rows within the edge.

    ``d2``: squared distances between the rows (m, m); ``near``: each row's
    nearest other rows (m, L), visited first so that most grid cells fill early, and
    ``near_d2`` their squared distances (read in row order, not scattered over ``d2``);
    ``values``: the explained features' embedded values (n_features, m);
    ``ga``/``gb``: their grid values (``gb`` unused in 1D);
    ``order``/``sorted_values`` (n_features, m): the rows sorted by each explained feature.
    A cell still short of k neighbours after the nearest rows looks only among the rows
    whose value of a numeric explained feature lies within the edge of the cell's (any
    neighbour does), the narrower of the two windows, or among all rows when both
    features are categorical; when those windows hold more rows than the data, every
    row is visited once for all cells instead.  ``outside[block, a, b]`` counts the OOD augmented rows.
    """
    m = d2.shape[0]
    A = ga.shape[0]
    B = gb.shape[0] if n_features == 2 else 1
    G = A * B
    edge = np.sqrt(edge2)
    # each cell's window of candidate rows: (axis, lo, hi); axis -1 = all rows
    w_axis = np.full((A, B), -1, dtype=np.int64)
    w_lo = np.zeros((A, B), dtype=np.int64)
    w_hi = np.full((A, B), m, dtype=np.int64)
    for a in range(A):
        for b in range(B):
            for ax in range(n_features):
                if kinds[ax] != 0:
                    continue
                g = ga[a] if ax == 0 else gb[b]
                lo, hi = _window(sorted_values[ax], g, edge)
                if hi - lo < w_hi[a, b] - w_lo[a, b]:
                    w_axis[a, b] = ax
                    w_lo[a, b] = lo
                    w_hi[a, b] = hi
    cnt = np.zeros((A, B), dtype=np.int64)
    a_full = np.zeros(A, dtype=np.int64)
    seen = np.zeros(m, dtype=np.bool_)
    rest = np.empty(m)
    for blk in range(lo_, hi_):
        for i in range(bounds[blk], bounds[blk + 1]):
            cnt[:, :] = 0
            a_full[:] = 0
            n_full = 0
            for q in range(near.shape[1]):
                r = near[i, q]
                seen[r] = True
                if n_full < G:
                    n_full = _visit(i, r, near_d2[i, q], values, kinds, n_features, ga, gb, edge2, k, cnt, a_full,
                                    n_full)
            work = 0
            if n_full < G:
                for a in range(A):
                    for b in range(B):
                        if cnt[a, b] < k:
                            work += w_hi[a, b] - w_lo[a, b]
            if n_full < G and work > m:  # windows wider than one pass: every row once, all cells
                # first the distance over the other features of every row (one branch-free pass), then
                # the rows within the edge on it, in row order
                for r in range(m):
                    rest[r] = d2[i, r] - _term(kinds[0], values[0, i], values[0, r])
                if n_features == 2:
                    for r in range(m):
                        rest[r] -= _term(kinds[1], values[1, i], values[1, r])
                for r in range(m):
                    if rest[r] > edge2 or r == i or seen[r]:
                        continue
                    n_full = _visit(i, r, d2[i, r], values, kinds, n_features, ga, gb, edge2, k, cnt, a_full, n_full)
                    if n_full == G:
                        break
            elif n_full < G:
                for a in range(A):
                    for b in range(B):
                        if cnt[a, b] >= k:
                            continue
                        ax = w_axis[a, b]
                        for idx in range(w_lo[a, b], w_hi[a, b]):
                            r = order[ax, idx] if ax >= 0 else idx
                            if r == i or seen[r]:
                                continue
                            d = d2[i, r] - _term(kinds[0], values[0, i], values[0, r]) \
                                + _term(kinds[0], ga[a], values[0, r])
                            if n_features == 2:
                                d += _term(kinds[1], gb[b], values[1, r]) - _term(kinds[1], values[1, i], values[1, r])
                            if d <= edge2:
                                cnt[a, b] += 1
                                if cnt[a, b] == k:
                                    break
            for q in range(near.shape[1]):
                seen[near[i, q]] = False
            for a in range(A):
                for b in range(B):
                    if cnt[a, b] < k:
                        outside[blk, a, b] += 1

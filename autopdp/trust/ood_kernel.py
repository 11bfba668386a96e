"""The compiled kernels of :mod:`autopdp.trust.ood` (module level so numba's disk cache is reused)."""

from __future__ import annotations

import numpy as np
from numba import njit

from ..utils.kernel_cache import install as _install_kernel_cache

_install_kernel_cache()  # the compiled kernels kept once per machine (autopdp.utils.kernel_cache), set before they are defined

from ..pd.tree.kernels import search_sorted  # noqa: E402 - after the cache locator is installed

__all__ = ["kth_distance", "conditional_outside"]


@njit(cache=True, inline="always", nogil=True)
def _term(kind, a, b):  # pragma: no cover - compiled
    if kind == 0:
        return (a - b) * (a - b)
    return 0.0 if a == b else 1.0


@njit(cache=True, inline="always", nogil=True)
def _largest(best, n_best):  # pragma: no cover - compiled
    w = best[0]
    for j in range(1, n_best):
        if best[j] > w:
            w = best[j]
    return w


@njit(cache=True, inline="always", nogil=True)
def _offer(best, k, n_best, d, worst):  # pragma: no cover - compiled
    """Keep the k smallest distances in ``best`` (unordered); returns (count, the largest kept once k are)."""
    if n_best < k:
        best[n_best] = d
        n_best += 1
        return n_best, (_largest(best, n_best) if n_best == k else np.inf)
    if d >= worst:
        return n_best, worst
    at = 0
    for j in range(1, k):
        if best[j] > best[at]:
            at = j
    best[at] = d
    return n_best, _largest(best, k)


@njit(cache=True, nogil=True)
def kth_distance(values, kinds, queries, own, k, axis, order, sorted_values, level_order, level_start,
                 level_values):  # pragma: no cover - compiled
    """Squared distance from each query to its k-th nearest row in the moved features' space.

    ``values`` (n_features, m): the rows' embedded values of the moved features (standardised
    numbers, or level codes: a term of 1 when the codes differ); ``queries`` (n_features, q);
    ``own[j]``: the row that query j is (skipped as its own neighbour), or -1.  ``axis``: a numeric
    feature the rows are sorted on (``order``; ``sorted_values`` = ``values[:, order]``): the search walks outwards from the
    query along it and stops once the gap on that axis alone exceeds the k-th distance found;
    ``axis = -1`` (every feature categorical) scans all rows and stops at k rows at distance 0.

    A numeric feature with a categorical one (``level_start`` not empty): the rows of the query's level,
    sorted on the axis within their level (``level_order``, ``level_values``; level c's rows at
    ``level_start[c]:level_start[c + 1]``), are walked first; then the rows of other levels, each 1 farther,
    whose walk stops once the gap alone is 1 short of the k-th distance.  The same distances as the one walk,
    without crossing the many rows of other levels that a query of a rare level meets within 1 of it.
    """
    nf, m = values.shape
    q = queries.shape[1]
    out = np.empty(q)
    best = np.empty(k)
    split = level_start.size > 0
    other = 1 - axis
    for j in range(q):
        n_best = 0
        worst = np.inf
        if axis < 0:
            zeros = 0
            for r in range(m):
                if r == own[j]:
                    continue
                d = 0.0
                for f in range(nf):
                    d += _term(kinds[f], queries[f, j], values[f, r])
                n_best, worst = _offer(best, k, n_best, d, worst)
                if d == 0.0:
                    zeros += 1
                    if zeros >= k:
                        break
            out[j] = worst
            continue
        g = queries[axis, j]
        skip_level = np.inf  # rows of this level were walked already
        if split:
            code = queries[other, j]
            c = int(code)
            if code == c and 0 <= c < level_start.size - 1:
                skip_level = code
                a, b = level_start[c], level_start[c + 1]
                segment = level_values[a:b]
                hi = search_sorted(segment, b - a, g, False)
                lo = hi - 1
                while lo >= 0 or hi < b - a:
                    if hi >= b - a or (lo >= 0 and g - segment[lo] <= segment[hi] - g):
                        pos = lo
                        lo -= 1
                    else:
                        pos = hi
                        hi += 1
                    gap = segment[pos] - g
                    d = gap * gap
                    if d > worst:
                        break
                    if level_order[a + pos] == own[j]:
                        continue
                    if d < worst:
                        n_best, worst = _offer(best, k, n_best, d, worst)
        hi = search_sorted(sorted_values[axis], m, g, False)
        lo = hi - 1
        while lo >= 0 or hi < m:
            # the nearer side along the axis first
            if hi >= m or (lo >= 0 and g - sorted_values[axis, lo] <= sorted_values[axis, hi] - g):
                pos = lo
                lo -= 1
            else:
                pos = hi
                hi += 1
            gap = sorted_values[axis, pos] - g
            d = gap * gap
            if d > worst or (split and d + 1.0 >= worst):
                break  # every row farther along the axis is farther altogether
            if order[pos] == own[j]:
                continue
            if split and sorted_values[other, pos] == skip_level:
                continue
            for f in range(nf):
                if f != axis:
                    d += _term(kinds[f], queries[f, j], sorted_values[f, pos])
            if d < worst:
                n_best, worst = _offer(best, k, n_best, d, worst)
        out[j] = worst
    return out


@njit(cache=True, nogil=True)
def conditional_outside(means, cells, edge2, parts, first, second, norms):  # pragma: no cover - compiled
    """Per cell: how many rows' conditional means (whitened, (m, d)) lie farther than the edge
    (squared, ``edge2``) from the cell (whitened, (q, d)).

    The squared distance is read as ``|c|^2 + |mean|^2 - 2 c.mean``, the cross term the sum of one or two rows
    of ``parts`` (p, m): ``parts[first[c]] + parts[second[c]]`` (``second[c] = -1``: one row), each a moved
    feature's share of the cell against every mean (the caller's products).  ``norms[c]``: the length of those
    shares' vectors.  A distance within a margin of the edge far above that form's rounding error is
    summed again term by term, ``sum_t (c_t - mean_t)^2``, so every count is the one that sum gives.
    """
    m, dim = means.shape
    q = cells.shape[0]
    mm = np.empty(m)
    lengths = np.empty(m)
    for i in range(m):
        s = 0.0
        for t in range(dim):
            s += means[i, t] * means[i, t]
        mm[i] = s
        lengths[i] = np.sqrt(s)
    out = np.zeros(q, dtype=np.int64)
    for c in range(q):
        cc = 0.0
        for t in range(dim):
            cc += cells[c, t] * cells[c, t]
        a = first[c]
        b = second[c]
        n = 0
        for i in range(m):
            cross = parts[a, i] if b < 0 else parts[a, i] + parts[b, i]
            d = cc + mm[i] - 2.0 * cross
            margin = 1e-8 * (cc + mm[i] + 2.0 * norms[c] * lengths[i])
            if d > edge2 + margin:
                n += 1
            elif d >= edge2 - margin:  # near the edge: the distance term by term
                e = 0.0
                for t in range(dim):
                    x = cells[c, t] - means[i, t]
                    e += x * x
                if e > edge2:
                    n += 1
        out[c] = n
    return out

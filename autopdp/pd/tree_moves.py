"""Exact tree-ensemble scores of each row moved to a few nearby values: what ALE reads, at the cost of one walk.

ALE (:mod:`autopdp.trust.ale`) needs each row's prediction at the two edges of its own interval of one
feature (1D) or at the four corners of its own cell of two features (2D), nothing else.  Predicting on
modified copies of the data costs 2 or 4 full predictions per row; the per-row ICE kernel
(:class:`autopdp.pd.tree_ice.RowKernel`) computes the whole grid and every leaf's codes to read two of them.

:func:`moved_walk` walks each tree once per row for all the moved versions together: at a split on
another feature every version goes the row's own way; at a split on a moved feature the versions part by
their own values, so a walk forks only where the versions disagree.  Trees that never split on the moved
features give every version the row's own leaf: they are skipped, and each version's raw score is the row's
own (``raw_own``) minus its own leaves in the walked trees plus the version's leaves there.  The row's own
value is walked as one more version for that purpose.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._kernel_cache import install as _install_kernel_cache

_install_kernel_cache()  # the compiled kernels kept once per machine (autopdp._kernel_cache), set before they are defined

from .tree_kernels import go_left  # noqa: E402 - after the cache locator is installed

__all__ = ["MAX_VERSIONS", "moved_response", "moved_walk", "trees_using"]

#: versions walked together (one bit each in an int64 mask, with one more for the row as it is)
MAX_VERSIONS = 62


def trees_using(feature: np.ndarray, roots: np.ndarray, columns) -> np.ndarray:
    """Indices of the trees with at least one split on any of ``columns`` (node ids contiguous per tree)."""
    n = feature.size
    if roots.size == 0:
        return np.zeros(0, dtype=np.int64)
    if np.any(np.diff(roots) <= 0):  # not one contiguous block per tree: walk them all
        return np.arange(roots.size, dtype=np.int64)
    tree_of = np.searchsorted(roots, np.arange(n), side="right") - 1
    hit = np.isin(feature, np.asarray(columns, dtype=np.int64))
    return np.unique(tree_of[hit]).astype(np.int64)


@njit(cache=True, nogil=True)
def moved_walk(lo_, hi_, Z, nodes, thr, catbits, catknown, value, roots, trees, max_nodes, movers, vcol, vset, vbit,
               gtab, lower, raw_own, out):  # pragma: no cover - compiled
    """out[i, v, :]: row i's raw score as version v moves it, for many versions in one walk per tree.

    Version v moves column ``vcol[v, c]`` of Z (c = 0, 1; -1 for none) to
    ``gtab[vset[v], c, lower[i, vset[v], c] + vbit[v, c]]``: set s's grids as the trees see them, each row's
    lower grid index per set and column, and the version's step from it.  ``movers[f]``: the bitset of the
    versions that move column f (at most 62 versions).  ``trees``: the trees splitting on a moved column
    (:func:`trees_using`); ``raw_own`` (n, K): each row's own raw score with the offset; ``out`` (n, V, K).
    ``nodes``: :attr:`autopdp.pd.tree_ice.NodeForest.packed`.
    """
    V = vcol.shape[0]
    K = value.shape[1]
    one = np.int64(1)
    own_bit = one << np.int64(V)
    everyone = (own_bit << one) - one
    stack_nd = np.empty(max_nodes + 1, dtype=np.int64)
    stack_mask = np.empty(max_nodes + 1, dtype=np.int64)
    own = np.empty(K)
    acc = np.empty((V, K))
    x = np.empty((V, 2))
    for r in range(lo_, hi_):
        for v in range(V):
            s = vset[v]
            for c in range(2):
                if vcol[v, c] >= 0:
                    x[v, c] = gtab[s, c, lower[r, s, c] + vbit[v, c]]
            for q in range(K):
                acc[v, q] = 0.0
        for q in range(K):
            own[q] = 0.0
        for ti in range(trees.shape[0]):
            top = 0
            stack_nd[0] = roots[trees[ti]]
            stack_mask[0] = everyone
            while top >= 0:
                nd = stack_nd[top]
                mask = stack_mask[top]
                top -= 1
                f = nodes[nd, 0]
                while f >= 0:  # follow one group down, pushing the versions that part from it
                    moving = mask & movers[f]
                    staying = mask & ~moving
                    left = np.int64(0)
                    if staying != 0 and go_left(Z[r, f], nd, nodes, thr, catbits, catknown):
                        left = staying
                    if moving != 0:
                        for v in range(V):
                            if (moving >> np.int64(v)) & one:
                                c = 0 if vcol[v, 0] == f else 1
                                if go_left(x[v, c], nd, nodes, thr, catbits, catknown):
                                    left |= one << np.int64(v)
                    right = mask & ~left
                    if left != 0 and right != 0:
                        top += 1
                        stack_nd[top] = nodes[nd, 2]
                        stack_mask[top] = right
                        mask = left
                        nd = nodes[nd, 1]
                    elif left != 0:
                        nd = nodes[nd, 1]
                    else:
                        nd = nodes[nd, 2]
                    f = nodes[nd, 0]
                for v in range(V):
                    if (mask >> np.int64(v)) & one:
                        for q in range(K):
                            acc[v, q] += value[nd, q]
                if mask & own_bit:
                    for q in range(K):
                        own[q] += value[nd, q]
        for v in range(V):
            for q in range(K):
                out[r, v, q] = raw_own[r, q] - own[q] + acc[v, q]


def moved_response(kernel, requests, cols, lower, max_bytes: float = 64e6):
    """The response of every row at the ends of its own interval (1D requests) or the corners of its own
    cell (2D), all requests of a batch in one walk per row and tree
    (:func:`moved_walk`) of a :class:`autopdp.pd.tree_ice.RowKernel`: what ALE reads.

    ``lower[s]`` (n_rows, M): each row's lower grid index per feature of request s (at most
    ``len(grid) - 2``).  Returns one array per request: (T, n_rows, 2) for 1D, (T, n_rows, 2, 2) for 2D,
    the response columns ``cols`` at (a + da) or (a + da, b + db); the same values as the kernel's ICE (:meth:`~autopdp.pd.tree_ice.RowKernel.run`)
    at those points.  ``max_bytes``: memory for a batch's raw scores; rows are taken in chunks within it.
    """
    from .tree_ice import _as_grid, apply_link, in_parallel

    f = kernel.forest
    n, p, K = kernel.Z.shape[0], kernel.Z.shape[1], f.value.shape[1]
    cols = np.asarray(cols, dtype=np.int64)
    raw_own = kernel.own_raw()
    out = [None] * len(requests)
    batches, size = [[]], 0
    for s, (positions, _) in enumerate(requests):
        if size + (1 << len(positions)) > MAX_VERSIONS:
            batches.append([])
            size = 0
        batches[-1].append(s)
        size += 1 << len(positions)
    for batch in batches:
        if not batch:
            continue
        G = max(len(g) for s in batch for g in requests[s][1])
        gtab = np.zeros((len(batch), 2, G))
        low = np.zeros((n, len(batch), 2), dtype=np.int64)
        vcol, vset, vbit = [], [], []
        movers = np.zeros(p, dtype=np.int64)
        for b, s in enumerate(batch):
            positions, grids = requests[s]
            for c, (col, g) in enumerate(zip(positions, grids)):
                g = _as_grid(g, f.float32)
                gtab[b, c, :g.size] = g
            low[:, b, :len(positions)] = np.asarray(lower[s], dtype=np.int64).reshape(n, len(positions))
            for v in range(1 << len(positions)):  # version v = da + 2 db
                movers[list(positions)] |= np.int64(1) << np.int64(len(vcol))
                vcol.append(list(positions) + [-1] * (2 - len(positions)))
                vset.append(b)
                vbit.append([(v >> c) & 1 for c in range(2)])
        vcol = np.asarray(vcol, dtype=np.int64)
        vset = np.asarray(vset, dtype=np.int64)
        vbit = np.asarray(vbit, dtype=np.int64)
        trees = trees_using(f.feature, f.roots, np.unique(vcol[vcol >= 0]))
        V = vcol.shape[0]
        raw = np.empty((n, V, K))
        chunk = max(1, int(max_bytes // (V * K * 8)))
        for r0 in range(0, n, chunk):
            rows = slice(r0, min(n, r0 + chunk))
            in_parallel(moved_walk, rows.stop - r0, kernel.Z[rows], f.packed, f.threshold, f.catbits, f.catknown,
                        f.value, f.roots, trees, f.max_nodes, movers, vcol, vset, vbit, gtab,
                        np.ascontiguousarray(low[rows]), np.ascontiguousarray(raw_own[rows]), raw[rows])
        start = 0
        for s in batch:
            M = len(requests[s][0])
            part = raw[:, start:start + (1 << M)].reshape(n * (1 << M), K)
            start += 1 << M
            resp = apply_link(part, f.link, f.scale)[:, cols]
            if M == 1:
                out[s] = np.moveaxis(resp.reshape(n, 2, cols.size), -1, 0)
            else:  # version v = da + 2 db
                out[s] = np.moveaxis(resp.reshape(n, 2, 2, cols.size).transpose(0, 2, 1, 3), -1, 0)
    return out

"""Exact tree-ensemble scores of each row moved to a few nearby values: what ALE reads, at the cost of one walk.

ALE (:mod:`autopdp.trust.ale`) needs each row's prediction at the two edges of its own interval of one
feature (1D) or at the four corners of its own cell of two features (2D), nothing else.  Predicting on
modified copies of the data costs 2 or 4 full predictions per row; the per-row ICE kernel
(:class:`autopdp.pd.tree.ice.RowKernel`) computes the whole grid and every leaf's codes to read two of them.

:func:`moved_walk` walks each tree once per row for all the moved versions together: at a split on
another feature every version goes the row's own way; at a split on a moved feature the versions part by
their own values, so a walk forks only where the versions disagree.  Trees that never split on the moved
features give every version the row's own leaf: they are skipped, and each version's raw score is the row's
own (``raw_own``) minus its own leaves in the walked trees plus the version's leaves there.  The row's own
value is walked as one more version for that purpose.  The versions that move a column to the same value (the
2D requests of one feature share its edges) form a group, whose split is decided once for all of them.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ...utils.kernel_cache import install as _install_kernel_cache

_install_kernel_cache()  # the compiled kernels kept once per machine (autopdp.utils.kernel_cache), set before they are defined

from .kernels import go_left, walk_tables  # noqa: E402 - after the cache locator is installed

__all__ = ["MAX_VERSIONS", "MOVED_BYTES", "moved_response", "moved_walk", "trees_using"]

#: versions walked together (one bit each in an int64 mask, with one more for the row as it is)
MAX_VERSIONS = 62
MOVED_BYTES = 64e6  # a batch's raw scores; rows are taken in chunks within it (a module constant the tests shrink)


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
def moved_walk(lo_, hi_, Z, forest, trees, movers, fgroups, gmask, xg, raw_own, out):  # pragma: no cover - compiled
    """out[i, v, :]: row i's raw score as version v moves it, for many versions in one walk per tree.

    The versions that move a column to the same value form a group: group g moves column f to ``xg[i, g]`` for
    the versions in the bitset ``gmask[g]``; ``fgroups[f]`` lists column f's groups (-1 after the last), so a
    split on f is decided once per group, not once per version.  ``movers[f]``: the bitset of the versions
    that move column f (at most 62 versions, ``out.shape[1]``).  ``trees``: the trees splitting on a moved
    column (:func:`trees_using`); ``raw_own`` (n, K): each row's own raw score with the offset; ``out``
    (n, V, K).  ``forest``: :func:`autopdp.pd.tree.kernels.walk_tables`.
    """
    roots, nodes, thr, catbits, catknown, value, max_nodes = forest
    V = out.shape[1]
    K = value.shape[1]
    one = np.int64(1)
    own_bit = one << np.int64(V)
    everyone = (own_bit << one) - one
    stack_nd = np.empty(max_nodes + 1, dtype=np.int64)
    stack_mask = np.empty(max_nodes + 1, dtype=np.int64)
    own = np.empty(K)
    acc = np.empty((V, K))
    for r in range(lo_, hi_):
        for v in range(V):
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
                        for k in range(fgroups.shape[1]):
                            g = fgroups[f, k]
                            if g < 0:
                                break
                            m = moving & gmask[g]
                            if m != 0 and go_left(xg[r, g], nd, nodes, thr, catbits, catknown):
                                left |= m
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


def _groups(requests, lower, batch, n_features, float32):
    """The versions of a batch of requests and their groups, for :func:`moved_walk`.

    Version ``da + 2 db`` of request s moves its columns to ``grid[lower + da]`` (and ``grid[lower + db]``); the
    versions that move the same column with the same grid, the same lower indices and the same step form one
    group.  Returns ``(movers, fgroups, gmask, group_of, n_versions)``: ``group_of[g] = (grid, lower, step)``
    gives each row's value of group g.
    """
    from .ice import _as_grid

    movers = np.zeros(n_features, dtype=np.int64)
    keys: dict = {}
    group_of: list = []
    masks: list = []
    by_feature: dict = {}
    v = 0
    for s in batch:
        positions, grids = requests[s]
        low = np.asarray(lower[s], dtype=np.int64).reshape(-1, len(positions))
        as_grids = [_as_grid(g, float32) for g in grids]
        for version in range(1 << len(positions)):
            for c, (col, grid) in enumerate(zip(positions, as_grids)):
                step = (version >> c) & 1
                key = (int(col), grid.tobytes(), step)
                found = None
                for gi in keys.get(key, []):
                    if np.array_equal(group_of[gi][1], low[:, c]):
                        found = gi
                        break
                if found is None:
                    found = len(group_of)
                    keys.setdefault(key, []).append(found)
                    group_of.append((grid, np.ascontiguousarray(low[:, c]), step))
                    masks.append(0)
                    by_feature.setdefault(int(col), []).append(found)
                masks[found] |= 1 << v
                movers[int(col)] |= np.int64(1) << np.int64(v)
            v += 1
    width = max((len(g) for g in by_feature.values()), default=1)
    fgroups = np.full((n_features, width), -1, dtype=np.int64)
    for col, gs in by_feature.items():
        fgroups[col, :len(gs)] = gs
    return movers, fgroups, np.asarray(masks, dtype=np.int64), group_of, v


def moved_response(kernel, requests, cols, lower, max_bytes: float | None = None):
    """The response of every row at the ends of its own interval (1D requests) or the corners of its own
    cell (2D), all requests of a batch in one walk per row and tree
    (:func:`moved_walk`) of a :class:`autopdp.pd.tree.ice.RowKernel`: what ALE reads.

    ``lower[s]`` (n_rows, M): each row's lower grid index per feature of request s (at most
    ``len(grid) - 2``).  Returns one array per request: (T, n_rows, 2) for 1D, (T, n_rows, 2, 2) for 2D,
    the response columns ``cols`` at (a + da) or (a + da, b + db); the same values as the kernel's ICE (:meth:`~autopdp.pd.tree.ice.RowKernel.run`)
    at those points.  ``max_bytes``: memory for a batch's raw scores; rows are taken in chunks within it.
    """
    from .ice import apply_link, in_parallel

    f = kernel.forest
    max_bytes = MOVED_BYTES if max_bytes is None else max_bytes
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
        movers, fgroups, gmask, group_of, V = _groups(requests, lower, batch, p, f.float32)
        trees = trees_using(f.feature, f.roots, np.flatnonzero(movers))
        raw = np.empty((n, V, K))
        chunk = max(1, int(max_bytes // (V * K * 8 + 8 * len(group_of))))
        for r0 in range(0, n, chunk):
            rows = slice(r0, min(n, r0 + chunk))
            # each row's value of each group: the grid at its lower index plus the group's step
            xg = np.empty((rows.stop - r0, len(group_of)))
            for gi, (grid, low, step) in enumerate(group_of):
                xg[:, gi] = grid[low[rows] + step]
            in_parallel(moved_walk, rows.stop - r0, kernel.Z[rows], walk_tables(f), trees, movers, fgroups, gmask, xg,
                        np.ascontiguousarray(raw_own[rows]), raw[rows])
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

"""The compiled (numba) kernels of the tree paths.

They are module-level functions so that numba's on-disk cache (``cache=True``)
is found again by the next process: kernels defined inside a factory function
were recompiled in every process (~4 s).  Importing this module imports numba;
``autopdp.pd.tree.exact_pd`` and ``autopdp.pd.tree.ice`` import it only when a tree path runs.

* :func:`count`: background weight of every leaf box by number of violated
  conditions (leaf-count PD averages, ``autopdp.pd.tree.exact_pd``);
* :func:`pd_sets`: PD averages of many feature sets from those counts;
* :func:`own_paths`: each row's own leaf in every tree (the reconstructed
  prediction checked against the model);
* :func:`grid_masks`, :func:`leaf_masks`, :func:`row_leaves`,
  :func:`ice_from_codes`, :func:`ice_singles`: the per-row exact ICE kernel
  (``autopdp.pd.tree.ice``): one walk per row and tree gives the row's leaf codes,
  from which follow its 1D ICE of every feature and, for 2D sets
  (:mod:`autopdp.pd.tree.pair_kernels`), the few leaves with conditions on both
  features (see the comment above :func:`leaf_masks`).

All take ``(lo_, hi_, ...)`` as their first arguments where they are run over
ranges of items by :func:`autopdp.pd.tree.ice.in_parallel`; they release the GIL.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ...utils.kernel_cache import install as _install_kernel_cache

_install_kernel_cache()  # the compiled kernels kept once per machine (autopdp.utils.kernel_cache), set before they are defined

__all__ = ["count", "pd_sets", "own_paths", "grid_masks", "leaf_masks", "row_leaves", "ice_from_codes", "ice_singles",
           "walk_tables"]



@njit(cache=True, nogil=True)
def count(lo_, hi_, X, w, feat, lo, hi, nf, c0, c1, c2):  # pragma: no cover - compiled
    n = X.shape[0]
    for leaf in range(lo_, hi_):
        k = nf[leaf]
        for i in range(n):
            nv = 0
            m1 = -1
            m2 = -1
            for m in range(k):
                x = X[i, feat[leaf, m]]
                if not (x > lo[leaf, m] and x <= hi[leaf, m]):
                    nv += 1
                    if nv == 1:
                        m1 = m
                    elif nv == 2:
                        m2 = m
                    else:
                        break
            if nv == 0:
                c0[leaf] += w[i]
            elif nv == 1:
                c1[leaf, m1] += w[i]
            elif nv == 2:
                c2[leaf, m1, m2] += w[i]



@njit(cache=True, nogil=True)
def nan_last_less(a, b):  # pragma: no cover - compiled
    """a < b in numpy's sort order (NaN after every number)."""
    return a < b or (b != b and a == a)


@njit(cache=True, nogil=True)
def search_sorted(a, n, x, right):  # pragma: no cover - compiled
    """``np.searchsorted(a[:n], x, side="right" if right else "left")`` for a sorted (NaN last) float array.

    Written out because numba's own searchsorted compiles a generic implementation (comparisons for every
    dtype, complex numbers included) that took seconds of every new machine's first run.
    """
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) >> 1
        if (not nan_last_less(x, a[mid])) if right else nan_last_less(a[mid], x):
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True)
def _interval(grid, n, lo, hi):  # pragma: no cover - compiled
    """Grid indices [a0, a1) of the sorted grid inside (lo, hi]."""
    return search_sorted(grid, n, lo, True), search_sorted(grid, n, hi, True)

@njit(cache=True, nogil=True)
def pd_sets(lo_, hi_, sets, slot, leaves, value, grids, gn, out):  # pragma: no cover - compiled
    """out[s]: the PD (T, gj, gk) of set s = (j, k) (k = -1: 1D) from the leaves' boxes and weights ``leaves`` =
    (lo, hi, c0, c1, c2): each leaf's value times its weight over the box its conditions on the set leave."""
    lo, hi, c0, c1, c2 = leaves
    n_leaves, T = value.shape
    for s in range(lo_, hi_):
        j = sets[s, 0]
        k = sets[s, 1]
        gj = gn[j]
        gk = gn[k] if k >= 0 else 1
        diff = np.zeros((T, gj + 1, gk + 1))
        fixed = np.zeros(T)
        for leaf in range(n_leaves):
            sj = slot[leaf, j]
            sk = slot[leaf, k] if k >= 0 else -1
            if sj < 0 and sk < 0:
                for t in range(T):
                    fixed[t] += value[leaf, t] * c0[leaf]
                continue
            wgt = c0[leaf]
            a0, a1, b0, b1 = 0, gj, 0, gk
            if sj >= 0:
                wgt += c1[leaf, sj]
                a0, a1 = _interval(grids[j], gj, lo[leaf, sj], hi[leaf, sj])
            if sk >= 0:
                wgt += c1[leaf, sk]
                b0, b1 = _interval(grids[k], gk, lo[leaf, sk], hi[leaf, sk])
            if sj >= 0 and sk >= 0:
                wgt += c2[leaf, min(sj, sk), max(sj, sk)]
            if wgt == 0.0 or a0 >= a1 or b0 >= b1:
                continue
            for t in range(T):
                v = value[leaf, t] * wgt
                diff[t, a0, b0] += v
                diff[t, a1, b0] -= v
                diff[t, a0, b1] -= v
                diff[t, a1, b1] += v
        for t in range(T):
            for a in range(gj):
                run = 0.0
                for b in range(gk):
                    run += diff[t, a, b]
                    diff[t, a, b] = run
            for b in range(gk):
                run = 0.0
                for a in range(gj):
                    run += diff[t, a, b]
                    out[s, t, a, b] = run + fixed[t]



@njit(cache=True, inline="always", nogil=True)
def bit_span(m, n):  # pragma: no cover - compiled
    """[first, last + 1) of the set bits of a non-zero mask of n bits."""
    one = np.uint64(1)
    lo = 0
    while lo < n and not ((m >> np.uint64(lo)) & one):
        lo += 1
    hi = n
    while hi > lo and not ((m >> np.uint64(hi - 1)) & one):
        hi -= 1
    return lo, hi


@njit(cache=True, inline="always", nogil=True)
def go_left(x, nd, nodes, thr, catbits, catknown):  # pragma: no cover - compiled
    """Whether value x goes left at node nd, as the model's library routes it.

    ``nodes``: the packed table (feature, left, right, kind, missing_left), see
    :attr:`autopdp.pd.tree.extract.NodeForest.packed`; kind 0 numeric (``x <= thr``), 1 categorical
    (category in ``catbits`` left, in ``catknown`` right, else as missing), 2 numeric where 0
    counts as missing (LightGBM), 3 equality (``x == thr``, ONNX).
    """
    missing_left = nodes[nd, 4] == 1
    if np.isnan(x):
        return missing_left
    kd = nodes[nd, 3]
    if kd == 0:
        return x <= thr[nd]
    if kd == 2:
        if abs(x) <= 1e-35:
            return missing_left
        return x <= thr[nd]
    if kd == 3:
        return x == thr[nd]
    if x < 0:
        return missing_left
    c = int(x)
    if c >= catbits.shape[1] * 32:
        return missing_left
    if (catbits[nd, c >> 5] >> (c & 31)) & 1:
        return True
    if (catknown[nd, c >> 5] >> (c & 31)) & 1:
        return False
    return missing_left


@njit(cache=True, nogil=True)
def own_paths(lo_, hi_, X, nodes, thr, catbits, catknown, roots, own_leaf):  # pragma: no cover - compiled
    """own_leaf[i, t]: the leaf row i reaches in tree t."""
    for i in range(lo_, hi_):
        for t in range(roots.shape[0]):
            nd = roots[t]
            while nodes[nd, 0] >= 0:
                if go_left(X[i, nodes[nd, 0]], nd, nodes, thr, catbits, catknown):
                    nd = nodes[nd, 1]
                else:
                    nd = nodes[nd, 2]
            own_leaf[i, t] = nd


@njit(cache=True, nogil=True)
def grid_masks(nodes, thr, catbits, catknown, grids, gn, out):  # pragma: no cover - compiled
    """out[node]: bit a set when grid point a of the node's feature goes left there."""
    for nd in range(nodes.shape[0]):
        f = nodes[nd, 0]
        if f < 0 or gn[f] == 0:
            continue
        m = np.uint64(0)
        for a in range(gn[f]):
            if go_left(grids[f, a], nd, nodes, thr, catbits, catknown):
                m |= np.uint64(1) << np.uint64(a)
        out[nd] = m


@njit(cache=True, inline="always", nogil=True)
def respond(raw, prob, link, scale):  # pragma: no cover - compiled
    """The model's response columns from one row's raw scores at one grid point (into prob)."""
    K = raw.shape[0]
    if link == 0:
        for q in range(K):
            prob[q] = raw[q]
    elif link == 1:
        p1 = 1.0 / (1.0 + np.exp(-scale * raw[0]))
        prob[0] = 1.0 - p1
        prob[1] = p1
    elif link == 2:
        mx = raw[0]
        for q in range(1, K):
            mx = max(mx, raw[q])
        tot = 0.0
        for q in range(K):
            prob[q] = np.exp(raw[q] - mx)
            tot += prob[q]
        for q in range(K):
            prob[q] /= tot
    else:
        for q in range(K):
            prob[q] = np.exp(raw[q])


@njit(cache=True, inline="always", nogil=True)
def add_row(s, i, g, wi, kp, raw, prob, resp, sums):  # pragma: no cover - compiled
    """Add one row's response at grid cell g of set s to the set's shifted sums (and kept ICE).

    ``resp``: (link, scale, cols, first); ``sums``: (shift, s1, s2, keep_set, ice)."""
    link, scale, cols, first = resp
    shift, s1, s2, keep_set, ice = sums
    respond(raw, prob, link, scale)
    for tt in range(cols.shape[0]):
        y = prob[cols[tt]]
        if first and i == 0:
            shift[s, tt, g] = y
        d = y - shift[s, tt, g]
        s1[s, tt, g] += wi * d
        s2[s, tt, g] += wi * d * d
        if kp >= 0:
            ice[keep_set[s], tt, kp, g] = y


@njit(cache=True, nogil=True)
def ice_singles(lo_, hi_, w, sets, resp, r1, sums, keep_pos):  # pragma: no cover - compiled
    """1D sets from the rows' 1D ICE raw scores (r1, :func:`row_leaves`): link, then the weighted sums.

    ``sets`` = (feats, pos, index, gn): feats[p]: the feature; pos[p]: its slot in r1; index[p]: the set's slot in
    shift/s1/s2; gn[f]: feature f's grid points.  ``resp`` = (link, scale, cols, first); ``sums`` = (shift, s1, s2,
    keep_set, ice).
    """
    feats, pos, index, gn = sets
    keep_set = sums[3]
    K = r1.shape[3]
    n_out = 2 if resp[0] == 1 else K
    raw = np.empty(K)
    prob = np.empty(n_out)
    for p in range(lo_, hi_):
        s = index[p]
        sl = pos[p]
        for i in range(r1.shape[0]):
            kp = keep_pos[i] if keep_set[s] >= 0 else -1
            for a in range(gn[feats[p]]):
                for q in range(K):
                    raw[q] = r1[i, sl, a, q]
                add_row(s, i, a, w[i], kp, raw, prob, resp, sums)


# ---- 2D sets by decomposition ---------------------------------------------------------------
# For a pair (j, k) and one row with own values o_j, o_k, write f(a, b) for the sum of trees
# at x_j = g_a, x_k = g_b.  Then exactly
#     f(a, b) = ice_j(a) + ice_k(b) - f(o_j, o_k) + sum over leaves L of v_L * alpha_L(a) * beta_L(b)
# with alpha_L(a) = 1[g_a meets L's conditions on j] - 1[o_j meets them] (beta likewise for k),
# over the leaves whose conditions on every other feature the row meets.  alpha is zero for a
# leaf without a condition on j, so only leaves with conditions on both j and k enter, and for
# one row those are few.  Per row and leaf, :func:`row_leaves` records the (at most two)
# features whose conditions the row's own values break; the row meets the other conditions of
# leaf L exactly when that set lies within {j, k}, and o_j meets L's j conditions exactly when j
# is not in it.  ice_j, the row's 1D ICE, follows in the same way from the leaves that break
# no feature or only j (:func:`ice_from_codes`).
TOO_MANY = np.uint32(0xFFFFFFFF)


def walk_tables(forest) -> tuple:
    """(roots, nodes, thresholds, category bits, known categories, leaf values, most nodes of a tree): what a
    compiled walk of :class:`autopdp.pd.tree.extract.NodeForest` ``forest`` reads, as one argument."""
    return (forest.roots, forest.packed, forest.threshold, forest.catbits, forest.catknown, forest.value,
            forest.max_nodes)


@njit(cache=True, nogil=True)
def leaf_masks(path_nd, path_left, path_feature, lmask, gn, lf, lmk):  # pragma: no cover - compiled
    """Per leaf: its distinct condition features (lf, -1 pads) and the grid points meeting them (lmk)."""
    n_leaves, depth = path_nd.shape
    for m in range(n_leaves):
        n_f = 0
        for d in range(depth):
            nd = path_nd[m, d]
            if nd < 0:
                break
            f = path_feature[m, d]
            side = lmask[nd] if path_left[m, d] else ~lmask[nd]
            at = -1
            for e in range(n_f):
                if lf[m, e] == f:
                    at = e
            if at < 0:
                at = n_f
                n_f += 1
                lf[m, at] = f
                lmk[m, at] = np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - max(gn[f], 1))
            lmk[m, at] &= side
        for e in range(n_f, depth):
            lf[m, e] = -1


@njit(cache=True, nogil=True)
def row_leaves(lo_, hi_, X, forest, max_broken, leaf_pos, offset, raw0, codes):  # pragma: no cover - compiled
    """Per row: its raw score (raw0) and the code of every leaf (codes[i, leaf_pos[node]]).

    One depth-first walk per row and tree follows every branch that breaks the conditions of
    at most ``max_broken`` (1 or 2) features; a reached leaf's code is those features (+1,
    16 bits each; 0 for the row's own leaf), every other leaf's TOO_MANY.  Independent of the
    grids.  ``forest`` = (roots, nodes, thr, catbits, catknown, value, max_nodes), ``nodes``:
    :attr:`autopdp.pd.tree.extract.NodeForest.packed` (:func:`walk_tables`).
    """
    roots, nodes, thr, catbits, catknown, value, max_nodes = forest
    K = value.shape[1]
    stack = np.empty((max_nodes + 1, 3), dtype=np.int64)  # node, first and second broken feature
    for i in range(lo_, hi_):
        for q in range(K):
            raw0[i, q] = offset[q]
        codes[i, :] = TOO_MANY
        for t in range(roots.shape[0]):
            top = 0
            stack[0, 0] = roots[t]
            stack[0, 1] = -1
            stack[0, 2] = -1
            while top >= 0:
                nd = stack[top, 0]
                v1 = stack[top, 1]
                v2 = stack[top, 2]
                top -= 1
                f = nodes[nd, 0]
                if f >= 0:
                    if go_left(X[i, f], nd, nodes, thr, catbits, catknown):
                        taken, other = nodes[nd, 1], nodes[nd, 2]
                    else:
                        taken, other = nodes[nd, 2], nodes[nd, 1]
                    w1, w2 = v1, v2
                    ok = True
                    if f != v1 and f != v2:
                        if v1 < 0:
                            w1 = f
                        elif v2 < 0 and max_broken >= 2:
                            w2 = f
                        else:
                            ok = False
                    if ok:
                        top += 1
                        stack[top, 0] = other
                        stack[top, 1] = w1
                        stack[top, 2] = w2
                    top += 1
                    stack[top, 0] = taken
                    stack[top, 1] = v1
                    stack[top, 2] = v2
                    continue
                if v1 < 0:
                    for q in range(K):
                        raw0[i, q] += value[nd, q]
                codes[i, leaf_pos[nd]] = np.uint32(v1 + 1) | (np.uint32(v2 + 1) << np.uint32(16))


@njit(cache=True, nogil=True)
def ice_from_codes(lo_, hi_, codes, leaf_of, lf, lmk, value, slot, gn, raw0, r1):  # pragma: no cover - compiled
    """r1[i, slot[f], a]: row i's raw score with feature f at grid point a (the 1D ICE), from its leaf codes.

    The own leaf (code 0) leaves the ICE of each feature it has conditions on where the grid
    breaks them; a leaf breaking only f (code f + 1) adds to f's ICE where the grid meets them.
    """
    K = value.shape[1]
    one = np.uint64(1)
    for i in range(lo_, hi_):
        for sl in range(r1.shape[1]):
            for a in range(r1.shape[2]):
                for q in range(K):
                    r1[i, sl, a, q] = raw0[i, q]
        for m in range(codes.shape[1]):
            code = codes[i, m]
            if code > np.uint32(0xFFFF):
                continue
            nd = leaf_of[m]
            v1 = np.int64(code) - 1
            for e in range(lf.shape[1]):
                g = lf[m, e]
                if g < 0:
                    break
                if v1 >= 0 and g != v1:
                    continue
                sl = slot[g]
                if sl < 0:
                    continue
                full = np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - gn[g])
                msk = lmk[m, e] if v1 >= 0 else ~lmk[m, e] & full
                sign = 1.0 if v1 >= 0 else -1.0
                if msk != 0:
                    a0, a1 = bit_span(msk, gn[g])
                    for a in range(a0, a1):
                        if (msk >> np.uint64(a)) & one:
                            for q in range(K):
                                r1[i, sl, a, q] += sign * value[nd, q]

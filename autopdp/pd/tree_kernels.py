"""The compiled (numba) kernels of the tree paths.

They are module-level functions so that numba's on-disk cache (``cache=True``)
is found again by the next process: kernels defined inside a factory function
were recompiled in every process (~4 s).  Importing this module imports numba;
``autopdp.pd.trees`` and ``autopdp.pd.tree_ice`` import it only when a tree path runs.

* :func:`count`: background weight of every leaf box by number of violated
  conditions (leaf-count PD averages, ``autopdp.pd.trees``);
* :func:`pd_sets`: PD averages of many feature sets from those counts;
* :func:`own_paths`: each row's own leaf in every tree (the reconstructed
  prediction checked against the model);
* :func:`grid_masks`, :func:`leaf_masks`, :func:`row_leaves`,
  :func:`ice_from_codes`, :func:`ice_singles`, :func:`ice_pairs`: the per-row
  exact ICE kernel (``autopdp.pd.tree_ice``): one walk per row and tree gives the
  row's leaf codes, from which follow its 1D ICE of every feature and, for 2D
  sets, the few leaves with conditions on both features (see the comment
  above :func:`leaf_masks`).

All take ``(lo_, hi_, ...)`` as their first arguments where they are run over
ranges of items by :func:`autopdp.pd.tree_ice.in_parallel`; they release the GIL.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._kernel_cache import install as _install_kernel_cache

_install_kernel_cache()  # the compiled kernels kept once per machine (autopdp._kernel_cache), set before they are defined

__all__ = ["count", "pd_sets", "own_paths", "grid_masks", "leaf_masks", "row_leaves", "ice_from_codes", "ice_singles",
           "ice_pairs", "sigmoid_factors"]



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
def pd_sets(lo_, hi_, sets, slot, lo, hi, c0, c1, c2, value, grids, gn, out):  # pragma: no cover - compiled
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
    :attr:`autopdp.pd.tree_extract.NodeForest.packed`; kind 0 numeric (``x <= thr``), 1 categorical
    (category in ``catbits`` left, in ``catknown`` right, else as missing), 2 numeric where 0
    counts as missing (LightGBM).
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
def add_row(s, i, g, first, wi, kp, raw, prob, link, scale, cols, shift, s1, s2, keep_set, ice):
    # pragma: no cover - compiled
    """Add one row's response at grid cell g of set s to the set's shifted sums (and kept ICE)."""
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
def ice_singles(lo_, hi_, w, feats, pos, index, gn, link, scale, cols, first, r1, shift, s1, s2, keep_pos,
                keep_set, ice):  # pragma: no cover - compiled
    """1D sets from the rows' 1D ICE raw scores (r1, :func:`row_leaves`): link, then the weighted sums.

    feats[p]: the feature; pos[p]: its slot in r1; index[p]: the set's slot in shift/s1/s2.
    """
    K = r1.shape[3]
    n_out = 2 if link == 1 else K
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
                add_row(s, i, a, first, w[i], kp, raw, prob, link, scale, cols, shift, s1, s2, keep_set, ice)


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
def row_leaves(lo_, hi_, X, roots, nodes, thr, catbits, catknown, value, max_nodes, max_broken, leaf_pos, offset,
               raw0, codes):  # pragma: no cover - compiled
    """Per row: its raw score (raw0) and the code of every leaf (codes[i, leaf_pos[node]]).

    One depth-first walk per row and tree follows every branch that breaks the conditions of
    at most ``max_broken`` (1 or 2) features; a reached leaf's code is those features (+1,
    16 bits each; 0 for the row's own leaf), every other leaf's TOO_MANY.  Independent of the
    grids.  ``nodes``: :attr:`autopdp.pd.tree_extract.NodeForest.packed`.
    """
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


@njit(cache=True, nogil=True)
def _runs(msk, g):  # pragma: no cover - compiled
    """(number of runs of consecutive set bits, number of set bits) of a mask of g bits."""
    one = np.uint64(1)
    runs = 0
    pop = 0
    prev = False
    for a in range(g):
        bit = bool((msk >> np.uint64(a)) & one)
        pop += bit
        runs += bit and not prev
        prev = bit
    return runs, pop


@njit(cache=True, nogil=True)
def _fewer_runs(m, g):  # pragma: no cover - compiled
    """(u, s, set bits of u, runs of u): m (s = +1) or its complement (s = -1), the one with fewer runs."""
    comp = ~m & (np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - g))
    r_m, p_m = _runs(m, g)
    r_c, p_c = _runs(comp, g)
    if r_m < r_c or r_m == r_c and p_m <= p_c:
        return m, 1.0, p_m, r_m
    return comp, -1.0, p_c, r_c


@njit(cache=True, nogil=True)
def _fill_runs(msk, g, out, at):  # pragma: no cover - compiled
    """Write the runs [lo, hi) of msk's set bits into out[at:]."""
    one = np.uint64(1)
    a = 0
    while a < g:
        if not (msk >> np.uint64(a)) & one:
            a += 1
            continue
        a1 = a
        while a1 < g and (msk >> np.uint64(a1)) & one:
            a1 += 1
        out[at, 0] = a
        out[at, 1] = a1
        at += 1
        a = a1


@njit(cache=True, nogil=True)
def _pair_leaves(lo_, hi_, pairs, gn, path_nd, path_left, path_feature, leaf_bits, lmask):  # pragma: no cover
    """Per pair p of [lo_, hi_): the leaves with conditions on both features (both[start[p - lo_]:
    start[p - lo_ + 1]]), the grid points meeting each leaf's conditions on the pair's first and
    second feature (mask_j, mask_k), and the largest grid."""
    n_leaves, depth = path_nd.shape
    one = np.uint64(1)
    n_p = hi_ - lo_
    start = np.zeros(n_p + 1, dtype=np.int64)
    for p in range(lo_, hi_):
        wj, bj = pairs[p, 0] >> 6, np.uint64(pairs[p, 0] & 63)
        wk, bk = pairs[p, 1] >> 6, np.uint64(pairs[p, 1] & 63)
        c = 0
        for m in range(n_leaves):
            if ((leaf_bits[m, wj] >> bj) & one) and ((leaf_bits[m, wk] >> bk) & one):
                c += 1
        start[p - lo_ + 1] = start[p - lo_] + c
    both = np.empty(start[n_p], dtype=np.int64)
    mask_j = np.empty(start[n_p], dtype=np.uint64)
    mask_k = np.empty(start[n_p], dtype=np.uint64)
    gmax = 1
    for p in range(lo_, hi_):
        j = pairs[p, 0]
        k = pairs[p, 1]
        gmax = max(gmax, gn[j], gn[k])
        full_j = np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - gn[j])
        full_k = np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - gn[k])
        wj, bj = j >> 6, np.uint64(j & 63)
        wk, bk = k >> 6, np.uint64(k & 63)
        c = start[p - lo_]
        for m in range(n_leaves):
            if ((leaf_bits[m, wj] >> bj) & one) and ((leaf_bits[m, wk] >> bk) & one):
                mj = full_j
                mk = full_k
                for d in range(depth):
                    nd = path_nd[m, d]
                    if nd < 0:
                        break
                    f = path_feature[m, d]
                    if f == j:
                        mj &= lmask[nd] if path_left[m, d] else ~lmask[nd]
                    elif f == k:
                        mk &= lmask[nd] if path_left[m, d] else ~lmask[nd]
                both[c] = m
                mask_j[c] = mj
                mask_k[c] = mk
                c += 1
    return start, both, mask_j, mask_k, gmax


def sigmoid_factors(r1, raw0, link, scale, lengths):
    """``(e1, e0)`` for :func:`ice_pairs`: exp(-scale r1) and exp(scale raw0) of a one-output sigmoid model.

    Then a row's sigmoid at (a, b) without leaves on both features is 1 / (1 + e1[j, a] e1[k, b] e0).
    ``lengths[f]``: the grid points of r1's slot f (the rest is padding).  e0 is 0 for a row whose
    scores reach |scale * raw| >= 200, where the product could overflow: that row takes the exp
    per cell.  Empty arrays for any other model.
    """
    if link != 1 or r1.shape[-1] != 1:
        return np.empty((0, 1, 1)), np.empty(0)
    on_grid = np.arange(r1.shape[2])[None, :] < np.asarray(lengths)[:, None]  # (n_slots, gmax)
    z1 = np.zeros(r1.shape[:-1])
    np.multiply(scale, r1[..., 0], out=z1, where=on_grid)  # the padding is never read (it may hold anything)
    z0 = scale * raw0[:, 0]
    e1 = np.exp(-np.clip(z1, -200.0, 200.0))
    safe = (np.abs(z1).reshape(z1.shape[0], -1).max(axis=1, initial=0.0) < 200.0) & (np.abs(z0) < 200.0)
    e0 = np.where(safe, np.exp(np.clip(z0, -200.0, 200.0)), 0.0)
    return e1, e0


@njit(cache=True, inline="always", nogil=True)
def _add_cells(s, i, G, first, wi, kp, Y, cols, shift, s1, s2, keep_set, ice):  # pragma: no cover - compiled
    """Add one row's response Y[column, cell] at the G cells of set s to its shifted sums (and kept ICE)."""
    for tt in range(cols.shape[0]):
        c = cols[tt]
        if first and i == 0:
            for g in range(G):
                shift[s, tt, g] = Y[c, g]
        for g in range(G):
            d = Y[c, g] - shift[s, tt, g]
            s1[s, tt, g] += wi * d
            s2[s, tt, g] += wi * d * d
        if kp >= 0:
            for g in range(G):
                ice[keep_set[s], tt, kp, g] = Y[c, g]


@njit(cache=True, nogil=True)
def ice_pairs(lo_, hi_, w, pairs, pos, index, gn, value, path_nd, path_left, path_feature, leaf_bits, leaf_of,
              codes, lmask, link, scale, cols, first, raw0, r1, e1, e0, shift, s1, s2, keep_pos, keep_set, ice):
    # pragma: no cover - compiled
    """2D sets from the rows' 1D ICE (r1) plus the leaves with conditions on both features.

    pairs[p]: the two features; pos[p]: their slots in r1; index[p]: the set's slot in shift/s1/s2.
    ``path_*``, ``leaf_bits``, ``leaf_of``: the paths, condition features (bitsets) and node ids of
    the leaves with conditions on two or more features; ``codes``: the rows' leaf codes (:func:`row_leaves`).
    ``e1``, ``e0``: :func:`sigmoid_factors` of r1 and raw0 for a one-output sigmoid model (else
    unused, shape (0, ...)): where a row reaches no leaf with conditions on both features, its
    sigmoid at (a, b) is 1 / (1 + e1[a] e1[b] e0) instead of an exp per cell.
    Rows are taken in blocks, every pair of the range per block, so a block's codes stay in
    cache; each pair still sums its rows in row order.
    """
    n = codes.shape[0]
    n_leaves, depth = path_nd.shape
    K = value.shape[1]
    n_out = 2 if link == 1 else K
    one = np.uint64(1)
    n_p = hi_ - lo_
    start, both, mask_j, mask_k, gmax = _pair_leaves(lo_, hi_, pairs, gn, path_nd, path_left, path_feature, leaf_bits,
                                                    lmask)
    # alpha_L(a) = m(a) - o, with m the grid points meeting L's conditions on j and o whether the
    # row's own value does, is written s * u(a) + c with u the one of m and its complement with
    # fewer runs of consecutive grid points (s = +1, c = -o for m; s = -1, c = 1 - o for the
    # complement); beta likewise.  Then v * alpha * beta = v * (s s' u u' + s c' u + c s' u' + c c'):
    # the u u' part is added to the difference table D as a rectangle per pair of runs, or cell
    # by cell to M when that is fewer additions (categorical conditions); the 1D parts to the
    # difference tables Uj, Uk, the constant to C.  A numeric feature's u is one run.
    n_e = start[n_p]
    u_j = np.empty(n_e, dtype=np.uint64)
    u_k = np.empty(n_e, dtype=np.uint64)
    s_j = np.empty(n_e)
    s_k = np.empty(n_e)
    pop_j = np.empty(n_e, dtype=np.int64)
    pop_k = np.empty(n_e, dtype=np.int64)
    r_j = np.zeros(n_e + 1, dtype=np.int64)
    r_k = np.zeros(n_e + 1, dtype=np.int64)
    for p in range(lo_, hi_):
        gj = gn[pairs[p, 0]]
        gk = gn[pairs[p, 1]]
        for c in range(start[p - lo_], start[p - lo_ + 1]):
            u_j[c], s_j[c], pop_j[c], r_j[c + 1] = _fewer_runs(mask_j[c], gj)
            u_k[c], s_k[c], pop_k[c], r_k[c + 1] = _fewer_runs(mask_k[c], gk)
    for c in range(n_e):
        r_j[c + 1] += r_j[c]
        r_k[c + 1] += r_k[c]
    runs_j = np.empty((r_j[n_e], 2), dtype=np.int64)
    runs_k = np.empty((r_k[n_e], 2), dtype=np.int64)
    for p in range(lo_, hi_):
        for c in range(start[p - lo_], start[p - lo_ + 1]):
            _fill_runs(u_j[c], gn[pairs[p, 0]], runs_j, r_j[c])
            _fill_runs(u_k[c], gn[pairs[p, 1]], runs_k, r_k[c])
    D = np.empty((K, gmax + 1, gmax + 1))
    Uj = np.empty((K, gmax + 1))
    Uk = np.empty((K, gmax + 1))
    C = np.empty(K)
    M = np.empty((K, gmax, gmax))
    raw = np.empty(K)
    prob = np.empty(n_out)
    Y = np.empty((n_out, gmax * gmax))
    hits = np.empty(max(n_leaves, 1), dtype=np.int64)
    zero = np.uint32(0)
    block = 32
    for r0 in range(0, n, block):
        for p in range(lo_, hi_):
            j = pairs[p, 0]
            k = pairs[p, 1]
            pj = pos[p, 0]
            pk = pos[p, 1]
            s = index[p]
            gj = gn[j]
            gk = gn[k]
            full_j = np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - gj)
            full_k = np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - gk)
            cj = np.uint32(j + 1)
            ck = np.uint32(k + 1)
            b_lo = start[p - lo_]
            b_hi = start[p - lo_ + 1]
            for i in range(r0, min(n, r0 + block)):
                any_leaf = False
                # the leaves whose broken features lie within {j, k}, without branches (TOO_MANY never does)
                n_hits = 0
                for b_ in range(b_lo, b_hi):
                    code = codes[i, both[b_]]
                    v1 = code & np.uint32(0xFFFF)
                    v2 = code >> np.uint32(16)
                    hits[n_hits] = b_
                    n_hits += ((v1 == zero) | (v1 == cj) | (v1 == ck)) & ((v2 == zero) | (v2 == cj) | (v2 == ck))
                for h in range(n_hits):
                    b_ = hits[h]
                    m = both[b_]
                    code = codes[i, m]
                    v1 = code & np.uint32(0xFFFF)
                    v2 = code >> np.uint32(16)
                    j_in = v1 == cj or v2 == cj
                    k_in = v1 == ck or v2 == ck
                    aj = mask_j[b_] if j_in else ~mask_j[b_] & full_j
                    ak = mask_k[b_] if k_in else ~mask_k[b_] & full_k
                    if aj == 0 or ak == 0:
                        continue
                    if not any_leaf:
                        M[:, :gj, :gk] = 0.0
                        D[:, :gj + 1, :gk + 1] = 0.0
                        Uj[:, :gj + 1] = 0.0
                        Uk[:, :gk + 1] = 0.0
                        C[:] = 0.0
                        any_leaf = True
                    nd = leaf_of[m]
                    oj = 0.0 if j_in else 1.0
                    ok_ = 0.0 if k_in else 1.0
                    sj = s_j[b_]
                    sk = s_k[b_]
                    c_j = -oj if sj > 0 else 1.0 - oj
                    c_k = -ok_ if sk > 0 else 1.0 - ok_
                    for q in range(K):
                        C[q] += c_j * c_k * value[nd, q]
                    if c_k != 0.0:
                        for e in range(r_j[b_], r_j[b_ + 1]):
                            for q in range(K):
                                Uj[q, runs_j[e, 0]] += sj * c_k * value[nd, q]
                                Uj[q, runs_j[e, 1]] -= sj * c_k * value[nd, q]
                    if c_j != 0.0:
                        for e in range(r_k[b_], r_k[b_ + 1]):
                            for q in range(K):
                                Uk[q, runs_k[e, 0]] += sk * c_j * value[nd, q]
                                Uk[q, runs_k[e, 1]] -= sk * c_j * value[nd, q]
                    n_rj = r_j[b_ + 1] - r_j[b_]
                    n_rk = r_k[b_ + 1] - r_k[b_]
                    ss = sj * sk
                    if 4 * n_rj * n_rk <= pop_j[b_] * pop_k[b_]:
                        for e in range(r_j[b_], r_j[b_ + 1]):
                            a, a1 = runs_j[e, 0], runs_j[e, 1]
                            for f_ in range(r_k[b_], r_k[b_ + 1]):
                                b, b1 = runs_k[f_, 0], runs_k[f_, 1]
                                for q in range(K):
                                    vv = ss * value[nd, q]
                                    D[q, a, b] += vv
                                    D[q, a1, b] -= vv
                                    D[q, a, b1] -= vv
                                    D[q, a1, b1] += vv
                    else:
                        uj = u_j[b_]
                        uk = u_k[b_]
                        a0, a1 = bit_span(uj, gj)
                        c0, c1 = bit_span(uk, gk)
                        for a in range(a0, a1):
                            if (uj >> np.uint64(a)) & one:
                                for b in range(c0, c1):
                                    if (uk >> np.uint64(b)) & one:
                                        for q in range(K):
                                            M[q, a, b] += ss * value[nd, q]
                if any_leaf:  # the tables summed up into M
                    for q in range(K):
                        for a in range(1, gj):
                            Uj[q, a] += Uj[q, a - 1]
                        for b in range(1, gk):
                            Uk[q, b] += Uk[q, b - 1]
                        for a in range(gj):
                            run = 0.0
                            for b in range(gk):
                                run += D[q, a, b]
                                D[q, a, b] = run + (D[q, a - 1, b] if a else 0.0)
                                M[q, a, b] += D[q, a, b] + Uj[q, a] + Uk[q, b] + C[q]
                # the row's response at every cell into Y, then added to the set's sums cell by cell
                if e0.shape[0] and e0[i] > 0.0:
                    for a in range(gj):
                        fa = e1[i, pj, a] * e0[i]
                        for b in range(gk):
                            if any_leaf and M[0, a, b] != 0.0:
                                Y[1, a * gk + b] = 1.0 / (1.0 + np.exp(-scale * (
                                    r1[i, pj, a, 0] + r1[i, pk, b, 0] - raw0[i, 0] + M[0, a, b])))
                            else:
                                Y[1, a * gk + b] = 1.0 / (1.0 + fa * e1[i, pk, b])
                    for g in range(gj * gk):
                        Y[0, g] = 1.0 - Y[1, g]
                else:
                    for a in range(gj):
                        for b in range(gk):
                            for q in range(K):
                                raw[q] = r1[i, pj, a, q] + r1[i, pk, b, q] - raw0[i, q]
                                if any_leaf:
                                    raw[q] += M[q, a, b]
                            respond(raw, prob, link, scale)
                            for q in range(n_out):
                                Y[q, a * gk + b] = prob[q]
                _add_cells(s, i, gj * gk, first, w[i], keep_pos[i] if keep_set[s] >= 0 else -1, Y, cols, shift, s1,
                           s2, keep_set, ice)

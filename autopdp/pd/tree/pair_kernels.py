"""The compiled (numba) kernels of the per-row exact 2D ICE (:func:`ice_pairs`), with their helpers.

A row's 2D ICE of a pair (j, k) is its 1D ICE of j and of k combined, corrected where a leaf has conditions on
both features: :func:`_pair_leaves` finds those leaves, :func:`ice_pairs` adds them cell by cell, and
:func:`sigmoid_factors` lets a one-output sigmoid model take each row's probabilities from exp factors of its
1D ICE.  Split from :mod:`autopdp.pd.tree.kernels` (the shared helpers and the 1D kernels), whose cache
locator is installed first; used by :mod:`autopdp.pd.tree.ice`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ...utils.kernel_cache import install as _install_kernel_cache

_install_kernel_cache()  # the compiled kernels kept once per machine (autopdp.utils.kernel_cache), set before they are defined

from .kernels import bit_span, respond  # noqa: E402 - after the cache locator is installed

__all__ = ["ice_pairs", "sigmoid_factors"]


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
def _add_cells(s, i, G, wi, kp, Y, resp, sums):  # pragma: no cover - compiled
    """Add one row's response Y[column, cell] at the G cells of set s to its shifted sums (and kept ICE).

    ``resp``: (link, scale, cols, first); ``sums``: (shift, s1, s2, keep_set, ice)."""
    cols, first = resp[2], resp[3]
    shift, s1, s2, keep_set, ice = sums
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
def _run_tables(lo_, hi_, pairs, gn, start, mask_j, mask_k):  # pragma: no cover - compiled
    """Per leaf entry c of the pairs [lo_, hi_): u (the mask or its complement, the one with fewer runs), its sign
    s, its set bits, and its runs [lo, hi) (runs[r[c]:r[c + 1]]), for the pair's first (j) and second (k) feature.

    alpha_L(a) = m(a) - o, with m the grid points meeting L's conditions on j and o whether the row's own value
    does, is written s * u(a) + c with u the one of m and its complement with fewer runs of consecutive grid
    points (s = +1, c = -o for m; s = -1, c = 1 - o for the complement); beta likewise.  A numeric feature's u
    is one run."""
    n_e = start[hi_ - lo_]
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
    return u_j, u_k, s_j, s_k, pop_j, pop_k, r_j, r_k, runs_j, runs_k


@njit(cache=True, inline="always", nogil=True)
def _add_leaf(b_, nd, oj, ok_, value, runs, tabs, gj, gk):  # pragma: no cover - compiled
    """Add leaf entry b_ (node nd) to the row's tables: v * alpha * beta = v * (s s' u u' + s c' u + c s' u' + c c').

    The u u' part goes to the difference table D as a rectangle per pair of runs, or cell by cell to M when that is
    fewer additions (categorical conditions); the 1D parts to the difference tables Uj, Uk, the constant to C."""
    u_j, u_k, s_j, s_k, pop_j, pop_k, r_j, r_k, runs_j, runs_k = runs
    M, D, Uj, Uk, C = tabs
    K = value.shape[1]
    one = np.uint64(1)
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


@njit(cache=True, inline="always", nogil=True)
def _row_leaves(i, pair, codes, leaves, runs, tabs, hits):  # pragma: no cover - compiled
    """Row i's correction M (K, gj, gk) of pair ``pair`` = (j, k, b_lo, b_hi) from its leaves with conditions on
    both features; False when it has none (M is not written then)."""
    j, k, b_lo, b_hi = pair
    value, leaf_of, both, mask_j, mask_k = leaves
    M, D, Uj, Uk, C = tabs
    K = value.shape[1]
    gj, gk = M.shape[1], M.shape[2]
    full_j = np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - gj)
    full_k = np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - gk)
    cj = np.uint32(j + 1)
    ck = np.uint32(k + 1)
    zero = np.uint32(0)
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
            M[:, :, :] = 0.0
            D[:, :gj + 1, :gk + 1] = 0.0
            Uj[:, :gj + 1] = 0.0
            Uk[:, :gk + 1] = 0.0
            C[:] = 0.0
            any_leaf = True
        _add_leaf(b_, leaf_of[m], 0.0 if j_in else 1.0, 0.0 if k_in else 1.0, value, runs, tabs, gj, gk)
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
    return any_leaf


@njit(cache=True, inline="always", nogil=True)
def _row_response(i, pj, pk, M, any_leaf, ice1, resp, Y, raw, prob):  # pragma: no cover - compiled
    """Row i's response at every cell (a, b) of the pair whose features sit in r1's slots pj, pk, into Y."""
    raw0, r1, e1, e0 = ice1
    link, scale = resp[0], resp[1]
    K, gj, gk = M.shape
    n_out = prob.shape[0]
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


@njit(cache=True, nogil=True)
def ice_pairs(lo_, hi_, w, sets, leaves, codes, resp, ice1, sums, keep_pos):  # pragma: no cover - compiled
    """2D sets from the rows' 1D ICE (r1) plus the leaves with conditions on both features.

    ``sets`` = (pairs, pos, index, gn): pairs[p]: the two features; pos[p]: their slots in r1; index[p]: the set's
    slot in shift/s1/s2; gn[f]: feature f's grid points.  ``leaves`` = (value, path_nd, path_left, path_feature,
    leaf_bits, leaf_of, lmask): the paths, condition features (bitsets) and node ids of the leaves with conditions
    on two or more features, and the grid points left of each node's split; ``codes``: the rows' leaf codes
    (:func:`row_leaves`).  ``resp`` = (link, scale, cols, first).  ``ice1`` = (raw0, r1, e1, e0): e1, e0 are
    :func:`sigmoid_factors` of r1 and raw0 for a one-output sigmoid model (else unused, shape (0, ...)): where a
    row reaches no leaf with conditions on both features, its sigmoid at (a, b) is 1 / (1 + e1[a] e1[b] e0)
    instead of an exp per cell.  ``sums`` = (shift, s1, s2, keep_set, ice).
    Rows are taken in blocks, every pair of the range per block, so a block's codes stay in
    cache; each pair still sums its rows in row order.
    """
    pairs, pos, index, gn = sets
    value, path_nd, path_left, path_feature, leaf_bits, leaf_of, lmask = leaves
    keep_set = sums[3]
    n = codes.shape[0]
    K = value.shape[1]
    start, both, mask_j, mask_k, gmax = _pair_leaves(lo_, hi_, pairs, gn, path_nd, path_left, path_feature, leaf_bits,
                                                    lmask)
    runs = _run_tables(lo_, hi_, pairs, gn, start, mask_j, mask_k)
    own_leaves = (value, leaf_of, both, mask_j, mask_k)
    D = np.empty((K, gmax + 1, gmax + 1))
    Uj = np.empty((K, gmax + 1))
    Uk = np.empty((K, gmax + 1))
    C = np.empty(K)
    M = np.empty((K, gmax, gmax))
    raw = np.empty(K)
    prob = np.empty(2 if resp[0] == 1 else K)
    Y = np.empty((prob.shape[0], gmax * gmax))
    hits = np.empty(max(path_nd.shape[0], 1), dtype=np.int64)
    block = 32
    for r0 in range(0, n, block):
        for p in range(lo_, hi_):
            j = pairs[p, 0]
            k = pairs[p, 1]
            s = index[p]
            gj = gn[j]
            gk = gn[k]
            Mp = M[:, :gj, :gk]
            tabs = (Mp, D, Uj, Uk, C)
            pair = (j, k, start[p - lo_], start[p - lo_ + 1])
            for i in range(r0, min(n, r0 + block)):
                any_leaf = _row_leaves(i, pair, codes, own_leaves, runs, tabs, hits)
                _row_response(i, pos[p, 0], pos[p, 1], Mp, any_leaf, ice1, resp, Y, raw, prob)
                _add_cells(s, i, gj * gk, w[i], keep_pos[i] if keep_set[s] >= 0 else -1, Y, resp, sums)

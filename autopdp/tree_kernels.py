"""The compiled (numba) kernels of the tree paths.

They are module-level functions so that numba's on-disk cache (``cache=True``)
is found again by the next process: kernels defined inside a factory function
were recompiled in every process (~4 s).  Importing this module imports numba;
``autopdp.trees`` and ``autopdp.tree_ice`` import it only when a tree path runs.

* :func:`count`: background weight of every leaf box by number of violated
  conditions (leaf-count PD averages, ``autopdp.trees``);
* :func:`pd_sets`: PD averages of many feature sets from those counts;
* :func:`own_paths`, :func:`grid_masks`, :func:`ice_sets`: the per-row exact
  ICE kernel (``autopdp.tree_ice``).

All take ``(lo_, hi_, ...)`` as their first arguments where they are run over
ranges of items by :func:`autopdp.tree_ice.in_parallel`; they release the GIL.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["count", "pd_sets", "own_paths", "grid_masks", "ice_sets"]



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



@njit(cache=True)
def _interval(grid, n, lo, hi):  # pragma: no cover - compiled
    """Grid indices [a0, a1) of the sorted grid inside (lo, hi]."""
    a0 = np.searchsorted(grid[:n], lo, side="right")
    a1 = np.searchsorted(grid[:n], hi, side="right")
    return a0, a1

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
def go_left(x, nd, kind, thr, mleft, catbits, catknown):  # pragma: no cover - compiled
    if np.isnan(x):
        return mleft[nd]
    kd = kind[nd]
    if kd == 0:
        return x <= thr[nd]
    if kd == 2:
        if abs(x) <= 1e-35:
            return mleft[nd]
        return x <= thr[nd]
    if x < 0:
        return mleft[nd]
    c = int(x)
    if c >= catbits.shape[1] * 32:
        return mleft[nd]
    word = c >> 5
    bit = c & 31
    if (catbits[nd, word] >> bit) & 1:
        return True
    if (catknown[nd, word] >> bit) & 1:
        return False
    return mleft[nd]

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


@njit(cache=True, nogil=True)
def own_paths(lo_, hi_, X, feature, kind, thr, mleft, left, right, catbits, catknown, roots, own_leaf, own_bits):
    # pragma: no cover - compiled
    for i in range(lo_, hi_):
        for t in range(roots.shape[0]):
            nd = roots[t]
            while feature[nd] >= 0:
                f = feature[nd]
                own_bits[i, t, f >> 6] |= np.uint64(1) << np.uint64(f & 63)
                if go_left(X[i, f], nd, kind, thr, mleft, catbits, catknown):
                    nd = left[nd]
                else:
                    nd = right[nd]
            own_leaf[i, t] = nd

@njit(cache=True, nogil=True)
def grid_masks(feature, kind, thr, mleft, catbits, catknown, grids, gn, out):  # pragma: no cover
    for nd in range(feature.shape[0]):
        f = feature[nd]
        if f < 0 or gn[f] == 0:
            continue
        m = np.uint64(0)
        for a in range(gn[f]):
            if go_left(grids[f, a], nd, kind, thr, mleft, catbits, catknown):
                m |= np.uint64(1) << np.uint64(a)
        out[nd] = m

@njit(cache=True, nogil=True)
def ice_sets(lo_, hi_, X, w, sets, gn, feature, kind, thr, mleft, left, right, catbits, catknown, value, roots,
             own_leaf, own_bits, offset, lmask, link, scale, cols, max_nodes, first,
             shift, s1, s2, keep_pos, keep_set, ice):  # pragma: no cover - compiled
    n = X.shape[0]
    K = value.shape[1]
    T = cols.shape[0]
    n_out = 2 if link == 1 else K
    one = np.uint64(1)
    for s in range(lo_, hi_):
        j = sets[s, 0]
        k = sets[s, 1]
        gj = gn[j]
        gk = gn[k] if k >= 0 else 1
        full_j = np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - gj)
        full_k = np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - gk)
        c = np.empty(K)
        u = np.empty((K, gj))
        v = np.empty((K, gk))
        M = np.empty((K, gj, gk))
        raw = np.empty(K)
        prob = np.empty(n_out)
        st_nd = np.empty(max_nodes + 1, dtype=np.int64)
        st_mj = np.empty(max_nodes + 1, dtype=np.uint64)
        st_mk = np.empty(max_nodes + 1, dtype=np.uint64)
        wj = j >> 6
        bj = np.uint64(j & 63)
        wk = k >> 6 if k >= 0 else 0
        bk = np.uint64(k & 63) if k >= 0 else np.uint64(0)
        for i in range(n):
            for q in range(K):
                c[q] = offset[q]
            u[:, :] = 0.0
            v[:, :] = 0.0
            if k >= 0:
                M[:, :, :] = 0.0
            for t in range(roots.shape[0]):
                involved = (own_bits[i, t, wj] >> bj) & one
                if k >= 0:
                    involved |= (own_bits[i, t, wk] >> bk) & one
                if involved == 0:
                    ol = own_leaf[i, t]
                    for q in range(K):
                        c[q] += value[ol, q]
                    continue
                top = 0
                st_nd[0] = roots[t]
                st_mj[0] = full_j
                st_mk[0] = full_k
                while top >= 0:
                    nd = st_nd[top]
                    mj = st_mj[top]
                    mk = st_mk[top]
                    top -= 1
                    f = feature[nd]
                    if f < 0:
                        a0, a1 = bit_span(mj, gj)
                        b0, b1 = bit_span(mk, gk)
                        if mk == full_k:
                            for a in range(a0, a1):
                                if (mj >> np.uint64(a)) & one:
                                    for q in range(K):
                                        u[q, a] += value[nd, q]
                        elif mj == full_j:
                            for b in range(b0, b1):
                                if (mk >> np.uint64(b)) & one:
                                    for q in range(K):
                                        v[q, b] += value[nd, q]
                        else:
                            for a in range(a0, a1):
                                if (mj >> np.uint64(a)) & one:
                                    for b in range(b0, b1):
                                        if (mk >> np.uint64(b)) & one:
                                            for q in range(K):
                                                M[q, a, b] += value[nd, q]
                        continue
                    if f == j or f == k:
                        lm = lmask[nd]
                        if f == j:
                            ml, mr = mj & lm, mj & ~lm
                            if mr != 0:
                                top += 1
                                st_nd[top] = right[nd]
                                st_mj[top] = mr
                                st_mk[top] = mk
                            if ml != 0:
                                top += 1
                                st_nd[top] = left[nd]
                                st_mj[top] = ml
                                st_mk[top] = mk
                        else:
                            ml, mr = mk & lm, mk & ~lm
                            if mr != 0:
                                top += 1
                                st_nd[top] = right[nd]
                                st_mj[top] = mj
                                st_mk[top] = mr
                            if ml != 0:
                                top += 1
                                st_nd[top] = left[nd]
                                st_mj[top] = mj
                                st_mk[top] = ml
                    else:
                        top += 1
                        st_mj[top] = mj
                        st_mk[top] = mk
                        if go_left(X[i, f], nd, kind, thr, mleft, catbits, catknown):
                            st_nd[top] = left[nd]
                        else:
                            st_nd[top] = right[nd]
            wi = w[i]
            kp = keep_pos[i] if keep_set[s] >= 0 else -1
            for a in range(gj):
                for b in range(gk):
                    for q in range(K):
                        raw[q] = c[q] + u[q, a] + v[q, b]
                        if k >= 0:
                            raw[q] += M[q, a, b]
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
                    g = a * gk + b
                    for tt in range(T):
                        y = prob[cols[tt]]
                        if first and i == 0:
                            shift[s, tt, g] = y
                        d = y - shift[s, tt, g]
                        s1[s, tt, g] += wi * d
                        s2[s, tt, g] += wi * d * d
                        if kp >= 0:
                            ice[keep_set[s], tt, kp, g] = y

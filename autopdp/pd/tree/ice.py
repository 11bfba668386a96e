"""Exact ICE curves of tree ensembles, row by row, without predicting.

For one row and one tree, a leaf is reached when the features of a set S
move to some grid values exactly when the row's own values meet the leaf's
conditions on every feature outside S and the grid values meet those on S.
So one depth-first walk per row and tree, following every branch that breaks
the conditions of at most two features, finds all it takes:

* the leaves breaking none (the row's own leaf) or only feature j: summed over
  trees, the row's exact raw score (margin) at every grid point of j, the 1D
  ICE curve, for every feature at once;
* for 2D sets (j, k), the few leaves with conditions on both features: the
  row's raw score at (g_a, g_b) is its 1D ICE in j plus its 1D ICE in k minus
  its own score, plus their interaction terms (the comment above
  :func:`autopdp.pd.tree.kernels.leaf_masks` derives it).

The model's link (sigmoid, softmax, exp) is then applied per row and grid
point before averaging, so ICE curves, PDs of boosted classifiers on the
probability scale and their spread (std, stderr) are exact on every row.

The trees are read into one node table by :mod:`autopdp.pd.tree.extract`, which routes splits as the
libraries route them (missing values, native categories).  The extraction is checked against the model
itself: the reconstructed prediction of every background row must equal the model's, or the path is refused
(the brute-force engine is then used).

Rows are processed in fixed-size chunks and every feature set is reduced by
one thread in row order, so results do not depend on threads or workers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import ExactnessError
from .errors import TreePathUnavailable
from .extract import MAX_GRID, NodeForest

__all__ = ["RowKernel", "LeafPaths", "apply_link", "in_parallel", "n_threads", "CHUNK_BYTES",
           "CACHE_BYTES"]


def apply_link(raw: np.ndarray, link: int, scale: float = 1.0) -> np.ndarray:
    """Raw scores (n, K) -> the model's response columns (n, n_out)."""
    raw = np.asarray(raw, dtype=float)
    if link == 0:
        return raw
    if link == 1:
        p1 = 1.0 / (1.0 + np.exp(-scale * raw[:, 0]))
        return np.column_stack([1.0 - p1, p1])
    if link == 2:
        e = np.exp(raw - raw.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    return np.exp(raw)


def n_threads() -> int:
    """Threads for the compiled kernels: the CPUs this process may use; inside a Dask worker, the worker's own
    threads (its share of the machine: two workers of one thread on two cores each use one)."""
    import os
    import sys

    if "distributed" in sys.modules:
        try:
            return max(1, int(sys.modules["distributed"].get_worker().state.nthreads))
        except (ValueError, AttributeError):  # not in a worker
            pass
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def in_parallel(fn, n: int, *args, pieces_per_thread: int = 4) -> None:
    """``fn(lo, hi, *args)`` over [0, n) in ranges on a thread pool (the kernels release the GIL).

    Each item is computed by one thread, in order, so results never depend on
    the number of threads.  Plain threads (not numba's OpenMP layer) so they
    sleep when idle and leave the CPUs to the model's own OpenMP predictions.
    """
    k = min(n_threads(), n)
    if k <= 1:
        if n:
            fn(0, n, *args)
        return
    from concurrent.futures import ThreadPoolExecutor

    bounds = np.unique(np.linspace(0, n, min(n, k * pieces_per_thread) + 1).astype(np.int64))
    with ThreadPoolExecutor(max_workers=k) as pool:
        list(pool.map(lambda i: fn(int(bounds[i]), int(bounds[i + 1]), *args), range(len(bounds) - 1)))




@dataclass(frozen=True, eq=False)
class LeafPaths:
    """The root-to-leaf paths of a forest's leaves (leaf to root, -1 padded).

    ``node``/``left``/``feature`` (n_leaves, depth): each path's split nodes, whether the path
    goes left there, and the node's feature; ``bits`` (n_leaves, words) uint64: the features
    with conditions, as bitsets; ``leaf`` (n_leaves,): the leaves' node ids; ``pos``
    (n_nodes,): a leaf node's row here (-1 for splits).
    """

    node: np.ndarray
    left: np.ndarray
    feature: np.ndarray
    bits: np.ndarray
    leaf: np.ndarray
    pos: np.ndarray

    @classmethod
    def of(cls, forest: NodeForest, words: int) -> "LeafPaths":
        n = forest.feature.size
        split = np.flatnonzero(forest.feature >= 0)
        parent = np.full(n, -1, dtype=np.int64)
        went_left = np.zeros(n, dtype=bool)
        parent[forest.left[split]] = split
        parent[forest.right[split]] = split
        went_left[forest.left[split]] = True
        leaves = np.flatnonzero(forest.feature < 0)
        nodes, lefts = [], []
        cur = leaves.copy()
        while True:  # one column per level, leaf to root
            up = np.where(cur >= 0, parent[np.maximum(cur, 0)], -1)
            if not (up >= 0).any():
                break
            nodes.append(up)
            lefts.append(np.where(cur >= 0, went_left[np.maximum(cur, 0)], False))
            cur = up
        node = np.column_stack(nodes) if nodes else np.full((leaves.size, 1), -1, dtype=np.int64)
        left = np.column_stack(lefts) if lefts else np.zeros((leaves.size, 1), dtype=bool)
        feature = np.where(node >= 0, forest.feature[np.maximum(node, 0)], -1)
        bits = np.zeros((leaves.size, words), dtype=np.uint64)
        li, d = np.nonzero(node >= 0)
        f = feature[li, d]
        np.bitwise_or.at(bits, (li, f >> 6), np.left_shift(np.uint64(1), (f & 63).astype(np.uint64)))
        pos = np.full(n, -1, dtype=np.int64)
        pos[leaves] = np.arange(leaves.size)
        return cls(node=np.ascontiguousarray(node), left=np.ascontiguousarray(left), feature=feature, bits=bits,
                   leaf=leaves, pos=pos)


def _as_grid(g, float32: bool) -> np.ndarray:
    g = np.asarray(g, dtype=np.float64)
    return g.astype(np.float32).astype(np.float64) if float32 else g


def _largest_grid(requests) -> int:
    gmax = max(len(g) for _, grids in requests for g in grids)
    if gmax > MAX_GRID:
        raise TreePathUnavailable(f"a grid has more than {MAX_GRID} points")
    return gmax


def _grid_layers(requests, float32: bool) -> list[list[int]]:
    """Request indices in layers within which every feature has one grid (first fit, in order)."""
    layers: list[tuple[list[int], dict]] = []
    for s, (positions, grids) in enumerate(requests):
        gs = [_as_grid(g, float32) for g in grids]
        for members, seen in layers:
            if all(c not in seen or np.array_equal(seen[c], g, equal_nan=True) for c, g in zip(positions, gs)):
                break
        else:
            members, seen = [], {}
            layers.append((members, seen))
        members.append(s)
        seen.update(zip(positions, gs))
    return [members for members, _ in layers]


# The row kernel's memory limits.  Module constants (read when a kernel is built) so that the tests can shrink
# them and cross every chunk and cache boundary on small data: no result may depend on them (tests/test_exact.py
# compares every size with brute force and the results of different limits bit for bit).
CHUNK_BYTES = 16e6  # the per-chunk row tables (each row's 1D ICE raw scores, and its leaf codes when not kept)
CACHE_BYTES = 128e6  # every row's leaf codes, kept between calls when they fit


def _same_rows(n: int, *arrays) -> None:
    """Every array holds ``n`` rows: the compiled kernels read without bounds checks, so a table of the wrong
    length would be read out of bounds instead of failing."""
    for a in arrays:
        if a.shape[0] != n:
            raise ExactnessError(f"a row table of {a.shape[0]} rows where the chunk has {n}")


class RowKernel:
    """Exact per-row ICE of one :class:`NodeForest` on one background ``Z`` (rows as the trees see them).

    Parameters
    ----------
    forest : NodeForest
    Z : ndarray (n_rows, n_columns)
        The background as the trees see it (NaN for missing, category codes).  Copied and made read-only:
        what the kernel keeps between calls (the rows' leaf codes) belongs to this forest and these rows.
    w : ndarray (n_rows,)
        Row weights.
    offset : ndarray (K,)
        The constant part of the raw score (:meth:`set_offset` once the model has been read).
    chunk_bytes : float, optional
        Memory for the per-chunk row tables; rows are processed in chunks, in row order (default
        :data:`CHUNK_BYTES`).  16 MB: on full Adult (HGB, 3,255 leaves) it took the audit's peak 53 MB below
        32 MB chunks' for 2-5% more time in the PD stages (benchmarks/bench_cli_full.py).
    cache_bytes : float, optional
        Memory for keeping every row's leaf codes between calls (default :data:`CACHE_BYTES`); they do not
        depend on the grids.

    Every feature set's sums run over the rows in row order, chunk after chunk, on one thread, so neither
    the limits nor the number of threads change a number.
    """

    def __init__(self, forest: NodeForest, Z: np.ndarray, w: np.ndarray, offset: np.ndarray,
                 chunk_bytes: float | None = None, cache_bytes: float | None = None):
        self.forest = forest
        Z = np.asarray(Z, dtype=np.float64)
        self.Z = np.array(Z.astype(np.float32).astype(np.float64) if forest.float32 else Z, order="C")
        self.Z.flags.writeable = False
        self.w = np.ascontiguousarray(w, dtype=np.float64)
        if self.w.shape != (self.Z.shape[0],):
            raise ExactnessError(f"{self.w.shape[0]} weights for {self.Z.shape[0]} rows")
        self.offset = np.ascontiguousarray(offset, dtype=np.float64)
        self.words = max(1, (self.Z.shape[1] + 63) // 64)
        per_row = forest.roots.size * 8  # own leaves (the reconstruction check)
        self.chunk_bytes = CHUNK_BYTES if chunk_bytes is None else chunk_bytes
        self.chunk = max(1, int(self.chunk_bytes // max(per_row, 1)))
        self.cache_bytes = CACHE_BYTES if cache_bytes is None else cache_bytes
        self._paths = None
        self._codes = None  # (raw scores without the offset, leaf codes) of every row, when kept
        self._own_raw = None  # every row's own raw score with the offset (:meth:`own_raw`)

    def set_offset(self, offset: np.ndarray, own_raw: np.ndarray | None = None) -> None:
        """The constant part of the raw score, and every row's own raw score with it when already known."""
        self.offset = np.ascontiguousarray(offset, dtype=np.float64)
        if own_raw is not None:
            _same_rows(self.Z.shape[0], own_raw)
        self._own_raw = None if own_raw is None else np.ascontiguousarray(own_raw, dtype=np.float64)

    def paths(self) -> LeafPaths:
        if self._paths is None:
            self._paths = LeafPaths.of(self.forest, self.words)
        return self._paths

    @property
    def keeps_codes(self) -> bool:
        """Whether every row's leaf codes are kept between calls (they fit in ``cache_bytes``)."""
        return self.Z.shape[0] * self.paths().leaf.size * 4 <= self.cache_bytes

    def _walk(self, rows: slice, max_broken: int):
        """(raw score (n, K) without the offset, leaf codes (n, n_leaves)) of the rows ``rows``, walked."""
        from .kernels import row_leaves, walk_tables

        f, paths = self.forest, self.paths()
        X = self.Z[rows]
        raw0 = np.empty((X.shape[0], f.value.shape[1]))
        codes = np.empty((X.shape[0], paths.leaf.size), dtype=np.uint32)
        in_parallel(row_leaves, X.shape[0], X, walk_tables(f), max_broken, paths.pos, np.zeros(f.value.shape[1]),
                    raw0, codes)
        return raw0, codes

    def codes(self, rows: slice, max_broken: int):
        """(raw score (n, K) with the offset, leaf codes (n, n_leaves)) of the rows ``rows``, exactly those.

        Kept for every row when :attr:`keeps_codes` (walked once, allowing two broken features); else walked
        for these rows allowing ``max_broken``.
        """
        n = self.Z.shape[0]
        if self.keeps_codes:
            if self._codes is None:
                self._codes = self._walk(slice(0, n), 2)
            raw, codes = self._codes[0][rows], self._codes[1][rows]
        else:
            raw, codes = self._walk(rows, max_broken)
        _same_rows(len(range(*rows.indices(n))), raw, codes)
        return raw + self.offset, codes

    def _ice_1d(self, codes, raw0, feats, slot, gn, gmax, value, lf, lmk):
        """(n_rows, n_feats, gmax, K) raw 1D ICE of the features on their grids, from the leaf codes."""
        from .kernels import ice_from_codes

        paths = self.paths()
        n_r, K = raw0.shape
        _same_rows(n_r, codes)
        r1 = np.empty((n_r, feats.size, gmax, K))
        in_parallel(ice_from_codes, n_r, codes, paths.leaf, lf, lmk, value, slot, gn, raw0, r1)
        return r1

    def own(self, rows: slice) -> np.ndarray:
        """Each row's own leaf per tree (n_rows, n_trees) for a chunk of rows."""
        from .kernels import own_paths

        f = self.forest
        X = self.Z[rows]
        own_leaf = np.empty((X.shape[0], f.roots.size), dtype=np.int64)
        in_parallel(own_paths, X.shape[0], X, f.packed, f.threshold, f.catbits, f.catknown, f.roots, own_leaf)
        return own_leaf

    def predictions(self) -> np.ndarray:
        """The reconstructed raw score of every row (n_rows, K)."""
        out = np.empty((self.Z.shape[0], self.forest.value.shape[1]))
        for r0 in range(0, self.Z.shape[0], self.chunk):
            rows = slice(r0, min(self.Z.shape[0], r0 + self.chunk))
            own_leaf = self.own(rows)
            out[rows] = self.forest.value[own_leaf].sum(axis=1) + self.offset
        return out

    def own_raw(self) -> np.ndarray:
        """Every row's own raw score with the offset (n_rows, K), kept."""
        if self._own_raw is None:
            self._own_raw = self.predictions()
        return self._own_raw

    def _check_own(self, rows: slice, raw0: np.ndarray) -> None:
        """The rows' raw scores read from their leaf codes must be their own raw scores (summed by another walk,
        :meth:`own_raw`, and checked against the model): a second computation guarding the first."""
        own = self.own_raw()[rows]
        _same_rows(own.shape[0], raw0)
        gap = float(np.max(np.abs(raw0 - own), initial=0.0))
        if not gap <= 1e-9 * max(1.0, float(np.max(np.abs(own), initial=0.0))):
            raise ExactnessError(f"the rows' leaf codes do not give their own raw scores (largest gap {gap:.3g})")

    def _layer(self, requests, cols, gmax):
        """What the requests of one layer (one grid per feature) share: the grid table, each node's
        grid mask, the reported outputs, the features' slots, the row chunk and each leaf's masks."""
        from types import SimpleNamespace

        from .kernels import grid_masks, leaf_masks

        f = self.forest
        p = self.Z.shape[1]
        grids_tab = np.zeros((p, gmax))
        gn = np.zeros(p, dtype=np.int64)
        sets = np.full((len(requests), 2), -1, dtype=np.int64)
        for s, (positions, grids) in enumerate(requests):
            for m, (c, g) in enumerate(zip(positions, grids)):
                g = _as_grid(g, f.float32)
                grids_tab[c, :g.size] = g
                gn[c] = g.size
                sets[s, m] = c
        lmask = np.zeros(f.feature.size, dtype=np.uint64)
        grid_masks(f.packed, f.threshold, f.catbits, f.catknown, grids_tab, gn, lmask)
        cols = np.ascontiguousarray(cols, dtype=np.int64)
        value, cols_raw = f.value, cols
        if f.link in (0, 3) and cols.size < value.shape[1]:
            # an elementwise link: the raw outputs that are not reported need not be summed
            value = np.ascontiguousarray(value[:, cols])
            cols = np.arange(cols.size, dtype=np.int64)
        if (sets[:, 1] >= 0).any() and p >= 0xFFFF:
            raise TreePathUnavailable("2D sets of data with more than 65,534 columns")
        feats = np.unique(sets[sets >= 0])
        slot = np.full(p, -1, dtype=np.int64)
        slot[feats] = np.arange(feats.size)
        paths = self.paths()
        n = self.Z.shape[0]
        per_row = feats.size * gmax * value.shape[1] * 8 + (0 if self.keeps_codes else paths.leaf.size * 4)
        chunk = max(1, min(n, int(self.chunk_bytes // per_row)))
        lf = np.empty(paths.node.shape, dtype=np.int64)
        lmk = np.empty(paths.node.shape, dtype=np.uint64)
        leaf_masks(paths.node, paths.left, paths.feature, lmask, gn, lf, lmk)
        return SimpleNamespace(grids_tab=grids_tab, gn=gn, sets=sets, lmask=lmask, value=value, cols=cols,
                               cols_raw=cols_raw, feats=feats, slot=slot, paths=paths, chunk=chunk, lf=lf, lmk=lmk,
                               gmax=gmax)

    def _in_layers(self, requests, call):
        """Results in request order from ``call(indices)`` per layer of consistent grids (a feature
        with two grids, as ALE's 1D and 2D edges), or None when the requests form one layer."""
        layers = _grid_layers(requests, self.forest.float32)
        if len(layers) == 1:
            return None
        out = [None] * len(requests)
        for layer in layers:
            for s, r in zip(layer, call(layer)):
                out[s] = r
        return out

    def run(self, requests, cols, keep_rows=None, keep=None):
        """Exact PD, std and (where kept) ICE of ``[(positions, grids), ...]``.

        ``cols``: response columns to report.  ``keep_rows``: row positions whose
        ICE curves are kept for the requests with ``keep[s]`` true.
        Returns a list of (average, std, individual or None), shapes
        (T, *grid_shape) and (T, n_keep, *grid_shape).
        """
        from .kernels import ice_singles
        from .pair_kernels import ice_pairs, sigmoid_factors

        f = self.forest
        gmax = _largest_grid(requests)
        split = self._in_layers(requests, lambda layer: self.run(
            [requests[s] for s in layer], cols, keep_rows, None if keep is None else [keep[s] for s in layer]))
        if split is not None:
            return split
        L = self._layer(requests, cols, gmax)
        grids_tab, gn, sets, lmask, value, cols, cols_raw = (L.grids_tab, L.gn, L.sets, L.lmask, L.value, L.cols,
                                                             L.cols_raw)
        T, S = cols.size, len(requests)
        G = max(int(np.prod([len(g) for g in grids])) for _, grids in requests)  # cells of the largest set
        shift = np.zeros((S, T, G))
        s1 = np.zeros((S, T, G))
        s2 = np.zeros((S, T, G))
        n = self.Z.shape[0]
        keep = [False] * S if keep is None or keep_rows is None else list(keep)
        keep_set = np.full(S, -1, dtype=np.int64)
        n_keep_sets = 0
        for s in range(S):
            if keep[s]:
                keep_set[s] = n_keep_sets
                n_keep_sets += 1
        keep_rows = np.arange(0) if keep_rows is None else np.asarray(keep_rows, dtype=np.int64)
        ice = np.zeros((max(n_keep_sets, 1) if n_keep_sets else 1, T, max(keep_rows.size, 1), G if n_keep_sets else 1))
        keep_pos_all = np.full(n, -1, dtype=np.int64)
        keep_pos_all[keep_rows] = np.arange(keep_rows.size)
        # one walk per row and tree: the rows' 1D ICE of every feature asked for and, for 2D sets,
        # the leaf codes; 2D sets then add the leaves with conditions on both features
        singles = np.flatnonzero(sets[:, 1] < 0)
        by_pairs = np.flatnonzero(sets[:, 1] >= 0)
        feats, slot, paths, chunk, lf, lmk = L.feats, L.slot, L.paths, L.chunk, L.lf, L.lmk
        pairs = np.ascontiguousarray(sets[by_pairs])
        for r0 in range(0, n, chunk):
            rows = slice(r0, min(n, r0 + chunk))
            wr, kp = self.w[rows], np.ascontiguousarray(keep_pos_all[rows])
            raw0, codes = self.codes(rows, 2 if by_pairs.size else 1)
            self._check_own(rows, raw0)
            if value is not f.value:  # only the reported raw outputs
                raw0 = np.ascontiguousarray(raw0[:, cols_raw])
            _same_rows(rows.stop - r0, raw0, codes, wr, kp)
            r1 = self._ice_1d(codes, raw0, feats, slot, gn, gmax, value, lf, lmk)
            if singles.size:
                one = np.ascontiguousarray(sets[singles, 0])
                in_parallel(ice_singles, singles.size, wr, (one, np.ascontiguousarray(slot[one]), singles, gn),
                            (f.link, f.scale, cols, r0 == 0), r1, (shift, s1, s2, keep_set, ice), kp)
            if by_pairs.size:
                e1, e0 = sigmoid_factors(r1, raw0, f.link, f.scale, gn[feats])
                in_parallel(ice_pairs, by_pairs.size, wr, (pairs, np.ascontiguousarray(slot[pairs]), by_pairs, gn),
                            (value, paths.node, paths.left, paths.feature, paths.bits, paths.leaf, lmask), codes,
                            (f.link, f.scale, cols, r0 == 0), (raw0, r1, e1, e0), (shift, s1, s2, keep_set, ice), kp)
        total = float(self.w.sum())
        out = []
        for s, (positions, grids) in enumerate(requests):
            shape = tuple(len(g) for g in grids)
            gj = shape[0]
            gk = shape[1] if len(shape) == 2 else 1
            m1 = (s1[s, :, :gj * gk] / total)
            mean = shift[s, :, :gj * gk] + m1
            var = np.maximum(s2[s, :, :gj * gk] / total - m1 * m1, 0.0)
            indiv = None
            if keep_set[s] >= 0:
                indiv = ice[keep_set[s], :, :keep_rows.size, :gj * gk].reshape((T, keep_rows.size) + shape).copy()
            out.append((mean.reshape((T,) + shape), np.sqrt(var).reshape((T,) + shape), indiv))
        return out

"""Brute-force (interventional) partial dependence, vectorised and memory-bounded.

For a feature set S with grid points v_1..v_G, every row of X is copied once
per grid point with x_S set to v_g; the copies are predicted in large batches
(many grid points and many rows per model call, never one call per grid
value), and the predictions are reduced to the weighted mean (the PD), the
weighted standard deviation of the ICE curves and the Monte-Carlo standard
error, streaming over batches so memory stays within ``max_batch_bytes``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .data import Frame
from .grids import FeatureSpec, nearest_grid_index
from .response import ResponseAdapter
from .result import PDResult

__all__ = ["brute_force_pd", "rows_per_batch"]


def rows_per_batch(frame: Frame, n_targets: int, max_batch_bytes: float) -> int:
    """How many augmented rows one model call may take within the memory cap.

    The estimate counts the augmented rows themselves, one float64 copy the
    model typically makes of them, and the output; object columns are charged
    64 bytes a cell.  It is deliberately conservative.
    """
    p = frame.n_features
    if frame.is_frame:
        n_obj = sum(1 for dt in frame.data.dtypes if not pd.api.types.is_numeric_dtype(dt))
    else:
        n_obj = p if frame.data.dtype == object else 0
    row_bytes = 8 * p * 2 + 64 * n_obj + 16 * max(n_targets, 1) + 64
    return max(1, int(max_batch_bytes // row_bytes))


def _as_column(values: np.ndarray, dtype):
    """Grid values as a column of the original dtype (so the model sees the same types)."""
    if isinstance(dtype, pd.CategoricalDtype):
        return pd.Categorical(values, dtype=dtype)
    if pd.api.types.is_bool_dtype(dtype) and not isinstance(dtype, np.dtype):
        return pd.array(values, dtype=dtype)
    if pd.api.types.is_integer_dtype(dtype):
        arr = np.asarray(values)
        if arr.dtype.kind in "iu" or (arr.dtype.kind == "f" and np.all(arr == np.round(arr))):
            try:
                return pd.array(arr.astype(np.int64), dtype=dtype)
            except (TypeError, ValueError):
                pass
        return np.asarray(values, dtype=float)
    if pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype):
        return np.asarray(values, dtype=float)
    if isinstance(dtype, np.dtype):
        return np.asarray(values, dtype=dtype)
    return pd.array(list(values), dtype=dtype)


class Augmenter:
    """Builds the augmented rows for a block of grid points and a block of rows."""

    def __init__(self, frame: Frame, specs: list[FeatureSpec]):
        self.frame = frame
        self.specs = specs
        self.positions = [s.position for s in specs]
        if not frame.is_frame:
            arr = frame.data
            needs = arr.dtype
            for s in specs:
                if s.kind == "numeric" and arr.dtype.kind in "iub":
                    g = s.grid.astype(float)
                    if not np.all(g == np.round(g)):
                        needs = np.result_type(needs, np.float64)
            self.array = arr.astype(needs, copy=False)

    def __call__(self, rows: np.ndarray, point_values: list[np.ndarray]):
        """Rows ``rows`` repeated once per grid point (grid-point major order).

        ``point_values[k]`` holds the value of feature k at each grid point of
        the block.
        """
        m = rows.shape[0]
        gb = point_values[0].shape[0]
        if not self.frame.is_frame:
            base = self.array[rows]
            aug = np.tile(base, (gb, 1))
            for pos, vals in zip(self.positions, point_values):
                aug[:, pos] = np.repeat(vals, m)
            return aug
        data = self.frame.data
        idx = np.tile(rows, gb)
        aug = data.take(idx)
        aug.index = pd.RangeIndex(aug.shape[0])
        for pos, vals in zip(self.positions, point_values):
            col = data.columns[pos]
            aug[col] = _as_column(np.repeat(vals, m), data.dtypes.iloc[pos])
        return aug


class _Moments:
    """Streaming weighted mean and variance per (target, grid point) (Chan et al.)."""

    def __init__(self, n_targets: int, n_points: int):
        self.w = np.zeros(n_points)
        self.mean = np.zeros((n_targets, n_points))
        self.m2 = np.zeros((n_targets, n_points))

    def add(self, points: slice, preds: np.ndarray, w: np.ndarray):
        """``preds``: (gb, m, T) predictions of m rows at the block's grid points."""
        wc = float(w.sum())
        if wc == 0:
            return
        mean_c = np.einsum("gmt,m->tg", preds, w) / wc
        dev = preds - mean_c.T[:, None, :]
        m2_c = np.einsum("gmt,m->tg", dev * dev, w)
        wa = self.w[points]
        total = wa + wc
        delta = mean_c - self.mean[:, points]
        self.mean[:, points] += delta * (wc / total)
        self.m2[:, points] += m2_c + delta * delta * (wa * wc / total)
        self.w[points] = total


def _grid_points(specs: list[FeatureSpec]) -> list[np.ndarray]:
    """The Cartesian product of the grids, in C order of ``grid_shape``."""
    grids = [s.grid for s in specs]
    if len(grids) == 1:
        return [grids[0]]
    n0, n1 = len(grids[0]), len(grids[1])
    return [np.repeat(grids[0], n1), np.tile(grids[1], n0)]


def density_counts(frame: Frame, specs: list[FeatureSpec]) -> np.ndarray:
    """Rows nearest each grid point (joint cell for a pair)."""
    shape = tuple(s.size for s in specs)
    idx = [nearest_grid_index(frame.column(s.position), s) for s in specs]
    ok = np.all([i >= 0 for i in idx], axis=0)
    if not ok.any():
        return np.zeros(shape, dtype=np.int64)
    flat = np.ravel_multi_index(tuple(i[ok] for i in idx), shape)
    return np.bincount(flat, minlength=int(np.prod(shape))).reshape(shape).astype(np.int64)


def brute_force_pd(
    adapter: ResponseAdapter,
    frame: Frame,
    specs: list[FeatureSpec],
    *,
    sample_weight: np.ndarray | None = None,
    ice_rows: np.ndarray | None = None,
    keep_individual: bool = True,
    centered: bool = False,
    max_batch_bytes: float = 256e6,
) -> PDResult:
    """Compute the PD (and ICE) of one feature set by brute force.

    Parameters
    ----------
    adapter : ResponseAdapter
        Maps augmented rows to responses ``(n, n_targets)``.
    frame : Frame
        The background data.
    specs : list of FeatureSpec
        One (1D) or two (2D) explained features with their grids.
    sample_weight : ndarray of shape (n_rows,), optional
    ice_rows : ndarray of int, optional
        Rows whose ICE curves are kept (all rows when None).
    keep_individual : bool
        Keep ICE curves in the result.
    centered : bool
        Anchor every ICE curve (and so the PD) at 0 at the first grid point.
    max_batch_bytes : float
        Memory cap for the augmented rows of one model call.
    """
    n = frame.n_rows
    T = len(adapter.targets)
    shape = tuple(s.size for s in specs)
    G = int(np.prod(shape))
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    points = _grid_points(specs)
    augment = Augmenter(frame, specs)

    budget = rows_per_batch(frame, T, max_batch_bytes)
    row_block = min(n, budget)
    point_block = max(1, budget // row_block)

    keep = None
    if keep_individual:
        keep = np.arange(n) if ice_rows is None else np.asarray(ice_rows, dtype=np.int64)
        individual = np.empty((T, keep.shape[0], G))
        keep_pos = np.full(n, -1, dtype=np.int64)
        keep_pos[keep] = np.arange(keep.shape[0])

    anchor = None
    if centered:  # predictions at the first grid point, one per row
        anchor = np.empty((n, T))
        first = [p[:1] for p in points]
        for r0 in range(0, n, budget):
            rows = np.arange(r0, min(n, r0 + budget))
            anchor[rows] = adapter(augment(rows, first))

    moments = _Moments(T, G)
    for g0 in range(0, G, point_block):
        g1 = min(G, g0 + point_block)
        block_vals = [p[g0:g1] for p in points]
        for r0 in range(0, n, row_block):
            rows = np.arange(r0, min(n, r0 + row_block))
            preds = adapter(augment(rows, block_vals)).reshape(g1 - g0, rows.shape[0], T)
            if anchor is not None:
                preds = preds - anchor[rows][None, :, :]
            moments.add(slice(g0, g1), preds, w[rows])
            if keep is not None:
                kp = keep_pos[rows]
                sel = kp >= 0
                if sel.any():
                    individual[:, kp[sel], g0:g1] = preds[:, sel, :].transpose(2, 1, 0)

    total_w = float(w.sum())
    average = moments.mean.reshape((T, *shape))
    std = np.sqrt(np.maximum(moments.m2 / total_w, 0.0)).reshape((T, *shape))
    stderr = std * (np.sqrt(float((w * w).sum())) / total_w)
    if keep is not None:
        individual = individual.reshape((T, keep.shape[0], *shape))
    return PDResult(
        features=tuple(s.name for s in specs),
        kinds=tuple(s.kind for s in specs),
        grid=tuple(s.grid for s in specs),
        average=average,
        individual=individual if keep is not None else None,
        std=std,
        stderr=stderr,
        counts=density_counts(frame, specs),
        targets=adapter.targets,
        response=adapter.response,
        centered=centered,
        n_rows=n,
        total_weight=total_w,
        n_missing=tuple(s.n_missing for s in specs),
        ordered=tuple(s.ordered for s in specs),
        ice_rows=None if keep is None or ice_rows is None else keep,
        method="brute",
    )

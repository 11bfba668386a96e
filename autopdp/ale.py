"""Accumulated local effects (Apley and Zhu 2020) for numeric features.

1D: the feature's range is cut at quantiles z_0 < ... < z_K; for the rows in
interval k (z_{k-1}, z_k] (the first interval includes z_0) the local effect is
the mean of f(z_k, x_rest) - f(z_{k-1}, x_rest): the model is only moved
within the data's own neighbourhood, never to combinations the data lacks.
The effects are accumulated and centred so their row-weighted mean is zero.

2D (numeric pairs): second-order differences over the cells of the two
features' quantile grids, accumulated over both axes, with each feature's
main effect removed, centred to a row-weighted mean of zero.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .data import Frame, as_frame
from .engine import _as_column
from .modelfree import ModelFreePD
from .response import make_adapter

__all__ = ["ale", "ale_2d"]


def _edges(values: np.ndarray, bins: int) -> np.ndarray:
    v = values[np.isfinite(values)]
    edges = np.unique(np.quantile(v, np.linspace(0, 1, bins + 1)))
    if edges.size < 2:
        raise ValueError("ALE needs a feature with at least two distinct values.")
    return edges


def _with(frame: Frame, rows: np.ndarray, changes: dict):
    """Rows of X with some columns set to per-row values, in the user's container type."""
    if frame.is_frame:
        d = frame.data.iloc[rows].copy()
        for pos, vals in changes.items():
            d[d.columns[pos]] = _as_column(vals, frame.data.dtypes.iloc[pos])
        return d
    d = np.array(frame.data[rows], dtype=np.result_type(frame.data.dtype, np.float64))
    for pos, vals in changes.items():
        d[:, pos] = vals
    return d


def _bin_index(values, edges):
    k = np.clip(np.searchsorted(edges, values, side="left"), 1, edges.size - 1)
    return k  # interval (edges[k-1], edges[k]]; values at edges[0] fall in interval 1


def ale(model, X, feature, *, bins: int = 20, response="auto", target=None) -> ModelFreePD:
    """1D ALE of a numeric feature.

    Returns a :class:`ModelFreePD` with ``x`` the interval edges, ``pd`` the
    centred ALE at those edges and ``counts`` the rows per interval
    (``len(counts) == len(x) - 1``); the first target of the model is used.
    """
    frame = as_frame(X)
    pos = frame.position_of(feature)
    name = frame.names[pos]
    try:
        values = np.asarray(frame.column(pos), dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"ALE is defined for numeric features; {name!r} is not numeric.") from None
    adapter = make_adapter(model, response, target, probe=frame.take_rows(np.arange(min(5, frame.n_rows))).data)
    edges = _edges(values, bins)
    ok = np.flatnonzero(np.isfinite(values))
    k = _bin_index(values[ok], edges)
    lo = adapter(_with(frame, ok, {pos: edges[k - 1]}))[:, 0]
    hi = adapter(_with(frame, ok, {pos: edges[k]}))[:, 0]
    K = edges.size - 1
    counts = np.bincount(k - 1, minlength=K)
    local = np.bincount(k - 1, weights=hi - lo, minlength=K) / np.maximum(counts, 1)
    acc = np.concatenate([[0.0], np.cumsum(local)])
    # centre: the mean over rows of the accumulated effect, each interval taken at its midpoint value
    mid = (acc[:-1] + acc[1:]) / 2
    acc = acc - np.sum(mid * counts) / max(counts.sum(), 1)
    return ModelFreePD(name, "numeric", edges, acc, counts.astype(int), "ale")


def ale_2d(model, X, features, *, bins: int = 10, response="auto", target=None) -> ModelFreePD:
    """Second-order (pure interaction) ALE of a numeric pair, centred.

    Returns a :class:`ModelFreePD` whose ``x`` holds the two edge arrays and
    whose ``pd`` has shape ``(len(x[0]), len(x[1]))``; ``counts`` are rows per cell.
    """
    frame = as_frame(X)
    pa, pb = (frame.position_of(f) for f in features)
    va, vb = (np.asarray(frame.column(p), dtype=float) for p in (pa, pb))
    adapter = make_adapter(model, response, target, probe=frame.take_rows(np.arange(min(5, frame.n_rows))).data)
    ea, eb = _edges(va, bins), _edges(vb, bins)
    ok = np.flatnonzero(np.isfinite(va) & np.isfinite(vb))
    ka, kb = _bin_index(va[ok], ea), _bin_index(vb[ok], eb)
    f = {}
    for da in (0, 1):
        for db in (0, 1):
            f[da, db] = adapter(_with(frame, ok, {pa: ea[ka - 1 + da], pb: eb[kb - 1 + db]}))[:, 0]
    second = f[1, 1] - f[1, 0] - f[0, 1] + f[0, 0]
    Ka, Kb = ea.size - 1, eb.size - 1
    cell = (ka - 1) * Kb + (kb - 1)
    counts = np.bincount(cell, minlength=Ka * Kb).reshape(Ka, Kb)
    local = (np.bincount(cell, weights=second, minlength=Ka * Kb) / np.maximum(counts.ravel(), 1)).reshape(Ka, Kb)
    acc = np.zeros((Ka + 1, Kb + 1))
    acc[1:, 1:] = np.cumsum(np.cumsum(local, axis=0), axis=1)
    # remove each feature's main effect (the row-weighted mean change along each axis), then centre
    wa = counts.sum(axis=1)
    wb = counts.sum(axis=0)
    da = np.diff(acc, axis=0)
    db = np.diff(acc, axis=1)
    da_cell = (da[:, :-1] + da[:, 1:]) / 2  # change along a across each cell, averaged over its b edges
    db_cell = (db[:-1, :] + db[1:, :]) / 2
    row_mean = np.concatenate([[0.0], np.cumsum(np.sum(da_cell * counts, axis=1) / np.maximum(wa, 1))])
    col_mean = np.concatenate([[0.0], np.cumsum(np.sum(db_cell * counts, axis=0) / np.maximum(wb, 1))])
    acc = acc - row_mean[:, None] - col_mean[None, :]
    mids = (acc[:-1, :-1] + acc[1:, :-1] + acc[:-1, 1:] + acc[1:, 1:]) / 4
    acc = acc - np.sum(mids * counts) / max(counts.sum(), 1)
    x = np.empty(2, dtype=object)
    x[0], x[1] = ea, eb
    return ModelFreePD(f"{frame.names[pa]} x {frame.names[pb]}", "numeric", x, acc, counts.astype(int), "ale2d")

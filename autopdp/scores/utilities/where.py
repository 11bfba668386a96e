"""Where a 1D PD breaks its criterion: the stretch of the grid, the PD's move across it and the rows there.

A finding a validator quotes must say where: "falls 0.092 between balance 1,488 and 1,678 (312 rows)".  Each
function returns ``{"from", "to", "change", "rows"}`` (``where`` in a score's details and in results.json) or None:
``from`` and ``to`` are grid values, ``change`` the PD's move from one to the other (on the score's scale), and
``rows`` the audit rows nearest the grid points of that stretch, both ends included (the PD's own ``counts``, so a
results.json read back, and the gate, give the same figure).
"""

from __future__ import annotations

import numpy as np

from ...utils.jsonable import json_scalar

__all__ = ["stretch", "against_trend", "steepest_step"]


def stretch(result, f: np.ndarray, i: int, j: int) -> dict:
    """``where`` of the grid points ``i`` to ``j`` (``i < j``) of 1D PD ``result`` whose curve is ``f``."""
    counts = np.asarray(result.counts, dtype=float).ravel()
    grid = result.grid[0]
    return {"from": json_scalar(grid[i]), "to": json_scalar(grid[j]), "change": float(f[j] - f[i]),
            "rows": int(round(float(counts[i:j + 1].sum())))}


def against_trend(result, f: np.ndarray, increasing: bool) -> dict | None:
    """The largest move of ``f`` against the direction (a fall for an increasing trend, a rise for a decreasing
    one) between any two grid points, or None when ``f`` never moves against it."""
    f = np.asarray(f, dtype=float).ravel()
    if result.ndim != 1 or f.size < 2 or not np.isfinite(f).all():
        return None
    s = f if increasing else -f
    best, i_best, j_best, i_top = 0.0, -1, -1, 0
    for j in range(1, s.size):  # the highest point before j, then the drop to j
        if s[j - 1] > s[i_top]:
            i_top = j - 1
        drop = s[i_top] - s[j]
        if drop > best:
            best, i_best, j_best = drop, i_top, j
    return stretch(result, f, i_best, j_best) if j_best > 0 else None


def steepest_step(result, f: np.ndarray, x: np.ndarray, bound: float) -> dict | None:
    """The step between neighbouring grid points whose slope most exceeds ``bound`` (per unit of ``x``), with the
    slope, or None when no step exceeds it."""
    f = np.asarray(f, dtype=float).ravel()
    x = np.asarray(x, dtype=float).ravel()
    if result.ndim != 1 or f.size < 2 or not (np.isfinite(f).all() and np.isfinite(bound) and bound >= 0):
        return None
    width = np.diff(x)
    slope = np.where(width > 0, np.abs(np.diff(f)) / np.where(width > 0, width, 1.0), 0.0)
    k = int(np.argmax(slope))
    if not slope[k] > bound:
        return None
    return {**stretch(result, f, k, k + 1), "slope": float(slope[k])}

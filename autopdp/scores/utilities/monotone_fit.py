"""The best monotone curve under the score's own weights and loss (AutoPDP paper, eq. 5-6).

The monotonicity score is the standard utility (eq. 4-5) between the PD ``f`` and
its closest monotone curve ``g``.  "Closest" is measured by that same score, so
``g`` minimises the weighted loss the score reports:

* ``loss="l2"``: ``sum_i w_i (f_i - g_i)**2`` -- a weighted isotonic (least-squares)
  regression, ``scipy.optimize.isotonic_regression(f, weights=w)``;
* ``loss="l1"``: ``sum_i w_i |f_i - g_i|`` -- a weighted isotonic *median*
  regression, computed here by pool-adjacent-violators with each pooled block
  at its weighted median (the lower one when two values tie).  The L1 solution
  is not unique in general; every solution has the same (minimal) loss, which
  is all the score uses.

Grid points without data (``w_i = 0``) do not enter the score, so they do not
enter the fit either: ``g`` is fitted on the points with data and, at the empty
points between them, is the least-squares monotone fit of ``f`` on that run
clipped to the fitted values of its neighbours (so ``g`` stays monotone and as
close to ``f`` as it can where it costs nothing).

The direction (increasing or decreasing), when not declared, is the one with
the smaller weighted loss -- the smaller score.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import isotonic_regression

__all__ = ["weighted_isotonic", "isotonic_median", "monotone_fit", "best_monotone_gap", "MonotoneGap"]


def isotonic_median(f: np.ndarray, w: np.ndarray, increasing: bool = True) -> np.ndarray:
    """Weighted isotonic median regression (minimises ``sum w |f - g|``); all ``w`` > 0.

    Pool-adjacent-violators: each block keeps its points sorted and sits at their
    lower weighted median (the smallest value whose cumulative weight reaches
    half the block's); adjacent blocks out of order are pooled.  Plain Python
    lists: the grids are short and this runs once per noise draw.
    """
    f = np.asarray(f, dtype=float)
    w = np.asarray(w, dtype=float)
    if not increasing:
        return isotonic_median(f[::-1], w[::-1], True)[::-1]
    blocks: list[tuple[list, float, float, int]] = []  # (sorted (value, weight) pairs, total weight, value, size)
    for v, wt in zip(f.tolist(), w.tolist()):
        pairs, total, value, size = [(v, wt)], wt, v, 1
        while blocks and blocks[-1][2] > value:
            prev, prev_total, _, prev_size = blocks.pop()
            pairs = sorted(prev + pairs)
            total += prev_total
            size += prev_size
            value = _lower_median(pairs, total)
        blocks.append((pairs, total, value, size))
    return np.array([b[2] for b in blocks for _ in range(b[3])], dtype=float)


def _lower_median(pairs: list, total: float) -> float:
    half, cum = 0.5 * total * (1 - 1e-14), 0.0
    for value, weight in pairs:
        cum += weight
        if cum >= half:
            return value
    return pairs[-1][0]


def weighted_isotonic(f: np.ndarray, w: np.ndarray, increasing: bool, loss: str = "l2") -> np.ndarray:
    """The monotone curve minimising the weighted loss, for strictly positive weights."""
    if loss == "l1":
        return isotonic_median(f, w, increasing)
    return isotonic_regression(f, weights=w, increasing=increasing).x


def monotone_fit(f: np.ndarray, w: np.ndarray | None, increasing: bool, loss: str = "l2") -> np.ndarray:
    """The best monotone curve to ``f`` (1D, grid order) under weights ``w`` and ``loss``.

    ``w=None`` weighs every point equally.  Points with ``w <= 0`` (or a non-finite
    ``f``) are left out of the fit and filled as the module docs say (NaN where
    ``f`` is not finite).
    """
    f = np.asarray(f, dtype=float)
    w = np.ones_like(f) if w is None else np.asarray(w, dtype=float).ravel()
    finite = np.isfinite(f)
    used = finite & (w > 0)
    if used.all():
        return weighted_isotonic(f, w, increasing, loss)
    out = np.full(f.shape, np.nan)
    idx = np.flatnonzero(used)
    if idx.size:
        out[idx] = weighted_isotonic(f[idx], w[idx], increasing, loss)
    # fill the empty points, run by run between fitted points
    empty = np.flatnonzero(finite & ~used)
    if empty.size:
        runs = np.split(empty, np.flatnonzero(np.diff(empty) > 1) + 1)
        for run in runs:
            left = idx[idx < run[0]]
            right = idx[idx > run[-1]]
            a = out[left[-1]] if left.size else None
            b = out[right[0]] if right.size else None
            lo, hi = (a, b) if increasing else (b, a)
            fill = isotonic_regression(f[run], increasing=increasing).x
            out[run] = np.clip(fill, -np.inf if lo is None else lo, np.inf if hi is None else hi)
    return out


class MonotoneGap:
    """The weighted monotonicity gap of many curves on one grid, for the noise test's refits.

    ``gap(h)`` is ``min`` over the allowed directions of the standard utility
    between ``h`` and its :func:`monotone_fit` in that direction -- the same value
    :func:`autopdp.scores.utilities.score_monotonicity` reports for a 1D PD ``h``
    -- computed on the grid points with data only (the others do not count).
    """

    def __init__(self, w: np.ndarray, directions, loss: str = "l2"):
        w = np.asarray(w, dtype=float).ravel()
        self.used = np.flatnonzero(w > 0)
        self.w = w[self.used]
        self.total = float(self.w.sum())
        self.increasing = [d == "increasing" for d in directions]
        self.loss = loss

    def __call__(self, h: np.ndarray) -> float:
        if not self.used.size:
            return float("nan")
        x = np.asarray(h, dtype=float).ravel()[self.used]
        best = np.inf
        for inc in self.increasing:
            d = x - weighted_isotonic(x, self.w, inc, self.loss)
            cost = float(np.dot(self.w, np.abs(d) if self.loss == "l1" else d * d))
            best = min(best, cost)
        value = best / self.total
        return value if self.loss == "l1" else float(np.sqrt(value))


def best_monotone_gap(f: np.ndarray, w: np.ndarray, directions, loss: str = "l2") -> float:
    """:class:`MonotoneGap` of one curve (a convenience for tests and one-off checks)."""
    return MonotoneGap(w, directions, loss)(f)

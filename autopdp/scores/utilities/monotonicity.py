"""Monotonicity utility (AutoPDP paper, section 2.1, eq. 6).

``g`` is the isotonic regression of the PD (least squares, eq. 6), fitted with
``scipy.optimize.isotonic_regression``.  Direction: the better-fitting of
increasing and decreasing, or the direction the validator declares for the
feature; against a declared direction a PD going the wrong way scores high
(its best fit in that direction is a flat line far from it).

2D surfaces: every line of the surface along each axis is fitted in the
direction that best fits that axis as a whole (or the declared direction of
that axis's feature); the surface's score is the larger of the two axes' scores
and ``g`` is that axis's fit.

Features without an order (unordered categoricals) are "n/a".
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import isotonic_regression

from .base import UtilityScore, axis_positions, not_applicable, relative_to_range, standard_utility

__all__ = ["isotonic_fit", "score_monotonicity", "DIRECTIONS"]

UTILITY = "monotonicity"
DIRECTIONS = ("increasing", "decreasing", "none")


def isotonic_fit(f: np.ndarray, increasing: bool) -> np.ndarray:
    """Least-squares monotone fit of a curve given in grid order (eq. 6)."""
    return isotonic_regression(np.asarray(f, dtype=float), increasing=increasing).x


def _fit_axis(surface: np.ndarray, axis: int, direction: str | None) -> tuple[np.ndarray, str]:
    """Fit every line along ``axis``; pick the direction with the smaller squared error."""
    moved = np.moveaxis(surface, axis, -1)
    flat = moved.reshape(-1, moved.shape[-1])
    candidates = ["increasing", "decreasing"] if direction in (None, "none") else [direction]
    best = None
    for d in candidates:
        fit = np.stack([isotonic_fit(line, d == "increasing") for line in flat])
        sse = float(np.sum((fit - flat) ** 2))
        if best is None or sse < best[0] - 1e-15:
            best = (sse, fit, d)
    g = np.moveaxis(best[1].reshape(moved.shape), -1, axis)
    return g, best[2]


def score_monotonicity(result, *, target_index: int, weights: np.ndarray, directions=None, loss: str = "l2") -> UtilityScore:
    """Score how far a PD is from the best monotone curve.

    Parameters
    ----------
    result : PDResult
    target_index : int
        Which target of ``result`` to score.
    weights : ndarray of shape grid_shape
        Density weights w (eq. 5).
    directions : tuple of str or None
        Declared direction per feature (``increasing``/``decreasing``/``none``/None).
    loss : {"l2", "l1"}
    """
    target = result.targets[target_index]
    directions = tuple(directions) if directions is not None else (None,) * result.ndim
    for axis in range(result.ndim):
        if axis_positions(result, axis) is None:
            return not_applicable(
                UTILITY, f"{result.features[axis]!r} is an unordered categorical: monotonicity needs an order "
                "(declare the level order with an ordered pandas Categorical).", target,
            )
    f = np.asarray(result.average[target_index], dtype=float)
    best = None
    for axis in range(result.ndim):
        if f.shape[axis] < 2:
            continue
        g, chosen = _fit_axis(f, axis, directions[axis])
        value = standard_utility(f, g, weights, loss)
        if best is None or (np.isfinite(value) and value > best[0]):
            best = (value, g, chosen, axis)
    if best is None:
        return not_applicable(UTILITY, "the grid has a single point: there is no shape to test.", target)
    value, g, chosen, axis = best
    if not np.isfinite(value):
        return not_applicable(UTILITY, "no data near any grid point.", target)
    declared = directions[axis] not in (None, "none")
    return UtilityScore(
        utility=UTILITY, value=value, target=target, comparison=g,
        details={
            "direction": chosen, "declared": declared, "axis": result.features[axis],
            "relative": relative_to_range(value, f),
        },
    )

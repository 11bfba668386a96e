"""Monotonicity utility (AutoPDP paper, section 2.1, eq. 6).

``g`` is the isotonic regression of the PD (eq. 6) fitted with the weights and
loss the score is measured with (eq. 5): a weighted least-squares isotonic
regression (``scipy.optimize.isotonic_regression(weights=w)``) for ``loss="l2"``,
a weighted isotonic median regression for ``loss="l1"``
(:mod:`autopdp.scores.utilities.monotone_fit`), so ``g`` is the monotone curve
with the smallest score.  Direction: the one with the smaller weighted score of
increasing and decreasing, or the direction the validator declares for the
feature; against a declared direction a PD going the wrong way scores high
(its best fit in that direction is a flat line far from it).

2D surfaces: every line of the surface along each axis is fitted with its own
slice of the 2D density weights, all lines of an axis in one direction: the
direction with the smaller weighted loss over the whole surface (or the
declared direction of that axis's feature).  The lines' losses add up to the
surface's, so this ``g`` is the best surface monotone along that axis.  The
surface's score is the larger of the two axes' scores and ``g`` is that axis's
fit.

Features without an order (unordered categoricals) are "n/a".
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import isotonic_regression

from ...config import DIRECTIONS
from ...errors import InputError
from .base import LOSSES, UtilityScore, axis_positions, not_applicable, relative_to_range, standard_utility
from .monotone_fit import monotone_fit
from .where import against_trend

__all__ = ["isotonic_fit", "score_monotonicity", "DIRECTIONS"]

UTILITY = "monotonicity"


def isotonic_fit(f: np.ndarray, increasing: bool, weights: np.ndarray | None = None, loss: str = "l2") -> np.ndarray:
    """Best monotone fit of a curve given in grid order (eq. 6) under ``weights`` and ``loss``.

    Without weights: the plain least-squares isotonic regression.  See
    :func:`autopdp.scores.utilities.monotone_fit.monotone_fit`.
    """
    f = np.asarray(f, dtype=float)
    if weights is None and loss == "l2":
        return isotonic_regression(f, increasing=increasing).x
    return monotone_fit(f, weights, increasing, loss)


def _weighted_loss(diff: np.ndarray, w: np.ndarray, loss: str) -> float:
    ok = np.isfinite(diff) & (w > 0)
    d = np.where(ok, diff, 0.0)
    return float(np.sum(np.where(ok, w, 0.0) * (np.abs(d) if loss == "l1" else d * d)))


def _fit_axis(surface: np.ndarray, weights: np.ndarray, axis: int, direction: str | None,
              loss: str) -> tuple[np.ndarray, str]:
    """Fit every line along ``axis`` with its weights; pick the direction with the smaller weighted loss."""
    moved = np.moveaxis(surface, axis, -1)
    flat = moved.reshape(-1, moved.shape[-1])
    wflat = np.moveaxis(weights, axis, -1).reshape(flat.shape)
    candidates = ["increasing", "decreasing"] if direction in (None, "none") else [direction]
    best = None
    for d in candidates:
        fit = np.stack([monotone_fit(line, lw, d == "increasing", loss) for line, lw in zip(flat, wflat)])
        cost = _weighted_loss(flat - fit, wflat, loss)
        if best is None or cost < best[0] * (1 - 1e-12) - 1e-300:
            best = (cost, fit, d)
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
    if loss not in LOSSES:
        raise InputError(f"loss={loss!r} is not supported; use 'l2' or 'l1'.")
    target = result.targets[target_index]
    directions = tuple(directions) if directions is not None else (None,) * result.ndim
    for axis in range(result.ndim):
        if axis_positions(result, axis) is None:
            return not_applicable(
                UTILITY, f"{result.features[axis]!r} is an unordered categorical: monotonicity needs an order "
                "(declare the level order with an ordered pandas Categorical).", target,
            )
    f = np.asarray(result.average[target_index], dtype=float)
    w = np.asarray(weights, dtype=float).reshape(f.shape)
    best = None
    for axis in range(result.ndim):
        if f.shape[axis] < 2:
            continue
        g, chosen = _fit_axis(f, w, axis, directions[axis], loss)
        value = standard_utility(f, g, weights, loss)
        if best is None or (np.isfinite(value) and value > best[0]):
            best = (value, g, chosen, axis)
    if best is None:
        return not_applicable(UTILITY, "the grid has a single point: there is no shape to test.", target)
    value, g, chosen, axis = best
    if not np.isfinite(value):
        return not_applicable(UTILITY, "no data near any grid point.", target)
    declared = directions[axis] not in (None, "none")
    details = {"direction": chosen, "declared": declared, "axis": result.features[axis],
               "relative": relative_to_range(value, f)}
    where = against_trend(result, f, chosen == "increasing") if value > 0 else None
    if where is not None:
        details["where"] = where  # the largest move against the direction (1D)
    return UtilityScore(utility=UTILITY, value=value, target=target, comparison=g, details=details)

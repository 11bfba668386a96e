"""The standard utility of the AutoPDP paper (eq. 3-5) and the score record every utility returns.

Eq. 4 averages a loss between the PD ``f`` and a comparison curve ``g`` over the
k grid points, each weighted by ``w``, the share of data rows nearest that grid
point (eq. 5).  autopdp reports it on the scale of the model's output:

* ``loss="l2"``: ``sqrt(sum_i w_i (f_i - g_i)**2 / sum_i w_i)``, a density-weighted
  root-mean-square gap;
* ``loss="l1"``: ``sum_i w_i |f_i - g_i| / sum_i w_i``, a weighted mean gap.

Dividing by ``sum_i w_i`` instead of eq. 4's ``1/k`` makes scores of grids of
different sizes comparable (with weights that sum to one, eq. 4 is this value
divided by k), and the square root of the L2 form puts the score in the units
of the prediction (e.g. probability points), so "0.08" reads as "the curve
misses the PD by 0.08 on average where the data is".  Grid points with no data
nearby weigh nothing; grid points where ``g`` is undefined (NaN) are left out.
The score divided by the PD's range (max - min) is kept as ``relative``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...errors import InputError

__all__ = ["UtilityScore", "standard_utility", "gap_of_draws", "not_applicable", "axis_positions", "LOSSES"]

LOSSES = ("l2", "l1")


@dataclass(frozen=True, eq=False)
class UtilityScore:
    """One utility's verdict on one PDP.

    Attributes
    ----------
    utility : str
        Stable id (``monotonicity``, ``lipschitz``, ``similarity:<name>``, ...).
    value : float
        Higher = more interesting to a validator; NaN when not applicable.
    target : object
        The target (class or output) the value belongs to (the highest-scoring
        one when the PD has several).
    comparison : ndarray or None
        The comparison curve ``g`` on the PD's grid (shape ``grid_shape``), for
        drawing beside the PD.
    reason : str
        Why the score is not available ("" when it is).
    details : dict
        Utility-specific facts (direction chosen, bound used, relative size...).
    """

    utility: str
    value: float
    target: object = None
    comparison: np.ndarray | None = None
    reason: str = ""
    details: dict = field(default_factory=dict)

    @property
    def available(self) -> bool:
        return bool(np.isfinite(self.value))


def not_applicable(utility: str, reason: str, target=None) -> UtilityScore:
    """A score that could not be computed, with the reason a validator will read."""
    return UtilityScore(utility=utility, value=float("nan"), target=target, reason=reason)


def standard_utility(f: np.ndarray, g: np.ndarray, w: np.ndarray, loss: str = "l2") -> float:
    """Density-weighted gap between PD ``f`` and comparison ``g`` (see module docs).

    Returns NaN when no grid point has both data nearby and a defined ``g``.
    """
    if loss not in LOSSES:
        raise InputError(f"loss={loss!r} is not supported; use 'l2' or 'l1'.")
    diff = np.asarray(f, dtype=float).ravel() - np.asarray(g, dtype=float).ravel()
    value = float(gap_of_draws(diff, np.asarray(w, dtype=float).ravel(), loss))
    return value if np.isfinite(value) else float("nan")


def gap_of_draws(diff: np.ndarray, w: np.ndarray, loss: str) -> np.ndarray:
    """:func:`standard_utility` of many gaps at once: ``diff`` of shape ``(..., k)``, weights ``w`` ``(k,)``;
    NaN gaps and zero weights are left out."""
    diff = np.asarray(diff, dtype=float)
    ok = np.isfinite(diff) & (w > 0)
    ww = np.where(ok, w, 0.0)
    total = ww.sum(axis=-1)
    d = np.where(ok, diff, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        if loss == "l1":
            return np.sum(ww * np.abs(d), axis=-1) / total
        return np.sqrt(np.sum(ww * d * d, axis=-1) / total)


def axis_positions(result, axis: int) -> np.ndarray | None:
    """Numeric positions of the grid along ``axis``, or None when it has no order.

    Numeric features: their grid values.  Ordered categoricals: the levels'
    ranks 0, 1, 2, ... (equally spaced).  Unordered categoricals: None.
    """
    if result.kinds[axis] == "numeric":
        return np.asarray(result.grid[axis], dtype=float)
    if result.ordered[axis]:
        return np.arange(len(result.grid[axis]), dtype=float)
    return None


def best_over_targets(scores: list[UtilityScore]) -> UtilityScore:
    """The highest available score across targets (the first n/a one if none is)."""
    available = [s for s in scores if s.available]
    if not available:
        return scores[0]
    return max(available, key=lambda s: s.value)


def relative_to_range(value: float, f: np.ndarray) -> float | None:
    span = float(np.nanmax(f) - np.nanmin(f))
    if span <= 0 or not np.isfinite(value):
        return None
    return float(value / span)


def gap_score(utility: str, f: np.ndarray, g: np.ndarray, weights: np.ndarray, loss: str, target, **details) -> UtilityScore:
    """The standard utility between PD ``f`` and comparison ``g`` as a score (n/a without data)."""
    value = standard_utility(f, g, weights, loss)
    if not np.isfinite(value):
        return not_applicable(utility, "no data near any grid point.", target)
    return UtilityScore(utility=utility, value=value, target=target, comparison=g,
                        details={"relative": relative_to_range(value, f), "loss": loss, **details})

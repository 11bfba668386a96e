"""ICE variance utility: heterogeneity of the feature's effect across rows (AutoPDP paper, section 3.2, eq. 12).

What it measures (default, ``centering="mean"``)
    The spread of the *centred* ICE curves (c-ICE, Goldstein et al. 2015).
    Each row's ICE curve ``ice_r(x)`` is shifted by its own density-weighted
    mean over the grid, ``c_r(x) = ice_r(x) - sum_j w_j ice_r(x_j) / sum_j w_j``,
    and the score is the density-weighted root-mean variance of those centred
    curves over the grid::

        sqrt( sum_j w_j Var_r[c_r(x_j)] / sum_j w_j )

    in the units of the prediction.  Rows whose curves have the same *shape*
    (an additive model, or a feature the model does not use) score exactly 0,
    whatever the other features do to each row's level; rows whose curves move
    differently (the feature interacts with others) score high.

Departure from the paper
    Eq. 12 averages the variance of the *uncentred* ICE curves.  That variance
    is dominated by the spread of the rows' prediction levels, which the other
    features cause: an unused feature of a model whose predictions vary scores
    the standard deviation of the predictions.  It therefore does not measure
    heterogeneity of this feature's effect, and is kept only as an option
    (``centering="none"``; computed from the spread of every row, ``PDResult.std``).
    ``centering="first"`` anchors each curve at the first grid point instead of
    at its mean, as scikit-learn's ``centered=True`` does; the mean anchor is the
    default because it does not depend on which grid point is the anchor.

The centred variants need the ICE curves (``PDResult.individual``, the
``subsample`` rows kept for every 1D PD); without them the score is "n/a".
"""

from __future__ import annotations

import numpy as np

from .base import UtilityScore, not_applicable
from ...errors import InputError

__all__ = ["score_ice_variance", "centred_ice", "CENTERINGS"]

UTILITY = "ice_variance"
CENTERINGS = ("mean", "first", "none")


def _flat_weights(result, weights) -> np.ndarray:
    size = int(np.prod(result.grid_shape))
    if weights is None:
        return np.full(size, 1.0 / size)
    w = np.asarray(weights, dtype=float).ravel()
    if not np.isfinite(w).all() or w.sum() <= 0:
        return np.full(size, 1.0 / size)
    return w / w.sum()


def centred_ice(curves: np.ndarray, w: np.ndarray, centering: str) -> np.ndarray:
    """ICE curves ``(rows, grid points)`` shifted by their own weighted mean or first value."""
    curves = np.asarray(curves, dtype=float)
    if centering == "first":
        return curves - curves[:, :1]
    if centering == "mean":
        return curves - (curves @ w)[:, None]
    return curves


def ice_spread(curves: np.ndarray, w: np.ndarray, centering: str) -> float:
    """Weighted root-mean over grid points of the across-row variance of (centred) ICE curves."""
    c = centred_ice(curves, w, centering)
    var = np.var(c, axis=0)
    return float(np.sqrt(max(float(np.dot(w, var)), 0.0)))


def score_ice_variance(result, *, target_index: int, weights=None, centering: str = "mean") -> UtilityScore:
    """Score the heterogeneity of ICE curves (see module docs).

    Parameters
    ----------
    result : PDResult
    target_index : int
    weights : ndarray of shape grid_shape, optional
        Density weights w (eq. 5); equal weights when None.
    centering : {"mean", "first", "none"}
        How each ICE curve is centred before its spread is taken; "none" is
        the paper's eq. 12 (not a measure of heterogeneity, see module docs).
    """
    if centering not in CENTERINGS:
        raise InputError(f"centering must be one of {', '.join(CENTERINGS)}, got {centering!r}.")
    target = result.targets[target_index]
    w = _flat_weights(result, weights)
    if centering == "none":
        var = np.asarray(result.std[target_index], dtype=float).ravel() ** 2
        if not np.isfinite(var).all():
            return not_applicable(UTILITY, "the ICE spread (std) was not computed for this PD (std_rows=0).", target)
        value = float(np.sqrt(np.mean(var)))
        return UtilityScore(utility=UTILITY, value=value, target=target,
                            details={"centering": "none", "mean_variance": float(np.mean(var))})
    if result.individual is None:
        return not_applicable(
            UTILITY, "centred ICE curves were not kept for this PD (2D PDs and std_rows=0 keep none).", target,
        )
    curves = np.asarray(result.individual[target_index], dtype=float)
    curves = curves.reshape(curves.shape[0], -1)
    if curves.shape[0] < 2:
        return not_applicable(UTILITY, "fewer than two ICE curves: there is no spread.", target)
    value = ice_spread(curves, w, centering)
    return UtilityScore(utility=UTILITY, value=value, target=target,
                        details={"centering": centering, "ice_rows": int(curves.shape[0])})

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

Scale (``scale="link"``, the default)
    Heterogeneity depends on the scale: an additive logistic model is additive
    on the log-odds, but its probability curves differ in shape between rows
    (the sigmoid is steeper near 0.5).  The curves are therefore measured on the
    model's link scale where it has one: the log-odds of a probability (of a
    binary classifier, or one class against the rest), the centred
    log-probability of a multiclass model whose every class is explained (the
    softmax's linear scale), the decision function or regression prediction as
    they are.  Probabilities are never compared as they are:

    - a model whose probabilities are the sigmoid or softmax of its
      ``decision_function`` gives those link values from its margin
      (:mod:`autopdp.pd.margin`, ``link_curves``), exact where a probability
      rounds to 0 or 1;
    - otherwise the probabilities are clipped to ``[EPS, 1 - EPS]`` first, with
      ``EPS = 2**-53`` (about 1.1e-16, the gap between 1 and the largest float64
      below it: the finest resolution a probability next to 1 has), so a
      probability of exactly 0 or 1 is read as a log-odds of about -36.7 or
      +36.7.  The scale's name says so and ``clipped_share`` gives the share of
      the curves' values that were clipped.  Clipping keeps the scale finite; it
      does not recover the margin a saturated probability lost, so a model with
      many such values may still show a spread its margin would not.

    ``scale="response"`` keeps the prediction's own scale.

Rows and weights
    Every kept ICE row counts with its sample weight (when given); the score is
    the square root of the rows' weighted mean squared departure ``d_r`` from
    the average centred curve, and its standard error (the rows' weighted
    spread of ``d_r``) is kept for the noise test (a one-sided z-test of "every
    centred curve is the same": ``d_r = 0`` for every row).

The centred variants need the ICE curves (``PDResult.individual``, the
``subsample`` rows kept for every 1D PD); without them the score is "n/a".
"""

from __future__ import annotations

import numpy as np

from .base import UtilityScore, not_applicable
from ...pd.scales import CLIP_NOTE, EPS, _PROBABILITY_RESPONSES, clipped_share, link_scale  # noqa: F401
from ...errors import InputError

__all__ = ["score_ice_variance", "centred_ice", "link_scale", "CENTERINGS", "SCALES", "EPS"]

UTILITY = "ice_variance"
CENTERINGS = ("mean", "first", "none")
SCALES = ("link", "response")
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


def spread_parts(curves: np.ndarray, w: np.ndarray, centering: str, row_weights=None) -> tuple[float, float, float]:
    """(mean, standard error, effective rows) of the rows' weighted squared departures ``d_r`` from the
    average (centred) curve: ``d_r = sum_j w_j (c_rj - cbar_j)**2``; the score is ``sqrt(mean)``."""
    c = centred_ice(curves, w, centering)
    m = c.shape[0]
    omega = np.ones(m) if row_weights is None else np.asarray(row_weights, dtype=float)
    omega = omega / omega.sum()
    cbar = omega @ c
    d = ((c - cbar) ** 2) @ w
    mean = float(omega @ d)
    n_eff = 1.0 / float(np.sum(omega ** 2))
    se = float(np.sqrt(np.sum(omega ** 2 * (d - mean) ** 2) * n_eff / max(n_eff - 1.0, 1.0)))
    return max(mean, 0.0), se, n_eff


def ice_spread(curves: np.ndarray, w: np.ndarray, centering: str, row_weights=None) -> float:
    """Weighted root-mean over grid points of the across-row variance of (centred) ICE curves."""
    return float(np.sqrt(spread_parts(curves, w, centering, row_weights)[0]))


def score_ice_variance(result, *, target_index: int, weights=None, centering: str = "mean", scale: str = "link",
                       row_weights=None, link_curves=None, link_name: str | None = None,
                       margin_note: str = "") -> UtilityScore:
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
    scale : {"link", "response"}
        The scale the curves are compared on (see module docs).
    row_weights : ndarray, optional
        Sample weights of the kept ICE rows.
    link_curves : ndarray, optional
        The ICE curves already on the link scale, shaped like ``result.individual`` (the model's margin,
        :mod:`autopdp.pd.margin`), used with ``scale="link"`` instead of the probabilities' log-odds;
        ``link_name`` names their scale.
    margin_note : str, optional
        Why the model's margin was not used (kept in the details when the probabilities were clipped).
    """
    if centering not in CENTERINGS:
        raise InputError(f"centering must be one of {', '.join(CENTERINGS)}, got {centering!r}.")
    if scale not in SCALES:
        raise InputError(f"scale must be one of {', '.join(SCALES)}, got {scale!r}.")
    target = result.targets[target_index]
    w = _flat_weights(result, weights)
    if centering == "none":
        var = np.asarray(result.std[target_index], dtype=float).ravel() ** 2
        if not np.isfinite(var).all():
            return not_applicable(UTILITY, "the ICE spread (std) was not computed for this PD (std_rows=0).", target)
        value = float(np.sqrt(np.mean(var)))
        return UtilityScore(utility=UTILITY, value=value, target=target,
                            details={"centering": "none", "mean_variance": float(np.mean(var)),
                                     "scale": "prediction"})
    if result.ndim != 1:
        return not_applicable(UTILITY, "ICE variance is scored for 1D PDs (2D PDs keep ICE surfaces of a few rows "
                                       "for their noise tests only).", target)
    if result.individual is None:
        return not_applicable(UTILITY, "centred ICE curves were not kept for this PD (std_rows=0 keeps none).", target)
    all_curves = np.asarray(result.individual, dtype=float)
    if all_curves.shape[1] < 2:
        return not_applicable(UTILITY, "fewer than two ICE curves: there is no spread.", target)
    scale_name, extra = "prediction", {}
    if scale == "link" and link_curves is not None:
        all_curves, scale_name = np.asarray(link_curves, dtype=float), str(link_name)
    elif scale == "link":
        if result.response in _PROBABILITY_RESPONSES:
            share = clipped_share(all_curves[target_index])
            if share > 0:
                extra = {"clipped_share": share, **({"margin_unavailable": margin_note} if margin_note else {})}
        all_classes = bool(all_curves.shape[0] >= 3 and np.allclose(all_curves.sum(axis=0), 1.0, atol=1e-6))
        all_curves, scale_name = link_scale(all_curves, result.response, all_classes=all_classes)
    curves = all_curves[target_index].reshape(all_curves.shape[1], -1)
    if not np.isfinite(curves).all():
        return not_applicable(UTILITY, "some ICE values are not finite on the link scale.", target)
    mean, se, n_eff = spread_parts(curves, w, centering, row_weights)
    return UtilityScore(utility=UTILITY, value=float(np.sqrt(mean)), target=target,
                        details={"centering": centering, "ice_rows": int(curves.shape[0]), "scale": scale_name,
                                 "mean_square": mean, "mean_square_se": se, "effective_rows": n_eff, **extra})

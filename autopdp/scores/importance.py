"""PD-based importance and interaction (Greenwell, Boehmke and McCarthy, 2018), weighted by the data.

Importance of a feature from its 1D PD ``f`` over its k grid values, with
``w_i`` the share of rows nearest grid value i (eq. 5 of the AutoPDP paper):

* default (``weighted=True``): the density-weighted standard deviation
  ``sqrt(sum_i w_i (f_i - fbar)**2 / sum_i w_i)`` with ``fbar`` the weighted
  mean: the standard deviation of the PD over the data's own distribution of
  the feature (the spread of the feature's main effect across the rows).  The
  same for categorical features, weighted by each level's rows.
* ``weighted=False``: Greenwell's statistic, the unweighted sample standard
  deviation over the grid (numeric) or ``(max f - min f) / 4`` (categorical).

Why weighted by default: with equal weights a grid point that holds almost no
rows counts as much as one that holds half of them, so a full-range grid over
a feature whose values are nearly all 0 (Adult capital_loss) made it the most
important feature from points holding 0-3 rows each.  Weighted, a point
counts as much as the rows it stands for.

For a linear model ``b * x`` the weighted importance is ``|b|`` times the
weighted standard deviation of the grid values, which tends to ``|b| sd(x)``.
A flat PD (importance 0) means the model's average prediction does not move
with the feature.

Interaction of a pair from its 2D PD ``f(a, b)``: for each value b_j, the
importance of the first feature along the line ``f(., b_j)``; the flatness
of those conditional importances across b_j is ``i(x1 | x2)``; likewise
``i(x2 | x1)``; the interaction is their mean.  Weighted by default with each
axis's marginal share of rows.  An additive surface ``g(a) + h(b)`` has
interaction 0.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError

__all__ = ["flatness", "pd_importance", "pd_interaction", "marginal_weights"]


def flatness(values: np.ndarray, kind: str, axis: int = -1, weights: np.ndarray | None = None) -> np.ndarray:
    """Flatness statistic along ``axis``.

    With ``weights`` (one per position along ``axis``): the weighted standard
    deviation.  Without: Greenwell's std (ddof=1) or range / 4 for categoricals.
    """
    v = np.asarray(values, dtype=float)
    ax = axis if axis >= 0 else v.ndim + axis
    if v.shape[ax] < 2:
        return np.zeros(np.delete(np.array(v.shape), ax))
    w = _normalised(weights, v.shape[ax])
    if w is not None:
        shape = [1] * v.ndim
        shape[ax] = w.size
        w = w.reshape(shape)
        m = np.sum(v * w, axis=ax, keepdims=True)
        return np.sqrt(np.sum(w * (v - m) ** 2, axis=ax))
    if kind == "categorical":
        return (np.max(v, axis=ax) - np.min(v, axis=ax)) / 4.0
    return np.std(v, axis=ax, ddof=1)


def marginal_weights(result) -> list[np.ndarray | None]:
    """Per axis: the share of rows nearest each grid value (None when no row is counted)."""
    counts = np.asarray(result.counts, dtype=float)
    out = []
    for axis in range(result.ndim):
        other = tuple(a for a in range(result.ndim) if a != axis)
        m = counts.sum(axis=other) if other else counts
        out.append(m / m.sum() if m.sum() > 0 else None)
    return out


def pd_importance(result, weighted: bool = True) -> np.ndarray:
    """Importance of a 1D PD, one value per target (shape ``(n_targets,)``)."""
    if result.ndim != 1:
        raise InputError("pd_importance needs a 1D PDResult.")
    w = marginal_weights(result)[0] if weighted else None
    return flatness(result.average, result.kinds[0], axis=-1, weights=w)


def pd_interaction(result, weighted: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Interaction of a 2D PD per target.

    Returns
    -------
    interaction, first_given_second, second_given_first : ndarrays of shape (n_targets,)
    """
    if result.ndim != 2:
        raise InputError("pd_interaction needs a 2D PDResult.")
    return interaction_statistic(np.asarray(result.average, dtype=float), result.kinds,
                                 marginal_weights(result) if weighted else (None, None))


def _normalised(weights, size: int) -> np.ndarray | None:
    """``weights / sum`` when :func:`flatness` would use them along an axis of ``size`` positions (>= 2), else None."""
    if weights is None or size < 2:
        return None
    w = np.asarray(weights, dtype=float).ravel()
    if w.size != size or not np.isfinite(w).all() or not w.sum() > 0:
        return None
    return w / w.sum()


def interaction_statistic(avg: np.ndarray, kinds, weights) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Interaction of surfaces ``avg`` of shape ``(..., k1, k2)`` with per-axis weights (or None)."""
    k1, k2 = kinds
    w1, w2 = weights
    avg = np.asarray(avg, dtype=float)
    a1, a2 = _normalised(w1, avg.shape[-2]), _normalised(w2, avg.shape[-1])
    if a1 is not None and a2 is not None:
        # both axes weighted (the audit's case): the same weighted sds as :func:`flatness`, as matrix products
        # (the tests draw thousands of surfaces at once)
        m1 = a1 @ avg  # (..., k2): each column's weighted mean over feature 1's grid
        cond_1 = np.sqrt(a1 @ (avg - m1[..., None, :]) ** 2)
        cond_2 = np.sqrt(((avg - (avg @ a2)[..., None]) ** 2) @ a2)
        first_given_second = np.sqrt(((cond_1 - (cond_1 @ a2)[..., None]) ** 2) @ a2)
        second_given_first = np.sqrt(((cond_2 - (cond_2 @ a1)[..., None]) ** 2) @ a1)
        return _beyond_rounding(avg, first_given_second, second_given_first)
    # importance of feature 1 along axis -2 of the grid, for each value of feature 2 ...
    cond_1 = flatness(avg, k1, axis=-2, weights=w1)  # (..., k2)
    first_given_second = flatness(cond_1, k2, axis=-1, weights=w2)
    cond_2 = flatness(avg, k2, axis=-1, weights=w2)  # (..., k1)
    second_given_first = flatness(cond_2, k1, axis=-1, weights=w1)
    return _beyond_rounding(avg, first_given_second, second_given_first)


#: An interaction at most this share of its surface's own range is floating-point rounding, reported as none.
ROUNDING_SHARE = 1e-9


def _beyond_rounding(avg, first_given_second, second_given_first) -> tuple:
    """``(interaction, first_given_second, second_given_first)``, each 0 where it is within floating point's
    rounding of the surface's range (an additive surface's conditional spreads agree only to the last bits: the
    same surface summed in another order, on a cluster's row partitions, would rank pairs on that noise)."""
    spread = np.max(avg, axis=(-2, -1)) - np.min(avg, axis=(-2, -1))
    a, b = (np.where(v <= ROUNDING_SHARE * spread, 0.0, v) for v in (first_given_second, second_given_first))
    return (a + b) / 2.0, a, b

"""PD-based importance and interaction (Greenwell, Boehmke and McCarthy, 2018).

Importance of a feature from its 1D PD ``f`` over its k grid values:

* numeric: the sample standard deviation ``sqrt(sum (f_i - mean f)**2 / (k - 1))``;
* categorical: the range rule ``(max f - min f) / 4``.

A flat PD (importance 0) means the model's average prediction does not move
with the feature.  For a linear model ``b * x`` on a feature uniform over a
range R with an evenly spread grid the importance tends to ``|b| R / sqrt(12)``.

Interaction of a pair from its 2D PD ``f(a, b)``: for each value b_j, the
importance of the first feature along the line ``f(., b_j)``; the flatness
statistic of the conditioning feature (std or range/4) of those conditional
importances is ``i(x1 | x2)``; likewise ``i(x2 | x1)``; the interaction is their
mean.  An additive surface ``g(a) + h(b)`` has interaction 0.
"""

from __future__ import annotations

import numpy as np

__all__ = ["flatness", "pd_importance", "pd_interaction"]


def flatness(values: np.ndarray, kind: str, axis: int = -1) -> np.ndarray:
    """Greenwell's flatness statistic along ``axis``: std (ddof=1) or range / 4."""
    v = np.asarray(values, dtype=float)
    if v.shape[axis] < 2:
        return np.zeros(np.delete(np.array(v.shape), axis if axis >= 0 else v.ndim + axis))
    if kind == "categorical":
        return (np.max(v, axis=axis) - np.min(v, axis=axis)) / 4.0
    return np.std(v, axis=axis, ddof=1)


def pd_importance(result) -> np.ndarray:
    """Importance of a 1D PD, one value per target (shape ``(n_targets,)``)."""
    if result.ndim != 1:
        raise ValueError("pd_importance needs a 1D PDResult.")
    return flatness(result.average, result.kinds[0], axis=-1)


def pd_interaction(result) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Interaction of a 2D PD per target.

    Returns
    -------
    interaction, first_given_second, second_given_first : ndarrays of shape (n_targets,)
    """
    if result.ndim != 2:
        raise ValueError("pd_interaction needs a 2D PDResult.")
    avg = np.asarray(result.average, dtype=float)  # (T, k1, k2)
    k1, k2 = result.kinds
    # importance of feature 1 along axis 1 of the grid, for each value of feature 2 ...
    cond_1 = flatness(avg, k1, axis=1)  # (T, k2)
    first_given_second = flatness(cond_1, k2, axis=-1)
    cond_2 = flatness(avg, k2, axis=2)  # (T, k1)
    second_given_first = flatness(cond_2, k1, axis=-1)
    return (first_given_second + second_given_first) / 2.0, first_given_second, second_given_first

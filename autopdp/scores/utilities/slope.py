"""Slope utility (AutoPDP paper, section 3.1, eq. 11).

The largest absolute slope of the PD between adjacent grid points, with the
feature's grid range normalised to [0, 1]: a value of 0.3 means the steepest
stretch of the curve, if continued over the whole range, would move the
prediction by 0.3.  Not density-weighted (eq. 11 is a supremum).  2D surfaces:
the largest slope along either axis.  Ordered categoricals use equally spaced
level ranks; unordered ones are "n/a".
"""

from __future__ import annotations

import numpy as np

from .base import UtilityScore, axis_positions, not_applicable

__all__ = ["score_slope"]

UTILITY = "slope"


def score_slope(result, *, target_index: int) -> UtilityScore:
    target = result.targets[target_index]
    f = np.asarray(result.average[target_index], dtype=float)
    best, where = 0.0, None
    usable = False
    for axis in range(result.ndim):
        x = axis_positions(result, axis)
        if x is None:
            return not_applicable(
                UTILITY, f"{result.features[axis]!r} is an unordered categorical: a slope needs an order.", target
            )
        if x.size < 2 or x[-1] == x[0]:
            continue
        usable = True
        u = (x - x[0]) / (x[-1] - x[0])
        du = np.diff(u)
        shape = [1] * f.ndim
        shape[axis] = du.size
        with np.errstate(divide="ignore", invalid="ignore"):
            slopes = np.abs(np.diff(f, axis=axis)) / du.reshape(shape)
        slopes = np.where(np.isfinite(slopes), slopes, 0.0)  # grid points closer than float precision
        m = float(np.max(slopes))
        if m >= best:
            idx = np.unravel_index(int(np.argmax(slopes)), slopes.shape)
            best, where = m, (result.features[axis], int(idx[axis]))
    if not usable:
        return not_applicable(UTILITY, "the grid has a single point: there is no slope.", target)
    details = {}
    if where is not None:
        axis_name, i = where
        ax = result.features.index(axis_name)
        details = {"axis": axis_name, "between": [_plain(result.grid[ax][i]), _plain(result.grid[ax][i + 1])]}
    return UtilityScore(utility=UTILITY, value=best, target=target, details=details)


def _plain(v):
    return v.item() if isinstance(v, np.generic) else v

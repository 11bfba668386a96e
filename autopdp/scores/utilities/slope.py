"""Slope utility (AutoPDP paper, section 3.1, eq. 11).

The largest absolute slope of the PD between adjacent grid points, with the
feature's grid range normalised to [0, 1]: a value of 0.3 means the steepest
stretch of the curve, if continued over the whole range, would move the
prediction by 0.3.  Not density-weighted (eq. 11 is a supremum).  2D surfaces:
the largest slope along either axis.  Ordered categoricals use equally spaced
level ranks; unordered ones are "n/a".

The value (the ranking, the gate's ``max_slope`` and the noise test read it) is
a slope per full range, which overstates how much the prediction moves: a
steep stretch between two close grid values may move it little.  So the
details say what the steepest stretch does in the feature's units:

``between``
    The grid values ``[a, b]`` of the steepest interval (the whole grid when the
    PD is linear).
``change``
    The signed change of the PD across ``between`` (``f(b) - f(a)``), on the
    prediction scale: what materiality is judged on.
``per_unit``
    ``change / (b - a)``: the slope in the feature's units (per level for an
    ordered categorical).
``share_of_range``
    ``(b - a)`` as a share of the grid's range: ``value * share_of_range`` is
    ``abs(change)``.
``linear``
    True when every interval's slope equals the PD's average slope (to 1e-6 of
    the PD's range, or float precision): a straight line has no "steepest"
    interval, and ``between`` is then the whole grid.
``pd_range``
    ``max - min`` of the PD over the grid.
"""

from __future__ import annotations

import numpy as np

from ...utils.jsonable import json_scalar
from .base import UtilityScore, axis_positions, not_applicable
from .where import stretch

__all__ = ["score_slope"]

UTILITY = "slope"

#: a PD whose points all lie within this share of its range (or float precision) of a straight line is linear
LINEAR_TOL = 1e-6


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
            best, where = m, (axis, tuple(int(i) for i in idx))
    if not usable:
        return not_applicable(UTILITY, "the grid has a single point: there is no slope.", target)
    details = {}
    if where is not None:
        details = _interval_details(result, f, *where)
    return UtilityScore(utility=UTILITY, value=best, target=target, details=details)


def _interval_details(result, f: np.ndarray, ax: int, idx: tuple) -> dict:
    """What the steepest interval (at index ``idx`` of the slopes along axis ``ax``) does, in the feature's
    units and on the prediction scale (see the module docs)."""
    x = axis_positions(result, ax)
    span = float(x[-1] - x[0])
    finite = f[np.isfinite(f)]
    pd_range = float(finite.max() - finite.min()) if finite.size else float("nan")
    linear = False
    if result.ndim == 1 and x.size >= 3 and np.isfinite(f).all():
        line = f[0] + (f[-1] - f[0]) * (x - x[0]) / span
        scale = max(pd_range, float(np.max(np.abs(f))) * 1e-12, np.finfo(float).tiny)
        linear = bool(np.max(np.abs(f - line)) <= LINEAR_TOL * scale)
    a_idx, b_idx = list(idx), list(idx)
    if linear:
        a_idx[ax], b_idx[ax] = 0, x.size - 1
    else:
        b_idx[ax] = idx[ax] + 1
    lo, hi = a_idx[ax], b_idx[ax]
    change = float(f[tuple(b_idx)] - f[tuple(a_idx)])
    width = float(x[hi] - x[lo])
    grid = result.grid[ax]
    out = {"axis": result.features[ax], "between": [json_scalar(grid[lo]), json_scalar(grid[hi])], "change": change,
           "per_unit": change / width if width else float("nan"),
           "share_of_range": width / span if span else float("nan"), "linear": linear, "pd_range": pd_range}
    if result.kinds[ax] != "numeric":
        out["unit"] = "level"
    if result.ndim == 2:
        other = 1 - ax
        out["at"] = {result.features[other]: json_scalar(result.grid[other][idx[other]])}
    else:
        out["where"] = stretch(result, f, lo, hi)
    return out

"""The minimum-effect nulls of the 1D and 2D noise tests: the least favourable curve each test draws around
(:func:`at_threshold`), the null statistics of monotonicity, the Lipschitz bound, slope and flatness, and the
interaction statistic with its additive fit.  Used by :mod:`autopdp.findings.evidence`, the stage (whose
:func:`~autopdp.findings.evidence.assess` the learner-level tests of :mod:`autopdp.findings.robustness` also run)."""

from __future__ import annotations

import numpy as np

from ..scores.importance import flatness, interaction_statistic
from .significance import NoiseModel
from ..scores.utilities.base import axis_positions, gap_of_draws
from ..scores.utilities.lipschitz import fast_lipschitz_fit_1d
from ..scores.utilities.monotone_fit import MonotoneGap

__all__ = ["at_threshold"]


def at_threshold(curve, fit, value: float, threshold: float, statistic=None, batch=None) -> np.ndarray:
    """The least favourable curve of the minimum-effect null "the effect is at most ``threshold``": the observed
    curve's departure from ``fit`` (its null fit: the best monotone curve, the closest bounded curve, a flat
    line, the additive part) shrunk until the statistic equals the threshold.  A statistic homogeneous in that
    departure (a weighted sd, a steepest slope, a gap) is scaled by ``threshold / value``; one that is not
    (``statistic`` given: Greenwell's interaction, which mixes the departure with the main effects) is solved
    for by bisection on the shrink factor (``batch``: the statistic of a stack of curves, to take the same
    halvings several at a time).  With ``threshold`` 0 (materiality 0) it is ``fit`` itself: the plain noise
    test."""
    curve = np.asarray(curve, dtype=float)
    fit = np.asarray(fit, dtype=float)
    if not (np.isfinite(value) and value > 0 and np.isfinite(threshold) and threshold > 0):
        return fit
    if value <= threshold:
        return curve
    if statistic is None:
        return fit + (curve - fit) * (float(threshold) / float(value))
    if not statistic(fit) < threshold:
        return fit
    lo, hi = 0.0, 1.0  # statistic(fit) < threshold < statistic(curve) = value
    if batch is None:
        for _ in range(40):
            mid = 0.5 * (lo + hi)
            if statistic(fit + (curve - fit) * mid) > threshold:
                hi = mid
            else:
                lo = mid
        return fit + (curve - fit) * lo
    # the same 40 halvings, 5 at a time: 31 interior points of each bracket in one call of the batched statistic
    # (for a statistic increasing in the factor, the same dyadic factor as the one-at-a-time bisection)
    steps = np.arange(1, 32) / 32.0
    for _ in range(8):
        mids = lo + (hi - lo) * steps
        above = np.asarray(batch(fit[None] + (curve - fit)[None] * mids.reshape((-1,) + (1,) * curve.ndim))) \
            > threshold
        first = int(np.argmax(above)) if above.any() else mids.size
        lo, hi = (lo if first == 0 else float(mids[first - 1])), (hi if first == mids.size else float(mids[first]))
    return fit + (curve - fit) * lo


def _draw_monotonicity(score, noise: NoiseModel, w, loss, declared, rng, centre=None):
    """Each draw refitted as the score is: weighted by ``w`` under ``loss``, the best of both directions
    (or the declared one) by the weighted score itself (:class:`~autopdp.scores.utilities.monotone_fit.MonotoneGap`)."""
    g = np.asarray(score.comparison if centre is None else centre, dtype=float).ravel()
    dirs = [score.details.get("direction")] if declared else ["increasing", "decreasing"]
    gap = MonotoneGap(w, dirs, loss)

    def draw(n):
        e = noise.draw(n, rng).reshape(n, -1)
        return np.array([gap(g + e[b]) for b in range(n)])
    return draw


def _draw_lipschitz(score, noise: NoiseModel, result, w, loss, rng, centre=None):
    g = np.asarray(score.comparison if centre is None else centre, dtype=float).ravel()
    x = axis_positions(result, 0)
    bound = float(score.details["bound"][0])

    def draw(n):
        e = noise.draw(n, rng).reshape(n, -1)
        out = np.empty(n)
        for b in range(n):
            h = g + e[b]
            out[b] = gap_of_draws((h - fast_lipschitz_fit_1d(h, x, bound, w, loss))[None], w, loss)[0]
        return out
    return draw


def _draw_slope(noise: NoiseModel, result, rng, centre=None):
    x = axis_positions(result, 0)
    if x is None or x.size < 2 or x[-1] == x[0]:
        return None
    du = np.diff((x - x[0]) / (x[-1] - x[0]))
    base = 0.0 if centre is None else np.asarray(centre, dtype=float).ravel()

    def draw(n):
        e = base + noise.draw(n, rng).reshape(n, -1)
        with np.errstate(divide="ignore", invalid="ignore"):
            s = np.abs(np.diff(e, axis=-1)) / du
        return np.max(np.where(np.isfinite(s), s, 0.0), axis=-1)
    return draw


def _draw_flatness(noise: NoiseModel, kind, weights, rng, centre=None):
    base = 0.0 if centre is None else np.asarray(centre, dtype=float).ravel()

    def draw(n):
        return flatness(base + noise.draw(n, rng).reshape(n, -1), kind, axis=-1, weights=weights)
    return draw


def _interaction_stat(avg: np.ndarray, kinds, weights) -> np.ndarray:
    """The interaction of surfaces ``(..., k1, k2)`` (the statistic of :mod:`autopdp.scores.importance`)."""
    return interaction_statistic(avg, kinds, weights)[0]


def _additive_fit(f2: np.ndarray, w1, w2) -> np.ndarray:
    """The additive part of a surface: weighted row means + column means - grand mean."""
    a = np.full(f2.shape[0], 1.0 / f2.shape[0]) if w1 is None else np.asarray(w1, dtype=float)
    b = np.full(f2.shape[1], 1.0 / f2.shape[1]) if w2 is None else np.asarray(w2, dtype=float)
    rows = f2 @ b
    cols = a @ f2
    return rows[:, None] + cols[None, :] - a @ f2 @ b


def _weighted_sd(values: np.ndarray, w: np.ndarray) -> np.ndarray:
    w = w / w.sum()
    m = np.sum(values * w, axis=-1, keepdims=True)
    return np.sqrt(np.sum(w * (values - m) ** 2, axis=-1))

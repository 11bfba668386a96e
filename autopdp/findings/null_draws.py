"""The minimum-effect nulls of the 1D and 2D noise tests: the least favourable curve each test draws around
(:func:`at_threshold`), the null statistics of monotonicity, the Lipschitz bound, slope and flatness, and the
interaction statistic with its additive fit.  Used by :mod:`autopdp.findings.evidence`, the stage (whose
:func:`~autopdp.findings.evidence.assess` the learner-level tests of :mod:`autopdp.findings.robustness` also run)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..scores.importance import flatness, interaction_statistic
from .significance import NoiseModel
from ..scores.utilities.base import axis_positions, gap_of_draws
from ..scores.utilities.lipschitz import fast_lipschitz_fit_1d
from ..scores.utilities.monotone_fit import MonotoneGap

__all__ = ["at_threshold", "noise_and_threshold", "minimum_effect", "NullTest"]


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


def noise_and_threshold(noise: NoiseModel, n: int, rng, thr) -> tuple[np.ndarray, np.ndarray]:
    """``n`` draws of the PD's noise (flattened, ``(n, cells)``) and of the materiality threshold's own error on
    the statistic's scale (``thr`` x its relative error, drawn with the same rows: :meth:`NoiseModel.draw_pair`)."""
    e, rel = noise.draw_pair(n, rng)
    ok = thr is not None and np.isfinite(thr) and thr > 0
    return e.reshape(n, -1), (float(thr) * rel if ok else np.zeros(n))


@dataclass(frozen=True)
class NullTest:
    """A minimum-effect test's observed statistic, its null draws and how a null quantile reads on the
    criterion's scale (:func:`minimum_effect`)."""

    observed: float
    draw: Callable
    level_to: Callable | None
    studentized: bool


#: draws per block of a studentized null (its multipliers are draws x rows)
_BLOCK = 2048


def minimum_effect(stat, centre, value: float, thr: float, noise: NoiseModel, rng) -> NullTest:
    """The null of "the statistic is at most the threshold", as a wild bootstrap-t of the rows.

    ``stat``: the statistic of a stack of flattened curves ``(n, cells) -> (n,)``; ``centre``: the least
    favourable curve (:func:`at_threshold`: its statistic is ``thr``).  The tested quantity is the statistic less
    the threshold the audit measured (materiality x the prediction sd of the same rows), linearised per row as
    ``a_i = gradient . d_i - thr r_i`` (``d_i`` the row's departure, ``r_i`` its share of the threshold's relative
    error).  Observed: ``(value - thr) / se``, ``se = sqrt(sum a_i^2)``; each null draw: the statistic of the
    centre plus a Mammen wild-bootstrap draw of the rows, less the threshold moved by the same draw, over that
    draw's own standard error (:meth:`NoiseModel.draw_studentized`).  Studentizing carries the correlation between
    a skewed mean and its estimated spread that a normal draw misses (a threshold read off heavy-tailed
    predictions is small exactly when its estimated error is small), and the joint draw carries the threshold's
    own sampling error; each draw's threshold also gets back the sample sd's expected shortfall
    (:attr:`NoiseModel.threshold_bias`: a square root of a mean is low on average).  With no threshold (materiality 0: the statistic's null is its boundary, 0, where the
    gradient vanishes) it is the plain Monte-Carlo test: the statistic of the fit plus normal draws."""
    c = np.asarray(centre, dtype=float).ravel()
    if thr is not None and np.isfinite(thr) and thr > 0:
        grad = _gradient(stat, c, noise)
        loading = 0.0 if noise.spread is None else noise.spread
        direction = noise.factor @ grad - float(thr) * loading
        se = float(np.linalg.norm(direction))
        bias = float(noise.threshold_bias)  # the sample sd's expected shortfall, added back to each draw's threshold
        if np.isfinite(se) and se > 0:
            def draw(n):
                out = []
                for m in [_BLOCK] * (n // _BLOCK) + ([n % _BLOCK] if n % _BLOCK else []):
                    e, rel, sd = noise.draw_studentized(m, rng, direction)
                    out.append((stat(c[None] + e.reshape(m, -1)) - float(thr) * (1.0 + rel - bias)) / sd)
                return np.concatenate(out)
            return NullTest((float(value) - float(thr)) / se, draw, lambda q: float(thr) + q * se, True)

    def plain(n):
        e, moved = noise_and_threshold(noise, n, rng, thr)
        return stat(c[None] + e) - moved
    return NullTest(float(value), plain, None, False)


def _gradient(stat, c: np.ndarray, noise: NoiseModel) -> np.ndarray:
    """The statistic's gradient at ``c`` by central differences, each cell's step a thousandth of its noise sd."""
    h = 1e-3 * np.asarray(noise.sd, dtype=float).ravel()
    idx = np.flatnonzero(np.isfinite(h) & (h > 0))
    g = np.zeros(c.size)
    if not idx.size:
        return g
    steps = np.zeros((2 * idx.size, c.size))
    steps[np.arange(idx.size), idx] = h[idx]
    steps[idx.size + np.arange(idx.size), idx] = -h[idx]
    values = np.asarray(stat(c[None] + steps), dtype=float)
    g[idx] = (values[:idx.size] - values[idx.size:]) / (2.0 * h[idx])
    return np.where(np.isfinite(g), g, 0.0)


def stat_monotonicity(w, loss, directions):
    """The gap to the best monotone curve (of ``directions``), refitted per curve as the score is."""
    gap = MonotoneGap(w, list(directions), loss)
    return lambda curves: np.array([gap(h) for h in curves])


def stat_lipschitz(result, w, loss, bound: float):
    x = axis_positions(result, 0)
    return lambda curves: np.array([
        gap_of_draws((h - fast_lipschitz_fit_1d(h, x, bound, w, loss))[None], w, loss)[0] for h in curves])


def stat_slope(result):
    """The steepest slope per grid range, or None when the grid has no range."""
    x = axis_positions(result, 0)
    if x is None or x.size < 2 or x[-1] == x[0]:
        return None
    du = np.diff((x - x[0]) / (x[-1] - x[0]))

    def steepest(curves):
        with np.errstate(divide="ignore", invalid="ignore"):
            s = np.abs(np.diff(curves, axis=-1)) / du
        return np.max(np.where(np.isfinite(s), s, 0.0), axis=-1)
    return steepest


def stat_flatness(kind, weights):
    return lambda curves: flatness(curves, kind, axis=-1, weights=weights)


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

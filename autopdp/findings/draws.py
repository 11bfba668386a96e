"""What the 1D and 2D assessments share: the Monte-Carlo draws' budget, the tests still open, the refits' share of
a PD's noise, and the materiality threshold on a link scale."""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..pd.kept import kept_here
from ..scores.spread import kept_spread
from ..scores.utilities.ice_variance import link_scale
from .significance import NoiseModel, SequentialTest

__all__ = ["LIPSCHITZ_MAX_DRAWS"]


def _rng(features, salt: str = ""):
    return np.random.default_rng(zlib.crc32(("\x1f".join(features) + "|" + salt).encode()))


class _Budget:
    """Monte-Carlo draws: ``noise_draws`` for every test first; :func:`_resolve` continues the open ones."""

    def __init__(self, config):
        self.first = int(config.noise_draws)
        self.most = int(config.max_noise_draws)
        self.alpha = float(config.significance)

    def test(self, observed, draw, tol, cap=None) -> SequentialTest:
        return SequentialTest(observed, draw, tol=tol, cap=cap).run_to(self.first)

    def null_test(self, null, tol, cap=None) -> SequentialTest:
        """The sequential test of a :class:`autopdp.findings.null_draws.NullTest` (studentized: no floating-point
        zero to set aside, and its noise level read back on the criterion's scale)."""
        return SequentialTest(null.observed, null.draw, tol=-np.inf if null.studentized else tol, cap=cap,
                              level_to=null.level_to).run_to(self.first)


@dataclass
class _Pending:
    """An item whose Monte-Carlo tests may need more draws: ``build(results)`` makes its Evidence."""

    tests: list
    build: Callable


def _resolve(items: dict, budget: _Budget) -> dict:
    """Continue the open tests of one criterion to what the multiple-testing cut-off needs, then build every item.

    With R items still open (fewer than 10 exceedances) among M, Benjamini-Hochberg would pass the R-th smallest
    p-value at ``alpha * R / M``: the open tests draw until ``2 M / (alpha R)`` (at most ``max_noise_draws``).
    """
    pending = [v for v in items.values() if isinstance(v, _Pending)]
    open_items = [v for v in pending if any(t.open for t in v.tests)]
    if open_items:
        need = int(np.ceil(2.0 * max(len(items), 1) / (max(budget.alpha, 1e-12) * len(open_items))))
        most = max(budget.first, min(budget.most, need))
        for v in open_items:
            for t in v.tests:
                if t.open:
                    t.run_to(most)
    return {k: (v.build([t.result() for t in v.tests]) if isinstance(v, _Pending) else v) for k, v in items.items()}


#: the Lipschitz null refits a bounded least-squares problem per draw: at most this many draws
LIPSCHITZ_MAX_DRAWS = 5000


def _with_refits(noise: NoiseModel | None, extra, key) -> NoiseModel | None:
    """``noise`` plus the refits' corrected spread ``extra[key]`` (the learner-level test,
    :mod:`autopdp.findings.robustness`); ``noise`` itself without it."""
    factor = None if noise is None or not extra else extra.get(key)
    if factor is None:
        return noise
    return noise.stacked(factor, f"{noise.source} + the refits' spread, Nadeau-Bengio corrected")


def _link_threshold(inputs, r, t, scale_name) -> float:
    """The materiality threshold on the scale the ICE spread was measured on: ``materiality`` x the sd of
    the rows' predictions on that scale (the model's margin when the spread was measured on it)."""
    return _link_scale_threshold(inputs, r, t, scale_name)[0]


def _link_scale_threshold(inputs, r, t, scale_name):
    """``(threshold, spread)``: :func:`_link_threshold` and every row's share of its relative sampling error
    (:class:`autopdp.scores.spread.ThresholdSpread`, None when unknown); on a link scale, computed once per scale
    and target (kept in ``inputs._link_spreads`` when it has one)."""
    cache = getattr(inputs, "_link_spreads", None)
    key = (scale_name, int(t))
    if cache is not None and key in cache:
        return cache[key]
    out = _link_scale_threshold_of(inputs, r, t, scale_name)
    if cache is not None:
        cache[key] = out
    return out


def _link_scale_threshold_of(inputs, r, t, scale_name):
    cfg = inputs.config
    response = getattr(inputs, "response", None)
    link = getattr(inputs, "link", None)
    if link is not None and link.predictions is not None and scale_name == link.name:
        sd, spread, _ = kept_spread(link.predictions, t)  # kept where the rows are: sums over the partitions
        ok = np.isfinite(sd) and sd > 0
        return (float(cfg.materiality * sd) if ok else float("nan")), (spread if ok else None)
    if response is None or scale_name in ("prediction", "decision function", "share of predicted class") \
            or scale_name.startswith("probability"):
        sd = np.asarray(inputs.prediction_std, dtype=float)
        ok = t < sd.size and np.isfinite(sd[t]) and sd[t] > 0
        spread = inputs.spread_of(t) if hasattr(inputs, "spread_of") else None
        return (float(cfg.materiality * sd[t]) if ok else float("nan")), spread
    pred = response.whole()  # another scale of every row (brought here from a cluster's partitions)
    all_classes = bool(pred.shape[1] >= 3 and np.allclose(pred.sum(axis=1), 1.0, atol=1e-6))
    col = link_scale(pred.T, r.response, all_classes=all_classes)[0][t]
    sd, spread, _ = kept_spread(kept_here(col), 0, values=col)  # over the finite values
    ok = np.isfinite(sd) and sd > 0
    return (float(cfg.materiality * sd) if ok else float("nan")), (spread if ok else None)


def _link_surface(inputs, r):
    """The 2D PD ``r`` on the model's link scale (:class:`autopdp.pd.link.LinkSurface`), or None (the response)."""
    link = getattr(inputs, "link", None)
    return None if link is None else getattr(link, "surfaces", {}).get(r.features)


def _short(scale_name: str) -> str:
    """A scale's name without its explanation in brackets, as a sentence names it."""
    return scale_name.split(" (")[0]

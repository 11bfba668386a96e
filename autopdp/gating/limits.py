"""The gate's limits as minimum-effect tests: a rule fails only when its violation exceeds its limit with confidence.

A gate rule such as ``max_monotonicity = 0.005`` states a tolerance on a score that is measured
from a sampled PD, so the score carries sampling noise.  The gate tests the rule's own limit:

null hypothesis
    "the violation is at most the limit" (the PD of the population, of which the audit's rows
    are a sample, scores at most ``bound``).  One-sided, at the audit's ``significance``.
the bound
    the policy's explicit limit, in the units of the score (the prediction's units), or, for a
    rule whose limit is optional (``max_monotonicity``), ``materiality`` x the standard
    deviation of the model's predictions on the audit's rows: on the prediction's own scale,
    so the verdict does not depend on whether the predictions are in units or in hundredths.
least-favourable null curve
    the observed violation shrunk to exactly the bound.  For a score that is the gap between the
    PD ``f`` and its projection ``g`` onto a convex set (the best monotone curve, the best
    slope-bounded curve), ``g + (f - g) * bound / observed`` has the same projection ``g`` and
    scores exactly ``bound``.  For the slope (a supremum of the PD's slopes) every interval
    steeper than the bound is clipped to it (at least as steep as shrinking the whole curve,
    interval by interval).  For the similarity to the champion (a norm of the PDs' difference)
    the difference is shrunk to the bound.
test
    the null curve plus draws of the PD's noise (:func:`autopdp.findings.significance.pd_noise_model`;
    for similarity the paired noise of the two models' ICE differences), the score recomputed
    (refitted), and the sequential Monte-Carlo p-value of the observed score
    (:func:`~autopdp.findings.significance.sequential_p`).  The random draws are seeded from the
    rule and the feature's name, so a verdict is reproducible.  An observed score at or under the
    bound passes without a test (p = 1).
multiplicity
    the gate fails when any check fails, so the error that matters is failing a model that
    satisfies every rule: Holm's step-down adjustment across all of the policy's noise-tested
    checks (every rule, every feature, those under their bound included with p = 1) keeps that
    family-wise error at ``significance`` whatever the report's ``multiple_testing``.

The least-favourable curve takes the observed violation's shape; the level is exact when the
population's violation has that shape, and measured in ``tests/test_gate_limits.py`` and
``benchmarks/bench_gate_limits.py``.  Imports go one way: this module uses :mod:`autopdp.scores`,
never the reverse.
"""

from __future__ import annotations

import dataclasses
import zlib
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..findings.evidence import fast_lipschitz_fit_1d
from ..findings.significance import adjust_p_values, pd_noise_model, sequential_p
from ..scores.utilities.base import axis_positions, gap_of_draws
from ..scores.utilities.monotone_fit import MonotoneGap

__all__ = ["LimitTest", "default_bound", "monotonicity_test", "lipschitz_test", "slope_test", "similarity_test",
           "run_limit_tests", "NULLS"]

#: each rule's null hypothesis and test, as gate.json states them
NULLS = {
    "monotonicity": ("the gap to the best monotone curve is at most the limit",
                     "Monte-Carlo: the best monotone fit plus the PD's departure from it shrunk to the limit, "
                     "plus PD noise, refitted"),
    "lipschitz": ("the gap to the best slope-bounded curve is at most the limit",
                  "Monte-Carlo: the bounded fit plus the PD's departure from it shrunk to the limit, plus PD "
                  "noise, refitted"),
    "slope": ("the PD's steepest slope is at most the limit",
              "Monte-Carlo: the PD with every interval steeper than the limit clipped to it, plus PD noise"),
    "similarity": ("the gap between the two models' PDs is at most the limit",
                   "Monte-Carlo: the PDs' difference shrunk to the limit, plus the paired noise of the two "
                   "models' ICE differences"),
}
#: draws at most for a test whose every null draw is a solve (the slope-bounded fit)
LIPSCHITZ_MAX_DRAWS = 5000


@dataclass
class LimitTest:
    """One limit check's minimum-effect test, drawn once the family's size is known."""

    kind: str
    feature: str
    observed: float
    bound: float
    draw: Callable[[int], np.ndarray] | None  # null statistics; None: no noise model (untested)
    noise: str = ""
    cap: int | None = None
    tol: float = 0.0

    @property
    def exceeds(self) -> bool:
        return bool(np.isfinite(self.observed) and self.observed > self.bound + self.tol)


def default_bound(audit, target_index: int) -> tuple[float, str]:
    """``materiality`` x the prediction sd of the target (NaN when the sd is unknown), and how it was made."""
    sd = np.atleast_1d(np.asarray(audit.metadata.get("prediction_std") or [np.nan], dtype=float))
    s = float(sd[target_index]) if target_index < sd.size else float("nan")
    m = float(audit.config.materiality)
    return m * s, f"default: materiality {m:g} x prediction sd {s:.6g}"


def _scale_tol(audit, target_index: int) -> float:
    """Floating-point zero on the prediction's own scale."""
    sd = np.atleast_1d(np.asarray(audit.metadata.get("prediction_std") or [np.nan], dtype=float))
    s = float(sd[target_index]) if target_index < sd.size and np.isfinite(sd[target_index]) else 1.0
    return 1e-9 * (s if s > 0 else 1.0)


def _rng(kind: str, feature: str, target_index: int) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(f"autopdp.gate|{kind}|{feature}|{target_index}".encode()))


def _noise(r, t: int, sample_weight, extra=None):
    """:func:`pd_noise_model` with each factor row's sign fixed (its largest entry positive): the covariance is
    the same, and the draws no longer depend on the sign an SVD happens to return, so a model whose predictions
    are multiplied by 100 gets the same draws times 100 (and the same p-value).  ``extra``: a factor added to it
    (the refits' corrected spread, for a rule with ``robust = true``, :mod:`autopdp.gating.robust`)."""
    model = pd_noise_model(r, t, sample_weight)
    if model is not None and extra is not None:
        model = dataclasses.replace(model, factor=np.vstack([model.factor, np.asarray(extra, dtype=float)]),
                                    source=f"{model.source} + the refits' spread, Nadeau-Bengio corrected")
    return None if model is None else _canonical(model)


def _canonical(model):
    f = np.asarray(model.factor, dtype=float)
    if f.ndim != 2 or not f.size:
        return model
    # the sign of each row's product with a fixed, increasing, tie-free vector (the largest entry can tie between
    # cells of a symmetric shape, and rounding then picks either)
    probe = f @ (1.0 + np.sqrt(2.0) * np.arange(f.shape[1]) / max(f.shape[1], 1))
    lead = np.where(np.abs(probe) > 1e-9 * np.linalg.norm(f, axis=1),
                    probe, f[np.arange(f.shape[0]), np.argmax(np.abs(f), axis=1)])
    return dataclasses.replace(model, factor=f * np.where(lead < 0, -1.0, 1.0)[:, None])


def _shrunk(fit: np.ndarray, f: np.ndarray, observed: float, bound: float) -> np.ndarray:
    return fit + (f - fit) * (bound / observed)


def monotonicity_test(audit, r, t: int, s, bound: float, sample_weight=None, extra=None) -> LimitTest:
    """``s``: the monotonicity score with the policy's declared direction (``details['direction']``)."""
    test = LimitTest("monotonicity", r.features[0], float(s.value), float(bound), None, tol=_scale_tol(audit, t))
    noise = _noise(r, t, sample_weight, extra)
    if not test.exceeds or noise is None or s.comparison is None:
        return test
    f = np.asarray(r.average[t], dtype=float).ravel()
    g = np.asarray(s.comparison, dtype=float).ravel()
    null = _shrunk(g, f, test.observed, test.bound)
    # refitted as the score is: weighted by the density under the audit's loss, in the declared direction
    # (both when none is declared, the better by the weighted score)
    dirs = [s.details.get("direction")] if s.details.get("declared") else ["increasing", "decreasing"]
    w = np.asarray(r.density, dtype=float).ravel()
    loss, rng = audit.config.loss, _rng("monotonicity", test.feature, t)
    gap = MonotoneGap(w, dirs, loss)

    def draw(n):
        h = null + noise.draw(n, rng).reshape(n, -1)
        return np.array([gap(row) for row in h])

    test.draw, test.noise = draw, noise.source
    return test


def lipschitz_test(audit, r, t: int, s, bound: float, sample_weight=None, extra=None) -> LimitTest:
    """``s``: the Lipschitz score (its ``comparison`` is the bounded fit, ``details['bound']`` its slope bound)."""
    test = LimitTest("lipschitz", r.features[0], float(s.value), float(bound), None, cap=LIPSCHITZ_MAX_DRAWS,
                     tol=_scale_tol(audit, t))
    noise = _noise(r, t, sample_weight, extra)
    x = axis_positions(r, 0)
    slope_bound = (s.details or {}).get("bound")
    if not test.exceeds or noise is None or s.comparison is None or x is None or slope_bound is None:
        return test
    slope_bound = float(np.atleast_1d(slope_bound)[0])
    f = np.asarray(r.average[t], dtype=float).ravel()
    g = np.asarray(s.comparison, dtype=float).ravel()
    null = _shrunk(g, f, test.observed, test.bound)
    w = np.asarray(r.density, dtype=float).ravel()
    loss, rng = audit.config.loss, _rng("lipschitz", test.feature, t)

    def draw(n):
        h = null + noise.draw(n, rng).reshape(n, -1)
        fits = np.stack([fast_lipschitz_fit_1d(row, x, slope_bound, w, loss) for row in h])
        return gap_of_draws(h - fits, w, loss)

    test.draw, test.noise = draw, noise.source
    return test


def _steepest(curves: np.ndarray, du: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.abs(np.diff(curves, axis=-1)) / du
    return np.max(np.where(np.isfinite(s), s, 0.0), axis=-1)


def slope_test(audit, r, t: int, observed: float, bound: float, sample_weight=None, extra=None) -> LimitTest:
    """The slope score (steepest slope per full feature range, :mod:`autopdp.scores.utilities.slope`)."""
    test = LimitTest("slope", r.features[0], float(observed), float(bound), None, tol=_scale_tol(audit, t))
    noise = _noise(r, t, sample_weight, extra)
    x = axis_positions(r, 0)
    if not test.exceeds or noise is None or x is None or x.size < 2 or x[-1] == x[0]:
        return test
    du = np.diff((x - x[0]) / (x[-1] - x[0]))
    f = np.asarray(r.average[t], dtype=float).ravel()
    step = np.diff(f)
    clipped = np.sign(step) * np.minimum(np.abs(step), test.bound * du)
    null = f[0] + np.concatenate([[0.0], np.cumsum(clipped)])
    rng = _rng("slope", test.feature, t)

    def draw(n):
        return _steepest(null + noise.draw(n, rng).reshape(n, -1), du)

    test.draw, test.noise = draw, noise.source
    return test


def _paired_noise(r, t: int, other, t2: int, sample_weight):
    """The noise of ``r - other``: the ICE differences on their common rows (a PDResult of the difference
    given to :func:`pd_noise_model`), else the two PDs' noise taken as independent (wider: conservative)."""
    if r.individual is not None and other.individual is not None:
        rows_a = np.arange(np.asarray(r.individual).shape[1]) if r.ice_rows is None else np.asarray(r.ice_rows)
        rows_b = (np.arange(np.asarray(other.individual).shape[1]) if other.ice_rows is None
                  else np.asarray(other.ice_rows))
        common, ia, ib = np.intersect1d(rows_a, rows_b, return_indices=True)
        if common.size >= 2:
            a = np.asarray(r.individual[t], dtype=float)[ia]
            b = np.asarray(other.individual[t2], dtype=float)[ib]
            diff = dataclasses.replace(
                r, individual=(a - b)[None], ice_rows=common, average=(np.asarray(r.average[t], dtype=float)
                                                                       - np.asarray(other.average[t2], dtype=float))[None],
                std=np.asarray(r.std)[t:t + 1], stderr=np.asarray(r.stderr)[t:t + 1], targets=(r.targets[t],))
            model = pd_noise_model(diff, 0, sample_weight)
            if model is not None:
                return _canonical(model), f"paired on {common.size:,} rows"
    na, nb = pd_noise_model(r, t, sample_weight), pd_noise_model(other, t2, sample_weight)
    if na is None or nb is None:
        return None, ""
    return (_canonical(dataclasses.replace(na, factor=np.vstack([na.factor, nb.factor]), source="unpaired")),
            "unpaired: the two PDs' noise taken as independent")


def _centred(d: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``d`` (last axis: the grid) less its density-weighted mean: the shape of a difference of two PDs."""
    ok = w > 0
    level = np.sum(np.where(ok, d * w, 0.0), axis=-1, keepdims=True) / max(float(w[ok].sum()), 1e-300)
    return d - level


def similarity_test(audit, r, t: int, other, s, bound: float, sample_weight=None) -> LimitTest:
    """The similarity score (the shape gap between the model's and the champion's PDs, ``other``: their difference
    less its density-weighted mean), tested against its own statistic on each draw."""
    test = LimitTest("similarity", r.features[0], float(s.value), float(bound), None, tol=_scale_tol(audit, t))
    if not test.exceeds or other is None:
        return test
    try:
        t2 = other.target_index(s.target)
    except ValueError:
        return test
    noise, how = _paired_noise(r, t, other, t2, sample_weight)
    if noise is None:
        return test
    w = np.asarray(r.density, dtype=float).ravel()
    d = _centred((np.asarray(r.average[t], dtype=float) - np.asarray(other.average[t2], dtype=float)).ravel(), w)
    null = d * (test.bound / test.observed)  # the shape gap (the score) shrunk to the bound
    loss, rng = audit.config.loss, _rng("similarity", test.feature, t)

    def draw(n):  # each draw's shape gap: its own constant shift set aside, as the score does
        return gap_of_draws(_centred(null + noise.draw(n, rng).reshape(n, -1), w), w, loss)

    test.draw, test.noise = draw, how
    return test


def run_limit_tests(tests: list[LimitTest], config) -> list[dict]:
    """Each test's p-value, Holm-adjusted across ``tests`` (the family), and its decision, as proof dicts.

    The draws each test may take are fixed before any is drawn: enough for Holm to pass the smallest
    p-value of a family of ``len(tests)`` (``2 m / significance``), at least ``noise_draws``, at most
    ``max_noise_draws`` (and :data:`LIPSCHITZ_MAX_DRAWS` for the slope-bounded refits).
    """
    m = len(tests)
    alpha = float(config.significance)
    need = int(np.ceil(2.0 * max(m, 1) / max(alpha, 1e-12)))
    p = np.ones(m)
    draws = np.zeros(m, dtype=int)
    for i, test in enumerate(tests):
        if not test.exceeds:
            continue
        if test.draw is None:
            p[i] = np.nan
            continue
        most = max(config.noise_draws, min(config.max_noise_draws, need))
        if test.cap is not None:
            most = max(config.noise_draws, min(most, test.cap))
        res = sequential_p(test.observed, test.draw, first=config.noise_draws, most=most)
        p[i], draws[i] = res.p_value, res.draws
    adjusted = adjust_p_values(p, "holm") if m else p
    proofs = []
    for i, test in enumerate(tests):
        untested = test.exceeds and test.draw is None
        significant = bool(test.exceeds and np.isfinite(adjusted[i]) and adjusted[i] <= alpha)
        fails = bool(untested or significant)
        null, how = NULLS[test.kind]
        proofs.append({
            "observed": float(test.observed), "bound": float(test.bound), "exceeds": test.exceeds,
            "p_value": float(p[i]), "adjusted_p": float(adjusted[i]), "significance": alpha,
            "multiple_testing": f"holm across the gate's {m} noise-tested check{'s' if m != 1 else ''}",
            "significant": significant, "untested": bool(untested), "decision": "fail" if fails else "pass",
            "null": null, "test": (f"one-sided minimum-effect test; {how} ({test.noise}), {int(draws[i]):,} draws"
                                   if test.exceeds and test.draw is not None else
                                   "none: the observed score is within the limit" if not test.exceeds else
                                   "none: no noise model for this PD (no ICE curves or standard errors)"),
            "draws": int(draws[i]),
        })
    return proofs

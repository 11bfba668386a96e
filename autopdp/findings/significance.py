"""Noise tests and materiality: when a score is a finding a validator can defend.

A PDP enters the curated selection under a criterion only when its score is
**material with confidence**: a one-sided minimum-effect test suited to the
statistic rejects the null "the score is at most the materiality threshold"
(``materiality``, default 0.05, times the standard deviation of the model's
predictions, on the criterion's own scale), with the multiple comparisons
across the PDPs of that criterion controlled (Benjamini-Hochberg false
discovery rate by default, Holm's family-wise error as an option).  An effect
exactly at the threshold is then a finding at most at the nominal level, and
one well above it keeps its power.  The null draws are centred on the least
favourable curve: the observed PD's departure from its null fit (the best
monotone curve, the bounded curve, a flat line, the additive surface) shrunk
until the statistic equals the threshold (:func:`autopdp.findings.null_draws.at_threshold`);
with ``materiality = 0`` this is the plain noise test of the fit itself.  The
association criterion keeps its independence test with ``min_association``
(0-1 scale) as its materiality.

**What is tested**: the fitted model.  Every null is conditional on the model
as fitted and on the audit rows' distribution; the noise is the Monte-Carlo
error of averaging over those rows.  Whether a refit of the same learner on
another sample would show the pattern (learner variance) is not tested here: given
the training data and ``refits``, :mod:`autopdp.findings.robustness` tests it.

A material score whose test could not be run is **untested** (never "noise"):
it is not a finding, and the report says it was not tested and why.

The noise of a PD
    A PD is a (weighted) mean of ICE curves over the rows, so its sampling error
    is, to first order, ``e = sum_i w_i (ice_i - PD) / sum_i w_i``.  Its
    covariance over the grid is estimated from the ICE curves kept for every 1D
    PD (``subsample`` rows, with their sample weights):
    ``Sigma = sum_i w_i^2 (ice_i - PD)(ice_i - PD)^T / W^2``, corrected for the
    degrees of freedom and scaled from the kept rows' effective number
    ``n_eff = W^2 / sum w_i^2`` to that of all the rows the PD averages over.
    The null draws are Gaussian with that covariance (a Gaussian multiplier
    bootstrap of the ICE rows, which keeps the rows' weights and the strong
    correlation between grid points).  Above a positive threshold every
    Monte-Carlo test is studentized instead (:func:`autopdp.findings.null_draws.minimum_effect`):
    a wild bootstrap-t of the same rows with Mammen's multipliers, whose draws
    keep the rows' skewness, each over its own standard error; and the
    threshold (materiality x the prediction sd, which the same rows estimate)
    moves with each draw as the rows move it.  2D PDs keep the ICE surfaces of
    ``std_rows`` sampled rows for this only (dropped after the tests), so their
    cells' noise is correlated the same way; independent noise per cell would
    understate a noise that moves whole rows of the surface together (a product
    x1 x2 x3 gave 40% false interaction findings that way).  Only a PD without
    ICE rows falls back to independent cells with their standard errors.

Monte-Carlo p-values
    ``(1 + #{null >= observed}) / (1 + draws)``, never smaller than the draws can
    show.  Draws are sequential (Besag and Clifford 1991): ``noise_draws`` for
    every tested PDP first; then, per criterion, the R PDPs with fewer than 10
    exceedances continue up to the draws the multiple-testing cut-off needs if
    all R were findings, ``2 * n_PDPs / (significance * R)`` (Benjamini-Hochberg
    passes the R-th smallest p-value at ``significance * R / n_PDPs``), at most
    ``max_noise_draws``; a PDP that reaches 10 exceedances after L draws gets
    ``p = 10 / L``.  Both are valid p-values.  Analytic tests (association,
    the ICE spread's z-test) report at least :data:`ANALYTIC_P_FLOOR`: their
    approximations are not trusted further into the tail.

Each criterion's null and test are in :data:`TESTS` (their names are in every
:class:`Evidence`) and in docs/methodology.md with their measured level and power.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from ..errors import InputError
from ..utils.jsonable import jsonable
from ..pd.sampling import ice_design as _ice_design, ice_row_weights, kept_inclusion  # noqa: F401
from .pd_noise import (  # noqa: F401 - the noise of a PD, re-exported where the tests have always found it
    COCHRAN_FACTOR, EFFECTIVE_ROWS_FLOOR, NoiseModel, _effective_rows, _n_eff, gaussian_gap, mammen, noise_gap_reason,
    pd_noise, pd_noise_model, skewness_of_departures, weighted_noise_factor, with_threshold_noise,
)

__all__ = [
    "Evidence",
    "NoiseModel",
    "pd_noise_model",
    "pd_noise",
    "monte_carlo_p",
    "sequential_p",
    "SequentialTest",
    "analytic_p",
    "adjust_p_values",
    "noise_level",
    "ADJUSTMENTS",
    "ANALYTIC_P_FLOOR",
    "EFFECTIVE_ROWS_FLOOR",
    "COCHRAN_FACTOR",
    "noise_gap_reason",
    "gaussian_gap",
    "skewness_of_departures",
    "kept_inclusion",
    "mammen",
    "with_threshold_noise",
    "TESTS",
]

ADJUSTMENTS = ("bh", "holm")
#: the smallest p-value an analytic (asymptotic) test reports: "p <= 1e-6"
ANALYTIC_P_FLOOR = 1e-6
#: exceedances after which the sequential Monte-Carlo test stops (Besag and Clifford 1991)
STOP_EXCEEDANCES = 10

#: how every Monte-Carlo minimum-effect test draws its noise above a positive threshold
#: (:func:`autopdp.findings.null_draws.minimum_effect`)
_STUDENTIZED = ("; above a positive threshold, studentized (a wild bootstrap-t of the rows with Mammen "
                "multipliers) and with the threshold's own sampling error drawn from the same rows")
#: each criterion's null hypothesis and test, as the evidence and the methodology state them
TESTS = {
    "monotonicity": ("the PD's gap to the best monotone curve is at most the materiality threshold",
                     "Monte-Carlo minimum-effect test: monotone fit + departure at the threshold + PD noise, "
                     "refitted (with no declared direction, each direction on its own, the larger p)" + _STUDENTIZED),
    "lipschitz": ("the PD's gap to the closest slope-bounded curve is at most the materiality threshold",
                  "Monte-Carlo minimum-effect test: bounded fit + departure at the threshold + PD noise, refitted"
                  + _STUDENTIZED),
    "slope": ("the PD's steepest slope is at most the materiality threshold",
              "Monte-Carlo minimum-effect test: the PD shrunk to the threshold + PD noise" + _STUDENTIZED),
    "importance": ("the PD's importance is at most the materiality threshold",
                   "Monte-Carlo minimum-effect test: the PD shrunk to the threshold + PD noise" + _STUDENTIZED),
    "incidence": (
        "the model's calibration gap within the feature's bins (mean observed against mean predicted), and the "
        "PD's gap to the model's mean prediction for each bin's rows with the feature at the bin's grid value, are "
        "each at most the materiality threshold",
        "minimum-effect wild bootstrap (random signs) of the rows' residuals per bin (calibration) and of their "
        "predictions at the bin's grid value less the PD (dependence) around the gaps shrunk to the threshold, "
        "Bonferroni over the two",
    ),
    "similarity": ("the two models' PDs differ in shape (less a constant) by at most the materiality threshold",
                   "Monte-Carlo minimum-effect test: the difference shrunk to the threshold + paired ICE noise"
                   + _STUDENTIZED),
    "ice_variance": ("the centred ICE curves' spread is at most the materiality threshold",
                     "one-sided minimum-effect z-test of the rows' mean squared departure against the threshold "
                     "squared, the threshold's own sampling error in its variance"),
    "interaction": ("the 2D PD's interaction is at most the materiality threshold",
                    "Monte-Carlo minimum-effect test: additive part + the rest shrunk to the threshold + PD noise"
                    + _STUDENTIZED),
    "correlation": ("the two features are independent",
                    "Spearman's rank test, one-way ANOVA F test, or Pearson's chi-squared test"),
}


@dataclass(frozen=True)
class Evidence:
    """Why a PDP is (or is not) a finding under one criterion.

    Attributes
    ----------
    criterion : str
        Utility or 2D criterion id.
    features : tuple of str
    value : float
        The statistic the decision is made on (higher = more interesting); see
        ``statistic`` for what it measures.
    p_value : float
        Probability of a statistic at least this large under the null (NaN when
        the test could not be run: the item is then ``untested``).
    adjusted_p : float
        ``p_value`` adjusted for the number of PDPs tested under the criterion
        (Benjamini-Hochberg or Holm).
    noise_level : float
        95th percentile of the statistic under the null (NaN when not drawn).
    threshold : float
        The materiality threshold on the statistic's scale.
    material : bool
    significant : bool
    why : str
        One sentence: why it passed, or why not.
    test : str
        The test that gave ``p_value`` (with its draws or degrees of freedom).
    null : str
        The null hypothesis the test rejects.
    statistic : str
        What ``value`` measures.
    draws : int
        Monte-Carlo draws behind ``p_value`` (0 for analytic tests).
    kind : str
        For criteria with several readings, which one the finding is
        (incidence: ``calibration`` or ``dependence``).
    details : dict
        The parts of the decision (e.g. both incidence parts with their p-values).
    """

    criterion: str
    features: tuple
    value: float
    p_value: float
    adjusted_p: float
    noise_level: float
    threshold: float
    material: bool
    significant: bool
    why: str
    test: str = ""
    null: str = ""
    statistic: str = ""
    draws: int = 0
    kind: str = ""
    details: dict = field(default_factory=dict, compare=False)
    #: the learner-level decision (issue 31, :mod:`autopdp.findings.robustness`): True / False, None when not assessed
    robust: bool | None = None
    #: the learner-level test's p-value and its Benjamini-Hochberg (or Holm) adjustment across the PDPs
    robust_p: float = float("nan")
    robust_adjusted_p: float = float("nan")
    #: the share of refits whose own test finds the pattern (descriptive; NaN when not assessed)
    stability: float = float("nan")
    #: why the learner-level decision is what it is (or why it was not assessed); "" without refits
    robust_why: str = ""

    @property
    def passed(self) -> bool:
        return bool(self.material and self.significant)

    @property
    def untested(self) -> bool:
        """Material, but its noise test could not be run: neither a finding nor noise.

        A finding decided without a p-value (intersection: a count of the other criteria's findings) passed,
        so it is not untested."""
        return bool(self.material and not self.significant and not np.isfinite(self.p_value))

    def to_dict(self) -> dict:
        def num(v):
            return None if v is None or not np.isfinite(v) else float(v)

        return {
            "criterion": self.criterion, "features": list(self.features), "value": num(self.value),
            "p_value": num(self.p_value), "adjusted_p": num(self.adjusted_p), "noise_level": num(self.noise_level),
            "threshold": num(self.threshold), "material": self.material, "significant": self.significant,
            "passed": self.passed, "untested": self.untested, "why": self.why, "test": self.test,
            "null": self.null, "statistic": self.statistic, "draws": int(self.draws), "kind": self.kind,
            "details": jsonable(self.details, whole=False), "robust": self.robust, "robust_p": num(self.robust_p),
            "robust_adjusted_p": num(self.robust_adjusted_p), "stability": num(self.stability),
            "robust_why": self.robust_why,
        }


def noise_level(null: np.ndarray) -> float:
    null = np.asarray(null, dtype=float)
    null = null[np.isfinite(null)]
    return float(np.quantile(null, 0.95)) if null.size else float("nan")


def monte_carlo_p(observed: float, null: np.ndarray, *, tol: float = 0.0) -> float:
    """Monte-Carlo p-value ``(1 + #{null >= observed}) / (1 + draws)``: never below ``1 / (1 + draws)``.

    ``tol``: scores at or below it count as exactly zero (floating-point noise): p = 1.
    """
    null = np.asarray(null, dtype=float)
    null = null[np.isfinite(null)]
    if not np.isfinite(observed) or null.size == 0:
        return float("nan")
    if observed <= tol:
        return 1.0
    exceed = int(np.sum(null >= observed))
    return float((1 + exceed) / (null.size + 1))


@dataclass(frozen=True)
class SequentialResult:
    p_value: float
    draws: int
    noise_level: float


class SequentialTest:
    """A sequential Monte-Carlo test (Besag and Clifford 1991) that can be continued.

    ``draw_null(n)`` returns ``n`` null statistics.  :meth:`run_to` draws, doubling,
    until ``stop`` exceedances or ``most`` draws in all; the p-value is
    ``stop / L`` when the ``stop``-th exceedance came at draw ``L``, else
    ``(1 + exceedances) / (1 + draws)``: valid whatever ``most`` was, as long as
    it does not depend on this test's own future draws.  ``cap``: the most draws
    this test may ever take (expensive nulls).
    """

    def __init__(self, observed: float, draw_null, *, tol: float = 0.0, stop: int = STOP_EXCEEDANCES,
                 cap: int | None = None, level_to=None):
        #: maps a quantile of the drawn statistic to the criterion's scale (a studentized test's critical value)
        self.level_to = level_to
        self.observed = float(observed)
        self.draw_null = draw_null
        self.tol = tol
        self.stop = stop
        self.cap = cap
        self.total = 0
        self.exceed = 0
        self.stopped_at: int | None = None
        self._parts: list[np.ndarray] = []

    @property
    def trivial(self) -> bool:
        """Nothing to draw: the statistic is not finite or is floating-point zero."""
        return not np.isfinite(self.observed) or self.observed <= self.tol

    @property
    def open(self) -> bool:
        """More draws could still lower the p-value (fewer than ``stop`` exceedances so far)."""
        return not self.trivial and self.stopped_at is None and (self.cap is None or self.total < self.cap)

    def run_to(self, most: int) -> "SequentialTest":
        if self.trivial:
            return self
        most = int(most if self.cap is None else min(most, self.cap))
        while self.stopped_at is None and self.total < most:
            batch = max(1, min(max(self.total, 1), most - self.total) if self.total else most)
            null = np.asarray(self.draw_null(batch), dtype=float).ravel()
            null = np.where(np.isfinite(null), null, -np.inf)
            self._parts.append(null)
            hits = null >= self.observed
            if self.exceed + int(hits.sum()) >= self.stop:
                self.stopped_at = self.total + int(np.flatnonzero(hits)[self.stop - self.exceed - 1]) + 1
            self.exceed += int(hits.sum())
            self.total += null.size
        return self

    def result(self) -> SequentialResult:
        if not np.isfinite(self.observed):
            return SequentialResult(float("nan"), 0, float("nan"))
        if self.observed <= self.tol:  # floating-point zero: nothing to test
            return SequentialResult(1.0, 0, float("nan"))
        allnull = np.concatenate(self._parts) if self._parts else np.array([])
        level = noise_level(allnull[np.isfinite(allnull)])
        if self.level_to is not None and np.isfinite(level):
            level = float(self.level_to(level))
        if self.stopped_at is not None:
            return SequentialResult(float(self.stop / self.stopped_at), self.stopped_at, level)
        return SequentialResult(float((1 + self.exceed) / (1 + self.total)), self.total, level)


def sequential_p(observed: float, draw_null, *, first: int, most: int, tol: float = 0.0,
                 stop: int = STOP_EXCEEDANCES) -> SequentialResult:
    """Sequential Monte-Carlo p-value (Besag and Clifford 1991): see :class:`SequentialTest`.

    Draws ``first``, then doubles until ``stop`` exceedances or ``most`` draws.
    """
    test = SequentialTest(observed, draw_null, tol=tol, stop=stop)
    test.run_to(max(int(first), 1))
    return test.run_to(max(int(most), int(first))).result()


def analytic_p(p: float) -> float:
    """An analytic test's p-value, floored at :data:`ANALYTIC_P_FLOOR` (NaN stays NaN)."""
    p = float(p)
    return p if not np.isfinite(p) else float(min(max(p, ANALYTIC_P_FLOOR), 1.0))


def adjust_p_values(p: np.ndarray, method: str = "bh") -> np.ndarray:
    """Adjust p-values for multiple comparisons; NaN stays NaN and is not counted."""
    p = np.asarray(p, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.isfinite(p)
    if not ok.any():
        return out
    q = np.clip(p[ok], 0.0, 1.0)
    if method == "bh":
        out[ok] = stats.false_discovery_control(q, method="bh")
    elif method == "holm":
        m = q.size
        order = np.argsort(q, kind="stable")
        adj = np.maximum.accumulate((m - np.arange(m)) * q[order])
        res = np.empty(m)
        res[order] = np.minimum(adj, 1.0)
        out[ok] = res
    else:
        raise InputError(f"multiple-comparison method must be one of {', '.join(ADJUSTMENTS)}, got {method!r}.")
    return out

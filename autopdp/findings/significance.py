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

import dataclasses
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from ..errors import InputError
from ..utils.jsonable import jsonable
from ..pd.sampling import ice_design as _ice_design, ice_row_weights, kept_inclusion  # noqa: F401

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


# ------------------------------------------------------------------ the noise of a PD
@dataclass(frozen=True)
class NoiseModel:
    """Gaussian noise of a PD over its flattened grid: ``draw(B) = Z @ factor``, ``Z ~ N(0, I)``.

    ``factor`` has shape ``(rank, n_cells)``; ``factor.T @ factor`` is the covariance.
    ``source`` says where it came from ("ICE rows" or "cell standard errors").
    ``spread`` (``(rank,)`` or None): the loading of the materiality threshold's own relative error on the same
    normal draws (the threshold is a multiple of the prediction sd, which the same rows estimate;
    :func:`autopdp.scores.scoring.threshold_spread`): :meth:`draw_pair` gives both, so a minimum-effect null carries the threshold's
    sampling error jointly with the PD's.
    """

    factor: np.ndarray
    shape: tuple
    source: str
    spread: np.ndarray | None = None
    #: (kept rows x k): the first k factor rows as the kept rows' departures (see weighted_noise_factor); None
    #: when the noise is not the rows' (cell standard errors): every factor row then takes a normal multiplier
    rows: np.ndarray | None = None

    def draw_pair(self, n: int, rng) -> tuple[np.ndarray, np.ndarray]:
        """``(noise, relative)``: ``n`` draws of the PD's error and, from the same normal draws, of the threshold's
        relative error (zeros when the threshold's error is not modelled)."""
        z = rng.standard_normal((n, self.factor.shape[0]))
        relative = np.zeros(n) if self.spread is None else z @ self.spread
        return (z @ self.factor).reshape((n, *self.shape)), relative

    def draw(self, n: int, rng) -> np.ndarray:
        return self.draw_pair(n, rng)[0]

    def draw_studentized(self, n: int, rng, direction: np.ndarray):
        """``(noise, relative, se)``: ``n`` draws of a wild bootstrap of the rows (Mammen's two-point multipliers:
        mean 0, variance 1, third moment 1, so the draws keep the rows' skewness; the factor rows that are not
        rows' departures take normal multipliers), the threshold's relative error from the same draws, and each
        draw's own standard error of the linear statistic ``direction`` (one entry per factor row: the factor
        times the statistic's gradient less the threshold's loading): ``sqrt(sum_i v_i^2 a_i^2 + extra)``, the
        standard error the rows of that draw would estimate.  Dividing by it is the bootstrap-t (Hall 1988): its
        one-sided level errs by O(1/n) where a normal draw errs by O(skewness / sqrt(n))."""
        direction = np.asarray(direction, dtype=float).ravel()
        k = 0 if self.rows is None else self.rows.shape[1]
        xi = np.empty((n, self.factor.shape[0]))
        se2 = np.full(n, float(np.sum(direction[k:] ** 2)))
        if k:
            v = mammen(rng, (n, self.rows.shape[0]))
            xi[:, :k] = v @ self.rows
            a = self.rows @ direction[:k]
            se2 += (v * v) @ (a * a)
        xi[:, k:] = rng.standard_normal((n, self.factor.shape[0] - k))
        relative = np.zeros(n) if self.spread is None else xi @ self.spread
        return (xi @ self.factor).reshape((n, *self.shape)), relative, np.sqrt(se2)

    def stacked(self, rows: np.ndarray, source: str) -> "NoiseModel":
        """This noise plus independent normal noise of factor ``rows`` (the threshold's loading on it is 0)."""
        rows = np.asarray(rows, dtype=float).reshape(-1, self.factor.shape[1])
        spread = None if self.spread is None else np.concatenate([self.spread, np.zeros(rows.shape[0])])
        return NoiseModel(factor=np.vstack([self.factor, rows]), shape=self.shape, source=source, spread=spread,
                          rows=self.rows)

    @property
    def sd(self) -> np.ndarray:
        """Standard deviation of the PD at each grid cell (``shape``)."""
        return np.sqrt(np.sum(self.factor ** 2, axis=0)).reshape(self.shape)


#: Mammen's (1993) two-point wild-bootstrap multipliers: (1 - sqrt 5) / 2 with probability (sqrt 5 + 1) / (2 sqrt 5),
#: else (1 + sqrt 5) / 2: mean 0, variance 1, third moment 1
_MAMMEN = ((1.0 - np.sqrt(5.0)) / 2.0, (1.0 + np.sqrt(5.0)) / 2.0, (np.sqrt(5.0) + 1.0) / (2.0 * np.sqrt(5.0)))


def mammen(rng, shape) -> np.ndarray:
    """Independent Mammen multipliers (mean 0, variance 1, third moment 1) of ``shape``."""
    low, high, p_low = _MAMMEN
    return np.where(rng.random(shape) < p_low, low, high)


def _n_eff(result, target_index: int) -> float:
    """Effective number of rows the PD averages over: ``(std / stderr)**2`` (``W**2 / sum w**2``)."""
    std = np.asarray(result.std[target_index], dtype=float).ravel()
    se = np.asarray(result.stderr[target_index], dtype=float).ravel()
    ok = np.isfinite(std) & np.isfinite(se) & (se > 0) & (std > 0)
    if ok.any():
        return float(np.median((std[ok] / se[ok]) ** 2))
    return float(max(result.n_rows, 1))


#: Below this many effective rows (``W**2 / sum w**2``) a PD's mean is not trusted to be Gaussian: untested.
EFFECTIVE_ROWS_FLOOR = 30
#: Cochran's rule for the normal approximation of a mean (Cochran 1977, *Sampling Techniques*, 2.15): the
#: effective rows must exceed this times the squared skewness of the rows' departures.
COCHRAN_FACTOR = 25


def weighted_noise_factor(curves: np.ndarray, w: np.ndarray | None, n_eff_all: float | None = None, *,
                          pi: np.ndarray | None = None, total: float | None = None,
                          extra: np.ndarray | None = None, rows: bool = False):
    """Factor of the covariance of the weighted mean of ``curves`` (rows x cells), see module docs.

    With ``pi`` (each kept row's probability of being kept) and ``total`` (the total weight of all rows):
    the Horvitz-Thompson estimate ``sum w_i**2 / pi_i (c_i - m)(c_i - m)^T / total**2``, right for a sample
    that keeps every heavy row.  Otherwise ``n_eff_all`` (the effective rows of the mean being described)
    scales the kept rows' covariance by the ratio of kept to all effective rows, up or down.

    ``extra`` (kept rows x k, with ``pi`` only): each kept row's own contribution to another estimate's error
    (the threshold's, :func:`autopdp.scores.scoring.threshold_spread`), appended as k more columns, weighted ``1 / sqrt(pi)`` like the
    rows' departures: the factor's last k columns are then those estimates' noise, drawn jointly with the PD's.

    ``rows=True``: ``(factor, U)``, U (kept rows x rank) with orthonormal columns such that each kept row's
    departure is ``U[i] @ factor``: independent multipliers ``v`` of the rows (mean 0, variance 1) give the draw
    ``(v @ U) @ factor`` (:meth:`NoiseModel.draw_studentized`).
    """
    c = np.asarray(curves, dtype=float)
    m = c.shape[0]
    w = np.ones(m) if w is None else np.asarray(w, dtype=float)
    if pi is not None and total is not None and np.isfinite(total) and total > 0:
        pi = np.asarray(pi, dtype=float)
        h = np.where(pi > 0, w / np.where(pi > 0, pi, 1.0), 0.0)
        mean = (h @ c) / float(h.sum())
        n_eff_h = float(h.sum()) ** 2 / float(np.sum(h * h))
        dev = (np.sqrt(np.where(pi > 0, w * w / np.where(pi > 0, pi, 1.0), 0.0))[:, None] * (c - mean)) / total
        if extra is not None:
            inv = np.sqrt(np.where(pi > 0, 1.0 / np.where(pi > 0, pi, 1.0), 0.0))
            dev = np.hstack([dev, inv[:, None] * np.asarray(extra, dtype=float).reshape(m, -1)])
        scale = 1.0 / max(1.0 - 1.0 / n_eff_h, 1e-12)
    else:
        W = float(w.sum())
        mean = (w @ c) / W
        dev = (w[:, None] * (c - mean)) / W
        n_eff_kept = W * W / float(np.sum(w * w))
        # unbiased weighted covariance: divide by 1 - sum w^2 / W^2 = 1 - 1 / n_eff
        scale = 1.0 / max(1.0 - 1.0 / n_eff_kept, 1e-12)
        if n_eff_all is not None and np.isfinite(n_eff_all) and n_eff_all > 0:
            scale *= n_eff_kept / n_eff_all
    u, s, vt = np.linalg.svd(dev, full_matrices=False)
    keep = s > s.max(initial=0.0) * 1e-12 if s.size else s > 0
    factor = (s[keep, None] * vt[keep]) * np.sqrt(scale)
    return (factor, u[:, keep]) if rows else factor


def _effective_rows(result, target_index: int, sample_weight) -> float:
    """Effective rows of the PD's mean: from the sample weights when they match the rows, else its std/stderr."""
    if sample_weight is not None:
        total, squares = getattr(sample_weight, "total", None), getattr(sample_weight, "total_of_squares", None)
        sw = np.asarray(sample_weight, dtype=float)
        if total is not None and squares is not None and sw.shape[0] == result.n_rows and squares > 0:
            return float(total * total / squares)
        if np.isfinite(sw).all() and sw.shape[0] == result.n_rows and sw.sum() > 0:
            return float(sw.sum() ** 2 / np.sum(sw * sw))
    return _n_eff(result, target_index)


def _first_direction(M: np.ndarray):
    """``(v, s)``: the first right singular vector of ``M`` and its singular value, (None, 0) for an empty ``M``.

    From the eigendecomposition of the smaller Gram matrix (cells x cells or rows x rows): for the first
    direction the same as the SVD's, up to its sign, at a tenth of the cost on the shapes tests draw (1,000 rows x
    20 cells; 128 rows x 100 cells)."""
    if M.size == 0:
        return None, 0.0
    if M.shape[0] >= M.shape[1]:
        vals, vecs = np.linalg.eigh(M.T @ M)
        return vecs[:, -1], float(np.sqrt(max(vals[-1], 0.0)))
    vals, vecs = np.linalg.eigh(M @ M.T)
    s0 = float(np.sqrt(max(vals[-1], 0.0)))
    if s0 <= 0:
        return None, 0.0
    v = M.T @ vecs[:, -1]
    return v / np.linalg.norm(v), s0


def skewness_of_departures(curves: np.ndarray, h: np.ndarray) -> float:
    """Skewness of the rows' departures along their main direction of variation (weights ``h``).

    Each row's curve less its own mean over the cells (every statistic tested is unchanged by a constant
    shift), less the weighted mean curve, projected on the first principal direction: the direction the PD's
    noise mostly moves in.  0 when the departures do not vary."""
    raw = np.asarray(curves, dtype=float)
    c = raw - raw.mean(axis=1, keepdims=True)
    h = np.asarray(h, dtype=float)
    hs = h / h.sum()
    d = c - hs @ c
    top, s0 = _first_direction(np.sqrt(hs)[:, None] * d)
    if top is None or s0 <= 1e-12 * max(float(np.abs(raw).max(initial=0.0)), 1e-300):
        return 0.0  # the departures are floating-point zero: every row's curve is the mean curve shifted
    z = d @ top
    m2 = float(hs @ (z * z))
    return 0.0 if m2 <= 0 else float(hs @ (z ** 3) / m2 ** 1.5)


def noise_gap_reason(result, target_index: int, sample_weight=None) -> str:
    """Why the PD's noise is not trusted to be Gaussian (the item is then untested), or "".

    Two stated rules: fewer than :data:`EFFECTIVE_ROWS_FLOOR` effective rows (dominant weights or few rows),
    and Cochran's rule: effective rows at most :data:`COCHRAN_FACTOR` x the squared skewness of the rows'
    departures (a few rows far out on one side make the mean's error skewed and its estimated spread
    correlated with it)."""
    n_eff = _effective_rows(result, target_index, sample_weight)
    curves = h = None
    if result.individual is not None and np.asarray(result.individual).shape[1] >= 3:
        design = _ice_design(result, sample_weight)
        if design is not None:
            w, pi, _ = design
            h = np.where(pi > 0, w / np.where(pi > 0, pi, 1.0), 0.0)
            ice = np.asarray(result.individual[target_index], dtype=float)
            curves = ice.reshape(ice.shape[0], -1)
    return gaussian_gap(n_eff, curves, h, weighted=sample_weight is not None)


def gaussian_gap(n_eff: float, curves=None, h=None, *, weighted: bool = False) -> str:
    """The rules of :func:`noise_gap_reason` for a mean over ``n_eff`` effective rows whose departures are
    ``curves`` (rows x cells, weights ``h``; None: only the floor is checked)."""
    if np.isfinite(n_eff) and n_eff < EFFECTIVE_ROWS_FLOOR:
        why = "the sample weights leave" if weighted else "the PD averages over"
        return (f"{why} {n_eff:.1f} effective rows, fewer than {EFFECTIVE_ROWS_FLOOR}: the PD's noise cannot be "
                "taken as Gaussian")
    if curves is None or h is None or np.asarray(h).sum() <= 0 or np.asarray(curves).shape[0] < 3:
        return ""
    g1 = skewness_of_departures(curves, h)
    need = COCHRAN_FACTOR * g1 * g1
    if np.isfinite(n_eff) and n_eff <= need:
        return (f"the rows' ICE curves depart from the PD with skewness {g1:.2g}: by Cochran's rule the PD's noise "
                f"is Gaussian only with more than {need:,.0f} effective rows ({COCHRAN_FACTOR} x skewness squared), "
                f"and it averages over {n_eff:,.0f}")
    return ""


def pd_noise_model(result, target_index: int, sample_weight=None, spread=None) -> NoiseModel | None:
    """The Gaussian noise of ``result``'s PD for one target (see module docs); None when it cannot be estimated
    or is not trusted to be Gaussian (:func:`noise_gap_reason` says why).

    ``spread``: every audit row's share of the threshold's relative error (:func:`autopdp.scores.scoring.threshold_spread`, one
    target).  When the PD averages over those rows and its ICE rows are some of them, the threshold's error is
    drawn jointly with the PD's (the same rows move both); otherwise as independent normal noise of the same
    variance."""
    shape = tuple(result.grid_shape)
    if noise_gap_reason(result, target_index, sample_weight):
        return None
    spread = None if spread is None else np.asarray(spread, dtype=float).ravel()
    if result.individual is not None and np.asarray(result.individual).shape[1] >= 2:
        ice = np.asarray(result.individual[target_index], dtype=float)
        ice = ice.reshape(ice.shape[0], -1)
        design = _ice_design(result, sample_weight)
        if design is not None and np.count_nonzero(design[0] > 0) >= 2:
            w, pi, total = design
            kept = _kept_spread(result, spread, ice.shape[0])
            # a kept row carries its own share of the threshold's error (times sqrt(pi): the factor weighs every
            # kept row's entries by 1 / sqrt(pi)); the rows without ICE curves carry theirs as one normal term
            factor, u = weighted_noise_factor(ice, w, pi=pi, total=total, rows=True,
                                              extra=None if kept is None else (kept * np.sqrt(pi))[:, None])
            model = _finite(NoiseModel(factor=factor, shape=shape, source="ICE rows", rows=u)) if kept is None else \
                _finite(NoiseModel(factor=factor[:, :-1], shape=shape, source="ICE rows", spread=factor[:, -1].copy(),
                                   rows=u))
            if kept is not None and model is not None:
                rest = float(np.sum(spread * spread) - np.sum(kept * kept))
                if rest > 0:
                    model = dataclasses.replace(model.stacked(np.zeros((1, model.factor.shape[1])), model.source),
                                                spread=np.concatenate([model.spread, [np.sqrt(rest)]]))
        else:
            kept = None
            factor, u = weighted_noise_factor(ice, None, _n_eff(result, target_index), rows=True)
            model = _finite(NoiseModel(factor=factor, shape=shape, source="ICE rows", rows=u))
        if model is not None:
            return model if kept is not None else with_threshold_noise(model, spread)
    se = np.asarray(result.stderr[target_index], dtype=float).ravel()
    if not np.isfinite(se).all():
        return None
    return with_threshold_noise(NoiseModel(factor=np.diag(se), shape=shape, source="cell standard errors"), spread)


def _kept_spread(result, spread, m: int):
    """The kept ICE rows' shares of the threshold's error, when the PD averages over the rows ``spread`` covers."""
    if spread is None or spread.size != int(result.n_rows):
        return None
    rows = result.ice_rows
    if rows is None:
        return spread if m == spread.size else None
    rows = np.asarray(rows, dtype=np.intp)
    return spread[rows] if rows.size == m and (rows.size == 0 or rows.max() < spread.size) else None


def _finite(model: NoiseModel) -> NoiseModel | None:
    ok = np.isfinite(model.factor).all() and (model.spread is None or np.isfinite(model.spread).all())
    return model if ok else None


def with_threshold_noise(model: NoiseModel, spread) -> NoiseModel:
    """``model`` with the threshold's error as independent normal noise (its variance ``sum r_i^2``)."""
    if model is None or spread is None or not np.isfinite(spread).all():
        return model
    cells = model.factor.shape[1]
    out = model.stacked(np.zeros((1, cells)), model.source)
    loading = np.concatenate([np.zeros(model.factor.shape[0]), [float(np.sqrt(np.sum(spread * spread)))]])
    return dataclasses.replace(out, spread=loading)


def pd_noise(result, target_index: int, draws: int, rng, sample_weight=None) -> np.ndarray | None:
    """``draws`` draws of the PD's sampling error, shape ``(draws, *grid_shape)``; None when not estimable."""
    model = pd_noise_model(result, target_index, sample_weight)
    return None if model is None else model.draw(draws, rng)


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

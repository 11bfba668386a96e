"""Noise floor and materiality: when a score is a finding a validator can defend.

A PDP enters the curated selection under a criterion only when its score is

(a) **distinguishable from noise**: a test suited to the statistic rejects the
    "nothing to see" hypothesis, with the multiple comparisons across the PDPs
    of that criterion controlled (Benjamini-Hochberg false discovery rate by
    default, Holm's family-wise error as an option); and
(b) **material on the model's own output scale**: the score is at least
    ``materiality`` (default 0.05) times the standard deviation of the model's
    predictions on the data (for the association criterion, at least
    ``min_association`` on its 0-1 scale).

The noise of a PD
    A PD averages ICE curves over n rows, so it carries the sampling noise of
    those rows.  Its bootstrap distribution is drawn cheaply from the ICE curves
    already computed (the ``subsample`` rows of every 1D PD): each draw
    reweights those m curves with multinomial counts (one matrix product for
    all draws) and the deviation of the reweighted mean from the plain mean is
    shrunk by ``sqrt(m / n_eff)``, the ratio of the standard errors of an
    m-row and an n_eff-row mean (``n_eff = (std / stderr)**2``, the rows or the
    effective number of weighted rows the PD averages over).  2D PDs keep no
    ICE curves; their noise is drawn independently per cell with the cell's
    standard error, which ignores the strong correlation between cells and so
    overstates the noise (conservative).

Null distributions (B = ``noise_draws`` draws, default 200)
    ``monotonicity``
        the PD's best monotone fit g plus PD noise, refitted: what the score
        would be if the true PD were monotone.
    ``lipschitz``
        the bounded fit g plus PD noise, refitted with the same bound (half
        the draws: each is a bounded least-squares solve).
    ``incidence``
        the data drawn from the PD: at each grid point with n_j rows, the
        observed share is Binomial(n_j, f_j) / n_j (classifiers) or the mean
        target is f_j + N(0, s_j^2 / n_j) with s_j the within-point standard
        deviation of the target (regressors), and the PD carries its own noise.
        This is a parametric-bootstrap goodness-of-fit test of the PD against
        the per-grid-point observed means that is valid for small n_j, where
        the chi-squared approximation is not.  With sample weights the score
        and the density weights are weighted; the null's n_j stay row counts
        (an approximation).
    ``similarity:<name>``
        both PDs equal, each with its noise (independent draws; when the
        comparison PD kept no spread its noise is taken to be as large as the
        audited PD's).
    ``slope``, ``importance``
        a flat PD plus noise.
    ``interaction``
        the additive part of the 2D PD (row + column means - grand mean) plus
        noise: Greenwell's statistic of a surface without interaction.
    ``ice_variance``
        without heterogeneity every row's centred ICE curve is the same, so
        the statistic is exactly 0 whatever the sample: any value above
        floating-point noise rejects it (p = 0); materiality decides.
    ``correlation``
        the association tests of the data: Spearman's rank correlation test,
        one-way ANOVA F test (correlation ratio), Pearson's chi-squared test of
        independence (Cramer's V).

    The p-value is the Monte-Carlo one, ``(1 + #{null >= observed}) / (B + 1)``;
    when the observed score exceeds every draw, its tail is extrapolated with a
    scaled chi-squared distribution fitted to the mean and variance of the
    squared null draws (Satterthwaite 1946), so p-values smaller than 1 / (B + 1)
    stay comparable across the ~200 PDPs the correction runs over.  The
    "noise level" reported beside a score is the 95th percentile of its null
    draws.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from ..errors import InputError

__all__ = [
    "Evidence",
    "pd_noise",
    "monte_carlo_p",
    "adjust_p_values",
    "noise_level",
    "ADJUSTMENTS",
]

ADJUSTMENTS = ("bh", "holm")


@dataclass(frozen=True)
class Evidence:
    """Why a PDP is (or is not) a finding under one criterion.

    Attributes
    ----------
    criterion : str
        Utility or 2D criterion id.
    features : tuple of str
    value : float
        The score (higher = more interesting).
    p_value : float
        Probability of a score at least this large from noise alone (NaN when
        the noise could not be estimated).
    adjusted_p : float
        ``p_value`` adjusted for the number of PDPs scored under the criterion
        (Benjamini-Hochberg or Holm).
    noise_level : float
        95th percentile of the score under the null (NaN when not drawn).
    threshold : float
        The materiality threshold on the score's scale.
    material : bool
    significant : bool
    why : str
        One sentence: why it passed, or why not.
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

    @property
    def passed(self) -> bool:
        return bool(self.material and self.significant)

    def to_dict(self) -> dict:
        def num(v):
            return None if v is None or not np.isfinite(v) else float(v)

        return {
            "criterion": self.criterion, "features": list(self.features), "value": num(self.value),
            "p_value": num(self.p_value), "adjusted_p": num(self.adjusted_p), "noise_level": num(self.noise_level),
            "threshold": num(self.threshold), "material": self.material, "significant": self.significant,
            "passed": self.passed, "why": self.why,
        }


def _n_eff(result, target_index: int) -> float:
    std = np.asarray(result.std[target_index], dtype=float).ravel()
    se = np.asarray(result.stderr[target_index], dtype=float).ravel()
    ok = np.isfinite(std) & np.isfinite(se) & (se > 0) & (std > 0)
    if ok.any():
        return float(np.median((std[ok] / se[ok]) ** 2))
    return float(max(result.n_rows, 1))


def pd_noise(result, target_index: int, draws: int, rng) -> np.ndarray | None:
    """Bootstrap draws of the PD's sampling error, shape ``(draws, *grid_shape)`` (see module docs).

    None when the noise cannot be estimated (no ICE curves and no standard errors).
    """
    shape = result.grid_shape
    if result.individual is not None and np.asarray(result.individual).shape[1] >= 2:
        ice = np.asarray(result.individual[target_index], dtype=float).reshape(np.asarray(result.individual).shape[1], -1)
        m = ice.shape[0]
        counts = rng.multinomial(m, np.full(m, 1.0 / m), size=draws).astype(float) / m  # (B, m)
        dev = counts @ ice - ice.mean(axis=0)
        scale = np.sqrt(m / max(_n_eff(result, target_index), m))
        return (dev * scale).reshape((draws, *shape))
    se = np.asarray(result.stderr[target_index], dtype=float)
    if not np.isfinite(se).all():
        return None
    return rng.standard_normal((draws, *shape)) * se


def noise_level(null: np.ndarray) -> float:
    null = np.asarray(null, dtype=float)
    null = null[np.isfinite(null)]
    return float(np.quantile(null, 0.95)) if null.size else float("nan")


def monte_carlo_p(observed: float, null: np.ndarray, *, tol: float = 0.0) -> float:
    """Monte-Carlo p-value with a Satterthwaite tail beyond the largest draw (see module docs).

    ``tol``: scores at or below it count as exactly zero (floating-point noise).
    """
    null = np.asarray(null, dtype=float)
    null = null[np.isfinite(null)]
    if not np.isfinite(observed) or null.size == 0:
        return float("nan")
    if observed <= tol:
        return 1.0
    exceed = int(np.sum(null >= observed))
    p_mc = (1 + exceed) / (null.size + 1)
    if exceed > 0:
        return float(p_mc)
    sq = null ** 2
    mean, var = float(sq.mean()), float(sq.var(ddof=1)) if sq.size > 1 else 0.0
    if mean <= tol * tol or var <= 0:
        return 0.0  # the null is (numerically) a point mass at 0 and the score is above it
    a = var / (2 * mean)
    dof = 2 * mean * mean / var
    return float(min(p_mc, stats.chi2.sf(observed * observed / a, dof)))


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

"""The noise of a PD (see :mod:`autopdp.findings.significance`, "The noise of a PD"): its Gaussian model from the rows'
ICE curves (:class:`NoiseModel`, :func:`pd_noise_model`), the wild-bootstrap draws of a studentized test
(:meth:`NoiseModel.draw_studentized`), the materiality threshold's own sampling error drawn with it, and the rules
under which the noise is not trusted to be Gaussian (:func:`noise_gap_reason`).  Re-exported by
:mod:`autopdp.findings.significance`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..pd.sampling import ice_design as _ice_design

__all__ = ["NoiseModel", "mammen", "weighted_noise_factor", "skewness_of_departures", "noise_gap_reason",
           "gaussian_gap", "pd_noise_model", "with_threshold_noise", "pd_noise", "EFFECTIVE_ROWS_FLOOR",
           "COCHRAN_FACTOR"]


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
    #: the threshold's expected relative shortfall: the sample sd (a square root of a mean, ddof 0) is low by about
    #: ``1/(2n) + Var(sd_hat/sd)/2``; the null adds it back (:func:`threshold_bias`)
    threshold_bias: float = 0.0

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
                          threshold_bias=self.threshold_bias, rows=self.rows)

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


def threshold_bias(spread) -> float:
    """How far below the population's the sample prediction sd falls on average, relative to it: the sd is the square
    root of a mean of squares about the sample mean (ddof 0), so ``E[sd_hat] / sd ~ 1 - 1/(2n) - Var(sd_hat/sd)/2``
    (the second-order term of the square root; ``Var(sd_hat/sd) ~ sum r_i^2``, :func:`threshold_spread`'s shares,
    ``spread`` a :class:`~autopdp.scores.spread.ThresholdSpread`)."""
    if spread is None or not spread.size:
        return 0.0
    return float(0.5 / spread.size + 0.5 * spread.sum_sq)


def pd_noise_model(result, target_index: int, sample_weight=None, spread=None) -> NoiseModel | None:
    """:func:`_pd_noise_model`, with the threshold's bias (:func:`threshold_bias`) when its error is carried."""
    model = _pd_noise_model(result, target_index, sample_weight, spread)
    if model is None or model.spread is None:
        return model
    return dataclasses.replace(model, threshold_bias=threshold_bias(spread))


def _pd_noise_model(result, target_index: int, sample_weight=None, spread=None) -> NoiseModel | None:
    """The Gaussian noise of ``result``'s PD for one target (see module docs); None when it cannot be estimated
    or is not trusted to be Gaussian (:func:`noise_gap_reason` says why).

    ``spread``: every audit row's share of the threshold's relative error (:func:`autopdp.scores.scoring.threshold_spread`, one
    target).  When the PD averages over those rows and its ICE rows are some of them, the threshold's error is
    drawn jointly with the PD's (the same rows move both); otherwise as independent normal noise of the same
    variance."""
    shape = tuple(result.grid_shape)
    if noise_gap_reason(result, target_index, sample_weight):
        return None
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
                rest = float(spread.sum_sq - np.sum(kept * kept))
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
        return spread.at() if m == spread.size else None
    rows = np.asarray(rows, dtype=np.intp)
    return spread.at(rows) if rows.size == m and (rows.size == 0 or rows.max() < spread.size) else None


def _finite(model: NoiseModel) -> NoiseModel | None:
    ok = np.isfinite(model.factor).all() and (model.spread is None or np.isfinite(model.spread).all())
    return model if ok else None


def with_threshold_noise(model: NoiseModel, spread) -> NoiseModel:
    """``model`` with the threshold's error as independent normal noise (its variance ``sum r_i^2``; ``spread`` a
    :class:`~autopdp.scores.spread.ThresholdSpread`)."""
    if model is None or spread is None:
        return model
    cells = model.factor.shape[1]
    out = model.stacked(np.zeros((1, cells)), model.source)
    loading = np.concatenate([np.zeros(model.factor.shape[0]), [float(np.sqrt(spread.sum_sq))]])
    return dataclasses.replace(out, spread=loading)


def pd_noise(result, target_index: int, draws: int, rng, sample_weight=None) -> np.ndarray | None:
    """``draws`` draws of the PD's sampling error, shape ``(draws, *grid_shape)``; None when not estimable."""
    model = pd_noise_model(result, target_index, sample_weight)
    return None if model is None else model.draw(draws, rng)

"""The incidence criterion's two tests: does the model miss the data, or does the PD differ from the data's trend?

The paper's incidence utility (eq. 8-9) compares the PD at each grid value with
the share of the class (mean target) among the rows nearest it.  That gap has
two parts, and only one of them says anything against the model:

``calibration``
    In each bin (the rows nearest a grid value, tails pooled into the end
    points), the observed share (mean target) against the model's own mean
    prediction for the same rows.  Like is compared with like: for a correct
    model the two agree in every bin, however wide the bin and however the
    features depend on each other.  Null: the model is calibrated within the
    bins (the residuals ``y_i - f(x_i)``, the 0/1 class indicator less the
    probability for classifiers, average 0 in every bin).  Test: a wild
    bootstrap of the residuals, their signs flipped at random (under the null
    each bin's residuals have mean 0 whatever their variance, so the test holds
    for a correct model and for a model that is wrong row by row but right on
    average in the bin), bins with at least 30 rows drawn by their normal
    approximation.  (A parametric bootstrap that draws each row's class with its
    predicted probability tests the stronger null "the model is right for every
    row" and would call a bin miscalibrated whenever another feature's misfit
    does not cancel in it.)
``dependence``
    In each bin, the model's mean prediction for the bin's rows against the PD
    at those rows' own values (interpolated between grid values; rows outside
    the grid's range are left out, so a tail bin is never compared with the PD
    at a single grid value).  When the feature is independent of the others the
    two agree; when they differ, the PD (which averages over every row's other
    features) departs from the data's trend because the feature is correlated
    with other features.  This says nothing against the model.  Null: the
    departures ``f(x_i) - PD(x_i)`` average to 0 in every bin.  Test: wild
    bootstrap of the departures (signs flipped at random), plus the PD's own
    noise.

Both statistics are the standard utility (a density-weighted root-mean-square
over the bins) of the per-bin gaps, on the scale of the prediction.  Each is
tested as a minimum-effect null (see :mod:`autopdp.scores.significance`):
with a materiality threshold, the draws are centred on the observed per-bin
gaps shrunk until their statistic equals the threshold, so a finding rejects
"the gap is at most the threshold"; the zero-mean nulls above are the case of
threshold 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .utilities.base import gap_of_draws

__all__ = ["IncidenceParts", "incidence_parts", "NORMAL_BIN_ROWS"]

#: bins with at least this many rows are drawn by their normal approximation
NORMAL_BIN_ROWS = 30


@dataclass(frozen=True)
class IncidenceParts:
    """The two incidence statistics and their null samplers (see module docs).

    ``calibration`` / ``dependence``: the statistic (NaN when it cannot be computed);
    ``draw_calibration(n, rng)`` / ``draw_dependence(n, rng)``: ``n`` draws of it under its null.
    """

    calibration: float
    dependence: float
    draw_calibration: object
    draw_dependence: object
    dependence_rows: int


class _BinNoise:
    """Draws of per-bin weighted means of independent row deviations with mean 0.

    Rows in bins of at least :data:`NORMAL_BIN_ROWS` rows enter through the normal
    approximation of their bin's mean (variance ``sum sw_i^2 v_i / W_j^2``); rows
    of smaller bins are drawn one by one by ``row_draw(n, rng)``.
    """

    def __init__(self, bins, sw, variance, row_draw, size):
        self.size = size
        W = np.bincount(bins, weights=sw, minlength=size)
        n_rows = np.bincount(bins, minlength=size)
        self.big = n_rows >= NORMAL_BIN_ROWS
        var_mean = np.bincount(bins, weights=sw * sw * variance, minlength=size) / np.maximum(W, 1e-300) ** 2
        self.sd = np.where(self.big & (W > 0), np.sqrt(np.maximum(var_mean, 0.0)), 0.0)
        small_rows = ~self.big[bins]
        self.small_bins = bins[small_rows]
        self.small_coef = sw[small_rows] / np.maximum(W[self.small_bins], 1e-300)
        self.row_draw = row_draw
        self.small_mask = small_rows

    def draw(self, n: int, rng) -> np.ndarray:
        out = rng.standard_normal((n, self.size)) * self.sd
        if self.small_bins.size:
            dev = self.row_draw(n, rng, self.small_mask) * self.small_coef  # (n, small rows)
            for j in np.unique(self.small_bins):
                out[:, j] += dev[:, self.small_bins == j].sum(axis=1)
        return out


def _interpolation(positions, grid_values, cells, kind):
    """Each row's two grid neighbours and its weight on the upper one; rows outside the grid's range are out."""
    k = len(grid_values)
    if kind != "numeric" or positions is None:
        ok = cells >= 0
        return ok, np.maximum(cells, 0), np.zeros(cells.shape[0])
    g = np.asarray(grid_values, dtype=float)
    x = np.asarray(positions, dtype=float)
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(x) & (x >= g[0]) & (x <= g[-1]) & (cells >= 0)
    if k < 2:
        return ok, np.zeros(x.shape[0], dtype=np.int64), np.zeros(x.shape[0])
    lo = np.clip(np.searchsorted(g, np.where(ok, x, g[0]), side="right") - 1, 0, k - 2)
    span = g[lo + 1] - g[lo]
    frac = np.where(span > 0, (np.where(ok, x, g[0]) - g[lo]) / np.where(span > 0, span, 1.0), 0.0)
    return ok, lo, np.clip(frac, 0.0, 1.0)


def _shrunk(gaps, value: float, threshold: float) -> np.ndarray:
    """The per-bin gaps scaled so that their statistic (homogeneous in them) equals ``threshold``: the least
    favourable point of "the gap is at most the threshold" (zeros when the threshold is 0)."""
    g = np.nan_to_num(np.asarray(gaps, dtype=float), nan=0.0)
    if not (np.isfinite(value) and value > 0 and np.isfinite(threshold) and threshold > 0):
        return np.zeros_like(g)
    return g * min(1.0, float(threshold) / float(value))


def incidence_parts(*, predicted, observed, cells, size, sample_weight, pd_curve, positions, grid_values, kind,
                    noise, is_classifier: bool, loss: str, threshold: float = 0.0) -> IncidenceParts:
    """The calibration and dependence statistics of one 1D PD and their null samplers (see module docs).

    Parameters
    ----------
    predicted : (n_rows,) the model's prediction for the PD's target on every row
    observed : (n_rows,) the 0/1 class indicator (classifiers) or the target (regressors)
    cells : (n_rows,) each row's grid point (-1 for none)
    size : number of grid points
    sample_weight : (n_rows,) or None
    pd_curve : (size,) the PD
    positions : (n_rows,) the feature's values as numbers (numeric features), else None
    grid_values, kind : the PD's grid and feature kind
    noise : NoiseModel of the PD, or None
    threshold : the materiality threshold: each part's null draws are centred on its observed per-bin gaps
        shrunk until the statistic equals it (the minimum-effect null "the gap is at most the threshold");
        0 centres them on no gap (the plain test)
    """
    f = np.asarray(predicted, dtype=float)
    y = np.asarray(observed, dtype=float)
    sw = np.ones(f.shape[0]) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    ok = (cells >= 0) & np.isfinite(f) & np.isfinite(y) & (sw > 0)
    bins, fr, yr, wr = cells[ok], f[ok], y[ok], sw[ok]
    W = np.bincount(bins, weights=wr, minlength=size)
    omega = W / max(W.sum(), 1e-300)
    with np.errstate(invalid="ignore", divide="ignore"):
        gap_c = np.where(W > 0, np.bincount(bins, weights=wr * (yr - fr), minlength=size) / W, np.nan)
    calibration = float(gap_of_draws(gap_c, omega, loss)) if W.sum() > 0 else float("nan")

    resid = yr - fr  # 0/1 outcome less probability (classifiers), target less prediction (regressors)

    def row_draw_r(n, rng, mask):
        return resid[mask] * rng.choice(np.array([-1.0, 1.0]), size=(n, int(mask.sum())))

    cal_noise = _BinNoise(bins, wr, resid * resid, row_draw_r, size)

    centre_c = _shrunk(gap_c, calibration, threshold)

    def draw_calibration(n, rng):
        return gap_of_draws(centre_c + cal_noise.draw(n, rng), omega, loss)

    # ---- dependence: mean prediction of the bin's rows against the PD at those rows' own values
    pdc = np.asarray(pd_curve, dtype=float).ravel()
    pos = None if positions is None else np.asarray(positions, dtype=float)[ok]
    inside, lo, frac = _interpolation(pos, grid_values, bins, kind)
    dependence, draw_dependence, rows_d = float("nan"), None, int(inside.sum())
    if rows_d >= 2:
        b2, w2, f2 = bins[inside], wr[inside], fr[inside]
        lo2, fr2 = lo[inside], frac[inside]
        hi2 = np.minimum(lo2 + 1, size - 1)
        at_rows = (1 - fr2) * pdc[lo2] + fr2 * pdc[hi2]
        e = f2 - at_rows
        W2 = np.bincount(b2, weights=w2, minlength=size)
        omega2 = W2 / W2.sum()
        with np.errstate(invalid="ignore", divide="ignore"):
            gap_d = np.where(W2 > 0, np.bincount(b2, weights=w2 * e, minlength=size) / W2, np.nan)
        dependence = float(gap_of_draws(gap_d, omega2, loss))

        def row_draw_d(n, rng, mask):
            return e[mask] * rng.choice(np.array([-1.0, 1.0]), size=(n, int(mask.sum())))

        dep_noise = _BinNoise(b2, w2, e * e, row_draw_d, size)
        # the PD's own noise enters the bins through the interpolation weights: A (bins x grid points)
        A = np.zeros((size, size))
        np.add.at(A, (b2, lo2), w2 * (1 - fr2))
        np.add.at(A, (b2, hi2), w2 * fr2)
        A /= np.maximum(W2, 1e-300)[:, None]

        centre_d = _shrunk(gap_d, dependence, threshold)

        def draw_dependence(n, rng):
            d = centre_d + dep_noise.draw(n, rng)
            if noise is not None:
                d = d - noise.draw(n, rng).reshape(n, -1) @ A.T
            return gap_of_draws(d, omega2, loss)

    return IncidenceParts(calibration=calibration, dependence=dependence, draw_calibration=draw_calibration,
                          draw_dependence=draw_dependence, dependence_rows=rows_d)

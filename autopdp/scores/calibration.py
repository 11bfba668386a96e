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
    In each bin, the model's mean prediction for the bin's rows with the feature
    set to the bin's grid value, against the PD there (which averages the same
    prediction over every row).  The two differ only when the bin's rows carry
    other features unlike everyone's (as the model sees them at that value):
    when the feature is correlated with other features the PD departs from the
    data's trend.  This says nothing against the model.  The bin's mean is
    estimated without a model call: the mean prediction of all of the bin's rows
    at their own values, less the mean step from each row's own value to the
    grid value over the bin's ICE rows (exact when every row's ICE curve is
    kept; for a categorical feature every row is at its grid value and the step
    is 0).  No interpolation of the PD between grid values enters: the PD of a
    tree model is a staircase, and a straight line between grid values departs
    from it systematically, which the model's trend within a bin would show as
    a gap that is not there.  Null: the bins' gaps are 0 (the bin's other
    features are like everyone's, as seen through the model).  Test: wild
    bootstrap of each row's contribution to its bin's gap (its prediction's
    departure from the bin's mean and, for an ICE row, its step's departure
    from the bin's mean step, one random sign per row), plus the PD's own
    noise.  Bins with fewer than 2 rows, or no ICE row, are left out.

Both statistics are the standard utility (a density-weighted root-mean-square
over the bins) of the per-bin gaps, on the scale of the prediction.  Each is
tested as a minimum-effect null (see :mod:`autopdp.findings.significance`):
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
    """Draws of per-bin sums ``sum_i eps_i u_i`` over the bin's rows, ``eps_i`` random signs (the wild bootstrap).

    ``u_i`` is each row's contribution to its bin's statistic (its deviation times its weight in the bin's
    mean).  Bins of at least :data:`NORMAL_BIN_ROWS` rows are drawn by their normal approximation (variance
    ``sum u_i^2``); the rows of smaller bins are drawn one by one.
    """

    def __init__(self, bins, contrib, size):
        self.size = size
        n_rows = np.bincount(bins, minlength=size)
        big = n_rows >= NORMAL_BIN_ROWS
        self.sd = np.where(big, np.sqrt(np.bincount(bins, weights=contrib * contrib, minlength=size)), 0.0)
        small_rows = ~big[bins]
        self.small_bins = bins[small_rows]
        self.small_contrib = contrib[small_rows]

    def draw(self, n: int, rng) -> np.ndarray:
        out = rng.standard_normal((n, self.size)) * self.sd
        if self.small_bins.size:
            dev = self.small_contrib * rng.choice(np.array([-1.0, 1.0]), size=(n, self.small_bins.size))
            for j in np.unique(self.small_bins):
                out[:, j] += dev[:, self.small_bins == j].sum(axis=1)
        return out


def _shrunk(gaps, value: float, threshold: float) -> np.ndarray:
    """The per-bin gaps scaled so that their statistic (homogeneous in them) equals ``threshold``: the least
    favourable point of "the gap is at most the threshold" (zeros when the threshold is 0)."""
    g = np.nan_to_num(np.asarray(gaps, dtype=float), nan=0.0)
    if not (np.isfinite(value) and value > 0 and np.isfinite(threshold) and threshold > 0):
        return np.zeros_like(g)
    return g * min(1.0, float(threshold) / float(value))


def incidence_parts(*, predicted, observed, cells, sample_weight, pd_curve, kind, noise, loss: str,
                    threshold: float = 0.0, ice=None, ice_rows=None, ice_weight=None) -> IncidenceParts:
    """The calibration and dependence statistics of one 1D PD and their null samplers (see module docs).

    Parameters
    ----------
    predicted : (n_rows,) the model's prediction for the PD's target on every row
    observed : (n_rows,) the 0/1 class indicator (classifiers) or the target (regressors)
    cells : (n_rows,) each row's grid point (-1 for none)
    sample_weight : (n_rows,) or None
    pd_curve : (size,) the PD at its ``size`` grid points
    kind : the feature's kind ("numeric" needs ``ice`` for the dependence part; other kinds are at their grid value)
    noise : NoiseModel of the PD, or None
    threshold : the materiality threshold: each part's null draws are centred on its observed per-bin gaps
        shrunk until the statistic equals it (the minimum-effect null "the gap is at most the threshold");
        0 centres them on no gap (the plain test)
    ice : (n_ice, size) the ICE curves of the PD's target (the rows ``ice_rows``), or None
    ice_rows : (n_ice,) their row positions (None: every row, in order)
    ice_weight : (n_ice,) what each ICE row stands for (sample weight over its chance of being kept; None: equal)
    """
    size = np.asarray(pd_curve).size
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

    # 0/1 outcome less probability (classifiers), target less prediction (regressors): mean 0 under the null
    resid = yr - fr
    cal_noise = _BinNoise(bins, wr * resid / np.maximum(W[bins], 1e-300), size)
    centre_c = _shrunk(gap_c, calibration, threshold)

    def draw_calibration(n, rng):
        return gap_of_draws(centre_c + cal_noise.draw(n, rng), omega, loss)

    dependence, draw_dependence, rows_d = _dependence(bins, fr, wr, ok, pd_curve, kind, noise, loss,
                                                      threshold, ice, ice_rows, ice_weight)
    return IncidenceParts(calibration=calibration, dependence=dependence, draw_calibration=draw_calibration,
                          draw_dependence=draw_dependence, dependence_rows=rows_d)


def _inflation(bins, weights, size) -> np.ndarray:
    """Per bin ``sqrt(n / (n - 1))`` (``n`` the bin's effective rows): a mean's deviations from itself lose a
    degree of freedom, which this gives back to the wild bootstrap's variance."""
    n_eff = np.bincount(bins, weights=weights, minlength=size) ** 2 / np.maximum(
        np.bincount(bins, weights=weights * weights, minlength=size), 1e-300)
    return np.sqrt(n_eff / np.maximum(n_eff - 1.0, 1e-300))


def _dependence(bins, fr, wr, ok, pd_curve, kind, noise, loss, threshold, ice, ice_rows, ice_weight):
    """``(statistic, draws under its null, rows)`` of the dependence part (see module docs); ``bins``, ``fr``,
    ``wr`` are the usable rows' (``ok``) grid points, predictions and weights.

    Each row's value is its prediction at its bin's grid value less the PD there: an ICE row's own (its
    prediction less its step to the grid value), any other row's its prediction less the mean step of the bin's
    ICE rows.  The bin's gap is their weighted mean; its null draws flip each row's sign (uncentred: the values
    average 0 under the null) and add the noise of the bin's mean step, for the rows that use it."""
    none = (float("nan"), None, 0)
    pdc = np.asarray(pd_curve, dtype=float).ravel()
    size = pdc.size
    W = np.bincount(bins, weights=wr, minlength=size)
    usable = W > 0
    step = np.zeros(bins.size)
    extra = None
    if kind == "numeric":  # the step from each ICE row's own value to its bin's grid value
        if ice is None:
            return none
        curves = np.asarray(ice, dtype=float).reshape(-1, size)
        pos = np.arange(curves.shape[0]) if ice_rows is None else np.asarray(ice_rows, dtype=np.int64)
        h = np.ones(pos.size) if ice_weight is None else np.asarray(ice_weight, dtype=float)
        where = np.full(ok.shape[0], -1, dtype=np.int64)  # each row's place among the usable rows
        where[np.flatnonzero(ok)] = np.arange(bins.size)
        at = where[pos]
        keep = (at >= 0) & (h > 0)
        at, hk = at[keep], h[keep]
        kb = bins[at]
        sk = fr[at] - curves[np.flatnonzero(keep), kb]
        fin = np.isfinite(sk)
        at, kb, sk, hk = at[fin], kb[fin], sk[fin], hk[fin]
        H = np.bincount(kb, weights=hk, minlength=size)
        with np.errstate(invalid="ignore", divide="ignore"):
            m2 = np.where(H > 0, np.bincount(kb, weights=hk * sk, minlength=size) / H, 0.0)
        usable &= H > 0
        has_ice = np.zeros(bins.size, dtype=bool)
        has_ice[at] = True
        step = m2[bins]
        step[at] = sk
        # the rows without a curve use the bin's mean step: its noise, weighted by their share of the bin
        share_other = np.bincount(bins[~has_ice], weights=wr[~has_ice], minlength=size) / np.maximum(W, 1e-300)
        extra = np.zeros(bins.size)
        extra[at] = (share_other[kb] * hk * (sk - m2[kb]) / np.maximum(H[kb], 1e-300)
                     * _inflation(kb, hk, size)[kb])
    if not usable.any():
        return none
    u = wr * (fr - step - pdc[bins]) / np.maximum(W[bins], 1e-300)  # each row's part in its bin's gap
    if extra is not None:
        u = u - extra  # one row, one sign: its value and its share in the mean step together
    gap = np.where(usable, np.bincount(bins, weights=u, minlength=size), np.nan)
    omega = np.where(usable, W, 0.0) / W[usable].sum()
    dependence = float(gap_of_draws(gap, omega, loss))
    rows_in = usable[bins]
    bin_noise = _BinNoise(bins[rows_in], u[rows_in], size)
    centre = _shrunk(gap, dependence, threshold)

    def draw_dependence(n, rng):
        d = centre + bin_noise.draw(n, rng)
        if noise is not None:
            d = d - noise.draw(n, rng).reshape(n, -1)
        return gap_of_draws(d, omega, loss)

    return dependence, draw_dependence, int(rows_in.sum())

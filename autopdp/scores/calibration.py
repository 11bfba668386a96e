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

from ..pd.rows import chunk_bounds
from .cells import GridCells
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
    mean).  Bins of at least :data:`NORMAL_BIN_ROWS` rows are drawn by their normal approximation (standard
    deviation ``sd``: ``sqrt(sum u_i^2)``); the rows of smaller bins are drawn one by one (``small_bins`` and
    ``small_contrib``: their bins and contributions, in row order).
    """

    def __init__(self, sd, small_bins, small_contrib, size):
        self.size = size
        self.sd = sd
        self.small_bins = small_bins
        self.small_contrib = small_contrib

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


class _Rows:
    """The rows :func:`incidence_parts` reads, a chunk of at most :data:`autopdp.pd.rows.CHUNK_ROWS` at a time:
    each chunk's usable rows (a grid point, finite prediction and target, positive weight) as
    ``(local, bins, fr, yr, wr)``."""

    def __init__(self, predicted, observed, cells: GridCells, sample_weight):
        self.f, self.y, self.cells = predicted, observed, cells
        self.w = None if sample_weight is None else np.asarray(sample_weight, dtype=float)
        self.bounds = chunk_bounds(len(cells))

    def usable(self, rows, cells) -> np.ndarray:
        """Whether the rows ``rows`` (an index or a slice), in the cells ``cells``, are usable."""
        w = 1.0 if self.w is None else self.w[rows]
        return (cells >= 0) & np.isfinite(self.f[rows]) & np.isfinite(self.y[rows]) & (w > 0)

    def chunk(self, a: int, b: int) -> tuple:
        cells = self.cells.chunk(a, b)
        ok = self.usable(slice(a, b), cells)
        local = np.flatnonzero(ok)
        f = np.asarray(self.f[a:b], dtype=float)[ok]
        w = np.ones(local.size) if self.w is None else self.w[a:b][ok]
        return local, cells[ok], f, np.asarray(self.y[a:b], dtype=float)[ok], w


def incidence_parts(*, predicted, observed, cells, sample_weight, pd_curve, kind, noise, loss: str,
                    threshold: float = 0.0, ice=None, ice_rows=None, ice_weight=None) -> IncidenceParts:
    """The calibration and dependence statistics of one 1D PD and their null samplers (see module docs).

    Parameters
    ----------
    predicted : (n_rows,) the model's prediction for the PD's target on every row
    observed : (n_rows,) the 0/1 class indicator (classifiers) or the target (regressors)
    cells : (n_rows,) each row's grid point (-1 for none), or a :class:`~autopdp.scores.cells.GridCells`
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

    The rows are read in chunks (:func:`autopdp.pd.rows.chunk_bounds`; some 150 bytes a row of temporaries) in two
    passes (the bins' sums, then each row's part in its bin's noise, which needs the bins' totals): the same
    statistics and draws as one pass over every row, up to the order of floating-point sums.
    """
    pdc = np.asarray(pd_curve, dtype=float).ravel()
    size = pdc.size
    rows = _Rows(predicted, observed, GridCells.of(cells, (size,)), sample_weight)
    steps = _ice_steps(rows, kind, ice, ice_rows, ice_weight, size)
    sums = [_first_pass(rows.chunk(a, b), a, b, steps, size) for a, b in rows.bounds]
    W, n, R, other = (np.sum([s[i] for s in sums], axis=0) if sums else np.zeros(size) for i in range(4))
    omega = W / max(W.sum(), 1e-300)
    with np.errstate(invalid="ignore", divide="ignore"):
        gap_c = np.where(W > 0, R / W, np.nan)
    calibration = float(gap_of_draws(gap_c, omega, loss)) if W.sum() > 0 else float("nan")
    dep = _dependence_design(steps, W, n, other, kind, size)
    second = [_second_pass(rows.chunk(a, b), a, b, W, n, dep, pdc) for a, b in rows.bounds]
    cal_noise = _bin_noise([s[0] for s in second], n, size)
    centre_c = _shrunk(gap_c, calibration, threshold)

    def draw_calibration(k, rng):
        return gap_of_draws(centre_c + cal_noise.draw(k, rng), omega, loss)

    dependence, draw_dependence, rows_d = _dependence(dep, [s[1] for s in second], W, n, noise, loss, threshold,
                                                      size)
    return IncidenceParts(calibration=calibration, dependence=dependence, draw_calibration=draw_calibration,
                          draw_dependence=draw_dependence, dependence_rows=rows_d)


def _ice_steps(rows: _Rows, kind, ice, ice_rows, ice_weight, size):
    """The ICE rows' steps from their own value to their bin's grid value, or None (a feature of another kind
    is at its grid value: no step; a numeric one without ICE curves has no dependence part):
    ``(pos, kb, sk, hk)``: the usable ICE rows' positions, bins, steps and weights, in the ICE rows' order."""
    if kind != "numeric" or ice is None:
        return None
    curves = np.asarray(ice, dtype=float).reshape(-1, size)
    pos = np.arange(curves.shape[0]) if ice_rows is None else np.asarray(ice_rows, dtype=np.int64)
    h = np.ones(pos.size) if ice_weight is None else np.asarray(ice_weight, dtype=float)
    at = rows.cells.at(pos)
    keep = (rows.usable(pos, at) if pos.size else np.zeros(0, dtype=bool)) & (h > 0)
    pk, hk = pos[keep], h[keep]
    kb = at[keep]
    sk = np.asarray(rows.f[pk], dtype=float) - curves[np.flatnonzero(keep), kb]
    fin = np.isfinite(sk)
    return pk[fin], kb[fin], sk[fin], hk[fin]


def _first_pass(chunk, a: int, b: int, steps, size) -> tuple:
    """One chunk's per-bin sums: weight, rows, weighted residual and weight of the rows without an ICE step."""
    local, bins, fr, yr, wr = chunk
    other = np.ones(bins.size, dtype=bool)
    if steps is not None:
        other[np.searchsorted(local, _in_chunk(steps[0], a, b))] = False
    return (np.bincount(bins, weights=wr, minlength=size), np.bincount(bins, minlength=size).astype(float),
            np.bincount(bins, weights=wr * (yr - fr), minlength=size),
            np.bincount(bins[other], weights=wr[other], minlength=size))


def _in_chunk(pos, a: int, b: int) -> np.ndarray:
    """The positions ``pos`` in ``a:b``, as positions in the chunk."""
    return pos[(pos >= a) & (pos < b)] - a


def _inflation(bins, weights, size) -> np.ndarray:
    """Per bin ``sqrt(n / (n - 1))`` (``n`` the bin's effective rows): a mean's deviations from itself lose a
    degree of freedom, which this gives back to the wild bootstrap's variance."""
    n_eff = np.bincount(bins, weights=weights, minlength=size) ** 2 / np.maximum(
        np.bincount(bins, weights=weights * weights, minlength=size), 1e-300)
    return np.sqrt(n_eff / np.maximum(n_eff - 1.0, 1e-300))


def _dependence_design(steps, W, n, other, kind, size):
    """What the second pass needs of the dependence part: ``(usable bins, each bin's mean step, the ICE rows'
    positions, steps and extra terms)``, or None when it has no part (see :func:`_ice_steps`).

    An ICE row's value is its prediction less its own step; any other row's, its prediction less its bin's mean
    step, whose noise the ICE rows carry (``extra``, weighted by the other rows' share of the bin)."""
    usable = W > 0
    if kind != "numeric":
        return usable, np.zeros(size), np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0)
    if steps is None:
        return None
    pk, kb, sk, hk = steps
    H = np.bincount(kb, weights=hk, minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        m2 = np.where(H > 0, np.bincount(kb, weights=hk * sk, minlength=size) / H, 0.0)
    share_other = other / np.maximum(W, 1e-300)
    extra = share_other[kb] * hk * (sk - m2[kb]) / np.maximum(H[kb], 1e-300) * _inflation(kb, hk, size)[kb]
    order = np.argsort(pk, kind="stable")
    return usable & (H > 0), m2, pk[order], sk[order], extra[order]


def _second_pass(chunk, a: int, b: int, W, n, dep, pdc) -> tuple:
    """One chunk's parts in the bins' noise: ``(calibration, dependence)``, each ``(sum of squares per bin, the
    small bins' rows as (bins, contributions))`` (dependence None when it has no part)."""
    local, bins, fr, yr, wr = chunk
    size = pdc.size
    Wb = np.maximum(W[bins], 1e-300)
    contrib = wr * (yr - fr) / Wb
    calibration = _noise_part(bins, contrib, n >= NORMAL_BIN_ROWS, size)
    if dep is None:
        return calibration, None
    usable, m2, pk, sk, extra = dep
    step = m2[bins]
    inside = (pk >= a) & (pk < b)
    at = np.searchsorted(local, pk[inside] - a)
    step[at] = sk[inside]
    u = wr * (fr - step - pdc[bins]) / Wb  # each row's part in its bin's gap
    u[at] -= extra[inside]  # one row, one sign: its value and its share in the mean step together
    rows_in = usable[bins]
    big = usable & (n >= NORMAL_BIN_ROWS)
    return calibration, (np.bincount(bins, weights=u, minlength=size),
                         _noise_part(bins[rows_in], u[rows_in], big, size))


def _noise_part(bins, contrib, big, size) -> tuple:
    small = ~big[bins]
    return np.bincount(bins, weights=contrib * contrib, minlength=size), bins[small], contrib[small]


def _bin_noise(parts, n, size) -> _BinNoise:
    """The chunks' noise parts merged (:class:`_BinNoise`: big bins by their sums of squares, small ones row by
    row in row order)."""
    big = n >= NORMAL_BIN_ROWS
    sq = np.sum([p[0] for p in parts], axis=0) if parts else np.zeros(size)
    cat = (lambda i: np.concatenate([p[i] for p in parts])) if parts else (lambda i: np.zeros(0))
    return _BinNoise(np.where(big, np.sqrt(sq), 0.0), cat(1).astype(np.int64), cat(2).astype(float), size)


def _dependence(dep, parts, W, n, noise, loss, threshold, size):
    """``(statistic, draws under its null, rows)`` of the dependence part (see module docs) from the second
    pass's ``parts``: the bin's gap is the weighted mean of its rows' values less the PD there; its null draws
    flip each row's sign (uncentred: the values average 0 under the null) and add the noise of the bin's mean
    step, for the rows that use it."""
    none = (float("nan"), None, 0)
    if dep is None or not dep[0].any():
        return none
    usable = dep[0]
    gap = np.where(usable, np.sum([p[0] for p in parts], axis=0), np.nan)
    omega = np.where(usable, W, 0.0) / W[usable].sum()
    dependence = float(gap_of_draws(gap, omega, loss))
    bin_noise = _bin_noise([p[1] for p in parts], np.where(usable, n, 0), size)
    centre = _shrunk(gap, dependence, threshold)

    def draw_dependence(k, rng):
        d = centre + bin_noise.draw(k, rng)
        if noise is not None:
            d = d - noise.draw(k, rng).reshape(k, -1)
        return gap_of_draws(d, omega, loss)

    return dependence, draw_dependence, int(np.where(usable, n, 0).sum())

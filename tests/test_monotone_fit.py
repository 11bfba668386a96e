"""The monotone and Lipschitz fits are fitted with the weights and loss the score is measured with.

Every check is against a fit computed independently in this file: ``scipy.optimize.isotonic_regression``
with weights (L2 monotone), brute force over candidate values and ``scipy.optimize.linprog`` (L1 monotone),
``scipy.optimize.lsq_linear`` and small cvxpy problems (Lipschitz).
"""

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import isotonic_regression, linprog, lsq_linear
from sklearn.ensemble import HistGradientBoostingRegressor

from autopdp import AuditConfig
from autopdp import audit
from autopdp.pd.result import PDResult
from autopdp.findings.evidence import fast_lipschitz_fit_1d
from autopdp.findings.null_draws import stat_monotonicity
from autopdp.scores.utilities import isotonic_fit, lipschitz_fit, score_lipschitz, score_monotonicity
from autopdp.scores.utilities.monotone_fit import MonotoneGap, isotonic_median, monotone_fit

DIRS = (True, False)


def pd_result(f: np.ndarray) -> PDResult:
    """A numeric PD (1D or 2D) with the given surface, for scoring."""
    f = np.asarray(f, dtype=float)
    names = ("a", "b")[: f.ndim]
    return PDResult(features=names, kinds=("numeric",) * f.ndim, grid=tuple(np.arange(n, dtype=float) for n in f.shape),
                    average=f[None], individual=None, std=np.zeros((1, *f.shape)), stderr=np.zeros((1, *f.shape)),
                    counts=np.ones(f.shape, dtype=int), targets=("y",), response="predict", n_rows=int(f.size),
                    ordered=(True,) * f.ndim)


def random_weights(rng, shape, zeros=True):
    w = rng.gamma(0.7, size=shape)
    if zeros:
        w[rng.uniform(size=shape) < 0.15] = 0.0  # grid points without data
    if not (w > 0).any():
        w.flat[0] = 1.0
    return w / w.sum()


# ------------------------------------------------------------------ independent references
def ref_gap_1d(f, w) -> float:
    """min over directions of the weighted RMS gap to scipy's weighted isotonic fit on the points with data."""
    m = w > 0
    costs = [np.dot(w[m], (f[m] - isotonic_regression(f[m], weights=w[m], increasing=inc).x) ** 2) for inc in DIRS]
    return float(np.sqrt(min(costs) / w.sum()))


def ref_gap_2d(f, w) -> float:
    """Each axis: one direction for all lines (the better total), each line its own weighted fit; the worse axis."""
    axes = []
    for axis in (0, 1):
        lines, wl = np.moveaxis(f, axis, -1), np.moveaxis(w, axis, -1)
        per_dir = []
        for inc in DIRS:
            cost = 0.0
            for line, lw in zip(lines, wl):
                m = lw > 0
                if m.any():
                    cost += np.dot(lw[m], (line[m] - isotonic_regression(line[m], weights=lw[m], increasing=inc).x) ** 2)
            per_dir.append(cost)
        axes.append(np.sqrt(min(per_dir) / w.sum()))
    return float(max(axes))


def brute_l1(f, w, increasing) -> float:
    """The smallest sum w |f - g| over monotone g: some optimum takes its values among f's values."""
    vals = np.unique(f)
    best = np.inf
    for combo in itertools.combinations_with_replacement(vals, f.size):
        g = np.array(combo if increasing else combo[::-1])
        best = min(best, float(np.dot(w, np.abs(f - g))))
    return best


def lp_l1(f, w, increasing) -> float:
    """The same optimum as a linear program over (g, t): min sum w t, |f - g| <= t, g monotone."""
    k = f.size
    eye = np.eye(k)
    d = (np.eye(k, k, 1) - eye)[:-1]  # (g_{i+1} - g_i)
    order = -d if increasing else d  # order @ g <= 0
    A = np.block([[eye, -eye], [-eye, -eye], [order, np.zeros((k - 1, k))]])
    b = np.concatenate([f, -f, np.zeros(k - 1)])
    res = linprog(np.concatenate([np.zeros(k), w]), A_ub=A, b_ub=b, bounds=[(None, None)] * k + [(0, None)] * k,
                  method="highs")
    assert res.status == 0
    return float(res.fun)


# ------------------------------------------------------------------ monotonicity, L2
@pytest.mark.parametrize("seed", range(12))
def test_1d_gap_equals_an_independent_weighted_isotonic_fit(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(3, 40))
    f = np.cumsum(rng.normal(size=k)) + rng.normal(scale=2.0, size=k) * (seed % 3 == 0)
    w = random_weights(rng, k, zeros=seed % 2 == 0)
    s = score_monotonicity(pd_result(f), target_index=0, weights=w)
    assert abs(s.value - ref_gap_1d(f, w)) <= 1e-12
    g = s.comparison
    steps = np.diff(g)
    assert np.all(steps >= -1e-12) if s.details["direction"] == "increasing" else np.all(steps <= 1e-12)
    # the noise test refits each draw the same way: its statistic of the PD itself is the score
    assert abs(MonotoneGap(w, ["increasing", "decreasing"])(f) - s.value) <= 1e-12


@pytest.mark.parametrize("seed", range(8))
def test_2d_gap_equals_independent_weighted_fits_of_every_line(seed):
    rng = np.random.default_rng(100 + seed)
    shape = (int(rng.integers(2, 12)), int(rng.integers(2, 12)))
    f = rng.normal(size=shape).cumsum(axis=seed % 2) + 0.5 * rng.normal(size=shape)
    w = random_weights(rng, shape, zeros=seed % 2 == 1)
    s = score_monotonicity(pd_result(f), target_index=0, weights=w)
    assert abs(s.value - ref_gap_2d(f, w)) <= 1e-12
    axis = s.details["axis"] == "b"
    steps = np.diff(s.comparison, axis=int(axis))
    assert np.all(steps >= -1e-12) if s.details["direction"] == "increasing" else np.all(steps <= 1e-12)


def test_declared_direction_fits_that_direction_with_the_weights():
    rng = np.random.default_rng(7)
    f = np.cumsum(rng.normal(size=20))
    w = random_weights(rng, 20)
    m = w > 0
    for d in ("increasing", "decreasing"):
        s = score_monotonicity(pd_result(f), target_index=0, weights=w, directions=(d,))
        ref = isotonic_regression(f[m], weights=w[m], increasing=d == "increasing").x
        assert s.details["direction"] == d and s.details["declared"]
        assert abs(s.value - np.sqrt(np.dot(w[m], (f[m] - ref) ** 2) / w.sum())) <= 1e-12


def test_known_curve_where_the_unweighted_fit_overstates_the_gap():
    """f = (0, 1, 0.1), w = (1, 1, 8)/10.  Unweighted, increasing fits better (SSE 0.405 < 0.5) with
    g = (0, 0.55, 0.55): its weighted gap is sqrt((0.2025 + 8 * 0.2025) / 10) = 0.4269.  Weighted,
    decreasing fits better (0.5 < 0.72 for increasing (0, 0.2, 0.2)), g = (0.5, 0.5, 0.1): gap sqrt(0.05)."""
    f = np.array([0.0, 1.0, 0.1])
    w = np.array([1.0, 1.0, 8.0]) / 10
    s = score_monotonicity(pd_result(f), target_index=0, weights=w)
    assert s.details["direction"] == "decreasing"
    np.testing.assert_allclose(s.comparison, [0.5, 0.5, 0.1], rtol=0, atol=1e-15)
    assert s.value == pytest.approx(np.sqrt(0.05), rel=1e-14)
    unweighted = isotonic_fit(f, True)
    np.testing.assert_allclose(unweighted, [0.0, 0.55, 0.55], rtol=0, atol=1e-15)
    old = np.sqrt(np.dot(w, (f - unweighted) ** 2))
    assert old == pytest.approx(np.sqrt(0.18225), rel=1e-14) and old > s.value * 1.9


def test_empty_grid_points_are_free_and_filled_monotone():
    f = np.array([0.0, 3.0, -1.0, 2.0, 1.0, 0.5, 4.0])
    w = np.array([1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0])
    g = monotone_fit(f, w, True)
    m = w > 0
    np.testing.assert_allclose(g[m], isotonic_regression(f[m], weights=w[m]).x, rtol=0, atol=1e-15)
    assert np.all(np.diff(g) >= 0)
    # between fitted 0 and 1.5: the run (3, -1) is pooled to 1 (inside the band); 0.5 is clipped up to 1.5
    np.testing.assert_allclose(g, [0.0, 1.0, 1.0, 1.5, 1.5, 1.5, 4.0], rtol=0, atol=1e-15)


def test_monotone_constrained_boosting_scores_zero():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.uniform(-2, 2, size=(1500, 3)), columns=["up", "down", "free"])
    y = (np.sin(2 * X["up"]) + X["up"] - np.cos(X["down"]) * X["down"] + np.sin(3 * X["free"])
         + 0.3 * rng.normal(size=len(X)))
    model = HistGradientBoostingRegressor(monotonic_cst=[1, -1, 0], max_iter=60, random_state=0).fit(X, y)
    a = audit(model, X, config=AuditConfig(pairs=False, grid_resolution=30))
    for feature, direction in (("up", "increasing"), ("down", "decreasing")):
        s = a.score(feature, "monotonicity")
        assert s.value < 1e-12 and s.details["direction"] == direction
    free = a.score("free", "monotonicity")
    assert free.value > 0.05  # the unconstrained sine is not monotone
    r = a.pd("free")
    assert abs(free.value - ref_gap_1d(np.asarray(r.average[0], dtype=float), np.asarray(r.density, dtype=float))) <= 1e-12


def test_noise_draws_refit_with_the_weights():
    """The Monte-Carlo null of the evidence stage: each draw's statistic is the weighted gap of that draw."""
    rng = np.random.default_rng(3)
    k = 15
    centre = np.sort(rng.normal(size=k))
    w = random_weights(rng, k)
    noise = np.random.default_rng(11).normal(scale=0.3, size=(6, k))
    for loss in ("l2", "l1"):
        out = stat_monotonicity(w, loss, ["increasing", "decreasing"])(centre[None] + noise)
        for b in range(6):
            h = centre + noise[b]
            ref = ref_gap_1d(h, w) if loss == "l2" else min(
                lp_l1(h[w > 0], w[w > 0], inc) for inc in DIRS) / w.sum()
            assert abs(out[b] - ref) <= 1e-9 * max(1.0, ref)


# ------------------------------------------------------------------ monotonicity, L1
@pytest.mark.parametrize("seed", range(40))
def test_isotonic_median_attains_the_brute_force_optimum(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 8))
    # ties in values and in weights (integers) are where a median rule can go wrong
    f = rng.integers(0, 4, k).astype(float) if seed % 2 else rng.normal(size=k)
    w = rng.integers(1, 4, k).astype(float) if seed % 3 else rng.uniform(0.05, 2.0, k)
    for inc in DIRS:
        g = isotonic_median(f, w, inc)
        steps = np.diff(g)
        assert np.all(steps >= 0) if inc else np.all(steps <= 0)
        assert abs(float(np.dot(w, np.abs(f - g))) - brute_l1(f, w, inc)) <= 1e-12


@pytest.mark.parametrize("seed", range(6))
def test_l1_gap_is_the_weighted_isotonic_median_gap(seed):
    rng = np.random.default_rng(200 + seed)
    k = 30
    f = np.cumsum(rng.normal(size=k)) + rng.normal(size=k)
    w = random_weights(rng, k)
    s = score_monotonicity(pd_result(f), target_index=0, weights=w, loss="l1")
    m = w > 0
    ref = min(lp_l1(f[m], w[m], inc) for inc in DIRS) / w.sum()
    assert abs(s.value - ref) <= 1e-9 * max(ref, 1.0)
    # never worse than the L2 fit scored under L1 (which the score used to be)
    l2_fit = score_monotonicity(pd_result(f), target_index=0, weights=w).comparison
    assert s.value <= np.dot(w, np.abs(f - l2_fit)) / w.sum() + 1e-12


def test_l1_2d_lines_against_brute_force():
    rng = np.random.default_rng(5)
    f = rng.integers(0, 4, size=(4, 5)).astype(float)
    w = rng.integers(0, 3, size=(4, 5)).astype(float)
    w[0, 0] = 1.0
    s = score_monotonicity(pd_result(f), target_index=0, weights=w, loss="l1")
    axes = []
    for axis in (0, 1):
        lines, wl = np.moveaxis(f, axis, -1), np.moveaxis(w, axis, -1)
        axes.append(min(sum(brute_l1(line[lw > 0], lw[lw > 0], inc) for line, lw in zip(lines, wl) if (lw > 0).any())
                        for inc in DIRS) / w.sum())
    assert abs(s.value - max(axes)) <= 1e-12


# ------------------------------------------------------------------ Lipschitz
def lipschitz_reference_l2(f, x, bound, w):
    """argmin sum w (f - g)^2 with |g_{i+1} - g_i| <= bound dx_i, by lsq_linear in (g_0, increments), w > 0."""
    k = f.size
    A = np.tril(np.ones((k, k)))
    b = bound * np.diff(x)
    s = np.sqrt(w)
    z = lsq_linear(A * s[:, None], f * s, bounds=(np.r_[-np.inf, -b], np.r_[np.inf, b]), method="bvls", tol=1e-14).x
    return A @ z


@pytest.mark.parametrize("seed", range(4))
def test_weighted_lipschitz_fit_equals_an_independent_solver(seed):
    rng = np.random.default_rng(300 + seed)
    k = 25 + 5 * seed
    x = np.sort(rng.uniform(0, 5, k))
    f = np.cumsum(rng.normal(size=k)) * (1 + seed)
    w = rng.gamma(0.7, size=k) + 1e-3
    w /= w.sum()
    bound = 0.6
    ref = lipschitz_reference_l2(f, x, bound, w)
    g, how = lipschitz_fit(f, [x], [bound], weights=w)
    assert how in ("CLARABEL", "OSQP")
    scale = np.abs(f).max()
    np.testing.assert_allclose(g, ref, rtol=0, atol=1e-5 * scale)
    np.testing.assert_allclose(fast_lipschitz_fit_1d(f, x, bound, w), ref, rtol=0, atol=1e-8 * scale)
    r = PDResult(features=("a",), kinds=("numeric",), grid=(x,), average=f[None], individual=None,
                 std=np.zeros((1, k)), stderr=np.zeros((1, k)), counts=np.ones(k, dtype=int), targets=("y",),
                 response="predict", n_rows=k, ordered=(True,))
    s = score_lipschitz(r, target_index=0, weights=w, slopes=[bound])
    ref_value = np.sqrt(np.dot(w, (f - ref) ** 2) / w.sum())
    assert s.value == pytest.approx(ref_value, rel=1e-6)
    # the unweighted fit is a worse curve under the weighted score
    unweighted, _ = lipschitz_fit(f, [x], [bound])
    assert np.sqrt(np.dot(w, (f - unweighted) ** 2) / w.sum()) >= ref_value - 1e-9


def test_weighted_lipschitz_with_empty_points_and_l1_against_cvxpy_written_here():
    import cvxpy as cp

    rng = np.random.default_rng(9)
    k = 20
    x = np.linspace(0, 1, k)
    f = np.where(x > 0.5, 1.0, 0.0) + 0.2 * rng.normal(size=k)
    w = rng.uniform(0.1, 1.0, k)
    w[[2, 3, 15]] = 0.0
    bound = 1.5
    m = w > 0
    for loss in ("l2", "l1"):
        g = cp.Variable(k)
        r = g - f
        obj = cp.sum(cp.multiply(w, cp.abs(r))) if loss == "l1" else cp.sum(cp.multiply(w, cp.square(r)))
        cp.Problem(cp.Minimize(obj), [cp.abs(cp.diff(g)) <= bound * np.diff(x)]).solve(solver="CLARABEL")
        best = float(obj.value)
        ours, _ = lipschitz_fit(f, [x], [bound], weights=w, loss=loss)
        fast = fast_lipschitz_fit_1d(f, x, bound, w, loss)
        for fit in (ours, fast):
            assert np.all(np.abs(np.diff(fit)) <= bound * np.diff(x) + 1e-7)
            d = f[m] - fit[m]
            cost = float(np.dot(w[m], np.abs(d) if loss == "l1" else d * d))
            assert cost == pytest.approx(best, rel=1e-5, abs=1e-8)


def test_weighted_lipschitz_2d_against_cvxpy_written_here():
    import cvxpy as cp

    rng = np.random.default_rng(4)
    f = rng.normal(size=(7, 8)).cumsum(0).cumsum(1)
    xs, ys = np.linspace(0, 1, 7), np.linspace(0, 2, 8)
    w = rng.uniform(0.05, 1.0, size=(7, 8))
    g = cp.Variable((7, 8))
    obj = cp.sum(cp.multiply(w, cp.square(g - f)))
    cons = [cp.abs(g[1:] - g[:-1]) <= 3.0 * np.diff(xs)[:, None] * np.ones((1, 8)),
            cp.abs(g[:, 1:] - g[:, :-1]) <= np.ones((7, 1)) * np.diff(ys)[None, :]]
    cp.Problem(cp.Minimize(obj), cons).solve(solver="CLARABEL")
    ours, _ = lipschitz_fit(f, [xs, ys], [3.0, 1.0], weights=w)
    assert float(np.sum(w * (f - ours) ** 2)) == pytest.approx(float(obj.value), rel=1e-6)
    np.testing.assert_allclose(ours, g.value, rtol=0, atol=1e-4 * np.abs(f).max())

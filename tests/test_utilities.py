"""The AutoPDP utilities, importance, interaction and selection against known answers."""

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import lsq_linear
from sklearn.linear_model import LogisticRegression

import autopdp
from autopdp import AuditConfig
from autopdp import audit
from autopdp.scores.importance import pd_importance, pd_interaction
from autopdp.scores.utilities import isotonic_fit, lipschitz_fit, standard_utility


@pytest.fixture(scope="module")
def U():
    rng = np.random.default_rng(42)
    return pd.DataFrame(rng.uniform(0, 1, size=(600, 4)), columns=["x1", "x2", "x3", "x4"])


def cols(d):
    return [d[c].to_numpy() for c in ["x1", "x2", "x3", "x4"]]


ONE_D = AuditConfig(pairs=False, grid_resolution=25)


def top(a, name, **kw):
    return a.ranking(name, **kw)["features"].iloc[0]


def test_standard_utility_definition():
    f = np.array([0.0, 1.0, 2.0, 3.0])
    g = np.array([0.0, 1.0, 1.0, 3.0])
    w = np.array([0.1, 0.2, 0.3, 0.4])
    assert standard_utility(f, g, w, "l2") == pytest.approx(np.sqrt(0.3 / 1.0), rel=0, abs=1e-12)
    assert standard_utility(f, g, w, "l1") == pytest.approx(0.3, rel=0, abs=1e-12)
    # no data near a point: it weighs nothing; an undefined g is left out
    assert standard_utility(f, np.array([0, 1, np.nan, 3.0]), w, "l2") == 0.0
    assert np.isnan(standard_utility(f, g, np.zeros(4)))


def test_monotone_model_scores_zero_and_bump_ranks_first(U):
    def model(d):
        x1, x2, x3, x4 = cols(d)
        return 2 * x1 + np.exp(x2) - x3 + 0.5 * np.exp(-((x4 - 0.5) ** 2) / 0.01)

    a = audit(model, U, config=ONE_D)
    s = a.scores.set_index(a.scores["features"].map(lambda t: t[0]))
    assert s.loc["x1", "monotonicity"] < 1e-12
    assert s.loc["x2", "monotonicity"] < 1e-12
    assert s.loc["x3", "monotonicity"] < 1e-12
    assert s.loc["x4", "monotonicity"] > 0.05
    assert top(a, "monotonicity") == ("x4",)
    verdict = a.score("x3", "monotonicity")
    assert verdict.details["direction"] == "decreasing"
    np.testing.assert_allclose(verdict.comparison, a.pd("x3").average[0], rtol=0, atol=1e-12)


def test_declared_direction_against_the_model_ranks_first(U):
    def model(d):
        x1, x2, x3, x4 = cols(d)
        return x1 + 3 * x2 + x3 * 2 + x4

    plain = audit(model, U, config=ONE_D)
    assert np.nanmax(plain.scores["monotonicity"]) < 1e-12
    declared = audit(model, U, config=ONE_D.replace(expected_monotonic={"x1": "decreasing", "x2": "increasing"}))
    assert top(declared, "monotonicity") == ("x1",)
    v = declared.score("x1", "monotonicity")
    assert v.details["declared"] and v.details["direction"] == "decreasing" and v.value > 0.2
    assert declared.score("x2", "monotonicity").value < 1e-12


def test_steep_feature_ranks_first_on_slope_and_lipschitz(U):
    def model(d):
        x1, x2, x3, x4 = cols(d)
        return 0.2 * x1 + 0.2 * x2 + 1.0 / (1.0 + np.exp(-(x3 - 0.5) * 60)) + 0.1 * x4

    a = audit(model, U, config=ONE_D)
    assert top(a, "slope") == ("x3",)
    assert top(a, "lipschitz") == ("x3",)
    assert a.score("x1", "lipschitz").value == 0.0  # gentle slope: within the bound, g = f
    assert a.score("x3", "lipschitz").details["solved_by"] in ("CLARABEL", "OSQP")


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_lipschitz_fit_equals_independent_qp_solution(seed):
    rng = np.random.default_rng(seed)
    k = 30 + 10 * seed
    x = np.sort(rng.uniform(0, 5, k))
    f = np.cumsum(rng.normal(size=k)) * (1 + seed)
    bound = 0.6
    g, how = lipschitz_fit(f, [x], [bound])
    assert how in ("CLARABEL", "OSQP")
    # reparameterised: g = A z with z = (g_0, d_1..d_{k-1}), |d_i| <= l (x_{i+1} - x_i)
    A = np.tril(np.ones((k, k)))
    b = bound * np.diff(x)
    ref = lsq_linear(A, f, bounds=(np.r_[-np.inf, -b], np.r_[np.inf, b]), method="bvls", tol=1e-14)
    np.testing.assert_allclose(g, A @ ref.x, rtol=0, atol=1e-5)
    assert np.all(np.abs(np.diff(g)) <= b + 1e-7)


def test_lipschitz_2d_bounds_both_axes():
    rng = np.random.default_rng(0)
    f = rng.normal(size=(8, 9)).cumsum(0).cumsum(1)
    xs, ys = np.linspace(0, 1, 8), np.linspace(0, 2, 9)
    g, how = lipschitz_fit(f, [xs, ys], [3.0, 1.0])
    assert np.all(np.abs(np.diff(g, axis=0)) <= 3.0 * np.diff(xs)[:, None] + 1e-7)
    assert np.all(np.abs(np.diff(g, axis=1)) <= 1.0 * np.diff(ys)[None, :] + 1e-7)
    # a feasible surface is its own fit
    smooth = np.add.outer(xs, ys) * 0.5
    g2, how2 = lipschitz_fit(smooth, [xs, ys], [3.0, 1.0])
    assert how2 == "feasible" and np.array_equal(g2, smooth)


def test_lipschitz_fit_leaves_the_warning_filters_alone(monkeypatch):
    """The audit scores PDs on a second thread beside the trust checks, and the process's warning
    filters are not thread-safe: a fit must neither set nor save them (as ``catch_warnings`` does)."""
    import warnings

    def refuse(*args, **kwargs):
        raise AssertionError("the warning filters were changed during a Lipschitz fit")

    for name in ("catch_warnings", "simplefilter", "filterwarnings", "resetwarnings"):
        monkeypatch.setattr(warnings, name, refuse)
    x = np.linspace(0, 1, 12)
    f = np.where(x > 0.5, 1.0, 0.0)  # a step: the fit needs a solve
    g, how = lipschitz_fit(f, [x], [0.5])
    assert how in ("CLARABEL", "OSQP") and np.all(np.abs(np.diff(g)) <= 0.5 * np.diff(x) + 1e-7)
    g2, how2 = lipschitz_fit(np.outer(f, f), [x, x], [0.5, 0.5])
    assert how2 in ("CLARABEL", "OSQP") and g2.shape == (12, 12)


def test_isotonic_fit_is_monotone_and_optimal():
    f = np.array([1.0, 3.0, 2.0, 4.0, 3.5, 5.0])
    g = isotonic_fit(f, True)
    np.testing.assert_allclose(g, [1.0, 2.5, 2.5, 3.75, 3.75, 5.0], rtol=0, atol=1e-12)


def test_similarity_identical_is_zero_and_changed_feature_ranks_first(U):
    def model(d):
        x1, x2, x3, x4 = cols(d)
        return np.sin(3 * x1) + x2 ** 2 + x3 + x4 * x1

    def twin(d):
        return model(d)

    def changed(d):
        x1, x2, x3, x4 = cols(d)
        return np.sin(3 * x1) + x2 ** 2 + (1 - x3) ** 3 + x4 * x1

    a = audit(model, U, compare={"twin": twin, "challenger": changed}, config=AuditConfig(grid_resolution=15, grid_resolution_2d=6))
    assert np.nanmax(np.abs(a.scores["similarity:twin"])) == 0.0
    assert top(a, "similarity:challenger") == ("x3",)
    assert a.scores.loc[a.scores["kind"] == "2d", "similarity:challenger"].notna().all()
    pair_rank = a.ranking("similarity:challenger", kind="2d")["features"].iloc[0]
    assert "x3" in pair_rank


def test_importance_unused_zero_and_greenwell_linear(U):
    beta = np.array([3.0, -1.5, 0.5, 0.0])

    def model(d):
        return np.asarray(d, dtype=float) @ beta

    grid = np.linspace(0, 1, 101)
    res = autopdp.partial_dependence(model, U, ["x1", "x2", "x3", "x4"], custom_values={c: grid for c in U.columns})
    # Greenwell's unweighted statistic: the sample std of k evenly spaced points
    imp = np.array([pd_importance(r, weighted=False)[0] for r in res])
    k = grid.size
    exact = np.abs(beta) * 1.0 / (k - 1) * np.sqrt(k * (k + 1) / 12)
    np.testing.assert_allclose(imp, exact, rtol=0, atol=1e-12)
    np.testing.assert_allclose(imp, np.abs(beta) / np.sqrt(12), rtol=0.02, atol=1e-12)  # |beta| * range / sqrt(12)
    assert imp[3] < 1e-12
    # the default weights each grid value by its share of rows: |beta| * weighted sd of the grid values
    wimp = np.array([pd_importance(r)[0] for r in res])
    for b, r, v in zip(beta, res, wimp):
        w = r.counts / r.counts.sum()
        sd_grid = np.sqrt(np.sum(w * (grid - np.sum(w * grid)) ** 2))
        assert v == pytest.approx(abs(b) * sd_grid, rel=0, abs=1e-12)
    np.testing.assert_allclose(wimp, np.abs(beta) * U.std(ddof=0).to_numpy(), rtol=0.02, atol=1e-12)
    a = audit(model, U, config=ONE_D)
    assert a.importance.loc["x4"].iloc[0] < 1e-12
    assert list(a.importance.iloc[:, 0].sort_values(ascending=False).index[:3]) == ["x1", "x2", "x3"]


def test_categorical_importance_is_range_over_four():
    X = pd.DataFrame({"c": list("abcd") * 25, "n": np.linspace(0, 1, 100)})
    effect = {"a": 0.0, "b": 1.0, "c": 4.0, "d": 2.0}
    (r,) = autopdp.partial_dependence(lambda d: d["c"].map(effect).to_numpy(), X, ["c"])
    assert pd_importance(r, weighted=False)[0] == pytest.approx(1.0, rel=0, abs=1e-12)
    # weighted (default): the sd of the effect over the rows, 25 per level
    assert pd_importance(r)[0] == pytest.approx(np.std(list(effect.values())), rel=0, abs=1e-12)


def test_interaction_additive_zero_and_product_first(U):
    def model(d):
        x1, x2, x3, x4 = cols(d)
        return x1 ** 2 + np.sin(x2) + 4 * x3 * x4 + x1

    a = audit(model, U, config=AuditConfig(grid_resolution=10, grid_resolution_2d=8, max_rows_2d=None))
    inter = a.interaction.iloc[:, 0]
    assert inter.idxmax() == ("x3", "x4")
    for pair in [("x1", "x2"), ("x1", "x3"), ("x2", "x4")]:
        assert inter.loc[pair] < 1e-12
    assert top(a, "interaction") == ("x3", "x4")
    # the surface itself: Greenwell's statistic on an exact product surface
    r = a.pd(("x3", "x4"))
    total, a_given_b, b_given_a = pd_interaction(r)
    assert total[0] > 0.1 and a_given_b[0] > 0 and b_given_a[0] > 0


def test_incidence_flags_inverted_relation():
    rng = np.random.default_rng(7)
    n = 3000
    X = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
    logit = 2.0 * X.a + 1.0 * X.b + 0.5 * X.c
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-logit))).astype(int)
    # the model learns a's relation backwards: trained on data where a is flipped
    X_flipped = X.assign(a=-X.a)
    model = LogisticRegression().fit(X_flipped, y)
    a = audit(model, X, y, config=AuditConfig(pairs=False))
    assert top(a, "incidence") == ("a",)
    inc = a.score("a", "incidence")
    assert inc.comparison is not None and np.nanmax(inc.comparison) <= 1.0
    # incidence g is the observed share of class 1 among rows nearest each grid point
    r = a.pd("a")
    grid = r.grid[0]
    mids = (grid[1:] + grid[:-1]) / 2
    cell = np.searchsorted(mids, X.a.to_numpy())
    expected = np.array([y[cell == i].mean() if (cell == i).any() else np.nan for i in range(len(grid))])
    np.testing.assert_allclose(inc.comparison, expected, rtol=0, atol=1e-12)


def test_correlation_criterion_and_selection_reasons(U):
    rng = np.random.default_rng(0)
    X = U.assign(x2=U.x1 + rng.normal(0, 0.05, len(U)))

    def model(d):
        x1, x2, x3, x4 = cols(d)
        return x1 + x2 + np.exp(-((x3 - 0.5) ** 2) / 0.02)

    a = audit(model, X, config=AuditConfig(grid_resolution=12, grid_resolution_2d=6, top_k=2))
    assert top(a, "correlation") == ("x1", "x2")
    assert a.scores.loc[a.scores["kind"] == "2d", "correlation"].between(0, 1).all()
    sel = a.selection
    first = sel[0]
    assert first.features == ("x3",) and "monotonicity #1" in first.reason_text
    assert any(s.features == ("x1", "x2") and "correlation #1" in s.reason_text for s in sel)
    assert len({s.features for s in sel}) == len(sel)  # duplicates merged
    assert all(s.kind == "1d" for s in sel[: sum(1 for s in sel if s.kind == "1d")])


def test_unordered_categorical_is_na_with_reason():
    X = pd.DataFrame({"c": list("abc") * 40, "n": np.linspace(0, 1, 120)})
    a = audit(lambda d: (d["c"] == "b").to_numpy() + d["n"].to_numpy(), X, config=AuditConfig(pairs=False))
    v = a.score("c", "monotonicity")
    assert not v.available and "unordered categorical" in v.reason
    ordered = X.assign(c=pd.Categorical(X.c, categories=["c", "b", "a"], ordered=True))
    a2 = audit(lambda d: (d["c"] == "b").to_numpy() + d["n"].to_numpy(), ordered, config=AuditConfig(pairs=False))
    v2 = a2.score("c", "monotonicity")
    assert v2.available and v2.value > 0.1  # c < b > a: a bump in the declared order


def test_audit_scores_table_shape_and_json(U, tmp_path):
    a = audit(lambda d: np.asarray(d, dtype=float).sum(axis=1), U, config=AuditConfig(grid_resolution=6, grid_resolution_2d=4))
    assert len(a.scores) == 4 + 6
    assert list(a.scores["kind"]).count("2d") == 6
    for col in ["monotonicity", "lipschitz", "slope", "ice_variance", "correlation", "importance", "interaction", "intersection"]:
        assert col in a.scores.columns
    assert a.scores["incidence"].isna().all()  # no y given
    r = a.ranking("slope")
    assert list(r["rank"]) == list(range(1, 5))
    path = tmp_path / "audit.json"
    a.to_json(path)
    import json

    data = json.loads(path.read_text())
    assert data["schema"] == "autopdp.Audit/2" and len(autopdp.read_results(data)["results"]) == 10
    with pytest.raises(ValueError, match="Unknown score 'nope'"):
        a.ranking("nope")


def test_config_errors_name_the_key():
    with pytest.raises(ValueError, match="unknown config key 'grid_res'"):
        AuditConfig.from_dict({"grid_res": 3})
    with pytest.raises(ValueError, match="config key 'top_k' must be an integer >= 1"):
        AuditConfig(top_k=0)
    with pytest.raises(ValueError, match="config key 'expected_monotonic.age' must be one of"):
        AuditConfig(expected_monotonic={"age": "up"})
    with pytest.raises(ValueError, match="config key 'lipschitz.age' must be a positive slope bound"):
        AuditConfig(lipschitz={"age": -1})


def test_weighted_interaction_as_matrix_products_equals_greenwells_composition():
    """``interaction_statistic`` with both axes weighted (the audit's case) computes the weighted sds as matrix
    products; known answer: Greenwell's definition composed from :func:`flatness`, on single and stacked surfaces."""
    from autopdp.scores.importance import flatness, interaction_statistic

    rng = np.random.default_rng(4)
    for shape in [(2, 2), (7, 5), (300, 6, 4)]:
        avg = rng.normal(size=shape)
        w1, w2 = rng.uniform(0.1, 1, size=shape[-2]), rng.uniform(0.1, 1, size=shape[-1])
        c1 = flatness(avg, "numeric", axis=-2, weights=w1)
        c2 = flatness(avg, "numeric", axis=-1, weights=w2)
        first, second = flatness(c1, "numeric", axis=-1, weights=w2), flatness(c2, "numeric", axis=-1, weights=w1)
        got = interaction_statistic(avg, ("numeric", "categorical"), (w1, w2))
        for a, b in zip(got, ((first + second) / 2, first, second)):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_an_additive_surface_has_no_interaction_not_rounding_noise():
    """An additive surface's conditional spreads agree only to the last bits: that is no interaction (exactly 0, so
    that pairs are not ranked on rounding), while an interaction of 1e-6 of the surface's range is kept."""
    from autopdp.scores.importance import interaction_statistic

    rng = np.random.default_rng(0)
    f, g = rng.normal(size=(7, 1)) * 1e3, rng.normal(size=(1, 9)) * 1e-3
    additive = np.broadcast_to(f + g, (7, 9)) + 0.1
    w = (np.full(7, 1 / 7), np.full(9, 1 / 9))
    for weights in (w, (None, None)):
        inter, a, b = interaction_statistic(additive[None], ("numeric", "numeric"), weights)
        assert inter[0] == a[0] == b[0] == 0.0
        small = additive + 1e-6 * np.ptp(additive) * np.outer(np.linspace(-1, 1, 7), np.linspace(-1, 1, 9))
        assert interaction_statistic(small[None], ("numeric", "numeric"), weights)[0][0] > 0

"""Each noise test holds its level on null cases (with and without row weights) and has power on effects of known size.

Materiality is 0 here, so the test alone decides.  The cases are in
``benchmarks/calibration_cases.py`` (``benchmarks/bench_calibration.py`` prints the
same rates over more seeds).  The bound on false findings is the 99% point of
Binomial(seeds, 5%): a test at its nominal level exceeds it once in a hundred suites.
"""

import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import calibration_cases as cases  # noqa: E402

import autopdp  # noqa: E402
from autopdp import AuditConfig
from autopdp import audit

SEEDS = 60


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


@pytest.mark.parametrize("case", list(cases.NULL_CASES))
def test_false_finding_rate_holds_the_level(case):
    rates = cases.rate(cases.NULL_CASES[case], range(SEEDS))
    bound = cases.binomial_slack(SEEDS) / SEEDS
    for criterion, r in rates.items():
        assert r <= bound, f"{case}: {criterion} false findings in {r:.0%} of {SEEDS} runs (bound {bound:.0%})"


def test_the_issues_weighted_case_no_longer_finds_slopes():
    """f = x1 x2 with 30 of 400 rows weighted 25: the noise scale follows the effective row count."""
    false = [cases.null_product(s, weighted=True)["slope"] for s in range(40)]
    assert sum(false) <= cases.binomial_slack(40)


@pytest.mark.parametrize("criterion", cases.POWER_CRITERIA)
def test_power_at_four_noise_sd_is_at_least_80_percent(criterion):
    hits = [cases.power_case(criterion, 4.0, 10_000 + s) for s in range(30)]
    assert np.mean(hits) >= 0.8, f"{criterion}: power {np.mean(hits):.0%} at 4x the noise sd"


def test_power_grows_with_the_effect_and_is_not_a_rubber_stamp():
    """At 1x the noise sd the slope test misses most effects: it is not passing everything."""
    at_1 = np.mean([cases.power_case("slope", 1.0, 20_000 + s) for s in range(30)])
    at_4 = np.mean([cases.power_case("slope", 4.0, 20_000 + s) for s in range(30)])
    assert at_1 < 0.5 < 0.8 <= at_4


def test_null_p_values_are_not_too_small():
    from scipy import stats

    p = np.concatenate([cases.null_p_values(s) for s in range(40)])
    assert p.size >= 80
    assert np.mean(p <= 0.05) <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / p.size)
    assert stats.kstest(p, "uniform", alternative="greater").pvalue > 0.001


# ------------------------------------------------------------------ the issue's known answers
def test_the_data_generating_logistic_is_never_a_calibration_finding_and_has_no_ice_variance():
    for seed in range(5):
        for correlated in (False, True):
            r = cases.null_logistic(seed, correlated=correlated)
            assert not r["incidence"] and not r["ice_variance"]


def test_additive_logistic_is_additive_on_the_log_odds_but_not_on_probabilities():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(600, 3)), columns=["a", "b", "c"])
    y = (rng.random(600) < 1 / (1 + np.exp(-(2 * X["a"] - X["b"])))).astype(int)
    model = LogisticRegression().fit(X, y)
    a = audit(model, X, y, config=AuditConfig(pairs=False, utilities=("ice_variance",)))
    assert not any(e.passed for e in a.evidence["ice_variance"].values())
    assert max(e.value for e in a.evidence["ice_variance"].values()) < 1e-9
    assert a.score("a", "ice_variance").details["scale"].startswith("log-odds (from the model's margin")
    prob = audit(model, X, y, config=AuditConfig(pairs=False, utilities=("ice_variance",),
                                                  ice_variance_scale="response"))
    assert prob.score("a", "ice_variance").value > 0.01  # the sigmoid alone spreads the probability curves


def test_an_interaction_is_an_ice_variance_finding_on_the_link_scale():
    rng = np.random.default_rng(1)
    X = pd.DataFrame(rng.normal(size=(500, 3)), columns=["x1", "x2", "x3"])
    a = audit(lambda d: d["x1"].to_numpy() * d["x2"].to_numpy() + d["x3"].to_numpy(), X,
              config=AuditConfig(pairs=False, utilities=("ice_variance",)))
    passed = {k for k, e in a.evidence["ice_variance"].items() if e.passed}
    assert passed == {("x1",), ("x2",)}
    e = a.evidence["ice_variance"][("x1",)]
    assert "z-test" in e.test and e.p_value >= 1e-6


def _two_models(shift):
    rng = np.random.default_rng(2)
    X = pd.DataFrame(rng.normal(size=(500, 3)), columns=["x1", "x2", "x3"])

    def base(d):
        return d["x1"].to_numpy() ** 2 + d["x2"].to_numpy() - 0.5 * d["x3"].to_numpy()

    return audit(base, X, compare={"cand": lambda d: base(d) + shift(d)},
                 config=AuditConfig(pairs=False, utilities=("similarity",)))


def test_a_constant_level_shift_is_one_line_not_a_per_feature_finding():
    a = _two_models(lambda d: np.full(len(d), 0.5))
    assert not any(e.passed for e in a.evidence["similarity:cand"].values())
    level = a.evidence["similarity_level:cand"][()]
    assert level.passed and level.details["mean_difference"] == pytest.approx(-0.5, rel=0, abs=1e-12)
    assert any("cand" in n and "0.5" in n for n in a.notes)


def test_a_difference_of_a_quarter_x1_on_every_row_is_a_similarity_finding_on_x1_alone():
    a = _two_models(lambda d: 0.25 * d["x1"].to_numpy())
    passed = {k for k, e in a.evidence["similarity:cand"].items() if e.passed}
    assert passed == {("x1",)}
    assert "paired" in a.evidence["similarity:cand"][("x1",)].test


def test_every_p_value_names_its_test_and_none_is_below_what_it_can_show():
    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.normal(size=(400, 3)), columns=["x1", "x2", "x3"])
    y = X["x1"] * 3 + rng.normal(size=400)
    a = audit(lambda d: 3 * d["x1"].to_numpy() + d["x2"].to_numpy() * d["x3"].to_numpy(), X, y,
              config=AuditConfig(noise_draws=200, max_noise_draws=1000))
    seen = 0
    for crit, by in a.evidence.items():
        for e in by.values():
            if not (e.material and np.isfinite(e.p_value)) or crit == "intersection":
                continue
            seen += 1
            assert e.test, (crit, e.features)
            if e.draws:
                assert e.p_value >= 1 / (1 + e.draws) - 1e-15, (crit, e.features, e.p_value, e.draws)
            else:
                assert e.p_value >= 1e-6, (crit, e.features, e.p_value)
    assert seen >= 5
    d = autopdp.read_results(a.to_dict())
    ps = [e["p_value"] for by in d["evidence"].values() for e in by if e["p_value"] is not None]
    assert min(ps) >= 1e-6 / 1.0001


def test_untested_is_not_noise():
    """A material score whose noise cannot be estimated (no ICE rows, no standard errors) is untested."""
    from autopdp.findings.significance import Evidence

    e = Evidence("monotonicity", ("a",), 0.2, float("nan"), float("nan"), float("nan"), 0.05, True, False, "")
    assert e.untested and not e.passed
    from sklearn.ensemble import GradientBoostingRegressor

    rng = np.random.default_rng(4)
    X = pd.DataFrame(rng.normal(size=(300, 2)), columns=["a", "b"])
    y = np.sin(3 * X["a"]) + X["b"]
    model = GradientBoostingRegressor(n_estimators=50, random_state=0).fit(X, y)
    # scikit-learn's recursion method gives the PD alone: no ICE curves, no standard errors
    a = audit(model, X, config=AuditConfig(pairs=False, utilities=("monotonicity",), method="recursion"))
    mono = a.evidence["monotonicity"][("a",)]
    assert mono.material and mono.untested and not mono.passed
    assert mono.why.startswith("untested")
    html = a.to_html()
    assert "untested" in html
    assert "No material finding under any criterion" not in html


def test_why_sentences_state_the_decision_they_explain():
    """2D importance decides per feature and says which feature failed; 'low' ICE variance speaks of importance."""
    rng = np.random.default_rng(5)
    X = pd.DataFrame(rng.normal(size=(400, 3)), columns=["big", "tiny", "other"])

    def f(d):
        return 2 * d["big"].to_numpy() + 0.001 * d["tiny"].to_numpy() + d["other"].to_numpy()

    a = audit(f, X, config=AuditConfig(utilities=("slope", "ice_variance"), ice_variance="low"))
    e = a.evidence["importance"][("big", "tiny")]
    assert not e.material
    assert e.why.startswith("not material: tiny's importance")
    assert "big's importance" not in e.why  # big passed: only the failing feature is named
    low = a.evidence["ice_variance"][("big",)]
    assert "importance" in low.statistic and "importance" in low.why
    assert low.value == pytest.approx(a.evidence["importance_1d"][("big",)].value, rel=0, abs=1e-15)


def test_methodology_is_written_from_the_run():
    from sklearn.ensemble import HistGradientBoostingRegressor

    rng = np.random.default_rng(6)
    X = pd.DataFrame(rng.normal(size=(500, 3)), columns=["a", "b", "c"])
    y = X["a"] * X["b"] + X["c"]
    tree = audit(HistGradientBoostingRegressor(max_iter=30).fit(X, y), X, y, config=AuditConfig(pairs=False))
    html = tree.to_html()
    assert "3 1D PDs: 3 exactly by the tree path" in html
    assert "brute force on sampled rows" not in html and "range / 4" not in html
    assert "density-weighted standard deviation" in html
    brute = audit(lambda d: d["a"].to_numpy() * d["b"].to_numpy(), X, y,
                  config=AuditConfig(pairs=False, subsample=100))
    text = brute.to_html()
    assert "3 1D PDs: 3 by brute force" in text and "a random sample of 100 rows" in text
    # the tests table names each criterion's null and the draws this run used
    assert "gap to the best monotone curve is at most the materiality threshold" in text
    assert "Monte-Carlo minimum-effect test" in text


def test_each_criterion_names_the_null_and_test_it_ran():
    """The methodology table gives each test in full, without one PDP's draws or noise source; a pair's
    importance names its intersection-union null and the draws of the 1D test whose p it takes (the larger);
    the criterion's statistic is the tested items' even where most features are not scored (unordered)."""
    from autopdp.report.methodology import criterion_tests

    rng = np.random.default_rng(8)
    n = 600
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "d": rng.normal(size=n),
                      "e": rng.normal(size=n), **{f"c{i}": rng.choice(["u", "v", "w"], n) for i in range(5)}})

    def model(d):  # d: its importance above the threshold by about twice its noise (the rows' d * e): a p between the floor and 0.1
        return (0.3 * d.a + 0.3 * d.b + 0.3 * (d.c0 == "u") + d.d * (0.148 + d.e)).to_numpy(dtype=float)

    y = (model(X) + rng.normal(size=n) > 0.5).astype(int)
    a = audit(model, X, y, config=AuditConfig(grid_resolution=8, grid_resolution_2d=4))
    rows = {r["criterion"]: r for r in criterion_tests(a)}
    assert rows["correlation"]["test"] == "Spearman's rank test, one-way ANOVA F test, or Pearson's chi-squared test"
    assert all("draws" not in r["test"] and "ICE rows" not in r["test"] and "cell standard errors" not in r["test"]
               for r in rows.values())
    assert rows["ice_variance"]["test"] == ("one-sided minimum-effect z-test of the rows' mean squared departure "
                                            "against the threshold squared, the threshold's own sampling error in "
                                            "its variance")
    assert rows["importance"]["null"] == "at least one of the two features' importances is at most the materiality threshold"
    one = {f: a.evidence["importance_1d"][(f,)] for f in "ad"}
    assert one["a"].p_value < one["d"].p_value < 0.1 and one["a"].draws != one["d"].draws  # the premise
    pair = a.evidence["importance"][("a", "d")]
    assert pair.p_value == one["d"].p_value and pair.draws == one["d"].draws
    assert a.to_dict()["evidence_meta"]["monotonicity"]["statistic"] == "gap to the best monotone curve on the prediction scale"

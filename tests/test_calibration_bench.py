"""Issue 29's awkward cases over seeds: level with untested PDPs counted apart, and effects at the threshold.

The cases are ``calibration_cases.AWKWARD_CASES`` and ``calibration_cases.at_threshold``
(``benchmarks/bench_calibration.py`` prints the same rates over 300 seeds with Clopper-Pearson intervals;
docs/methodology.md, "Measured level and power", has its table).  At the threshold the materiality is set per
run so that the population PD's statistic on that run's grid equals that run's threshold (the null is
conditional on the grid, the density weights and the threshold the audit derives before it tests).  tests/test_calibration_awkward.py checks
the untested reasons on one seed each and the importance at its threshold; tests/test_calibration_link.py
the saturated logistic's margin on 8 seeds.  Here each case runs over 30-40 seeds and every criterion's
false findings must stay under the 99% point of Binomial(seeds, 5%).  An untested PDP is not a finding.

Every null is conditional on the fitted model (held fixed; only the audit rows vary).
"""

import functools
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from autopdp import AuditConfig
from autopdp import audit

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import calibration_cases as cases  # noqa: E402

#: the 5,000-row and saturated cases take 0.2-0.7 s a run: fewer seeds keep each test under ~20 s
SEEDS = {name: 40 for name in cases.AWKWARD_CASES}
SEEDS["5,000 rows, 10 weigh 1,000, ICE subsample 1,000 (n_eff 22.5)"] = 30
SEEDS["5,000 rows, 50 weigh 100, ICE subsample 1,000 (n_eff ~196)"] = 25
for _name in cases.AWKWARD_CASES:
    if _name.startswith("saturated"):  # 0.1-0.7 s a run (the incidence bootstrap)
        SEEDS[_name] = 25
DOMINANT = "400 rows, 3 weigh 1,000, every row kept (n_eff 3.8)"
HEAVY = "5,000 rows, 10 weigh 1,000, ICE subsample 1,000 (n_eff 22.5)"


@functools.lru_cache(maxsize=None)
def _summary(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cases.summarize([cases.AWKWARD_CASES[name](s) for s in range(SEEDS[name])])


def _criteria(name):
    return {"5,000": ("monotonicity", "lipschitz", "slope", "importance", "incidence", "ice_variance"),
            "400 r": ("monotonicity", "lipschitz", "slope", "importance", "incidence", "ice_variance"),
            "skewe": ("monotonicity", "lipschitz", "slope", "importance") if "two-valued" not in name
            else ("monotonicity", "slope", "importance"),
            "satur": ("incidence", "ice_variance"),
            "stair": ("incidence",)}[name[:5]]


_PAIRS = [(name, c) for name in cases.AWKWARD_CASES for c in _criteria(name)]


@pytest.mark.parametrize("name, criterion", _PAIRS)
def test_awkward_case_holds_the_level(name, criterion):
    s = _summary(name)[criterion]
    bound = cases.binomial_slack(s["n"])
    assert s["k"] <= bound, f"{name}: {criterion} false findings in {s['k']} of {s['n']} runs (bound {bound})"


@pytest.mark.parametrize("name", [DOMINANT, HEAVY])
def test_too_few_effective_rows_leave_every_pd_test_untested_not_a_finding(name):
    """n_eff 3.8 and 22.5 (< 30): every PD-based test is untested on every seed, and none is a finding."""
    summary = _summary(name)
    for c in ("monotonicity", "lipschitz", "slope", "importance", "ice_variance") + (("incidence",) if name == DOMINANT
                                                                                  else ()):
        s = summary[c]
        assert s["untested"] == s["items"] > 0 and s["k"] == 0, (c, s["untested"], s["items"], s["k"])


def test_enough_effective_rows_with_the_ice_subsample_are_tested_and_hold_the_level():
    """50 of 5,000 rows weigh 100 (n_eff ~196): the subsample keeps every heavy row, the Horvitz-Thompson
    covariance carries the test, nothing is untested, and the null p-values are not too small."""
    summary = _summary("5,000 rows, 50 weigh 100, ICE subsample 1,000 (n_eff ~196)")
    for c, s in summary.items():
        assert s["untested"] == 0 and s["p"].size == s["items"], c
        assert cases.ks_greater(s["p"]) > 0.001, c


@pytest.mark.parametrize("name", [n for n in cases.AWKWARD_CASES if n.startswith("skewed")])
def test_skewed_rows_are_untested_only_on_the_skewed_feature(name):
    """x1's curves are scaled by a skewed factor (Cochran's rule fails); x2's by sin(x1) or +-0.5: tested."""
    for c, s in _summary(name).items():
        assert s["untested"] >= 0.9 * s["items"] / 2, (c, s["untested"], s["items"])
        assert s["p"].size >= s["items"] / 2, c


# ---------------------------------------------------------------- the minimum-effect test at the threshold
#: importance at its threshold is in tests/test_calibration_awkward.py
THRESHOLD = ("slope", "monotonicity", "lipschitz", "interaction", "ice_variance")
N_THRESHOLD = 40


@pytest.mark.parametrize("criterion", THRESHOLD)
def test_an_effect_at_the_threshold_is_a_finding_at_most_at_the_nominal_level(criterion):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hits = sum(cases.at_threshold(criterion, s).finding for s in range(N_THRESHOLD))
    assert hits <= cases.binomial_slack(N_THRESHOLD), f"{criterion}: {hits} of {N_THRESHOLD} at the threshold"


@pytest.mark.parametrize("criterion", THRESHOLD)
def test_an_effect_at_twice_the_threshold_is_found_in_at_least_80_percent(criterion):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hits = sum(cases.at_threshold(criterion, s, 2.0).finding for s in range(N_THRESHOLD))
    assert hits >= 0.8 * N_THRESHOLD, f"{criterion}: {hits} of {N_THRESHOLD} at twice the threshold"


def test_an_undeclared_monotonicity_gap_above_a_threshold_is_tested_in_each_direction():
    """The gap is the smaller of two distances; above a threshold both are tested (intersection-union), the
    larger p-value counts.  At materiality 0 and with a declared direction the single test stays."""
    X = cases._frame(np.random.default_rng(0), n=cases.THRESHOLD_N)
    f = cases._threshold_model("monotonicity")

    def item(**kw):
        cfg = AuditConfig(pairs=False, utilities=("monotonicity",), features=("x1",), **kw)
        return audit(f, X, config=cfg).evidence["monotonicity"][("x1",)]

    both = item(materiality=0.1)
    assert both.value > both.threshold > 0
    assert "intersection-union of the two directions' tests" in both.test
    assert both.passed  # a U of gap ~0.18 against a threshold of ~0.1: found both ways
    plain = item(materiality=0.0)
    declared = item(materiality=0.1, expected_monotonic={"x1": "increasing"})
    for e in (plain, declared):
        assert "intersection-union" not in e.test and e.p_value <= both.p_value + 1e-12

"""The gate keeps its limits (issue 29): a limit is a minimum-effect null, "the violation is at most the limit".

The model: x1 takes 10 fixed values (30 rows each, so the grid and its density weights are the same on every
redraw), x2 ~ N(0, 1) is redrawn.  f = x1 - D * bump(x1) + noise * x2 * sin(2 pi x1): the population PD is
x1 - D * bump(x1), whose gap to the best increasing curve (the violation) is known exactly from the noise-free
model; x2 moves the sampled PD by noise * mean(x2) * sin(2 pi x1).
"""

import json
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest

from autopdp import AuditConfig
from autopdp import audit
from autopdp import gate

K, REPS = 10, 30
X1 = np.tile(np.linspace(0.0, 1.0, K), REPS)
CFG = AuditConfig(pairs=False, utilities=("monotonicity",), grid_resolution=K, features=("x1",))


def _model(dip, scale=1.0, noise=0.3):
    def f(d):
        x, z = d["x1"].to_numpy(), d["x2"].to_numpy()
        return scale * (x - dip * np.exp(-((x - 0.5) / 0.12) ** 2) + noise * z * np.sin(2 * np.pi * x))
    return f


def _audit(dip, seed, *, scale=1.0, noise=0.3, config=CFG):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"x1": X1, "x2": rng.normal(size=X1.size)})
    return audit(_model(dip, scale, noise), X, config=config)


def _policy(limit=None, **audit_keys):
    rule = {"monotonic": "increasing"}
    if limit is not None:
        rule["max_monotonicity"] = limit
    return {"features": {"x1": rule}, **({"audit": audit_keys} if audit_keys else {})}


def _violation(dip):
    """The population's violation: the noise-free model's gap to the best increasing curve."""
    return gate(_audit(dip, 0, noise=0.0), _policy(0.0)).checks[0].measured


def test_an_explicit_limit_is_not_passed_by_a_violation_confidently_above_it():
    """The issue's case: a dip scoring ~0.033 against max_monotonicity = 0.005, below the audit's materiality
    threshold (0.1 x prediction sd ~ 0.04): the old evidence mode passed it on every seed."""
    cfg = AuditConfig(pairs=False, utilities=("monotonicity",), grid_resolution=K, features=("x1",), materiality=0.1)
    for seed in range(8):
        a = _audit(0.39, seed, config=cfg)
        check = gate(a, _policy(0.005, materiality=0.1)).checks[0]
        assert 0.005 * 3 < check.measured < 0.1 * a.metadata["prediction_std"][0]  # above the limit, not "material"
        assert not check.passed, check.message
        proof = check.proof
        assert proof["bound"] == 0.005 and proof["bound_source"] == "policy" and proof["decision"] == "fail"
        assert proof["observed"] == check.measured and proof["adjusted_p"] <= 0.05
        assert "with confidence" in check.message


def test_a_violation_at_or_under_the_limit_passes():
    v = _violation(0.3)
    at = gate(_audit(0.3, 0, noise=0.0), _policy(v)).checks[0]
    assert at.passed and at.proof["p_value"] == 1.0 and at.proof["decision"] == "pass"
    under = gate(_audit(0.3, 0), _policy(4 * v)).checks[0]
    assert under.passed and under.measured < 4 * v and under.proof["exceeds"] is False


def test_the_verdict_does_not_depend_on_the_predictions_unit():
    """The default limit is materiality x the prediction sd: the same model in hundredths gets the same verdict,
    the same p-value, and a bound 100 times as large."""
    for seed in range(6):
        one = gate(_audit(0.3, seed), _policy()).checks[0]
        hundred = gate(_audit(0.3, seed, scale=100.0), _policy()).checks[0]
        assert one.proof["bound_source"] == "default" and "materiality 0.05" in one.proof["bound_rule"]
        assert hundred.threshold == pytest.approx(100 * one.threshold, rel=1e-9)
        assert hundred.measured == pytest.approx(100 * one.measured, rel=1e-9)
        assert hundred.passed == one.passed
        assert hundred.proof["p_value"] == pytest.approx(one.proof["p_value"], rel=1e-12)


def test_at_the_limit_the_fail_rate_keeps_the_nominal_level():
    """40 redraws of a model whose population violation is exactly the limit: at most 6 fail (a binomial(40, 0.05)
    exceeds 6 with probability 0.048).  Measured over 200 seeds: 6.5% [3.5%, 10.9%] (benchmarks/bench_gate_limits.py)."""
    v = _violation(0.3)
    fails = sum(not gate(_audit(0.3, seed), _policy(v)).passed for seed in range(40))
    assert fails <= 6, fails


def test_far_above_the_limit_the_fail_rate_is_at_least_80_percent():
    v = _violation(0.3)
    fails = sum(not gate(_audit(0.3, seed), _policy(v / 4)).passed for seed in range(40))
    assert fails >= 32, fails


def test_a_limit_exceeded_within_noise_passes_and_says_so():
    v = _violation(0.3)
    verdicts = [gate(_audit(0.3, seed), _policy(0.9 * v)).checks[0] for seed in range(10)]
    within = [c for c in verdicts if c.measured > 0.9 * v and c.passed]
    assert within, [c.message for c in verdicts]
    assert "not with confidence" in within[0].message and within[0].proof["decision"] == "pass"
    on_limits = gate(_audit(0.3, 0), {**_policy(0.9 * v), "gate": {"decide": "limits"}}).checks[0]
    assert on_limits.passed == (on_limits.measured <= 0.9 * v)


def test_gate_json_and_xml_carry_the_bound_its_source_the_p_value_and_the_decision():
    res = gate(_audit(0.39, 1), _policy(0.005))
    check = json.loads(res.to_json())["checks"][0]
    proof = check["proof"]
    for key in ("bound", "bound_source", "bound_rule", "observed", "p_value", "adjusted_p", "decision", "null",
                "test", "multiple_testing", "significance"):
        assert key in proof, key
    assert check["threshold"] == proof["bound"] == 0.005 and proof["decision"] == "fail"
    assert proof["null"].endswith("at most the limit") and "holm" in proof["multiple_testing"]
    failure = ET.fromstring(res.to_junit_xml()).find(".//failure")
    assert "p = " in failure.get("message") and "0.005" in failure.get("message")


def test_the_default_limit_is_in_gate_json():
    proof = gate(_audit(0.3, 0), _policy()).to_dict()["checks"][0]["proof"]
    assert proof["bound_source"] == "default"
    assert proof["bound"] == pytest.approx(0.05 * proof["materiality_threshold"] / 0.05)


def _slope_audit(seed):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"x1": X1, "x2": rng.normal(size=X1.size)})
    return audit(lambda d: d["x1"].to_numpy() * (1 + 0.3 * d["x2"].to_numpy()), X,
                 config=AuditConfig(pairs=False, utilities=("slope", "lipschitz"), grid_resolution=K,
                                    features=("x1",)))


def test_slope_and_lipschitz_limits_are_tested_too():
    """x1 * (1 + 0.3 x2): a straight line of slope ~1 per full range.  A slope limit far under it fails; one
    just under the observed slope is within noise.  A Lipschitz bound of 0.5 per unit is violated confidently
    at a limit of 0.01."""
    a = _slope_audit(0)
    slope = a.score("x1", "slope").value
    far = gate(a, {"features": {"x1": {"max_slope": slope / 3}}}).checks[0]
    near = gate(a, {"features": {"x1": {"max_slope": 0.995 * slope}}}).checks[0]
    assert not far.passed and far.proof["decision"] == "fail" and "Monte-Carlo" in far.proof["test"]
    assert near.passed and near.proof["exceeds"] and near.proof["decision"] == "pass"
    lip = gate(a, {"features": {"x1": {"lipschitz": 0.5, "max_lipschitz": 0.01}}}).checks[0]
    assert not lip.passed and lip.proof["significant"] and lip.proof["bound"] == 0.01


def test_holm_across_the_policy_checks():
    """Two tested checks: each p-value is adjusted over the family of both."""
    a = _slope_audit(0)
    slope = a.score("x1", "slope").value
    res = gate(a, {"features": {"x1": {"max_slope": 0.995 * slope, "lipschitz": 0.5, "max_lipschitz": 0.01}}})
    assert all("2 noise-tested checks" in c.proof["multiple_testing"] for c in res.checks)
    ps = sorted((c.proof["p_value"], c.proof["adjusted_p"]) for c in res.checks)
    assert ps[0][1] == pytest.approx(min(1.0, 2 * ps[0][0]))

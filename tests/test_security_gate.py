"""Issue #34, the gate's and the record's part: a policy cannot be emptied or loosened, and the record
carries no raw rows of the data unless asked (each proof of concept now fails safe)."""

import json

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.linear_model import LogisticRegression

from autopdp import AuditConfig, GatePolicy, audit, gate
from autopdp.cli import main
from autopdp.errors import InputError


@pytest.fixture(scope="module")
def gate_world(tmp_path_factory):
    rng = np.random.default_rng(3)
    n = 600
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.uniform(0, 4, n)})
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-(1.5 * X.a + 0.5 * X.b - 1.0)))).astype(int)
    d = tmp_path_factory.mktemp("secgate")
    sio.dump(LogisticRegression().fit(X, y), d / "model.skops")
    X.assign(y=y).to_csv(d / "data.csv", index=False)
    return d


def _run_gate(d, tmp_path, policy_text, *extra):
    (tmp_path / "policy.toml").write_text(policy_text)
    return main(["gate", "--policy", str(tmp_path / "policy.toml"), "--model", str(d / "model.skops"),
                 "--data", str(d / "data.csv"), "--target", "y", "--out", str(tmp_path / "out"), "--formats", "json",
                 *extra])


FAILING_POLICY = '[features.a]\nmonotonic = "decreasing"\nmax_monotonicity = 0.01\n[audit]\npairs = false\n'


def test_poc_config_materiality_cannot_turn_a_failing_check_into_a_pass(gate_world, tmp_path, capsys):
    assert _run_gate(gate_world, tmp_path, FAILING_POLICY) == 1
    assert "FAILED 1 of 1 checks: monotonicity[a]" in capsys.readouterr().out
    (tmp_path / "loose.toml").write_text("materiality = 1000\nsignificance = 1e-9\nnoise_draws = 20\n")
    assert _run_gate(gate_world, tmp_path, FAILING_POLICY, "--config", str(tmp_path / "loose.toml")) == 1
    out, err = capsys.readouterr()
    assert "FAILED 1 of 1 checks: monotonicity[a]" in out
    for key in ("materiality", "significance", "noise_draws"):
        assert f"--config key '{key}' ignored" in err
    record = json.loads((tmp_path / "out" / "results.json").read_text())
    assert record["config"]["materiality"] == AuditConfig().materiality
    check = json.loads((tmp_path / "out" / "gate.json").read_text())["checks"][0]
    assert not check["passed"] and check["proof"]["material"]


def test_the_policys_own_audit_keys_win_over_config():
    policy = GatePolicy.from_dict({"features": {"a": {"monotonic": "increasing"}}, "audit": {"materiality": 0.2}})
    base, reset = policy.without_loosening(AuditConfig(materiality=1000.0, loss="l1", grid_resolution=7))
    assert reset == ["loss"] and base.loss == "l2" and base.grid_resolution == 7
    assert policy.audit_config(base).materiality == 0.2
    # a --config equal to the defaults is not reported
    assert policy.without_loosening(AuditConfig())[1] == []


@pytest.mark.parametrize("policy_text", [
    "",
    "[gate]\ndecide = \"limits\"\n",
    "[audit]\ngrid_resolution = 5\n",
    '[features.a]\nmonotonic = "none"\n',
])
def test_poc_a_policy_with_no_check_is_exit_2(gate_world, tmp_path, capsys, policy_text):
    assert _run_gate(gate_world, tmp_path, policy_text) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "defines no check" in err and 'monotonic = "increasing"' in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("policy, key, needs", [
    ({"features": {"a": {"max_monotonicity": 0.02}}}, "features.a.max_monotonicity", "features.a.monotonic"),
    ({"features": {"a": {"monotonic": "none", "max_monotonicity": 0.02}}}, "features.a.max_monotonicity",
     "features.a.monotonic"),
    ({"features": {"a": {"lipschitz": 0.5}}}, "features.a.lipschitz", "features.a.max_lipschitz"),
    ({"importance": {"forbidden_top_k": 3}}, "importance.forbidden_top_k", "importance.forbidden"),
    ({"importance": {"required_top_k": 3, "forbidden": ["a"]}}, "importance.required_top_k", "importance.required"),
    ({"importance": {"min_importance": 0.1}}, "importance.min_importance", "importance.required"),
])
def test_a_modifier_without_its_rule_is_refused_naming_both(policy, key, needs):
    with pytest.raises(InputError) as err:
        GatePolicy.from_dict(policy)
    assert f"'{key}'" in str(err.value) and f"'{needs}'" in str(err.value)


def test_a_policy_built_directly_with_no_rule_fails_closed():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=100)})
    a = audit(lambda d: d["a"].to_numpy(), X, config=AuditConfig(pairs=False, grid_resolution=5))
    with pytest.raises(InputError, match="defines no check"):
        gate(a, GatePolicy())
    assert gate(a, {"features": {"a": {"monotonic": "increasing"}}}).passed

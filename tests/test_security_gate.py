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
    # a --config bound for a feature whose max_lipschitz rule has no bound of the policy's own is dropped
    policy = GatePolicy.from_dict({"features": {"a": {"max_lipschitz": 0.01}, "b": {"monotonic": "increasing"}}})
    base, reset = policy.without_loosening(AuditConfig(lipschitz={"a": 1e9, "b": 2.0}))
    assert reset == ["lipschitz.a"] and dict(base.lipschitz) == {"b": 2.0}
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


# ---------------------------------------------------------------- no raw rows in the record
from pathlib import Path  # noqa: E402

from autopdp import Audit  # noqa: E402
from autopdp.report.figures import plot_pd_2d  # noqa: E402

V1_FILE = Path(__file__).with_name("data") / "results_v1.json"


def _customers():
    rng = np.random.default_rng(7)
    n = 200
    X = pd.DataFrame({"cust": [f"CUST-{i:05d}-{rng.integers(10**6)}" for i in range(n)],
                      "income": rng.normal(50000, 9000, n) + rng.uniform(0, 1, n) * 1e-3,
                      "age": rng.uniform(18, 80, n), "region": rng.choice(["north", "south", "east"], n)})

    def model(d):
        return 0.001 * d["income"].to_numpy() + 0.1 * d["age"].to_numpy() + (d["region"] == "south").to_numpy()

    return X, model


@pytest.fixture(scope="module")
def customer_audits():
    X, model = _customers()
    pairs = [("income", "age"), ("cust", "income"), ("region", "age")]
    cfg = AuditConfig(grid_resolution=8, grid_resolution_2d=6, pairs=pairs, utilities=("monotonicity",))
    return X, audit(model, X, config=cfg), audit(model, X, config=cfg.replace(keep_points=True))


def _raw_values(X):
    floats = {repr(float(v)) for c in ("income", "age") for v in X[c]}
    return set(X["cust"]), floats


def test_poc_results_json_and_html_carry_no_raw_rows_by_default(customer_audits, tmp_path):
    X, plain, _ = customer_audits
    ids, floats = _raw_values(X)
    text = plain.to_json()
    plain.to_html(tmp_path / "report.html")
    html = (tmp_path / "report.html").read_text()
    assert "points" not in json.loads(text)["data_summary"]
    for published in (text, html):
        assert not [v for v in floats if v in published]  # no raw float at full precision
        # an ID string appears only as a level of cust's own PD grid (max_levels of them), never as a row
        grid_levels = {str(v) for v in plain.pd("cust").grid[0]}
        assert {v for v in ids if v in published} <= grid_levels
    assert {v for v in ids if v in text} != ids


def test_keep_points_writes_the_sample_rows_and_says_so(customer_audits, tmp_path):
    X, _, kept = customer_audits
    ids, floats = _raw_values(X)
    text = kept.to_json()
    assert kept.config.keep_points
    assert all(v in text for v in ids) and all(v in text for v in floats)
    assert set(json.loads(text)["data_summary"]["points"]) == {"cust", "income", "age", "region"}


def test_occupancy_counts_the_rows_in_each_cell_of_the_2d_grid(customer_audits):
    X, plain, _ = customer_audits
    by = {tuple(o["features"]): np.asarray(o["counts"]) for o in plain.data_summary["occupancy"]}
    assert set(by) == {r.features for r in plain.results_2d}
    r = plain.pd(("income", "age"))
    counts = by[("income", "age")]
    assert counts.shape == (len(r.grid[0]), len(r.grid[1])) and counts.sum() == len(X)
    gi, ga = np.asarray(r.grid[0], float), np.asarray(r.grid[1], float)
    i = np.abs(X["income"].to_numpy()[:, None] - gi).argmin(axis=1)  # the nearest grid point, by brute force
    j = np.abs(X["age"].to_numpy()[:, None] - ga).argmin(axis=1)
    expected = np.zeros_like(counts)
    np.add.at(expected, (i, j), 1)
    assert (counts == expected).all()
    # a categorical axis: rows whose level the grid kept, per level
    rr = plain.pd(("region", "age"))
    reg = by[("region", "age")].sum(axis=1)
    assert dict(zip(map(str, rr.grid[0]), reg.tolist())) == X["region"].value_counts().to_dict()
    # cust keeps 50 of its 200 levels: only their rows are counted
    assert by[("cust", "income")].sum() == 50
    # the record round-trips and the heatmap draws the counts: one dot per occupied cell
    again = Audit.from_json(plain.to_json())
    assert again.data_summary["occupancy"] == json.loads(plain.to_json())["data_summary"]["occupancy"]
    svg = plot_pd_2d(r, occupancy=counts)
    assert "dot area" in svg and svg != plot_pd_2d(r)


def test_keep_points_must_be_a_bool_and_the_flag_sets_it():
    with pytest.raises(InputError, match="keep_points"):
        AuditConfig(keep_points="yes")
    from autopdp.cli import _with_flags, build_parser

    args = build_parser().parse_args(["report", "--model", "m.skops", "--data", "d.csv", "--target", "y", "--out", "o",
                                      "--keep-points"])
    assert _with_flags(AuditConfig(), args).keep_points
    args = build_parser().parse_args(["report", "--model", "m.skops", "--data", "d.csv", "--target", "y", "--out", "o"])
    assert not _with_flags(AuditConfig(), args).keep_points


def test_an_older_results_json_with_points_still_loads_and_draws_them(tmp_path):
    old = Audit.from_json(V1_FILE.read_text())
    assert "points" in old.data_summary and "occupancy" not in old.data_summary
    from autopdp.report.context import _data_overlay

    pair = old.results_2d[0].features
    overlay = _data_overlay(old, pair)
    assert list(overlay) == ["points"] and len(overlay["points"][0]) == len(old.data_summary["points"][pair[0]]) > 0
    assert plot_pd_2d(old.results_2d[0], **overlay) != plot_pd_2d(old.results_2d[0])
    old.to_html(tmp_path / "old.html")
    assert "Heatmap of the 2D partial dependence" in (tmp_path / "old.html").read_text()


def test_python_gate_warns_when_the_audits_decision_settings_are_not_the_policys():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=100)})
    policy = {"features": {"a": {"monotonic": "increasing"}}}
    cfg = AuditConfig(pairs=False, grid_resolution=5, materiality=1000.0)
    loose = audit(lambda d: d["a"].to_numpy(), X, config=cfg)
    with pytest.warns(UserWarning, match=r"materiality = 1000.0 \(the policy's: 0.05\)"):
        gate(loose, policy)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gate(loose, {**policy, "audit": {"materiality": 1000.0}})  # the policy itself set it: no warning

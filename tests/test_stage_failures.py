"""Failures are visible: an expected condition is a named n/a, anything else a stage failure (CLI exit 3)."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LinearRegression

import autopdp.scores.scoring as scoring_module
import autopdp.trust.checks as trust_module
import autopdp.scores.utilities.lipschitz as lipschitz_module
import autopdp
from autopdp import AuditConfig, StageFailure, StageFailureWarning
from autopdp import audit
from autopdp.cli import main

from score_checks import check_no_failed_scores

CFG = AuditConfig(grid_resolution=8, grid_resolution_2d=4, top_k=1)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = pd.DataFrame({"a": rng.uniform(-1, 1, 300), "b": rng.uniform(0, 2, 300), "c": rng.normal(size=300)})
    y = 2 * X.a + np.sin(3 * X.b) + 0.1 * rng.normal(size=300)
    model = lambda Z: 2 * Z["a"].to_numpy() + np.sin(3 * Z["b"].to_numpy())  # noqa: E731
    return model, X, y


def _boom(*args, **kwargs):
    raise RuntimeError("planted bug")


def test_sound_audit_has_no_failed_score(data):
    model, X, y = data
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        a = audit(model, X, y, config=CFG)
    assert not [w for w in record if issubclass(w.category, StageFailureWarning)]
    assert a.stage_failures == ()
    check_no_failed_scores(a.to_dict())


def test_planted_failing_utility_is_a_stage_failure_not_a_silent_na(data, monkeypatch):
    model, X, y = data
    monkeypatch.setattr(scoring_module, "score_slope", _boom)
    with pytest.warns(StageFailureWarning, match="3 score"):
        a = audit(model, X, y, config=CFG.replace(pairs=False))
    assert [(f.stage, f.features, f.item, f.error) for f in a.stage_failures] == [
        ("scoring", (c,), "slope", "RuntimeError: planted bug") for c in ("a", "b", "c")
    ]
    assert all(f.where.startswith("test_stage_failures.py:") and f.where.endswith("in _boom") for f in a.stage_failures)
    assert a.scores["slope"].isna().all()
    assert a.score("a", "slope").reason.startswith("stage failure (scoring): RuntimeError: planted bug")
    # the other utilities are untouched, and the failure is not repeated as an n/a note
    assert a.scores["monotonicity"].notna().all() and a.scores["lipschitz"].notna().all()
    assert not any("planted bug" in n for n in a.notes)
    # results.json carries the list and it round-trips
    d = json.loads(a.to_json())
    assert [StageFailure.from_dict(x) for x in d["stage_failures"]] == list(a.stage_failures)
    with pytest.raises(AssertionError):
        check_no_failed_scores(d)
    html = a.to_html()
    assert 'id="stage-failures"' in html and "RuntimeError: planted bug" in html
    assert "3 stage failure(s)" in a._repr_html_()


def test_planted_failing_trust_statistic_is_a_stage_failure(data, monkeypatch):
    model, X, y = data
    monkeypatch.setattr(trust_module, "stratpd", _boom)
    with pytest.warns(StageFailureWarning):
        a = audit(model, X, y, config=CFG.replace(pairs=False))
    assert {(f.stage, f.item) for f in a.stage_failures} == {("trust", "stratpd")}
    assert [f.features for f in a.stage_failures] == [("a",), ("b",), ("c",)]
    assert a.scores["ale_divergence"].notna().all()


def test_solver_failure_is_an_expected_na_naming_the_solver_error(data, monkeypatch):
    model, X, y = data
    monkeypatch.setattr(lipschitz_module, "SOLVERS", (("NO_SUCH_SOLVER", {}), ("NOR_THIS_ONE", {})))
    a = audit(model, X, y, config=CFG.replace(pairs=False, lipschitz_scale=0.5))  # 0.5: every PD breaks its bound
    assert a.stage_failures == ()
    flat = a.score("c", "lipschitz")  # the model ignores c: a flat PD is its own fit and needs no solver
    assert flat.value == 0.0 and flat.details["solved_by"] == "feasible"
    for c in ("a", "b"):
        s = a.score(c, "lipschitz")
        assert not s.available
        assert s.reason == ("Lipschitz fit failed (NO_SUCH_SOLVER: SolverError: The solver NO_SUCH_SOLVER is not "
                            "installed.; NOR_THIS_ONE: SolverError: The solver NOR_THIS_ONE is not installed.)")


def test_unexpected_solver_error_is_not_swallowed(monkeypatch):
    problem = lipschitz_module._problem((5,))

    def broken(*args, **kwargs):
        raise ZeroDivisionError("inside the solver")

    monkeypatch.setattr(problem.problem, "get_problem_data", broken)  # the first of Problem.solve's steps
    f = np.array([0.0, 1.0, 0.0, 1.0, 0.0])
    with pytest.raises(ZeroDivisionError):
        lipschitz_module.lipschitz_fit(f, [np.arange(5.0)], [0.1])


@pytest.fixture(scope="module")
def files(tmp_path_factory, data):
    import skops.io as sio

    _, X, y = data
    d = tmp_path_factory.mktemp("stage_failures")
    X.assign(target=y).to_csv(d / "data.csv", index=False)
    sio.dump(LinearRegression().fit(X, y), d / "model.skops")
    (d / "small.toml").write_text("grid_resolution = 6\ngrid_resolution_2d = 4\ntop_k = 1\npairs = false\n")
    return d


def _args(files, out, command="report"):
    return [command, "--model", str(files / "model.skops"), "--data", str(files / "data.csv"), "--target", "target",
            "--out", str(out), "--formats", "json,html", "--config", str(files / "small.toml")]


def test_cli_exits_0_without_stage_failures(files, tmp_path):
    assert main(_args(files, tmp_path / "ok")) == 0
    check_no_failed_scores(json.loads((tmp_path / "ok" / "results.json").read_text()))


def test_cli_exits_3_on_a_stage_failure_and_writes_the_list(files, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(scoring_module, "score_slope", _boom)
    assert main(_args(files, tmp_path / "o")) == 3
    err = capsys.readouterr().err
    assert err.count("autopdp: stage failure: scoring: slope of ") == 3
    assert "3 score(s) failed unexpectedly" in err
    d = json.loads((tmp_path / "o" / "results.json").read_text())
    assert [(x["stage"], x["item"], x["features"]) for x in d["stage_failures"]] == [
        ("scoring", "slope", [c]) for c in ("a", "b", "c")
    ]
    html = (tmp_path / "o" / "report.html").read_text()
    assert "Stage failures" in html and html.count("planted bug") >= 3


def test_gate_exits_3_on_a_stage_failure_even_when_the_checks_pass(files, tmp_path, monkeypatch):
    (tmp_path / "policy.toml").write_text("[features.a]\nmonotonic = \"increasing\"\nmax_monotonicity = 1e9\n")
    monkeypatch.setattr(scoring_module, "score_slope", _boom)
    args = _args(files, tmp_path / "g", "gate") + ["--policy", str(tmp_path / "policy.toml")]
    assert main(args) == 3
    assert json.loads((tmp_path / "g" / "gate.json").read_text())["passed"] is True


def test_gate_with_failed_checks_and_a_stage_failure_exits_3_and_writes_the_failed_verdict(files, tmp_path,
                                                                                           monkeypatch, capsys):
    """The precedence docs/user-guide.md states: a stage failure (3) wins over failed checks (1); gate.json and
    gate.xml are written all the same and record the failed checks."""
    (tmp_path / "policy.toml").write_text("[features.a]\nmax_slope = 1e-9\n\n[gate]\ndecide = \"limits\"\n")
    args = _args(files, tmp_path / "f", "gate") + ["--policy", str(tmp_path / "policy.toml")]
    assert main(args) == 1  # the checks alone fail: exit 1
    monkeypatch.setattr(scoring_module, "score_ice_variance", _boom)
    assert main(args) == 3
    verdict = json.loads((tmp_path / "f" / "gate.json").read_text())
    assert verdict["passed"] is False and [c["passed"] for c in verdict["checks"]] == [False]
    assert "<failure" in (tmp_path / "f" / "gate.xml").read_text()
    assert "FAILED 1 of 1 checks" in capsys.readouterr().out


def _pickle_of_a_missing_module() -> bytes:
    # protocol-0 opcodes for "an instance of no_such_module.Thing": unpickling needs that module
    return b"cno_such_module_autopdp\nThing\n(tR."


@pytest.mark.parametrize("name,content,trust,message", [
    ("g.skops", b"garbage", False, r"cannot read model file .* as skops: BadZipFile"),
    ("g.pkl", b"garbage", True, r"cannot load model file .*: (UnpicklingError|ValueError)"),
    ("m.pkl", _pickle_of_a_missing_module(), True, r"cannot load model file .*: ModuleNotFoundError"),
    ("g.parquet", b"garbage\n" * 4, None, r"g\.parquet.*Parquet"),
])
def test_unreadable_files_are_bad_input_naming_the_file(tmp_path, name, content, trust, message):
    """Reading a damaged file is an expected condition: a ValueError (CLI exit 2) naming the file and the error."""
    from autopdp.io.loading import load_data, load_model

    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message):
        load_data(path) if trust is None else load_model(path, allow_pickle=trust)


def test_skops_zip_without_a_schema_is_bad_input(tmp_path):
    import zipfile

    from autopdp.io.loading import load_model

    with zipfile.ZipFile(tmp_path / "m.skops", "w") as z:
        z.writestr("notes.txt", "not a model")
    with pytest.raises(ValueError, match=r"cannot read model file .* as skops: KeyError"):
        load_model(tmp_path / "m.skops")


def test_stratpd_without_enough_rows_is_an_expected_na_not_a_failure():
    # 30 rows: no value of a numeric feature has the 5 slopes StratPD needs, so its curve is empty;
    # the audit says so for every 1D PD instead of failing or leaving the score blank
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=30), "b": rng.normal(size=30)})
    y = 2 * X.a + X.b
    assert np.asarray(autopdp.stratpd(X, y.to_numpy(), "a").x).size == 0  # the premise
    a = audit(LinearRegression().fit(X, y), X, y, config=CFG)
    assert a.stage_failures == ()
    reasons = [v["reason"] for v in autopdp.read_results(a.to_dict())["utility_scores"]
               if v["utility"] == "stratpd" and len(v["features"]) == 1]
    assert len(reasons) == 2 and all("5 slopes StratPD needs" in r for r in reasons), reasons

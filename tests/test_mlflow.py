"""Models from MLflow (issue 33), against a real tracking server: ``mlflow server`` with a SQLite store and a local
artifact folder on 127.0.0.1, started once for this module (no mock).  Models are logged and registered through
MLflow's own client, then read back by the CLI and the Python API."""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import autopdp
from autopdp.cli import main
from autopdp.errors import InputError

HGB_CATEGORICAL_TYPES = ["functools.partial", "sklearn.utils.validation.check_array"]
#: what MLflow's skops logging needs named for a HistGradientBoosting model with categoricals (the logger's trust:
#: autopdp does not take it from the artifact; the reader names the types with --trust-type)
LOGGER_TRUST = HGB_CATEGORICAL_TYPES + ["sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A real ``mlflow server`` on a free port; MLFLOW_TRACKING_URI points at it for the module."""
    root = tmp_path_factory.mktemp("mlflow")
    port = _free_port()
    mlflow_bin = Path(sys.executable).with_name("mlflow")
    log = open(root / "server.log", "w")
    proc = subprocess.Popen(
        [str(mlflow_bin), "server", "--backend-store-uri", f"sqlite:///{root / 'mlflow.db'}",
         "--artifacts-destination", str(root / "artifacts"), "--host", "127.0.0.1", "--port", str(port),
         "--workers", "1"], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    uri = f"http://127.0.0.1:{port}"
    deadline = time.time() + 180
    while True:
        try:
            with urllib.request.urlopen(f"{uri}/health", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            raise RuntimeError(f"mlflow server did not start: {(root / 'server.log').read_text()[-2000:]}")
        time.sleep(0.5)
    old = os.environ.get("MLFLOW_TRACKING_URI")
    os.environ["MLFLOW_TRACKING_URI"] = uri
    try:
        yield uri
    finally:
        if old is None:
            os.environ.pop("MLFLOW_TRACKING_URI", None)
        else:
            os.environ["MLFLOW_TRACKING_URI"] = old
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.uniform(0, 5, n),
                      "c": pd.Categorical(rng.choice(["u", "v", "w"], n))})
    y = ((X.a + 0.3 * X.b + (X.c == "u") + rng.normal(size=n)) > 1.2).astype(int)
    return X, y


@pytest.fixture(scope="module")
def logged(server, tmp_path_factory):
    """Models logged and registered on the server: {what: uri}, and the hold-out data as a CSV."""
    import mlflow
    from mlflow.models import infer_signature
    from sklearn.ensemble import HistGradientBoostingClassifier

    X, y = _data()
    hgb = HistGradientBoostingClassifier(max_iter=15, categorical_features="from_dtype", random_state=0).fit(X, y)
    numeric = HistGradientBoostingClassifier(max_iter=15, random_state=0).fit(X[["a", "b"]], y)
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with mlflow.start_run() as run:
            mlflow.sklearn.log_model(hgb, name="model", signature=infer_signature(X, hgb.predict_proba(X)),
                                     registered_model_name="credit", skops_trusted_types=LOGGER_TRUST)
            mlflow.sklearn.log_model(numeric, name="numeric", registered_model_name="numeric",
                                     signature=infer_signature(X[["a", "b"]], numeric.predict_proba(X[["a", "b"]])),
                                     skops_trusted_types=LOGGER_TRUST)
            mlflow.sklearn.log_model(hgb, name="pickled", serialization_format="cloudpickle")
            out["run_id"] = run.info.run_id
        mlflow.MlflowClient().set_registered_model_alias("credit", "champion", "1")
    d = tmp_path_factory.mktemp("holdout")
    X2, y2 = _data(seed=1)
    X2.assign(y=y2).to_csv(d / "holdout.csv", index=False)
    out["data"] = d / "holdout.csv"
    out["X"], out["y"] = X2, y2
    return out


def run(capsys, *args):
    code = main([str(a) for a in args])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_report_from_a_registered_version_records_the_uri_version_and_run(logged, tmp_path, capsys):
    trust = [x for t in HGB_CATEGORICAL_TYPES for x in ("--trust-type", t)]
    code, out, err = run(capsys, "report", "--model", "models:/credit/1", "--data", logged["data"], "--target", "y",
                         "--out", tmp_path / "r", "--formats", "json", *trust)
    assert code == 0, err
    res = json.loads((tmp_path / "r" / "results.json").read_text())
    rec = res["metadata"]["provenance"]["inputs"]["model"]
    assert rec["uri"] == "models:/credit/1" and rec["version"] == "1" and rec["run_id"] == logged["run_id"]
    assert rec["registered_model"] == "credit" and rec["flavour"] == "sklearn" and rec["loaded"] == "skops (safe loader)"
    assert len(rec["sha256"]) == 64 and rec["bytes"] > 0 and rec["model_id"].startswith("m-")
    methods = {r["method"] for r in autopdp.read_results(tmp_path / "r" / "results.json")["results"]}
    assert methods == {"tree"}  # the native object: the exact tree path


def test_skops_types_the_reader_has_not_named_are_refused_in_one_line(logged, tmp_path, capsys):
    code, out, err = run(capsys, "report", "--model", "models:/credit/1", "--data", logged["data"], "--target", "y",
                         "--out", tmp_path / "r", "--formats", "json")
    assert code == 2
    line = err.strip().splitlines()[-1]
    assert "models:/credit/1 contains types skops does not trust: functools.partial" in line
    assert "--trust-type functools.partial" in line and "/tmp/" not in line
    assert not (tmp_path / "r" / "results.json").exists()


def test_an_alias_resolves_to_its_version(logged):
    model = autopdp.load_model("models:/credit@champion", trusted_types=HGB_CATEGORICAL_TYPES)
    from autopdp.mlflow_models import source_of

    rec = source_of(model).record
    assert rec["version"] == "1" and rec["alias"] == "champion" and rec["name"] == "credit version 1"
    assert type(model).__name__ == "HistGradientBoostingClassifier"


def test_audit_takes_a_uri_and_checks_the_signature(logged):
    X, y = logged["X"], logged["y"]
    a = autopdp.audit("models:/numeric/1", X[["a", "b"]], y, config=autopdp.AuditConfig(pairs=False), progress=False)
    rec = a.metadata["provenance"]["inputs"]["model"]
    assert rec["uri"] == "models:/numeric/1" and rec["version"] == "1"
    with pytest.raises(InputError, match="lacks columns the signature of models:/numeric/1 requires: b"):
        autopdp.audit("models:/numeric/1", X[["a"]], y, progress=False)
    bad = X[["a", "b"]].assign(b=X.b.map(lambda v: f"{v:.2f}"))
    with pytest.raises(InputError, match=r"b is (object|str) but the signature says double"):
        autopdp.audit("models:/numeric/1", bad, y, progress=False)


def test_a_signature_mismatch_is_exit_2_before_any_work(logged, tmp_path, capsys):
    data = tmp_path / "short.csv"
    logged["X"][["a", "c"]].assign(y=logged["y"]).to_csv(data, index=False)
    trust = [x for t in HGB_CATEGORICAL_TYPES for x in ("--trust-type", t)]
    code, out, err = run(capsys, "report", "--model", "models:/credit/1", "--data", data, "--target", "y",
                         "--out", tmp_path / "r", *trust)
    assert code == 2
    assert "the data lacks columns the signature of models:/credit/1 requires: b" in err.strip().splitlines()[-1]
    assert "computing" not in err


def test_a_pickled_model_needs_allow_pickle_naming_its_uri(logged, tmp_path, capsys):
    uri = f"runs:/{logged['run_id']}/pickled"
    code, out, err = run(capsys, "report", "--model", uri, "--data", logged["data"], "--target", "y",
                         "--out", tmp_path / "r", "--formats", "json")
    assert code == 2
    assert f"{uri} is a scikit-learn model saved as a cloudpickle pickle" in err and f"--allow-pickle {uri}" in err
    code, out, err = run(capsys, "report", "--model", uri, "--data", logged["data"], "--target", "y",
                         "--out", tmp_path / "r", "--formats", "json", "--allow-pickle", uri)
    assert code == 0, err
    rec = json.loads((tmp_path / "r" / "results.json").read_text())["metadata"]["provenance"]["inputs"]["model"]
    assert rec["loaded"] == "unpickled (cloudpickle; --allow-pickle)" and rec["artifact_path"] == "pickled"


def test_xgboost_loads_natively_without_unpickling(server):
    import mlflow
    import xgboost

    X, y = _data()
    Xn = X[["a", "b"]]
    model = xgboost.XGBClassifier(n_estimators=10, max_depth=3).fit(Xn, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with mlflow.start_run():
            info = mlflow.xgboost.log_model(model, name="xgb", registered_model_name="xgb")
    loaded = autopdp.load_model("models:/xgb/1")
    from autopdp.mlflow_models import source_of

    assert isinstance(loaded, xgboost.XGBClassifier) and source_of(loaded).record["flavour"] == "xgboost"
    np.testing.assert_allclose(loaded.predict_proba(Xn), model.predict_proba(Xn), rtol=1e-6)
    assert info.model_uri


def test_a_pyfunc_only_model_is_a_callable_after_allow_pickle(server):
    import mlflow

    class Score(mlflow.pyfunc.PythonModel):
        def predict(self, context, model_input, params=None):
            return 1 / (1 + np.exp(-(model_input["a"].to_numpy() + 0.5 * model_input["b"].to_numpy())))

    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with mlflow.start_run():
            mlflow.pyfunc.log_model(name="custom", python_model=Score(), registered_model_name="custom")
    with pytest.raises(InputError, match="models:/custom/1 is a python_function model saved as python code"):
        autopdp.load_model("models:/custom/1")
    f = autopdp.load_model("models:/custom/1", allow_pickle=True)
    a = autopdp.audit(f, X[["a", "b"]], config=autopdp.AuditConfig(pairs=False), progress=False)
    assert a.metadata["provenance"]["inputs"]["model"]["flavour"] == "python_function"
    r = a.pd("a")
    grid = np.asarray(r.grid[0], dtype=float)
    expected = [np.mean(1 / (1 + np.exp(-(g + 0.5 * X.b.to_numpy())))) for g in grid]
    np.testing.assert_allclose(r.average[0], expected, rtol=1e-10)


def test_an_unreachable_server_is_exit_2_in_one_line(tmp_path, capsys, monkeypatch, logged):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"http://127.0.0.1:{_free_port()}")
    t0 = time.time()
    code, out, err = run(capsys, "report", "--model", "models:/credit/1", "--data", logged["data"], "--target", "y",
                         "--out", tmp_path / "r")
    assert code == 2 and time.time() - t0 < 60
    assert "cannot reach the MLflow tracking server at http://127.0.0.1:" in err.strip().splitlines()[-1]


def test_a_version_that_does_not_exist_is_named(logged):
    with pytest.raises(InputError, match="models:/credit/9 is not on the MLflow tracking server"):
        autopdp.load_model("models:/credit/9")


def test_an_audit_of_a_model_object_never_imports_mlflow():
    code = ("import sys, numpy as np, pandas as pd, autopdp\n"
            "from sklearn.linear_model import LinearRegression\n"
            "X = pd.DataFrame({'a': np.arange(60.0), 'b': np.arange(60.0) % 7})\n"
            "m = LinearRegression().fit(X, X.a + X.b)\n"
            "autopdp.audit(m, X, config=autopdp.AuditConfig(pairs=False), progress=False)\n"
            "print('mlflow' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "False"

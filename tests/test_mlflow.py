"""Models from MLflow (issue 33), against a real tracking server: ``mlflow server`` with a SQLite store and a local
artifact folder on 127.0.0.1, started once for this module (no mock).  Models are logged and registered through
MLflow's own client, then read back by the CLI and the Python API."""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
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
    from autopdp.io.mlflow_models import source_of

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
    before = _all_artifacts(logged["run_id"])
    code, out, err = run(capsys, "report", "--model", "models:/credit/1", "--data", data, "--target", "y",
                         "--out", tmp_path / "r", "--mlflow", *trust)
    assert code == 2
    assert "the data lacks columns the signature of models:/credit/1 requires: b" in err.strip().splitlines()[-1]
    assert "computing" not in err
    assert _all_artifacts(logged["run_id"]) == before  # nothing partial logged


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
    from autopdp.io.mlflow_models import source_of

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
    last = err.strip().splitlines()[-1]
    assert "cannot reach the MLflow tracking server at http://127.0.0.1:" in last and "(connection refused)" in last


class _Failing:
    """An HTTP proxy in front of the real server that answers HTTP 500 to its first ``fail`` requests (``fail=None``:
    to every one), as a busy SQLite-backed server does while another writer holds the store."""

    def __init__(self, upstream: str, fail):
        import http.server
        import threading

        state = {"left": fail, "seen": 0}
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _any(self):
                state["seen"] += 1
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if state["left"] is None or state["left"] > 0:
                    if state["left"] is not None:
                        state["left"] -= 1
                    self.send_response(500)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                req = urllib.request.Request(upstream + self.path, data=body or None, method=self.command,
                                             headers={k: v for k, v in self.headers.items() if k.lower() != "host"})
                try:
                    with urllib.request.urlopen(req, timeout=60) as r:
                        code, headers, data = r.status, r.getheaders(), r.read()
                except urllib.error.HTTPError as e:
                    code, headers, data = e.code, e.headers.items(), e.read()
                self.send_response(code)
                for k, v in headers:
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _any

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.uri = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.state = state
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        outer.close = self.httpd.shutdown


def test_a_passing_server_error_is_retried(logged, monkeypatch):
    """A server that answers HTTP 500 once (a busy store) still gives the model: MLflow's retries are kept (2)."""
    proxy = _Failing(os.environ["MLFLOW_TRACKING_URI"], fail=1)
    try:
        monkeypatch.setenv("MLFLOW_TRACKING_URI", proxy.uri)
        model = autopdp.load_model("models:/numeric/1")
        assert hasattr(model, "predict_proba") and proxy.state["left"] == 0 and proxy.state["seen"] >= 2
    finally:
        proxy.close()


def test_a_server_that_answers_errors_is_not_called_unreachable(logged, monkeypatch):
    """A server that answers HTTP 500 every time was reached: the line names the status, not a dead server."""
    proxy = _Failing(os.environ["MLFLOW_TRACKING_URI"], fail=None)
    try:
        monkeypatch.setenv("MLFLOW_TRACKING_URI", proxy.uri)
        t0 = time.time()
        with pytest.raises(InputError) as err:
            autopdp.load_model("models:/numeric/1")
        line = str(err.value)
        assert "answered HTTP 500 for models:/numeric/1, after 2 retries" in line and "cannot reach" not in line
        assert "\n" not in line and time.time() - t0 < 60 and proxy.state["seen"] == 3
    finally:
        proxy.close()


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


def _all_artifacts(run_id):
    import mlflow

    client = mlflow.MlflowClient()
    return sorted(f.path for top in client.list_artifacts(run_id) for f in
                  (client.list_artifacts(run_id, top.path) if top.is_dir else [top]))


def _artifacts(run_id, path="autopdp"):
    import mlflow

    return sorted(Path(f.path).name for f in mlflow.MlflowClient().list_artifacts(run_id, path))


def test_report_logs_every_output_metrics_and_tags_to_the_models_run(logged, tmp_path, capsys):
    import mlflow

    trust = [x for t in HGB_CATEGORICAL_TYPES for x in ("--trust-type", t)]
    code, out, err = run(capsys, "report", "--model", "models:/credit/1", "--data", logged["data"], "--target", "y",
                         "--out", tmp_path / "r", "--formats", "json,pdf", "--mlflow", *trust)
    assert code == 0, err
    assert f"to MLflow run {logged['run_id']}" in out
    assert _artifacts(logged["run_id"]) == ["manifest.json", "report.pdf", "results.json"]
    got = mlflow.MlflowClient().get_run(logged["run_id"]).data
    res = autopdp.read_results(tmp_path / "r" / "results.json")
    passed = sum(1 for items in res["evidence"].values() for e in items if e["passed"])
    assert passed > 0 and "autopdp_untested" in got.metrics
    per = {k: sum(1 for e in items if e["passed"]) for k, items in res["evidence"].items()}
    assert {k: got.metrics[f"autopdp_findings_{k}"] for k in per} == per
    assert got.tags["autopdp_complete"] == "true" and got.tags["autopdp_model_uri"] == "models:/credit/1"
    assert got.tags["autopdp_version"] == autopdp.__version__ and len(got.tags["autopdp_data_sha256"]) == 64
    # the uploaded results.json is the local one, byte for byte
    import mlflow.artifacts

    local = mlflow.artifacts.download_artifacts(run_id=logged["run_id"], artifact_path="autopdp/results.json",
                                                dst_path=str(tmp_path / "dl"))
    assert Path(local).read_bytes() == (tmp_path / "r" / "results.json").read_bytes()
    assert got.metrics["autopdp_findings"] == passed


def test_a_file_model_logs_to_a_new_run_in_the_named_experiment_and_a_gate_logs_its_verdict(logged, tmp_path,
                                                                                           capsys):
    import mlflow
    import skops.io as sio
    from sklearn.linear_model import LogisticRegression

    X, y = logged["X"][["a", "b"]], logged["y"]
    sio.dump(LogisticRegression().fit(X, y), tmp_path / "m.skops")
    X.assign(y=y).to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "policy.toml").write_text("[features.a]\nmax_slope = 100.0\n")
    code, out, err = run(capsys, "gate", "--model", tmp_path / "m.skops", "--data", tmp_path / "d.csv", "--target",
                         "y", "--policy", tmp_path / "policy.toml", "--out", tmp_path / "g", "--formats", "json",
                         "--mlflow")
    assert code == 2 and "name the experiment" in err.strip().splitlines()[-1]
    assert not (tmp_path / "g" / "results.json").exists()  # checked before any work
    code, out, err = run(capsys, "gate", "--model", tmp_path / "m.skops", "--data", tmp_path / "d.csv", "--target",
                         "y", "--policy", tmp_path / "policy.toml", "--out", tmp_path / "g", "--formats", "json",
                         "--mlflow", "--mlflow-experiment", "validations")
    assert code == 0, err
    exp = mlflow.MlflowClient().get_experiment_by_name("validations")
    (r,) = mlflow.MlflowClient().search_runs([exp.experiment_id])
    assert _artifacts(r.info.run_id) == ["gate.json", "gate.xml", "manifest.json", "results.json"]
    assert r.data.metrics["autopdp_gate_passed"] == 1.0 and r.data.metrics["autopdp_gate_failed_checks"] == 0.0
    assert r.info.status == "FINISHED"


def test_audit_log_to_mlflow_uses_the_models_run(logged):
    X, y = logged["X"], logged["y"]
    model = autopdp.load_model("models:/numeric/1")
    a = autopdp.audit(model, X[["a", "b"]], y, config=autopdp.AuditConfig(pairs=False), progress=False)
    run_id = a.log_to_mlflow(formats=("json",))
    assert run_id == a.metadata["provenance"]["inputs"]["model"]["run_id"]
    assert "results.json" in _artifacts(run_id)


def test_an_unreachable_server_at_logging_time_keeps_the_local_outputs(logged, tmp_path, capsys, monkeypatch):
    """The server answers the check before the audit, then goes away: exit 2 naming it, the outputs written."""
    import autopdp.integrations.mlflow.log as ml

    real = ml.log_outputs

    def dead(where, *a, **k):
        monkeypatch.setenv("MLFLOW_TRACKING_URI", f"http://127.0.0.1:{_free_port()}")
        where.run_id = None
        return real(where, *a, **k)

    monkeypatch.setattr(ml, "log_outputs", dead)
    trust = [x for t in HGB_CATEGORICAL_TYPES for x in ("--trust-type", t)]
    code, out, err = run(capsys, "report", "--model", "models:/credit/1", "--data", logged["data"], "--target", "y",
                         "--out", tmp_path / "r", "--formats", "json", "--mlflow", *trust)
    assert code == 2 and "cannot reach the MLflow tracking server" in err.strip().splitlines()[-1]
    assert (tmp_path / "r" / "results.json").is_file()


def test_mlflow_evaluate_runs_the_autopdp_evaluator_and_logs_the_same(logged):
    """MLflow finds autopdp through its entry point; the HGB's native object is audited (the tree path)."""
    import mlflow

    X, y = logged["X"], logged["y"]
    data = X.assign(y=y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with mlflow.start_run() as run:
            mlflow.sklearn.log_model(
                __import__("sklearn.ensemble", fromlist=["x"]).HistGradientBoostingClassifier(
                    max_iter=10, categorical_features="from_dtype", random_state=0).fit(X, y),
                name="m", skops_trusted_types=LOGGER_TRUST, serialization_format="cloudpickle")
            model_uri = f"runs:/{run.info.run_id}/m"
            res = mlflow.models.evaluate(model_uri, data, targets="y", model_type="classifier",
                                         evaluators=["autopdp"],
                                         evaluator_config={"autopdp": {"formats": ["json"], "config": {"pairs": False}}})
    assert res.metrics["autopdp_findings"] >= 1 and "autopdp_untested" in res.metrics
    assert {"autopdp/results.json", "autopdp/manifest.json"} <= set(res.artifacts)
    assert _artifacts(run.info.run_id) == ["manifest.json", "results.json"]
    got = mlflow.MlflowClient().get_run(run.info.run_id).data
    assert got.tags["autopdp_complete"] == "true"
    assert got.metrics["autopdp_findings"] == res.metrics["autopdp_findings"]
    body = json.loads(res.artifacts["autopdp/results.json"].content)
    methods = {r["method"] for r in autopdp.read_results(body)["results"]}
    assert methods == {"tree"}


def test_lightgbm_scikit_learn_classes_are_pickles_and_need_allow_pickle(server):
    import lightgbm
    import mlflow

    X, y = _data()
    Xn = X[["a", "b"]]
    model = lightgbm.LGBMClassifier(n_estimators=10, verbose=-1).fit(Xn, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with mlflow.start_run():
            mlflow.lightgbm.log_model(model, name="lgb", registered_model_name="lgb")
    with pytest.raises(InputError, match=r"models:/lgb/1 is a LightGBM model saved as a pickle \(lightgbm.sklearn"):
        autopdp.load_model("models:/lgb/1")
    loaded = autopdp.load_model("models:/lgb/1", allow_pickle=True)
    assert isinstance(loaded, lightgbm.LGBMClassifier)
    np.testing.assert_allclose(loaded.predict_proba(Xn), model.predict_proba(Xn))


def test_without_mlflow_a_uri_says_which_extra_to_install(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "mlflow", None)  # import mlflow raises ImportError, as when not installed
    pd.DataFrame({"a": [1.0, 2.0], "y": [0, 1]}).to_csv(tmp_path / "d.csv", index=False)
    code, out, err = run(capsys, "report", "--model", "models:/credit/1", "--data", tmp_path / "d.csv",
                         "--target", "y", "--out", tmp_path / "r")
    assert code == 2
    assert "an MLflow model URI needs MLflow, which is not installed: pip install 'autopdp[mlflow]'" in err


def test_the_program_writes_logs_and_exits_in_one_process(logged, tmp_path):
    """``python -m autopdp gate ... --formats json,html --mlflow`` as a program: the documents, the log to MLflow and
    the exit code, against the real server."""
    import mlflow
    import skops.io as sio
    from sklearn.linear_model import LogisticRegression

    X, y = logged["X"][["a", "b"]], logged["y"]
    sio.dump(LogisticRegression().fit(X, y), tmp_path / "m.skops")
    X.assign(y=y).to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "policy.toml").write_text('[features.a]\nmonotonic = "decreasing"\nmax_monotonicity = 0.01\n')
    done = subprocess.run([sys.executable, "-m", "autopdp", "gate", "--model", str(tmp_path / "m.skops"),
                           "--data", str(tmp_path / "d.csv"), "--target", "y", "--policy", str(tmp_path / "policy.toml"),
                           "--out", str(tmp_path / "g"), "--formats", "json,html", "--mlflow", "--mlflow-experiment",
                           "one process"], capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
                          cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # a rises: the policy's check fails
    assert "autopdp gate: FAILED 1 of 1 checks: monotonicity[a]" in done.stdout and "to MLflow run" in done.stdout
    exp = mlflow.MlflowClient().get_experiment_by_name("one process")
    (r,) = mlflow.MlflowClient().search_runs([exp.experiment_id])
    assert _artifacts(r.info.run_id) == ["gate.json", "gate.xml", "manifest.json", "report.html", "results.json"]
    assert r.data.metrics["autopdp_gate_passed"] == 0.0 and r.data.metrics["autopdp_gate_failed_checks"] == 1.0
    assert r.info.status == "FINISHED"


def test_a_crafted_xgboost_artifact_is_exit_2_not_a_crash(server, tmp_path):
    """Issue 57, case 3: a registered xgboost model whose root points to child 1,000,000 loads natively and then
    segfaults xgboost's predict.  ``python -m autopdp report`` on it (a subprocess: before, it died with -11) exits 2
    with one line naming the tree and the node."""
    import json

    import mlflow
    import xgboost

    X, y = _data()
    Xn = X[["a", "b"]]
    bst = xgboost.train({"max_depth": 2}, xgboost.DMatrix(Xn, y), num_boost_round=3)
    d = json.loads(bst.save_raw("json"))
    d["learner"]["gradient_booster"]["model"]["trees"][0]["left_children"][0] = 1_000_000
    crafted = xgboost.Booster()
    crafted.load_model(bytearray(json.dumps(d).encode()))  # loading does not walk the tree; predicting would
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with mlflow.start_run():
            mlflow.xgboost.log_model(crafted, name="crafted", registered_model_name="crafted_xgb", model_format="json")
    Xn.assign(y=y).to_csv(tmp_path / "d.csv", index=False)
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(autopdp.__file__))}
    done = subprocess.run([sys.executable, "-m", "autopdp", "report", "--model", "models:/crafted_xgb/1", "--data",
                           str(tmp_path / "d.csv"), "--target", "y", "--out", str(tmp_path / "o"), "--formats", "json"],
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL, cwd=tmp_path, env=env)
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    errors = [line for line in done.stderr.splitlines() if line.startswith("autopdp: error:")]
    assert len(errors) == 1 and "models:/crafted_xgb/1 holds a tree (#0) whose node 0 has left child 1000000" in errors[0]
    assert not (tmp_path / "o" / "results.json").exists()


def test_a_crafted_lightgbm_artifact_is_exit_2_not_a_crash(server, tmp_path):
    """Issue 57, case 3 for LightGBM: a run's artifact (an MLmodel of the lightgbm flavour and its text model) whose
    first tree's root points to a child far outside the tree (same byte length, so ``tree_sizes`` still match).
    LightGBM loads it and aborts on predict; ``python -m autopdp report`` on ``runs:/...`` exits 2 with one line."""
    import lightgbm
    import mlflow
    import yaml

    X, y = _data()
    Xn = X[["a", "b"]]
    text = lightgbm.train({"verbose": -1, "num_leaves": 4}, lightgbm.Dataset(Xn.to_numpy(), y.to_numpy()),
                          num_boost_round=3).model_to_string()
    first = text.index("left_child=", text.index("Tree=0"))
    line = text[first:text.index("\n", first)]
    width = len(line.split("=")[1].split()[0])
    crafted = text[:first] + "left_child=" + "9" * width + line[len("left_child=") + width:] + text[first + len(line):]
    folder = tmp_path / "crafted"
    folder.mkdir()
    (folder / "MLmodel").write_text(yaml.safe_dump(
        {"flavors": {"lightgbm": {"data": "model.lgb", "model_class": "lightgbm.basic.Booster"}}}))
    (folder / "model.lgb").write_text(crafted)
    with mlflow.start_run() as run:
        mlflow.log_artifacts(str(folder), "crafted")
    Xn.assign(y=y).to_csv(tmp_path / "d.csv", index=False)
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(autopdp.__file__))}
    uri = f"runs:/{run.info.run_id}/crafted"
    done = subprocess.run([sys.executable, "-m", "autopdp", "report", "--model", uri, "--data",
                           str(tmp_path / "d.csv"), "--target", "y", "--out", str(tmp_path / "o"), "--formats", "json"],
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL, cwd=tmp_path, env=env)
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    errors = [line for line in done.stderr.splitlines() if line.startswith("autopdp: error:")]
    assert len(errors) == 1 and f"{uri} holds a tree (#0) whose node 0 has left child 9" in errors[0], done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "o" / "results.json").exists()

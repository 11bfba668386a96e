"""The audit's outputs and findings logged back to MLflow (``--mlflow``; :meth:`autopdp.Audit.log_to_mlflow`).

Where
    The run the audited model was logged from (an MLflow model URI's run, read from the audit's provenance), or a
    new run in the experiment ``--mlflow-experiment`` names (created when missing).  :func:`target` checks the
    server and the run or experiment before any work, so a dead server or a wrong run costs a second, not the audit.
What
    Every file the run wrote (the manifest's set: report.html/pdf/docx, results.json, gate.json/xml, ice.parquet,
    manifest.json) as artifacts under ``autopdp/``; metrics ``autopdp_findings_<criterion>`` (findings per
    criterion), ``autopdp_findings``, ``autopdp_untested``, ``autopdp_selected``, with refits
    ``autopdp_robust`` and ``autopdp_fit_specific``, with a gate ``autopdp_gate_passed`` (1 or 0) and
    ``autopdp_gate_failed_checks``; tags ``autopdp_version``, ``autopdp_data_sha256``, ``autopdp_model_uri``.
All or nothing
    Nothing is logged unless the local outputs were written.  The tag ``autopdp_complete`` is set last: a run that
    has ``autopdp/`` artifacts without it was interrupted while uploading (MLflow has no way to take back an
    uploaded artifact), and the error says so.
"""

from __future__ import annotations

import os
from pathlib import Path

from ...errors import InputError

__all__ = ["LogTarget", "target", "log_outputs", "audit_metrics", "log_audit"]

ARTIFACT_DIR = "autopdp"


class LogTarget:
    """Where the outputs go: ``run_id`` (the model's run) or ``experiment`` (a new run there)."""

    def __init__(self, run_id: str | None, experiment: str | None, experiment_id: str | None, tracking_uri: str):
        self.run_id = run_id
        self.experiment = experiment
        self.experiment_id = experiment_id
        self.tracking_uri = tracking_uri

    def describe(self) -> str:
        where = f"run {self.run_id}" if self.run_id else f"a new run in experiment {self.experiment!r}"
        return f"{where} on {self.tracking_uri}"


def _client():
    from ...io.mlflow_models import _mlflow, _quick_failures

    mlflow = _mlflow()
    for k, v in _quick_failures().items():
        os.environ.setdefault(k, v)
    from mlflow.tracking import MlflowClient

    return mlflow, MlflowClient()


def _one_line(mlflow, exc, what: str) -> InputError:
    from ...io.mlflow_models import _fail

    return _fail(what, mlflow, exc)


def target(model_record: dict | None, experiment: str | None) -> LogTarget:
    """The run or experiment to log to, checked on the server now (see module docs)."""
    from ...io.mlflow_models import _tracking_uri

    mlflow, client = _client()
    server = _tracking_uri(mlflow)
    run_id = None if experiment else (model_record or {}).get("run_id")
    if not run_id and not experiment:
        raise InputError("--mlflow logs to the run of an MLflow model (--model models:/... or runs:/...) or to a new "
                         "run in --mlflow-experiment NAME; this model is a file, so name the experiment.")
    try:
        if run_id:
            client.get_run(run_id)
            return LogTarget(run_id, None, None, server)
        found = client.get_experiment_by_name(experiment)
        exp_id = found.experiment_id if found is not None else client.create_experiment(experiment)
        return LogTarget(None, experiment, exp_id, server)
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - MLflow's errors named in one line
        raise _one_line(mlflow, exc, f"the MLflow run to log to ({run_id or experiment})") from None


def audit_metrics(audit, gate=None) -> dict:
    """The run's metrics (see module docs) from the audit's evidence and the gate."""
    out: dict[str, float] = {}
    findings = untested = robust = specific = 0
    for criterion, items in (getattr(audit, "evidence", None) or {}).items():
        passed = sum(1 for e in items.values() if e.passed)
        out[f"autopdp_findings_{criterion}"] = float(passed)
        findings += passed
        untested += sum(1 for e in items.values() if getattr(e, "untested", False))
        robust += sum(1 for e in items.values() if e.passed and e.robust is True)
        specific += sum(1 for e in items.values() if e.passed and e.robust is False)
    out["autopdp_findings"] = float(findings)
    out["autopdp_untested"] = float(untested)
    out["autopdp_selected"] = float(len(audit.selection))
    if (audit.config.refits or 0) > 0:
        out["autopdp_robust"] = float(robust)
        out["autopdp_fit_specific"] = float(specific)
    if gate is not None:
        out["autopdp_gate_passed"] = 1.0 if gate.passed else 0.0
        out["autopdp_gate_failed_checks"] = float(len(gate.failures))
    return out


def log_outputs(where: LogTarget, audit, paths, *, gate=None) -> str:
    """Upload ``paths`` (the written outputs) under ``autopdp/``, then metrics and tags; returns the run id."""
    from mlflow.entities import Metric, RunTag

    from ..._version import __version__
    from ...utils.secrets import redact

    mlflow, client = _client()
    files = [Path(p) for p in paths if Path(p).is_file()]
    run_id = where.run_id
    uploaded = False
    try:
        if run_id is None:
            run_id = client.create_run(where.experiment_id, run_name="autopdp validation").info.run_id
        for f in files:
            client.log_artifact(run_id, str(f), artifact_path=ARTIFACT_DIR)
            uploaded = True
        import time

        now = int(time.time() * 1000)
        metrics = [Metric(k, v, now, 0) for k, v in audit_metrics(audit, gate).items()]
        prov = audit.metadata.get("provenance") or {}
        model = (prov.get("inputs") or {}).get("model") or {}
        tags = {"autopdp_version": __version__, "autopdp_data_sha256": prov.get("data_content_sha256") or "",
                "autopdp_model_uri": model.get("uri") or model.get("name") or ""}
        client.log_batch(run_id, metrics=metrics, tags=[RunTag(k, str(v)) for k, v in tags.items() if v])
        client.set_tag(run_id, "autopdp_complete", "true")
        if where.run_id is None:
            client.set_terminated(run_id)
    except Exception as exc:  # noqa: BLE001 - MLflow's errors named in one line
        err = _one_line(mlflow, exc, f"logging to {where.describe()}")
        if uploaded:
            err = InputError(redact(f"{err} Some files reached autopdp/ of run {run_id} before the failure; the run "
                                    "has no autopdp_complete tag. The local outputs are complete."))
        raise err from None
    return run_id


def log_audit(audit, *, run_id=None, experiment=None, formats=("json", "html", "pdf"), gate=None) -> str:
    """:meth:`autopdp.Audit.log_to_mlflow`: the outputs written to a temporary folder, then logged (see module docs)
    to ``run_id``, else the audited model's run (a model loaded from an MLflow URI), else a new run in
    ``experiment``; returns the run id."""
    import tempfile

    from ...report import write_report

    model = ((audit.metadata.get("provenance") or {}).get("inputs") or {}).get("model")
    where = target({"run_id": run_id} if run_id else model, None if run_id else experiment)
    extra = {"gate.json": gate.to_json(), "gate.xml": gate.to_junit_xml()} if gate is not None else None
    with tempfile.TemporaryDirectory(prefix="autopdp-mlflow-out-") as tmp:
        written = write_report(audit, Path(tmp) / "out", formats=tuple(formats), extra_files=extra, gate=gate,
                               progress=False)
        files = list(dict.fromkeys([*map(Path, written["paths"]), Path(tmp) / "out" / "manifest.json"]))
        return log_outputs(where, audit, files, gate=gate)

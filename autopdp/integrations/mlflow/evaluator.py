"""autopdp as an MLflow evaluator: ``mlflow.models.evaluate(..., evaluators=["autopdp"])``.

Registered under the ``mlflow.model_evaluator`` entry point as ``autopdp`` (pyproject.toml), so MLflow finds it
once autopdp is installed.  MLflow loads the model and hands it over; autopdp audits the model's native object
where the flavour has one (a scikit-learn estimator or pipeline, an xgboost or LightGBM model: the exact tree path
applies), else the pyfunc's ``predict`` as a callable, on the evaluation data's features and labels, and logs the
same outputs, metrics and tags as ``autopdp report --mlflow`` (:mod:`autopdp.integrations.mlflow.log`) to the evaluation's run.

``evaluator_config`` (all optional): ``formats`` (default ``["json", "html", "pdf"]``), ``config`` (a dict of
:class:`autopdp.AuditConfig` keys and the cover's :class:`autopdp.ReportOptions` keys, as a config file holds
them, e.g. ``{"grid_resolution": 30, "model_name": "scorecard"}``), ``sample_weight`` (a column of the data).
The :class:`mlflow.models.EvaluationResult` holds the metrics and one artifact per file written.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from mlflow.models.evaluation.base import EvaluationArtifact, EvaluationResult, ModelEvaluator

from ...errors import InputError

__all__ = ["AutopdpEvaluator"]

_KEYS = {"formats", "config", "sample_weight"}


class _FileArtifact(EvaluationArtifact):
    """One output file of the audit, logged under ``autopdp/`` of the run (its bytes as the content)."""

    def _load_content_from_file(self, local_artifact_path):
        self._content = Path(local_artifact_path).read_bytes()
        return self._content

    def _save(self, output_artifact_path):
        Path(output_artifact_path).write_bytes(self._content)


def _native(model):
    """The model's own object when its flavour has one (tree path, refits), else a callable of its predictions."""
    if model is None:
        raise InputError("the autopdp evaluator needs the model: mlflow.models.evaluate was given predictions only.")
    try:
        raw = model.get_raw_model()
    except (NotImplementedError, AttributeError):
        raw = None
    if raw is not None and (hasattr(raw, "predict_proba") or hasattr(raw, "predict")):
        return raw
    from ...io.mlflow_models import _PyfuncModel

    return _PyfuncModel(model)


class AutopdpEvaluator(ModelEvaluator):
    """The ``autopdp`` evaluator (see module docs)."""

    @classmethod
    def can_evaluate(cls, *, model_type, evaluator_config, **kwargs) -> bool:
        return model_type in ("classifier", "regressor")

    def evaluate(self, *, model_type, dataset, run_id, evaluator_config, model=None, **kwargs):
        from ...auditing.pipeline import audit
        from .log import LogTarget, audit_metrics, log_outputs
        from ...io.mlflow_models import _tracking_uri, _mlflow
        from ...report import write_report

        cfg = dict(evaluator_config or {})
        unknown = sorted(set(cfg) - _KEYS)
        if unknown:
            raise InputError(f"unknown autopdp evaluator_config keys {unknown}; known: {sorted(_KEYS)}.")
        X = dataset.features_data
        y = dataset.labels_data
        weights = None
        if cfg.get("sample_weight"):
            col = cfg["sample_weight"]
            if col not in X.columns:
                raise InputError(f"evaluator_config sample_weight names column {col!r}, which the data lacks.")
            weights, X = X[col].to_numpy(dtype=float), X.drop(columns=[col])
        result = audit(_native(model), X, y, config=dict(cfg.get("config") or {}), progress=False,
                       sample_weight=weights)
        where = LogTarget(run_id, None, None, _tracking_uri(_mlflow()))
        with tempfile.TemporaryDirectory(prefix="autopdp-evaluate-") as tmp:
            out = Path(tmp) / "out"
            written = write_report(result, out, formats=tuple(cfg.get("formats") or ("json", "html", "pdf")),
                                   progress=False)
            files = list(dict.fromkeys([*map(Path, written["paths"]), out / "manifest.json"]))
            log_outputs(where, result, files)
            artifacts = {}
            for f in files:
                if f.is_file():
                    art = _FileArtifact(uri=f"runs:/{run_id}/autopdp/{f.name}")
                    art._content = f.read_bytes()
                    artifacts[f"autopdp/{f.name}"] = art
        return EvaluationResult(metrics=audit_metrics(result), artifacts=artifacts, run_id=run_id)

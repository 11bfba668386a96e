"""The command line's inputs: the data and models read (files or MLflow), checked against each other, with their
provenance and the notes of how they were loaded; the evidence logged back to MLflow.  Used by :mod:`autopdp.cli`."""

from __future__ import annotations

import sys
import warnings
from contextlib import contextmanager
from pathlib import Path

from ..errors import InputError

__all__ = ["StageError", "stage", "pd_numeric"]


class StageError(Exception):
    """An unexpected failure inside a named stage."""


@contextmanager
def stage(name: str):
    """Announce a long stage on a terminal; name it if it fails."""
    from ..utils.progress import announce

    with announce(name):
        try:
            yield
        except (InputError, OSError):  # named by the check that raised it: bad input
            raise
        except Exception as exc:
            raise StageError(f"stage '{name}' failed: {type(exc).__name__}: {exc}") from exc


def _one_line(exc) -> str:
    """The message on one line, credentials in URIs redacted (CI logs keep stderr)."""
    from ..utils.secrets import redact

    return redact(" ".join(str(exc).split()))


def _train(args, cfg):
    """``(cfg with --refits, (X_train, y_train, w_train) or None)``: --train loaded as --data is (issue 31)."""
    refits = cfg.refits if getattr(args, "refits", None) is None else args.refits
    train = getattr(args, "train", None)
    if refits and not train:
        raise InputError(f"--refits {refits} needs --train TRAIN.csv (the training data the learner is refitted on).")
    if train and not refits:
        raise InputError("--train needs --refits K (e.g. --refits 10): the number of refits of the learner.")
    cfg = cfg.replace(refits=refits) if refits != cfg.refits else cfg
    return cfg, (_load_data(args, train) if train else None)


def _limit(args, name: str, default: float) -> float:
    """A --max-... flag's value (a positive number), or the built-in ``default``."""
    value = getattr(args, name, None)
    if value is None:
        return default
    if not value > 0:
        raise InputError(f"--{name.replace('_', '-')} takes a positive number of MB, got {value}.")
    return value


def _on_workers(args, files: list):
    """``(X, y, None)`` of a Parquet folder with --scheduler: X a :class:`~autopdp.pd.partframe.PartFrame` whose rows
    the cluster's workers read and keep (the calling process reads the parts' footers), ``y`` the target column's
    name (its values kept beside the rows; brought here only to map its labels, --target-map); its weights are
    its --weights column.  ``args.scheduler`` becomes the one client of the run."""
    import pyarrow.parquet as pq

    from ..io.loading import column_error
    from ..pd.distributed import _client
    from ..pd.partframe import parquet_frame

    if args.sep is not None or args.na_values is not None or args.decimal is not None:
        raise InputError(f"--sep, --na-values and --decimal apply to CSV files; data {str(args.data)!r} is Parquet.")
    names = list(pq.read_schema(files[0]).names)
    if args.target not in names:
        raise column_error("target column", args.target, names)
    if args.weights is not None and args.weights == args.target:
        raise InputError(f"--weights {args.weights!r} is the target column; give the column of row weights.")
    if args.weights is not None and args.weights not in names:
        raise column_error("weights column", args.weights, names)
    args.scheduler, _ = _client(args.scheduler)
    features = [c for c in names if c not in (args.target, args.weights)]
    X = parquet_frame(args.scheduler, files, columns=features, weight=args.weights)
    if getattr(args, "target_map", None):  # the labels mapped here, on the column brought over
        return X, map_target(X.read_column(args.target), args.target_map), None
    return X, args.target, None  # the target column stays with the parts' rows on the workers


def _load_data(args, path=None):
    """``(X, y, weights)`` from --data (or ``path``: --train), --target and --weights; a Parquet folder with
    --scheduler stays on the cluster's workers (:func:`_on_workers`)."""
    from ..io.loading import MAX_DATA_MB, column_error, load_data, parquet_parts, split_target

    if path is None and getattr(args, "scheduler", None) is not None:
        files = parquet_parts(args.data)
        if files is not None:
            return _on_workers(args, files)
    df = load_data(path or args.data, sep=args.sep, na_values=args.na_values, decimal=args.decimal,
                   max_mb=_limit(args, "max_data_mb", MAX_DATA_MB))
    X, y = split_target(df, args.target)
    if getattr(args, "target_map", None):
        y = map_target(y, args.target_map)
    weights = None
    if args.weights is not None:
        if args.weights == args.target:
            raise InputError(f"--weights {args.weights!r} is the target column; give the column of row weights.")
        if args.weights not in X.columns:
            raise column_error("weights column", args.weights, df.columns)
        import numpy as np

        weights = X.pop(args.weights)
        numeric = pd_numeric(weights)
        if numeric is None:
            from ..pd.grids import decimal_comma_hint, looks_like_decimal_commas

            hint = f"; they look written with a decimal comma: {decimal_comma_hint()}" \
                if looks_like_decimal_commas(weights) else ""
            raise InputError(f"weights column {args.weights!r} of data file {args.data!r} has values that are not "
                             f"numbers{hint}.")
        bad = int((~np.isfinite(numeric) | (numeric < 0)).sum())
        if bad:
            raise InputError(f"weights column {args.weights!r} of data file {args.data!r} has {bad} missing, infinite or "
                             "negative value(s); weights must be finite and >= 0.")
        weights = numeric
    return X, y, weights


def parse_target_map(text: str) -> dict:
    """``{"Yes": 1, "No": 0}`` from ``--target-map Yes=1,No=0`` (values that read as numbers become numbers)."""
    out = {}
    for part in str(text).split(","):
        label, eq, value = part.partition("=")
        label, value = label.strip(), value.strip()
        if not eq or not label or not value:
            raise InputError(f"--target-map takes LABEL=VALUE pairs separated by commas (e.g. Yes=1,No=0); "
                             f"{part.strip()[:40]!r} is not one.")
        if label in out:
            raise InputError(f"--target-map names the label {label[:40]!r} twice.")
        for kind in (int, float):
            try:
                value = kind(value)
                break
            except ValueError:
                continue
        out[label] = value
    return out


def map_target(y, text: str):
    """The target column with its labels replaced as ``--target-map`` says; every label must be mapped."""
    mapping = parse_target_map(text)
    labels = y.astype(str).where(y.notna(), None)
    unmapped = sorted({str(v) for v in labels.dropna().unique()} - set(mapping))
    if unmapped or labels.isna().any():
        shown = ", ".join(repr(v[:40]) for v in unmapped[:10]) + (" and more" if len(unmapped) > 10 else "")
        missing = " and missing values" if labels.isna().any() else ""
        raise InputError(f"--target-map does not map the target's label(s) {shown or '(none)'}{missing}; map every "
                         f"label of column {str(y.name)[:40]!r} (e.g. --target-map Yes=1,No=0).")
    return labels.map(mapping).rename(y.name)


def pd_numeric(values):
    import pandas as pd

    try:
        return pd.to_numeric(values, errors="raise").to_numpy(dtype=float)
    except (ValueError, TypeError):
        return None


def _inputs(args, **models) -> dict:
    """File records (path, bytes, sha256) of every input of the run, hashed when they are loaded."""
    from ..io.provenance import file_record

    paths = {"data": args.data, "training data": getattr(args, "train", None), **models}
    if getattr(args, "config", None):
        paths["config"] = args.config
    if getattr(args, "policy", None):
        paths["policy"] = args.policy
    if getattr(args, "resolved_docx_template", None):
        paths["docx template"] = args.resolved_docx_template
    loaded = getattr(args, "mlflow_models", {})
    return {role: ({**loaded[p].record, "role": role} if p in loaded else
                   file_record(p, "comparison model" if role.startswith("compare:") else role))
            for role, p in paths.items() if p}


def _same_file(a, b) -> bool:
    from ..io.mlflow_models import is_mlflow_uri

    if is_mlflow_uri(a) or is_mlflow_uri(b):  # a model URI is named as written
        return str(a).strip() == str(b).strip()
    try:
        return Path(a).resolve() == Path(b).resolve()
    except (OSError, RuntimeError):
        return False


def _check_allow_pickle(args, model_paths) -> None:
    """Every ``--allow-pickle PATH`` names one of this run's model files (a typo would not be an opt-in)."""
    paths = [p for p in model_paths if p]
    for allowed in getattr(args, "allow_pickle", None) or []:
        if not any(_same_file(allowed, p) for p in paths):
            raise InputError(f"--allow-pickle {allowed!r} names none of this run's model files "
                             f"({', '.join(repr(str(p)) for p in paths)}); name the pickle/joblib file you trust.")


def _load_model(args, path):
    """A model file or MLflow URI, trusting the skops types named by --trust-type and a pickle only if
    --allow-pickle names it.  An MLflow model is kept in ``args.mlflow_models`` for the provenance and the
    signature check (:func:`_check_signatures`)."""
    from ..io.mlflow_models import is_mlflow_uri, source_of
    from ..io.loading import MAX_MODEL_MB, load_model

    allowed = any(_same_file(a, path) for a in getattr(args, "allow_pickle", None) or [])
    model = load_model(path, trusted_types=getattr(args, "trust_type", None), allow_pickle=allowed,
                       max_mb=_limit(args, "max_model_mb", MAX_MODEL_MB))
    if is_mlflow_uri(path):
        if not hasattr(args, "mlflow_models"):
            args.mlflow_models = {}
        args.mlflow_models[path] = source_of(model)
    return model


def _load_models(args, paths: dict) -> dict:
    """``{name: model}`` for ``{name: path}``: every model is tried, and the refusals of all of them (types to
    trust, pickles, bounds) come in one message, so one rerun can fix them all."""
    out, errors = {}, []
    for name, path in paths.items():
        try:
            out[name] = _load_model(args, path)
        except InputError as exc:
            errors.append(exc)
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise InputError(f"{len(errors)} of the {len(paths)} models were refused: "
                         + " Also: ".join(str(e).strip() for e in errors))
    return out


def _check_signatures(args, X) -> None:
    """The data against the input schema logged with each MLflow model (exit 2 naming the mismatch)."""
    from ..io.mlflow_models import check_signature

    for loaded in getattr(args, "mlflow_models", {}).values():
        if loaded is not None:
            check_signature(loaded, X)


def _mlflow_target(args):
    """Where --mlflow logs, checked on the server before any work (None without --mlflow)."""
    if getattr(args, "mlflow_experiment", None) and not getattr(args, "mlflow", False):
        raise InputError("--mlflow-experiment names where --mlflow logs; add --mlflow.")
    if not getattr(args, "mlflow", False):
        return None
    from ..integrations.mlflow.log import target

    loaded = getattr(args, "mlflow_models", {}).get(getattr(args, "model", None)) if isinstance(
        getattr(args, "model", None), str) else None
    return target(loaded.record if loaded is not None else None, args.mlflow_experiment)


def _log_mlflow(where, result, out: Path, paths, gate=None) -> None:
    """The written outputs (with the manifest) logged to ``where`` (see :mod:`autopdp.integrations.mlflow.log`)."""
    if where is None:
        return
    from ..integrations.mlflow.log import log_outputs

    files = list(dict.fromkeys([*map(Path, paths), out / "manifest.json"]))
    with stage(f"logging to MLflow ({where.describe()})"):
        run_id = log_outputs(where, result, files, gate=gate)
    print(f"autopdp: logged {len([f for f in files if f.is_file()])} files, the findings' counts and tags to MLflow "
          f"run {run_id} (artifacts under autopdp/)")


def _display_name(path) -> str:
    """A model's name for the report: its file name, or an MLflow URI as given."""
    from ..io.mlflow_models import is_mlflow_uri

    return str(path).strip() if is_mlflow_uri(path) else Path(path).name


def _model_label(path, avoid: str = "") -> str:
    """A comparison model's name from its file (the file name without extension) or MLflow URI (name and
    version, or the run), without ':' or '='."""
    from ..io.mlflow_models import is_mlflow_uri

    if is_mlflow_uri(path):
        parts = [p for p in str(path).strip().split(":/", 1)[1].replace("@", "/").split("/") if p]
        stem = " ".join(parts[:2])
    else:
        stem = Path(path).stem
    label = stem.replace(":", "_").replace("=", "_") or "champion"
    return label if label != avoid else f"{label} (champion)"


def _with_provenance(result, args, inputs):
    from ..io.provenance import attach_provenance

    return attach_provenance(
        result, inputs=inputs, command=getattr(args, "command_line", None),
        csv_options={k: v for k, v in (("sep", getattr(args, "sep", None)), ("na_values", getattr(args, "na_values", None)),
                                        ("decimal", getattr(args, "decimal", None))) if v is not None} or None,
        sample_weight=getattr(args, "weights", None),
    )


@contextmanager
def _loading(notes: list):
    """The loading stage.  Warnings raised while loading the model and data (a model saved with another
    scikit-learn version, ...) become ``notes`` for the report, one per distinct warning; the command line
    prints no warnings (:func:`_quiet_libraries`)."""
    with stage("loading"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    from ..io.loading import TrustWarning

    for w in caught:
        if issubclass(w.category, (DeprecationWarning, PendingDeprecationWarning)):  # for developers, not users
            continue
        if issubclass(w.category, TrustWarning):  # what was trusted by name: said now, and noted in the report
            print(f"autopdp: {_one_line(w.message)}", file=sys.stderr)
        note = f"Loading the inputs warned: {w.category.__name__}: {_one_line(w.message)}"
        if note not in notes:
            notes.append(note)


def _with_notes(result, notes: list):
    """The audit with ``notes`` added to its own (once each)."""
    extra = tuple(n for n in notes if n not in result.notes)
    if not extra:
        return result
    import dataclasses

    return dataclasses.replace(result, notes=tuple(result.notes) + extra)

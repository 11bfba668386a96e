"""Models from an MLflow tracking server or registry (``pip install 'autopdp[mlflow]'``).

URIs
    ``models:/NAME/VERSION``, ``models:/NAME@ALIAS``, ``models:/NAME/latest`` (the registry) and
    ``runs:/RUN_ID/PATH`` (a run's logged model), on the tracking server MLflow users already point at
    (``MLFLOW_TRACKING_URI``).  :func:`load_mlflow_model` resolves the URI to its version and run, downloads
    the model's folder and reads its ``MLmodel`` file itself (YAML, no code).
Flavours, and what loading runs
    ``xgboost``: the booster's own file (JSON/UBJSON), loaded by xgboost into the class the MLmodel names, from
    xgboost's estimator classes only: no code from the artifact.  ``lightgbm`` with a ``Booster``: its text model
    file, the same.  ``sklearn`` saved with skops: autopdp's safe skops loader (the types skops does not trust
    must be named, as for a ``.skops`` file).  Everything else (``sklearn`` pickled or cloudpickled, the LightGBM
    scikit-learn classes, a ``python_function``-only model) is a pickle: unpickling runs code from the artifact,
    so it loads only when the URI is named with ``allow_pickle`` (CLI ``--allow-pickle URI``), exactly as for a
    ``.joblib`` file.  A native object keeps the exact tree path and refits; a ``python_function``-only model is
    a callable (``pyfunc.predict`` on a DataFrame).
Signature
    :func:`check_signature` compares the data's columns with the input schema logged with the model (names,
    and numeric against text types) before any work.
"""

from __future__ import annotations

import atexit
import os
import weakref
import re
import shutil
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from ..utils.atomic import sha256_file
from ..errors import InputError
from .boosters import check_booster_file, check_xgboost
from .model_files import MAX_MODEL_MB

__all__ = ["is_mlflow_uri", "load_mlflow_model", "MlflowModel", "check_signature", "MLFLOW_EXTRA", "source_of",
           "model_argument"]

MLFLOW_EXTRA = "pip install 'autopdp[mlflow]'"
_URI = re.compile(r"^(models|runs):/")
_MODELS = re.compile(r"^models:/(?P<name>[^/@]+)(?:/(?P<version>[^/]+)|@(?P<alias>[^/]+))/?$")
_RUNS = re.compile(r"^runs:/(?P<run>[0-9A-Za-z_-]+)/(?P<path>.+)$")

#: the xgboost classes an MLmodel may name (loaded with their own ``load_model``: no unpickling)
XGBOOST_CLASSES = {
    "xgboost.sklearn.XGBClassifier", "xgboost.sklearn.XGBRegressor", "xgboost.sklearn.XGBRFClassifier",
    "xgboost.sklearn.XGBRFRegressor", "xgboost.core.Booster",
}


def is_mlflow_uri(value) -> bool:
    """Whether ``value`` is an MLflow model URI (``models:/...`` or ``runs:/...``)."""
    return isinstance(value, str) and bool(_URI.match(value.strip()))


@dataclass(frozen=True)
class MlflowModel:
    """A model loaded from MLflow: the object and where it came from.

    ``model``: the native estimator (or booster), or a callable for a ``python_function``-only model;
    ``record``: provenance (the URI, registered name, resolved version, run id, model id, flavour, how it
    was loaded, the tracking server); ``signature``: the logged input schema, ``[(name, type), ...]`` or None.
    """

    model: object
    record: dict
    signature: list | None = field(default=None)


def _mlflow():
    try:
        import mlflow  # noqa: F401
    except ImportError:
        raise InputError(f"an MLflow model URI needs MLflow, which is not installed: {MLFLOW_EXTRA}.") from None
    import mlflow

    return mlflow


def _tracking_uri(mlflow) -> str:
    from ..utils.secrets import redact

    return redact(str(mlflow.get_tracking_uri()))


#: what requests and urllib3 say when no answer came: no server there, a name that does not resolve, a timeout
_NO_ANSWER = (("Connection refused", "connection refused"), ("Failed to establish", "no connection"),
              ("NameResolutionError", "the host name does not resolve"),
              ("Name or service not known", "the host name does not resolve"),
              ("timed out", "no answer within MLFLOW_HTTP_REQUEST_TIMEOUT"),
              ("RemoteDisconnected", "the server closed the connection"),
              ("Connection aborted", "the server closed the connection"))
_STATUS = re.compile(r"too many (\d{3}) error responses|error code (\d{3})")


def _fail(uri: str, mlflow, exc) -> InputError:
    """One line for what MLflow raised: no answer from the server, an error status it answered with, a missing
    version, or MLflow's own message.  Each names its cause: a server that answered HTTP 500 was reached."""
    from ..utils.secrets import redact

    server = _tracking_uri(mlflow)
    full = " ".join(str(exc).split())
    text = full if len(full) <= 300 else full[:300] + " ..."
    status = _STATUS.search(full)
    if status:
        code = status.group(1) or status.group(2)
        return InputError(redact(f"the MLflow tracking server at {server} answered HTTP {code} for {uri}, after "
                                 f"{os.environ.get('MLFLOW_HTTP_REQUEST_MAX_RETRIES', '7')} retries; its log says why "
                                 f"(MLflow: {text})"))
    cause = next((why for sign, why in _NO_ANSWER if sign in full), None)
    if cause:
        return InputError(redact(f"cannot reach the MLflow tracking server at {server} for {uri} ({cause}): set "
                                 "MLFLOW_TRACKING_URI to a running server (e.g. http://127.0.0.1:5000)."))
    if "RESOURCE_DOES_NOT_EXIST" in full or "not found" in full.lower() or "does not exist" in full.lower():
        return InputError(redact(f"{uri} is not on the MLflow tracking server at {server}: {text}"))
    return InputError(redact(f"cannot load {uri} from the MLflow tracking server at {server}: {text}"))


def _quick_failures() -> dict:
    """MLflow's HTTP retries default to 7 with a back-off of minutes; a CLI run should fail within seconds on a
    dead server, yet ride out a busy one's passing error (an SQLite store answers HTTP 500 while another writer
    holds it): 2 retries, waits of 0 s and about 2 s (a value the user set is kept); no progress bar of MLflow's
    own on the command line."""
    return {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
            "MLFLOW_HTTP_REQUEST_TIMEOUT": "30", "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false"}


def _pinned(uri: str, facts: dict) -> str:
    """``uri`` with its registry alias (or ``latest``) replaced by the version :func:`_resolve` found, so that the
    download, the audit, the record and the MLflow log all name one version, resolved once."""
    if facts.get("registered_model") and facts.get("version"):
        return f"models:/{facts['registered_model']}/{facts['version']}"
    return uri


def _resolve(uri: str, mlflow) -> dict:
    """The registry's or run's facts about ``uri``: name, version, alias, run id, model id."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient()
    m = _MODELS.match(uri)
    if m:
        name, version, alias = m.group("name"), m.group("version"), m.group("alias")
        if alias:
            mv = client.get_model_version_by_alias(name, alias)
        elif version and version.isdigit():
            mv = client.get_model_version(name, version)
        elif version and version.lower() == "latest":
            found = client.search_model_versions(f"name='{name}'")
            if not found:
                raise InputError(f"{uri}: the registered model {name!r} has no versions.")
            mv = max(found, key=lambda v: int(v.version))
        else:
            raise InputError(f"{uri}: give a version number, 'latest' or an alias (models:/NAME/3, models:/NAME@champion).")
        return {"registered_model": name, "version": str(mv.version), "alias": alias, "run_id": mv.run_id,
                "model_id": getattr(mv, "model_id", None), "source": mv.source}
    m = _RUNS.match(uri)
    if m:
        client.get_run(m.group("run"))  # a clear error for a run that does not exist
        return {"run_id": m.group("run"), "artifact_path": m.group("path")}
    raise InputError(f"{uri!r} is not an MLflow model URI: use models:/NAME/VERSION, models:/NAME@ALIAS or "
                     "runs:/RUN_ID/PATH.")


#: Largest MLmodel file read (its YAML describes the model; real ones are a few KB).
MAX_MLMODEL_BYTES = 1024 * 1024


def _yaml_without_aliases(text: str):
    """YAML parsed with PyYAML's safe loader, an alias refused: a few hundred bytes of nested aliases (a "billion
    laughs") expand to gigabytes, and MLflow never writes one."""
    import yaml

    class NoAliases(yaml.SafeLoader):
        def compose_node(self, parent, index):
            if self.check_event(yaml.AliasEvent):
                raise InputError("the MLflow artifact's MLmodel file uses YAML aliases (*name), which MLflow never "
                                 "writes and which can expand to gigabytes; autopdp does not read it.")
            return super().compose_node(parent, index)

    try:
        return yaml.load(text, Loader=NoAliases)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise InputError(f"the MLflow artifact's MLmodel file is not valid YAML: {' '.join(str(exc).split())[:200]}.") from None


def _read_mlmodel(folder: Path) -> dict:
    path = folder / "MLmodel"
    if not path.is_file() or path.is_symlink():
        raise InputError(f"the MLflow artifact has no MLmodel file (found: {sorted(p.name for p in folder.iterdir())[:10]}).")
    if path.stat().st_size > MAX_MLMODEL_BYTES:
        raise InputError(f"the MLflow artifact's MLmodel file is {path.stat().st_size:,} bytes, over the "
                         f"{MAX_MLMODEL_BYTES:,}-byte limit for a model's description; autopdp does not read it.")
    meta = _yaml_without_aliases(path.read_text(encoding="utf-8", errors="replace"))
    if not isinstance(meta, dict) or not isinstance(meta.get("flavors"), dict):
        raise InputError("the MLflow artifact's MLmodel file has no flavours.")
    return meta


def _inside(folder: Path, name, what: str, uri: str) -> Path:
    """``folder / name``, refused unless it resolves (links followed) to a file inside the artifact's folder: an
    MLmodel names its files, and ``/abs/path`` or ``../x`` would make autopdp read (and record as the registry
    model's) a file of this machine."""
    root = folder.resolve()
    path = (folder / str(name)).resolve()
    if not path.is_relative_to(root) or path == root:
        raise InputError(f"{uri}: the MLmodel's {what} {str(name)!r} points outside the model's artifact folder; "
                         "autopdp reads only the artifact's own files.")
    return path


def _signature(meta: dict) -> list | None:
    import json

    sig = meta.get("signature") or {}
    inputs = sig.get("inputs") if isinstance(sig, dict) else None
    if not inputs:
        return None
    try:
        cols = json.loads(inputs) if isinstance(inputs, str) else inputs
    except ValueError:
        return None
    if not isinstance(cols, list) or not all(isinstance(c, dict) and "name" in c for c in cols):
        return None  # a tensor signature: no columns to check
    return [(str(c["name"]), str(c.get("type", ""))) for c in cols]


def _needs_pickle(uri: str, flavour: str, what: str) -> InputError:
    return InputError(
        f"{uri} is a {flavour} model saved as {what}: loading it runs code from the artifact. Log it with a safe "
        f"format (xgboost/LightGBM boosters, or skops) for safe loading, or, only if you trust this model, rerun "
        f"with --allow-pickle {uri} (API: allow_pickle=True)."
    )


def _load_flavour(uri: str, folder: Path, meta: dict, *, allow_pickle: bool, trusted_types, max_mb: float) -> tuple:
    """``(model, flavour, how, the model's file)`` from the downloaded folder (see module docs for what each
    flavour runs)."""
    flavors = meta["flavors"]
    if "xgboost" in flavors:
        conf = flavors["xgboost"] or {}
        cls = str(conf.get("model_class", "xgboost.core.Booster"))
        if cls not in XGBOOST_CLASSES:
            raise InputError(f"{uri}: the xgboost flavour names class {cls!r}, not one of xgboost's own "
                             f"({', '.join(sorted(XGBOOST_CLASSES))}).")
        try:
            import importlib

            module, name = cls.rsplit(".", 1)
            model = getattr(importlib.import_module(module), name)()
            data = _inside(folder, conf.get("data", "model.xgb"), "data", uri)
            check_booster_file(data, "xgboost", uri, max_mb)
            model.load_model(str(data))
            check_xgboost(model, uri)  # from its JSON, before anything predicts
        except ImportError:
            raise InputError(f"{uri} is an xgboost model and xgboost is not installed: pip install xgboost-cpu.") from None
        return model, "xgboost", f"xgboost's own model file ({cls})", data
    if "lightgbm" in flavors:
        conf = flavors["lightgbm"] or {}
        cls = str(conf.get("model_class", "lightgbm.basic.Booster"))
        data = _inside(folder, conf.get("data", "model.lgb"), "data", uri)
        if cls == "lightgbm.basic.Booster":
            check_booster_file(data, "lightgbm", uri, max_mb)
            try:
                import lightgbm
            except ImportError:
                raise InputError(f"{uri} is a LightGBM model and lightgbm is not installed: pip install lightgbm.") from None
            return lightgbm.Booster(model_file=str(data)), "lightgbm", "LightGBM's own model file (Booster)", data
        if not allow_pickle:
            raise _needs_pickle(uri, "LightGBM", f"a pickle ({cls})")
        import mlflow.lightgbm

        return mlflow.lightgbm.load_model(str(folder)), "lightgbm", f"unpickled ({cls}; --allow-pickle)", data
    if "sklearn" in flavors:
        conf = flavors["sklearn"] or {}
        fmt = str(conf.get("serialization_format", "cloudpickle"))
        data = _inside(folder, conf.get("pickled_model", "model.pkl"), "pickled_model", uri)
        if fmt == "skops":
            from .model_files import load_model_file

            skops_file = data if data.suffix == ".skops" else folder / "autopdp-model.skops"
            if skops_file != data:  # autopdp's skops loader goes by the file's suffix: a copy in the download folder
                shutil.copyfile(data, skops_file)
            try:
                return load_model_file(skops_file, trusted_types, max_mb=max_mb), "sklearn", "skops (safe loader)", data
            except InputError as exc:  # the refusal names the URI, not the download's temporary file
                raise InputError(str(exc).replace(f"model file {str(skops_file)!r}", uri)) from None
        if not allow_pickle:
            raise _needs_pickle(uri, "scikit-learn", f"a {fmt} pickle")
        import mlflow.sklearn

        return mlflow.sklearn.load_model(str(folder)), "sklearn", f"unpickled ({fmt}; --allow-pickle)", data
    if "python_function" in flavors:
        if not allow_pickle:
            raise _needs_pickle(uri, "python_function", "python code and pickles")
        import mlflow.pyfunc

        pyfunc = mlflow.pyfunc.load_model(str(folder))
        return (_PyfuncModel(pyfunc), "python_function", "mlflow.pyfunc (a callable; --allow-pickle)",
                folder / "MLmodel")
    raise InputError(f"{uri} has flavours {sorted(flavors)}; autopdp reads sklearn, xgboost, lightgbm and "
                     "python_function models.")


class _PyfuncModel:
    """A ``python_function`` model as a callable of a DataFrame (its predictions, one row each)."""

    def __init__(self, pyfunc):
        self.pyfunc = pyfunc

    def __call__(self, X):
        import numpy as np
        import pandas as pd

        out = self.pyfunc.predict(X if isinstance(X, pd.DataFrame) else pd.DataFrame(X))
        out = out.to_numpy() if hasattr(out, "to_numpy") else np.asarray(out)
        return np.asarray(out, dtype=float)


def load_mlflow_model(uri: str, *, allow_pickle: bool = False, trusted_types=None,
                      max_mb: float = MAX_MODEL_MB) -> MlflowModel:
    """The model at an MLflow ``uri`` (see module docs): resolved, downloaded and loaded by its flavour.

    Raises :class:`autopdp.InputError` with one line for a missing MLflow, an unreachable server, a version that
    does not exist, or a model that needs ``allow_pickle``.
    """
    uri = str(uri).strip()
    mlflow = _mlflow()
    env = {k: v for k, v in _quick_failures().items() if k not in os.environ}
    os.environ.update(env)
    try:
        try:
            facts = _resolve(uri, mlflow)
            tmp = tempfile.mkdtemp(prefix="autopdp-mlflow-")
            keep = False
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    # the version resolved above is the one downloaded: an alias moved in between changes nothing
                    folder = Path(mlflow.artifacts.download_artifacts(artifact_uri=_pinned(uri, facts), dst_path=tmp))
                    meta = _read_mlmodel(folder)
                    model, flavour, how, data = _load_flavour(uri, folder, meta, allow_pickle=allow_pickle,
                                                              trusted_types=trusted_types, max_mb=max_mb)
                    file = {"bytes": data.stat().st_size, "sha256": sha256_file(data)} if data.is_file() else {}
                # a python_function model may read its folder when it predicts: kept until the process ends
                keep = flavour == "python_function"
            finally:
                if keep:
                    atexit.register(shutil.rmtree, tmp, True)
                else:
                    shutil.rmtree(tmp, ignore_errors=True)
        except InputError:
            raise
        except Exception as exc:  # noqa: BLE001 - MLflow's errors (HTTP, registry, artifacts) named in one line
            raise _fail(uri, mlflow, exc) from None
    finally:
        for k in env:
            os.environ.pop(k, None)
    label = f"{facts['registered_model']} version {facts['version']}" if facts.get("registered_model") else uri
    # name, path, bytes and sha256 as a file's record has them (the report's inputs table): the model's own file
    record = {"role": "model", "name": label, "path": uri, **file, "uri": uri,
              "tracking_uri": _tracking_uri(mlflow), "flavour": flavour, "loaded": how,
              **{k: v for k, v in facts.items() if v is not None and k != "source"},
              "run_id": facts.get("run_id") or meta.get("run_id"),
              "model_id": facts.get("model_id") or meta.get("model_id"),
              "model_uuid": meta.get("model_uuid"), "mlflow_version": meta.get("mlflow_version")}
    return MlflowModel(model=model, record={k: v for k, v in record.items() if v is not None},
                       signature=_signature(meta))


_NUMERIC = {"double", "float", "long", "integer", "boolean"}
_TEXT = {"string"}


def check_signature(loaded: MlflowModel, X) -> None:
    """The data's columns against the model's logged input schema: every schema column present, and a numeric
    schema type never met by a text column (or the reverse).  No schema, or data without column names: nothing
    to check."""
    import pandas as pd

    if not loaded.signature or not isinstance(X, pd.DataFrame):
        return
    uri = loaded.record.get("uri", "the model")
    missing = [n for n, _ in loaded.signature if n not in X.columns]
    if missing:
        raise InputError(f"the data lacks columns the signature of {uri} requires: {', '.join(missing[:10])}"
                         f"{' ...' if len(missing) > 10 else ''}; give data with the model's input columns.")
    wrong = []
    for name, kind in loaded.signature:
        col = X[name]
        numeric = pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col)
        if kind in _NUMERIC and not numeric and not isinstance(col.dtype, pd.CategoricalDtype):
            wrong.append(f"{name} is {col.dtype} but the signature says {kind}")
        elif kind in _TEXT and numeric:
            wrong.append(f"{name} is {col.dtype} but the signature says {kind}")
    if wrong:
        raise InputError(f"the data does not match the signature of {uri}: {'; '.join(wrong[:5])}; fix the column "
                         "types (e.g. --na-values for a numeric column read as text).")


#: model object -> its MLflow load (for the audit's provenance; a model that cannot be weakly referenced is
#: only recorded when the audit loads the URI itself)
_SOURCES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def remember(loaded: MlflowModel) -> object:
    """``loaded.model``, remembered as coming from ``loaded`` (see :func:`source_of`)."""
    try:
        _SOURCES[loaded.model] = loaded
    except TypeError:  # not weakly referenceable
        pass
    return loaded.model


def source_of(model) -> MlflowModel | None:
    """The MLflow load ``model`` came from (:func:`autopdp.load_model` of a URI), or None."""
    try:
        return _SOURCES.get(model)
    except TypeError:
        return None


def model_argument(model, X):
    """``(model, MlflowModel or None)`` for :func:`autopdp.audit`'s ``model``: a URI is loaded here (safe
    flavours only: a pickled model needs ``autopdp.load_model(uri, allow_pickle=True)``); a model loaded by
    :func:`autopdp.load_model` is recognised.  The data is checked against the logged signature."""
    loaded = None
    if is_mlflow_uri(model):
        loaded = load_mlflow_model(model)
        model = remember(loaded)
    else:
        loaded = source_of(model)
    if loaded is not None:
        check_signature(loaded, X)
    return model, loaded

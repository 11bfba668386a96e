"""``autopdp.load_model``: a fitted model from a file or an MLflow model URI, loaded safely.

Files: :func:`autopdp.loading.load_model` (skops, or a pickle named with ``allow_pickle``).  URIs
(``models:/NAME/VERSION``, ``models:/NAME@ALIAS``, ``runs:/RUN_ID/PATH``): :mod:`autopdp.mlflow_models`; an audit of
the returned model records the URI, the resolved version and the run.
"""

from __future__ import annotations

__all__ = ["load_model"]


def load_model(path, *, trusted_types=None, allow_pickle: bool = False, trust_model=None):
    """A fitted model from ``path`` (a ``.skops``/``.joblib``/``.pkl`` file) or an MLflow model URI.

    ``trusted_types``: skops type names to trust beyond the defaults (CLI ``--trust-type``);
    ``allow_pickle``: load a pickle (a pickle/joblib file, or an MLflow model saved by pickling), which runs
    code from it (CLI ``--allow-pickle PATH_OR_URI``).
    """
    from .mlflow_models import is_mlflow_uri

    if is_mlflow_uri(path):
        from .loading import TRUST_MODEL_REMOVED, trusted_type_names
        from .errors import InputError
        from .mlflow_models import load_mlflow_model, remember

        if trust_model is not None:
            raise InputError(TRUST_MODEL_REMOVED)
        if not isinstance(allow_pickle, bool):
            raise InputError(f"allow_pickle must be True or False, got {allow_pickle!r}.")
        return remember(load_mlflow_model(path, allow_pickle=allow_pickle,
                                          trusted_types=trusted_type_names(trusted_types)))
    from .loading import load_model as load_file

    return load_file(path, trusted_types=trusted_types, allow_pickle=allow_pickle, trust_model=trust_model)

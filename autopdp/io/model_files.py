"""Model files read safely: ``.skops`` with skops' safe loader, a pickle only where it is named.

``.skops``: a type skops does not trust loads only when it is named: :data:`DEFAULT_TRUSTED_TYPES` (scikit-learn's own
tree containers, see there) and the types given in ``trusted_types`` (CLI ``--trust-type TYPE``, repeatable).  Any other
untrusted type in the file is refused, and the refusal lists them.  ``.joblib``, ``.pkl``, ``.pickle``: unpickling runs
code from the file, so these load only with ``allow_pickle=True`` for that file (CLI ``--allow-pickle PATH``, naming the
file); no other option implies it.  :func:`autopdp.load_model` (:mod:`autopdp.io.loading`) reads MLflow URIs too.
"""

from __future__ import annotations

import pickle
import re
import warnings
import zipfile
from pathlib import Path

from ..errors import InputError

__all__ = ["load_model_file", "check_skops_size", "MAX_MODEL_MB", "trusted_type_names", "TrustWarning", "PICKLE_SUFFIXES", "DEFAULT_TRUSTED_TYPES",
           "TRUST_MODEL_REMOVED"]

PICKLE_SUFFIXES = (".joblib", ".pkl", ".pickle")
#: Largest model a ``.skops`` file may inflate to (its members' sizes, read from the zip's directory before any is
#: read), in MB; ``--max-model-mb`` (API: ``max_mb=``) raises it.
MAX_MODEL_MB = 1024

#: skops types trusted without being named: scikit-learn's own tree containers, which skops flags in every
#: saved tree model (DecisionTree*, RandomForest*, ExtraTrees*, GradientBoosting*, IsolationForest: the
#: Cython ``Tree``; HistGradientBoosting*: ``TreePredictor``).  skops' warning is that loading a type it
#: does not trust may run that type's code.  For these two that code is scikit-learn's own: skops builds
#: the object with the class's constructor and ``__setstate__``, which only copy arrays of nodes and
#: thresholds (no callables, no imports, no file access); and skops still checks every object inside
#: their state on its own, so a function hidden there (``builtins.exec``, ``functools.partial``, ...) is
#: still untrusted and refused.  Trusting these names trusts scikit-learn, which the audit runs anyway.
#: Their node arrays are checked after loading (:mod:`autopdp.io.tree_arrays`): scikit-learn's compiled predict does
#: not bounds-check them, so a crafted node index is refused before anything predicts.
#: Nothing else is trusted by default: HistGradientBoosting with categorical features also needs
#: ``--trust-type functools.partial --trust-type sklearn.utils.validation.check_array``.
DEFAULT_TRUSTED_TYPES = (
    "sklearn.tree._tree.Tree",
    "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",
)

_TYPE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+")


class TrustWarning(UserWarning):
    """A model was loaded because a type or a pickle was trusted by name (the CLI prints it and the report notes it)."""

#: What reading a file that is not a valid skops archive raises: not a zip, no schema, bad JSON, I/O.
SKOPS_READ_ERRORS = (zipfile.BadZipFile, KeyError, ValueError, OSError)
#: What rebuilding the objects of a skops file raises: the above, plus types or modules this
#: environment lacks or does not trust.
SKOPS_LOAD_ERRORS = SKOPS_READ_ERRORS + (TypeError, ImportError, AttributeError)
#: What unpickling a damaged or foreign file raises (the pickle module's documented errors, and
#: joblib's ValueError for a file it does not recognise).
PICKLE_ERRORS = (pickle.UnpicklingError, EOFError, ImportError, AttributeError, IndexError, KeyError, ValueError,
                 TypeError, OSError)

#: The message for the removed ``--trust-model`` / ``trust_model=``.
TRUST_MODEL_REMOVED = (
    "--trust-model (API: trust_model=) was removed: it trusted every type in a model file and allowed every "
    "pickle. Name what you trust instead: --trust-type TYPE for each skops type the refusal lists (API: "
    "trusted_types=[...]), --allow-pickle PATH for each pickle/joblib file (API: allow_pickle=True)."
)


def trusted_type_names(trusted_types) -> tuple[str, ...]:
    """The ``trusted_types`` argument checked: dotted type names (a single text is one name)."""
    if trusted_types is None:
        return ()
    if isinstance(trusted_types, str):
        trusted_types = [trusted_types]
    try:
        names = [t for t in trusted_types]
    except TypeError:
        raise InputError(f"trusted_types must be a list of type names like 'sklearn.tree._tree.Tree', "
                         f"got {type(trusted_types).__name__}.") from None
    for t in names:
        if not isinstance(t, str) or not _TYPE_NAME.fullmatch(t.strip()):
            raise InputError(f"--trust-type takes a full type name like 'sklearn.tree._tree.Tree' (module.Name), "
                             f"got {t!r} (API: trusted_types=[...]).")
    return tuple(dict.fromkeys(t.strip() for t in names))


def check_skops_size(p: Path, max_mb: float = MAX_MODEL_MB) -> None:
    """Refuse a ``.skops`` zip whose members, as its directory declares them, inflate past ``max_mb`` (a 3 MB file
    can declare a 3 GB array), before skops reads any.  zipfile never inflates a member past its declared size."""
    try:
        with zipfile.ZipFile(p) as z:
            infos = z.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise InputError(f"cannot read model file {str(p)!r} as skops: {type(exc).__name__}: {exc}.") from None
    total = sum(i.file_size for i in infos)
    if len(infos) > 1_000_000 or total > max_mb * 1024 * 1024:
        raise InputError(f"model file {str(p)!r} inflates to {total / 2 ** 20:,.0f} MB in {len(infos):,} parts, over the "
                         f"{max_mb:,g} MB limit for a model; if the model is really that large, rerun with "
                         f"--max-model-mb {int(total / 2 ** 20) + 1} (API: max_mb=).")


def load_model_file(path, trusted_types=None, allow_pickle: bool = False, max_mb: float = MAX_MODEL_MB):
    """A fitted model from a model file: ``.skops`` (skops' safe loader, trusting :data:`DEFAULT_TRUSTED_TYPES` and
    ``trusted_types``; at most ``max_mb`` inflated) or a pickle that ``allow_pickle`` names (see
    :func:`autopdp.io.loading.load_model`)."""
    if not isinstance(allow_pickle, bool):
        raise InputError(f"allow_pickle must be True or False, got {allow_pickle!r}.")
    if isinstance(max_mb, bool) or not isinstance(max_mb, (int, float)) or not max_mb > 0:
        raise InputError(f"max_mb (--max-model-mb) must be a positive number of MB, got {max_mb!r}.")
    named = trusted_type_names(trusted_types)
    p = Path(path)
    if not p.exists():
        raise InputError(f"model file {str(p)!r} does not exist.")
    if not p.is_file():
        raise InputError(f"model file {str(p)!r} is not a file (a directory?); give the path of a saved model.")
    suffix = p.suffix.lower()
    if suffix == ".skops":
        import skops.io as sio

        check_skops_size(p, max_mb)
        try:
            untrusted = [str(t) for t in sio.get_untrusted_types(file=p)]
        except SKOPS_READ_ERRORS as exc:
            raise InputError(f"cannot read model file {str(p)!r} as skops: {type(exc).__name__}: {exc}.") from None
        refused = [t for t in untrusted if t not in DEFAULT_TRUSTED_TYPES and t not in named]
        if refused:
            hint = " ".join(f"--trust-type {t}" for t in refused)
            raise InputError(
                f"model file {str(p)!r} contains types skops does not trust: {', '.join(refused)}. Loading them can "
                f"run code; check what they are, and only if you trust them rerun with {hint} "
                "(API: trusted_types=[...])."
            )
        try:
            model = sio.load(p, trusted=untrusted or None)
        except SKOPS_LOAD_ERRORS as exc:
            raise InputError(f"cannot load model file {str(p)!r}: {type(exc).__name__}: {exc}.") from None
        from .tree_arrays import check_tree_arrays

        check_tree_arrays(model, f"model file {str(p)!r}")  # the trusted tree containers' nodes stay in bounds
        by_name = [t for t in untrusted if t not in DEFAULT_TRUSTED_TYPES]
        if by_name:
            warnings.warn(f"model file {p.name!r} loaded trusting {', '.join(by_name)} by name (--trust-type).",
                          TrustWarning, stacklevel=2)
        return model
    if suffix == ".onnx":
        from .onnx_model import load_onnx

        return load_onnx(p, max_mb)
    if suffix in PICKLE_SUFFIXES:
        if not allow_pickle:
            raise InputError(
                f"model file {str(p)!r} is a pickle: loading it runs code from the file. Save the model with "
                f"skops (.skops) for safe loading, or, only if you trust this file, rerun with --allow-pickle {str(p)} "
                "(API: allow_pickle=True)."
            )
        import joblib

        try:
            model = joblib.load(p)
        except PICKLE_ERRORS as exc:
            raise InputError(f"cannot load model file {str(p)!r}: {type(exc).__name__}: {exc}.") from None
        warnings.warn(f"model file {p.name!r} is a pickle, loaded because --allow-pickle named it (it can run code).",
                      TrustWarning, stacklevel=2)
        return model
    raise InputError(
        f"model file {str(p)!r} has an unknown format {suffix or '(no extension)'!r}; use .skops or .onnx (safe) or "
        ".joblib/.pkl with --allow-pickle PATH."
    )

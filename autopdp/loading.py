"""Loading models and data from files, safely.

Models
    ``.skops``: skops' safe loader.  A type skops does not trust loads only when it is named:
    :data:`DEFAULT_TRUSTED_TYPES` (scikit-learn's own tree containers, see there) and the types given
    in ``trusted_types`` (CLI ``--trust-type TYPE``, repeatable).  Any other untrusted type in the file
    is refused, and the refusal lists them.  ``.joblib``, ``.pkl``, ``.pickle``: unpickling runs code
    from the file, so these load only with ``allow_pickle=True`` for that file (CLI
    ``--allow-pickle PATH``, naming the file); no other option implies it.
Data
    ``.csv`` (pandas) and ``.parquet``/``.pq`` (pyarrow).
"""

from __future__ import annotations

import pickle
import re
import warnings
import zipfile
from pathlib import Path

import pandas as pd

from .errors import InputError, advice

__all__ = ["load_model", "load_data", "split_target", "did_you_mean", "PICKLE_SUFFIXES", "DEFAULT_TRUSTED_TYPES",
           "TrustWarning"]

PICKLE_SUFFIXES = (".joblib", ".pkl", ".pickle")

#: skops types trusted without being named: scikit-learn's own tree containers, which skops flags in every
#: saved tree model (DecisionTree*, RandomForest*, ExtraTrees*, GradientBoosting*, IsolationForest: the
#: Cython ``Tree``; HistGradientBoosting*: ``TreePredictor``).  skops' warning is that loading a type it
#: does not trust may run that type's code.  For these two that code is scikit-learn's own: skops builds
#: the object with the class's constructor and ``__setstate__``, which only copy arrays of nodes and
#: thresholds (no callables, no imports, no file access); and skops still checks every object inside
#: their state on its own, so a function hidden there (``builtins.exec``, ``functools.partial``, ...) is
#: still untrusted and refused.  Trusting these names trusts scikit-learn, which the audit runs anyway.
#: Their node arrays are checked after loading (:mod:`autopdp.tree_arrays`): scikit-learn's compiled predict does
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


def load_model(path, *, trusted_types=None, allow_pickle: bool = False, trust_model=None):
    """Load a fitted model from ``path`` (see module docs for the formats; :func:`autopdp.load_model` also reads
    MLflow model URIs).

    ``trusted_types``: skops type names to trust in this file beyond :data:`DEFAULT_TRUSTED_TYPES`
    (CLI ``--trust-type``); the loaded ones are named in a :class:`TrustWarning`.
    ``allow_pickle``: load this file even though it is a pickle/joblib file (runs code from it;
    CLI ``--allow-pickle PATH``).  ``trust_model`` was removed (an :class:`InputError` says what replaces it).
    """
    if trust_model is not None:
        raise InputError(TRUST_MODEL_REMOVED)
    if not isinstance(allow_pickle, bool):
        raise InputError(f"allow_pickle must be True or False, got {allow_pickle!r}.")
    named = trusted_type_names(trusted_types)
    p = Path(path)
    if not p.exists():
        raise InputError(f"model file {str(p)!r} does not exist.")
    if not p.is_file():
        raise InputError(f"model file {str(p)!r} is not a file (a directory?); give the path of a saved model.")
    suffix = p.suffix.lower()
    if suffix == ".skops":
        import skops.io as sio

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
        f"model file {str(p)!r} has an unknown format {suffix or '(no extension)'!r}; use .skops (safe) or "
        ".joblib/.pkl with --allow-pickle PATH."
    )


def _sep(sep):
    if sep is None:
        return ","
    if not isinstance(sep, str) or not sep:
        raise InputError(f"--sep must be a non-empty text, got {sep!r}.")
    return {"\\t": "\t", "tab": "\t", "TAB": "\t"}.get(sep, sep)


def _na_values(na_values):
    if na_values is None:
        return None
    if isinstance(na_values, str):
        items = [v for v in na_values.split(",")]
    else:
        items = [str(v) for v in na_values]
    items = [v.strip() for v in items if v.strip()]
    if not items:
        raise InputError("--na-values needs at least one marker, e.g. --na-values '?' or --na-values 'NA,?,-'.")
    return items


def _decimal(decimal, sep: str) -> str:
    if decimal is None:
        return "."
    if not isinstance(decimal, str) or len(decimal) != 1:
        raise InputError(f"--decimal must be one character, e.g. --decimal ',', got {decimal!r}.")
    if decimal == sep:
        raise InputError(f"--decimal {decimal!r} is also the field separator; pass the file's separator too, "
                         f"e.g. --sep ';' --decimal '{decimal}'.")
    return decimal


def load_data(path, *, sep=None, na_values=None, decimal=None) -> pd.DataFrame:
    """Read a CSV or Parquet file into a DataFrame, with errors that name the file.

    Parameters
    ----------
    path : path
        ``.csv`` or ``.parquet``/``.pq``.
    sep : str, optional
        CSV field separator (default ","; "tab" or "\\t" for tabs).
    na_values : str or list of str, optional
        Extra markers of missing values in a CSV (a comma-separated text or a
        list), e.g. ``"?"`` for the UCI Adult data.  Pandas' defaults (empty,
        "NA", "NaN", ...) stay missing too.
    decimal : str, optional
        The decimal mark of a CSV's numbers (default "."; "," for "3,5").
    """
    p = Path(path)
    if not p.exists():
        raise InputError(f"data file {str(p)!r} does not exist.")
    if not p.is_file():
        raise InputError(f"data file {str(p)!r} is not a file (a directory?); give the path of a .csv or .parquet file.")
    suffix = p.suffix.lower()
    if suffix not in (".csv", ".parquet", ".pq"):
        tabs = (" (a tab-separated file: give it the .csv extension and read it with "
                + advice(cli="--sep tab", python="sep='\\t'") + ")") if suffix in (".tsv", ".tab") else ""
        raise InputError(f"data file {str(p)!r} has an unknown format {suffix or '(no extension)'!r}; use .csv or "
                         f".parquet{tabs}.")
    csv_options = {"sep": _sep(sep), "na_values": _na_values(na_values)}
    csv_options["decimal"] = _decimal(decimal, csv_options["sep"])
    if suffix != ".csv" and (sep is not None or na_values is not None or decimal is not None):
        raise InputError(f"--sep, --na-values and --decimal apply to CSV files; data file {str(p)!r} is Parquet.")
    try:
        if p.stat().st_size == 0:
            raise InputError(f"data file {str(p)!r} is empty (0 bytes).")
        if suffix == ".csv":
            df = pd.read_csv(p, **csv_options)
        else:
            df = pd.read_parquet(p)
    except pd.errors.EmptyDataError:
        raise InputError(f"data file {str(p)!r} is empty: no header line and no rows.") from None
    except InputError:
        raise
    except ValueError as exc:  # pandas' parser errors
        if str(p) in str(exc):
            raise InputError(str(exc)) from None
        raise InputError(f"cannot read data file {str(p)!r}: {exc}.") from None
    except (OSError, ImportError) as exc:  # unreadable file, or no Parquet engine (pyarrow) installed
        raise InputError(f"cannot read data file {str(p)!r}: {type(exc).__name__}: {exc}.") from None
    if df.shape[0] == 0:
        raise InputError(f"data file {str(p)!r} has a header but no rows.")
    header = _csv_header(p, csv_options["sep"]) if suffix == ".csv" else [str(c) for c in df.columns]
    duplicated = list(dict.fromkeys(c for i, c in enumerate(header) if c in header[:i]))
    if duplicated:
        raise InputError(
            f"data file {str(p)!r} has duplicate column names {', '.join(repr(c) for c in duplicated)}: "
            "rename them so that every column has a unique name (or drop the copies)."
        )
    if suffix == ".csv" and df.shape[1] == 1 and csv_options["sep"] == ",":
        only = str(df.columns[0])
        for other in (";", "\t", "|"):
            if other in only:
                shown = "tab" if other == "\t" else other
                raise InputError(
                    f"data file {str(p)!r} reads as a single column {only[:60]!r}: it looks separated by "
                    f"{shown!r}, not commas; pass --sep '{shown}'."
                )
    return df


def _csv_header(path: Path, sep: str) -> list[str]:
    """The CSV's column names as written (pandas renames a repeated name 'x' to 'x.1')."""
    try:
        first = pd.read_csv(path, sep=sep, header=None, nrows=1, dtype=str, keep_default_na=False)
    except (ValueError, OSError):  # the data itself was read: a header pandas cannot re-read is not a duplicate
        return []
    return [str(c) for c in first.iloc[0].tolist()] if len(first) else []


def did_you_mean(name: str, choices) -> str:
    """`` Did you mean 'x'?`` for a close match among ``choices``, else an empty string."""
    import difflib

    choices = [str(c) for c in choices]
    lower = {c.lower(): c for c in choices}
    if str(name).lower() in lower:
        return f" Did you mean {lower[str(name).lower()]!r}?"
    close = difflib.get_close_matches(str(name), choices, n=1, cutoff=0.6)
    return f" Did you mean {close[0]!r}?" if close else ""


def list_columns(columns, limit: int = 12) -> str:
    cols = [repr(str(c)) for c in columns]
    shown = ", ".join(cols[:limit])
    return shown + (f", ... ({len(cols) - limit} more)" if len(cols) > limit else "")


def column_error(what: str, name: str, columns, source: str = "data") -> ValueError:
    """The error for a column that is not in the data: a suggestion and the columns (shortened)."""
    return InputError(
        f"{what} {name!r} is not in the {source}.{did_you_mean(name, columns)} "
        f"Columns: {list_columns(columns)}."
    )


def split_target(df: pd.DataFrame, target: str, source: str = "data"):
    """``(X, y)`` from a table and the name of its target column."""
    if target not in df.columns:
        raise column_error("target column", target, df.columns, source)
    return df.drop(columns=[target]), df[target]

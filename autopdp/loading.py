"""Loading models and data from files, safely.

Models
    ``.skops``: skops' safe loader; types skops does not trust are reported and
    not loaded unless ``trust_model=True``.  ``.joblib``, ``.pkl``, ``.pickle``:
    unpickling runs code from the file, so these load only with
    ``trust_model=True`` (CLI ``--trust-model``).
Data
    ``.csv`` (pandas) and ``.parquet``/``.pq`` (pyarrow).
"""

from __future__ import annotations

import pickle
import zipfile
from pathlib import Path

import pandas as pd

from .errors import InputError

__all__ = ["load_model", "load_data", "split_target", "did_you_mean", "PICKLE_SUFFIXES"]

PICKLE_SUFFIXES = (".joblib", ".pkl", ".pickle")

#: What reading a file that is not a valid skops archive raises: not a zip, no schema, bad JSON, I/O.
SKOPS_READ_ERRORS = (zipfile.BadZipFile, KeyError, ValueError, OSError)
#: What rebuilding the objects of a skops file raises: the above, plus types or modules this
#: environment lacks or does not trust.
SKOPS_LOAD_ERRORS = SKOPS_READ_ERRORS + (TypeError, ImportError, AttributeError)
#: What unpickling a damaged or foreign file raises (the pickle module's documented errors, and
#: joblib's ValueError for a file it does not recognise).
PICKLE_ERRORS = (pickle.UnpicklingError, EOFError, ImportError, AttributeError, IndexError, KeyError, ValueError,
                 TypeError, OSError)


def load_model(path, *, trust_model: bool = False):
    """Load a fitted model from ``path`` (see module docs for the formats)."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"model file {str(p)!r} does not exist.")
    if not p.is_file():
        raise InputError(f"model file {str(p)!r} is not a file (a directory?); give the path of a saved model.")
    suffix = p.suffix.lower()
    if suffix == ".skops":
        import skops.io as sio

        try:
            untrusted = sio.get_untrusted_types(file=p)
        except SKOPS_READ_ERRORS as exc:
            raise InputError(f"cannot read model file {str(p)!r} as skops: {type(exc).__name__}: {exc}.") from None
        if untrusted and not trust_model:
            raise InputError(
                f"model file {str(p)!r} contains types skops does not trust: {', '.join(untrusted)}; "
                "check them, and if you trust the file rerun with --trust-model (API: trust_model=True)."
            )
        try:
            return sio.load(p, trusted=untrusted or None)
        except SKOPS_LOAD_ERRORS as exc:
            raise InputError(f"cannot load model file {str(p)!r}: {type(exc).__name__}: {exc}.") from None
    if suffix in PICKLE_SUFFIXES:
        if not trust_model:
            raise InputError(
                f"model file {str(p)!r} is a pickle: loading it runs code from the file. Save the model with "
                "skops (.skops) for safe loading, or, if you trust the file, rerun with --trust-model "
                "(API: trust_model=True)."
            )
        import joblib

        try:
            return joblib.load(p)
        except PICKLE_ERRORS as exc:
            raise InputError(f"cannot load model file {str(p)!r}: {type(exc).__name__}: {exc}.") from None
    raise InputError(
        f"model file {str(p)!r} has an unknown format {suffix or '(no extension)'!r}; use .skops (safe) or "
        ".joblib/.pkl with --trust-model."
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


def load_data(path, *, sep=None, na_values=None) -> pd.DataFrame:
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
    """
    p = Path(path)
    if not p.exists():
        raise InputError(f"data file {str(p)!r} does not exist.")
    if not p.is_file():
        raise InputError(f"data file {str(p)!r} is not a file (a directory?); give the path of a .csv or .parquet file.")
    suffix = p.suffix.lower()
    if suffix not in (".csv", ".parquet", ".pq"):
        raise InputError(f"data file {str(p)!r} has an unknown format {suffix or '(no extension)'!r}; use .csv or .parquet.")
    csv_options = {"sep": _sep(sep), "na_values": _na_values(na_values)}
    if suffix != ".csv" and (sep is not None or na_values is not None):
        raise InputError(f"--sep and --na-values apply to CSV files; data file {str(p)!r} is Parquet.")
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

"""Loading models and data, safely: :func:`load_model` (``autopdp.load_model``) and :func:`load_data`.

Models
    A model file (:mod:`autopdp.io.model_files`: ``.skops`` with skops' safe loader; a pickle only where
    ``allow_pickle`` names it) or an MLflow model URI (:mod:`autopdp.io.mlflow_models`).
Data
    ``.csv`` (pandas) and ``.parquet``/``.pq`` (pyarrow).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..errors import InputError, advice
from .model_files import (DEFAULT_TRUSTED_TYPES, MAX_MODEL_MB, PICKLE_SUFFIXES, TRUST_MODEL_REMOVED, TrustWarning,  # noqa: F401
                          load_model_file, trusted_type_names)

__all__ = ["load_model", "load_data", "split_target", "did_you_mean", "PICKLE_SUFFIXES", "DEFAULT_TRUSTED_TYPES",
           "TrustWarning"]


def load_model(path, *, trusted_types=None, allow_pickle: bool = False, trust_model=None, max_mb: float = MAX_MODEL_MB):
    """``autopdp.load_model``: a fitted model from a file (see module docs for the formats) or an MLflow model URI
    (``models:/NAME/VERSION``, ``models:/NAME@ALIAS``, ``runs:/RUN_ID/PATH``: :mod:`autopdp.io.mlflow_models`; an
    audit of the returned model records the URI, the resolved version and the run).

    ``trusted_types``: skops type names to trust beyond :data:`DEFAULT_TRUSTED_TYPES` (CLI ``--trust-type``); the
    loaded ones are named in a :class:`TrustWarning`.  ``allow_pickle``: load a pickle (a pickle/joblib file, or an
    MLflow model saved by pickling), which runs code from it (CLI ``--allow-pickle PATH_OR_URI``).  ``trust_model``
    was removed (an :class:`InputError` says what replaces it).  ``max_mb``: the largest model a ``.skops`` file (or
    an MLflow artifact's) may inflate to (CLI ``--max-model-mb``, default :data:`MAX_MODEL_MB`).
    """
    if trust_model is not None:
        raise InputError(TRUST_MODEL_REMOVED)
    from .mlflow_models import is_mlflow_uri

    if is_mlflow_uri(path):
        from .mlflow_models import load_mlflow_model, remember

        if not isinstance(allow_pickle, bool):
            raise InputError(f"allow_pickle must be True or False, got {allow_pickle!r}.")
        return remember(load_mlflow_model(path, allow_pickle=allow_pickle,
                                          trusted_types=trusted_type_names(trusted_types), max_mb=max_mb))
    return load_model_file(path, trusted_types, allow_pickle, max_mb=max_mb)


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


#: Largest table a data file may expand to in memory (a CSV: its size on disk; a Parquet file: its footer's rows x
#: columns x 8 bytes, or its uncompressed size if larger), in MB; ``--max-data-mb`` (API: ``max_mb=``) raises it.
MAX_DATA_MB = 1024


def _parquet_size(p: Path) -> tuple[int, int, int]:
    """(bytes, rows, columns): the bytes a Parquet file expands to in memory by its footer (its rows x columns x 8,
    or its uncompressed size if larger), and the rows and columns it declares."""
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(p).metadata
    except Exception as exc:  # noqa: BLE001 - pyarrow's errors on a damaged footer are bad input
        raise InputError(f"cannot read data file {str(p)!r} as Parquet: {type(exc).__name__}: {exc}.") from None
    stored = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    return max(stored, meta.num_rows * meta.num_columns * 8), meta.num_rows, meta.num_columns


def _check_data_size(p: Path, suffix: str, max_mb: float) -> None:
    """Refuse a data file that would expand past ``max_mb`` before it is read: a CSV by its size, a Parquet file by
    its footer (a 1.3 MB file can declare 150 million rows of a run-length-encoded column)."""
    limit = max_mb * 2 ** 20
    if suffix == ".csv":
        size, what = p.stat().st_size, "is"
    else:
        size, rows, cols = _parquet_size(p)
        if size <= limit:
            return
        raise InputError(f"data file {str(p)!r} declares {rows:,} rows x {cols:,} columns (about "
                         f"{size / 2 ** 20:,.0f} MB in memory), over the {max_mb:,g} MB limit for data; if it is "
                         f"really that large, rerun with --max-data-mb {int(size / 2 ** 20) + 1} (API: max_mb=), or "
                         f"audit a sample of its rows.")
    if size > limit:
        raise InputError(f"data file {str(p)!r} {what} {size / 2 ** 20:,.0f} MB, over the {max_mb:,g} MB limit for data; "
                         f"if it is really that large, rerun with --max-data-mb {int(size / 2 ** 20) + 1} (API: max_mb=), "
                         f"or audit a sample of its rows.")


def parquet_parts(path) -> list[Path] | None:
    """The Parquet files of a data folder or glob pattern, in name order (None when ``path`` names neither).

    A folder holds the parts of one table (as Spark, Dask and pyarrow write them: hidden files and ``_SUCCESS``
    markers are skipped); every other file in it is refused, as is a folder or pattern that names no file."""
    text = str(path)
    p = Path(text)
    if p.is_dir():
        files, where = sorted(f for f in p.iterdir() if f.is_file() and not f.name.startswith((".", "_"))), "folder"
    elif any(ch in text for ch in "*?["):
        import glob

        files, where = sorted(Path(f) for f in glob.glob(text) if Path(f).is_file()), "pattern"
    else:
        return None
    if not files:
        raise InputError(f"data {where} {text!r} names no files; give a folder of .parquet files, a pattern like "
                         "'data/*.parquet', or one .csv or .parquet file.")
    other = [f for f in files if f.suffix.lower() not in (".parquet", ".pq")]
    if other:
        raise InputError(f"data {where} {text!r} holds {other[0].name!r}, which is not a .parquet file; a data folder "
                         "holds only the Parquet parts of one table.")
    return files


def _read_parts(files: list[Path], text: str, max_mb: float) -> pd.DataFrame:
    """One table from the Parquet parts, each footer checked and the sum of their sizes bounded before any is read,
    and every part's columns (names and types) those of the first."""
    import pyarrow.parquet as pq

    total = sum(_parquet_size(f)[0] for f in files)
    if total > max_mb * 2 ** 20:
        raise InputError(f"data {text!r} ({len(files)} Parquet files) declares about {total / 2 ** 20:,.0f} MB in "
                         f"memory, over the {max_mb:,g} MB limit for data; if it is really that large, rerun with "
                         f"--max-data-mb {int(total / 2 ** 20) + 1} (API: max_mb=), or audit a sample of its rows.")
    first = pq.read_schema(files[0])
    for f in files[1:]:
        schema = pq.read_schema(f)
        if not schema.equals(first, check_metadata=False):
            raise InputError(f"data {text!r}: part {f.name!r} has columns {schema.names} of other types or names than "
                             f"{files[0].name!r} ({first.names}); the parts of a data folder must be one table.")
    # part by part, each part's frame copied into numpy's memory so that its Arrow buffers are free for the next
    # part's: Arrow's allocator keeps what it frees for its own reuse, and reading the whole table through Arrow
    # kept about 2.7 times the data's size for the rest of the audit (measured at 2M rows: 330 MB for a 122 MB
    # frame; part by part, 215 MB)
    return _one_frame([pq.read_table(f).to_pandas().copy() for f in files])


def _one_frame(frames: list) -> pd.DataFrame:
    """The parts' frames as one, as Arrow reads the parts as one table: each categorical column on the union of
    the parts' levels in order of first appearance (as Arrow unifies the parts' dictionaries), so it stays
    categorical, and a fresh row index."""
    from pandas.api.types import union_categoricals

    for c in frames[0].columns:
        if isinstance(frames[0][c].dtype, pd.CategoricalDtype):
            levels = union_categoricals([fr[c] for fr in frames], ignore_order=True).categories
            for fr in frames:
                fr[c] = fr[c].cat.set_categories(levels, ordered=frames[0][c].cat.ordered)
    return pd.concat(frames, ignore_index=True)


def load_data(path, *, sep=None, na_values=None, decimal=None, max_mb: float = MAX_DATA_MB) -> pd.DataFrame:
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
    max_mb : float
        The largest table the file may expand to (:data:`MAX_DATA_MB`), checked before it is read.
    """
    parts = parquet_parts(path)
    if parts is not None:
        if sep is not None or na_values is not None or decimal is not None:
            raise InputError(f"--sep, --na-values and --decimal apply to CSV files; data {str(path)!r} is Parquet.")
        try:
            df = _read_parts(parts, str(path), max_mb)
        except InputError:
            raise
        except Exception as exc:  # noqa: BLE001 - pyarrow's errors on a damaged part are bad input
            raise InputError(f"cannot read data {str(path)!r}: {type(exc).__name__}: {exc}.") from None
        return _checked_table(df, Path(str(path)), ".parquet", {})
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
        _check_data_size(p, suffix, max_mb)
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
    return _checked_table(df, p, suffix, csv_options)


def _checked_table(df: pd.DataFrame, p: Path, suffix: str, csv_options: dict) -> pd.DataFrame:
    """The table read, refused when it has no rows, a column name twice, or (a CSV) one column of another
    separator's fields."""
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


#: Near-match suggestions compare names of at most this many characters, with at most this many candidates.
SUGGEST_MAX_CHARS = 100
SUGGEST_MAX_CHOICES = 2000


def did_you_mean(name: str, choices) -> str:
    """`` Did you mean 'x'?`` for a close match among ``choices``, else an empty string."""
    import difflib

    choices = [str(c) for c in choices]
    lower = {c.lower(): c for c in choices}
    if str(name).lower() in lower:
        return f" Did you mean {lower[str(name).lower()]!r}?"
    # difflib is quadratic in the names' lengths: only short names, and a bounded number, are compared
    if len(str(name)) > SUGGEST_MAX_CHARS:
        return ""
    choices = [c for c in choices if len(c) <= SUGGEST_MAX_CHARS][:SUGGEST_MAX_CHOICES]
    close = difflib.get_close_matches(str(name), choices, n=1, cutoff=0.6)
    return f" Did you mean {close[0]!r}?" if close else ""


def list_columns(columns, limit: int = 12) -> str:
    """The first ``limit`` column names, each cut to 60 characters (a message stays one readable line)."""
    cols = [repr(str(c) if len(str(c)) <= 60 else str(c)[:57] + "...") for c in columns]
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

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

from pathlib import Path

import pandas as pd

__all__ = ["load_model", "load_data", "PICKLE_SUFFIXES"]

PICKLE_SUFFIXES = (".joblib", ".pkl", ".pickle")


def load_model(path, *, trust_model: bool = False):
    """Load a fitted model from ``path`` (see module docs for the formats)."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"model file {str(p)!r} does not exist.")
    suffix = p.suffix.lower()
    if suffix == ".skops":
        import skops.io as sio

        try:
            untrusted = sio.get_untrusted_types(file=p)
        except Exception as exc:
            raise ValueError(f"cannot read model file {str(p)!r} as skops: {type(exc).__name__}: {exc}.") from None
        if untrusted and not trust_model:
            raise ValueError(
                f"model file {str(p)!r} contains types skops does not trust: {', '.join(untrusted)}; "
                "check them, and if you trust the file rerun with --trust-model (API: trust_model=True)."
            )
        try:
            return sio.load(p, trusted=untrusted or None)
        except Exception as exc:
            raise ValueError(f"cannot load model file {str(p)!r}: {type(exc).__name__}: {exc}.") from None
    if suffix in PICKLE_SUFFIXES:
        if not trust_model:
            raise ValueError(
                f"model file {str(p)!r} is a pickle: loading it runs code from the file. Save the model with "
                "skops (.skops) for safe loading, or, if you trust the file, rerun with --trust-model "
                "(API: trust_model=True)."
            )
        import joblib

        try:
            return joblib.load(p)
        except Exception as exc:
            raise ValueError(f"cannot load model file {str(p)!r}: {type(exc).__name__}: {exc}.") from None
    raise ValueError(
        f"model file {str(p)!r} has an unknown format {suffix or '(no extension)'!r}; use .skops (safe) or "
        ".joblib/.pkl with --trust-model."
    )


def load_data(path) -> pd.DataFrame:
    """Read a CSV or Parquet file into a DataFrame, with errors that name the file."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"data file {str(p)!r} does not exist.")
    suffix = p.suffix.lower()
    try:
        if suffix == ".csv":
            df = pd.read_csv(p)
        elif suffix in (".parquet", ".pq"):
            df = pd.read_parquet(p)
        else:
            raise ValueError(f"data file {str(p)!r} has an unknown format {suffix!r}; use .csv or .parquet.")
    except ValueError:
        raise
    except Exception as exc:
        raise ValueError(f"cannot read data file {str(p)!r}: {type(exc).__name__}: {exc}.") from None
    if df.shape[0] == 0:
        raise ValueError(f"data file {str(p)!r} has no rows.")
    return df


def split_target(df: pd.DataFrame, target: str, source: str = "data"):
    """``(X, y)`` from a table and the name of its target column."""
    if target not in df.columns:
        shown = ", ".join(repr(c) for c in list(df.columns)[:12])
        raise ValueError(f"target column {target!r} is not in the {source} (columns: {shown}).")
    return df.drop(columns=[target]), df[target]

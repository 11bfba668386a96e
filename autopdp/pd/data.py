"""Input data handling: one validated view of ``X`` that the engine can augment.

The model is always called with the same container type the user passed:
a DataFrame keeps its column order and dtypes, a numpy array stays an array.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..errors import InputError, InputTypeError

__all__ = ["Frame", "as_frame", "is_categorical_dtype", "sample_rows", "probe_rows", "missing_values", "describe_missing",
           "check_unique_columns", "refuse_dask", "is_dask_collection"]


def is_categorical_dtype(dtype) -> bool:
    """True for dtypes that can only be treated as categorical (no numeric order)."""
    if isinstance(dtype, pd.CategoricalDtype):
        return True
    if pd.api.types.is_bool_dtype(dtype):
        return True
    if pd.api.types.is_numeric_dtype(dtype):
        return False
    # object, str, string and anything else non-numeric
    return True


@dataclass(frozen=True, eq=False)
class Frame:
    """A validated 2-D input.

    Attributes
    ----------
    data : pandas.DataFrame or numpy.ndarray
        The user's data, unchanged (a plain list is converted to an array).
    names : tuple of str
        Display name of every column (``x0, x1, ...`` for an array).
    keys : tuple
        The key that selects each column in ``data`` (column label or position).
    scheduler : str or distributed.Client, optional
        The Dask cluster whose workers run this frame's per-row passes (:func:`autopdp.pd.rows.map_rows`), each on
        a partition of its rows sent there once within :func:`autopdp.pd.distributed.resident_rows`; an audit on
        a cluster sets it.  None: here.  A frame made from it (:meth:`take_rows`, :meth:`select`) is here.
    """

    data: pd.DataFrame | np.ndarray
    names: tuple[str, ...]
    keys: tuple[Hashable, ...]
    scheduler: object = field(default=None, repr=False, compare=False)

    def __getstate__(self) -> dict:
        """A frame sent to a worker is its rows there: its ``scheduler`` (a client) stays here."""
        return {**self.__dict__, "scheduler": None}

    @property
    def is_frame(self) -> bool:
        return isinstance(self.data, pd.DataFrame)

    @property
    def n_rows(self) -> int:
        return int(self.data.shape[0])

    @property
    def n_features(self) -> int:
        return len(self.names)

    def column(self, position: int) -> np.ndarray:
        """Values of one column as a numpy array (object for non-numeric)."""
        if self.is_frame:
            col = self.data.iloc[:, position]
            if isinstance(col.dtype, pd.CategoricalDtype):
                return np.asarray(col.astype(object))
            if pd.api.types.is_numeric_dtype(col.dtype) and not pd.api.types.is_bool_dtype(col.dtype):
                return col.to_numpy(dtype=float, na_value=np.nan)
            return col.to_numpy(dtype=object)
        return np.asarray(self.data[:, position])

    def missing(self, position: int) -> np.ndarray:
        """Which rows miss a value in one column (read as the column is: a categorical one is not copied)."""
        if self.is_frame:
            return self.data.iloc[:, position].isna().to_numpy()
        return np.asarray(pd.isna(self.data[:, position]), dtype=bool)

    def dtype(self, position: int):
        if self.is_frame:
            return self.data.dtypes.iloc[position]
        return self.data.dtype

    def take_rows(self, rows: np.ndarray) -> "Frame":
        """A new frame with the given rows (used for row subsampling)."""
        if self.is_frame:
            data = self.data.iloc[rows].reset_index(drop=True)
        else:
            data = self.data[rows]
        return Frame(data=data, names=self.names, keys=self.keys)

    def select(self, keys) -> "Frame":
        """The frame with only these columns (DataFrame data), in this order: a subset of a
        validated frame needs no new checks."""
        keys = tuple(keys)
        return Frame(data=self.data[list(keys)], names=tuple(self.names[self.keys.index(k)] for k in keys), keys=keys)

    def position_of(self, feature) -> int:
        """Resolve a column name or integer index to a column position."""
        if isinstance(feature, (bool, np.bool_)):
            raise InputTypeError(
                f"Feature {feature!r} is a boolean; name a feature by its column name or integer position."
            )
        if isinstance(feature, Hashable) and feature in self.keys and self.is_frame:
            return self.keys.index(feature)
        if isinstance(feature, str) and feature in self.names:
            return self.names.index(feature)
        if isinstance(feature, (int, np.integer)):
            idx = int(feature)
            if -self.n_features <= idx < self.n_features:
                return idx % self.n_features
            raise InputError(
                f"Feature index {idx} is out of range: X has {self.n_features} columns "
                f"(valid positions 0 to {self.n_features - 1})."
            )
        shown = ", ".join(repr(n) for n in self.names[:12])
        more = f", ... ({self.n_features} in all)" if self.n_features > 12 else ""
        raise InputError(f"Unknown feature {feature!r}: it is not a column of X. Columns are: {shown}{more}.")


def as_frame(X, *, name: str = "X") -> Frame:
    """Validate ``X`` and wrap it in a :class:`Frame`; a :class:`Frame` is returned as it is.

    The public entry points (:func:`autopdp.audit`, :func:`autopdp.partial_dependence`,
    :func:`autopdp.ale`, :func:`autopdp.stratpd`) validate their ``X`` here once; the stages
    below them are handed that frame and do not check the data again.

    Raises
    ------
    TypeError
        If ``X`` is not a DataFrame, array or array-like.
    ValueError
        If ``X`` is empty, not 2-D, or has duplicate column names.
    """
    if isinstance(X, Frame):
        return X
    return _validated(X, name)


def check_unique_columns(X: pd.DataFrame, name: str = "X") -> None:
    """Duplicate column names are an error naming them."""
    dup = X.columns[X.columns.duplicated()].unique().tolist()
    if dup:
        raise InputError(
            f"{name} has duplicate column names {dup}: rename them so that every feature has a unique name."
        )


def is_dask_collection(value) -> bool:
    """Whether ``value`` is a Dask collection (a dask DataFrame, Series or array)."""
    return callable(getattr(value, "__dask_graph__", None))


def refuse_dask(value, name: str) -> None:
    """A Dask collection (a dask DataFrame, Series or array) where autopdp reads the values into this process is
    refused in one line: numpy would collect it whole, silently, losing its column names and types.  A dask
    DataFrame is taken as ``autopdp.audit``'s ``X`` (:mod:`autopdp.pd.daskframe`), its target and weights then
    columns of it or dask Series beside it."""
    if is_dask_collection(value):
        where = ("the refits fit the learner on the training data in this process" if name.endswith("_train") else
                 "autopdp.audit takes a dask DataFrame as X, whose rows stay on the cluster's workers, with y and "
                 "sample_weight the names of its columns or dask Series of the same partitions")
        raise InputTypeError(
            f"{name} is a Dask collection ({type(value).__name__}) where autopdp reads the values into this process: "
            f"{where}. Pass a pandas object ({name}.compute()) when it fits in memory.")


def _validated(X, name: str) -> Frame:
    """:func:`as_frame`'s checks of raw data (a separate function so tests can count them)."""
    refuse_dask(X, name)
    if isinstance(X, pd.Series):
        raise InputTypeError(f"{name} is a pandas Series; pass a DataFrame with one column per feature (e.g. series.to_frame()).")
    if isinstance(X, pd.DataFrame):
        if X.shape[0] == 0:
            raise InputError(f"{name} is empty (0 rows): partial dependence needs at least one row of data.")
        if X.shape[1] == 0:
            raise InputError(f"{name} has no columns: pass the feature columns the model was trained on.")
        check_unique_columns(X, name)
        keys = tuple(X.columns)
        names = tuple(str(c) for c in X.columns)
        if len(set(names)) != len(names):
            raise InputError(f"{name} has column labels that print the same ({names}); rename them to unique strings.")
        return Frame(data=X, names=names, keys=keys)
    if isinstance(X, (str, bytes)) or not isinstance(X, (np.ndarray, Sequence)) and not hasattr(X, "__array__"):
        raise InputTypeError(
            f"{name} must be a pandas DataFrame or a 2-D numpy array, got {type(X).__name__}."
        )
    arr = np.asarray(X)
    if arr.ndim != 2:
        raise InputError(f"{name} must be 2-D (rows x features), got an array with {arr.ndim} dimension(s).")
    if arr.shape[0] == 0:
        raise InputError(f"{name} is empty (0 rows): partial dependence needs at least one row of data.")
    if arr.shape[1] == 0:
        raise InputError(f"{name} has no columns: pass the feature columns the model was trained on.")
    names = tuple(f"x{i}" for i in range(arr.shape[1]))
    return Frame(data=arr, names=names, keys=tuple(range(arr.shape[1])))


def sample_rows(n: int, k: int | None, rng) -> np.ndarray | None:
    """``k`` of ``n`` row positions drawn by ``rng``, sorted; None when every row is kept."""
    if k is None or k >= n:
        return None
    return np.sort(rng.choice(n, size=k, replace=False))


def missing_values(frame: Frame, columns=None) -> dict[str, int]:
    """``{column name: rows with a missing value}`` for every column that has any, in column order; ``columns``:
    the columns' profiles (:func:`autopdp.pd.profiles.frame_profiles`; made here when not given)."""
    columns = _profiled(frame, columns)
    return {name: int(c.n_missing) for name, c in zip(frame.names, columns) if c.n_missing}


def probe_rows(frame: Frame, k: int = 5, columns=None) -> np.ndarray:
    """The rows a model is first tried on: the first ``k``, and the first row with a missing value in
    each column that has any, so a model that cannot take missing values fails on the probe (where
    the error can name the columns) rather than deep inside a stage.  ``columns``: the columns' profiles
    (:func:`autopdp.pd.profiles.frame_profiles`; made here when not given), which know each column's first
    missing value."""
    rows = list(range(min(k, frame.n_rows))) + [c.first_missing for c in _profiled(frame, columns)
                                                 if c.first_missing >= 0]
    return np.asarray(sorted(set(rows)), dtype=np.intp)


def _profiled(frame: Frame, columns):
    """The columns' profiles given, else made here (one pass over the frame)."""
    if columns is not None:
        return columns
    from .profiles import frame_profiles

    return frame_profiles(frame)


def describe_missing(frame: Frame, columns=None) -> dict[str, str]:
    """``{column name: "all values missing" or "k of n rows"}`` for every column with missing values."""
    n = frame.n_rows
    return {name: "all values missing" if k == n else f"{k:,} of {n:,} rows"
            for name, k in missing_values(frame, columns).items()}

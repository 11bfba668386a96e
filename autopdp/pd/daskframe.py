"""A ``dask.dataframe.DataFrame`` as a :class:`~autopdp.pd.partframe.PartFrame` (issue 54): its rows stay on the
cluster's workers, partition by partition, as a Parquet folder's do.

:func:`dask_frame` reads here only what describes the collection: its columns and types (the collection's own
metadata), and, from one pass of small tasks over its partitions, each partition's row count and each categorical
column's levels.  Each partition is one part, a :class:`DaskPart`: when the audit first needs its rows, the worker
computes the partition from the collection's own graph (as ``ddf.partitions[i]`` would) and keeps its feature
columns and weights beside it, as it keeps a Parquet part it read (:func:`autopdp.pd.distributed.resident_rows`);
a lost worker's partition is computed again from that graph.  The partition itself is not kept: a collection that
is costly to compute should be persisted first (``client.persist(ddf)``), else it is computed once for its row
counts and levels and once when its rows are kept.

The target (a column of the collection, or a dask Series of the same partitions) and the weights (a column, or a
dask Series) are matched to the rows partition by partition, by position: the collection's own order, as
``ddf.partitions[i]`` gives it.  A partition of another length is refused in one line.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ..errors import InputError, InputTypeError
from .data import Frame, is_dask_collection
from .partframe import target_block

__all__ = ["DaskPart", "dask_frame", "dask_frame_and_target", "is_dask_frame", "is_dask_collection",
           "takes_dask_frames"]


def is_dask_frame(value) -> bool:
    """Whether ``value`` is a ``dask.dataframe.DataFrame``."""
    return is_dask_collection(value) and hasattr(value, "columns") and hasattr(value, "npartitions") \
        and not hasattr(value, "name")


@dataclass(frozen=True)
class DaskPart:
    """How a worker makes one partition's rows: the feature columns, the categorical columns' levels over every
    partition, the weights (a column's name, or with ``weight_series`` a dask Series beside the rows; None:
    unweighted) and every column of the collection.  ``path`` names the partition (the collection's name and its number): what
    identifies its weights (:attr:`autopdp.pd.partframe.PartFrame.weight_source`)."""

    path: str
    names: tuple
    levels: tuple  # ((column, levels, ordered), ...)
    weight: str | None = None
    columns: tuple = ()
    weight_series: bool = False
    target: str | None = None  # the target column kept beside the rows (``block["target"]``), or None
    target_series: bool = False  # the target is a dask Series beside the rows (its partition in the source)

    def selected(self, names: tuple) -> "DaskPart":
        """This part's recipe for the feature columns ``names`` only."""
        return replace(self, names=tuple(names), levels=tuple(lv for lv in self.levels if lv[0] in names))

    def file_columns(self) -> list:
        """Every column of the collection (the features, the target, the weights and any other)."""
        return list(self.columns)

    def make(self, client, source):
        """The rows' block of this partition, computed on the cluster from the collection's graph: a future."""
        import dask

        rows, weights, target = source
        return client.compute(dask.delayed(_block, pure=False)(self, rows, weights, target))

    def column_parts(self, client, sources, name) -> list:
        """Column ``name`` of the collection, each partition's values (``sources``: the parts' Delayed objects)
        computed on the cluster and brought here, in part order (as pandas Series)."""
        import dask

        from .distributed import gathered

        return gathered(client, client.compute([dask.delayed(_values, pure=False)(rows, name)
                                                for rows, *_ in sources]))

    def read_block(self, df: pd.DataFrame, weights=None, target=None) -> dict:
        """The partition's rows as a row partition holds them (:func:`autopdp.pd.rows.rows_block`)."""
        out = df[list(self.names)].reset_index(drop=True).copy()
        for column, levels, ordered in self.levels:
            out[column] = out[column].cat.set_categories(list(levels), ordered=ordered)
        if self.weight_series:
            w = np.asarray(weights, dtype=float)
        else:
            w = None if self.weight is None else df[self.weight].to_numpy(dtype=float)
        block = {"frame": Frame(data=out, names=self.names, keys=self.names), "Z": None, "own": None,
                 "sample_weight": w}
        if self.target_series:
            block["target"] = target_block(target)
        elif self.target is not None:
            block["target"] = target_block(df[self.target])
        return block


def _block(part: DaskPart, df, weights, target=None) -> dict:
    return part.read_block(df, weights, target)


def _facts(df, cats: list, weights, target) -> tuple:
    """One partition's row count, its categorical columns' levels, its columns' types, its weights' length and its
    target's values (``target`` a column's name or the partition of a dask Series; None: no target)."""
    levels = [list(df[c].cat.categories) for c in cats]
    y = df[target] if isinstance(target, str) else target
    return len(df), levels, dict(zip(map(str, df.columns), map(str, df.dtypes))), \
        None if weights is None else len(weights), None if y is None else len(y)


def _values(df, name):
    return df[name]


def _client_of(scheduler):
    """The ``distributed.Client`` a dask DataFrame is audited on: the one given, one made for an address, or the
    current default client; ``(client, own)``."""
    from .distributed import _client

    if scheduler is not None:
        return _client(scheduler)
    try:
        from distributed import default_client
    except ImportError:
        raise InputError("X is a dask DataFrame but dask.distributed is not installed: pip install "
                         "'autopdp[dask]'.") from None
    try:
        return default_client(), False
    except ValueError:
        raise InputError("X is a dask DataFrame but no Dask cluster was named: pass scheduler= (its scheduler's "
                         "address or a distributed.Client), or create a distributed.Client first.") from None


def _check_weights(ddf, sample_weight):
    """``(name, series)``: the weights as a column of ``ddf`` (its name), or a dask Series beside it."""
    if sample_weight is None:
        return None, None
    if isinstance(sample_weight, str):
        if sample_weight not in ddf.columns:
            raise InputError(f"sample_weight {sample_weight!r} is not a column of X; its columns are "
                             f"{list(ddf.columns)}.")
        return sample_weight, None
    if is_dask_collection(sample_weight) and getattr(sample_weight, "ndim", None) == 1:
        if sample_weight.npartitions != ddf.npartitions:
            raise InputError(f"sample_weight is a dask Series of {sample_weight.npartitions} partitions but X has "
                             f"{ddf.npartitions}; the weights are matched to the rows partition by partition.")
        return str(getattr(sample_weight, "name", None) or "sample_weight"), sample_weight
    raise InputTypeError("X is a dask DataFrame: give its sample weights as the name of one of its columns or as a "
                         f"dask Series of the same partitions, not a {type(sample_weight).__name__}.")


def _levels(per_part: list, cats: list, dtypes) -> list:
    from pandas.api.types import union_categoricals

    levels = []
    for k, c in enumerate(cats):
        union = union_categoricals([pd.Categorical([], categories=part[1][k]) for part in per_part],
                                   ignore_order=True)
        levels.append((c, tuple(union.categories), bool(dtypes[c].ordered)))
    return levels


def _check_facts(facts: list, dtypes, has_weights: bool, has_target: bool) -> None:
    """Each partition's columns of the collection's own types (a categorical's levels may differ), and its weights'
    and target's lengths its rows'."""
    expected = {str(c): str(t) for c, t in dtypes.items()}
    for i, (n, _, types, w_len, y_len) in enumerate(facts):
        off = [c for c, t in expected.items() if types.get(c) != t and not (t == "category" == types.get(c))]
        if off or len(types) != len(expected):
            c = (off or sorted(set(types) ^ set(expected)) or ["?"])[0]
            raise InputError(f"partition {i} of X has column {c!r} of type {types.get(c)} where the collection says "
                             f"{expected.get(c)}; make its partitions one table (ddf.astype(...)) first.")
        if has_weights and w_len != n:
            raise InputError(f"partition {i} of sample_weight has {w_len} values but X's has {n} rows; the weights "
                             "are matched to the rows partition by partition.")
        if has_target and y_len != n:
            raise InputError(f"partition {i} of y has {y_len} values but X's has {n} rows; the target is matched "
                             "to the rows partition by partition.")


def dask_frame(client, ddf, *, columns=None, weight=None):
    """A :class:`~autopdp.pd.partframe.PartFrame` of the dask DataFrame ``ddf`` on ``client``'s cluster (see the
    module docs): ``columns`` the features (every column but the weight column when None), ``weight`` the
    weights (a column's name or a dask Series of the same partitions; None: unweighted)."""
    return dask_frame_and_target(client, ddf, columns=columns, weight=weight)[0]


def dask_frame_and_target(client, ddf, *, columns=None, weight=None, target=None) -> tuple:
    """``(frame, y)``: :func:`dask_frame`, and the target (None without one) from ``target``, a column's name or a
    dask Series of the same partitions: kept beside each partition's rows on its worker (``y`` its
    :class:`~autopdp.pd.kept.KeptValues`, :meth:`~autopdp.pd.partframe.PartFrame.target_values`); the partitions'
    lengths checked in the pass that counts their rows."""
    import dask

    from .distributed import gathered
    from .partframe import PartFrame, _NoRows

    if not is_dask_frame(ddf):
        raise InputTypeError(f"dask_frame takes a dask.dataframe.DataFrame, got {type(ddf).__name__}.")
    all_columns = [str(c) for c in ddf.columns]
    if len(set(all_columns)) != len(all_columns):
        raise InputError(f"X has duplicate column names {sorted({c for c in all_columns if all_columns.count(c) > 1})}:"
                         " rename them so that every feature has a unique name.")
    weight_name, series = _check_weights(ddf, weight)
    target_name, targets = _check_target(ddf, target)
    names = tuple(str(c) for c in (columns if columns is not None else
                                   [c for c in ddf.columns if c not in (weight_name, target_name)]))
    unknown = [c for c in names if c not in all_columns]
    if unknown:
        raise InputError(f"X has no column {unknown[0]!r}; its columns are {all_columns}.")
    dtypes = ddf.dtypes
    cats = [c for c in names if isinstance(dtypes[c], pd.CategoricalDtype)]
    rows = ddf.to_delayed()
    weights = series.to_delayed() if series is not None else [None] * len(rows)
    facts = gathered(client, client.compute([dask.delayed(_facts, pure=False)(r, cats, w, t)
                                             for r, w, t in zip(rows, weights, targets)]))
    _check_facts(facts, dtypes, series is not None, target is not None)
    kept = [i for i, f in enumerate(facts) if f[0] > 0]
    if not kept:
        raise InputError("X is empty (0 rows): partial dependence needs at least one row of data.")
    levels = _levels([facts[i] for i in kept], cats, dtypes)
    types = dict(dtypes[list(names)].items())
    for c, lv, ordered in levels:
        types[c] = pd.CategoricalDtype(list(lv), ordered=ordered)
    edges = np.concatenate([[0], np.cumsum([facts[i][0] for i in kept])]).astype(int)
    recipe = dict(names=names, levels=tuple(levels), weight=weight_name, columns=tuple(all_columns),
                  weight_series=series is not None,
                  target=target_name if target_name is not None or target is None else _series_name(target),
                  target_series=target is not None and target_name is None)
    label = getattr(ddf, "_name", None) or dask.base.tokenize(ddf)
    frame = PartFrame(data=_NoRows(), names=names, keys=names, dtypes=tuple(types[c] for c in names),
                      bounds=tuple((int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])),
                      parts=tuple(DaskPart(f"dask:{label}:{i}", **recipe) for i in kept), scheduler=client,
                      sources=tuple((rows[i], weights[i], targets[i] if target_name is None else None)
                                    for i in kept))
    return frame, None if target is None else frame.target_values()


def _series_name(series) -> str | None:
    """A dask Series target's name, as the audit names the target (None: unnamed)."""
    name = getattr(series, "name", None)
    return None if name is None else str(name)


def _check_target(ddf, target) -> tuple:
    """``(name, per partition)``: the target as a column of ``ddf`` (its name) or a dask Series beside it."""
    if target is None:
        return None, [None] * ddf.npartitions
    if isinstance(target, str):
        if target not in ddf.columns:
            raise InputError(f"the data has no column {target!r} for the target; its columns are "
                             f"{list(ddf.columns)}.")
        return target, [target] * ddf.npartitions
    if is_dask_collection(target) and getattr(target, "ndim", None) == 1:
        if target.npartitions != ddf.npartitions:
            raise InputError(f"y is a dask Series of {target.npartitions} partitions but X has {ddf.npartitions}; "
                             "the target is matched to the rows partition by partition.")
        return None, target.to_delayed()
    raise InputTypeError(f"y for a dask DataFrame X is a column's name or a dask Series, got {type(target).__name__}.")


def takes_dask_frames(function):
    """Let a PD function of ``(estimator, X, ...)`` with ``sample_weight`` and ``options`` keywords take a dask
    DataFrame ``X``: it becomes a :func:`dask_frame` on ``options.scheduler``'s cluster (or the default client's),
    its weights a column's name or a dask Series of its partitions, and the call runs on that client."""
    @functools.wraps(function)
    def call(estimator, X, *args, **kwargs):
        if not is_dask_frame(X):
            return function(estimator, X, *args, **kwargs)
        import dataclasses

        options = kwargs.get("options")
        client, own = _client_of(getattr(options, "scheduler", None))
        try:
            frame = dask_frame(client, X, weight=kwargs.pop("sample_weight", None))
            if options is not None and options.scheduler is not None:
                kwargs["options"] = dataclasses.replace(options, scheduler=client)  # one client: the parts' own
            return function(estimator, frame, *args, **kwargs)
        finally:
            if own:
                client.close()
    return call

"""A frame whose rows stay on a Dask cluster's workers (issue 54): the calling process holds only what describes it.

:class:`PartFrame` is a :class:`~autopdp.pd.data.Frame` of a Parquet table's parts: its column names and types, its
row count and where each part's rows begin, and for each part a recipe (:class:`ParquetPart`) that a worker
follows to read that part's rows itself.  The rows never pass through this process or the scheduler: per-row work
on it runs through :func:`autopdp.pd.rows.map_rows`, one task per part, each on the worker that read it (kept there
within :func:`autopdp.pd.distributed.resident_rows`), and returns a summary.  A step that reads rows here instead
(``frame.column``, ``frame.data``, ``frame.take_rows``) fails at once with :class:`RowsElsewhere`, never by
collecting the rows.

What is read here: each part's Parquet footer (its row count and column types) and, from the workers, each
categorical column's levels per part, whose union (in order of first appearance, as Arrow unifies the parts'
dictionaries when it reads them as one table) every part's column is set to.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from ..errors import InputError
from .data import Frame

__all__ = ["PartFrame", "ParquetPart", "PartWeights", "RowsElsewhere", "parquet_frame", "MAX_GATHER_ROWS"]

#: Most rows :meth:`PartFrame.take_rows` brings to the calling process (probes, the first rows a tree plan checks,
#: seeded samples): a step that needs more must run on the parts.
MAX_GATHER_ROWS = 200_000


class PartWeights(np.ndarray):
    """A :class:`PartFrame`'s weight column brought here (:meth:`PartFrame.weights`), marked as that frame's own:
    a PD of the frame given them as ``sample_weight`` reads the same weights on its parts instead."""

    def __new__(cls, values, source: tuple):
        obj = np.asarray(values, dtype=float).view(cls)
        obj.source = source
        return obj

    def __array_finalize__(self, obj):
        self.source = getattr(obj, "source", None)


class RowsElsewhere(RuntimeError):
    """A step read the rows of a frame whose rows are on the cluster's workers."""


class _NoRows:
    """A :class:`PartFrame`'s ``data``: any use of it says where the rows are instead of collecting them."""

    def _refuse(self, *_, **__):
        raise RowsElsewhere("this frame's rows are on the Dask cluster's workers (a Parquet folder they read); a "
                            "step read them in the calling process, where they are not: it must run on the row "
                            "partitions (autopdp.pd.rows.map_rows).")

    __getattr__ = __getitem__ = __len__ = __array__ = _refuse


@dataclass(frozen=True)
class ParquetPart:
    """How a worker reads one part's rows: the file, its feature columns (names and keys), the categorical
    columns' levels over every part, the sample-weight column (None: unweighted) and the target column (None:
    none; else kept beside the rows, ``block["target"]``, for :meth:`PartFrame.target_values`)."""

    path: str
    names: tuple
    levels: tuple  # ((column, levels, ordered), ...)
    weight: str | None = None
    target: str | None = None

    def selected(self, names: tuple) -> "ParquetPart":
        """This part's recipe for the feature columns ``names`` only."""
        return replace(self, names=tuple(names), levels=tuple(lv for lv in self.levels if lv[0] in names))

    def read_block(self) -> dict:
        """The part's rows as a row partition holds them (:func:`autopdp.pd.rows.rows_block`)."""
        import pyarrow.parquet as pq

        extra = [c for c in (self.weight, self.target) if c is not None]
        df = pq.read_table(self.path, columns=list(self.names) + extra).to_pandas().copy()  # out of Arrow's memory
        for column, levels, ordered in self.levels:
            df[column] = df[column].cat.set_categories(list(levels), ordered=ordered)
        weights = None if self.weight is None else df.pop(self.weight).to_numpy(dtype=float)
        block = {"sample_weight": weights}
        if self.target is not None:
            block["target"] = target_block(df.pop(self.target))
        return {"frame": Frame(data=df.reset_index(drop=True), names=self.names, keys=self.names), "Z": None,
                "own": None, **block}

    def file_columns(self) -> list:
        """Every column of the part's file (the features, the target, the weights and any other)."""
        return pq_columns(self.path)


def target_block(values) -> np.ndarray:
    """A part's target as its block keeps it: ``(rows, 1)``, the values' own type (labels of a categorical)."""
    return np.asarray(values).reshape(-1, 1)


@dataclass(frozen=True, eq=False)
class PartFrame(Frame):
    """A :class:`~autopdp.pd.data.Frame` whose rows are on the cluster (see the module docs); its ``scheduler``
    is the client of the cluster whose workers read the parts."""

    dtypes: tuple = ()
    bounds: tuple = ()  # ((start, stop), ...): each part's rows
    parts: tuple = ()  # one ParquetPart (or DaskPart, autopdp.pd.daskframe) per bound
    #: a dask DataFrame's partitions (autopdp.pd.daskframe): per part, the dask Delayed objects its recipe reads
    sources: tuple = field(default=(), repr=False, compare=False)

    @property
    def is_frame(self) -> bool:
        return True

    @property
    def n_rows(self) -> int:
        return int(self.bounds[-1][1])

    @property
    def columns(self) -> pd.Index:
        """The feature columns' names (as a DataFrame's ``columns``)."""
        return pd.Index(self.names)

    def make_part(self, i: int):
        """What a worker makes part ``i``'s rows from (:func:`autopdp.pd.distributed.run_partitions_on_dask`): a
        Parquet part's recipe, which the worker follows; a dask partition's rows, computed on the cluster from
        the collection's own graph (a future)."""
        if not self.sources:
            return self.parts[i]
        return self.parts[i].make(self.scheduler, self.sources[i])

    def dtype(self, position: int):
        return self.dtypes[position]

    @property
    def target_name(self) -> str | None:
        """The target column each part's rows keep beside them (:meth:`with_target`), or None."""
        return getattr(self.parts[0], "target", None) or None

    def with_target(self, name: str) -> "PartFrame":
        """This frame with column ``name`` of its parts kept beside their rows as the target (read by the workers,
        never brought here: :meth:`target_values`)."""
        known = list(self.parts[0].file_columns())
        if name not in known:
            raise InputError(f"the data has no column {name!r} for the target; its columns are {known}.")
        return replace(self, parts=tuple(replace(p, target=name) for p in self.parts))

    def target_values(self):
        """Every row's target as :class:`~autopdp.pd.kept.KeptValues` ``(n_rows, 1)``, kept in each part's block
        on the worker that holds its rows (whatever the tree plan those rows serve)."""
        from .kept import KeptValues

        if self.target_name is None and not getattr(self.parts[0], "target_series", False):
            raise ValueError("this PartFrame keeps no target (with_target)")
        return KeptValues(n_rows=self.n_rows, width=1, name="target", where=(self, None, None, self.scheduler, 0))

    def column(self, position: int) -> np.ndarray:
        """One column's values over every row, brought here from the parts (as :meth:`Frame.column` gives them): a
        step that keeps a small per-row summary of one column at a time (each row's nearest grid value) reads it
        so; the rows' other columns stay on the workers."""
        from .rows import map_rows

        return np.concatenate(map_rows(_column_of, position, self))

    def missing(self, position: int) -> np.ndarray:
        """Which rows miss a value in one column (see :meth:`column`)."""
        from .rows import map_rows

        return np.concatenate(map_rows(_missing_of, position, self))

    def take_rows(self, rows) -> Frame:
        """The rows ``rows`` (positions in the whole table, in this order) brought here as a :class:`Frame`: each
        part's worker returns those it holds.  At most :data:`MAX_GATHER_ROWS`: more is the data itself, which
        stays on the workers (:class:`RowsElsewhere`)."""
        rows = np.asarray(rows, dtype=np.int64).ravel()
        if rows.size > MAX_GATHER_ROWS:
            raise RowsElsewhere(f"a step asked for {rows.size:,} of this frame's rows in the calling process (at most "
                                f"{MAX_GATHER_ROWS:,} are brought here); it must run on the row partitions.")
        if rows.size and (rows.min() < 0 or rows.max() >= self.n_rows):
            raise IndexError(f"row positions must be in 0..{self.n_rows - 1}")
        from .rows import part_rows

        starts = np.array([a for a, _ in self.bounds], dtype=np.int64)
        part = np.searchsorted(starts, rows, side="right") - 1
        wanted = [(rows[part == i] - starts[i]) for i in range(len(self.bounds))]
        pieces = part_rows(self, wanted)
        order = np.argsort(np.argsort(part, kind="stable"), kind="stable")  # back from part order to ``rows`` order
        data = pd.concat(pieces, ignore_index=True) if pieces else self.empty()
        return Frame(data=data.iloc[order].reset_index(drop=True), names=self.names, keys=self.keys)

    @property
    def weight_source(self) -> tuple | None:
        """What identifies this frame's weights: its parts' files and rows and the weight column (None: unweighted)."""
        if self.parts[0].weight is None:
            return None
        return tuple(p.path for p in self.parts), self.bounds, self.parts[0].weight

    def weights(self) -> PartWeights | None:
        """Every row's weight (the weight column), brought here from the parts; None when unweighted."""
        from .rows import map_blocks

        if self.weight_source is None:
            return None
        return PartWeights(np.concatenate(map_blocks(_weights_column, None, self)), self.weight_source)

    def read_column(self, name: str) -> pd.Series:
        """Another column of the parts' files, every row, read by the workers and brought here (a target whose
        labels are mapped here, ``--target-map``; the audit keeps the target on the parts: :meth:`with_target`)."""
        from .rows import on_parts

        known = list(self.parts[0].file_columns())
        if name not in known:
            raise InputError(f"the data has no column {name!r} for the target; its columns are {known}.")
        if self.sources:  # a dask DataFrame's column, computed partition by partition on the cluster
            got = self.parts[0].column_parts(self.scheduler, self.sources, name)
        else:
            got = on_parts(self, _file_column, {i: (part.path, name) for i, part in enumerate(self.parts)})
        if got and isinstance(got[0].dtype, pd.CategoricalDtype):
            from pandas.api.types import union_categoricals

            return pd.Series(union_categoricals(got, ignore_order=True), name=name)
        return pd.Series(np.concatenate([g.to_numpy() for g in got]) if got else [], name=name)

    def hash_chunks(self):
        """Each part's pandas row hashes of its features (8 bytes a row, :func:`pandas.util.hash_pandas_object`),
        made on its worker, one part at a time (:func:`autopdp.io.provenance.content_sha256`)."""
        from .rows import on_parts

        for i in range(len(self.parts)):
            (chunk,) = on_parts(self, _row_hashes, {i: None})
            yield chunk

    def empty(self) -> pd.DataFrame:
        """No rows, this frame's columns and types."""
        return pd.DataFrame({n: pd.Series([], dtype=t) for n, t in zip(self.names, self.dtypes)})

    def select(self, keys) -> "PartFrame":
        """The frame with only these columns, in this order (each part's recipe reads only them)."""
        keys = tuple(keys)
        names = tuple(self.names[self.keys.index(k)] for k in keys)
        return replace(self, names=names, keys=keys, dtypes=tuple(self.dtypes[self.keys.index(k)] for k in keys),
                       parts=tuple(part.selected(names) for part in self.parts))


def _row_hashes(block: dict, _) -> bytes:
    """A part's row hashes of its features (:meth:`PartFrame.hash_chunks`)."""
    return pd.util.hash_pandas_object(block["frame"].data, index=False).to_numpy().tobytes()


def pq_columns(path: str) -> list:
    import pyarrow.parquet as pq

    return list(pq.read_schema(path).names)


def _file_column(_block: dict, payload) -> pd.Series:
    """One column of a part's file, read on the worker (not a feature: not among the part's rows)."""
    import pyarrow.parquet as pq

    path, name = payload
    return pq.read_table(path, columns=[name]).to_pandas()[name]


def _weights_column(block: dict, _) -> np.ndarray:
    return np.asarray(block["sample_weight"], dtype=float)


def _column_of(rows: Frame, position: int) -> np.ndarray:
    return rows.column(position)


def _missing_of(rows: Frame, position: int) -> np.ndarray:
    return rows.missing(position)


def _part_levels(path: str, columns: list) -> list:
    """One part's levels of each categorical column (read on a worker)."""
    import pyarrow.parquet as pq

    df = pq.read_table(path, columns=columns).to_pandas()
    return [list(df[c].cat.categories) for c in columns]


def _footers(files) -> tuple:
    """``(rows per part, pandas dtypes)`` from the parts' footers, every part's columns those of the first."""
    import pyarrow.parquet as pq

    first = pq.read_schema(files[0])
    rows = []
    for f in files:
        try:
            meta = pq.ParquetFile(f).metadata
        except Exception as exc:  # noqa: BLE001 - pyarrow's errors on a damaged footer are bad input
            raise InputError(f"cannot read data file {str(f)!r} as Parquet: {type(exc).__name__}: {exc}.") from None
        if not meta.schema.to_arrow_schema().equals(first, check_metadata=False):
            raise InputError(f"data part {str(f)!r} has other columns or types than {str(files[0])!r}; the parts "
                             "of a data folder must be one table.")
        rows.append(int(meta.num_rows))
    return rows, first.empty_table().to_pandas().dtypes


def parquet_frame(client, files, *, columns=None, weight: str | None = None) -> PartFrame:
    """A :class:`PartFrame` of the Parquet ``files`` (the parts of one table, in order) on ``client``'s cluster:
    ``columns`` the features (every column but ``weight`` when None)."""
    from pandas.api.types import union_categoricals

    from .distributed import gathered

    files = [str(f) for f in files]
    rows, dtypes = _footers(files)
    names = tuple(str(c) for c in (columns if columns is not None else [c for c in dtypes.index if c != weight]))
    unknown = [c for c in names + ((weight,) if weight else ()) if c not in dtypes.index]
    if unknown:
        raise InputError(f"data has no column {unknown[0]!r}; its columns are {list(dtypes.index)}.")
    cats = [c for c in names if isinstance(dtypes[c], pd.CategoricalDtype)]
    kept = [(f, n) for f, n in zip(files, rows) if n > 0]
    if not kept:
        raise InputError("data is empty (0 rows): partial dependence needs at least one row of data.")
    per_part = gathered(client, [client.submit(_part_levels, f, cats, pure=False) for f, _ in kept]) if cats else []
    levels = []
    for k, c in enumerate(cats):
        union = union_categoricals([pd.Categorical([], categories=part[k]) for part in per_part], ignore_order=True)
        levels.append((c, tuple(union.categories), bool(dtypes[c].ordered)))
    types = dict(dtypes[list(names)].items())
    for c, lv, ordered in levels:
        types[c] = pd.CategoricalDtype(list(lv), ordered=ordered)
    edges = np.concatenate([[0], np.cumsum([n for _, n in kept])]).astype(int)
    return PartFrame(data=_NoRows(), names=names, keys=names, dtypes=tuple(types[c] for c in names),
                     bounds=tuple((int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])),
                     parts=tuple(ParquetPart(f, names, tuple(levels), weight) for f, _ in kept), scheduler=client)

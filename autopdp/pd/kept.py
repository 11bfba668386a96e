"""Per-row values kept where the rows are (issue 54): made on the row partitions, read there, never gathered.

A step that makes a value for every row (the model's margin on its link scale) and whose later readers need only
sums over the rows and the values of a few rows (the materiality threshold's spread: its sums, and its shares at
the ICE rows) keeps them with the rows: :func:`keep_values` runs a per-row function on every row partition and
leaves its ``(rows, k)`` values beside the partition's rows on its worker (within
:func:`autopdp.pd.distributed.resident_rows`, for the rest of the audit); :func:`map_kept` runs a summary function
on each partition's values, and :meth:`KeptValues.at` brings the values of the rows asked for.  Here (no cluster)
the same calls work on the one array, held in this process: one code path, the array a single partition.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import numpy as np

from .rows import _FrameShell, frame_partitions, map_rows, scheduler_of

__all__ = ["KeptValues", "keep_values", "map_kept", "derive_kept", "kept_here", "on_whole", "as_kept", "beside",
           "hash_kept"]


@dataclass(frozen=True, eq=False)
class KeptValues:
    """Every row's values ``(n_rows, k)``: ``here`` (this process's array) or kept on a cluster's row partitions
    under ``name`` (``where``: the frame, weights, tree plan, scheduler and partition count that find them)."""

    n_rows: int
    width: int
    here: np.ndarray | None = field(default=None, repr=False)
    name: str = ""
    where: tuple | None = field(default=None, repr=False)
    _last: list = field(default_factory=list, repr=False, compare=False)  # [(rows asked for last, their values)]
    #: summaries of these values already computed on the partitions (their readers' own keys): each is made once
    memo: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def shape(self) -> tuple:
        return (self.n_rows, self.width)

    def __len__(self) -> int:
        return self.n_rows

    def at(self, rows) -> np.ndarray:
        """The values ``(len(rows), k)`` of the rows at positions ``rows`` (brought from their partitions)."""
        rows = np.asarray(rows, dtype=np.intp).ravel()
        if self.here is not None:
            return self.here[rows]
        key = rows.tobytes()
        last = self._last[0] if self._last else None
        if last is None or last[0] != key:
            last = (key, _gather(self, rows))
            self._last[:] = [last]  # one item replaced: a reader on another thread sees the old pair or the new
        return last[1]

    def column(self, t: int) -> "KeptColumn":
        return KeptColumn(self, int(t))

    def hash_chunks(self):
        """Column 0's pandas row hashes (as objects), partition after partition: what
        :func:`autopdp.io.provenance.content_sha256` feeds its hash for an array here."""
        if self.here is not None:
            yield _row_hashes(self.here, None)
            return
        yield from hash_kept(self)

    def whole(self) -> np.ndarray:
        """Every row's values ``(n_rows, k)``: this process's array, or brought from a cluster's partitions (for
        the few readers that run here on every row: see :func:`on_whole` for those that need not)."""
        return self.here if self.here is not None else self.at(np.arange(self.n_rows))


@dataclass(frozen=True, eq=False)
class KeptColumn:
    """Column ``t`` of :class:`KeptValues`, indexed by row positions (``column[rows]``)."""

    kept: KeptValues
    t: int

    @property
    def shape(self) -> tuple:
        return (self.kept.n_rows,)

    def __getitem__(self, rows) -> np.ndarray:
        return self.kept.at(rows)[:, self.t]


def as_kept(values) -> KeptValues | None:
    """``values``: :class:`KeptValues` as they are, an array ``(n_rows,)`` or ``(n_rows, k)`` of this process as
    :func:`kept_here` (None stays None)."""
    return values if values is None or isinstance(values, KeptValues) else kept_here(values)


def kept_here(values) -> KeptValues:
    """``values`` (n_rows, k) of this process as :class:`KeptValues`."""
    values = np.asarray(values)
    values = values.reshape(-1, 1) if values.ndim == 1 else values
    return KeptValues(n_rows=values.shape[0], width=values.shape[1], here=values)


class _Keeping:
    """A per-row function whose values stay with the partition's rows under ``name`` (returns ``(kept, width)``)."""

    __name__ = "keep_values"

    def __init__(self, fn, name: str):
        self.fn, self.name = fn, name

    def __call__(self, frame, payload):
        values = np.asarray(self.fn(frame, payload))
        values = values.reshape(-1, 1) if values.ndim == 1 else values
        return {self.name: values}, values.shape[1]


class _KeptShell:
    """A task on a partition's kept values: ``with_rows`` hands the function the values, not the rows (a tuple of
    them for several names)."""

    def __init__(self, name):
        self.name = name

    def with_rows(self, block: dict):
        return tuple(block[n] for n in self.name) if isinstance(self.name, tuple) else block[self.name]


def keep_values(fn, payload, frame, *, sample_weight=None, plan=None, scheduler=None) -> KeptValues:
    """``fn(rows, payload)`` (a module-level function of a row partition's :class:`~autopdp.pd.data.Frame`
    returning its rows' values, ``(rows,)`` or ``(rows, k)``) on every row, kept where the rows are.

    On a Dask cluster within :func:`~autopdp.pd.distributed.resident_rows` each partition (keyed as the audit's,
    :func:`~autopdp.pd.rows.map_rows`) keeps its values beside its rows; nothing row-long comes here.  Here, or
    outside a resident block (where nothing could keep them), the values are one array of this process."""
    from .distributed import dask_workers, holds_rows, run_partitions_on_dask

    scheduler = scheduler_of(frame, scheduler)
    if scheduler is None or not holds_rows(scheduler):
        return kept_here(np.concatenate(map_rows(fn, payload, frame, sample_weight=sample_weight, plan=plan,
                                                 scheduler=scheduler)))
    name = f"kept-{uuid.uuid4().hex}"
    parts = dask_workers(scheduler)
    split = frame_partitions(frame, sample_weight, plan, parts)
    widths = run_partitions_on_dask(scheduler, _Keeping(fn, name), [(_FrameShell(), key, make) for key, make, _ in split],
                                    [payload] * len(split), refresh=True)
    return KeptValues(n_rows=frame.n_rows, width=int(widths[0]), name=name,
                      where=(frame, sample_weight, plan, scheduler, parts))


def _split(kept: KeptValues) -> list:
    frame, sample_weight, plan, _, parts = kept.where
    return frame_partitions(frame, sample_weight, plan, parts)


def map_kept(fn, payload, kept: KeptValues) -> list:
    """``[fn(values, payload), ...]`` over the row partitions' kept values, in row order (here: one call on every
    row's values).  ``fn`` is a module-level function returning a summary (sums, counts), never the rows."""
    if kept.here is not None:
        return [fn(kept.here, payload)]
    from .distributed import run_partitions_on_dask

    split = _split(kept)
    return run_partitions_on_dask(kept.where[3], fn, [(_KeptShell(kept.name), key, make) for key, make, _ in split],
                                  [payload] * len(split))


class _Whole:
    """``fn(payload, *wholes)`` on a worker: each argument the array sent with the task (``given[i]``), or, where
    that is None, every partition's kept values (tuples, one item per kept name, in order) stacked in row order."""

    def __init__(self, fn, payload, columns, given):
        self.fn, self.payload, self.columns, self.given = fn, payload, columns, given
        self.__name__ = getattr(fn, "__name__", "on_whole")

    def __call__(self, *parts):
        wholes, k = [], 0
        for c, g in zip(self.columns, self.given):
            if g is None:
                wholes.append(_stacked([p[k] for p in parts], c))
                k += 1
            else:
                wholes.append(g)
        del parts
        return self.fn(self.payload, *wholes)


def _stacked(blocks: list, column) -> np.ndarray:
    """The partitions' values ``blocks`` stacked in row order (column ``column`` only, when not None), each
    partition's dropped once copied."""
    first = blocks[0] if column is None else blocks[0][:, column]
    out = np.empty((sum(b.shape[0] for b in blocks),) + first.shape[1:], dtype=first.dtype)
    start = 0
    for i, b in enumerate(blocks):
        part = b if column is None else b[:, column]
        out[start:start + part.shape[0]] = part
        start += part.shape[0]
        blocks[i] = None
    return out


def _parts_of(values, _payload):
    return values


def on_whole(fn, payload, *kept):
    """``fn(payload, *values)``, each of ``kept`` (:class:`KeptValues`, or a :class:`KeptColumn`: its column, 1-D)
    given as every row's values: here on this process's arrays; on a cluster as one task on a worker, which takes
    every partition's values from the workers that keep them (they never come here), and only ``fn``'s result
    comes back.  For the readers that need every row at once (a rank statistic, two passes over the rows);
    ``fn`` is a module-level function, and ``payload`` travels with the task.  Every ``kept`` is of one frame."""
    columns = [k.t if isinstance(k, KeptColumn) else None for k in kept]
    kept = [k.kept if isinstance(k, KeptColumn) else k for k in kept]
    given = [None if k.here is None else (k.here if c is None else k.here[:, c]) for k, c in zip(kept, columns)]
    away = [k for k in kept if k.here is None]
    if not away:
        return fn(payload, *given)
    if any(any(a is not b for a, b in zip(k.where[:4], away[0].where[:4])) for k in away):
        raise ValueError("on_whole: the values must be kept on the same row partitions")
    from .distributed import run_partitions_on_dask

    split = _split(away[0])
    shell = _KeptShell(tuple(k.name for k in away))
    return run_partitions_on_dask(away[0].where[3], _parts_of, [(shell, key, make) for key, make, _ in split],
                                  [None] * len(split), then=_Whole(fn, payload, columns, given))


def beside(kept: KeptValues, other: KeptValues | None) -> KeptValues:
    """``kept`` read from the row partitions ``other`` is kept on, when both are of one frame whose every block
    holds ``kept`` (a frame's target: each part's recipe reads it), so one task can take both; else ``kept``."""
    if other is None or kept.here is not None or other.here is not None or other.where[0] is not kept.where[0]:
        return kept
    return KeptValues(n_rows=kept.n_rows, width=kept.width, name=kept.name, where=other.where)


class _Deriving:
    """Per-row values made from a partition's kept values, kept beside them under ``name`` (``(kept, width)``)."""

    def __init__(self, fn, name: str):
        self.fn, self.name = fn, name
        self.__name__ = "derive_kept"

    def __call__(self, values, payload):
        out = np.asarray(self.fn(values, payload))
        out = out.reshape(-1, 1) if out.ndim == 1 else out
        return {self.name: out}, out.shape[1]


def derive_kept(fn, payload, kept: KeptValues) -> KeptValues:
    """``fn(values, payload)`` (module-level, per row: ``(rows, k)`` values from each partition's ``(rows, j)``)
    as :class:`KeptValues` beside ``kept``'s: here one call on the whole array; on a cluster each partition's
    values are made and kept on its worker, nothing row-long comes here."""
    if kept.here is not None:
        return kept_here(fn(kept.here, payload))
    from .distributed import run_partitions_on_dask

    name, split = f"kept-{uuid.uuid4().hex}", _split(kept)
    widths = run_partitions_on_dask(kept.where[3], _Deriving(fn, name),
                                    [(_KeptShell(kept.name), key, make) for key, make, _ in split],
                                    [payload] * len(split), refresh=True)
    return KeptValues(n_rows=kept.n_rows, width=int(widths[0]), name=name, where=kept.where)


def _row_hashes(values, _payload) -> bytes:
    import pandas as pd

    return pd.util.hash_pandas_object(pd.Series(values[:, 0], dtype=object), index=False).to_numpy().tobytes()


def hash_kept(kept: KeptValues):
    """Each partition's pandas row hashes of column 0 (as objects: :func:`autopdp.io.provenance.content_sha256`'s
    bytes of an array here), made on its worker and brought one partition at a time."""
    from .distributed import run_partitions_on_dask

    for shell_key_make in [(_KeptShell(kept.name), key, make) for key, make, _ in _split(kept)]:
        (chunk,) = run_partitions_on_dask(kept.where[3], _row_hashes, [shell_key_make], [None])
        yield chunk


def _values_at(values, local) -> np.ndarray:
    return np.asarray(values)[local]


def _gather(kept: KeptValues, rows: np.ndarray) -> np.ndarray:
    """The values of the rows ``rows`` (positions of the whole table, in this order), from the partitions holding
    them."""
    from .distributed import run_partitions_on_dask

    if rows.size and (rows.min() < 0 or rows.max() >= kept.n_rows):
        raise IndexError(f"row positions must be in 0..{kept.n_rows - 1}")
    split = _split(kept)
    starts = np.array([a for _, _, (a, _) in split], dtype=np.int64)
    part = np.searchsorted(starts, rows, side="right") - 1
    chosen = [i for i in range(len(split)) if np.any(part == i)]
    if not chosen:
        return np.empty((0, kept.width))
    got = run_partitions_on_dask(kept.where[3], _values_at,
                                 [(_KeptShell(kept.name), *split[i][:2]) for i in chosen],
                                 [rows[part == i] - starts[i] for i in chosen])
    values = np.concatenate(got)
    order = np.argsort(np.argsort(part, kind="stable"), kind="stable")  # from part order back to ``rows`` order
    return values[order]

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

__all__ = ["KeptValues", "keep_values", "map_kept", "kept_here"]


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
    """A task on a partition's kept values: ``with_rows`` hands the function the values, not the rows."""

    def __init__(self, name: str):
        self.name = name

    def with_rows(self, block: dict):
        return block[self.name]


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

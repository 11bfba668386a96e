"""Rows as the unit of work: a call's PDs computed on row partitions and merged (issue 54).

Each partition (:meth:`autopdp.pd.setup._Setup.for_rows`: the rows ``start:stop``, the call's grids, adapter and
checked tree plan) computes every feature set's PD on its own rows with the same code as a local call
(:func:`autopdp.pd.partial_dependence.run_partition`) and returns it: a small summary per feature set (the weight
total, the weighted mean and spread of its rows' ICE curves per grid cell, its density counts, and the ICE curves
of the call's ICE rows that fall in it), never the rows.  :func:`merge` reduces them to the PD of all the rows: the
weighted means, the spread by the parallel variance formula (Chan et al.), the counts summed and the ICE curves
put back in the call's order.  The merged numbers are those of one pass over every row up to floating-point
rounding (tested against it at every partition count, ``tests/test_rows.py``).

Used where each partition's spread is over all its rows (the per-row tree kernel, leaf counting without a
spread, brute force); a leaf-counting PD whose spread comes from a row sample, and scikit-learn's recursion
method, are not split by rows (:func:`splits_by_rows`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..errors import InputError
from .result import PDResult

__all__ = ["row_bounds", "splits_by_rows", "partitions", "shells", "merge", "rows_block", "rows_key",
           "map_rows", "map_blocks", "mapper_of", "frame_partitions", "part_rows", "scheduler_of", "part_weight_facts",
           "on_parts", "CHUNK_ROWS", "chunk_bounds", "chunked_sum"]

#: the rows a pass over row-long arrays held here (the model's response, the target) works on at a time: its
#: per-row temporaries are bounded by this whatever the data's size, and each pass's sums are merged over the
#: chunks (:func:`chunk_bounds`)
CHUNK_ROWS = 262_144


def row_bounds(n: int, parts: int) -> list[tuple[int, int]]:
    """``parts`` contiguous row ranges of nearly equal size covering ``0:n`` (fewer when there are fewer rows)."""
    parts = max(1, min(int(parts), n))
    edges = np.linspace(0, n, parts + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:]) if b > a]


def chunk_bounds(n: int) -> list[tuple[int, int]]:
    """The row ranges of ``0:n`` in chunks of at most :data:`CHUNK_ROWS` (none for no rows)."""
    return row_bounds(n, -(-n // max(1, int(CHUNK_ROWS)))) if n > 0 else []


def chunked_sum(n: int, fn) -> float:
    """``sum(fn(a, b))`` over the row chunks ``a:b`` of ``0:n`` (:func:`chunk_bounds`): a pass's scalar sum."""
    return float(sum(fn(a, b) for a, b in chunk_bounds(n)))


def splits_by_rows(setup, jobs) -> bool:
    """Whether this call's PDs can be computed on row partitions and merged exactly (see the module docs)."""
    if setup.method == "recursion" or setup.frame.n_rows < 2:
        return False
    plan = setup.tree_plan()
    if plan is None or setup.centered:
        return True  # brute force: every partition's spread is over all its rows
    rows_needed = setup.want_std or any(keep for _, keep in jobs)
    return bool(plan.per_row or not rows_needed)


def partitions(setup, jobs, parts: int) -> tuple[list, list]:
    """``(setups, bounds)``: the call's row partitions, each with its rows (:func:`shells`, filled here), and their
    row ranges."""
    split, bounds = shells(setup, jobs, parts)
    return [shell.with_rows(make_rows()) for shell, _, make_rows in split], bounds


def rows_block(frame, sample_weight, plan, start: int, stop: int) -> dict:
    """The rows ``start:stop`` as a row partition needs them: the frame's rows, their sample weights and the tree
    plan's model matrix (None when the plan has none here: the worker encodes its rows) and raw scores, when known,
    of those rows; the same for every call on this frame and plan."""
    rows = np.arange(start, stop)
    Z, own = (None, None) if plan is None else plan.rows_of(rows)
    return {"frame": frame.take_rows(rows), "Z": Z, "own": own,
            "sample_weight": None if sample_weight is None else np.asarray(sample_weight)[start:stop]}


def rows_key(frame, sample_weight, plan, start: int, stop: int) -> tuple:
    """``(key, refs)``: what makes :func:`rows_block` the same block (this frame and tree plan, equal weights, the
    same rows) and the objects that key names, held with it so their identities are not reused."""
    import hashlib

    w = None if sample_weight is None else hashlib.blake2b(
        np.ascontiguousarray(sample_weight, dtype=float).tobytes(), digest_size=16).hexdigest()
    refs = (frame, plan)
    return (tuple(id(r) for r in refs), w, int(start), int(stop)), refs


class _FrameShell:
    """A per-row call that reads only its partition's rows (:func:`map_rows`): the rows' frame."""

    def with_rows(self, block: dict):
        return block["frame"]


def frame_partitions(frame, sample_weight, plan, parts: int) -> list:
    """``[((key, refs), make_rows, (start, stop)), ...]``: the row partitions of ``frame`` (``parts`` of nearly equal
    size; a :class:`~autopdp.pd.partframe.PartFrame`'s own parts, whose recipes travel to the workers that read
    them), keyed so that every call on this frame, weights and tree ``plan`` finds its rows where they were sent."""
    if getattr(frame, "parts", None) is not None:  # a PartFrame (autopdp.pd.partframe): its own parts
        return [((((id(frame), id(plan)), None, a, b), (frame, plan)), (lambda i=i: frame.make_part(i)), (a, b))
                for i, (a, b) in enumerate(frame.bounds)]
    return [(rows_key(frame, sample_weight, plan, a, b), (lambda a=a, b=b: rows_block(frame, sample_weight, plan, a, b)),
             (a, b)) for a, b in row_bounds(frame.n_rows, parts)]


def scheduler_of(frame, scheduler=None):
    """The scheduler a call on ``frame`` runs on: the one given, else a
    :class:`~autopdp.pd.partframe.PartFrame`'s own (its rows are there), else None (here)."""
    return scheduler if scheduler is not None else getattr(frame, "scheduler", None)


def map_rows(fn, payload, frame, *, sample_weight=None, plan=None, scheduler=None, sliced=None) -> list:
    """``[fn(rows, payload)]`` over the row partitions of ``frame``, in row order: here one partition (every row);
    on a Dask ``scheduler`` one per worker, run where the audit's resident rows are (keyed as the PDs' partitions
    of ``frame``, ``sample_weight`` and the tree ``plan``, so no row is sent again).  ``fn`` is a module-level
    function of a :class:`~autopdp.pd.data.Frame` and ``payload`` that returns a per-row result or a summary.  A
    :class:`~autopdp.pd.partframe.PartFrame` is mapped over its own parts, each read on a worker, none here.

    ``sliced``: ``{name: per-row array of this process, or None}``; each partition's call then takes
    ``(payload, {name: its rows' slice})`` (here the whole arrays, as views), so per-row values held here meet
    the rows where they are without being kept there."""
    scheduler = scheduler_of(frame, scheduler)
    if scheduler is None:
        return [fn(frame, payload if sliced is None else (payload, dict(sliced)))]
    from .distributed import dask_workers, run_partitions_on_dask

    shell = _FrameShell()
    split = frame_partitions(frame, sample_weight, plan, dask_workers(scheduler))
    payloads = [payload if sliced is None else
                (payload, {k: None if v is None else v[a:b] for k, v in sliced.items()}) for _, _, (a, b) in split]
    return run_partitions_on_dask(scheduler, fn, [(shell, key, make) for key, make, _ in split], payloads)


def map_blocks(fn, payload, frame, *, sample_weight=None, extra=None) -> list:
    """``[fn(block, payload)]`` over the row partitions of ``frame`` as :func:`map_rows`, ``block`` a dict of the
    partition's ``frame`` and ``sample_weight`` (None: unweighted), with ``extra`` (a dict of per-row arrays of
    this process) added, sliced to its rows: here one block of every row; on the frame's cluster its partitions
    (a :class:`~autopdp.pd.partframe.PartFrame`'s parts, weights from its weight column: no ``extra``)."""
    scheduler = scheduler_of(frame)
    if scheduler is None:
        return [fn({"frame": frame, "sample_weight": sample_weight, **(extra or {})}, payload)]
    from .distributed import dask_workers, run_partitions_on_dask

    split = frame_partitions(frame, sample_weight, None, dask_workers(scheduler))
    payloads = [payload if not extra else (payload, {k: v[a:b] for k, v in extra.items()}) for _, _, (a, b) in split]
    return run_partitions_on_dask(scheduler, _with_extra if extra else fn,
                                  [(_BlockShell(fn) if extra else _BlockShell(), key, make) for key, make, _ in split],
                                  payloads)


def mapper_of(frame, scheduler=None):
    """``mapper(fn, payload)``: :func:`map_rows` on ``frame`` (what a summary built from row partitions takes)."""
    return lambda fn, payload: map_rows(fn, payload, frame, scheduler=scheduler)


class _BlockShell:
    """A per-row call that reads its partition's whole block (rows and weights); with ``fn``, the block and
    ``fn`` (:func:`_with_extra` adds the per-row arrays that came with the task)."""

    def __init__(self, fn=None):
        self.fn = fn

    def with_rows(self, block: dict):
        return block if self.fn is None else (block, self.fn)


def _with_extra(held, job):
    """``fn({**block, **extra}, payload)``: a partition's block with the slices of this process's per-row
    arrays that its task carried (:func:`map_blocks`)."""
    (block, fn), (payload, extra) = held, job
    return fn({**block, **extra}, payload)


def _weights_of(block, payload) -> tuple:
    """A part's weight facts (:func:`autopdp.pd.sampling.weight_part`) and its count of bad weights."""
    from .sampling import weight_part

    start, k = payload
    w = np.asarray(block["sample_weight"], dtype=float)
    bad = ~np.isfinite(w) | (w < 0)
    return int(bad.sum()), weight_part(np.where(bad, 0.0, w), start, k)


def part_weight_facts(frame, k: int):
    """The :class:`~autopdp.pd.sampling.WeightFacts` of a :class:`~autopdp.pd.partframe.PartFrame`'s weight column,
    each part's share made on its worker (None: the frame has no weight column); its weights checked as
    ``sample_weight`` is (finite, non-negative, a positive sum)."""
    from .sampling import merge_weight_facts

    if frame.parts[0].weight is None:
        return None
    starts = {i: (a, int(k)) for i, (a, _) in enumerate(frame.bounds)}
    got = on_parts(frame, _weights_of, starts)
    name = frame.parts[0].weight
    if sum(bad for bad, _ in got):
        raise InputError(f"the weight column {name!r} must be finite and non-negative.")
    facts = merge_weight_facts([part for _, part in got], k)
    if facts.total <= 0:
        raise InputError(f"the weight column {name!r} sums to 0: at least one row needs a positive weight.")
    return facts


def _take(block, local):
    """A partition's rows at positions ``local`` (of the partition), as a DataFrame."""
    return block["frame"].take_rows(local).data


def on_parts(frame, fn, payloads: dict) -> list:
    """``[fn(block, payload), ...]`` on the parts ``i`` of a :class:`~autopdp.pd.partframe.PartFrame` given in
    ``payloads`` (``{i: payload}``, in part order), each on the worker that holds the part: ``block`` its rows and
    weights (:func:`map_blocks`)."""
    from .distributed import run_partitions_on_dask

    split = frame_partitions(frame, None, None, 0)
    chosen = sorted(payloads)
    if not chosen:
        return []
    return run_partitions_on_dask(frame.scheduler, fn, [(_BlockShell(), *split[i][:2]) for i in chosen],
                                  [payloads[i] for i in chosen])


def part_rows(frame, wanted: list) -> list:
    """The rows ``wanted[i]`` (positions within part ``i``) of each part of a
    :class:`~autopdp.pd.partframe.PartFrame`, as DataFrames, from the parts that hold any (read on their workers)."""
    return on_parts(frame, _take, {i: rows for i, rows in enumerate(wanted) if rows.size})


def shells(setup, jobs, parts: int) -> tuple[list, list]:
    """``(partitions, bounds)``: each row partition as ``(shell, (key, refs), rows)``, the setup without its rows
    (:meth:`autopdp.pd.setup._Setup.shell_for_rows`), what identifies its rows across calls, and a function that
    makes the rows block (:meth:`~autopdp.pd.setup._Setup.rows_block`) when the cluster does not hold it yet; after
    every grid is built on all the rows."""
    for positions, _ in jobs:
        for p in positions:
            setup.spec(p)
    split = frame_partitions(setup.frame, setup.sample_weight, setup._plan, parts)
    return [(setup.shell_for_rows(a, b), key, make) for key, make, (a, b) in split], [ab for _, _, ab in split]


def _merged(setup, per_part: list[PDResult], bounds, note: str) -> PDResult:
    """One feature set's PD of all the rows from its partitions' results."""
    first = per_part[0]
    W = np.array([r.total_weight for r in per_part], dtype=float)
    live = W > 0
    avgs = np.stack([np.asarray(r.average, dtype=float) for r in per_part])
    share = (W / float(W.sum())).reshape((-1,) + (1,) * (avgs.ndim - 1))
    average = np.where(live.reshape(share.shape), avgs * share, 0.0).sum(axis=0)
    stds = np.stack([np.asarray(r.std, dtype=float) for r in per_part])
    within = np.where(live.reshape(share.shape), (stds ** 2 + (avgs - average) ** 2) * share, 0.0).sum(axis=0)
    std = np.sqrt(np.maximum(within, 0.0))
    total, total_sq = setup.weight_sums()
    individual, ice_rows = None, first.ice_rows
    if first.individual is not None:
        individual = np.concatenate([np.asarray(r.individual) for r in per_part], axis=1)
        ice_rows = setup.ice_rows
        if ice_rows is not None:  # the curves come partition after partition; put them back in ice_rows' order
            part_of = np.searchsorted([a for a, _ in bounds], ice_rows, side="right") - 1
            individual = individual[:, np.argsort(np.argsort(part_of, kind="stable"), kind="stable")]
    notes = tuple(dict.fromkeys(n for r in per_part for n in r.notes)) + (note,)
    return dataclasses.replace(
        first, average=average, std=std, stderr=std * (np.sqrt(total_sq) / total),
        counts=sum(np.asarray(r.counts) for r in per_part), n_rows=int(sum(r.n_rows for r in per_part)),
        total_weight=total, individual=individual, ice_rows=ice_rows, notes=notes)


def merge(setup, per_partition: list[list[PDResult]], bounds) -> list[PDResult]:
    """The PDs of all the rows, in job order, from each partition's results (same order)."""
    note = (f"Computed on {len(bounds)} row partitions and merged (the same PD, spread and ICE curves as one pass "
            "over every row, to floating-point rounding).")
    if len(per_partition) == 1:
        return per_partition[0]
    return [_merged(setup, list(rs), bounds, note) for rs in zip(*per_partition)]

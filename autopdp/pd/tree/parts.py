"""The per-row tree kernel's check against the model on a Dask cluster's row partitions (issue 54).

:func:`check_on_dask` runs :meth:`autopdp.pd.tree.fastpath.TreePlan.kernel`'s check where the rows are: each
partition encodes its own rows, walks the trees and compares with the model's own predictions, and keeps the
encoded rows, raw scores and the model's own response beside its rows (:func:`autopdp.pd.rows.frame_partitions`'s
keys) for the later calls: the response is :class:`~autopdp.pd.kept.KeptValues`, read there by its readers.
"""

from __future__ import annotations

import uuid

import numpy as np

from ..kept import KeptValues
from ..rows import frame_partitions
from .exact_pd import TreePathUnavailable
from .fastpath import verify_parts, verify_verdict
from .ice import RowKernel

__all__ = ["check_on_dask"]


class _CheckShell:
    """A tree plan's shell (:meth:`TreePlan.subset_shell`) as a row partition's task takes it."""

    def __init__(self, plan):
        self.plan = plan

    def with_rows(self, block: dict):
        return self.plan.filled(block["frame"], block["Z"], None)


def _trees_on_row(forest, Z) -> np.ndarray:
    """The trees' sum (raw score without the constant) on one encoded row ``Z`` (1, n_columns)."""
    return RowKernel(forest, Z, np.ones(1), np.zeros(forest.value.shape[1])).predictions()[0]


def _check_partition(plan, payload) -> tuple:
    """One partition's check of the trees against the model: ``(kept, (rows, gap, top))``, or ``(None, reason)``
    when it fails; ``kept`` (the rows' model matrix, encoded here, their own raw scores and the model's response,
    under the payload's name) stays with the rows on the worker, and only the check's numbers travel."""
    offset, name, bring = payload
    try:
        kernel = RowKernel(plan.forest, plan.Z, np.ones(plan.Z.shape[0]), np.zeros(plan.forest.value.shape[1]))
        raw = kernel.predictions() + offset
        theirs, gap, top = verify_parts(kernel, raw, plan.adapter, plan.frame, plan.n_out)
        return {"Z": plan.Z, "own": raw, name: theirs}, (theirs if bring else theirs.shape, gap, top)
    except TreePathUnavailable as exc:  # the rows' encoding, or the check itself
        return None, str(exc)


def check_on_dask(plan, frame, sample_weight, scheduler) -> None:
    """The per-row kernel's check against the model's predictions (:meth:`TreePlan.kernel`), on every row, done on
    the workers' row partitions (sent once: the later calls find them there).  The same verdict as one pass (the
    largest gap and size combine by max); on success the plan takes the rows' model responses (their raw scores
    stay with the rows on the workers, :meth:`TreePlan.checked_elsewhere`), else its per-row path is dropped with the reason, as
    :meth:`TreePlan.prepare` does."""
    from ..distributed import dask_workers, holds_rows, run_here_or_on_dask, run_partitions_on_dask

    if plan.forest is None or plan._kernel is not None or plan._checked_offset is not None:
        return
    # the first row's trees walked on a worker: the calling process runs no compiled kernel
    offset = plan.first_offset(None if plan.constant_in_trees() else
                               run_here_or_on_dask(scheduler, _trees_on_row, plan.forest, plan._rows_Z([0])))
    shell = _CheckShell(plan.subset_shell())
    n_parts, name = dask_workers(scheduler), f"response-{uuid.uuid4().hex}"
    bring = not holds_rows(scheduler)  # outside resident_rows nothing keeps the rows: the responses come here
    parts = [(shell, key, make) for key, make, _ in frame_partitions(frame, sample_weight, plan, n_parts)]
    per_part = run_partitions_on_dask(scheduler, _check_partition, parts, [(offset, name, bring)] * len(parts),
                                      refresh=True)
    try:
        failed = [p for p in per_part if isinstance(p, str)]
        if failed:
            raise TreePathUnavailable(failed[0])
        verify_verdict(max(p[1] for p in per_part), max(p[2] for p in per_part), plan.adapter)
    except TreePathUnavailable as exc:
        plan.forest, plan.rows_unavailable = None, str(exc)
        return
    response = _stacked_releasing(per_part) if bring else KeptValues(
        n_rows=frame.n_rows, width=int(per_part[0][0][1]), name=name, where=(frame, sample_weight, plan, scheduler,
                                                                             n_parts))
    plan.checked_elsewhere(offset, response, None)


def _stacked_releasing(per_part: list) -> np.ndarray:
    """The partitions' model responses ``(rows, K)`` stacked in row order, each partition's dropped once copied: at
    most one more partition than the result is held (``np.vstack`` holds every partition beside the result)."""
    sizes = [p[0].shape[0] for p in per_part]
    out = np.empty((sum(sizes), per_part[0][0].shape[1]), dtype=np.result_type(*(p[0] for p in per_part)))
    start = 0
    for i, size in enumerate(sizes):
        out[start:start + size] = per_part[i][0]
        per_part[i] = None
        start += size
    return out

"""Exact per-row ICE and ALE's moved reads of a tree model on any numeric grids (:class:`ExactICE`)."""

from __future__ import annotations

import numpy as np

from ..grids import build_spec
from ..options import PDOptions
from ..setup import _Setup
from .exact_pd import TreePathUnavailable

__all__ = ["ExactICE"]


class ExactICE:
    """Exact per-row ICE of a tree model on any numeric grids, without predicting.

    The trees are extracted and checked against the model once; :meth:`ice`
    then answers any feature sets and grids from the per-row kernel.  Used by
    the trust stage to read ALE's edge values (:func:`autopdp.trust.ale.ale_curves_exact`).

    Raises
    ------
    TreePathUnavailable
        When the per-row tree path does not apply to the model (the reason says why).
    """

    def __init__(self, model, X, *, response="auto", target=None, max_batch_mb=256.0):
        self.setup = _Setup(
            model, X, response=response, grid_resolution=2, percentiles=(0.05, 0.95), custom_values=None,
            categorical_features=None, sample_weight=None, kind="individual",
            options=PDOptions(target=target, random_state=0, std=False, max_batch_mb=max_batch_mb),
        )
        plan = self.setup.tree_plan()
        if plan is None:
            raise TreePathUnavailable(self.setup.tree_unavailable)
        plan.prepare(self.setup.weights)
        if not plan.per_row:
            raise TreePathUnavailable(plan.rows_unavailable)
        self.plan = plan
        self.targets = self.setup.adapter.targets

    def for_rows(self, start: int, stop: int) -> "ExactICE":
        """This source on the rows ``start:stop`` (a row partition, :meth:`autopdp.pd.setup._Setup.for_rows`): the
        same trees and checked offset, the kernel rebuilt on those rows without new checks."""
        return self.shell_for_rows(start, stop).with_rows(self.setup.rows_block(start, stop))

    def shell_for_rows(self, start: int, stop: int) -> "ExactICE":
        """:meth:`for_rows` without the rows (see :meth:`autopdp.pd.setup._Setup.shell_for_rows`)."""
        import copy

        other = copy.copy(self)
        other.setup, other.plan = self.setup.shell_for_rows(start, stop), None
        return other

    def with_rows(self, block: dict) -> "ExactICE":
        """This shell with its rows (:meth:`autopdp.pd.setup._Setup.rows_block`)."""
        import copy

        other = copy.copy(self)
        other.setup = self.setup.with_rows(block)
        other.plan = other.setup.tree_plan()
        return other

    def partitions(self, parts: int) -> tuple[list, list]:
        """``([(shell, (key, refs), make_rows), ...], [(start, stop), ...])``: this source's row partitions
        (``parts`` of them, or a PartFrame's own, :func:`autopdp.pd.rows.frame_partitions`) and their rows."""
        from ..rows import frame_partitions

        setup = self.setup
        split = frame_partitions(setup.frame, setup.sample_weight, setup._plan, parts)
        return [(self.shell_for_rows(a, b), key, make) for key, make, (a, b) in split], [ab for _, _, ab in split]

    def _specs(self, feature_sets, grids):
        return [
            [build_spec(self.setup.frame, p, categorical=False, grid_resolution=2, percentiles=(0.05, 0.95),
                        grid_method="quantile", custom_values=g) for p, g in zip(positions, gs)]
            for positions, gs in zip(feature_sets, grids)
        ]

    def ice(self, feature_sets, grids) -> list[np.ndarray]:
        """ICE of every row, one array ``(n_targets, n_rows, *grid_shape)`` per feature set.

        ``feature_sets``: column positions, 1 or 2 per set; ``grids``: one numeric grid per position.
        """
        frame = self.setup.frame
        spec_sets = self._specs(feature_sets, grids)
        rows = np.arange(frame.n_rows)
        exact = self.plan.exact(spec_sets, self.setup.weights, rows, [True] * len(spec_sets))
        return [individual for _, _, individual in exact]

    def moved(self, feature_sets, grids, lower) -> list[np.ndarray]:
        """Every row's response at the two ends of its own interval (1D sets) or the four corners of its own cell
        (2D sets): ``(n_targets, n_rows, 2)`` or ``(n_targets, n_rows, 2, 2)`` each.

        ``feature_sets``: one or two column positions each; ``grids``: their numeric grids; ``lower[s]``
        (n_rows, 1 or 2): each row's lower grid index per feature.  The same values as :meth:`ice` at those
        points, from one walk per row and tree (:mod:`autopdp.pd.tree.moves`).
        """
        spec_sets = self._specs(feature_sets, grids)
        return self.plan.moved(spec_sets, self.setup.weights, lower)

"""The validated inputs of one PD call (:class:`_Setup`): options checked once, the data's frame, weights and
categorical columns, the model's adapter, and the tree or pipeline plan each feature set may take.

Everything :func:`autopdp.pd.partial_dependence.partial_dependence` and
:class:`autopdp.pd.tree.exact_ice.ExactICE` check before any work starts is here.
"""

from __future__ import annotations

import copy
import numbers
from collections.abc import Hashable

import numpy as np

from .options import PDOptions
from .data import Frame, as_frame, describe_missing, probe_rows, refuse_dask
from ..errors import InputError, InputTypeError
from .tree.fastpath import METHODS, plan_tree_path, shared_adapter
from .partframe import PartFrame
from .sampling import _weighted_sample, weight_facts
from .tree.exact_pd import TreePathUnavailable
from .grids import FeatureSpec, build_spec, resolve_categorical
from .profiles import frame_profiles
from .pipeline_blocks import BlocksUnavailable, plan_blocks
from .response import make_adapter


KINDS = ("average", "individual", "both")
GRID_METHODS = ("quantile", "uniform")


def _check_options(grid_resolution, percentiles, kind, grid_method, max_batch_mb):
    if not isinstance(grid_resolution, numbers.Integral) or isinstance(grid_resolution, bool) or grid_resolution < 2:
        raise InputError(
            f"grid_resolution must be an integer >= 2 (a grid of one point has no shape to show), got {grid_resolution!r}."
        )
    try:
        lo, hi = (float(p) for p in percentiles)
    except (TypeError, ValueError):
        raise InputError(f"percentiles must be a pair of numbers (low, high), got {percentiles!r}.") from None
    if not (0.0 <= lo < hi <= 1.0):
        raise InputError(f"percentiles must satisfy 0 <= low < high <= 1, got {percentiles!r}.")
    if kind not in KINDS:
        raise InputError(f"kind={kind!r} is not supported; use one of {', '.join(KINDS)}.")
    if grid_method not in GRID_METHODS:
        raise InputError(f"grid_method={grid_method!r} is not supported; use one of {', '.join(GRID_METHODS)}.")
    if not (isinstance(max_batch_mb, numbers.Real) and max_batch_mb > 0):
        raise InputError(f"max_batch_mb must be a positive number of megabytes, got {max_batch_mb!r}.")
    return (lo, hi)


def _normalise_features(frame: Frame, features) -> list[tuple[int, ...]]:
    if features is None or isinstance(features, (str, bytes)) or not hasattr(features, "__iter__"):
        raise InputTypeError(
            "features must be a list whose items are a column name/index (1D) or a pair of them (2D), "
            f"e.g. ['age', ('age', 'income')]; got {features!r}."
        )
    out = []
    for item in features:
        if isinstance(item, (tuple, list)):
            if len(item) == 1:
                out.append((frame.position_of(item[0]),))
                continue
            if len(item) != 2:
                raise InputError(
                    f"Feature set {tuple(item)!r} has {len(item)} features; autopdp computes 1D and 2D partial dependence only."
                )
            a, b = frame.position_of(item[0]), frame.position_of(item[1])
            if a == b:
                raise InputError(
                    f"Feature pair ({item[0]!r}, {item[1]!r}) names the same feature twice; "
                    "a 2D partial dependence needs two different features."
                )
            out.append((a, b))
        elif isinstance(item, Hashable):
            out.append((frame.position_of(item),))
        else:
            raise InputTypeError(f"Cannot read feature {item!r}: use a column name, an integer position or a pair of them.")
    if not out:
        raise InputError("features is empty: name at least one feature or pair.")
    return out


def _sample_weight(sample_weight, n):
    if sample_weight is None:
        return None
    refuse_dask(sample_weight, "sample_weight")
    w = np.asarray(sample_weight, dtype=float).ravel()
    if w.shape[0] != n:
        raise InputError(f"sample_weight has {w.shape[0]} values but X has {n} rows; give one weight per row.")
    if not np.all(np.isfinite(w)) or (w < 0).any():
        raise InputError("sample_weight must be finite and non-negative.")
    if w.sum() <= 0:
        raise InputError("sample_weight sums to 0: at least one row needs a positive weight.")
    return w


def _ice_count(subsample, n) -> int | None:
    """How many rows keep their ICE curves (None: every row)."""
    if subsample is None:
        return None
    if isinstance(subsample, numbers.Integral) and not isinstance(subsample, bool):
        if subsample < 1:
            raise InputError(f"subsample must be a positive number of rows or a fraction in (0, 1], got {subsample!r}.")
        k = min(int(subsample), n)
    elif isinstance(subsample, numbers.Real) and 0 < subsample <= 1:
        k = max(1, int(round(subsample * n)))
    else:
        raise InputError(f"subsample must be a positive number of rows or a fraction in (0, 1], got {subsample!r}.")
    return None if k >= n else k


def _weight_facts(frame: Frame, sample_weight, k: int):
    """The weights' :class:`~autopdp.pd.sampling.WeightFacts` (None: unweighted): of ``sample_weight``, or of a
    :class:`~autopdp.pd.partframe.PartFrame`'s weight column, summed on its parts."""
    if not isinstance(frame, PartFrame):
        return None if sample_weight is None else weight_facts(sample_weight, k)
    if sample_weight is not None and getattr(sample_weight, "source", None) != frame.weight_source:
        raise InputError("the rows of this frame are on a Dask cluster's workers: its sample weights are a column of "
                         "its parts (parquet_frame(..., weight=NAME)), not sample_weight.")
    from .rows import part_weight_facts

    return part_weight_facts(frame, k)


def _reject_infinite(frame: Frame, categorical: np.ndarray, columns) -> None:
    """Infinite values break grids and most models: name the column before anything runs (``columns``: the
    columns' profiles, :func:`autopdp.pd.profiles.frame_profiles`)."""
    for j in range(frame.n_features):
        if not categorical[j] and getattr(columns[j], "n_inf", 0):
            raise InputError(
                f"Feature {frame.names[j]!r} has infinite values: replace them (e.g. with NaN or a cap) before "
                "computing partial dependence."
            )


class _Setup:
    """Everything validated once, shared by every feature set of a call."""

    def __init__(self, model, X, *, response, grid_resolution, percentiles, custom_values, categorical_features,
                 sample_weight, kind, method="auto", options: PDOptions = PDOptions()):
        target, grid_method, max_batch_mb, std = options.target, options.grid_method, options.max_batch_mb, options.std
        integer_as_categorical, subsample, random_state = (options.integer_as_categorical, options.subsample,
                                                           options.random_state)
        centered, max_levels, std_rows = options.centered, options.max_levels, options.std_rows
        self.percentiles = _check_options(grid_resolution, percentiles, kind, grid_method, max_batch_mb)
        self.frame = as_frame(X)
        self.grid_resolution = int(grid_resolution)
        self.grid_method = grid_method
        columns = frame_profiles(self.frame, cap=max(0, int(integer_as_categorical or 0)))  # one pass, every column
        self.categorical = resolve_categorical(self.frame, categorical_features, integer_as_categorical, columns)
        self.custom = {}
        for key, values in (custom_values or {}).items():
            self.custom[self.frame.position_of(key)] = values
        self.sample_weight = _sample_weight(sample_weight, self.frame.n_rows)
        own = self.in_parts and self.sample_weight is not None and \
            getattr(sample_weight, "source", None) == self.frame.weight_source
        if own:  # a PartFrame's own weights, brought here: its parts hold them beside their rows
            self.sample_weight = None
        if not isinstance(std_rows, numbers.Integral) or std_rows < 0:
            raise InputError(f"std_rows must be a non-negative integer, got {std_rows!r}.")
        ice_count = _ice_count(subsample, self.frame.n_rows)
        self.weight_facts = _weight_facts(self.frame, sample_weight if own else self.sample_weight,
                                          max(ice_count or 0, int(std_rows)))
        _reject_infinite(self.frame, self.categorical, columns)
        probe = self.frame.take_rows(probe_rows(self.frame, columns=columns)).data
        missing = describe_missing(self.frame, columns)
        self.adapter = shared_adapter(model, response, target, lambda: make_adapter(
            model, response, target, probe=probe, missing=missing))
        self.keep_individual = kind in ("individual", "both")
        if std is not None and not isinstance(std, bool):
            raise InputError(f"std must be True, False or None, got {std!r}.")
        # kind="average" asks for averages only: no ICE spread is computed unless std=True
        self.want_std = (kind != "average") if std is None else bool(std)
        self.ice_rows = None if ice_count is None else _weighted_sample(
            self.frame.n_rows, ice_count, self.weight_facts, np.random.default_rng(random_state))
        self.centered = bool(centered)
        self.max_batch_bytes = float(max_batch_mb) * 1e6
        if max_levels is not None and (not isinstance(max_levels, numbers.Integral) or max_levels < 2):
            raise InputError(f"max_levels must be an integer >= 2 or None, got {max_levels!r}.")
        self.max_levels = max_levels
        if method not in METHODS:
            raise InputError(f"method={method!r} is not supported; use one of {', '.join(METHODS)}.")
        self.method = method
        self.std_rows = int(std_rows)
        self.random_state = random_state
        # every row's weight here (None for a frame whose rows are on a cluster: weight_facts has their sums)
        self.weights = None if self.in_parts else (
            np.ones(self.frame.n_rows) if self.sample_weight is None else self.sample_weight)
        self.rows_total = self.frame.n_rows  # every row of the call (a row partition's setup keeps its parent's)
        self.tree_unavailable = "not tried"
        self._plan = None
        self._plan_done = False
        self.blocks_unavailable = "not tried"
        self._blocks = None
        self._blocks_done = False
        self._specs: dict[int, FeatureSpec] = {}
        self.nearest: dict = {}  # density_counts' cache of each spec's nearest grid index on this frame

    @property
    def in_parts(self) -> bool:
        """Whether this call's rows are on a cluster's workers (a PartFrame), not here."""
        return isinstance(self.frame, PartFrame)

    def weight_sums(self) -> tuple[float, float]:
        """``(sum of w, sum of w squared)`` over every row of the call (ones when unweighted), correctly rounded:
        the same however the rows are partitioned."""
        if self.weight_facts is None:
            return float(self.rows_total), float(self.rows_total)
        return self.weight_facts.total, self.weight_facts.total_sq

    def tree_plan(self):
        """The exact tree path for this model and data, or None (reason in ``tree_unavailable``)."""
        if not self._plan_done:
            self._plan_done = True
            if self.method in ("auto", "tree"):
                try:
                    self._plan = plan_tree_path(self.adapter.model, self.adapter, self.frame, self.max_batch_bytes,
                                                rows_elsewhere=self.in_parts)
                    self.tree_unavailable = ""
                    if self.in_parts:  # every row checked on its part, where its model matrix stays
                        from .tree.parts import check_on_dask

                        check_on_dask(self._plan, self.frame, None, self.frame.scheduler)
                        if self._plan.forest is None:  # leaf counting reads every row: not on parts
                            self._plan, self.tree_unavailable = None, self._plan.rows_unavailable
                except TreePathUnavailable as exc:
                    self.tree_unavailable = str(exc)
        return self._plan

    def block_plan(self):
        """The Pipeline's preprocessing applied once for brute force (:mod:`autopdp.pd.pipeline_blocks`), or None
        (reason in ``blocks_unavailable``)."""
        if not self._blocks_done:
            self._blocks_done = True
            if self.in_parts:  # the preprocessing of every row: each row partition makes its own
                self.blocks_unavailable = "the rows are on the cluster's workers"
            elif self.method in ("auto", "brute"):
                try:
                    self._blocks = plan_blocks(self.adapter.model, self.adapter, self.frame)
                    self.blocks_unavailable = ""
                except BlocksUnavailable as exc:
                    self.blocks_unavailable = str(exc)
        return self._blocks

    def std_sample(self):
        """Rows whose ICE spread estimates std/stderr on the tree path (None when std_rows=0)."""
        if self.std_rows == 0:
            return None
        n = self.frame.n_rows
        if self.std_rows >= n:
            return np.arange(n)
        rng = np.random.default_rng(0 if self.random_state is None else self.random_state)  # same rows every run
        return _weighted_sample(n, self.std_rows, self.weight_facts, rng)

    def for_rows(self, start: int, stop: int) -> "_Setup":
        """This setup on the rows ``start:stop`` of its frame: a row partition (:mod:`autopdp.pd.rows`).

        The grids (build them first: :meth:`spec`), the adapter and the checked tree plan carry over (the plan's
        kernel is rebuilt on these rows without new checks, :meth:`TreePlan.subset`); the weights are these rows';
        the ICE rows are those of this call that fall in the partition, in the call's order, at their positions
        in the partition (``ice_rows`` None: every row's curve, as in the call).  The same as
        ``shell_for_rows(start, stop).with_rows(rows_block(start, stop))``.
        """
        return self.shell_for_rows(start, stop).with_rows(self.rows_block(start, stop))

    def shell_for_rows(self, start: int, stop: int) -> "_Setup":
        """:meth:`for_rows` without the rows themselves (frame, weights, the plan's model matrix): what a task
        carries to a worker that already holds the rows (:meth:`rows_block`, put in by :meth:`with_rows`)."""
        other = copy.copy(self)
        other.frame, other.sample_weight, other.weights = None, None, None
        if self.ice_rows is not None:
            inside = (self.ice_rows >= start) & (self.ice_rows < stop)
            other.ice_rows = np.asarray(self.ice_rows[inside], dtype=np.int64) - start
        other._specs = dict(self._specs)
        other.nearest = {}
        if self._plan is not None:
            other._plan = self._plan.subset_shell()
        other._blocks, other._blocks_done = None, False  # the preprocessing of these rows, built where they run
        return other

    def rows_block(self, start: int, stop: int) -> dict:
        """The rows ``start:stop`` as a row partition needs them (:func:`autopdp.pd.rows.rows_block`)."""
        from .rows import rows_block

        return rows_block(self.frame, self.sample_weight, self._plan, start, stop)

    def with_rows(self, block: dict) -> "_Setup":
        """This shell (:meth:`shell_for_rows`) with its rows (:meth:`rows_block`)."""
        other = copy.copy(self)
        other.frame, other.sample_weight = block["frame"], block["sample_weight"]
        other.weights = np.ones(other.frame.n_rows) if other.sample_weight is None else other.sample_weight
        if self._plan is not None:
            other._plan = self._plan.filled(other.frame, block["Z"], block["own"])
        return other

    def with_grid_resolution(self, grid_resolution) -> "_Setup":
        """The same setup with another grid resolution (grids are rebuilt)."""
        _check_options(grid_resolution, self.percentiles, "both", self.grid_method, 1)
        other = copy.copy(self)
        other.grid_resolution = int(grid_resolution)
        other._specs = {}
        return other

    def spec(self, position: int) -> FeatureSpec:
        if position not in self._specs:
            self._specs[position] = build_spec(
                self.frame, position, categorical=bool(self.categorical[position]),
                grid_resolution=self.grid_resolution, percentiles=self.percentiles,
                grid_method=self.grid_method, custom_values=self.custom.get(position),
                max_levels=self.max_levels,
            )
        return self._specs[position]

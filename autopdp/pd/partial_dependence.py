"""Public entry points of the PD/ICE engine: ``partial_dependence`` and ``compute_all``.

All input validation happens once, before any work starts (:class:`autopdp.pd.setup._Setup`); then each group
of feature sets goes to the exact tree path, the pipeline's blocks or brute force.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np

from ..utils.progress import progress_bar
from .data import as_frame
from .daskframe import takes_dask_frames
from .engine import augmented_rows, brute_force_many, rows_per_batch
from ..errors import InputError, InputTypeError
from .options import PDOptions, accepts_old_keywords
from .sampling import _weighted_sample, certainty_rows  # noqa: F401
from .tree.exact_pd import TreePathUnavailable
from .grids import build_spec, resolve_categorical
from .result import PDResult
from .rows import merge, scheduler_of, shells, splits_by_rows
from .setup import _check_options, _normalise_features, _Setup

__all__ = ["partial_dependence", "compute_all", "PDOptions", "COMPUTE_ALL_OPTIONS"]


def _run_group(setup: _Setup, group: list[tuple[tuple[int, ...], bool]]) -> list[PDResult]:
    spec_sets = [[setup.spec(p) for p in positions] for positions, _ in group]
    keeps = [keep for _, keep in group]
    plan = setup.tree_plan()
    if plan is not None and not setup.centered:
        refused = _refused_sets(plan, spec_sets)
        if refused and setup.method == "tree":
            raise InputError(f"method='tree' does not apply: {next(iter(refused.values()))}.")
        if refused and len(refused) < len(spec_sets):
            # only the sets whose features cannot reach the trees as one column go to brute force
            out = _brute(setup, spec_sets, keeps, only=sorted(refused))
            for i in refused:
                note = f"Computed by brute force: the exact tree path does not apply ({refused[i]})."
                out[i] = dataclasses.replace(out[i], notes=tuple(out[i].notes) + (note,))
            accepted = [i for i in range(len(spec_sets)) if i not in refused]
            for i, r in zip(accepted, _run_group(setup, [group[i] for i in accepted])):
                out[i] = r
            return out
        try:
            return _tree_group(setup, plan, spec_sets, keeps)
        except TreePathUnavailable as exc:
            if setup.method == "tree":
                raise InputError(f"method='tree' does not apply: {exc}.") from None
            setup.tree_unavailable = str(exc)
            note = f"Computed by brute force: the exact tree path does not apply ({exc})."
            return [dataclasses.replace(r, notes=tuple(r.notes) + (note,)) for r in _brute(setup, spec_sets, keeps)]
    elif setup.method == "tree":
        raise InputError(f"method='tree' does not apply: {setup.tree_unavailable}.")
    if setup.method == "recursion":
        return [_recursion_result(setup, specs) for specs in spec_sets]
    return _brute(setup, spec_sets, keeps)


def _refused_sets(plan, spec_sets) -> dict[int, str]:
    """{set index: reason} for the feature sets the tree path cannot take (a feature that does not
    reach the trees as one column of its own, e.g. one-hot encoded or mixed with others)."""
    refused = {}
    plan.probe_many([spec for specs in spec_sets for spec in specs])
    for i, specs in enumerate(spec_sets):
        try:
            for spec in specs:
                plan.mapped(spec)
        except TreePathUnavailable as exc:
            refused[i] = str(exc)
    return refused


def _tree_group(setup: _Setup, plan, spec_sets, keeps) -> list[PDResult]:
    """Exact tree-path results: the per-row kernel when ICE, std or a link is needed, else leaf counting."""
    rows_needed = setup.want_std or any(keeps) or not plan.counting
    if plan.per_row and rows_needed:
        keep_rows = setup.ice_rows if setup.ice_rows is not None else np.arange(setup.frame.n_rows)
        try:
            exact = plan.exact(spec_sets, setup.weights, keep_rows if any(keeps) else None, keeps)
        except TreePathUnavailable:
            if not plan.counting:
                raise
        else:
            note = f"PD, ICE and std exact by the tree path on all {setup.rows_total:,} rows."
            return [
                _tree_result(setup, specs, avg, std, indiv, keep_rows if indiv is not None else None, note)
                for specs, (avg, std, indiv) in zip(spec_sets, exact)
            ]
    averages = plan.averages(spec_sets, setup.weights)
    sampled = _sampled_spread(setup, spec_sets, keeps)
    out = []
    for specs, avg, spread in zip(spec_sets, averages, sampled):
        if spread is None:
            note = ("std and stderr not computed (std_rows=0)." if setup.want_std
                    else "std and stderr not computed (kind='average'; pass std=True for them).")
            out.append(_tree_result(setup, specs, avg, np.full(avg.shape, np.nan), None, None, note))
        else:
            sample, rows = spread
            note = (f"PD exact by the tree path on all {setup.rows_total:,} rows; ICE curves and std from "
                    f"{len(rows):,} sampled rows.")
            out.append(_tree_result(setup, specs, avg, np.asarray(sample.std), sample.individual, np.asarray(rows),
                                    note))
    return out


def _brute(setup: _Setup, spec_sets, keeps, only=None):
    idx = list(range(len(spec_sets))) if only is None else only
    out = [None] * len(spec_sets)
    if not idx:
        return out
    res = brute_force_many(
        setup.adapter, setup.frame, [spec_sets[i] for i in idx], sample_weight=setup.sample_weight,
        ice_rows=setup.ice_rows, keep_individual=[keeps[i] for i in idx], centered=setup.centered,
        max_batch_bytes=setup.max_batch_bytes, blocks=setup.block_plan(),
    )
    for i, r in zip(idx, res):
        out[i] = r
    return out


def _sampled_spread(setup: _Setup, spec_sets, keeps):
    """std (and ICE when kept) of fast-path PDs from brute force on a row sample."""
    if not setup.want_std and not any(keeps):
        return [None] * len(spec_sets)  # averages only were asked for
    if any(keeps) and setup.ice_rows is None:
        rows = np.arange(setup.frame.n_rows)  # every row's ICE curve was asked for
    else:
        rows = setup.ice_rows if setup.ice_rows is not None else setup.std_sample()
    if rows is None or len(rows) == 0:
        return [None] * len(spec_sets)
    sub = setup.frame.take_rows(rows)
    w = None if setup.sample_weight is None else setup.sample_weight[rows]
    res = brute_force_many(setup.adapter, sub, spec_sets, sample_weight=w, keep_individual=keeps,
                           max_batch_bytes=setup.max_batch_bytes)
    return [(r, rows) for r in res]


def _tree_result(setup: _Setup, specs, average, std, individual, ice_rows, note) -> PDResult:
    from .engine import density_counts

    w = setup.weights
    total = float(w.sum())
    if ice_rows is not None and setup.ice_rows is None and len(ice_rows) == setup.frame.n_rows:
        ice_rows = None  # every row's curve, in row order
    return PDResult(
        features=tuple(s.name for s in specs), kinds=tuple(s.kind for s in specs), grid=tuple(s.grid for s in specs),
        average=average, individual=individual, std=std, stderr=std * (np.sqrt(float((w * w).sum())) / total),
        counts=density_counts(setup.frame, specs, setup.nearest), targets=setup.adapter.targets, response=setup.adapter.response,
        centered=False, n_rows=setup.frame.n_rows, total_weight=total, n_missing=tuple(s.n_missing for s in specs),
        ordered=tuple(s.ordered for s in specs), ice_rows=ice_rows, method="tree",
        notes=tuple(s.note for s in specs if s.note) + (note,),
    )


def _recursion_result(setup: _Setup, specs) -> PDResult:
    """scikit-learn's method='recursion' (training-weighted paths): a labelled alternative, not brute force."""
    from sklearn.inspection import partial_dependence as sk_pd

    from .engine import density_counts

    feats = [setup.frame.keys[s.position] for s in specs]
    custom = {k: s.grid for k, s in zip(feats, specs)}
    try:
        res = sk_pd(setup.adapter.model, setup.frame.data, feats, custom_values=custom, method="recursion",
                    kind="average")
    except (ValueError, TypeError) as exc:  # scikit-learn refuses the estimator or the data for recursion
        raise InputError(f"method='recursion' failed: {type(exc).__name__}: {str(exc).rstrip('.')}.") from None
    avg = np.asarray(res["average"], dtype=float)
    if setup.adapter.columns is not None and avg.shape[0] > len(setup.adapter.targets):
        avg = avg[setup.adapter.columns]
    nan = np.full(avg.shape, np.nan)
    return PDResult(
        features=tuple(s.name for s in specs), kinds=tuple(s.kind for s in specs), grid=tuple(s.grid for s in specs),
        average=avg, individual=None, std=nan, stderr=nan, counts=density_counts(setup.frame, specs, setup.nearest),
        targets=setup.adapter.targets, response=setup.adapter.response, centered=False, n_rows=setup.frame.n_rows,
        total_weight=float(setup.weights.sum()), n_missing=tuple(s.n_missing for s in specs),
        ordered=tuple(s.ordered for s in specs), method="recursion",
        notes=("scikit-learn's recursion method: weighted by the training data's paths, not the background rows; "
               "it differs from brute force when features are correlated.",),
    )


def _groups(setup: _Setup, jobs, n_workers: int, distributed: bool = False):
    """Consecutive feature sets packed so each group fills about one model call.

    Brute force: the groups never depend on the number of workers (``n_workers``
    is not used to cut them): every model call then holds the same rows
    whatever ``n_jobs`` or the scheduler, so results are identical to the last
    bit.  Large jobs are cut into at least ~8 groups so several workers share
    them.  On the tree path each feature set's result is computed on its own
    (a group only shares the kernel's per-row tables, 1D ICE and leaf codes,
    which every group builds for all rows), so the groups are cut for speed:
    run here, consecutive feature sets go in one group, except that the ICE
    curves kept by one group stay within ``max_batch_mb``; on a cluster, one
    group per worker, since every further group would rebuild those tables
    (measured: 7 groups of 2 features took 3x the time of one group).
    """
    if setup.tree_plan() is not None and not setup.centered:
        # the tree path answers many feature sets in one compiled call: a few large groups
        if distributed:
            per = max(1, -(-len(jobs) // max(1, n_workers)))
            return [jobs[i:i + per] for i in range(0, len(jobs), per)]
        n_keep = setup.frame.n_rows if setup.ice_rows is None else len(setup.ice_rows)
        per_row = 8.0 * max(1, len(setup.adapter.targets or ())) * n_keep
        groups: list = []
        filled = 0.0
        for job in jobs:  # in order; a new group where keeping changes or the kept curves fill the budget
            size = per_row * int(np.prod([setup.spec(p).size for p in job[0]])) if job[1] else 0.0
            if not groups or groups[-1][-1][1] != job[1] or (job[1] and filled + size > setup.max_batch_bytes):
                groups.append([])
                filled = 0.0
            groups[-1].append(job)
            filled += size
        return groups
    sizes = [augmented_rows(setup.frame, [setup.spec(p) for p in pos]) for pos, _ in jobs]
    target = rows_per_batch(setup.frame, len(setup.adapter.targets), setup.max_batch_bytes)
    target = max(1, min(target, sum(sizes) // 8))
    groups, current, filled = [], [], 0
    for job, size in zip(jobs, sizes):
        if current and filled + size > target:
            groups.append(current)
            current, filled = [], 0
        current.append(job)
        filled += size
    if current:
        groups.append(current)
    return groups


def _n_workers(n_jobs) -> int:
    if n_jobs is None:
        return 1
    from joblib import cpu_count

    return cpu_count() if n_jobs < 0 else max(1, int(n_jobs))


def _execute(setup: _Setup, jobs: list[tuple[tuple[int, ...], bool]], n_jobs, progress, desc,
             scheduler=None) -> list[PDResult]:
    for positions, _ in jobs:  # build every grid up front so grid errors surface before the work
        for p in positions:
            setup.spec(p)
    scheduler = scheduler_of(setup.frame, scheduler)
    if scheduler is not None:
        from .distributed import dask_workers

        workers = dask_workers(scheduler)
    else:
        workers = _n_workers(n_jobs)
    plan = setup.tree_plan()  # once, before the work is shared out
    if plan is not None and not setup.centered:
        if scheduler is not None and plan.forest is not None:
            # on a cluster the trees' check runs on the workers' row partitions (rows sent once, and kept there for
            # the work): the calling process runs no compiled kernel
            from .tree.parts import check_on_dask

            check_on_dask(plan, setup.frame, None, scheduler)
        try:
            # the per-row kernel and its check against the model, once; leaf counts only when the work needs no
            # row's own values (averages only) or the kernel does not apply
            plan.prepare(setup.weights, rows=setup.want_std or any(keep for _, keep in jobs))
        except TreePathUnavailable as exc:
            setup.tree_unavailable = str(exc)
            setup._plan = None
            if setup.method == "tree":
                raise InputError(f"method='tree' does not apply: {exc}.") from None
    if setup.tree_plan() is None or setup.centered:
        blocks = setup.block_plan()  # the preprocessing once, before the work is shared out
        if blocks is not None:  # every set's block values and probe check in one call each, not one per group
            blocks.check_many([[setup.spec(p) for p in positions] for positions, _ in jobs])
    if scheduler is not None and splits_by_rows(setup, jobs):
        return _on_row_partitions(setup, jobs, workers, scheduler, progress, desc)
    groups = _groups(setup, jobs, workers, distributed=scheduler is not None)
    bar = progress_bar(total=len(jobs), desc=desc, enabled=progress)
    out: list[PDResult] = []
    try:
        if scheduler is not None:
            from .distributed import run_on_dask

            for group_result in run_on_dask(scheduler, _run_group, setup, groups, bar.update):
                out.extend(group_result)
        elif workers == 1 or len(groups) == 1 or (setup.tree_plan() is not None and not setup.centered):
            # the tree path's compiled kernels already use every CPU (threads); processes would only copy data
            for group in groups:
                out.extend(_run_group(setup, group))
                bar.update(len(group))
        else:
            from joblib import Parallel, delayed

            parallel = Parallel(n_jobs=n_jobs, return_as="generator")
            for group_result in parallel(delayed(_run_group)(setup, group) for group in groups):
                out.extend(group_result)
                bar.update(len(group_result))
    finally:
        bar.close()
    return out


def run_partition(part: _Setup, jobs) -> list[PDResult]:
    """Every job's PD on one row partition (:meth:`_Setup.for_rows`), by the local code path.  A partition whose
    weights are all 0 has no average of its own (NaN, left out of :func:`autopdp.pd.rows.merge`)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return [r for group in _groups(part, jobs, 1) for r in _run_group(part, group)]


def _on_row_partitions(setup: _Setup, jobs, workers: int, scheduler, progress, desc) -> list[PDResult]:
    """Every job on one row partition per Dask worker, merged (:mod:`autopdp.pd.rows`)."""
    from .distributed import run_partitions_on_dask

    parts, bounds = shells(setup, jobs, workers)
    bar = progress_bar(total=len(jobs), desc=desc, enabled=progress)
    try:
        per_partition = run_partitions_on_dask(scheduler, run_partition, parts, [jobs] * len(parts))
        bar.update(len(jobs))
    finally:
        bar.close()
    return merge(setup, per_partition, bounds)


@accepts_old_keywords(PDOptions())
@takes_dask_frames
def partial_dependence(
    estimator,
    X,
    features,
    *,
    sample_weight=None,
    categorical_features=None,
    response_method="auto",
    percentiles=(0.05, 0.95),
    grid_resolution=20,
    custom_values=None,
    method="auto",
    kind="both",
    options: PDOptions | None = None,
) -> list[PDResult]:
    """Partial dependence and ICE of a fitted model for 1D and 2D feature sets.

    The parameters scikit-learn's :func:`sklearn.inspection.partial_dependence` has carry its names; the rest
    are in ``options`` (:class:`autopdp.PDOptions`).  The names used before (``model``, ``response`` and each
    option on its own, e.g. ``subsample=100``) still work for one release, with a ``DeprecationWarning``.

    Parameters
    ----------
    estimator : estimator or callable
        A fitted scikit-learn estimator or Pipeline, or a function ``f(X)``
        returning one prediction (or one row of outputs) per row.
    X : DataFrame or ndarray of shape (n_rows, n_features), or a dask DataFrame
        Background data; the model is called with the same container type,
        column order and dtypes.  A dask DataFrame's partitions are computed
        and kept on its cluster's workers (:mod:`autopdp.pd.daskframe`).
    features : list
        Items are a column name/index (1D) or a pair of them (2D).
    sample_weight : array of shape (n_rows,), optional
        Row weights for the averages (for a dask DataFrame: a column's name or
        a dask Series of its partitions).
    categorical_features : list or bool mask, optional
        Extra columns to treat as categorical (non-numeric dtypes always are).
    response_method : {"auto", "predict_proba", "decision_function", "predict"}
        What to explain; see :mod:`autopdp.pd.response`.  ``"predict"`` on a
        classifier gives the crisp-label PD (class proportions).
    percentiles : (float, float), default (0.05, 0.95)
        Range of the numeric grids, as probabilities.
    grid_resolution : int, default 20
        Grid points per numeric feature (fewer when it has fewer unique values).
    custom_values : dict, optional
        ``{feature: values}``: the grid of that feature (categorical: a subset
        of levels).
    method : {"auto", "brute", "tree", "recursion"}
        ``"brute"``: predict every augmented row.  ``"tree"``: the exact tree
        path (:mod:`autopdp.pd.tree.exact_pd` leaf counting, :mod:`autopdp.pd.tree.ice`
        per-row kernel: same values, ICE curves and std as brute force on
        every row, probabilities of boosted classifiers included, without
        predicting; an error when it does not apply).  ``"auto"`` (default):
        the tree path when it applies, else brute force.  ``"recursion"``:
        scikit-learn's recursion method, a different (training-weighted)
        estimator, labelled as such.  ``PDResult.method`` says which was used.
    kind : {"both", "average", "individual"}
        ``"average"`` drops the ICE curves from the result.
    options : PDOptions, optional
        The target class, ICE sample (``subsample``, ``random_state``), parallel jobs, grids' placement, memory
        cap, progress bar, Dask scheduler and the rest (:class:`autopdp.PDOptions`).

    Returns
    -------
    list of PDResult
        One result per item of ``features``, in order.
    """
    options = _options(options, PDOptions())
    setup = _Setup(
        estimator, X, response=response_method, grid_resolution=grid_resolution, percentiles=percentiles,
        custom_values=custom_values, categorical_features=categorical_features, sample_weight=sample_weight,
        kind=kind, method=method, options=options,
    )
    sets = _normalise_features(setup.frame, features)
    jobs = [(pos, setup.keep_individual) for pos in sets]
    return _execute(setup, jobs, options.n_jobs, options.progress, "partial dependence", scheduler=options.scheduler)


def _options(options, default: PDOptions) -> PDOptions:
    if options is None:
        return default
    if not isinstance(options, PDOptions):
        raise InputTypeError(f"options must be an autopdp.PDOptions, got {type(options).__name__}.")
    return options


#: :func:`compute_all`'s options when none are given: ICE curves of 1000 sampled rows, seed 0
COMPUTE_ALL_OPTIONS = PDOptions(subsample=1000, random_state=0)


@accepts_old_keywords(COMPUTE_ALL_OPTIONS)
@takes_dask_frames
def compute_all(
    estimator,
    X,
    *,
    features=None,
    pairs=True,
    sample_weight=None,
    categorical_features=None,
    response_method="auto",
    percentiles=(0.05, 0.95),
    grid_resolution=20,
    custom_values=None,
    method="auto",
    options: PDOptions | None = None,
) -> list[PDResult]:
    """Every 1D partial dependence and (``pairs=True``) every 2D one.

    The 1D results come first in column order, then the p(p-1)/2 pairs
    ``(i, j), i < j``.  ICE curves are kept for the 1D results (a sample of
    ``options.subsample`` rows; without ``options``, :data:`COMPUTE_ALL_OPTIONS`: 1000) and for 2D results
    only with ``options.ice_2d``; PD, std and stderr always use every row.

    ``features`` restricts the features considered (default: every column).
    ``options.grid_resolution_2d`` sets the grid of the 2D PDs (default:
    ``grid_resolution``).  Other parameters are those of
    :func:`partial_dependence`.  Feature sets run in parallel over ``options.n_jobs``
    joblib workers, with a progress bar on an interactive terminal.
    """
    options = _options(options, COMPUTE_ALL_OPTIONS)
    setup = _Setup(
        estimator, X, response=response_method, grid_resolution=grid_resolution, percentiles=percentiles,
        custom_values=custom_values, categorical_features=categorical_features, sample_weight=sample_weight,
        kind="both", method=method, options=options,
    )
    if features is None:
        positions = list(range(setup.frame.n_features))
    else:
        positions = [s[0] for s in _normalise_features(setup.frame, list(features))]
        positions = list(dict.fromkeys(positions))
    n_jobs, progress, scheduler = options.n_jobs, options.progress, options.scheduler
    jobs: list[tuple[tuple[int, ...], bool]] = [((p,), True) for p in positions]
    results_1d = _execute(setup, jobs, n_jobs, progress, "1D partial dependence", scheduler=scheduler)
    if not pairs or len(positions) < 2:
        return results_1d
    setup2 = setup
    if options.grid_resolution_2d is not None and options.grid_resolution_2d != grid_resolution:
        setup2 = setup.with_grid_resolution(options.grid_resolution_2d)
    jobs2 = [((a, b), bool(options.ice_2d)) for a, b in itertools.combinations(positions, 2)]
    return results_1d + _execute(setup2, jobs2, n_jobs, progress, "2D partial dependence", scheduler=scheduler)


def feature_grids(
    X, features, *, grid_resolution=20, percentiles=(0.05, 0.95), categorical_features=None, grid_method="quantile",
    integer_as_categorical=0, custom_values=None, max_levels=None,
) -> dict:
    """The grid and kind each feature would get, without computing anything.

    Returns ``{name: (kind, grid)}`` for the given feature names/indices.
    """
    _check_options(grid_resolution, percentiles, "both", grid_method, 1)
    frame = as_frame(X)
    mask = resolve_categorical(frame, categorical_features, integer_as_categorical)
    custom = {frame.position_of(k): v for k, v in (custom_values or {}).items()}
    out = {}
    for f in features:
        p = frame.position_of(f)
        spec = build_spec(
            frame, p, categorical=bool(mask[p]), grid_resolution=int(grid_resolution),
            percentiles=tuple(float(q) for q in percentiles), grid_method=grid_method, custom_values=custom.get(p),
            max_levels=max_levels,
        )
        out[spec.name] = (spec.kind, spec.grid)
    return out

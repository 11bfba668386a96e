"""``autopdp.audit``: data + model -> every PD -> scores -> ranking -> curated selection (the pipeline).

Each PD is computed once and shared by every utility.  The inputs are checked once at the entry
(:mod:`autopdp.auditing.validation`); the result, an :class:`Audit` (:mod:`autopdp.auditing.record`), is what the report
renders from and what ``to_json`` writes (:mod:`autopdp.io.results`).
"""

from __future__ import annotations

import contextvars
import datetime as _dt
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from ..config import AuditConfig
from ..pd.data import Frame, refuse_dask, sample_rows
from ..errors import InputError
from ..io.provenance import attach_provenance
from ..utils.progress import announce, say
from .summary import audit_metadata
from ..pd.options import keywords
from ..pd.partial_dependence import feature_grids, partial_dependence
from ..pd.distributed import resident_rows
from ..pd.tree.parts import check_on_dask
from ..pd.tree.fastpath import model_response, plan_tree_path, share_subset, shared_plans
from ..pd.selfcheck import self_check
from .notes import METHOD_NOTES, comparison_gaps, sample_note, gap_notes, level_notes, method_notes, na_notes, ood_note
from ..pd.link import log_predictions, model_link, with_surfaces
from ..pd.tree.exact_pd import TreePathUnavailable
from ..trust.checks import trust_scores
from ..scores.utilities import TRUST_IDS
from ..pd.result import PDResult
from ..scores.coverage import outside_grid
from ..findings.cohorts import cohort_column
from ..pd.refits import checked_train, refit_curves, refit_spec, run_refits
from ..scores.scoring import ScoringInputs, importance_table, interaction_table, pair_criteria, score_result
from ..scores.selection import intersection_scores, score_columns
from ..scores.spread import column_sd
from ..scores.failures import StageFailureWarning, collect_stage_failures
from .groups import apply_groups
from .late_stages import permutation_stage, regions_stage, tests_and_summary
from .record import Audit
from .validation import (_comparison_predictions, _Inputs, _predictions, _resolved, _validated_inputs,
                         check_part_frame, choose_pairs, dask_inputs, on_cluster, pair_limit)

__all__ = ["audit"]


# ---------------------------------------------------------------- audit
def _one_tree_plan(fn):
    """Run ``fn`` with one exact tree plan per model and data (see :func:`autopdp.pd.tree.fastpath.shared_plans`)."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with shared_plans():
            return fn(*args, **kwargs)

    return wrapper


@dataclass(frozen=True, eq=False)
class _PDs:
    """Stage 1's output: every PD of the model and of the comparison models."""

    res1: list
    res2: list
    comparisons: dict  # {name: PDs of that model on the same grids and rows}
    pairs: list
    frame_2d: Frame  # the rows the 2D PDs average over
    categorical: list | None  # the categorical features (from the 1D PDs)
    fast_2d: bool  # the exact tree path applies
    tree_reason: str  # why it does not ("" when it does)
    notes: tuple
    margin: Any = None  # the model's margin for the ICE-variance criterion (autopdp.pd.margin.MarginLink) or None
    weights_2d: Any = None  # the sample weights of frame_2d's rows (None: unweighted)
    scheduler: Any = None  # the Dask scheduler the PDs ran on (None: here); the PD outside the grid runs there too

    @property
    def results(self) -> list:
        return list(self.res1) + list(self.res2)


def _tree_reason(model, adapter, frame, config: AuditConfig, weights=None, scheduler=None) -> str:
    """Why the exact tree path does not apply to this model ("" when it does).  On Dask the trees' check against
    the model's predictions runs on the workers' row partitions (:func:`autopdp.pd.tree.parts.check_on_dask`)."""
    if config.method not in ("auto", "tree"):
        return f"method={config.method!r}"
    if config.groups:
        return ("with feature groups (groups, --group) the model is called through a Pipeline that writes its one-hot "
                "columns back; the tree path reads the model's own columns")
    try:
        # on Dask the rows' model matrix is made on the workers, from their rows (rows_elsewhere)
        plan = plan_tree_path(model, adapter, frame, config.max_batch_mb * 1e6, rows_elsewhere=scheduler is not None)
        if scheduler is not None:
            check_on_dask(plan, frame, weights, scheduler)
        plan.prepare(np.ones(frame.n_rows), rows=scheduler is not None)
    except TreePathUnavailable as exc:
        return str(exc)
    return ""


def _comparison_pds(compare: dict, progress, kw_1d: dict, kw_2d: dict | None) -> dict:
    """Each comparison model's 1D PDs (``kw_1d``) and 2D PDs (``kw_2d``, None without pairs), on the audited
    model's grids and rows."""
    comparisons: dict[str, tuple] = {}
    for name, other in compare.items():
        say(f"partial dependence of comparison model {name!r}", progress)
        try:
            c1 = partial_dependence(other, **keywords(**kw_1d))
            c2 = partial_dependence(other, **keywords(**kw_2d)) if kw_2d is not None else []
        except (ValueError, TypeError) as exc:
            raise InputError(f"comparison model {name!r}: {exc}") from exc
        comparisons[name] = tuple(c1) + tuple(c2)
    return comparisons


def _grids_2d(frame, features, categorical, config: AuditConfig) -> dict:
    """The 2D PDs' grids, from all rows, as custom values."""
    grids = feature_grids(
        frame, features, grid_resolution=config.grid_resolution_2d, percentiles=config.percentiles,
        categorical_features=categorical, grid_method=config.grid_method,
        integer_as_categorical=config.integer_as_categorical, max_levels=config.max_levels,
    )
    return {k: list(g) if kind == "categorical" else g for k, (kind, g) in grids.items()}


def _partial_dependences(model, data: _Inputs, config: AuditConfig, compare: dict, *, n_jobs, random_state, progress,
                         scheduler, timings: dict) -> _PDs:
    """Stage 1: the 1D PDs, the chosen pairs' 2D PDs (all rows on the exact tree path, else
    ``max_rows_2d`` sampled rows) and the comparison models' PDs on the same grids and rows."""
    frame, features, names, adapter, rng = data.frame, data.features, data.names, data.adapter, data.rng
    weights = data.weights
    notes: list[str] = []
    common = dict(
        response=config.response, target=config.target, percentiles=config.percentiles,
        grid_method=config.grid_method, integer_as_categorical=config.integer_as_categorical,
        max_batch_mb=config.max_batch_mb, progress=progress, method=config.method, std_rows=config.std_rows,
        scheduler=scheduler,
    )
    t0 = time.perf_counter()
    tree_reason = _tree_reason(model, adapter, frame, config, weights, scheduler)
    fast_2d = not tree_reason
    timings["tree_check"] = time.perf_counter() - t0  # the trees read off the model and checked on every row
    # ---- 1D PDs
    t0 = time.perf_counter()
    say(f"1D partial dependence of {len(features)} features", progress)
    res1 = partial_dependence(model, frame, features, **keywords(
        grid_resolution=config.grid_resolution, kind="both",
        categorical_features=config.categorical_features, subsample=config.subsample,
        random_state=random_state, n_jobs=n_jobs, max_levels=config.max_levels, sample_weight=weights, **common,
    ))
    for r in res1:
        notes.extend(n for n in r.notes if not n.startswith(METHOD_NOTES))
    categorical = [r.features[0] for r in res1 if r.kinds[0] == "categorical"] or None
    custom_1d = {r.features[0]: list(r.grid[0]) if r.kinds[0] == "categorical" else r.grid[0] for r in res1}
    timings["pd_1d"] = time.perf_counter() - t0
    margin = _margin(model, data, config, res1, common, n_jobs, timings, fast_2d)

    # ---- 2D PDs (on a row subsample, grids from all rows)
    res2: list[PDResult] = []
    # brute force: max_rows_2d rows; the tree path: every row up to max_rows_2d_tree (its cost grows with the rows)
    cap_key, cap = ("max_rows_2d_tree", config.max_rows_2d_tree) if fast_2d else ("max_rows_2d", config.max_rows_2d)
    limit = pair_limit(config, frame.n_rows if cap is None else min(cap, frame.n_rows), config.grid_resolution_2d ** 2)
    pairs = choose_pairs(config.pairs, features, res1, names, notes, limit)
    rows_2d = sample_rows(frame.n_rows, cap, rng) if pairs else None
    frame_2d = frame if rows_2d is None else frame.take_rows(rows_2d)
    if rows_2d is not None and fast_2d:
        share_subset(model, frame, rows_2d, frame_2d)  # the trees and their check carry over to the sampled rows
    weights_2d = None if weights is None else (weights if rows_2d is None else weights[rows_2d])
    custom_2d = {}
    t0 = time.perf_counter()
    if pairs:
        custom_2d = _grids_2d(frame, features, categorical, config)
        say(f"2D partial dependence of {len(pairs)} pairs", progress)
        # ICE surfaces of a few sampled rows give the noise tests the covariance of each 2D PD's cells;
        # they are dropped once the tests ran (_without_2d_ice)
        res2 = partial_dependence(model, frame_2d, pairs, **keywords(
            grid_resolution=config.grid_resolution_2d, kind="both",
            subsample=min(config.std_rows, frame_2d.n_rows) if config.std_rows else None,
            categorical_features=categorical, custom_values=custom_2d, n_jobs=n_jobs, random_state=random_state,
            std=True, sample_weight=weights_2d, **common,
        ))
        if rows_2d is not None:
            notes.append(sample_note(res2, frame.n_rows, frame_2d.n_rows, cap_key, fast_2d))
    timings["pd_2d"] = time.perf_counter() - t0
    margin = _link_2d(margin, model, data, config, res2, frame_2d, weights_2d, common, n_jobs, timings)
    # how each PD was computed, from its own result (method, rows, ICE rows, std), never one claim for the run
    notes[:0] = method_notes(res1, full_rows=frame.n_rows) + method_notes(res2, full_rows=frame.n_rows)
    if tree_reason and config.method == "auto":
        notes.insert(0, f"The exact tree path does not apply to this model ({tree_reason}).")

    # ---- comparison models on the same grids and rows
    t0 = time.perf_counter()
    # ICE curves on the same rows as the audited model's: the similarity test pairs them row by row
    comparisons = _comparison_pds(compare, progress, dict(
        X=frame, features=features, kind="both", categorical_features=categorical, custom_values=custom_1d,
        n_jobs=n_jobs, sample_weight=weights, subsample=config.subsample, random_state=random_state, **common,
    ), dict(
        X=frame_2d, features=pairs, kind="average", categorical_features=categorical, custom_values=custom_2d,
        n_jobs=n_jobs, sample_weight=weights_2d, **common,
    ) if pairs else None)
    timings["comparisons"] = time.perf_counter() - t0
    return _PDs(res1=res1, res2=res2, comparisons=comparisons, pairs=pairs, frame_2d=frame_2d, categorical=categorical,
                fast_2d=fast_2d, tree_reason=tree_reason, notes=tuple(notes), margin=margin, weights_2d=weights_2d,
                scheduler=scheduler)


def _link_kwargs(config: AuditConfig, common: dict, n_jobs) -> dict:
    keep = ("percentiles", "grid_method", "integer_as_categorical", "max_batch_mb", "scheduler")
    pd_kwargs = {k: common[k] for k in keep if k in common}
    pd_kwargs.update(method="brute" if config.method == "brute" else "auto", n_jobs=n_jobs, progress=False)
    return pd_kwargs


def _margin(model, data: _Inputs, config: AuditConfig, res1, common: dict, n_jobs, timings: dict, tree: bool):
    """The model's link scale (:mod:`autopdp.pd.link`: the margin or log-odds of a classifier's probabilities,
    the log of a log-link regressor's predictions) on the 1D PDs' ICE rows and grids, for the structure
    criteria (ICE variance, interaction); None when they read the response.  ``tree``: the exact tree path
    applies (on Dask the margin of every row is computed where the PDs' row partitions, keyed by its plan, are)."""
    if config.ice_variance_scale != "link":
        return None
    t0 = time.perf_counter()
    plan = plan_tree_path(model, data.adapter, data.frame, config.max_batch_mb * 1e6) if tree else None
    margin = model_link(model, data.adapter, data.frame, res1, _link_kwargs(config, common, n_jobs),
                        audit_rows=(data.weights, plan))
    if margin is not None and margin.curves:
        timings["margin_ice"] = time.perf_counter() - t0
    return margin


def _link_2d(margin, model, data: _Inputs, config, res2, frame_2d, weights_2d, common, n_jobs, timings):
    """``margin`` with the 2D PDs on the link scale (:func:`autopdp.pd.link.with_surfaces`)."""
    if margin is None or not res2:
        return margin
    t0 = time.perf_counter()
    margin = with_surfaces(margin, model, data.adapter, frame_2d, res2, _link_kwargs(config, common, n_jobs),
                           weights_2d)
    timings["link_2d"] = time.perf_counter() - t0
    return margin


#: the per-PD notes of stage 1 on how a PD was computed; the audit words them per group of PDs (_method_notes)
def _without_2d_ice(pds: _PDs) -> _PDs:
    """The PDs with the 2D results' sampled ICE surfaces dropped (only the noise tests read them)."""
    if not any(r.individual is not None for r in pds.res2):
        return pds
    res2 = [dataclasses.replace(r, individual=None, ice_rows=None) for r in pds.res2]
    return dataclasses.replace(pds, res2=res2)


@dataclass(frozen=True, eq=False)
class _Scored:
    """Stage 2's output: every score of every PD, and what the later stages need of it."""

    utility_scores: dict  # {features: {utility id: UtilityScore}}, trust scores included
    importance: pd.DataFrame
    interaction: pd.DataFrame
    criteria: dict  # {pair: {criterion: value}}: the 2D selection criteria
    surrogate: Any  # the additive surrogate, or None
    inputs: ScoringInputs  # what the scores read (the findings' noise tests read it too)
    notes: tuple


def _scores_and_trust(model, data: _Inputs, pds: _PDs, config: AuditConfig, *, random_state, progress,
                      timings: dict, compare: dict | None = None) -> _Scored:
    """Stage 2: the utilities, importance, interaction and 2D criteria of every PD, and the trust checks."""
    frame, adapter, y_pd, weights = data.frame, data.adapter, data.y_pd, data.weights
    res1, res2, comparisons = pds.res1, pds.res2, pds.comparisons
    notes: list[str] = []
    # ---- scores and trust checks, side by side: both read only the PD results.  The scores (numpy,
    # cvxpy: mostly one core) run on a second thread while the trust checks, which call the model
    # and run compiled kernels that release the GIL, keep this thread.
    t0 = time.perf_counter()
    results = pds.results
    # the model's response on every row: predicted once, when the tree path checked its trees against it
    known = model_response(model, adapter, frame)
    predictions = _predictions(adapter, frame) if known is None else known
    inputs = ScoringInputs(
        frame=frame, y=y_pd, is_classifier=adapter.is_classifier,
        prediction_std=column_sd(predictions), config=config,  # in row chunks: no row-long temporary
        comparisons={k: {r.features: r for r in v} for k, v in comparisons.items()},
        sample_weight=weights, predictions=predictions, link=log_predictions(pds.margin, predictions),
        comparison_predictions=_comparison_predictions(data, compare or {}, config, predictions.shape),
    )

    def scoring_stage():
        started_scoring = time.perf_counter()
        with announce(f"scoring {len(results)} PDs with {len(config.utilities)} utilities", progress):
            inputs.prepare_tables(results)  # every grid's cell table: one pass over the rows
            by_pd = {r.features: score_result(inputs, r) for r in results}
            surfaces = inputs.link.surfaces if inputs.link is not None else {}
            imp = importance_table(res1)
            inter = interaction_table([surfaces[r.features].result if r.features in surfaces else r for r in res2])
            out = by_pd, imp, inter, pair_criteria(inputs, res2, imp, inter)
        timings["scoring"] = time.perf_counter() - started_scoring
        return out

    with ThreadPoolExecutor(max_workers=1) as pool:
        scoring = pool.submit(contextvars.copy_context().run, scoring_stage)  # the caller's context: its
        # interface (command line or Python) decides how the stage reports progress
        with announce("trust checks (out-of-distribution share, ALE, StratPD, surrogate)", progress):
            trust, surrogate, _ = trust_scores(model, adapter, frame, y_pd, results, config, predictions=predictions,
                                               random_state=random_state, frame_2d=pds.frame_2d,
                                               scheduler=pds.scheduler)
        timings["trust"] = time.perf_counter() - t0
        utility_scores, importance, interaction, criteria = scoring.result()
    for key, by_id in trust.items():
        utility_scores[key].update(by_id)
    notes.extend(ood_note(trust, frame.n_rows))
    if surrogate is not None:
        for r in res2:
            ia, ib = (surrogate.importance.get(f, np.nan) for f in r.features)
            criteria[r.features]["surrogate_importance"] = float(np.sqrt(ia * ib))
        targets = list(adapter.targets)
        of = f"predictions for class {targets[0]} only" if len(targets) > 1 else "predictions"
        notes.append(
            f"Surrogate (additive spline model of the model's {of}) fidelity R^2 = {surrogate.fidelity:.3f}"
            + ("; its importances say little about a model this far from additive." if surrogate.fidelity < 0.5 else ".")
        )
    return _Scored(utility_scores=utility_scores, importance=importance, interaction=interaction, criteria=criteria,
                   surrogate=surrogate, inputs=inputs, notes=tuple(notes))


def _score_table(results: list, scored: _Scored, config: AuditConfig) -> pd.DataFrame:
    """Stage 3: one row per PD with every score and criterion, and the 2D intersection score."""
    utility_scores, importance, criteria, surrogate = (scored.utility_scores, scored.importance, scored.criteria,
                                                       scored.surrogate)
    imp_max = importance.max(axis=1) if not importance.empty else pd.Series(dtype=float)
    records = []
    for r in results:
        row = {"features": r.features, "kind": f"{r.ndim}d"}
        row.update({uid: s.value for uid, s in utility_scores[r.features].items()})
        if r.ndim == 1:
            row["importance"] = float(imp_max.get(r.features[0], np.nan))
            if surrogate is not None:
                row["surrogate_importance"] = float(surrogate.importance.get(r.features[0], np.nan))
        else:
            row.update(criteria[r.features])
        records.append(row)
    scores = pd.DataFrame.from_records(records)
    for col in ("importance", "correlation", "interaction", "surrogate_importance"):
        if col not in scores.columns:
            scores[col] = np.nan
    two = scores["kind"] == "2d"
    pct_cols = [c for c in score_columns(scores)
                if c not in ("intersection", *TRUST_IDS) and scores.loc[two, c].notna().any()]
    inter_input = scores.loc[two, pct_cols].astype(float)
    if "ice_variance" in inter_input and config.ice_variance == "low":
        inter_input["ice_variance"] = -inter_input["ice_variance"]
    scores["intersection"] = np.nan
    if two.any():
        scores.loc[two, "intersection"] = intersection_scores(inter_input, pct_cols).to_numpy()
    tail = ["importance", "correlation", "interaction", "intersection", "surrogate_importance"]
    ordered = ["features", "kind"] + [c for c in scores.columns if c not in ("features", "kind", *tail)]
    scores = scores[ordered + tail]
    return scores


def _refits(model, train, data: _Inputs, pds: _PDs, config: AuditConfig, *, n_jobs, random_state, scheduler,
            progress, timings: dict):
    """Stage 1b (issue 31): ``config.refits`` refits of the learner and their PDs on the audit's grids and ICE rows."""
    t0 = time.perf_counter()
    link_kwargs = _link_kwargs(config, dict(percentiles=config.percentiles, grid_method=config.grid_method,
                                            integer_as_categorical=config.integer_as_categorical,
                                            max_batch_mb=config.max_batch_mb), n_jobs) if pds.margin is not None else None
    spec = refit_spec(config, data.frame, data.features, pds.res1, pds.res2, pds.frame_2d, data.weights,
                      pds.weights_2d, pds.categorical, random_state, data.adapter, link_kwargs)
    say(f"{config.refits} refits of the learner", progress)
    refits = run_refits(model, train, config.refits, spec, pds.results, random_state=random_state, n_jobs=n_jobs,
                        scheduler=scheduler, progress=progress)
    timings["refits"] = time.perf_counter() - t0
    timings["refit_fits"] = refits.fit_seconds
    return refits


def audit(model, X, y=None, *, compare=None, config=None, n_jobs=None, random_state=0, progress=None,
          scheduler=None, sample_weight=None, train=None, report=None) -> Audit:
    """Compute every 1D and 2D PD of ``model`` on ``X``, score, rank and select them.

    Parameters
    ----------
    model : estimator or callable
        A fitted scikit-learn estimator/Pipeline or ``f(X)``.
    X : DataFrame, ndarray, dask DataFrame or PartFrame
        The data the PDs average over.  A :class:`~autopdp.pd.partframe.PartFrame`
        (:func:`~autopdp.pd.partframe.parquet_frame`: a Parquet folder read by a Dask cluster's workers) keeps its
        rows on the workers; its weight column is the sample weights.  A ``dask.dataframe.DataFrame`` becomes one
        (:mod:`autopdp.pd.daskframe`: each partition computed and kept on a worker of ``scheduler`` or of the
        default client); its features are its columns but the target's and the weights'.
    y : array-like or str, optional
        Observed target, for the ``incidence`` utility; for a PartFrame or a dask DataFrame, the name of a column;
        for a dask DataFrame also a dask Series of the same partitions (matched to them by position).  Such a
        target stays with the rows on the workers.
    compare : dict, optional
        ``{name: fitted model}``: comparison models for ``similarity:<name>``.
    config : AuditConfig or dict, optional
    n_jobs : int, optional
        joblib workers for the PD computations.
    random_state : int
        Seed for row subsampling (same seed, same audit).
    progress : bool, optional
        Progress bars (default: only on an interactive terminal).
    scheduler : str or distributed.Client, optional
        Compute the PDs on a Dask cluster (``"tcp://host:8786"``).
    sample_weight : array-like of shape (n_rows,), optional
        Row weights (e.g. survey weights): every PD is the weighted mean over
        rows, and the utilities' density weights and the observed incidence
        are weighted the same way.  The trust checks (OOD share, ALE,
        StratPD, surrogate) stay unweighted; the report says so.  For a dask
        DataFrame: one of its columns' names, or a dask Series as ``y``.
    train : tuple (X_train, y_train[, w_train]), optional
        The training data, for ``config.refits`` refits of the model's learner
        on half-samples of it (:mod:`autopdp.pd.refits`): every finding is then
        tested at the learner level (:mod:`autopdp.findings.robustness`).
    report : ReportOptions or dict, optional
        What the report's cover says (title, model and dataset names, reviewer, sign-off); no number
        depends on it.  A dict ``config`` may carry these keys too, as a config file does.

    Returns
    -------
    Audit

    Notes
    -----
    The stages, in order: :func:`_validated_inputs` (X validated once into the frame every stage
    reads), :func:`_partial_dependences` (1D, 2D and comparison models' PDs),
    :func:`_scores_and_trust` (utilities, importance, 2D criteria and the trust checks, side by
    side), :func:`_score_table`, the findings' noise tests (:func:`autopdp.findings.evidence.assess`),
    PD outside the grid (:func:`autopdp.scores.coverage.outside_grid`), then the data summary and
    :func:`autopdp.auditing.summary.audit_metadata`.
    """
    X, y, sample_weight, scheduler, own = dask_inputs(X, y, sample_weight, scheduler)
    try:
        return _audit(model, X, y, compare=compare, config=config, n_jobs=n_jobs, random_state=random_state,
                      progress=progress, scheduler=scheduler, sample_weight=sample_weight, train=train, report=report)
    finally:
        if own is not None:
            own.close()


@_one_tree_plan
def _audit(model, X, y, *, compare, config, n_jobs, random_state, progress, scheduler, sample_weight, train,
           report) -> Audit:
    """:func:`audit` of inputs that are not dask collections (a dask DataFrame is a PartFrame by now)."""
    started = time.perf_counter()
    from ..io.mlflow_models import model_argument

    for value, name in ((X, "X"), (y, "y"), (sample_weight, "sample_weight")):
        refuse_dask(value, name)  # before anything reads them (groups, cohorts): numpy would collect them whole

    model, source = model_argument(model, X)  # an MLflow URI, or a model autopdp.load_model read from one
    config, compare, report = _resolved(config, compare, report)
    check_part_frame(X, config)
    model, X, compare, train, grouped = apply_groups(config.groups, model, X, compare, train)
    train = checked_train(train, config.refits, X)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    column, labels, X = cohort_column(model, X, config.cohort)  # config.cohort: cohorts of a column (--cohort)
    data = _validated_inputs(model, X, y, sample_weight, config, compare, random_state)
    data = dataclasses.replace(data, notes=(*grouped, *data.notes), cohort=None if column is None else
                               (column, labels if data.rows is None else labels[data.rows]))
    timings["validate"] = time.perf_counter() - t0
    data = on_cluster(data, scheduler)  # on Dask every per-row pass of the audit's rows runs on the workers
    with resident_rows(scheduler):  # on Dask: each row partition sent once, kept on a worker until the audit ends
        result = _from_pds(model, data, config, compare, train, dict(
            n_jobs=n_jobs, random_state=random_state, progress=progress, scheduler=scheduler, timings=timings,
            started=started, sample_weight=sample_weight))
    result = dataclasses.replace(result, report=report)
    return result if source is None else attach_provenance(result, inputs={"model": source.record})


def _from_pds(model, data: _Inputs, config: AuditConfig, compare, train, run: dict) -> Audit:
    """:func:`audit` from the PDs on: the PDs, their self-check, the refits and :func:`_after_pds`."""
    n_jobs, random_state, progress, scheduler, timings = (run["n_jobs"], run["random_state"], run["progress"],
                                                          run["scheduler"], run["timings"])
    pds = _partial_dependences(model, data, config, compare, n_jobs=n_jobs, random_state=random_state,
                               progress=progress, scheduler=scheduler, timings=timings)
    t0 = time.perf_counter()
    checked = self_check(data.adapter, data.frame, pds.res1, weights=data.weights, frame_2d=pds.frame_2d,
                         res2=pds.res2, seed=random_state,
                         own=model_response(model, data.adapter, data.frame))
    timings["self_check"] = time.perf_counter() - t0
    refits = _refits(model, train, data, pds, config, n_jobs=n_jobs, random_state=random_state, scheduler=scheduler,
                     progress=progress, timings=timings) if config.refits else None
    # From here on the work is many small linear-algebra calls (SVDs of ICE rows, isotonic and bounded fits) on two
    # threads at once (scores beside trust checks): BLAS's own threads would spin against them (measured on the
    # demo with refits: the learner-level tests took 102 s with BLAS's threads, 13 s without), so BLAS runs one
    # thread per caller until the audit returns.
    with threadpool_limits(limits=1, user_api="blas"):
        return _after_pds(model, data, pds, refits, config, random_state=random_state, progress=progress,
                          timings=timings, compare=compare, started=run["started"],
                          sample_weight=run["sample_weight"], self_checked=checked)


def _after_pds(model, data: _Inputs, pds: _PDs, refits, config: AuditConfig, *, random_state, progress, timings,
               compare, started, sample_weight, self_checked=None) -> Audit:
    """Stages 2 to 4 of :func:`audit`: scores and trust checks, the score table, the noise and learner-level
    tests, PD outside the grid, and the result."""
    scored = _scores_and_trust(model, data, pds, config, random_state=random_state, progress=progress,
                               timings=timings, compare=compare)
    stage_failures = collect_stage_failures(scored.utility_scores)
    if stage_failures:
        warnings.warn(
            f"{len(stage_failures)} score(s) failed with an unexpected error (a bug, not an expected n/a): "
            f"{stage_failures[0].text}{' ...' if len(stage_failures) > 1 else ''}; see Audit.stage_failures.",
            StageFailureWarning, stacklevel=2,
        )
    scores = _score_table(pds.results, scored, config)

    def outside_stage():  # the model's PD beyond the grids' ends: the tree kernels' threads or the model's own
        t0 = time.perf_counter()
        out = outside_grid(
            model, data.frame, pds.res1, prediction_std=scored.inputs.prediction_std, materiality=config.materiality,
            pd_kwargs=dict(response=config.response, target=config.target, method=config.method, std_rows=0,
                           categorical_features=pds.categorical, max_batch_mb=config.max_batch_mb,
                           sample_weight=data.weights, **({} if pds.scheduler is None else
                                                          {"scheduler": pds.scheduler, "progress": False})),
        )
        timings["outside_grid"] = time.perf_counter() - t0
        return out

    # beside the noise tests, the data summary and the regions (numpy on this thread): none reads another's
    # result, and on a cluster the permutations' tasks fill the workers' gaps between the other stages' tasks
    with ThreadPoolExecutor(max_workers=2) as side:
        outside_job = side.submit(contextvars.copy_context().run, outside_stage)
        pfi_job = side.submit(contextvars.copy_context().run, permutation_stage, model, data, scored, config,
                              random_state, pds.scheduler, progress, timings)
        evidence, data_summary = tests_and_summary(data, pds, scored, scores, refits, config, random_state,
                                                    progress, timings)
        outside = outside_job.result()
        regions, cohorts = regions_stage(model, data, pds, scored, evidence, refits, config, random_state, progress,
                                          timings)
        pfi = pfi_job.result()
    pds = _without_2d_ice(pds)
    gaps = comparison_gaps(scored.inputs.predictions, scored.inputs.comparison_predictions, pds.res1,
                           pds.comparisons) if pds.comparisons else {}
    notes = [*data.notes, *pds.notes, *scored.notes, *(o.text for o in outside), *na_notes(scored.utility_scores),
             *level_notes(evidence), *gap_notes(gaps, scored.inputs.prediction_std)]
    if data.weights is not None:
        notes.append(
            "PDs, the utilities' density weights and the observed incidence are weighted by the sample weights; "
            "the trust checks (OOD share, ALE, StratPD, surrogate) and the data plots under the PDs are unweighted."
        )
    notes = list(dict.fromkeys(notes))  # one line per distinct note
    timings["total"] = time.perf_counter() - started
    metadata = {**audit_metadata(model, compare, data, pds, scored, outside, config, random_state, sample_weight),
                "permutation_importance": pfi, **({"comparison_gap": gaps} if gaps else {})}
    run = {"date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), "timings_s": timings}
    if self_checked is not None:
        run["self_check"] = self_checked
    return Audit(
        config=config, results=tuple(pds.results), comparisons=pds.comparisons,
        utility_scores=scored.utility_scores, scores=scores, importance=scored.importance,
        interaction=scored.interaction, notes=tuple(notes), metadata=metadata, data_summary=data_summary, run=run,
        evidence=evidence, stage_failures=stage_failures, sample_weight=data.weights,
        refits=None if refits is None else refits.summary(), refit_curves=refit_curves(refits),
        region_records=regions, cohort_record=cohorts,
    )

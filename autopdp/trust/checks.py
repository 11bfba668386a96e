"""Stage: can this PDP be trusted?  StratPD, ALE, out-of-distribution share, surrogate importance.

=====================  ==============================================================
id                     what
=====================  ==============================================================
stratpd                gap between the centred PD and the data's own partial
                       dependence (StratPD / CatStratPD, model-free), 1D
ale_divergence         gap between the centred PD and the centred ALE curve, numeric
                       1D: large when the PD's story rests on extrapolation
ood_share              mean share of the PD's augmented rows whose moved values are
                       implausible: the cell outside the data in the moved features'
                       space, or unlikely given the row's other values
                       (:mod:`autopdp.trust.ood`), 1D and 2D
surrogate_importance   importance in an additive surrogate of the model
                       (:mod:`autopdp.trust.surrogate`); a 2D criterion (geometric mean)
=====================  ==============================================================

Centred comparisons use the density weights w of the PD's grid:
``f_c = f - sum(w f)/sum(w)``, likewise g, then the standard utility.  The
comparison curve kept for drawing is g centred onto the PD's weighted mean.
"""

from __future__ import annotations

import contextvars
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .ale import ale
from .modelfree import stratpd
from .ood import OOD_MOSTLY, OOD_OK, SupportModel, ood_verdict
from .surrogate import fit_surrogate
from ..scores.failures import failed_score
from ..scores.utilities.base import UtilityScore, not_applicable, relative_to_range, standard_utility
from ..scores.utilities.incidence import observed_values
from ..pd.kept import KeptValues

__all__ = ["TRUST_IDS", "trust_scores"]

TRUST_IDS = ("stratpd", "ale_divergence", "ood_share")


def _centred_gap(uid, f, g, w, loss, target, details):
    ok = np.isfinite(g) & np.isfinite(f) & (w > 0)
    if ok.sum() < 2:
        return not_applicable(uid, "the curves share fewer than two grid points with data.", target)
    mf = np.sum(w[ok] * f[ok]) / np.sum(w[ok])
    mg = np.sum(w[ok] * g[ok]) / np.sum(w[ok])
    value = standard_utility(f - mf, g - mg, w, loss)
    details = {**details, "relative": relative_to_range(value, f)}
    return UtilityScore(utility=uid, value=value, target=target, comparison=g - mg + mf, details=details)


def _on_grid(curve, result):
    """A model-free curve evaluated at the PD's grid (NaN outside its support)."""
    if result.kinds[0] == "numeric":
        x = np.asarray(curve.x, dtype=float)
        g = np.asarray(result.grid[0], dtype=float)
        if x.size < 2:  # no curve to interpolate
            return np.full(g.shape, np.nan)
        out = np.interp(g, x, curve.pd)
        out[(g < x.min()) | (g > x.max())] = np.nan
        return out
    lookup = {str(k): v for k, v in zip(curve.x.tolist(), curve.pd)}
    return np.array([lookup.get(str(v), np.nan) for v in result.grid[0]], dtype=float)


def _interaction_part(f, w):
    """The PD surface minus its density-weighted row and column effects: what ALE's 2D curve shows."""
    wa, wb = w.sum(axis=1), w.sum(axis=0)
    total = w.sum()
    if total <= 0:
        return np.full(f.shape, np.nan)
    rows = np.where(wa > 0, (w * f).sum(axis=1) / np.where(wa > 0, wa, 1), 0.0)
    cols = np.where(wb > 0, (w * f).sum(axis=0) / np.where(wb > 0, wb, 1), 0.0)
    return f - rows[:, None] - cols[None, :] + (w * f).sum() / total


def _ale_2d_gap(model, adapter, frame, r, t, config, target, curve=None):
    """2D: the PD's interaction part against the 2D ALE (pure interaction), both centred.

    ``curve``: the 2D ALE when it was computed already (from exact ICE)."""
    from scipy.interpolate import RegularGridInterpolator

    from .ale import ale_2d

    if r.kinds != ("numeric", "numeric"):
        return not_applicable("ale_divergence", "2D ALE needs two numeric features.", target)
    try:
        if curve is None:
            curve = ale_2d(model, frame, r.features, bins=_ale_bins_2d(r), response=config.response,
                           target=target if adapter.is_classifier else None)
        ea, eb = curve.x
        interp = RegularGridInterpolator((ea, eb), curve.pd, bounds_error=False, fill_value=np.nan)
        ga, gb = (np.asarray(g, dtype=float) for g in r.grid)
        pts = np.stack(np.meshgrid(ga, gb, indexing="ij"), axis=-1)
        g = interp(pts)
        w = r.density
        f = _interaction_part(np.asarray(r.average[t], dtype=float), w)
        return _centred_gap("ale_divergence", f, g, w, config.loss, target, {"what": "2D ALE (interaction)"})
    except Exception as exc:  # noqa: BLE001 - no expected condition here: a bug, collected as a stage failure
        return failed_score("ale_divergence", "trust", exc, target)


def _ale_bins_1d(r) -> int:
    return min(20, max(2, r.grid_shape[0]))


def _ale_bins_2d(r) -> int:
    return max(2, min(10, *r.grid_shape))


def _exact_ale_curves(model, frame, results, config, frame_2d=None, scheduler=None) -> dict:
    """ALE curves of the numeric 1D and 2D PDPs from exact per-row ICE when the tree path applies.

    The same curves :func:`autopdp.trust.ale.ale` and :func:`autopdp.trust.ale.ale_2d` give, without predicting on
    modified copies of the data; ``{}`` when the tree path does not apply (they are then computed by
    prediction, one PDP at a time).  Keys: ``(feature,)`` or ``(feature, feature)`` and the target.  The 2D
    curves are computed on ``frame_2d``, the rows the 2D PDs average over (default: ``frame``).  With a Dask
    ``scheduler`` the rows' sums run on the workers' row partitions (:func:`autopdp.trust.ale.ale_curves_exact`).
    """
    from .ale import ale_curves_exact
    from ..pd.tree.exact_ice import ExactICE
    from ..pd.tree.exact_pd import TreePathUnavailable

    numeric_1d = [r for r in results if r.ndim == 1 and r.kinds[0] == "numeric"]
    numeric_2d = [r for r in results if r.ndim == 2 and r.kinds == ("numeric", "numeric")]
    if not numeric_1d and not numeric_2d or config.method not in ("auto", "tree"):
        return {}
    frame_2d = frame if frame_2d is None else frame_2d
    try:
        source = ExactICE(model, frame, response=config.response, target=config.target,
                          max_batch_mb=config.max_batch_mb)
        source_2d = source if frame_2d is frame or not numeric_2d else \
            ExactICE(model, frame_2d, response=config.response, target=config.target,
                     max_batch_mb=config.max_batch_mb)
    except TreePathUnavailable:
        return {}
    out = {}
    for t, target in enumerate(source.targets or (None,)):
        wanted_1d = [r for r in numeric_1d if r.targets[r.target_index(None)] == target or target is None]
        wanted_2d = [r for r in numeric_2d if r.targets[r.target_index(None)] == target or target is None]
        bins = dict(bins_1d={r.features[0]: _ale_bins_1d(r) for r in wanted_1d},
                    bins_2d={r.features: _ale_bins_2d(r) for r in wanted_2d}, column=t, scheduler=scheduler)
        if source_2d is source:
            curves = ale_curves_exact(source, frame, [r.features[0] for r in wanted_1d],
                                      [r.features for r in wanted_2d], **bins)
        else:
            curves = ale_curves_exact(source, frame, [r.features[0] for r in wanted_1d], [], **bins)
            curves.update(ale_curves_exact(source_2d, frame_2d, [], [r.features for r in wanted_2d], **bins))
        out.update({((k,) if isinstance(k, str) else tuple(k), target): v for k, v in curves.items()})
    return out


#: the most rows StratPD's stratifying trees grow on: above it, a seeded sample of that many rows (the sentence says so)
MAX_STRATPD_ROWS = 50_000


def _stratpd_sample(n: int) -> str:
    return f"a seeded sample of {MAX_STRATPD_ROWS:,} of the {n:,} rows" if n > MAX_STRATPD_ROWS else ""


def _stratpd_curves(adapter, frame, y, results, kinds, random_state: int = 0, scheduler=None) -> dict:
    """``{(feature, target): StratPD curve, or the exception it raised}`` of the 1D PDPs, on a thread pool; above
    :data:`MAX_STRATPD_ROWS` rows, on a seeded sample of that many (each tree sorts and splits every row it has).

    Each curve grows its own stratifying tree (a compiled kernel that releases the GIL), so the trees grow side
    by side; each curve is the same whatever the number of threads.  On a Dask ``scheduler`` the trees grow on a
    worker (:func:`autopdp.pd.distributed.run_here_or_on_dask`), from the rows (or the sample) brought here.
    """
    from ..pd.distributed import run_here_or_on_dask

    categorical = [k for k, v in kinds.items() if v == "categorical"] or None
    kept = isinstance(y, KeptValues)  # kept with a cluster's rows: only the rows used come here
    yy = y if kept else np.asarray(y)
    if frame.n_rows > MAX_STRATPD_ROWS:
        rows = np.sort(np.random.default_rng([random_state, 55]).choice(frame.n_rows, MAX_STRATPD_ROWS, replace=False))
        frame, yy = frame.take_rows(rows), (yy.at(rows)[:, 0] if kept else yy[rows])
    elif getattr(frame, "parts", None) is not None:  # a PartFrame's rows, at most MAX_STRATPD_ROWS, brought here
        frame, yy = frame.take_rows(np.arange(frame.n_rows)), (yy.whole()[:, 0] if kept else yy)
    jobs = list(dict.fromkeys((r.features[0], r.targets[r.target_index(None)]) for r in results if r.ndim == 1))
    return run_here_or_on_dask(scheduler, _stratpd_of_rows, frame, yy, jobs, categorical, adapter.is_classifier)


def _stratpd_of_rows(frame, yy, jobs, categorical, is_classifier: bool) -> dict:
    """:func:`_stratpd_curves` on its rows ``frame`` and their targets ``yy``: one curve per (feature, target)."""
    from ..pd.tree.ice import n_threads
    from .modelfree import encode_columns
    from .strat_kernel import sorted_columns

    encoded = encode_columns(frame, categorical)  # once: every curve's tree reads the same columns,
    order = sorted_columns(encoded)  # each sorted once

    def one(job):
        name, target = job
        try:
            yv = observed_values(yy, target, is_classifier)
            if yv is None:
                raise ValueError("the target y is not numeric")
            return stratpd(frame, yv, name, categorical_features=categorical, encoded=encoded, sorted_rows=order)
        except Exception as exc:  # noqa: BLE001 - handed back to the caller, which names the expected cases
            return exc

    workers = min(n_threads(), len(jobs))
    if workers <= 1:
        return {job: one(job) for job in jobs}
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return dict(zip(jobs, pool.map(one, jobs)))


def _ood_measures(support, results, scheduler=None) -> dict:
    """``{features: OODMeasure, or the exception it raised}`` of every PD; on a Dask ``scheduler`` measured on a
    worker (:func:`autopdp.pd.distributed.run_here_or_on_dask`: the support's sample and the grids travel)."""
    from ..pd.distributed import run_here_or_on_dask

    return run_here_or_on_dask(scheduler, _ood_of_grids, support, [(r.features, r.grid) for r in results])


def _ood_of_grids(support, grids: list) -> dict:
    out = {}
    for features, grid in grids:
        try:
            out[features] = support.measure(features, grid)
        except Exception as exc:  # noqa: BLE001 - handed back to the caller, which records it as a stage failure
            out[features] = exc
    return out


def _ood_score(r, target, ood_by_pd: dict, support) -> UtilityScore:
    """The out-of-distribution share of PD ``r``'s augmented rows, with what it rests on."""
    try:
        ood = ood_by_pd[r.features]
        if isinstance(ood, Exception):
            raise ood
        share = ood.share
        return UtilityScore(
            utility="ood_share", value=float(np.mean(share)), target=target,
            details={"ood": share, "edge": ood.plane_edge, "mostly_unrealistic": float(np.mean(share > 0.5)),
                     "rows": int(support.rows.size), "sampled": bool(support.sampled),
                     "standard_error": support.standard_error,
                     "cell_outside": ood.cell_outside, "cells_outside": float(np.mean(ood.cell_outside)),
                     "plane_distance": ood.plane_distance, "conditional_share": ood.conditional_share,
                     "conditional_edge": ood.conditional_edge, "own_share": ood.own_share,
                     "k": support.k, "verdict": ood_verdict(float(np.mean(share))),
                     "thresholds": {"ok": OOD_OK, "mostly_unrealistic": OOD_MOSTLY}},
        )
    except Exception as exc:  # noqa: BLE001 - no expected condition here: a bug, collected as a stage failure
        return failed_score("ood_share", "trust", exc, target)


def _stratpd_score(r, t, y, adapter, stratpd_curves: dict, curves: dict, loss) -> UtilityScore:
    """The gap between 1D PD ``r`` and StratPD's model-free curve (both centred); the curve goes into ``curves``."""
    target = r.targets[t]
    if y is None:
        return not_applicable("stratpd", "needs the observed target y.", target)
    try:
        curve = stratpd_curves[(r.features[0], target)]
        if isinstance(curve, Exception):
            raise curve
        curves[r.features]["stratpd"] = curve
        if r.kinds[0] == "numeric" and np.asarray(curve.x).size == 0:
            return not_applicable(
                "stratpd", "no value of this feature has the 5 slopes StratPD needs within the leaves of "
                "its stratifying tree: too few rows for a model-free curve.", target)
        return _centred_gap("stratpd", np.asarray(r.average[t], dtype=float), _on_grid(curve, r), r.density, loss,
                            target, {"what": "StratPD (model-free)", "sample": _stratpd_sample(len(y))})
    except Exception as exc:  # noqa: BLE001 - expected conditions named below; anything else is a bug
        numeric_y = np.asarray(y.at([0]) if isinstance(y, KeptValues) else y).dtype.kind in "biuf"
        if isinstance(exc, ValueError) and not adapter.is_classifier and not numeric_y:
            return not_applicable("stratpd", "the target y is not numeric, so StratPD has no mean to follow.", target)
        return failed_score("stratpd", "trust", exc, target)


def _ale_score(model, adapter, frame, r, t, config, exact_ale: dict, curves: dict) -> UtilityScore:
    """The gap between 1D PD ``r`` and the ALE curve (both centred); the curve goes into ``curves``."""
    target = r.targets[t]
    if r.kinds[0] != "numeric":
        return not_applicable("ale_divergence", "ALE needs a numeric feature.", target)
    try:
        curve = exact_ale.get((r.features, target))
        if curve is None:
            curve = ale(model, frame, r.features[0], bins=_ale_bins_1d(r), response=config.response,
                        target=target if adapter.targets and adapter.is_classifier else None)
        curves[r.features]["ale"] = curve
        return _centred_gap("ale_divergence", np.asarray(r.average[t], dtype=float), _on_grid(curve, r), r.density,
                            config.loss, target, {"what": "ALE"})
    except Exception as exc:  # noqa: BLE001 - no expected condition here: a bug, collected as a stage failure
        return failed_score("ale_divergence", "trust", exc, target)


def _first_column(adapter, frame, predictions):
    """The first target's response on every row, indexed by row positions: a view of an array here, or a column of
    :class:`~autopdp.pd.kept.KeptValues` (kept on a cluster's partitions: the surrogate brings its sample's rows)."""
    if predictions is None:
        return adapter(frame.data)[:, 0]
    return predictions.column(0) if isinstance(predictions, KeptValues) else np.asarray(predictions)[:, 0]


def _measured(model, adapter, frame, y, results, config, wanted, kinds, support, predictions, where):
    """The measurements the scores rest on: (OOD shares by PD, the surrogate, exact ALE curves, StratPD curves).

    The surrogate and the OOD measurements (numpy and one core each) run on a side thread while ALE and StratPD
    (their own threads) keep this one: every number is computed alone, whatever runs beside it.  The surrogate goes
    first, beside ALE: the two largest transient arrays of the stage (the surrogate's design and StratPD's trees)
    are then not held at once.  ``where``: ``(random_state, frame_2d, scheduler)``."""
    random_state, frame_2d, scheduler = where
    side = ThreadPoolExecutor(max_workers=1)
    try:
        fit = "surrogate_importance" in config.criteria_2d and kinds
        surrogate_job = side.submit(contextvars.copy_context().run, fit_surrogate,
                                    _first_column(adapter, frame, predictions), frame, kinds,
                                    random_state=random_state, max_levels=config.max_levels,
                                    max_mb=config.max_batch_mb) if fit else None
        oods = side.submit(contextvars.copy_context().run, _ood_measures, support, results, scheduler) \
            if support is not None else None
        exact_ale = _exact_ale_curves(model, frame, results, config, frame_2d, scheduler) \
            if "ale_divergence" in wanted else {}
        stratpd_curves = _stratpd_curves(adapter, frame, y, results, kinds, random_state, scheduler) \
            if "stratpd" in wanted and y is not None else {}
        ood_by_pd = oods.result() if oods is not None else {}
        surrogate = surrogate_job.result() if surrogate_job is not None else None
    finally:
        side.shutdown(wait=True, cancel_futures=True)
    return ood_by_pd, surrogate, exact_ale, stratpd_curves


def trust_scores(model, adapter, frame, y, results, config, *, predictions=None, random_state: int = 0,
                 frame_2d=None, scheduler=None):
    """``({features: {uid: UtilityScore}}, surrogate, curves)`` for the trust utilities in the config.

    ``predictions``: the model's response on ``frame`` (n_rows, n_targets) when the caller has it;
    ``frame_2d``: the rows the 2D PDs average over (a sample of ``frame`` on large data, ``max_rows_2d`` and
    ``max_rows_2d_tree``): their 2D ALE is computed on the same rows (default: ``frame``); ``scheduler``: a Dask
    cluster for the exact ALE's row sums.
    """
    from ..pd.rows import scheduler_of

    frame_2d = frame if frame_2d is None else frame_2d
    scheduler = scheduler_of(frame, scheduler)  # a PartFrame's own cluster when none is given
    wanted = [u for u in config.utilities if u in TRUST_IDS]
    out: dict[tuple, dict] = {r.features: {} for r in results}
    curves: dict[tuple, dict] = {r.features: {} for r in results}
    kinds = {r.features[0]: r.kinds[0] for r in results if r.ndim == 1}
    support = SupportModel(frame, kinds, random_state=random_state, max_levels=config.max_levels,
                           max_mb=config.max_batch_mb) if "ood_share" in wanted and kinds else None
    ood_by_pd, surrogate, exact_ale, stratpd_curves = _measured(
        model, adapter, frame, y, results, config, wanted, kinds, support, predictions,
        (random_state, frame_2d, scheduler))
    for r in results:
        t = r.target_index(None)
        target = r.targets[t]
        if "ood_share" in wanted:
            out[r.features]["ood_share"] = _ood_score(r, target, ood_by_pd, support)
        if r.ndim != 1:
            if "stratpd" in wanted:
                out[r.features]["stratpd"] = not_applicable("stratpd", "computed for 1D PDPs.", target)
            if "ale_divergence" in wanted:
                out[r.features]["ale_divergence"] = _ale_2d_gap(model, adapter, frame_2d, r, t, config, target,
                                                                exact_ale.get((r.features, target)))
            continue
        if "stratpd" in wanted:
            out[r.features]["stratpd"] = _stratpd_score(r, t, y, adapter, stratpd_curves, curves, config.loss)
        if "ale_divergence" in wanted:
            out[r.features]["ale_divergence"] = _ale_score(model, adapter, frame, r, t, config, exact_ale, curves)
    return out, surrogate, curves

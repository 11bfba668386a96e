"""Refits of the same learner (issue 31): the model's unfitted clone fitted on K half-samples of the training data,
and each refit's PDs on the audit's own grids and rows.

The learner
    ``sklearn.base.clone(model)``: the same class and hyperparameters, unfitted.  Every ``random_state``
    parameter of the estimator (of each step of a Pipeline) is set to a seed of its own per refit, so the learner's
    own randomness (subsampling, feature bagging, early-stopping splits) counts as learner variance.  A model with
    no learner to clone (a callable ``f(X)``, a duck-typed object without ``get_params``), or no training data
    given, or a refit that fails to fit, is **not assessed**: :class:`Refits` holds the one-line reason and no
    finding is called robust.

The resampling scheme
    Half-samples without replacement: refit k is fitted on ``n_fit = floor(n_train / 2)`` rows drawn without
    replacement (Molnar et al. 2023, following Nadeau and Bengio 2003).  Unlike the bootstrap, no row is
    repeated (a tree learner fitted on duplicated rows overfits them), and the overlap between two refits'
    training sets is known, so Nadeau and Bengio's corrected variance applies: the variance of the mean over K
    refits is ``(1/K + n_test/n_fit) * S^2`` with ``S^2`` the refits' sample variance and ``n_test = n_train -
    n_fit`` (the rows a refit did not see); for half-samples the factor is ``1/K + 1``
    (:attr:`Refits.correction`).

What is computed per refit
    The 1D PDs with ICE curves on the audit's 1D grids, the 2D PDs with ICE surfaces on its 2D grids, each on the
    audit's ICE rows only (the rows whose curves the audit keeps: all rows up to ``subsample`` for 1D, ``std_rows``
    for 2D), and, when the audit reads structure on the model's link scale, the refit's link curves and surfaces
    (:func:`autopdp.pd.link.model_link`, :func:`with_surfaces`).  Where the ICE rows are a sample of the audit
    rows, the refit's PD is their Horvitz-Thompson (Hajek) weighted mean (:func:`ht_weights`), and the
    learner-level test adds that mean's sampling error (:func:`autopdp.findings.robustness._sampling_factor`): a
    refit costs the size of the ICE sample, not of the data.
    Refits run in parallel (joblib threads, ``n_jobs``) or one Dask task per refit when a scheduler is given.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from ..errors import InputError
from .data import refuse_dask
from .tree.fastpath import forget_plans, share_subset, shared_adapter, shared_plans
from .link import model_link, with_surfaces
from .options import keywords
from .partial_dependence import partial_dependence
from .response import make_adapter
from .sampling import ht_weights, ice_design

__all__ = ["SCHEME", "Refits", "RefitPDs", "RefitSpec", "checked_train", "ht_weights", "learner_of", "refit_curves",
           "refit_spec", "run_refits", "train_rows"]

SCHEME = "half-samples without replacement"
#: fewest training rows for refits on half-samples (each refit then sees at least 10 rows)
MIN_TRAIN_ROWS = 20


@dataclass(frozen=True, eq=False)
class RefitPDs:
    """One refit's PDs on the audit's grids and ICE rows (``link``: its link curves and surfaces, or None)."""

    res1: tuple
    res2: tuple
    link: Any
    fit_seconds: float
    pd_seconds: float


@dataclass(frozen=True, eq=False)
class Refits:
    """The refits of an audit: K requested, the scheme, and each refit's PDs (empty when not assessed).

    ``reason`` is the one-line reason the learner level was not assessed ("" when it was).
    """

    requested: int
    n_train: int = 0
    n_fit: int = 0
    scheme: str = SCHEME
    reason: str = ""
    seeds: tuple = ()
    pds: tuple = field(default=(), repr=False)
    fit_seconds: float = 0.0
    pd_seconds: float = 0.0
    #: the audit PDs' ICE rows and sampling design (:attr:`RefitSpec.shape_1d` + ``shape_2d``): the learner-level
    #: test adds the sampling part of the refits' PDs averaged over a sample of rows (not stored in results.json)
    ice_shapes: tuple = field(default=(), repr=False)

    @property
    def fitted(self) -> int:
        return len(self.pds)

    @property
    def assessed(self) -> bool:
        return not self.reason and self.fitted >= 2

    @property
    def correction(self) -> float:
        """Nadeau and Bengio's factor: Var(mean over K refits) = (1/K + n_test/n_fit) S^2."""
        if not self.fitted or not self.n_fit:
            return float("nan")
        return 1.0 / self.fitted + (self.n_train - self.n_fit) / self.n_fit

    def summary(self) -> "Refits":
        """The same counts and reason without the refits' PDs (what an :class:`~autopdp.Audit` keeps)."""
        return Refits.from_dict(self.to_dict())

    def to_dict(self) -> dict:
        return {"requested": int(self.requested), "fitted": int(self.fitted), "n_train": int(self.n_train),
                "n_fit": int(self.n_fit), "scheme": self.scheme, "reason": self.reason,
                "assessed": bool(self.assessed), "correction": None if not np.isfinite(self.correction)
                else float(self.correction), "seeds": [int(s) for s in self.seeds],
                "fit_seconds": float(self.fit_seconds), "pd_seconds": float(self.pd_seconds)}

    @classmethod
    def from_dict(cls, d: dict) -> "Refits":
        """The summary read back from results.json (the refits' PDs are not stored: ``fitted`` is 0)."""
        return _StoredRefits(requested=int(d.get("requested", 0)), n_train=int(d.get("n_train", 0)),
                             n_fit=int(d.get("n_fit", 0)), scheme=d.get("scheme", SCHEME), reason=d.get("reason", ""),
                             seeds=tuple(d.get("seeds", ())), fit_seconds=float(d.get("fit_seconds", 0.0)),
                             pd_seconds=float(d.get("pd_seconds", 0.0)), stored_fitted=int(d.get("fitted", 0)))


@dataclass(frozen=True, eq=False)
class _StoredRefits(Refits):
    """:class:`Refits` read from results.json: the counts as recorded, without the refits' PDs."""

    stored_fitted: int = 0

    @property
    def fitted(self) -> int:
        return self.stored_fitted

    @property
    def assessed(self) -> bool:
        return not self.reason and self.stored_fitted >= 2


@dataclass(frozen=True, eq=False)
class RefitSpec:
    """What every refit's PDs are computed on: the audit's rows, grids and settings."""

    frame: Any
    features: list
    custom_1d: dict
    categorical: list | None
    frame_2d: Any
    pairs: list
    custom_2d: dict
    weights: Any
    weights_2d: Any
    subsample: int | None
    std_rows: int | None
    random_state: Any
    common: dict  # response, target, method, ... as the audit's partial_dependence calls take them
    link_kwargs: dict | None  # None: the audit reads no link scale
    targets: tuple
    response: str
    target: Any
    #: the audit's 1D / 2D PDs, each as (features, ICE rows, design of a sample of rows or None), see _ice_shape: a
    #: refit's PDs are computed on those rows only (see the module docs)
    shape_1d: tuple = ()
    shape_2d: tuple = ()


def learner_of(model):
    """``(unfitted clone, "")`` or ``(None, reason)`` when the model has no learner to refit."""
    if not hasattr(model, "fit"):
        what = "a callable f(X)" if callable(model) and not hasattr(model, "predict") else \
            f"a {type(model).__name__} without fit"
        return None, f"the model is {what}: there is no learner to refit"
    if not hasattr(model, "get_params"):
        return None, f"the model ({type(model).__name__}) has no get_params: sklearn.base.clone cannot copy its learner"
    try:
        from sklearn.base import clone

        return clone(model), ""
    except Exception as exc:  # noqa: BLE001 - any failure to clone makes the learner level unassessable
        return None, f"sklearn.base.clone failed on the model ({type(exc).__name__}: {exc})"


def _seeded(learner, seed: int):
    """``learner`` with every ``random_state`` parameter (its own and each Pipeline step's) set to ``seed``."""
    try:
        params = learner.get_params(deep=True)
    except Exception:  # noqa: BLE001
        return learner
    keys = {k: int(seed) for k in params if k == "random_state" or k.endswith("__random_state")}
    return learner.set_params(**keys) if keys else learner


def _take(obj, rows):
    if obj is None:
        return None
    if hasattr(obj, "iloc"):
        return obj.iloc[rows]
    return np.asarray(obj)[rows]


def _fit(learner, X, y, w):
    """Fit ``learner``; a learner that refuses the training data's text columns (e.g. a HistGradientBoosting model
    fitted on pandas categories, ``categorical_features="from_dtype"``: a CSV has no dtype to say so) is fitted
    again with those columns as pandas categories, as the model must have been."""
    try:
        return _fit_once(learner, X, y, w)
    except (ValueError, TypeError) as first:
        as_categories = _text_as_categories(X)
        if as_categories is None:
            raise
        try:
            return _fit_once(learner, as_categories, y, w)
        except (ValueError, TypeError):
            raise first from None  # the learner's own refusal of the data as given names the problem


def _fit_once(learner, X, y, w):
    if w is None:
        return learner.fit(X, y)
    if hasattr(learner, "steps"):  # a Pipeline routes the weights to its last step
        return learner.fit(X, y, **{f"{learner.steps[-1][0]}__sample_weight": w})
    return learner.fit(X, y, sample_weight=w)


def _text_as_categories(X):
    """``X`` with its text (object or string) columns as pandas categories (their sorted values), or None when it
    has none."""
    import pandas as pd

    if not hasattr(X, "columns"):
        return None
    text = [c for c in X.columns if pd.api.types.is_object_dtype(X[c]) or pd.api.types.is_string_dtype(X[c])]
    if not text:
        return None
    out = X.copy()
    for c in text:
        values = sorted({str(v) for v in X[c].dropna()})
        out[c] = pd.Categorical(X[c].where(X[c].isna(), X[c].astype(str)), categories=values)
    return out


def train_rows(n_train: int, k: int, random_state) -> tuple[list, list]:
    """``(rows, seeds)``: each refit's half-sample (sorted row positions) and its learner seed."""
    rng = np.random.default_rng([int(random_state or 0), 31])
    n_fit = n_train // 2
    rows = [np.sort(rng.choice(n_train, size=n_fit, replace=False)) for _ in range(k)]
    seeds = [int(s) for s in rng.integers(0, 2**31 - 1, size=k)]
    return rows, seeds


def _ice_shape(results, weights) -> tuple:
    """``(features, ICE rows, design)`` of each audit PD (:attr:`RefitSpec.shape_1d`): ``design`` is the kept
    rows' ``(w, pi, total)`` (:func:`autopdp.pd.sampling.ice_design`) when they are a sample of the rows, None when
    the PD kept every row's curve (or its weights do not match its rows): the refit then averages over all rows,
    as the audit did."""
    out = []
    for r in results:
        rows = None if r.ice_rows is None or r.individual is None else np.asarray(r.ice_rows, dtype=np.intp)
        design = None if rows is None or rows.size >= r.n_rows else ice_design(r, weights)
        out.append((tuple(r.features), rows, design))
    return tuple(out)


def _on_ice_rows(fitted, frame, shapes, weights, custom, categorical, common, subsample, random_state) -> list:
    """The refit's PDs on the audit's grids, each on its PD's ICE rows: the average is the kept rows'
    Horvitz-Thompson (Hajek) weighted mean, the ICE curves are those rows' own, in the audit's row order.  PDs
    that kept every row's curve are computed as the audit computed them (all rows, the same ``subsample``)."""
    groups: dict = {}
    for i, (_, rows, design) in enumerate(shapes):
        key = b"all" if design is None else rows.tobytes()
        groups.setdefault(key, (rows, design, []))[2].append(i)
    out = [None] * len(shapes)
    for rows, design, idx in groups.values():
        sets = [shapes[i][0][0] if len(shapes[i][0]) == 1 else tuple(shapes[i][0]) for i in idx]
        if design is None:
            res = partial_dependence(fitted, frame, sets, **keywords(
                kind="both", categorical_features=categorical, custom_values=custom, n_jobs=1, sample_weight=weights,
                subsample=subsample, random_state=random_state, std=True, **common))
        else:
            sub = frame.take_rows(rows)
            share_subset(fitted, frame, rows, sub)  # the trees and their check carry over from the rows' frame
            res = partial_dependence(fitted, sub, sets, **keywords(
                kind="both", categorical_features=categorical, custom_values=custom, n_jobs=1,
                sample_weight=ht_weights(design), subsample=None, std=True, **common))
            res = [dataclasses.replace(r, ice_rows=rows) for r in res]
        for i, r in zip(idx, res):
            out[i] = r
    return out


def _one_refit(learner, X, y, w, rows, seed, spec: RefitSpec, threads: int | None = None) -> RefitPDs:
    """Fit one refit on its half-sample and compute its PDs on the audit's grids and ICE rows.

    ``threads``: the OpenMP and BLAS threads of the fit (a Dask worker's task sets its own); None: the caller's
    (:func:`_run` sets :func:`fit_threads` once around all the refits: threadpoolctl's limits are the process's,
    so a limit set and restored by each of several threads would lift it under the others' fits)."""
    t0 = time.perf_counter()
    with threadpool_limits(limits=threads) if threads else contextlib.nullcontext():
        fitted = _fit(_seeded(learner, seed), _take(X, rows), _take(y, rows), _take(w, rows))
    fit_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    # the PDs' own model calls are small (probes of a few rows, the tree path's check on the ICE rows): a model's
    # OpenMP threads (HistGradientBoosting's predict) would spin against the tree kernel's threads and the other
    # refits' (measured on 6,000 Adult rows, HistGradientBoostingClassifier, load average 2.9 on 2 cores: a refit's
    # 1D PDs 4.4 s, 0.58 s with one OpenMP thread; its 2D PDs 0.8-5.9 s, 0.5-0.6 s)
    with threadpool_limits(limits=1, user_api="openmp"), shared_plans():
        try:
            return _refit_pds(fitted, fit_seconds, t0, spec)
        finally:
            forget_plans(fitted)  # the refit's plans are not needed once its PDs are done


def _refit_pds(fitted, fit_seconds, t0, spec: RefitSpec) -> RefitPDs:
    common = dict(spec.common, progress=False, scheduler=None)
    res1 = _on_ice_rows(fitted, spec.frame, spec.shape_1d, spec.weights, spec.custom_1d, spec.categorical, common,
                        spec.subsample, spec.random_state)
    res2 = _on_ice_rows(fitted, spec.frame_2d, spec.shape_2d, spec.weights_2d, spec.custom_2d, spec.categorical,
                        common, min(spec.std_rows, spec.frame_2d.n_rows) if spec.std_rows else None,
                        spec.random_state) if spec.pairs else []
    link = None
    if spec.link_kwargs is not None:
        # the adapter of the refit's 1D PDs (the same response and target), probed once
        adapter = shared_adapter(fitted, spec.common["response"], spec.common["target"], lambda: make_adapter(
            fitted, spec.response, spec.target, probe=spec.frame.take_rows(np.arange(min(5, spec.frame.n_rows))).data))
        if tuple(map(str, adapter.targets)) != tuple(map(str, spec.targets)):
            raise InputError(f"the refit predicts targets {list(adapter.targets)}, the model {list(spec.targets)}")
        kwargs = dict(spec.link_kwargs, n_jobs=1, progress=False, scheduler=None)
        link = model_link(fitted, adapter, spec.frame, res1, kwargs)  # its rows' predictions are not needed: the
        # learner-level tests keep the audit's thresholds
        link = with_surfaces(link, fitted, adapter, spec.frame_2d, res2, kwargs, spec.weights_2d)
    return RefitPDs(res1=tuple(res1), res2=tuple(res2), link=link, fit_seconds=fit_seconds,
                    pd_seconds=time.perf_counter() - t0)


def _same_rows(spec: RefitSpec, out: RefitPDs, audit_results) -> str:
    """"" when the refit's PDs are on the audit's grids and ICE rows, else what differs."""
    for a, b in zip(audit_results, (*out.res1, *out.res2)):
        if a.features != b.features or a.grid_shape != b.grid_shape:
            return f"the refit's PD of {' x '.join(a.features)} is not on the audit's grid"
        ra, rb = a.ice_rows, b.ice_rows
        if (ra is None) != (rb is None) or (ra is not None and not np.array_equal(ra, rb)):
            return f"the refit's ICE rows of {' x '.join(a.features)} are not the audit's"
    return ""


def run_refits(model, train, k: int, spec: RefitSpec, audit_results, *, random_state=0, n_jobs=None,
               scheduler=None, progress=None) -> Refits:
    """K refits of ``model``'s learner on half-samples of ``train`` = ``(X, y[, w])`` and their PDs."""
    k = int(k)
    if train is None:
        return Refits(requested=k, reason="no training data was given (train=, --train): the learner cannot be "
                                          "refitted")
    X, y, w = (tuple(train) + (None,))[:3]
    n_train = int(X.shape[0])
    learner, reason = learner_of(model)
    if learner is None:
        return Refits(requested=k, n_train=n_train, reason=reason)
    if n_train < MIN_TRAIN_ROWS:
        return Refits(requested=k, n_train=n_train, reason=f"the training data has {n_train} rows, fewer than "
                                                           f"{MIN_TRAIN_ROWS}: half-samples are too small to refit")
    rows, seeds = train_rows(n_train, k, random_state)
    t0 = time.perf_counter()
    try:
        outs = _run(learner, X, y, w, rows, seeds, spec, n_jobs=n_jobs, scheduler=scheduler, progress=progress)
    except Exception as exc:  # noqa: BLE001 - a learner that cannot be refitted: not assessed, with its error
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return Refits(requested=k, n_train=n_train, n_fit=n_train // 2, seeds=tuple(seeds),
                      reason=f"a refit of the learner failed ({type(exc).__name__}{': ' + text[:200] if text else ''})")
    for out in outs:
        differs = _same_rows(spec, out, audit_results)
        if differs:
            return Refits(requested=k, n_train=n_train, n_fit=n_train // 2, seeds=tuple(seeds), reason=differs)
    return Refits(requested=k, n_train=n_train, n_fit=n_train // 2, seeds=tuple(seeds), pds=tuple(outs),
                  fit_seconds=float(sum(o.fit_seconds for o in outs)), pd_seconds=float(sum(o.pd_seconds for o in outs)),
                  ice_shapes=tuple(spec.shape_1d) + tuple(spec.shape_2d))


def fit_threads(n_jobs, k: int) -> int:
    """The threads each refit's fit may use: the cores ``n_jobs`` allows (joblib's count: -1 is every core)
    shared among the refits running together (at most ``k``); one when there are as many refits as cores."""
    from joblib import effective_n_jobs

    cores = max(1, int(effective_n_jobs(n_jobs or 1)))
    return max(1, cores // max(1, min(cores, int(k))))


def _run(learner, X, y, w, rows, seeds, spec, *, n_jobs, scheduler, progress) -> list:
    from sklearn.base import clone

    if scheduler is not None:
        from .distributed import _client, gathered

        client, own = _client(scheduler)
        try:  # a worker runs as many refits as it has threads: one thread each
            futures = [client.submit(_one_refit, clone(learner), X, y, w, r, s, spec, 1, pure=False)
                       for r, s in zip(rows, seeds)]
            return gathered(client, futures)
        finally:
            if own:
                client.close()
    from joblib import Parallel, delayed

    from ..utils.progress import progress_bar, progress_line

    jobs = (delayed(_one_refit)(clone(learner), X, y, w, r, s, spec) for r, s in zip(rows, seeds))
    out = []
    b = progress_bar(total=len(rows), desc="refits", enabled=progress)
    # each fit's OpenMP and BLAS threads: the cores the user allows shared among the refits running together
    # (measured: a credit model's 10 HistGradientBoosting refits spent 233 of 252 s oversubscribing 2 cores)
    try:
        with threadpool_limits(limits=fit_threads(n_jobs, len(rows))):
            for res in Parallel(n_jobs=n_jobs or 1, prefer="threads", return_as="generator")(jobs):
                out.append(res)
                took = f"fit {res.fit_seconds:.1f} s, PDs {res.pd_seconds:.1f} s"
                b.set_postfix_str(f"last refit: {took}")
                b.update(1)
                progress_line(f"refit {len(out)} of {len(rows)}: {took}", progress)
    finally:
        b.close()
    return out


def checked_train(train, refits: int, X=None):
    """``train`` as ``(X, y, w)`` after the checks a bad input fails with one line (None when not given)."""
    if train is None:
        return None
    if not refits:
        raise InputError("train= (--train) is given but config key 'refits' (--refits) is 0: set refits=K "
                         "(e.g. 10) to refit the learner, or leave the training data out.")
    if not isinstance(train, (tuple, list)) or len(train) not in (2, 3):
        raise InputError(f"train= takes (X_train, y_train) or (X_train, y_train, w_train), got "
                         f"{type(train).__name__}{' of ' + str(len(train)) if isinstance(train, (tuple, list)) else ''}.")
    Xt, yt = train[0], train[1]
    wt = train[2] if len(train) == 3 else None
    for part, name in zip(train, ("X_train", "y_train", "w_train")):
        refuse_dask(part, name)
    if not hasattr(Xt, "shape") or len(getattr(Xt, "shape", ())) != 2:
        raise InputError("train= X_train must be a DataFrame or a 2D array.")
    n = int(Xt.shape[0])
    if yt is None or len(yt) != n:
        raise InputError(f"train= y_train has {0 if yt is None else len(yt)} values for {n} rows of X_train.")
    if wt is not None and len(wt) != n:
        raise InputError(f"train= w_train has {len(wt)} values for {n} rows of X_train.")
    if X is not None and hasattr(X, "columns") and hasattr(Xt, "columns") and list(X.columns) != list(Xt.columns):
        missing = [c for c in X.columns if c not in Xt.columns]
        raise InputError(f"train= X_train has other columns than X (missing {missing[:5]}); give the training data "
                         f"with the audit data's columns.")
    return Xt, yt, wt


def refit_spec(config, frame, features, res1, res2, frame_2d, weights, weights_2d, categorical, random_state,
               adapter, link_kwargs) -> RefitSpec:
    """The :class:`RefitSpec` of an audit: its 1D and 2D grids, rows and settings (as its own PDs were computed)."""
    def custom(results):
        out = {}
        for r in results:
            for f, kind, g in zip(r.features, r.kinds, r.grid):
                out[f] = list(g) if kind == "categorical" else g
        return out

    common = dict(response=config.response, target=config.target, percentiles=config.percentiles,
                  grid_method=config.grid_method, integer_as_categorical=config.integer_as_categorical,
                  max_batch_mb=config.max_batch_mb, method=config.method, std_rows=config.std_rows)
    return RefitSpec(frame=frame, features=list(features), custom_1d=custom(res1), categorical=categorical,
                     frame_2d=frame_2d, pairs=[r.features for r in res2], custom_2d=custom(res2), weights=weights,
                     weights_2d=weights_2d, subsample=config.subsample, std_rows=config.std_rows,
                     random_state=random_state, common=common, link_kwargs=link_kwargs,
                     targets=tuple(adapter.targets), response=adapter.response, target=config.target,
                     shape_1d=_ice_shape(res1, weights), shape_2d=_ice_shape(res2, weights_2d))


def refit_curves(refits: Refits | None) -> dict:
    """``{features: (K, n_targets, grid)}``: every refit's 1D PD, for the report's refit band."""
    if refits is None or not refits.assessed:
        return {}
    out = {}
    for i, r in enumerate(refits.pds[0].res1):
        out[r.features] = np.stack([np.asarray(p.res1[i].average, dtype=float) for p in refits.pds])
    return out

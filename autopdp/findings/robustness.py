"""Stage: refits' PDs -> the learner-level test of every finding (issue 31): would the pattern be there again if the
same learner were fitted on another sample from the same population?

The learner-PD
    The mean over the K refits of their PDs, on each criterion's own scale (the response for the level criteria,
    the link scale's curves and surfaces for the structure criteria); its ICE curves are the refits' ICE curves
    averaged row by row (the same rows).  This is Molnar et al.'s (2023) learner-PD, estimated on the audit rows.

The null and the test
    For each criterion the null is the criterion's own, said of the learner-PD: "the learner-PD's statistic is at
    most the materiality threshold" (the audit's threshold, on the same scale).  The criterion's statistic is
    computed on the learner-PD and tested by the criterion's own Monte-Carlo minimum-effect test
    (:func:`autopdp.findings.evidence.assess`), with the draws' Gaussian noise the sum of two parts: the
    Monte-Carlo error of averaging over the audit rows (from the learner's ICE curves, as for the model) and the
    learner variance, the refits' spread around their mean with Nadeau and Bengio's correction for
    overlapping training sets, ``(1/K + n_test/n_fit) S`` (``S`` the refits' sample covariance of the PD over the
    grid; :attr:`autopdp.pd.refits.Refits.correction`).  The ICE spread's z-test adds the refits' part to the
    mean square's variance (delete-one jackknife over the refits, times ``K (1/K + n_test/n_fit)``), and first
    removes the refits' own spread from the mean square of the averaged ICE curves (``E[m] = m_learner + Var``:
    the jackknife's bias estimate, scaled by the same correction), so the spread of a learner whose refits each
    fit a different heterogeneity to noise is not counted as the learner's.
    Benjamini-Hochberg across the PDPs of each criterion, as for the model's own tests.  ``robust`` is the
    learner-level decision; ``stability`` (descriptive) the share of refits whose own test (the audit's test,
    run on the refit's PDs) finds the pattern.

Not assessed (``robust`` None)
    Every item when the refits are not assessed; incidence and similarity (they compare this fit with the
    observed target or another fitted model, not a pattern the learner could reproduce), the steepest slope (its
    learner-level test had almost no power: the refits' local wiggles dominate it), correlation (the data's
    association, no model), the surrogate's pair importance, and any item whose learner-level test could not be
    run.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ..pd.sampling import ht_weights
from .evidence import assess
from ..scores.scoring import ScoringInputs, _score_utility, importance_table
from .significance import Evidence
from .words import for_learner

__all__ = ["LEARNER_UTILITIES", "NOT_ASSESSED", "learner_level", "with_robustness"]

#: the 1D utilities with a learner-level test
LEARNER_UTILITIES = ("monotonicity", "lipschitz", "ice_variance")
#: the most Monte-Carlo draws of a refit's own test (its share is descriptive; the learner-level test has the
#: audit's ``max_noise_draws``)
STABILITY_DRAWS = 500
#: criteria never assessed at the learner level, each with why
NOT_ASSESSED = {
    "incidence": "incidence compares this fit with the observed target, not a pattern a refit reproduces",
    "similarity": "similarity compares this fit with another fitted model",
    "similarity_level": "the level difference compares this fit with another fitted model",
    "correlation": "correlation is the data's association, not the model's",
    "slope": "the steepest step between neighbouring grid values is each refit's own local wiggle, so the "
             "learner-PD's steepest slope has almost no power (planted slopes robust in 0-3% of seeds); the "
             "feature's importance is the learner-level reading of a main effect",
    "surrogate_importance": "the surrogate is fitted to this model only",
    "intersection": "the intersection ranks a pair across the pair criteria, the data's correlation among them; "
                    "each criterion carries its own verdict",
}


def _stack(arrays) -> np.ndarray:
    return np.stack([np.asarray(a, dtype=float) for a in arrays])


def _mean_result(r, refit_results):
    """``r`` with its PD and ICE curves replaced by the refits' means (same grid, same rows)."""
    average = _stack([x.average for x in refit_results]).mean(axis=0)
    individual = None
    if r.individual is not None and all(x.individual is not None for x in refit_results):
        individual = _stack([x.individual for x in refit_results]).mean(axis=0)
    return dataclasses.replace(r, average=average, individual=individual)


def _spread_factor(curves: np.ndarray, correction: float) -> np.ndarray:
    """Factor (K, cells) of the corrected covariance ``correction * S`` of K curves (K, cells)."""
    k = curves.shape[0]
    dev = curves - curves.mean(axis=0, keepdims=True)
    return np.sqrt(correction / max(k - 1, 1)) * dev


def _sampling_factor(r, t: int, shape) -> np.ndarray | None:
    """Factor of the sampling part of a refit's (or the learner's) PD averaged over the audit's ICE rows only
    (:func:`autopdp.pd.refits._on_ice_rows`): the design variance of that Horvitz-Thompson (Hajek) mean.

    The ICE sample (:mod:`autopdp.pd.sampling`) keeps some rows with certainty and a uniform sample of the rest:
    a stratified simple random sample, whose unbiased variance estimate is, per stratum of equal ``pi < 1``,
    ``(1 - pi) / pi**2 * n_h / (n_h - 1) * sum_i (y_i - ybar_h)(y_i - ybar_h)^T / total**2`` with ``y_i = w_i d_i``
    (``d_i`` row i's curve less the mean).  The PD's noise model
    (:func:`~autopdp.findings.significance.pd_noise_model`) holds the Monte-Carlo error of a mean over all rows; a
    mean over the kept rows adds this.  None when the PD averaged over every row."""
    if shape is None or shape[2] is None or r.individual is None:
        return None
    rows, design = shape[1], shape[2]
    w, pi, total = (np.asarray(design[0], dtype=float), np.asarray(design[1], dtype=float), float(design[2]))
    ice = np.asarray(r.individual[t], dtype=float).reshape(rows.size, -1)
    h = ht_weights(design)
    if ice.shape[0] != h.size or not (np.isfinite(total) and total > 0 and h.sum() > 0):
        return None
    y = w[:, None] * (ice - (h @ ice) / float(h.sum()))
    out = np.zeros_like(y)
    for p in np.unique(pi[(pi > 0) & (pi < 1)]):
        g = pi == p
        n_g = int(g.sum())
        if n_g < 2:
            continue
        scale = np.sqrt((1.0 - p) * n_g / (n_g - 1.0)) / (p * total)
        out[g] = scale * (y[g] - y[g].mean(axis=0))
    return out


def _with_sampling(extra: dict, results, shapes: dict) -> dict:
    """``extra`` with each response-scale PD's sampling part (:func:`_sampling_factor`) stacked on its factor."""
    for r in results:
        shape = shapes.get(tuple(r.features))
        if shape is None or shape[2] is None:
            continue
        for t in range(np.asarray(r.average).shape[0]):
            f = _sampling_factor(r, t, shape)
            if f is None:
                continue
            key = (r.features, t, "response")
            extra[key] = f if key not in extra else np.vstack([extra[key], f])
    return extra


def _learner_link(link, refit_links, keep=None, only=None):
    """The audit's link (its rows' predictions kept: the thresholds) with the refits' mean curves and surfaces;
    ``only``: just that 1D PDP's curves (no surfaces), for the jackknife's many leave-one-out links."""
    if link is None:
        return None
    refit_links = [x for i, x in enumerate(refit_links) if keep is None or i in keep]
    curves = {f: _stack([x.curves[f] for x in refit_links]).mean(axis=0) for f in link.curves
              if (only is None or f == only)
              and refit_links and all(x is not None and f in x.curves for x in refit_links)}
    surfaces = {}
    for f, s in ({} if only is not None else link.surfaces).items():
        if refit_links and all(x is not None and f in x.surfaces for x in refit_links):
            surfaces[f] = dataclasses.replace(s, result=_mean_result(s.result, [x.surfaces[f].result
                                                                              for x in refit_links]))
    return dataclasses.replace(link, curves=curves, surfaces=surfaces)


def _inputs_like(inputs: ScoringInputs, config, link) -> ScoringInputs:
    """The audit's scoring inputs (rows, thresholds' prediction sd, weights) for other PDs: no comparison models,
    no predictions (incidence is not assessed), ``link`` as the structure criteria's scale."""
    out = ScoringInputs(frame=inputs.frame, y=inputs.y, is_classifier=inputs.is_classifier,
                        prediction_std=inputs.prediction_std, config=config, comparisons={},
                        sample_weight=inputs.sample_weight, predictions=None, comparison_predictions={}, link=link)
    # the pair associations and grids' cell tables are the audit's: share its caches rather than recompute per refit
    out._associations, out._tables = inputs._associations, inputs._tables
    out.threshold_spread = inputs.threshold_spread  # the audit's threshold, and its sampling error, are the same
    return out


def _assess_pds(inputs: ScoringInputs, results, extra_noise=None, adjust=None) -> dict:
    """:func:`assess` of ``results`` (each criterion's test, BH across the PDPs); ``adjust`` edits the scores."""
    from ..scores.scoring import score_result

    # the utilities' evidence is of the 1D PDs (assess reads no 2D utility score): the surfaces are not scored
    utility_scores = {r.features: score_result(inputs, r) for r in results if r.ndim == 1}
    if adjust is not None:
        adjust(utility_scores)
    res1 = [r for r in results if r.ndim == 1]
    res2 = [r for r in results if r.ndim == 2]
    records = [{"features": r.features, "kind": "1d"} for r in res1]
    if res2:
        # the pairs' importance only (the geometric mean of the two features' PD importances, as pair_criteria):
        # the data's association is not assessed at the learner level and would be recomputed for every refit
        imp = importance_table(res1)
        imp = imp.max(axis=1) if not imp.empty else pd.Series(dtype=float)
        for r in res2:
            ia, ib = (float(imp.get(f, np.nan)) for f in r.features)
            both = np.isfinite(ia) and np.isfinite(ib)
            records.append({"features": r.features, "kind": "2d", "intersection": np.nan,
                            "importance": float(np.sqrt(ia * ib)) if both else float("nan")})
    scores = pd.DataFrame.from_records(records)
    for col in ("importance", "intersection"):
        if col not in scores:
            scores[col] = np.nan
    return assess(inputs, results, utility_scores, scores, surrogate=None, extra_noise=extra_noise)


def _jackknife_ice(inputs, learner_results, refits, link, correction):
    """``adjust`` for :func:`_assess_pds`: each ICE spread's standard error with the refits' part added."""
    k = refits.fitted

    def adjust(utility_scores):
        for r in learner_results:
            s = utility_scores.get(r.features, {}).get("ice_variance")
            if r.ndim != 1 or s is None or not s.available or "mean_square_se" not in (s.details or {}):
                continue
            i = [x.features for x in refits.pds[0].res1].index(r.features)
            w = inputs.cell_weights(r)
            loo = []
            for j in range(k):
                keep = [m for m in range(k) if m != j]
                rj = _mean_result(r, [refits.pds[m].res1[i] for m in keep])
                lj = _learner_link(link, [p.link for p in refits.pds], keep=set(keep), only=r.features)
                sj = _score_utility(_inputs_like(inputs, inputs.config, lj), rj, "ice_variance", w)
                loo.append(float(sj["ice_variance"].details.get("mean_square", np.nan)))
            loo = np.asarray(loo)
            mean = float(s.details.get("mean_square", np.nan))
            if not (np.isfinite(loo).all() and np.isfinite(mean)):
                continue
            # the mean square of the averaged curves carries the refits' own spread (E[m] = m_learner + Var): the
            # jackknife's bias estimate is that spread / K; Nadeau-Bengio's variance is correction x spread
            bias = max(0.0, correction * k * (k - 1) * (float(loo.mean()) - mean))
            corrected = mean - bias
            v_jack = (k - 1) / k * float(np.sum((loo - loo.mean()) ** 2))
            se = float(s.details["mean_square_se"])
            part = k * correction * v_jack
            details = {**s.details, "mean_square": corrected, "mean_square_se": float(np.sqrt(se * se + part)),
                       "refit_se": float(np.sqrt(part)), "refit_bias": bias, "uncorrected_mean_square": mean,
                       "floored": bool(corrected <= 0)}  # the refits' own spread took all of it: nothing measured
            utility_scores[r.features]["ice_variance"] = dataclasses.replace(
                s, value=float(np.sqrt(max(corrected, 0.0))), details=details)
    return adjust


def learner_level(inputs: ScoringInputs, results, refits) -> tuple[dict, dict]:
    """``(learner evidence, stability)``: the learner-level Evidence per criterion and PDP, and per criterion and
    PDP the share of refits whose own test finds the pattern.  Both empty when the refits are not assessed."""
    if refits is None or not refits.assessed:
        return {}, {}
    cfg = inputs.config.replace(utilities=tuple(u for u in inputs.config.utilities if u in LEARNER_UTILITIES))
    k, c = refits.fitted, refits.correction
    per_refit = [(*p.res1, *p.res2) for p in refits.pds]
    learner_results = [_mean_result(r, [rr[i] for rr in per_refit]) for i, r in enumerate(results)]
    link = _learner_link(inputs.link, [p.link for p in refits.pds])
    extra = {}
    for i, r in enumerate(results):
        curves = _stack([rr[i].average for rr in per_refit])  # (K, targets, *grid)
        for t in range(curves.shape[1]):
            extra[(r.features, t, "response")] = _spread_factor(curves[:, t].reshape(k, -1), c)
    if link is not None:
        for f in link.surfaces:
            curves = _stack([p.link.surfaces[f].result.average for p in refits.pds])
            for t in range(curves.shape[1]):
                extra[(f, t, "link")] = _spread_factor(curves[:, t].reshape(k, -1), c)
    shapes = {tuple(sh[0]): sh for sh in getattr(refits, "ice_shapes", ())}
    extra = _with_sampling(extra, learner_results, shapes)
    learner_inputs = _inputs_like(inputs, cfg, link)
    learner = _assess_pds(learner_inputs, learner_results, extra,
                          adjust=_jackknife_ice(learner_inputs, learner_results, refits, inputs.link, c))
    found: dict = {}
    # the refits' own tests (stability, descriptive): the audit's tests with at most STABILITY_DRAWS draws
    own_cfg = cfg.replace(max_noise_draws=max(cfg.noise_draws, min(cfg.max_noise_draws, STABILITY_DRAWS)))
    for j, p in enumerate(refits.pds):
        refit_link = None if inputs.link is None or p.link is None else \
            dataclasses.replace(p.link, predictions=inputs.link.predictions)
        own = [dataclasses.replace(r, average=rr.average, individual=rr.individual) for r, rr in
               zip(results, per_refit[j])]  # the refit's curves on the audit's rows, as the audit's results
        ev = _assess_pds(_inputs_like(inputs, own_cfg, refit_link), own, _with_sampling({}, own, shapes))
        for crit, by in ev.items():
            for key, e in by.items():
                found.setdefault(crit, {}).setdefault(key, []).append(bool(e.passed))
    stability = {crit: {key: float(np.mean(v)) for key, v in by.items() if len(v) == k} for crit, by in found.items()}
    return learner, stability


def _criterion_base(criterion: str) -> str:
    return criterion.split(":", 1)[0]


def with_robustness(evidence: dict, learner: dict, stability: dict, refits) -> dict:
    """``evidence`` with every item's ``robust``, ``robust_p``, ``robust_adjusted_p``, ``stability`` and
    ``robust_why`` filled in from the learner-level evidence (None / NaN where not assessed)."""
    if refits is None:
        return evidence
    out = {}
    for crit, by in evidence.items():
        base = _criterion_base(crit)
        items = {}
        for key, e in by.items():
            items[key] = _one(e, crit, base, learner.get(crit, {}).get(key), stability.get(crit, {}).get(key),
                              refits)
        out[crit] = items
    return out


def _one(e: Evidence, crit: str, base: str, le: Evidence | None, stab, refits) -> Evidence:
    if not refits.assessed:
        why = f"not assessed: {refits.reason}" if refits.reason else "not assessed"
        return dataclasses.replace(e, robust=None, robust_why=why)
    if base in NOT_ASSESSED:
        return dataclasses.replace(e, robust=None, robust_why=f"not assessed: {NOT_ASSESSED[base]}")
    if le is None:
        return dataclasses.replace(e, robust=None, robust_why="not assessed: no learner-level test for this item",
                                   stability=float("nan") if stab is None else float(stab))
    stability_value = float("nan") if stab is None else float(stab)
    if not np.isfinite(le.value):
        return dataclasses.replace(e, robust=None, robust_why="not assessed: the learner-PD has no value of this "
                                   "statistic", stability=stability_value)
    ld = le.details or {}
    critical = le.noise_level if np.isfinite(le.noise_level) else ld.get("critical")
    learner = {"value": le.value, "threshold": le.threshold, "noise_level": le.noise_level, "test": le.test,
               "refits": int(refits.fitted), "critical": critical}
    if ld.get("floored"):  # the ICE spread: the refits' own spread is at least the averaged curves' spread
        learner.update(floored=True, averaged=float(np.sqrt(max(ld["uncorrected_mean_square"], 0.0))),
                       refit_spread=float(np.sqrt(max(ld["refit_bias"], 0.0))))
    if le.material and not np.isfinite(le.p_value):
        return dataclasses.replace(e, robust=None, robust_why=f"not assessed: the learner-level test could not be "
                                   f"run ({le.why})", stability=stability_value,
                                   details={**e.details, "learner": learner})
    return dataclasses.replace(e, robust=bool(le.passed), robust_p=float(le.p_value),
                               robust_adjusted_p=float(le.adjusted_p), stability=stability_value,
                               robust_why=for_learner(le.why, int(refits.fitted)),
                               details={**e.details, "learner": learner})

"""Stage: scores -> evidence (noise test + materiality) for every PDP under every selection criterion.

See :mod:`autopdp.findings.significance` for the tests and their null distributions, :mod:`autopdp.findings.null_draws`
for each criterion's least favourable null curve and statistic, and :mod:`autopdp.findings.words` for each
decision's words.
The result, ``{criterion: {features: Evidence}}``, is what the curated
selection filters on (:func:`autopdp.scores.selection.curate`) and what the report
prints beside every finding.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy import stats

from ..pd.kept import beside, on_whole
from ..scores.utilities.incidence import KeptObserved, observed_values
from ..scores.calibration import incidence_parts
from .draws import LIPSCHITZ_MAX_DRAWS, _Budget, _Pending, _link_scale_threshold, _resolve, _rng, \
    _with_refits
from .pairs import assess_2d
from ..utils.formatting import fmt
from .comparison_noise import _level_difference, _other_curve, _paired_noise
from .words import (
    _finish, _item, why_sentence,
)
from ..scores.importance import flatness, marginal_weights
from .null_draws import (
    _weighted_sd, at_threshold, minimum_effect, stat_flatness, stat_lipschitz, stat_monotonicity, stat_slope,
)
from ..scores.scoring import grid_cells
from .significance import (
    ANALYTIC_P_FLOOR, EFFECTIVE_ROWS_FLOOR, TESTS, Evidence, NoiseModel, analytic_p, pd_noise_model,
    ice_row_weights, noise_gap_reason, with_threshold_noise,
)
from ..scores.utilities import TRUST_IDS
from ..pd.link import response_scale_name
from ..scores.utilities.lipschitz import fast_lipschitz_fit_1d
from ..scores.utilities.monotone_fit import MonotoneGap, weighted_isotonic

__all__ = ["assess", "fast_lipschitz_fit_1d", "why_sentence"]

PAIR_ONLY = ("correlation", "importance", "interaction", "intersection", "surrogate_importance")


def _monotonicity_both_ways(s, r, curve, noise, w, loss, thr, tol, budget, rng, statistic):
    """The minimum-effect test of a monotonicity gap with no declared direction, as an intersection-union test.

    The gap is the smaller of two distances, to the increasing and to the decreasing curves; "the gap exceeds
    the threshold" is "both distances exceed it", so each distance is tested on its own (the PD's departure
    from that direction's best fit shrunk to the threshold, plus noise, refitted in that direction) and the
    item's p-value is the larger of the two.  Testing the smaller distance against draws around one shrunk curve
    is not valid: near a U-shape the two distances are close, noise that lowers one raises the other, and the
    minimum of the draws stays under the threshold while the population's own minimum can rise (measured: 17%
    false findings for an effect exactly at the threshold, 4.3% this way; see docs/methodology.md)."""
    wv = np.asarray(w, dtype=float).ravel()
    used = wv > 0
    tests = []
    for direction in ("increasing", "decreasing"):
        fit = curve.copy()
        fit[used] = weighted_isotonic(curve[used], wv[used], direction == "increasing", loss)
        gap = MonotoneGap(wv, [direction], loss)
        value = gap(curve)
        centre = at_threshold(curve, fit, value, thr)
        tests.append(budget.null_test(minimum_effect(stat_monotonicity(wv, loss, [direction]), centre, value, thr,
                                                     noise, rng), tol))

    def build(res):
        worst = max(res, key=lambda x: x.p_value)
        return _item("monotonicity", r.features, s.value, thr, p=worst.p_value, noise=worst.noise_level,
                     draws=sum(x.draws for x in res), statistic=statistic,
                     test=f"{TESTS['monotonicity'][1]}: intersection-union of the two directions' tests "
                          f"({noise.source}), {sum(x.draws for x in res):,} draws")
    return _Pending(tests, build)


def assess(inputs, results, utility_scores, scores, *, surrogate=None, extra_noise=None) -> dict:
    """``{criterion: {features: Evidence}}`` for every ranked utility and 2D criterion.

    Parameters
    ----------
    inputs : ScoringInputs
    results : list of PDResult
    utility_scores : {features: {utility id: UtilityScore}}
    scores : DataFrame
        The audit's score table (for the 2D criteria's values).
    surrogate : Surrogate, optional

    Besides the criteria, ``"similarity_level:<name>"`` holds one item per
    comparison model: the overall difference of the two models' predictions
    (a model-level fact, not a per-feature finding).

    ``extra_noise``: ``{(features, target index, "response" | "link"): factor}``, noise added to every PD's
    Monte-Carlo noise (the refits' spread for the learner-level test).
    """
    cfg = inputs.config
    sd = np.asarray(inputs.prediction_std, dtype=float)
    sd = np.where(np.isfinite(sd) & (sd > 0), sd, np.nan)
    raw: dict[str, dict] = {}
    noises: dict[tuple, NoiseModel | None] = {}
    imp_ev: dict[str, Evidence] = {}
    one_d = [r for r in results if r.ndim == 1]
    two_d = [r for r in results if r.ndim == 2]
    budget = _Budget(cfg)

    def noise_of(r, t):
        key = (r.features, t)
        if key not in noises:
            noises[key] = _with_refits(pd_noise_model(r, t, inputs.sample_weight, spread=inputs.spread_of(t)),
                                       extra_noise, (r.features, t, "response"))
        return noises[key]

    def threshold(t):
        return float(cfg.materiality * sd[t]) if t < sd.size else float("nan")

    def tol_of(t):
        return 1e-9 * (sd[t] if t < sd.size and np.isfinite(sd[t]) else 1.0)

    for r in one_d:
        w = inputs.cell_weights(r).ravel()
        cells = None  # every row's cell: made by the incidence test only, when it runs (_incidence_item)
        # importance (for the pair criteria and the 'low' ice_variance criterion)
        wimp = marginal_weights(r)[0]
        imp = flatness(np.asarray(r.average, dtype=float), r.kinds[0], axis=-1, weights=wimp)
        t = int(np.nanargmax(imp)) if np.isfinite(imp).any() else 0
        imp_ev[r.features[0]] = _flat_test("importance", r, t, imp[t], threshold(t), noise_of(r, t),
                                           wimp, budget, tol_of(t),
                                           statistic="importance (density-weighted sd of the PD)",
                                           sample_weight=inputs.sample_weight)
        for uid, s in utility_scores[r.features].items():
            if uid in TRUST_IDS:
                continue
            if uid == "ice_variance" and cfg.ice_variance == "low":
                continue
            if not s.available:
                raw.setdefault(uid, {})[r.features] = _item(uid, r.features, np.nan, np.nan,
                                                            reason=s.reason or "not applicable.")
                continue
            t = r.target_index(s.target)
            raw.setdefault(uid, {})[r.features] = _test_1d(uid, s, r, t, w, cells, inputs, noise_of, budget,
                                                           threshold(t), tol_of(t))
    raw = {uid: _resolve(items, budget) for uid, items in raw.items()}
    imp_ev = _resolve(imp_ev, budget)
    if cfg.ice_variance == "low" and "ice_variance" in cfg.utilities:
        raw["ice_variance"] = {}
        for r in one_d:
            if "ice_variance" not in utility_scores[r.features]:
                continue
            e = imp_ev[r.features[0]]
            raw["ice_variance"][r.features] = Evidence(
                "ice_variance", r.features, e.value, e.p_value, np.nan, e.noise_level, e.threshold, e.material, False,
                e.why, test=e.test, null=e.null,
                statistic="importance (with ice_variance='low' a PDP qualifies when its feature is important; the "
                          "ranking puts the most homogeneous first)",
                draws=e.draws, details={"ice_variance": float(utility_scores[r.features]["ice_variance"].value)})
    response = one_d[0].response if one_d else ""
    evidence = {uid: _finish(items if uid.split(":", 1)[0] in _STRUCTURE else _on_response(items, response), cfg)
                for uid, items in raw.items()}
    imp_final = _finish(_on_response({(k,): v for k, v in imp_ev.items()}, response), cfg) if imp_ev else {}

    # ---- the overall level difference of each comparison model: one line, not a per-feature finding
    for name, other_pred in inputs.comparison_predictions.items():
        level = _level_difference(inputs, name, other_pred, threshold, cfg)
        if level is not None:
            evidence[f"similarity_level:{name}"] = {(): level}

    # ---- 2D criteria
    if two_d:
        evidence.update(assess_2d(inputs, two_d, scores, imp_final, surrogate, (threshold, tol_of, noise_of), cfg,
                                  extra_noise))
    evidence["importance_1d"] = imp_final
    return evidence


def _flat_test(criterion, r, t, value, thr, noise, weights, budget, tol, *, statistic, rng_salt="",
               sample_weight=None):
    """A statistic that is 0 for a flat curve (PD ``r``'s at target ``t``), tested against a flat curve plus the
    curve's noise."""
    kind = r.kinds[0]
    if not np.isfinite(value):
        return _item(criterion, r.features, np.nan, thr, statistic=statistic, reason="no PD values.")
    if noise is None:
        return _item(criterion, r.features, value, thr, statistic=statistic,
                     reason=noise_gap_reason(r, t, sample_weight) or "no ICE curves or standard errors for this PD")
    if not (np.isfinite(thr) and value >= thr):
        return _item(criterion, r.features, value, thr, p=1.0 if np.isfinite(thr) else np.nan, statistic=statistic)
    curve = np.asarray(r.average[t], dtype=float).ravel()
    wv = np.full(curve.size, 1.0 / curve.size) if weights is None else np.asarray(weights, dtype=float).ravel()
    level = float(np.sum(wv * curve) / np.sum(wv)) if np.sum(wv) > 0 else float(np.mean(curve))
    centre = at_threshold(curve, np.full(curve.size, level), value, thr)
    test = budget.null_test(minimum_effect(stat_flatness(kind, weights), centre, value, thr, noise,
                                           _rng(r.features, f"{criterion}{t}{rng_salt}")), tol)

    def build(res):
        return _item(criterion, r.features, value, thr, p=res[0].p_value, noise=res[0].noise_level,
                     draws=res[0].draws, statistic=statistic,
                     test=f"{TESTS['importance'][1]} ({noise.source}), {res[0].draws:,} draws")
    return _Pending([test], build)


def _test_1d(uid, s, r, t, w, cells, inputs, noise_of, budget, thr, tol) -> Evidence:
    """The Evidence (before the multiple-testing adjustment) of one available 1D utility score."""
    cfg = inputs.config
    material = bool(np.isfinite(thr) and s.value >= thr)
    if uid == "ice_variance":
        return _ice_variance_item(s, r, t, inputs, thr, tol)
    if uid == "incidence":
        return _incidence_item(s, r, t, w, cells, inputs, noise_of(r, t), thr, tol, budget)
    if uid.startswith("similarity:"):
        return _similarity_item(uid, s, r, t, w, inputs, thr, tol, budget)
    statistic = {"monotonicity": "gap to the best monotone curve", "lipschitz": "gap to the closest slope-bounded curve",
                 "slope": "steepest slope per grid range (its threshold: 2 × materiality × prediction sd "
                          "as the change across the steepest interval)"}.get(uid, uid)
    details, reason = None, ""
    if uid == "slope":
        thr, material, details, reason = _slope_materiality(s, thr)
    if not material:
        return _item(uid, r.features, s.value, thr, p=1.0 if np.isfinite(thr) else np.nan, statistic=statistic,
                     details=details, reason=reason, material=False)
    noise = noise_of(r, t)
    if noise is None:
        return _item(uid, r.features, s.value, thr, statistic=statistic, details=details,
                     reason=noise_gap_reason(r, t, inputs.sample_weight)
                     or "no ICE curves or standard errors for this PD")
    rng = _rng(r.features, uid)
    cap = None
    curve = np.asarray(r.average[t], dtype=float).ravel()
    if uid == "monotonicity" and not s.details.get("declared") and np.isfinite(thr) and thr > 0:
        return _monotonicity_both_ways(s, r, curve, noise, w, cfg.loss, thr, tol, budget, rng, statistic)
    if uid == "monotonicity":
        centre = at_threshold(curve, np.asarray(s.comparison, dtype=float).ravel(), s.value, thr)
        stat = stat_monotonicity(np.asarray(w, dtype=float).ravel(), cfg.loss, [s.details.get("direction")]
                                 if s.details.get("declared") else ["increasing", "decreasing"])
    elif uid == "lipschitz":
        centre = at_threshold(curve, np.asarray(s.comparison, dtype=float).ravel(), s.value, thr)
        stat = stat_lipschitz(r, np.asarray(w, dtype=float).ravel(), cfg.loss, float(s.details["bound"][0]))
        cap = LIPSCHITZ_MAX_DRAWS
    elif uid == "slope":
        centre, stat = at_threshold(curve, np.zeros_like(curve), s.value, thr), stat_slope(r)
    else:
        return _item(uid, r.features, s.value, thr, statistic=statistic, reason=f"no noise test for {uid}")
    if stat is None:
        return _item(uid, r.features, s.value, thr, statistic=statistic, reason="the grid has no range")
    test = budget.null_test(minimum_effect(stat, centre, s.value, thr, noise, rng), tol, cap=cap)

    def build(res):
        return _item(uid, r.features, s.value, thr, p=res[0].p_value, noise=res[0].noise_level, draws=res[0].draws,
                     statistic=statistic, test=f"{TESTS[uid][1]} ({noise.source}), {res[0].draws:,} draws",
                     details=details)
    return _Pending([test], build)


#: The slope's materiality, on the importance's scale: a PD's importance is its density-weighted standard deviation,
#: and a step of height h moves it by at most h / 2 (a step at the median).  So a change across the steepest interval
#: is material from STEP_TO_IMPORTANCE x the materiality threshold: no smaller a move than the least that makes a
#: feature an importance finding (issue 53: at 1 x, a pure-noise feature of a forest was a slope finding in most seeds).
STEP_TO_IMPORTANCE = 2.0


def _slope_materiality(s, thr: float):
    """The slope's materiality, judged on the prediction scale: the change of the PD across the steepest
    interval (the whole grid for a linear PD) against ``STEP_TO_IMPORTANCE x thr`` (thr: materiality x prediction
    sd), the move a step needs to make the feature an importance finding.

    Returns ``(threshold, material, details, reason)`` with the threshold on the statistic's scale (slope per
    full range): ``thr / share_of_range``, so "slope >= threshold" is "change across the interval >= thr".
    The noise test (:func:`~autopdp.findings.null_draws.stat_slope`) is unchanged: the steepest slope of a flat PD plus noise.
    """
    d = s.details or {}
    change, share = float(d.get("change", np.nan)), float(d.get("share_of_range", np.nan))
    if not (np.isfinite(change) and np.isfinite(share) and share > 0 and np.isfinite(thr)):
        return thr, bool(np.isfinite(thr) and s.value >= thr), None, ""
    thr = STEP_TO_IMPORTANCE * thr
    details = {"change": change, "change_threshold": thr, "between": d.get("between"), "linear": bool(d.get("linear")),
               "per_unit": d.get("per_unit")}
    material = abs(change) >= thr
    where = "over the whole grid (the PD is linear)" if d.get("linear") else "across the steepest interval"
    between = d.get("between") or ["?", "?"]
    reason = "" if material else (f"the change of the PD {where} ({fmt(between[0])} to {fmt(between[1])}), "
                                  f"{fmt(abs(change))}, is below the materiality threshold {fmt(thr)}.")
    return thr / share, material, details, reason


def _ice_variance_item(s, r, t, inputs, thr_response, tol) -> Evidence:
    d = s.details or {}
    scale_name = d.get("scale", "prediction")
    statistic = f"spread of centred ICE curves on the {scale_name.split(' (')[0]} scale"
    kept = ("clipped_share", "margin_unavailable", "floored", "uncorrected_mean_square", "refit_bias")  # the learner's
    scale = {"scale": scale_name, **{k: d[k] for k in kept if k in d}}
    if d.get("centering") == "none":
        return _item("ice_variance", r.features, s.value, thr_response, statistic="spread of uncentred ICE curves",
                     reason="the uncentred spread (centering='none') measures the rows' levels; it has no noise "
                            "test for heterogeneity")
    thr, spread = _link_scale_threshold(inputs, r, t, scale_name)
    if not (np.isfinite(thr) and s.value >= thr):
        return _item("ice_variance", r.features, s.value, thr, p=1.0 if np.isfinite(thr) else np.nan,
                     statistic=statistic, details=scale)
    mean, se = float(d.get("mean_square", np.nan)), float(d.get("mean_square_se", np.nan))
    if spread is not None:
        # the threshold's square moves by 2 thr^2 x the prediction sd's relative error: its variance is added as if
        # independent of the mean square's (conservative when, as usual, rows that widen the ICE spread also widen
        # the predictions' spread)
        se = float(np.hypot(se, 2.0 * thr * thr * np.sqrt(spread.sum_sq)))
    rows = int(d.get("ice_rows", 0))
    n_eff = float(d.get("effective_rows", np.nan))
    if np.isfinite(n_eff) and n_eff < EFFECTIVE_ROWS_FLOOR:
        return _item("ice_variance", r.features, s.value, thr, statistic=statistic, details=scale,
                     reason=f"the ICE rows weigh as {n_eff:.1f} effective rows, fewer than {EFFECTIVE_ROWS_FLOOR}: "
                            "the z-test's normal approximation is not trusted")
    tol_scale = tol * (1.0 if not np.isfinite(thr) else max(thr, 1.0))
    if not np.isfinite(mean) or not np.isfinite(se):
        return _item("ice_variance", r.features, s.value, thr, statistic=statistic,
                     reason="the rows' spread has no standard error", details=scale)
    if s.value <= tol_scale or se <= 0:
        p = 1.0 if s.value <= tol_scale else ANALYTIC_P_FLOOR
    else:  # the minimum-effect null: mean square at most the threshold's square
        p = analytic_p(stats.norm.sf((mean - thr * thr) / se))
    return _item("ice_variance", r.features, s.value, thr, p=p, statistic=statistic,
                 test=f"{TESTS['ice_variance'][1]} over {rows:,} ICE rows",
                 details={**scale, "z": float((mean - thr * thr) / se) if se > 0 else None,
                          # the spread the one-sided 95% test needs to reject: its critical value on the statistic
                          "critical": float(np.sqrt(thr * thr + stats.norm.ppf(0.95) * se)) if se > 0 else None})


def _incidence_of(payload, predicted, target=None):
    """:func:`~autopdp.scores.calibration.incidence_parts` of ``predicted`` (every row's prediction of the target)
    and ``payload``: ``(observed, cells, the other arguments)``; with every row's ``target`` ``(rows, 1)``,
    ``observed`` is ``(class or None, is_classifier)``, what the observed values are made of here."""
    observed, cells, rest = payload
    if target is not None:
        observed = observed_values(target[:, 0], *observed)
    return incidence_parts(predicted=predicted, observed=observed, cells=cells, **rest)


def _incidence_item(s, r, t, w, cells, inputs, noise, thr, tol, budget) -> Evidence:
    cfg = inputs.config
    statistic = "gap between the PD and the data's incidence"
    if r.response == "crisp":
        return _item("incidence", r.features, s.value, thr, statistic=statistic,
                     reason="crisp labels are not probabilities, so a correct model gives no calibration null")
    if inputs.response is None:
        return _item("incidence", r.features, s.value, thr, statistic=statistic,
                     reason="the model's predictions on the rows were not given")
    if inputs.sample_weight is not None:
        sw = np.asarray(inputs.sample_weight, dtype=float)
        n_eff = float(sw.sum() ** 2 / np.sum(sw * sw)) if np.isfinite(sw).all() and sw.sum() > 0 else np.nan
        if np.isfinite(n_eff) and n_eff < EFFECTIVE_ROWS_FLOOR:
            return _item("incidence", r.features, s.value, thr, statistic=statistic,
                         reason=f"the sample weights leave {n_eff:.1f} effective rows, fewer than "
                                f"{EFFECTIVE_ROWS_FLOOR}: the bins' residual means cannot be taken as Gaussian")
    yv = inputs.observed(s.target)
    cells = grid_cells(inputs, r) if cells is None else cells
    # two passes over every row's prediction and target: where they are kept (a cluster's worker: the target's
    # observed values made there), the rest sent there
    kept_y = isinstance(yv, KeptObserved)
    response = inputs.response.column(t)
    extra = (beside(yv.kept, inputs.response),) if kept_y else ()
    parts = on_whole(_incidence_of, ((yv.target, yv.is_classifier) if kept_y else yv, cells, dict(
        sample_weight=inputs.sample_weight, pd_curve=np.ravel(r.average[t]), kind=r.kinds[0], noise=noise,
        loss=cfg.loss, threshold=thr if np.isfinite(thr) else 0.0,
        ice=None if r.individual is None or r.centered else r.individual[t], ice_rows=r.ice_rows,
        ice_weight=ice_row_weights(r, inputs.sample_weight))), response, *extra)
    rng = _rng(r.features, "incidence")
    parts_of = [("calibration", parts.calibration, parts.draw_calibration),
                ("dependence", parts.dependence, parts.draw_dependence)]
    tests, where = [], {}
    for kind, value, draw in parts_of:
        mat = bool(np.isfinite(value) and np.isfinite(thr) and value >= thr)
        if draw is not None and np.isfinite(value) and mat:
            where[kind] = len(tests)
            tests.append(budget.test(value, lambda n, d=draw: d(n, rng), tol))

    def build(res):
        out = {}
        for kind, value, draw in parts_of:
            mat = bool(np.isfinite(value) and np.isfinite(thr) and value >= thr)
            if kind in where:
                rr = res[where[kind]]
                out[kind] = (value, rr.p_value, rr.noise_level, rr.draws, mat)
            elif draw is None or not np.isfinite(value):
                out[kind] = (value, np.nan, np.nan, 0, mat)
            else:
                out[kind] = (value, 1.0, np.nan, 0, mat)
        details = {"calibration_gap": out["calibration"][0], "calibration_p": out["calibration"][1],
                   "dependence_gap": out["dependence"][0], "dependence_p": out["dependence"][1],
                   "dependence_rows": parts.dependence_rows, "paper_gap": float(s.value)}
        material = [k for k in out if out[k][4]]
        if not material:
            value = max((v[0] for v in out.values() if np.isfinite(v[0])), default=np.nan)
            return _item("incidence", r.features, value, thr, p=1.0 if np.isfinite(thr) else np.nan,
                         statistic="larger of the calibration and dependence gaps", details=details)
        tested = [k for k in material if np.isfinite(out[k][1])]
        if not tested:
            k = material[0]
            return _item("incidence", r.features, out[k][0], thr, statistic=f"{k} gap", kind=k, details=details,
                         reason="the bins' noise could not be drawn")
        k = min(tested, key=lambda k: (out[k][1], k != "calibration"))
        p = min(1.0, 2.0 * out[k][1])  # Bonferroni over the two parts
        draws = sum(v[3] for v in out.values())
        what = ("calibration gap (observed against the model's mean prediction, bin by bin)" if k == "calibration"
                else "dependence gap (the PD against the model's mean prediction for each bin's rows at the bin's value)")
        return _item("incidence", r.features, out[k][0], thr, p=p, noise=out[k][2], draws=draws, kind=k,
                     statistic=what, details=details, test=f"{TESTS['incidence'][1]}; {draws:,} draws")
    return _Pending(tests, build) if tests else build([])


def _similarity_item(uid, s, r, t, w, inputs, thr, tol, budget) -> Evidence:
    """Per-feature similarity on the centred shape gap, with the paired noise of the two models' ICE curves."""
    name = uid.split(":", 1)[1]
    other = inputs.comparisons.get(name, {}).get(r.features)
    statistic = "shape gap (the PDs' difference less its density-weighted mean)"
    d = s.details or {}
    shape_gap = float(d.get("shape_gap", np.nan))
    details = {"level_shift": d.get("level_shift"), "total_gap": float(s.value)}
    if not np.isfinite(shape_gap):
        return _item(uid, r.features, np.nan, thr, statistic=statistic, reason="no shape gap")
    if not (np.isfinite(thr) and shape_gap >= thr):
        return _item(uid, r.features, shape_gap, thr, p=1.0 if np.isfinite(thr) else np.nan, statistic=statistic,
                     details=details)
    noise, how = _paired_noise(r, t, other, s.target, inputs.sample_weight)
    if noise is None:
        return _item(uid, r.features, shape_gap, thr, statistic=statistic, details=details,
                     reason=how or "neither PD kept ICE curves or standard errors")
    wv = np.asarray(w, dtype=float)
    rng = _rng(r.features, uid)
    diff = np.asarray(r.average[t], dtype=float).ravel() - _other_curve(other, s.target, r)
    centre = at_threshold(diff, np.zeros_like(diff), shape_gap, thr) if np.isfinite(diff).all() \
        else np.zeros(diff.size)
    noise = with_threshold_noise(noise, inputs.spread_of(t))

    def gap(curves):
        return _weighted_sd(curves, wv) if wv.sum() > 0 else np.zeros(curves.shape[0])
    test = budget.null_test(minimum_effect(gap, centre, shape_gap, thr, noise, rng), tol)

    def build(res):
        return _item(uid, r.features, shape_gap, thr, p=res[0].p_value, noise=res[0].noise_level, draws=res[0].draws,
                     statistic=statistic, details={**details, "noise": how},
                     test=f"{TESTS['similarity'][1]} ({how}), {res[0].draws:,} draws")
    return _Pending([test], build)


#: the criteria about structure: each names its own (link) scale; the others are on the response (_on_response)
_STRUCTURE = ("ice_variance", "interaction", "correlation", "intersection")


def _on_response(items: dict, response: str) -> dict:
    """The items of a level criterion with their statistic naming the response's scale (before any bracket)."""
    name = response_scale_name(response)
    out = {}
    for k, e in items.items():
        stat = e.statistic
        if stat and " scale" not in stat:
            head, sep, tail = stat.partition(" (")
            stat = f"{head} on the {name} scale{sep}{tail}"
        out[k] = dataclasses.replace(e, statistic=stat, details={**e.details, "scale": name})
    return out

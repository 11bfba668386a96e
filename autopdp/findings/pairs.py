"""The 2D criteria's findings: a pair's association, importance, surrogate importance, interaction and intersection."""

from __future__ import annotations

import numpy as np

from ..pd.link import response_scale_name
from ..scores.importance import marginal_weights
from .draws import _Budget, _link_surface, _link_scale_threshold, _Pending, _resolve, _rng, _short, _with_refits
from .null_draws import _additive_fit, _interaction_stat, at_threshold, minimum_effect
from .significance import TESTS, Evidence, analytic_p, noise_gap_reason, pd_noise_model
from .words import _PAIR_NULL, _PAIR_UNTESTED, _SURROGATE_NOT_MATERIAL, _finish, _intersection_why, _item, \
    _pair_importance_reason

__all__ = ["assess_2d", "PAIR_CRITERIA_TESTED"]

#: the 2D criteria with a test of their own (intersection counts theirs)
PAIR_CRITERIA_TESTED = ("correlation", "importance", "interaction", "surrogate_importance")


def _pair_importance(r, imp_final, two_importance, surrogate, crit: dict) -> None:
    """Both features' importance tests (intersection-union: the larger p; untested if either is), and the same
    for their importances to the additive surrogate."""
    a, b = r.features
    ea, eb = imp_final.get((a,)), imp_final.get((b,))
    if ea is None or eb is None:
        return
    value = float(two_importance.get(r.features, np.nan))
    material = ea.material and eb.material
    reason = _pair_importance_reason([(e.features[0], e.value, e.threshold) for e in (ea, eb) if not e.material])
    if material:
        p = np.nan if not (np.isfinite(ea.p_value) and np.isfinite(eb.p_value)) else max(ea.p_value, eb.p_value)
        if not np.isfinite(p):
            reason = _PAIR_UNTESTED
    else:
        p = 1.0
    # the draws of the test whose p is the pair's (the larger), as for any Monte-Carlo p
    draws = int(max((ea, eb), key=lambda e: e.p_value).draws) if material and np.isfinite(p) else 0
    crit["importance"][r.features] = _item(
        "importance", r.features, value, max(ea.threshold, eb.threshold), p=p, material=material, draws=draws,
        statistic="pair importance (geometric mean of the two features' importances)", null=_PAIR_NULL,
        test="intersection-union: the larger of the two features' importance tests", reason=reason,
        details={"importance": {a: ea.value, b: eb.value}})
    if surrogate is not None:
        sa = float(surrogate.importance.get(a, np.nan))
        sb = float(surrogate.importance.get(b, np.nan))
        thr = max(ea.threshold, eb.threshold)
        smat = bool(np.isfinite(sa) and np.isfinite(sb) and min(sa, sb) >= thr)
        sreason = "" if smat else _SURROGATE_NOT_MATERIAL
        crit["surrogate_importance"][r.features] = _item(
            "surrogate_importance", r.features, float(np.sqrt(sa * sb)), thr, p=p if smat else 1.0,
            draws=draws if smat else 0, material=smat, statistic="pair importance to the additive surrogate",
            null=_PAIR_NULL, test="the two features' PD importance tests (intersection-union)", reason=sreason)


def _interaction(inputs, r, tests: tuple, extra_noise, budget: _Budget):
    """The interaction item of 2D PD ``r``: the additive part of the surface plus noise, on the model's link scale
    (autopdp.pd.link).  ``tests``: (threshold, tol_of, noise_of) of the response's scale."""
    threshold, tol_of, noise_of = tests
    surface = _link_surface(inputs, r)
    rs, sw = (r, inputs.sample_weight) if surface is None else (surface.result, surface.row_weights)
    avg = np.asarray(rs.average, dtype=float)
    mw = marginal_weights(r)
    stat = _interaction_stat(avg, r.kinds, mw)
    t = int(np.nanargmax(stat)) if np.isfinite(stat).any() else 0
    scale_name = response_scale_name(r.response) if surface is None else surface.name
    thr, spread = (threshold(t), None) if surface is None else _link_scale_threshold(inputs, r, t, scale_name)
    statistic = f"Greenwell interaction on the {_short(scale_name)} scale"
    # on a link scale the surface is the mean of the kept rows' ICE surfaces on that scale: those rows are its sample
    scale = {"scale": scale_name, **({"link_rows": int(np.shape(rs.individual)[1])} if surface is not None else {})}
    if not (np.isfinite(thr) and stat[t] >= thr):
        return _item("interaction", r.features, stat[t], thr, details=scale,
                     p=1.0 if np.isfinite(thr) else np.nan, statistic=statistic)
    noise = noise_of(r, t) if surface is None else \
        _with_refits(pd_noise_model(rs, t, sw, spread=spread), extra_noise, (r.features, t, "link"))
    if noise is None:
        return _item("interaction", r.features, stat[t], thr, statistic=statistic, details=scale,
                     reason=noise_gap_reason(rs, t, sw) or "no standard errors for this 2D PD (std_rows=0)")
    base = at_threshold(avg[t], _additive_fit(avg[t], *mw), stat[t], thr,
                        statistic=lambda f: float(_interaction_stat(f[None], r.kinds, mw)[0]),
                        batch=lambda fs: _interaction_stat(fs, r.kinds, mw))
    rng = _rng(r.features, "interaction")
    shape = base.shape
    null = minimum_effect(lambda fs: _interaction_stat(fs.reshape((-1, *shape)), r.kinds, mw), base, stat[t], thr,
                          noise, rng)
    test = budget.null_test(null, tol_of(t))

    def build(res, value=stat[t]):
        return _item("interaction", r.features, value, thr, p=res[0].p_value, noise=res[0].noise_level,
                     draws=res[0].draws, statistic=statistic, details=scale,
                     test=f"{TESTS['interaction'][1]} ({noise.source}), {res[0].draws:,} draws")
    return _Pending([test], build)


def _intersection(two_d, evidence: dict, two_intersection: dict) -> dict:
    """A pair is an intersection finding when two other criteria found it (pair and surrogate importance count once)."""
    inter = {}
    for r in two_d:
        passed = [c for c in PAIR_CRITERIA_TESTED
                  if c in evidence and r.features in evidence[c] and evidence[c][r.features].passed]
        once = "importance" in passed and "surrogate_importance" in passed
        if once:
            passed.remove("surrogate_importance")  # two readings of one fact: both features matter
        value = float(two_intersection.get(r.features, np.nan))
        ok = len(passed) >= 2
        why = _intersection_why(passed)
        inter[r.features] = Evidence("intersection", r.features, value, np.nan, np.nan, np.nan, 2.0, ok, ok, why,
                                     test="count of the other criteria's findings", statistic="criteria passed",
                                     null="none of its own: it counts the other criteria's tested findings",
                                     details={"criteria": passed, **({"with_importance": ["surrogate_importance"]}
                                                                     if once else {})})
    return inter


def assess_2d(inputs, two_d, scores, imp_final, surrogate, tests: tuple, cfg, extra_noise=None) -> dict:
    """``{criterion: {pair: Evidence}}`` for the 2D criteria ``cfg.criteria_2d`` names.  ``tests``: (threshold,
    tol_of, noise_of) of the response's scale, as the 1D assessment made them."""
    evidence = {}
    two = scores[scores["kind"] == "2d"].set_index(scores.loc[scores["kind"] == "2d", "features"].map(tuple))
    two_importance = dict(zip(two.index, two["importance"])) if "importance" in two else {}
    two_intersection = dict(zip(two.index, two["intersection"])) if "intersection" in two else {}
    crit: dict[str, dict] = {c: {} for c in PAIR_CRITERIA_TESTED}
    associations = inputs.associations(two_d)
    budget = _Budget(cfg)
    for r in two_d:
        value, p = associations[r.features]  # correlation: the data's association test
        crit["correlation"][r.features] = _item(
            "correlation", r.features, value, cfg.min_association, p=analytic_p(p),
            statistic="association (0-1)", test=TESTS["correlation"][1])
        _pair_importance(r, imp_final, two_importance, surrogate, crit)
        crit["interaction"][r.features] = _interaction(inputs, r, tests, extra_noise, budget)
    crit["interaction"] = _resolve(crit["interaction"], budget)
    for c, items in crit.items():
        if items and c in cfg.criteria_2d:
            evidence[c] = _finish(items, cfg)
    if "intersection" in cfg.criteria_2d:
        evidence["intersection"] = _intersection(two_d, evidence, two_intersection)
    return evidence

"""Plain-language sentences for the curated findings (one a validator can paste into a memo)."""

from __future__ import annotations

import numpy as np

from ..utils.formatting import fmt, share, where_text
from ..trust.ood import OOD_MOSTLY, OOD_OK, ood_verdict

__all__ = ["finding_sentence", "UTILITY_TITLES", "UTILITY_DEFINITIONS", "PAIR_SENTENCES", "fmt", "p_text", "evidence_text",
           "robust_kind", "robustness_sentence"]

UTILITY_TITLES = {
    "monotonicity": "Least monotonic",
    "lipschitz": "Least Lipschitz-bounded",
    "incidence": "Furthest from the data's incidence",
    "slope": "Steepest",
    "ice_variance": "Most heterogeneous (ICE variance)",
    "stratpd": "Furthest from the data's own partial dependence (StratPD)",
    "ale_divergence": "Furthest from accumulated local effects (ALE)",
    "ood_share": "Most computed from unrealistic rows",
    "surrogate_importance": "Pairs important to the additive surrogate",
    "correlation": "Most correlated pairs",
    "importance": "Pairs of important features",
    "interaction": "Strongest interactions",
    "intersection": "High under several criteria",
}

UTILITY_DEFINITIONS = {
    "monotonicity": (
        "The gap between the PD and its best monotone (isotonic) fit, in the direction that fits best or the "
        "direction declared for the feature (paper eq. 6); 0 means the average prediction moves one way only."
    ),
    "lipschitz": (
        "The gap between the PD and the closest curve whose slope stays within the bound l (paper eq. 7, solved "
        "with cvxpy); by default l is a multiple of the PD's own average slope, so large values mean changes far "
        "more abrupt than the curve's overall change (a straight line scores 0)."
    ),
    "incidence": (
        "The gap between the PD and what the data shows near each grid value: the observed share of the class "
        "(classifiers) or the mean target (regressors) (paper eq. 8-9)."
    ),
    "similarity": (
        "The gap between this model's PD and a comparison model's PD on the same grid (paper eq. 10), shown and "
        "tested as the shape gap: the PDs' difference less its density-weighted mean, since the models' overall "
        "level difference is the same for every feature and stated once, in the notes; large values mean the "
        "two models learned different relationships."
    ),
    "slope": (
        "The steepest change of the PD between neighbouring grid values (paper eq. 11). The ranking value is that "
        "slope per grid range of the feature (its grid's span: the 5th to 95th percentile by default; the whole range "
        "for a feature with few distinct values, every one of which is on the grid); the findings state what it does "
        "in the feature's units: the change of "
        "the prediction across the steepest interval and the slope per unit. It is material when that change is at "
        "least twice the materiality fraction × the prediction standard deviation: the least step that makes a "
        "feature an importance finding (a step of height h moves the PD's standard deviation by at most h / 2). A PD that is a straight line has no "
        "steepest interval and is described as linear (its change over the whole grid)."
    ),
    "stratpd": (
        "The gap between the centred PD and StratPD, the partial dependence estimated from the data alone by "
        "stratifying on the other features (Parr and Wilson); large values mean the model's story differs from the "
        "data's once the other features are held alike."
    ),
    "ale_divergence": (
        "The gap between the centred PD and the centred accumulated local effects (Apley and Zhu), which move the "
        "model only within the data's neighbourhood; large values mean the PD rests on extrapolation."
    ),
    "ood_share": (
        "The share of the rows a PD averages over (each data row moved to a grid value) that are out of distribution "
        "in the features the PD moves: the grid cell lies outside the data in the space of those features, or the "
        "moved values are implausible given the row's other values (a Gaussian copula of the features); both edges "
        "are calibrated per PD so that 1% of the real rows fall outside. "
        f"Verdict: ok up to {OOD_OK:.0%}, caution above, mostly unrealistic above {OOD_MOSTLY:.0%}; grid values "
        "where more than half the moved rows are out are shaded grey on the plots (hatched on heatmaps)."
    ),
    "ice_variance": (
        "The spread of the individual (ICE) curves once each is centred at its own mean (c-ICE, Goldstein et al. "
        "2015): the density-weighted root-mean variance over the grid. 0 means every row's curve has the same shape "
        "(an additive effect); high values mean the average hides different effects for different rows. (The paper's "
        "eq. 12 uses uncentred curves, which measure how far apart the rows' levels are, not heterogeneity.)"
    ),
}


def _scaled(value, scale) -> str:
    """The score as a multiple of the prediction standard deviation (the model's own output scale)."""
    try:
        v, sd = float(value), float(scale)
    except (TypeError, ValueError):
        return ""
    if not (np.isfinite(v) and np.isfinite(sd) and sd > 0) or v == 0:
        return ""  # a zero needs no scale: "0 (0 prediction standard deviations)" says nothing more
    return f" ({v / sd:.2g} prediction standard deviations)"


def p_text(p) -> str:
    """A p-value for people: 'p < 0.0001' below that, 3 significant digits above."""
    try:
        x = float(p)
    except (TypeError, ValueError):
        return "n/a"
    if not np.isfinite(x):
        return "n/a"
    if x < 1e-4:
        return "< 0.0001"
    return f"{x:.2g}"


def evidence_text(e, *, with_test: bool = True) -> str:
    """One line for a validator: score, materiality threshold, p-value and noise level of a finding (and the
    test that gave the p-value, unless ``with_test`` is False: the summary, whose tests the methodology names).

    Never ends with a full stop, so lines joined with "; " read cleanly.
    """
    if e is None:
        return ""
    if e.criterion == "intersection":
        # its sentence names the criteria and their values; the proof is the count and the ranking's value
        if e.passed:
            n = len((getattr(e, "details", None) or {}).get("criteria") or ())
            return f"intersection {fmt(e.value, 2)} (mean percentile), findings under {n} pair criteria"
        return (e.why or "").strip().rstrip(".")
    parts = [f"{e.criterion} {fmt(e.value)}"]
    d = getattr(e, "details", None) or {}
    unit = ""
    if e.criterion == "slope" and "change" in d:
        # every number on the slope's scale (per grid range); materiality is the change across the interval
        unit = " per grid range"
        where = "over the grid" if d.get("linear") else "across the interval"
        parts = [f"slope {fmt(e.value)}{unit} (a change of {fmt(abs(d['change']))} {where})"]
        if np.isfinite(e.threshold) and np.isfinite(d.get("change_threshold", np.nan)):
            parts.append(f"threshold {fmt(e.threshold)}{unit} (a change of {fmt(d['change_threshold'])})")
    elif np.isfinite(e.threshold):
        parts.append(f"threshold {fmt(e.threshold)}")
    if np.isfinite(e.adjusted_p):
        parts.append(f"adjusted p {p_text(e.adjusted_p)}")
    if np.isfinite(e.noise_level):
        parts.append(f"noise level {fmt(e.noise_level)}{unit}")
    if with_test and getattr(e, "test", ""):
        parts.append(f"test: {e.test}")
    return ", ".join(parts).strip().rstrip(".")


#: a criterion's name inside a sentence ("the interaction finding is specific to this fit")
_CRITERION_WORDS = {"lipschitz": "Lipschitz", "ice_variance": "ICE-variance", "importance": "pair-importance",
                    "surrogate_importance": "surrogate-importance", "ale_divergence": "ALE", "stratpd": "StratPD",
                    "ood_share": "out-of-distribution"}


def criterion_word(uid: str) -> str:
    if uid.startswith("similarity:"):
        return f"similarity-to-{uid.split(':', 1)[1]}"
    return _CRITERION_WORDS.get(uid, uid)


def title_of(uid: str) -> str:
    if uid.startswith("similarity:"):
        return f"Most different from {uid.split(':', 1)[1]}"
    return UTILITY_TITLES.get(uid, uid)


def _class_phrase(outcome: str | None, target) -> str:
    """'cultivar = 1' from 'P(cultivar = 1)' (or 'class 1'): the class a share is of."""
    if outcome and outcome.startswith("P(") and outcome.endswith(")"):
        return outcome[2:-1]
    return f"class {target}" if target is not None else "the class"


# ------------------------------------------------------------------ one sentence builder per pair criterion
def _pair_correlation(name, c, outcome, evidence):
    return (f"{name}: the two features are associated ({fmt(c.get('correlation'), 2)} on a 0-1 scale), so the PD "
            "averages over combinations the data rarely contains; read it with the data points.")


def _pair_importance(name, c, outcome, evidence):
    """The pair importance is the geometric mean of the two features' importances, each the density-weighted
    standard deviation of its 1D PD: on the scale of the PDs, the outcome's."""
    on = (f", {outcome}" if outcome.startswith("each ") else f" on {outcome}") if outcome else \
        " on the model's prediction"
    return (f"{name}: both features matter to the model (pair importance {fmt(c.get('importance'))}{on}: the "
            "geometric mean of the two features' importances, each the density-weighted standard deviation of its "
            "1D PD); the surface shows how they work together.")


def _pair_interaction(name, c, outcome, evidence):
    """The interaction is measured on the scale its evidence records (a classifier's log-odds, a log-link
    regressor's log), not necessarily on the response the outcome names."""
    details = getattr(evidence, "details", None) or {}
    scale = str(details.get("scale") or "").split(" (")[0]
    if scale and scale not in ("probability", "prediction", "decision function", "share of predicted class"):
        on = f" on the {scale} scale" + (f" of {outcome}" if outcome else "")
        rows = details.get("link_rows")
        if rows:  # that surface is the mean of the sampled rows' ICE surfaces on the scale
            on += f", from the {int(rows):,} sampled rows' ICE surfaces"
    else:
        on = f" on {outcome}" if outcome else ""
    return (f"{name}: the effect of one feature depends on the other (Greenwell interaction "
            f"{fmt(c.get('interaction'))}{on}); a 1D PD of either alone hides this.")


def _pair_surrogate(name, c, outcome, evidence):
    of = f"of {outcome}" if outcome else "of the model's prediction"
    return (f"{name}: both features matter to an additive surrogate {of} (pair importance "
            f"{fmt(c.get('surrogate_importance'))} on that scale: the geometric mean of the two features' importances "
            "in the surrogate).")


def _pair_intersection(name, c, outcome, evidence):
    details = getattr(evidence, "details", None) or {}
    passed = list(details.get("criteria") or [])
    if evidence is not None and getattr(evidence, "passed", False) and passed:
        each = " and ".join(k if fmt(c.get(k)) == "n/a" else f"{k} {fmt(c.get(k), 2 if k == 'correlation' else 3)}"
                            for k in passed)
        if details.get("with_importance"):  # counted once: both say the two features matter
            each += "; its surrogate_importance finding, another reading of importance, counted with it"
        return (f"{name}: a finding under {len(passed)} criteria at once ({each}); mean percentile "
                f"{fmt(c.get('intersection'), 2)} across every score of the 2D PDs (the pair criteria and the "
                "utilities scored on them).")
    return (f"{name}: ranks high across every score of the 2D PDs (the pair criteria and the utilities scored on "
            f"them; mean percentile {fmt(c.get('intersection'), 2)}).")


PAIR_SENTENCES = {
    "correlation": _pair_correlation, "importance": _pair_importance, "interaction": _pair_interaction,
    "surrogate_importance": _pair_surrogate, "intersection": _pair_intersection,
}


def _slope_sentence(name, d, avg, scale) -> str:
    """The slope in the feature's units: the change across the steepest interval and per unit (module
    :mod:`autopdp.scores.utilities.slope`); a straight-line PD is described as linear, over its whole grid."""
    change, per_unit = d.get("change"), d.get("per_unit")
    between = d.get("between")
    if change is None or not between:
        return ""
    verb = "rises" if change > 0 else ("falls" if change < 0 else "stays flat")
    unit = "per level" if d.get("unit") == "level" else f"per unit of {name}"
    size = f" by {fmt(abs(change))}" if change != 0 else ""
    rel = _scaled(abs(change), scale).strip(" ()")
    rate = f" ({fmt(abs(per_unit))} {unit}" + (f"; {rel}" if rel else "") + ")"  # the verb carries the sign
    if d.get("linear"):
        return (f"{name}: {avg} is linear in {name}: it {verb}{size} from {fmt(between[0])} to {fmt(between[1])}"
                f"{rate}.")
    at = (" (at " + ", ".join(f"{k} = {fmt(v)}" for k, v in d["at"].items()) + ")") if d.get("at") else ""
    total = d.get("pd_range")
    whole = (f"; over the whole grid its highest and lowest values differ by {fmt(total)}"
             if total is not None and np.isfinite(total) else "")
    w = d.get("where") or {}
    rows = f" ({int(w['rows']):,} rows nearest that stretch of the grid)" if w.get("rows") is not None else ""
    return (f"{name}: {avg} changes most steeply between {fmt(between[0])} and {fmt(between[1])}{at}{rows}, where "
            f"it {verb}{size}{rate}{whole}.")


def _mean_of(d: dict) -> str:
    """How a gap of ``loss`` l2 (a root mean square over the grid, weighted by its rows) or l1 (a weighted mean of
    the absolute differences) is read: "on average" only for a mean."""
    return "on average" if d.get("loss") == "l1" else "in root mean square"


def _incidence_sentence(name: str, score, evidence, outcome, scale) -> str:
    """An incidence finding: the model against the data (calibration), the PD against the data's trend
    (dependence), or the paper's gap."""
    d = score.details or {}
    v, rel = fmt(score.value), _scaled(score.value, scale)
    avg = f"the average {outcome}" if outcome else "the model's average prediction"
    what = d.get("what", "observed rate")
    if what == "share of class":
        what = f"share of {_class_phrase(outcome, score.target)}"
    kind = getattr(evidence, "kind", "")
    if kind == "calibration":
        gap = evidence.value
        mean = f"mean {outcome}" if outcome else "mean prediction"
        return (f"{name}: the model misses the data here: among the rows of each {name} bin, the observed {what} "
                f"differs from the model's own {mean} for those rows by {fmt(gap)} {_mean_of(d)}"
                f"{_scaled(gap, scale)}.")
    if kind == "dependence":
        gap = evidence.value
        mean = f"mean {outcome}" if outcome else "mean prediction"
        return (f"{name}: {avg} differs by {fmt(gap)} {_mean_of(d)}{_scaled(gap, scale)} from the model's {mean} "
                f"for the rows near each {name} value, with {name} set to that value: those rows' other features "
                f"are unlike everyone's ({name} is not independent of the other features). The PD averages over "
                f"every row's other features, so it departs from the data's trend ({what}) here; this is not a "
                f"fault of the model.")
    return f"{name}: {avg} departs from the data's {what} by {v} {_mean_of(d)}{rel}."


def _similarity_sentence(name: str, uid: str, d: dict, evidence, outcome, scale, value: tuple) -> str:
    """A similarity finding: the shapes of two models' PDs, a constant shift between them set aside.
    ``value``: the score and its size in prediction sds, as written."""
    v, rel = value
    of = f" of {outcome}" if outcome else ""
    other = uid.split(":", 1)[1]
    level, shape = d.get("level_shift"), d.get("shape_gap")
    if evidence is not None and shape is not None and np.isfinite(shape):
        return (f"{name}: {name} acts differently in this model and in {other}{' on ' + outcome if outcome else ''}: "
                f"once a constant shift of {fmt(level)} between the PDs is set aside, their shapes differ by "
                f"{fmt(shape)}{_scaled(shape, scale)} (the models' overall level difference is stated once, in "
                f"the notes).")
    if level is not None and shape is not None and np.isfinite(level) and np.isfinite(shape):
        return (f"{name}: the shapes of the PDs{of} of this model and {other} differ by {fmt(shape)}"
                f"{_scaled(shape, scale)} once a constant shift of {fmt(level)} between them (the models' "
                f"overall level difference, stated once in the notes) is set aside.")
    return f"{name}: the PDs{of} of this model and {other} differ by {v} {_mean_of(d)}{rel}."


def finding_sentence(features: tuple, uid: str, score, *, criteria: dict | None = None, scale=None,
                     outcome: str | None = None, evidence=None) -> str:
    """One sentence describing why a PDP was selected under criterion ``uid``.

    ``scale``: the standard deviation of the model's predictions for the
    score's target (sizes are stated as multiples of it); ``outcome``: what the
    model predicts, e.g. "P(income = >50K)" (for a pair criterion: which class
    its value is of, e.g. "largest across the classes"); ``evidence``: the
    finding's :class:`~autopdp.findings.significance.Evidence` (which reading of
    the criterion it is, and the statistic decided on).

    Every criterion has its own sentence builder, chosen by the criterion that
    selected the PDP (:data:`PAIR_SENTENCES` for the pairs).
    """
    name = " × ".join(features)
    avg = f"the average {outcome}" if outcome else "the model's average prediction"
    if len(features) == 2 and uid in PAIR_SENTENCES:
        return PAIR_SENTENCES[uid](name, criteria or {}, outcome, evidence)
    if score is None or not score.available:
        return f"{name}: {uid} could not be scored ({score.reason if score else 'no score'})."
    d = score.details or {}
    v = fmt(score.value)
    rel = _scaled(score.value, scale)
    of = f" of {outcome}" if outcome else ""
    if uid == "monotonicity":
        at = where_text(name, d.get("where"), f"against its {d.get('direction')} trend")
        if d.get("declared"):
            return (
                f"{name}: expected to be {d.get('direction')}, but the best {d.get('direction')} curve misses "
                f"{avg} by {v}{rel}{at}."
            )
        if score.value < 1e-9:
            return f"{name}: {avg} is monotone ({d.get('direction')})."
        return f"{name}: {avg} is non-monotonic; the best monotone curve misses it by {v}{rel}{at}."
    if uid == "lipschitz":
        bound = d.get("bound") or [None]
        w = d.get("where")
        steep = f"at its steepest ({fmt(w.get('slope'))} per unit)" if w else ""
        return (
            f"{name}: {avg} changes more abruptly than the slope bound ({fmt(bound[0])} per unit) allows; "
            f"the closest bounded curve misses it by {v}{rel}{where_text(name, w, steep)}."
        )
    if uid == "incidence":
        return _incidence_sentence(name, score, evidence, outcome, scale)
    if uid.startswith("similarity:"):
        return _similarity_sentence(name, uid, d, evidence, outcome, scale, (v, rel))
    if uid == "slope":
        text = _slope_sentence(name, d, avg, scale)
        if text:
            return text
        between = d.get("between")
        where = f" between {fmt(between[0])} and {fmt(between[1])}" if between else ""
        return f"{name}: the steepest change of {avg} is{where}: {v} per grid range of {name}{rel}."
    if uid == "ood_share":
        verdict = ood_verdict(score.value)
        advice = {"mostly unrealistic": "read it as extrapolation", "caution": "read it with care where the grey bands "
                  "mark unrealistic rows"}.get(verdict, "it rests on realistic rows")
        return (f"{name}: {share(score.value, OOD_OK, OOD_MOSTLY)} of the rows behind this PD are out of distribution in "
                f"{name}, verdict {verdict} (ok up to {OOD_OK:.0%}, mostly unrealistic above {OOD_MOSTLY:.0%}); "
                f"{advice}.")
    if uid in ("stratpd", "ale_divergence"):
        sample = f", on {d['sample']}" if d.get("sample") else ""
        what = f"the data's own partial dependence (StratPD{sample})" if uid == "stratpd" else \
            "its accumulated local effects (ALE)"
        return f"{name}: the centred PD{of} departs from {what} by {v}{rel}."
    if uid == "ice_variance":
        if (d.get("centering") or "mean") == "none":
            return (f"{name}: individual (uncentred) curves{of} spread by {v} around the average; this is the spread "
                    "of the rows' levels, not evidence of different effects.")
        on = d.get("scale") or "prediction"
        rel_ice = rel if on == "prediction" else ""
        return (
            f"{name}: once centred, individual curves{of} still spread by {v} on the {on.split(' (')[0]} scale"
            f"{rel_ice}, so the feature acts differently on different rows and the PD hides it (look at the ICE "
            "curves)."
        )
    return f"{name}: {uid}{of} = {v}."


def robust_kind(e) -> str:
    """"robust", "specific" (the learner-PD shows at most the threshold or less than half of this fit's
    statistic), "unconfirmed" (the learner-PD has it too, not clear of the refits' spread) or "not assessed"."""
    if e is None or getattr(e, "robust", None) is None:
        return "not assessed"
    if e.robust:
        return "robust"
    learner = (e.details or {}).get("learner") or {}
    if learner.get("floored"):  # the refits' own spread took all of the averaged curves': nothing left to judge by
        return "unconfirmed"
    lv = float(learner.get("value") if learner.get("value") is not None else np.nan)
    thr = float(learner.get("threshold") if learner.get("threshold") is not None else np.nan)
    if not np.isfinite(lv) or (np.isfinite(thr) and lv <= thr) or lv < 0.5 * float(e.value):
        return "specific"
    return "unconfirmed"


def robustness_sentence(e, refits, name: str) -> str:
    """Whether finding ``e`` (of ``name``) holds at the learner level, one to three sentences naming ``e``'s own
    criterion (a page selected by several criteria states the verdict of the one its sentence is about); "" without
    refits.  Built from the item's own ``robust``, ``robust_adjusted_p``, ``stability`` and learner-level statistic
    (``details["learner"]``) and the refits' count."""
    if refits is None or e is None:
        return ""
    which = f"The {criterion_word(e.criterion)} finding"
    if not refits.assessed:
        return f"Robustness of the {which[4:]} not assessed: {refits.reason}."
    kind = robust_kind(e)
    if kind == "not assessed":
        why = (e.robust_why or "not assessed").removeprefix("not assessed: ").rstrip(".")
        return f"Robustness of the {which[4:]} not assessed ({why})."
    k = int(refits.fitted)
    stab = getattr(e, "stability", float("nan"))
    held = int(round(stab * k)) if np.isfinite(stab) else None
    count = f"{held} of {k}" if held is not None else f"? of {k}"
    q = e.robust_adjusted_p
    p = f"adjusted p {'= ' if np.isfinite(q) and q >= 1e-4 else ''}{p_text(q)}"
    if kind == "robust":
        return f"{which} holds in {count} refits; robust at the learner level ({p})."
    learner = (e.details or {}).get("learner") or {}
    stat = (e.statistic or e.criterion).split(" (")[0]
    values = f"{stat} {fmt(learner.get('value'))} against this fit's {fmt(e.value)}"
    if learner.get("floored"):
        need = float(np.hypot(learner["refit_spread"], learner["threshold"]))
        return (f"{which} is not shown to be robust: the refits' averaged ICE curves spread by "
                f"{fmt(learner['averaged'])} against this fit's {fmt(e.value)}, but the refits' own spread, "
                f"{fmt(learner['refit_spread'])} with the correction for their overlapping training sets, accounts for "
                f"all of it, so no spread of the learner's is measured (found by {count} refits' own tests). With {k} "
                f"refits the averaged curves would have to spread by about {fmt(need)} or more to show one. "
                "Recommendation: treat it as uncertain; more training data would tell.")
    it = "they" if " and " in name else "it"  # a pair's two features
    return _not_robust(which, kind, k, values, p, count, held, name, it) + _detectable(learner, stat, k)


def _detectable(learner: dict, stat: str, k: int) -> str:
    """The smallest learner-level effect the refit test could show at its K and rows: its critical value (the 95%
    quantile of its draws at the threshold), before the adjustment across the PDPs."""
    crit = learner.get("critical", learner.get("noise_level"))
    value, thr = (float(learner[k]) if learner.get(k) is not None else np.nan for k in ("value", "threshold"))
    if (crit is None or not np.isfinite(float(crit))) and np.isfinite(thr) and value <= thr:
        return (f" The learner-PD's {stat} is at most the materiality threshold {fmt(thr)}, so no test at the "
                "learner level could show it.")
    if crit is None or not np.isfinite(float(crit)):
        return ""
    return (f" With {k} refits the test shows a learner-level {stat} only from about {fmt(crit)} (its 95% critical "
            "value, before the adjustment across PDPs); a smaller effect of the learner would go unseen.")


def _not_robust(which, kind, k, values, p, count, held, name, it) -> str:
    if kind == "unconfirmed":
        return (f"{which} is not shown to be robust: the learner-PD (the mean of {k} refits' PDs) has it too ({values}), but "
                f"not clear of the spread between refits ({p}; found by {count} refits' own tests). "
                f"Recommendation: treat it as uncertain; more training data would pin the learner down.")
    if held is not None and held * 2 >= k:
        return (f"{which} is specific to this fit: each refit of the same learner on another sample has a pattern of its own "
                f"here (found by {count} refits' own tests), but their mean, the learner-PD, shows much less "
                f"({values}; {p}). Recommendation: regularise or constrain the learner, or drop {name} if {it} "
                f"should not matter.")
    return (f"{which} is specific to this fit: the model has it, refits of the same learner on other samples do not show "
            f"it clear of noise (found by "
            f"{count} refits' own tests; learner-PD {values}; {p}). Recommendation: regularise or constrain the "
            f"learner, or drop {name} if {it} should not matter.")

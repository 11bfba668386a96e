"""Plain-language sentences for the curated findings (one a validator can paste into a memo)."""

from __future__ import annotations

import numpy as np

from .._format import fmt

__all__ = ["finding_sentence", "UTILITY_TITLES", "UTILITY_DEFINITIONS", "fmt", "p_text", "evidence_text"]

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
        "The gap between this model's PD and a comparison model's PD on the same grid (paper eq. 10); large values "
        "mean the two models learned different relationships."
    ),
    "slope": (
        "The steepest change of the PD between neighbouring grid values, per full range of the feature "
        "(paper eq. 11)."
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
        "The share of the rows a PD averages over (each data row moved to a grid value) that fall outside the data's "
        "support by k-nearest-neighbour distance; shaded in grey on the plots where above 50%."
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
    if not (np.isfinite(v) and np.isfinite(sd) and sd > 0):
        return ""
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


def evidence_text(e) -> str:
    """One line for a validator: score, materiality threshold, p-value and noise level of a finding."""
    if e is None:
        return ""
    parts = [f"{e.criterion} {fmt(e.value)}"]
    if e.criterion == "intersection":
        return e.why
    if np.isfinite(e.threshold):
        parts.append(f"threshold {fmt(e.threshold)}")
    if np.isfinite(e.adjusted_p):
        parts.append(f"adjusted p {p_text(e.adjusted_p)}")
    if np.isfinite(e.noise_level):
        parts.append(f"noise level {fmt(e.noise_level)}")
    if getattr(e, "test", ""):
        parts.append(f"test: {e.test}")
    return ", ".join(parts)


def title_of(uid: str) -> str:
    if uid.startswith("similarity:"):
        return f"Most different from {uid.split(':', 1)[1]}"
    return UTILITY_TITLES.get(uid, uid)


def finding_sentence(features: tuple, uid: str, score, *, criteria: dict | None = None, scale=None,
                     outcome: str | None = None, evidence=None) -> str:
    """One sentence describing why a PDP was selected under criterion ``uid``.

    ``scale``: the standard deviation of the model's predictions for the
    score's target (sizes are stated as multiples of it); ``outcome``: what the
    model predicts, e.g. "P(income = >50K)"; ``evidence``: the finding's
    :class:`~autopdp.scores.significance.Evidence` (which reading of the
    criterion it is, and the statistic decided on).
    """
    name = " × ".join(features)
    avg = f"the average {outcome}" if outcome else "the model's average prediction"
    if len(features) == 2 and uid in ("correlation", "importance", "interaction", "intersection", "surrogate_importance"):
        c = criteria or {}
        if uid == "correlation":
            return (
                f"{name}: the two features are associated ({fmt(c.get('correlation'), 2)} on a 0-1 scale), so the PD "
                "averages over combinations the data rarely contains; read it with the data points."
            )
        if uid == "importance":
            return f"{name}: both features matter to the model (pair importance {fmt(c.get('importance'))}); the surface shows how they work together."
        if uid == "interaction":
            return (
                f"{name}: the effect of one feature depends on the other (Greenwell interaction "
                f"{fmt(c.get('interaction'))}); a 1D PD of either alone hides this."
            )
        return f"{name}: ranks high under several criteria at once (mean percentile {fmt(c.get('intersection'), 2)})."
    if len(features) == 2 and uid == "surrogate_importance":
        return (f"{name}: both features matter to an additive surrogate of the model (pair importance "
                f"{fmt((criteria or {}).get('surrogate_importance'))}).")
    if score is None or not score.available:
        return f"{name}: {uid} could not be scored ({score.reason if score else 'no score'})."
    d = score.details or {}
    v = fmt(score.value)
    rel = _scaled(score.value, scale)
    if uid == "monotonicity":
        if d.get("declared"):
            return (
                f"{name}: expected to be {d.get('direction')}, but the best {d.get('direction')} curve misses "
                f"{avg} by {v}{rel}."
            )
        if score.value < 1e-9:
            return f"{name}: {avg} is monotone ({d.get('direction')})."
        return f"{name}: {avg} is non-monotonic; the best monotone curve misses it by {v}{rel}."
    if uid == "lipschitz":
        bound = d.get("bound") or [None]
        return (
            f"{name}: {avg} changes more abruptly than the slope bound ({fmt(bound[0])} per unit) allows; "
            f"the closest bounded curve misses it by {v}{rel}."
        )
    if uid == "incidence":
        what = d.get("what", "observed rate")
        if what == "share of class" and score.target is not None:
            what = f"share of class {score.target}"
        kind = getattr(evidence, "kind", "")
        if kind == "calibration":
            gap = evidence.value
            return (f"{name}: the model misses the data here: among the rows of each {name} bin, the observed {what} "
                    f"differs from the model's own mean prediction for those rows by {fmt(gap)} on average"
                    f"{_scaled(gap, scale)}.")
        if kind == "dependence":
            gap = evidence.value
            return (f"{name}: {avg} differs from the data's trend by {fmt(gap)} on average{_scaled(gap, scale)} because "
                    f"{name} is correlated with other features: the PD averages over every row's other features, "
                    f"while the rows near each {name} value have their own; this is not a fault of the model.")
        return f"{name}: {avg} departs from the data's {what} by {v} on average{rel}."
    if uid.startswith("similarity:"):
        other = uid.split(":", 1)[1]
        level, shape = d.get("level_shift"), d.get("shape_gap")
        if evidence is not None and shape is not None and np.isfinite(shape):
            return (f"{name}: {name} acts differently in this model and in {other}: once the PDs' constant "
                    f"difference ({fmt(level)}) is set aside, their shapes differ by {fmt(shape)}{_scaled(shape, scale)}"
                    f" (the models' overall level difference is stated once, in the notes).")
        split = ""
        if level is not None and shape is not None and np.isfinite(level) and np.isfinite(shape):
            split = (f": a constant shift of {fmt(level)} (the models' overall levels differ) and a difference of "
                     f"shape of {fmt(shape)} (how {name} acts differs)")
        return f"{name}: the PDs of this model and {other} differ by {v} on average{rel}{split}."
    if uid == "slope":
        between = d.get("between")
        where = f" between {fmt(between[0])} and {fmt(between[1])}" if between else ""
        return f"{name}: the steepest change of {avg} is{where}: {v} per full feature range{rel}."
    if uid == "ood_share":
        return f"{name}: {score.value:.0%} of the rows behind this PD are unlike any real row; read it as extrapolation."
    if uid in ("stratpd", "ale_divergence"):
        what = "the data's own partial dependence (StratPD)" if uid == "stratpd" else "its accumulated local effects (ALE)"
        return f"{name}: the centred PD departs from {what} by {v}{rel}."
    if uid == "ice_variance":
        if (d.get("centering") or "mean") == "none":
            return (f"{name}: individual (uncentred) curves spread by {v} around the average; this is the spread of "
                    "the rows' levels, not evidence of different effects.")
        on = d.get("scale") or "prediction"
        rel_ice = rel if on == "prediction" else ""
        return (
            f"{name}: once centred, individual curves still spread by {v} on the {on.split(' (')[0]} scale{rel_ice}, "
            "so the feature acts differently on different rows and the PD hides it (look at the ICE curves)."
        )
    return f"{name}: {uid} = {v}."

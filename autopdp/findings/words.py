"""Each noise test's decision and its words: an undecided :class:`~autopdp.findings.significance.Evidence` item
(:func:`_item`), the p-values adjusted across one criterion's PDPs and each decision worded (:func:`_finish`,
:func:`why_sentence`), and the same sentence rebuilt from a stored item's own fields (:func:`rebuilt_why`, for
results.json)."""

from __future__ import annotations

import numpy as np

from ..utils.formatting import fmt
from .significance import ANALYTIC_P_FLOOR, TESTS, Evidence, adjust_p_values

__all__ = ["why_sentence", "rebuilt_why"]


def _p(p) -> str:
    if not np.isfinite(p):
        return "n/a"
    if p <= ANALYTIC_P_FLOOR:
        return f"<= {ANALYTIC_P_FLOOR:g}"
    if p < 1e-4:
        return f"{p:.1e}"
    return f"{p:.4f}".rstrip("0").rstrip(".") if p < 0.01 else f"{p:.3f}"


def _p_is(p) -> str:
    """``_p`` with its relation: "= 0.005", "<= 1e-06" (never "= <= 1e-06")."""
    text = _p(p)
    return text if text.startswith("<") else f"= {text}"


#: What a fitted-model test is of; a learner-level item's sentence says what its own test is of (:func:`for_learner`).
FITTED_TEST = "the test is of this fitted model, against the Monte-Carlo error of averaging over the audit rows"


def for_learner(why: str, k: int) -> str:
    """A learner-level item's :func:`why_sentence` (its statistic is the learner-PD's, the mean of ``k`` refits'
    PDs), saying what that test is of instead of the fitted model's."""
    return why.replace(FITTED_TEST, f"the test is of the learner: the learner-PD (the mean of {k} refits' PDs) "
                                    "against the spread between refits and the Monte-Carlo error of averaging")


def why_sentence(e: Evidence, adjusted: float, significant: bool, config, *, reason: str = "") -> str:
    """The one sentence that explains ``e``'s decision, from the same facts that made it.

    ``reason``: why the score or its test is missing, or, for a decision made
    on parts (2D importance: both features), which part failed.
    """
    label = "Benjamini-Hochberg" if config.multiple_testing == "bh" else "Holm"
    stat = e.statistic or e.criterion
    if not np.isfinite(e.value):
        return f"not scored{': ' + reason if reason else '.'}"
    if not e.material:
        if reason:
            return f"not material: {reason}"
        return (f"not material: the {stat} {fmt(e.value)} is below the materiality threshold {fmt(e.threshold)}.")
    if not np.isfinite(e.p_value):
        if np.isfinite(e.threshold) and e.threshold > 0:
            return (f"untested: the {stat} {fmt(e.value)} is at or above the threshold {fmt(e.threshold)}, but its "
                    f"test could not be run ({reason or 'no noise estimate'}).")
        return f"untested: the {stat} {fmt(e.value)}: its noise test could not be run ({reason or 'no noise estimate'})."
    test = f"; {e.test}" if e.test else ""
    noise = f"; noise level {fmt(e.noise_level)}" if np.isfinite(e.noise_level) else ""
    conf = f"{1 - config.significance:.0%}"
    tested = f"p {_p_is(e.p_value)}, {label}-adjusted p {_p_is(adjusted)}"
    if not (np.isfinite(e.threshold) and e.threshold > 0):  # materiality 0: the plain noise test
        if not significant:
            return (f"not distinguishable from noise: the {stat} {fmt(e.value)} has {tested} > "
                    f"{config.significance:g}{noise}{test}.")
        return (f"clear of noise (the {stat} {fmt(e.value)}; {tested} <= {config.significance:g}{noise}{test}); "
                f"{FITTED_TEST}.")
    if not significant:
        return (f"not shown to be material: the {stat} {fmt(e.value)} is at or above the threshold "
                f"{fmt(e.threshold)}, but not with {conf} confidence (test of 'at most the threshold': {tested} > "
                f"{config.significance:g}{noise}{test}).")
    return (f"material with {conf} confidence: the {stat} {fmt(e.value)} exceeds the threshold {fmt(e.threshold)} "
            f"(test of 'at most the threshold': {tested} <= {config.significance:g}{noise}{test}); {FITTED_TEST}.")


_PAIR_UNTESTED = "one feature's importance could not be tested"
#: The null of a pair's importance tests (intersection-union: a finding only when both features' tests reject).
_PAIR_NULL = "at least one of the two features' importances is at most the materiality threshold"
_SURROGATE_NOT_MATERIAL = "one of the two features' surrogate importances is below the threshold."


def _pair_importance_reason(failing) -> str:
    """Why a pair's importance is not material: each ``(feature, importance, threshold)`` below its threshold."""
    return "; ".join(f"{f}'s importance {fmt(v)} is below the threshold {fmt(t)}" for f, v, t in failing) \
        + ("." if failing else "")


def _intersection_why(passed: list) -> str:
    """The intersection decision of a pair found under the criteria ``passed``."""
    if len(passed) >= 2:
        return f"a finding under {len(passed)} criteria at once ({', '.join(passed)})."
    return (f"a finding under {len(passed)} criteria" + (f" ({', '.join(passed)})" if passed else "")
            + "; intersection needs at least two.")


def rebuilt_why(e: Evidence, config) -> str:
    """``e``'s ``why`` worded again from the item's own fields, as :func:`assess` words it where those fields
    hold every fact the sentence states (a reader compares it with the stored ``why`` before relying on it:
    results.json leaves ``why`` out only where this gives it word for word)."""
    if e.criterion == "intersection":
        return _intersection_why(list(e.details.get("criteria", [])))
    reason = ""
    if e.criterion == "importance" and len(e.features) == 2:
        if not e.material:
            imp = {f: float("nan") if v is None else float(v) for f, v in e.details.get("importance", {}).items()}
            reason = _pair_importance_reason([(f, v, e.threshold) for f, v in imp.items() if not v >= e.threshold])
        elif not np.isfinite(e.p_value):
            reason = _PAIR_UNTESTED
    elif e.criterion == "surrogate_importance" and not e.material:
        reason = _SURROGATE_NOT_MATERIAL
    return why_sentence(e, e.adjusted_p, e.significant, config, reason=reason)


#: the fields of an undecided item and their defaults (:func:`_item`)
_ITEM_FIELDS = {"p": np.nan, "noise": np.nan, "test": "", "statistic": "", "draws": 0, "kind": "", "details": None,
                "material": None, "reason": "", "null": None}


def _item(criterion, features, value, threshold, **fields):
    """An undecided Evidence (``significant`` False, ``why`` holding the reason until :func:`_finish`).

    ``fields`` (:data:`_ITEM_FIELDS`): ``p``, ``noise``, ``draws``, ``test``, ``statistic``, ``kind``, ``details``;
    ``material`` (default: the value reaches the threshold); ``reason``; ``null`` (default: the criterion's in
    :data:`TESTS`)."""
    unknown = set(fields) - set(_ITEM_FIELDS)
    if unknown:
        raise TypeError(f"_item() got unexpected fields {sorted(unknown)}")
    f = {**_ITEM_FIELDS, **fields}
    p, noise, test, statistic, draws, kind, details, material, reason, null = (
        f[k] for k in ("p", "noise", "test", "statistic", "draws", "kind", "details", "material", "reason", "null"))
    if material is None:
        material = bool(np.isfinite(value) and np.isfinite(threshold) and value >= threshold)
    if null is None:
        null = TESTS.get(criterion.split(":", 1)[0], ("", ""))[0]
    return Evidence(criterion=criterion, features=tuple(features), value=float(value), p_value=float(p),
                    adjusted_p=float("nan"), noise_level=float(noise), threshold=float(threshold),
                    material=bool(material), significant=False, why=reason, test=test, null=null,
                    statistic=statistic, draws=int(draws), kind=kind, details=dict(details or {}))


def _finish(items: dict, config) -> dict:
    """Adjust the p-values of one criterion across its PDPs and word each decision (:func:`why_sentence`).

    Immaterial scores count as p = 1; untested ones (material, p NaN) are left out of the adjustment.
    """
    keys = list(items)
    p = np.array([items[k].p_value if items[k].material else (1.0 if np.isfinite(items[k].value) else np.nan)
                  for k in keys])
    adj = adjust_p_values(p, config.multiple_testing)
    out = {}
    for k, q in zip(keys, adj):
        e = items[k]
        significant = bool(e.material and np.isfinite(e.p_value) and np.isfinite(q) and q <= config.significance)
        why = why_sentence(e, float(q), significant, config, reason=e.why)
        out[k] = Evidence(criterion=e.criterion, features=e.features, value=e.value, p_value=e.p_value,
                          adjusted_p=float(q), noise_level=e.noise_level, threshold=e.threshold,
                          material=e.material, significant=significant, why=why, test=e.test, null=e.null,
                          statistic=e.statistic, draws=e.draws, kind=e.kind, details=e.details)
    return out

"""The gate's ``robust = true`` (issue 31): a shape rule of a feature fails only on a violation that is robust,
present at the learner level as well as in this fit.

For a feature whose policy table sets ``robust = true``, each of its shape checks (monotonic, max_lipschitz,
max_slope) that fails on the fitted model's PD is tested again on the learner-PD, the mean of the audit's refits'
PDs (:attr:`autopdp.Audit.refit_curves`), by the same minimum-effect test (:mod:`autopdp.gating.limits`) with the
refits' spread, Nadeau and Bengio corrected, added to the PD's Monte-Carlo noise; Holm across those learner-level
tests.  The check then fails only when both reject; a violation the learner-PD does not show passes, its message
saying it is specific to this fit.  Without assessed refits the check stays failed (the gate fails closed).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .limits import lipschitz_test, monotonicity_test, run_limit_tests, slope_test
from ..scores.utilities import score_lipschitz, score_monotonicity, score_slope

__all__ = ["robust_verdicts"]

SHAPE_CHECKS = ("monotonicity", "lipschitz", "slope")


def _learner_test(audit, check, fp, sw):
    """The rule's test on the learner-PD of ``check.feature`` (None: no refits' PDs for it)."""
    curves = (getattr(audit, "refit_curves", None) or {}).get((check.feature,))
    refits = getattr(audit, "refits", None)
    if curves is None or refits is None or not refits.assessed:
        return None
    r = audit.pd(check.feature)
    t = r.target_index(None)
    k = curves.shape[0]
    mean = curves.mean(axis=0)
    learner = dataclasses.replace(r, average=mean)
    dev = curves[:, t].reshape(k, -1) - mean[t].ravel()
    extra = np.sqrt(refits.correction / max(k - 1, 1)) * dev
    w, loss, sw_ = r.density, audit.config.loss, sw
    if check.check == "monotonicity":
        s = score_monotonicity(learner, target_index=t, weights=w, directions=(fp.monotonic,), loss=loss)
        return monotonicity_test(audit, learner, t, s, check.threshold, sw_, extra=extra)
    if check.check == "lipschitz":
        bound = fp.lipschitz if fp.lipschitz is not None else \
            float(np.atleast_1d((audit.score(check.feature, "lipschitz").details or {}).get("bound", [np.nan]))[0])
        s = score_lipschitz(learner, target_index=t, weights=w, slopes=[bound], loss=loss)
        return lipschitz_test(audit, learner, t, s, check.threshold, sw_, extra=extra)
    s = score_slope(learner, target_index=t)
    return slope_test(audit, learner, t, s.value, check.threshold, sw_, extra=extra)


def robust_verdicts(audit, policy, checks: list) -> list:
    """``checks`` with each failing shape check of a ``robust = true`` feature decided at the learner level."""
    todo = [i for i, c in enumerate(checks) if c.check in SHAPE_CHECKS and not c.passed and c.measured is not None
            and getattr(policy.features.get(c.feature), "robust", False)]
    if not todo:
        return checks
    sw = getattr(audit, "sample_weight", None)
    tests = {i: _learner_test(audit, checks[i], policy.features[checks[i].feature], sw) for i in todo}
    family = [t for t in tests.values() if t is not None]
    proofs = dict(zip(map(id, family), run_limit_tests(family, audit.config))) if family else {}
    out = list(checks)
    refits = getattr(audit, "refits", None)
    for i in todo:
        c, test = checks[i], tests[i]
        if test is None:
            why = refits.reason if refits is not None and refits.reason else "no refits were run (--train, --refits)"
            out[i] = dataclasses.replace(c, message=f"{c.message[:-1]}; robust = true, but the learner level was not "
                                                    f"assessed ({why}): the gate fails closed.",
                                         proof={**(c.proof or {}), "robust": None})
            continue
        proof = proofs[id(test)]
        robust = proof["decision"] == "fail"
        learner = (f"the learner-PD of {refits.fitted} refits scores {test.observed:.4g} against the limit "
                   f"{test.bound:.4g} (p = {proof['p_value']:.3g}, Holm-adjusted {proof['adjusted_p']:.3g})")
        if robust:
            message = f"{c.message[:-1]}; the violation is robust: {learner}."
        else:
            message = (f"{c.message[:-1]}; but it is specific to this fit: {learner}, not a violation with "
                       f"confidence; passes (robust = true).")
        out[i] = dataclasses.replace(c, passed=not robust, message=message,
                                     proof={**(c.proof or {}), "robust": robust, "learner": proof})
    return out

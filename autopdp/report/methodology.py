"""The methodology chapter's statements, each built from what this run computed (never fixed prose).

One function per statement: how the PDs and their ICE curves were computed
(per PD, from each result's own method and rows), how importance is defined,
each criterion's null hypothesis and test with the draws this run used, what a
finding is (with this run's materiality, significance and adjustment) and what
the noise tests condition on (the fitted model and the audit rows).
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np

__all__ = ["pd_method_text", "importance_text", "criterion_tests", "confidence_text", "adjustment_name",
           "finding_definition", "tested_text", "scale_text", "learner_text", "robustness_counts", "MEASURED_REFITS"]

#: issue 31's learner-level test as measured (docs/methodology.md, "Findings that survive a refit"), quoted in reports
MEASURED_REFITS = ("measured on a boosted classifier trained on a target from x1..x4 (x3·x4 planted) with two "
                   "pure-noise features, K = 10, 20 seeds at 400 audit rows and 12 at 2,500 "
                   "(benchmarks/bench_calibration.py --refits): no noise pattern called robust in any seed; the "
                   "planted importances, interaction and ICE spread robust in every seed, the non-monotonicity in "
                   "85-92%; the steepest slope almost never (its local wiggles differ between refits); the "
                   "learner-PD's pointwise 95% interval covers the PD of the true probability at 89-97% of the grid values "
                   "(each value on its own; whole curves less often); "
                   "docs/methodology.md has the rates")

#: the criteria about structure (judged on the model's link scale, autopdp.pd.link); the others are about levels
STRUCTURE_CRITERIA = ("interaction", "ice_variance")
_NO_SCALE = ("correlation", "intersection")


def confidence_text(significance: float) -> str:
    """The confidence a finding is stated with: 1 - significance, as a percentage ("95%" at 0.05)."""
    return f"{round(100.0 * (1.0 - float(significance)), 6):g}%"


def adjustment_name(config) -> str:
    """The multiple-testing adjustment's name as the report writes it."""
    return "Benjamini-Hochberg" if config.multiple_testing == "bh" else "Holm"


def finding_definition(config) -> str:
    """What a finding is, with this run's materiality, significance and adjustment (one sentence).

    A finding requires rejecting "the effect is at most the materiality threshold" (a one-sided
    minimum-effect test on the criterion's scale) at ``significance`` after the adjustment across the
    PDPs of the criterion; the test is conditional on the fitted model (see :func:`tested_text`).
    """
    return (f"A PDP is a finding under a criterion only when its effect exceeds the materiality threshold "
            f"({config.materiality:g} × the standard deviation of the model's predictions over the audit rows, on the "
            f"criterion's scale, the tests carrying its sampling error; "
            f"for the slope a change of twice that across its steepest interval, the least step that makes a feature "
            f"an importance finding; for the correlation criterion an association of {config.min_association:g} on its "
            f"0-1 scale) with "
            f"{confidence_text(config.significance)} confidence after the {adjustment_name(config)} adjustment across "
            f"the PDPs of the criterion, conditional on the fitted model: a one-sided test rejects \"the effect is at "
            f"most the materiality threshold\" at adjusted p ≤ {config.significance:g}.")


def _audit_rows_text(audit) -> str:
    """The rows the PDs average over, as this run used them (the 1D PDs' rows; the 2D PDs' sample if other)."""
    data = (audit.metadata or {}).get("data", {})
    n1, n2 = int(data.get("rows_used_1d") or 0), int(data.get("rows_used_2d") or 0)
    if not n1:
        return "the audit rows"
    text = f"the audit's {_rows_text(n1)}"
    if audit.results_2d and n2 and n2 != n1:
        text += f" ({n2:,} sampled for the 2D PDs)"
    return text


def tested_text(audit) -> str:
    """What the noise tests test, what that does not establish, and whether the learner was tested (with refits:
    how, and how many findings are robust and how many specific to this fit)."""
    model = (f"What was tested: the fitted model's partial dependences against the Monte-Carlo noise of averaging "
             f"over {_audit_rows_text(audit)}, conditional on the fitted model")
    refits = getattr(audit, "refits", None)
    if refits is None:
        return (f"{model}; whether a refit of the same learner would show the same patterns (learner variance) is "
                f"not tested in this report.")
    if not refits.assessed:
        return (f"{model}. Whether a refit of the same learner would show the same patterns was asked "
                f"({refits.requested} refits) but not assessed: {refits.reason}; no finding is called robust.")
    c = robustness_counts(audit)
    parts = [f"{c['robust']} {'is' if c['robust'] == 1 else 'are'} robust (present at the learner level)",
             f"{c['specific']} specific to this fit (the learner-PD shows at most the threshold or less than half "
             f"of it)"]
    if c["unconfirmed"]:
        parts.append(f"{c['unconfirmed']} not shown to be robust (the learner-PD has it too, not clear of the "
                     f"spread between refits)")
    if c["not_assessed"]:
        parts.append(f"{c['not_assessed']} not assessed (criteria that are not patterns of the learner)")
    return (f"{model}; and the learner: {_scheme_text(refits)}. Of the {c['findings']} findings, "
            f"{', '.join(parts[:-1])} and {parts[-1]}.{_main_effects_text(audit)}")


def _main_effects_text(audit) -> str:
    """" Main effects robust at the learner level: ..." from the 1D importance evidence (not counted among the
    findings above: importance is the PD's overall spread, the learner-level reading of a main effect)."""
    items = [(f, e) for f, e in (audit.evidence or {}).get("importance_1d", {}).items() if e.passed]
    if not items:
        return ""
    robust = [f[0] for f, e in sorted(items, key=lambda fe: -float(fe[1].value)) if e.robust]
    shown = ", ".join(robust[:8]) + (f" and {len(robust) - 8} more" if len(robust) > 8 else "")
    if not robust:
        return (f" No feature's main effect (its PD importance) is robust at the learner level: none of the "
                f"{len(items)} important features.")
    return (f" Main effects (PD importance) robust at the learner level: {shown} ({len(robust)} of the "
            f"{len(items)} important features).")


def _scheme_text(refits) -> str:
    n_test = refits.n_train - refits.n_fit
    return (f"{refits.fitted} refits of the same learner (the model's unfitted clone, hyperparameters kept, its "
            f"random_state varied per refit) on half-samples without replacement of the {refits.n_train:,} training "
            f"rows ({refits.n_fit:,} rows each), every finding's statistic computed on the learner-PD (the mean of the "
            f"refits' PDs on the same grids, over the audit's ICE rows) and tested against the Monte-Carlo noise "
            f"(with the sampling error where those rows are a sample) plus the refits' spread "
            f"with Nadeau and Bengio's correction for overlapping training sets (variance factor 1/K + n_test/n_fit = "
            f"1/{refits.fitted} + {n_test:,}/{refits.n_fit:,} = {refits.correction:.3g})")


def robustness_counts(audit) -> dict:
    """Over the findings (every criterion's passed items but the 1D importance and the level difference):
    ``{"findings", "robust", "specific", "unconfirmed", "not_assessed"}`` (:func:`~.findings.robust_kind`)."""
    from .findings import robust_kind

    items = [e for crit, by in (audit.evidence or {}).items()
             if crit != "importance_1d" and not crit.startswith("similarity_level") for e in by.values() if e.passed]
    kinds = [robust_kind(e) for e in items]
    return {"findings": len(items), "robust": kinds.count("robust"), "specific": kinds.count("specific"),
            "unconfirmed": kinds.count("unconfirmed"), "not_assessed": kinds.count("not assessed")}


def learner_text(audit) -> str:
    """The methodology's statement on the learner: not tested, not assessed (why), or the refits' scheme, null,
    test, correction and measured level and power."""
    refits = getattr(audit, "refits", None)
    if refits is None:
        return ("Not tested in this report. Refitting the same learner on resamples of the training data would test "
                "it (give the training data and refits: --train, --refits); this audit refits nothing.")
    if not refits.assessed:
        return f"Not assessed: {refits.reason}. No finding is called robust."
    return (f"Tested with {_scheme_text(refits)}. The null of each criterion is its own, said of the learner-PD: "
            f"\"the learner-PD's statistic is at most the materiality threshold\" (the audit's threshold); the ICE "
            f"spread's z-test subtracts the refits' own spread from the averaged curves' and adds their jackknife "
            f"variance. Benjamini-Hochberg across the PDPs of each criterion, as for the model's tests. A finding is "
            f"robust when that test rejects; otherwise it is specific to this fit when the learner-PD's statistic "
            f"is at most the threshold or less than half of this fit's, and not shown to be robust when the "
            f"learner-PD has it too but not clear of the refits' spread. The share of refits whose own test finds "
            f"the pattern is shown beside it (descriptive: every flexible fit has patterns of its own). "
            f"Incidence, similarity, correlation and the surrogate's importance are not learner patterns and are not "
            f"assessed, nor is the intersection (it counts the other pair criteria's findings, each with its own "
            f"verdict). Level and power {MEASURED_REFITS}.")


def _rows_text(n: int) -> str:
    return f"{n:,} row{'s' if n != 1 else ''}"


def pd_method_text(audit) -> str:
    """How this run's PDs, ICE curves and spreads were computed, counted from the results themselves."""
    parts = []
    for ndim, results in ((1, audit.results_1d), (2, audit.results_2d)):
        if not results:
            continue
        by_method = Counter(r.method for r in results)
        methods = ", ".join(
            f"{n} {'exactly by the tree path (no model calls)' if m == 'tree' else 'by brute force (the model predicted at every grid value)'}"
            for m, n in sorted(by_method.items()))
        rows = sorted({int(r.n_rows) for r in results})
        rows_txt = _rows_text(rows[0]) if len(rows) == 1 else f"{rows[0]:,}-{rows[-1]:,} rows"
        text = f"{len(results)} {ndim}D PDs: {methods}, each averaging over {rows_txt}"
        if ndim == 1:
            kept = Counter(
                "every row" if r.ice_rows is None and (r.individual is not None or r.ice_omitted) else
                (f"a random sample of {_rows_text(len(r.ice_rows))}" if r.ice_rows is not None else "no row")
                for r in results)
            text += "; ICE curves kept for " + ", ".join(
                f"{k}" + (f" ({n} PDs)" if len(kept) > 1 else "") for k, n in kept.items())
        sampled_std = sum(1 for r in results if any("sampled rows" in n for n in r.notes))
        if sampled_std:
            text += f"; the ICE spread (std) of {sampled_std} of them from sampled rows"
        parts.append(text + ".")
    return " ".join(parts)


def importance_text(audit) -> str:
    """The importance definition this run used (autopdp.scores.importance, weighted)."""
    return ("Importance is the density-weighted standard deviation of a feature's PD over its grid, each grid value "
            "weighted by the share of rows nearest it (numeric and categorical features alike); interaction is the "
            "weighted spread of one feature's importance as the other is held at each of its values, averaged over "
            "both directions (Greenwell, Boehmke and McCarthy, 2018, weighted by the data).")


def criterion_tests(audit) -> list[dict]:
    """Per tested criterion: its null, its test, the statistic, the draws used and the PDPs tested and found."""
    out = []
    for crit, by in (audit.evidence or {}).items():
        items = [e for e in by.values() if np.isfinite(e.value)]
        if not items:
            continue
        tested = [e for e in items if e.material and np.isfinite(e.p_value) and e.test]
        draws = [e.draws for e in tested if e.draws]
        sample = tested[0] if tested else items[0]
        out.append({
            "criterion": crit,
            "null": sample.null,
            "test": _generic_test(sample.test) if sample.test else "not run (no material score)",
            "statistic": sample.statistic,
            "scale": _criterion_scale(crit, items),
            "draws": (f"{min(draws):,}" if draws and min(draws) == max(draws) else
                      f"{min(draws):,}-{max(draws):,}" if draws else "analytic" if tested else "-"),
            "tested": len(tested),
            "found": sum(1 for e in items if e.passed),
            "untested": sum(1 for e in items if e.untested),
        })
    return out


def _generic_test(test: str) -> str:
    """A PDP's test description without what is its own: the noise source, the draws, the ICE rows counted."""
    test = re.sub(r" over [\d,]+ ICE rows$", "", test)
    return re.sub(r"(?: \((?:ICE rows|cell standard errors)[^()]*\))?(?:[,;] [\d,]+ draws)?$", "", test)


def _criterion_scale(crit: str, items: list) -> str:
    """The scale(s) a criterion was judged on, by their short names ("0-1" for the association)."""
    if crit.split(":", 1)[0] in _NO_SCALE:
        return "0-1" if crit == "correlation" else "-"
    names = Counter(str(e.details.get("scale")).split(" (")[0] for e in items if e.details.get("scale"))
    return ", ".join(n for n, _ in names.most_common()) or "-"


def scale_text(audit) -> str:
    """Which scale each kind of criterion was judged on in this run, and the rule that chose it."""
    ev = audit.evidence or {}

    def names(structure: bool) -> list:
        seen = Counter(str(e.details["scale"]) for c, by in ev.items()
                       if (c.split(":", 1)[0] in STRUCTURE_CRITERIA) == structure and c.split(":", 1)[0] not in _NO_SCALE
                       for e in by.values() if e.details.get("scale"))
        return [n for n, _ in seen.most_common()]
    structure, levels = names(True), names(False)
    if not structure and not levels:
        return ""
    text = ("One scale per kind of criterion, chosen by a stated rule from the model's type and parameters: the "
            "criteria about structure (interaction, ICE variance) compare shapes on the model's link scale (the "
            "log-odds of a classifier's probabilities, from its margin where its probabilities are the sigmoid or "
            "softmax of its decision_function; the log of a log-link regressor's prediction: Poisson, Gamma and "
            "Tweedie GLMs and boosted models with those losses; otherwise the response), on which a model additive "
            "there has no interaction and no heterogeneity; the criteria about levels (monotonicity, slope, "
            "importance, incidence, similarity) judge changes of the response. A link-scale 2D PD is the mean of "
            "each row's link values over the rows whose ICE surfaces were kept, tested against the Monte-Carlo error "
            "of that mean.")
    if structure:
        text += f" Structure was judged here on the {'; '.join(structure)} scale."
    if levels:
        text += f" Levels were judged on the {'; '.join(levels)} scale."
    return text


def method_context(audit) -> dict:
    """The Methodology section's settings and sentences: the grids, the PD method, each criterion's test and scale."""
    cfg = audit.config
    first = audit.results[0] if audit.results else None
    return {
        "grid_resolution": cfg.grid_resolution, "grid_resolution_2d": cfg.grid_resolution_2d,
        "percentiles": [f"{p:.0%}" for p in cfg.percentiles], "grid_method": cfg.grid_method,
        "loss": cfg.loss, "lipschitz_scale": cfg.lipschitz_scale,
        "ice_variance_centering": cfg.ice_variance_centering, "top_k": cfg.top_k,
        "response": audit.metadata.get("response"),
        "pd_method": audit.metadata.get("pd_method", first.method if first is not None else "brute"),
        # why the exact tree path was not used ("" when it was: the metadata then reads "used")
        "tree_path": "" if audit.metadata.get("tree_path", "") == "used" else audit.metadata.get("tree_path", ""),
        "max_rows_2d": cfg.max_rows_2d, "max_rows_2d_tree": cfg.max_rows_2d_tree, "subsample": cfg.subsample,
        "grid_1d_example": audit.results_1d[0].grid_shape if audit.results_1d else (),
        "pd_text": pd_method_text(audit),
        "importance_text": importance_text(audit),
        "tests": criterion_tests(audit),
        "scales": scale_text(audit),
        "max_noise_draws": cfg.max_noise_draws,
        "learner": learner_text(audit),
    }


def interaction_scale(audit) -> str:
    """The scale the interaction statistic was computed on (autopdp.pd.link), by its short name."""
    items = list((audit.evidence or {}).get("interaction", {}).values())
    scale = _criterion_scale("interaction", items) if items else "-"
    return scale if scale != "-" else "response"

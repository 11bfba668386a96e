"""Pre-deployment gate: a policy file states what a model must satisfy; CI gets exit codes and JUnit.

Policy (TOML)::

    [features.duration_months]
    monotonic = "increasing"     # "increasing" | "decreasing" | "none"
    max_monotonicity = 0.02      # tolerated monotonicity score (default: materiality x prediction sd)
    lipschitz = 0.01             # slope bound l for this feature (feature units)
    max_lipschitz = 0.05         # tolerated Lipschitz score
    max_incidence = 0.10         # tolerated gap to the data's incidence
    max_similarity = 0.05        # tolerated gap to the champion for this feature
    max_slope = 1.0              # tolerated slope score
    min_importance = 0.01        # this feature must matter at least this much
    robust = true                # its shape rules fail only on robust violations (needs --train, --refits)

    [importance]
    forbidden = ["personal_status_sex", "foreign_worker"]
    forbidden_top_k = 5          # forbidden features must not be among the top k (default 5)
    required = ["checking_status"]
    min_importance = 0.001       # importance every required feature must reach (default 0.001)
    required_top_k = 10          # optional: required features must be among the top k

    [champion]
    max_similarity = 0.05        # tolerated gap to the champion, every feature
    max_pd_gap = 1e-6            # largest 1D PD difference to the champion (e.g. a converted ONNX file's)
    max_changed_rows = 0         # share of rows whose prediction differs from the champion's by more than 1e-6

    [cohorts]
    same_shape_across = "region" # every feature's PD has the same shape in each cohort of this column
    max_shape_gap = 0.1          # tolerated gap between two cohorts' centred PDs (default: the materiality threshold)

    [audit]                      # optional AuditConfig keys for the audit the gate runs
    grid_resolution = 20

    [gate]
    decide = "evidence"          # "evidence" (default) | "limits"

Scores are those of :mod:`autopdp.scores.utilities` (units of the prediction); a limit is in the same units.
``max_monotonicity`` left out is ``materiality`` x the standard deviation of the model's predictions (on the
prediction's own scale, never an absolute number).  A check that cannot be measured (e.g. monotonicity of an
unordered categorical, incidence without a target) fails: the gate fails closed.  With ``decide = "evidence"``
a monotonicity, Lipschitz, slope or similarity limit is tested as a minimum-effect null, "the violation is at
most the limit" (:mod:`autopdp.gating.limits`): the check fails only when the violation exceeds the limit with
confidence (one-sided, at ``significance``, Holm across the policy's tested checks), or exceeds it with no noise
model to test it (fails closed).  Incidence and the importance rules have no such test in the gate: their raw
score against the limit decides.  Each limit check's ``proof`` gives the bound, its source, the observed value,
the p-value and the decision.  With ``decide = "limits"`` the raw score against the limit decides every rule.

The policy decides: a policy must define at least one check (a key that only modifies a rule the
policy does not set is refused, naming both), its ``[audit]`` table and rules win over a --config,
and the settings the verdict rests on (:data:`DECISION_KEYS`) come from the policy or the defaults,
never from a --config (:meth:`GatePolicy.without_loosening`).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from ..utils.atomic import atomic_write_text
from ..config import AuditConfig
from ..errors import InputError
from ..utils.formatting import fmt, where_text
from ..utils.jsonable import jsonable
from .robust import robust_verdicts
from .limits import default_bound, lipschitz_test, monotonicity_test, run_limit_tests, similarity_test, slope_test
from ..scores.utilities import score_lipschitz, score_monotonicity

from .policy import CHAMPION, DECISION_KEYS, FeaturePolicy, GatePolicy, _no_check_message  # noqa: F401 - re-exported

__all__ = ["GatePolicy", "FeaturePolicy", "GateCheck", "GateResult", "gate", "champion_name", "CHAMPION"]



@dataclass(frozen=True)
class GateCheck:
    """One check of the gate."""

    name: str  # e.g. "monotonicity[duration_months]"
    check: str  # monotonicity | lipschitz | incidence | similarity | slope | importance_forbidden | importance_required | pd_gap | changed_rows
    feature: str
    measured: float | None
    threshold: float
    relation: str  # "<=" or ">="
    passed: bool
    message: str
    evidence: str | None = None  # the utility whose plot shows it
    #: the noise evidence behind a shape rule's verdict (decide="evidence"): p-value, test, materiality
    proof: Mapping[str, Any] | None = None
    #: where the PD breaks the rule: {from, to, change, rows} (monotonicity, Lipschitz, slope; None otherwise)
    where: Mapping[str, Any] | None = None

    def to_dict(self) -> dict:
        return {
            "name": self.name, "check": self.check, "feature": self.feature,
            "measured": None if self.measured is None or not np.isfinite(self.measured) else float(self.measured),
            "threshold": float(self.threshold), "relation": self.relation, "passed": self.passed,
            "message": self.message, "evidence": self.evidence,
            "proof": None if self.proof is None else {
                k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in self.proof.items()},
            "where": None if self.where is None else dict(self.where),
        }


@dataclass(frozen=True)
class GateResult:
    """The verdict: ``passed``, every check, and what was checked (``provenance``).

    ``provenance`` names the model, the champion, the data and the policy (each
    file's sha256 when they came from files), the target, positive class, seed,
    date, command line and versions, so ``gate.json`` stands on its own.
    """

    checks: tuple
    provenance: Mapping[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def failures(self) -> list[GateCheck]:
        return [c for c in self.checks if not c.passed]

    def to_dict(self) -> dict:
        return {
            "schema": "autopdp.GateResult/1", "passed": self.passed, "n_checks": len(self.checks),
            "n_failed": len(self.failures), "checks": [c.to_dict() for c in self.checks],
            "provenance": jsonable(self.provenance),
        }

    def to_json(self, path=None) -> str:
        text = json.dumps(self.to_dict(), indent=1, allow_nan=False)
        if path is not None:
            atomic_write_text(path, text)
        return text

    def to_junit_xml(self, path=None) -> str:
        """JUnit XML: one testcase per check; failures carry measured value, threshold and feature."""
        suites = ET.Element("testsuites", name="autopdp", tests=str(len(self.checks)), failures=str(len(self.failures)))
        suite = ET.SubElement(suites, "testsuite", name="autopdp.gate", tests=str(len(self.checks)),
                              failures=str(len(self.failures)), errors="0", skipped="0")
        if self.provenance:
            props = ET.SubElement(suite, "properties")
            for key, value in _flat_provenance(self.provenance):
                ET.SubElement(props, "property", name=key, value=value)
        for c in self.checks:
            case = ET.SubElement(suite, "testcase", classname=f"autopdp.gate.{c.check}", name=c.name)
            ET.SubElement(case, "properties")
            props = case.find("properties")
            for key, value in (("feature", c.feature), ("measured", _fmt(c.measured)), ("threshold", _fmt(c.threshold)),
                               ("relation", c.relation)):
                ET.SubElement(props, "property", name=key, value=value)
            if not c.passed:
                failure = ET.SubElement(case, "failure", type="GateCheckFailed", message=c.message)
                failure.text = (
                    f"feature: {c.feature}\ncheck: {c.check}\nmeasured: {_fmt(c.measured)}\n"
                    f"allowed: {c.relation} {_fmt(c.threshold)}\n{c.message}"
                )
        ET.indent(suites)
        from ..utils.xmltext import xml_text

        # names come from the data: a character XML 1.0 forbids (a control character) is written as a visible escape
        text = xml_text('<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n")
        if path is not None:
            atomic_write_text(path, text)
        return text


def _flat_provenance(prov: Mapping) -> list:
    """The provenance as JUnit properties: input files' sha256, target, date, versions of autopdp and Python."""
    out = []
    for role, rec in (prov.get("inputs") or {}).items():
        out.append((f"{role}.file", str(rec.get("path"))))
        out.append((f"{role}.sha256", str(rec.get("sha256"))))
    for key in ("model", "champion", "target", "positive_class", "seed", "date", "command", "data_content_sha256"):
        if prov.get(key) is not None:
            out.append((key, str(prov[key])))
    versions = prov.get("versions") or {}
    for key in ("autopdp", "python"):
        if key in versions:
            out.append((f"version.{key}", str(versions[key])))
    return out


def gate_provenance(audit, policy: "GatePolicy", champion: str | None) -> dict:
    """What the verdict is about: model, champion, data, policy, target, seed, date, command, versions."""
    meta = audit.metadata
    prov = dict(meta.get("provenance") or {})
    inputs = dict(prov.get("inputs") or {})
    if policy.source:
        inputs["policy"] = dict(policy.source)
    model = meta.get("model", {})
    return {
        "model": audit.report.model_name or model.get("name"),
        "model_type": model.get("type"),
        "champion": champion,
        "dataset": audit.report.dataset_name,
        "inputs": inputs,
        "target": prov.get("target"),
        "positive_class": prov.get("positive_class"),
        "seed": prov.get("seed"),
        "data_content_sha256": prov.get("data_content_sha256"),
        "rows": meta.get("data", {}).get("rows"),
        "date": audit.run.get("date"),
        "command": audit.run.get("command"),
        "versions": dict(meta.get("versions") or {}),
        "platform": prov.get("platform"),
    }


def champion_name(audit, champion: str | None = None) -> str | None:
    """The comparison model the ``[champion]`` limits apply to.

    ``champion`` when given (it must be one of the audit's comparison models),
    else the one named ``"champion"``, else the single comparison model whatever
    its name; None when there is none.  Several unnamed candidates are an error.
    """
    names = list(audit.comparisons)
    if champion is not None:
        if champion not in names:
            raise InputError(f"champion {champion!r} is not a comparison model of the audit (have: {', '.join(names) or 'none'}).")
        return champion
    if CHAMPION in names:
        return CHAMPION
    if len(names) == 1:
        return names[0]
    if len(names) > 1:
        raise InputError(
            f"the audit has {len(names)} comparison models ({', '.join(names)}); say which is the champion: "
            "gate(audit, policy, champion=NAME)."
        )
    return None


def _fmt(v) -> str:
    """A measured value or limit in a check's message: 6 significant digits, n/a when missing."""
    return fmt(v, 6, grouped=False)


def _limit_check(check, feature, measured, threshold, *, reason="", evidence=None, relation="<=", what=None,
                 note="") -> GateCheck:
    name = f"{check}[{feature}]"
    label = what or check
    note = f" ({note})" if note else ""
    if measured is None or not np.isfinite(measured):
        return GateCheck(name, check, feature, None, threshold, relation, False,
                         f"{feature}: {label} could not be measured ({reason or 'no score'}); the gate fails closed.", evidence)
    ok = measured <= threshold + 1e-12 if relation == "<=" else measured >= threshold - 1e-12
    verb = "within" if ok else "exceeds" if relation == "<=" else "below"
    if relation == "<=":
        message = f"{feature}: {label} {_fmt(measured)} {verb} the allowed {_fmt(threshold)}{note}."
    else:
        message = f"{feature}: {label} {_fmt(measured)} {'meets' if ok else 'is below'} the required {_fmt(threshold)}."
    return GateCheck(name, check, feature, float(measured), float(threshold), relation, bool(ok), message, evidence)


#: the rules whose limit the gate tests (a minimum-effect test, :mod:`autopdp.gating.limits`); incidence has no such
#: test after the audit (its noise is the rows' observed outcomes, which the audit does not keep)
TESTED = ("monotonicity", "lipschitz", "slope", "similarity")


def _bound(audit, t: int, explicit) -> tuple[float, str, str]:
    """The limit a rule is held to: the policy's (``explicit``), else materiality x the prediction sd."""
    if explicit is not None:
        return float(explicit), "policy", "the policy's limit"
    value, how = default_bound(audit, t)
    return value, "default", how


def _decided(check: GateCheck, proof: dict | None, decide: str, source: str, rule: str,
             materiality_threshold: float = float("nan")) -> GateCheck:
    """A limit check decided by ``decide``: "limits" on the raw score; "evidence" by its minimum-effect test
    (``proof`` from :func:`autopdp.gating.limits.run_limit_tests`; None: the rule has no such test and the raw
    score decides).  The proof carries the bound, its source, the observed value, the p-value and the decision."""
    measured = check.measured
    exceeds = bool(measured is not None and not check.passed)
    base = {"bound": float(check.threshold), "bound_source": source, "bound_rule": rule,
            "observed": measured, "exceeds": exceeds, "p_value": float("nan"), "adjusted_p": float("nan"),
            "significant": False, "untested": False, "test": "", "null": "", "draws": 0}
    raw = decide == "limits" or proof is None
    proof = {**base, **(proof or {}), "decide": decide, "bound_source": source, "bound_rule": rule}
    proof["material"] = proof["exceeds"]  # kept for older readers of gate.json: now "the limit is exceeded"
    proof["materiality_threshold"] = float(materiality_threshold)
    if measured is None:  # could not be measured: failed closed by _limit_check
        proof.update(decision="fail", why="not measured: the gate fails closed")
        return dataclasses.replace(check, proof=proof)
    if raw:
        proof["decision"] = "pass" if check.passed else "fail"
        if not proof["test"]:
            proof["test"] = ("none: gate.decide = 'limits' (the raw score against the limit)" if decide == "limits"
                             else "none: no minimum-effect test for this rule in the gate (the raw score decides)")
        proof["why"] = "within the limit" if check.passed else "the raw score exceeds the limit"
        message = check.message
        if decide != "limits" and not check.passed:
            message = f"{check.message[:-1]} (no noise test for this rule: the raw score decides)."
        return dataclasses.replace(check, message=message, proof=proof)
    if not proof["exceeds"]:
        proof.update(decision="pass", why="within the limit", p_value=1.0, adjusted_p=1.0)
        return dataclasses.replace(check, passed=True, proof=proof)
    p, q, alpha = proof["p_value"], proof["adjusted_p"], proof.get("significance")
    if proof["untested"]:
        proof["why"] = "exceeds the limit and its noise test could not be run: fails closed"
        message = (f"{check.message[:-1]} and its noise test could not be run (no ICE curves or standard errors): "
                   "the gate fails closed.")
        return dataclasses.replace(check, passed=False, message=message, proof=proof)
    tested = f"p = {_fmt(p)}, {proof.get('multiple_testing', 'holm')}: adjusted {_fmt(q)}, at {_fmt(alpha)}"
    if proof["significant"]:
        proof["why"] = "exceeds the limit with confidence"
        message = (f"{check.message[:-1]}, and it exceeds the limit with confidence, clear of noise (one-sided "
                   f"minimum-effect test of 'at most {_fmt(check.threshold)}': {tested}).")
        return dataclasses.replace(check, passed=False, message=message, proof=proof)
    proof["why"] = "exceeds the limit within sampling noise"
    message = (f"{check.message[:-1]}, but not with confidence ({tested}): within sampling noise of the limit, "
               "passes (gate.decide = 'evidence'; set it to 'limits' to fail on the raw score).")
    return dataclasses.replace(check, passed=True, message=message, proof=proof)


def _warn_if_loosened(config, policy) -> None:
    """A warning naming the keys the verdict rests on where the audit's settings are not the policy's (its
    ``[audit]`` value, else the default): the CLI runs the audit with the policy's; in Python, run it with
    ``policy.audit_config(policy.without_loosening(config)[0])``."""
    import warnings

    default = AuditConfig()
    differ = [f"{k} = {getattr(config, k)!r} (the policy's: {policy.audit.get(k, getattr(default, k))!r})"
              for k in DECISION_KEYS if getattr(config, k) != policy.audit.get(k, getattr(default, k))]
    if differ:
        warnings.warn("the gate decides on an audit whose settings differ from the policy's: " + "; ".join(differ)
                      + "; run the audit with policy.audit_config(policy.without_loosening(config)[0]).",
                      UserWarning, stacklevel=3)


def _held(limits: list, kind, name, s, bound, source, rule, test, label, t) -> None:
    """A limit check of score ``s`` against ``bound``, with its noise test, appended to ``limits``."""
    check = _limit_check(kind, name, s.value if s else None, bound, reason=(s.reason if s else "") or
                         f"{kind} was not run", evidence=kind, what=label, note=rule)
    if s is not None and s.available and not np.isfinite(bound):
        check = dataclasses.replace(check, passed=False, message=(
            f"{name}: {label} {_fmt(s.value)}, but its default limit ({rule}) could not be computed; "
            "the gate fails closed."))
        test = None
    where = (s.details or {}).get("where") if s is not None and s.available else None
    if where:
        check = dataclasses.replace(check, where=dict(where))
    limits.append((check, test if check.measured is not None else None, source, rule, t))


def _feature_limits(audit, policy, checks: list, limits: list) -> None:
    """Each feature table's shape and size limits, in policy order: the checks decided at once go to ``checks``,
    those a noise test decides to ``limits`` as (check, LimitTest or None, bound source, how the bound was made)."""
    loss, sw = audit.config.loss, getattr(audit, "sample_weight", None)
    for name, fp in policy.features.items():
        try:
            r = audit.pd(name)
        except ValueError:
            checks.append(GateCheck(f"scored[{name}]", "scored", name, None, 0.0, "<=", False,
                                    f"{name}: no PD in the audit (constant or excluded feature); the gate fails closed."))
            continue
        w = r.density
        t = r.target_index(None)
        if fp.monotonic not in (None, "none"):
            s = score_monotonicity(r, target_index=t, weights=w, directions=(fp.monotonic,), loss=loss)
            bound, source, rule = _bound(audit, t, fp.max_monotonicity)
            test = monotonicity_test(audit, r, t, s, bound, sw) if s.available and np.isfinite(bound) else None
            _held(limits, "monotonicity", name, s, bound, source, rule, test, f"gap to the best {fp.monotonic} curve", t)
        if fp.max_lipschitz is not None:
            if fp.lipschitz is not None:
                s = score_lipschitz(r, target_index=t, weights=w, slopes=[fp.lipschitz], loss=loss)
            else:
                s = audit.score(name, "lipschitz")
            test = lipschitz_test(audit, r, t, s, fp.max_lipschitz, sw) if s.available else None
            _held(limits, "lipschitz", name, s, fp.max_lipschitz, "policy", "the policy's limit", test,
                  "gap to the best slope-bounded curve", t)
        if fp.max_incidence is not None:
            s = audit.utility_scores[r.features].get("incidence")
            _held(limits, "incidence", name, s, fp.max_incidence, "policy", "the policy's limit", None,
                  "gap to the data's incidence", t)
        if fp.max_slope is not None:
            s = audit.utility_scores[r.features].get("slope")
            test = slope_test(audit, r, t, s.value, fp.max_slope, sw) if s is not None and s.available else None
            _held(limits, "slope", name, s, fp.max_slope, "policy", "the policy's limit", test, "slope", t)
        if fp.min_importance is not None:
            imp = float(audit.importance.loc[name].max())
            checks.append(_limit_check("importance_min", name, imp, fp.min_importance, relation=">=", what="importance"))


def _champion_limits(audit, policy, names: list, champ, limits: list) -> None:
    """Each feature's limit on its PD's gap to the champion's, appended to ``limits``."""
    uid, sw = f"similarity:{champ}", getattr(audit, "sample_weight", None)
    for name in names:
        fp = policy.features.get(name, FeaturePolicy())
        limit = fp.max_similarity if fp.max_similarity is not None else policy.champion_max_similarity
        if limit is None:
            continue
        r = audit.pd(name)
        s = audit.utility_scores[(name,)].get(uid)
        other = next((o for o in audit.comparisons.get(champ, ()) if tuple(o.features) == (name,)), None)
        t = r.target_index(s.target) if s is not None and s.available else r.target_index(None)
        test = similarity_test(audit, r, t, other, s, limit, sw) if s is not None and s.available else None
        label = f"shape gap to the champion's PD ({champ})" if champ else "shape gap to the champion's PD"
        check = _limit_check("similarity", name, s.value if s else None, limit,
                             reason=s.reason if s else "no champion model was given", evidence=uid, what=label,
                             note="the policy's limit")
        limits.append((check, test if check.measured is not None else None, "policy", "the policy's limit", t))


def _gap_checks(audit, policy, champ) -> list:
    """The champion's gap rules (``max_pd_gap``, ``max_changed_rows``): exact differences between the two models on the
    audit's rows and grids (``metadata.comparison_gap``), held to the policy's limits with no noise test: a converted
    model (an ONNX file against the trained one) either reproduces the predictions or does not."""
    gap = ((audit.metadata or {}).get("comparison_gap") or {}).get(champ) or {}
    out = []
    if policy.champion_max_pd_gap is not None:
        pd_gap = gap.get("pd_gap") or {}
        worst = max(pd_gap, key=pd_gap.get) if pd_gap else None
        out.append(_limit_check("pd_gap", worst or "(all)", pd_gap.get(worst) if worst else None,
                                policy.champion_max_pd_gap, reason="no 1D PD of the champion to compare",
                                what=f"largest 1D PD difference to the champion ({champ})", note="the policy's limit"))
    if policy.champion_max_changed_rows is not None:
        share = gap["rows_changed"] / gap["rows"] if gap.get("rows") else None
        out.append(_limit_check("changed_rows", "(all)", share, policy.champion_max_changed_rows,
                                reason="the champion's predictions on the audit rows are not known",
                                what=f"share of rows whose prediction differs from the champion's ({champ}) by "
                                     "more than 1e-6", note="the policy's limit"))
    return out


def _cohort_checks(audit, policy) -> list:
    """``[cohorts] same_shape_across``: per feature, the largest gap between two cohorts' centred PDs held to the
    limit (``max_shape_gap``, else the audit's materiality threshold on the ICE-spread scale).  With ``decide =
    "evidence"`` a gap above the limit fails only when the cohorts' shapes differ clear of noise (the audit's
    permutation test, adjusted across features, :mod:`autopdp.findings.cohorts`); the limit itself is held to the
    estimate, not tested."""
    if policy.cohort_column is None:
        return []
    c = audit.cohorts()
    if c is None or c.get("column") != policy.cohort_column:
        return [_limit_check("same_shape", "(all)", None, policy.cohort_max_shape_gap or 0.0,
                             reason=f"the audit has no cohorts of {policy.cohort_column!r} (run it with --cohort "
                                    f"{policy.cohort_column})", what=f"shape gap across {policy.cohort_column}")]
    out = []
    for f in c["features"]:
        limit = policy.cohort_max_shape_gap if policy.cohort_max_shape_gap is not None else f.get("threshold")
        gap = f.get("shape_gap")
        clear = f.get("adjusted_p") is not None and f["adjusted_p"] <= audit.config.significance
        check = _limit_check("same_shape", f["feature"], gap, limit if limit is not None else 0.0,
                             reason="fewer than two cohorts with enough rows",
                             what=f"largest gap between two cohorts' centred PDs across {c['column']}",
                             note="the policy's limit" if policy.cohort_max_shape_gap is not None else
                             "the materiality threshold")
        if not check.passed and check.measured is not None and not clear and policy.decide == "evidence":
            check = dataclasses.replace(check, passed=True, message=(
                f"{f['feature']}: the cohorts' centred PDs are up to {_fmt(gap)} apart, above the allowed "
                f"{_fmt(limit)}, but their shapes do not differ clear of noise (adjusted p = "
                f"{_fmt(f.get('adjusted_p'))}): passes."))
        out.append(check)
    return out


def _decided_limits(audit, policy, limits: list) -> list:
    """The limit checks decided: with ``decide = "evidence"`` by the gate's own tests, one family (Holm) across
    every noise-tested limit check of the policy."""
    family = [test for _, test, *_ in limits if test is not None]
    proofs = dict(zip(map(id, family), run_limit_tests(family, audit.config))) if policy.decide == "evidence" else {}
    out = []
    for check, test, source, rule, t in limits:
        proof = proofs.get(id(test)) if test is not None else None
        if proof is None and policy.decide == "evidence" and check.check in TESTED and check.measured is not None:
            proof = {"untested": not check.passed, "test": "none: no noise model for this PD",
                     "exceeds": not check.passed, "p_value": 1.0 if check.passed else float("nan"),
                     "adjusted_p": 1.0 if check.passed else float("nan"), "significance": audit.config.significance}
        out.append(_located(_decided(check, proof, policy.decide, source, rule, default_bound(audit, t)[0])))
    return out


#: how each rule's ``where`` reads in a failed check's message
_WHERE_HOW = {"monotonicity": "Against the direction", "lipschitz": "At its steepest", "slope": "At its steepest"}


def _located(check: GateCheck) -> GateCheck:
    """A failed check's message with where its PD breaks the rule: the stretch, the move and the rows."""
    if check.passed or not check.where or check.check not in _WHERE_HOW:
        return check
    text = where_text(check.feature, check.where, _WHERE_HOW[check.check]).lstrip("; ")
    return dataclasses.replace(check, message=f"{check.message} {text[0].upper()}{text[1:]}.")


def _rank_checks(audit, policy) -> list:
    """The forbidden and required features' importance ranks and sizes."""
    checks = []
    imp = audit.importance.max(axis=1).sort_values(ascending=False, kind="stable")
    rank = {f: i + 1 for i, f in enumerate(imp.index)}
    for name in policy.forbidden:
        r_ = rank.get(name)
        ok = r_ is None or r_ > policy.forbidden_top_k
        checks.append(GateCheck(
            f"importance_forbidden[{name}]", "importance_forbidden", name, None if r_ is None else float(r_),
            float(policy.forbidden_top_k), ">", ok,
            f"{name}: importance rank {r_ if r_ else 'n/a'}; forbidden features must rank below the top {policy.forbidden_top_k}"
            + ("." if ok else " — it is among them."), "importance",
        ))
    for name in policy.required:
        value = float(imp.get(name, np.nan))
        checks.append(_limit_check("importance_required", name, value, policy.min_importance, relation=">=",
                                   evidence="importance", what="importance"))
        if policy.required_top_k is not None:
            r_ = rank.get(name)
            ok = r_ is not None and r_ <= policy.required_top_k
            checks.append(GateCheck(
                f"importance_required_rank[{name}]", "importance_required_rank", name,
                None if r_ is None else float(r_), float(policy.required_top_k), "<=", ok,
                f"{name}: importance rank {r_ if r_ else 'n/a'}; required within the top {policy.required_top_k}.",
                "importance",
            ))
    return checks


def gate(audit, policy, *, champion: str | None = None) -> GateResult:
    """Check ``audit`` against ``policy`` (a :class:`GatePolicy`, dict or TOML path).

    Monotonicity and Lipschitz are re-scored from the audit's PDs with the
    policy's declared direction and bound (pure functions, no model calls), so
    the verdict does not depend on how the audit was configured.  Incidence and
    similarity use the audit's scores.  The champion is the comparison model
    ``champion`` names, else the one called ``"champion"``, else the single
    comparison model whatever its name (see :func:`champion_name`).
    """
    if isinstance(policy, Mapping):
        policy = GatePolicy.from_dict(policy)
    elif not isinstance(policy, GatePolicy):
        policy = GatePolicy.from_toml(policy)
    _warn_if_loosened(audit.config, policy)
    names = [r.features[0] for r in audit.results_1d]
    champ = champion_name(audit, champion) if (policy.needs_champion or champion is not None) else None
    policy.check_features(list(audit.metadata.get("data", {}).get("feature_names", names)) or names)
    checks: list[GateCheck] = []
    limits: list[tuple] = []  # (check, LimitTest or None, bound source, how the bound was made, target index)
    _feature_limits(audit, policy, checks, limits)
    if policy.needs_champion:
        _champion_limits(audit, policy, names, champ, limits)
    checks += _decided_limits(audit, policy, limits)
    checks += _gap_checks(audit, policy, champ)
    checks += _cohort_checks(audit, policy)
    checks = robust_verdicts(audit, policy, checks)
    if policy.forbidden or policy.required:
        checks += _rank_checks(audit, policy)
    if not checks:  # a policy built directly (not parsed) with no rule: the gate fails closed
        raise InputError(_no_check_message())
    return GateResult(checks=tuple(checks), provenance=gate_provenance(audit, policy, champ))

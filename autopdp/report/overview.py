"""The report's overview lists: the criteria with no finding, the criteria whose noise test could not run, and the
PDPs that rest mostly on out-of-distribution rows."""

from __future__ import annotations

import numpy as np

from ..scores.selection import PAIR_CRITERIA
from ..trust.ood import OOD_MOSTLY, OOD_OK, ood_verdict
from ..utils.formatting import fmt, share as share_text

__all__ = ["no_findings", "untested", "cautions", "skill", "pfi_text", "data_evidence", "set_aside"]


def no_findings(audit) -> list[str]:
    """The criteria under which no PDP is a material finding clear of noise."""
    if not audit.evidence:
        return []
    out = []
    for c, by in audit.evidence.items():
        if c == "importance_1d" or c not in audit.scores.columns:
            continue
        if c in PAIR_CRITERIA and c not in audit.config.criteria_2d:
            continue
        if (not any(e.passed for e in by.values()) and any(np.isfinite(e.value) for e in by.values())
                and not any(e.untested for e in by.values())):
            out.append(c)
    return out


def untested(audit) -> list[str]:
    """The criteria with material scores whose noise test could not be run (never called 'no finding')."""
    out = []
    for c, by in (audit.evidence or {}).items():
        n = sum(1 for e in by.values() if e.untested)
        if n and c != "importance_1d":
            out.append(f"{c} ({n} PDP{'s' if n > 1 else ''})")
    return out


def cautions(audit):
    """PDPs computed mostly from unrealistic rows (OOD share above OOD_MOSTLY, the trust column's verdict), worst first."""
    if "ood_share" not in audit.scores.columns:
        return []
    share = audit.scores["ood_share"].astype(float)
    mostly = share.map(lambda v: bool(np.isfinite(v)) and ood_verdict(float(v)) == "mostly unrealistic")
    rows = audit.scores[mostly].sort_values("ood_share", ascending=False, kind="stable")
    out = []
    for _, row in rows.head(8).iterrows():
        moved = " and ".join(row["features"])
        out.append(
            f"{' × '.join(row['features'])}: {share_text(row['ood_share'], OOD_OK, OOD_MOSTLY)} of the rows this PD averages over are out of distribution "
            f"(above {OOD_MOSTLY:.0%}: mostly unrealistic): with {moved} set to the grid values, they fall outside the "
            f"data in the space of {moved} or are implausible given the rows' other values; read it as extrapolation."
        )
    n_more = len(rows) - len(out)
    if n_more > 0:
        out.append(f"... and {n_more} more PDPs with more than {OOD_MOSTLY:.0%} of their rows out of distribution "
                   "(see the ood_share ranking).")
    return out


def _p(p) -> str:
    return "p < 0.0001" if p < 1e-4 else f"p = {p:.2g}"


def _range(iv, extra: str = "") -> str:
    inside = "; ".join(x for x in ((f"95% interval {fmt(iv[0])} to {fmt(iv[1])}" if iv else ""), extra) if x)
    return f" ({inside})" if inside else ""


def _measures(k: dict, outcome: str) -> str:
    """The skill measures of :func:`autopdp.scores.skill.model_skill`, in words."""
    kind = k.get("kind")
    if kind == "binary":
        p = k.get("p_value", np.nan)
        test = f"no skill is 0.5, {_p(p)}" if k.get("auc_interval") and np.isfinite(p) else ""
        text = f"AUC {fmt(k['auc'])}{_range(k.get('auc_interval'), test)} separating {outcome} from the rest"
        if "log_loss" in k:
            text += (f"; log-loss {fmt(k['log_loss'])}{_range(k.get('log_loss_interval'))} against "
                     f"{fmt(k['baseline_log_loss'])} for the base rate {fmt(k['base_rate'])} given to every row")
        return text
    if kind == "multiclass":
        return (f"log-loss {fmt(k['log_loss'])}{_range(k.get('log_loss_interval'))} against "
                f"{fmt(k['baseline_log_loss'])} for the class shares given to every row (improvement "
                f"{fmt(k['improvement'])}, one-sided {_p(k['p_value'])})")
    test = f"no skill is 0, one-sided {_p(k['p_value'])}"
    return (f"R² {fmt(k['r2'])}{_range(k.get('r2_interval'), test)}; mean squared error {fmt(k['mse'])} against "
            f"{fmt(k['baseline_mse'])} for the mean given to every row")


#: criteria whose evidence key is not the name a reader knows
_CRITERION_NAMES = {"importance_1d": "feature importance", "importance": "pair importance"}


def skill(audit) -> dict:
    """The summary's first paragraph: the model's skill on the audit rows' target, and what chance alone gives.
    ``no_skill`` is True when the primary test shows none (every finding then carries it)."""
    k = (audit.metadata or {}).get("skill")
    found = {c: sum(bool(e.passed) for e in by.values()) for c, by in (audit.evidence or {}).items()
             if c != "intersection"}
    total = sum(found.values())
    q = float(audit.config.significance)
    chance = ""
    if audit.evidence:
        listed = ", ".join(f"{_CRITERION_NAMES.get(c, c)} {n}" for c, n in found.items() if n)
        chance = (f"Chance: under each criterion Benjamini-Hochberg keeps the expected share of findings that are "
                  f"noise of the audit rows at or below {q:.0%}, so of these {total} findings"
                  + (f" ({listed})" if listed else "") + f" about {fmt(q * total, 2)} may be such noise.")
        if audit.set_aside_patterns():
            chance += " (These counts include the patterns set aside below.)"
    if not k or "shows_skill" not in k:
        return {"sentence": "No target in the audit data: the model's skill is not measured, so the findings describe "
                            "the fitted model only." if not k else f"The model's skill is not measured: {k.get('reason')}.",
                "no_skill": False, "chance": chance, "set_aside": ""}
    rows = f"on the {k['rows']:,} audit rows" if k.get("rows") else "on the audit rows"
    name = (audit.metadata or {}).get("target_name") or "the target"
    measures = _measures(k, f"{name} = {fmt(k.get('target'))}") if "reason" not in k else k["reason"]
    if k["shows_skill"]:
        text = f"The model shows skill {rows}: {measures}. This is held-out skill if these rows were not used to fit it."
    elif k["shows_skill"] is None:
        text = f"The model's skill {rows} could not be tested: {measures}."
    else:
        robust = [e for by in (audit.evidence or {}).values() for e in by.values()
                  if e.passed and getattr(e, "robust", None) is not None]
        tail = (f", {sum(bool(e.robust) for e in robust)} of them robust at the learner level" if robust else "")
        text = (f"The model shows no skill {rows}: {measures}. The {total} findings below are patterns of this fitted "
                f"model{tail}, not evidence about the data.")
    return {"sentence": text, "no_skill": k["shows_skill"] is False, "chance": chance,
            "set_aside": set_aside(audit)}


def set_aside(audit) -> str:
    """The sentence on the 1D patterns set aside from the findings (the model shows skill, the held-out
    permutation importance does not show their feature to matter: :meth:`autopdp.Audit.set_aside_patterns`)."""
    patterns = audit.set_aside_patterns()
    if not patterns:
        return ""
    pfi = (audit.metadata or {}).get("permutation_importance") or {}
    by = pfi.get("features", {})
    parts = [f"{f} ({', '.join(cs)}; permuting it changes the {pfi.get('loss', 'loss')}{pfi_rows(pfi)} by "
             f"{pfi_text(by.get(f), named=True)}, "
             f"adjusted p = {fmt(by.get(f, {}).get('adjusted_p'), 2)})" for f, cs in patterns.items()]
    n = len(patterns)
    return (f"Set aside: the patterns of the fitted model on {n} feature{'s' if n > 1 else ''} passed their tests "
            f"but are not counted among the findings, because the held-out permutation importance does not show "
            f"{'these features' if n > 1 else 'the feature'} to matter to the predictions' accuracy "
            f"(Benjamini-Hochberg across the features): " + "; ".join(parts) + ".")


def pfi_rows(pfi: dict) -> str:
    """" on a seeded sample of 50,000 of the 1,000,000 rows" when the permutation importance used a sample."""
    rows, of = pfi.get("rows"), pfi.get("of")
    return f" on a seeded sample of {rows:,} of the {of:,} rows" if rows and of and rows < of else ""


def pfi_text(v, named: bool = False) -> str:
    """A permutation importance with its interval (``named``: "95% interval" said, for a sentence; a table's
    column header says it)."""
    if not v:
        return ""
    iv = v.get("interval")
    return fmt(v["value"]) + (f" ({'95% interval ' if named else ''}{fmt(iv[0])} to {fmt(iv[1])})" if iv else "")


def data_evidence(audit, features) -> str:
    """For a 1D finding whose feature the held-out permutation importance does not show to matter (when the model
    shows skill: without skill every finding already says so): that sentence."""
    pfi = (audit.metadata or {}).get("permutation_importance") or {}
    v = pfi.get("features", {}).get(features[0]) if len(features) == 1 else None
    if not v or v["shown"] or ((audit.metadata or {}).get("skill") or {}).get("shows_skill") is False:
        return ""
    return (f" (The held-out data do not show that {features[0]} matters to the predictions' accuracy: permuting it "
            f"changes the {pfi['loss']}{pfi_rows(pfi)} by {pfi_text(v, named=True)}, adjusted p = "
            f"{fmt(v['adjusted_p'], 2)}.)")

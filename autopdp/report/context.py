"""Stage: Audit -> report context (plain dicts and SVG strings) for the templates."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd

from .regions import cohorts_context, region_alt, region_curves, region_ice_groups, regions_sentence
from ..config import config_record
from ..scores.selection import PAIR_CRITERIA
from ..scores.utilities import TRUST_IDS
from ..trust.ood import OOD_MOSTLY, OOD_OK, ood_verdict
from ..utils.formatting import share
from .figure_queue import _figures_drawn_together, _plot
from .figures import plot_importance, plot_interaction, plot_pd_1d, plot_pd_2d
from .methodology import (adjustment_name, confidence_text, finding_definition, interaction_scale, method_context,
                          tested_text)
from .findings import UTILITY_DEFINITIONS, evidence_text, finding_sentence, fmt, p_text, robustness_sentence, title_of
from .cover import cover
from .overview import cautions, data_evidence, no_findings, pfi_text, skill, untested
from .explore import all_scores, shown_score

__all__ = ["build_context", "findings_context", "outcome_summary", "TRUST_GAP_CAUTION"]

COMPARISON_LABELS = {
    "monotonicity": "best monotone fit (isotonic)",
    "lipschitz": "best slope-bounded fit (Lipschitz)",
    "incidence": "observed incidence in the data",
    "stratpd": "StratPD (model-free, centred)",
    "ale_divergence": "ALE (centred)",
}


#: Bars of the importance chart (the most important features; the HTML's tables list every feature).
IMPORTANCE_BARS = 25
#: Rows of each ranking the PDF shows.
TOP_ROWS = 10

def _label(features) -> str:
    return " × ".join(features)


def _target_index(result, score) -> int:
    if score is None or score.target is None:
        return 0
    try:
        return result.target_index(score.target)
    except ValueError:
        return 0


def _g_label(uid: str, score) -> str:
    if uid.startswith("similarity:"):
        return f"PD of {uid.split(':', 1)[1]}"
    label = COMPARISON_LABELS.get(uid, "comparison")
    if uid == "monotonicity" and score is not None and score.details.get("direction"):
        label = f"best {score.details['direction']} fit (isotonic)"
    if uid == "incidence" and score is not None:
        label = f"data: {score.details.get('what', 'incidence')}"
    return label


def _scale(audit, result, score=None) -> float | None:
    """Standard deviation of the model's predictions for the score's target (None when unknown)."""
    sds = audit.metadata.get("prediction_std") or []
    t = _target_index(result, score)
    return float(sds[t]) if t < len(sds) else None


def outcome_label(audit, target=None) -> str:
    """What the model's response is, in words: 'P(income = >50K)', 'predicted cnt', ..."""
    meta = audit.metadata
    name = meta.get("target_name")
    targets = meta.get("targets") or []
    if target is None and targets:
        target = targets[0]
    response = meta.get("response")
    if meta.get("is_classifier"):
        if response == "crisp":
            return f"share predicted {name + ' = ' if name else 'class '}{target}"
        if response == "decision_function":
            return f"decision function for {name + ' = ' if name else 'class '}{target}"
        return f"P({name or 'class'} = {target})"
    return f"predicted {name}" if name else "prediction"


def _targets(audit) -> list:
    return list(audit.metadata.get("targets") or [])


def _several(audit) -> bool:
    """More than one explained target (a multiclass model: one response per class)."""
    return len(_targets(audit)) > 1


def outcome_summary(audit) -> str:
    """The explained response(s) for the summary: every class of a multiclass model, not the first one."""
    targets = _targets(audit)
    if len(targets) <= 1:
        return outcome_label(audit)
    labels = [outcome_label(audit, t) for t in targets]
    return (", ".join(labels[:-1]) + f" and {labels[-1]}: one response per class; every finding, figure and table "
            "names the class it is about")


def _classes_text(audit) -> str:
    return ", ".join(str(t) for t in _targets(audit))


def _max_across(audit, table: pd.DataFrame) -> pd.DataFrame:
    """A one-column table of each row's largest value across the classes (the table itself with one target)."""
    if table.empty or table.shape[1] <= 1:
        return table
    return table.max(axis=1).to_frame(f"largest across classes {_classes_text(audit)}")


def _pair_target(audit, features) -> int:
    """The class a 2D surface is drawn for: where the pair's interaction is largest (0 with one target)."""
    if not _several(audit) or audit.interaction.empty:
        return 0
    key = tuple(features)
    if key not in audit.interaction.index:
        return 0
    row = audit.interaction.loc[key].to_numpy(dtype=float)
    return int(np.nanargmax(row)) if np.isfinite(row).any() else 0


def _pair_outcome(audit, features, criterion) -> str | None:
    """Which class a pair criterion's value is of, in words (None when the criterion has no class)."""
    if criterion == "interaction":
        t = _pair_target(audit, features)
        label = outcome_label(audit, _targets(audit)[t] if _targets(audit) else None)
        return f"{label}, the largest across the classes" if _several(audit) else label
    if criterion == "importance" and _several(audit):
        return "each feature's importance taken for the class where it is largest"
    if criterion == "surrogate_importance" and _several(audit):
        return outcome_label(audit, _targets(audit)[0])  # the surrogate is fitted to the first class's output
    if criterion in ("importance", "surrogate_importance"):  # one target: the PDs' own outcome
        return outcome_label(audit, _targets(audit)[0] if _targets(audit) else None)
    return None


def _evidence(audit, criterion, features):
    return audit.evidence.get(criterion, {}).get(tuple(features)) if audit.evidence else None


def _figure(svg: str, caption: str, alt: str) -> dict:
    return {"svg": svg, "caption": caption, "alt": alt}


def _ood(audit, features):
    s = audit.utility_scores.get(tuple(features), {}).get("ood_share")
    return None if s is None or not s.available else s.details.get("ood")


def _overlays(audit, r, uid):
    """StratPD and ALE curves as extra overlays in the trust sections."""
    extra = []
    for other in ("stratpd", "ale_divergence"):
        if other == uid:
            continue
        s = audit.utility_scores.get(r.features, {}).get(other)
        if s is not None and s.available and s.comparison is not None and uid in ("stratpd", "ale_divergence"):
            extra.append(("StratPD (model-free, centred)" if other == "stratpd" else "ALE (centred)", s.comparison))
    return extra + region_curves(audit, r.features, uid)


def _pd_figure(audit, features, uid=None, target_index=None):
    r = audit.pd(features)
    score = audit.utility_scores.get(r.features, {}).get(uid) if uid else None
    t = _target_index(r, score) if target_index is None else int(target_index)
    what = outcome_label(audit, r.targets[t]) if len(r.targets) else "the model's prediction"
    g = score.comparison if score is not None and score.comparison is not None else None
    dist = audit.data_summary.get("distributions", {}).get(r.features[0]) if r.ndim == 1 else None
    name = _label(r.features)
    ood = _ood(audit, r.features)
    if r.ndim == 1:
        refits = getattr(audit, "refit_curves", {}).get(r.features)
        svg = _plot(plot_pd_1d, r, target_index=t, comparison=g,
                    comparison_label=_g_label(uid, score) if g is not None else None, distribution=dist, ood=ood,
                    extra_curves=_overlays(audit, r, uid), refits=None if refits is None else refits[:, t],
                    ice_groups=region_ice_groups(audit, r, uid))
        alt = f"Partial dependence of {what} on {name}"
        if refits is not None:
            alt += f", its pointwise Monte-Carlo 95% band (each grid value's own interval, not one for the whole curve) beside the range of {refits.shape[0]} refits' PDs and their mean"
        if g is not None:
            alt += f", with the {_g_label(uid, score)} overlaid"
        alt += region_alt(audit, r.features, uid) + ", grey ICE curves and the data distribution underneath."
    else:
        svg = _plot(plot_pd_2d, r, target_index=t, ood=ood, **_data_overlay(audit, r.features))
        alt = f"Heatmap of the 2D partial dependence of {what} on {name} with where the data lies shown as dots."
    return svg, alt, t


def _data_overlay(audit, features) -> dict:
    """Where the data lies on a 2D PD: its ``occupancy`` (rows per grid cell), else the raw ``points`` of an
    audit run with ``keep_points`` (or an older results.json that has them), else nothing."""
    summary = audit.data_summary or {}
    for item in summary.get("occupancy") or ():
        if tuple(item.get("features", ())) == tuple(features):
            return {"occupancy": item.get("counts")}
    pts = summary.get("points") or {}
    if pts:
        return {"points": (pts.get(features[0], []), pts.get(features[1], []))}
    return {}


#: an ALE or StratPD gap of at least this many prediction standard deviations is a caution in the trust column
TRUST_GAP_CAUTION = 0.25


def trust_text(audit, features) -> str:
    """The 'Can this PDP be trusted?' cell: OOD share, ALE and StratPD gaps, and a verdict."""
    by = audit.utility_scores.get(tuple(features), {})
    parts, caution = [], []
    s = by.get("ood_share")
    if s is not None and s.available:
        # the verdict's thresholds stand beside the share, so the reader sees why it is ok or not
        parts.append(f"OOD {share(s.value, OOD_OK, OOD_MOSTLY)} (ok ≤ {OOD_OK:.0%}, mostly unrealistic > {OOD_MOSTLY:.0%})")
        verdict = ood_verdict(s.value)
        if verdict == "mostly unrealistic":
            caution.append("mostly unrealistic rows")
        elif verdict == "caution":
            caution.append("some unrealistic rows")
    try:
        r = audit.pd(features)
    except ValueError:
        r = None
    for uid, label in (("ale_divergence", "ALE gap"), ("stratpd", "StratPD gap")):
        s = by.get(uid)
        if s is not None and s.available:
            sd = _scale(audit, r, s) if r is not None else None
            # one rule, shown where the verdict is: a gap of at least TRUST_GAP_CAUTION prediction sd is large
            if sd:
                scaled = f"{s.value / sd:.2g} pred. sd; " if s.value != 0 else ""
                parts.append(f"{label} {fmt(s.value)} ({scaled}caution ≥ {TRUST_GAP_CAUTION:g} pred. sd)")
                if s.value >= TRUST_GAP_CAUTION * sd:
                    caution.append(f"{label} large")
            else:
                parts.append(f"{label} {fmt(s.value)} (no prediction sd to judge it)")
    if not parts:
        return "n/a"
    return " · ".join(parts) + (" — caution: " + ", ".join(caution) if caution else " — ok")


#: Criteria whose score is a gap on the model's response scale, in the same unit as its predictions' sd.
_RESPONSE_GAPS = ("monotonicity", "lipschitz", "incidence", "stratpd", "ale_divergence", "similarity")


def _in_response_units(uid: str, score) -> bool:
    """Whether ``score`` is on the response scale, so a multiple of the predictions' sd means something: not a
    slope (a rate), a share (ood_share) or an ICE spread on the link scale (log-odds)."""
    base = uid.split(":", 1)[0]
    if base == "ice_variance":
        return ((score.details or {}).get("scale") or "prediction") == "prediction"
    return base in _RESPONSE_GAPS


def _score_rows(audit, uid):
    ranked = audit.ranking(uid, kind="1d") if uid in audit.scores.columns else pd.DataFrame()
    rows = []
    for _, row in ranked.iterrows():
        feats = tuple(row["features"])
        s = audit.utility_scores[feats][uid]
        sd = _scale(audit, audit.pd(feats), s)
        e = _evidence(audit, uid, feats)
        value = shown_score(audit, uid, feats)
        rows.append({
            "rank": int(row["rank"]), "feature": _label(feats), "features": feats, "value": fmt(value),
            "scaled": "" if not sd or not _in_response_units(uid, s) else f"{value / sd:.2g}", "_v": value,
            "p": "" if e is None else p_text(e.adjusted_p),
            "finding": "" if e is None else ("yes" if e.passed else ("not material" if not e.material else
                                                                  ("untested" if e.untested else "noise"))),
            "passed": e is None or e.passed,
            "target": "" if s.target is None else (outcome_label(audit, s.target) if _several(audit) else str(s.target)),
            "trust": trust_text(audit, feats),
        })
    if uid.startswith("similarity:"):
        # ranked by the shape gap the rows show (the total gap adds the same level to every feature)
        rows.sort(key=lambda r: -r["_v"] if np.isfinite(r["_v"]) else np.inf)
        for i, r in enumerate(rows, 1):
            r["rank"] = i
    for r in rows:
        del r["_v"]
    missing: dict[str, list] = {}
    one = audit.scores[audit.scores["kind"] == "1d"]
    for _, row in one.iterrows():
        if pd.isna(row[uid]):
            s = audit.utility_scores[tuple(row["features"])][uid]
            missing.setdefault(s.reason, []).append(_label(row["features"]))
    return rows, [{"reason": k, "features": ", ".join(v)} for k, v in missing.items()]


def _utility_sections(audit, top_k):
    sections = []
    for uid in [c for c in audit.scores.columns if c not in ("features", "kind", *PAIR_CRITERIA)]:
        if not audit.scores.loc[audit.scores["kind"] == "1d", uid].notna().any() and uid in TRUST_IDS:
            continue
        base = uid.split(":", 1)[0]
        rows, missing = _score_rows(audit, uid)
        plots = []
        tested = bool(audit.evidence) and uid in audit.evidence and any(
            np.isfinite(e.value) for e in audit.evidence[uid].values())  # all n/a: the missing reasons say why
        for row in [r for r in rows if r["passed"]][:top_k]:
            feats = row["features"]
            svg, alt, _ = _pd_figure(audit, feats, uid)
            s = audit.score(feats, uid)
            sentence = finding_sentence(feats, uid, s, scale=_scale(audit, audit.pd(feats), s),
                                        outcome=outcome_label(audit, s.target), evidence=_evidence(audit, uid, feats))
            sentence += regions_sentence(audit, feats, uid)
            proof = evidence_text(_evidence(audit, uid, feats))
            plots.append(_figure(svg, f"#{row['rank']} — {sentence}" + (f" [{proof}]" if proof else ""), alt))
        e_any = next(iter(audit.evidence.get(uid, {}).values()), None) if tested else None
        none_text = ""
        untested = [e for e in audit.evidence.get(uid, {}).values() if e.untested] if tested else []
        if tested and not plots and untested:
            none_text = (
                f"No finding shown, but {len(untested)} material score(s) could not be tested for noise "
                f"({untested[0].why.removeprefix('untested: ')}); they are marked 'untested' below, neither "
                "findings nor noise."
            )
        elif tested and not plots:
            thr = f" ({fmt(e_any.threshold)}, {audit.config.materiality:g} × the standard deviation of the " \
                  "model's predictions on the statistic's scale)" \
                if e_any is not None and np.isfinite(e_any.threshold) else ""
            none_text = (
                "No material finding under this criterion: no PDP's effect is shown to exceed the materiality "
                f"threshold{thr} with {confidence_text(audit.config.significance)} confidence after the "
                f"{adjustment_name(audit.config)} adjustment. The ranking below still lists every PDP."
            )
        sections.append({
            "id": uid.replace(":", "-"), "uid": uid, "title": title_of(uid), "definition": UTILITY_DEFINITIONS.get(base, ""),
            "rows": rows, "missing": missing, "plots": plots, "none_text": none_text, "tested": tested,
            "higher": "lower" if (uid == "ice_variance" and audit.config.ice_variance == "low") else "higher",
        })
    return sections


def _pair_section(audit):
    items = []
    criteria_cols = [c for c in PAIR_CRITERIA if c in audit.scores.columns]
    two = audit.scores[audit.scores["kind"] == "2d"]
    several = _several(audit)
    for sel in [s for s in audit.selection if s.kind == "2d"]:
        t = _pair_target(audit, sel.features)
        svg, alt, _ = _pd_figure(audit, sel.features, target_index=t)
        row = two[two["features"] == sel.features].iloc[0]
        crit = {c: row[c] for c in criteria_cols}
        sentences = [_pair_sentence(audit, sel, c, crit) for c, _ in sel.reasons if c in PAIR_CRITERIA]
        proof = "; ".join(x for x in (evidence_text(e) for e in sel.evidence) if x)
        shown = (f" The heatmap shows {outcome_label(audit, _targets(audit)[t])} (the class where the pair's "
                 "interaction is largest)." if _several(audit) else "")
        items.append({
            "label": sel.label, "reasons": sel.reason_text,
            "criteria": [{"name": c + (" (largest across classes)" if several and c in ("importance", "interaction")
                                       else ""), "value": fmt(crit[c])} for c in criteria_cols],
            "figure": _figure(svg, f"Selected by {sel.reason_text}. " + " ".join(sentences) + shown
                              + (f" [{proof}]" if proof else ""), alt),
        })
    table = []
    if not two.empty:
        top = audit.ranking("intersection").head(15) if "intersection" in audit.scores else pd.DataFrame()
        for _, row in top.iterrows():
            table.append({"rank": int(row["rank"]), "pair": _label(row["features"]),
                          **{c: fmt(row[c]) for c in criteria_cols}})
    none = [c for c in audit.config.criteria_2d if c in (audit.evidence or {})
            and not any(e.passed for e in audit.evidence[c].values())
            and any(np.isfinite(e.value) for e in audit.evidence[c].values())]
    return {"items": items, "table": table, "columns": criteria_cols, "count": len(two), "no_finding": none}


def _pair_sentence(audit, sel, criterion, crit) -> str:
    """The sentence of the pair criterion that selected ``sel`` (its own builder, its own class)."""
    return finding_sentence(sel.features, criterion, None, criteria=crit,
                            outcome=_pair_outcome(audit, sel.features, criterion),
                            evidence=sel.evidence_for(criterion))


def findings_context(audit, selection=None) -> list[dict]:
    """Each selected PDP's label, reasons, sentence, trust cell and evidence, as the report prints them
    (``selection``: ``audit.selection`` when not given, e.g. when the caller already has it)."""
    return _findings(audit, selection)


def _findings(audit, selection=None):
    out = []
    two = audit.scores[audit.scores["kind"] == "2d"]
    for sel in (audit.selection if selection is None else selection):
        criterion, rank = sel.reasons[0]
        if sel.kind == "2d":
            row = two[two["features"] == sel.features].iloc[0]
            crit = {c: row[c] for c in PAIR_CRITERIA if c in row}
            sentence = _pair_sentence(audit, sel, criterion, crit)
        else:
            s = audit.score(sel.features, criterion)
            sentence = finding_sentence(sel.features, criterion, s, scale=_scale(audit, audit.pd(sel.features), s),
                                        outcome=outcome_label(audit, s.target),
                                        evidence=_evidence(audit, criterion, sel.features))
        robust = robustness_sentence(_evidence(audit, criterion, sel.features), getattr(audit, "refits", None),
                                     " and ".join(sel.features))
        sentence = f"{sentence} {robust}" if robust else sentence
        sentence += data_evidence(audit, sel.features) + regions_sentence(audit, sel.features, criterion)
        if ((audit.metadata or {}).get("skill") or {}).get("shows_skill") is False:
            sentence += " (The model shows no skill on the audit data: a pattern of this fit, not evidence about the data.)"
        out.append({"label": sel.label, "kind": sel.kind, "reasons": sel.reason_text, "sentence": sentence,
                    "trust": trust_text(audit, sel.features),
                    "evidence": "; ".join(x for x in (evidence_text(e, with_test=False) for e in sel.evidence) if x)})
    return out


def _ranked(df: pd.DataFrame) -> pd.DataFrame:
    """The rows by their largest value, largest first (ties keep their order)."""
    if df.empty:
        return df
    return df.loc[df.max(axis=1).sort_values(ascending=False, kind="stable").index]


def _table(df: pd.DataFrame, index_name: str, columns: list | None = None):
    rows = []
    for idx, row in df.iterrows():
        label = _label(idx) if isinstance(idx, tuple) else str(idx)
        rows.append({"label": label, "values": [fmt(v) for v in row.to_numpy()]})
    return {"index": index_name, "columns": columns or [str(c) for c in df.columns], "rows": rows}


def _importance_table(audit, df: pd.DataFrame):
    """The importance ranked, largest first: rank, one column per class (named by its class, not a bare "1") and
    whether the feature's importance is a finding (with its learner-level verdict when refits were run)."""
    from .explore import _state, finding_text

    pfi = (audit.metadata or {}).get("permutation_importance") or {}
    from .overview import pfi_rows

    extra = [f"held-out permutation importance ({pfi['loss']} increase{pfi_rows(pfi)}, 95% interval)",
             "the data show it?"] if pfi else []
    table = _table(_ranked(df), "feature", ["rank", *_class_columns(audit, df), "finding?", *extra])
    by = (audit.evidence or {}).get("importance_1d", {})
    for rank, row in enumerate(table["rows"], 1):
        e = by.get((row["label"],))
        row["values"] = [str(rank), *row["values"], finding_text(_state(e), e) if e is not None else ""]
        if pfi:
            v = pfi["features"].get(row["label"])
            row["values"] += [pfi_text(v), ("yes" if v["shown"] else "no") if v else ""]
    return table


def _class_columns(audit, df: pd.DataFrame) -> list:
    """The columns of a per-target table named by their class ('P(cultivar = 1)'), not a bare '1'."""
    targets = {str(t): t for t in _targets(audit)}
    return [outcome_label(audit, targets[str(c)]) if str(c) in targets else str(c) for c in df.columns]


def _small_target(audit, r) -> int:
    """The class a small multiple shows: where the feature's importance is largest (0 with one target)."""
    if len(r.targets) <= 1 or audit.importance.empty or r.features[0] not in audit.importance.index:
        return 0
    row = audit.importance.loc[r.features[0]].to_numpy(dtype=float)
    return int(np.nanargmax(row)) if np.isfinite(row).any() else 0


def _draw(audit, findings, html: bool) -> tuple[dict, list]:
    """The report's figures, drawn together once the sections that hold them are built: the importance and
    interaction charts, the utility and pair sections, the finding pages and (for the HTML) every 1D PD."""
    from .explore import criterion_tables, finding_pages, pdp_key, top_importance

    drawn: dict = {}
    with _figures_drawn_together(drawn):
        several = _several(audit)
        across = f", largest across classes {_classes_text(audit)}" if several else ""
        drawn["importance"] = (_plot(plot_importance, top_importance(_max_across(audit, audit.importance),
                                                                     IMPORTANCE_BARS),
                                     title=f"PD-based feature importance (Greenwell){across}")
                               if not audit.importance.empty else None)
        drawn["interaction"] = _plot(plot_interaction, _max_across(audit, audit.interaction),
                                     title=f"PD-based interaction (Greenwell, {interaction_scale(audit)} scale), strongest pairs{across}") \
            if not audit.interaction.empty else None
        drawn["utilities"] = _utility_sections(audit, audit.config.top_k)
        drawn["pairs"] = _pair_section(audit)
        drawn["cohorts"] = cohorts_context(audit)
        tables = criterion_tables(audit, drawn["utilities"])
        drawn["pages"] = finding_pages(audit, findings, drawn["utilities"], drawn["pairs"], audit.config.top_k, tables)
        drawn["small"] = []
        if html:
            for r in audit.results_1d:
                t = _small_target(audit, r)
                f = np.asarray(r.average[t], dtype=float)
                what = outcome_label(audit, r.targets[t])
                which = " (the class where it moves most)" if several else ""
                svg, alt, _ = _pd_figure(audit, r.features, target_index=t)
                drawn["small"].append({**_figure(svg, f"{r.features[0]}: PD of {what}{which} from {fmt(f.min())} to "
                                                      f"{fmt(f.max())}", alt), "pdp": pdp_key(r.features)})
        else:  # the PDF shows the findings' figures only
            for u in drawn["utilities"]:
                u["plots"] = []
    return drawn, tables


def _tables(audit) -> dict:
    """The importance, interaction and score tables."""
    from .explore import top_importance

    imp, inter = audit.importance, audit.interaction
    return {
        "importance_top": _importance_table(audit, top_importance(imp, IMPORTANCE_BARS)) if not imp.empty else None,
        # ranked like the importance chart: most important (largest over the classes) first
        "importance_table": _importance_table(audit, imp) if not imp.empty else None,
        "interaction_table": _table(inter.loc[inter.max(axis=1).sort_values(ascending=False, kind="stable").index].head(20),
                                    "pair", [f"{c}: {interaction_scale(audit)} scale" for c in _class_columns(audit, inter)])
        if not inter.empty else None,
        "all_scores": all_scores(audit),
    }


def _run_context(audit, timings: dict) -> dict:
    """How the audit ran: its settings, versions, platform, timings and seed, and the materiality it tested."""
    cfg = audit.config
    provenance = audit.metadata.get("provenance") or {}
    return {
        "materiality": {
            "fraction": cfg.materiality, "min_association": cfg.min_association, "significance": cfg.significance,
            "multiple_testing": adjustment_name(cfg), "noise_draws": cfg.noise_draws,
            "confidence": confidence_text(cfg.significance),
            "definition": finding_definition(cfg),
            "tested": tested_text(audit),
        },
        "config": [{"key": k, "value": str(v)} for k, v in config_record(cfg, audit.report).items()],
        "versions": audit.metadata.get("versions", {}),
        "platform": provenance.get("platform") or {},
        "csv_options": provenance.get("csv_options") or {},
        "timings": [{"stage": k, "seconds": f"{v:.2f}"} for k, v in timings.items()],
        "seed": audit.metadata.get("random_state"),
        "method": method_context(audit),
    }


def build_context(audit, *, page_size: str = "A4", extra_timings: dict | None = None,
                  formats=("html", "pdf")) -> dict[str, Any]:
    """Everything the templates need, as plain values and SVG strings.

    ``formats`` says which documents the context is for: the figures only the HTML shows (every 1D
    PD, the utility sections' plots that are not findings) are drawn only when "html" is among them;
    each figure is drawn once and the same SVG serves both formats.
    """
    from .explore import all_pdps, pdp_key

    t0 = time.perf_counter()
    html = "html" in formats
    findings = _findings(audit)
    drawn, tables = _draw(audit, findings, html)
    figure_keys = {s["pdp"] for s in drawn["small"]} | {pdp_key(p.features) for p in audit.selection if p.kind == "2d"}
    timings = dict(audit.run.get("timings_s", {}))
    timings["figures"] = time.perf_counter() - t0
    timings.update(extra_timings or {})
    data = audit.metadata.get("data", {})
    return {
        "page_size": page_size,
        "gate": None,
        "comparison": None,
        "cover": cover(audit),
        "findings": findings,
        "finding_pages": drawn["pages"],
        "rankings": tables,
        "pair_key_of": {p.label: pdp_key(p.features) for p in audit.selection if p.kind == "2d"},
        "pair_keys": sorted(pdp_key(p.features) for p in audit.selection if p.kind == "2d"),
        "all_pdps": all_pdps(audit, figure_keys) if html else {"columns": [], "rows": []},
        "top_rows": TOP_ROWS,
        "importance_bars": IMPORTANCE_BARS,
        "no_findings": no_findings(audit),
        "untested": untested(audit),
        "outcome": outcome_summary(audit),
        "cautions": cautions(audit),
        "skill": skill(audit),
        "surrogate": audit.metadata.get("surrogate"), "cohorts": drawn["cohorts"],
        "counts": {
            "pd_1d": len(audit.results_1d), "pd_2d": len(audit.results_2d), "selected": len(audit.selection),
            "utilities": len(drawn["utilities"]),
            "rows_1d": f"{data.get('rows_used_1d', 0):,}", "rows_2d": f"{data.get('rows_used_2d', 0):,}",
        },
        "notes": list(audit.notes),
        "stage_failures": [
            {"stage": f.stage, "item": f.item, "features": " × ".join(f.features), "error": f.error, "where": f.where}
            for f in getattr(audit, "stage_failures", ())
        ],
        "importance_svg": drawn["importance"],
        "interaction_svg": drawn["interaction"],
        "interaction_scale": interaction_scale(audit),
        "utilities": drawn["utilities"],
        "pairs": drawn["pairs"],
        "small_multiples": drawn["small"],
        **_tables(audit),
        **_run_context(audit, timings),
    }


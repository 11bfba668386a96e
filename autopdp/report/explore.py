"""Report context for the two formats beyond the shared sections (issue 24).

* The HTML report is the complete record: every PDP's row under every criterion, with the raw
  numbers the page's script sorts and filters on (:func:`criterion_tables`, :func:`all_pdps`), and
  every 1D PD's figure.
* The PDF is the curated document: one page per selected finding with its figure (the same figure
  the HTML shows), evidence, trust checks and its scores under every criterion
  (:func:`finding_pages`), and each criterion's top rows.

Every PDP is named in the page by ``pdp_key``: the feature, or the features joined by ``|`` in the
audit's order.
"""

from __future__ import annotations


import numpy as np
import pandas as pd

from ..scores.selection import PAIR_CRITERIA
from .findings import UTILITY_DEFINITIONS, fmt, p_text, robust_kind, title_of

__all__ = ["pdp_key", "criterion_tables", "all_pdps", "finding_pages", "shown_score", "TOP_ROWS"]

#: Rows of each criterion's ranking the PDF shows (the HTML and results.json hold them all).
TOP_ROWS = 10


def pdp_key(features) -> str:
    return "|".join(str(f) for f in features)


def _num(value) -> str:
    """A raw number for the page's script ('' when missing)."""
    return fmt(value, 6, grouped=False, missing="")


def shown_score(audit, uid: str, features) -> float:
    """The number a table or caption gives for ``features`` under ``uid``.

    The utility score, except for a comparison (``similarity:<name>``): its score (paper eq. 10) is the
    total gap, which holds the two models' overall level difference, the same for every feature and
    stated once in its own line; tables show the shape gap (the PDs' difference less its density-weighted
    mean), the value the evidence tests, so a row is never "not material" beside a number above the
    threshold.
    """
    features = tuple(features)
    s = (audit.utility_scores.get(features) or {}).get(uid)
    if not uid.startswith("similarity:"):
        return float(s.value) if s is not None else float("nan")
    e = (audit.evidence or {}).get(uid, {}).get(features)
    if e is not None and np.isfinite(e.value):
        return float(e.value)
    shape = (getattr(s, "details", None) or {}).get("shape_gap") if s is not None else None
    try:
        return float(shape)
    except (TypeError, ValueError):
        return float("nan")


#: a finding's learner-level verdict as the tables show it (issue 31; :func:`~.findings.robust_kind`)
ROBUST_LABELS = {"robust": "robust", "specific": "specific to this fit", "unconfirmed": "not shown robust"}


def robust_label(e) -> str:
    """"robust", "specific to this fit" or "not shown robust" for a finding assessed at the learner level, else ""."""
    if e is None or not e.passed or getattr(e, "robust", None) is None:
        return ""
    return ROBUST_LABELS.get(robust_kind(e), "")


def finding_text(state: str, e) -> str:
    """The table cell of a finding: its state ("yes", "noise", ...) and, for a finding, its learner verdict."""
    label = robust_label(e) if state == "yes" else ""
    return f"{state} ({label})" if label else state


def _state(e) -> str:
    if e is None:
        return ""
    if e.passed:
        return "yes"
    if not e.material:
        return "not material"
    return "untested" if e.untested else "noise"


def criterion_tables(audit, utilities) -> list[dict]:
    """One ranking per criterion, every PDP it scores: the 1D utilities (from the report's utility
    sections, with their trust cells) then the 2D criteria (thousands of rows at 60 features: their
    trust checks are the ood_share, ale_divergence and stratpd columns of :func:`all_pdps`)."""
    tables = []
    for u in utilities:
        uid = u["uid"]
        rows = []
        for r in u["rows"]:
            feats = tuple(r["features"])
            s = audit.utility_scores[feats][uid]
            e = (audit.evidence or {}).get(uid, {}).get(feats)
            rows.append({
                "pdp": pdp_key(feats), "label": r["feature"], "rank": r["rank"], "score": r["value"],
                "score_v": _num(shown_score(audit, uid, feats)), "scaled": r["scaled"], "p": r["p"],
                "p_v": "" if e is None else _num(e.adjusted_p), "finding": r["finding"],
                "finding_text": finding_text(r["finding"], e), "target": r["target"],
                "trust": r["trust"], "kind": "1d",
            })
        tables.append({"id": u["id"], "uid": uid, "title": u["title"], "definition": u["definition"], "kind": "1d",
                       "tested": u["tested"], "rows": rows, "n": len(rows),
                       "in_sd": any(r["scaled"] for r in rows)})  # a "× pred. sd" column: response-scale gaps only
    two = audit.scores[audit.scores["kind"] == "2d"]
    if two.empty:
        return tables
    for c in [c for c in PAIR_CRITERIA if c in audit.scores.columns]:
        if not two[c].notna().any():
            continue
        ranked = audit.ranking(c, kind="2d")
        by = (audit.evidence or {}).get(c, {})
        rows = []
        for feats, rank, value in zip(ranked["features"], ranked["rank"], ranked[c]):
            feats = tuple(feats)
            e = by.get(feats)
            rows.append({
                "pdp": pdp_key(feats), "label": " × ".join(feats), "rank": int(rank), "score": fmt(value),
                "score_v": _num(value), "scaled": "", "p": "" if e is None else p_text(e.adjusted_p),
                "p_v": "" if e is None else _num(e.adjusted_p), "finding": _state(e),
                "finding_text": finding_text(_state(e), e), "target": "",
                "trust": "", "kind": "2d",
            })
        tables.append({"id": f"pair-{c}", "uid": c, "title": title_of(c),
                       "definition": UTILITY_DEFINITIONS.get(c, ""), "kind": "2d", "tested": bool(by),
                       "rows": rows, "n": len(rows), "in_sd": False})
    return tables


def all_pdps(audit, figure_keys) -> dict:
    """Every PDP with every score (the wide table), the criteria it is a finding under (and its tested regions)
    and its smallest adjusted p-value; ``open`` when the page holds its figure (``figure_keys``)."""
    cols = [c for c in audit.scores.columns if c not in ("features", "kind")]
    ev = audit.evidence or {}
    rows = []
    for _, row in audit.scores.iterrows():
        feats = tuple(row["features"])
        found = [c for c in cols if (e := ev.get(c, {}).get(feats)) is not None and e.passed]
        shown = [f"{c} ({label})" if (label := robust_label(ev[c][feats])) else c for c in found]
        reg = (audit.region_records or {}).get(feats[0]) if len(feats) == 1 else None
        if reg and reg.get("finding"):  # its tested regions (issue 55), by the features that split them
            shown.append("regions on " + ", ".join(sorted({c["feature"] for g in reg["regions"] for c in g["rule"]})))
        ps = [e.adjusted_p for c in cols if (e := ev.get(c, {}).get(feats)) is not None
              and np.isfinite(e.adjusted_p)]
        key = pdp_key(feats)
        rows.append({
            "pdp": key, "label": " × ".join(feats), "kind": row["kind"], "open": key in figure_keys,
            "values": [{"text": fmt(v), "v": _num(v)} for v in
                       (shown_score(audit, c, feats) if c.startswith("similarity:") else row[c] for c in cols)],
            "findings": ", ".join(shown), "finding": "yes" if found else "no",
            "p_v": _num(min(ps)) if ps else "", "p": p_text(min(ps)) if ps else "",
        })
    return {"columns": cols, "rows": rows}


def finding_pages(audit, findings, utilities, pairs, top_k, tables) -> list[dict]:
    """One entry per selected PDP (the order of ``findings``): its figure, taken from the utility
    section of its first criterion or from the pair section (the same drawing, made once; a 1D page's
    caption is the figure's description, as the sentence and evidence stand above it), and its row under
    every criterion."""
    figures = {}
    for u in utilities:
        passed = [tuple(r["features"]) for r in u["rows"] if r["passed"]][:top_k]
        for feats, fig in zip(passed, u["plots"]):
            figures[(u["uid"], feats)] = fig
    pair_figures = {item["label"]: item["figure"] for item in pairs.get("items", [])}
    per_pdp: dict[str, list] = {}
    for t in tables:
        for r in t["rows"]:
            per_pdp.setdefault(r["pdp"], []).append({
                "criterion": t["uid"], "title": t["title"], "rank": r["rank"], "of": t["n"], "score": r["score"],
                "scaled": r["scaled"], "p": r["p"], "finding": r["finding"],
                "finding_text": r.get("finding_text", r["finding"]),
            })
    pages = []
    for i, (sel, f) in enumerate(zip(audit.selection, findings)):
        if sel.kind == "2d":
            fig = pair_figures.get(sel.label)
        else:
            fig = next((figures[(c, sel.features)] for c, _ in sel.reasons if (c, sel.features) in figures), None)
            # the page prints the sentence and each criterion's evidence above it: the caption says what is drawn
            fig = None if fig is None else {**fig, "caption": fig["alt"]}
        key = pdp_key(sel.features)
        pages.append({
            **f, "pdp": key, "anchor": f"finding-{i + 1}", "figure": fig,
            "reason_list": [{"criterion": c, "title": title_of(c), "rank": r,
                             "evidence": _evidence_line(sel.evidence_for(c))} for c, r in sel.reasons],
            "scores": per_pdp.get(key, []),
        })
    return pages


def _evidence_line(e) -> str:
    """The criterion's own evidence and, with refits, its own learner-level verdict (never another criterion's)."""
    from .findings import evidence_text

    label = robust_label(e)
    return evidence_text(e) + (f"; learner level: {label}" if label else "")


def top_importance(importance: pd.DataFrame, n: int) -> pd.DataFrame:
    """The ``n`` most important features (by their largest column), most important first."""
    if importance.empty or len(importance) <= n:
        return importance
    order = importance.max(axis=1).sort_values(ascending=False, kind="stable").index[:n]
    return importance.loc[order]


def all_scores(audit):
    """Every PDP's row of every score column, as text (the record's full table)."""
    cols = [c for c in audit.scores.columns if c not in ("features", "kind")]
    rows = []
    for _, row in audit.scores.iterrows():
        rows.append({"label": " × ".join(row["features"]), "kind": row["kind"], "values": [fmt(row[c]) for c in cols]})
    return {"columns": cols, "rows": rows}

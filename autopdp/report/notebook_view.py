"""The notebook view of an audit (``Audit._repr_html_``): its findings, cautions and top importances, without
figures (:func:`notebook_context`)."""

from __future__ import annotations

import pandas as pd

from ..utils.formatting import fmt
from .context import _findings, _several, _targets, outcome_label
from .overview import cautions, no_findings, untested

__all__ = ["notebook_context", "notebook_html"]


def notebook_context(audit) -> dict:
    """The small context of the notebook view (no figures)."""
    # with several classes: each feature's largest importance across them, with the class it is of
    several = _several(audit) and audit.importance.shape[1] > 1
    table = audit.importance
    imp = (table.max(axis=1) if several else table.iloc[:, 0]).sort_values(ascending=False).head(10) \
        if not table.empty else pd.Series(dtype=float)
    targets = {str(t): t for t in _targets(audit)}
    best = {k: targets.get(str(table.loc[k].astype(float).idxmax())) for k in imp.index} if several else {}
    return {
        "model": audit.metadata.get("model", {}).get("name"),
        "counts": {"pd_1d": len(audit.results_1d), "pd_2d": len(audit.results_2d)},
        "findings": _findings(audit),
        "no_findings": no_findings(audit),
        "untested": untested(audit),
        "cautions": cautions(audit),
        "surrogate": audit.metadata.get("surrogate"),
        "importance": [{"feature": str(k), "value": fmt(v) + (f" ({outcome_label(audit, best.get(k))})" if several else "")}
                       for k, v in imp.items()],
        "stage_failures": [f.text for f in getattr(audit, "stage_failures", ())],
    }


def notebook_html(audit) -> str:
    """``Audit._repr_html_``: the notebook view, the curated findings and the importance table."""
    from .render import environment

    return environment().get_template("notebook.html.j2").render(**notebook_context(audit))

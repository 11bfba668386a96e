"""The Model comparison section (``autopdp compare``): every candidate's PDs beside the audited model's.

A comparison model's similarity score (paper eq. 10) is the total gap between two PDs, which holds the
models' overall level difference: the same for every feature, so it is one line of its own
(:func:`level_lines`, in the notes). Every per-feature and per-pair number here is the shape gap (the PDs' difference
less its density-weighted mean), the value the evidence tests.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .context import _data_overlay, _figure, _label, outcome_label
from .explore import shown_score
from .figures import plot_pd_1d, plot_pd_2d
from .findings import fmt

__all__ = ["comparison_context", "level_lines", "LEVEL_PREFIX"]

#: How the audit's note on a comparison model's overall level difference starts.
LEVEL_PREFIX = "Overall level: "


def level_lines(audit, others) -> list[str]:
    """The audit's one line per comparison model on the overall level difference of the predictions."""
    names = {str(o) for o in others}
    return [n for n in audit.notes if n.startswith(LEVEL_PREFIX)
            and n[len(LEVEL_PREFIX):].split("'s predictions", 1)[0] in names]


def _level(audit, features, uid) -> float:
    s = (audit.utility_scores.get(tuple(features)) or {}).get(uid)
    level = (getattr(s, "details", None) or {}).get("level_shift") if s is not None else None
    try:
        level = float(level)
    except (TypeError, ValueError):
        return 0.0
    return level if np.isfinite(level) else 0.0


def _largest(values) -> float:
    values = [v for v in values if np.isfinite(v)]
    return max(values) if values else -1.0


def comparison_context(audit, base_name: str = "model", top: int = 5) -> dict:
    """The comparison section: PDs of every candidate overlaid, shape gaps, importance side by side."""
    from ..scores.importance import pd_importance

    others = list(audit.comparisons)
    models = [base_name] + others
    cols = [f"similarity:{o}" for o in others]
    one = audit.scores[audit.scores["kind"] == "1d"]
    imp_other = {
        o: {r.features[0]: float(np.max(pd_importance(r))) for r in audit.comparisons[o] if r.ndim == 1} for o in others
    }
    base_imp = audit.importance.max(axis=1) if not audit.importance.empty else None
    rows = []
    for feats in one["features"]:
        feat = feats[0]
        gaps = [shown_score(audit, c, feats) for c in cols]
        rows.append({
            "feature": feat, "max_gap": _largest(gaps), "gaps": [fmt(g) for g in gaps],
            "importance": [fmt(None if base_imp is None else base_imp.get(feat))]
            + [fmt(imp_other[o].get(feat)) for o in others],
        })
    rows.sort(key=lambda r: -r["max_gap"])
    by_features = {o: {r.features: r for r in audit.comparisons[o]} for o in others}
    figures = [f for f in (_feature_figure(audit, r, others, models, by_features) for r in rows[:top]) if f]
    two = audit.scores[audit.scores["kind"] == "2d"]
    pairs, pair_figures = [], []
    if not two.empty and cols:
        ranked = []
        for feats in two["features"]:
            gaps = [shown_score(audit, c, feats) for c in cols]
            if any(np.isfinite(g) for g in gaps):
                ranked.append((tuple(feats), gaps))
        ranked.sort(key=lambda item: -_largest(item[1]))
        pairs = [{"pair": _label(f), "gaps": [fmt(g) for g in gaps]} for f, gaps in ranked[:10]]
        for feats, gaps in ranked[:3]:
            fig = _pair_figure(audit, feats, others[int(np.nanargmax(gaps))], base_name, by_features)
            if fig:
                pair_figures.append(fig)
    return {"base": base_name, "models": models, "others": others, "rows": rows, "figures": figures,
            "pairs": pairs, "pair_figures": pair_figures, "levels": level_lines(audit, others)}


def _feature_figure(audit, row, others, models, by_features):
    feat = row["feature"]
    res = audit.pd(feat)
    t = res.target_index(None)
    inc = audit.utility_scores[res.features].get("incidence")
    extra = []
    f = np.asarray(res.average[t], dtype=float)
    pointwise = []  # (largest |difference less the level| over the grid, model, grid value)
    for o in others:
        other = by_features[o].get(res.features)
        if other is None:
            continue
        g2 = np.asarray(other.average[other.target_index(res.targets[t])], dtype=float)
        extra.append((f"PD of {o}", g2))
        diff = np.abs(f - g2 - _level(audit, res.features, f"similarity:{o}"))
        if np.isfinite(diff).any():
            i = int(np.nanargmax(diff))
            pointwise.append((float(diff[i]), o, res.grid[0][i]))
    g = inc.comparison if inc is not None and inc.comparison is not None else None
    dist = audit.data_summary.get("distributions", {}).get(feat)
    svg = plot_pd_1d(res, target_index=t, comparison=g, comparison_label="data: incidence" if g is not None else None,
                     extra_curves=extra, distribution=dist, ice_curves=0)
    gap = ""
    if pointwise:
        worst, o, at = max(pointwise, key=lambda p: p[0])
        gap = (f" (their shapes, each PD less its level: largest pointwise gap {fmt(worst)}, against {o} at "
               f"{feat} = {fmt(at)}; density-weighted root-mean-square shape gap {fmt(row['max_gap'])})")
    of = f" of {outcome_label(audit, res.targets[t])}" if len(res.targets) else ""
    return _figure(
        svg, f"{feat}: PDs{of} of {', '.join(models)}{gap}.",
        f"Partial dependence of {feat} for every candidate model overlaid, with the data's incidence.",
    )


def _pair_figure(audit, features, worst, base_name, by_features):
    res = audit.pd(features)
    other = by_features[worst].get(res.features)
    if other is None:
        return None
    level = _level(audit, features, f"similarity:{worst}")
    diff = dataclasses.replace(res, average=np.asarray(res.average) - np.asarray(other.average) - level)
    svg = plot_pd_2d(diff, title=f"{base_name} minus {worst}, less the level", **_data_overlay(audit, res.features))
    return _figure(
        svg, f"{_label(res.features)}: difference between the surfaces of {base_name} and {worst}, less its "
             f"density-weighted mean {fmt(level)} (the level difference).",
        f"Heatmap of the difference between two models' 2D partial dependence on {_label(res.features)}.",
    )

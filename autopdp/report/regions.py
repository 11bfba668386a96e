"""The sentences of the tested regions (issue 55): for whom a heterogeneous feature's effect differs.

Reads :meth:`autopdp.Audit.regions` records (:mod:`autopdp.findings.regions`); every number comes from the record.
"""

from __future__ import annotations

import numpy as np

from ..utils.formatting import fmt

__all__ = ["regions_sentence", "rule_text", "region_curves", "region_alt", "region_ice_groups"]

def rule_text(rule) -> str:
    """``-0.9 < a ≤ 0.2 and d in {p, s}``: a feature's numeric conditions merged into one interval; ``(or missing)``
    where the missing values go with a ``>`` condition."""
    parts, bounds = [], {}
    for c in rule:
        if c.get("op") in ("<=", ">"):
            lo, hi, missing = bounds.get(c.get("feature"), (None, None, False))
            v = c.get("value")
            if c["op"] == "<=":
                hi = v if hi is None else min(hi, v)
            else:
                lo = v if lo is None else max(lo, v)
            bounds[c.get("feature")] = (lo, hi, missing or bool(c.get("or_missing")))
            continue
        v = c.get("value")
        value = "{" + ", ".join(str(x) for x in v) + "}" if isinstance(v, list) else str(v)
        parts.append(f"{c.get('feature')} {c.get('op')} {value}")
    for f, (lo, hi, missing) in bounds.items():
        text = (f"{fmt(lo)} < {f} ≤ {fmt(hi)}" if lo is not None and hi is not None else
                f"{f} ≤ {fmt(hi)}" if hi is not None else f"{f} > {fmt(lo)}")
        parts.insert(0, text + (" (or missing)" if missing and hi is None else ""))
    return " and ".join(parts)


def _movement(region, numeric: bool, f: str, on: str) -> str:
    """What the average prediction does over the feature's grid in one region: a clause of the sentence."""
    avg = np.asarray(region.get("average") or [], dtype=float)
    if avg.size < 2 or not np.isfinite(avg).all():
        return f"the PD of {f} is not known"
    if not numeric:
        grid = region.get("grid") or []
        hi, lo = (str(grid[int(i)]) if int(i) < len(grid) else "?" for i in (np.argmax(avg), np.argmin(avg)))
        return (f"the average prediction{on} over {f}'s levels spans {fmt(float(avg.max() - avg.min()))} (highest at "
                f"{hi}, lowest at {lo})")
    change = float(avg[-1] - avg[0])
    return (f"the average prediction{on} {'rises' if change > 0 else 'falls'} by {fmt(abs(change))} from {f}'s first "
            "to its last grid value")


def regions_sentence(audit, features, criterion: str = "ice_variance") -> str:
    """For a 1D ICE-spread finding whose feature the audit examined for regions: the regions and their test, or why
    none is reported ("" for another criterion or a feature not examined)."""
    if criterion != "ice_variance" or len(features) != 1 or not audit.region_records or features[0] not in audit.region_records:
        return ""
    f = features[0]
    r = audit.region_records[f]
    regions = r.get("regions") or []
    on = "" if r.get("scale") in (None, "", "prediction") else f" on the {r['scale'].split(' (')[0]} scale"
    test = (f"chosen on half of the {r.get('rows', 0):,} ICE rows and tested on the other half (permutation p = "
            f"{fmt(r.get('p'), 2)}, adjusted {fmt(r.get('adjusted_p'), 2)} across the {len(audit.region_records)} "
            f"feature(s) examined)")
    if not r.get("finding"):
        if r.get("reason"):
            return f" No region of the other features was tested for {f}: {r['reason']}."
        best = rule_text(regions[0]["rule"][:1]) if regions else "none"
        return (f" No region of the other features accounts for {f}'s spread: the best split ({best}), {test}, "
                f"explains {fmt(100 * (r.get('explained') or 0), 2)}% of the centred curves' spread (at least "
                f"{r.get('min_explained', 0.5):.0%} needed, with regional curves more than {fmt(r.get('threshold'))} "
                f"apart{on}).")
    numeric = all(isinstance(v, (int, float)) for v in (regions[0].get("grid") or [0]))
    pieces = [f"where {rule_text(g['rule'])} ({g['share']:.0%} of the rows) {_movement(g, numeric, f, on)}"
              for g in regions]
    across = r.get("refits") or {}
    held = (f" Across {across['fitted']} refits of the learner on the same rows, the first split explains at least "
            f"{r.get('min_explained', 0.5):.0%} with regional curves above the threshold in {across['holds']}."
            if across.get("fitted") else "")
    return (f" For whom: {'; '.join(pieces)}. The split, {test}, explains {fmt(100 * r['explained'], 2)}% of the "
            f"centred ICE curves' spread (at least {r.get('min_explained', 0.5):.0%} needed), its regional curves "
            f"{fmt(r.get('gap'))} apart at most (threshold {fmt(r.get('threshold'))}{on}).{held}")


def _found(audit, features, criterion):
    if criterion != "ice_variance" or len(features) != 1 or not audit.region_records:
        return None
    r = audit.region_records.get(features[0])
    return r if r and r.get("finding") else None


def region_curves(audit, features, criterion) -> list:
    """``[(label, curve)]``: the regional PDs of an ICE-spread finding with regions, on the prediction's scale, for
    the finding's figure (labelled by their rule and share)."""
    r = _found(audit, features, criterion)
    if r is None:
        return []
    return [(f"{rule_text(g['rule'])} ({g['share']:.0%})", np.asarray(g.get("average_prediction") or g["average"],
                                                                       dtype=float)) for g in r["regions"]]


def region_alt(audit, features, criterion) -> str:
    r = _found(audit, features, criterion)
    return "" if r is None else (f", the PD of each of its {len(r['regions'])} tested regions overlaid (dash-dotted) "
                                 "with its rows' ICE curves in its colour")


def region_ice_groups(audit, result, criterion):
    """Each kept ICE row's region (its position in the record's ``regions``; -1 outside them), for the figure; None
    when the PD has no tested regions or the record does not place its ICE rows."""
    r = _found(audit, result.features, criterion)
    if r is None or result.individual is None or any("ice_index" not in g for g in r["regions"]):
        return None
    groups = np.full(np.asarray(result.individual).shape[1], -1)
    for k, g in enumerate(r["regions"]):
        idx = np.asarray(g["ice_index"], dtype=np.intp)
        groups[idx[(idx >= 0) & (idx < groups.size)]] = k
    return groups


def _shape_sentence(f: dict, column: str) -> str:
    on = "" if f.get("scale") in (None, "", "prediction") else f" on the {f['scale'].split(' (')[0]} scale"
    verdict = ("its shape differs across the cohorts" if f.get("finding") else
               "no shape difference shown" if f.get("p") is not None else "not tested")
    if f.get("p") is None:
        return f"{f['feature']}: {verdict} (fewer than two cohorts with enough ICE rows)."
    return (f"{f['feature']}: {verdict} of {column}: two cohorts' centred PDs are up to {fmt(f.get('shape_gap'))} "
            f"apart{on} (material above {fmt(f.get('threshold'))}), permutation p = {fmt(f.get('p'), 2)}, adjusted "
            f"{fmt(f.get('adjusted_p'), 2)}.")


def cohorts_context(audit) -> dict | None:
    """The Cohorts chapter: its introduction (cohorts, those left out, the level gap said once), a row per
    feature, and a figure per feature whose shape differs (each cohort's PD, its share in the legend)."""
    c = getattr(audit, "cohort_record", None)
    if not c:
        return None
    from .figure_queue import _plot
    from .figures import plot_pd_1d

    column = c["column"]
    levels = ", ".join(f"{lv['level']} ({lv['rows']:,} rows)" for lv in c.get("levels", []))
    gap = c.get("level_gap") or {}
    means = ", ".join(f"{k} {fmt(v)}" for k, v in (gap.get("means") or {}).items())
    left = {k: why for f in c["features"] for k, why in (f.get("left_out") or {}).items()}
    intro = (f"Cohorts of {column}: {levels}. Their average predictions differ by up to {fmt(gap.get('gap'))} "
             f"({means}): a difference of level, said once here. Each cohort's PD in the figures is over all its "
             "rows. Each feature's test below is of the shape of its PD across the cohorts (the centred curves of "
             "the audit's ICE rows), a permutation test of the cohort "
             f"labels, the p-values adjusted across the {len(c['features'])} features; a cohort needs "
             f"{c.get('min_rows', 30)} ICE rows to be tested." if gap else f"Cohorts of {column}: {levels}.")
    if left:
        intro += " Left out of the tests: " + "; ".join(f"{k} ({why})" for k, why in left.items()) + "."
    figures = []
    for f in c["features"]:
        if not f.get("finding"):
            continue
        r = audit.pd((f["feature"],))
        curves = [(f"{g['level']} ({g['share']:.0%})", np.asarray(g["average_prediction"], dtype=float))
                  for g in f["curves"]]
        svg = _plot(plot_pd_1d, r, target_index=0, extra_curves=curves, ice_curves=0,
                    distribution=(audit.data_summary or {}).get("distributions", {}).get(f["feature"]))
        figures.append({"svg": svg, "caption": _shape_sentence(f, column),
                        "alt": f"Partial dependence on {f['feature']} with each cohort of {column}'s PD overlaid "
                               "(dash-dotted) and the data distribution underneath."})
    rows = [{"feature": f["feature"], "shape_gap": fmt(f.get("shape_gap")), "p": fmt(f.get("p"), 2),
             "adjusted_p": fmt(f.get("adjusted_p"), 2), "finding": "yes" if f.get("finding") else "no"}
            for f in c["features"]]
    return {"column": column, "intro": intro, "rows": rows, "figures": figures,
            "sentences": [_shape_sentence(f, column) for f in c["features"] if f.get("finding")]}

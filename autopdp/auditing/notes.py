"""The sentences the audit adds to its notes, each built from the results it states: how each PD was computed,
why a score is n/a, the rows the out-of-distribution shares were taken on, and a comparison model's overall level."""

from __future__ import annotations

import numpy as np

from ..pd.pipeline_blocks import NOTE as _BLOCKS_NOTE, WORDS as _BLOCKS_WORDS
from ..scores.failures import DETAIL_KEY

__all__ = ["na_notes", "ood_note", "method_notes", "level_notes", "sample_note", "METHOD_NOTES"]


def na_notes(utility_scores) -> list[str]:
    """One note per reason a 1D score is 'n/a', listing the utilities and features it applies to."""
    unordered: dict[str, None] = {}
    uids: dict[str, None] = {}
    by_reason: dict[str, tuple[dict, dict]] = {}
    for feats, by_id in utility_scores.items():
        if len(feats) != 1:
            continue
        for uid, s in by_id.items():
            if s.available or not s.reason or DETAIL_KEY in s.details:  # stage failures have their own section
                continue
            if "unordered categorical" in s.reason:
                unordered[feats[0]] = None
                uids[uid] = None
            else:
                u, f = by_reason.setdefault(s.reason, ({}, {}))
                u[uid] = None
                f[feats[0]] = None
    notes = []
    if unordered:
        notes.append(
            f"{', '.join(uids)} need an order and are n/a for the unordered categorical features "
            f"{', '.join(unordered)}; give a column an ordered pandas Categorical to score it."
        )
    for reason, (u, f) in by_reason.items():
        notes.append(f"{', '.join(u)} {'is' if len(u) == 1 else 'are'} n/a for {', '.join(repr(x) for x in f)}: {reason}")
    return notes


def ood_note(trust: dict, n_rows: int) -> list[str]:
    """Which rows the out-of-distribution shares were computed on."""
    for by_id in trust.values():
        s = by_id.get("ood_share")
        if s is not None and s.available and "rows" in s.details:
            if s.details["sampled"]:
                return [f"Out-of-distribution shares from a random sample of {s.details['rows']:,} of the {n_rows:,} "
                        f"rows (each moved to every grid value; neighbours among the same rows); standard error of "
                        f"a share at most {s.details['standard_error']:.1%}."]
            return [f"Out-of-distribution shares on all {n_rows:,} rows: every row moved to every grid value, "
                    f"neighbours among all rows."]
    return []


METHOD_NOTES = ("Computed by brute force:", "PD, ICE and std exact by the tree path", "PD exact by the tree path",
                 "std and stderr not computed", _BLOCKS_NOTE)


def _how_computed(r) -> tuple[str, str, str]:
    """(method, ICE curves, std) of one PD in words, read from the result itself."""
    method = {"tree": "exactly by the tree path (no model calls)",
              "brute": "by brute force (the model predicted at every grid value)",
              "recursion": "by scikit-learn's recursion method (training-weighted tree paths)"}.get(r.method, r.method)
    method = _BLOCKS_WORDS if r.method == "brute" and _BLOCKS_NOTE in r.notes else method
    n = int(r.n_rows)
    if r.individual is None:
        ice = "no ICE curves kept"
    elif r.ice_rows is None:
        ice = f"ICE curves of all {n:,} rows"
    else:
        ice = f"ICE curves of {len(r.ice_rows):,} sampled rows"
    std = np.asarray(r.std, dtype=float)
    if not np.isfinite(std).any():
        spread = "no std"
    elif r.method == "tree" and any("sampled rows" in x for x in r.notes):
        k = len(r.ice_rows) if r.ice_rows is not None else None
        spread = f"std from {k:,} sampled rows" if k else "std from sampled rows"
    else:
        spread = f"std on all {n:,} rows"
    return method, ice, spread


def method_notes(results, *, full_rows: int) -> list[str]:
    """One note per way PDs were computed (method, rows, ICE rows, std), naming the PDs it is true of."""
    if not results:
        return []
    ndim = results[0].ndim
    groups: dict[tuple, list] = {}
    for r in results:
        method, ice, spread = _how_computed(r)
        rows = f"all {int(r.n_rows):,} rows" if int(r.n_rows) >= full_rows else \
            f"a random sample of {int(r.n_rows):,} of the {full_rows:,} rows"
        groups.setdefault((method, rows, ice, spread), []).append(r)
    out = []
    for (method, rows, ice, spread), rs in groups.items():
        names = [" × ".join(r.features) for r in rs]
        listed = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
        why = sorted({n.split("does not apply (", 1)[1].rstrip(".").removesuffix(")")
                      for r in rs for n in r.notes if n.startswith("Computed by brute force:") and "(" in n})
        because = f"; the exact tree path does not apply to them ({'; '.join(why[:3])}" \
                  f"{'; ...' if len(why) > 3 else ''})" if why else ""
        count = f"{len(rs)} of the {len(results)}" if len(groups) > 1 else ("The" if len(rs) > 1 else "The")
        plural = "s" if len(rs) > 1 else ""
        out.append(f"{count} {ndim}D PD{plural} ({listed}) computed {method} on {rows}, with {ice} and {spread}"
                   f"{because}.")
    return out


def level_notes(evidence) -> list[str]:
    """One line per comparison model: the overall difference of the two models' predictions."""
    from ..utils.formatting import fmt

    out = []
    for key, by in evidence.items():
        if not key.startswith("similarity_level:"):
            continue
        e = by[()]
        name = key.split(":", 1)[1]
        diff = e.details.get("mean_difference", float("nan"))
        direction = "below" if diff > 0 else "above"
        verdict = ("a material difference clear of noise" if e.passed else
                   "not material" if not e.material else "not shown to be material")
        out.append(
            f"Overall level: {name}'s predictions average {fmt(abs(diff))} {direction} this model's over the rows "
            f"({verdict}; {e.test}, p {'<=' if e.p_value <= 1e-6 else '='} {e.p_value:.2g}). The per-feature "
            f"similarity findings compare the PDs' shapes only, so this level difference is stated once here."
        )
    return out


#: a prediction "changed" between two models when it moved by more than this (issue 56: a converted model)
CHANGED = 1e-6


def comparison_gaps(predictions, comparison_predictions: dict, res1, comparisons: dict) -> dict:
    """``{name: {...}}`` per comparison model: how far its predictions and 1D PDs are from the audited model's on
    the same rows and grids: the rows whose prediction moved by more than :data:`CHANGED` (any target), the
    largest move, and per feature the largest PD difference over the grid and the targets (``pd_gap``)."""
    out = {}
    base = None if predictions is None else np.asarray(predictions, dtype=float)
    for name, other in comparison_predictions.items():
        entry: dict = {}
        o = None if other is None else np.asarray(other, dtype=float)
        if base is not None and o is not None and o.shape == base.shape and base.size:
            moved = np.abs(base - o).reshape(base.shape[0], -1).max(axis=1)
            entry.update(rows=int(base.shape[0]), rows_changed=int(np.sum(moved > CHANGED)),
                         largest_prediction_difference=float(np.nanmax(moved)))
        by = {r.features: r for r in comparisons.get(name, ()) if r.ndim == 1}
        gaps = {}
        for r in res1:
            c = by.get(r.features)
            a, b = np.asarray(r.average, dtype=float), None if c is None else np.asarray(c.average, dtype=float)
            if b is not None and a.shape == b.shape and np.isfinite(a).all() and np.isfinite(b).all():
                gaps[r.features[0]] = float(np.abs(a - b).max())
        entry["pd_gap"] = gaps
        out[name] = entry
    return out


def gap_notes(gaps: dict, prediction_std) -> list[str]:
    """One line per comparison model: the share of rows whose prediction changed and the largest PD difference (what
    a converted model, e.g. an ONNX file, changed in the audited one's behaviour)."""
    from ..utils.formatting import fmt

    sd = np.atleast_1d(np.asarray(prediction_std, dtype=float))
    out = []
    for name, g in gaps.items():
        parts = []
        if "rows" in g:
            parts.append(f"{name}'s prediction differs from this model's by more than {CHANGED:g} on "
                         f"{g['rows_changed']:,} of the {g['rows']:,} rows (largest difference "
                         f"{fmt(g['largest_prediction_difference'])})")
        if g.get("pd_gap"):
            feature, worst = max(g["pd_gap"].items(), key=lambda kv: kv[1])
            scale = f", {fmt(worst / sd[0], 2)} prediction standard deviations" if sd.size == 1 and sd[0] > 0 else ""
            parts.append(f"the largest difference between the two models' 1D PDs is {fmt(worst)} (on {feature}"
                         f"{scale})")
        if parts:
            out.append("Gap to " + name + ": " + "; ".join(parts) + ".")
    return out


def sample_note(res2, n_rows: int, n_sampled: int, cap_key: str, fast_2d: bool) -> str:
    """The note that the 2D PDs average over a sample of the rows, with their Monte-Carlo standard error."""
    se = np.array([float(np.nanmax(r.stderr)) for r in res2 if np.isfinite(r.stderr).any()])
    error = (f" Monte-Carlo standard error of those 2D PDs: median {np.median(se):.3g}, largest "
             f"{se.max():.3g} (on the model's output scale)." if se.size else "")
    return (f"2D PDs average over a random sample of {n_sampled:,} of the {n_rows:,} rows "
            f"({cap_key}; the {'exact tree' if fast_2d else 'brute-force'} path).{error}")

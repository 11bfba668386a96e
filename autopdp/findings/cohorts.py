"""Cohorts the validator names (issue 55): each feature's PD per cohort of a column, and a test of their shapes.

The column (``cohort=`` / ``--cohort``) is a model feature or not; a column that is not a feature is never passed to
the model (:func:`cohort_column`).  For every 1D PD with kept ICE curves, each cohort's PD on the prediction's scale
(the figure's) is the exact PD over every row of the cohort, on the feature's own grid (:func:`cohort_pds`); the
test reads the cohorts' ICE rows on the ICE-spread criterion's scale.

* **Shapes, not levels.** Cohorts differ in level (their average prediction), stated once for the column; the test
  is of the centred curves: the heterogeneity between the cohorts' mean centred curves (as for regions,
  :mod:`autopdp.findings.regions`), whose p-value is a permutation test of the cohort labels over the ICE rows (no
  search: the cohorts are given, so every row is used).  The shape gap is the largest difference between two
  cohorts' centred PDs on the grid.
* **Material**: the shape gap exceeds the ICE-spread criterion's threshold (``materiality`` x the prediction sd on
  its scale).  The p-values are adjusted across features (``multiple_testing``); a finding is adjusted p at most
  ``significance`` and material.
* A cohort with fewer than :data:`MIN_COHORT_ROWS` ICE rows is named and left out, with the reason.
* When the column is itself a model feature, its own PD is not compared across its cohorts: each cohort holds one
  of its values, so their curves differ by construction.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .regions import _curves_on_scale, _num, _permutation_between, ice_row_positions

__all__ = ["cohort_column", "cohort_pds", "cohort_tests", "MIN_COHORT_ROWS"]

#: the fewest ICE rows a cohort needs to be tested
MIN_COHORT_ROWS = 30
#: the most cohorts (levels) a column may have
MAX_COHORTS = 20


def cohort_column(model, X, cohort):
    """``(name, labels, X)``: the cohort column's name and labels (every row of ``X``), and ``X`` without the column
    when it is not one of the model's features.  ``cohort``: a column name of ``X`` (None: no cohorts)."""
    from ..errors import InputError

    if cohort is None:
        return None, None, X
    if not isinstance(X, pd.DataFrame) or cohort not in X.columns:
        have = list(X.columns)[:10] if isinstance(X, pd.DataFrame) else "an array without names"
        raise InputError(f"cohort column {cohort!r} is not a column of the data ({have}); name a column of the data "
                         "given with column names.")
    labels = X[cohort].astype(object).where(X[cohort].notna(), "(missing)").astype(str).to_numpy()
    if len(set(labels)) > MAX_COHORTS:
        raise InputError(f"cohort column {cohort!r} has {len(set(labels)):,} distinct values, more than the "
                         f"{MAX_COHORTS} cohorts a report can compare; name a column of segments (region, product, "
                         "channel).")
    names = getattr(model, "feature_names_in_", None)
    width = getattr(model, "n_features_in_", None)
    # a feature when the model names it, or (no names) when the data is exactly as wide as the model's input; a model
    # that declares neither (a plain function) never gets the column
    feature = cohort in [str(c) for c in names] if names is not None else width is not None and width == X.shape[1]
    return str(cohort), labels, (X if feature else X.drop(columns=[cohort]))


def cohort_pds(model, frame, results_1d, labels, weights, pd_kwargs: dict) -> dict:
    """``{feature: {level: PD (first target) on the feature's grid}}``: each cohort's exact PD over all its rows.

    One :func:`autopdp.partial_dependence` call per cohort on that cohort's rows (the tree path where it applies), on
    the grids of ``results_1d``; ``pd_kwargs``: the audit's response, target, method, categorical features and
    memory cap.  ``labels``: the cohort of every row of ``frame``; ``weights``: the rows' weights (None: equal).
    """
    from ..pd.options import keywords
    from ..pd.partial_dependence import partial_dependence

    labels = np.asarray(labels, dtype=object).astype(str)
    kept = [r for r in results_1d if len(r.features) == 1 and r.individual is not None]
    if not kept:
        return {}
    grids = {r.features[0]: list(r.grid[0]) if r.kinds[0] == "categorical" else np.asarray(r.grid[0]) for r in kept}
    out: dict = {name: {} for name in grids}
    for level in np.unique(labels):
        rows = np.flatnonzero(labels == level)
        w = None if weights is None else np.asarray(weights, dtype=float)[rows]
        if w is not None and not w.sum() > 0:
            continue
        res = partial_dependence(model, frame.take_rows(rows), list(grids), **keywords(
            custom_values=grids, kind="average", sample_weight=w, std_rows=0, **pd_kwargs))
        for name, r in zip(grids, res):
            out[name][str(level)] = np.asarray(r.average, dtype=float)[0].ravel()
    return out


def _one(result, labels, inputs, config, threshold, rng, n_perm, exact=None):
    """The cohorts' PDs of one feature and their shape test: a record."""
    curves, scale = _curves_on_scale(result, inputs, config)
    shown = np.asarray(result.individual, dtype=float)[0]
    exact = exact or {}
    rows = ice_row_positions(result)
    lab = labels[rows]
    w = np.ones(rows.size) if inputs.sample_weight is None else np.asarray(inputs.sample_weight, dtype=float)[rows]
    levels, counts = np.unique(lab, return_counts=True)
    kept = [str(v) for v, c in zip(levels, counts) if c >= MIN_COHORT_ROWS]
    left_out = {str(v): f"{c} ICE rows, fewer than {MIN_COHORT_ROWS}" for v, c in zip(levels, counts)
                if c < MIN_COHORT_ROWS}
    inside = np.isin(lab, kept)
    C = curves - curves.mean(axis=1, keepdims=True)
    mean = lambda v, m: (w[m] @ v[m]) / w[m].sum()  # noqa: E731 - a cohort's weighted mean curve
    centred = {k: mean(C, lab == k) for k in kept}
    gap = max((float(np.max(np.abs(centred[a] - centred[b]))) for i, a in enumerate(kept) for b in kept[i + 1:]),
              default=np.nan)
    p = np.nan
    if len(kept) >= 2:
        codes = np.searchsorted(np.asarray(kept), lab[inside])
        p = _permutation_between(C[inside], w[inside], codes, rng, n_perm)
    return {"feature": result.features[0], "shape_gap": _num(gap), "p": _num(p), "scale": scale,
            "threshold": _num(threshold), "material": bool(np.isfinite(gap) and gap > threshold), "left_out": left_out,
            "curves": [{"level": k, "share": float(w[lab == k].sum() / w.sum()), "rows": int((lab == k).sum()),
                        "grid": np.asarray(result.grid[0]).tolist(), "average": mean(curves, lab == k).tolist(),
                        "average_prediction": (exact[k] if k in exact else mean(shown, lab == k)).tolist(),
                        "exact": k in exact} for k in kept]}


def cohort_tests(inputs, results_1d, labels, column: str, evidence, config, seed: int, n_perm: int = 1999,
                 exact: dict | None = None) -> dict:
    """The ``cohorts`` record: ``{column, levels, level_gap, features: [...]}`` (see module docs); ``labels``: the
    cohort of every row of the audit's frame; ``exact``: :func:`cohort_pds` (None: each cohort's PD is the mean of
    its ICE rows' curves)."""
    from .significance import adjust_p_values

    labels = np.asarray(labels, dtype=object).astype(str)
    rng = np.random.default_rng(seed)
    features = []
    for r in results_1d:
        if len(r.features) != 1 or r.individual is None or r.features[0] == column:
            continue  # the cohort column's own PD differs across its cohorts by construction
        e = evidence.get("ice_variance", {}).get(r.features)
        curves, _ = _curves_on_scale(r, inputs, config)
        thr = float(e.threshold) if e is not None and np.isfinite(e.threshold) else \
            config.materiality * float(np.std(curves))
        features.append(_one(r, labels, inputs, config, thr, rng, n_perm, (exact or {}).get(r.features[0])))
    p = np.array([f["p"] if f["p"] is not None else 1.0 for f in features])
    adjusted = adjust_p_values(p, config.multiple_testing) if p.size else p
    for f, q in zip(features, adjusted):
        f["adjusted_p"] = None if f["p"] is None else float(q)
        f["finding"] = bool(f["p"] is not None and q <= config.significance and f["material"])
    levels, counts = np.unique(labels, return_counts=True)
    level = _level_gap(inputs, labels, levels)
    return {"column": column, "levels": [{"level": str(v), "rows": int(c)} for v, c in zip(levels, counts)],
            "level_gap": level, "min_rows": MIN_COHORT_ROWS, "features": features}


def _level_gap(inputs, labels, levels):
    """The cohorts' average predictions (first target) and their largest difference: the level gap, said once."""
    pred = inputs.predictions
    if pred is None:
        return None
    w = np.ones(labels.size) if inputs.sample_weight is None else np.asarray(inputs.sample_weight, dtype=float)
    means = {str(v): float(w[labels == v] @ pred[labels == v, 0] / w[labels == v].sum()) for v in levels}
    return {"means": means, "gap": float(max(means.values()) - min(means.values()))}

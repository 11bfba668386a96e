"""What was audited: the model's description, the data summary under the report's PDs and the
audit's metadata (data, method, targets, provenance, library versions).

Takes the outputs of :func:`autopdp.audit`'s stages; gives plain dicts (the audit's
``metadata`` and ``data_summary``).  No computation on the model happens here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..pd.data import Frame, sample_rows
from ..pd.grids import bin_edges, small_index
from ..pd.rows import map_rows
from ..utils.jsonable import json_scalar
from ..io.provenance import content_sha256, library_versions, platform_info
from ..scores.skill import model_skill

__all__ = ["audit_metadata", "describe_model", "summarise_data", "target_name_of"]


def target_name_of(y) -> str | None:
    """The target column's name when y carries one (a named Series or one-column DataFrame)."""
    if isinstance(y, pd.DataFrame) and y.shape[1] == 1:
        return str(y.columns[0])
    name = getattr(y, "name", None)
    return None if name is None else str(name)


def describe_model(model) -> dict:
    """Name, type and key parameters of a model, as plain text."""
    name = type(model).__name__
    out: dict[str, Any] = {"name": name, "type": f"{type(model).__module__}.{name}"}
    steps = getattr(model, "steps", None)
    if steps:
        out["steps"] = [f"{n}: {type(s).__name__}" for n, s in steps]
        final = steps[-1][1]
        out["final_estimator"] = type(final).__name__
        params_of = final
    else:
        params_of = model
    if hasattr(params_of, "get_params"):
        try:
            params = params_of.get_params(deep=False)
        except (AttributeError, TypeError, RuntimeError):  # a custom estimator whose get_params fails (a parameter
            # not stored as an attribute, or *args in __init__) still gets audited
            params = {}
        out["params"] = {k: _short(v) for k, v in sorted(params.items())}
        changed = _changed_from_defaults(params_of, out["params"])
        if changed is not None:
            out["changed_params"] = changed
    if hasattr(model, "classes_"):
        out["classes"] = [json_scalar(c) for c in np.asarray(model.classes_).tolist()]
    onnx = getattr(model, "provenance", None)
    if isinstance(onnx, dict) and onnx.get("format") == "onnx":  # an ONNX file's sha256, producer, IR and opsets
        out["onnx"] = dict(onnx)
    return out


def _changed_from_defaults(estimator, params: dict) -> list[str] | None:
    """The parameters whose values differ from a default-constructed instance of the same class (None when
    the class cannot be constructed without arguments or its parameters cannot be read)."""
    try:
        defaults = type(estimator)().get_params(deep=False)
    except Exception:  # noqa: BLE001 - any failure only means the defaults are unknown
        return None
    return [k for k, v in params.items() if k not in defaults or not _same(v, _short(defaults[k]))]


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b):
        return True
    if isinstance(a, bool) != isinstance(b, bool):
        return False  # 1 == True and 0 == False: a boolean set to its integer twin is still a change
    return a == b  # both plain values or their short text (_short)


def _short(v) -> Any:
    if isinstance(v, (bool, int, float, str, type(None))):
        return v
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."


def summarise_data(frame: Frame, results_1d, rng, n_points: int = 400, bins: int = 30, *, results_2d=(),
                   keep_points: bool = False) -> dict:
    """What the report draws under the PDs, as binned summaries of the data (no row of it).

    ``distributions``: per feature, a histogram on the grid's range (numeric) or rows per level;
    ``occupancy``: per 2D PD, the rows in each cell of its own grid (numeric values go to the nearest grid
    point, so rows beyond the grid's ends count in its end cells; a level the grid lacks and a missing value
    count nowhere).  With ``keep_points`` also ``points``: a random sample of up to ``n_points`` rows' values
    per feature, raw data, written only when asked (config key ``keep_points``, flag ``--keep-points``).

    The histograms and occupancy counts are summed over the frame's row partitions (:func:`autopdp.pd.rows.map_rows`;
    a Dask cluster's parts where their rows are): the same counts as over every row at once.
    """
    distributions, points = {}, {}
    numeric = [r for r in results_1d if r.kinds[0] == "numeric"]
    edges = [bin_edges(float(np.min(np.asarray(r.grid[0], dtype=float))),
                      float(np.max(np.asarray(r.grid[0], dtype=float))), bins) for r in numeric]
    axes = {}  # each feature's 2D grid once, for every pair it is in
    for r in results_2d:
        for k, f in enumerate(r.features):
            axes.setdefault(_axis_key(f, r.grid[k], r.kinds[k]) or (f, id(r), k), (frame.names.index(f), r.grid[k],
                                                                                    r.kinds[k]))
    keys = list(axes)
    pairs = [tuple(keys.index(_axis_key(f, r.grid[k], r.kinds[k]) or (f, id(r), k)) for k, f in enumerate(r.features))
             for r in results_2d]
    payload = ([(frame.names.index(r.features[0]), e) for r, e in zip(numeric, edges)], [axes[k] for k in keys],
               [(pair, tuple(len(g) for g in r.grid)) for pair, r in zip(pairs, results_2d)])
    per_part = map_rows(_summary_part, payload, frame)
    for i, (r, e) in enumerate(zip(numeric, edges)):
        distributions[r.features[0]] = {"kind": "numeric", "edges": e,
                                        "counts": np.sum([part[0][i] for part in per_part], axis=0)}
    for r in results_1d:
        if r.kinds[0] != "numeric":
            distributions[r.features[0]] = {
                "kind": "categorical", "levels": [json_scalar(x) for x in r.grid[0]], "counts": np.asarray(r.counts),
            }
    distributions = {r.features[0]: distributions[r.features[0]] for r in results_1d}  # in the PDs' order
    occupancy = [{"features": list(r.features), "counts": np.sum([part[1][i] for part in per_part], axis=0)}
                 for i, r in enumerate(results_2d)]
    out = {"distributions": distributions, "occupancy": occupancy}
    if keep_points:
        rows = sample_rows(frame.n_rows, n_points, rng)
        sample = frame if rows is None else frame.take_rows(rows)  # at most n_points rows brought here
        for r in results_1d:
            values = sample.column(sample.names.index(r.features[0]))
            if r.kinds[0] == "numeric":
                points[r.features[0]] = [None if not np.isfinite(x) else float(x)
                                         for x in np.asarray(values, dtype=float)]
            else:
                points[r.features[0]] = [json_scalar(x) if not (isinstance(x, float) and np.isnan(x)) else None
                                         for x in values]
        out["points"] = points
    return out


def _summary_part(rows: Frame, payload) -> tuple:
    """One row partition's histogram counts (numeric 1D PDs) and occupancy counts (2D PDs)."""
    numeric, axes, pairs = payload
    hist = []
    for position, edges in numeric:
        v = np.asarray(rows.column(position), dtype=float)
        hist.append(np.histogram(v[np.isfinite(v)], bins=edges)[0])
    cells = [small_index(_cells(rows.column(position), grid, kind), len(grid)) for position, grid, kind in axes]
    occupancy = []
    for (a, b), shape in pairs:
        ok = (cells[a] >= 0) & (cells[b] >= 0)
        flat = np.ravel_multi_index((cells[a][ok], cells[b][ok]), shape)
        occupancy.append(np.bincount(flat, minlength=shape[0] * shape[1]).reshape(shape))
    return hist, occupancy


def _cells(values, grid, kind) -> np.ndarray:
    """Each value's cell on one axis of a PD's grid (-1: none)."""
    if kind == "numeric":
        v = np.asarray(values, dtype=float)
        g = np.asarray(grid, dtype=float)
        if g.size == 1:
            return np.where(np.isfinite(v), 0, -1)
        cell = np.searchsorted((g[1:] + g[:-1]) / 2.0, v, side="right")  # nearest grid point
        return np.where(np.isfinite(v), cell, -1)
    lookup = {level: i for i, level in enumerate(np.asarray(grid, dtype=object).tolist())}
    # each distinct value looked up once (a missing value is code -1, which the last entry maps to -1)
    codes, uniques = pd.factorize(np.asarray(values, dtype=object), use_na_sentinel=True)
    table = np.array([lookup.get(x, -1) if not (isinstance(x, float) and np.isnan(x)) else -1
                      for x in list(uniques)] + [-1], dtype=np.int64)
    return table[codes]


def _axis_key(name, grid, kind):
    """A hashable key of one feature's grid, or None when its levels are not hashable."""
    try:
        key = (name, kind, np.asarray(grid, dtype=float).tobytes() if kind == "numeric"
               else tuple(np.asarray(grid, dtype=object).tolist()))
        hash(key)
        return key
    except (TypeError, ValueError):
        return None


def audit_metadata(model, compare: dict, data, pds, scored, outside, config, random_state, sample_weight) -> dict:
    """What was audited, how, and with which libraries: the audit's ``metadata``.

    ``data``, ``pds`` and ``scored`` are the outputs of the audit's stages (validated inputs,
    PDs, scores); ``outside`` the PDs beyond the grid.
    """
    full, frame, adapter, y, weights_full = data.full, data.frame, data.adapter, data.y, data.weights_full
    res1, res2, pairs, frame_2d, fast_2d, tree_reason = (pds.res1, pds.res2, pds.pairs, pds.frame_2d, pds.fast_2d,
                                                         pds.tree_reason)
    target_name, names, features, surrogate, inputs = (data.target_name, data.names, data.features, scored.surrogate,
                                                       scored.inputs)
    return {
        "model": describe_model(model),
        "compare": {k: describe_model(v) for k, v in compare.items()},
        "data": {
            "rows": full.n_rows, "features": full.n_features, "feature_names": list(full.names),
            "rows_used_1d": frame.n_rows,
            "rows_used_2d": frame_2d.n_rows if pairs else 0,
            "categorical": [r.features[0] for r in res1 if r.kinds[0] == "categorical"],
        },
        "response": adapter.response,
        "pd_method": "tree" if fast_2d else ("recursion" if config.method == "recursion" else "brute"),
        "tree_path": "used" if fast_2d else tree_reason,
        "targets": [json_scalar(t) for t in adapter.targets],
        "target_name": target_name,
        "prediction_std": [float(v) for v in np.atleast_1d(inputs.prediction_std)],
        "outside_grid": [o.to_dict() for o in outside],
        "is_classifier": adapter.is_classifier,
        "has_y": y is not None,
        "skill": model_skill(inputs.response, data.y_pd, adapter, data.weights, getattr(model, "classes_", None),
                             config.significance),
        "random_state": random_state,
        "versions": library_versions(),
        "provenance": {
            "inputs": {},
            "target": target_name,
            "positive_class": ([json_scalar(t) for t in adapter.targets] if len(adapter.targets) > 1
                               else json_scalar(adapter.targets[0])) if adapter.is_classifier else None,
            "seed": random_state,
            "data_content_sha256": content_sha256(full if hasattr(full, "hash_chunks") else full.data, y, weights_full),
            "sample_weight": None if weights_full is None else (target_name_of(sample_weight) or "given"),
            "data_content_sha256_is": "sha256 of the data as loaded (column names, pandas row hashes of the features, "
                                      "then the target and the sample weights), not of a file",
            "platform": platform_info(),
        },
        "counts": {"pd_1d": len(res1), "pd_2d": len(res2), "features_skipped": len(names) - len(features)},
        "surrogate": None if surrogate is None else {
            "fidelity_r2": surrogate.fidelity, "importance": dict(surrogate.importance),
            "method": "additive cubic splines (numeric) and one-hot (categorical), ridge fit to the model's predictions",
        },
    }

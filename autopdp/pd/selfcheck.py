"""The audit's self-check: a handful of the exact tree path's numbers recomputed by brute force.

The exact tree path never calls the model for a PD; this check does, on every audit that used it:

* **an average on every row**: one grid value of one 1D PD is recomputed as the weighted mean of the model's
  predictions with the feature set there.  The rows already at that value keep their own prediction (known
  from the tree path's check against the model), so the value most rows hold is chosen and only the other
  rows are predicted;
* **ICE on sampled rows**: two cells of up to three 1D PDs and one 2D PD, on up to :data:`CHECK_ROWS` of the
  rows whose ICE curves were kept, predicted by the model;
* **each kept row at its own value**: where a kept row's own value is a grid value (categorical grids, and
  numeric ones that hold it), its ICE there must be the model's prediction for the row (already known from the
  tree path's check against the model: no model call).

Every number must agree to :func:`tolerance` (1e-9 of the response's scale; XGBoost and onnxruntime sum their trees in
float32, so 2e-5 there).  The outcome is a small record (``Audit.run["self_check"]`` in results.json); a disagreement
raises :class:`autopdp.errors.ExactnessError`, which the command line reports in one line with exit 3.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from ..errors import ExactnessError
from .engine import Augmenter, assemble
from .grids import FeatureSpec
from .kept import KeptValues, as_kept

__all__ = ["self_check", "tolerance", "CHECK_ROWS"]

CHECK_ROWS = 64  # sampled rows for the ICE checks
_BATCH_ROWS = 100_000  # rows per model call for the averages on every row


def float32_sums(model) -> bool:
    """Whether the model (or a pipeline's last step) sums its trees in float32: XGBoost, and an ONNX file's tree
    ensemble (onnxruntime's tree kernels add float weights in float)."""
    final = model.steps[-1][1] if hasattr(model, "steps") else model
    return type(final).__module__.startswith("xgboost") or getattr(final, "tree_ensemble", None) is not None


def tolerance(model, values) -> float:
    """The largest gap between the tree path and the model's own numbers that still counts as equal."""
    scale = max(1.0, float(np.max(np.abs(values), initial=0.0)))
    return (2e-5 if float32_sums(model) else 1e-9) * scale


def _spec(frame, result, m: int, value) -> FeatureSpec:
    name = result.features[m]
    position = frame.names.index(name)
    grid = np.array([value], dtype=object if result.kinds[m] == "categorical" else float)
    return FeatureSpec(name=name, position=position, kind=result.kinds[m], grid=grid,
                       ordered=result.ordered[m] if result.ordered else True, n_missing=0)


def _predict_many(adapter, frame, asks) -> list[np.ndarray]:
    """The model's response (n_rows, T) for each ``(result, cell, rows)`` of ``asks``: ``rows`` of ``frame`` with
    the result's feature(s) set to grid cell ``cell``; one model call for all of them."""
    parts, sizes = [], []
    for result, cell, rows in asks:
        specs = [_spec(frame, result, m, result.grid[m][i]) for m, i in enumerate(cell)]
        parts.append(Augmenter(frame, specs)(np.asarray(rows, dtype=np.intp), [s.grid for s in specs]))
        sizes.append(len(rows))
    if not parts:
        return []
    out = adapter(assemble(frame, parts))
    return np.split(out, np.cumsum(sizes)[:-1])


def _part_average(block, payload) -> tuple:
    """One row partition's share of brute force's PD at one grid cell of a 1D result: ``(sum of w * response,
    sum of w)`` over its rows, in row batches.  The rows already at that value need no model call when the block
    holds their own ``response``: the model's prediction with the feature set to its own value is its prediction."""
    adapter, result, cell = payload
    frame, own = block["frame"], block.get("response")
    n = frame.n_rows
    w = np.ones(n) if block["sample_weight"] is None else np.asarray(block["sample_weight"], dtype=float)
    todo = np.arange(n)
    total = np.zeros(len(result.targets))
    if own is not None:
        at = _at_value(frame.column(frame.names.index(result.features[0])), result, cell)
        total += w[at] @ own[at]
        todo = np.flatnonzero(~at)
    for r0 in range(0, todo.size, _BATCH_ROWS):
        rows = todo[r0:r0 + _BATCH_ROWS]
        total += w[rows] @ _predict_many(adapter, frame, [(result, cell, rows)])[0]
    return total, float(w.sum())


def _average_at(adapter, frame, weights, result, cell, own) -> np.ndarray:
    """Brute force's PD (T,) at one grid cell of a 1D result: the weighted mean over every row, summed over the
    frame's row partitions (:func:`autopdp.pd.rows.map_blocks`)."""
    from .rows import map_blocks

    parts = map_blocks(_part_average, (adapter, _lite(result), cell), frame, sample_weight=weights,
                       extra=None if own is None or own.here is None else {"response": own.here})
    return sum(t for t, _ in parts) / sum(w for _, w in parts)


def _lite(result):
    """What a partition needs of a result: its features, kinds, grids, order and targets (not its curves)."""
    import dataclasses

    return dataclasses.replace(result, individual=None)


def _at_value(values, result, cell) -> np.ndarray:
    """Which of a 1D result's feature's ``values`` are its grid value at ``cell``."""
    g = result.grid[0][cell[0]]
    if isinstance(g, float) and np.isnan(g):
        return np.zeros(values.shape[0], dtype=bool)
    return np.asarray(values == g, dtype=bool)


def _held_part(rows, payload) -> list:
    """A partition's count of rows at each grid value of each feature: ``payload`` ``[(position, grid), ...]``."""
    out = []
    for position, grid in payload:
        counts = pd.Series(rows.column(position)).value_counts(dropna=True)
        out.append([int(counts.get(g, 0)) for g in grid])
    return out


def _cells(result, rng, k: int = 2) -> list[tuple[int, ...]]:
    """Up to ``k`` distinct grid cells of a result (its first and last cell, then random ones)."""
    shape = tuple(len(g) for g in result.grid)
    size = int(np.prod(shape))
    flat = [0, size - 1] + rng.permutation(size).tolist()
    picked = list(dict.fromkeys(flat))[:min(k, size)]
    return [tuple(int(v) for v in np.unravel_index(i, shape)) for i in picked]


class _Gaps:
    """The checks made and the largest gap relative to its tolerance."""

    def __init__(self, model):
        self.model, self.checks, self.worst, self.where = model, 0, 0.0, ""

    def add(self, mine, theirs, where: str) -> None:
        mine, theirs = np.asarray(mine, dtype=float), np.asarray(theirs, dtype=float)
        gap = float(np.max(np.abs(mine - theirs), initial=0.0)) if mine.size else 0.0
        if not np.isfinite(gap) and np.array_equal(np.isnan(mine), np.isnan(theirs)):
            gap = 0.0
        ratio = gap / tolerance(self.model, theirs) if np.isfinite(gap) else np.inf
        self.checks += mine.size
        if ratio >= self.worst:
            self.worst, self.where = ratio, f"{where}: tree path {_show(mine)}, model {_show(theirs)}"


def _show(a) -> str:
    flat = np.asarray(a, dtype=float).ravel()
    return ", ".join(f"{v:.10g}" for v in flat[:3]) + (" ..." if flat.size > 3 else "")


def _at(result, cell) -> str:
    return " and ".join(f"{f} = {result.grid[m][i]}" for m, (f, i) in enumerate(zip(result.features, cell)))


def _check_average(gaps, adapter, frame, weights, results, rng, own) -> None:
    """One 1D PD at one grid value on every row: with the rows' own responses known, the value most rows
    already hold (the fewest model calls); else a random one."""
    results = [r for r in results if len(r.features) == 1]
    if not results:
        return
    if own is None:
        r = results[int(rng.integers(len(results)))]
        cell = _cells(r, rng, 1)[0]
    else:
        from .rows import map_rows

        asked = [(frame.names.index(r.features[0]), r.grid[0].tolist()) for r in results]
        per_part = map_rows(_held_part, asked, frame)
        held = []
        for k, r in enumerate(results):
            counts = [sum(part[k][i] for part in per_part) for i in range(len(asked[k][1]))]
            held.extend((counts[i], float(rng.random()), k, i) for i in range(len(counts)))
        _, _, k, i = max(held)  # the most rows held, ties broken at random
        r, cell = results[k], (i,)
    gaps.add(r.average[(slice(None),) + cell], _average_at(adapter, frame, weights, r, cell, own),
             f"PD of {r.features[0]} at {_at(r, cell)}, all {frame.n_rows:,} rows")


def _check_ice(gaps, adapter, frame, results, rng) -> int:
    """ICE of sampled kept rows at two cells of each result (one model call); returns the rows checked."""
    asks, mine, where, picked = [], [], [], []
    for r in results:
        k = min(CHECK_ROWS, len(r.ice_rows))
        at = np.sort(rng.choice(len(r.ice_rows), size=k, replace=False))
        for cell in _cells(r, rng):
            asks.append((r, cell, np.arange(len(picked), len(picked) + k)))
            picked.extend(np.asarray(r.ice_rows)[at].tolist())
            mine.append(r.individual[(slice(None), at) + cell].T)  # (rows, T)
            where.append(f"ICE of {' x '.join(r.features)} at {_at(r, cell)}, {k} sampled rows")
    sample = frame.take_rows(np.asarray(picked, dtype=np.intp))  # the sampled rows, brought here once
    for m, theirs, w in zip(mine, _predict_many(adapter, sample, asks), where):
        gaps.add(m, theirs, w)
    return max((len(rows) for _, _, rows in asks), default=0)


def _check_own_values(gaps, frame, results, own) -> None:
    """Each kept row's ICE at its own value (where that is a grid value) is its own prediction."""
    for r in results:
        values = frame.take_rows(np.asarray(r.ice_rows)).column(frame.names.index(r.features[0]))
        grid = list(r.grid[0])
        index = {v: i for i, v in enumerate(grid) if not (isinstance(v, float) and np.isnan(v))}
        at = [(k, index[v]) for k, v in enumerate(values.tolist()) if v in index]
        if not at:
            continue
        k, g = (np.array(a) for a in zip(*at))
        mine = r.individual[:, k, g].T
        gaps.add(mine, own.at(np.asarray(r.ice_rows)[k]), f"ICE of {r.features[0]} at its own values, {k.size} rows")


def self_check(adapter, frame, res1, *, weights=None, frame_2d=None, res2=(), own=None, seed: int = 0) -> dict:
    """Recompute a handful of the tree path's numbers with the model (see the module docs).

    ``own``: the model's own response on every row of ``frame`` (n_rows, T), when known.  Returns the record
    ``{"status", "checks", "largest_gap_in_tolerances", "where", "seconds"}``; raises
    :class:`~autopdp.errors.ExactnessError` when the tree path and the model disagree.
    """
    t0 = time.perf_counter()
    tree1 = [r for r in res1 if r.method == "tree" and not r.centered]
    tree2 = [r for r in res2 if r.method == "tree" and not r.centered]
    if not tree1 and not tree2:
        return {"status": "not applicable", "reason": "no PD was computed by the exact tree path"}
    rng = np.random.default_rng(seed)
    gaps = _Gaps(adapter.model)
    own = None if own is None else as_kept(own if isinstance(own, KeptValues) else np.asarray(own, dtype=float))
    _check_average(gaps, adapter, frame, weights, tree1, rng, own)
    kept1 = [r for r in tree1 if r.individual is not None and r.ice_rows is not None and len(r.ice_rows)]
    kept2 = [r for r in tree2 if r.individual is not None and r.ice_rows is not None and len(r.ice_rows)]
    picks = [kept1[i] for i in sorted(rng.choice(len(kept1), size=min(3, len(kept1)), replace=False))]
    rows = _check_ice(gaps, adapter, frame, picks, rng)
    if frame_2d is not None and kept2:
        rows = max(rows, _check_ice(gaps, adapter, frame_2d, [kept2[int(rng.integers(len(kept2)))]], rng))
    if own is not None:
        _check_own_values(gaps, frame, kept1, own)
    record = {"status": "passed" if gaps.worst <= 1.0 else "failed", "checks": int(gaps.checks),
              "sampled_rows": int(rows), "largest_gap_in_tolerances": float(gaps.worst), "where": gaps.where,
              "seconds": round(time.perf_counter() - t0, 3)}
    if record["status"] == "failed":
        raise ExactnessError(
            f"the exact tree path disagrees with the model's own predictions ({gaps.where}; "
            f"{gaps.worst:.3g} times the tolerance): this is a fault of autopdp, not of the input; please report "
            "it, and use method='brute' (--config with method = \"brute\") meanwhile")
    return record

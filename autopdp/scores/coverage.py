"""Rows outside a PD's grid: how many, and whether the model's PD differs there.

A numeric grid spans its ``percentiles`` (5%-95% by default), so up to 5% of
the rows lie beyond each end.  For every numeric 1D PD whose rows beyond an
end make up at least ``min_share`` (default 1%) of the data, the PD is
evaluated once more at the median of those rows' values (to 4 significant
digits: the record carries no row's value to every digit) and compared with the
PD at the grid's end.  When the difference is material (at least
``materiality`` times the standard deviation of the predictions) the report
says that the plotted curve misses a change of the model beyond its grid;
otherwise it says the PD there stays within that of its end value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["OutsideGrid", "outside_grid"]


@dataclass(frozen=True)
class OutsideGrid:
    """Rows beyond one end of a numeric PD's grid."""

    feature: str
    side: str  # "below" | "above"
    share: float  # of the rows with a value
    edge: float  # the grid's end value
    median: float  # median value of the rows beyond it
    pd_edge: float
    pd_beyond: float
    material: bool
    scale: float = float("nan")  # standard deviation of the predictions (same target)

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in ("feature", "side", "share", "edge", "median", "pd_edge", "pd_beyond",
                                               "material")}

    @property
    def text(self) -> str:
        return self.sentence(self.scale if np.isfinite(self.scale) and self.scale > 0 else None)

    def sentence(self, scale: float | None) -> str:
        where = "below the grid's lowest" if self.side == "below" else "above the grid's highest"
        diff = self.pd_beyond - self.pd_edge
        size = f" ({abs(diff) / scale:.2g} prediction standard deviations)" if scale and diff != 0 else ""
        there = f"the PD there (at their median {_f(self.median)})"
        if self.material:
            verdict = (f"{there} differs from its value at {_f(self.edge)} by {diff:+.3g}{size}, a material change "
                       "the plotted curve does not show")
        elif diff == 0:
            verdict = f"{there} equals its value at {_f(self.edge)}"
        else:
            verdict = f"{there} stays within {abs(diff):.3g}{size} of its value at {_f(self.edge)}"
        return f"{self.feature}: {self.share:.1%} of the rows lie {where} value {_f(self.edge)}; {verdict}."


def _rounded(v: float) -> float:
    """The median to 4 significant digits, where the PD is evaluated and as recorded: with an odd count the
    exact median is one row's value, which the record should not carry to every digit."""
    return float(f"{v:.4g}")


def _f(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"


def _beyond_grid(frame, results_1d, min_share: float) -> list:
    """``(result, side, share, median, edge index)`` for each side of each numeric 1D PD's grid beyond which lie at
    least ``min_share`` of the column's finite values, ``median`` (rounded) theirs: counted and found by exact order
    statistics over the frame's row partitions (:func:`autopdp.pd.profiles.quantiles_of`, numpy's median; on a
    Dask cluster's parts, where their rows are: no column is brought here)."""
    from ..pd.profiles import NUMBERS, one_part, profiles, quantiles_of

    if not results_1d:
        return []
    mapper = one_part(frame)
    positions = [frame.names.index(r.features[0]) for r in results_1d]
    asks, sides = [], []
    for r, position, profile in zip(results_1d, positions, profiles(mapper, positions, [NUMBERS] * len(positions), 0)):
        g = np.asarray(r.grid[0], dtype=float)
        for side, lo, hi, edge_i in (("below", profile.lo, np.nextafter(g[0], -np.inf), 0),
                                     ("above", np.nextafter(g[-1], np.inf), profile.hi, -1)):
            if profile.n_finite and lo <= hi:  # some finite value may lie beyond this end of the grid
                asks.append((position, (), float(lo), float(hi), profile.n_finite, [(0.5, "median")]))
                sides.append((r, side, edge_i, profile.n_finite))
    found = []
    for (r, side, edge_i, n_finite), (n, medians) in zip(sides, quantiles_of(mapper, asks) if asks else []):
        share = n / n_finite
        if n and share >= min_share:
            found.append((r, side, share, _rounded(float(medians[0][0])), edge_i))
    return found


def outside_grid(model, frame, results_1d, *, prediction_std, materiality: float, min_share: float = 0.01,
                 pd_kwargs: dict | None = None) -> list[OutsideGrid]:
    """Find the numeric 1D PDs with a material share of rows beyond their grid and evaluate the PD there.

    ``pd_kwargs`` are passed to :func:`autopdp.partial_dependence` (response,
    target, method, ...); one extra call evaluates every such feature at once.
    """
    found = _beyond_grid(frame, [r for r in results_1d if r.kinds[0] == "numeric"], min_share)
    # an integer array's values are evaluated at a whole median (a DataFrame's numeric column reads as floats)
    integer = {r.features[0]: not frame.is_frame and np.issubdtype(frame.dtype(frame.names.index(r.features[0])),
                                                                   np.integer) for r, *_ in found}
    if not found:
        return []
    custom = {}
    for r, side, share, med, _ in found:
        custom.setdefault(r.features[0], []).append(med)
    feats = list(custom)
    values = {f: (np.round(custom[f]).astype(np.int64) if integer[f] else np.asarray(custom[f], dtype=float))
              for f in feats}
    by_feature = _pd_at(model, frame, values, pd_kwargs or {})
    out = []
    sd = np.atleast_1d(np.asarray(prediction_std, dtype=float))
    for r, side, share, med, edge_i in found:
        grid, average = by_feature[r.features[0]]
        j = int(np.argmin(np.abs(grid - (round(med) if integer[r.features[0]] else med))))
        diffs = average[:, j] - np.asarray(r.average)[:, edge_i]
        t = int(np.argmax(np.abs(diffs)))
        scale = float(sd[t]) if t < sd.size else float("nan")
        material = bool(np.isfinite(scale) and abs(diffs[t]) >= materiality * scale)
        out.append(OutsideGrid(
            feature=r.features[0], side=side, share=share, edge=float(np.asarray(r.grid[0], dtype=float)[edge_i]),
            median=float(grid[j]), pd_edge=float(np.asarray(r.average)[t, edge_i]),
            pd_beyond=float(average[t, j]), material=material, scale=scale,
        ))
    return out


def _pd_at(model, frame, values: dict, pd_kwargs: dict) -> dict:
    """``{feature: (values (m,), PD (n_targets, m))}``: the PD of each feature at its own few values.

    On the exact tree path every row's response at the values comes from one walk per row and tree
    (:meth:`autopdp.pd.tree.exact_ice.ExactICE.moved`) and is averaged here with the sample weights: the
    same PD as :func:`autopdp.partial_dependence` on those values (to floating-point accuracy, tested), which
    would first lay out every row's leaves for all trees.  Otherwise that function evaluates them.
    """
    from ..pd.tree.exact_ice import ExactICE
    from ..pd.options import keywords
    from ..pd.rows import scheduler_of
    from ..pd.partial_dependence import partial_dependence
    from ..pd.tree.exact_pd import TreePathUnavailable

    exact = pd_kwargs.get("method", "auto") in ("auto", "tree")
    if exact:
        try:
            source = ExactICE(model, frame, response=pd_kwargs.get("response", "auto"),
                              target=pd_kwargs.get("target"), max_batch_mb=pd_kwargs.get("max_batch_mb", 256.0))
        except TreePathUnavailable:
            exact = False
    if not exact:
        extra = partial_dependence(model, frame, list(values), **keywords(custom_values=values, kind="average",
                                                                         **pd_kwargs))
        return {res.features[0]: (np.asarray(res.grid[0], dtype=float), np.asarray(res.average, dtype=float))
                for res in extra}
    weights = pd_kwargs.get("sample_weight")
    weights = None if weights is None else np.asarray(weights, dtype=float)
    names = list(values)
    wanted = [np.unique(np.asarray(values[name], dtype=float)) for name in names]
    # a walk moves each row to the two ends of an interval: one value is paired with a second, unread one
    grids = [v if v.size >= 2 else np.array([v[0], v[0] + 1.0]) for v in wanted]
    sets, grids = [(frame.names.index(n),) for n in names], [(g,) for g in grids]
    scheduler = scheduler_of(frame, pd_kwargs.get("scheduler"))
    if scheduler is None:
        sums = _moved_sums(source, (sets, grids, weights))
    else:  # each worker: its resident rows' weighted sums (autopdp.pd.rows); added up here
        from ..pd.distributed import dask_workers, run_partitions_on_dask

        parts, bounds = source.partitions(dask_workers(scheduler))
        per_part = run_partitions_on_dask(
            scheduler, _moved_sums, parts,
            [(sets, grids, None if weights is None else weights[a:b]) for a, b in bounds])
        sums = [(sum(p[i][0] for p in per_part), sum(p[i][1] for p in per_part)) for i in range(len(names))]
    out = {}
    for name, v, (total, weight) in zip(names, wanted, sums):
        out[name] = (v, (total / weight)[:, :v.size])  # (T, 2): the PD at the two ends
    return out


def _moved_sums(source, payload) -> list:
    """Per feature: the weighted sum over ``source``'s rows of each row's response at the feature's two values
    (``moved`` gives ``(T, rows, 2)``; the sum ``(T, 2)``) and the rows' total weight; mergeable by adding (a Dask task per row partition)."""
    sets, grids, weights = payload
    n = source.setup.frame.n_rows
    moved = source.moved(sets, grids, [np.zeros((n, 1), dtype=np.int64) for _ in sets])
    if weights is None:  # a PartFrame's part carries its rows' weights (its weight column)
        weights = source.setup.sample_weight
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    return [(np.einsum("tnk,n->tk", np.asarray(m, dtype=float), w), float(w.sum())) for m in moved]

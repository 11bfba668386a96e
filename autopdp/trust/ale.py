"""Accumulated local effects (Apley and Zhu 2020) for numeric features.

1D: the feature's range is cut at quantiles z_0 < ... < z_K; for the rows in
interval k (z_{k-1}, z_k] (the first interval includes z_0) the local effect is
the mean of f(z_k, x_rest) - f(z_{k-1}, x_rest): the model is only moved
within the data's own neighbourhood, never to combinations the data lacks.
The effects are accumulated and centred so their row-weighted mean is zero.

2D (numeric pairs): second-order differences over the cells of the two
features' quantile grids, accumulated over both axes, with each feature's
main effect removed, centred to a row-weighted mean of zero.
"""

from __future__ import annotations

import numpy as np


from ..pd.data import Frame, as_frame
from ..pd.engine import _as_column
from ..errors import InputError
from .modelfree import ModelFreePD
from ..pd.response import make_adapter
from ..pd.rows import scheduler_of

__all__ = ["ale", "ale_2d", "ale_curves_exact"]


def _edges(values: np.ndarray, bins: int) -> np.ndarray:
    v = values[np.isfinite(values)]
    edges = np.unique(np.quantile(v, np.linspace(0, 1, bins + 1)))
    if edges.size < 2:
        raise InputError("ALE needs a feature with at least two distinct values.")
    return edges


def _edges_of(frame: Frame, position: int, bins: int) -> np.ndarray:
    """:func:`_edges` of a column over every row, from the frame's row partitions (:mod:`autopdp.pd.profiles`:
    the same quantiles as numpy's on the whole column)."""
    from ..pd.profiles import NUMBERS, one_part, profiles, quantiles_of

    mapper = one_part(frame)
    try:
        (profile,) = profiles(mapper, [position], [NUMBERS], 0)
    except InputError:
        raise InputError(f"ALE is defined for numeric features; {frame.names[position]!r} is not numeric.") from None
    if profile.n_finite == 0:
        raise InputError("ALE needs a feature with at least two distinct values.")
    q = np.linspace(0, 1, bins + 1)
    ((_, (got,)),) = quantiles_of(mapper, [(position, (), profile.lo, profile.hi, profile.n_finite, [(q, "linear")])])
    edges = np.unique(got)
    if edges.size < 2:
        raise InputError("ALE needs a feature with at least two distinct values.")
    return edges


def _with(frame: Frame, rows: np.ndarray, changes: dict):
    """Rows of X with some columns set to per-row values, in the user's container type."""
    if frame.is_frame:
        d = frame.data.iloc[rows].copy()
        for pos, vals in changes.items():
            d[d.columns[pos]] = _as_column(vals, frame.data.dtypes.iloc[pos])
        return d
    d = np.array(frame.data[rows], dtype=np.result_type(frame.data.dtype, np.float64))
    for pos, vals in changes.items():
        d[:, pos] = vals
    return d


#: The last Pipeline seen by ALE and its preprocessed background (:mod:`autopdp.pd.pipeline_blocks`): the trust
#: stage asks for one feature's ALE after another on the same model and rows, which then share one transform.
_LAST_PLAN: list = []


def _predictor(model, adapter, frame: Frame):
    """``predict(rows, changes)``: the first response column on rows of X with columns set to per-row values.

    Through a column-separable Pipeline the data is preprocessed once and each moved feature's encoded
    columns are substituted (:mod:`autopdp.pd.pipeline_blocks`); the first call checks on a few of its rows
    that this gives the full pipeline's predictions, else (and for any other model) every call predicts on
    modified copies of the data (:func:`_with`).
    """
    import dataclasses

    from ..pd.pipeline_blocks import PROBE_ROWS, PROBE_TOLERANCE, BlocksUnavailable, plan_blocks

    def plain(rows, changes):
        return adapter(_with(frame, rows, changes))[:, 0]

    plan = None
    if _LAST_PLAN and _LAST_PLAN[0][0] is model and _LAST_PLAN[0][1] is frame:
        plan = _LAST_PLAN[0][2]
    else:
        try:
            plan = plan_blocks(model, adapter, frame)
        except BlocksUnavailable:
            plan = None
        _LAST_PLAN[:] = [(model, frame, plan)]
    if plan is None:
        return plain
    final = dataclasses.replace(adapter, model=plan.final)
    state = {"checked": False, "ok": False}

    def substituted(rows, changes):
        return final(plan.wrap(plan.rows_with(rows, changes)))[:, 0]

    def predict(rows, changes):
        if not state["checked"]:
            state["checked"] = True
            probe = np.unique(np.linspace(0, rows.size - 1, min(PROBE_ROWS, rows.size)).astype(np.intp))
            few = {pos: np.asarray(vals)[probe] for pos, vals in changes.items()}
            try:
                got, want = substituted(rows[probe], few), plain(rows[probe], few)
                state["ok"] = got.shape == want.shape and bool(np.all(
                    (np.abs(got - want) <= PROBE_TOLERANCE * (1.0 + np.abs(want))) | (np.isnan(got) & np.isnan(want))))
            except Exception:  # noqa: BLE001 - any failure of the shortcut leaves the plain predictions in charge
                state["ok"] = False
        return substituted(rows, changes) if state["ok"] else plain(rows, changes)

    return predict


def _bin_index(values, edges):
    k = np.clip(np.searchsorted(edges, values, side="left"), 1, edges.size - 1)
    return k  # interval (edges[k-1], edges[k]]; values at edges[0] fall in interval 1


def _ale_1d_from_sums(name, edges, counts, sums) -> ModelFreePD:
    """The centred 1D ALE from the rows per interval and the sums of their changes across it."""
    local = sums / np.maximum(counts, 1)
    acc = np.concatenate([[0.0], np.cumsum(local)])
    # centre: the mean over rows of the accumulated effect, each interval taken at its midpoint value
    mid = (acc[:-1] + acc[1:]) / 2
    acc = acc - np.sum(mid * counts) / max(counts.sum(), 1)
    return ModelFreePD(name, "numeric", edges, acc, counts.astype(int), "ale")


def _numeric(frame: Frame, pos: int) -> np.ndarray:
    try:
        return np.asarray(frame.column(pos), dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"ALE is defined for numeric features; {frame.names[pos]!r} is not numeric.") from None


def ale(model, X, feature, *, bins: int = 20, response="auto", target=None) -> ModelFreePD:
    """1D ALE of a numeric feature.

    Returns a :class:`ModelFreePD` with ``x`` the interval edges, ``pd`` the
    centred ALE at those edges and ``counts`` the rows per interval
    (``len(counts) == len(x) - 1``); the first target of the model is used.
    """
    from ..pd.rows import map_rows

    frame = as_frame(X)
    pos = frame.position_of(feature)
    adapter = make_adapter(model, response, target, probe=frame.take_rows(np.arange(min(5, frame.n_rows))).data)
    edges = _edges_of(frame, pos, bins)  # over every row; each row partition then sums its own rows' changes
    parts = map_rows(_ale_part, (model, adapter, pos, edges), frame)
    return _ale_1d_from_sums(frame.names[pos], edges, sum(c for c, _ in parts), sum(t for _, t in parts))


def _ale_part(rows: Frame, payload) -> tuple:
    """One row partition's rows per ALE interval and the sums of their predictions' changes across it."""
    model, adapter, pos, edges = payload
    values = _numeric(rows, pos)
    ok = np.flatnonzero(np.isfinite(values))
    k = _bin_index(values[ok], edges)
    predict = _predictor(model, adapter, rows)
    lo = predict(ok, {pos: edges[k - 1]})
    hi = predict(ok, {pos: edges[k]})
    K = edges.size - 1
    return np.bincount(k - 1, minlength=K), np.bincount(k - 1, weights=hi - lo, minlength=K)


def _ale_2d_curve(name, va, vb, ea, eb, f, ok, k=None) -> ModelFreePD:
    """The centred pure-interaction 2D ALE from each usable row's predictions at its cell's corners.

    ``f[da, db]``: the predictions at corner (lower + da, lower + db) of each row's cell;
    ``k``: the usable rows' intervals ``(_bin_index(va[ok], ea), _bin_index(vb[ok], eb))`` when known.
    """
    ka, kb = (_bin_index(va[ok], ea), _bin_index(vb[ok], eb)) if k is None else k
    second = f[1, 1] - f[1, 0] - f[0, 1] + f[0, 0]
    Ka, Kb = ea.size - 1, eb.size - 1
    cell = (ka - 1) * Kb + (kb - 1)
    return _ale_2d_from_sums(name, ea, eb, np.bincount(cell, minlength=Ka * Kb).reshape(Ka, Kb),
                             np.bincount(cell, weights=second, minlength=Ka * Kb).reshape(Ka, Kb))


def _ale_2d_from_sums(name, ea, eb, counts, sums) -> ModelFreePD:
    """The centred pure-interaction 2D ALE from the rows per cell and the sums of their second differences."""
    Ka, Kb = ea.size - 1, eb.size - 1
    local = sums / np.maximum(counts, 1)
    acc = np.zeros((Ka + 1, Kb + 1))
    acc[1:, 1:] = np.cumsum(np.cumsum(local, axis=0), axis=1)
    # remove each feature's main effect (the row-weighted mean change along each axis), then centre
    wa = counts.sum(axis=1)
    wb = counts.sum(axis=0)
    da = np.diff(acc, axis=0)
    db = np.diff(acc, axis=1)
    da_cell = (da[:, :-1] + da[:, 1:]) / 2  # change along a across each cell, averaged over its b edges
    db_cell = (db[:-1, :] + db[1:, :]) / 2
    row_mean = np.concatenate([[0.0], np.cumsum(np.sum(da_cell * counts, axis=1) / np.maximum(wa, 1))])
    col_mean = np.concatenate([[0.0], np.cumsum(np.sum(db_cell * counts, axis=0) / np.maximum(wb, 1))])
    acc = acc - row_mean[:, None] - col_mean[None, :]
    mids = (acc[:-1, :-1] + acc[1:, :-1] + acc[:-1, 1:] + acc[1:, 1:]) / 4
    acc = acc - np.sum(mids * counts) / max(counts.sum(), 1)
    x = np.empty(2, dtype=object)
    x[0], x[1] = ea, eb
    return ModelFreePD(name, "numeric", x, acc, counts.astype(int), "ale2d")


def ale_2d(model, X, features, *, bins: int = 10, response="auto", target=None) -> ModelFreePD:
    """Second-order (pure interaction) ALE of a numeric pair, centred.

    Returns a :class:`ModelFreePD` whose ``x`` holds the two edge arrays and
    whose ``pd`` has shape ``(len(x[0]), len(x[1]))``; ``counts`` are rows per cell.
    """
    frame = as_frame(X)
    pa, pb = (frame.position_of(f) for f in features)
    va, vb = _numeric(frame, pa), _numeric(frame, pb)
    adapter = make_adapter(model, response, target, probe=frame.take_rows(np.arange(min(5, frame.n_rows))).data)
    ea, eb = _edges(va, bins), _edges(vb, bins)
    ok = np.flatnonzero(np.isfinite(va) & np.isfinite(vb))
    ka, kb = _bin_index(va[ok], ea), _bin_index(vb[ok], eb)
    predict = _predictor(model, adapter, frame)
    f = {}
    for da in (0, 1):
        for db in (0, 1):
            f[da, db] = predict(ok, {pa: ea[ka - 1 + da], pb: eb[kb - 1 + db]})
    return _ale_2d_curve(f"{frame.names[pa]} x {frame.names[pb]}", va, vb, ea, eb, f, ok)


def _lower(edges, v) -> np.ndarray:
    """Each row's lower edge index (its interval minus one; 0 for a missing value: unused)."""
    out = np.zeros(v.size, dtype=np.int64)
    ok = np.isfinite(v)
    out[ok] = _bin_index(v[ok], edges) - 1
    return out


def ale_curves_exact(source, frame: Frame, features, pairs, *, bins_1d: dict, bins_2d: dict, column: int = 0,
                     scheduler=None) -> dict:
    """The same ALE curves as :func:`ale` and :func:`ale_2d`, with the model's values at each row's interval
    ends (1D) or cell corners (2D) computed exactly on the tree path
    (:meth:`autopdp.pd.tree.exact_ice.ExactICE.moved`: one walk per row and tree) instead of predicting
    on modified copies of the data.

    Parameters
    ----------
    source : ExactICE
        The exact tree path of the model on ``frame``.
    features : list of str
        Numeric features for 1D ALE; ``bins_1d[name]`` intervals each.
    pairs : list of (str, str)
        Numeric pairs for 2D ALE; ``bins_2d[pair]`` intervals per axis.
    column : int
        Which of the source's response columns to use.
    scheduler : str or distributed.Client, optional
        A Dask cluster: each worker finds its own rows' intervals and cells, reads their moved values and sums them
        (:func:`ale_sums`); the sums are added here (the same curves to floating-point rounding).  Only the edges
        travel: the calling process reads one column at a time for them and keeps no row-long array.

    Returns
    -------
    dict
        ``{feature or pair: ModelFreePD}``; an item whose ALE is undefined
        (fewer than two distinct values) is absent.
    """
    edges_of: dict = {}  # (position, bins): the ALE edges (None: ALE undefined), from every row's values

    def edges_for(positions, bins):
        missing = [p for p in positions if (p, bins) not in edges_of]
        for p in missing:  # from the row partitions' order statistics: no row-long array here
            try:
                edges_of[(p, bins)] = _edges_of(frame, p, bins)  # InputError for a non-numeric feature
            except ValueError:  # fewer than two distinct values
                edges_of[(p, bins)] = None
        edges = tuple(edges_of[(p, bins)] for p in positions)
        return None if any(e is None for e in edges) else edges

    jobs = []  # (key, positions, edges)
    for key, bins in [*((name, bins_1d[name]) for name in features), *((tuple(p), bins_2d[p]) for p in pairs)]:
        positions = tuple(frame.position_of(f) for f in ((key,) if isinstance(key, str) else key))
        edges = edges_for(positions, bins)
        if edges is not None:
            jobs.append((key, positions, edges))
    if not jobs:
        return {}
    work = [(positions, edges) for _, positions, edges in jobs]
    scheduler = scheduler_of(frame, scheduler)
    if scheduler is None:
        sums = ale_sums(source, work, column)
    else:  # each worker: its rows' sums from its own rows (autopdp.pd.rows); added up here
        from ..pd.distributed import run_partitions_on_dask, dask_workers

        parts, _ = source.partitions(dask_workers(scheduler))
        per_part = run_partitions_on_dask(scheduler, _ale_partition, parts, [(work, column)] * len(parts))
        sums = [(sum(p[i][0] for p in per_part), sum(p[i][1] for p in per_part)) for i in range(len(work))]
    out = {}
    for (key, positions, grids), (counts, total) in zip(jobs, sums):
        if len(positions) == 1:
            out[key] = _ale_1d_from_sums(frame.names[positions[0]], grids[0], counts, total)
        else:
            out[key] = _ale_2d_from_sums(f"{frame.names[positions[0]]} x {frame.names[positions[1]]}", *grids,
                                         counts, total)
    return out


def ale_sums(source, work, column: int) -> list:
    """Per job ``(positions, edges)``: the rows per interval (1D) or cell (2D) and the sums of their changes across
    it, over the rows of ``source`` with every value; mergeable by adding.  Each row's interval is found here, from
    the rows ``source`` holds (a partition's own rows on a worker: no row-long array travels)."""
    frame = source.setup.frame
    values = {p: _numeric(frame, p) for p in dict.fromkeys(p for positions, _ in work for p in positions)}
    lower_of: dict = {}

    def lower(p, e):  # :func:`_lower` of a feature on its edges, once per feature and edges
        key = (p, e.size, e.tobytes())
        if key not in lower_of:
            lower_of[key] = _lower(e, values[p])
        return lower_of[key]

    lowers = [np.column_stack([lower(p, e) for p, e in zip(positions, edges)]) for positions, edges in work]
    # each row's response at its interval's two ends (1D: (n, 2)) or its cell's four corners (2D: (n, 2, 2))
    moved = source.moved([w[0] for w in work], [w[1] for w in work], lowers)
    out = []
    for (positions, grids), low, values_moved in zip(work, lowers, moved):
        ok = np.all([np.isfinite(values[p]) for p in positions], axis=0)
        values_moved = np.asarray(values_moved[column], dtype=float)[ok]
        low = low[ok]
        if len(positions) == 1:
            K = grids[0].size - 1
            out.append((np.bincount(low[:, 0], minlength=K),
                        np.bincount(low[:, 0], weights=values_moved[:, 1] - values_moved[:, 0], minlength=K)))
        else:
            Ka, Kb = grids[0].size - 1, grids[1].size - 1
            cell = low[:, 0] * Kb + low[:, 1]
            second = values_moved[:, 1, 1] - values_moved[:, 1, 0] - values_moved[:, 0, 1] + values_moved[:, 0, 0]
            out.append((np.bincount(cell, minlength=Ka * Kb).reshape(Ka, Kb),
                        np.bincount(cell, weights=second, minlength=Ka * Kb).reshape(Ka, Kb)))
    return out


def _ale_partition(source, payload) -> list:
    """:func:`ale_sums` of one row partition (a Dask task): ``payload`` is (its rows' jobs, the column)."""
    work, column = payload
    return ale_sums(source, work, column)

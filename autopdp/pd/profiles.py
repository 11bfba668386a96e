"""Column profiles from row partitions: what a feature's grid needs, never its rows (issue 54).

A grid (:mod:`autopdp.pd.grids`) needs, of one column: how many values are missing, whether any is infinite, the
finite values' count and range, every distinct value with its count when there are few, the levels of a
categorical column with their counts, and a few order statistics (its quantiles).  Each row partition gives these
as a small summary (:func:`profile_part`) and the summaries add up (:func:`merge_profiles`).  The order statistics
are found exactly by narrowing value intervals (:func:`quantiles_of`): each pass over the partitions counts, in
equal-width bins of every interval still open, the values that fall there, and keeps for each wanted rank the bin
that holds it; an interval that holds at most :data:`COLLECT_AT` values, or that floating point cannot divide
further, has its distinct values returned with their counts and the rank is read off.  The quantiles are then
numpy's own formulas (``linear``, ``inverted_cdf``) applied to those order statistics
(:func:`quantile_from_order`): the same numbers as ``numpy.quantile`` over every row, bit for bit, whatever the
partitioning (``tests/test_profiles.py`` checks both against numpy at shrunken limits).

``mapper(fn, payload)`` runs ``fn(frame_of_a_partition, payload)`` on every partition and returns the results in
row order: :func:`one_part` on a frame held here (every row, one partition), or
:func:`autopdp.pd.rows.map_rows` on a Dask cluster; the code above it is the same.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import InputError, advice

__all__ = ["NumericProfile", "LevelProfile", "one_part", "profile_part", "merge_profiles", "profiles", "frame_profiles",
           "quantiles_of", "quantile_from_order", "order_indexes"]

#: Equal-width bins an open interval is divided into on each pass.
BINS = 256
#: An interval holding at most this many values has its distinct values returned (with their counts).
COLLECT_AT = 65536


@dataclass(frozen=True)
class NumericProfile:
    """One numeric column's summary: its rows, the first with a missing value (-1: none), counts, range, and its
    distinct values with their counts (None: more than the ``cap`` asked for)."""

    n_rows: int
    first_missing: int
    n_missing: int
    n_inf: int
    n_finite: int
    lo: float
    hi: float
    distinct: tuple | None  # (sorted values, counts)


@dataclass(frozen=True)
class LevelProfile:
    """One non-numeric column's summary: its rows, the first with a missing value (-1: none), the missing count
    and every level's count in order of first appearance (None: not asked for)."""

    n_rows: int
    first_missing: int
    n_missing: int
    counts: dict | None


def one_part(frame):
    """The mapper of a frame by itself: every row as one partition when it is held here, a
    :class:`~autopdp.pd.partframe.PartFrame`'s own parts on the workers that read them (:func:`autopdp.pd.rows.map_rows`)."""
    from .rows import mapper_of

    return mapper_of(frame)


def numeric_values(frame, position: int) -> np.ndarray:
    """A numeric column as floats, or the error that says it is not numeric."""
    try:
        return np.asarray(frame.column(position), dtype=float)
    except (TypeError, ValueError):
        raise InputError(
            f"Feature {frame.names[position]!r} is treated as numeric but holds non-numeric values; convert the "
            f"column to numbers or list it in categorical_features{advice(cli=' in the --config file', python='')}."
        ) from None


def _first(mask: np.ndarray) -> int:
    return int(np.argmax(mask)) if mask.any() else -1


def _numeric_part(values: np.ndarray, cap: int) -> NumericProfile:
    missing = np.isnan(values)
    finite = values[np.isfinite(values)]
    n, n_missing = int(values.size), int(missing.sum())
    head = dict(n_rows=n, first_missing=_first(missing), n_missing=n_missing, n_inf=n - n_missing - int(finite.size),
                n_finite=int(finite.size))
    if finite.size == 0:
        return NumericProfile(**head, lo=np.inf, hi=-np.inf, distinct=(np.empty(0), np.empty(0, dtype=np.int64)))
    if cap <= 0:  # only the counts and range are wanted
        return NumericProfile(**head, lo=float(finite.min()), hi=float(finite.max()), distinct=None)
    uniq, counts = np.unique(finite, return_counts=True)
    return NumericProfile(**head, lo=float(uniq[0]), hi=float(uniq[-1]),
                          distinct=(uniq, counts) if uniq.size <= cap else None)


def _level_part(frame, position: int, with_counts: bool) -> LevelProfile:
    if not with_counts:  # the missing values only: read as the column is (a categorical one not copied to objects)
        missing = frame.missing(position)
        return LevelProfile(int(missing.size), _first(missing), int(missing.sum()), None)
    series = pd.Series(frame.column(position), dtype=object)
    missing = series.isna().to_numpy()
    tally = series.value_counts(sort=False, dropna=True)  # in order of first appearance
    return LevelProfile(int(missing.size), _first(missing), int(missing.sum()),
                        dict(zip(tally.index.tolist(), tally.to_numpy().tolist())))


#: what a column's profile holds: its numbers, its levels' counts, or only its missing values
NUMBERS, LEVELS, MISSING = "numbers", "levels", "missing"


def profile_part(frame, payload) -> list:
    """One partition's profiles of the columns ``payload = (positions, kinds, cap)``, a kind each
    (:data:`NUMBERS`, :data:`LEVELS`, :data:`MISSING`)."""
    positions, kinds, cap = payload
    return [_numeric_part(numeric_values(frame, p), cap) if kind == NUMBERS else _level_part(frame, p, kind == LEVELS)
            for p, kind in zip(positions, kinds)]


def _first_of(parts: list) -> int:
    """The first row with a missing value over every part (parts in row order)."""
    offset = 0
    for p in parts:
        if p.first_missing >= 0:
            return offset + p.first_missing
        offset += p.n_rows
    return -1


def _add_counts(tables: list) -> tuple:
    """``(values, counts)`` tables of distinct values, added up: the sorted union with each value's total count."""
    uniq, inverse = np.unique(np.concatenate([v for v, _ in tables]), return_inverse=True)
    counts = np.bincount(inverse, weights=np.concatenate([c for _, c in tables]), minlength=uniq.size)
    return uniq, counts.astype(np.int64)


def _merge_numeric(parts: list[NumericProfile], cap: int) -> NumericProfile:
    distinct = None
    if all(p.distinct is not None for p in parts):
        distinct = _add_counts([p.distinct for p in parts])
        distinct = distinct if distinct[0].size <= cap else None
    return NumericProfile(sum(p.n_rows for p in parts), _first_of(parts), sum(p.n_missing for p in parts),
                          sum(p.n_inf for p in parts), sum(p.n_finite for p in parts), min(p.lo for p in parts),
                          max(p.hi for p in parts), distinct)


def _merge_levels(parts: list[LevelProfile]) -> LevelProfile:
    counts: dict | None = None
    if parts[0].counts is not None:
        counts = {}
        for part in parts:  # in row order: the first appearance over all rows
            for level, n in part.counts.items():
                counts[level] = counts.get(level, 0) + n
    return LevelProfile(sum(p.n_rows for p in parts), _first_of(parts), sum(p.n_missing for p in parts), counts)


def merge_profiles(per_part: list[list], cap: int) -> list:
    """The profiles of all the rows from each partition's (same columns, row order)."""
    return [_merge_levels(list(ps)) if isinstance(ps[0], LevelProfile) else _merge_numeric(list(ps), cap)
            for ps in zip(*per_part)]


def profiles(mapper, positions, kinds, cap: int) -> list:
    """Every column's profile in ``positions`` (one pass over the partitions); ``kinds``: :data:`NUMBERS`,
    :data:`LEVELS` or :data:`MISSING` each; ``cap``: the most distinct numbers kept."""
    payload = (list(positions), list(kinds), int(cap))
    return merge_profiles(mapper(profile_part, payload), int(cap))


def frame_profiles(frame, mapper=None, cap: int = 0) -> list:
    """Every column's profile as the data's checks need it: a numeric dtype's numbers (its distinct values up to
    ``cap``), a text column's levels, a categorical or boolean column's missing values only."""
    kinds = []
    for j in range(frame.n_features):
        dtype = frame.dtype(j)
        if pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype):
            kinds.append(NUMBERS)
        else:
            kinds.append(MISSING if isinstance(dtype, pd.CategoricalDtype) or pd.api.types.is_bool_dtype(dtype)
                         else LEVELS)
    return profiles(one_part(frame) if mapper is None else mapper, range(frame.n_features), kinds, cap)


# ---- order statistics ---------------------------------------------------------------------------------------------

def order_indexes(n: int, q: np.ndarray, method: str) -> np.ndarray:
    """The 0-based ranks (in the sorted values) numpy's quantile ``method`` reads for ``q`` of ``n`` values
    (``"median"``: :func:`numpy.median`'s, ``q`` unused)."""
    q = np.asarray(q, dtype=float)
    if method == "median":
        return np.unique(np.array([(n - 1) // 2, n // 2], dtype=np.int64))
    if method == "linear":
        virtual = (n - 1) * q
        prev = np.clip(np.floor(virtual), 0, n - 1)
        return np.unique(np.concatenate([prev, np.clip(prev + 1, 0, n - 1)]).astype(np.int64))
    return np.unique(_inverted_cdf_index(n, q))


def _inverted_cdf_index(n: int, q: np.ndarray) -> np.ndarray:
    index = n * q - 1  # numpy's _inverted_cdf: the previous order statistic where the index is whole, else the next
    prev = np.floor(index)
    out = np.where(index - prev == 0, prev, prev + 1).astype(np.intp)
    out[out < 0] = 0
    return out


def quantile_from_order(n: int, q: np.ndarray, method: str, at) -> np.ndarray:
    """numpy's ``quantile(values, q, method)`` from ``at(rank)``: the sorted values' order statistics (numpy's
    virtual index, clipping and interpolation, in its floating-point order; ``"median"``: :func:`numpy.median`,
    the mean of the two middle values)."""
    q = np.asarray(q, dtype=float)
    if method == "median":
        return np.array([at(n // 2) if n % 2 else np.mean([at(n // 2 - 1), at(n // 2)])], dtype=float)
    if method != "linear":
        return np.array([at(int(i)) for i in _inverted_cdf_index(n, q)], dtype=float)
    out = np.empty(q.shape, dtype=float)
    for k, virtual in enumerate((n - 1) * q):
        if virtual >= n - 1 or virtual < 0:
            out[k] = at(n - 1 if virtual >= n - 1 else 0)
            continue
        prev = np.floor(virtual)
        a, b, gamma = at(int(prev)), at(int(prev) + 1), virtual - prev
        diff = b - a
        out[k] = b - diff * (1 - gamma) if gamma >= 0.5 else a + diff * gamma  # numpy's _lerp
    return out


def _interval_part(frame, payload) -> list:
    """One partition's answer for each open interval ``(position, exclude, a, b, edges)``: the count, least and
    greatest of its values in each bin of ``edges`` (an array), or, when ``edges`` is None, its distinct values in
    ``[a, b]`` with their counts."""
    out, cache = [], {}
    for position, exclude, a, b, edges in payload:
        key = (position, exclude)
        if key not in cache:
            v = numeric_values(frame, position)
            v = v[np.isfinite(v)]
            cache[key] = v[~np.isin(v, np.asarray(exclude, dtype=float))] if exclude else v
        v = cache[key]
        v = v[(v >= a) & (v <= b)]
        if edges is None:
            out.append(np.unique(v, return_counts=True))
            continue
        j, bins = np.searchsorted(edges[1:-1], v, side="right"), edges.size - 1
        lo, hi = np.full(bins, np.inf), np.full(bins, -np.inf)
        np.minimum.at(lo, j, v)
        np.maximum.at(hi, j, v)
        out.append((np.bincount(j, minlength=bins), lo, hi))
    return out


def _edges(a: float, b: float, count: int):
    """The bins an interval is counted in next, or None when its values are collected (few of them, or an interval
    floating point cannot divide)."""
    if count <= COLLECT_AT or not b > a:
        return None
    if np.isfinite(b - a):
        edges = np.unique(np.linspace(a, b, BINS + 1))
    else:  # a range wider than the largest float (a < 0 < b): each side of 0 on its own
        half = max(1, BINS // 2)
        edges = np.unique(np.concatenate([np.linspace(a, 0.0, half + 1), np.linspace(0.0, b, half + 1)]))
    return edges if edges.size >= 3 else None


def _merged_answer(answers: list, collected: bool) -> tuple:
    """The partitions' answers for one interval, added up: ``(values, counts)`` collected, else ``(counts, least,
    greatest)`` per bin."""
    if not collected:
        return (np.sum([c for c, _, _ in answers], axis=0), np.min([lo for _, lo, _ in answers], axis=0),
                np.max([hi for _, _, hi in answers], axis=0))
    return _add_counts(answers)


def _narrow(state: dict, answer: tuple, collected: bool, found: dict) -> dict:
    """The intervals that hold this interval's wanted ranks next: for each rank, its bin's values' range (the order
    statistic itself when that range is one value, or when the values were collected)."""
    below, ranks = state["below"], state["ranks"]
    counts = answer[1] if collected else answer[0]
    cum = np.cumsum(counts)
    nxt: dict = {}
    for r in ranks:
        j = int(np.searchsorted(cum, r - below, side="right"))
        if collected or answer[1][j] == answer[2][j]:
            found[r] = float(answer[0][j] if collected else answer[1][j])
            continue
        lo, hi = float(answer[1][j]), float(answer[2][j])
        entry = nxt.setdefault((lo, hi), {"a": lo, "b": hi, "below": below + (int(cum[j - 1]) if j else 0),
                                          "count": int(counts[j]), "ranks": []})
        entry["ranks"].append(r)
    return nxt


def quantiles_of(mapper, asks: list) -> list:
    """Exact quantiles of numeric columns over every partition's rows, as ``numpy.quantile`` gives them.

    ``asks``: ``(position, exclude, lo, hi, n_hint, wants)`` each: the column, values left out (a tuple), the
    range and at most how many finite values it holds (:class:`NumericProfile`), and ``wants``, a list of
    ``(q, method)``.  Returns ``(n, [quantiles per want])`` per ask, ``n`` the count of values in scope (the
    quantiles None when it is 0).  One pass over the partitions per narrowing step, every ask at once."""
    open_ = {(i, lo, hi): {"a": lo, "b": hi, "below": 0, "count": n_hint, "ranks": None}
             for i, (_, _, lo, hi, n_hint, _) in enumerate(asks)}
    n_of, found = {}, [dict() for _ in asks]
    while open_:
        keys = list(open_)
        edges = [_edges(open_[k]["a"], open_[k]["b"], open_[k]["count"]) for k in keys]
        payload = [(asks[k[0]][0], tuple(asks[k[0]][1]), open_[k]["a"], open_[k]["b"], e) for k, e in zip(keys, edges)]
        per_part = mapper(_interval_part, payload)
        nxt = {}
        for j, (key, e) in enumerate(zip(keys, edges)):
            answer = _merged_answer([part[j] for part in per_part], e is None)
            state, i = open_[key], key[0]
            if state["ranks"] is None:  # the first pass: the count in scope gives the ranks
                n_of[i] = int((answer[1] if e is None else answer[0]).sum())
                state["ranks"] = sorted({int(r) for q, m in asks[i][5] for r in order_indexes(n_of[i], q, m)}) \
                    if n_of[i] else []
            for (lo, hi), entry in _narrow(state, answer, e is None, found[i]).items():
                nxt[(i, lo, hi)] = entry
        open_ = nxt
    return [(n_of[i], [quantile_from_order(n_of[i], q, m, found[i].__getitem__) for q, m in ask[5]]
             if n_of[i] else None) for i, ask in enumerate(asks)]

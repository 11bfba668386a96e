"""Association between two features in the data (the 'correlation' 2D criterion).

* numeric x numeric: absolute Spearman rank correlation;
* numeric x categorical: the correlation ratio eta = sqrt(between-level variance / total variance);
* categorical x categorical: Cramer's V = sqrt(chi2 / (n (min(r, c) - 1))).

All three lie in [0, 1]; 0 means no association.  Rows with a missing value in
either feature are left out.

:func:`association_test` adds the p-value of the matching test of
independence: Spearman's rank correlation test (``scipy.stats.spearmanr``),
the one-way ANOVA F test of equal means across the levels
(``scipy.stats.f_oneway``) and Pearson's chi-squared test of the contingency
table (``scipy.stats.chi2_contingency``).  :func:`association_tests` gives the same for
many pairs at once from summaries of the row partitions (value tables, contingency tables, per-level moments,
sums of rank products), so a cluster's rows are read where they are and nothing row-long is kept here.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["association", "association_test", "association_tests", "spearman", "correlation_ratio", "cramers_v"]


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import spearmanr

    if np.unique(a).size < 2 or np.unique(b).size < 2:
        return 0.0
    return float(abs(spearmanr(a, b).statistic))


def correlation_ratio(categories: np.ndarray, values: np.ndarray) -> float:
    codes, _ = pd.factorize(pd.Series(categories, dtype=object))
    values = np.asarray(values, dtype=float)
    total = np.sum((values - values.mean()) ** 2)
    if total <= 0:
        return 0.0
    counts = np.bincount(codes)
    means = np.bincount(codes, weights=values) / np.maximum(counts, 1)
    between = np.sum(counts * (means - values.mean()) ** 2)
    return float(np.sqrt(between / total))


def cramers_v(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats.contingency import association as _assoc, crosstab

    table = crosstab(pd.Series(a, dtype=object).to_numpy(), pd.Series(b, dtype=object).to_numpy()).count
    if min(table.shape) < 2:
        return 0.0
    return float(_assoc(table, method="cramer"))


def association(a: np.ndarray, kind_a: str, b: np.ndarray, kind_b: str) -> float:
    """Association of two columns given their kinds (``numeric``/``categorical``)."""
    a = pd.Series(a, dtype=object if kind_a == "categorical" else float)
    b = pd.Series(b, dtype=object if kind_b == "categorical" else float)
    ok = a.notna().to_numpy() & b.notna().to_numpy()
    a, b = a[ok].to_numpy(), b[ok].to_numpy()
    if a.size < 3:
        return float("nan")
    if kind_a == "numeric" and kind_b == "numeric":
        return spearman(a.astype(float), b.astype(float))
    if kind_a == "categorical" and kind_b == "categorical":
        return cramers_v(a, b)
    if kind_a == "categorical":
        return correlation_ratio(a, b.astype(float))
    return correlation_ratio(b, a.astype(float))


def association_test(a: np.ndarray, kind_a: str, b: np.ndarray, kind_b: str) -> tuple[float, float]:
    """``(association, p-value of the test of independence)`` of two columns (see module docs)."""
    from scipy import stats

    if kind_a == "numeric" and kind_b == "numeric":  # one Spearman test gives both
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        ok = ~np.isnan(a) & ~np.isnan(b)
        a, b = a[ok], b[ok]
        if a.size < 3:
            return float("nan"), float("nan")
        if np.unique(a).size < 2 or np.unique(b).size < 2:
            return 0.0, 1.0
        res = stats.spearmanr(a, b)
        p = float(res.pvalue)
        return float(abs(res.statistic)), (p if np.isfinite(p) else 1.0)
    value = association(a, kind_a, b, kind_b)
    if not np.isfinite(value):
        return value, float("nan")
    a = pd.Series(a, dtype=object if kind_a == "categorical" else float)
    b = pd.Series(b, dtype=object if kind_b == "categorical" else float)
    ok = a.notna().to_numpy() & b.notna().to_numpy()
    a, b = a[ok].to_numpy(), b[ok].to_numpy()
    if kind_a == "categorical" and kind_b == "categorical":
        table = stats.contingency.crosstab(pd.Series(a, dtype=object).to_numpy(), pd.Series(b, dtype=object).to_numpy()).count
        if min(table.shape) < 2:
            return value, 1.0
        p = stats.chi2_contingency(table, correction=False).pvalue
    else:
        cats, nums = (a, b) if kind_a == "categorical" else (b, a)
        nums = nums.astype(float)
        codes, _ = pd.factorize(pd.Series(cats, dtype=object))
        groups = [nums[codes == c] for c in range(codes.max() + 1)]
        groups = [g for g in groups if g.size > 0]
        if len(groups) < 2 or np.all([np.ptp(g) == 0 for g in groups]) and np.unique(nums).size < 2:
            return value, 1.0
        with np.errstate(all="ignore"):
            p = stats.f_oneway(*groups).pvalue
    p = float(p)
    return value, (p if np.isfinite(p) else 1.0)


def association_tests(columns, kinds: dict, pairs) -> dict:
    """``{(a, b): (association, p-value)}`` for every pair, as :func:`association_test` gives one by one, from
    mergeable summaries of the row partitions (no row-long array is kept or brought here).

    Parameters
    ----------
    columns : Frame, mapping or list of mappings
        The rows: a :class:`~autopdp.pd.data.Frame` (or a ``PartFrame``), whose row partitions are read where they
        are (:func:`autopdp.pd.rows.map_rows`); a mapping ``{feature name: column values}`` (one partition); or a
        list of such mappings, the partitions in row order.
    kinds : dict
        ``{feature name: "numeric" | "categorical"}``.
    pairs : iterable of (name, name)

    Three passes over the partitions, each returning counts and sums:

    1. each numeric column's missing count and range;
    2. the value tables (each distinct value and its count) of the numeric columns, ranked among every row or,
       where the pair has a missing value, among the pair's complete rows; each categorical pair's contingency
       table; each categorical-numeric pair's count, mean, sum of squares about the mean, least and greatest value
       per level (merged as Chan et al.'s parallel variance);
    3. for each numeric pair, the cross-products of its centred ranks (each row's average rank found in the
       merged value table).

    The tables are integer counts, so the categorical pairs' tables are :func:`association_test`'s exactly; the
    sums equal the one-pass sums to rounding, whatever the partitioning.
    """
    pairs = [tuple(p) for p in pairs]
    run = _runner(columns)
    nn = [p for p in pairs if kinds[p[0]] == kinds[p[1]] == "numeric"]
    cc = [p for p in pairs if kinds[p[0]] == kinds[p[1]] == "categorical"]
    cn = [(a, b) if kinds[a] == "categorical" else (b, a) for a, b in pairs if kinds[a] != kinds[b]]
    names = sorted({f for p in nn for f in p})
    missing = _sum_dicts(run(_missing_part, names)) if names else {}
    keys = {p: _table_keys(p, missing) for p in nn}
    tables, tabs, groups = _merge_second(run(_second_part, (list(dict.fromkeys(k for ks in keys.values() for k in ks)), cc, cn)))
    ranked = {k: _ranks(*tables[k]) for k in tables}
    todo = [(p, keys[p]) for p in nn if _spearman_ready(*(ranked[k] for k in keys[p]))]
    sums = _sum_dicts(run(_cross_part, (todo, {k: ranked[k] for p, ks in todo for k in ks}))) if todo else {}
    out = {}
    for p in nn:
        out[p] = _spearman_result(*(ranked[k] for k in keys[p]), sums.get(p))
    for p in cc:
        out[p] = _table_result(tabs[p])
    for (a, b), (c, v) in zip([p for p in pairs if kinds[p[0]] != kinds[p[1]]], cn):
        out[(a, b)] = _groups_result(groups[(c, v)])
    return out


def _runner(columns):
    """``run(fn, payload) -> [fn(mapping of one partition's columns, payload)]`` over the rows' partitions."""
    if hasattr(columns, "names") and hasattr(columns, "column"):
        from ..pd.rows import map_rows

        return lambda fn, payload: map_rows(_on_frame, (fn, payload), columns)
    parts = columns if isinstance(columns, list) else [columns]
    return lambda fn, payload: [fn(part, payload) for part in parts]


def _on_frame(rows, job):
    fn, payload = job
    return fn(_FrameColumns(rows), payload)


class _FrameColumns:
    """``columns[name]``: one column of a partition's :class:`~autopdp.pd.data.Frame`, read when asked."""

    def __init__(self, rows):
        self._rows = rows

    def __getitem__(self, name):
        return self._rows.column(self._rows.names.index(name))

    def coded(self, name) -> tuple:
        """``(codes, labels)``: each row's level code (-1: missing) and ``labels(rows)``, the values of those rows
        as :meth:`__getitem__` reads them; a categorical column's own codes (no copy to Python objects)."""
        position = self._rows.names.index(name)
        data = self._rows.data
        col = data.iloc[:, position] if isinstance(data, pd.DataFrame) else pd.Series(self[name], dtype=object)
        if isinstance(col.dtype, pd.CategoricalDtype):
            codes = col.cat.codes.to_numpy()
        else:
            codes, _ = pd.factorize(col)
        return codes, lambda rows: self._rows.take_rows(rows).column(position)


def _sum_dicts(parts: list) -> dict:
    out: dict = {}
    for part in parts:
        for k, v in part.items():
            out[k] = v if k not in out else out[k] + v
    return out


def _missing_part(cols, names) -> dict:
    return {name: np.array([np.isnan(np.asarray(cols[name], dtype=float)).sum()]) for name in names}


def _table_keys(pair, missing) -> tuple:
    """The value tables a numeric pair's ranks come from: each column's own when neither has a missing value,
    else each column's among the pair's complete rows."""
    mask = None if missing[pair[0]][0] == 0 and missing[pair[1]][0] == 0 else pair
    return (pair[0], mask), (pair[1], mask)


def _second_part(cols, payload) -> tuple:
    """One partition's value tables, contingency tables and per-level moments (see :func:`association_tests`)."""
    table_keys, cc, cn = payload
    num, cat = {}, {}

    def numeric(name):
        if name not in num:
            num[name] = np.asarray(cols[name], dtype=float)
        return num[name]

    def categorical(name):
        if name not in cat:
            cat[name] = cols.coded(name) if hasattr(cols, "coded") else _coded(cols[name])
        return cat[name]

    tables = {}
    for name, mask in table_keys:
        v = numeric(name)
        ok = ~np.isnan(v) if mask is None else ~np.isnan(numeric(mask[0])) & ~np.isnan(numeric(mask[1]))
        tables[(name, mask)] = np.unique(v[ok], return_counts=True)
    tabs = {}
    for a, b in cc:
        sa, sb = categorical(a), categorical(b)
        ok = (sa[0] >= 0) & (sb[0] >= 0)
        ca, ua = _levels_among(*sa, ok)
        cb, ub = _levels_among(*sb, ok)
        counts = np.bincount(ca.astype(np.int64) * len(ub) + cb, minlength=len(ua) * len(ub)).reshape(len(ua), len(ub))
        tabs[(a, b)] = (list(ua), list(ub), counts)
    groups = {}
    for c, v in cn:
        sc, x = categorical(c), numeric(v)
        ok = (sc[0] >= 0) & ~np.isnan(x)
        codes, levels = _levels_among(*sc, ok)
        groups[(c, v)] = (list(levels), _level_moments(codes, x[ok], len(levels)))
    return tables, tabs, groups


def _coded(values) -> tuple:
    """``(codes, labels)`` of a column given as values (see :meth:`_FrameColumns.coded`)."""
    values = pd.Series(values, dtype=object)
    codes, _ = pd.factorize(values)
    return codes, lambda rows: values.to_numpy()[rows]


def _levels_among(codes, labels, ok) -> tuple:
    """``(codes, levels)`` of the rows ``ok`` (none missing): their levels in order of first appearance and each
    row's position among them, as ``pandas.factorize`` of those rows' values gives them."""
    kept = codes[ok]
    if kept.size == 0:
        return kept.astype(np.intp), np.array([], dtype=object)
    seen, first = np.unique(kept, return_index=True)
    order = np.argsort(first, kind="stable")
    position = np.empty(int(seen[-1]) + 1, dtype=np.intp)
    position[seen[order]] = np.arange(seen.size)
    return position[kept], labels(np.flatnonzero(ok)[first[order]])


def _level_moments(codes, x, k) -> np.ndarray:
    """``(k, 5)``: each level's count, mean, sum of squares about its mean, least and greatest value."""
    n = np.bincount(codes, minlength=k).astype(float)
    mean = np.bincount(codes, weights=x, minlength=k) / np.maximum(n, 1)
    m2 = np.bincount(codes, weights=(x - mean[codes]) ** 2, minlength=k)
    lo, hi = np.full(k, np.inf), np.full(k, -np.inf)
    np.minimum.at(lo, codes, x)
    np.maximum.at(hi, codes, x)
    return np.column_stack([n, mean, m2, lo, hi])


def _merge_moments(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Two partitions' moments of one level (rows of :func:`_level_moments`), merged (Chan et al.)."""
    n = a[0] + b[0]
    if a[0] == 0 or b[0] == 0:
        return a if b[0] == 0 else b
    delta = b[1] - a[1]
    return np.array([n, a[1] + delta * b[0] / n, a[2] + b[2] + delta * delta * a[0] * b[0] / n,
                     min(a[3], b[3]), max(a[4], b[4])])


def _merge_second(parts: list) -> tuple:
    """The partitions' :func:`_second_part` summaries merged: value tables, contingency tables keyed by level
    pairs, and per-level moments keyed by level."""
    tables, tabs, groups = {}, {}, {}
    for part_tables, part_tabs, part_groups in parts:
        for key, (values, counts) in part_tables.items():
            tables.setdefault(key, []).append((values, counts))
        for key, (ua, ub, counts) in part_tabs.items():
            cells = tabs.setdefault(key, {})
            for i, j in zip(*np.nonzero(counts)):
                cells[(ua[i], ub[j])] = cells.get((ua[i], ub[j]), 0) + int(counts[i, j])
        for key, (levels, moments) in part_groups.items():
            kept = groups.setdefault(key, {})
            for level, row in zip(levels, moments):
                kept[level] = row if level not in kept else _merge_moments(kept[level], row)
    for key, pieces in tables.items():
        values, inverse = np.unique(np.concatenate([v for v, _ in pieces]), return_inverse=True)
        tables[key] = (values, np.bincount(inverse.ravel(), weights=np.concatenate([c for _, c in pieces]),
                                           minlength=values.size).astype(np.int64))
    return tables, tabs, groups


def _ranks(values: np.ndarray, counts: np.ndarray) -> tuple:
    """``(values, twice each value's average rank, rows)`` of a merged value table: ties share their mean rank,
    as ``scipy.stats.rankdata`` gives; twice it is a whole number."""
    before = np.cumsum(counts) - counts
    return values, 2 * before + counts + 1, int(counts.sum())


def _spearman_ready(a, b) -> bool:
    return a[2] >= 3 and a[0].size >= 2 and b[0].size >= 2


def _cross_part(cols, payload) -> dict:
    """One partition's sums of the products of each numeric pair's centred ranks (a chunk of rows at a time)."""
    from ..pd.rows import chunk_bounds

    todo, tables = payload
    out = {}
    for pair, (ka, kb) in todo:
        (va, ra, n), (vb, rb, _) = tables[ka], tables[kb]
        a, b = np.asarray(cols[ka[0]], dtype=float), np.asarray(cols[kb[0]], dtype=float)
        if ka[1] is not None:
            ok = ~np.isnan(a) & ~np.isnan(b)
            a, b = a[ok], b[ok]
        sums = np.zeros(3)
        for lo, hi in chunk_bounds(a.size):  # the centred ranks: (twice the rank - (n + 1)) / 2, exact
            x = (ra[np.searchsorted(va, a[lo:hi])] - (n + 1)) * 0.5
            y = (rb[np.searchsorted(vb, b[lo:hi])] - (n + 1)) * 0.5
            sums += (x @ y, x @ x, y @ y)
        out[pair] = sums
    return out


def _spearman_result(a, b, sums) -> tuple[float, float]:
    """Spearman's |rho| and the two-sided t test on n - 2 degrees of freedom (``scipy.stats.spearmanr``'s)."""
    from scipy import stats

    n = a[2]
    if n < 3:
        return float("nan"), float("nan")
    if a[0].size < 2 or b[0].size < 2:
        return 0.0, 1.0
    rs = float(np.clip(sums[0] / np.sqrt(sums[1]) / np.sqrt(sums[2]), -1.0, 1.0))
    dof = n - 2
    with np.errstate(divide="ignore"):
        t = rs * np.sqrt(max(dof / ((rs + 1.0) * (1.0 - rs)), 0.0))
    p = float(2.0 * stats.t.sf(abs(t), dof))
    return abs(rs), (p if np.isfinite(p) else 1.0)


def _sorted_levels(levels: list) -> list:
    """The levels in the order ``numpy.unique`` (and so ``scipy.stats.contingency.crosstab``) sorts them."""
    codes, _ = pd.factorize(pd.Series(levels, dtype=object), sort=True)
    out = [None] * len(levels)
    for level, code in zip(levels, codes):
        out[code] = level
    return out


def _table_result(cells: dict) -> tuple[float, float]:
    """Cramer's V and Pearson's chi-squared test of a merged contingency table (``{(level a, level b): count}``)."""
    from scipy import stats
    from scipy.stats.contingency import association as _assoc

    if sum(cells.values()) < 3:
        return float("nan"), float("nan")
    rows = _sorted_levels(list(dict.fromkeys(a for a, _ in cells)))
    cols = _sorted_levels(list(dict.fromkeys(b for _, b in cells)))
    where_a, where_b = {v: i for i, v in enumerate(rows)}, {v: j for j, v in enumerate(cols)}
    table = np.zeros((len(rows), len(cols)), dtype=np.int64)
    for (a, b), count in cells.items():
        table[where_a[a], where_b[b]] += count
    if min(table.shape) < 2:
        return 0.0, 1.0
    value = float(_assoc(table, method="cramer"))
    if not np.isfinite(value):
        return value, float("nan")
    p = float(stats.chi2_contingency(table, correction=False).pvalue)
    return value, (p if np.isfinite(p) else 1.0)


def _groups_result(levels: dict) -> tuple[float, float]:
    """The correlation ratio and the one-way ANOVA F test (``scipy.stats.f_oneway``'s, its special cases
    included) from the merged per-level moments."""
    from scipy import stats

    m = np.array(list(levels.values())).reshape(-1, 5)
    m = m[m[:, 0] > 0]
    n = float(m[:, 0].sum())
    if n < 3:
        return float("nan"), float("nan")
    mean = float((m[:, 0] * m[:, 1]).sum() / n)
    between = float((m[:, 0] * (m[:, 1] - mean) ** 2).sum())
    within = float(m[:, 2].sum())
    total = between + within
    constant = m[:, 3].min() == m[:, 4].max()
    value = 0.0 if constant or total <= 0 else float(np.sqrt(between / total))
    k = m.shape[0]
    if k < 2 or constant:
        return value, 1.0
    if (m[:, 3] == m[:, 4]).all():  # every level constant, the levels not all equal: F is infinite
        return value, 0.0
    with np.errstate(all="ignore"):
        p = float(stats.f.sf((between / (k - 1)) / (within / (n - k)), k - 1, n - k))
    return value, (p if np.isfinite(p) else 1.0)

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
many pairs at once: numeric pairs without missing values share one
rank correlation matrix of all their columns (the ranks and t test of ``scipy.stats.spearmanr``, one column's
ranks at a time, kept as whole numbers in 4 bytes a row, so the same values to rounding), and every categorical
column is coded once (integer codes in the sorted order of its values) so that each pair's contingency table and
groups are counted from integers, not rebuilt from the column's objects pair by pair (the same tables and groups,
so the same values exactly).
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


def _coded(values) -> np.ndarray:
    """A categorical column's integer codes in the sorted order of its values (as :func:`numpy.unique` sorts
    them, the order of ``scipy.stats.contingency.crosstab``'s table); -1 for a missing value."""
    codes, _ = pd.factorize(pd.Series(values, dtype=object), sort=True)
    return np.asarray(codes, dtype=np.int32)  # 4 bytes a row, kept for every pair of the column


def _coded_test(ca: np.ndarray, cb: np.ndarray | None, b) -> tuple[float, float]:
    """:func:`association_test` of a pair with a categorical side, given by its :func:`_coded` codes ``ca``;
    the other side by its codes ``cb`` when categorical, else (``cb`` None) by its values ``b``.  The same
    contingency table (cells in the same order) and the same groups in the same order as
    :func:`association_test` builds from the values, counted from the codes."""
    from scipy import stats
    from scipy.stats.contingency import association as _assoc

    if cb is not None:  # categorical x categorical: the crosstab of the rows with both values
        ok = (ca >= 0) & (cb >= 0)
        if int(ok.sum()) < 3:
            return float("nan"), float("nan")
        ka, kb = int(ca.max()) + 1, int(cb.max()) + 1
        table = np.bincount(ca[ok].astype(np.int64) * kb + cb[ok], minlength=ka * kb).reshape(ka, kb)
        table = table[table.sum(axis=1) > 0][:, table.sum(axis=0) > 0]  # the values present, as crosstab keeps
        if min(table.shape) < 2:
            return 0.0, 1.0
        value = float(_assoc(table, method="cramer"))
        if not np.isfinite(value):
            return value, float("nan")
        p = float(stats.chi2_contingency(table, correction=False).pvalue)
        return value, (p if np.isfinite(p) else 1.0)
    nums = np.asarray(b, dtype=float)  # categorical x numeric: the correlation ratio and the ANOVA F test
    ok = (ca >= 0) & ~np.isnan(nums)
    if int(ok.sum()) < 3:
        return float("nan"), float("nan")
    codes, _ = pd.factorize(ca[ok])  # in order of first appearance, as correlation_ratio codes the values
    nums = nums[ok]
    mean = nums.mean()
    total = np.sum((nums - mean) ** 2)
    if total <= 0:
        value = 0.0
    else:
        counts = np.bincount(codes)
        means = np.bincount(codes, weights=nums) / np.maximum(counts, 1)
        value = float(np.sqrt(np.sum(counts * (means - mean) ** 2) / total))
    if not np.isfinite(value):
        return value, float("nan")
    # each level's values in row order (a stable sort by level: one pass, not one per level)
    order = np.argsort(codes.astype(np.int16) if codes.max() < 2 ** 15 else codes, kind="stable")
    groups = np.split(nums[order], np.cumsum(np.bincount(codes))[:-1])
    groups = [g for g in groups if g.size > 0]
    if len(groups) < 2 or np.all([np.ptp(g) == 0 for g in groups]) and np.unique(nums).size < 2:
        return value, 1.0
    with np.errstate(all="ignore"):
        p = float(stats.f_oneway(*groups).pvalue)
    return value, (p if np.isfinite(p) else 1.0)


def association_tests(columns, kinds: dict, pairs) -> dict:
    """``{(a, b): (association, p-value)}`` for every pair, as :func:`association_test` gives one by one.

    Parameters
    ----------
    columns : mapping
        ``{feature name: column values}``, or any object whose ``columns[name]`` reads one column (each column is
        read when it is needed and not kept: what is kept is its ranks or integer codes).
    kinds : dict
        ``{feature name: "numeric" | "categorical"}``.
    pairs : iterable of (name, name)
    """
    pairs = [tuple(p) for p in pairs]
    names = list(dict.fromkeys(f for p in pairs for f in p))
    # numeric columns with no missing value and at least two values: one rank correlation matrix
    ranks, batch = [], []
    for name in names:
        if kinds[name] != "numeric":
            continue
        v = np.asarray(columns[name], dtype=float)
        if v.size >= 3 and not np.isnan(v).any() and (v != v[0]).any():  # two values at least, without a sorted copy
            ranks.append(_doubled_ranks(v))
            batch.append(name)
        del v
    where = {name: i for i, name in enumerate(batch)}
    matrix = None
    if sum(1 for a, b in pairs if a in where and b in where) > 1 and len(batch) > 2:
        matrix = _spearman_matrix(ranks)
    del ranks
    coded = {name: _coded(columns[name]) for name in names if kinds[name] == "categorical"}
    out = {}
    for a, b in pairs:
        if matrix is not None and a in where and b in where:
            value, p = float(matrix[0][where[a], where[b]]), float(matrix[1][where[a], where[b]])
            out[(a, b)] = (value, p if np.isfinite(p) else 1.0)
        elif a in coded:
            out[(a, b)] = _coded_test(coded[a], coded.get(b), None if b in coded else columns[b])
        elif b in coded:  # numeric x categorical: the categorical side first, as association_test takes it
            out[(a, b)] = _coded_test(coded[b], None, columns[a])
        else:
            out[(a, b)] = association_test(columns[a], kinds[a], columns[b], kinds[b])
    return out


def _doubled_ranks(v: np.ndarray) -> np.ndarray:
    """Twice the column's average ranks (ties share their mean rank, as ``scipy.stats.spearmanr`` ranks): whole
    numbers, kept in 4 bytes a row (exact below 2**31 rows) rather than 8 for every numeric column at once."""
    from scipy.stats import rankdata

    r = rankdata(v)
    np.multiply(r, 2.0, out=r)
    return r.astype(np.uint32)


def _spearman_matrix(ranks: list) -> tuple[np.ndarray, np.ndarray]:
    """``(|rho|, p-value)`` matrices of Spearman's test of every pair of columns from their doubled ranks
    (:func:`_doubled_ranks`): what ``scipy.stats.spearmanr`` of the stacked columns gives (the correlation of the
    ranks, clipped to [-1, 1], and the two-sided t test on n - 2 degrees of freedom), without stacking the columns'
    ranks.  The ranks' mean is ``(n + 1) / 2`` whatever the ties; their cross-products about it are summed a chunk
    of rows at a time (:func:`autopdp.pd.rows.chunk_bounds`)."""
    from scipy import stats

    from ..pd.rows import chunk_bounds

    n = ranks[0].size
    c = np.zeros((len(ranks), len(ranks)))
    for a, b in chunk_bounds(n):
        x = np.stack([r[a:b] for r in ranks]).astype(float)
        x -= float(n + 1)
        x *= 0.5  # the centred ranks of these rows
        c += x @ x.T
    sd = np.sqrt(np.diag(c))
    rs = np.clip(c / sd[:, None] / sd[None, :], -1.0, 1.0)
    dof = n - 2
    with np.errstate(divide="ignore"):
        t = rs * np.sqrt((dof / ((rs + 1.0) * (1.0 - rs))).clip(0))
    return np.abs(rs), 2.0 * stats.t.sf(np.abs(t), dof)

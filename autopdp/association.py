"""Association between two features in the data (the 'correlation' 2D criterion).

* numeric x numeric: absolute Spearman rank correlation;
* numeric x categorical: the correlation ratio eta = sqrt(between-level variance / total variance);
* categorical x categorical: Cramer's V = sqrt(chi2 / (n (min(r, c) - 1))).

All three lie in [0, 1]; 0 means no association.  Rows with a missing value in
either feature are left out.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["association", "spearman", "correlation_ratio", "cramers_v"]


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

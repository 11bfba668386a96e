"""The materiality threshold's own sampling error, as its users read it (issue 53; issue 54: no row-long array).

The threshold is ``materiality x sd`` of the rows' predictions; each row's share of the sd's linearised relative
error is ``r_i = c ((p_i - mean)^2 - var) / (2 n var)`` (:func:`autopdp.scores.scoring.threshold_spread`, ``c``
scaling ``sum r_i^2`` to its one-sided 95% upper limit).  Its users need ``sum r_i^2``, the row count and ``r`` at
the PD's ICE rows, so :class:`ThresholdSpread` keeps those few numbers and computes ``r`` at the rows asked for
from their predictions, instead of holding 8 bytes a row for the rest of the audit.  Its sums are taken over row
chunks (:func:`autopdp.pd.rows.chunk_bounds`): the same numbers as the whole array's, up to the order of the sums.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..pd.kept import as_kept, kept_here, map_kept
from ..pd.rows import chunk_bounds

__all__ = ["ThresholdSpread", "spread_summary", "kept_spread_summary", "kept_spread", "column_sd", "THRESHOLD_VARIANCE_Z"]

#: the one-sided normal quantile at which the threshold's variance is taken (its 95% upper confidence limit)
THRESHOLD_VARIANCE_Z = 1.645


@dataclass(frozen=True)
class ThresholdSpread:
    """Every row's share of the threshold's relative error, summarised (see the module docs): ``size`` rows,
    ``sum_sq`` their squares' sum; :meth:`at` the shares of some rows."""

    size: int
    sum_sq: float
    mean: float
    var: float
    scale: float
    #: (size,): the rows' predictions, indexed by row positions: a view of an array here (nothing is copied), or a
    #: column of values kept on a cluster's row partitions (:class:`autopdp.pd.kept.KeptColumn`: brought on demand)
    predictions: Any = field(repr=False)

    def at(self, rows=None) -> np.ndarray:
        """The shares of the rows ``rows`` (positions; None: every row)."""
        if rows is None:
            p = self.predictions if isinstance(self.predictions, np.ndarray) else self.predictions[np.arange(self.size)]
        else:
            p = self.predictions[np.asarray(rows, dtype=np.intp)]
        return self.at_values(p)

    def at_values(self, p) -> np.ndarray:
        """The shares of rows whose predictions are ``p``."""
        return _share(np.asarray(p, dtype=float), self.mean, self.var, self.scale, self.size)


def _share(p, mean, var, scale, size):
    return scale * ((p - mean) ** 2 - var) / (2.0 * size * var)


def _terms(kind: str, x: np.ndarray, params: tuple) -> np.ndarray:
    if kind == "mean":
        return x
    if kind == "var":
        return (x - params[0]) ** 2
    share_sq = _share(x, *params[:4]) ** 2
    return share_sq if kind == "share_sq" else (share_sq - params[4]) ** 2


def _pass(values, payload) -> tuple:
    """One row partition's ``(count, sum)`` over column ``t``'s finite values of ``kind``'s terms, chunk by chunk
    (:func:`autopdp.pd.rows.chunk_bounds`: the per-row temporaries bounded by a chunk)."""
    t, kind, params = payload
    col = values[:, t]
    count, total = 0, 0.0
    for a, b in chunk_bounds(col.shape[0]):
        x = np.asarray(col[a:b], dtype=float)
        finite = np.isfinite(x)
        if not finite.all():
            x = x[finite]
        count += x.size
        total += float(np.sum(_terms(kind, x, params)))
    return count, total


def _summed(kept, t: int, kind: str, params=()) -> tuple[int, float]:
    """``(count, sum)`` of ``kind``'s terms over column ``t``'s finite values, merged over the partitions in order."""
    parts = map_kept(_pass, (int(t), kind, params), kept)
    return sum(c for c, _ in parts), float(sum(v for _, v in parts))


def _moments(kept, t: int) -> tuple[int, float, float, bool]:
    """``(n, mean, variance, every value finite)`` of column ``t``'s finite values (NaN moments for none)."""
    n, first = _summed(kept, t, "mean")
    if n == 0:
        return 0, float("nan"), float("nan"), n == kept.n_rows
    mean = first / n
    return n, mean, _summed(kept, t, "var", (mean,))[1] / n, n == kept.n_rows


def column_sd(values) -> np.ndarray:
    """Each column's population standard deviation of ``values`` (n, k; or :class:`~autopdp.pd.kept.KeptValues`,
    summed where they are), ``values.std(axis=0)`` to rounding, in passes over row chunks (no row-long
    temporary): NaN for a column with a value that is not finite, or no rows."""
    kept = as_kept(values)
    out = np.full(kept.width, np.nan)
    for t in range(kept.width):
        n, _, var, every = _moments(kept, t)
        if every and n > 0:
            out[t] = np.sqrt(var)
    return out


def kept_spread(kept, t: int, values=None) -> tuple[float, ThresholdSpread | None, bool]:
    """``(sd, spread, every value finite)`` of column ``t`` of ``kept`` (:class:`autopdp.pd.kept.KeptValues`, every
    row's values here or on a cluster's row partitions), over its finite values: their standard deviation (NaN for
    fewer than 2), and :class:`ThresholdSpread` (None unless the sd is positive).  Each sum is a pass over the
    partitions (:func:`autopdp.pd.kept.map_kept`), merged in row order: the numbers of one pass over the whole
    column up to the order of the sums.  ``values``: the column as the spread reads it (default: read from
    ``kept``)."""

    key = ("kept_spread", int(t))
    if values is None and key in kept.memo:  # the passes over a cluster's partitions once per column
        return kept.memo[key]
    out = _kept_spread(kept, t, values)
    if values is None:
        kept.memo[key] = out
    return out


def _kept_spread(kept, t: int, values) -> tuple[float, ThresholdSpread | None, bool]:
    n, mean, var, every = _moments(kept, t)
    if n < 2:
        return float("nan"), None, every
    sd = float(np.sqrt(var))
    if not (np.isfinite(var) and var > 0):
        return sd, None, every
    total = _summed(kept, t, "share_sq", (mean, var, 1.0, n))[1]
    spread_q = _summed(kept, t, "share_q", (mean, var, 1.0, n, total / n))[1]
    upper = total + THRESHOLD_VARIANCE_Z * np.sqrt(spread_q)
    scale = float(np.sqrt(upper / total)) if total > 0 else 1.0
    return sd, ThresholdSpread(size=n, sum_sq=float(upper) if total > 0 else 0.0, mean=mean, var=var, scale=scale,
                               predictions=kept.column(t) if values is None else values), every


def kept_spread_summary(kept, t: int) -> ThresholdSpread | None:
    """:func:`spread_summary` of column ``t`` of ``kept`` (:class:`~autopdp.pd.kept.KeptValues`), its sums made
    where the values are (a cluster's partitions)."""
    if kept.here is not None:
        return spread_summary(kept.here[:, t])
    _, spread, every = kept_spread(kept, t)
    return spread if every else None


def spread_summary(predictions) -> ThresholdSpread | None:
    """:class:`ThresholdSpread` of one target's predictions ``(n,)``; None when there are fewer than 2 rows, a
    prediction is not finite or their sd is 0 (as :func:`autopdp.scores.scoring.threshold_spread`)."""
    if predictions is None:
        return None
    p = np.asarray(predictions)
    p = p if p.ndim == 1 else p.ravel()  # a column of the (n, targets) predictions stays a view
    _, spread, every = kept_spread(kept_here(p), 0, values=p)
    return spread if every else None

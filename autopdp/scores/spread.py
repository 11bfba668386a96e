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

import numpy as np

from ..pd.rows import chunked_sum

__all__ = ["ThresholdSpread", "spread_summary", "THRESHOLD_VARIANCE_Z"]

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
    predictions: np.ndarray = field(repr=False)  # (size,): the rows' predictions (a view; nothing is copied)

    def at(self, rows=None) -> np.ndarray:
        """The shares of the rows ``rows`` (positions; None: every row)."""
        return self.at_values(self.predictions if rows is None else self.predictions[np.asarray(rows, dtype=np.intp)])

    def at_values(self, p) -> np.ndarray:
        """The shares of rows whose predictions are ``p``."""
        p = np.asarray(p, dtype=float)
        return self.scale * ((p - self.mean) ** 2 - self.var) / (2.0 * self.size * self.var)


def _chunked_sum(p: np.ndarray, fn) -> float:
    """``sum(fn(values))`` over the chunks of the predictions ``p`` (:func:`autopdp.pd.rows.chunked_sum`)."""
    return chunked_sum(p.shape[0], lambda a, b: np.sum(fn(np.asarray(p[a:b], dtype=float))))


def spread_summary(predictions) -> ThresholdSpread | None:
    """:class:`ThresholdSpread` of one target's predictions ``(n,)``; None when there are fewer than 2 rows, a
    prediction is not finite or their sd is 0 (as :func:`autopdp.scores.scoring.threshold_spread`)."""
    if predictions is None:
        return None
    p = np.asarray(predictions)
    p = p if p.ndim == 1 else p.ravel()  # a column of the (n, targets) predictions stays a view
    n = p.shape[0]
    if n < 2 or not np.isfinite(_chunked_sum(p, lambda x: x * 0.0)):  # any NaN or infinity makes the sum NaN
        return None
    mean = _chunked_sum(p, lambda x: x) / n
    var = _chunked_sum(p, lambda x: (x - mean) ** 2) / n
    if not var > 0:
        return None
    base = ThresholdSpread(size=n, sum_sq=0.0, mean=mean, var=var, scale=1.0, predictions=p)
    total = _chunked_sum(p, lambda x: base.at_values(x) ** 2)
    q_mean = total / n
    spread_q = _chunked_sum(p, lambda x: (base.at_values(x) ** 2 - q_mean) ** 2)
    upper = total + THRESHOLD_VARIANCE_Z * np.sqrt(spread_q)
    scale = float(np.sqrt(upper / total)) if total > 0 else 1.0
    return ThresholdSpread(size=n, sum_sq=float(upper) if total > 0 else 0.0, mean=mean, var=var, scale=scale,
                           predictions=p)

"""Which rows keep their ICE curves, and what each kept row stands for.

A sample of ``k`` rows keeps every row a sample with probability proportional to weight would take with
certainty (:func:`certainty_rows`) and a uniform sample of the rest; each kept row's probability of being
kept (:func:`kept_inclusion`) makes the kept curves stand for all rows (Horvitz-Thompson: weight over
probability, :func:`ice_row_weights`).  Without sample weights this is the plain uniform sample.
"""

from __future__ import annotations

import numpy as np

__all__ = ["certainty_rows", "kept_inclusion", "ice_design", "ice_row_weights", "ht_weights"]


def certainty_rows(weights, k: int, total: float | None = None) -> np.ndarray:
    """The rows an ICE sample of ``k`` rows takes with certainty: those whose weight is at least the mean weight
    per remaining draw (``w_i >= W_rest / k_rest``, repeated until no row qualifies), i.e. every row that a
    sample with probability proportional to weight would take with probability 1.  Empty without weights (or
    with equal weights).  The other kept rows are a uniform sample of the rest;
    :func:`kept_inclusion` gives each kept row's probability of being kept.

    ``total``: the total weight of all rows when ``weights`` are only some of them (the kept rows: a row taken
    with certainty is always among them, so the rule needs no other row's weight)."""
    w = None if weights is None else np.asarray(weights, dtype=float)
    if w is None or w.size == 0 or (total is None and k >= w.size):
        return np.zeros(0 if w is None else w.size, dtype=bool)
    total = float(w.sum()) if total is None else float(total)
    sure = np.zeros(w.size, dtype=bool)
    while True:
        k_rest = k - int(sure.sum())
        rest_total = total - float(w[sure].sum())
        if k_rest <= 0 or rest_total <= 0:
            break
        new = ~sure & (w * k_rest >= rest_total)
        if not new.any():
            break
        sure |= new
    return sure


def _weighted_sample(n: int, k: int, weights, rng) -> np.ndarray:
    """``k`` rows of ``n``: every row of :func:`certainty_rows` and a uniform sample of the rest (sorted)."""
    sure = certainty_rows(weights, k) if weights is not None else np.zeros(n, dtype=bool)
    if not sure.any():
        return np.sort(rng.choice(n, size=k, replace=False))
    rest = np.flatnonzero(~sure)
    k_rest = max(k - int(sure.sum()), 0)
    picked = rng.choice(rest, size=min(k_rest, rest.size), replace=False) if k_rest else np.array([], dtype=int)
    return np.sort(np.concatenate([np.flatnonzero(sure), picked]).astype(np.intp))


def kept_inclusion(w_kept: np.ndarray, total: float, n: int) -> np.ndarray:
    """The kept ICE rows' probabilities of being kept, from their own weights, the total weight of all ``n`` rows
    and how many were kept (:func:`autopdp.pd.partial_dependence.certainty_rows`: a row taken with certainty is
    always among the kept ones, so the rows not kept are not needed)."""
    w = np.asarray(w_kept, dtype=float)
    k = w.size
    if k >= n:
        return np.ones(k)
    sure = certainty_rows(w, k, total)
    pi = np.ones(k)
    rest = n - int(sure.sum())
    pi[~sure] = max(k - int(sure.sum()), 0) / rest if rest else 0.0
    return pi


def ice_design(result, sample_weight):
    """``(w, pi, total)`` of the rows whose ICE curves ``result`` kept: their sample weights (ones when
    unweighted), their probabilities of being kept (:func:`kept_inclusion`) and the total weight of the rows
    the PD averages over; ``None`` when the weights do not match the rows.  ``sample_weight`` may be an
    audit's weights read back from its ICE sidecar (:class:`autopdp.io.ice.SampledWeights`: NaN for rows
    without curves, with the total weight of all rows)."""
    m = np.asarray(result.individual).shape[1]
    rows = result.ice_rows
    if sample_weight is None:
        n = int(max(result.n_rows, m))
        return np.ones(m), np.full(m, 1.0 if rows is None else m / n), float(n)
    sw = np.asarray(sample_weight, dtype=float)
    total = getattr(sample_weight, "total", None)
    if total is None:
        if not np.isfinite(sw).all():
            return None
        total = float(sw.sum())
    if rows is None:
        return (sw, np.ones(m), float(total)) if sw.shape[0] == m and np.isfinite(sw).all() else None
    rows = np.asarray(rows)
    if rows.max(initial=-1) >= sw.shape[0]:
        return None
    w = sw[rows]
    if not (np.isfinite(w).all() and np.isfinite(total) and total > 0):
        return None
    return w, kept_inclusion(w, total, sw.shape[0]), float(total)


def ice_row_weights(result, sample_weight) -> np.ndarray | None:
    """The weights that make the kept ICE rows stand for all rows (None: unweighted): each row's sample weight
    over its probability of being kept (Horvitz-Thompson), so a heavy row kept with certainty counts once and a
    sampled light row for the rows it stands for."""
    if sample_weight is None or result.individual is None:
        return None
    design = ice_design(result, sample_weight)
    return None if design is None else ht_weights(design)


def ht_weights(design) -> np.ndarray:
    """The kept rows' Horvitz-Thompson weights ``w / pi`` (what each stands for) from :func:`ice_design`'s
    ``(w, pi, total)``; 0 for a row with no chance of being kept."""
    w, pi, _ = design
    return np.where(pi > 0, np.asarray(w, dtype=float) / np.where(pi > 0, pi, 1.0), 0.0)

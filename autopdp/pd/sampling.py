"""Which rows keep their ICE curves, and what each kept row stands for.

A sample of ``k`` rows keeps every row a sample with probability proportional to weight would take with
certainty (:func:`certainty_rows`) and a uniform sample of the rest; each kept row's probability of being
kept (:func:`kept_inclusion`) makes the kept curves stand for all rows (Horvitz-Thompson: weight over
probability, :func:`ice_row_weights`).  Without sample weights this is the plain uniform sample.
"""

from __future__ import annotations

import numpy as np

__all__ = ["certainty_rows", "kept_inclusion", "ice_design", "ice_row_weights", "ht_weights", "exact_sum",
           "WeightFacts", "weight_facts", "weight_part", "merge_weight_facts"]


def _exact_parts(x: np.ndarray) -> dict:
    """``{exponent: (sum of high halves, sum of low halves)}`` of the finite floats ``x``: each value is
    ``m * 2**(e - 53)`` with a 53-bit integer ``m`` (:func:`numpy.frexp`), split in two 27-bit halves whose sums
    over up to 2**36 values fit in int64, so the sums add up across row partitions without any rounding."""
    m, e = np.frexp(np.asarray(x, dtype=float).ravel())
    mi = (m * 2.0 ** 53).astype(np.int64)  # exact: |m| < 1 has 53 significant bits
    hi, lo = mi >> 27, mi & ((1 << 27) - 1)
    out = {}
    for exponent in np.unique(e):
        at = e == exponent
        out[int(exponent)] = (int(hi[at].sum()), int(lo[at].sum()))
    return out


def _merge_exact(parts) -> dict:
    out: dict = {}
    for part in parts:
        for e, (h, low) in part.items():
            a, b = out.get(e, (0, 0))
            out[e] = (a + h, b + low)
    return out


def _exact_float(parts: dict) -> float:
    """The correctly rounded float of the exact sum :func:`_exact_parts` describes."""
    from fractions import Fraction

    total = Fraction(0)
    for e, (h, low) in parts.items():
        total += Fraction((h << 27) + low) * (Fraction(2) ** (e - 53))
    return float(total)


def exact_sum(x) -> float:
    """The sum of the finite floats ``x``, correctly rounded: the same whatever the order or the partitions in
    which they are added (a row partition's sums merge exactly, :func:`weight_part`)."""
    return _exact_float(_exact_parts(x))


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
    """``k`` rows of ``n``: every row of :func:`certainty_rows` and a uniform sample of the rest (sorted).
    ``weights``: every row's weights, their :class:`WeightFacts` (the same rows), or None (uniform)."""
    if weights is None:
        return np.sort(rng.choice(n, size=k, replace=False))
    facts = weights if isinstance(weights, WeightFacts) else weight_facts(weights, k)
    sure = np.sort(facts.top_rows[:k][certainty_rows(facts.top_w[:k], k, facts.total)])
    if not sure.size:
        return np.sort(rng.choice(n, size=k, replace=False))
    k_rest = max(k - int(sure.size), 0)
    at = rng.choice(n - sure.size, size=min(k_rest, n - sure.size), replace=False) if k_rest else np.array([], dtype=int)
    # the ``at``-th row that is not sure: skip the sure rows before it (``sure - arange``: rows not sure before each)
    picked = np.asarray(at, dtype=np.int64) + np.searchsorted(sure - np.arange(sure.size), at, side="right")
    return np.sort(np.concatenate([sure, picked]).astype(np.intp))


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


class WeightFacts:
    """What a weighted ICE or spread sample and the PD's standard error need of every row's sample weight, without
    the weights: ``n`` rows, their ``total`` and ``total_sq`` (sums of w and w squared, correctly rounded:
    :func:`exact_sum`), and the ``k`` heaviest rows (``top_rows``, ``top_w``; ties to the earlier row), which hold
    every row a sample of at most ``k`` takes with certainty (:func:`certainty_rows`).  Made from the weights here
    (:func:`weight_facts`) or merged from row partitions (:func:`weight_part`, :func:`merge_weight_facts`): the same
    facts either way."""

    def __init__(self, n: int, total: float, total_sq: float, top_rows: np.ndarray, top_w: np.ndarray):
        self.n, self.total, self.total_sq = int(n), float(total), float(total_sq)
        self.top_rows, self.top_w = np.asarray(top_rows, dtype=np.int64), np.asarray(top_w, dtype=float)


def weight_part(w, start: int, k: int) -> tuple:
    """One row partition's share of :class:`WeightFacts`: its rows begin at ``start``."""
    w = np.asarray(w, dtype=float).ravel()
    order = np.lexsort((np.arange(w.size), -w))[: max(0, int(k))]
    return w.size, _exact_parts(w), _exact_parts(w * w), order.astype(np.int64) + int(start), w[order]


def merge_weight_facts(parts, k: int) -> WeightFacts:
    """:class:`WeightFacts` of all the rows from their partitions' :func:`weight_part` (any partitioning)."""
    parts = list(parts)
    rows = np.concatenate([p[3] for p in parts]) if parts else np.zeros(0, dtype=np.int64)
    w = np.concatenate([p[4] for p in parts]) if parts else np.zeros(0)
    order = np.lexsort((rows, -w))[: max(0, int(k))]
    return WeightFacts(sum(p[0] for p in parts), _exact_float(_merge_exact(p[1] for p in parts)),
                       _exact_float(_merge_exact(p[2] for p in parts)), rows[order], w[order])


def weight_facts(w, k: int) -> WeightFacts:
    """:class:`WeightFacts` of the weights ``w`` held here (one partition)."""
    return merge_weight_facts([weight_part(w, 0, k)], k)

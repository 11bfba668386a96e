"""Weighted samples that do not depend on how the rows are partitioned (issue 54): the weights' sums are
correctly rounded (the same in any order), and the rows a weighted ICE sample takes with certainty are found
among each partition's heaviest rows, so the sample drawn from merged partitions is the one drawn from every
weight here, and both equal the rule of the sampling module's docs (checked against the whole-array rule)."""

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autopdp.pd import sampling as S


def _whole_array_rule(n, k, w, rng):
    """The documented rule on every weight at once: the certainty rows, and a uniform sample of the rest."""
    sure = S.certainty_rows(w, k, math.fsum(w))
    if not sure.any():
        return np.sort(rng.choice(n, size=k, replace=False))
    rest = np.flatnonzero(~sure)
    k_rest = max(k - int(sure.sum()), 0)
    picked = rng.choice(rest, size=min(k_rest, rest.size), replace=False) if k_rest else np.array([], dtype=int)
    return np.sort(np.concatenate([np.flatnonzero(sure), picked]))


def _weights(kind, n, rng):
    if kind == "heavy":
        return rng.lognormal(0, 3, n)
    if kind == "few heavy":
        return np.where(rng.random(n) < 0.05, 200.0, 1.0)
    if kind == "zeros":
        return np.where(rng.random(n) < 0.5, 0.0, rng.uniform(0, 2, n))
    if kind == "ties":
        return rng.integers(1, 4, n).astype(float)
    return np.full(n, 0.1)  # equal, not exactly summable


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["heavy", "few heavy", "zeros", "ties", "equal"]), st.integers(2, 500), st.integers(0, 10**6),
       st.integers(1, 12), st.data())
def test_a_weighted_sample_is_the_same_from_any_partitioning(kind, n, seed, parts, draw):
    rng = np.random.default_rng(seed)
    w = _weights(kind, n, rng)
    if w.sum() <= 0:
        w[0] = 1.0
    k = draw.draw(st.integers(1, n - 1))
    cuts = np.sort(rng.choice(np.arange(1, n), size=min(parts - 1, n - 1), replace=False))
    pieces = np.split(np.arange(n), cuts)
    facts = S.merge_weight_facts([S.weight_part(w[p], int(p[0]), k) for p in pieces], k)
    here = S.weight_facts(w, k)
    assert facts.total == here.total == math.fsum(w) and facts.total_sq == here.total_sq == math.fsum(w * w)
    np.testing.assert_array_equal(facts.top_rows, here.top_rows)
    merged = S._weighted_sample(n, k, facts, np.random.default_rng(seed))
    np.testing.assert_array_equal(merged, S._weighted_sample(n, k, w, np.random.default_rng(seed)))
    np.testing.assert_array_equal(merged, _whole_array_rule(n, k, w, np.random.default_rng(seed)))
    assert merged.size == k and np.unique(merged).size == k


def test_exact_sums_at_the_edges_of_floating_point():
    assert S.exact_sum(np.array([1e308, 1e308, -1e308])) == 1e308  # math.fsum overflows on the way
    values = [np.array([1.0, 1e-300, -1.0]), np.array([5e-324] * 7),
              np.random.default_rng(0).normal(size=10_000) * 10.0 ** np.random.default_rng(1).integers(-200, 200, 10_000)]
    for x in values:
        assert S.exact_sum(x) == math.fsum(x)
        halves = S._merge_exact([S._exact_parts(x[: x.size // 2]), S._exact_parts(x[x.size // 2:])])
        assert S._exact_float(halves) == math.fsum(x)

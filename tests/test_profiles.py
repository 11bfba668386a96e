"""Grids from row partitions (issue 54, autopdp.pd.profiles): each partition sums up its rows, the order statistics
are found by narrowing value intervals, and the grid and missing count are those of numpy over every row, bit for
bit, at every partition count; the limits (bins per pass, the count at which values are collected) are shrunk here
so every path (narrowing, collecting, an atom read off its bin, ranges floating point cannot divide) runs on small
data.  The same on a Dask cluster's worker partitions: tests/test_rows.py."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autopdp.errors import InputError
from autopdp.pd import profiles as P
from autopdp.pd.data import as_frame
from autopdp.pd.grids import build_spec, discrete_limit
from autopdp.pd.rows import row_bounds


def splits(frame, parts: int, calls: list | None = None):
    """A mapper over ``parts`` contiguous row partitions of ``frame`` (recording each pass in ``calls``)."""
    bounds = row_bounds(frame.n_rows, parts)

    def mapper(fn, payload):
        if calls is not None:
            calls.append(fn.__name__)
        return [fn(frame.take_rows(np.arange(a, b)), payload) for a, b in bounds]
    return mapper


@pytest.fixture
def shrunk(monkeypatch):
    def set_limits(bins, collect_at):
        monkeypatch.setattr(P, "BINS", bins)
        monkeypatch.setattr(P, "COLLECT_AT", collect_at)
    return set_limits


def reference_grid(values, grid_resolution, percentiles, method, integer):
    """The grid rules of autopdp.pd.grids written directly with numpy on every row (the brute force)."""
    finite = values[np.isfinite(values)]
    uniq = np.unique(finite)
    if uniq.size <= discrete_limit(grid_resolution):
        grid = uniq
    else:
        lo, hi = np.quantile(finite, percentiles)
        if method == "quantile":
            grid = np.unique(np.quantile(finite, np.linspace(*percentiles, grid_resolution)))
            need = grid_resolution - grid.size
            rest = finite[~np.isin(finite, grid)]
            if need > 0 and rest.size:
                probs = np.linspace(*percentiles, need) if need > 1 else np.array([0.5])
                grid = np.unique(np.concatenate([grid, np.quantile(rest, probs, method="inverted_cdf")]))
        else:
            if lo == hi:
                lo, hi = uniq[0], uniq[-1]
            grid = np.linspace(lo, hi, grid_resolution)
    if integer:
        grid = np.unique(np.round(grid)).astype(np.int64)
    return grid


def column(kind: str, n: int, rng) -> np.ndarray:
    return {
        "normal": lambda: rng.normal(size=n),
        "ties": lambda: np.round(rng.normal(size=n), 1),
        "skewed": lambda: rng.lognormal(0, 3, size=n),
        "atom": lambda: np.where(rng.random(n) < 0.85, 0.0, rng.exponential(size=n)),
        "two atoms": lambda: np.where(rng.random(n) < 0.5, -1.0, np.where(rng.random(n) < 0.9, 7.0, rng.normal(size=n))),
        "missing": lambda: np.where(rng.random(n) < 0.3, np.nan, rng.normal(size=n)),
        "subnormal": lambda: rng.choice([0.0, 5e-324, 1e-323, 1.5e-323], size=n) * rng.integers(1, 3, size=n),
        "huge": lambda: rng.choice([-1.7e308, 1.7e308, 0.0, 1.0], size=n) * rng.uniform(0.5, 1.0, size=n),
    }[kind]()


def test_numpys_quantile_from_the_order_statistics_bit_for_bit():
    """numpy's linear and inverted-CDF quantiles from the sorted values' order statistics: the same floats for
    every size from 1 and every probability (0, 1, evenly spaced, random)."""
    rng = np.random.default_rng(0)
    for n in list(range(1, 70)) + [997, 10_000]:
        values = np.sort(rng.normal(size=n) * 10.0 ** rng.integers(-3, 4))
        q = np.concatenate([[0.0, 1.0, 0.5, 0.05, 0.95], np.linspace(0.05, 0.95, 20), rng.random(10)])
        for method in ("linear", "inverted_cdf"):
            ranks = P.order_indexes(n, q, method)
            assert ranks.min() >= 0 and ranks.max() < n
            got = P.quantile_from_order(n, q, method, lambda r: values[r] if r in set(ranks.tolist()) else np.nan)
            np.testing.assert_array_equal(got, np.quantile(values, q, method=method))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["normal", "ties", "skewed", "atom", "two atoms", "missing", "subnormal", "huge"]),
       st.integers(1, 300), st.integers(1, 12), st.integers(2, 6), st.integers(0, 9), st.booleans(),
       st.integers(0, 2**16))
def test_quantiles_over_partitions_equal_numpy_on_every_row(kind, n, parts, bins, collect_at, exclude, seed):
    """Every distribution, partition count and limit: the count in scope and the quantiles (both methods) equal
    numpy's over every row, with or without values left out."""
    P_bins, P_collect = P.BINS, P.COLLECT_AT
    P.BINS, P.COLLECT_AT = bins, collect_at
    try:
        rng = np.random.default_rng(seed)
        v = column(kind, n, rng)
        frame = as_frame(pd.DataFrame({"x": v}))
        mapper = splits(frame, parts)
        (profile,) = P.profiles(mapper, [0], [P.NUMBERS], 50)
        finite = v[np.isfinite(v)]
        left_out = tuple(np.unique(finite)[:2].tolist()) if exclude else ()
        scope = finite[~np.isin(finite, left_out)]
        q = np.concatenate([[0.0, 1.0], np.linspace(0.05, 0.95, 20), rng.random(3)])
        if finite.size == 0:
            assert profile.n_finite == 0
            return
        ((count, got),) = P.quantiles_of(mapper, [(0, left_out, profile.lo, profile.hi, profile.n_finite,
                                                   [(q, "linear"), (q, "inverted_cdf")])])
        assert count == scope.size
        if scope.size == 0:
            assert got is None
            return
        np.testing.assert_array_equal(got[0], np.quantile(scope, q))
        np.testing.assert_array_equal(got[1], np.quantile(scope, q, method="inverted_cdf"))
    finally:
        P.BINS, P.COLLECT_AT = P_bins, P_collect


def test_a_heavy_atom_is_read_off_its_bin_in_few_passes(shrunk):
    """A value held by most rows (a bin whose least and greatest values are equal) is the order statistic at once,
    not narrowed pass after pass down to floating point's resolution."""
    shrunk(256, 100)
    rng = np.random.default_rng(1)
    v = np.where(rng.random(200_000) < 0.9, 0.0, rng.exponential(size=200_000))
    frame = as_frame(pd.DataFrame({"x": v}))
    calls = []
    mapper = splits(frame, 3, calls)
    (profile,) = P.profiles(mapper, [0], [P.NUMBERS], 50)
    q = np.linspace(0.05, 0.95, 20)
    ((_, (got,)),) = P.quantiles_of(mapper, [(0, (), profile.lo, profile.hi, profile.n_finite, [(q, "linear")])])
    np.testing.assert_array_equal(got, np.quantile(v, q))
    assert calls.count("_interval_part") <= 4


@pytest.mark.parametrize("parts", [1, 2, 3, 7, 40])
@pytest.mark.parametrize("kind", ["normal", "ties", "skewed", "atom", "two atoms", "missing", "subnormal"])
def test_numeric_grids_and_missing_counts_equal_every_rows_at_every_partition_count(kind, parts, shrunk):
    shrunk(3, 4)
    rng = np.random.default_rng(len(kind) * 7 + parts)
    v = column(kind, 400, rng)
    X = pd.DataFrame({"x": v, "i": np.nan_to_num(np.round(v * 40).clip(-1e6, 1e6)).astype(np.int64)})
    frame = as_frame(X)
    for position, integer in ((0, False), (1, True)):
        values = X.iloc[:, position].to_numpy(dtype=float)
        for resolution, method in ((20, "quantile"), (10, "quantile"), (7, "uniform"), (2, "quantile")):
            spec = build_spec(frame, position, categorical=False, grid_resolution=resolution,
                              percentiles=(0.05, 0.95), grid_method=method, mapper=splits(frame, parts))
            expected = reference_grid(values, resolution, (0.05, 0.95), method, integer)
            np.testing.assert_array_equal(spec.grid, expected)
            assert spec.grid.dtype == expected.dtype
            assert spec.n_missing == int(np.isnan(values).sum())


@pytest.mark.parametrize("parts", [1, 2, 5, 60])
def test_categorical_levels_counts_and_cap_equal_every_rows(parts):
    """Levels in category order (an ordered Categorical) or sorted; booleans ordered; the cap keeps the most
    frequent levels, ties going to the level seen first over all rows, whatever the partitioning."""
    rng = np.random.default_rng(parts)
    n = 300
    words = rng.choice(["low", "mid", "high", None], size=n, p=[0.3, 0.3, 0.3, 0.1])
    X = pd.DataFrame({
        "ordered": pd.Categorical(words, categories=["low", "mid", "high", "unused"], ordered=True),
        "text": words.astype(object),
        "flag": pd.array(rng.random(n) < 0.4, dtype="boolean"),
        # 12 levels: 'k00'..'k03' 40 rows each, the rest tied at 10: a cap of 6 keeps the four and the two of the
        # tied eight seen first in the rows
        "many": rng.permutation(np.repeat([f"k{i:02d}" for i in range(12)], [40] * 4 + [10] * 8)[:n].tolist()
                                + ["k00"] * (n - 240))[:n],
    })
    frame = as_frame(X)
    spec = build_spec(frame, 0, categorical=True, grid_resolution=20, percentiles=(0.05, 0.95),
                      grid_method="quantile", mapper=splits(frame, parts))
    assert spec.grid.tolist() == ["low", "mid", "high"] and spec.ordered and spec.n_missing == int(pd.isna(words).sum())
    spec = build_spec(frame, 1, categorical=True, grid_resolution=20, percentiles=(0.05, 0.95),
                      grid_method="quantile", mapper=splits(frame, parts))
    assert spec.grid.tolist() == ["high", "low", "mid"] and not spec.ordered
    spec = build_spec(frame, 2, categorical=True, grid_resolution=20, percentiles=(0.05, 0.95),
                      grid_method="quantile", mapper=splits(frame, parts))
    assert spec.grid.tolist() == [False, True] and spec.ordered
    spec = build_spec(frame, 3, categorical=True, grid_resolution=20, percentiles=(0.05, 0.95),
                      grid_method="quantile", max_levels=6, mapper=splits(frame, parts))
    counts = X["many"].value_counts(sort=False)  # in order of first appearance
    first_seen = {level: k for k, level in enumerate(pd.unique(X["many"]))}
    top = sorted(counts.index, key=lambda level: (-counts[level], first_seen[level]))[:6]
    assert spec.grid.tolist() == sorted(top)
    assert f"has 12 levels; its grid keeps the 6 most frequent ({counts[top].sum() / n:.0%} of the rows)" in spec.note


def test_partitions_raise_what_one_pass_raises():
    """Infinite values, a column with no value, and text in a numeric column: the same one-line errors."""
    frame = as_frame(pd.DataFrame({"inf": [1.0, np.inf, 2.0, 3.0], "empty": [np.nan] * 4,
                                   "text": ["a", "b", "c", "d"]}))
    for position, message in ((0, "has infinite values"), (1, "has no non-missing values"),
                              (2, "is treated as numeric but holds non-numeric values")):
        with pytest.raises(InputError, match=message):
            build_spec(frame, position, categorical=False, grid_resolution=20, percentiles=(0.05, 0.95),
                       grid_method="quantile", mapper=splits(frame, 3))


@pytest.mark.parametrize("parts", [1, 2, 3, 9, 50])
def test_the_data_checks_profiles_equal_every_rows_at_every_partition_count(parts):
    """The data's checks read one profile pass (frame_profiles): each column's missing count and first missing
    row, infinite values, distinct integers and text levels, from partitions, equal what the whole frame says;
    and probe_rows / describe_missing / resolve_categorical give what they gave from every row."""
    from autopdp.pd.data import describe_missing, probe_rows
    from autopdp.pd.grids import resolve_categorical

    rng = np.random.default_rng(parts)
    n = 200
    X = pd.DataFrame({
        "num": np.where(rng.random(n) < 0.05, np.nan, rng.normal(size=n)),
        "late": np.r_[np.ones(n - 7), np.nan, np.ones(6)],  # first missing in the last rows
        "ints": pd.array(np.where(rng.random(n) < 0.1, None, rng.integers(0, 4, n)), dtype="Int64"),
        "cat": pd.Categorical(np.where(rng.random(n) < 0.1, None, rng.choice(["a", "b"], n))),
        "flag": rng.random(n) < 0.5,
        "text": np.where(rng.random(n) < 0.2, None, rng.choice(["x", "y", "z"], n)).astype(object),
        "inf": np.r_[rng.normal(size=n - 1), np.inf],
    })
    frame = as_frame(X)
    columns = P.frame_profiles(frame, mapper=splits(frame, parts), cap=5)
    for j, c in enumerate(columns):
        missing = X.iloc[:, j].isna().to_numpy()
        assert c.n_rows == n and c.n_missing == int(missing.sum())
        assert c.first_missing == (int(np.flatnonzero(missing)[0]) if missing.any() else -1)
    assert [type(c).__name__ for c in columns] == ["NumericProfile"] * 3 + ["LevelProfile"] * 3 + ["NumericProfile"]
    assert columns[6].n_inf == 1 and columns[0].n_inf == 0
    assert list(columns[5].counts) == list(pd.unique(X.text.dropna()))  # levels in order of first appearance
    assert columns[5].counts == X.text.value_counts().to_dict() and columns[3].counts is None
    rows = sorted({0, 1, 2, 3, 4, *(int(np.argmax(X[c].isna().to_numpy())) for c in X if X[c].isna().any())})
    np.testing.assert_array_equal(probe_rows(frame, columns=columns), rows)
    assert describe_missing(frame, columns) == {c: f"{k:,} of {n:,} rows" for c, k in X.isna().sum().items() if k}
    # the integer column has 4 values and missing ones: 5 values as numpy.unique counts them
    assert resolve_categorical(frame, None, 5, columns).tolist() == [False, False, True, True, True, True, False]
    columns4 = P.frame_profiles(frame, mapper=splits(frame, parts), cap=4)
    assert resolve_categorical(frame, None, 4, columns4).tolist() == [False, False, False, True, True, True, False]


def test_numbers_stored_as_text_are_refused_from_the_levels_counts():
    """A text column whose values are nearly all numbers, or numbers with decimal commas, is refused in one line
    from its levels' counts, whatever the partitioning."""
    from autopdp.pd.grids import resolve_categorical

    bad = pd.DataFrame({"amount": ["1.5", "2", "3.25"] * 20 + ["n/a"] * 3})
    comma = pd.DataFrame({"amount": ["1,5", "2,25", "3"] * 20})
    for X, message in ((bad, "looks numeric but holds non-numeric values such as \\['n/a'\\]"),
                       (comma, "holds numbers written with a decimal comma")):
        frame = as_frame(X)
        for parts in (1, 4, 63):
            with pytest.raises(InputError, match=message):
                resolve_categorical(frame, None, 0, P.frame_profiles(frame, mapper=splits(frame, parts)))

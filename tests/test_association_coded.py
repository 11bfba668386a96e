"""The association tests of many pairs from summaries of the row partitions (:func:`association_tests`) against
the pairwise tests on the values (:func:`association_test`, scipy's tests)."""

import numpy as np
import pandas as pd
import pytest

from autopdp.scores.association import association_test, association_tests


def _columns(n=600, seed=3):
    rng = np.random.default_rng(seed)
    base = rng.normal(size=n)
    g = rng.choice(["zeta", "alpha", "mid", "Beta"], n)  # first appearance not in sorted order
    g = np.where(rng.random(n) < 0.05, None, g).astype(object)
    h = np.where(base > 0, "hi", "lo").astype(object)
    h[rng.random(n) < 0.08] = np.nan
    rare = np.where(np.arange(n) < 2, "only-two", "rest").astype(object)  # a level on two rows only
    rare[0] = None  # ...one of them missing
    single = np.full(n, "same", dtype=object)
    num_nan = np.where(rng.random(n) < 0.1, np.nan, base + rng.normal(size=n))
    return {
        "a": base + rng.normal(size=n), "b": np.round(base * 2), "d": num_nan, "k": np.full(n, 2.0),
        "g": g, "h": h, "r": rare, "s": single,
    }


def _partitions(cols, bounds):
    return [{k: v[a:b] for k, v in cols.items()} for a, b in zip(bounds[:-1], bounds[1:])]


@pytest.mark.parametrize("bounds", [None, [0, 600], [0, 1, 2, 300, 599, 600], list(range(0, 601, 12)),
                                    [0, 5, 5, 400, 600]])
def test_pairs_from_partitions_equal_the_pairwise_tests(bounds):
    """Issue 54: any partitioning (one-row and empty partitions included) gives the pairwise tests' numbers: the
    categorical pairs' exactly (their tables are counts), the others to rounding."""
    cols = _columns()
    kinds = {f: ("categorical" if cols[f].dtype == object else "numeric") for f in cols}
    pairs = [(x, y) for i, x in enumerate(cols) for y in list(cols)[i + 1:]]
    pairs += [(y, x) for x, y in pairs if kinds[x] != kinds[y]]  # both orders of the mixed pairs
    many = association_tests(cols if bounds is None else _partitions(cols, bounds), kinds, pairs)
    assert set(many) == set(pairs)
    for a, b in pairs:
        one = association_test(cols[a], kinds[a], cols[b], kinds[b])
        if kinds[a] == kinds[b] == "categorical":
            np.testing.assert_array_equal(many[(a, b)], one, err_msg=f"{a}, {b}")
        else:
            np.testing.assert_allclose(many[(a, b)], one, rtol=1e-10, atol=1e-14, err_msg=f"{a}, {b}")


def test_special_cases_match_the_pairwise_tests():
    """Too few complete rows, a constant or all-missing column, levels each constant (scipy's infinite F)."""
    n = 40
    rng = np.random.default_rng(5)
    cols = {
        "x": rng.normal(size=n), "nan": np.full(n, np.nan), "k": np.full(n, 3.0),
        "two": np.where(np.arange(n) < 2, 1.0, np.nan),  # two complete rows
        "lvl": np.where(np.arange(n) % 2 == 0, "e", "o").astype(object),
        "by_lvl": np.where(np.arange(n) % 2 == 0, 1.0, 5.0),  # constant within each level, not across
        "one": np.full(n, "z", dtype=object),
    }
    kinds = {f: ("categorical" if cols[f].dtype == object else "numeric") for f in cols}
    pairs = [("x", "nan"), ("x", "k"), ("x", "two"), ("lvl", "by_lvl"), ("lvl", "k"), ("one", "x"),
             ("lvl", "one"), ("lvl", "two"), ("x", "by_lvl")]
    many = association_tests(_partitions(cols, [0, 7, 40]), kinds, pairs)
    for a, b in pairs:
        one = association_test(cols[a], kinds[a], cols[b], kinds[b])
        np.testing.assert_allclose(many[(a, b)], one, rtol=1e-12, atol=1e-15, equal_nan=True, err_msg=f"{a}, {b}")
    assert many[("lvl", "by_lvl")] == (1.0, 0.0)


def test_a_frame_is_read_by_its_partitions():
    """A :class:`~autopdp.pd.data.Frame` is read through ``map_rows`` (here one partition): the same numbers."""
    from autopdp.pd.data import as_frame

    cols = _columns(n=300)
    df = pd.DataFrame(cols)
    kinds = {f: ("categorical" if cols[f].dtype == object else "numeric") for f in cols}
    pairs = [("a", "b"), ("a", "d"), ("g", "h"), ("b", "g"), ("r", "a")]
    assert association_tests(as_frame(df), kinds, pairs) == association_tests(cols, kinds, pairs)


def test_coded_pairs_on_known_tables():
    from scipy import stats

    g = np.array(["x", "y", "x", "y", "x", "y", "x", "x"], dtype=object)
    h = np.array(["u", "u", "v", "v", "u", "v", None, "u"], dtype=object)
    out = association_tests({"g": g, "h": h}, {"g": "categorical", "h": "categorical"}, [("g", "h")])[("g", "h")]
    table = np.array([[3, 1], [1, 2]])  # rows x, y; columns u, v (the row with None left out)
    chi2 = stats.chi2_contingency(table, correction=False)
    assert out[0] == pytest.approx(np.sqrt(chi2.statistic / 7), rel=1e-12)
    assert out[1] == pytest.approx(chi2.pvalue, rel=1e-12)
    v = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, np.nan])
    eta, p = association_tests({"g": g, "v": v}, {"g": "categorical", "v": "numeric"}, [("v", "g")])[("v", "g")]
    x, y = v[[0, 2, 4, 6]], v[[1, 3, 5]]
    between = 4 * (x.mean() - v[:7].mean()) ** 2 + 3 * (y.mean() - v[:7].mean()) ** 2
    assert eta == pytest.approx(np.sqrt(between / np.sum((v[:7] - v[:7].mean()) ** 2)), rel=1e-12)
    assert p == pytest.approx(stats.f_oneway(x, y).pvalue, rel=1e-12)


def test_coded_pairs_of_a_frame_column_with_categories():
    df = pd.DataFrame({"c": pd.Categorical(["b", "a", "b", np.nan, "a", "c"] * 20),
                       "v": np.arange(120, dtype=float)})
    c = np.asarray(df["c"].astype(object))
    out = association_tests({"c": c, "v": df["v"].to_numpy()}, {"c": "categorical", "v": "numeric"}, [("c", "v")])
    assert out[("c", "v")] == association_test(c, "categorical", df["v"].to_numpy(), "numeric")


@pytest.mark.parametrize("chunk", [1, 7, 10**9])
def test_the_spearman_matrix_from_doubled_ranks_in_chunks_equals_scipys(chunk, monkeypatch):
    """Issue 54: every numeric column's ranks kept as whole numbers (4 bytes a row) and their cross-products summed
    a chunk of rows at a time give scipy's Spearman correlation and p-value, with ties and without, past every
    chunk boundary."""
    from scipy.stats import spearmanr

    import autopdp.pd.rows as rows

    monkeypatch.setattr(rows, "CHUNK_ROWS", chunk)
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(5, 300))
        columns = {f"c{i}": rng.integers(0, 4, n).astype(float) if i % 2 else rng.normal(size=n) for i in range(4)}
        pairs = [("c0", "c1"), ("c0", "c2"), ("c1", "c3"), ("c2", "c3")]
        got = association_tests(columns, {k: "numeric" for k in columns}, pairs)
        for a, b in pairs:
            want = spearmanr(columns[a], columns[b])
            assert got[(a, b)][0] == pytest.approx(abs(want.statistic), abs=1e-12)
            assert got[(a, b)][1] == pytest.approx(want.pvalue, abs=1e-10)

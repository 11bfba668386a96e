"""The incidence criterion's calibration and dependence parts read the rows in chunks (issue 54: per-row
temporaries bounded whatever the data's size): every chunking gives the statistics, row counts and null draws of
one pass over every row, past every chunk boundary (chunks of 1, 3 and 17 rows against one chunk)."""

import numpy as np
import pytest

import autopdp.pd.rows as rows
import autopdp.scores.calibration as calibration


def _case(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    n, size = int(rng.integers(1, 400)), int(rng.integers(1, 8))
    f = rng.random(n)
    y = (rng.random(n) < f).astype(float)
    if seed % 5 == 0:
        f[rng.integers(0, n)] = np.nan  # an unusable row
    weights = None if seed % 3 == 0 else rng.exponential(size=n) * (rng.random(n) > 0.1)  # zero weights too
    rows = rng.choice(n, int(rng.integers(0, n + 1)), replace=False) if seed % 2 else None
    m = n if rows is None else rows.size
    return dict(predicted=f, observed=y, cells=rng.integers(-1, size, n), sample_weight=weights,
                pd_curve=rng.random(size), kind="numeric" if seed % 4 else "categorical", noise=None, loss="l2",
                threshold=0.05, ice=rng.random((m, size)) if seed % 7 else None, ice_rows=rows,
                ice_weight=None if seed % 2 == 0 else rng.exponential(size=m))


def _same(a: float, b: float) -> bool:
    return (np.isnan(a) and np.isnan(b)) or abs(a - b) <= 1e-12 * max(1.0, abs(a))


@pytest.mark.parametrize("seed", range(40))
def test_every_chunking_gives_the_one_pass_statistics_and_draws(seed, monkeypatch):
    case = _case(seed)
    monkeypatch.setattr(rows, "CHUNK_ROWS", 10**9)
    whole = calibration.incidence_parts(**case)
    for chunk in (1, 3, 17):
        monkeypatch.setattr(rows, "CHUNK_ROWS", chunk)
        got = calibration.incidence_parts(**case)
        assert _same(whole.calibration, got.calibration) and _same(whole.dependence, got.dependence)
        assert got.dependence_rows == whole.dependence_rows
        for a, b in ((whole.draw_calibration, got.draw_calibration), (whole.draw_dependence, got.draw_dependence)):
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_allclose(b(50, np.random.default_rng(1)), a(50, np.random.default_rng(1)),
                                           rtol=1e-10, atol=1e-13)


def test_the_cases_cover_both_parts_small_and_big_bins():
    """The cases above reach what chunking could break: a dependence part with ICE steps, bins drawn row by row
    and by their normal approximation."""
    seen = set()
    for seed in range(40):
        case = _case(seed)
        parts = calibration.incidence_parts(**case)
        n = np.bincount(case["cells"][case["cells"] >= 0], minlength=case["pd_curve"].size)
        seen.add(("dependence", parts.draw_dependence is not None and case["ice"] is not None))
        seen.update({("small", bool((n[n > 0] < calibration.NORMAL_BIN_ROWS).any())),
                     ("big", bool((n >= calibration.NORMAL_BIN_ROWS).any()))})
    assert {("dependence", True), ("small", True), ("big", True)} <= seen


@pytest.mark.parametrize("y", [np.array([">50K", "<=50K", ">50K"], dtype=object), np.array([1, 0, 1, 2]),
                               np.array([1.0, np.nan, 0.0]), np.array([True, False, True]),
                               np.array(["1", "2", "1"], dtype=object), np.array(["x", "y"])])
def test_the_observed_class_indicator_compares_each_label_once_as_row_by_row(y):
    """The class indicator is found per distinct label (no text copy of every row's label): the same as comparing
    every row's label and its text with the class, for labels of every type (1 and "1" are the same class)."""
    from autopdp.scores.utilities.incidence import observed_values

    for target in [*dict.fromkeys(y.tolist()), "1", 1, True]:
        row_by_row = ((y == target) | (y.astype(str) == str(target))).astype(float)
        np.testing.assert_array_equal(observed_values(y, target, True), row_by_row)

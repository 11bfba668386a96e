"""Per-row values kept where the rows are (autopdp.pd.kept, issue 54): made on a real LocalCluster's worker processes,
summed there and brought back only for the rows asked for; here the same calls on one array.  The threshold's
spread from kept values (autopdp.scores.spread.kept_spread) equals its definition over the whole column, at any
chunk size and partition count."""

import numpy as np
import pandas as pd
import pytest

from autopdp.pd import rows as rows_mod
from autopdp.pd.data import as_frame
from autopdp.pd.kept import keep_values, kept_here, map_kept
from autopdp.scores.spread import THRESHOLD_VARIANCE_Z, column_sd, kept_spread, spread_summary


def _values(frame, payload):
    """Two columns per row: a skewed function of ``a`` and one with a NaN where ``b`` is 0."""
    a = frame.data["a"].to_numpy(dtype=float)
    b = frame.data["b"].to_numpy(dtype=float)
    return np.column_stack([np.exp(payload * a), np.where(b == 0, np.nan, a * b)])


def _sum_of(values, _):
    return float(np.nansum(values[:, 0])), values.shape[0]


def _direct(p):
    """The spread's numbers by their definition on the finite values (the module docs of autopdp.scores.spread)."""
    p = p[np.isfinite(p)]
    n, mean = p.size, p.mean()
    var = ((p - mean) ** 2).mean()
    share = ((p - mean) ** 2 - var) / (2 * n * var)
    total = (share ** 2).sum()
    upper = total + THRESHOLD_VARIANCE_Z * np.sqrt(((share ** 2 - total / n) ** 2).sum())
    return np.sqrt(var), n, mean, var, upper, np.sqrt(upper / total)


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(5)
    n = 1003
    return pd.DataFrame({"a": rng.normal(size=n), "b": rng.integers(0, 4, n).astype(float)})


@pytest.mark.parametrize("chunk", [1, 7, 10 ** 6])
def test_the_spread_of_values_here_equals_its_definition_at_any_chunk_size(table, monkeypatch, chunk):
    monkeypatch.setattr(rows_mod, "CHUNK_ROWS", chunk)
    values = _values(as_frame(table), 0.7)
    kept = kept_here(values)
    for t in (0, 1):  # column 1 has NaNs: the finite values only, and no spread of every row
        sd, spread, every = kept_spread(kept, t)
        want = _direct(values[:, t])
        assert every == bool(np.isfinite(values[:, t]).all())
        np.testing.assert_allclose([sd, spread.size, spread.mean, spread.var, spread.sum_sq, spread.scale], want,
                                   rtol=1e-11)
    assert spread_summary(values[:, 1]) is None  # a NaN: no spread of every row (as before)
    got = spread_summary(values[:, 0])
    rows = np.array([5, 0, 1002, 5])
    p = values[:, 0]
    np.testing.assert_allclose(got.at(rows), (p[rows] - p.mean()) ** 2 / (2 * p.size * p.var()) * got.scale
                               - got.scale / (2 * p.size), rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize("chunk", [1, 7, 10 ** 6])
def test_the_columns_sd_in_chunks_is_numpys(monkeypatch, chunk):
    """The predictions' sd (the materiality threshold's scale) in row chunks equals numpy's std(axis=0): NaN for a
    column with a value that is not finite, 0 for one row or a constant column."""
    monkeypatch.setattr(rows_mod, "CHUNK_ROWS", chunk)
    rng = np.random.default_rng(2)
    p = np.column_stack([rng.lognormal(0, 2, 301), np.full(301, 3.5), rng.normal(size=301)])
    p[17, 2] = np.inf
    np.testing.assert_allclose(column_sd(p), p.std(axis=0), rtol=1e-12)
    assert np.isnan(column_sd(p)[2]) and column_sd(p)[1] == 0.0
    np.testing.assert_array_equal(column_sd(p[:1]), np.zeros(3) * p[:1].std(axis=0))
    assert np.isnan(column_sd(np.empty((0, 2)))).all()


def test_values_kept_on_worker_processes_are_summed_there_and_brought_only_for_the_rows_asked(table):
    pytest.importorskip("distributed", reason="dask[distributed] is the optional 'dask' extra")
    from clusters import process_cluster

    from autopdp.pd.distributed import resident_rows

    frame = as_frame(table)
    here = _values(frame, 0.7)
    with process_cluster(2) as (_, client):
        with resident_rows(client):
            kept = keep_values(_values, 0.7, frame, scheduler=client)
            assert kept.here is None and kept.shape == here.shape  # nothing row-long came here
            parts = map_kept(_sum_of, None, kept)
            assert len(parts) == 2 and sum(n for _, n in parts) == len(table)
            assert sum(s for s, _ in parts) == pytest.approx(np.nansum(here[:, 0]), rel=1e-12)
            rows = np.array([1002, 0, 501, 502, 0, 17])  # both partitions, out of order, repeated
            np.testing.assert_array_equal(kept.at(rows), here[rows])
            np.testing.assert_array_equal(kept.column(1)[rows], here[rows, 1])
            for t in (0, 1):
                sd, spread, every = kept_spread(kept, t)
                want_sd, want, _ = kept_spread(kept_here(here), t)
                assert every == bool(np.isfinite(here[:, t]).all())
                assert sd == pytest.approx(want_sd, rel=1e-12)
                for name in ("size", "mean", "var", "sum_sq", "scale"):
                    assert getattr(spread, name) == pytest.approx(getattr(want, name), rel=1e-12)
                if every:
                    np.testing.assert_allclose(spread.at(rows), want.at(rows), rtol=1e-12)
            with pytest.raises(IndexError):
                kept.at([len(table)])
        # outside a resident block nothing could keep them: the values come here, the same ones
        outside = keep_values(_values, 0.7, frame, scheduler=client)
        assert outside.here is not None
        np.testing.assert_array_equal(outside.here, here)


def _whole_facts(payload, values, column):
    """Every row's values and one column of them, as a worker holding all of them sees them."""
    return payload, values.shape, float(np.nansum(values * np.arange(1, values.shape[1] + 1))), column.copy()


def _doubled(values, payload):
    return payload * values[:, :1]


def test_readers_of_every_row_run_on_a_worker_and_derived_values_stay_there(table):
    """``on_whole``: a reader that needs every row at once (a rank statistic) runs as one task on a worker, which
    takes every partition's kept values, in row order, from the workers that keep them: the same answer as here,
    at any partition count.  ``derive_kept``: values made from kept ones stay on their partitions.  ``column_sd``
    sums kept values where they are."""
    pytest.importorskip("distributed", reason="dask[distributed] is the optional 'dask' extra")
    from clusters import process_cluster

    from autopdp.pd.distributed import resident_rows
    from autopdp.pd.kept import derive_kept, on_whole

    frame = as_frame(table)
    here = _values(frame, 0.7)
    want = _whole_facts("p", here, here[:, 1])
    for_here = on_whole(_whole_facts, "p", kept_here(here), kept_here(here).column(1))
    assert for_here[:3] == want[:3]
    np.testing.assert_array_equal(for_here[3], want[3])
    with process_cluster(2) as (_, client):
        with resident_rows(client):
            kept = keep_values(_values, 0.7, frame, scheduler=client)
            got = on_whole(_whole_facts, "p", kept, kept.column(1))
            assert got[:2] == want[:2] and got[2] == pytest.approx(want[2], rel=1e-13)
            np.testing.assert_array_equal(got[3], want[3])  # row order: partition after partition
            doubled = derive_kept(_doubled, 3.0, kept)
            assert doubled.here is None and doubled.shape == (len(table), 1)
            rows = np.array([1002, 0, 501, 502])
            np.testing.assert_array_equal(doubled.at(rows), 3.0 * here[rows, :1])
            np.testing.assert_array_equal(kept.whole(), here)
            np.testing.assert_allclose(column_sd(kept), column_sd(here), rtol=1e-12)
            mixed = on_whole(_whole_facts, "p", kept, kept_here(here).column(1))  # one here, one kept there
            assert mixed[:2] == want[:2]
            np.testing.assert_array_equal(mixed[3], want[3])
            other = keep_values(_values, 0.7, as_frame(table), scheduler=client)  # another frame's partitions
            with pytest.raises(ValueError, match="same row partitions"):
                on_whole(_whole_facts, "p", kept, other)

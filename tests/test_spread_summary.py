"""The threshold's spread kept as a summary (issue 54): the audit keeps :class:`ThresholdSpread` (the row count,
the sum of squares and what gives a row's share from its prediction), not 8 bytes a row; its numbers are those of
the row-long definition (:func:`threshold_spread`) at every chunking of the rows."""

import numpy as np
import pytest

import autopdp.pd.rows as rows
from autopdp.scores.scoring import ScoringInputs, threshold_spread
from autopdp.scores.spread import spread_summary


@pytest.mark.parametrize("n", [2, 3, 50, 1001])
@pytest.mark.parametrize("chunk", [1, 7, 10**9])
def test_the_summary_gives_the_definitions_shares_and_sum_of_squares(n, chunk, monkeypatch):
    monkeypatch.setattr(rows, "CHUNK_ROWS", chunk)
    p = np.random.default_rng(n).standard_t(5, n) * 3.0 + 10.0
    ref = threshold_spread(p)
    got = spread_summary(p)
    assert got.size == n
    np.testing.assert_allclose(got.at(), ref, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(got.sum_sq, np.sum(ref ** 2), rtol=1e-9, atol=1e-15)
    some = np.array([n - 1, 0])
    np.testing.assert_allclose(got.at(some), ref[some], rtol=1e-9, atol=1e-15)


def test_no_summary_where_the_definition_has_none():
    assert spread_summary(np.ones(50)) is None
    assert spread_summary(np.array([1.0, np.nan, 2.0])) is None
    assert spread_summary(np.array([1.0, np.inf, 2.0])) is None
    assert spread_summary(np.array([1.0])) is None


def test_scoring_inputs_keep_one_summary_per_target_and_no_row_long_array():
    p = np.random.default_rng(0).random((300, 2))
    p[:, 1] = 1.0  # a constant target has no spread
    inputs = ScoringInputs(frame=None, y=None, is_classifier=False, prediction_std=p.std(axis=0), config=None,
                           comparisons={}, predictions=p)
    first = inputs.spread_of(0)
    np.testing.assert_allclose(first.at(), threshold_spread(p[:, 0]), rtol=1e-9, atol=1e-15)
    assert inputs.spread_of(1) is None and inputs.spread_of(2) is None
    assert np.shares_memory(first.predictions, inputs.predictions)  # a view of the predictions, not a copy

"""The rows in each cell of a 2D PD's grid (the dots under the report's 2D figures), counted by hand."""

from types import SimpleNamespace

import numpy as np
import pandas as pd

from autopdp.pd.data import as_frame
from autopdp.auditing.summary import _summary_part, summarise_data


def test_occupancy_counts_each_row_in_its_cell_and_skips_missing_values_and_levels_off_the_grid():
    X = pd.DataFrame({
        "level": pd.Series(["a", "b", "c", None, np.nan, "a", "b", 1, 1.0], dtype=object),
        "x": [0.1, 2.4, 1.0, 0.0, 5.0, np.nan, 0.9, 1.9, 0.2],
    })
    frame = as_frame(X)
    result = SimpleNamespace(features=("level", "x"), kinds=("categorical", "numeric"),
                             grid=[np.array(["a", "b", 1], dtype=object), np.array([0.0, 1.0, 2.0])])
    # rows: a@0, b@2 (2.4 is nearest 2), c off the grid, None and NaN missing, a with x missing, b@1 (0.9),
    # 1@2 (1.9), 1.0 is the level 1 @0 (0.2)
    want = np.array([[1, 0, 0], [0, 1, 1], [1, 0, 1]])
    summary = summarise_data(frame, [], np.random.default_rng(0), results_2d=[result, result])
    for occupancy in summary["occupancy"]:  # the second pair reads the axes' cells found once
        got = np.asarray(occupancy["counts"])
        assert got.dtype.kind == "i" and np.array_equal(got, want)
    # counted on row partitions (issue 54: a Dask cluster's parts), the counts add up to the same
    payload = ([], [(0, result.grid[0], "categorical"), (1, result.grid[1], "numeric")], [((0, 1), (3, 3))])
    parts = [_summary_part(frame.take_rows(np.arange(a, b)), payload)[1][0] for a, b in ((0, 4), (4, 5), (5, 9))]
    assert np.array_equal(np.sum(parts, axis=0), want)

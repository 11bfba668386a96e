"""The rows in each cell of a 2D PD's grid (the dots under the report's 2D figures), counted by hand."""

from types import SimpleNamespace

import numpy as np
import pandas as pd

from autopdp.pd.data import as_frame
from autopdp.auditing.summary import occupancy_2d


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
    axes: dict = {}
    got = occupancy_2d(frame, result, axes)
    assert got.dtype.kind == "i" and np.array_equal(got, want)
    assert len(axes) == 2  # each feature's cells kept for the next pair
    again = occupancy_2d(frame, result, axes)  # read from what was kept
    assert np.array_equal(again, want) and np.array_equal(occupancy_2d(frame, result), want)

"""The kernels' own binary search must be numpy's searchsorted, NaN and infinities included.

It replaces numba's ``np.searchsorted`` inside the tree and OOD kernels (whose generic implementation cost
seconds of compilation on every new machine), so it must answer exactly as numpy does on sorted arrays with
duplicates, infinities and trailing NaN, for numbers, infinities and NaN, on both sides.
"""

import numpy as np
import pytest

from autopdp.pd.tree.kernels import search_sorted

ARRAYS = [
    np.array([]),
    np.array([1.0]),
    np.array([-np.inf, -1.0, 0.0, 0.0, 0.0, 2.5, np.inf]),
    np.array([0.0, 1.0, 1.0, 3.0, np.nan, np.nan]),
    np.array([np.nan, np.nan]),
    np.sort(np.random.default_rng(0).integers(0, 6, 40).astype(float)),
]
PROBES = [-np.inf, -2.0, -1.0, 0.0, 0.5, 1.0, 2.5, 3.0, 7.0, np.inf, np.nan]


@pytest.mark.parametrize("a", ARRAYS, ids=range(len(ARRAYS)))
@pytest.mark.parametrize("side", ["left", "right"])
def test_search_sorted_is_numpys(a, side):
    for x in PROBES:
        assert search_sorted(a, a.size, x, side == "right") == np.searchsorted(a, x, side=side), (a, x, side)
    # a prefix of the array, as the kernels pass a padded grid and its length
    for n in range(a.size + 1):
        for x in PROBES:
            assert search_sorted(a, n, x, side == "right") == np.searchsorted(a[:n], x, side=side)

"""The out-of-distribution share on all rows equals a direct k-nearest-neighbour count.

The reference moves every row to every grid value explicitly, embeds the
augmented rows (standardised numeric columns, one-hot levels scaled by 1/sqrt 2,
so the mixed distance is Euclidean) and asks scikit-learn's NearestNeighbors
for each augmented row's k nearest rows other than the row it came from.
"""

import numpy as np
import pandas as pd
import pytest
from sklearn.neighbors import NearestNeighbors

from autopdp.pd.data import as_frame
from autopdp.trust.ood import SupportModel


@pytest.fixture(scope="module")
def mixed():
    rng = np.random.default_rng(8)
    n = 400
    x1 = rng.normal(size=n)
    X = pd.DataFrame({"x1": x1, "x2": x1 + rng.normal(0, 0.3, n), "x3": rng.uniform(0, 1, n),
                      "g": rng.choice(["a", "b", "c"], n, p=[0.6, 0.3, 0.1])})
    X.loc[rng.choice(n, 20, replace=False), "x3"] = np.nan
    return X


KINDS = {"x1": "numeric", "x2": "numeric", "x3": "numeric", "g": "categorical"}


def _embed(X, sd, med, levels):
    cols = []
    for c in ["x1", "x2", "x3"]:
        cols.append((X[c].fillna(med[c]).to_numpy(float) / sd[c])[:, None])
    onehot = np.zeros((len(X), len(levels)))
    for j, lev in enumerate(levels):
        onehot[:, j] = (X["g"].to_numpy() == lev) * np.sqrt(0.5)
    cols.append(onehot)
    return np.hstack(cols)


def _reference_share(X, features, grids, k=5, quantile=0.99):
    med = {c: float(np.nanmedian(X[c])) for c in ["x1", "x2", "x3"]}
    sd = {c: float(np.std(X[c].fillna(med[c]))) for c in ["x1", "x2", "x3"]}
    levels = list(pd.unique(X["g"]))
    E = _embed(X, sd, med, levels)
    nn = NearestNeighbors(n_neighbors=k + 1).fit(E)
    own = nn.kneighbors(E)[0][:, k]  # the row itself is its nearest (distance 0), so k + 1 -> k-th other
    edge = np.quantile(own, quantile)
    shape = tuple(len(g) for g in grids)
    out = np.zeros(shape)
    n = len(X)
    for idx in np.ndindex(*shape):
        aug = X.copy()
        for f, g, i in zip(features, grids, idx):
            aug[f] = g[i]
        A = _embed(aug, sd, med, levels)
        dist, nb = nn.kneighbors(A, n_neighbors=k + 1)
        # drop the row each augmented row came from; keep the k nearest others
        kth = np.array([d[nb_row != r][k - 1] for r, (d, nb_row) in enumerate(zip(dist, nb))])
        out[idx] = np.mean(kth > edge)
    return out, edge


@pytest.mark.parametrize("features, grids", [
    (("x1",), (np.linspace(-3, 3, 9),)),
    (("g",), (np.array(["a", "b", "c"], dtype=object),)),
    (("x1", "x2"), (np.linspace(-2.5, 2.5, 6), np.linspace(-2.5, 2.5, 5))),
    (("x3", "g"), (np.linspace(0, 1, 4), np.array(["a", "c"], dtype=object))),
])
def test_share_equals_direct_neighbour_count(mixed, features, grids):
    sm = SupportModel(as_frame(mixed), KINDS)
    assert not sm.sampled and sm.rows.size == len(mixed) and sm.standard_error == 0.0
    ref, edge = _reference_share(mixed, features, grids)
    assert sm.edge == pytest.approx(edge, rel=1e-9)
    share = sm.share(features, grids)
    assert share.shape == ref.shape
    np.testing.assert_array_equal(np.round(share * len(mixed)), np.round(ref * len(mixed)))  # counts of rows
    if features == ("x1", "x2"):
        # the correlated pair's off-diagonal corners are mostly unrealistic, the diagonal is not
        assert share[0, -1] > 0.9 and share[-1, 0] > 0.9 and share[2, 2] < 0.2


def test_large_data_is_sampled_with_its_standard_error(mixed):
    big = pd.concat([mixed] * 3, ignore_index=True)
    sm = SupportModel(as_frame(big), KINDS, max_rows=500)
    assert sm.sampled and sm.rows.size == 500
    assert sm.standard_error == pytest.approx(0.5 / np.sqrt(500))

"""Out-of-distribution shading: how many of a PD's augmented rows look like no real row.

Method (k-nearest-neighbour distance beyond the data's own 99th percentile)
    Rows are compared in a mixed distance: numeric features standardised by
    their standard deviation (missing values at the median), squared
    differences summed; categorical features add 1 when the levels differ.
    That distance is Euclidean in an embedding (standardised numeric columns,
    categorical levels one-hot scaled by 1/sqrt 2), so scikit-learn's
    :class:`~sklearn.neighbors.NearestNeighbors` gives every row's distance to
    its k-th nearest *other* row; the 99th percentile of those is the support's
    edge.

    A PD at grid point g averages over the augmented rows: every row with the
    explained features set to g.  An augmented row is out of distribution when
    fewer than k of the other rows lie within the edge of it (its k-th nearest
    other row is farther than the edge), and the OOD share at g is the share of
    augmented rows that are.  Only the explained features' terms change, so each
    augmented distance is the row pair's distance with those terms replaced:
    ``d2(x_i[S <- g], x_r) = d2(x_i, x_r) - d2_S(x_i, x_r) + d2_S(g, x_r)``,
    counted by a compiled kernel that visits each row's nearest rows (from the
    index) first and stops once every grid point has k neighbours.  Every row takes part (both as augmented row and as neighbour)
    up to ``max_rows`` rows; larger data use a random sample of that many rows,
    and the share's Monte-Carlo standard error (at most 0.5/sqrt(max_rows)) is
    reported with it.  A PD's ``ood_share`` is the mean over its grid points.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..pd.data import Frame
from ..errors import InputError

__all__ = ["SupportModel"]

NUMERIC, CATEGORICAL = 0, 1
UNSEEN = -2  # code of a grid level no row has: it differs from every row


class SupportModel:
    """The data's support and the OOD share of augmented rows (see the module docs).

    Parameters
    ----------
    frame : Frame
    kinds : dict
        ``{feature name: "numeric" | "categorical"}``; the distance uses these features.
    k : int, default 5
        Neighbours an augmented row needs within the edge.
    max_rows : int, default 4000
        Rows taking part; more rows are sampled down to this many.  Memory is
        ``8 * max_rows**2`` bytes for the pairwise distances.
    quantile : float, default 0.99
        The edge: this quantile of the rows' own k-th-neighbour distances.
    random_state : int
        The row sample (only when the data has more than ``max_rows`` rows).
    near : int, default 64
        Each row's nearest rows (from the index) are visited first, so that the
        count of most augmented rows stops early; the result does not depend on it.

    Attributes
    ----------
    edge : float
        The support's edge (a distance).
    rows : ndarray
        Positions of the rows taking part (all rows unless sampled).
    sampled : bool
    """

    def __init__(self, frame: Frame, kinds: dict, *, k: int = 5, max_rows: int = 4000, quantile: float = 0.99,
                 random_state: int = 0, near: int = 64):
        from sklearn.metrics.pairwise import euclidean_distances
        from sklearn.neighbors import NearestNeighbors

        n = frame.n_rows
        self.sampled = n > max_rows
        if self.sampled:
            rng = np.random.default_rng(random_state)
            self.rows = np.sort(rng.choice(n, size=int(max_rows), replace=False))
        else:
            self.rows = np.arange(n)
        m = self.rows.size
        self.k = int(min(k, max(1, m - 1)))
        self.kinds = kinds
        self.cols: dict = {}
        blocks = []
        for j, name in enumerate(frame.names):
            if name not in kinds:
                continue
            v = frame.column(j)
            if kinds[name] == "numeric":
                x = np.asarray(v, dtype=float)
                med = np.nanmedian(x) if np.isfinite(x).any() else 0.0
                x = np.where(np.isfinite(x), x, med)
                s = float(np.std(x)) or 1.0
                z = x[self.rows] / s
                self.cols[name] = (NUMERIC, z, s, None)
                blocks.append(z[:, None])
            else:
                codes, uniques = pd.factorize(pd.Series(v, dtype=object), use_na_sentinel=False)
                codes = codes[self.rows].astype(np.int64)
                self.cols[name] = (CATEGORICAL, codes.astype(float), None, {u: i for i, u in enumerate(uniques.tolist())})
                onehot = np.zeros((m, len(uniques)))
                onehot[np.arange(m), codes] = np.sqrt(0.5)
                blocks.append(onehot)
        if not blocks:
            raise InputError("the out-of-distribution check needs at least one feature.")
        embedding = np.hstack(blocks)
        nn = NearestNeighbors(n_neighbors=min(m - 1, max(self.k, near))).fit(embedding)
        dist, self.near = nn.kneighbors(return_distance=True)  # X=None: a row is not its own neighbour
        kth = dist[:, self.k - 1]
        self.edge = float(np.quantile(kth, quantile))
        self.d2 = euclidean_distances(embedding, squared=True)
        self.near_d2 = np.ascontiguousarray(np.take_along_axis(self.d2, self.near, axis=1))

    @property
    def standard_error(self) -> float:
        """Largest Monte-Carlo standard error of a share (0 when every row takes part)."""
        return 0.5 / np.sqrt(self.rows.size) if self.sampled else 0.0

    def _grid_values(self, name, grid) -> np.ndarray:
        kind, _, scale, levels = self.cols[name]
        if kind == NUMERIC:
            return np.asarray(grid, dtype=float) / scale
        return np.array([levels.get(v, UNSEEN) for v in grid], dtype=float)

    def share(self, features: tuple, grids: tuple) -> np.ndarray:
        """OOD share at every grid point (shape = grid shape) of a 1D or 2D PD."""
        from ..pd.tree_ice import in_parallel
        from .ood_kernel import count_outside

        if len(features) not in (1, 2):
            raise InputError("the OOD share is computed for 1D and 2D PDs.")
        kinds = np.array([self.cols[f][0] for f in features], dtype=np.int64)
        values = np.ascontiguousarray(np.stack([self.cols[f][1] for f in features]))
        ga = self._grid_values(features[0], grids[0])
        gb = self._grid_values(features[1], grids[1]) if len(features) == 2 else np.zeros(1)
        m = self.rows.size
        bounds = np.unique(np.linspace(0, m, min(m, 64) + 1).astype(np.int64))
        outside = np.zeros((bounds.size - 1, ga.size, gb.size), dtype=np.int64)
        order = np.ascontiguousarray(np.argsort(values, axis=1, kind="stable"))
        sorted_values = np.ascontiguousarray(np.take_along_axis(values, order, axis=1))
        in_parallel(count_outside, bounds.size - 1, bounds, self.d2, self.near, self.near_d2, values, kinds, len(features),
                    np.ascontiguousarray(ga), np.ascontiguousarray(gb), self.edge ** 2, self.k, order, sorted_values,
                    outside)
        share = outside.sum(axis=0) / m  # integer counts: the same whatever the threads
        return share[:, 0] if len(features) == 1 else share

"""Out-of-distribution shading: how many of a PD's augmented rows look like no real row.

Method (k-nearest-neighbour distance beyond the data's own 99th percentile)
    Rows are compared in a mixed distance: numeric features standardised by
    their standard deviation, squared differences summed; categorical features
    add 1 when the levels differ.  A reference sample of the data (``ref_rows``)
    gives every real row's distance to its k-th nearest other reference row;
    the 99th percentile of those is the support's edge.  For each grid point of
    a PD, ``rows`` sampled data rows are moved to the grid value (the augmented
    rows the PD averages) and the share whose k-th nearest reference row is
    farther than the edge is that point's OOD share.  A PD's ``ood_share`` is
    the mean over its grid points.  Only the explained features' terms change,
    so distances are updated, not recomputed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .data import Frame

__all__ = ["SupportModel"]


class SupportModel:
    def __init__(self, frame: Frame, kinds: dict, *, k: int = 5, ref_rows: int = 300, rows: int = 40,
                 quantile: float = 0.99, random_state: int = 0):
        rng = np.random.default_rng(random_state)
        n = frame.n_rows
        self.k = int(min(k, max(1, min(ref_rows, n) - 1)))
        self.ref = np.sort(rng.choice(n, size=min(ref_rows, n), replace=False))
        self.base = np.sort(rng.choice(n, size=min(rows, n), replace=False))
        self.kinds = kinds
        self.cols = {}
        for j, name in enumerate(frame.names):
            if name not in kinds:
                continue
            v = frame.column(j)
            if kinds[name] == "numeric":
                x = np.asarray(v, dtype=float)
                med = np.nanmedian(x) if np.isfinite(x).any() else 0.0
                x = np.where(np.isfinite(x), x, med)
                s = float(np.std(x)) or 1.0
                self.cols[name] = ("numeric", x / s, s)
            else:
                codes, uniques = pd.factorize(pd.Series(v, dtype=object), use_na_sentinel=True)
                self.cols[name] = ("categorical", codes, {u: i for i, u in enumerate(uniques.tolist())})
        self.d2_ref = self._pairwise(self.ref, self.ref)
        np.fill_diagonal(self.d2_ref, np.inf)
        kth = np.sqrt(np.partition(self.d2_ref, self.k - 1, axis=1)[:, self.k - 1])
        self.edge = float(np.quantile(kth, quantile))
        self.d2_base = self._pairwise(self.base, self.ref)

    def _term(self, name, a_vals, b_vals):
        kind, col, _ = self.cols[name]
        if kind == "numeric":
            return (a_vals[:, None] - b_vals[None, :]) ** 2
        return (a_vals[:, None] != b_vals[None, :]).astype(float)

    def _pairwise(self, rows_a, rows_b):
        d2 = np.zeros((rows_a.size, rows_b.size))
        for name, (kind, col, _) in self.cols.items():
            d2 += self._term(name, col[rows_a], col[rows_b])
        return d2

    def _value(self, name, v):
        kind, col, extra = self.cols[name]
        if kind == "numeric":
            return float(v) / extra
        return extra.get(v, -2)  # an unseen level differs from every row

    def share(self, features: tuple, grids: tuple) -> np.ndarray:
        """OOD share at every grid point (shape = grid shape)."""
        d2 = self.d2_base.copy()
        for name in features:
            kind, col, _ = self.cols[name]
            d2 -= self._term(name, col[self.base], col[self.ref])
        ref_vals = [self.cols[name][1][self.ref] for name in features]
        parts = []
        for name, grid, rv in zip(features, grids, ref_vals):
            vals = np.array([self._value(name, v) for v in grid])
            if self.cols[name][0] == "numeric":
                parts.append((vals[:, None] - rv[None, :]) ** 2)  # (G, m)
            else:
                parts.append((vals[:, None] != rv[None, :]).astype(float))
        shape = tuple(len(g) for g in grids)
        out = np.empty(shape)
        k = self.k
        if len(features) == 1:
            for a in range(shape[0]):
                dist = d2 + parts[0][a][None, :]
                kth = np.partition(dist, k - 1, axis=1)[:, k - 1]
                out[a] = np.mean(np.sqrt(np.maximum(kth, 0)) > self.edge)
            return out
        for a in range(shape[0]):
            da = d2 + parts[0][a][None, :]
            dist = da[None, :, :] + parts[1][:, None, :]  # (G_b, rows, m)
            kth = np.partition(dist, k - 1, axis=2)[:, :, k - 1]
            out[a] = np.mean(np.sqrt(np.maximum(kth, 0)) > self.edge, axis=1)
        return out

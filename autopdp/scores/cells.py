"""Each row's grid cell of a PD, a chunk of rows at a time (issue 54).

A PD's density weights (paper eq. 5) and the incidence criterion's bins read every row's cell: its nearest grid
point on each of the PD's axes.  :class:`GridCells` keeps only the axes' indexes (1 or 2 bytes a row each, shared
by every PD of a grid) and makes the flat cell index of a chunk of rows when asked
(:func:`autopdp.pd.rows.chunk_bounds`), so no 8-byte index of every row is held; the per-cell sums are merged
over the chunks (counts exactly, weighted sums up to their order).
"""

from __future__ import annotations

import numpy as np

from ..pd.rows import chunk_bounds

__all__ = ["GridCells", "flat_cells", "cell_weights", "cell_sums"]


def flat_cells(idx, shape) -> np.ndarray:
    """``np.ravel_multi_index(idx, shape)`` (C order) of the rows whose every index is set, -1 for the others
    (an index is -1 or inside its axis, as :func:`~autopdp.pd.grids.nearest_grid_index` gives them): one pass
    per axis over the rows, in place, without masking the rows out and back."""
    cells = np.array(idx[0], dtype=np.int64, copy=True)
    missing = idx[0] < 0
    for i, k in zip(idx[1:], shape[1:]):
        cells *= int(k)
        cells += i
        missing |= i < 0
    if missing.any():
        cells[missing] = -1
    return cells


class GridCells:
    """Every row's flat cell index on a grid of ``shape`` (-1: none), from each axis's per-row index ``idx``."""

    def __init__(self, idx, shape):
        self.idx = [np.asarray(i) for i in idx]
        self.shape = tuple(int(k) for k in shape)
        self.size = int(np.prod(self.shape))

    @classmethod
    def of(cls, cells, shape=None) -> "GridCells":
        """``cells`` as it is when already a :class:`GridCells`, else an array of flat cell indexes."""
        if isinstance(cells, GridCells):
            return cells
        cells = np.asarray(cells)
        return cls([cells], (int(np.prod(shape)) if shape is not None else int(cells.max(initial=-1)) + 1,))

    def __len__(self) -> int:
        return int(self.idx[0].shape[0])

    def chunk(self, a: int, b: int) -> np.ndarray:
        """The flat cells of the rows ``a:b``."""
        return flat_cells([i[a:b] for i in self.idx], self.shape)

    def at(self, rows) -> np.ndarray:
        """The flat cells of the rows ``rows`` (positions)."""
        rows = np.asarray(rows, dtype=np.intp)
        return flat_cells([i[rows] for i in self.idx], self.shape)

    def chunks(self):
        """``(a, b, cells)`` for each chunk of rows, in order."""
        for a, b in chunk_bounds(len(self)):
            yield a, b, self.chunk(a, b)


def cell_sums(cells: GridCells, values=None, weights=None) -> np.ndarray:
    """Per cell, the sum over its rows of ``weights * values`` (either None: 1), merged over the chunks."""
    out = np.zeros(cells.size)
    for a, b, c in cells.chunks():
        ok = c >= 0
        w = None if weights is None else np.asarray(weights[a:b], dtype=float)
        v = None if values is None else np.asarray(values[a:b], dtype=float)
        x = v if w is None else (w if v is None else w * v)
        out += np.bincount(c[ok], weights=None if x is None else x[ok], minlength=cells.size)
    return out


def cell_weights(cells, shape, sample_weight=None) -> np.ndarray:
    """Share of the rows (of their sample weight, when given) nearest each grid cell (paper eq. 5)."""
    cells = GridCells.of(cells, shape)
    mass = cell_sums(cells, weights=sample_weight)
    total = max(len(cells), 1) if sample_weight is None else max(float(np.sum(sample_weight)), 1e-300)
    return (mass / total).reshape(shape)

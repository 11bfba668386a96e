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


class CellTables:
    """Per PD grid: its cells' row mass (count, or sample weight) and, per observed target, the sum of the
    observed values weighted the same way, found on the row partitions in one pass (:func:`cell_tables`) and
    kept here: a few numbers per cell, where every row's grid indexes were kept before (issue 54).

    ``masses[key]``: ``(cells,)``; ``sums[key][target_key]``: ``(cells,)``; ``key`` the grid's key
    (:func:`grid_key`)."""

    def __init__(self):
        self.masses: dict = {}
        self.sums: dict = {}

    def __contains__(self, key) -> bool:
        return key in self.masses


def grid_key(features, kinds, grid, ordered) -> tuple:
    """A PD grid's key: its features, kinds, orderings and grid values (with their types: 1 and "1" differ), so
    the copies of one grid that 2D, refit and comparison PDs carry share one table."""
    def values(g):
        g = np.asarray(g)
        return (str(g.dtype), g.tobytes()) if g.dtype != object else \
            tuple((type(v).__name__, repr(v)) for v in g.tolist())
    return tuple(features), tuple(kinds), tuple(bool(o) for o in ordered), tuple(values(g) for g in grid)


def cell_tables(tables: CellTables, frame, jobs: list, observed: dict, sample_weight=None) -> None:
    """Fill ``tables`` with the tables of ``jobs``: ``[(key, [(column position, FeatureSpec) per axis], shape)]``,
    in one pass over ``frame``'s row partitions (:func:`autopdp.pd.rows.map_rows`; a ``PartFrame``'s parts where
    they are).  ``observed``: ``{target_key: per-row observed values}`` of this process, and ``sample_weight``,
    travel sliced to each partition.  Counts are exact; weighted sums equal one pass's to rounding."""
    from ..pd.rows import map_blocks, map_rows

    jobs = [j for j in jobs if j[0] not in tables]
    if not jobs:
        return
    kept = {k: v.spec for k, v in observed.items() if hasattr(v, "spec")}
    if kept:  # a target kept with the rows (KeptObserved): its observed values made there
        per_part = map_blocks(_tables_block, (jobs, kept), frame)
    else:
        per_part = map_rows(_tables_part, jobs, frame,
                            sliced={"w": sample_weight, **{("y", k): v for k, v in observed.items()}})
    for part in per_part:
        for key, (mass, sums) in part.items():
            if key in tables.masses:
                tables.masses[key] = tables.masses[key] + mass
                tables.sums[key] = {k: tables.sums[key][k] + v for k, v in sums.items()}
            else:
                tables.masses[key], tables.sums[key] = mass, sums


def _tables_block(block: dict, payload) -> dict:
    """:func:`_tables_part` of a row partition whose block keeps the target (its observed values made here, as
    ``{key: ObservedOf}`` says: :class:`~autopdp.scores.utilities.incidence.ObservedOf`) and its weights."""
    jobs, kept = payload
    arrays = {"w": block["sample_weight"], **{("y", k): spec.of(block["target"]) for k, spec in kept.items()}}
    return _tables_part(block["frame"], (jobs, arrays))


def _tables_part(rows, job) -> dict:
    """One row partition's tables (see :func:`cell_tables`): its rows' grid indexes are found once per axis and
    dropped when the partition's tables are made; the cells are summed a chunk of rows at a time."""
    from ..pd.grids import nearest_grid_index, small_index

    jobs, arrays = job
    w = arrays["w"]
    ys = {k[1]: v for k, v in arrays.items() if isinstance(k, tuple)}
    axes: dict = {}
    out = {}
    for key, spec_axes, shape in jobs:
        idx = []
        for position, spec in spec_axes:
            akey = (position, grid_key([spec.name], [spec.kind], [spec.grid], [spec.ordered]))
            if akey not in axes:
                axes[akey] = small_index(nearest_grid_index(rows.column(position), spec), np.asarray(spec.grid).size)
            idx.append(axes[akey])
        cells = GridCells(idx, shape)
        out[key] = (cell_sums(cells, weights=w), {k: cell_sums(cells, values=v, weights=w) for k, v in ys.items()})
    return out

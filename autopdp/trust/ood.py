"""Out-of-distribution share, measured where a PD moves the data: in the moved features.

A PD at a grid cell g (a 1D grid point or a 2D cell) averages the model over
the augmented rows: every row with the explained ("moved") features S set to g
and its other features R kept.  An augmented row is out of distribution (OOD)
when the moved values are implausible, which two checks judge, both in the
space of the moved features only.  Numeric features are taken as rank scores
(the empirical distribution function scaled to sd 1, ``sqrt(12) (F(x) - 1/2)``,
so a skewed feature's long tail does not stretch the distances; missing values
at the median); a categorical feature is its one-hot levels scaled by 1/sqrt 2,
so two different levels are 1 apart (beyond ``max_levels`` levels, the most frequent
are kept, as in the feature's grid, and the rest pooled into one level: an ID
column never makes a levels x levels matrix).  Distances below are in these units
("sd" of the scores).

1. **The cell against the data (plane check).**  The distance from g to its
   k-th nearest data row in the space of S (a line for a 1D PD, the plane of
   the two features for a 2D PD).  A near-duplicate or correlated pair has
   rows only along its band, so the cells off the band are far from every
   row; a pair whose joint support has a hole has its hole's cells far.  This
   is the simple per-cell number: "the cell is d sd from its k-th nearest
   row, and real rows are at most e sd from theirs".  It is the same for
   every row, so a cell outside counts all its augmented rows as OOD.
2. **The moved values given the row's other values (conditional check).**  A
   Gaussian model of the moved features given the others (a Gaussian copula on
   the rank scores), from the precision matrix ``P`` of all embedded features
   (ridge 1e-8): given the row's other
   values x_R, the moved features have mean ``m = x_S - P_SS^-1 P_S. (x - mu)``
   and precision ``P_SS``; the augmented row's distance is the Mahalanobis
   distance ``sqrt((g - m)' P_SS (g - m))``.  Moving x1 to a value its
   near-copy x2 (kept at the row's value) never goes with is far here even
   when the value itself is common.  The model is linear: a dependence on the
   other features that no linear combination of them shows is seen only
   through the plane check.

Calibration.  Both checks are applied to the data's own rows at their own
values (the k-th nearest *other* row in the plane check; ``calibration_rows``,
1,000 evenly spaced rows, are measured, against all rows).  Each check's edge
is the same quantile tau of its own-row distances, tau chosen so that the share
of real rows outside at least one edge is ``1 - quantile`` (1% by default, at
most that with ties): a real row is OOD at the nominal rate.  The edges are
calibrated per PD, since the moved features differ.

The OOD share at g is the share of augmented rows outside either edge (1 when
the cell is outside in the plane); a PD's ``ood_share`` is the mean over its
grid cells.  Every row takes part (as augmented row and as neighbour) up to
``max_rows`` rows; larger data use a random sample of that many rows, and the
share's Monte-Carlo standard error (at most 0.5/sqrt(max_rows)) is reported
with it.

Verdict (the report's "Can this PDP be trusted?" column): ``ood_share`` at most
:data:`OOD_OK` is ok, above it a caution, above :data:`OOD_MOSTLY` "mostly
unrealistic rows" (:func:`ood_verdict`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..pd.data import Frame
from ..pd.profiles import one_part
from ..errors import InputError

__all__ = ["SupportModel", "OODMeasure", "OOD_OK", "OOD_MOSTLY", "ood_verdict", "level_codes", "support_bytes", "support_width"]

NUMERIC, CATEGORICAL = 0, 1
RIDGE = 1e-8

OOD_OK = 0.10
"""An ``ood_share`` at most this is "ok" in the report's trust column."""
OOD_MOSTLY = 0.50
"""Above this share a PDP is computed "mostly from unrealistic rows"."""


def ood_verdict(share: float) -> str:
    """``"ok"``, ``"caution"`` or ``"mostly unrealistic"`` for an ``ood_share`` (thresholds above)."""
    if not np.isfinite(share):
        raise InputError(f"an OOD share must be a finite number between 0 and 1, got {share!r}.")
    if share > OOD_MOSTLY:
        return "mostly unrealistic"
    return "caution" if share > OOD_OK else "ok"


@dataclass(frozen=True)
class OODMeasure:
    """The OOD measurement of one PD's grid (see the module docs); arrays have the grid's shape.

    Attributes
    ----------
    share : ndarray
        Share of the augmented rows at each cell that are OOD (either check).
    plane_distance : ndarray
        Each cell's distance (sd units) to its k-th nearest data row in the moved features' space.
    cell_outside : ndarray of bool
        ``plane_distance > plane_edge``: the cell itself lies outside the data.
    conditional_share : ndarray
        Share of the augmented rows outside the conditional edge alone.
    plane_edge, conditional_edge : float
        The two edges (the same quantile ``level`` of the real rows' own distances).
    level : float
    own_share : float
        Share of the real rows, at their own values, outside either edge (the calibration: about
        ``1 - quantile``).
    """

    share: np.ndarray
    plane_distance: np.ndarray
    cell_outside: np.ndarray
    conditional_share: np.ndarray
    plane_edge: float
    conditional_edge: float
    level: float
    own_share: float


_POOLED = object()  # the level of a categorical feature's rare levels, pooled beyond max_levels


def _is_missing(x) -> bool:
    return x is None or (isinstance(x, float) and np.isnan(x))


def _levels_part(rows, positions) -> list:
    """A partition's levels of each column: ``(levels in order of first appearance, missing included; the row of
    each one's first appearance; counts)``."""
    out = []
    for position in positions:
        codes, uniques = pd.factorize(pd.Series(rows.column(position), dtype=object), use_na_sentinel=False)
        first = np.unique(codes, return_index=True)[1] if codes.size else np.zeros(0, dtype=np.int64)
        out.append((list(uniques.tolist()), first.tolist(), np.bincount(codes, minlength=len(uniques)).tolist(),
                    int(codes.size)))
    return out


def level_order(mapper, positions) -> list:
    """Each column's ``[(level, count), ...]`` over every row of ``mapper``'s partitions (in row order), in order
    of first appearance, a missing value a level of its own: what :func:`level_codes` needs of all the rows."""
    per_part = mapper(_levels_part, list(positions))
    out = []
    for j in range(len(positions)):
        first, counts, offset = {}, {}, 0
        for part in per_part:
            levels, firsts, n, rows = part[j]
            for level, at, c in zip(levels, firsts, n):
                key = "missing" if _is_missing(level) else ("value", level)
                if key not in first:
                    first[key] = (offset + at, level)
                counts[key] = counts.get(key, 0) + c
            offset += rows
        ordered = sorted(first, key=lambda k: first[k][0])
        out.append([(first[k][1], counts[k]) for k in ordered])
    return out


def level_codes(values, max_levels: int | None, order: list | None = None) -> tuple[np.ndarray, list]:
    """Each row's level code and the levels: missing is a level of its own; beyond ``max_levels`` levels
    the most frequent ``max_levels`` are kept (the grid's rule, :mod:`autopdp.pd.grids`: ties to the level seen
    first) and the rest pooled into one level (:data:`_POOLED` in the list), so the embedding never has a column
    per level of an ID.  ``order``: the levels and counts of all the rows (:func:`level_order`) when ``values``
    are some of them; by default they are all of them."""
    s = pd.Series(values, dtype=object)
    if order is None:
        order = level_order(one_part(Frame(data=s.to_frame(name="v"), names=("v",), keys=("v",))), [0])[0]
    present = [(v, c) for v, c in order if not _is_missing(v)]
    missing_seen = len(present) < len(order)
    if max_levels is not None and len(present) > max_levels:
        ranked = sorted(range(len(present)), key=lambda i: -present[i][1])  # stable: ties to the level seen first
        keep = {present[i][0]: k for k, i in enumerate(ranked[:max_levels])}
        pooled = len(keep)
        codes = np.array([pooled + 1 if _is_missing(x) else keep.get(x, pooled) for x in s.tolist()], dtype=np.int64)
        levels = list(keep) + [_POOLED]
        if missing_seen:
            levels.append(np.nan)
        return codes, levels
    levels = [v for v, _ in order]
    index = {v: i for i, v in enumerate(levels) if not _is_missing(v)}
    nan_code = next((i for i, v in enumerate(levels) if _is_missing(v)), -1)
    codes = np.array([nan_code if _is_missing(x) else index[x] for x in s.tolist()], dtype=np.int64)
    return codes, [np.nan if _is_missing(v) else v for v in levels]


def _medians(mapper, frame, positions) -> dict:
    """Each numeric column's median over its finite values in every row (0 when it has none), as
    :func:`numpy.median` gives it, from the row partitions' order statistics (:mod:`autopdp.pd.profiles`)."""
    from ..pd.profiles import NUMBERS, profiles, quantiles_of

    columns = profiles(mapper, positions, [NUMBERS] * len(positions), 0) if positions else []
    asks = [(j, (), c.lo, c.hi, c.n_finite, [(0.5, "median")]) for j, c in zip(positions, columns) if c.n_finite]
    got = quantiles_of(mapper, asks) if asks else []
    out = {j: 0.0 for j in positions}
    out.update({ask[0]: float(q[0][0]) for ask, (_, q) in zip(asks, got)})
    return out


def support_width(frame: Frame, kinds: dict, max_levels: int | None, facts: dict | None = None) -> int:
    """Columns of the out-of-distribution check's embedding: 1 per numeric feature, per categorical feature its
    levels (at most ``max_levels`` kept, one pooled, one missing).  ``facts``: ``{name: (levels, any missing)}``
    of the categorical features when known (from the columns' profiles), else read off the frame."""
    width = 0
    for name, kind in kinds.items():
        if kind == "numeric":
            width += 1
            continue
        if facts is not None:
            levels, missing = facts[name]
            width += min(levels, max_levels + 1 if max_levels is not None else levels) + int(missing)
            continue
        s = pd.Series(frame.column(frame.names.index(name)), dtype=object)
        levels = int(s.nunique(dropna=True))
        if max_levels is not None and levels > max_levels:
            levels = max_levels + 1
        width += levels + int(s.isna().any())
    return width


def support_bytes(rows: int, width: int) -> float:
    """Memory of the check's model on ``rows`` rows and ``width`` embedded columns: the embedding and its
    centred copy (rows x width), the covariance, its eigenvectors and the precision matrix (width x width, twice
    for a temporary)."""
    return 8.0 * (2 * rows * width + 4 * width * width)


class _RankScores:
    """A numeric feature mapped to its rank scores: its empirical distribution function, scaled to sd 1.

    ``sqrt(12) (F(x) - 1/2)`` with F the mid-rank share of the rows (tied values share it), so the
    rows spread evenly over [-sqrt 3, sqrt 3] whatever the feature's skew; values between the
    data's are interpolated; values beyond them continue at the data's standard deviation per unit.
    """

    def __init__(self, x: np.ndarray):
        xs, counts = np.unique(x, return_counts=True)
        mid = (np.cumsum(counts) - counts / 2.0) / x.size  # each value's mid-rank, as a probability
        self.xs, self.zs = xs, np.sqrt(12.0) * (mid - 0.5)
        self.sd = float(np.std(x)) or 1.0

    def __call__(self, v: np.ndarray) -> np.ndarray:
        v = np.asarray(v, dtype=float)
        with np.errstate(over="ignore", invalid="ignore"):
            z = np.interp(v, self.xs, self.zs)
        bad = ~np.isfinite(z) & np.isfinite(v)
        if bad.any():  # data values a subnormal apart (0 and 5e-324): the slope between them overflows
            j = np.clip(np.searchsorted(self.xs, v[bad]), 1, self.xs.size - 1)
            exact = self.xs[j] == v[bad]
            z[bad] = np.where(exact, self.zs[j], (self.zs[j - 1] + self.zs[j]) / 2)
        z = np.where(v < self.xs[0], self.zs[0] - (self.xs[0] - v) / self.sd, z)
        return np.where(v > self.xs[-1], self.zs[-1] + (v - self.xs[-1]) / self.sd, z)


class SupportModel:
    """The data's support and the OOD share of augmented rows (see the module docs).

    Parameters
    ----------
    frame : Frame
    kinds : dict
        ``{feature name: "numeric" | "categorical"}``: the features the model may move and
        condition on.
    k : int, default 5
        The plane check's distance is to the k-th nearest row.
    max_rows : int, default 4000
        Rows taking part; more rows are sampled down to this many.
    max_levels : int, optional
        A categorical feature with more levels keeps its ``max_levels`` most frequent ones (as its PD grid
        does) and pools the rest into one level, so no matrix grows with the levels of an ID column.
    max_mb : float, optional
        Refuse (InputError, before any work) when the check's model would take more than this many MB
        (:func:`support_bytes`); the audit passes ``max_batch_mb``.
    quantile : float, default 0.99
        Real rows are outside an edge at the rate ``1 - quantile``.
    random_state : int
        The row sample (only when the data has more than ``max_rows`` rows).
    calibration_rows : int, default 1000
        How many of the rows (evenly spaced, all when fewer) are measured at their own values to
        set the edges; every row is a neighbour and an augmented row.

    Attributes
    ----------
    rows : ndarray
        Positions of the rows taking part (all rows unless sampled).
    sampled : bool
    """

    def __init__(self, frame: Frame, kinds: dict, *, k: int = 5, max_rows: int = 4000, quantile: float = 0.99,
                 random_state: int = 0, calibration_rows: int = 1000, max_levels: int | None = None,
                 max_mb: float | None = None):
        if not isinstance(calibration_rows, (int, np.integer)) or calibration_rows < 100:
            raise InputError(f"calibration_rows must be an integer of at least 100, got {calibration_rows!r}.")
        if not isinstance(k, (int, np.integer)) or k < 1:
            raise InputError(f"k must be a positive integer, got {k!r}.")
        if not isinstance(max_rows, (int, np.integer)) or max_rows < 2:
            raise InputError(f"max_rows must be an integer of at least 2, got {max_rows!r}.")
        if not 0.5 <= float(quantile) < 1:
            raise InputError(f"quantile must lie in [0.5, 1), got {quantile!r}.")
        unknown = {v for v in kinds.values()} - {"numeric", "categorical"}
        if unknown:
            raise InputError(f"kinds must be 'numeric' or 'categorical', got {sorted(map(str, unknown))}.")
        missing = [f for f in kinds if f not in frame.names]
        if missing:
            raise InputError(f"the out-of-distribution check got features the data does not have: {missing}.")
        if max_levels is not None and (not isinstance(max_levels, (int, np.integer)) or max_levels < 2):
            raise InputError(f"max_levels must be an integer of at least 2 or None, got {max_levels!r}.")
        n = frame.n_rows
        if n < 2:
            raise InputError("the out-of-distribution check needs at least two rows.")
        mapper = one_part(frame)  # every row here, or a PartFrame's parts on its workers
        cats = [j for j, name in enumerate(frame.names) if kinds.get(name) == "categorical"]
        orders = dict(zip(cats, level_order(mapper, cats))) if cats else {}
        if max_mb is not None:
            facts = {frame.names[j]: (sum(not _is_missing(v) for v, _ in o), any(_is_missing(v) for v, _ in o))
                     for j, o in orders.items()}
            width = support_width(frame, kinds, max_levels, facts)
            need = support_bytes(min(n, int(max_rows)), width)
            if need > float(max_mb) * 1e6:
                raise InputError(
                    f"the out-of-distribution check of these {len(kinds)} features needs {need / 1e6:,.0f} MB "
                    f"({width:,} embedded columns), above max_batch_mb ({float(max_mb):,.0f} MB); audit fewer "
                    "features (features), lower max_levels, leave 'ood_share' out of utilities or raise max_batch_mb.")
        self.sampled = n > max_rows
        if self.sampled:
            rng = np.random.default_rng(random_state)
            self.rows = np.sort(rng.choice(n, size=int(max_rows), replace=False))
        else:
            self.rows = np.arange(n)
        m = self.rows.size
        self.k = int(min(k, m - 1))
        self.quantile = float(quantile)
        self.kinds = kinds
        self.cols: dict = {}  # name -> (kind, columns of the embedding, scale or levels)
        self.values: dict = {}  # name -> (standardised values or level codes, sort order of numbers)
        medians = _medians(mapper, frame, [j for j, name in enumerate(frame.names) if kinds.get(name) == "numeric"])
        sample = frame.take_rows(self.rows)  # the rows taking part, brought here (at most max_rows)
        blocks, start = [], 0
        for j, name in enumerate(frame.names):
            if name not in kinds:
                continue
            v = sample.column(j)
            if kinds[name] == "numeric":
                x = np.asarray(v, dtype=float)
                x = np.where(np.isfinite(x), x, medians[j])
                scores = _RankScores(x)
                z = scores(x)
                blocks.append(z[:, None])
                self.cols[name] = (NUMERIC, np.arange(start, start + 1), scores)
                self.values[name] = (z, np.argsort(z, kind="stable"))
                start += 1
            else:
                codes, uniques = level_codes(v, max_levels, orders[j])
                onehot = np.zeros((m, len(uniques)))
                onehot[np.arange(m), codes] = np.sqrt(0.5)
                blocks.append(onehot)
                self.cols[name] = (CATEGORICAL, np.arange(start, start + len(uniques)),
                                   {u: i for i, u in enumerate(uniques) if u is not _POOLED})
                self.values[name] = (codes.astype(float), None)
                start += len(uniques)
        if not blocks:
            raise InputError("the out-of-distribution check needs at least one feature.")
        self.embedding = np.hstack(blocks)
        n_cal = min(m, int(calibration_rows))
        self.calibration_rows = np.unique(np.linspace(0, m - 1, n_cal).round().astype(np.int64))
        centred = self.embedding - self.embedding.mean(axis=0)
        cov = centred.T @ centred / m
        vals, vecs = np.linalg.eigh(cov)
        self.precision = (vecs / (np.clip(vals, 0.0, None) + RIDGE)) @ vecs.T
        self._centred = centred

    @property
    def standard_error(self) -> float:
        """Largest Monte-Carlo standard error of a share (0 when every row takes part)."""
        return 0.5 / np.sqrt(self.rows.size) if self.sampled else 0.0

    # ------------------------------------------------------------------ helpers
    def _columns(self, features) -> np.ndarray:
        if len(features) not in (1, 2):
            raise InputError("the OOD share is computed for 1D and 2D PDs.")
        if len(set(features)) != len(features):
            raise InputError(f"a 2D PD needs two different features, got {tuple(features)}.")
        unknown = [f for f in features if f not in self.cols]
        if unknown:
            raise InputError(f"the out-of-distribution check has no feature {unknown[0]!r} "
                             f"(it knows {sorted(self.cols)}).")
        return np.concatenate([self.cols[f][1] for f in features])

    def _embed_grid(self, name, grid) -> tuple[np.ndarray, np.ndarray]:
        """(points in the feature's embedded columns, unseen-level mask) of one feature's grid."""
        kind, cols, info = self.cols[name]
        grid = np.asarray(grid, dtype=object if kind == CATEGORICAL else float).ravel()
        if kind == NUMERIC:
            if grid.size == 0 or not np.all(np.isfinite(grid)):
                raise InputError(f"the grid of {name!r} must be non-empty and finite.")
            return info(grid)[:, None], np.zeros(grid.size, dtype=bool)
        if grid.size == 0:
            raise InputError(f"the grid of {name!r} must be non-empty.")
        pts = np.zeros((grid.size, cols.size))
        unseen = np.zeros(grid.size, dtype=bool)
        for i, v in enumerate(grid.tolist()):
            if v in info:
                pts[i, info[v]] = np.sqrt(0.5)
            else:
                unseen[i] = True  # a level no row has: outside by definition
        return pts, unseen

    def _query_values(self, name, grid, shape, j) -> np.ndarray:
        """A feature's grid as the kernel's values (rank scores, or level codes; -2 = unseen) at every cell."""
        kind, _, info = self.cols[name]
        if kind == NUMERIC:
            v = info(np.asarray(grid, dtype=float).ravel())
        else:
            v = np.array([info.get(x, -2) for x in np.asarray(grid, dtype=object).ravel().tolist()], dtype=float)
        if len(shape) == 1:
            return v
        return np.repeat(v, shape[1]) if j == 0 else np.tile(v, shape[0])

    def _cells(self, features, grids):
        """Every cell of the grid as a point in the moved features' columns, its unseen mask, grid shape, and each
        feature's own grid points (their columns only)."""
        if len(grids) != len(features):
            raise InputError(f"{len(features)} features need {len(features)} grids, got {len(grids)}.")
        parts = [self._embed_grid(f, g) for f, g in zip(features, grids)]
        if len(parts) == 1:
            return parts[0][0], parts[0][1], (parts[0][0].shape[0],), [parts[0][0]]
        (pa, ua), (pb, ub) = parts
        A, B = pa.shape[0], pb.shape[0]
        pts = np.hstack([np.repeat(pa, B, axis=0), np.tile(pb, (A, 1))])
        unseen = np.repeat(ua, B) | np.tile(ub, A)
        return pts, unseen, (A, B), [pa, pb]

    @staticmethod
    def _cross_terms(points, chol, mean):
        """The conditional check's cross terms (:func:`autopdp.trust.ood_kernel.conditional_outside`): each
        feature's grid points, whitened on their own columns, against every row's conditional mean; a cell's
        product with a mean is the sum of its features' rows.  Returns (rows (p, m), each cell's first and second
        row (-1: none), the length of each cell's whitened parts)."""
        whitened, start = [], 0
        for p in points:
            whitened.append(p @ chol[start:start + p.shape[1]])
            start += p.shape[1]
        rows = np.ascontiguousarray(np.vstack([w @ mean.T for w in whitened]))
        lengths = [np.sqrt(np.einsum("ij,ij->i", w, w)) for w in whitened]
        if len(points) == 1:
            n = points[0].shape[0]
            return rows, np.arange(n, dtype=np.int64), np.full(n, -1, dtype=np.int64), lengths[0]
        A, B = points[0].shape[0], points[1].shape[0]
        first = np.repeat(np.arange(A, dtype=np.int64), B)
        second = A + np.tile(np.arange(B, dtype=np.int64), A)
        return rows, first, second, lengths[0][first] + lengths[1][second - A]

    def _plane(self, features):
        """The kernel's view of the moved features: values, kinds, search axis, sort order, sorted values, and for a
        numeric feature with a categorical one the rows sorted within each level (order, level starts, values on
        the axis; empty otherwise, :func:`autopdp.trust.ood_kernel.kth_distance`)."""
        values = np.ascontiguousarray(np.stack([self.values[f][0] for f in features]))
        kinds = np.array([self.cols[f][0] for f in features], dtype=np.int64)
        axis = next((j for j, f in enumerate(features) if kinds[j] == NUMERIC), -1)
        no_levels = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0))
        if axis < 0:
            return (values, kinds, -1, np.zeros(1, dtype=np.int64), np.zeros((1, 1))) + no_levels
        order = self.values[features[axis]][1]
        levels = no_levels
        if len(features) == 2 and kinds[1 - axis] == CATEGORICAL:
            codes = values[1 - axis]
            by_level = np.lexsort((values[axis], codes))
            starts = np.searchsorted(codes[by_level], np.arange(int(codes.max()) + 2), side="left")
            levels = (by_level.astype(np.int64), starts.astype(np.int64),
                      np.ascontiguousarray(values[axis][by_level]))
        return (values, kinds, axis, order, np.ascontiguousarray(values[:, order])) + levels

    def _own(self, features):
        """Per PD: the plane check's inputs, the conditional model, both edges, their level and the own rows' OOD share."""
        from .ood_kernel import kth_distance

        cols = self._columns(features)
        z = self.embedding[:, cols]
        plane = self._plane(features)
        cal = self.calibration_rows  # the rows whose own values set the edges
        m = cal.size
        z = z[cal]
        own_plane = np.sqrt(kth_distance(*plane[:2], np.ascontiguousarray(plane[0][:, cal]), cal, self.k,
                                         *plane[2:]))
        p_ss = self.precision[np.ix_(cols, cols)]
        h = self._centred @ self.precision[:, cols]  # P_S. (x - mu), row by row
        resid = np.linalg.solve(p_ss, h.T).T  # x_S - m
        chol = np.linalg.cholesky(p_ss)  # P_SS = L L'
        mean = (self.embedding[:, cols] - resid) @ chol  # the conditional means, in whitened coordinates
        white = resid[cal] @ chol
        own_cond = np.sqrt(np.einsum("ij,ij->i", white, white))
        # one level tau for both edges: real rows outside either edge at the rate 1 - quantile
        rank_p = np.searchsorted(np.sort(own_plane), own_plane, side="right") / m
        rank_c = np.searchsorted(np.sort(own_cond), own_cond, side="right") / m
        u = np.maximum(rank_p, rank_c)
        level = float(np.quantile(u, self.quantile, method="higher"))
        edge_p = float(own_plane[rank_p <= level].max()) if np.any(rank_p <= level) else 0.0
        edge_c = float(own_cond[rank_c <= level].max()) if np.any(rank_c <= level) else 0.0
        own_share = float(np.mean((own_plane > edge_p) | (own_cond > edge_c)))
        return plane, chol, mean, edge_p, edge_c, level, own_share

    # ------------------------------------------------------------------ public
    def measure(self, features: tuple, grids: tuple) -> OODMeasure:
        """The OOD measurement of a 1D or 2D PD's grid (see :class:`OODMeasure`)."""
        features = tuple(features)
        from .ood_kernel import conditional_outside, kth_distance

        plane, chol, mean, edge_p, edge_c, level, own_share = self._own(features)
        pts, unseen, shape, points = self._cells(features, grids)
        queries = np.ascontiguousarray(np.stack([self._query_values(f, g, shape, j)
                                                 for j, (f, g) in enumerate(zip(features, grids))]))
        dist = np.sqrt(kth_distance(*plane[:2], queries, np.full(queries.shape[1], -1), self.k, *plane[2:]))
        dist = np.where(unseen, np.inf, dist)
        cell_outside = dist > edge_p
        white = np.ascontiguousarray(pts @ chol)
        mean = np.ascontiguousarray(mean)
        cond = conditional_outside(mean, white, edge_c * edge_c * (1 + 1e-12) + 1e-12,
                                   *self._cross_terms(points, chol, mean)) / mean.shape[0]
        plane = dist
        share = np.where(cell_outside, 1.0, cond)
        return OODMeasure(share=share.reshape(shape), plane_distance=plane.reshape(shape),
                          cell_outside=cell_outside.reshape(shape), conditional_share=cond.reshape(shape),
                          plane_edge=edge_p, conditional_edge=edge_c, level=level, own_share=own_share)

    def share(self, features: tuple, grids: tuple) -> np.ndarray:
        """OOD share at every grid cell (shape = grid shape) of a 1D or 2D PD."""
        return self.measure(features, grids).share

    def own_share(self, features: tuple) -> float:
        """Share of the real rows that are OOD at their own values of ``features`` (the calibration)."""
        return self._own(tuple(features))[-1]

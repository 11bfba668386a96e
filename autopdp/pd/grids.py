"""Feature specs and the grids partial dependence is evaluated on.

Numeric features
    ``grid_method="quantile"`` (default): quantiles of the observed values at
    ``grid_resolution`` evenly spaced probabilities between ``percentiles``;
    ``"uniform"``: evenly spaced values between those two percentiles.  A
    feature with at most :func:`discrete_limit` distinct values (50 for a 1D
    grid of 20 points) gets every value.  Integer columns get integer grid
    points.  When a few values dominate (the quantiles collapse onto them), the
    remaining points are quantiles of the other rows' values, so the grid
    reaches every region that holds rows and no point falls where there are
    none (:func:`_dominated_grid`).

Categorical features
    Every observed level: the category order for an ordered pandas
    Categorical, sorted order otherwise.  A subset can be given with
    ``custom_values``.

Missing values
    NaN never becomes a grid point.  Rows whose value is missing still take
    part in the PD (their value is replaced by each grid value like any other
    row) but are not counted as near any grid point; their number is kept as
    ``n_missing``.  Infinite values are rejected with an error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .data import Frame, is_categorical_dtype
from .profiles import LEVELS, NUMBERS, frame_profiles, one_part, profiles, quantiles_of
from ..errors import InputError, advice

__all__ = ["FeatureSpec", "build_spec", "resolve_categorical", "nearest_grid_index"]

NUMERIC = "numeric"
CATEGORICAL = "categorical"


@dataclass(frozen=True, eq=False)
class FeatureSpec:
    """One explained feature: where it is, what kind it is and its grid."""

    name: str
    position: int
    kind: str  # "numeric" | "categorical"
    grid: np.ndarray
    ordered: bool  # numeric features and ordered categoricals have a meaningful order
    n_missing: int
    note: str = ""  # e.g. that a categorical grid was capped

    @property
    def size(self) -> int:
        return int(self.grid.shape[0])


def resolve_categorical(frame: Frame, categorical_features, integer_as_categorical: int = 0,
                        columns=None) -> np.ndarray:
    """Boolean mask: which columns are categorical.

    Non-numeric dtypes (object, string, category, bool) are always categorical.
    ``categorical_features`` (names, positions or a boolean mask) marks more
    columns categorical; integer columns with at most ``integer_as_categorical``
    unique values are categorical too (0 turns that off).  ``columns``: the columns' profiles
    (:func:`~autopdp.pd.profiles.frame_profiles` with ``cap=integer_as_categorical``; made here when not given).
    """
    if columns is None:
        columns = frame_profiles(frame, cap=max(0, int(integer_as_categorical or 0)))
    p = frame.n_features
    mask = np.array([is_categorical_dtype(frame.dtype(j)) for j in range(p)], dtype=bool)
    if not frame.is_frame and frame.data.dtype == object:
        mask[:] = True
    declared = np.zeros(p, dtype=bool)
    if categorical_features is not None:
        cf = list(np.atleast_1d(np.asarray(categorical_features, dtype=object)))
        if len(cf) == p and all(isinstance(v, (bool, np.bool_)) for v in cf):
            declared |= np.asarray(cf, dtype=bool)
        else:
            for f in cf:
                declared[frame.position_of(f)] = True
        mask |= declared
    for j in range(p):
        if mask[j] and not declared[j] and not pd.api.types.is_bool_dtype(frame.dtype(j)) \
                and not isinstance(frame.dtype(j), pd.CategoricalDtype):
            _reject_numbers_stored_as_text(frame, j, columns[j])
    if integer_as_categorical and integer_as_categorical > 0:
        for j in range(p):
            if not mask[j] and pd.api.types.is_integer_dtype(frame.dtype(j)):
                distinct = columns[j].distinct  # None: more than integer_as_categorical
                if distinct is not None and distinct[0].size + (columns[j].n_missing > 0) <= integer_as_categorical:
                    mask[j] = True  # (a missing value counts as one more value, as numpy.unique counts NaN)
    return mask


#: A number written with a decimal comma ("3,0", "-12,75", "1.234,5"), or a whole number beside such values.
_DECIMAL_COMMA = re.compile(r"^\s*[-+]?\d{1,3}(?:\.\d{3})*,\d+\s*$|^\s*[-+]?\d+,\d+\s*$")
_WHOLE = re.compile(r"^\s*[-+]?\d+\s*$")


def decimal_comma_hint() -> str:
    """What to do about numbers written with decimal commas, for the interface in use."""
    return advice(
        cli="pass --decimal ',' (with --sep ';' when the fields are separated by semicolons, as such files usually "
            "are)",
        python="read the file with pandas.read_csv(..., decimal=',') (and sep=';' when the fields are separated by "
               "semicolons), or convert the column with .str.replace(',', '.').astype(float)",
    )


def looks_like_decimal_commas(values, counts=None) -> bool:
    """Text values that are nearly all numbers written with a decimal comma (whole numbers allowed beside them).

    ``counts``: how many times each of ``values`` occurs (distinct values with their counts stand for the
    column, the same answer at a fraction of the work on a long column)."""
    text = pd.Series(values, dtype=object)
    w = pd.Series(np.ones(len(text)) if counts is None else np.asarray(counts, dtype=float), index=text.index)
    keep = text.notna() & text.map(lambda v: isinstance(v, str))
    text, w = text[keep], w[keep]
    if text.empty:
        return False
    comma = text.str.match(_DECIMAL_COMMA).to_numpy(dtype=bool)
    whole = text.str.match(_WHOLE).to_numpy(dtype=bool)
    w = w.to_numpy()
    return bool(comma.any()) and float(np.sum(w[comma | whole]) / np.sum(w)) >= 0.9


def _reject_numbers_stored_as_text(frame: Frame, position: int, profile) -> None:
    """A text column whose values are nearly all numbers is a numeric column with bad values (``profile``: its
    levels with their counts, :class:`~autopdp.pd.profiles.LevelProfile`)."""
    if not profile.counts or bool in set(map(type, profile.counts)):  # no value, or booleans (bool is final)
        return
    name = frame.names[position]
    # each distinct value once, with its count (in order of first appearance): the same shares as every row's
    values = pd.Series(list(profile.counts), dtype=object)
    counts = np.asarray(list(profile.counts.values()), dtype=float)
    if looks_like_decimal_commas(values, counts):
        example = values[values.map(lambda v: isinstance(v, str) and "," in v)].iloc[0]
        raise InputError(
            f"Feature {name!r} holds numbers written with a decimal comma (such as {example!r}), read as text: "
            f"{decimal_comma_hint()}; or list the column in categorical_features"
            f"{advice(cli=' in the --config file', python='')} if it is categorical."
        )
    parsed = pd.to_numeric(values, errors="coerce")
    share = float(np.sum(counts[parsed.notna().to_numpy()]) / np.sum(counts))
    if 0.9 <= share < 1.0:
        bad = list(dict.fromkeys(values[parsed.isna()].astype(str).tolist()))[:3]
        fix = advice(
            cli=f"mark them as missing with --na-values (e.g. --na-values '{bad[0]}') or correct them in the data "
                "file, or list the column in categorical_features in the --config file to treat it as categorical",
            python="convert them to numbers or NaN (e.g. pandas.to_numeric(errors='coerce') or "
                   "read_csv(na_values=...)), or list the column in categorical_features to treat it as categorical",
        )
        raise InputError(f"Feature {name!r} looks numeric but holds non-numeric values such as {bad}: {fix}.")


def bin_edges(lo: float, hi: float, bins: int) -> np.ndarray:
    """``bins`` equal-width edges from ``lo`` to ``hi``, fewer when floating point cannot separate them.

    A range such as ``[0, 5e-324]`` has no room for 30 distinct edges; the representable ones are
    kept (at least two), so a histogram over it never fails.
    """
    if not hi > lo:
        lo, hi = lo - 0.5, hi + 0.5
    edges = np.unique(np.linspace(lo, hi, bins + 1))
    return edges if edges.size >= 2 else np.array([lo, hi])


def unresolvable_range(lo: float, hi: float, bins: int = 30) -> bool:
    """Whether finite values from ``lo`` to ``hi`` (``lo > hi``: none) span a range floating point cannot resolve:
    one value, or a range too small to divide into ``bins`` distinct steps (e.g. ``[0, 5e-324]``): no grid or
    histogram can show a change of the model's response along it."""
    return not hi > lo or np.unique(np.linspace(lo, hi, bins + 1)).size < bins + 1


def _is_integer_column(frame: Frame, position: int) -> bool:
    dtype = frame.dtype(position)
    return pd.api.types.is_integer_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)


def _numeric_grid(profile, name: str, grid_resolution: int, percentiles, method: str, integer: bool,
                  select) -> np.ndarray:
    """A numeric column's grid from its profile (:class:`~autopdp.pd.profiles.NumericProfile`); ``select(exclude,
    wants)`` gives ``(n, quantiles)`` of its finite values (:func:`~autopdp.pd.profiles.quantiles_of`)."""
    if profile.n_inf:
        raise InputError(
            f"Feature {name!r} has infinite values: replace them (e.g. with NaN or a cap) before computing partial dependence."
        )
    if profile.n_finite == 0:
        raise InputError(f"Feature {name!r} has no non-missing values: drop the column or fill its values.")
    if profile.distinct is not None:  # at most discrete_limit values
        grid = profile.distinct[0]  # a discrete feature: every value (Bike Sharing's hr keeps 0, 7, 17 and 23)
    else:
        probs = np.linspace(percentiles[0], percentiles[1], grid_resolution)
        wants = [(np.asarray(percentiles, dtype=float), "linear")] + ([(probs, "linear")] if method == "quantile" else [])
        _, got = select((), wants)
        lo, hi = got[0]
        if method == "quantile":
            grid = np.unique(got[1])
            if grid.size < grid_resolution:  # collapsed quantiles: one value holds a large share of the rows
                grid = _dominated_grid(grid, grid_resolution, percentiles, select)
        else:
            if lo == hi:  # one value dominates the percentile window: use the full range
                lo, hi = profile.lo, profile.hi
            grid = np.linspace(lo, hi, grid_resolution)
    if integer:
        grid = np.unique(np.round(grid)).astype(np.int64)
    return grid


def discrete_limit(grid_resolution: int) -> int:
    """Numeric features with at most this many distinct values get every value as a grid point.

    ``max(grid_resolution, min(50, 2.5 * grid_resolution))``: 50 for the default
    1D grid of 20 points, 25 for the default 2D grid of 10 per axis.
    """
    return int(max(grid_resolution, min(50, round(2.5 * grid_resolution))))


def _dominated_grid(grid: np.ndarray, grid_resolution: int, percentiles, select) -> np.ndarray:
    """Grid of a feature where a few values hold most rows (quantiles collapse onto them).

    The collapsed quantiles are kept (they are the dominant values) and the
    remaining points are quantiles, at evenly spaced probabilities between the
    ``percentiles``, of the rows whose value is not one of them.  The grid
    thereby reaches the regions where the other rows are (Adult capital_gain:
    the 8% of non-zero gains, up to the 15,024 and 99,999 clusters) and every
    point holds rows, instead of evenly spaced points between the percentiles
    that fall where there is no data.
    """
    need = grid_resolution - grid.size
    if need <= 0:
        return grid
    probs = np.linspace(percentiles[0], percentiles[1], need) if need > 1 else np.array([0.5])
    n_rest, got = select(tuple(grid.tolist()), [(probs, "inverted_cdf")])  # observed values only
    if n_rest == 0:
        return grid
    return np.unique(np.concatenate([grid, got[0]]))


def _sorted_levels(levels) -> np.ndarray:
    levels = list(levels)
    try:
        levels = sorted(levels)
    except TypeError:  # mixed types: order by their text
        levels = sorted(levels, key=lambda v: (type(v).__name__, str(v)))
    out = np.empty(len(levels), dtype=object)
    out[:] = levels
    return out


def _categorical_grid(frame: Frame, position: int, profile, max_levels: int | None = None) -> tuple[np.ndarray, bool, str]:
    """A categorical column's levels from its profile (:class:`~autopdp.pd.profiles.LevelProfile`): capped at the
    ``max_levels`` most frequent (ties: the level seen first)."""
    dtype = frame.dtype(position)
    levels, counts = list(profile.counts), list(profile.counts.values())
    if not levels:
        raise InputError(f"Feature {frame.names[position]!r} has no non-missing values: drop the column or fill its values.")
    observed = np.empty(len(levels), dtype=object)
    observed[:] = levels
    note = ""
    if max_levels is not None and len(levels) > max_levels:
        top = sorted(range(len(levels)), key=lambda k: -counts[k])[:max_levels]  # a stable sort
        share = sum(counts[k] for k in top) / sum(counts)
        note = (
            f"{frame.names[position]!r} has {len(levels):,} levels; its grid keeps the {max_levels} most frequent "
            f"({share:.0%} of the rows)."
        )
        single = sum(counts[k] == 1 for k in top)
        if single:
            note += (f" {single} of the kept levels are held by a single row each: if {frame.names[position]!r} "
                     "identifies rows (an ID, a name), those levels are values of individual rows and the report "
                     "publishes them; leave it out of the audit (the config's `features`).")
        observed = observed[top]
    if isinstance(dtype, pd.CategoricalDtype):
        present = set(observed.tolist())
        levels = [c for c in dtype.categories if c in present]
        out = np.empty(len(levels), dtype=object)
        out[:] = levels
        return out, bool(dtype.ordered), note
    # a boolean is ordered, False < True (0 < 1): monotonicity and slope apply to it
    booleans = pd.api.types.is_bool_dtype(dtype) or all(isinstance(v, (bool, np.bool_)) for v in observed.tolist())
    return _sorted_levels(observed.tolist()), bool(booleans), note


def _custom_grid(values, name: str, kind: str, frame: Frame, position: int) -> np.ndarray:
    arr = np.asarray(values, dtype=object).ravel()
    if arr.size == 0:
        raise InputError(f"custom_values for {name!r} is empty: give at least one grid value.")
    if kind == NUMERIC:
        try:
            num = np.asarray(values, dtype=float).ravel()
        except (TypeError, ValueError):
            raise InputError(f"custom_values for numeric feature {name!r} must be numbers, got {list(arr[:5])!r}.") from None
        if not np.all(np.isfinite(num)):
            raise InputError(f"custom_values for {name!r} contain NaN or inf: give finite grid values.")
        grid = np.unique(num)
        if _is_integer_column(frame, position) and np.all(grid == np.round(grid)):
            grid = grid.astype(np.int64)
        return grid
    dtype = frame.dtype(position)
    if isinstance(dtype, pd.CategoricalDtype):
        unknown = [v for v in arr if v not in set(dtype.categories)]
        if unknown:
            raise InputError(
                f"custom_values for categorical feature {name!r} contain levels {unknown!r} that are not categories of the column."
            )
    out = np.empty(len(dict.fromkeys(arr.tolist())), dtype=object)
    out[:] = list(dict.fromkeys(arr.tolist()))
    return out


def build_spec(
    frame: Frame,
    position: int,
    *,
    categorical: bool,
    grid_resolution: int,
    percentiles,
    grid_method: str,
    custom_values=None,
    max_levels: int | None = None,
    mapper=None,
) -> FeatureSpec:
    """Build the :class:`FeatureSpec` (kind and grid) of one column from its profile over the row partitions of
    ``mapper`` (:mod:`autopdp.pd.profiles`; by default every row of ``frame`` here, as one partition)."""
    name = frame.names[position]
    kind = CATEGORICAL if categorical else NUMERIC
    mapper = one_part(frame) if mapper is None else mapper
    cap = 0 if custom_values is not None else discrete_limit(grid_resolution)  # a custom grid needs only the counts
    (profile,) = profiles(mapper, [position], [LEVELS if categorical else NUMBERS], cap)
    note = ""
    if custom_values is not None:
        grid = _custom_grid(custom_values, name, kind, frame, position)
        ordered = kind == NUMERIC or (
            isinstance(frame.dtype(position), pd.CategoricalDtype) and bool(frame.dtype(position).ordered)
        )
    elif kind == NUMERIC:
        def select(exclude, wants):
            ((n, got),) = quantiles_of(mapper, [(position, exclude, profile.lo, profile.hi, profile.n_finite, wants)])
            return n, got

        grid = _numeric_grid(profile, name, grid_resolution, percentiles, grid_method,
                             _is_integer_column(frame, position), select)
        ordered = True
    else:
        grid, ordered, note = _categorical_grid(frame, position, profile, max_levels)
    return FeatureSpec(name=name, position=position, kind=kind, grid=grid, ordered=ordered,
                       n_missing=profile.n_missing, note=note)


def small_index(index: np.ndarray, size: int) -> np.ndarray:
    """Grid indexes (-1 or inside a grid of ``size`` points) in the smallest integer type that holds them: an
    index kept for every row costs 1 byte a row for a grid of up to 127 points, 2 up to 32,767, else 8."""
    for kind in (np.int8, np.int16):
        if size <= np.iinfo(kind).max:
            return index.astype(kind)
    return index


def nearest_grid_index(values: np.ndarray, spec: FeatureSpec) -> np.ndarray:
    """Index of the grid point nearest each value (-1 for missing or unmatched).

    Numeric: nearest by absolute distance (the density weights of eq. 5 of the
    AutoPDP paper).  Categorical: the level equal to the value.
    """
    if spec.kind == NUMERIC:
        v = np.asarray(values, dtype=float)
        grid = spec.grid.astype(float)
        if grid.size == 1:
            idx = np.zeros(v.shape, dtype=np.int64)
        else:
            mids = (grid[1:] + grid[:-1]) / 2.0
            idx = np.searchsorted(mids, v, side="left").astype(np.int64)
        idx[~np.isfinite(v)] = -1
        return idx
    index = pd.Index(spec.grid.tolist(), dtype=object)
    return np.asarray(index.get_indexer(pd.Series(values, dtype=object)), dtype=np.int64)

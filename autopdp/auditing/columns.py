"""Which asked-for columns an audit explains (stage 0): each column's checks read off its profile
(:mod:`autopdp.pd.profiles`), so they run on row partitions as on a frame held here.

A column is skipped, with a note, when every value is missing, when it is constant, when it looks like an
identifier (nearly one level per row of text or levels; one distinct whole number per row), or when its finite
values span a range floating point cannot divide into grid steps.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..pd.grids import unresolvable_range
from ..pd.profiles import LEVELS, numeric_values, profiles

__all__ = ["IDENTIFIER_SHARE", "IDENTIFIER_MIN_ROWS", "IDENTIFIER_MIN_INT_ROWS", "explained_columns"]

#: A text or categorical column with at least this share of distinct values (over at least
#: :data:`IDENTIFIER_MIN_ROWS` rows) is an identifier: no grid is built of its values.  A column of whole numbers
#: is one only when every value is distinct over at least :data:`IDENTIFIER_MIN_INT_ROWS` rows (a row index, a
#: customer number): an amount in whole units is often nearly unique too (German Credit's credit_amount: 921 of
#: 1,000).
IDENTIFIER_SHARE = 0.9
IDENTIFIER_MIN_ROWS = 20
IDENTIFIER_MIN_INT_ROWS = 200


def _whole_part(rows, position) -> tuple:
    """A partition's ``(all whole and finite, all distinct, least, greatest)`` of a numeric column."""
    v = numeric_values(rows, position)
    if v.size == 0:
        return True, True, np.inf, -np.inf
    whole = bool(np.isfinite(v).all() and (v == np.round(v)).all())
    return whole, bool(np.unique(v).size == v.size), float(v.min()), float(v.max())


def _unique_part(rows, position) -> np.ndarray:
    return np.unique(numeric_values(rows, position))


def _distinct_whole_numbers(mapper, position: int) -> bool:
    """Whether a numeric column holds whole numbers only, every one distinct over all the rows: each partition
    says whether its own are; when the partitions' ranges overlap, their distinct values are compared (one column
    of numbers, brought here only in that case)."""
    parts = [p for p in mapper(_whole_part, position)]
    if not all(whole and distinct for whole, distinct, _, _ in parts):
        return False
    spans = sorted((lo, hi) for _, _, lo, hi in parts if lo <= hi)
    if all(a[1] < b[0] for a, b in zip(spans[:-1], spans[1:])):
        return True
    values = mapper(_unique_part, position)
    return bool(np.unique(np.concatenate(values)).size == sum(v.size for v in values))


def _facts(frame, position: int, profile, counted, mapper) -> tuple:
    """``(all missing, distinct count or None, identifier, constant, unresolvable)`` of one column from its
    profile and, for a categorical one (``counted``), its values' counts."""
    n = profile.n_rows
    numeric = hasattr(profile, "lo")
    distinct = len(counted.counts) if counted is not None else (
        None if profile.distinct is None else int(profile.distinct[0].size) + (profile.n_inf > 0))
    if not numeric:
        ident = n >= IDENTIFIER_MIN_ROWS and distinct >= IDENTIFIER_SHARE * n
        return profile.n_missing == n, distinct, ident, distinct <= 1, False
    constant = profile.n_inf == 0 and profile.lo == profile.hi
    ident = (n >= IDENTIFIER_MIN_INT_ROWS and profile.n_finite == n and frame.dtype(position).kind in "iuf"
             and (distinct is None or distinct == n) and _distinct_whole_numbers(mapper, position))
    return profile.n_missing == n, distinct, ident, constant, unresolvable_range(profile.lo, profile.hi)


def explained_columns(frame, names: list, kinds, columns, mapper) -> tuple[list, list, dict, list]:
    """``(features, unresolvable, levels, notes)``: the columns of ``names`` the audit explains, those skipped as
    effectively constant, each categorical one's count of levels, and a note per skipped column.  ``kinds``: which
    columns are categorical; ``columns``: :func:`autopdp.pd.profiles.frame_profiles` (numbers with distinct values
    up to the integer-as-categorical cap); ``mapper``: the frame's row partitions."""
    positions = [frame.names.index(name) for name in names]
    numeric = [pd.api.types.is_numeric_dtype(frame.dtype(p)) and not pd.api.types.is_bool_dtype(frame.dtype(p))
               for p in positions]
    levelled = [p for p, num in zip(positions, numeric) if not num or kinds[p]]  # their levels are counted
    counted = dict(zip(levelled, profiles(mapper, levelled, [LEVELS] * len(levelled), 0))) if levelled else {}
    features, unresolvable, levels, notes = [], [], {}, []
    for name, position, num in zip(names, positions, numeric):
        all_missing, distinct, ident, constant, tiny = _facts(
            frame, position, columns[position] if num else counted[position], counted.get(position), mapper)
        if kinds[position]:
            levels[name] = distinct
        if all_missing:
            notes.append(f"Feature {name!r} has all values missing in the data and was skipped (the model is "
                         "still given its missing values).")
        elif constant:
            notes.append(f"Feature {name!r} is constant in the data and was skipped.")
        elif ident:
            shown = f"{distinct:,}" if distinct is not None else f"{frame.n_rows:,}"
            notes.append(f"Feature {name!r} looks like an identifier ({shown} distinct values in "
                         f"{frame.n_rows:,} rows) and was skipped: a grid of its values would write them into every "
                         "output. Leave it out of the data (or of config key features) if the model does not use it.")
        elif not kinds[position] and tiny:
            unresolvable.append(name)
            notes.append(f"Feature {name!r} is effectively constant in the data (its values span too small a range "
                         "to resolve in floating point) and was skipped.")
        else:
            features.append(name)
    return features, unresolvable, levels, notes

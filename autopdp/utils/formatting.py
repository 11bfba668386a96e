"""Numbers for people, as every stage writes them (the findings' text and the report)."""

from __future__ import annotations

import numpy as np

__all__ = ["fmt", "share"]


def fmt(v, digits: int = 3, *, grouped: bool = True, missing: str = "n/a") -> str:
    """A number for people: ``digits`` significant digits (3), thousands separators (``grouped``: 1,235 for
    1234.5), ``missing`` for None, NaN and infinity.  ``grouped=False`` writes every number with ``digits``
    significant digits (1234.57 with 6), as a script or a machine reader takes it."""
    if v is None:
        return missing
    if isinstance(v, (bool, np.bool_)):  # a level of a boolean feature reads as the axis shows it
        return str(bool(v))
    try:
        x = float(v)
    except (TypeError, ValueError):
        return str(v)
    if not np.isfinite(x):
        return missing
    if x == 0:
        return "0"
    if grouped and abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def share(v, *bounds) -> str:
    """A share as a percentage, whole unless rounding would make it read as one of ``bounds`` it is not
    (0.502 beside a 50% bound reads "50.2%", never "50% (above 50%)")."""
    v = float(v)
    for digits in (0, 1, 2, 3):
        if not any(v != b and round(100 * v, digits) == round(100 * b, digits) for b in bounds):
            break
    return f"{v:.{digits}%}"


def where_text(name: str, where, how: str) -> str:
    """"; against its increasing trend it falls 0.092 between balance 1,488 and 1,678 (312 rows nearest that
    stretch of the grid)": where a finding's PD breaks its criterion (a score's ``where``), or "" without one."""
    if not where:
        return ""
    change = float(where.get("change", 0.0))
    verb = "rises" if change > 0 else "falls"
    rows = where.get("rows")
    there = f" ({int(rows):,} rows nearest that stretch of the grid)" if rows is not None else ""
    return (f"; {how} it {verb} {fmt(abs(change))} between {name} {fmt(where.get('from'))} and "
            f"{fmt(where.get('to'))}{there}")

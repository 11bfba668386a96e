"""Numbers for people, as every stage writes them (the findings' text and the report)."""

from __future__ import annotations

import numpy as np

__all__ = ["fmt"]


def fmt(v, digits: int = 3) -> str:
    """A number for people: 3 significant digits, thousands separators, n/a for missing."""
    if v is None:
        return "n/a"
    try:
        x = float(v)
    except (TypeError, ValueError):
        return str(v)
    if not np.isfinite(x):
        return "n/a"
    if x == 0:
        return "0"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"

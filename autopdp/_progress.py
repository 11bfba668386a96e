"""Progress bars only where a person is watching: a terminal, not CI or a log."""

from __future__ import annotations

import os
import sys

__all__ = ["progress_iter", "progress_enabled"]


def progress_enabled(enabled=None) -> bool:
    """``enabled`` if given, else True only on an interactive stderr outside CI."""
    if enabled is not None:
        return bool(enabled)
    if os.environ.get("CI") or os.environ.get("AUTOPDP_NO_PROGRESS"):
        return False
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def progress_iter(iterable, *, total: int, desc: str, enabled=None):
    """Wrap ``iterable`` in a tqdm bar (done / total, elapsed, ETA) when enabled."""
    if not progress_enabled(enabled):
        return iterable
    from tqdm.auto import tqdm

    return tqdm(iterable, total=total, desc=desc, unit="PD", leave=False, file=sys.stderr)

"""Progress bars only where a person is watching: a terminal, not CI or a log."""

from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager

__all__ = ["progress_bar", "progress_enabled", "announce", "say"]


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


class _NoBar:
    def update(self, n=1):
        pass

    def close(self):
        pass


def progress_bar(*, total: int, desc: str, enabled=None):
    """A tqdm bar (done / total, elapsed, ETA) when enabled, else a silent stand-in."""
    if not progress_enabled(enabled):
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="PD", leave=False, file=sys.stderr)


@contextmanager
def announce(name: str, enabled=None):
    """Name a long stage on stderr when it starts and ends (only where progress is shown)."""
    on = progress_enabled(enabled)
    t0 = time.perf_counter()
    if on:
        print(f"autopdp: {name} ...", file=sys.stderr, flush=True)
    yield
    if on:
        print(f"autopdp: {name} done in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)


def say(name: str, enabled=None) -> None:
    """Name a stage that shows its own progress bar (the PD computations)."""
    if progress_enabled(enabled):
        print(f"autopdp: {name} ...", file=sys.stderr, flush=True)

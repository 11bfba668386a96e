"""Progress where someone can see it: bars on a terminal, one plain line per stage in a log.

* On an interactive stderr (outside CI): each long stage is named when it starts and ends, the PD
  computations with a tqdm bar.
* Off a terminal (stderr redirected, CI) on the command line: no bar and no start line, one line per
  stage when it ends, with its time (``autopdp: scoring 28 PDs ...: 12.3 s``), so a CI log shows how
  far a long run got. From Python off a terminal (a notebook, a script's log): silent unless asked.
* ``AUTOPDP_NO_PROGRESS`` set: silent.  ``progress=True`` / ``False`` (the Python API) forces bars / silence.

Only these lines go to stderr: warnings stay where the caller captures them.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager

__all__ = ["progress_bar", "progress_enabled", "progress_mode", "announce", "say"]

#: The stage named by :func:`say` that is still running in "lines" mode: ``[name, start]``.
_OPEN: list = []
_LOCK = threading.Lock()  # stages run in threads too (scoring beside the trust checks)


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def progress_mode(enabled=None) -> str:
    """``"bars"``, ``"lines"`` or ``"off"`` (see the module's docstring)."""
    if enabled is not None:
        return "bars" if enabled else "off"
    if os.environ.get("AUTOPDP_NO_PROGRESS"):
        return "off"
    if _stderr_is_terminal() and not os.environ.get("CI"):
        return "bars"
    from ..errors import interface

    return "lines" if interface() == "cli" else "off"


def progress_enabled(enabled=None) -> bool:
    """True when bars are shown: ``enabled`` if given, else only on an interactive stderr outside CI."""
    return progress_mode(enabled) == "bars"


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


def _line(name: str, seconds: float) -> None:
    print(f"autopdp: {name}: {seconds:.1f} s", file=sys.stderr, flush=True)


def _close_said() -> None:
    """End the stage :func:`say` opened in "lines" mode (one line with its time)."""
    with _LOCK:
        opened = _OPEN.pop() if _OPEN else None
    if opened is not None:
        _line(opened[0], time.perf_counter() - opened[1])


@contextmanager
def announce(name: str, enabled=None):
    """A long stage: on a terminal named when it starts and ends; in a log one line with its time at its end."""
    mode = progress_mode(enabled)
    t0 = time.perf_counter()
    if mode == "bars":
        print(f"autopdp: {name} ...", file=sys.stderr, flush=True)
    elif mode == "lines":
        _close_said()
    try:
        yield
    finally:
        if mode == "lines":
            _close_said()  # a stage named inside this one ends with it
    if mode == "bars":
        print(f"autopdp: {name} done in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    elif mode == "lines":
        _line(name, time.perf_counter() - t0)


def say(name: str, enabled=None) -> None:
    """A stage that runs until the next one (the PD computations, which show their own bar on a terminal):
    named when it starts on a terminal; in a log, one line with its time when the next stage starts or the
    stage around it ends."""
    mode = progress_mode(enabled)
    if mode == "bars":
        print(f"autopdp: {name} ...", file=sys.stderr, flush=True)
    elif mode == "lines":
        _close_said()
        with _LOCK:
            _OPEN.append((name, time.perf_counter()))

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

__all__ = ["progress_bar", "progress_enabled", "progress_mode", "announce", "say", "progress_line"]

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

    def set_postfix_str(self, text):
        pass

    def close(self):
        pass


def progress_bar(*, total: int, desc: str, enabled=None):
    """A tqdm bar (done / total, elapsed, ETA) when enabled, else a silent stand-in."""
    if not progress_enabled(enabled):
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="PD", leave=False, file=sys.stderr)


_WRITE = threading.Lock()  # one stage line at a time: two threads' lines never share a line


def _emit(text: str) -> None:
    with _WRITE:
        sys.stderr.write(text + "\n")  # one write: the line and its end together
        sys.stderr.flush()


def _line(name: str, seconds: float) -> None:
    _emit(f"autopdp: {name}: {seconds:.1f} s")


def _done(name: str, seconds: float, mode: str) -> None:
    if mode == "bars":
        _emit(f"autopdp: {name} done in {seconds:.1f} s")
    elif mode == "lines":
        _line(name, seconds)


def _close_said(mode: str = "lines") -> None:
    """End the stage :func:`say` opened (one line with its time)."""
    with _LOCK:
        opened = _OPEN.pop() if _OPEN else None
    if opened is not None:
        _done(opened[0], time.perf_counter() - opened[1], mode)


@contextmanager
def announce(name: str, enabled=None):
    """A long stage: on a terminal named when it starts and ends; in a log one line with its time at its end."""
    mode = progress_mode(enabled)
    t0 = time.perf_counter()
    if mode != "off":
        _close_said(mode)  # a stage :func:`say` opened ends where the next one starts
    if mode == "bars":
        _emit(f"autopdp: {name} ...")
    try:
        yield
    finally:
        if mode != "off":
            _close_said(mode)  # a stage named inside this one ends with it
    _done(name, time.perf_counter() - t0, mode)


def say(name: str, enabled=None) -> None:
    """A stage that runs until the next one (the PD computations, which show their own bar on a terminal):
    named when it starts on a terminal; its time is given (on a terminal "... done in", in a log one line) when
    the next stage starts or the stage around it ends."""
    mode = progress_mode(enabled)
    if mode == "off":
        return
    _close_said(mode)
    if mode == "bars":
        _emit(f"autopdp: {name} ...")
    with _LOCK:
        _OPEN.append((name, time.perf_counter()))


def progress_line(text: str, enabled=None) -> None:
    """One step of a stage (a refit and its time): a line in a log; on a terminal its bar shows it instead."""
    if progress_mode(enabled) == "lines":
        _emit(f"autopdp: {text}")

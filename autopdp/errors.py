"""The errors autopdp raises on purpose about its input.

Every check of the data, model, configuration, policy or options raises
:class:`InputError` (a ``ValueError``) or :class:`InputTypeError` (also a
``TypeError``), with a message naming the problem and what to do.  The command
line reports these, and unreadable files (``OSError``), as bad input (exit 2);
any other exception is a failure of autopdp itself (exit 3), never passed off
as the user's mistake.
"""

from __future__ import annotations

__all__ = ["InputError", "InputTypeError", "ExactnessError", "ClusterError", "advice", "command_line_interface",
           "interface"]


class InputError(ValueError):
    """The input cannot be used as given; the message says why and what to do."""


class InputTypeError(InputError, TypeError):
    """An argument of the wrong type."""


class ExactnessError(RuntimeError):
    """The exact tree path disagrees with a second computation of the same numbers (its own consistency checks,
    or the audit's self-check against the model's predictions): a fault of autopdp, never of the input, reported
    as an internal failure (exit 3)."""


class ClusterError(RuntimeError):
    """The Dask cluster could not finish the work it was given (its workers died running a task, the scheduler
    went away, the tasks were cancelled): neither the input's fault nor autopdp's.  The command line reports it
    as the stage that failed (exit 3), in one line saying what happened and what to do; no output is written and
    an earlier run's outputs are left whole."""


# ---------------------------------------------------------------- advice phrased for the interface in use
from contextlib import contextmanager  # noqa: E402
from contextvars import ContextVar  # noqa: E402

_INTERFACE: ContextVar[str] = ContextVar("autopdp_interface", default="python")


@contextmanager
def command_line_interface():
    """Within this block, :func:`advice` phrases what to do with the command line's flags (``autopdp``'s
    ``main`` runs every command in it); elsewhere with Python's arguments."""
    token = _INTERFACE.set("cli")
    try:
        yield
    finally:
        _INTERFACE.reset(token)


def interface() -> str:
    """``"cli"`` inside :func:`command_line_interface`, else ``"python"``."""
    return _INTERFACE.get()


def advice(*, python: str, cli: str) -> str:
    """The text of a remedy for the interface in use: ``cli`` (flags, the --config file) or ``python``
    (arguments, pandas)."""
    return cli if interface() == "cli" else python

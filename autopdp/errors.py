"""The errors autopdp raises on purpose about its input.

Every check of the data, model, configuration, policy or options raises
:class:`InputError` (a ``ValueError``) or :class:`InputTypeError` (also a
``TypeError``), with a message naming the problem and what to do.  The command
line reports these, and unreadable files (``OSError``), as bad input (exit 2);
any other exception is a failure of autopdp itself (exit 3), never passed off
as the user's mistake.
"""

from __future__ import annotations

__all__ = ["InputError", "InputTypeError"]


class InputError(ValueError):
    """The input cannot be used as given; the message says why and what to do."""


class InputTypeError(InputError, TypeError):
    """An argument of the wrong type."""

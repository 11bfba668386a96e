"""Modules that are also their main function: ``autopdp.audit`` and ``autopdp.gate``.

The package exports the functions ``autopdp.audit(...)`` and ``autopdp.gate(...)`` under the names of the
modules that define them.  Were the package attribute the function, the module's other names
(``autopdp.audit.MIN_ROWS``, ``autopdp.gate.champion_name``) would not resolve as written, and
``import autopdp.audit as m`` would give the function.  So the attribute is the module, and calling the
module calls its function of the same name: both spellings work.
"""

from __future__ import annotations

import sys
import types

__all__ = ["make_callable"]


class _CallableModule(types.ModuleType):
    """A module whose call is its function of the same name (the last part of the module's name)."""

    def __call__(self, *args, **kwargs):
        return getattr(self, self.__name__.rpartition(".")[2])(*args, **kwargs)


def make_callable(name: str) -> None:
    """Make module ``name`` (already in ``sys.modules``) callable as its function of the same name; its
    ``__signature__`` is the function's, so ``help`` and ``inspect.signature`` show the arguments."""
    import inspect

    module = sys.modules[name]
    function = getattr(module, name.rpartition(".")[2])
    module.__signature__ = inspect.signature(function)
    module.__class__ = _CallableModule

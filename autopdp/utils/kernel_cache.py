"""Where numba keeps autopdp's compiled kernels: one cache per machine, not one per installation.

numba's own on-disk cache (``cache=True``) lives in the ``__pycache__`` folder beside the source file, so every
new virtual environment (a CI container, a fresh ``make demo``) compiles the tree, OOD and StratPD kernels again: about
10 s before the first audit.  :func:`install` adds a cache locator, used for autopdp's own modules only, that
keeps them in a user-level folder instead:

* ``$AUTOPDP_CACHE_DIR`` when set, else ``$XDG_CACHE_HOME/autopdp/kernels`` (``~/.cache/autopdp/kernels``);
* one subfolder per kernel module (``pd.tree.kernels-...``) and content of its source file (the first 16 hex digits of its SHA-256), so
  two installed versions of autopdp never overwrite each other's kernels and a changed source is never served
  a stale kernel;
* numba's own index still keys every kernel by its signature, the CPU it was compiled for and the function's
  bytecode: a kernel compiled on another CPU is compiled again, not loaded.

A CI pipeline that starts from a fresh container keeps the kernels across runs by caching that folder (as it
caches pip's), or by running ``autopdp warmup`` when its image is built.  When the folder cannot be created or
written, numba's own locators are used as before.
"""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path

__all__ = ["install", "cache_dir"]

_PACKAGE = Path(__file__).resolve().parent.parent  # autopdp/, whose kernel modules sit in pd/tree/ and trust/


def cache_dir() -> Path:
    """The folder autopdp's compiled kernels are kept in (see the module docs)."""
    own = os.environ.get("AUTOPDP_CACHE_DIR", "").strip()
    if own:
        return Path(own).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "autopdp" / "kernels"


@lru_cache(maxsize=None)
def _content_hash(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _locator_class():
    from numba.core import caching

    class AutopdpKernelLocator(caching._CacheLocator):
        """numba cache locator for autopdp's kernel modules: the user-level folder of :func:`cache_dir`."""

        def __init__(self, py_func, py_file):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            digest = _content_hash(py_file)
            self._stamp = digest
            module = ".".join(Path(py_file).resolve().relative_to(_PACKAGE).with_suffix("").parts)  # pd.tree.kernels
            self._cache_path = str(cache_dir() / f"{module}-{digest[:16]}")

        def get_cache_path(self):
            return self._cache_path

        def get_source_stamp(self):
            return self._stamp  # the source's content: the same file in any installation finds its kernels

        def get_disambiguator(self):
            return str(self._lineno)

        @classmethod
        def from_function(cls, py_func, py_file):
            try:
                if not Path(py_file).resolve().is_relative_to(_PACKAGE):
                    return None  # not autopdp's: numba's own locators decide
                self = cls(py_func, py_file)
                self.ensure_cache_path()
            except (OSError, ValueError):
                return None  # no writable user-level folder: numba's own locators (``__pycache__``) are used
            return self

    return AutopdpKernelLocator


_INSTALLED = False


def install() -> None:
    """Put autopdp's locator first in numba's list (once per process; a no-op when numba's caching machinery
    is not the one this was written for (numba 0.59-0.68): its own locators are then used)."""
    global _INSTALLED
    if _INSTALLED:
        return
    _INSTALLED = True
    try:
        from numba.core import caching

        impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl  # public from numba 0.62
        locators = impl._locator_classes
        cls = _locator_class()
    except (ImportError, AttributeError):  # pragma: no cover - another numba layout
        return
    if not any(getattr(c, "__name__", "") == cls.__name__ for c in locators):
        locators.insert(0, cls)

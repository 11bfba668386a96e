"""Give the C heap's free memory back to the operating system once a large computation is over.

numpy and the compiled kernels allocate their buffers through the C library's ``malloc``; once freed, glibc
keeps much of that memory mapped for later requests, so the process's resident memory stays at the audit's peak
while the report is written (and its PDF process runs beside it).  :func:`release_free_memory` asks glibc to
return the free pages (``malloc_trim``: about a millisecond); on another C library it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

__all__ = ["release_free_memory"]

_TRIM: list = []  # [malloc_trim or None], looked up once


def release_free_memory() -> bool:
    """Return the C heap's free pages to the operating system; True when glibc did (``malloc_trim(0)``)."""
    if not _TRIM:
        trim = None
        if sys.platform.startswith("linux"):
            try:
                libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
                trim = getattr(libc, "malloc_trim", None)  # glibc only (musl has none)
            except OSError:
                trim = None
        if trim is not None:
            trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
        _TRIM.append(trim)
    return bool(_TRIM[0](0)) if _TRIM[0] is not None else False

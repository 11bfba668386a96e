"""Give the C heap's free memory back to the operating system once a large computation is over.

numpy and the compiled kernels allocate their buffers through the C library's ``malloc``; once freed, glibc
keeps much of that memory mapped for later requests, so the process's resident memory stays at the audit's peak
while the report is written (and its PDF process runs beside it).  :func:`release_free_memory` asks glibc to
return the free pages (``malloc_trim``: about a millisecond); on another C library it does nothing.

:func:`limit_heap_arenas` is for a process that is autopdp's own (the command line): glibc gives each thread that
allocates while another holds the heap's lock an arena of its own, up to eight per core, and memory freed in one
arena serves no other.  The audit's stages run threads beside each other (the scoring beside the trust checks, the
kernels' row chunks), so with one arena the full Adult audit peaked about 50 MB lower (650 -> 593 MB resident) at the
same speed (the 200k brute-force command: 26.2-26.7 s with glibc's default, 25.2-26.3 s with one arena).  A library
call (:func:`autopdp.audit`) leaves the caller's process as it is.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

__all__ = ["release_free_memory", "limit_heap_arenas"]

_TRIM: list = []  # [malloc_trim or None], looked up once
_M_ARENA_MAX = -8  # glibc's mallopt parameter (malloc.h)


def _glibc(name: str):
    """glibc's function ``name`` through ctypes, or None (another C library or system)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    return getattr(libc, name, None)  # glibc only (musl has neither)


def release_free_memory() -> bool:
    """Return the C heap's free pages to the operating system; True when glibc did (``malloc_trim(0)``)."""
    if not _TRIM:
        trim = _glibc("malloc_trim")
        if trim is not None:
            trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
        _TRIM.append(trim)
    return bool(_TRIM[0](0)) if _TRIM[0] is not None else False


def limit_heap_arenas(arenas: int = 1) -> bool:
    """Let glibc's ``malloc`` create no more than ``arenas`` heaps in this process (``mallopt(M_ARENA_MAX)``); True
    when glibc took it.  Arenas that exist stay: call it before the process starts its threads.  An environment
    variable ``MALLOC_ARENA_MAX`` the user set wins (glibc reads it at start; it is left as the user chose)."""
    import os

    if os.environ.get("MALLOC_ARENA_MAX"):
        return False
    mallopt = _glibc("mallopt")
    if mallopt is None:
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_ARENA_MAX, int(arenas)))

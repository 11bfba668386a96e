"""The C heap of autopdp's own processes (the command line's, the PDF's): large blocks mapped on their own, and the
free memory given back to the operating system once a large computation is over.

numpy and the compiled kernels allocate their buffers through the C library's ``malloc``.  glibc serves a block
of 128 kB or more with a mapping of its own, unmapped when freed, but it raises that threshold to the size of every
such block freed (up to 32 MB): after the first 24 MB array is freed, the arrays below 24 MB come from the heap,
where freed space stays resident, fragmented between live blocks.  :func:`map_large_blocks` fixes the threshold
(at :data:`LARGE_BLOCK`), which also stops glibc adjusting it; the command line calls it first thing, as does the
PDF's process, and never the Python API (whose process is the caller's).  On full Adult it lowered the command's
peak by 60-65 MB at the same speed (README).  :func:`release_free_memory` asks glibc to return the free pages
(``malloc_trim``: about a millisecond).  On another C library both do nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

__all__ = ["LARGE_BLOCK", "map_large_blocks", "release_free_memory"]

#: Blocks of at least this many bytes get their own mapping (:func:`map_large_blocks`): 1 MiB.
LARGE_BLOCK = 1 << 20
_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter (malloc.h)
_LIBC: list = []  # [glibc's CDLL or None], looked up once


def _glibc():
    if not _LIBC:
        libc = None
        if sys.platform.startswith("linux"):
            try:
                libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            except OSError:
                libc = None
            if libc is not None and not (hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt")):
                libc = None  # musl and others: neither exists
        if libc is not None:
            libc.malloc_trim.argtypes, libc.malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
            libc.mallopt.argtypes, libc.mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
        _LIBC.append(libc)
    return _LIBC[0]


def release_free_memory() -> bool:
    """Return the C heap's free pages to the operating system; True when glibc did (``malloc_trim(0)``)."""
    libc = _glibc()
    return bool(libc.malloc_trim(0)) if libc is not None else False


def map_large_blocks(threshold: int = LARGE_BLOCK) -> bool:
    """Have glibc map every block of at least ``threshold`` bytes on its own and unmap it when freed, whatever
    was freed before (``mallopt(M_MMAP_THRESHOLD)``); True when glibc took the setting."""
    libc = _glibc()
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, int(threshold))) if libc is not None else False

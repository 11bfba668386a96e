"""Atomic file writes: a failed or interrupted run never destroys an earlier output."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["atomic_write_bytes", "atomic_write_text", "ensure_writable_dir"]


def ensure_writable_dir(path: Path) -> Path:
    """Create ``path`` if needed and check we can write there (clear error otherwise)."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OSError(f"Cannot create output directory {str(path)!r}: {exc.strerror or exc}. Choose a writable --out.") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise OSError(f"Output directory {str(path)!r} is not writable; choose a writable --out.")
    return path


def atomic_write_bytes(path, data: bytes) -> Path:
    """Write ``data`` to a temporary file beside ``path``, then rename it into place."""
    path = Path(path)
    ensure_writable_dir(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # what open() would have given, not mkstemp's 0600
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def atomic_write_text(path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask

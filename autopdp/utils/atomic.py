"""Atomic file writes: a failed or interrupted run never destroys an earlier output.

Single files are written to a temporary file beside the target and renamed into
place.  A run's whole set of outputs (results.json, ice.parquet with ``--ice``,
report.html, report.pdf, gate.json, gate.xml) goes through :func:`output_set`: every file is written
into a staging directory inside the output directory first, and only when all
of them succeeded are they renamed over the previous set, together with a
``manifest.json`` that lists the set and each file's sha256.  An earlier run's output that this run
does not write is removed only if it is one of autopdp's output names and still has the sha256 the
earlier manifest recorded: files autopdp did not write are never touched.  A failed or
interrupted run leaves the previous set whole and no temporary files behind,
also when it fails while renaming (the files already renamed are put back).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import re
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

from ..errors import InputError

__all__ = ["atomic_write_bytes", "atomic_write_text", "ensure_writable_dir", "check_output_dir", "output_set",
           "OutputSet", "MANIFEST", "sha256_file"]

MANIFEST = "manifest.json"
_SHA256 = re.compile(r"[0-9a-fA-F]{64}")
_STAGING_PREFIX = ".autopdp-staging-"


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


def sha256_file(path, chunk: int = 1 << 20) -> str:
    """The file's sha256 as ``sha256sum`` prints it (lower-case hex of the bytes)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


#: Every file name a run of the CLI may write into --out.
OUTPUT_NAMES = ("results.json", "ice.parquet", "report.html", "report.pdf", "report.docx", "gate.json", "gate.xml",
                "manifest.json")


def _check_targets(out: Path, names) -> None:
    for name in names:
        target = out / name
        if target.is_dir() and not target.is_symlink():
            raise OSError(f"cannot write {str(target)!r}: a directory of that name is in the way; move it or choose "
                          "another --out.")


def _not_a_link(path: Path) -> Path:
    """``path``, refused when it is a symbolic link: the outputs go to the folder named, never where a link
    planted in its place points."""
    if path.is_symlink():
        raise InputError(f"--out {str(path)!r} is a link to {os.path.realpath(path)!r}; autopdp writes only into a "
                         f"real folder: give that folder itself (--out {os.path.realpath(path)}).")
    return path


def check_output_dir(path, names=OUTPUT_NAMES) -> Path:
    """Check, before any work, that ``path`` is (or can become) a directory we can write into.

    Creates the directory when it is missing and writes and removes a probe
    file in it, so a read-only file system, a file in the way or a missing
    permission is an error now, not after minutes of computation.
    """
    path = _not_a_link(Path(path))
    if path.exists() and not path.is_dir():
        raise OSError(f"--out {str(path)!r} is a file, not a directory; choose a directory for the outputs.")
    ensure_writable_dir(path)
    try:
        fd, probe = tempfile.mkstemp(prefix=".autopdp-probe-", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise OSError(f"Output directory {str(path)!r} is not writable ({exc.strerror or exc}); choose a writable --out.") from None
    _check_targets(path, names)
    return path


class OutputSet:
    """The files of one run, staged in a hidden directory until :meth:`commit`."""

    def __init__(self, out_dir: Path, staging: Path):
        self.out_dir = out_dir
        self.staging = staging
        self.names: list[str] = []

    def write_bytes(self, name: str, data: bytes) -> Path:
        if "/" in name or name in (MANIFEST, "") or name.startswith("."):
            raise InputError(f"output name {name!r} is reserved or not a plain file name.")
        target = self.staging / name
        try:
            with open(target, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(target, 0o666 & ~_umask())
        except OSError as exc:
            raise OSError(f"cannot write {name} into {str(self.out_dir)!r}: {exc.strerror or exc}.") from None
        if name not in self.names:
            self.names.append(name)
        return self.out_dir / name

    def write_text(self, name: str, text: str) -> Path:
        return self.write_bytes(name, text.encode("utf-8"))

    def commit(self, provenance: dict | None = None) -> list[Path]:
        """Rename every staged file over the previous set; drop files of the previous set not in this one
        (only autopdp's output names whose bytes are still those the previous manifest recorded)."""
        _check_targets(self.out_dir, [*self.names, MANIFEST])  # nothing is replaced if one target is blocked
        previous = _read_manifest(self.out_dir)
        files = {name: sha256_file(self.staging / name) for name in self.names}
        manifest = {
            "schema": "autopdp.Manifest/1",
            "written_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "files": files,
        }
        if provenance:
            manifest["provenance"] = provenance
        (self.staging / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True), encoding="utf-8")
        os.chmod(self.staging / MANIFEST, 0o666 & ~_umask())
        # each file is renamed into place atomically; the earlier version is kept (a hard link, else a
        # copy) until every file is in, so a failure half-way puts the earlier set back
        backup = self.staging / ".previous"
        backup.mkdir()
        kept, placed = set(), []
        try:
            for name in [*self.names, MANIFEST]:
                target = self.out_dir / name
                if target.is_file():
                    _keep(target, backup / name)
                    kept.add(name)
                os.replace(self.staging / name, target)
                placed.append(name)
        except BaseException:
            for name in reversed(placed):
                try:
                    if name in kept:
                        os.replace(backup / name, self.out_dir / name)
                    else:
                        os.unlink(self.out_dir / name)
                except OSError:
                    pass
            raise
        for name, digest in previous.items():  # an earlier run's output this run did not write, unchanged since
            target = self.out_dir / name
            if name in files or target.is_symlink() or not target.is_file():
                continue
            try:
                if sha256_file(target) == digest:
                    os.unlink(target)
            except OSError:
                pass
        return [self.out_dir / n for n in self.names]


def _keep(path: Path, backup: Path) -> None:
    """A second name (hard link) for ``path``, or a copy where the file system has no hard links."""
    try:
        os.link(path, backup)
    except OSError:
        shutil.copy2(path, backup)


def _read_manifest(out_dir: Path) -> dict[str, str]:
    """``{name: sha256}`` of the earlier run's outputs that a new run may remove, from its manifest.

    The manifest is a file in a folder others can write to, so it is a hint, never an authority: only
    autopdp's own output names (:data:`OUTPUT_NAMES`) with a well-formed sha256 are kept, and the caller
    removes such a file only while its bytes still have that sha256, i.e. exactly the file autopdp wrote.
    A planted manifest naming ``Makefile`` or ``../x`` removes nothing; a report a user edited is kept.
    """
    try:
        data = json.loads((out_dir / MANIFEST).read_text(encoding="utf-8"))
        files = data.get("files", {})
        items = list(files.items())
    except (OSError, ValueError, AttributeError):
        return {}
    return {n: d.lower() for n, d in items
            if n in OUTPUT_NAMES and n != MANIFEST and isinstance(d, str) and _SHA256.fullmatch(d)}


@contextmanager
def output_set(out_dir):
    """Stage a run's outputs; the caller calls ``commit()`` when every file is written.

    Whatever happens (an error, Ctrl-C), the staging directory is removed on exit,
    so an uncommitted run changes nothing in ``out_dir``.
    """
    out = ensure_writable_dir(_not_a_link(Path(out_dir)))
    staging = Path(tempfile.mkdtemp(prefix=_STAGING_PREFIX, dir=out))
    try:
        yield OutputSet(out, staging)
    finally:
        shutil.rmtree(staging, ignore_errors=True)

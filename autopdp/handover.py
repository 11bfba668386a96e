"""The command's documents written by a fresh process: the audit's process hands its result over and is replaced.

An ``autopdp report`` (``demo``, ``gate``, ``compare``) command computes the audit, then writes the documents.  The
audit needs the model, the data, numba's kernels and scikit-learn; the documents need matplotlib, Jinja, python-docx
and WeasyPrint, and the PDF's own process (:mod:`autopdp.report.pdf_process`).  Written by the process that ran
the audit, the documents would add their libraries and the PDF's process on top of everything the audit left
resident (its libraries, its compiled kernels, the heap it freed but the C library keeps): on full Adult that made
the command's peak 750-830 MB, against 585-593 MB for the audit alone (README, "Full-size data").

So when autopdp is the program (``autopdp ...`` or ``python -m autopdp``, :func:`autopdp.cli.main` called without
``argv``) on a POSIX system and a document is asked for (HTML, PDF or Word), the audit's process ends its own
business (its exit handlers run, as at any exit: worker pools and clusters are shut down) and replaces itself
(``os.execv``) with a new interpreter that writes the documents, logs to MLflow, prints the command's last lines and
exits with the command's code.  The process id, the standard streams and the environment stay the same, so a CI job
or a shell waiting on the command sees one process from start to end.

The audit goes over exactly (every array bit for bit, as the documents would have read it in memory): pickled by
:func:`hand_over` into an unnamed temporary file (``O_TMPFILE`` where the system has it: no other program can open
it, nothing is left behind) whose descriptor alone passes to the new program; :func:`received` reads it there and :func:`autopdp.cli.finish_command` finishes.  Nothing
a user gives is ever read as a pickle: the file is written by the process the new one replaces.

Anywhere else (a call of ``main(argv)`` from Python, Windows, only JSON asked for, a system without ``execv``, an
interpreter that cannot be started) the documents are written in the audit's process, as before; the outputs are
the same (tests/test_handover.py).
"""

from __future__ import annotations

import copyreg
import io
import os
import pickle
import sys
import tempfile
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["DOCUMENTS", "Finish", "can_hand_over", "hand_over", "received"]

#: The formats whose libraries (and the PDF's process) make the hand-over worth its second interpreter's start.
DOCUMENTS = frozenset({"html", "pdf", "docx"})


@dataclass(frozen=True)
class Finish:
    """What a command does once its audit is computed: write the documents, log to MLflow, print its last lines
    and return its exit code (:func:`autopdp.cli.finish`).  Handed to a fresh process when autopdp is the program
    (here, not in :mod:`autopdp.cli`: a class pickled from ``python -m autopdp.cli`` would be ``__main__``'s)."""

    kind: str  # "demo", "report", "gate" or "compare"
    audit: Any
    out: Path
    formats: list
    page_size: str
    started_wall: float  # time.time() when the command started
    templates: dict
    ice: bool = False
    where: Any = None  # the MLflow run to log to, or None
    extra_files: dict | None = None
    gate: Any = None  # the gate's verdict
    comparison: str | None = None
    created: bool = False  # --out did not exist before the run (removed again if the run fails and leaves it empty)


def can_hand_over(formats, *, program: bool) -> bool:
    """True when the command hands its documents over (see module docs)."""
    return (bool(program) and os.name == "posix" and hasattr(os, "execv") and bool(DOCUMENTS & set(formats))
            and os.access(sys.executable or "", os.X_OK))


def _mapping(d: dict):
    return types.MappingProxyType(d)


def _reduce_mapping(m):
    return _mapping, (dict(m),)


def dumps(obj) -> bytes:
    """``obj`` pickled; the read-only mappings of frozen results (``MappingProxyType``) as the mappings they show."""
    buf = io.BytesIO()
    pickler = pickle.Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = {**copyreg.dispatch_table, types.MappingProxyType: _reduce_mapping}
    pickler.dump(obj)
    return buf.getvalue()


def _command(fd: int) -> list[str]:
    from .report.pdf_process import child_command

    then = "from autopdp.handover import received; from autopdp.cli import finish_command; sys.exit(finish_command(received()))"
    cmd = child_command(then=then) + [str(fd)]
    warn = [a for o in sys.warnoptions for a in ("-W", o)]  # the user's -W options (PYTHONWARNINGS is inherited)
    return cmd[:1] + warn + cmd[1:]


def hand_over(finish) -> None:
    """Replace this process with one that finishes the command (:func:`autopdp.cli.finish` of ``finish``).

    Returns only when the new program could not be started (the caller then finishes here)."""
    import atexit

    try:
        data = dumps(finish)
    except Exception:  # noqa: BLE001 - something in the result that cannot be pickled: the documents stay here
        return
    if b"__main__" in data:  # a class of the script that started this process: the new one could not find it, so
        return  # the documents stay here (also, harmlessly, when a name in the audit happens to be "__main__")
    try:
        with tempfile.TemporaryFile() as f:
            f.write(data)
            f.flush()
            fd = os.dup(f.fileno())
        os.lseek(fd, 0, os.SEEK_SET)
        os.set_inheritable(fd, True)
    except OSError:  # no temporary folder to write to (TMPDIR unwritable or full): the documents stay here
        return
    command = _command(fd)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):  # a stream replaced or closed by the caller
            pass
    atexit._run_exitfuncs()  # what this process would do at its exit: pools and clusters shut down
    try:
        os.execv(command[0], command)
    except OSError:  # the interpreter could not be started: the documents are written here
        os.close(fd)


def received():
    """In the new program: the :class:`Finish` read from the descriptor in ``sys.argv[3]`` (then closed)."""
    fd = int(sys.argv[3])
    with os.fdopen(fd, "rb") as f:
        finish = pickle.load(f)  # noqa: S301 - written by the process this one replaced (module docs)
    del sys.argv[1:]
    return finish

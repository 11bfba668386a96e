"""The PDF rendered on a second process, which first draws a share of the PDF's figures.

WeasyPrint is pure Python on one core, and so is matplotlib: on a machine with two or more CPUs the report's
second process (``python -m autopdp.report.pdf_process``) is started when the report begins.  While this process
builds the PDF's context, the child takes the PDF's figures from the end of the queue as this one takes them
from the front (:func:`autopdp.report.figures.draw_all` inside :func:`autopdp.report.figures.sharing_figures`);
then it receives the PDF's HTML, complete, and renders it with the same :func:`autopdp.report.render.render_pdf`
this process would run, while this one draws the HTML's own figures and writes the other formats.  A figure is
the same string wherever it is drawn (fixed SVG ids and metadata, the same fonts).

It is a separate program (the same interpreter and the same autopdp: :func:`child_command`), not a fork or a
multiprocessing child: the caller's script is never run again and no lock held by a thread of this process is
copied.  The two talk over the child's own pipes in length-prefixed pickles (:func:`_send`, :func:`_receive`):
figure jobs and HTML one way, figures and PDF bytes the other; nothing else writes to those pipes, and nothing a
user gives is ever read as a pickle.  Every message is written and read whole whatever the streams' buffering
(:func:`_write_all`, :func:`_read_exact`: under ``PYTHONUNBUFFERED`` the child's stdout is a raw file, whose
write to a full pipe can return after part of it).  If the child cannot start, fails, or takes longer than
:data:`FIGURE_TIMEOUT` over a figure (it is then stopped), what it had not drawn is drawn here and the PDF is
rendered here, as on one CPU, raising what that raises.
"""

from __future__ import annotations

import pickle
import struct
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .figures import NotDrawnThere

__all__ = ["PdfProcess"]

_HEADER = struct.Struct(">Q")

#: Seconds the child may take over one figure before it is stopped and the figure drawn here.
FIGURE_TIMEOUT = 120.0


def _write_all(stream, data) -> None:
    """Every byte of ``data`` written to ``stream``, then flushed.

    A raw stream's ``write`` may take only part of what it is given (``sys.stdout.buffer`` is an unbuffered
    ``FileIO`` under ``python -u`` or ``PYTHONUNBUFFERED``, and a pipe's write(2) can return early), so the rest is
    written until none is left; ``OSError`` when the stream would block (a pipe put in non-blocking mode)."""
    view = memoryview(data)
    while view:
        n = stream.write(view)
        if n is None:
            raise BlockingIOError("the pipe to the other process would block")
        view = view[n:]
    stream.flush()


def _read_exact(stream, size: int):
    """``size`` bytes from ``stream``, or None when it ends first (a raw stream's ``read`` may return fewer)."""
    data = stream.read(size)
    if data is None or len(data) == size:
        return data
    parts = bytearray(data)
    while len(parts) < size:
        more = stream.read(size - len(parts))
        if not more:  # the end of the stream (b"") or a non-blocking pipe with nothing in it (None)
            return None
        parts += more
    return bytes(parts)


def _send(stream, message) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    _write_all(stream, _HEADER.pack(len(data)) + data)


def _receive(stream, load=pickle.loads):
    """The next message (``load`` of its bytes), or None at the end of the stream."""
    head = _read_exact(stream, _HEADER.size)
    if head is None:
        return None
    data = _read_exact(stream, _HEADER.unpack(head)[0])
    if data is None:
        return None
    return load(data)  # pickle.loads: written by this module on the other end of a pipe it owns


class ChildFailed(NotDrawnThere):
    """The second process is gone or answered with an error: the work is done here instead."""


class PdfProcess:
    """The report's second process: ``start()`` early, :meth:`draw` figures while the PDF's context is built,
    ``submit(html)`` once, ``result()`` for the PDF's bytes."""

    def __init__(self):
        self._proc = None
        self._pool = None
        self._job = None
        self._html = None
        self._errors = None
        self._lock = threading.Lock()
        self._dead = False  # the child stopped answering: nothing more is sent to it

    def start(self) -> "PdfProcess":
        from ..pd.tree_ice import n_threads

        if n_threads() < 2:
            return self  # nothing to run beside it: rendered here
        self._errors = tempfile.TemporaryFile()  # the child's stderr: a file never fills up as a pipe would
        try:
            self._proc = subprocess.Popen(child_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=self._errors)
        except (OSError, ValueError, TypeError):  # no interpreter to start (an embedded Python): rendered here
            self._proc = None
        return self

    @property
    def running(self) -> bool:
        """The child was started (two or more CPUs, and it could start) and has not failed."""
        return self._proc is not None and not self._dead

    @property
    def drawing(self) -> bool:
        """The child is running and takes figures (its PDF's HTML is not submitted yet)."""
        return self.running and self._job is None

    def draw(self, fn, args, kwargs, dpi):
        """``fn(*args, **kwargs)`` drawn on the child (:func:`autopdp.report.figures._draw`); :class:`ChildFailed`
        when it cannot (the caller draws it here)."""
        with self._lock:
            if not self.drawing:
                raise ChildFailed("the second process is not drawing")
            # a figure takes the child a second or less: one not back in FIGURE_TIMEOUT seconds means the child
            # is stuck, and it is stopped (the read below then ends) rather than waited for
            watchdog = threading.Timer(FIGURE_TIMEOUT, self._proc.kill)
            watchdog.daemon = True
            watchdog.start()
            try:
                _send(self._proc.stdin, ("draw", fn, args, kwargs, dpi))
                answer = _receive(self._proc.stdout)
            except (OSError, ValueError, pickle.PickleError, EOFError, AttributeError) as exc:
                self._dead = True
                raise ChildFailed(str(exc)) from exc
            finally:
                watchdog.cancel()
            if answer is None:
                self._dead = True
                raise ChildFailed("the second process stopped")
        if answer[0] != "ok":
            raise ChildFailed(answer[1])  # this figure only: drawn here, where its error is raised
        return answer[1]

    def submit(self, html: str) -> None:
        self._html = html
        if self.running:
            self._pool = ThreadPoolExecutor(max_workers=1)
            self._job = self._pool.submit(self._render, html)

    def _render(self, html: str):
        with self._lock:
            _send(self._proc.stdin, ("pdf", html))
            self._proc.stdin.close()
            return _receive(self._proc.stdout)

    def result(self) -> bytes:
        from .render import render_pdf

        if self._job is not None:
            try:
                answer = self._job.result()
                if answer is not None and answer[0] == "ok" and answer[1].startswith(b"%PDF"):
                    return answer[1]
            except (OSError, ValueError, pickle.PickleError, EOFError):
                pass
            finally:
                self.close()
        return render_pdf(self._html)  # here: no child, or it failed (the error, if any, is raised here)

    def close(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
        if self._proc is not None:
            self._proc.wait()
            for stream in (self._proc.stdin, self._proc.stdout):
                if stream is not None and not stream.closed:
                    try:
                        stream.close()
                    except OSError:  # a dead child's pipe: what was still buffered for it is dropped
                        pass
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        if self._errors is not None:
            self._errors.close()
        self._proc = self._pool = self._errors = None


#: Run by the child before anything else: the autopdp this process imported, also when the child's own sys.path
#: would find another one first (a checkout put on sys.path by hand) or none; the folder it was imported from is
#: put first only then, so an installed autopdp's site-packages never goes ahead of the standard library.
_BOOT = (
    "import sys, importlib.util\n"
    "root, origin = sys.argv[1], sys.argv[2]\n"
    "spec = importlib.util.find_spec('autopdp')\n"
    "if spec is None or spec.origin != origin:\n"
    "    sys.path.insert(0, root)\n"
)


def child_command(then: str = "from autopdp.report.pdf_process import main; sys.exit(main())") -> list[str]:
    """The child's command line: this interpreter (``-P``: without the working folder on sys.path), :data:`_BOOT`,
    then ``then``."""
    import autopdp

    origin = str(Path(autopdp.__file__).resolve())
    # -P: the working folder is not put on the child's sys.path (a module named like one it imports is never run)
    return [sys.executable, "-P", "-c", _BOOT + then, str(Path(origin).parents[1]), origin]


def main() -> int:
    """The child: draw the figures asked for, then render the PDF of the HTML sent, then exit."""
    from .figures import _draw, _plt

    def load_weasyprint():
        import weasyprint  # noqa: F401 - imported while the first figures are drawn

    loading = threading.Thread(target=load_weasyprint, daemon=True)
    loading.start()
    _plt()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        data = _receive(stdin, load=bytes)
        if data is None:
            return 0
        try:
            message = pickle.loads(data)  # noqa: S301 - written by the parent, on this process's own stdin
        except Exception as exc:  # noqa: BLE001 - a figure whose function this process cannot import: drawn there
            _send(stdout, ("error", f"{type(exc).__name__}: {exc}"))
            continue
        if message[0] == "draw":
            _, fn, args, kwargs, dpi = message
            try:
                answer = ("ok", _draw(fn, args, kwargs, dpi))
            except Exception as exc:  # noqa: BLE001 - handed back: the parent draws the figure itself, and raises
                answer = ("error", f"{type(exc).__name__}: {exc}")
            _send(stdout, answer)
        elif message[0] == "pdf":
            import gc

            from .._memory import release_free_memory
            from .render import render_pdf

            loading.join()
            gc.collect()
            release_free_memory()  # what the figures freed, before WeasyPrint's peak
            _send(stdout, ("ok", render_pdf(message[1])))
            return 0


if __name__ == "__main__":
    sys.exit(main())

"""The PDF rendered on a second process while this one draws the HTML's own figures and writes the other formats.

WeasyPrint is pure Python on one core: on a machine with two or more CPUs the report's PDF (its HTML built
here, complete) is handed to ``python -m autopdp.report.pdf_process``, which reads the HTML on stdin and writes
the PDF on stdout with the same :func:`autopdp.report.render.render_pdf` this process would run.  The child is
started first, so it imports WeasyPrint while the PDF's figures are drawn here.  It is a separate program (the same
interpreter and the same autopdp: :func:`child_command`), not a fork or a multiprocessing child: the caller's script is never run again and no lock held by a thread of
this process is copied.  If it cannot start or fails, the PDF is rendered here, as on one CPU, and raises
what that raises.
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

__all__ = ["PdfProcess"]


class PdfProcess:
    """One PDF rendered on a child process: ``start()`` early, ``submit(html)`` once, ``result()`` for the bytes."""

    def __init__(self):
        self._proc = None
        self._pool = None
        self._job = None
        self._html = None

    def start(self) -> "PdfProcess":
        from ..pd.tree_ice import n_threads

        if n_threads() < 2:
            return self  # nothing to run beside it: rendered here
        try:
            self._proc = subprocess.Popen(child_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE)
        except (OSError, ValueError, TypeError):  # no interpreter to start (an embedded Python): rendered here
            self._proc = None
        return self

    @property
    def running(self) -> bool:
        """The child was started (two or more CPUs, and it could start)."""
        return self._proc is not None

    def submit(self, html: str) -> None:
        self._html = html
        if self._proc is not None:
            self._pool = ThreadPoolExecutor(max_workers=1)
            self._job = self._pool.submit(self._proc.communicate, html.encode("utf-8"))

    def result(self) -> bytes:
        from .render import render_pdf

        if self._job is not None:
            try:
                out, _ = self._job.result()
                if self._proc.returncode == 0 and out.startswith(b"%PDF"):
                    return out
            except OSError:
                pass
            finally:
                self.close()
        return render_pdf(self._html)  # here: no child, or it failed (the error, if any, is raised here)

    def close(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
        if self._proc is not None:
            self._proc.wait()
            for stream in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
                if stream is not None and not stream.closed:
                    stream.close()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        self._proc = self._pool = None


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
    from .render import render_pdf

    import weasyprint  # noqa: F401 - imported while the parent still draws the figures

    html = sys.stdin.buffer.read().decode("utf-8")
    sys.stdout.buffer.write(render_pdf(html))
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

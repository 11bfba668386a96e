"""The PDF rendered on a second process beside the other documents (issue 32): the same document as one
context for every format, each figure drawn once, and a failed child never costs the PDF."""

import sys

import pytest

from autopdp.report import figure_queue, pdf_process
from autopdp.report.render import render_pdf, render_pdf_html
from autopdp.report.writer import report_context, write_report


def _same_timings(context):
    return {**context, "timings": [{"stage": "any", "seconds": "0"}]}


def test_the_pdfs_own_context_gives_the_same_pdf_html_as_the_full_one(small_audit):
    own = report_context(small_audit, formats=("pdf", "docx"), png=True)
    full = report_context(small_audit, formats=("json", "html", "pdf", "docx"), png=True)
    # everything but the time the figures took
    assert render_pdf_html(_same_timings(own)) == render_pdf_html(_same_timings(full))


def test_figures_kept_draws_each_figure_once_across_the_two_contexts(small_audit, monkeypatch):
    drawn = []
    real = figure_queue.draw_all

    def counting(jobs, **kwargs):
        jobs = list(jobs)
        drawn.append(len(jobs))
        return real(jobs, **kwargs)

    monkeypatch.setattr(figure_queue, "draw_all", counting)
    alone = report_context(small_audit, formats=("html", "pdf"))
    everything = drawn.pop()
    with figure_queue.figures_kept():
        pdf = report_context(small_audit, formats=("pdf",))
        full = report_context(small_audit, formats=("html", "pdf"))
    first, second = drawn
    assert 0 < first < everything and first + second == everything
    assert render_pdf_html(_same_timings(full)) == render_pdf_html(_same_timings(alone))
    assert render_pdf_html(_same_timings(pdf)) == render_pdf_html(_same_timings(alone))


def test_the_child_renders_the_same_bytes_as_this_process(small_audit):
    html = render_pdf_html(report_context(small_audit, formats=("pdf",)))
    job = pdf_process.PdfProcess().start()
    job.submit(html)
    assert job.result() == render_pdf(html)


@pytest.mark.parametrize("how", ["fails", "cannot start", "one cpu"])
def test_the_pdf_is_rendered_here_when_the_child_fails_or_is_not_used(small_audit, monkeypatch, tmp_path, how):
    import subprocess

    started = []
    real_popen = subprocess.Popen

    def popen(args, **kwargs):
        started.append(args)
        if how == "cannot start":
            raise OSError("no such program")
        # a child that exits at once with an error, as a broken interpreter would
        return real_popen([sys.executable, "-c", "import sys; sys.exit(7)"], **kwargs)

    monkeypatch.setattr(subprocess, "Popen", popen)
    if how == "one cpu":
        monkeypatch.setattr("autopdp.pd.tree_ice.n_threads", lambda: 1)
    out = write_report(small_audit, tmp_path, formats=("html", "pdf"))
    pdf = (tmp_path / "report.pdf").read_bytes()
    assert pdf.startswith(b"%PDF") and any(str(p).endswith("report.pdf") for p in out["paths"])
    assert len(started) == (0 if how == "one cpu" else 1)


def test_a_pdf_alone_is_rendered_here(small_audit, monkeypatch, tmp_path):
    started = []
    monkeypatch.setattr(pdf_process.PdfProcess, "start", lambda self: started.append(1) or self)
    write_report(small_audit, tmp_path, formats=("pdf",))
    assert (tmp_path / "report.pdf").read_bytes().startswith(b"%PDF") and not started


def test_the_child_imports_this_autopdp_and_puts_no_folder_ahead_of_the_standard_library(tmp_path, monkeypatch):
    import shutil
    import subprocess
    from pathlib import Path

    import autopdp

    show = "import autopdp; print(autopdp.__file__); print(sys.path[0])"
    here = subprocess.run(pdf_process.child_command(show), capture_output=True, text=True, check=True).stdout.split("\n")
    assert Path(here[0]).resolve() == Path(autopdp.__file__).resolve()
    assert here[1] != str(Path(autopdp.__file__).resolve().parents[1])  # found as installed: nothing put first
    # a package in the folder the command is run from, named like one the child imports, is not imported (-P)
    for name in ("autopdp", "weasyprint"):
        decoy = tmp_path / "cwd" / name
        decoy.mkdir(parents=True)
        (decoy / "__init__.py").write_text("raise SystemExit('the decoy was imported')\n")
    both = show + "; import weasyprint; print(weasyprint.__file__)"
    run_here = subprocess.run(pdf_process.child_command(both), capture_output=True, text=True, check=True,
                              cwd=tmp_path / "cwd").stdout.split("\n")
    assert Path(run_here[0]).resolve() == Path(autopdp.__file__).resolve()
    assert "cwd" not in run_here[2]
    # an autopdp the child would not find on its own (a copy put on sys.path by hand): its folder goes first
    copy = tmp_path / "elsewhere" / "autopdp"
    shutil.copytree(Path(autopdp.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(autopdp, "__file__", str(copy / "__init__.py"))
    there = subprocess.run(pdf_process.child_command(show), capture_output=True, text=True, check=True).stdout.split("\n")
    assert Path(there[0]).resolve() == (copy / "__init__.py").resolve() and there[1] == str(copy.parent.resolve())


def _jobs(small_audit):
    from autopdp.report import figures

    r1 = [r for r in small_audit.results if r.ndim == 1]
    r2 = [r for r in small_audit.results if r.ndim == 2]
    return [(figures.plot_pd_1d, (r,), {}) for r in r1[:3]] + [(figures.plot_pd_2d, (r,), {}) for r in r2[:2]] + [
        (figures.plot_importance, (small_audit.importance,), {})]


def test_figures_shared_with_the_second_process_are_the_ones_drawn_here(small_audit):
    from autopdp.report import figures

    jobs = _jobs(small_audit)
    png = [True, False, True, False, True, False]
    with figures.with_png(120):
        alone = figures.draw_all(jobs, n_jobs=1, png=png)
        job = pdf_process.PdfProcess().start()
        try:
            assert job.drawing
            asked = []
            real = job.draw
            job.draw = lambda *a: asked.append(a[0]) or real(*a)
            with figures.sharing_figures(job):
                shared = figures.draw_all(jobs, n_jobs=2, png=png)
        finally:
            job.close()
    assert asked, "the second process drew none of the figures"
    assert shared == alone
    assert [getattr(s, "png", None) for s in shared] == [getattr(s, "png", None) for s in alone]
    assert [getattr(s, "dpi", None) for s in shared] == [getattr(s, "dpi", None) for s in alone]


def test_a_second_process_that_dies_leaves_its_figures_to_this_one(small_audit):
    from autopdp.report import figures

    jobs = _jobs(small_audit)
    alone = figures.draw_all(jobs, n_jobs=1)
    job = pdf_process.PdfProcess().start()
    try:
        job._proc.kill()
        job._proc.wait()
        with figures.sharing_figures(job):
            shared = figures.draw_all(jobs, n_jobs=2)
        assert not job.running  # found dead at its first figure: nothing more is sent to it
        job.submit("<html><body>rendered here</body></html>")
        assert job.result().startswith(b"%PDF")  # and the PDF is rendered here
    finally:
        job.close()
    assert shared == alone


def test_a_figure_that_fails_on_the_second_process_raises_here(small_audit):
    from autopdp.report import figures

    broken = (figures.plot_pd_1d, (None,), {})  # the same error wherever it is drawn
    with pytest.raises(Exception) as alone:
        figures.draw_all([broken], n_jobs=1)
    jobs = _jobs(small_audit)[:3] + [broken]  # the last job: the second process takes it first
    job = pdf_process.PdfProcess().start()
    try:
        with figures.sharing_figures(job), pytest.raises(type(alone.value)):
            figures.draw_all(jobs, n_jobs=2)
        assert job.drawing  # one figure's error does not stop the process
    finally:
        job.close()


def _local_function():
    return "<svg/>"


def test_a_figure_the_second_process_cannot_import_is_drawn_here(small_audit):
    from autopdp.report import figures

    jobs = _jobs(small_audit)[:2] + [(_local_function, (), {})]  # this test module is not on the child's path
    job = pdf_process.PdfProcess().start()
    try:
        with figures.sharing_figures(job):
            shared = figures.draw_all(jobs, n_jobs=2)
        assert shared[-1] == "<svg/>" and job.drawing
    finally:
        job.close()
    assert shared[:2] == figures.draw_all(jobs[:2], n_jobs=1)


def test_no_figure_is_sent_once_the_pdf_is_submitted(small_audit):
    from autopdp.report import figures

    job = pdf_process.PdfProcess().start()
    try:
        job.submit(render_pdf_html(report_context(small_audit, formats=("pdf",))))
        assert job.running and not job.drawing
        with figures.sharing_figures(job):
            figures.draw_all(_jobs(small_audit)[:2], n_jobs=2)
        assert job.result().startswith(b"%PDF")
    finally:
        job.close()


def test_the_second_process_draws_and_renders_without_the_audits_libraries(small_audit, tmp_path):
    """Its memory counts beside this process's: drawing a PD figure from a pickled result and rendering a PDF
    import neither pandas nor the model and kernel libraries (each would add tens of MB to the peak)."""
    import pickle
    import subprocess

    r1 = next(r for r in small_audit.results if r.ndim == 1)
    r2 = next(r for r in small_audit.results if r.ndim == 2)
    (tmp_path / "results.pkl").write_bytes(pickle.dumps((r1, r2)))
    work = (f"import pickle; r1, r2 = pickle.load(open({str(tmp_path / 'results.pkl')!r}, 'rb'))\n"
            "from autopdp.report.pdf_process import main\n"
            "from autopdp.report.figures import plot_pd_1d, plot_pd_2d\n"
            "from autopdp.report.render import render_pdf\n"
            "assert render_pdf('<html><body>' + plot_pd_1d(r1) + plot_pd_2d(r2) + '</body></html>')"
            ".startswith(b'%PDF')\n"
            "print(' '.join(m for m in ('pandas', 'sklearn', 'scipy', 'numba', 'cvxpy') if m in sys.modules))")
    run = subprocess.run(pdf_process.child_command(work), capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == ""


class _Trickle:
    """A raw stream that takes at most ``step`` bytes per write and gives at most ``step`` per read, as a pipe's
    write(2) and read(2) may."""

    def __init__(self, step):
        self.step, self.data, self.pos = step, bytearray(), 0

    def write(self, b):
        n = min(self.step, len(b))
        self.data += bytes(b[:n])
        return n

    def flush(self):
        pass

    def read(self, n):
        out = bytes(self.data[self.pos:self.pos + min(n, self.step)])
        self.pos += len(out)
        return out


def test_messages_cross_whole_over_streams_that_take_and_give_a_few_bytes_at_a_time():
    stream = _Trickle(step=997)
    messages = [("ok", "<svg>" + "x" * 150_000 + "</svg>"), ("draw", None, (1, 2.5), {"k": [3]}, None), ("ok", b"")]
    for message in messages:
        pdf_process._send(stream, message)
    assert [pdf_process._receive(stream) for _ in messages] == messages
    assert pdf_process._receive(stream) is None  # the end of the stream
    cut = _Trickle(step=997)
    pdf_process._send(cut, messages[0])
    cut.data = cut.data[:-1]  # a message cut short is the end of the stream, never a message
    assert pdf_process._receive(cut) is None


def test_a_childs_unbuffered_interrupted_writes_still_deliver_whole_messages():
    """The child's stdout is a raw FileIO under PYTHONUNBUFFERED (set by many CI systems), and a write to a full
    pipe that a signal interrupts returns after part of it: every message must still arrive whole (the report
    once waited forever for the rest of a figure)."""
    import os
    import subprocess
    import time

    then = ("import signal\n"
            "from autopdp.report.pdf_process import _send\n"
            "assert type(sys.stdout.buffer).__name__ == 'FileIO', type(sys.stdout.buffer)\n"
            "signal.signal(signal.SIGALRM, lambda *a: None)\n"
            "signal.setitimer(signal.ITIMER_REAL, 0.002, 0.002)\n"
            "for k in range(3):\n"
            "    _send(sys.stdout.buffer, ('ok', bytes([k]) * 300_000))\n"
            "signal.setitimer(signal.ITIMER_REAL, 0)\n")
    proc = subprocess.Popen(pdf_process.child_command(then), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        time.sleep(0.5)  # the child fills the pipe and blocks in write(2), where the timer's signals reach it
        got = [pdf_process._receive(proc.stdout) for _ in range(3)]
        assert proc.wait(timeout=60) == 0, proc.stderr.read().decode()[-2000:]
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    assert got == [("ok", bytes([k]) * 300_000) for k in range(3)]


def test_a_second_process_that_stops_answering_is_stopped_and_the_figure_drawn_here(small_audit, monkeypatch):
    import sys as _sys

    from autopdp.pd import tree_ice
    from autopdp.report import figures

    monkeypatch.setattr(tree_ice, "n_threads", lambda: 2)  # a second process even on one CPU
    monkeypatch.setattr(pdf_process, "child_command", lambda: [_sys.executable, "-c", "import time; time.sleep(600)"])
    monkeypatch.setattr(pdf_process, "FIGURE_TIMEOUT", 1.0)
    jobs = _jobs(small_audit)[:2]
    job = pdf_process.PdfProcess().start()
    try:
        assert job.drawing
        with figures.sharing_figures(job):
            shared = figures.draw_all(jobs, n_jobs=2)
        assert not job.running  # stopped after FIGURE_TIMEOUT: nothing more is sent to it
        assert job._proc.poll() is not None
    finally:
        job.close()
    assert shared == figures.draw_all(jobs, n_jobs=1)

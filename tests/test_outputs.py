"""All-or-nothing outputs, --out checked before any work, and one exit-code table everywhere."""

import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.linear_model import LogisticRegression

import importlib
import autopdp.io.loading as loading_module
import autopdp.report.writer as writer_module
from autopdp.cli.commands import EXIT_CODES_HELP, build_parser, main
from cli_inputs import write_small_cli_inputs  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
audit_module = importlib.import_module("autopdp.auditing.pipeline")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("outputs")
    write_small_cli_inputs(d)
    (d / "other.toml").write_text("grid_resolution = 7\ngrid_resolution_2d = 4\ntop_k = 1\n")
    return d


def report_args(files, out, *extra, formats="json,html", config="small.toml"):
    return ["report", "--model", str(files / "model.skops"), "--data", str(files / "data.csv"), "--target", "target",
            "--out", str(out), "--formats", formats, "--config", str(files / config), *extra]


def snapshot(folder: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.fixture
def no_work(monkeypatch):
    """Any loading or computing fails the test: the error must come before the work."""

    def forbidden(*args, **kwargs):
        raise AssertionError("work started before --out was checked")

    monkeypatch.setattr(loading_module, "load_model", forbidden)
    monkeypatch.setattr(loading_module, "load_data", forbidden)
    monkeypatch.setattr(audit_module, "audit", forbidden)


@pytest.mark.parametrize("make_out, message", [
    (lambda tmp: (tmp / "file.txt").write_text("x") and tmp / "file.txt",
     r"--out '.*file\.txt' is a file, not a directory; choose a directory for the outputs\."),
    (lambda tmp: (tmp / "file.txt").write_text("x") and tmp / "file.txt" / "sub",
     r"Cannot create output directory '.*file\.txt/sub': .*Choose a writable --out\."),
    (lambda tmp: Path("/proc/autopdp-cannot-write-here"),
     r"Cannot create output directory '/proc/autopdp-cannot-write-here': .*Choose a writable --out\."),
])
def test_bad_out_is_caught_before_any_work(files, tmp_path, capsys, no_work, make_out, message):
    out = make_out(tmp_path)
    code = main(report_args(files, out))
    err = capsys.readouterr().err
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and re.fullmatch("autopdp: error: " + message, lines[0]), err


def test_missing_out_is_created_and_removed_again_when_the_run_fails(files, tmp_path, capsys):
    out = tmp_path / "new" / "reports"
    code = main(report_args(files, out, "--target", "nope"))
    assert code == 2 and "target column 'nope'" in capsys.readouterr().err
    assert not out.exists()


def _manifest_ok(out: Path, names: set):
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["files"]) == names
    for name, digest in manifest["files"].items():
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest


def test_failed_pdf_write_leaves_the_earlier_set_whole(files, tmp_path, capsys, monkeypatch):
    """The PDF fails after the other files of the run were written (staged)."""
    out = tmp_path / "out"
    assert main(report_args(files, out, formats="json,html,pdf")) == 0, capsys.readouterr().err
    before = snapshot(out)
    assert set(before) == {"results.json", "report.html", "report.pdf", "manifest.json"}
    _manifest_ok(out, {"results.json", "report.html", "report.pdf"})
    staged = []

    def failing_pdf(html):
        # by now results.json and report.html of the new run are written (staged)
        staged.extend(p.name for p in out.glob(".autopdp-staging-*/*"))
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(writer_module, "render_pdf", failing_pdf)
    code = main(report_args(files, out, formats="json,html,pdf", config="other.toml"))
    err = capsys.readouterr().err
    assert code == 3 and "stage 'writing json, html, pdf' failed: RuntimeError: disk on fire" in err
    assert sorted(staged) == ["report.html", "results.json"]
    assert snapshot(out) == before  # same files, same bytes, nothing extra (no temp files, no staging folder)


@pytest.mark.parametrize("failure", [OSError("No space left on device"), KeyboardInterrupt()], ids=["error", "ctrl-c"])
def test_failure_after_a_file_reached_the_output_folder_restores_the_earlier_set(files, tmp_path, capsys, monkeypatch,
                                                                                 failure):
    """The run fails while committing, after the new results.json has replaced the old one in --out."""
    import os

    import autopdp.utils.atomic as io_module

    out = tmp_path / "out"
    assert main(report_args(files, out, formats="json,html")) == 0
    before = snapshot(out)
    real_replace = os.replace
    seen = []

    def failing_replace(src, dst):
        src, dst = Path(src), Path(dst)
        if dst.parent == out and src.parent.name.startswith(".autopdp-staging-"):  # a new file into --out
            if seen:
                # the first new file is in place: --out already holds bytes of this run
                assert (out / seen[0]).read_bytes() != before[seen[0]]
                raise failure
            seen.append(dst.name)
        return real_replace(src, dst)

    monkeypatch.setattr(io_module.os, "replace", failing_replace)
    code = main(report_args(files, out, formats="json,html", config="other.toml"))
    monkeypatch.undo()
    capsys.readouterr()
    assert seen == ["results.json"]
    assert code == (130 if isinstance(failure, KeyboardInterrupt) else 2)
    assert snapshot(out) == before  # the earlier set, byte for byte, and nothing else


def test_interrupted_run_leaves_the_earlier_set_whole(files, tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    assert main(report_args(files, out)) == 0
    before = snapshot(out)

    def interrupt(html):
        raise KeyboardInterrupt

    monkeypatch.setattr(writer_module, "render_html", interrupt)
    code = main(report_args(files, out, config="other.toml"))
    assert code == 130 and "interrupted" in capsys.readouterr().err
    assert snapshot(out) == before


def test_a_new_set_replaces_the_previous_one_entirely(files, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(report_args(files, out, formats="json,html")) == 0
    (out / "notes-by-the-validator.txt").write_text("mine")
    assert main(report_args(files, out, formats="json", config="other.toml")) == 0
    # report.html of the earlier run would not match results.json of this one: it goes; files autopdp
    # did not write stay
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "notes-by-the-validator.txt", "results.json"]
    _manifest_ok(out, {"results.json"})
    assert json.loads((out / "results.json").read_text())["config"]["grid_resolution"] == 7


def test_internal_failure_outside_a_stage_is_exit_3_in_one_line(files, tmp_path, capsys, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("unexpected")

    monkeypatch.setattr("autopdp.cli.commands._formats", broken)
    code = main(report_args(files, tmp_path / "o"))
    err = capsys.readouterr().err.strip()
    assert code == 3 and err == "autopdp: internal error: RuntimeError: unexpected (please report this)"


def test_an_unexpected_value_error_inside_a_stage_is_exit_3_not_bad_input(files, tmp_path, capsys, monkeypatch):
    # a ValueError that no check of autopdp raised (here from inside the HTML writer) is a failure of
    # autopdp, not the user's mistake: exit 3 naming the stage, never "bad input" (exit 2)
    def broken(*args, **kwargs):
        raise ValueError("operands could not be broadcast together with shapes (3,) (4,)")

    monkeypatch.setattr(writer_module, "render_html", broken)
    code = main(report_args(files, tmp_path / "o"))
    err = capsys.readouterr().err.strip()
    assert code == 3, err
    assert "stage 'writing json, html' failed: ValueError: operands could not be broadcast" in err


def test_checks_of_the_input_stay_exit_2(files, tmp_path, capsys):
    code = main(report_args(files, tmp_path / "o", "--weights", "nope"))
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("autopdp: error: ") and "nope" in err, err


EXPECTED_CODES = {"0": "success", "1": "gate", "2": "bad input", "3": "internal failure", "130": "interrupted"}


def _codes_in(text: str) -> dict:
    """Exit-code table rows (markdown `| 0 | ... |` or help `  0    ...`) -> description."""
    rows = {}
    for line in text.splitlines():
        m = re.match(r"^\s*\|?\s*`?(0|1|2|3|130)`?\s*(?:\||\s{2,})\s*(.+?)\s*\|?\s*$", line)
        if m:
            rows[m.group(1)] = m.group(2).lower()
    return rows


@pytest.mark.parametrize("source", ["help", "report --help", "gate --help", "README.md", "docs/user-guide.md"])
def test_one_exit_code_table_everywhere(source, capsys):
    if source.endswith(".md"):
        text = (ROOT / source).read_text()
        text = text[text.index("<!-- exit-codes -->"):text.index("<!-- /exit-codes -->")]
    else:
        with pytest.raises(SystemExit):
            build_parser().parse_args([*source.split()[:-1], "--help"])
        text = capsys.readouterr().out
        assert EXIT_CODES_HELP.strip() in text
    rows = _codes_in(text)
    assert set(rows) == set(EXPECTED_CODES), rows
    for code, word in EXPECTED_CODES.items():
        assert word in rows[code], (code, rows[code])


def test_exit_code_130_on_ctrl_c(files, tmp_path, capsys, monkeypatch):
    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(loading_module, "load_model", interrupt)
    assert main(report_args(files, tmp_path / "o")) == 130


def test_a_directory_in_place_of_an_output_is_caught_before_any_work(files, tmp_path, capsys, no_work):
    out = tmp_path / "out"
    (out / "report.pdf").mkdir(parents=True)
    code = main(report_args(files, out))
    err = capsys.readouterr().err.strip()
    assert code == 2 and err == (f"autopdp: error: cannot write '{out / 'report.pdf'}': a directory of that name is in "
                                 "the way; move it or choose another --out.")


def test_blocked_target_at_commit_replaces_nothing(tmp_path):
    from autopdp.utils.atomic import output_set

    out = tmp_path / "o"
    with output_set(out) as staged:
        staged.write_text("results.json", "old")
        staged.commit()
    before = snapshot(out)
    with pytest.raises(OSError, match="a directory of that name is in the way"):
        with output_set(out) as staged:
            staged.write_text("results.json", "new")
            staged.write_text("report.html", "new")
            (out / "report.html").mkdir()  # appears while the run works
            staged.commit()
    (out / "report.html").rmdir()
    assert snapshot(out) == before


def test_a_file_as_out_is_refused_before_the_heavy_libraries_load(tmp_path):
    """The --out check runs before numpy, pandas, scikit-learn, scipy or cvxpy are imported: in a
    fresh interpreter the error comes back with none of them in sys.modules (no timing needed)."""
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    script = (
        "import sys\n"
        "from autopdp.cli.commands import main\n"
        "code = main(['report', '--model', 'm.skops', '--data', 'd.csv', '--target', 'y', '--out', sys.argv[1]])\n"
        "heavy = [m for m in ('numpy', 'pandas', 'sklearn', 'scipy', 'cvxpy', 'matplotlib') if m in sys.modules]\n"
        "print(code, heavy)\n"
    )
    import os
    import subprocess
    import sys as _sys

    import autopdp

    # the same autopdp as this test process (installed package under make test, else the tree)
    env = {**os.environ, "PYTHONPATH": str(Path(autopdp.__file__).resolve().parents[1])}
    proc = subprocess.run([_sys.executable, "-c", script, str(blocker)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.stdout.strip() == "2 []", (proc.stdout, proc.stderr)
    assert "is a file, not a directory" in proc.stderr

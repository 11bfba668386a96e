"""Issue 32: when autopdp is the program, the audit's process hands the documents to a fresh process
(:mod:`autopdp.handover`) so the report's libraries and the PDF's process never sit on top of what the audit left
resident.  The outputs are the same as when the documents are written in the audit's process; errors, exit codes and
the "--out removed when a failed run leaves it empty" rule hold in the new process too; every case where it cannot
hand over finishes in the same process."""

import json
import os
import pickle
import re
import subprocess
import sys
import types

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.linear_model import LogisticRegression

from autopdp import cli, handover


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("handover")
    rng = np.random.default_rng(3)
    X = pd.DataFrame({"a": rng.normal(size=300), "b": rng.uniform(0, 5, 300), "c": rng.normal(size=300)})
    y = (X.a + 0.4 * X.b + rng.normal(size=300) > 1).astype(int)
    X.assign(target=y).to_csv(d / "data.csv", index=False)
    sio.dump(LogisticRegression().fit(X, y), d / "model.skops")
    (d / "config.toml").write_text("grid_resolution = 8\ngrid_resolution_2d = 5\ntop_k = 2\n")
    (d / "strict.toml").write_text('[features.a]\nmonotonic = "decreasing"\nmax_monotonicity = 0.01\n')  # a rises
    return d


def _args(files, out, *extra):
    return ["report", "--model", str(files / "model.skops"), "--data", str(files / "data.csv"), "--target", "target",
            "--config", str(files / "config.toml"), "--out", str(out), "--formats", "json,html,docx", *extra]


#: Run as the program (``main()`` without argv, as ``autopdp ...`` does) with os.execv watched: the command it
#: replaces itself with and the modules it held are written to a file first.
_WATCHED = r"""
import json, os, sys
marker = sys.argv.pop(1)
real = os.execv
def watched(path, argv):
    json.dump({"argv": list(argv), "numba": "numba" in sys.modules}, open(marker, "w"))
    real(path, argv)
os.execv = watched
from autopdp.cli import main
sys.exit(main())
"""


def _program(files, out, marker, *extra):
    return subprocess.run([sys.executable, "-c", _WATCHED, str(marker), *_args(files, out, *extra)],
                          capture_output=True, text=True, timeout=600, env=_env())


def _env():
    """The environment with the stages named on stderr (as in a CI log)."""
    return {k: v for k, v in os.environ.items() if k not in ("AUTOPDP_NO_PROGRESS", "CI")}


def _same_json(a, b):
    def strip(path):
        d = json.loads(path.read_text())
        run = d.pop("run")
        assert set(run) == {"date", "timings_s", "command"}  # the run's date, its stage times, its command line
        return json.dumps(d, sort_keys=True), run["command"].replace(str(path.parent), "OUT")

    return strip(a) == strip(b)


def _html(path):
    return _mask(path.read_text())


def _mask(html):
    """The report without the run's date and the stage times (they differ between any two runs)."""
    html = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d", "DATE", html)
    return re.sub(r'(<td>[a-z_0-9]+</td><td class="num">)[0-9.]+(</td>)', r"\1T\2", html)


def test_the_program_hands_the_documents_over_and_writes_what_one_process_writes(files, tmp_path, capsys):
    marker = tmp_path / "execv.json"
    done = _program(files, tmp_path / "program", marker)
    assert done.returncode == 0, done.stderr
    seen = json.loads(marker.read_text())
    assert seen["argv"][0] == sys.executable and "autopdp.handover" in seen["argv"][-4]
    fd = int(seen["argv"][-1])
    assert fd > 2  # a descriptor of its own, not a path: no file of the hand-over is left anywhere
    # each stage ran once: the audit in the first program, the documents in the second
    stages = [line.rsplit(": ", 1)[0] for line in done.stderr.splitlines()]
    assert stages.count("autopdp: computing and scoring every 1D and 2D partial dependence") == 1, done.stderr
    assert stages.count("autopdp: writing json, html, docx") == 1, done.stderr
    assert "autopdp: wrote" in done.stdout and "report.docx" in done.stdout

    assert cli.main(_args(files, tmp_path / "here")) == 0  # a call from Python: everything in this process
    capsys.readouterr()
    program, here = tmp_path / "program", tmp_path / "here"
    assert sorted(p.name for p in program.iterdir()) == sorted(p.name for p in here.iterdir())
    assert _same_json(program / "results.json", here / "results.json")
    assert _html(program / "report.html").replace(str(program), "OUT") == _html(here / "report.html").replace(
        str(here), "OUT")
    assert "<svg" in _html(program / "report.html")  # the figures are in what is compared


def test_the_gate_exit_code_and_verdict_come_from_the_new_process(files, tmp_path):
    marker = tmp_path / "execv.json"
    args = ["--policy", str(files / "strict.toml")]
    gate = subprocess.run([sys.executable, "-c", _WATCHED, str(marker), "gate", *_args(files, tmp_path / "g")[1:], *args],
                          capture_output=True, text=True, timeout=600, env=_env())
    assert marker.exists(), gate.stderr  # it handed over
    assert gate.returncode == 1, gate.stderr
    assert "autopdp gate: FAILED 1 of 1 checks: monotonicity[a]" in gate.stdout and (tmp_path / "g" / "gate.xml").is_file()


def test_the_hand_over_is_exact(small_audit, tmp_path):
    f = cli.Finish("report", small_audit, tmp_path, ["json", "html"], "A4", 0.0, {}, where=None)
    back = pickle.loads(handover.dumps(f))
    assert back.audit.to_json() == small_audit.to_json()
    for a, b in zip(small_audit.results, back.audit.results):
        for name in ("average", "std", "individual", "ice_rows"):
            x, y = getattr(a, name), getattr(b, name)
            assert (x is None) == (y is None)
            if x is not None:
                assert x.dtype == y.dtype and x.tobytes() == y.tobytes()  # bit for bit, NaN included
    # the config's read-only mappings stay read-only mappings with the same items
    assert isinstance(back.audit.config.lipschitz, types.MappingProxyType)
    assert dict(back.audit.config.lipschitz) == dict(small_audit.config.lipschitz)
    assert _mask(back.audit.to_html()) == _mask(small_audit.to_html())


def test_where_the_documents_stay_in_the_audits_process(monkeypatch):
    assert handover.can_hand_over(["json", "html"], program=True) == (os.name == "posix")
    assert not handover.can_hand_over(["json", "html"], program=False)  # main(argv) from Python
    assert not handover.can_hand_over(["json"], program=True)  # nothing the report's libraries are needed for
    monkeypatch.setattr(os, "name", "nt")
    assert not handover.can_hand_over(["pdf"], program=True)


def test_an_interpreter_that_cannot_start_leaves_the_documents_to_this_process(files, tmp_path, monkeypatch, capsys):
    import atexit

    tried = []

    def execv(path, argv):
        with os.fdopen(os.dup(int(argv[-1])), "rb") as f:
            tried.append(pickle.load(f))  # what the new process would have read
        raise OSError("cannot start")

    monkeypatch.setattr(os, "execv", execv)
    monkeypatch.setattr(atexit, "_run_exitfuncs", lambda: None)  # pytest's own exit handlers stay for pytest
    monkeypatch.setattr(sys, "argv", ["autopdp", *_args(files, tmp_path / "out")])
    assert cli.main() == 0
    assert len(tried) == 1 and isinstance(tried[0], cli.Finish) and tried[0].kind == "report"
    assert (tmp_path / "out" / "report.docx").is_file() and "autopdp: wrote" in capsys.readouterr().out


def test_errors_in_the_new_process_are_one_line_and_an_empty_out_it_created_goes(small_audit, tmp_path, monkeypatch,
                                                                               capsys):
    from autopdp import report
    from autopdp.errors import InputError

    def refuse(*a, **k):
        raise InputError("the disk is full; free some space and run again.")

    monkeypatch.setattr(report, "write_report", refuse)
    out = tmp_path / "new"
    out.mkdir()
    f = cli.Finish("report", small_audit, out, ["json", "html"], "A4", 0.0, {}, created=True)
    assert cli.finish_command(f) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.strip() == "autopdp: error: the disk is full; free some space and run again."
    assert not out.exists()
    kept = tmp_path / "kept"
    kept.mkdir()
    assert cli.finish_command(cli.Finish("report", small_audit, kept, ["json"], "A4", 0.0, {})) == 2
    assert kept.exists()  # a folder the run did not create stays


class ScriptLevelThing:
    """Stands for a class defined in the script that ran autopdp (its module is then ``__main__``)."""


def test_a_class_of_the_calling_script_keeps_the_documents_in_this_process(small_audit, tmp_path, monkeypatch):
    import atexit

    monkeypatch.setattr(ScriptLevelThing, "__module__", "__main__")
    monkeypatch.setattr(sys.modules["__main__"], "ScriptLevelThing", ScriptLevelThing, raising=False)
    started = []
    monkeypatch.setattr(os, "execv", lambda *a: started.append(a))
    monkeypatch.setattr(atexit, "_run_exitfuncs", lambda: started.append("exit handlers"))
    f = cli.Finish("report", small_audit, tmp_path, ["html"], "A4", 0.0, {}, where=ScriptLevelThing())
    assert handover.hand_over(f) is None and started == []  # returned before anything: no exit handler, no exec
    monkeypatch.setattr(ScriptLevelThing, "__module__", __name__)
    handover.hand_over(f)  # the same with a class the new process finds: it would start
    assert started[0] == "exit handlers" and started[1][0] == sys.executable
    os.close(int(started[1][1][-1]))  # the descriptor the new process would have read


def test_what_cannot_be_handed_over_stays_in_this_process(small_audit, tmp_path, monkeypatch):
    import atexit
    import tempfile

    started = []
    monkeypatch.setattr(os, "execv", lambda *a: started.append(a))
    monkeypatch.setattr(atexit, "_run_exitfuncs", lambda: started.append("exit handlers"))
    unpicklable = cli.Finish("report", small_audit, tmp_path, ["html"], "A4", 0.0, {}, where=lambda: None)
    assert handover.hand_over(unpicklable) is None and started == []

    def no_temporary_folder(*a, **k):
        raise OSError("No space left on device")

    monkeypatch.setattr(tempfile, "TemporaryFile", no_temporary_folder)
    fine = cli.Finish("report", small_audit, tmp_path, ["html"], "A4", 0.0, {})
    assert handover.hand_over(fine) is None and started == []

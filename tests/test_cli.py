"""The command line: `autopdp report` end to end, exit codes and one-line errors."""

import pickle

import joblib
import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.linear_model import LogisticRegression

import autopdp
from autopdp.cli import main


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=300), "b": rng.uniform(0, 5, 300), "c": rng.normal(size=300)})
    y = (X.a + 0.3 * X.b + rng.normal(size=300) > 1).astype(int)
    df = X.assign(target=y)
    df.to_csv(d / "data.csv", index=False)
    df.to_parquet(d / "data.parquet")
    champion = LogisticRegression().fit(X, y)
    challenger = LogisticRegression().fit(X.assign(c=-X.c * 5 + X.a), y)
    sio.dump(champion, d / "champion.skops")
    sio.dump(challenger, d / "challenger.skops")
    joblib.dump(champion, d / "champion.joblib")
    (d / "config.toml").write_text('grid_resolution = 8\ngrid_resolution_2d = 5\ntop_k = 2\nmodel_name = "champion v1"\n')
    return d


def run(capsys, *args):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_report_end_to_end_with_compare(files, tmp_path, capsys):
    code, out, err = run(
        capsys, "report", "--model", files / "champion.skops", "--data", files / "data.parquet", "--target", "target",
        "--out", tmp_path, "--compare", f"challenger={files / 'challenger.skops'}", "--config", files / "config.toml",
        "--formats", "html,json",
    )
    assert code == 0, err
    assert "autopdp: wrote" in out and "report.html" in out and "results.json" in out
    assert (tmp_path / "report.html").exists() and not (tmp_path / "report.pdf").exists()
    import json

    data = autopdp.read_results(tmp_path / "results.json")
    assert "similarity:challenger" in data["scores"][0]
    assert data["config"]["model_name"] == "champion v1"


@pytest.mark.parametrize(
    "args,message",
    [
        (["--target", "nope"], "target column 'nope' is not in the data"),
        (["--formats", "html,rtf"], "--formats takes a comma-separated list of html, pdf, json, docx; got 'html,rtf'."),
        (["--model", "{d}/champion.joblib"], "is a pickle: loading it runs code from the file"),
        (["--model", "{d}/missing.skops"], "does not exist."),
        (["--data", "{d}/config.toml"], "has an unknown format '.toml'; use .csv or .parquet."),
        (["--config", "{d}/data.csv"], "is not valid TOML"),
        (["--compare", "nameonly"], "--compare takes NAME=PATH, got 'nameonly'."),
        (["--page-size", "A3"], "--page-size must be A4 or Letter, got 'A3'."),
    ],
)
def test_bad_input_exits_2_with_one_line(files, tmp_path, capsys, args, message):
    base = {"--model": f"{files}/champion.skops", "--data": f"{files}/data.csv", "--target": "target", "--out": str(tmp_path)}
    extra = []
    for i in range(0, len(args), 2):
        key, value = args[i], args[i + 1].replace("{d}", str(files))
        if key in base:
            base[key] = value
        else:
            extra += [key, value]
    argv = ["report"] + [x for kv in base.items() for x in kv] + extra
    code, out, err = run(capsys, *argv)
    assert code == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("autopdp: error: "), err
    assert message in lines[0]
    assert "Traceback" not in err


def test_pickle_loads_with_allow_pickle_naming_it(files, tmp_path, capsys):
    code, out, err = run(
        capsys, "report", "--model", files / "champion.joblib", "--data", files / "data.csv", "--target", "target",
        "--out", tmp_path, "--allow-pickle", files / "champion.joblib", "--formats", "json", "--config", files / "config.toml",
    )
    assert code == 0, err
    assert "'champion.joblib' is a pickle, loaded because --allow-pickle named it" in err
    notes = autopdp.read_results(tmp_path / "results.json")["notes"]
    assert any("--allow-pickle named it" in n for n in notes)


def test_malicious_pickle_is_refused_without_trust(tmp_path, files, capsys):
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    (tmp_path / "evil.pkl").write_bytes(pickle.dumps(Evil()))
    code, out, err = run(capsys, "report", "--model", tmp_path / "evil.pkl", "--data", files / "data.csv",
                         "--target", "target", "--out", tmp_path / "out")
    assert code == 2 and f"--allow-pickle {tmp_path / 'evil.pkl'}" in err
    assert not marker.exists()


def test_failed_run_leaves_earlier_report_untouched(files, tmp_path, capsys):
    args = ["report", "--model", files / "champion.skops", "--data", files / "data.csv", "--target", "target",
            "--out", tmp_path, "--formats", "json", "--config", files / "config.toml"]
    assert run(capsys, *args)[0] == 0
    before = (tmp_path / "results.json").read_bytes()
    bad = files / "bad.csv"
    pd.read_csv(files / "data.csv").assign(target=1).to_csv(bad, index=False)  # constant target
    code, out, err = run(capsys, *[bad if a == files / "data.csv" else a for a in args])
    assert code == 2 and "constant" in err
    assert (tmp_path / "results.json").read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_progress_off_a_terminal_is_one_plain_line_per_stage(files, tmp_path):
    """Issue 30: with stderr redirected (a CI log) a run names each stage once, with its time, and draws no bar;
    warnings stay captured (no warning line in the log)."""
    import os
    import re
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("AUTOPDP_NO_PROGRESS", "CI")}
    argv = [sys.executable, "-m", "autopdp", "report", "--model", str(files / "champion.skops"), "--data",
            str(files / "data.csv"), "--target", "target", "--out", str(tmp_path / "out"), "--config",
            str(files / "config.toml"), "--formats", "json,html"]
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines and all(re.fullmatch(r"autopdp: .+: \d+\.\d s", line) for line in lines), done.stderr
    names = [line.split(": ", 1)[1].rsplit(": ", 1)[0] for line in lines]
    assert len(names) == len(set(names))  # one line per stage
    for stage in ("loading", "1D partial dependence of 3 features", "noise tests of the material scores",
                  "computing and scoring every 1D and 2D partial dependence", "writing json, html"):
        assert stage in names, names
    assert "\r" not in done.stderr and "it/s" not in done.stderr and "Warning" not in done.stderr
    # and silent when asked
    quiet = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600,
                           env={**env, "AUTOPDP_NO_PROGRESS": "1"})
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr

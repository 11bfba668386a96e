"""Issue 34, the inputs that decide what is loaded, deleted, recorded and read: each proof of concept fails safe.

* model files: skops types are trusted by name (``--trust-type``), pickles per file (``--allow-pickle PATH``),
  ``--trust-model`` is gone;
* ``manifest.json`` in ``--out`` is a hint: only autopdp's own outputs, unchanged, are removed;
* credentials in the command line are redacted wherever it is recorded;
* results.json cannot point its ICE sidecar at another file.
"""

import functools
import json
import pickle
import re
import warnings
import zipfile

import joblib
import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.ensemble import GradientBoostingClassifier, HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.tree import DecisionTreeClassifier

from autopdp import AuditConfig, audit
from autopdp._io import OUTPUT_NAMES, output_set, sha256_file
from autopdp.audit import Audit
from autopdp.cli import build_parser, main
from autopdp.errors import InputError
from autopdp.loading import DEFAULT_TRUSTED_TYPES, TrustWarning, load_model
from autopdp.provenance import command_line, redact

TREE = "sklearn.tree._tree.Tree"
FAST = 'grid_resolution = 6\npairs = false\nmodel_name = "m"\n'


def run(capsys, *args):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def _frame(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.uniform(0, 5, n), "c": rng.integers(0, 4, n).astype(float)})
    y = (X.a + 0.3 * X.b + rng.normal(size=n) > 1).astype(int)
    return X, y


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("sec")
    X, y = _frame()
    X.assign(target=y).to_csv(d / "data.csv", index=False)
    sio.dump(LogisticRegression().fit(X, y), d / "model.skops")
    joblib.dump(LogisticRegression().fit(X, y), d / "model.joblib")
    sio.dump(DecisionTreeClassifier(max_depth=3).fit(X, y), d / "tree.skops")
    (d / "config.toml").write_text(FAST)
    (d / "policy.toml").write_text('[features.a]\nmonotonic = "increasing"\n')
    return d


def _exec_pipeline(marker):
    """The issue's PoC: a pipeline whose first step is ``functools.partial(exec, code)``: transforming runs the code."""
    code = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    return make_pipeline(FunctionTransformer(functools.partial(exec, code, {})), DecisionTreeClassifier(max_depth=2))


# ------------------------------------------------------------------------------------------- trust by name
@pytest.mark.parametrize("model", [
    DecisionTreeClassifier(max_depth=3), RandomForestClassifier(n_estimators=3, max_depth=3),
    GradientBoostingClassifier(n_estimators=3), HistGradientBoostingClassifier(max_iter=3),
], ids=lambda m: type(m).__name__)
def test_scikit_learns_tree_models_load_with_the_documented_default(tmp_path, model):
    X, y = _frame()
    sio.dump(model.fit(X, y), tmp_path / "m.skops")
    untrusted = set(sio.get_untrusted_types(file=tmp_path / "m.skops"))
    assert untrusted and untrusted <= set(DEFAULT_TRUSTED_TYPES)  # skops flags them; the default covers them
    with warnings.catch_warnings():
        warnings.simplefilter("error", TrustWarning)  # nothing trusted by name: nothing said
        loaded = load_model(tmp_path / "m.skops")
    assert np.array_equal(loaded.predict(X), model.predict(X))


def test_hgb_with_categorical_features_needs_its_extra_types_named(tmp_path):
    X, y = _frame()
    sio.dump(HistGradientBoostingClassifier(max_iter=3, categorical_features=[2]).fit(X, y), tmp_path / "m.skops")
    with pytest.raises(InputError) as refused:
        load_model(tmp_path / "m.skops")
    assert "functools.partial, sklearn.utils.validation.check_array" in str(refused.value)
    assert "--trust-type functools.partial --trust-type sklearn.utils.validation.check_array" in str(refused.value)
    with pytest.warns(TrustWarning, match="trusting functools.partial, sklearn.utils.validation.check_array by name"):
        load_model(tmp_path / "m.skops", trusted_types=["functools.partial", "sklearn.utils.validation.check_array"])


def test_a_skops_pipeline_holding_exec_is_refused_by_default_and_with_the_tree_types_named(files, tmp_path, capsys):
    marker = tmp_path / "MARKER"
    X, y = _frame()
    pipe = _exec_pipeline(marker)
    pipe.steps[1][1].fit(X, y)
    sio.dump(pipe, tmp_path / "evil.skops")
    assert not marker.exists()
    for extra in ([], ["--trust-type", TREE, "--trust-type", DEFAULT_TRUSTED_TYPES[1]], ["--trust-type", "builtins.exec"]):
        code, _, err = run(capsys, "report", "--model", tmp_path / "evil.skops", "--data", files / "data.csv",
                           "--target", "target", "--out", tmp_path / "out", "--config", files / "config.toml",
                           "--formats", "json", *extra)
        assert code == 2, err
        line = err.strip()
        assert "\n" not in line and "Traceback" not in err
        named = {"builtins.exec"} if "builtins.exec" in extra else set()
        listed = re.search(r"types skops does not trust: (.*?)\. Loading", line).group(1).split(", ")
        assert set(listed) == {"builtins.exec", "functools.partial"} - named
        assert "--trust-type functools.partial" in line
        assert not marker.exists() and not (tmp_path / "out" / "results.json").exists()


def test_the_exec_pipeline_loads_only_when_its_exact_types_are_named_and_says_so(tmp_path):
    """The PoC is live: once both types are named it loads (with a warning naming them) and transforming runs it."""
    marker = tmp_path / "MARKER"
    X, y = _frame()
    pipe = _exec_pipeline(marker)
    pipe.steps[1][1].fit(X, y)
    sio.dump(pipe, tmp_path / "evil.skops")
    with pytest.raises(InputError, match="does not trust: functools.partial"):
        load_model(tmp_path / "evil.skops", trusted_types=["builtins.exec", TREE])
    with pytest.warns(TrustWarning, match=r"'evil.skops' loaded trusting builtins.exec, functools.partial by name"):
        loaded = load_model(tmp_path / "evil.skops", trusted_types=["builtins.exec", "functools.partial"])
    assert not marker.exists()
    loaded.steps[0][1].transform(X)
    assert marker.exists()


@pytest.mark.parametrize("bad", ["exec", "a b.c", "", 3])
def test_trusted_types_must_be_full_type_names(files, bad):
    with pytest.raises(InputError, match="full type name like 'sklearn.tree._tree.Tree'"):
        load_model(files / "tree.skops", trusted_types=[bad])


def _evil_pickle(path, marker):
    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    path.write_bytes(pickle.dumps(Evil()))


def test_trust_model_is_gone_and_says_what_replaces_it(files, tmp_path, capsys):
    marker = tmp_path / "MARKER"
    _evil_pickle(tmp_path / "evil.pkl", marker)
    code, _, err = run(capsys, "report", "--model", tmp_path / "evil.pkl", "--trust-model", "--data",
                       files / "data.csv", "--target", "target", "--out", tmp_path / "out")
    assert code == 2 and not marker.exists()
    assert "--trust-model (API: trust_model=) was removed" in err and "--trust-type TYPE" in err
    assert "--allow-pickle PATH" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
    with pytest.raises(InputError, match="was removed"):
        load_model(tmp_path / "evil.pkl", trust_model=True)
    assert not marker.exists()
    assert "--trust-model" not in build_parser().format_help()


def test_allow_pickle_is_per_file_a_champion_pickle_is_not_implied(files, tmp_path, capsys):
    """The issue's PoC: allowing the model's pickle (or trusting types) does not run a --champion pickle."""
    marker = tmp_path / "MARKER"
    _evil_pickle(tmp_path / "champion.pkl", marker)
    code, _, err = run(capsys, "gate", "--policy", files / "policy.toml", "--model", files / "model.joblib",
                       "--allow-pickle", files / "model.joblib", "--trust-type", "builtins.open",
                       "--champion", tmp_path / "champion.pkl", "--data", files / "data.csv", "--target", "target",
                       "--out", tmp_path / "out", "--config", files / "config.toml", "--formats", "json")
    assert code == 2 and not marker.exists()
    assert f"'{tmp_path / 'champion.pkl'}' is a pickle" in err and f"--allow-pickle {tmp_path / 'champion.pkl'}" in err
    # a comparison model too
    code, _, err = run(capsys, "report", "--model", files / "model.joblib", "--allow-pickle", files / "model.joblib",
                       "--compare", f"old={tmp_path / 'champion.pkl'}", "--data", files / "data.csv",
                       "--target", "target", "--out", tmp_path / "out", "--config", files / "config.toml")
    assert code == 2 and not marker.exists() and "is a pickle" in err
    # and a candidate of `autopdp compare`
    code, _, err = run(capsys, "compare", "--model", f"new={files / 'model.joblib'}", "--model",
                       f"old={tmp_path / 'champion.pkl'}", "--allow-pickle", files / "model.joblib", "--data",
                       files / "data.csv", "--target", "target", "--out", tmp_path / "out", "--config", files / "config.toml")
    assert code == 2 and not marker.exists() and "is a pickle" in err
    # and a .skops model's --trust-type never lets a pickle in
    code, _, err = run(capsys, "report", "--model", tmp_path / "champion.pkl", "--trust-type", "builtins.open",
                       "--data", files / "data.csv", "--target", "target", "--out", tmp_path / "out")
    assert code == 2 and not marker.exists()


def test_allow_pickle_must_name_a_model_file_of_the_run(files, tmp_path, capsys):
    code, _, err = run(capsys, "report", "--model", files / "model.joblib", "--allow-pickle", files / "modell.joblib",
                       "--data", files / "data.csv", "--target", "target", "--out", tmp_path / "out")
    assert code == 2 and "--allow-pickle" in err and "names none of this run's model files" in err


def test_allowed_pickle_loads_for_that_file_and_is_said(files, tmp_path, capsys):
    code, _, err = run(capsys, "report", "--model", files / "model.joblib", "--allow-pickle", files / "model.joblib",
                       "--data", files / "data.csv", "--target", "target", "--out", tmp_path / "out",
                       "--config", files / "config.toml", "--formats", "json")
    assert code == 0, err
    assert "'model.joblib' is a pickle, loaded because --allow-pickle named it" in err


# ------------------------------------------------------------------------------------------- the manifest
def _planted(out, **files):
    (out / "manifest.json").write_text(json.dumps({"schema": "autopdp.Manifest/1", "files": files}))


def test_a_planted_manifest_deletes_nothing_autopdp_did_not_write(files, tmp_path, capsys):
    """The issue's PoC: a manifest in --out listing precious.txt and Makefile: after a run both are still there."""
    out = tmp_path / "out"
    out.mkdir()
    victims = {"precious.txt": b"keep me", "Makefile": b"all:\n", "report.docx": b"my own report", "gate.xml": b"<x/>"}
    for name, data in victims.items():
        (out / name).write_bytes(data)
    (tmp_path / "x").write_bytes(b"outside")
    wrong = "0" * 64
    _planted(out, **{"precious.txt": sha256_file(out / "precious.txt"), "Makefile": sha256_file(out / "Makefile"),
                     "../x": sha256_file(tmp_path / "x"), "report.docx": wrong, "gate.xml": "not a hash",
                     str(tmp_path / "x"): sha256_file(tmp_path / "x")})
    code, _, err = run(capsys, "report", "--model", files / "model.skops", "--data", files / "data.csv",
                       "--target", "target", "--out", out, "--config", files / "config.toml", "--formats", "json")
    assert code == 0, err
    for name, data in victims.items():
        assert (out / name).read_bytes() == data, name
    assert (tmp_path / "x").read_bytes() == b"outside"
    assert set(json.loads((out / "manifest.json").read_text())["files"]) == {"results.json"}


def test_an_earlier_runs_output_is_removed_only_while_unchanged(tmp_path):
    out = tmp_path / "out"
    with output_set(out) as s:
        s.write_text("results.json", "{}")
        s.write_bytes("report.docx", b"docx v1")
        s.write_bytes("report.html", b"<p>v1</p>")
        s.commit()
    (out / "report.html").write_bytes(b"<p>edited by the validator</p>")
    with output_set(out) as s:
        s.write_text("results.json", '{"v": 2}')
        s.commit()
    assert not (out / "report.docx").exists()  # autopdp's own, unchanged: the new set does not have it
    assert (out / "report.html").read_bytes() == b"<p>edited by the validator</p>"  # changed since: kept
    assert (out / "results.json").read_text() == '{"v": 2}'


def test_a_planted_manifest_with_the_right_hash_of_a_foreign_name_removes_nothing(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.md").write_text("mine")
    (out / ".autopdp-keep").write_text("mine")
    _planted(out, **{"notes.md": sha256_file(out / "notes.md"), ".autopdp-keep": sha256_file(out / ".autopdp-keep"),
                     "manifest.json": "1" * 64})
    assert "notes.md" not in OUTPUT_NAMES
    with output_set(out) as s:
        s.write_text("results.json", "{}")
        s.commit()
    assert (out / "notes.md").read_text() == "mine" and (out / ".autopdp-keep").read_text() == "mine"


# ------------------------------------------------------------------------------------------- secrets
@pytest.mark.parametrize("arg,shown,hidden", [
    ("tls://user:token@127.0.0.1:1", "tls://user:***@127.0.0.1:1", "token"),
    ("https://ghp_abcdef@github.com/org/repo", "https://***@github.com/org/repo", "ghp_abcdef"),
    ("s3://bucket/x.csv?X-Amz-Signature=abc123&region=eu", "?X-Amz-Signature=***&region=eu", "abc123"),
    ("https://h/api?access_token=zz9&password=pw1", "?access_token=***&password=***", "zz9"),
    ("tcp://scheduler:8786", "tcp://scheduler:8786", None),
    ("/data/a@b.csv", "/data/a@b.csv", None),
])
def test_redact_hides_credentials_in_uris_and_keeps_the_rest(arg, shown, hidden):
    assert shown in redact(arg)
    assert hidden is None or hidden not in redact(arg)
    assert shown in command_line(["report", "--scheduler", arg])


def test_values_of_options_named_like_secrets_are_redacted():
    line = command_line(["report", "--token", "s3cr3t", "--db-password=hunter2", "--api-key", "k1", "--author", "ann"])
    assert "s3cr3t" not in line and "hunter2" not in line and "k1" not in line
    assert "--token '***'" in line and "'--db-password=***'" in line and "--author ann" in line


def test_a_scheduler_token_appears_in_no_output_file(files, tmp_path, capsys, monkeypatch):
    """The command line is recorded in results.json, gate.json, gate.xml, the manifest, the HTML and the Word
    report: none of them carries the token.  The audit runs locally (no cluster), the recording is the CLI's."""
    import sys

    audit_module = sys.modules["autopdp.audit"]  # the package's name 'audit' is the function
    real = audit_module.audit
    monkeypatch.setattr(audit_module, "audit", lambda *a, scheduler=None, **k: real(*a, **k))
    out = tmp_path / "out"
    code, _, err = run(capsys, "gate", "--policy", files / "policy.toml", "--model", files / "model.skops",
                       "--data", files / "data.csv", "--target", "target", "--out", out, "--config",
                       files / "config.toml", "--formats", "html,json,docx",
                       "--scheduler", "tls://user:s3cr3tTOKEN@127.0.0.1:1")
    assert code in (0, 1), err
    written = {p.name for p in out.iterdir()}
    assert {"results.json", "gate.json", "gate.xml", "manifest.json", "report.html", "report.docx"} <= written
    texts = {}
    for p in out.iterdir():
        if p.suffix == ".docx":
            with zipfile.ZipFile(p) as z:
                texts[p.name] = "".join(z.read(n).decode("utf-8", "replace") for n in z.namelist())
        else:
            texts[p.name] = p.read_bytes().decode("utf-8", "replace")
    for name, text in texts.items():
        assert "s3cr3tTOKEN" not in text, name
    assert "tls://user:***@127.0.0.1:1" in json.loads(texts["results.json"])["run"]["command"]
    assert "tls://user:***@127.0.0.1:1" in texts["gate.xml"] and "tls://user:***@127.0.0.1:1" in texts["report.html"]
    assert "s3cr3tTOKEN" not in err


def test_an_unreachable_scheduler_error_does_not_print_the_token(files, tmp_path, capsys):
    pytest.importorskip("distributed")
    from autopdp.pd.distributed import _client

    with pytest.raises(InputError) as exc:
        _client("tcp://user:s3cr3tTOKEN@127.0.0.1:1")
    assert "s3cr3tTOKEN" not in str(exc.value) and "tcp://user:***@127.0.0.1:1" in str(exc.value)
    code, out, err = run(capsys, "report", "--model", files / "model.skops", "--data", files / "data.csv", "--target",
                         "target", "--out", tmp_path / "out", "--config", files / "config.toml", "--formats", "json",
                         "--scheduler", "tls://user:s3cr3tTOKEN@127.0.0.1:1")
    assert code == 2 and "tls://user:***@127.0.0.1:1" in err
    assert "s3cr3tTOKEN" not in out + err and not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------------- the ICE sidecar
@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    d = tmp_path_factory.mktemp("ice")
    X, y = _frame(120)
    a = audit(LogisticRegression().fit(X, y), X, y, config=AuditConfig(grid_resolution=5, pairs=False))
    a.to_json(d / "results.json", ice=True)
    return d


def _with_ice_file(saved, tmp_path, name):
    data = json.loads((saved / "results.json").read_text())
    data["ice"]["file"] = name
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data))
    return path


def test_the_sidecar_beside_results_json_loads(saved):
    loaded = Audit.from_json(saved / "results.json", ice=True)
    assert all(r.individual is not None for r in loaded.results)


@pytest.mark.parametrize("name", ["/etc/passwd", "/no/such/file.parquet", "../ice.parquet", "sub/ice.parquet", ".."])
def test_a_results_json_cannot_point_its_ice_file_elsewhere(saved, tmp_path, name):
    path = _with_ice_file(saved, tmp_path, name)
    with pytest.raises(InputError) as exc:
        Audit.from_json(path, ice=True)
    message = str(exc.value)
    assert "not a plain file name" in message and "ice=PATH" in message
    # the same words whether the file exists or not: nothing revealed about it
    assert message.replace(repr(name), "NAME") == (
        "the results.json names its ICE file NAME, which is not a plain file name: the sidecar is read only from "
        "beside the results.json; pass its path explicitly (Audit.from_json(path, ice=PATH)).")


def test_an_explicit_ice_path_is_still_honoured(saved, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "curves.parquet").write_bytes((saved / "ice.parquet").read_bytes())
    path = _with_ice_file(saved, tmp_path, "/etc/passwd")
    loaded = Audit.from_json(path, ice=tmp_path / "elsewhere" / "curves.parquet")
    assert all(r.individual is not None for r in loaded.results)

"""Provenance in results.json, the report and gate.json: file hashes exactly as sha256sum prints them."""

import json
import shutil
import subprocess
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.linear_model import LogisticRegression

from autopdp import AuditConfig
from autopdp import audit
from autopdp import gate
from autopdp.cli import main
from autopdp.io.provenance import content_sha256

NEEDED_LIBRARIES = ("autopdp", "python", "numpy", "pandas", "scikit-learn", "scipy", "cvxpy", "skops", "joblib",
                    "matplotlib", "jinja2", "weasyprint", "numba", "pyarrow")


def sha256sum(path) -> str:
    """The first field of coreutils' `sha256sum FILE` (hashlib when the tool is absent)."""
    if shutil.which("sha256sum"):
        return subprocess.run(["sha256sum", str(path)], check=True, capture_output=True, text=True).stdout.split()[0]
    import hashlib

    return hashlib.sha256(open(path, "rb").read()).hexdigest()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("prov")
    rng = np.random.default_rng(3)
    X = pd.DataFrame({"a": rng.normal(size=240), "b": rng.uniform(0, 5, 240)})
    y = np.where(X.a + 0.2 * X.b + rng.normal(size=240) > 1, "yes", "no")
    X.assign(label=y).to_csv(d / "loans.csv", index=False)
    sio.dump(LogisticRegression().fit(X, y), d / "candidate_v2.skops")
    sio.dump(LogisticRegression().fit(X.assign(a=-X.a), y), d / "prod_v1.skops")
    (d / "audit.toml").write_text("grid_resolution = 6\ngrid_resolution_2d = 4\ntop_k = 1\n")
    (d / "policy.toml").write_text('[features.a]\nmonotonic = "increasing"\nmax_monotonicity = 0.05\n'
                                   "[champion]\nmax_similarity = 1.0\n[audit]\npairs = false\ngrid_resolution = 6\n")
    return d


def test_report_provenance_in_json_and_report(files, tmp_path, capsys):
    argv = ["report", "--model", str(files / "candidate_v2.skops"), "--data", str(files / "loans.csv"),
            "--target", "label", "--out", str(tmp_path), "--config", str(files / "audit.toml"),
            "--compare", f"prod={files / 'prod_v1.skops'}", "--formats", "json,html"]
    assert main(argv) == 0, capsys.readouterr().err
    data = json.loads((tmp_path / "results.json").read_text())
    prov = data["metadata"]["provenance"]
    expected = {"data": "loans.csv", "model": "candidate_v2.skops", "compare:prod": "prod_v1.skops", "config": "audit.toml"}
    assert {k: v["name"] for k, v in prov["inputs"].items()} == expected
    for role, name in expected.items():
        assert prov["inputs"][role]["sha256"] == sha256sum(files / name), role
        assert prov["inputs"][role]["bytes"] == (files / name).stat().st_size
    assert prov["target"] == "label" and prov["positive_class"] == "yes" and prov["seed"] == 0
    df = pd.read_csv(files / "loans.csv")
    assert prov["data_content_sha256"] == content_sha256(df.drop(columns="label"), df["label"].to_numpy())
    assert "not of a file" in prov["data_content_sha256_is"]
    assert set(NEEDED_LIBRARIES) <= set(data["metadata"]["versions"])
    assert all(v != "not installed" for v in data["metadata"]["versions"].values())
    assert prov["platform"]["platform"]
    assert data["run"]["command"].startswith("autopdp report --model ") and "--compare" in data["run"]["command"]
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["provenance"]["inputs"]["data"]["sha256"] == sha256sum(files / "loans.csv")
    html = (tmp_path / "report.html").read_text()
    cover = html[html.index('id="cover"'):html.index('</header>')]
    for name in expected.values():
        assert name in cover and sha256sum(files / name) in cover
    assert "prod (prod_v1.skops)" in cover and "Positive class</dt><dd>yes" in cover and "Target column</dt><dd>label" in cover
    appendix = html[html.index('id="appendix"'):]
    assert data["run"]["command"].split()[0] in appendix and "weasyprint" in appendix and "skops" in appendix


def test_content_hash_covers_the_labels():
    X = pd.DataFrame({"a": [1.0, 2.0, 3.0]})
    assert content_sha256(X, np.array([0, 1, 0])) != content_sha256(X, np.array([0, 1, 1]))
    assert content_sha256(X, np.array([0, 1, 0])) == content_sha256(X.copy(), np.array([0, 1, 0]))


def test_gate_json_and_xml_name_what_was_checked(files, tmp_path, capsys):
    out = tmp_path / "gate"
    code = main(["gate", "--policy", str(files / "policy.toml"), "--model", str(files / "candidate_v2.skops"),
                 "--champion", str(files / "prod_v1.skops"), "--data", str(files / "loans.csv"), "--target", "label",
                 "--out", str(out), "--formats", "json,html"])
    assert code in (0, 1), capsys.readouterr().err
    g = json.loads((out / "gate.json").read_text())
    prov = g["provenance"]
    for role, name in {"data": "loans.csv", "model": "candidate_v2.skops", "champion": "prod_v1.skops",
                       "policy": "policy.toml"}.items():
        assert prov["inputs"][role]["sha256"] == sha256sum(files / name), role
    assert prov["champion"] == "prod_v1" and prov["target"] == "label" and prov["positive_class"] == "yes"
    assert prov["date"] and prov["command"].startswith("autopdp gate ") and prov["versions"]["autopdp"]
    assert any(c["name"] == "similarity[a]" for c in g["checks"])
    props = {p.get("name"): p.get("value") for p in ET.parse(out / "gate.xml").getroot().find("testsuite/properties")}
    assert props["policy.sha256"] == sha256sum(files / "policy.toml") and props["champion"] == "prod_v1"
    html = (out / "report.html").read_text()
    cover = html[html.index('id="cover"'):html.index('</header>')]
    assert "Comparison models</dt><dd>prod_v1 (prod_v1.skops)" in cover and "candidate_v2.skops</span>" in cover
    gate_section = html[html.index('id="gate"'):html.index('id="summary"')]
    assert "Policy file: policy.toml" in gate_section and "Champion: prod_v1" in gate_section


def test_champion_is_the_single_comparison_model_whatever_its_name():
    rng = np.random.default_rng(4)
    X = pd.DataFrame({"a": rng.normal(size=200), "b": rng.normal(size=200)})
    y = (X.a > 0).astype(int)
    model = LogisticRegression().fit(X, y)
    same = LogisticRegression().fit(X, y)
    flipped = LogisticRegression().fit(X.assign(a=-X.a), y)
    cfg = AuditConfig(pairs=False, grid_resolution=6)
    policy = {"champion": {"max_similarity": 0.01}}
    one = audit(model, X, y, compare={"production 2024": flipped}, config=cfg)
    verdict = gate(one, policy)
    sims = {c.feature: c for c in verdict.checks if c.check == "similarity"}
    assert not sims["a"].passed and sims["a"].measured > 0.1  # measured against 'production 2024', not n/a
    assert verdict.provenance["champion"] == "production 2024"
    two = audit(model, X, y, compare={"p1": same, "p2": flipped}, config=cfg)
    with pytest.raises(ValueError, match=r"2 comparison models \(p1, p2\); say which is the champion"):
        gate(two, policy)
    assert gate(two, policy, champion="p1").checks[0].passed  # identical model: no gap
    assert not gate(two, policy, champion="p2").passed
    with pytest.raises(ValueError, match="champion 'p3' is not a comparison model"):
        gate(two, policy, champion="p3")


@pytest.mark.parametrize("chunk", [1, 7, 10**9])
def test_content_hash_in_row_chunks_equals_one_pass(chunk, monkeypatch):
    """Issue 54: the content hash is fed a chunk of rows at a time (its passing arrays bounded); the digest is the
    one-pass digest (each row's pandas hash is its own), with categoricals, missing values, text and weights."""
    import hashlib

    import numpy as np
    import pandas as pd

    from autopdp.io import provenance
    from autopdp.io.provenance import content_sha256

    rng = np.random.default_rng(4)
    n = 53
    X = pd.DataFrame({"a": rng.normal(size=n), "c": pd.Categorical(rng.choice(["p", "q", None], n)),
                      "s": rng.choice(["x", "yy", "zzz"], n).astype(object), "i": rng.integers(0, 5, n)})
    X.loc[rng.random(n) < 0.1, "a"] = np.nan
    y = rng.choice(["<=50K", ">50K"], n).astype(object)
    w = rng.exponential(size=n)

    def one_pass():  # the definition, every row at once
        h = hashlib.sha256()
        h.update("\x1f".join(map(str, X.columns)).encode())
        h.update(pd.util.hash_pandas_object(X, index=False).to_numpy().tobytes())
        for label, extra in (("y", y), ("w", w)):
            h.update(b"\x1e" + label.encode())
            h.update(pd.util.hash_pandas_object(pd.Series(np.asarray(extra), dtype=object), index=False).to_numpy()
                     .tobytes())
        return h.hexdigest()

    monkeypatch.setattr(provenance, "HASH_CHUNK_ROWS", chunk)
    assert content_sha256(X, y, w) == one_pass()
    assert content_sha256(X.iloc[:0], y[:0], w[:0]) != content_sha256(X, y, w)

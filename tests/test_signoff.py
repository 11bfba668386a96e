"""What a validator needs day to day: weights, pair choice, ordinal orders, report texts, sign-off, progress."""

import json

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OrdinalEncoder
from sklearn.compose import make_column_transformer

from autopdp import Audit, AuditConfig, read_results
from autopdp import audit
from autopdp import gate
from autopdp.cli import main

ONE_D = AuditConfig(pairs=False, grid_resolution=7, utilities=("monotonicity", "incidence", "slope"))


@pytest.fixture(scope="module")
def weighted():
    rng = np.random.default_rng(5)
    n = 60
    # few distinct values: the grid is every value, the same for weighted and repeated rows
    X = pd.DataFrame({"a": rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], n), "b": rng.integers(0, 4, n).astype(float)})
    y = (X.a + 0.5 * X.b + rng.normal(scale=0.7, size=n) > 0.8).astype(int)
    w = rng.integers(1, 5, n)
    return X, y, w, LogisticRegression().fit(X, y)


def test_integer_weights_equal_repeated_rows(weighted):
    """Frequency weights: a row of weight k counts as k copies (PD, density weights, incidence)."""
    X, y, w, model = weighted
    a = audit(model, X, y, sample_weight=w, config=ONE_D)
    rep = np.repeat(np.arange(len(X)), w)
    b = audit(model, X.iloc[rep].reset_index(drop=True), y.iloc[rep].reset_index(drop=True), config=ONE_D)
    for f in ("a", "b"):
        np.testing.assert_allclose(a.pd(f).average, b.pd(f).average, rtol=0, atol=1e-12)
        for uid in ("monotonicity", "incidence"):
            assert a.score(f, uid).value == pytest.approx(b.score(f, uid).value, abs=1e-12), (f, uid)
    plain = audit(model, X, y, config=ONE_D)
    assert not np.allclose(plain.pd("a").average, a.pd("a").average)  # the weights matter
    assert a.metadata["provenance"]["data_content_sha256"] != plain.metadata["provenance"]["data_content_sha256"]
    assert any("weighted by the sample weights" in n for n in a.notes)


@pytest.mark.parametrize("weights, message", [
    (np.r_[-1, np.ones(59)], "sample_weight has 1 missing, infinite or negative value(s)"),
    (np.ones(10), "sample_weight has 10 values but X has 60 rows"),
    (np.zeros(60), "sample_weight sums to 0"),
])
def test_bad_weights_are_named(weighted, weights, message):
    X, y, _, model = weighted
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        audit(model, X, y, sample_weight=weights, config=ONE_D)


@pytest.fixture(scope="module")
def files(tmp_path_factory, weighted):
    d = tmp_path_factory.mktemp("signoff")
    X, y, w, model = weighted
    X.assign(wt=w, label=y).to_csv(d / "data.csv", index=False)
    sio.dump(model, d / "model.skops")
    (d / "cfg.toml").write_text("grid_resolution = 6\ntop_k = 1\npairs = false\n")
    return d


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_weights_column_is_not_a_feature(files, tmp_path, capsys, weighted):
    X, y, w, model = weighted
    code, _, err = run(capsys, "report", "--model", files / "model.skops", "--data", files / "data.csv", "--target",
                       "label", "--weights", "wt", "--config", files / "cfg.toml", "--out", tmp_path, "--formats", "json")
    assert code == 0, err
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["metadata"]["data"]["feature_names"] == ["a", "b"]
    assert data["metadata"]["provenance"]["sample_weight"] == "wt"
    api = audit(model, X, y, sample_weight=w, config=AuditConfig.from_toml(files / "cfg.toml"))
    got = [r for r in read_results(data)["results"] if r["features"] == ["a"]][0]
    np.testing.assert_allclose(np.asarray(got["average"], dtype=float), api.pd("a").average, rtol=0, atol=1e-12)
    code, _, err = run(capsys, "report", "--model", files / "model.skops", "--data", files / "data.csv", "--target",
                       "label", "--weights", "wgt", "--out", tmp_path)
    assert code == 2 and "weights column 'wgt' is not in the data. Did you mean 'wt'?" in err


@pytest.fixture(scope="module")
def four():
    rng = np.random.default_rng(6)
    X = pd.DataFrame(rng.uniform(-1, 1, size=(300, 4)), columns=["a", "b", "c", "d"])
    coef = np.array([3.0, 2.0, 0.5, 0.1])
    model = LinearRegression().fit(X, X.to_numpy() @ coef)
    return X, model


@pytest.mark.parametrize("pairs, expected", [
    ("top:1", [("a", "b")]),
    ("top:3", [("a", "b"), ("a", "c"), ("b", "c")]),  # largest sqrt(importance_i * importance_j)
    ("c:a, d:b", [("c", "a"), ("d", "b")]),
    ("none", []),
    ("all", [("a", "b"), ("a", "c"), ("a", "d"), ("b", "c"), ("b", "d"), ("c", "d")]),
    ([["b", "d"]], [("b", "d")]),
])
def test_pairs_choice(four, pairs, expected):
    X, model = four
    a = audit(model, X, config=AuditConfig(pairs=pairs, grid_resolution=5, grid_resolution_2d=3,
                                           utilities=("slope",), max_rows_2d=None))
    assert [r.features for r in a.results_2d] == expected
    if str(pairs).startswith("top"):
        assert any("geometric mean of 1D PD importance" in n for n in a.notes)


def test_pairs_errors():
    with pytest.raises(ValueError, match="top:N needs a whole number N >= 1"):
        AuditConfig(pairs="top:0")
    with pytest.raises(ValueError, match="takes all, none, top:N or FEATURE:FEATURE"):
        AuditConfig(pairs="a-b")
    X = pd.DataFrame({"age": np.arange(20.0), "hours": np.arange(20.0) % 7})
    with pytest.raises(ValueError, match="pairs \\(--pairs\\) feature 'hour' is not in the data's features. Did you mean 'hours'"):
        audit(lambda d: d["age"].to_numpy(), X, config=AuditConfig(pairs="age:hour"))


EDU = ["HS-grad", "Bachelors", "Masters", "Doctorate"]


@pytest.fixture(scope="module")
def ordinal(tmp_path_factory):
    """A model whose prediction rises with education in its natural order (not the alphabetical one)."""
    d = tmp_path_factory.mktemp("ordinal")
    rng = np.random.default_rng(7)
    n = 400
    edu = rng.choice(EDU, n)
    X = pd.DataFrame({"education": edu, "hours": rng.uniform(10, 60, n)})
    rank = pd.Series(edu).map({e: i for i, e in enumerate(EDU)}).to_numpy()
    y = rank * 2.0 + X.hours / 30 + rng.normal(scale=0.2, size=n)
    enc = make_column_transformer((OrdinalEncoder(categories=[EDU]), ["education"]), remainder="passthrough")
    model = make_pipeline(enc, LinearRegression()).fit(X, y)
    X.assign(y=y).to_csv(d / "edu.csv", index=False)
    sio.dump(model, d / "edu.skops")
    return d, X, y, model


def test_ordinal_order_from_config_is_scored(ordinal):
    d, X, y, model = ordinal
    plain = audit(model, X, y, config=AuditConfig(pairs=False, utilities=("monotonicity",)))
    assert not plain.score("education", "monotonicity").available  # unordered: n/a
    cfg = AuditConfig(pairs=False, utilities=("monotonicity",), categories={"education": EDU},
                      expected_monotonic={"education": "increasing"})
    a = audit(model, X, y, config=cfg)
    s = a.score("education", "monotonicity")
    assert s.available and s.value == pytest.approx(0.0, abs=1e-9)  # increasing in the declared order
    assert list(a.pd("education").grid[0]) == EDU
    wrong = cfg.replace(expected_monotonic={"education": "decreasing"})
    assert audit(model, X, y, config=wrong).score("education", "monotonicity").value > 1.0
    with pytest.raises(ValueError, match=r"column 'education' has values that config key 'categories.education' "
                                         r"does not list: 'Masters'"):
        audit(model, X, y, config=cfg.replace(categories={"education": ["HS-grad", "Bachelors", "Doctorate"]}))


def test_gate_monotonic_rule_on_an_ordinal_feature(ordinal, tmp_path, capsys):
    d, *_ = ordinal
    policy = tmp_path / "policy.toml"
    policy.write_text('[features.education]\nmonotonic = "increasing"\nmax_monotonicity = 0.001\n'
                      "[audit]\npairs = false\n")
    base = ["gate", "--policy", policy, "--model", d / "edu.skops", "--data", d / "edu.csv", "--target", "y",
            "--formats", "json"]
    code, out, _ = run(capsys, *base, "--out", tmp_path / "closed")
    assert code == 1 and "could not be measured" in json.loads((tmp_path / "closed" / "gate.json").read_text())[
        "checks"][0]["message"]  # no order declared: the gate fails closed
    cfg = tmp_path / "cfg.toml"
    cfg.write_text("[categories]\neducation = " + json.dumps(EDU) + "\n")
    code, out, err = run(capsys, *base, "--config", cfg, "--out", tmp_path / "ordered")
    assert code == 0, out + err
    check = json.loads((tmp_path / "ordered" / "gate.json").read_text())["checks"][0]
    assert check["passed"] and check["measured"] == pytest.approx(0.0, abs=1e-9)


def test_sign_off_from_flags_and_config(files, tmp_path, capsys):
    (tmp_path / "so.toml").write_text('pairs = false\ngrid_resolution = 5\n[sign_off]\nrole = "Head of Model Risk"\n')
    code, _, err = run(capsys, "report", "--model", files / "model.skops", "--data", files / "data.csv", "--target",
                       "label", "--config", tmp_path / "so.toml", "--out", tmp_path / "o", "--formats", "html,json",
                       "--title", "Credit PD validation", "--model-name", "PD model", "--model-version", "3.1",
                       "--reviewer", "A. Validator", "--sign-off-name", "B. Approver", "--decision",
                       "approve with conditions", "--conditions", "Recalibrate by Q3", "--sign-off-date", "2026-11-20")
    assert code == 0, err
    html = (tmp_path / "o" / "report.html").read_text()
    block = html[html.index('id="sign-off"'):html.index("</header>")]
    for text in ("A. Validator", "B. Approver", "Head of Model Risk", "2026-11-20", "Recalibrate by Q3",
                 '<span class="choice chosen">☒ Approve with conditions</span>', "☐ Approve<", "☐ Reject"):
        assert text in block, text
    assert "<h1>Credit PD validation</h1>" in html and "PD model</span>" in html and "version 3.1" in html
    cfg = json.loads((tmp_path / "o" / "results.json").read_text())["config"]
    assert cfg["sign_off"] == {"role": "Head of Model Risk", "name": "B. Approver", "decision": "approve with conditions",
                               "conditions": "Recalibrate by Q3", "date": "2026-11-20"}


def test_sign_off_left_as_a_form(weighted):
    X, y, _, model = weighted
    html = audit(model, X, y, config=ONE_D).to_html()
    block = html[html.index('id="sign-off"'):html.index("</header>")]
    assert "☒" not in block and block.count("☐") == 3 and block.count('class="blank') >= 5


@pytest.mark.parametrize("flags, message", [
    (["--decision", "maybe"], "must be one of approve, approve with conditions, reject; got 'maybe'"),
    (["--decision", "approve with conditions"], "needs the conditions"),
    (["--sign-off-date", "22/11/2026"], "must be a date YYYY-MM-DD"),
])
def test_sign_off_errors(files, tmp_path, capsys, flags, message):
    code, _, err = run(capsys, "report", "--model", files / "model.skops", "--data", files / "data.csv", "--target",
                       "label", "--out", tmp_path, *flags)
    assert code == 2 and message in err


def test_api_report_renders_the_gate_and_comparison_sections(weighted):
    X, y, _, model = weighted
    other = LogisticRegression().fit(X.assign(a=-X.a), y)
    a = audit(model, X, y, compare={"prod": other}, config=ONE_D.replace(utilities=("monotonicity", "similarity")))
    verdict = gate(a, {"champion": {"max_similarity": 0.01}})
    html = a.to_html(gate=verdict, comparison="candidate")
    assert html.index('id="gate"') < html.index('id="comparison"') < html.index('id="summary"')
    assert "similarity" in html[html.index('id="gate"'):html.index('id="comparison"')]
    assert "PD of prod" in html[html.index('id="comparison"'):html.index('id="summary"')]
    assert 'id="gate"' not in a.to_html()
    with pytest.raises(ValueError, match="comparison= needs an audit with comparison models"):
        audit(model, X, y, config=ONE_D).to_html(comparison="x")


def test_progress_names_every_long_stage(weighted, tmp_path, capsys, monkeypatch):
    from autopdp.report import write_report

    X, y, _, model = weighted
    a = audit(model, X, y, config=ONE_D.replace(utilities=("monotonicity", "ood_share")), progress=True)
    err = capsys.readouterr().err
    assert "autopdp: 1D partial dependence of 2 features ..." in err
    assert "autopdp: scoring 2 PDs with 2 utilities ..." in err
    assert "autopdp: trust checks (out-of-distribution share, ALE, StratPD, surrogate) ..." in err
    write_report(a, tmp_path, formats=("html", "pdf"), progress=True)
    err = capsys.readouterr().err
    assert "autopdp: building the report's figures ..." in err and "autopdp: rendering the PDF ..." in err
    audit(model, X, y, config=ONE_D)  # default: stderr is not a terminal here -> silent
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("CI", "true")
    from autopdp.utils.progress import progress_enabled

    assert progress_enabled() is False


# ------------------------------------------------------------------ the cover is ReportOptions, not AuditConfig
def test_the_cover_is_report_options_and_round_trips_in_results_json(weighted, tmp_path):
    from autopdp import ReportOptions
    from autopdp.config import COVER_KEYS

    X, y, _, model = weighted
    cover = ReportOptions(title="Scorecard review", model_name="scorecard", model_version="2.0", dataset_name="book",
                          reviewer="A. Validator", sign_off={"decision": "reject", "date": "2026-11-20"})
    a = audit(model, X, y, config=ONE_D, report=cover)
    import dataclasses

    assert a.report == cover and not {f.name for f in dataclasses.fields(AuditConfig)} & set(COVER_KEYS)
    html = a.to_html()
    assert "<h1>Scorecard review</h1>" in html and "version 2.0" in html and "A. Validator" in html
    path = tmp_path / "results.json"
    a.to_json(path)
    block = json.loads(path.read_text())["config"]
    # results.json keeps one flat config table: the audit's keys in their order, then the cover's
    assert list(block) == [*AuditConfig().to_dict(), *COVER_KEYS]
    assert block["sign_off"] == {"decision": "reject", "date": "2026-11-20"} and block["model_version"] == "2.0"
    back = Audit.from_json(path)
    assert back.report == cover and back.config == a.config
    assert back.to_html().count("Scorecard review") == html.count("Scorecard review")
    # another cover on the same findings, without re-running the audit
    renamed = dataclasses.replace(back, report=back.report.replace(reviewer="C. Second"))
    assert "C. Second" in renamed.to_html() and renamed.scores.equals(back.scores)


def test_report_options_check_their_keys():
    from autopdp import InputError, ReportOptions

    with pytest.raises(InputError, match="config key 'model_name' must be text, got int"):
        ReportOptions(model_name=3)
    with pytest.raises(InputError, match="unknown report key 'colour'"):
        ReportOptions.from_dict({"colour": "red"})
    with pytest.raises(InputError, match="must be one of approve, approve with conditions, reject"):
        ReportOptions(sign_off={"decision": "maybe"})
    assert ReportOptions(sign_off="signed on paper").sign_off == {"statement": "signed on paper"}
    with pytest.raises(InputError, match="report must be a ReportOptions or a dict, got str"):
        audit(lambda d: d["a"].to_numpy(), pd.DataFrame({"a": [0.0, 1.0] * 20}), config=ONE_D, report="title")


def test_a_dict_config_carries_the_cover_as_a_config_file_does(weighted):
    import warnings

    X, y, _, model = weighted
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        a = audit(model, X, y, config={**ONE_D.to_dict(), "title": "From a dict", "reviewer": "R"})
    assert a.report.title == "From a dict" and a.report.reviewer == "R" and a.config == ONE_D


def test_cover_keys_on_audit_config_still_work_for_one_release_with_a_warning(weighted):
    X, y, _, model = weighted
    with pytest.warns(DeprecationWarning, match=r"AuditConfig\(model_name=\.\.\., reviewer=\.\.\.\) is deprecated"):
        cfg = ONE_D.replace(model_name="old way", reviewer="R. Old")
    a = audit(model, X, y, config=cfg)
    assert a.report.model_name == "old way" and a.report.reviewer == "R. Old"
    with pytest.warns(DeprecationWarning, match="AuditConfig.model_name is deprecated"):
        assert cfg.model_name == "old way"
    # report= wins over the deprecated keys
    assert audit(model, X, y, config=cfg, report={"title": "New"}).report.model_name is None


def test_a_policy_cannot_set_the_cover():
    from autopdp import GatePolicy, InputError

    with pytest.raises(InputError, match="policy key 'audit.title' is the report's cover"):
        GatePolicy.from_dict({"audit": {"title": "x"}, "features": {"a": {"monotonic": "increasing"}}})

"""Issue 31: refits of the learner, the learner-level test of every finding, what is not assessed, results.json.

The known answers: a boosted classifier trained on a target that depends on x1..x4 (x3·x4 planted) with pure
noise z1, z2 (``benchmarks/calibration_cases.py``, ``refit_case``): the model's own tests find patterns on z1, z2
and z1·z2 (a boosted fit to noise is real at the fitted-model level); the learner-level test must not call them
robust and must call the planted importances and the x3·x4 interaction robust.  Over seeds:
tests/test_calibration_refits.py and benchmarks/bench_calibration.py --refits.
"""

import dataclasses
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import calibration_cases as cases  # noqa: E402

import autopdp  # noqa: E402
from autopdp import AuditConfig  # noqa: E402
from autopdp.errors import InputError  # noqa: E402
from autopdp.pd.refits import Refits, _seeded, learner_of, train_rows  # noqa: E402


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _data(seed, n):
    return cases._refit_data(np.random.default_rng(seed), n)


@pytest.fixture(scope="module")
def refitted():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        Xt, yt = _data(3, 1200)
        Xa, ya = _data(4, 400)
        model = HistGradientBoostingClassifier(max_iter=60, random_state=0).fit(Xt, yt)
        cfg = AuditConfig(refits=6, materiality=0.0, pairs=(("x3", "x4"), ("z1", "z2")), grid_resolution=8,
                          grid_resolution_2d=5, utilities=("monotonicity", "slope", "ice_variance"))
        return autopdp.audit(model, Xa, ya, train=(Xt, yt), config=cfg, progress=False), model, (Xa, ya, Xt, yt)


def test_planted_patterns_are_robust_and_the_noise_the_model_fitted_is_not(refitted):
    a = refitted[0]
    imp, inter = a.evidence["importance_1d"], a.evidence["interaction"]
    # the model's own tests find every one of them (materiality 0): the fitted-model level cannot tell them apart
    assert all(imp[(f,)].passed for f in ("x1", "x2", "z1", "z2"))
    assert inter[("x3", "x4")].passed and inter[("z1", "z2")].passed
    # the learner level can
    assert imp[("x1",)].robust is True and imp[("x2",)].robust is True
    assert inter[("x3", "x4")].robust is True and inter[("x3", "x4")].robust_adjusted_p <= 0.05
    assert imp[("z1",)].robust is False and imp[("z2",)].robust is False
    assert inter[("z1", "z2")].robust is False and inter[("z1", "z2")].robust_p > 0.05
    assert a.evidence["ice_variance"][("x3",)].robust is True
    assert a.evidence["ice_variance"][("z1",)].robust is False


def test_every_item_has_a_decision_or_a_reason_and_the_summary_counts(refitted):
    a = refitted[0]
    assert a.refits.assessed and a.refits.fitted == 6 and a.refits.requested == 6
    assert a.refits.n_train == 1200 and a.refits.n_fit == 600
    assert a.refits.correction == pytest.approx(1 / 6 + 600 / 600)
    assert len(set(a.refits.seeds)) == 6
    for crit, by in a.evidence.items():
        for e in by.values():
            if e.robust is None:
                assert e.robust_why.startswith("not assessed"), (crit, e.robust_why)
            else:  # a decision is a learner-level test's: it has a p-value
                assert np.isfinite(e.robust_p) and 0 <= e.stability <= 1, (crit, e)
    # correlation is the data's, and the intersection counts the other pair criteria's findings: never a
    # learner-level claim of their own
    assert all(e.robust is None for e in a.evidence["correlation"].values())
    assert a.evidence["intersection"] and all(e.robust is None and "pair criteria" in e.robust_why
                                              for e in a.evidence["intersection"].values())
    # stability is descriptive: every refit's own test finds z1's importance (each refit fits its own noise)
    assert a.evidence["importance_1d"][("z1",)].stability >= 0.5
    assert set(a.refit_curves) == {(f,) for f in cases.REFIT_COLUMNS}
    assert a.refit_curves[("x1",)].shape[0] == 6
    assert {"refits", "refit_fits", "learner_tests"} <= set(a.run["timings_s"])


def test_results_json_round_trips_the_learner_level_fields(refitted, tmp_path):
    a = refitted[0]
    path = tmp_path / "results.json"
    a.to_json(path)
    d = json.loads(path.read_text())
    assert d["refits"]["fitted"] == 6 and d["refits"]["scheme"] == "half-samples without replacement"
    b = autopdp.Audit.from_json(path)
    for crit, by in a.evidence.items():
        for key, e in by.items():
            f = b.evidence[crit][key]
            assert f.robust == e.robust, (crit, key)
            assert f.robust_why == e.robust_why
            for name in ("robust_p", "robust_adjusted_p", "stability"):
                x, y = getattr(e, name), getattr(f, name)
                assert (np.isnan(x) and np.isnan(y)) or x == pytest.approx(y), (crit, key, name)
    assert b.refits.assessed and b.refits.fitted == 6 and b.refits.correction == pytest.approx(a.refits.correction)
    assert np.allclose(b.refit_curves[("x1",)], a.refit_curves[("x1",)])
    # an older file (no refits, no robust fields) reads as not assessed
    new = ("robust", "robust_p", "robust_adjusted_p", "stability", "robust_why")
    dropped = 0
    for tables in d["evidence"].values():
        for t in tables if isinstance(tables, list) else [tables]:
            for k in new:
                dropped += t.get("same", {}).pop(k, None) is not None or k in t.get("same", {})
            keep = [i for i, c in enumerate(t.get("columns", [])) if c not in new]
            dropped += len(t.get("columns", [])) - len(keep)
            if "columns" in t:
                t["columns"] = [t["columns"][i] for i in keep]
                t["rows"] = [[row[i] for i in keep] for row in t["rows"]]
            if "order" in t:
                t["order"] = [c for c in t["order"] if c not in new]
    assert dropped and "robust" not in json.dumps(d["evidence"])
    d.pop("refits")
    old = tmp_path / "old.json"
    old.write_text(json.dumps(d))
    c = autopdp.Audit.from_json(old)
    assert c.refits is None and all(e.robust is None for by in c.evidence.values() for e in by.values())


def test_a_callable_is_not_assessed_and_nothing_is_called_robust():
    out = cases.refit_not_assessed_case()
    assert out["robust"] == {None}
    assert "callable" in out["reason"] and "no learner to refit" in out["reason"]


class _Duck:
    """predict_proba without get_params: not cloneable."""

    def __init__(self, model):
        self.model = model
        self.classes_ = model.classes_

    def fit(self, X, y):
        return self

    def predict_proba(self, X):
        return self.model.predict_proba(X)


def test_not_assessed_reasons_duck_typed_no_train_and_a_failing_fit():
    Xt, yt = _data(5, 300)
    Xa, ya = _data(6, 150)
    lr = LogisticRegression().fit(Xt, yt)
    cfg = AuditConfig(refits=3, pairs=False, grid_resolution=6, utilities=("slope",))
    a = autopdp.audit(_Duck(lr), Xa, ya, train=(Xt, yt), config=cfg, progress=False)
    assert "get_params" in a.refits.reason and not a.refits.assessed
    assert {e.robust for by in a.evidence.values() for e in by.values()} == {None}
    b = autopdp.audit(lr, Xa, ya, config=cfg, progress=False)
    assert b.refits.reason.startswith("no training data was given")
    bad_y = yt.astype(float)
    bad_y[:] = np.nan
    c = autopdp.audit(lr, Xa, ya, train=(Xt, bad_y), config=cfg, progress=False)
    assert c.refits.reason.startswith("a refit of the learner failed (ValueError")
    assert {e.robust for by in c.evidence.values() for e in by.values()} == {None}


def test_bad_train_input_is_one_line():
    Xt, yt = _data(5, 100)
    lr = LogisticRegression().fit(Xt, yt)
    with pytest.raises(InputError, match="'refits'.*is 0"):
        autopdp.audit(lr, Xt, yt, train=(Xt, yt))
    with pytest.raises(InputError, match="y_train has 99 values for 100 rows"):
        autopdp.audit(lr, Xt, yt, train=(Xt, yt[:99]), config={"refits": 3})
    with pytest.raises(InputError, match="refits"):
        AuditConfig(refits=1)
    with pytest.raises(InputError, match="other columns"):
        autopdp.audit(lr, Xt, yt, train=(Xt.rename(columns={"x1": "a"}), yt), config={"refits": 3})


def test_the_learner_is_a_clone_with_random_state_varied_in_every_step():
    rf = make_pipeline(StandardScaler(), RandomForestClassifier(n_estimators=5, random_state=7))
    learner, reason = learner_of(rf)
    assert reason == "" and learner is not rf
    seeded = _seeded(learner, 123)
    assert seeded.get_params()["randomforestclassifier__random_state"] == 123
    assert seeded.get_params()["randomforestclassifier__n_estimators"] == 5  # hyperparameters kept
    assert learner_of(lambda X: X)[0] is None
    rows, seeds = train_rows(101, 4, 0)
    assert all(len(r) == 50 and len(set(r)) == 50 for r in rows)  # half-samples without replacement
    assert len(set(seeds)) == 4 and not np.array_equal(rows[0], rows[1])
    r = Refits(requested=10, n_train=100, n_fit=50, pds=tuple(range(10)))
    assert r.correction == pytest.approx(0.1 + 1.0)  # Nadeau-Bengio: 1/K + n_test/n_fit


@pytest.fixture(scope="module")
def cli_files(tmp_path_factory):
    import skops.io as sio

    d = tmp_path_factory.mktemp("refit_cli")
    Xt, yt = _data(7, 600)
    Xa, ya = _data(8, 300)
    model = HistGradientBoostingClassifier(max_iter=30, random_state=0).fit(Xt, yt)
    sio.dump(model, d / "model.skops")
    Xt.assign(target=yt).to_csv(d / "train.csv", index=False)
    Xa.assign(target=ya).to_csv(d / "data.csv", index=False)
    (d / "config.toml").write_text('pairs = "x3:x4"\ngrid_resolution = 6\ngrid_resolution_2d = 4\n'
                                   'utilities = ["slope", "ice_variance"]\n')
    return d


def _cli(d, out, *extra):
    from autopdp.cli import main

    return main(["report", "--model", str(d / "model.skops"), "--data", str(d / "data.csv"), "--target", "target",
                 "--config", str(d / "config.toml"), "--out", str(out), "--formats", "json", *map(str, extra)])


def test_cli_train_and_refits_write_robust_for_every_evidence_item(cli_files, tmp_path):
    from autopdp import read_results

    assert _cli(cli_files, tmp_path, "--train", cli_files / "train.csv", "--refits", 3) == 0
    d = read_results(tmp_path / "results.json")
    assert d["refits"]["fitted"] == 3 and d["refits"]["n_train"] == 600 and d["refits"]["reason"] == ""
    items = [e for v in d["evidence"].values() for e in v]
    assert items and all("robust" in e and "stability" in e for e in items)
    assert any(e["robust"] in (True, False) for e in items)
    train = d["metadata"]["provenance"]["inputs"]["training data"]  # hashed like every input
    assert train["name"] == "train.csv" and len(train["sha256"]) == 64


@pytest.mark.parametrize("extra, message", [
    (("--refits", 3), "--refits 3 needs --train"),
    (("--train", "TRAIN"), "--train needs --refits"),
    (("--train", "TRAIN", "--refits", 1), "refits"),
])
def test_cli_refits_and_train_go_together_exit_2(cli_files, tmp_path, capsys, extra, message):
    extra = [str(cli_files / "train.csv") if x == "TRAIN" else x for x in extra]
    assert _cli(cli_files, tmp_path / "out", *extra) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


def test_the_report_says_which_findings_are_robust(refitted):
    """Each finding's sentence, the summary's counts, the methodology and the figure, in HTML and Word."""
    import io
    import re

    from autopdp.report.context import findings_context
    from autopdp.report.findings import criterion_word, robust_kind
    from autopdp.report.methodology import robustness_counts

    a = refitted[0]
    found = findings_context(a)
    by_label = {f["label"]: f["sentence"] for f in found}
    for sel in a.selection:
        crit = sel.reasons[0][0]
        which = f"The {criterion_word(crit)} finding"
        e = a.evidence[crit][sel.features]
        s = by_label[sel.label]
        held = int(round(e.stability * a.refits.fitted)) if np.isfinite(e.stability) else None
        if e.robust is True:
            assert f"{which} holds in {held} of 6 refits; robust at the learner level (adjusted p" in s, s
        elif robust_kind(e) == "specific":
            assert f"{which} is specific to this fit" in s and "Recommendation: regularise or constrain the learner" in s, s
            assert f"found by {held} of 6 refits' own tests" in s, s
            lv = e.details["learner"]["value"]
            assert lv <= e.details["learner"]["threshold"] or lv < 0.5 * e.value
        elif e.robust is False:
            assert f"{which} is not shown to be robust: the learner-PD (the mean of 6 refits' PDs) has it too" in s, s
        else:
            assert f"Robustness of the {criterion_word(crit)} finding not assessed (" in s, s
    from autopdp.findings.words import FITTED_TEST

    assessed = [e for by in a.evidence.values() for e in by.values() if e.robust is not None]
    assert assessed
    for e in assessed:  # a learner-level verdict's sentence says what its own test is of
        assert FITTED_TEST not in e.robust_why, e.robust_why
        if e.robust:  # a significant learner-level test says what it was of
            assert "the test is of the learner: the learner-PD (the mean of 6 refits' PDs)" in e.robust_why, e.robust_why
    from autopdp.report.explore import robust_label
    from autopdp.report.writer import report_context

    pages = report_context(a, formats=("html",))["finding_pages"]
    labels = []
    for sel, page in zip(a.selection, pages):  # each reason on a finding's page carries its own criterion's verdict
        for (c, _), r in zip(sel.reasons, page["reason_list"]):
            label = robust_label(sel.evidence_for(c))
            labels.append(label)
            assert r["evidence"].endswith(f"; learner level: {label}") if label else "learner level" not in r["evidence"]
    assert "robust" in labels and "specific to this fit" in labels
    c = robustness_counts(a)
    assert c["robust"] >= 1 and c["specific"] >= 1
    assert c["findings"] == c["robust"] + c["specific"] + c["unconfirmed"] + c["not_assessed"]
    markup = a.to_html()
    html = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", re.sub(r"<(script|style)\b.*?</\1>", " ", markup, flags=re.S)))
    assert f"Of the {c['findings']} findings, {c['robust']} " in html
    assert f"{c['specific']} specific to this fit" in html
    assert "half-samples without replacement of the 1,200 training rows (600 rows each)" in html
    assert "1/K + n_test/n_fit = 1/6 + 600/600 = 1.17" in html
    assert "The learner. Tested with 6 refits" in html and "this audit refits nothing" not in html
    assert "range of 6 refits" in markup and "Monte-Carlo 95% band" in markup  # the finding figures' legend
    docx = pytest.importorskip("docx")
    d = docx.Document(io.BytesIO(a.to_docx()))
    text = re.sub(r"\s+", " ", " ".join(p.text for p in d.paragraphs))
    assert "robust at the learner level" in text and "is specific to this fit" in text
    assert f"Of the {c['findings']} findings" in text  # the summary's counts
    assert "The learner. Tested with 6 refits" in text


def test_without_refits_the_report_says_the_learner_is_not_tested():
    from autopdp.report.methodology import learner_text, tested_text

    Xa, ya = _data(9, 200)
    a = autopdp.audit(LogisticRegression().fit(Xa, ya), Xa, ya, config={"pairs": False, "grid_resolution": 6},
                      progress=False)
    assert a.refits is None and "not tested in this report" in tested_text(a)
    assert "this audit refits nothing" in learner_text(a)
    assert all(e.robust is None and e.robust_why == "" for by in a.evidence.values() for e in by.values())


def test_gate_robust_fails_only_on_robust_violations(refitted):
    a = refitted[0]
    rules = {"x1": {"monotonic": "decreasing", "max_monotonicity": 0.005},  # x1 increases: a violation of any fit
             "z1": {"monotonic": "increasing", "max_monotonicity": 0.005}}  # z1 is noise: this fit's own wiggle
    plain = autopdp.gate(a, {"features": rules})
    assert [c.passed for c in plain.checks] == [False, False]  # the fitted model violates both, with confidence
    robust = autopdp.gate(a, {"features": {k: {**v, "robust": True} for k, v in rules.items()}})
    x1, z1 = robust.checks
    assert not x1.passed and "the violation is robust: the learner-PD of 6 refits" in x1.message
    assert x1.proof["robust"] is True and x1.proof["learner"]["adjusted_p"] <= 0.05
    assert z1.passed and "specific to this fit" in z1.message and z1.proof["robust"] is False
    # without refits the rule fails closed, saying why
    b = dataclasses.replace(a, refits=None, refit_curves={})
    z1b = autopdp.gate(b, {"features": {"z1": {**rules["z1"], "robust": True}}}).checks[0]
    assert not z1b.passed and "the learner level was not assessed" in z1b.message
    with pytest.raises(InputError, match="robust' must be true or false"):
        autopdp.gate(a, {"features": {"z1": {**rules["z1"], "robust": "yes"}}})
    with pytest.raises(InputError, match="modifies a rule the policy does not set"):
        autopdp.gate(a, {"features": {"z1": {"min_importance": 0.0, "robust": True}}})


def test_every_findings_verdict_is_in_the_tables_not_only_the_selected_ones(refitted):
    """The summary counts every finding's learner-level verdict; the HTML's tables name each one (its ranking's
    'finding?' cell and the every-score table's 'finding under'), so a validator can see which are specific to
    this fit without reading results.json."""
    from autopdp.report.context import build_context
    from autopdp.report.explore import ROBUST_LABELS
    from autopdp.report.findings import robust_kind

    a = refitted[0]
    ctx = build_context(a)
    cells = {(t["uid"], r["label"]): r["finding_text"] for t in ctx["rankings"] for r in t["rows"]}
    wide = {r["label"]: r["findings"] for r in ctx["all_pdps"]["rows"]}
    checked = 0
    for crit, by in a.evidence.items():
        for feats, e in by.items():
            label = " × ".join(feats)
            if (crit, label) not in cells or not e.passed:
                continue
            kind = robust_kind(e)
            if kind in ROBUST_LABELS:
                assert cells[(crit, label)] == f"yes ({ROBUST_LABELS[kind]})"
                assert f"{crit} ({ROBUST_LABELS[kind]})" in wide[label]
                checked += 1
            else:
                assert cells[(crit, label)] == "yes" and f"{crit} (" not in wide[label]
    assert checked >= 3
    assert any("specific to this fit" in v for v in cells.values())


def test_the_summary_names_the_robust_main_effects(refitted):
    """The 1D importance (the learner-level reading of a main effect) is not among the counted findings; the
    summary names the important features whose importance is robust, strongest first."""
    from autopdp.report.methodology import tested_text

    a = refitted[0]
    items = [(f[0], e) for f, e in a.evidence["importance_1d"].items() if e.passed]
    robust = [f for f, e in sorted(items, key=lambda fe: -fe[1].value) if e.robust]
    assert robust, "the planted importances are robust in this fixture"
    assert (f"Main effects (PD importance) robust at the learner level: {', '.join(robust)} ({len(robust)} of the "
            f"{len(items)} important features).") in tested_text(a)
    assert "z1" not in robust and "z2" not in robust

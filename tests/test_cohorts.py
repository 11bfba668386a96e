"""Cohorts the validator names (issue 55): each feature's PD per cohort, a test of their shapes, the chapter in every
format, results.json, the gate rule and the command line."""

import io
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import autopdp
from autopdp.errors import InputError

CFG = autopdp.AuditConfig(pairs=False, noise_draws=50)


@pytest.fixture(scope="module")
def case():
    from sklearn.ensemble import HistGradientBoostingRegressor

    rng = np.random.default_rng(0)
    n = 2000
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.uniform(-1, 1, n), "c": rng.normal(size=n)})
    region = rng.choice(["north", "south", "east"], n, p=[0.45, 0.45, 0.10])
    y = np.where(region == "north", 2 * X.a, -X.a) + X.c + 0.3 * rng.normal(size=n)
    model = HistGradientBoostingRegressor(random_state=0).fit(X.assign(r=(region == "north").astype(float)), y)
    data = X.assign(r=(region == "north").astype(float), region=region, indep=rng.choice(["x", "y"], n),
                    rare=np.where(rng.random(n) < 0.01, "rare", "common"))
    return model, data, y


@pytest.fixture(scope="module")
def by_region(case):
    model, data, y = case
    return autopdp.audit(model, data, y, config=CFG.replace(cohort="region"))


def test_a_planted_cohort_difference_is_found_and_its_curves_are_the_cohorts(by_region, case):
    c = by_region.cohorts()
    assert c["column"] == "region" and {lv["level"] for lv in c["levels"]} == {"north", "south", "east"}
    a = next(f for f in c["features"] if f["feature"] == "a")
    assert a["finding"] and a["p"] <= 0.001 and a["shape_gap"] > 3  # slopes 2 and -1: 3 per unit of a
    curves = {g["level"]: np.asarray(g["average_prediction"]) for g in a["curves"]}
    grid = np.asarray(a["curves"][0]["grid"])
    slope = lambda v: np.polyfit(grid, v, 1)[0]  # noqa: E731
    assert slope(curves["north"]) == pytest.approx(2, abs=0.3) and slope(curves["south"]) == pytest.approx(-1, abs=0.3)
    # each cohort's curve is its exact PD over all its rows (2,000 rows, of which the audit keeps 1,000 ICE curves)
    assert len(by_region.pd(("a",)).ice_rows) < len(case[1])
    model, data = case[0], case[1]
    for level in ("east", "north"):
        assert np.allclose(curves[level], _brute_pd(model, data[data.region == level], "a", grid), atol=1e-9)
    assert all(g["exact"] for g in a["curves"])
    assert c["level_gap"]["gap"] >= 0 and set(c["level_gap"]["means"]) == {"north", "south", "east"}


def _brute_pd(model, rows, feature, grid, weights=None):
    """The PD by predicting every row at every grid value (the model's own columns)."""
    X = rows[["a", "b", "c", "r"]]
    return np.array([np.average(model.predict(X.assign(**{feature: v})), weights=weights) for v in grid])


def test_cohort_pds_are_exact_and_weighted(case):
    model, data, y = case
    w = np.random.default_rng(3).exponential(size=len(data))
    c = autopdp.audit(model, data, y, sample_weight=w, config=CFG.replace(cohort="region")).cohorts()
    b = next(f for f in c["features"] if f["feature"] == "b")
    for g in b["curves"]:
        m = (data.region == g["level"]).to_numpy()
        assert np.allclose(g["average_prediction"], _brute_pd(model, data[m], "b", g["grid"], w[m]), atol=1e-9)


def test_a_cohort_column_that_is_a_feature_is_not_compared_with_itself(case):
    model, data, y = case
    c = autopdp.audit(model, data, y, config=CFG.replace(cohort="r")).cohorts()  # r: a model feature, 0/1
    assert c["column"] == "r" and "r" not in [f["feature"] for f in c["features"]]
    assert next(f for f in c["features"] if f["feature"] == "a")["finding"]  # north (r = 1) has a's other slope


def test_an_independent_column_shows_no_cohort_difference(case):
    model, data, y = case
    c = autopdp.audit(model, data, y, config=CFG.replace(cohort="indep")).cohorts()
    assert not any(f["finding"] for f in c["features"])


def test_a_cohort_too_small_to_test_is_named_and_left_out(case):
    model, data, y = case
    c = autopdp.audit(model, data, y, config=CFG.replace(cohort="rare")).cohorts()
    f = c["features"][0]
    assert f["p"] is None and not f["finding"] and "fewer than 30" in f["left_out"]["rare"]


def test_a_column_that_is_not_a_feature_never_reaches_the_model(case):
    from sklearn.linear_model import LinearRegression

    model, data, y = case
    X = data[["a", "b", "c"]]
    seen = []

    class Strict:  # fitted without names: a fourth column would reach it
        n_features_in_ = 3

        def __init__(self):
            self.m = LinearRegression().fit(X.to_numpy(), y)

        def predict(self, Z):
            seen.append(np.asarray(Z).shape[1])
            return self.m.predict(np.asarray(Z, dtype=float))

    for m in (Strict(), Strict().predict):  # fitted without names; a plain function declares nothing
        audit = autopdp.audit(m, X.assign(region=data.region), y, config=CFG.replace(cohort="region"))
        assert set(seen) == {3} and audit.cohorts()["column"] == "region"
    with pytest.raises(InputError, match="cohort column 'nope' is not a column of the data"):
        autopdp.audit(model, data, y, config=CFG.replace(cohort="nope"))


def test_the_cohorts_chapter_in_every_format_and_results_json(by_region):
    html = by_region.to_html()
    assert 'id="cohorts"' in html and "Cohorts of region: east" in html and "a: its shape differs" in html
    import docx

    doc = docx.Document(io.BytesIO(by_region.to_docx()))
    assert any(p.text == "Cohorts of region" and p.style.name.startswith("Heading") for p in doc.paragraphs)
    from pypdf import PdfReader

    pdf = "".join(page.extract_text() for page in PdfReader(io.BytesIO(by_region.to_pdf())).pages)
    assert "Cohorts of region" in pdf
    d = json.loads(by_region.to_json())
    assert d["cohorts"]["column"] == "region" and {"shape_gap", "p", "adjusted_p", "finding", "curves"} <= set(
        d["cohorts"]["features"][0])
    assert autopdp.Audit.from_json(json.dumps(d)).cohorts() == by_region.cohorts()
    d["cohorts"] = {"column": "region", "features": [{"no curves": 1}]}
    with pytest.raises(InputError, match="'cohorts' is damaged"):
        autopdp.Audit.from_json(json.dumps(d))


def test_the_gate_rule_same_shape_across(by_region):
    result = autopdp.gate(by_region, {"cohorts": {"same_shape_across": "region", "max_shape_gap": 1.0}})
    failed = {c.feature for c in result.checks if not c.passed}
    assert "a" in failed and not result.passed
    assert autopdp.gate(by_region, {"cohorts": {"same_shape_across": "region", "max_shape_gap": 10.0}}).passed
    missing = autopdp.gate(by_region, {"cohorts": {"same_shape_across": "channel"}})
    assert not missing.passed and "no cohorts of 'channel'" in missing.checks[0].message
    with pytest.raises(InputError, match="modifies a rule the policy does not set"):
        autopdp.gate(by_region, {"cohorts": {"max_shape_gap": 1.0}})


def test_the_command_line_takes_cohort(case, tmp_path):
    import skops.io as sio

    model, data, y = case
    data.assign(y=y).to_csv(tmp_path / "d.csv", index=False)
    sio.dump(model, tmp_path / "m.skops")
    trust = [a for t in sio.get_untrusted_types(file=tmp_path / "m.skops") for a in ("--trust-type", t)]
    cli = [sys.executable, "-m", "autopdp", "report", "--model", str(tmp_path / "m.skops"), "--data",
           str(tmp_path / "d.csv"), "--target", "y", "--formats", "html", "--pairs", "none", *trust]
    done = subprocess.run(cli + ["--cohort", "region", "--out", str(tmp_path / "out")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Cohorts of region" in (tmp_path / "out" / "report.html").read_text()
    bad = subprocess.run(cli + ["--cohort", "nope", "--out", str(tmp_path / "bad")], capture_output=True, text=True)
    assert bad.returncode == 2 and "cohort column 'nope'" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_the_shape_test_holds_its_level_on_cohorts_unrelated_to_the_curves():
    """Three cohorts of unequal sizes, heterogeneous heavy-tailed curves unrelated to them, exponential (heavy)
    weights, 120 rows: the permutation test rejects at 5% in at most 5% of 300 seeds (binomial slack)."""
    from autopdp.findings.regions import _permutation_between

    hits = 0
    for seed in range(300):
        rng = np.random.default_rng(seed)
        C = rng.standard_t(3, size=(120, 1)) * np.linspace(-1, 1, 8)[None] + rng.lognormal(size=(120, 8))
        C = C - C.mean(axis=1, keepdims=True)
        codes = rng.choice(3, size=120, p=[0.6, 0.3, 0.1])
        hits += _permutation_between(C, rng.exponential(size=120), codes, rng, 199) <= 0.05
    assert hits <= 24, hits  # 5% of 300 is 15; P(X > 24) < 1% under Binomial(300, 0.05)

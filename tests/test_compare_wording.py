"""Issue 30: a comparison says the models' level difference once; every per-feature and per-pair number is the
shape gap, and no row calls a number above its threshold "not material".

The construction of the issue: the candidate is the current model plus 0.3 where educ > 14. Only educ's shape
differs, by 0.3 * sqrt(p * (1 - p)) with p the share of rows above 14 (educ's grid is its values, weighted by
their frequencies); every other PD differs from the current one by the level 0.3 * p alone.
"""

import re

import numpy as np
import pandas as pd
import pytest

from autopdp import AuditConfig
from autopdp import audit
from autopdp.utils.formatting import fmt
from autopdp.report import write_report
from autopdp.report.compare import comparison_context
from autopdp.report.context import build_context
from autopdp.report.explore import all_pdps

UID = "similarity:candidate"


def _current(d):
    return (0.05 * d["educ"].to_numpy() + 0.01 * d["age"].to_numpy() - 0.1 * d["kids"].to_numpy()
            + 0.2 * d["city"].to_numpy())


def _candidate(d):
    return _current(d) + 0.3 * (d["educ"].to_numpy() > 14)


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    rng = np.random.default_rng(0)
    n = 1500
    X = pd.DataFrame({"educ": rng.integers(6, 21, n).astype(float), "age": rng.uniform(18, 70, n),
                      "kids": rng.integers(0, 4, n).astype(float), "city": rng.uniform(0, 1, n)})
    a = audit(_current, X, compare={"candidate": _candidate},
              config=AuditConfig(grid_resolution=20, grid_resolution_2d=5), n_jobs=1)
    out = tmp_path_factory.mktemp("compare")
    write_report(a, out, formats=("html",), comparison="current")
    return X, a, out


def test_the_issue_construction_scores_the_shape_and_the_level_apart(compared):
    X, a, _ = compared
    p = float((X["educ"] > 14).mean())
    e = a.evidence[UID]
    assert e[("educ",)].value == pytest.approx(0.3 * np.sqrt(p * (1 - p)), abs=1e-9)
    assert e[("educ",)].passed
    level = a.evidence["similarity_level:candidate"][()]
    assert level.details["mean_difference"] == pytest.approx(-0.3 * p, abs=1e-9)
    for f in ("age", "kids", "city"):
        assert e[(f,)].value < 1e-9 and not e[(f,)].material
        # the utility score ranks and selects on the shape (issue 52): 0 here; the paper's eq. 10 gap, the level,
        # is kept as total_gap
        assert a.score(f, UID).value == pytest.approx(0.0, abs=1e-9)
        assert a.score(f, UID).details["total_gap"] == pytest.approx(0.3 * p, abs=1e-9)
    assert a.score("educ", UID).value == pytest.approx(0.3 * np.sqrt(p * (1 - p)), abs=1e-9)


def test_comparison_tables_show_the_shape_gap(compared):
    X, a, _ = compared
    ctx = comparison_context(a, base_name="current")
    shape = {f: a.evidence[UID][(f,)].value for f in X.columns}
    assert ctx["rows"][0]["feature"] == "educ"
    for r in ctx["rows"]:
        assert r["gaps"] == [fmt(shape[r["feature"]])]
    level_text = fmt(0.3 * float((X["educ"] > 14).mean()))
    assert ctx["pairs"], "the pairs table"
    for r in ctx["pairs"]:
        feats = tuple(r["pair"].split(" × "))
        expected = a.utility_scores[feats][UID].details["shape_gap"]
        assert r["gaps"] == [fmt(expected)] and r["gaps"] != [level_text]
        if "educ" not in feats:
            assert expected < 1e-9
    # the figure captions' gaps are the shapes' too
    educ = next(f["caption"] for f in ctx["figures"] if f["caption"].startswith("educ:"))
    assert f"root-mean-square shape gap {fmt(shape['educ'])}" in educ
    for f in ctx["figures"][1:]:
        assert level_text not in f["caption"], f["caption"]
    assert len(ctx["levels"]) == 1 and ctx["levels"][0].startswith("Overall level: candidate")
    assert ctx["levels"][0] in a.notes  # the one line, in the notes


def test_no_row_calls_a_score_above_its_threshold_not_material(compared):
    X, a, _ = compared
    ctx = build_context(a)
    section = next(u for u in ctx["utilities"] if u["uid"] == UID)
    thr = a.evidence[UID][("educ",)].threshold
    values = [float(r["value"]) for r in section["rows"]]
    assert values == sorted(values, reverse=True) and [r["rank"] for r in section["rows"]] == [1, 2, 3, 4]
    for r in section["rows"]:
        assert r["value"] == fmt(a.evidence[UID][r["features"]].value)
        if r["finding"] == "not material":
            assert float(r["value"]) < thr
    scored = [s for page in ctx["finding_pages"] for s in page["scores"] if s["criterion"] == UID]
    assert scored, "the finding pages' score tables"
    for page in ctx["finding_pages"]:
        for s in page["scores"]:
            if s["criterion"] == UID and s["finding"] == "not material":
                assert float(s["score"]) < thr, page
    wide = all_pdps(a, set())
    col = wide["columns"].index(UID)
    for row in wide["rows"]:
        v = row["values"][col]["v"]
        assert v == "" or float(v) < 1e-6 or row["label"].startswith("educ") or "educ" in row["label"]


def test_the_report_states_the_level_once(compared):
    X, a, out = compared
    html = (out / "report.html").read_text()
    assert html.count("Overall level: candidate") == 1
    # the level's number is in that line and nowhere in a table cell
    level_text = fmt(0.3 * float((X["educ"] > 14).mean()))
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", html)
    assert level_text not in cells
    assert "shape gap to candidate" in html

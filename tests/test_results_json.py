"""results.json stays small at any width; ICE curves go to an ice.parquet sidecar only when asked (issue 24).

* a wide audit's results.json is under a bound proportionate to its PDPs and holds no ICE array;
* ``--ice`` writes ice.parquet, listed in manifest.json with its sha256; without it there is none;
* ``Audit.to_json`` / ``Audit.from_json`` round-trip what the report needs (the report's text is equal),
  and the ICE curves exactly when the sidecar is given;
* each selected item carries the sentence the report prints, word for word;
* ``stderr`` is one factor per PD (``std x stderr_factor``) unless a cell breaks it, and loads back to the
  digits kept; evidence items leave out what ``evidence_meta`` and ``why_sentence`` rebuild, and load back
  field by field;
* scores, verdicts, evidence and PDs are column tables (schema ``autopdp.Audit/2``): a field equal across a
  table is written once, each grid once, one row per line; ``autopdp.read_results`` expands them into records,
  and a file of the earlier record layout (``tests/data/results_v1.json``, written by that version) still loads.
"""

import dataclasses
import hashlib
import json
import re
from html import escape
from pathlib import Path

import numpy as np
from markupsafe import Markup
import pandas as pd
import pytest
import skops.io as sio
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression

import autopdp
from autopdp import AuditConfig, read_results
from autopdp.io.tables import records, tables
from autopdp.auditing.record import Audit
from autopdp.cli import main
from autopdp.io.ice import read_ice
from autopdp.pd.result import PDResult
from cli_inputs import write_small_cli_inputs  # noqa: E402

#: results.json bytes per PDP allowed for the ``wide`` case below: it writes 5,610 bytes per PDP (5.07 MB for
#: 903 PDPs) and this bound is 10% above it.  The issue's 60-feature case (1,830 PDPs, at most 10 MB) is measured
#: by benchmarks/bench_report.py (see docs/user-guide.md, "results.json").
BYTES_PER_PDP = 6_200
V1_FILE = Path(__file__).with_name("data") / "results_v1.json"


@pytest.fixture(scope="module")
def wide():
    """A boosted classifier on 42 features: 42 1D + 861 2D PDs, as a wide model gives."""
    rng = np.random.default_rng(0)
    p, n = 42, 600
    X = pd.DataFrame(rng.normal(size=(n, p)), columns=[f"x{i}" for i in range(p)])
    y = ((X.iloc[:, :6].sum(axis=1) + X.x0 * X.x1 + rng.normal(size=n)) > 0).astype(int).to_numpy()
    model = HistGradientBoostingClassifier(max_iter=40, random_state=0).fit(X, y)
    return autopdp.audit(model, X, y, config=AuditConfig(noise_draws=100, max_noise_draws=400))


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(2)
    X = pd.DataFrame({"a": rng.normal(size=300), "b": rng.uniform(0, 5, 300), "c": rng.normal(size=300),
                      "d": rng.choice(["u", "v", "w"], 300)})
    y = ((X.a + 0.4 * X.b * (X.d == "u") + rng.normal(size=300)) > 1).astype(int).to_numpy()
    from sklearn.compose import make_column_transformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    model = make_pipeline(make_column_transformer((OneHotEncoder(), ["d"]), remainder="passthrough"),
                          HistGradientBoostingClassifier(max_iter=30, random_state=0)).fit(X, y)
    other = make_pipeline(make_column_transformer((OneHotEncoder(), ["d"]), remainder="passthrough"),
                          LogisticRegression()).fit(X, y)
    cfg = AuditConfig(grid_resolution=8, grid_resolution_2d=5, subsample=120, top_k=2)
    return autopdp.audit(model, X, y, compare={"logit": other}, config=cfg)


def _text(html: str) -> str:
    """The report without its figures and without the one time measured while rendering (figures)."""
    html = re.sub(r"<svg.*?</svg>", "", html, flags=re.S)
    return re.sub(r"<td>figures</td>\s*<td[^>]*>[0-9.]+</td>", "", html)


def _has_ice_array(d: dict) -> bool:
    return any(r.get("individual") is not None for rs in [d["results"], *d["comparisons"].values()] for r in rs)


def test_wide_results_json_is_small_and_has_no_ice(wide, tmp_path):
    n_pdp = len(wide.results)
    assert n_pdp == 42 + 861
    text = wide.to_json(tmp_path / "results.json")
    size = len(text.encode())
    assert size < BYTES_PER_PDP * n_pdp, (size, BYTES_PER_PDP * n_pdp)
    assert json.loads(text)["schema"] == "autopdp.Audit/2"
    d = read_results(text)
    assert not _has_ice_array(d)
    assert all(r["ice_kept"] for r in d["results"] if len(r["features"]) == 1)
    assert d["ice"]["file"] is None and d["ice"]["curves"] > 0
    # 2D verdicts keep their values and the OOD shares the report shades, not per-cell comparison surfaces
    two = [v for v in d["utility_scores"] if len(v["features"]) == 2]
    assert two and all(v["comparison"] is None for v in two)
    assert any("ood" in v["details"] for v in two if v["utility"] == "ood_share")
    # one record per line: the file diffs line by line
    assert text.count("\n") > len(d["results"]) + len(d["utility_scores"])
    # PD averages keep every digit
    r = wide.results_2d[0]
    loaded = next(x for x in d["results"] if tuple(x["features"]) == r.features)
    np.testing.assert_array_equal(np.asarray(loaded["average"], dtype=float), r.average)
    np.testing.assert_allclose(np.asarray(loaded["std"], dtype=float), r.std, rtol=5e-4)  # SPREAD_DIGITS = 4


def test_every_selected_item_carries_the_reports_sentence(wide):
    d = wide.to_dict()
    html = wide.to_html()
    assert d["selection"], "the wide case selects PDPs"
    for item in d["selection"]:
        assert item["sentence"], item
        # as Jinja writes it (markupsafe: ' as &#39;), or as the standard library would
        assert any(form in html for form in (str(Markup.escape(item["sentence"])), escape(item["sentence"], quote=False),
                                             escape(item["sentence"]))), item
    assert [s["features"] for s in d["selection"]] == [list(s.features) for s in wide.selection]


def test_round_trip_without_and_with_the_ice_sidecar(small, tmp_path):
    path = tmp_path / "results.json"
    small.to_json(path, ice=True)
    assert (tmp_path / "ice.parquet").is_file()
    d = read_results(path)
    assert d["ice"]["file"] == "ice.parquet" and not _has_ice_array(d)

    bare = Audit.from_json(path)
    assert all(r.individual is None for r in bare.results)
    assert all(r.ice_omitted for r in bare.results_1d)
    full = Audit.from_json(path, ice=True)
    original = _text(small.to_html())
    assert _text(bare.to_html()) == original
    assert _text(full.to_html()) == original
    for before, after in [(a, b) for a, b in zip(small.results, full.results)] + [
            (a, b) for name in small.comparisons for a, b in zip(small.comparisons[name], full.comparisons[name])]:
        if before.individual is None:
            assert after.individual is None
            continue
        np.testing.assert_array_equal(after.individual, before.individual)
        assert (before.ice_rows is None) == (after.ice_rows is None)
        if before.ice_rows is not None:
            np.testing.assert_array_equal(after.ice_rows, before.ice_rows)
    # the loaded audit writes the same JSON again
    assert json.loads(full.to_json(ice_file="ice.parquet")) == json.loads(path.read_text())
    # scores, evidence and selection are the same objects' values
    pd.testing.assert_frame_equal(full.scores, small.scores)
    assert [s.features for s in full.selection] == [s.features for s in small.selection]


def test_old_results_json_with_ice_inside_still_loads(small):
    d = read_results(small.to_dict())  # the record layout, as written before the sidecar
    d["schema"] = "autopdp.Audit/1"
    for res, r in zip(d["results"], small.results):
        res["individual"] = None if r.individual is None else r.individual.tolist()
        res.pop("ice_kept")
    d.pop("ice")
    loaded = Audit.from_json(json.dumps(d))
    r = small.results_1d[0]
    np.testing.assert_array_equal(loaded.results_1d[0].individual, r.individual)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("ice")
    write_small_cli_inputs(d)
    return d


def _report(files, out, *extra):
    return main(["report", "--model", str(files / "model.skops"), "--data", str(files / "data.csv"), "--target",
                 "target", "--out", str(out), "--formats", "json", "--config", str(files / "small.toml"), *extra])


def test_ice_sidecar_only_with_the_flag_and_listed_in_the_manifest(files, tmp_path):
    out = tmp_path / "out"
    assert _report(files, out) == 0
    assert not (out / "ice.parquet").exists()
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["files"]) == {"results.json"}
    assert json.loads((out / "results.json").read_text())["ice"]["file"] is None

    assert _report(files, out, "--ice") == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["files"]) == {"results.json", "ice.parquet"}
    for name, sha in manifest["files"].items():
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == sha, name
    d = read_results(out / "results.json")
    assert d["ice"]["file"] == "ice.parquet" and not _has_ice_array(d)
    curves = read_ice(out / "ice.parquet")
    assert {f for (_, f) in curves} == {("a",), ("b",), ("c",)}
    loaded = Audit.from_json(out / "results.json", ice=True)
    assert loaded.pd("a").individual.shape == (1, 250, 6)
    import pyarrow.parquet as pq

    table = pq.read_table(out / "ice.parquet")
    assert table.column_names == ["model", "features", "target", "row", "ice", "weight"] and table.num_rows == 3 * 250
    assert table.column("weight").null_count == 3 * 250  # an unweighted audit

    # a run without --ice replaces the set: the earlier sidecar goes with it
    assert _report(files, out) == 0
    assert not (out / "ice.parquet").exists()


def test_stderr_is_one_factor_per_pd_and_loads_back_to_the_digits_kept(wide):
    d = wide.to_dict()
    assert all("stderr" not in r and r["stderr_factor"] > 0 for r in read_results(d)["results"])
    loaded = Audit.from_json(json.dumps(d))
    for before, after in zip(wide.results, loaded.results):
        np.testing.assert_array_equal(np.isnan(after.stderr), np.isnan(before.stderr))
        ok = np.isfinite(before.stderr)
        # std keeps 4 significant digits: half a unit of the 4th digit is at most 5e-4 relative
        np.testing.assert_allclose(after.stderr[ok], before.stderr[ok], rtol=5e-4, atol=0)


def test_a_pd_whose_stderr_is_not_one_factor_keeps_its_array(small):
    r = small.results_1d[0]
    wrong = r.stderr.copy()
    wrong.flat[0] *= 1.5  # another factor in one cell
    gap = r.stderr.copy()
    gap.flat[1] = np.nan  # a NaN cell where std has a value
    for se in (wrong, gap):
        odd = dataclasses.replace(r, stderr=se)
        d = odd.to_dict(ice=False, spread_digits=6, stderr_factor=True)
        assert "stderr_factor" not in d and d["stderr"] is not None
        back = PDResult.from_dict(d)
        np.testing.assert_array_equal(np.isnan(back.stderr), np.isnan(se))
        np.testing.assert_allclose(back.stderr[np.isfinite(se)], se[np.isfinite(se)], rtol=5e-6)
    # a cell NaN in both std and stderr keeps the one factor
    std, se = r.std.copy(), r.stderr.copy()
    std.flat[0] = se.flat[0] = np.nan
    d = dataclasses.replace(r, std=std, stderr=se).to_dict(ice=False, spread_digits=6, stderr_factor=True)
    assert "stderr" not in d
    back = PDResult.from_dict(d)
    assert np.isnan(back.stderr.flat[0])
    np.testing.assert_allclose(back.stderr.flat[1:], se.flat[1:], rtol=5e-6)
    # through the audit: the odd PD keeps its array, the others their factor, and the file reads back
    audit = dataclasses.replace(small, results=(dataclasses.replace(r, stderr=wrong), *small.results[1:]))
    d = audit.to_dict()
    expanded = read_results(d)
    assert "stderr" in expanded["results"][0] and all("stderr_factor" in x for x in expanded["results"][1:])
    np.testing.assert_allclose(Audit.from_json(json.dumps(d)).results[0].stderr, wrong, rtol=5e-4)


def _evidence_dicts(audit):
    return {(c, f): e.to_dict() for c, by in audit.evidence.items() for f, e in by.items()}


def test_evidence_loads_back_field_by_field(wide):
    d = wide.to_dict()
    meta = d["evidence_meta"]
    assert set(meta) == set(wide.evidence)
    items = [e for v in d["evidence"].values() for e in records(v)]  # as written
    # null and statistic once per criterion (null in the items); why null where rebuilt_why words it again,
    # word for word, from the item's fields, written out where it holds a reason the fields do not
    assert sum(e["statistic"] is not None or e["null"] is not None for e in items) < len(items) / 10
    rebuilt = [e for e in items if e["why"] is None]
    assert rebuilt and any(e["material"] for e in rebuilt) and any(not e["material"] for e in rebuilt)
    assert any(e["why"] is not None for e in items)
    # read_results fills every item in: the why, null and statistic of the audit's own Evidence
    whole = {(c, tuple(e["features"])): e for c, v in read_results(d)["evidence"].items() for e in v}
    for c, by in wide.evidence.items():
        for f, e in by.items():
            assert whole[(c, f)] == e.to_dict(), (c, f)
    loaded = Audit.from_json(json.dumps(d))
    before, after = _evidence_dicts(wide), _evidence_dicts(loaded)
    assert list(after) == list(before)
    for key, e in before.items():
        for field, value in e.items():
            assert after[key][field] == value, (key, field)


def test_evidence_items_that_differ_keep_their_own_fields(small):
    crit = next(c for c, by in small.evidence.items() if any(len(f) == 2 and not e.material for f, e in by.items()))
    feats = next(f for f, e in small.evidence[crit].items() if len(f) == 2 and not e.material)
    odd = dataclasses.replace(small.evidence[crit][feats], statistic="another statistic", null="another null",
                              why="not material: a reason the fields do not hold")
    evidence = {c: dict(by) for c, by in small.evidence.items()}
    evidence[crit][feats] = odd
    audit = dataclasses.replace(small, evidence=evidence)
    d = audit.to_dict()
    item = next(e for e in read_results(d)["evidence"][crit] if tuple(e["features"]) == feats)
    assert item["statistic"] == "another statistic" and item["null"] == "another null"
    assert item["why"] == odd.why
    assert _evidence_dicts(Audit.from_json(json.dumps(d))) == _evidence_dicts(audit)


def test_records_are_column_tables_written_once(wide):
    """Scores, verdicts, evidence and PDs are column tables: a field equal across a table is written once
    (the PD's schema and method, a criterion's test), each feature's grid once, and one row per line."""
    text = wide.to_json()
    d = json.loads(text)
    one_d, two_d = d["results"]  # one table for the 1D PDs, one for the 2D PDs
    assert len(one_d["rows"]) == 42 and len(two_d["rows"]) == 861
    assert {"schema", "method", "targets", "ice_rows", "kinds"} <= set(two_d["same"])
    assert "average" in two_d["columns"] and "grid" not in two_d["columns"]
    # each distinct grid once, and every PD's grid_index points at its own grid
    assert all(len(gs) == len({json.dumps(g) for g in gs}) for gs in d["grids"].values())
    by_features = {tuple(r["features"]): r for r in read_results(d)["results"]}
    for r in (wide.results_1d[0], wide.results_2d[-1]):
        for axis, grid in enumerate(r.grid):
            np.testing.assert_array_equal(np.asarray(by_features[r.features]["grid"][axis], dtype=float), grid)
    importance = d["evidence"]["importance"]
    assert len(importance) == 1 and "test" in importance[0]["same"]
    assert set(d["utility_scores"]) == {u for by in wide.utility_scores.values() for u in by}
    # one row per line
    lines = text.splitlines()
    first = json.dumps(two_d["rows"][0], separators=(",", ":"))
    assert sum(line.strip().rstrip(",") == first for line in lines) == 1


def test_tables_read_back_into_the_same_records_in_order():
    items = [
        {"features": ["a"], "value": 1.0, "reason": "", "details": {"axis": "a", "relative": 0.5}},
        {"features": ["b"], "value": None, "reason": "n/a", "details": {}},
        {"features": ["c"], "value": 2.5, "reason": "", "details": {"axis": "c", "relative": 0.25}},
        {"features": ["d"], "value": 3.0, "reason": "", "details": {"axis": "d", "relative": 0.25, "x.y": [1, 2]}},
        {"features": ["e"], "value": 3.0, "reason": "", "details": {"axis": "e", "relative": 0.25, "x.y": [1, 2]}},
        {"features": ["a", "b"], "value": 4.0, "reason": "", "details": {"axis": "a", "relative": 0.25, "x.y": [1, 2]}},
    ]
    out = tables(items, split=lambda r: len(r["features"]))
    # one table per set of fields and split, each where it first appears; interleaved, so rows say where they go
    assert [len(t["rows"]) for t in out] == [2, 1, 2, 1]
    assert [t["at"] for t in out] == [[0, 2], [1], [3, 4], [5]]
    assert out[2]["same"] == {"value": 3.0, "reason": "", "details.relative": 0.25, "details.x.y": [1, 2]}
    assert out[2]["columns"] == ["features", "details.axis"]
    assert records(out) == items
    assert records(json.loads(json.dumps(out))) == items
    # records already grouped: no positions
    ordered = tables([items[0], items[2], items[1]])
    assert all("at" not in t for t in ordered) and records(ordered) == [items[0], items[2], items[1]]
    with pytest.raises(ValueError, match="2 values for 3 columns"):
        records([{"same": {}, "columns": ["a", "b", "c"], "rows": [[1, 2]]}])
    with pytest.raises(ValueError, match="each record's once"):
        records([{**out[0], "at": [0, 0]}, *out[1:]])
    with pytest.raises(ValueError, match="2 rows and 1 positions"):
        records([{**out[0], "at": [0]}, *out[1:]])
    with pytest.raises(ValueError, match="some tables give their rows' positions"):
        records([{k: v for k, v in out[0].items() if k != "at"}, *out[1:]])
    # a field shared by every row keeps the records' field order ("order"), and its JSON type: True is not 1,
    # [1] is not [1.0]
    mixed = [{"x": True, "y": [1], "z": 1}, {"x": 1, "y": [1.0], "z": 1}]
    back = records(json.loads(json.dumps(tables(mixed))))
    assert [type(r["x"]) for r in back] == [bool, int] and [type(r["y"][0]) for r in back] == [int, float]
    assert [list(r) for r in back] == [["x", "y", "z"]] * 2
    assert tables(mixed)[0]["order"] == ["x", "y", "z"]  # z (shared) is written first, before the columns


def test_a_results_json_of_the_record_layout_still_loads():
    """``tests/data/results_v1.json`` was written by the version before the column tables (schema
    ``autopdp.Audit/1``, one record per item) from the ``small`` audit: it loads, reads the same through
    ``read_results``, and writes the new layout that loads back into the same report."""
    raw = json.loads(V1_FILE.read_text())
    assert raw["schema"] == "autopdp.Audit/1"
    old = Audit.from_json(V1_FILE)
    assert len(old.results) == len(raw["results"]) == 4 + 6 and set(old.comparisons) == {"logit"}
    r = raw["results"][0]
    np.testing.assert_array_equal(old.pd(tuple(r["features"])).average, np.asarray(r["average"], dtype=float))
    expanded = read_results(V1_FILE)
    left_out = 0
    for c, items in raw["evidence"].items():  # each item as written, with what it left out filled in
        meta = raw["evidence_meta"][c]
        for written, whole in zip(items, expanded["evidence"][c], strict=True):
            assert {k: whole[k] for k in written} == written
            for k in ("null", "statistic"):  # left off where it is the criterion's
                assert whole[k] == written.get(k, meta[k])
            if "why" not in written:  # that version left it off not-material 2D items only
                left_out += 1
                assert len(whole["features"]) == 2 and not whole["material"]
                stat = whole["statistic"] or c
                assert whole["why"].startswith(f"not material: the {stat} ") and "below the materiality threshold" \
                    in whole["why"], whole["why"]
    assert left_out > 0
    # the sentences are rebuilt from the record: the wording has moved on since (issue 52 names each number's
    # scale), but each names the same PDP and every number the old sentence gave
    for was, now in zip([s["sentence"] for s in raw["selection"]], [s["sentence"] for s in old.to_dict()["selection"]],
                        strict=True):
        assert now.split(":")[0] == was.split(":")[0]
        assert set(re.findall(r"-?\d[\d,.]*\d|\d", was)) <= set(re.findall(r"-?\d[\d,.]*\d|\d", now)), (was, now)
    new = Audit.from_json(old.to_json())
    assert _text(new.to_html()) == _text(old.to_html())
    assert json.loads(new.to_json()) == json.loads(old.to_json())


def test_a_rebuilt_why_reads_back_with_a_missing_importance(small):
    """A pair's importance item whose feature importance is NaN (null in JSON) has its why rebuilt the same
    on reading as when written (null is NaN on both sides)."""
    from autopdp.findings.words import rebuilt_why

    feats = next(f for f, e in small.evidence["importance"].items() if len(f) == 2)
    item = small.evidence["importance"][feats]
    odd = dataclasses.replace(item, material=False, significant=False, p_value=1.0, adjusted_p=1.0,
                              details={"importance": {feats[0]: float("nan"), feats[1]: 0.5}})
    odd = dataclasses.replace(odd, why=rebuilt_why(odd, small.config))
    assert f"{feats[0]}'s importance" in odd.why
    evidence = {c: dict(by) for c, by in small.evidence.items()}
    evidence["importance"][feats] = odd
    audit = dataclasses.replace(small, evidence=evidence)
    text = audit.to_json()  # NaN inside a nested detail is null, not an error
    written = next(e for e in records(json.loads(text)["evidence"]["importance"]) if tuple(e["features"]) == feats)
    assert written["why"] is None and written["details"]["importance"][feats[0]] is None
    assert Audit.from_json(text).evidence["importance"][feats].why == odd.why


def test_a_round_trip_keeps_the_scores_columns_in_order():
    """A score column equal in every row (kind without pairs; a constant score) is written once in ``same`` and
    still comes back in its place: the loaded scores frame and the report's order of sections are the audit's."""
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.normal(size=(200, 3)), columns=["a", "b", "c"])
    y = X.a + 2 * X.b
    a = autopdp.audit(LinearRegression().fit(X, y), X, y, config=AuditConfig(pairs=False, grid_resolution=8))
    table = json.loads(a.to_json())["scores"][0]
    assert "kind" in table["same"] and table["order"][:2] == ["features", "kind"]
    loaded = Audit.from_json(a.to_json())
    pd.testing.assert_frame_equal(loaded.scores, a.scores)
    assert _text(loaded.to_html()) == _text(a.to_html())


def test_damaged_or_odd_files_give_one_clear_error(small, tmp_path):
    """A file that is not what autopdp writes is one InputError naming the file, never a bare KeyError; a
    UTF-8 byte-order mark is read past."""
    text = small.to_json()
    good = tmp_path / "bom.json"
    good.write_text("\ufeff" + text, encoding="utf-8")
    assert _text(Audit.from_json(good).to_html()) == _text(small.to_html())
    for name, content, message in [
        ("empty.json", "", "is not JSON"),
        ("list.json", "[1, 2]", "is not an autopdp audit"),
        ("null.json", "null", "is not an autopdp audit"),
        ("truncated.json", text[: len(text) // 2], "is not JSON"),
        ("no-results.json", json.dumps({k: v for k, v in json.loads(text).items() if k != "results"}),
         "no 'results' where one is expected"),
        ("scores.json", json.dumps({**json.loads(text), "scores": {"a": 1}}), "not a complete autopdp results.json"),
    ]:
        path = tmp_path / name
        path.write_text(content, encoding="utf-8")
        for reader in (Audit.from_json, read_results):
            with pytest.raises(autopdp.InputError) as info:
                reader(path)
            assert message in str(info.value) and name in str(info.value), (name, str(info.value))
            assert len(str(info.value)) < 400
    d = json.loads(text)
    table = d["results"][0]
    table["columns"] = table["columns"][:-1]  # one column dropped: rows one value longer
    with pytest.raises(autopdp.InputError, match="the results.json text is not a complete autopdp results.json"):
        Audit.from_json(json.dumps(d))
    d = json.loads(text)
    d["grids"] = {k: [] for k in d["grids"]}  # every PD's grid_index points at nothing
    path = tmp_path / "grids.json"
    path.write_text(json.dumps(d), encoding="utf-8")
    for reader in (Audit.from_json, read_results):
        with pytest.raises(autopdp.InputError, match=r"grids\.json' is not a complete autopdp results\.json \(the PD "
                                                     r"of \['a'\] refers to a grid"):
            reader(path)
    latin = tmp_path / "latin1.json"
    latin.write_bytes(text.replace('"schema"', '"sch\u00e9ma"').encode("utf-8")[:50] + "\u00e9".encode("latin-1"))
    with pytest.raises(autopdp.InputError, match="latin1.json': not UTF-8 text"):
        Audit.from_json(latin)


def test_the_sidecar_brings_back_the_rows_weights_for_the_gates_noise_tests(tmp_path):
    """A weighted audit's ICE sidecar holds each curve's row weight: the audit loaded with it tests noise as the
    audit did (the same noise factors, the gate's same p-values, which the weights change); loaded without it,
    sample_weight is None."""
    from autopdp.findings.significance import pd_noise_model

    rng = np.random.default_rng(5)
    X = pd.DataFrame({"a": rng.normal(size=400), "b": rng.normal(size=400), "c": rng.normal(size=400)})
    w = np.where(np.arange(400) < 40, 20.0, 1.0)  # a tenth of the rows carry two thirds of the weight

    def model(d):  # c's PD rises with wiggles about as large as its noise (from the rows' a * c)
        return (d["a"] * d["c"] + d["b"] + 0.3 * d["c"] + 0.1 * np.sin(4 * d["c"])).to_numpy()

    y = model(X) + rng.normal(size=400)
    cfg = AuditConfig(grid_resolution=10, pairs=False, subsample=150, materiality=0.0)
    a = autopdp.audit(model, X, y, sample_weight=w, config=cfg)
    path = tmp_path / "results.json"
    a.to_json(path, ice=True)
    import pyarrow.parquet as pq

    table = pq.read_table(tmp_path / "ice.parquet")
    assert table.column_names == ["model", "features", "target", "row", "ice", "weight"]
    np.testing.assert_array_equal(table.column("weight").to_numpy(), w[table.column("row").to_numpy()])

    loaded = Audit.from_json(path, ice=True)
    rows = np.unique(table.column("row").to_numpy())
    assert 0 < rows.size < 400  # the 150 sampled rows
    np.testing.assert_array_equal(loaded.sample_weight[rows], w[rows])
    assert np.isnan(np.delete(loaded.sample_weight, rows)).all()
    assert Audit.from_json(path).sample_weight is None
    for r in a.results_1d:
        before, after = pd_noise_model(r, 0, w), pd_noise_model(loaded.pd(r.features), 0, loaded.sample_weight)
        unweighted = pd_noise_model(loaded.pd(r.features), 0, None)
        np.testing.assert_allclose(after.sd, before.sd, rtol=1e-3)  # std kept to 4 digits
        assert not np.allclose(unweighted.sd, before.sd, rtol=1e-2)  # the weights matter here
    # the gate re-tests a declared direction with these noise models: the same p-value before and after loading,
    # another had the loaded audit no weights
    policy = autopdp.GatePolicy.from_dict({"features": {"c": {"monotonic": "increasing", "max_monotonicity": 0.0}},
                                           "audit": {"materiality": 0.0}})

    def p_value(audit):
        (check,) = autopdp.gate(audit, policy).checks
        return check.proof["p_value"]

    weighted = p_value(a)
    assert weighted == p_value(loaded) and 0.02 < weighted < 0.5  # clear of the draws' floor, 1/201
    assert p_value(dataclasses.replace(loaded, sample_weight=None)) != weighted
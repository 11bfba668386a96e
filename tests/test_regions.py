"""Regions (issue 55): known answers on glass-box ICE curves, the test's level with the search accounted for, and the
audit's records, sentences and results.json."""

import json

import numpy as np
import pandas as pd
import pytest

import autopdp
from autopdp.findings.regions import find_regions
from autopdp.report.regions import regions_sentence, rule_text

GRID = np.linspace(-2, 2, 20)


@pytest.fixture(scope="module")
def rows():
    rng = np.random.default_rng(0)
    n = 1000
    return pd.DataFrame({"b": rng.uniform(-1, 1, n), "c": rng.normal(size=n), "d": rng.choice(list("pqrs"), n)})


def test_a_numeric_split_is_found_at_its_place(rows):
    ice = 2 * GRID[None] * np.sign(rows.b.to_numpy() - 0.2)[:, None] + rows.c.to_numpy()[:, None]
    s = find_regions("a", ice, GRID, rows, threshold=0.1)
    assert s.material and s.p < 0.01 and s.explained > 0.99
    (low, high) = s.regions
    assert low.rule[0][:2] == ("b", "<=") and abs(low.rule[0][2] - 0.2) < 0.01
    assert high.rule[0][:2] == ("b", ">") and len(low.rule) == 1  # nothing left to split
    assert abs(low.share - np.mean(rows.b <= low.rule[0][2])) < 1e-12
    # the regional PDs are the glass box's: slope -2 below, +2 above (plus the mean of c in each region)
    assert np.allclose(np.diff(low.average), -2 * np.diff(GRID)) and np.allclose(np.diff(high.average), 2 * np.diff(GRID))


def test_a_categorical_level_set(rows):
    ice = GRID[None] * np.where(rows.d.isin(["p", "s"]), 1.5, -1.0)[:, None]
    s = find_regions("a", ice, GRID, rows, threshold=0.1)
    assert s.material and s.p < 0.01
    (first, second) = s.regions
    assert first.rule[0][0] == "d" and {first.rule[0][1], second.rule[0][1]} == {"in", "not in"}
    assert set(first.rule[0][2]) in ({"p", "s"}, {"q", "r"})


def test_two_interacting_features_give_four_regions(rows):
    ice = 2 * GRID[None] * (np.sign(rows.b.to_numpy())[:, None] + np.where(rows.d == "q", 1, -1)[:, None])
    s = find_regions("a", ice, GRID, rows, threshold=0.1)
    assert s.material and len(s.regions) == 4
    named = {c[0] for r in s.regions for c in r.rule}
    assert named == {"b", "d"}
    # each region holds one of the glass box's curves (but for rows between the chosen cut and the nearest value of
    # the choosing half), and its PD is the mean of its rows' curves
    for r in s.regions:
        inside = np.ones(len(rows), dtype=bool)
        for c in r.rule:
            x = rows[c[0]].to_numpy()
            inside &= (x <= c[2]) if c[1] == "<=" else (x > c[2]) if c[1] == ">" else \
                np.isin(x, c[2]) if c[1] == "in" else ~np.isin(x, c[2])
        modal = pd.DataFrame(ice[inside]).round(9).value_counts().iloc[0]
        assert modal >= 0.98 * inside.sum()
        assert np.allclose(r.average, ice[inside].mean(axis=0))


def test_an_additive_model_has_no_region(rows):
    ice = GRID[None] + 3 * rows.c.to_numpy()[:, None]
    s = find_regions("a", ice, GRID, rows, threshold=0.1)
    assert not s.material and not s.regions and "parallel" in s.reason


def test_weights_count_as_repeated_rows(rows):
    ice = 2 * GRID[None] * np.sign(rows.b.to_numpy() - 0.2)[:, None]
    w = np.where(rows.b > 0.2, 3.0, 1.0)
    s = find_regions("a", ice, GRID, rows, w, threshold=0.1)
    high = next(r for r in s.regions if r.rule[0][1] == ">")
    expected = w[rows.b > high.rule[0][2]].sum() / w.sum()
    assert abs(high.share - expected) < 1e-12 and 0.6 < high.share < 0.7
    same = find_regions("a", ice, GRID, rows, 2 * w, threshold=0.1)  # only relative weights matter
    assert [r.rule for r in same.regions] == [r.rule for r in s.regions] and same.p == s.p


def test_the_tested_split_holds_its_level_after_the_search():
    """Heterogeneous curves unrelated to the other features: the search finds its best split on one half, the
    permutation test on the other half rejects at 5% in at most 5% of seeds (binomial slack over 300 seeds)."""
    hits = 0
    for seed in range(300):
        rng = np.random.default_rng(seed)
        others = pd.DataFrame({"b": rng.normal(size=120), "c": rng.exponential(size=120),
                               "d": rng.choice(list("pqrst"), 120)})
        ice = rng.standard_t(3, size=(120, 1)) * np.linspace(-1, 1, 8)[None] + rng.normal(size=(120, 8))
        s = find_regions("a", ice, np.arange(8.0), others, rng.exponential(size=120), threshold=0.0, seed=seed,
                         n_perm=199, depth=1)
        hits += s.p <= 0.05
    assert hits <= 24, hits  # 5% of 300 is 15; P(X > 24) < 1% under Binomial(300, 0.05)


def test_rule_text_merges_a_features_bounds():
    rule = [{"feature": "a", "op": "<=", "value": 0.5}, {"feature": "a", "op": ">", "value": -1.0},
            {"feature": "d", "op": "in", "value": ["p", "s"]}]
    assert rule_text(rule) == "-1 < a ≤ 0.5 and d in {p, s}"
    assert rule_text([{"feature": "b", "op": ">", "value": 2.0, "or_missing": True}]) == "b > 2 (or missing)"


@pytest.fixture(scope="module")
def audited():
    from sklearn.ensemble import HistGradientBoostingClassifier

    rng = np.random.default_rng(3)
    n = 3000
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.uniform(-1, 1, n), "c": rng.normal(size=n)})
    logit = 3 * X.a * np.sign(X.b - 0.3) + 0.5 * X.c
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    model = HistGradientBoostingClassifier(random_state=0).fit(X, y)
    return autopdp.audit(model, X, y, config=autopdp.AuditConfig(pairs=False, noise_draws=100))


def test_a_classifier_s_regions_on_the_log_odds_scale(audited):
    r = audited.regions("a")
    assert r["finding"] and r["scale"].startswith("log-odds")
    first = r["regions"][0]["rule"][0]
    assert first["feature"] == "b" and abs(first["value"] - 0.3) < 0.1
    assert sum(g["share"] for g in r["regions"]) == pytest.approx(1.0)
    assert audited.regions("nothing")["reason"].startswith("not examined")
    from autopdp.report.explore import all_pdps

    row = next(r for r in all_pdps(audited, set())["rows"] if r["label"] == "a")
    assert "regions on b" in row["findings"]  # the HTML's table of every PD marks it
    from autopdp.report.regions import region_ice_groups

    groups = region_ice_groups(audited, audited.pd(("a",)), "ice_variance")  # the figure colours each region's rows
    assert groups is not None and set(groups) == set(range(len(r["regions"])))
    assert sum(groups == 0) == len(r["regions"][0]["ice_index"])
    text = regions_sentence(audited, ("a",))
    assert "For whom: where b ≤" in text and "log-odds scale" in text and "tested on the other half" in text


def test_regions_in_results_json_and_an_older_file_reads_not_assessed(audited):
    d = json.loads(audited.to_json())
    assert [r["feature"] for r in d["regions"]] == [r["feature"] for r in audited.regions()]
    record = next(r for r in d["regions"] if r["feature"] == "a")
    assert set(record) >= {"feature", "explained", "p", "adjusted_p", "finding", "regions"}
    # a classifier: the regional PDs on the log-odds scale, and on the probability scale for the figure
    assert set(record["regions"][0]) == {"rule", "share", "grid", "average", "average_prediction", "ice_index"}
    assert {c["op"] for g in record["regions"] for c in g["rule"]} <= {"<=", ">", "in", "not in"}
    back = autopdp.Audit.from_json(json.dumps(d))
    assert back.regions("a") == audited.regions("a")
    del d["regions"]
    old = autopdp.Audit.from_json(json.dumps(d))
    assert old.regions() == [] and old.regions("a")["reason"].startswith("not assessed")
    d["regions"] = [{"no feature": 1}]
    with pytest.raises(autopdp.InputError, match="'regions' is damaged"):
        autopdp.Audit.from_json(json.dumps(d))


def test_a_pd_that_kept_every_row_s_curve_is_examined_too():
    """Under ``subsample`` rows the PD keeps every row's ICE curve (``ice_rows`` None): the regions read them all."""
    from sklearn.ensemble import RandomForestRegressor

    rng = np.random.default_rng(5)
    X = pd.DataFrame({"a": rng.normal(size=600), "b": rng.uniform(-1, 1, 600)})
    y = 2 * X.a * np.sign(X.b) + 0.2 * rng.normal(size=600)
    audit = autopdp.audit(RandomForestRegressor(50, random_state=0).fit(X, y), X, y,
                          config=autopdp.AuditConfig(pairs=False, noise_draws=50))
    assert audit.pd(("a",)).ice_rows is None
    r = audit.regions("a")
    assert r["finding"] and r["rows"] == 600 and r["regions"][0]["rule"][0]["feature"] == "b"


def test_with_refits_the_record_says_whether_the_split_holds():
    from sklearn.ensemble import HistGradientBoostingRegressor

    rng = np.random.default_rng(6)
    X = pd.DataFrame({"a": rng.normal(size=1200), "b": rng.uniform(-1, 1, 1200), "c": rng.normal(size=1200)})
    y = 2 * X.a * np.sign(X.b - 0.2) + X.c + 0.3 * rng.normal(size=1200)
    model = HistGradientBoostingRegressor(random_state=0).fit(X, y)
    audit = autopdp.audit(model, X, y, train=(X, y),
                          config=autopdp.AuditConfig(pairs=False, refits=3, noise_draws=50))
    r = audit.regions("a")
    assert r["refits"]["fitted"] == 3 and r["refits"]["holds"] == 3 and min(r["refits"]["explained"]) > 0.5
    assert "Across 3 refits of the learner on the same rows" in regions_sentence(audit, ("a",))
    assert autopdp.Audit.from_json(audit.to_json()).regions("a")["refits"]["holds"] == 3


def test_regions_on_request_for_a_feature_without_a_finding():
    """``regions=`` (``--regions``) examines a feature the audit did not flag: c's curves differ with d, but by far
    less than the threshold, so c has a split on d that is not material."""
    from argparse import Namespace

    from autopdp.cli.settings import _with_flags

    rng = np.random.default_rng(6)
    X = pd.DataFrame({"a": rng.normal(size=600), "b": rng.uniform(-1, 1, 600), "c": rng.normal(size=600),
                      "d": rng.normal(size=600)})

    def model(Z):
        Z = pd.DataFrame(Z, columns=list("abcd"))
        return (2 * Z.a * np.sign(Z.b) + Z.c + 0.002 * Z.c * np.sign(Z.d)).to_numpy()

    cfg = autopdp.AuditConfig(pairs=False, noise_draws=50)
    plain = autopdp.audit(model, X, config=cfg)
    asked = autopdp.audit(model, X, config=cfg.replace(regions=("c",)))
    assert plain.regions("c")["reason"].startswith("not examined") and plain.regions("a")["finding"]
    c = asked.regions("c")
    assert c["finding"] is False and c["material"] is False and c["regions"][0]["rule"][0]["feature"] == "d"
    assert c["gap"] < c["threshold"] and asked.regions("a")["finding"]  # the flagged features are still examined
    with pytest.raises(autopdp.InputError, match="regions .--regions. feature 'cc' is not in the data's features"):
        autopdp.audit(model, X, config=cfg.replace(regions=("cc",)))
    with pytest.raises(autopdp.InputError, match="config key 'regions'"):
        cfg.replace(regions=(1,))
    flags = Namespace(pairs=None, keep_points=None, cohort=None, group=None, regions=["a,c", "b"])
    assert _with_flags(cfg.replace(regions="c"), flags).regions == ("c", "a", "b")

"""Feature groups (issue 52): one-hot columns audited as one categorical feature, each PD setting exactly one
dummy per level; the OOD check, importance and the report see one feature."""

import json

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LinearRegression, LogisticRegression

import autopdp
from autopdp.cli.commands import main

STATES = ["CA", "NY", "TX", "WA"]
EFFECT = {"CA": 0.0, "NY": 1.0, "TX": -2.0, "WA": 3.0}


def _one_hot(n=600, seed=0, drop_first=False):
    rng = np.random.default_rng(seed)
    state = rng.choice(STATES, n, p=[0.4, 0.3, 0.2, 0.1])
    X = pd.DataFrame({"x": rng.normal(size=n)})
    for s in STATES[1:] if drop_first else STATES:
        X[f"state_{s}"] = (state == s).astype(np.int64)
    X["z"] = rng.normal(size=n)
    y = 2 * X.x + np.array([EFFECT[s] for s in state]) + 0.5 * X.z + rng.normal(scale=0.1, size=n)
    return X, y, state


def _set(X, columns, level):
    out = X.copy()
    for c in columns:
        out[c] = int(c == f"state_{level}")
    return out


@pytest.mark.parametrize("drop_first", [False, True])
def test_group_pd_sets_exactly_one_dummy_per_level(drop_first):
    X, y, _ = _one_hot(drop_first=drop_first)
    model = LinearRegression().fit(X, y)
    dummies = [c for c in X.columns if c.startswith("state_")]
    a = autopdp.audit(model, X, y, config={"groups": {"state": "state_*"}, "pairs": False})
    r = a.pd(("state",))
    levels = list(r.grid[0])
    assert levels == (["NY", "TX", "WA", "(all 0)"] if drop_first else STATES)
    for level, value in zip(levels, r.average[0]):
        truth = model.predict(_set(X, dummies, level)).mean()  # brute force with exactly that dummy set
        assert value == pytest.approx(truth, abs=1e-12)
    # the glass box: the level's PD is the intercept, the other features' mean effect and the level's coefficient
    base = model.intercept_ + model.coef_[0] * X.x.mean() + model.coef_[-1] * X.z.mean()
    coef = dict(zip(X.columns, model.coef_))
    for level, value in zip(levels, r.average[0]):
        assert value == pytest.approx(base + coef.get(f"state_{level}", 0.0), abs=1e-10)
    # one feature everywhere: the score table, the importance, and no dummy on its own
    assert [f for (f,) in a.scores.loc[a.scores["kind"] == "1d", "features"]] == ["x", "state", "z"]
    assert set(a.importance.index) == {"x", "state", "z"}
    assert any("Feature group 'state'" in n and "exactly one of them is 1" in n for n in a.notes)
    assert any("tree path does not apply" in n and "feature groups" in n for n in a.notes)


def test_group_ood_share_is_zero_where_single_dummies_are_half_unrealistic():
    X, y, _ = _one_hot()
    model = LinearRegression().fit(X, y)
    plain = autopdp.audit(model, X, y, config={"pairs": False})
    grouped = autopdp.audit(model, X, y, config={"groups": {"state": [f"state_{s}" for s in STATES]}, "pairs": False})
    ood_plain = dict(zip(plain.scores["features"], plain.scores["ood_share"]))
    ood_grouped = dict(zip(grouped.scores["features"], grouped.scores["ood_share"]))
    # setting one dummy alone puts a second 1 beside the row's own state, or none: half the moved rows are impossible
    assert all(ood_plain[(f"state_{s}",)] >= 0.4 for s in STATES)
    assert ood_grouped[("state",)] == 0.0


def test_group_with_a_tree_classifier_refits_and_a_comparison_model():
    X, y, state = _one_hot(n=500, seed=3)
    yb = (y > np.median(y)).astype(int)
    model = HistGradientBoostingClassifier(max_iter=30, random_state=0).fit(X, yb)
    other = LogisticRegression(max_iter=500).fit(X, yb)
    a = autopdp.audit(model, X, yb, compare={"logit": other}, train=(X, yb),
                      config={"groups": {"state": "state_*"}, "pairs": False, "refits": 2, "grid_resolution": 8})
    r = a.pd(("state",))
    dummies = [f"state_{s}" for s in STATES]
    for level, value in zip(r.grid[0], r.average[0]):
        assert value == pytest.approx(model.predict_proba(_set(X, dummies, level))[:, 1].mean(), abs=1e-12)
    sim = a.score(("state",), "similarity:logit")
    assert np.isfinite(sim.value)
    assert a.refits is not None and a.refits.fitted == 2 and a.refits.assessed
    assert autopdp.Audit.from_json(a.to_json()).config.groups == a.config.groups


def _cli_inputs(tmp_path, X, y):
    model = LinearRegression().fit(X, y)
    sio.dump(model, tmp_path / "m.skops")
    X.assign(y=y).to_csv(tmp_path / "d.csv", index=False)
    return ["report", "--model", str(tmp_path / "m.skops"), "--data", str(tmp_path / "d.csv"), "--target", "y",
            "--formats", "json,html", "--pairs", "none"]


def test_cli_group_flag_and_config_key(tmp_path):
    X, y, _ = _one_hot(n=300)
    args = _cli_inputs(tmp_path, X, y)
    assert main([*args, "--out", str(tmp_path / "o"), "--group", "state=state_*"]) == 0
    data = json.loads((tmp_path / "o" / "results.json").read_text())
    assert data["config"]["groups"] == {"state": "state_*"}
    back = autopdp.Audit.from_json(tmp_path / "o" / "results.json")
    assert dict(back.config.groups) == {"state": "state_*"}
    assert [f for (f,) in back.scores.loc[back.scores["kind"] == "1d", "features"]] == ["x", "state", "z"]
    html = (tmp_path / "o" / "report.html").read_text()
    assert "Feature group" in html and "state_WA" in html
    (tmp_path / "g.toml").write_text('[groups]\nstate = ["state_CA", "state_NY", "state_TX", "state_WA"]\n')
    assert main([*args, "--out", str(tmp_path / "o2"), "--config", str(tmp_path / "g.toml")]) == 0
    again = autopdp.Audit.from_json(tmp_path / "o2" / "results.json")
    np.testing.assert_allclose(again.pd(("state",)).average, back.pd(("state",)).average, rtol=0, atol=1e-12)


@pytest.mark.parametrize("flag, change, message", [
    (["--group", "state=state_*"], "two_hot", "2 row(s) have more than one of its columns set"),
    (["--group", "state=state_CA,state_NYY"], None, "group 'state' names the column 'state_NYY' is not in the data's "
                                                      "columns. Did you mean 'state_NY'?"),
    (["--group", "x=state_*"], None, "group name 'x' is already a column of the data"),
    (["--group", "s=state_CA,state_NY", "--group", "t=state_NY,state_TX"], None, "column 'state_NY' is in two groups"),
    (["--group", "state=city_*"], None, "no column of the data starts with 'city_'"),
    (["--group", "state"], None, "--group takes NAME=COL1,COL2,... or NAME=PREFIX*"),
    (["--group", "state=state_*", "--group", "state=state_CA,state_NY"], None, "names the group 'state' twice"),
    (["--group", "state=state_*"], "three", "column 'state_TX' holds values other than 0 and 1"),
    (["--group", "state=state_CA"], None, "a group joins two or more one-hot columns"),
])
def test_cli_group_refusals_are_one_line(tmp_path, capsys, flag, change, message):
    X, y, _ = _one_hot(n=200)
    args = _cli_inputs(tmp_path, X, y)
    if change == "two_hot":
        X.loc[[3, 7], "state_CA"] = 1
        X.loc[[3, 7], "state_NY"] = 1
    elif change == "three":
        X.loc[5, "state_TX"] = 3
    X.assign(y=y).to_csv(tmp_path / "d.csv", index=False)
    capsys.readouterr()
    assert main([*args, "--out", str(tmp_path / "o"), *flag]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("autopdp: error: ") and message in err[0], err
    assert not (tmp_path / "o" / "results.json").exists()


def test_a_gate_policy_names_the_group_and_compare_takes_the_flag(tmp_path):
    """The policy's [features.state] names the group, not a column of the file: the gate checks it on the one
    feature (before, the early check refused 'state' as not in the data)."""
    X, y, _ = _one_hot(n=300)
    args = _cli_inputs(tmp_path, X, y)
    sio.dump(LinearRegression().fit(X, y + 0.1 * X.x), tmp_path / "champ.skops")
    (tmp_path / "policy.toml").write_text("[features.state]\nmax_similarity = 0.5\n")
    common = ["--data", str(tmp_path / "d.csv"), "--target", "y", "--group", "state=state_*", "--formats", "json"]
    assert main(["gate", "--model", str(tmp_path / "m.skops"), "--champion", str(tmp_path / "champ.skops"),
                 "--policy", str(tmp_path / "policy.toml"), "--out", str(tmp_path / "g"), *common]) == 0
    gate = json.loads((tmp_path / "g" / "gate.json").read_text())
    assert [c["feature"] for c in gate["checks"] if c["check"] == "similarity"] == ["state"]
    assert main(["compare", "--model", f"a={tmp_path / 'm.skops'}", "--model", f"b={tmp_path / 'champ.skops'}",
                 "--out", str(tmp_path / "c"), *common]) == 0
    back = autopdp.Audit.from_json(tmp_path / "c" / "results.json")
    assert ("state",) in set(back.scores["features"])

"""The model's skill on the audit rows' target, first in the summary (issue 53): known answers, the no-skill test's
level and power over seeds, and a pure-noise model whose report leads with "no skill"."""

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from sklearn.metrics import log_loss, r2_score, roc_auc_score

import autopdp
from autopdp.scores.skill import _delong, model_skill

BINARY = SimpleNamespace(is_classifier=True, targets=(1,), response="predict_proba")
REGRESSOR = SimpleNamespace(is_classifier=False, targets=(), response="predict")


def test_delong_auc_and_its_variance_by_hand():
    # positives 0.9, 0.8, 0.4 against negatives 0.7, 0.3: 5 of the 6 pairs ordered, AUC 5/6; each positive's share
    # of negatives below it (1, 1, 1/2), each negative's share of positives above it (2/3, 1):
    # var = var(1, 1, .5) / 3 + var(2/3, 1) / 2 = (1/12) / 3 + (1/18) / 2 = 1/18
    score = np.array([0.9, 0.8, 0.4, 0.7, 0.3])
    auc, se = _delong(score, np.array([True, True, True, False, False]))
    assert auc == pytest.approx(5 / 6) and se == pytest.approx(np.sqrt(1 / 18))


def _delong_by_ranks(score, positive):
    """DeLong's AUC and standard error from the ranks (Sun and Xu 2014's midranks), the definition's form."""
    from scipy import stats

    x, y = score[positive], score[~positive]
    m, n = x.size, y.size
    ranks = stats.rankdata(np.concatenate([x, y]))
    v10 = (ranks[:m] - stats.rankdata(x)) / n
    v01 = 1.0 - (ranks[m:] - stats.rankdata(y)) / m
    auc = (ranks[:m].sum() - m * (m + 1) / 2) / (m * n)
    return auc, (np.sqrt(v10.var(ddof=1) / m + v01.var(ddof=1) / n) if m > 1 and n > 1 else np.nan)


@pytest.mark.parametrize("chunk", [1, 3, 10**9])
def test_delong_by_placements_in_chunks_equals_the_ranks(chunk, monkeypatch):
    """The placement values counted by binary search, a chunk of rows at a time (issue 54: no rank arrays of every
    row), give the ranks' AUC and standard error, with ties (few distinct scores) and without, past every chunk
    boundary."""
    import autopdp.pd.rows as rows

    monkeypatch.setattr(rows, "CHUNK_ROWS", chunk)
    rng = np.random.default_rng(0)
    for seed in range(60):
        n = int(rng.integers(2, 200))
        score = rng.integers(0, 5, n).astype(float) if seed % 2 else rng.random(n)
        positive = rng.random(n) < rng.uniform(0.1, 0.9)
        if positive.all() or not positive.any():
            continue
        np.testing.assert_allclose(_delong(score, positive), _delong_by_ranks(score, positive), rtol=0, atol=1e-12)


def test_measures_equal_scikit_learns():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 500)
    p = np.clip(0.3 + 0.4 * y + rng.normal(scale=0.2, size=500), 0.01, 0.99)
    k = model_skill(p[:, None], y, BINARY)
    assert k["auc"] == pytest.approx(roc_auc_score(y, p), abs=1e-12)
    assert k["log_loss"] == pytest.approx(log_loss(y, p), abs=1e-12)
    assert k["baseline_log_loss"] == pytest.approx(log_loss(y, np.full(500, y.mean())), abs=1e-12)
    assert k["shows_skill"] is True and k["p_value"] < 1e-6
    yr = rng.normal(size=400)
    pred = 0.5 * yr + rng.normal(scale=0.5, size=400)
    kr = model_skill(pred[:, None], yr, REGRESSOR)
    assert kr["r2"] == pytest.approx(r2_score(yr, pred), abs=1e-12)
    lo, hi = kr["r2_interval"]
    assert lo < kr["r2"] < hi


def test_the_no_skill_test_holds_its_level_and_has_power_over_seeds():
    """A score unrelated to the target is called skilful in at most 5% of seeds (binomial slack: 200 seeds, at most
    18 = the 5% level's 99.9% upper bound); a real AUC of about 0.62 on 300 rows is found in nearly every seed.
    The same for a regressor's R^2 (no skill: predictions independent of y; skill: R^2 about 0.1)."""
    false, found, false_r, found_r = 0, 0, 0, 0
    for seed in range(200):
        rng = np.random.default_rng(seed)
        y = rng.integers(0, 2, 300)
        false += model_skill(rng.uniform(size=(300, 1)), y, BINARY)["shows_skill"]
        found += model_skill(np.clip(0.5 + 0.15 * (y - 0.5) + rng.normal(scale=0.25, size=(300, 1))[:, 0], 0.01,
                                     0.99)[:, None], y, BINARY)["shows_skill"]
        yr = rng.standard_t(3, size=300)  # heavy tails
        false_r += model_skill(rng.normal(size=(300, 1)) * 0.1, yr, REGRESSOR)["shows_skill"]
        found_r += model_skill((0.35 * yr + rng.normal(scale=0.3, size=300))[:, None] * 0.5, yr,
                               REGRESSOR)["shows_skill"]
    assert false <= 18 and false_r <= 18, (false, false_r)
    assert found >= 180 and found_r >= 180, (found, found_r)


@pytest.fixture(scope="module")
def noise_and_signal():
    rng = np.random.default_rng(2)
    X = pd.DataFrame(rng.normal(size=(800, 4)), columns=list("abcd"))
    noise = pd.Series(rng.integers(0, 2, 800), name="default")
    signal = pd.Series((2 * X.a + rng.logistic(size=800) > 0).astype(int), name="default")
    cfg = autopdp.AuditConfig(noise_draws=50, grid_resolution=8, grid_resolution_2d=4)
    out = {}
    for name, y in (("noise", noise), ("signal", signal)):
        model = HistGradientBoostingClassifier(max_iter=40, random_state=0).fit(X[:400], y[:400])
        out[name] = autopdp.audit(model, X[400:], y[400:], config=cfg)
    return out


def _text(audit):
    import html as html_lib
    import re

    markup = re.sub(r"<(script|style|svg)\b.*?</\1>", " ", audit.to_html(), flags=re.S)
    return re.sub(r"\s+", " ", html_lib.unescape(re.sub(r"<[^>]+>", " ", markup)))


def test_a_pure_noise_model_reads_as_that_first_and_in_every_finding(noise_and_signal):
    a = noise_and_signal["noise"]
    k = a.metadata["skill"]
    assert k["shows_skill"] is False and k["kind"] == "binary" and k["rows"] == 400
    text = _text(a)
    summary = text[text.index("Executive summary", text.index("Review and sign-off")):]
    assert summary.split("Skill on the audit data. ", 1)[1].startswith("The model shows no skill on the 400 audit rows")
    n = sum(e.passed for c, by in a.evidence.items() if c != "intersection" for e in by.values())
    assert f"The {n} findings below are patterns of this fitted model, not evidence about the data." in text
    assert f"about {autopdp.utils.formatting.fmt(0.05 * n, 2)} may be such noise" in text
    selection = json.loads(a.to_json())["selection"]
    assert selection and all(s["sentence"].endswith("(The model shows no skill on the audit data: a pattern of this "
                                                    "fit, not evidence about the data.)") for s in selection)


def test_a_skilful_model_says_so_and_its_findings_carry_nothing_more(noise_and_signal):
    a = noise_and_signal["signal"]
    k = a.metadata["skill"]
    assert k["shows_skill"] is True and k["auc"] > 0.7
    text = _text(a)
    assert "The model shows skill on the 400 audit rows: AUC " in text
    assert "no skill on the audit data" not in json.dumps(json.loads(a.to_json())["selection"])
    back = autopdp.Audit.from_json(a.to_json())
    assert back.metadata["skill"]["auc"] == pytest.approx(k["auc"])


def test_without_a_target_the_skill_is_not_measured_and_the_summary_says_so():
    rng = np.random.default_rng(1)
    X = pd.DataFrame(rng.normal(size=(200, 2)), columns=["a", "b"])
    model = HistGradientBoostingRegressor(max_iter=20).fit(X, X.a + rng.normal(size=200))
    a = autopdp.audit(model, X, config=autopdp.AuditConfig(noise_draws=50, pairs=False))
    assert a.metadata["skill"] is None
    assert "No target in the audit data: the model's skill is not measured" in _text(a)


def test_permutation_importance_known_answer_and_multiple_testing():
    """Permuting x in y = b x + e raises the expected squared error by 2 b^2 Var(x) (the permuted x' is independent:
    E[b^2 (x - x')^2] = 2 b^2 Var(x)); a feature the model ignores raises it by 0 exactly."""
    from sklearn.linear_model import LinearRegression

    from autopdp.pd.data import as_frame
    from autopdp.pd.response import make_adapter
    from autopdp.scores.skill import permutation_importance

    rng = np.random.default_rng(3)
    X = pd.DataFrame({"x": rng.normal(size=4000), "z": rng.normal(size=4000)})
    y = 1.5 * X.x + rng.normal(size=4000)
    model = LinearRegression().fit(X, y)
    model.coef_[1] = 0.0  # z exactly ignored
    adapter = make_adapter(model, "auto", None, probe=X[:5])
    pfi = permutation_importance(adapter, as_frame(X), y.to_numpy(), model.predict(X)[:, None], ["x", "z"], repeats=5)
    x, z = pfi["features"]["x"], pfi["features"]["z"]
    truth = 2 * model.coef_[0] ** 2 * X.x.var()
    assert x["interval"][0] < truth < x["interval"][1] and x["shown"]
    assert z["value"] == 0.0 and not z["shown"] and pfi["loss"] == "squared error"


def test_a_finding_on_a_feature_the_held_out_data_do_not_show_is_set_aside(noise_and_signal):
    """With skill, a 1D pattern on a feature the held-out data do not show to matter is never a selected finding
    (it is set aside: listed apart); the selected 1D findings are on features the data show to matter."""
    a = noise_and_signal["signal"]
    pfi = a.metadata["permutation_importance"]
    assert pfi["loss"] == "log-loss" and pfi["features"]["a"]["shown"]
    quiet = {f for f, v in pfi["features"].items() if not v["shown"]}
    assert quiet and quiet <= {"b", "c", "d"}  # the noise features (one may pass by chance: BH at 5%)
    assert set(a.set_aside) == quiet and set(a.set_aside_patterns()) <= quiet
    one_d = [s for s in json.loads(a.to_json())["selection"] if len(s["features"]) == 1]
    assert one_d and all(s["features"][0] not in quiet and "(The held-out data do not show that" not in s["sentence"]
                         for s in one_d)
    text = _text(a)
    assert "held-out permutation importance (log-loss increase, 95% interval)" in text


def test_a_finding_not_shown_robust_states_the_smallest_effect_the_refit_test_could_show():
    """Issue 53: "not shown robust" says what the test could have shown: the learner-level test's 95% critical value
    at its K refits (the Monte-Carlo draws' quantile, or the ICE spread's z-test boundary), from the record."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    from autopdp.report.findings import fmt, robust_kind, robustness_sentence

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.uniform(-1, 1, (900, 3)), columns=list("abc"))
    y = X.a + 0.3 * np.sin(6 * X.b) + rng.normal(size=900)
    model = HistGradientBoostingRegressor(max_iter=60, random_state=0).fit(X[:500], y[:500])
    a = autopdp.audit(model, X[500:], y[500:], train=(X[:500], y[:500]),
                      config=autopdp.AuditConfig(refits=5, pairs=False, noise_draws=100))
    seen = {"robust": 0, "other": 0}
    for crit, by in a.evidence.items():
        for feats, e in by.items():
            if not e.passed or e.robust is None:
                continue
            text = robustness_sentence(e, a.refits, " and ".join(feats))
            crit_value = e.details["learner"]["critical"]
            if robust_kind(e) == "robust":
                assert "would go unseen" not in text
                seen["robust"] += 1
            elif e.details["learner"].get("floored"):  # the ICE spread: the refits' own spread took all of it
                learner = e.details["learner"]
                assert robust_kind(e) == "unconfirmed" and learner["value"] == 0.0
                need = np.hypot(learner["refit_spread"], learner["threshold"])
                assert (f"the refits' averaged ICE curves spread by {fmt(learner['averaged'])} against this fit's "
                        f"{fmt(e.value)}, but the refits' own spread, {fmt(learner['refit_spread'])}") in text, text
                assert f"would have to spread by about {fmt(need)} or more to show one" in text
                assert learner["averaged"] <= learner["refit_spread"]
                seen["floored"] = seen.get("floored", 0) + 1
            elif crit_value is None:  # the learner-PD below the threshold: no test ran
                learner = e.details["learner"]
                assert learner["value"] <= learner["threshold"], (crit, learner)
                assert f"is at most the materiality threshold {fmt(learner['threshold'])}, so no test" in text, text
                seen["other"] += 1
            else:
                assert np.isfinite(crit_value) and crit_value > e.details["learner"]["threshold"]
                assert "With 5 refits the test shows a learner-level " in text
                assert f"only from about {fmt(crit_value)} (its 95% critical value" in text, text
                seen["other"] += 1
    assert seen["other"] >= 2 and seen["robust"] >= 1 and seen.get("floored", 0) >= 1, seen


@pytest.fixture(scope="module")
def overfit_booster():
    """A default HGB fitted to y = 2 x1 + noise with three pure-noise features, audited on held-out rows: its PDs
    move on the noise features for real (the fitted model's patterns), and the held-out data do not show them to
    matter."""
    rng = np.random.default_rng(5)
    X = pd.DataFrame(rng.uniform(-1, 1, size=(1500, 4)), columns=["x1", "x2", "x3", "x4"])
    y = pd.Series(2 * X.x1 + rng.normal(size=1500), name="y")
    model = HistGradientBoostingRegressor(random_state=0).fit(X[:1000], y[:1000])
    return autopdp.audit(model, X[1000:].reset_index(drop=True), y[1000:].reset_index(drop=True),
                         config=autopdp.AuditConfig(pairs=False, utilities=("slope", "monotonicity")), random_state=0)


def test_patterns_on_features_the_held_out_data_do_not_support_are_set_aside(overfit_booster):
    a = overfit_booster
    assert a.metadata["skill"]["shows_skill"] is True
    pfi = a.metadata["permutation_importance"]["features"]
    assert pfi["x1"]["shown"] and "x1" not in a.set_aside
    assert set(a.set_aside) == {f for f in ("x2", "x3", "x4") if not pfi[f]["shown"]} and a.set_aside
    patterns = a.set_aside_patterns()
    passed = {f for f in a.set_aside if any(a.evidence[c][(f,)].passed for c in ("slope", "monotonicity"))}
    assert patterns and set(patterns) == passed  # the premise: the booster's noise features pass their tests
    # never a finding of the curated selection, and said once in the summary with the permutation importance
    assert not [s for s in a.selection if s.kind == "1d" and s.features[0] in a.set_aside]
    assert any(s.features == ("x1",) for s in a.selection)
    text = _text(a)
    f = next(iter(patterns))
    assert "Set aside: the patterns of the fitted model on" in text
    assert f"{f} ({', '.join(patterns[f])}; permuting it changes the squared error by" in text
    # read back from its JSON, the same selection and the same set-aside patterns
    back = autopdp.Audit.from_json(a.to_json())
    assert back.set_aside_patterns() == patterns
    assert [s.features for s in back.selection] == [s.features for s in a.selection]


def test_nothing_is_set_aside_without_skill_or_without_a_target(noise_and_signal):
    a = noise_and_signal["noise"]
    assert a.metadata["skill"]["shows_skill"] is False and a.set_aside == ()
    assert "Set aside" not in _text(a)


def test_permutation_importance_above_its_row_limit_uses_a_seeded_sample_and_says_so():
    """Above ``max_rows`` the importance is the same statistic on a seeded sample of rows (the record says how many
    of how many); at or below it every row is used."""
    from autopdp.pd.data import as_frame
    from autopdp.pd.response import make_adapter
    from autopdp.report.overview import pfi_rows
    from autopdp.scores.skill import permutation_importance
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(4)
    X = pd.DataFrame({"x": rng.normal(size=3000), "z": rng.normal(size=3000)})
    y = 2 * X.x + rng.normal(size=3000)
    model = LinearRegression().fit(X, y)
    adapter, frame = make_adapter(model), as_frame(X)
    pred = model.predict(X)[:, None]
    full = permutation_importance(adapter, frame, y.to_numpy(), pred, ["x", "z"], seed=1)
    part = permutation_importance(adapter, frame, y.to_numpy(), pred, ["x", "z"], seed=1, max_rows=1000)
    again = permutation_importance(adapter, frame, y.to_numpy(), pred, ["x", "z"], seed=1, max_rows=1000)
    assert (full["rows"], full["of"]) == (3000, 3000) and pfi_rows(full) == ""
    assert (part["rows"], part["of"]) == (1000, 3000) and part == again
    assert pfi_rows(part) == " on a seeded sample of 1,000 of the 3,000 rows"
    # the same quantity: 2 b^2 Var(x) = 8 for x within the sample's interval; about 0 for z
    lo, hi = part["features"]["x"]["interval"]
    assert lo < 8 < hi and part["features"]["x"]["shown"] and abs(part["features"]["z"]["value"]) < 0.05


def test_unweighted_measures_equal_those_with_unit_weights():
    """Issue 54: without weights no row-long array of ones is made; the measures equal those with every weight 1
    (binary, multiclass, regression; with rows left out for a missing target or prediction)."""
    rng = np.random.default_rng(7)
    n = 700
    y = rng.integers(0, 2, n).astype(float)
    p = np.clip(0.3 + 0.4 * y + rng.normal(scale=0.2, size=n), 0.01, 0.99)
    y[rng.random(n) < 0.05] = np.nan
    p[rng.random(n) < 0.03] = np.nan
    y3 = rng.integers(0, 3, n)
    proba = rng.dirichlet(np.ones(3), n)
    three = SimpleNamespace(is_classifier=True, targets=(0, 1, 2), response="predict_proba")
    yr = rng.normal(size=n)
    pr = 0.5 * yr + rng.normal(scale=0.5, size=n)
    for args in ((p[:, None], y, BINARY), (proba, y3, three, None, [0, 1, 2]), (pr[:, None], yr, REGRESSOR)):
        pred, target, adapter = args[:3]
        classes = args[4] if len(args) > 4 else None
        plain = model_skill(pred, target, adapter, None, classes)
        ones = model_skill(pred, target, adapter, np.ones(n), classes)
        assert plain.keys() == ones.keys() and "reason" not in plain
        for key, value in plain.items():
            if isinstance(value, float) and np.isfinite(value):
                assert value == pytest.approx(ones[key], rel=1e-12, abs=1e-15), key
            elif not isinstance(value, float):
                assert value == ones[key], key

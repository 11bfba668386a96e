"""Every sentence true on its own, round three (issue 52): each case with a known answer."""

import html as html_lib
import re
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import RandomForestRegressor

from autopdp import AuditConfig, audit
from autopdp.cli.commands import build_parser
from autopdp.report.findings import finding_sentence
from autopdp.utils.formatting import fmt
from autopdp.scores.utilities.base import UtilityScore, gap_score


def _text(markup: str) -> str:
    markup = re.sub(r"<(script|style|svg)\b.*?</\1>", " ", markup, flags=re.S | re.I)
    return re.sub(r"\s+", " ", html_lib.unescape(re.sub(r"<[^>]+>", " ", markup)))


def _all_help() -> str:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return parser.format_help() + "".join(p.format_help() for p in sub.choices.values())


def test_help_names_no_internal_issue():
    text = _all_help()
    assert "--refits" in text and "--train" in text  # the subcommands' help was read
    assert not re.search(r"\bissue \d+", text), re.findall(r".{40}\bissue \d+.{10}", text)


@pytest.fixture(scope="module")
def tree_audit():
    rng = np.random.default_rng(1)
    X = pd.DataFrame({"a": rng.normal(size=300), "b": rng.uniform(0, 5, 300)})
    y = X.a + 0.5 * X.b + rng.normal(scale=0.3, size=300)
    model = RandomForestRegressor(n_estimators=10, max_depth=4, random_state=0).fit(X, y)
    return model, X


@pytest.mark.parametrize("method, says", [
    ("auto", None),
    ("brute", "(The exact tree path was not used: method='brute'.)"),
])
def test_the_methodology_says_the_tree_path_was_not_used_only_when_it_was_not(tree_audit, method, says):
    """Before: a tree model's methodology read "(The exact tree path does not apply to this model: used.)"."""
    model, X = tree_audit
    a = audit(model, X, config=AuditConfig(pairs=False, grid_resolution=6, noise_draws=50, method=method))
    text = _text(a.to_html())
    assert "does not apply to this model: used" not in text
    if says is None:
        assert a.metadata["tree_path"] == "used" and "tree path was not used" not in text
        assert "computed exactly by the tree path" in text
    else:
        assert says in text


def _score(utility, loss, **details):
    f = np.array([0.0, 1.0, 2.0])
    g = np.array([0.5, 1.0, 1.0])
    w = np.array([1.0, 2.0, 1.0])
    return gap_score(utility, f, g, w, loss, None, **details)


@pytest.mark.parametrize("loss, reads, value", [
    ("l2", "in root mean square", np.sqrt((0.25 * 1 + 0 + 1 * 1) / 4)),
    ("l1", "on average", (0.5 * 1 + 0 + 1 * 1) / 4),
])
def test_a_gap_says_on_average_only_for_a_mean(loss, reads, value):
    """The incidence and similarity gaps are a weighted root mean square (loss l2, the default) or a weighted mean
    of absolute differences (l1): the sentence names which, from the score's own record."""
    inc = _score("incidence", loss, what="mean target")
    assert inc.details["loss"] == loss and inc.value == pytest.approx(value)
    text = finding_sentence(("x",), "incidence", inc)
    assert f"by {fmt(value)} {reads}" in text
    assert ("on average" in text) == (loss == "l1")
    sim = _score("similarity:other", loss, model="other")
    text = finding_sentence(("x",), "similarity:other", sim)
    assert reads in text and ("on average" in text) == (loss == "l1")
    dep = SimpleNamespace(kind="dependence", value=0.2)
    text = finding_sentence(("x",), "incidence", inc, evidence=dep)
    assert f"differs by 0.2 {reads}" in text


def test_a_probability_band_is_clipped_to_zero_and_one():
    from autopdp.report.figures import _band

    f = np.array([0.02, 0.5, 0.97])
    spread = np.array([0.1, 0.1, 0.1])
    low, high = _band(SimpleNamespace(response="predict_proba"), f, spread)
    np.testing.assert_allclose(low, [0.0, 0.4, 0.87])
    np.testing.assert_allclose(high, [0.12, 0.6, 1.0])
    low, high = _band(SimpleNamespace(response="predict"), f, spread)  # a regressor's band is not a probability
    np.testing.assert_allclose(low, f - 0.1)
    np.testing.assert_allclose(high, f + 0.1)


def test_an_older_record_without_its_loss_reads_as_the_default_root_mean_square():
    old = UtilityScore(utility="similarity:b", value=0.1, target=None, details={"model": "b"})
    assert "in root mean square" in finding_sentence(("x",), "similarity:b", old)


def test_an_interaction_sentence_names_the_log_odds_scale_it_was_measured_on():
    """Before: "Greenwell interaction 0.305 on P(default = 1)" for a value on the log-odds.  The interaction of a
    classifier is measured on its log-odds surface; the sentence names that scale, from the evidence's record, and
    its number is that surface's, not the probability surface's."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import PolynomialFeatures

    from autopdp.scores.importance import pd_interaction

    rng = np.random.default_rng(5)
    X = pd.DataFrame({"a": rng.normal(size=600), "b": rng.normal(size=600)})
    y = (X.a + X.b + 1.5 * X.a * X.b + rng.logistic(size=600) > 0).astype(int)
    model = make_pipeline(PolynomialFeatures(2, interaction_only=True, include_bias=False),
                          LogisticRegression(C=100)).fit(X, y)
    a = audit(model, X, y, config=AuditConfig(grid_resolution=8, grid_resolution_2d=6, noise_draws=50))
    e = a.evidence["interaction"][("a", "b")]
    assert e.details["scale"].startswith("log-odds")
    on_probability = float(pd_interaction(a.pd(("a", "b")))[0][0])
    assert abs(e.value - on_probability) > 0.1  # the two scales give different numbers
    text = finding_sentence(("a", "b"), "interaction", None, criteria={"interaction": e.value}, outcome="P(y = 1)",
                            evidence=e)
    # that surface is the mean of the kept rows' ICE surfaces on the log-odds: the sentence says how many rows
    assert e.details["link_rows"] == 128  # the 2D ICE rows kept (std_rows) of the 500 the 2D PDs average over
    assert (f"(Greenwell interaction {fmt(e.value)} on the log-odds scale of P(y = 1), from the 128 sampled rows' "
            "ICE surfaces)") in text
    plain = finding_sentence(("a", "b"), "interaction", None, criteria={"interaction": 0.2}, outcome="predicted y",
                             evidence=SimpleNamespace(details={"scale": "prediction"}))
    assert "(Greenwell interaction 0.2 on predicted y)" in plain


def test_the_pred_sd_column_holds_only_gaps_on_the_response_scale(tree_audit):
    """Before: the "× pred. sd" column divided a slope (a rate), an OOD share and a log-odds ICE spread by the
    probability's sd.  Now only criteria whose score is a gap on the response scale have the column."""
    from autopdp.report.writer import report_context

    model, X = tree_audit
    a = audit(model, X, config=AuditConfig(pairs=False, grid_resolution=6, noise_draws=50))
    tables = {t["uid"]: t for t in report_context(a, formats=("html",))["rankings"]}
    assert {"slope", "monotonicity", "ood_share"} <= set(tables)
    assert not tables["slope"]["in_sd"] and not tables["ood_share"]["in_sd"]
    assert all(r["scaled"] == "" for r in tables["slope"]["rows"])
    assert tables["monotonicity"]["in_sd"]
    sd = a.metadata["prediction_std"][0]
    for r in tables["monotonicity"]["rows"]:
        assert r["scaled"] == ("" if not sd else f"{float(r['score_v']) / sd:.2g}")
    html = _text(a.to_html())
    assert "× pred. sd" in html


def test_similarity_scores_ranks_and_selects_on_the_shape_gap_not_the_level():
    """A challenger that adds 0.7 everywhere and changes x3's shape: before, every feature scored about 0.7 (the
    level) and an unchanged one could be selected.  Now the unchanged features score 0 (the level is set aside), x3
    scores its shape gap, the same as against the challenger without the shift, and no unchanged feature is
    selected by similarity."""
    rng = np.random.default_rng(2)
    U = pd.DataFrame(rng.uniform(size=(400, 3)), columns=["x1", "x2", "x3"])

    def model(d):
        d = np.asarray(d, dtype=float)
        return np.sin(3 * d[:, 0]) + d[:, 1] ** 2 + d[:, 2]

    def reshaped(d):
        d = np.asarray(d, dtype=float)
        return np.sin(3 * d[:, 0]) + d[:, 1] ** 2 + (1 - d[:, 2]) ** 3

    def shifted(d):
        return reshaped(d) + 0.7

    a = audit(model, U, compare={"shifted": shifted, "reshaped": reshaped},
              config=AuditConfig(grid_resolution=9, pairs=False, noise_draws=50))
    one = a.scores[a.scores["kind"] == "1d"].set_index("features")
    for f in (("x1",), ("x2",)):
        assert one.loc[[f], "similarity:shifted"].iloc[0] == pytest.approx(0.0, abs=1e-12)
        # f - g is constant over x1's (x2's) grid: the rows' mean of the x3 terms' difference, less 0.7
        level = float(np.mean(U.x3 - (1 - U.x3) ** 3)) - 0.7
        assert a.score(f, "similarity:shifted").details["level_shift"] == pytest.approx(level, abs=1e-12)
    s, r = a.score(("x3",), "similarity:shifted"), a.score(("x3",), "similarity:reshaped")
    x = np.asarray(a.pd(("x3",)).grid[0], dtype=float)
    np.testing.assert_allclose(np.asarray(a.pd(("x3",)).average[0]) - s.comparison, x - (1 - x) ** 3 - 0.7, atol=1e-12)
    assert s.value == pytest.approx(r.value, abs=1e-12) and s.value > 0.1
    assert s.value == s.details["shape_gap"] and s.details["total_gap"] > s.value  # the paper's gap counts the level
    assert s.details["level_shift"] == pytest.approx(r.details["level_shift"] - 0.7, abs=1e-12)
    assert a.ranking("similarity:shifted", kind="1d")["features"].iloc[0] == ("x3",)
    chosen = {sel.features for sel in a.selection for c, _ in sel.reasons if c.startswith("similarity:")}
    assert chosen <= {("x3",)}


def test_a_model_column_the_data_names_otherwise_gets_a_suggestion():
    from sklearn.linear_model import LinearRegression

    from autopdp import InputError

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"Age": rng.normal(size=50), "income": rng.normal(size=50)})
    model = LinearRegression().fit(X, X.Age + X.income)
    with pytest.raises(InputError, match=r"X lacks 1 column\(s\) the model was fitted on: 'Age' \(did you mean "
                                         r"'AGE'\?\); pass the data with every feature the model needs, named as in "
                                         r"training\."):
        audit(model, X.rename(columns={"Age": "AGE"}), config=AuditConfig(pairs=False))


def test_target_map_replaces_the_labels_and_refuses_an_unmapped_one(tmp_path, capsys):
    import skops.io as sio
    from sklearn.linear_model import LogisticRegression

    from autopdp.cli.commands import main

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=200), "b": rng.normal(size=200)})
    y = (X.a + rng.normal(size=200) > 0).astype(int)
    sio.dump(LogisticRegression().fit(X, y), tmp_path / "m.skops")
    X.assign(y=np.where(y == 1, "Yes", "No")).to_csv(tmp_path / "d.csv", index=False)
    args = ["report", "--model", str(tmp_path / "m.skops"), "--data", str(tmp_path / "d.csv"), "--target", "y",
            "--formats", "json"]
    assert main([*args, "--out", str(tmp_path / "o0")]) == 2  # the labels are not the model's classes
    assert "on the command line --target-map" in capsys.readouterr().err
    assert main([*args, "--out", str(tmp_path / "o"), "--target-map", "Yes=1, No=0"]) == 0
    import autopdp

    back = autopdp.Audit.from_json(tmp_path / "o" / "results.json")
    assert back.metadata["targets"] == [1]  # P(y = 1): the labels were mapped to the model's classes
    capsys.readouterr()
    assert main([*args, "--out", str(tmp_path / "o2"), "--target-map", "Yes=1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["autopdp: error: --target-map does not map the target's label(s) 'No'; map every label of column "
                   "'y' (e.g. --target-map Yes=1,No=0)."]
    assert main([*args, "--out", str(tmp_path / "o3"), "--target-map", "Yes:1"]) == 2
    assert "takes LABEL=VALUE pairs" in capsys.readouterr().err


def test_compare_refuses_every_untrusted_model_in_one_message(tmp_path, capsys):
    """Before: one model's trust refusal per run.  Now both models' refusals come in one line, each naming its
    file and the --trust-type flags it needs."""
    import functools

    import skops.io as sio
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    from autopdp.cli.commands import main

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=100), "b": rng.normal(size=100)})
    y = X.a + X.b
    for name in ("one", "two"):
        pipe = make_pipeline(FunctionTransformer(functools.partial(np.multiply, 2.0)), LinearRegression()).fit(X, y)
        sio.dump(pipe, tmp_path / f"{name}.skops")
    X.assign(y=y).to_csv(tmp_path / "d.csv", index=False)
    code = main(["compare", "--model", f"one={tmp_path / 'one.skops'}", "--model", f"two={tmp_path / 'two.skops'}",
                 "--data", str(tmp_path / "d.csv"), "--target", "y", "--out", str(tmp_path / "o")])
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("autopdp: error:")]
    assert code == 2 and len(err) == 1, err
    assert "2 of the 2 models were refused" in err[0]
    assert err[0].count("contains types skops does not trust") == 2
    assert "one.skops" in err[0] and "two.skops" in err[0] and "--trust-type functools.partial" in err[0]


def test_on_a_terminal_every_stage_has_its_own_line_and_its_time(tree_audit, capsys):
    """Before: two stages printed on one line (the scores' thread beside the trust checks) and the PD stages never
    said "done in".  Now (progress=True, as on a terminal) every stage's start line has its own "done in" line, and
    no line holds two stages."""
    model, X = tree_audit
    audit(model, X, config=AuditConfig(grid_resolution=5, grid_resolution_2d=3, noise_draws=50), progress=True)
    err = capsys.readouterr().err
    lines = [part for line in err.split("\n") for part in line.split("\r") if "autopdp:" in part]
    assert lines and all(part.count("autopdp:") == 1 for part in lines), lines
    starts = [m.group(1) for part in lines if (m := re.search(r"autopdp: (.+) \.\.\.$", part.strip()))]
    ends = [m.group(1) for part in lines if (m := re.search(r"autopdp: (.+) done in \d+\.\d s$", part.strip()))]
    assert any("1D partial dependence" in s for s in starts) and any("2D partial dependence" in s for s in starts)
    assert sorted(starts) == sorted(ends), (starts, ends)


def test_the_importance_table_is_ranked_named_by_class_and_says_which_are_findings():
    """Before: an unranked table whose column header was "1".  Now: rank, the class's name, and the finding state of
    each feature's importance (from its own evidence)."""
    from sklearn.linear_model import LogisticRegression

    from autopdp.report.writer import report_context

    rng = np.random.default_rng(7)
    X = pd.DataFrame({"weak": rng.normal(size=400), "strong": rng.normal(size=400), "none": rng.normal(size=400)})
    y = (2 * X.strong + 0.3 * X.weak + rng.logistic(size=400) > 0).astype(int).rename("y")
    a = audit(LogisticRegression().fit(X, y), X, y, config=AuditConfig(pairs=False, noise_draws=50))
    ctx = report_context(a, formats=("html", "pdf"))
    for t in (ctx["importance_top"], ctx["importance_table"]):
        assert t["columns"] == ["rank", "P(y = 1)", "finding?", "held-out permutation importance (log-loss increase, "
                                "95% interval)", "the data show it?"]
        assert [r["values"][0] for r in t["rows"]] == ["1", "2", "3"]
        assert [r["label"] for r in t["rows"]] == ["strong", "weak", "none"]
        pfi = a.metadata["permutation_importance"]["features"]
        for r in t["rows"]:
            e = a.evidence["importance_1d"][(r["label"],)]
            assert r["values"][2] == ("yes" if e.passed else ("not material" if not e.material else "noise"))
            assert r["values"][4] == ("yes" if pfi[r["label"]]["shown"] else "no")
    assert ctx["importance_table"]["rows"][0]["values"][2] == "yes"


def test_a_boolean_feature_is_ordered_and_reads_true_and_false():
    """Before: a boolean was an unordered categorical (no monotonicity, no slope) and the text said "= 1" where the
    axis said True.  Now it is ordered False < True (positions 0 and 1): its monotonicity gap is 0 and its slope is
    the PD's change from False to True, stated with the levels' own names."""
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(3)
    X = pd.DataFrame({"flag": rng.random(300) < 0.4, "x": rng.normal(size=300)})
    y = 2.5 * X.flag + X.x + rng.normal(scale=0.1, size=300)
    model = LinearRegression().fit(X, y)
    a = audit(model, X, config=AuditConfig(pairs=False, noise_draws=50, utilities=("monotonicity", "slope")))
    r = a.pd(("flag",))
    assert list(r.grid[0]) == [False, True] and r.ordered[0]
    coef = model.coef_[0]
    np.testing.assert_allclose(np.diff(np.asarray(r.average[0], dtype=float)), [coef], atol=1e-12)
    mono = a.score(("flag",), "monotonicity")
    assert mono.available and mono.value == pytest.approx(0.0, abs=1e-12)
    slope = a.score(("flag",), "slope")
    assert slope.available and slope.details["change"] == pytest.approx(coef, abs=1e-12)
    text = finding_sentence(("flag",), "slope", slope)
    assert "False" in text and "True" in text and " 0 and 1" not in text, text
    assert fmt(True) == "True" and fmt(np.bool_(False)) == "False"


def test_the_pairs_are_bounded_by_their_cost_and_the_top_ones_audited_with_a_note():
    """Before: a count (max_pairs 1,000) refused a 60-feature model with exit 2.  Now rows x pairs x grid cells is
    bounded by max_pair_cells: here 200 rows (under max_rows_2d 500) x 16 cells = 3,200 cells a pair, so 10,000
    allows 3 of the 10 pairs; the audit computes the screen's top 3 and says why."""
    from autopdp.scores.importance import pd_importance

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(200, 5)), columns=list("abcde"))

    def f(d):
        d = np.asarray(d, dtype=float)
        return d @ np.array([5.0, 4.0, 3.0, 0.2, 0.1])

    cfg = AuditConfig(grid_resolution=5, grid_resolution_2d=4, noise_draws=50, max_pair_cells=10_000,
                      utilities=("monotonicity",), criteria_2d=("importance",))
    a = audit(f, X, config=cfg)
    assert [r.features for r in a.results_2d] == [("a", "b"), ("a", "c"), ("b", "c")]
    note = ("2D PDs computed for 3 of the 10 pairs asked for (a pair of 200 rows x 16 grid cells evaluates 3,200 "
            "cells, and max_pair_cells (10,000) allows 3 of them; raise it with --max-pair-cells)")
    assert any(n.startswith(note) for n in a.notes), a.notes
    imp = {r.features[0]: float(pd_importance(r)[0]) for r in a.results_1d}
    assert sorted(imp, key=imp.get, reverse=True)[:3] == ["a", "b", "c"]
    assert len(audit(f, X, config=cfg.replace(max_pair_cells=32_000)).results_2d) == 10  # all 10 fit


@pytest.mark.filterwarnings("error::DeprecationWarning")  # the refits' configs were copied through the deprecated keys
def test_refit_fits_use_the_threads_the_user_allows_and_each_refit_reports_its_time(tmp_path, capsys, monkeypatch):
    """Before: each refit's HistGradientBoosting fit used every core (OpenMP) on top of autopdp's own threads.  Now
    the fits share the cores --n-jobs allows (one thread each at the default --n-jobs 1), and a log gets one line
    per refit with its fit and PD times."""
    import threadpoolctl
    import skops.io as sio
    from sklearn.base import BaseEstimator, RegressorMixin
    from sklearn.linear_model import LinearRegression

    from autopdp.cli.commands import main
    from autopdp.pd.refits import fit_threads

    assert fit_threads(1, 10) == 1 and fit_threads(4, 10) == 1 and fit_threads(4, 2) == 2 and fit_threads(8, 3) == 2
    seen = []

    class Recording(RegressorMixin, BaseEstimator):
        def fit(self, X, y):
            seen.append({d["user_api"]: d["num_threads"] for d in threadpoolctl.threadpool_info()})
            self.inner_ = LinearRegression().fit(X, y)
            self.n_features_in_ = self.inner_.n_features_in_
            return self

        def predict(self, X):
            return self.inner_.predict(X)

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(300, 2)), columns=["a", "b"])
    y = X.a + rng.normal(scale=0.1, size=300)
    model = Recording().fit(X, y)
    seen.clear()
    a = audit(model, X, y, train=(X, y), config=AuditConfig(refits=2, pairs=False, noise_draws=50,
                                                            utilities=("monotonicity",)))
    assert a.refits.assessed and len(seen) == 2
    assert all(threads["openmp"] == 1 and threads["blas"] == 1 for threads in seen), seen  # 2 cores here: 2 before
    # a log's line per refit (the command line off a terminal)
    monkeypatch.delenv("AUTOPDP_NO_PROGRESS", raising=False)
    monkeypatch.delenv("CI", raising=False)
    model = LinearRegression().fit(X, y)
    sio.dump(model, tmp_path / "m.skops")
    X.assign(y=y).to_csv(tmp_path / "d.csv", index=False)
    code = main(["report", "--model", str(tmp_path / "m.skops"), "--data", str(tmp_path / "d.csv"), "--target", "y",
                 "--train", str(tmp_path / "d.csv"), "--refits", "3", "--pairs", "none", "--formats", "json",
                 "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 0, err
    for i in (1, 2, 3):
        assert re.search(rf"^autopdp: refit {i} of 3: fit \d+\.\d s, PDs \d+\.\d s$", err, re.M), err


def _dip_model(d):
    """Increasing in x except a fall of exactly 1.0 from x = 4 to x = 6 (linear in between): a glass box whose
    violation is known."""
    x = np.asarray(d, dtype=float)[:, 0]
    return x - 1.5 * np.clip(x - 4.0, 0.0, 2.0) + np.asarray(d, dtype=float)[:, 1] * 0.0


def test_every_violation_says_where_with_its_move_and_rows(tmp_path):
    """Before: "gap 0.0164".  Now a monotonicity, Lipschitz or slope finding, results.json and a failed gate check
    name the stretch of the grid, the PD's move across it and the rows there (the PD's own counts)."""
    from autopdp import gate

    X = pd.DataFrame({"x": np.repeat(np.arange(11.0), 30), "z": np.zeros(330)})
    cfg = AuditConfig(pairs=False, noise_draws=50, percentiles=(0.0, 1.0), grid_resolution=11,
                      utilities=("monotonicity", "lipschitz", "slope"), lipschitz={"x": 0.5})
    a = audit(_dip_model, X, config=cfg)
    assert list(a.pd(("x",)).grid[0]) == list(np.arange(11.0))
    m = a.score(("x",), "monotonicity")
    assert m.details["direction"] == "increasing"
    # from x = 4 (f = 4) to x = 6 (f = 6 - 3 = 3): the largest fall, 1.0; rows nearest 4, 5 and 6: 3 x 30
    assert m.details["where"] == {"from": 4.0, "to": 6.0, "change": pytest.approx(-1.0), "rows": 90}
    text = finding_sentence(("x",), "monotonicity", m)
    assert "against its increasing trend it falls 1 between x 4 and 6 (90 rows nearest that stretch of the grid)" in text
    lip = a.score(("x",), "lipschitz")
    # the steps rise 1 per unit, or fall 0.5 from 4 to 6: the first step of slope 1 exceeds the bound 0.5 most
    assert lip.details["bound"] == [0.5]
    assert lip.details["where"] == {"from": 0.0, "to": 1.0, "change": pytest.approx(1.0), "rows": 60,
                                    "slope": pytest.approx(1.0)}
    assert "at its steepest (1 per unit) it rises 1 between x 0 and 1 (60 rows" in finding_sentence(
        ("x",), "lipschitz", lip)
    s = a.score(("x",), "slope")
    assert s.details["where"]["rows"] == 60 and "(60 rows nearest that stretch of the grid)" in finding_sentence(
        ("x",), "slope", s)
    # results.json keeps it
    a.to_json(tmp_path / "r.json")
    back = autopdp_from_json(tmp_path / "r.json")
    assert back.score(("x",), "monotonicity").details["where"] == m.details["where"]
    # a failed gate check says where, in its message, gate.json and the JUnit text
    verdict = gate(a, {"features": {"x": {"monotonic": "increasing", "max_monotonicity": 0.01}}, "gate": {"decide": "limits"}})
    (check,) = [c for c in verdict.checks if c.check == "monotonicity"]
    assert not check.passed and check.where["rows"] == 90
    assert check.message.endswith("Against the direction it falls 1 between x 4 and 6 (90 rows nearest that "
                                  "stretch of the grid).")
    assert check.to_dict()["where"] == {"from": 4.0, "to": 6.0, "change": pytest.approx(-1.0), "rows": 90}
    assert "it falls 1 between x 4 and 6" in verdict.to_junit_xml()


def autopdp_from_json(path):
    from autopdp import Audit

    return Audit.from_json(path)


@pytest.mark.parametrize("kind", ["classifier", "log-link regressor", "regressor"])
def test_every_sentence_names_the_scale_its_number_is_on(kind):
    """Each sentence kind, rendered for every PDP it scores, names the scale of the score's own record: an ICE
    spread or an interaction on a link scale (log-odds, log) names it; a criterion on the response names the
    response (P(y = 1), predicted y); never the response's name for a link-scale number."""
    from sklearn.ensemble import HistGradientBoostingRegressor
    from sklearn.linear_model import LinearRegression, LogisticRegression

    from autopdp.report.context import outcome_label

    rng = np.random.default_rng(11)
    X = pd.DataFrame({"a": rng.normal(size=500), "b": rng.normal(size=500), "c": rng.uniform(size=500)})
    if kind == "classifier":
        y = (X.a * X.b + X.c + rng.logistic(size=500) > 0.5).astype(int).rename("y")
        model = LogisticRegression().fit(X.assign(ab=X.a * X.b), y)
        model = _Interacting(model)
        link, response = "log-odds", "P(y = 1)"
    elif kind == "log-link regressor":
        y = pd.Series(rng.poisson(np.exp(0.5 * X.a + 0.5 * X.a * X.b)), name="y").astype(float)
        model = HistGradientBoostingRegressor(loss="poisson", max_iter=40, random_state=0).fit(X, y)
        link, response = "log", "predicted y"
    else:
        y = (X.a + X.a * X.b + rng.normal(size=500)).rename("y")
        model = HistGradientBoostingRegressor(max_iter=40, random_state=0).fit(X, y)
        link, response = None, "predicted y"
    a = audit(model, X, y, config=AuditConfig(grid_resolution=8, grid_resolution_2d=5, noise_draws=50))
    checked = 0
    for feats, by in a.utility_scores.items():
        for uid, s in by.items():
            if not s.available or len(feats) != 1:
                continue
            text = finding_sentence(feats, uid, s, outcome=outcome_label(a, s.target))
            scale = str((s.details or {}).get("scale") or "").split(" (")[0]
            if uid == "ice_variance" and (s.details or {}).get("centering", "mean") != "none":
                assert f"on the {scale or 'prediction'} scale" in text, text
                if link is not None:
                    assert scale == link, (uid, scale)
            elif uid in ("monotonicity", "lipschitz", "incidence", "slope"):
                assert response in text, text
            checked += 1
    for feats, e in a.evidence["interaction"].items():
        text = finding_sentence(feats, "interaction", None, criteria={"interaction": e.value},
                                outcome=response, evidence=e)
        scale = e.details["scale"].split(" (")[0]
        if link is None:
            assert scale == "prediction" and f"on {response})" in text, text
        else:
            assert scale == link and (f"on the {link} scale of {response}, from the {e.details['link_rows']:,} "
                                      "sampled rows' ICE surfaces)") in text, text
        checked += 1
    assert checked >= 12


class _Interacting:
    """A logistic regression on a, b, c and a x b, as a model of a, b, c (a glass box with a log-odds interaction)."""

    def __init__(self, inner):
        self.inner = inner
        self.classes_ = inner.classes_
        self.n_features_in_ = 3
        self.feature_names_in_ = np.array(["a", "b", "c"], dtype=object)

    def _design(self, X):
        X = pd.DataFrame(np.asarray(X, dtype=float), columns=["a", "b", "c"])
        return X.assign(ab=X.a * X.b)

    def predict_proba(self, X):
        return self.inner.predict_proba(self._design(X))

    def decision_function(self, X):
        return self.inner.decision_function(self._design(X))

    def predict(self, X):
        return self.inner.predict(self._design(X))


def test_a_pair_specific_to_this_fit_is_named_as_two_features():
    from autopdp.report.findings import robustness_sentence

    refits = SimpleNamespace(assessed=True, fitted=5, reason="")
    e = SimpleNamespace(criterion="interaction", robust=False, robust_adjusted_p=0.4, stability=0.2, value=0.3,
                        statistic="Greenwell interaction", robust_why="", details={"learner": {"value": 0.01,
                                                                                             "threshold": 0.1}})
    pair = robustness_sentence(e, refits, "a and b")
    assert pair.startswith("The interaction finding is specific to this fit") and "drop a and b if they should" in pair
    one = robustness_sentence(e, refits, "a")
    assert "drop a if it should not matter" in one


def test_the_gate_tests_the_similarity_shape_gap_it_reports():
    """The gate's minimum-effect test of max_similarity draws the same statistic as the score, the shape gap.  A
    champion that shifts every prediction by 3 and reshapes x3: with the limit at 0.8 x the observed shape gap, the
    shape is clearly above it and the check fails with confidence.  Before, the draws were of the total gap (shift
    included, over 3 x the shape here) while the observed value was the shape's, so it passed as "within noise";
    a champion that only shifts passes (observed 0)."""
    from autopdp import gate

    rng = np.random.default_rng(4)
    U = pd.DataFrame(rng.uniform(size=(400, 3)), columns=["x1", "x2", "x3"])

    def model(d):
        d = np.asarray(d, dtype=float)
        return np.sin(3 * d[:, 0]) + d[:, 1] ** 2 + d[:, 2]

    def shifted(d):
        return model(d) + 0.7

    def champion(d):
        d = np.asarray(d, dtype=float)
        return np.sin(3 * d[:, 0]) + d[:, 1] ** 2 + (1 - d[:, 2]) ** 3 + 3.0

    cfg = AuditConfig(grid_resolution=9, pairs=False, noise_draws=100)
    a = audit(model, U, compare={"champion": champion}, config=cfg)
    s = a.score(("x3",), "similarity:champion")
    assert s.details["total_gap"] > 3 * s.value  # the shift dominates the total gap
    verdict = gate(a, {"features": {"x3": {"max_similarity": 0.8 * s.value}}})
    (c,) = [c for c in verdict.checks if c.check == "similarity"]
    assert c.measured == pytest.approx(s.value)
    assert not c.passed and c.proof["significant"] and c.proof["p_value"] < 0.05, (c.message, c.proof)
    a = audit(model, U, compare={"champion": shifted}, config=cfg)
    verdict = gate(a, {"champion": {"max_similarity": 0.02}})
    assert all(c.passed for c in verdict.checks if c.check == "similarity")


def test_a_share_beside_its_bound_is_never_rounded_onto_it():
    from autopdp.utils.formatting import share

    assert share(0.502, 0.1, 0.5) == "50.2%"  # before: "50% (above 50%)"
    assert share(0.4996, 0.1, 0.5) == "49.96%"
    assert share(0.5, 0.1, 0.5) == "50%" and share(0.24, 0.1, 0.5) == "24%" and share(0.104, 0.1, 0.5) == "10.4%"


def test_slope_evidence_gives_every_number_on_one_scale_and_the_pair_importance_names_its_scale(tree_audit):
    """The slope's evidence line: slope, threshold and noise level all per grid range, the change beside the first
    two (before: a noise level per range beside a threshold on the change).  The pair importance names its scale."""
    from autopdp.report.findings import evidence_text

    model, X = tree_audit
    tree_audit = audit(model, X, X.a + 0.5 * X.b, config=AuditConfig(grid_resolution=10, noise_draws=50))
    e = tree_audit.evidence["slope"][("a",)]
    assert e.passed
    d = e.details
    text = evidence_text(e)
    assert text.startswith(f"slope {fmt(e.value)} per grid range (a change of {fmt(abs(d['change']))} across the "
                           f"interval), threshold {fmt(e.threshold)} per grid range (a change of "
                           f"{fmt(d['change_threshold'])})"), text
    assert f"noise level {fmt(e.noise_level)} per grid range" in text
    # threshold on the slope's scale = the change threshold over the interval's share of the grid range
    assert e.threshold * abs(d["change"]) / e.value == pytest.approx(d["change_threshold"], rel=1e-9)
    s = tree_audit.score(("a",), "slope")
    sentence = finding_sentence(("a",), "slope", s, outcome="predicted y")
    assert "over the whole grid its highest and lowest values differ by" in sentence
    curve = tree_audit.pd(("a",)).average[0]
    assert f"differ by {fmt(curve.max() - curve.min())}" in sentence
    assert f"({fmt(abs(s.details['per_unit']))} per unit of a" in sentence  # the verb carries the sign
    pair = finding_sentence(("a", "b"), "importance", None, criteria={"importance": 0.07}, outcome="P(y = 1)")
    assert "(pair importance 0.07 on P(y = 1): the geometric mean of the two features' importances" in pair


def test_read_through_wording_ood_verdict_intersection_surrogate_and_specific():
    """The read-through of a credit report (issue 52): an OOD share in the caution band names its verdict and is not
    called extrapolation; a pair's intersection sentence says its surrogate-importance finding counted with
    importance; the surrogate's pair importance names its scale."""
    from autopdp.report.findings import finding_sentence

    caution = finding_sentence(("f",), "ood_share", SimpleNamespace(value=0.38, details={}, target=None,
                                                                     comparison=None, available=True))
    assert "38% of the rows behind this PD are out of distribution in f, verdict caution (ok up to 10%" in caution
    assert "extrapolation" not in caution
    mostly = finding_sentence(("f",), "ood_share", SimpleNamespace(value=0.56, details={}, target=None,
                                                                    comparison=None, available=True))
    assert "verdict mostly unrealistic" in mostly and mostly.endswith("read it as extrapolation.")
    e = SimpleNamespace(passed=True, details={"criteria": ["importance", "interaction"],
                                              "with_importance": ["surrogate_importance"]})
    text = finding_sentence(("a", "b"), "intersection", None, criteria={"importance": 0.1, "interaction": 0.2,
                                                                        "intersection": 0.9}, evidence=e)
    assert "a finding under 2 criteria at once (importance 0.1 and interaction 0.2; its surrogate_importance " \
           "finding, another reading of importance, counted with it)" in text
    sur = finding_sentence(("a", "b"), "surrogate_importance", None, criteria={"surrogate_importance": 0.0788},
                           outcome="P(y = 1)")
    assert "(pair importance 0.0788 on that scale: the geometric mean of the two features' importances" in sur
    assert "additive surrogate of P(y = 1)" in sur


def test_a_one_class_pair_importance_sentence_names_the_class_probability():
    """The demo's read: "pair importance 0.0796 on the model's prediction" for a classifier, whose PDs are of
    P(bad_credit = 1).  With one target the pair importance names that outcome."""
    from sklearn.linear_model import LogisticRegression

    from autopdp.report.context import findings_context

    rng = np.random.default_rng(3)
    X = pd.DataFrame({"a": rng.normal(size=500), "b": rng.normal(size=500)})
    y = (X.a + X.b + rng.logistic(size=500) > 0).astype(int).rename("y")
    a = audit(LogisticRegression().fit(X, y), X, y, config=AuditConfig(noise_draws=50, grid_resolution=8,
                                                                       grid_resolution_2d=5))
    pairs = [f["sentence"] for f in findings_context(a) if f["kind"] == "2d" and "pair importance" in f["sentence"]]
    assert pairs and all("on P(y = 1): the geometric mean" in s for s in pairs), pairs

"""Issue 23: every sentence of the report true on every model (multiclass, mixed paths, pairs, slopes, compare)."""

import re
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from autopdp import audit
from autopdp.utils.formatting import fmt
from autopdp.config import AuditConfig
from autopdp.report.compare import comparison_context
from autopdp.report.context import TRUST_GAP_CAUTION, _findings, build_context, outcome_label, trust_text
from autopdp.report.overview import cautions as _cautions
from autopdp.report.findings import UTILITY_DEFINITIONS, evidence_text, finding_sentence
from autopdp.scores.selection import curate
from autopdp.findings.significance import Evidence
from autopdp.scores.utilities.base import UtilityScore
from autopdp.trust.ood import OOD_MOSTLY, OOD_OK


# ------------------------------------------------------------------ 1. a 3-class model names its classes
@pytest.fixture(scope="module")
def wine():
    from sklearn.datasets import load_wine
    from sklearn.ensemble import RandomForestClassifier

    d = load_wine(as_frame=True)
    X = d.data[["alcohol", "flavanoids", "color_intensity", "proline", "hue", "od280/od315_of_diluted_wines"]]
    y = d.target.rename("cultivar")
    model = RandomForestClassifier(n_estimators=30, random_state=0).fit(X, y)
    a = audit(model, X, y, config=AuditConfig(pairs=[("flavanoids", "proline"), ("alcohol", "proline")],
                                              utilities=("monotonicity", "incidence", "slope", "stratpd",
                                                         "ale_divergence", "ood_share")), n_jobs=1)
    return a, build_context(a)


def test_multiclass_summary_names_every_class_and_each_finding_its_own(wine):
    a, ctx = wine
    for c in (0, 1, 2):
        assert f"P(cultivar = {c})" in ctx["outcome"]
    assert ctx["findings"], "the wine model has findings"
    for sel, f in zip(a.selection, ctx["findings"]):
        criterion = sel.reasons[0][0]
        if sel.kind == "1d":
            target = a.score(sel.features, criterion).target
            assert f"cultivar = {target}" in f["sentence"], f["sentence"]
        elif criterion in ("interaction", "importance"):
            assert "class" in f["sentence"] or "cultivar = " in f["sentence"], f["sentence"]
    # the importance chart is the largest across the classes, and says so; tables name each class
    assert "largest across classes 0, 1, 2" in ctx["importance_svg"]
    assert ctx["importance_table"]["columns"] == ["rank", *(f"P(cultivar = {c})" for c in (0, 1, 2)), "finding?",
                                                  "held-out permutation importance (log-loss increase, 95% interval)",
                                                  "the data show it?"]
    assert all("P(cultivar = " in s["caption"] for s in ctx["small_multiples"])


def test_intersection_findings_are_not_called_untested(wine):
    a, ctx = wine
    found = [e for e in a.evidence.get("intersection", {}).values() if e.passed]
    assert found and not any(e.untested for e in found)
    assert not any(u.startswith("intersection") for u in ctx["untested"])


def test_trust_gap_rule_is_one_threshold_shown_beside_the_verdict(wine):
    a, _ = wine
    sds = a.metadata["prediction_std"]
    for r in a.results_1d:
        text = trust_text(a, r.features)
        s = a.score(r.features, "stratpd")
        if not s.available:
            continue
        assert f"caution ≥ {TRUST_GAP_CAUTION:g}" in text
        ratio = s.value / sds[r.target_index(s.target)]
        assert ("StratPD gap large" in text) == (ratio >= TRUST_GAP_CAUTION), text


# ------------------------------------------------------------------ 2. notes true per PD on a mixed-path pipeline
def test_mixed_path_pipeline_notes_are_true_per_pd():
    from sklearn.compose import make_column_transformer
    from sklearn.ensemble import GradientBoostingRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(0)
    n = 600
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n),
                      "color": rng.choice(["red", "green", "blue"], n)})
    y = 2 * X["a"] + np.sin(3 * X["b"]) + (X["color"] == "red") * 1.5 + rng.normal(0, 0.3, n)
    pre = make_column_transformer((OneHotEncoder(), ["color"]), remainder="passthrough")
    model = make_pipeline(pre, GradientBoostingRegressor(n_estimators=30, random_state=0)).fit(X, y)
    a = audit(model, X, y, config=AuditConfig(pairs=True, utilities=("slope",)), n_jobs=1)
    methods = {" × ".join(r.features): r.method for r in a.results}
    assert set(methods.values()) == {"tree", "brute"}  # a mixed run
    assert not any("Every 1D and 2D PD" in n for n in a.notes)
    covered = set()
    for note in a.notes:
        m = re.match(r"(?:The|\d+ of the \d+) [12]D PDs? \((.*?)\) computed (exactly by the tree path|by brute force)",
                     note)
        if not m:
            continue
        method = "tree" if m.group(2).startswith("exactly") else "brute"
        for name in m.group(1).split(", "):
            assert methods[name] == method, (name, note)
            covered.add(name)
        if method == "brute":
            assert "does not reach the trees as one column" in note
    assert covered == set(methods)


# ------------------------------------------------------------------ 3. one sentence per criterion; ranks only as reasons
def test_surrogate_only_pair_reads_as_a_surrogate_finding():
    crit = {"surrogate_importance": 0.31, "intersection": 0.2, "importance": 0.01, "correlation": 0.1}
    s = finding_sentence(("a", "b"), "surrogate_importance", None, criteria=crit)
    assert "additive surrogate" in s and "0.31" in s and "several criteria" not in s


def _ev(criterion, features, passed, why="", **details):
    return Evidence(criterion, features, 1.0, 0.001 if passed else 0.5, 0.001 if passed else 0.5, np.nan, 0.1,
                    passed, passed, why, details=details)


def test_intersection_sentence_lists_the_criteria_found_and_evidence_has_clean_punctuation():
    e = _ev("intersection", ("a", "b"), True, why="a finding under 2 criteria at once (correlation, importance).",
            criteria=["correlation", "importance"])
    s = finding_sentence(("a", "b"), "intersection", None, criteria={"intersection": 0.9}, evidence=e)
    assert "2 criteria at once (correlation and importance); mean percentile 0.9" in s
    s = finding_sentence(("a", "b"), "intersection", None, criteria={"intersection": 0.9, "correlation": 0.41,
                                                                     "importance": 0.123}, evidence=e)
    assert "2 criteria at once (correlation 0.41 and importance 0.123)" in s
    joined = "; ".join(evidence_text(x) for x in (e, _ev("importance", ("a", "b"), True)))
    assert ".;" not in joined and not joined.endswith(".")


def test_ranks_are_shown_only_when_they_are_the_selections_reason():
    pairs = [(f"f{i}", f"g{i}") for i in range(120)]
    scores = pd.DataFrame({"features": pairs, "kind": "2d", "intersection": np.linspace(1, 0, 120),
                           "interaction": np.linspace(1, 0, 120)})
    # intersection: only the 104th pair is a finding; interaction: the first two are
    evidence = {"intersection": {p: _ev("intersection", p, i == 103) for i, p in enumerate(pairs)},
                "interaction": {p: _ev("interaction", p, i in (0, 1)) for i, p in enumerate(pairs)}}
    sel = curate(scores, {"intersection": "desc", "interaction": "desc"}, top_k=3, evidence=evidence)
    text = {s.features: s.reason_text for s in sel}
    assert text[pairs[103]] == "intersection (finding #1)"
    assert text[pairs[0]] == "interaction #1" and text[pairs[1]] == "interaction #2"
    assert "#104" not in " ".join(text.values())


# ------------------------------------------------------------------ 4. the slope in the feature's units
def test_diabetes_slope_is_stated_in_units_with_materiality_on_the_change():
    from sklearn.datasets import load_diabetes
    from sklearn.ensemble import GradientBoostingRegressor

    d = load_diabetes(as_frame=True)
    X, y = d.data, d.target.rename("progression")
    model = GradientBoostingRegressor(random_state=0).fit(X, y)
    a = audit(model, X, y, config=AuditConfig(pairs=False, utilities=("slope",)), n_jobs=1)
    s = a.score("bmi", "slope")
    r = a.pd("bmi")
    sd = a.metadata["prediction_std"][0]
    text = finding_sentence(("bmi",), "slope", s, scale=sd, outcome=outcome_label(a, s.target))
    dd = s.details
    lo, hi = dd["between"]
    f = np.asarray(r.average[0])
    assert abs(dd["change"]) <= np.ptp(f) + 1e-9  # never more than the whole PD moves
    assert np.isclose(dd["per_unit"], dd["change"] / (hi - lo))
    assert "per full feature range" not in text and "per unit of bmi" in text
    assert f"between {fmt(lo)} and {fmt(hi)}" in text and fmt(abs(dd["change"])) in text
    assert ("rises" in text) == (dd["change"] > 0)
    e = a.evidence["slope"][("bmi",)]
    # material from twice the threshold: the least step that makes a feature an importance finding (issue 53)
    assert e.material == (abs(dd["change"]) >= 2 * a.config.materiality * sd)
    assert np.isclose(e.threshold, 2 * a.config.materiality * sd / dd["share_of_range"])
    assert np.isclose(e.details["change_threshold"], 2 * a.config.materiality * sd)


def test_linear_pd_is_described_as_linear():
    rng = np.random.default_rng(1)
    X = pd.DataFrame({"x": rng.uniform(40, 70, 500), "z": rng.normal(size=500)})
    a = audit(lambda d: 0.5 * d["x"].to_numpy() + d["z"].to_numpy(), X,
              config=AuditConfig(pairs=False, utilities=("slope",)), n_jobs=1)
    s = a.score("x", "slope")
    assert s.details["linear"] is True
    text = finding_sentence(("x",), "slope", s, scale=a.metadata["prediction_std"][0], outcome="predicted y")
    assert "is linear in x" in text and "steepest" not in text and "per unit of x" in text
    assert fmt(0.5) in text
    grid = a.pd("x").grid[0]
    assert s.details["between"] == [grid[0], grid[-1]]


# ------------------------------------------------------------------ 5. the compare caption's largest gap
def test_compare_caption_gives_the_largest_pointwise_gap():
    rng = np.random.default_rng(2)
    X = pd.DataFrame({"x": rng.uniform(0, 1, 400), "z": rng.uniform(0, 1, 400)})

    def base(d):
        return d["x"].to_numpy() + 0.1 * d["z"].to_numpy()

    def other(d):  # a narrow bump: a small average gap, a large gap at one grid value
        x = d["x"].to_numpy()
        return base(d) + 0.5 * np.exp(-((x - 0.5) / 0.02) ** 2)

    a = audit(base, X, compare={"bump": other}, config=AuditConfig(pairs=False, utilities=("similarity",)),
              n_jobs=1)
    ctx = comparison_context(a)
    r = a.pd("x")
    o = next(c for c in a.comparisons["bump"] if c.features == ("x",))
    # the pointwise gap of the shapes: the difference less its level (the models' level difference, stated once)
    level = a.score("x", "similarity:bump").details["level_shift"]
    largest = float(np.max(np.abs(np.asarray(r.average[0]) - np.asarray(o.average[0]) - level)))
    cap = next(f["caption"] for f in ctx["figures"] if f["caption"].startswith("x:"))
    assert f"largest pointwise gap {fmt(largest)}" in cap, cap
    assert largest > 2 * a.score("x", "similarity:bump").details["shape_gap"]


# ------------------------------------------------------------------ 6-7. incidence names the class; OOD text
@pytest.mark.parametrize("kind", ["calibration", "dependence", ""])
def test_incidence_sentences_name_the_class(kind):
    s = UtilityScore("incidence", 0.2, target=2, details={"what": "share of class"})
    ev = SimpleNamespace(kind=kind, value=0.2) if kind else None
    text = finding_sentence(("hue",), "incidence", s, scale=0.4, outcome="P(cultivar = 2)", evidence=ev)
    assert "cultivar = 2" in text


def test_ood_definition_and_cautions_follow_the_measure():
    text = UTILITY_DEFINITIONS["ood_share"]
    assert "k-nearest" not in text and f"{OOD_OK:.0%}" in text and f"{OOD_MOSTLY:.0%}" in text
    scores = pd.DataFrame({"features": [("a",), ("b",), ("c",)], "kind": "1d",
                           "ood_share": [OOD_MOSTLY - 0.01, OOD_MOSTLY + 0.01, OOD_MOSTLY]})
    out = _cautions(SimpleNamespace(scores=scores))
    assert len(out) == 1 and out[0].startswith("b: ") and "out of distribution" in out[0]


# ------------------------------------------------------------------ issue 30: no "0 (0 ...)", no "p = <= ..."
_ZERO_SCALED = re.compile(r"(?<![\d.])0 \(0[ .;)]|\(0 pred|\(0 prediction")
_DETAILS = {
    "monotonicity": [{"direction": "increasing"}, {"direction": "increasing", "declared": True}],
    "lipschitz": [{"bound": [0.5]}],
    "incidence": [{"what": "observed rate"}],
    "similarity:other": [{"level_shift": 0.0, "shape_gap": 0.0}, {}],
    "slope": [{"change": 0.0, "between": [0.0, 1.0], "per_unit": 0.0, "linear": True}, {}],
    "stratpd": [{}], "ale_divergence": [{}], "ood_share": [{}],
    "ice_variance": [{"centering": "mean", "scale": "prediction"}, {"centering": "none"}],
}


@pytest.mark.parametrize("uid", sorted(_DETAILS))
def test_no_sentence_says_zero_twice(uid):
    """Every 1D criterion's sentence with a score of exactly 0 (the prediction sd known): the zero is not followed
    by '(0 prediction standard deviations)'; every pair criterion's too."""
    for details in _DETAILS[uid]:
        for ev in (None, SimpleNamespace(kind="", value=0.0, passed=False)):
            s = UtilityScore(uid, 0.0, target=1, details=dict(details))
            text = finding_sentence(("x",), uid, s, scale=0.3, outcome="P(y = 1)", evidence=ev)
            assert not _ZERO_SCALED.search(text), text
    assert {u.split(":")[0] for u in _DETAILS} >= set(UTILITY_DEFINITIONS)


def test_outside_grid_and_trust_cells_say_zero_once():
    from autopdp.scores.coverage import OutsideGrid

    flat = OutsideGrid("exper", "below", 0.05, 2.047, 1.11, 0.4, 0.4, False, scale=0.3)
    assert flat.text.endswith("the PD there (at their median 1.11) equals its value at 2.047."), flat.text
    moved = OutsideGrid("exper", "below", 0.05, 2.047, 1.11, 0.4, 0.41, False, scale=0.3)
    assert "stays within 0.01 (0.033 prediction standard deviations)" in moved.text
    scores = {("x",): {"ale_divergence": UtilityScore("ale_divergence", 0.0, target=1)}}
    a = SimpleNamespace(utility_scores=scores, metadata={"prediction_std": [0.3]}, targets=[1],
                        pd=lambda f: SimpleNamespace(targets=[1], target_index=lambda t: 0))
    text = trust_text(a, ("x",))
    assert "ALE gap 0 (caution" in text and not _ZERO_SCALED.search(text), text


def test_p_values_at_the_floor_read_once():
    from autopdp.config import AuditConfig
    from autopdp.findings.words import why_sentence

    cfg = AuditConfig()
    for p, adjusted in ((1e-6, 1e-6), (1e-9, 3e-6), (0.004, 0.02)):
        for material in (True, False):
            e = SimpleNamespace(statistic="gap", criterion="monotonicity", value=0.2, threshold=0.01 if material else 0,
                                material=True, p_value=p, noise_level=0.01, test="a test")
            for significant in (True, False):
                text = why_sentence(e, adjusted, significant, cfg)
                assert "= <" not in text and ("p <= 1e-06" in text or f"p = {p:g}" in text), text


def test_pair_captions_give_their_numbers_once():
    ev = SimpleNamespace(passed=True, details={"criteria": ["importance", "interaction"]}, value=0.93,
                         criterion="intersection", why="a finding under 2 criteria at once (importance, interaction).")
    crit = {"importance": 0.18, "interaction": 0.052, "intersection": 0.93, "correlation": 0.1}
    text = finding_sentence(("a", "b"), "intersection", None, criteria=crit, evidence=ev)
    assert "importance 0.18 and interaction 0.052" in text and "0.93" in text, text
    proof = evidence_text(ev)
    assert "at once" not in proof and "0.93" in proof

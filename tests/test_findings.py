"""Findings a validator can trust: each criterion measures what its name says (known answers)."""

import numpy as np
import pandas as pd
import pytest

import autopdp
from autopdp import AuditConfig
from autopdp import audit


@pytest.fixture(scope="module")
def U():
    rng = np.random.default_rng(7)
    return pd.DataFrame(rng.uniform(-1, 1, size=(800, 4)), columns=["a", "b", "c", "d"])


def _by_feature(a, col):
    one = a.scores[a.scores["kind"] == "1d"]
    return dict(zip(one["features"].map(lambda t: t[0]), one[col]))


# ------------------------------------------------------------------ ICE variance on centred curves
def test_centred_ice_variance_is_zero_for_additive_and_unused_features(U):
    def additive(d):
        return 5 * d["a"].to_numpy() + np.sin(3 * d["b"].to_numpy()) + d["c"].to_numpy() ** 2  # d unused

    a = audit(additive, U, config=AuditConfig(pairs=False))
    ice = _by_feature(a, "ice_variance")
    assert max(ice.values()) < 1e-12
    # the paper's uncentred eq. 12 reads the level spread caused by the other features instead
    raw = audit(additive, U, config=AuditConfig(pairs=False, ice_variance_centering="none"))
    pred_sd = additive(U).std()
    assert _by_feature(raw, "ice_variance")["d"] == pytest.approx(pred_sd, rel=0, abs=1e-12)


def test_centred_ice_variance_of_a_product_is_sd_times_weighted_grid_sd(U):
    def model(d):
        return d["a"].to_numpy() * d["b"].to_numpy() + 2 * d["c"].to_numpy()

    a = audit(model, U, config=AuditConfig(pairs=False, subsample=None))
    r = a.pd("a")
    w = r.counts / r.counts.sum()
    grid = np.asarray(r.grid[0], dtype=float)
    grid_sd = np.sqrt(np.sum(w * (grid - np.sum(w * grid)) ** 2))
    # ICE_r(a) = a * b_r + const_r: centred curves differ only by b_r * (a - mean_w a)
    expected = U["b"].std(ddof=0) * grid_sd
    assert a.score("a", "ice_variance").value == pytest.approx(expected, rel=0, abs=1e-12)
    assert a.score("c", "ice_variance").value < 1e-12
    # 'first' anchoring: variance of b_r * (a_j - a_0), weighted over the grid
    first = audit(model, U, config=AuditConfig(pairs=False, subsample=None, ice_variance_centering="first"))
    expected_first = U["b"].std(ddof=0) * np.sqrt(np.sum(w * (grid - grid[0]) ** 2))
    assert first.score("a", "ice_variance").value == pytest.approx(expected_first, rel=0, abs=1e-12)


def test_bad_centering_is_a_clear_config_error():
    with pytest.raises(ValueError, match="ice_variance_centering"):
        AuditConfig(ice_variance_centering="median")


# ------------------------------------------------------------------ Lipschitz relative to the PD's own slope
def test_a_straight_line_is_never_abrupt_but_a_step_is(U):
    def model(d):
        # a dominates the variance (a straight line), c is a small step, b a gentle curve
        return 50 * d["a"].to_numpy() + 0.5 * (d["c"].to_numpy() > 0.1) + 0.2 * d["b"].to_numpy() ** 2

    a = audit(model, U, config=AuditConfig(pairs=False))
    lip = _by_feature(a, "lipschitz")
    assert lip["a"] == 0.0 and lip["d"] == 0.0
    assert lip["c"] > 0.05
    assert a.ranking("lipschitz")["features"].iloc[0] == ("c",)
    s = a.score("a", "lipschitz")
    r = a.pd("a")
    f = r.average[0]
    span = float(r.grid[0][-1] - r.grid[0][0])
    assert s.details["bound"][0] == pytest.approx(3.0 * (f.max() - f.min()) / span, rel=0, abs=1e-12)


# ------------------------------------------------------------------ noise floor and materiality
def _planted_data(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(rng.uniform(-1, 1, size=(n, 7)),
                        columns=["bump", "line", "step", "p1", "p2", "unused", "indep"])


def _planted(d):
    return (np.exp(-(d["bump"].to_numpy() ** 2) / 0.4) + d["line"].to_numpy() + 0.8 * (d["step"].to_numpy() > 0.2)
            + 1.2 * d["p1"].to_numpy() * d["p2"].to_numpy() + 0.3 * d["indep"].to_numpy())


@pytest.fixture(scope="module")
def planted():
    return audit(_planted, _planted_data())


def _selected(a, criterion):
    return {s.features for s in a.selection if criterion in dict(s.reasons)}


def _passed(a, criterion):
    return {k for k, e in a.evidence[criterion].items() if e.passed}


def test_planted_effects_are_the_findings(planted):
    a = planted
    assert _passed(a, "monotonicity") == {("bump",)}
    assert _passed(a, "lipschitz") == {("step",)}
    assert _passed(a, "ice_variance") == {("p1",), ("p2",)}
    assert _passed(a, "interaction") == {("p1", "p2")}
    assert _passed(a, "correlation") == set()  # independent features
    mains = ["bump", "line", "step", "indep"]
    assert _passed(a, "importance") == {tuple(p) for p in pd.Series(
        [(x, y) for i, x in enumerate(mains) for y in mains[i + 1:]]).map(tuple)}
    # the selection takes the top_k of what passed, and nothing under a criterion without findings
    assert _selected(a, "monotonicity") == {("bump",)}
    assert _selected(a, "lipschitz") == {("step",)}
    assert _selected(a, "correlation") == set()
    # every selected item carries its evidence: score, p-value, materiality threshold and why
    for s in a.selection:
        for crit, _ in s.reasons:
            e = s.evidence_for(crit)
            assert e is not None and e.passed and e.features == s.features
            if crit != "intersection":
                assert e.value >= e.threshold and e.adjusted_p <= a.config.significance and "material" in e.why
    # rankings still list every PDP
    assert len(a.ranking("monotonicity")) == 7
    assert len(a.ranking("correlation")) == 21


def test_materiality_threshold_is_a_fraction_of_the_prediction_sd(planted):
    a = planted
    sd = float(a.metadata["prediction_std"][0])
    assert sd == pytest.approx(_planted(_planted_data()).std(), rel=0, abs=1e-12)
    e = a.evidence["monotonicity"][("bump",)]
    assert e.threshold == pytest.approx(0.05 * sd, rel=0, abs=1e-12)
    flat = a.evidence["monotonicity"][("unused",)]
    assert not flat.material and "not material" in flat.why
    # a stricter materiality removes the bump's finding without touching its score
    strict = audit(_planted, _planted_data(), config=AuditConfig(pairs=False, materiality=0.5))
    assert strict.score("bump", "monotonicity").value == pytest.approx(a.score("bump", "monotonicity").value, rel=0, abs=1e-12)
    assert _passed(strict, "monotonicity") == set()


def test_noise_is_not_a_finding_incidence_of_a_correct_model():
    X = _planted_data(n=3000, seed=1)
    rng = np.random.default_rng(3)
    y = _planted(X) + rng.normal(0, 0.3, len(X))  # the model is the truth: every incidence gap is sampling noise
    a = audit(_planted, X, y, config=AuditConfig(pairs=False, materiality=0.0))
    inc = a.evidence["incidence"]
    assert all(np.isfinite(e.p_value) for e in inc.values())
    assert _passed(a, "incidence") == set()
    assert all(e.material for e in inc.values())  # materiality 0: only the noise test stands between


def test_monte_carlo_p_value_and_adjustments():
    from autopdp.findings.significance import adjust_p_values, monte_carlo_p

    null = np.linspace(0.0, 1.0, 199)
    assert monte_carlo_p(0.5, null) == pytest.approx((1 + 100) / 200, rel=0, abs=1e-12)
    assert monte_carlo_p(0.0, null) == 1.0
    # beyond every draw the p-value is what the draws can show, never an extrapolated tail
    p_far = monte_carlo_p(10.0, np.abs(np.random.default_rng(0).standard_normal(500)))
    assert p_far == pytest.approx(1 / 501, rel=0, abs=1e-15)
    p = np.array([0.01, 0.04, 0.03, 0.5])
    # Benjamini-Hochberg by hand: p_(i) * m / i, made monotone from the top
    np.testing.assert_allclose(adjust_p_values(p, "bh"), [0.04, 0.04 * 4 / 3, 0.04 * 4 / 3, 0.5], rtol=0, atol=1e-12)
    np.testing.assert_allclose(adjust_p_values(p, "holm"), [0.04, 0.09, 0.09, 0.5], rtol=0, atol=1e-12)


def test_sequential_p_value_is_valid_and_stops_at_ten_exceedances():
    from autopdp.findings.significance import sequential_p

    rng = np.random.default_rng(0)

    def draw(n):
        return rng.standard_normal(n)

    # an observed value at the null's 30% upper point: stops early with p = 10 / L close to 0.3
    r = sequential_p(stats_norm_isf(0.3), draw, first=200, most=5000)
    assert r.draws < 200 and abs(r.p_value - 0.3) < 0.2
    # far in the tail: every draw is used and p = 1 / (1 + draws), never smaller
    r = sequential_p(10.0, draw, first=200, most=5000)
    assert r.draws == 5000 and r.p_value == pytest.approx(1 / 5001, rel=0, abs=1e-15)
    # floating-point zero is not tested
    assert sequential_p(0.0, draw, first=200, most=5000, tol=1e-12).p_value == 1.0
    # validity: under the null P(p <= a) <= a for the levels that matter
    ps = np.array([sequential_p(float(rng.standard_normal()), draw, first=50, most=400).p_value
                   for _ in range(2000)])
    for a in (0.01, 0.05, 0.2):
        assert np.mean(ps <= a) <= a + 3 * np.sqrt(a * (1 - a) / ps.size)


def stats_norm_isf(q):
    from scipy import stats

    return float(stats.norm.isf(q))


def test_association_tests_match_scipy():
    from scipy import stats

    from autopdp.scores.association import association_test

    rng = np.random.default_rng(0)
    a = rng.normal(size=300)
    b = a + rng.normal(size=300)
    v, p = association_test(a, "numeric", b, "numeric")
    assert v == pytest.approx(abs(stats.spearmanr(a, b).statistic), rel=0, abs=1e-12) and p == pytest.approx(stats.spearmanr(a, b).pvalue, rel=0, abs=1e-12)
    c = rng.choice(list("xyz"), 300)
    v, p = association_test(c, "categorical", b, "numeric")
    groups = [b[c == k] for k in "xyz"]
    assert p == pytest.approx(stats.f_oneway(*groups).pvalue, rel=0, abs=1e-12)
    d = rng.choice(list("uv"), 300)
    v, p = association_test(c, "categorical", d, "categorical")
    table = pd.crosstab(c, d).to_numpy()
    assert p == pytest.approx(stats.chi2_contingency(table, correction=False).pvalue, rel=0, abs=1e-12)


def test_association_tests_of_many_pairs_equal_the_pairwise_tests():
    from autopdp.scores.association import association_test, association_tests

    rng = np.random.default_rng(1)
    n = 400
    base = rng.normal(size=n)
    cols = {
        "a": base + rng.normal(size=n),
        "b": np.round(base * 2),  # ties
        "c": rng.normal(size=n),
        "d": np.where(rng.random(n) < 0.1, np.nan, base),  # missing values: pairwise rows
        "k": np.full(n, 3.0),  # constant
        "e": -base,  # perfectly (negatively) associated with part of a
        "g": rng.choice(list("xyz"), n),
        "h": rng.choice(list("uv"), n),
    }
    kinds = {f: ("categorical" if f in "gh" else "numeric") for f in cols}
    pairs = [(x, y) for i, x in enumerate(cols) for y in list(cols)[i + 1:]]
    many = association_tests(cols, kinds, pairs)
    assert set(many) == set(pairs)
    for a, b in pairs:
        one = association_test(cols[a], kinds[a], cols[b], kinds[b])
        np.testing.assert_allclose(many[(a, b)], one, rtol=0, atol=1e-12, err_msg=f"{a}, {b}")
    assert many[("b", "e")][0] > 0.9 and many[("a", "k")] == (0.0, 1.0)



@pytest.mark.parametrize("seed", range(5))
def test_association_tests_read_a_frames_categorical_codes_as_its_values(seed):
    """A frame's categorical columns are read by their codes (unused categories, missing values, integer levels),
    other non-numeric columns (objects, strings, booleans) factorized: the same tests as of the values one by one."""
    from autopdp.pd.data import as_frame
    from autopdp.scores.association import association_test, association_tests

    rng = np.random.default_rng(seed)
    n = int(rng.integers(30, 600))
    x = np.where(rng.random(n) < 0.1, np.nan, rng.normal(size=n))
    df = pd.DataFrame({
        "c": pd.Categorical(rng.choice(["a", "b", "c", None], n), categories=["z", "c", "b", "a"]),
        "i": pd.Categorical(rng.choice([3, 1, 2], n)),
        "o": pd.Series(rng.choice(["x", "y", None], n), dtype=object),
        "s": pd.Series(rng.choice(["p", "q"], n), dtype="string"),
        "b": rng.random(n) > 0.5,
        "x": x,
    })
    frame = as_frame(df)
    kinds = {name: "numeric" if name == "x" else "categorical" for name in df}
    pairs = [(a, b) for k, a in enumerate(df) for b in list(df)[k + 1:]]
    many = association_tests(frame, kinds, pairs)
    for a, b in pairs:
        one = association_test(frame.column(frame.names.index(a)), kinds[a], frame.column(frame.names.index(b)),
                               kinds[b])
        np.testing.assert_allclose(many[(a, b)], one, rtol=1e-12, atol=1e-12, err_msg=f"{a}, {b}")

def test_report_shows_evidence_and_no_finding_wording(planted):
    html = planted.to_html()
    assert "No material finding under: correlation, intersection." in html  # no y: incidence is n/a, not "none"
    assert "No material finding under this criterion" not in html
    strict = audit(_planted, _planted_data(), config=AuditConfig(pairs=False, materiality=0.5))
    assert "No material finding under this criterion" in strict.to_html()
    assert "adjusted p" in html and "noise level" in html
    assert "of its range" not in html
    data = planted.to_dict()
    assert data["selection"][0]["evidence"][0]["passed"] is True
    assert {"monotonicity", "interaction", "correlation"} <= set(data["evidence"])


# ------------------------------------------------------------------ labels
def _income_data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"age": rng.uniform(18, 70, n), "hours": rng.uniform(10, 60, n)})
    y = pd.Series(np.where(X["age"] + rng.normal(0, 10, n) > 45, ">50K", "<=50K"), name="income")
    return X, y


def test_target_values_outside_the_model_classes_are_an_error_naming_both_sets():
    from sklearn.linear_model import LogisticRegression

    X, y = _income_data()
    model = LogisticRegression().fit(X, (y == ">50K").astype(int))
    with pytest.raises(ValueError, match=r"not classes of the model: '<=50K', '>50K'.*classes are 0, 1"):
        audit(model, X, y, config=AuditConfig(pairs=False))


def test_cli_exits_2_on_mismatched_labels(tmp_path, capsys):
    import pickle

    from sklearn.linear_model import LogisticRegression

    from autopdp.cli import main

    X, y = _income_data()
    model = LogisticRegression().fit(X, (y == ">50K").astype(int))
    with open(tmp_path / "m.pkl", "wb") as fh:
        pickle.dump(model, fh)
    X.assign(income=y).to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "c.toml").write_text("pairs = false\n")
    code = main(["report", "--model", str(tmp_path / "m.pkl"), "--allow-pickle", str(tmp_path / "m.pkl"), "--data",
                 str(tmp_path / "d.csv"), "--target", "income", "--config", str(tmp_path / "c.toml"), "--out",
                 str(tmp_path / "out"), "--formats", "json"])
    assert code == 2
    assert "not classes of the model" in capsys.readouterr().err
    assert not (tmp_path / "out" / "report.json").exists()


def test_the_positive_class_and_target_column_are_named():
    from sklearn.linear_model import LogisticRegression

    X, y = _income_data()
    model = LogisticRegression().fit(X, y)
    a = audit(model, X, y, config=AuditConfig(pairs=False))
    assert a.metadata["target_name"] == "income"
    html = a.to_html()
    assert "P(income = &gt;50K)" in html
    assert "class 1" not in html


# ------------------------------------------------------------------ rows outside the grid
def test_rows_outside_the_grid_are_reported_with_the_pd_there():
    rng = np.random.default_rng(5)
    X = pd.DataFrame({"x": rng.uniform(0, 1, 3000), "z": rng.uniform(0, 1, 3000)})

    def model(d):
        return 2.0 * (d["x"].to_numpy() > 0.97) + 0.5 * d["z"].to_numpy()

    a = audit(model, X, config=AuditConfig(pairs=False))
    out = {(o["feature"], o["side"]): o for o in a.metadata["outside_grid"]}
    assert set(out) == {("x", "below"), ("x", "above"), ("z", "below"), ("z", "above")}
    top = float(a.pd("x").grid[0][-1])
    above = out[("x", "above")]
    assert above["share"] == pytest.approx(float((X["x"] > top).mean()), rel=0, abs=1e-12)
    # the median to 4 significant digits (the record carries no row's value to every digit)
    assert above["median"] == float(f"{float(np.median(X['x'][X['x'] > top])):.4g}")
    # the step beyond the grid's top: the PD there is 2 higher than at the top grid value, and that is material
    assert above["pd_beyond"] - above["pd_edge"] == pytest.approx(2.0, abs=1e-9)
    assert above["material"] and not out[("x", "below")]["material"]
    # z is a gentle line: beyond its grid the PD moves by 0.5 * (median - edge), below materiality
    z_above = out[("z", "above")]
    assert z_above["pd_beyond"] - z_above["pd_edge"] == pytest.approx(0.5 * (z_above["median"] - z_above["edge"]), abs=1e-9)
    assert not z_above["material"]
    assert any(n.startswith("x: ") and "above the grid's highest" in n and "material change" in n for n in a.notes)


def test_similarity_finding_is_the_feature_the_challenger_changed():
    X = _planted_data(n=1500, seed=4)

    def challenger(d):
        return _planted(d) - np.exp(-(d["bump"].to_numpy() ** 2) / 0.4)  # learned no bump

    a = audit(_planted, X, compare={"twin": _planted, "challenger": challenger}, config=AuditConfig(pairs=False))
    assert _passed(a, "similarity:twin") == set()
    assert max(e.value for e in a.evidence["similarity:twin"].values()) == 0.0
    # eq. 10 compares the PDs themselves: dropping the bump also shifts every PD by the bump's mean,
    # which the score counts for every feature; the details split level from shape, and only bump's shape differs
    shift = float(np.mean(np.exp(-(X["bump"].to_numpy() ** 2) / 0.4)))
    for f in ["line", "step", "p1", "p2", "unused", "indep"]:
        s = a.score(f, "similarity:challenger")
        assert s.details["level_shift"] == pytest.approx(shift, rel=0, abs=1e-12)
        assert s.details["shape_gap"] < 1e-12
    assert a.score("bump", "similarity:challenger").details["shape_gap"] > 0.1
    assert ("bump",) in _passed(a, "similarity:challenger")
    html = a.to_html()
    assert "a constant shift of" in html and "their shapes differ by" in html
    # the level difference is one line for the model, not a finding of every feature
    level = a.evidence["similarity_level:challenger"][()]
    assert level.details["mean_difference"] == pytest.approx(shift, rel=0, abs=1e-9)
    assert any(n.startswith("Overall level: challenger") for n in a.notes)

"""Issue 31: each refit's PDs are computed on the audit's ICE rows only (all rows when the audit kept every row's
curve), their average the Horvitz-Thompson (Hajek) weighted mean of those rows; the learner-level test adds the
sampling part of that mean to its noise.

Known answers: scikit-learn's own ``partial_dependence`` (brute force, ``sample_weight``) of the same refit, fitted
independently here on the same half-sample with the same seed, on the same rows, grid and weights; and the design
variance of the Horvitz-Thompson mean measured over many redrawn samples.
"""

import sys
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.inspection import partial_dependence as sk_partial_dependence

import autopdp
from autopdp import AuditConfig
from autopdp.pd.refits import _seeded, ht_weights, train_rows
from autopdp.pd.sampling import ice_design
from autopdp.findings.robustness import _sampling_factor


def _data(rng, n):
    X = pd.DataFrame(rng.uniform(-1, 1, size=(n, 4)), columns=["a", "b", "c", "d"])
    eta = 1.5 * X["a"] - X["b"] ** 2 + X["c"] * X["d"]
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(int)
    return X, y.to_numpy()


@pytest.fixture(scope="module")
def captured():
    """An audit with weights, 1D ICE on a sample (subsample 150 of 500 rows) and 2D ICE on 64 rows; the refits
    the learner-level test received."""
    import autopdp.auditing.late_stages as audit_module  # where the audit calls learner_level

    rng = np.random.default_rng(5)
    Xt, yt = _data(rng, 800)
    Xa, ya = _data(rng, 500)
    w = rng.lognormal(0.0, 1.0, size=500)
    w[:3] = 60.0  # heavy rows: the ICE sample keeps them with certainty
    model = HistGradientBoostingClassifier(max_iter=20, random_state=0).fit(Xt, yt)
    cfg = AuditConfig(refits=3, subsample=150, std_rows=64, grid_resolution=6, grid_resolution_2d=4,
                      pairs=(("c", "d"),), utilities=("monotonicity", "slope", "ice_variance"))
    seen = {}
    original = audit_module.learner_level

    def spy(inputs, results, refits):
        seen["refits"], seen["results"] = refits, results
        return original(inputs, results, refits)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        audit_module.learner_level = spy
        try:
            a = autopdp.audit(model, Xa, ya, train=(Xt, yt), config=cfg, sample_weight=w, progress=False)
        finally:
            audit_module.learner_level = original
    return a, seen, model, (Xt, yt, Xa, w)


def test_a_refits_pd_is_sklearns_weighted_pd_on_the_audits_ice_rows(captured):
    a, seen, model, (Xt, yt, Xa, w) = captured
    refits, results = seen["refits"], seen["results"]
    assert refits.assessed and refits.fitted == 3
    rows, seeds = train_rows(len(Xt), 3, 0)
    checked = 0
    for j in (0, 2):
        fitted = _seeded(clone(model), seeds[j]).fit(Xt.iloc[rows[j]], yt[rows[j]])
        for r, rr in zip(results, (*refits.pds[j].res1, *refits.pds[j].res2)):
            assert r.ice_rows is not None and len(r.ice_rows) < len(Xa)  # the audit kept a sample of rows
            np.testing.assert_array_equal(rr.ice_rows, r.ice_rows)
            design = ice_design(r, w)
            h = ht_weights(design)
            assert np.all(h[np.isin(r.ice_rows, [0, 1, 2])] == 60.0)  # kept with certainty: weight over pi = 1
            cols = list(r.features)
            sk = sk_partial_dependence(fitted, Xa.iloc[r.ice_rows], cols, kind="both", method="brute",
                                       sample_weight=h, custom_values={f: g for f, g in zip(cols, r.grid)})
            np.testing.assert_allclose(np.asarray(rr.average)[0].ravel(), sk["average"][0].ravel(), atol=1e-12)
            np.testing.assert_allclose(np.asarray(rr.individual)[0].reshape(len(r.ice_rows), -1),
                                       sk["individual"][0].reshape(len(r.ice_rows), -1), atol=1e-12)
            checked += 1
    assert checked == 2 * 5  # 4 features and 1 pair, in two refits


def test_every_item_of_the_weighted_sampled_audit_has_a_learner_decision_or_a_reason(captured):
    a = captured[0]
    for crit in ("importance_1d", "interaction", "slope", "ice_variance"):
        for e in a.evidence[crit].values():
            assert e.robust is not None or e.robust_why, (crit, e.features)


def test_the_sampling_part_is_the_design_variance_of_the_weighted_mean():
    """The factor's covariance against the variance of the Hajek mean over 4,000 redrawn ICE samples (certainty
    rows kept, a uniform sample of the rest), on fixed curves: within 8% cell by cell, and it vanishes when
    every row is kept."""
    from types import SimpleNamespace

    from autopdp.pd.sampling import _weighted_sample

    rng = np.random.default_rng(0)
    n, k, cells = 400, 80, 3
    w = rng.lognormal(0.0, 0.8, size=n)
    w[:4] = 40.0
    curves = rng.normal(size=(n, cells)) * np.array([1.0, 2.0, 0.5]) + rng.exponential(size=(n, 1))
    means = []
    for _ in range(4000):
        rows = _weighted_sample(n, k, w, rng)
        r = SimpleNamespace(individual=np.zeros((1, rows.size, cells)), ice_rows=rows, n_rows=n)
        h = ht_weights(ice_design(r, w))
        means.append(h @ curves[rows] / h.sum())
    measured = np.var(np.asarray(means), axis=0)
    rows = _weighted_sample(n, k, w, np.random.default_rng(1))
    r = SimpleNamespace(individual=curves[rows][None], ice_rows=rows, n_rows=n)
    # the factor's expected covariance: average it over independent samples too (one sample's estimate is noisy)
    estimates = []
    for s in range(300):
        rows = _weighted_sample(n, k, w, np.random.default_rng(100 + s))
        r = SimpleNamespace(individual=curves[rows][None], ice_rows=rows, n_rows=n)
        f = _sampling_factor(r, 0, (("x",), rows, ice_design(r, w)))
        estimates.append(np.sum(f * f, axis=0))
    np.testing.assert_allclose(np.mean(estimates, axis=0), measured, rtol=0.08)
    every = SimpleNamespace(individual=curves[None], ice_rows=np.arange(n), n_rows=n)
    assert _sampling_factor(every, 0, (("x",), np.arange(n), None)) is None


def test_the_batched_bisection_finds_the_same_least_favourable_surface():
    """The interaction's least favourable surface, found 5 halvings at a time (one batched call of the statistic
    per 31 points), is the one-at-a-time bisection's to the last bit, over 300 random surfaces and thresholds."""
    from autopdp.findings.null_draws import _additive_fit, _interaction_stat, at_threshold

    rng = np.random.default_rng(0)
    kinds = ("numeric", "numeric")
    for _ in range(300):
        k1, k2 = (int(v) for v in rng.integers(2, 11, size=2))
        avg = rng.normal(size=(k1, k2)) + np.add.outer(rng.normal(size=k1) * 3, rng.normal(size=k2))
        mw = (rng.dirichlet(np.ones(k1)), rng.dirichlet(np.ones(k2)))

        def one(f, mw=mw):
            return float(_interaction_stat(f[None], kinds, mw)[0])

        value = one(avg)
        thr = value * rng.uniform(0.05, 0.95)
        fit = _additive_fit(avg, *mw)
        slow = at_threshold(avg, fit, value, thr, statistic=one)
        fast = at_threshold(avg, fit, value, thr, statistic=one, batch=lambda fs, mw=mw: _interaction_stat(fs, kinds, mw))
        np.testing.assert_array_equal(fast, slow)
        assert one(slow) <= thr + 1e-12 * max(value, 1.0) and one(slow) > 0.99 * thr


def test_a_model_fitted_on_pandas_categories_is_refitted_from_csv_text(tmp_path):
    """A HistGradientBoosting model fitted on a category column (categorical_features="from_dtype"), audited and
    refitted from CSV files (text columns, no dtype): the refits give the learner the text as categories, as the
    model was fitted, and the learner level is assessed (it was 'a refit of the learner failed' before)."""
    import json

    import skops.io as sio

    from autopdp.cli import main

    rng = np.random.default_rng(1)

    def frame(n):
        X, y = _data(rng, n)
        X["colour"] = pd.Categorical(rng.choice(["red", "green", "blue"], size=n))
        y = np.where(X["colour"] == "red", 1 - y, y)
        return X, y

    Xt, yt = frame(600)
    Xa, ya = frame(300)
    model = HistGradientBoostingClassifier(max_iter=15, categorical_features="from_dtype", random_state=0).fit(Xt, yt)
    sio.dump(model, tmp_path / "model.skops")
    Xt.assign(target=yt).to_csv(tmp_path / "train.csv", index=False)
    Xa.assign(target=ya).to_csv(tmp_path / "data.csv", index=False)
    trust = ["--trust-type", "functools.partial", "--trust-type", "sklearn.utils.validation.check_array"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rc = main(["report", "--model", str(tmp_path / "model.skops"), "--data", str(tmp_path / "data.csv"),
                   "--target", "target", "--train", str(tmp_path / "train.csv"), "--refits", "2", "--pairs", "c:d",
                   "--formats", "json", "--out", str(tmp_path / "out"), *trust])
    assert rc == 0
    refits = json.loads((tmp_path / "out" / "results.json").read_text())["refits"]
    assert refits["reason"] == "" and refits["fitted"] == 2 and refits["assessed"]


def test_the_demo_refits_its_learner_on_its_own_training_rows(tmp_path, capsys):
    """`autopdp demo --refits K`: the demo's random forest refitted on half-samples of the 1,000 German Credit rows
    it was trained on; every evidence item gets a verdict or a reason; a negative K is exit 2."""
    import json

    from autopdp.cli import main

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["demo", "--refits", "2", "--formats", "json", "--out", str(tmp_path / "out")]) == 0
    d = json.loads((tmp_path / "out" / "results.json").read_text())
    assert d["refits"]["fitted"] == 2 and d["refits"]["assessed"] and d["refits"]["n_train"] == 1000
    assert main(["demo", "--refits", "-1", "--out", str(tmp_path / "bad")]) == 2
    assert "--refits" in capsys.readouterr().err


def test_a_refit_that_fails_either_way_reports_the_learners_own_error():
    """A learner that refuses the training data's text columns and refuses pandas categories too: the retry with
    categories fails, and the reason given is the learner's refusal of the data as given, not the retry's."""
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.linear_model import LogisticRegression

    class Picky(ClassifierMixin, BaseEstimator):
        def fit(self, X, y):
            if any(pd.api.types.is_object_dtype(X[c]) for c in X.columns):
                raise ValueError("Picky takes numbers, not text")
            if any(isinstance(X[c].dtype, pd.CategoricalDtype) for c in X.columns):
                raise ValueError("Picky takes no categories either")
            self.inner_ = LogisticRegression().fit(X, y)
            self.classes_ = self.inner_.classes_
            return self

        def predict_proba(self, X):
            return self.inner_.predict_proba(X)

        def predict(self, X):
            return self.inner_.predict(X)

    rng = np.random.default_rng(2)
    X, y = _data(rng, 200)
    Xt = X.assign(colour=rng.choice(["red", "blue"], size=200)).astype({"colour": object})
    model = Picky().fit(X.assign(colour=0.0), y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = autopdp.audit(model, X.assign(colour=0.0), y, train=(Xt, y), config=AuditConfig(refits=2, pairs="none"),
                          progress=False)
    assert not a.refits.assessed
    assert a.refits.reason == "a refit of the learner failed (ValueError: Picky takes numbers, not text)"


def test_a_plan_on_rows_of_planned_data_gives_a_fresh_plans_values():
    """A refit's 2D PDs on a row sample reuse the plan of its 1D PDs' data (``share_subset``): the trees, feature
    maps and kernel offset carry over without a new check.  Known answer: the same PDs planned from scratch on those
    rows, and scikit-learn's weighted brute force; a model whose preprocessing one-hot encodes a column (refused by
    the tree path) goes to brute force the same way."""
    from sklearn.compose import make_column_transformer
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder

    from autopdp.pd.data import as_frame
    from autopdp.pd.tree.fastpath import TreePlan, forget_plans, share_subset, shared_plans

    rng = np.random.default_rng(11)
    n = 300
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.uniform(size=n),
                      "c": rng.choice(["x", "y", "z"], size=n), "d": rng.choice(["p", "q"], size=n)})
    y = X["a"] * (X["c"] == "x") + X["b"] + (X["d"] == "p") + rng.normal(scale=0.1, size=n)
    model = make_pipeline(
        make_column_transformer((OrdinalEncoder(), ["c"]), (OneHotEncoder(), ["d"]), remainder="passthrough"),
        RandomForestRegressor(n_estimators=15, min_samples_leaf=3, random_state=0)).fit(X, y)
    frame = as_frame(X)
    rows = np.sort(rng.choice(n, size=40, replace=False))
    w = rng.uniform(0.5, 2.0, size=rows.size)
    sets = [("a", "c"), ("a", "b"), ("b", "d")]
    kw = dict(kind="both", grid_resolution=5, sample_weight=w, std=True, progress=False)
    fresh = autopdp.partial_dependence(model, frame.take_rows(rows), sets, **kw)
    built = []
    original = TreePlan.subset

    def spy(self, rows_, sub):
        built.append(sub)
        return original(self, rows_, sub)

    TreePlan.subset = spy
    try:
        with shared_plans():
            autopdp.partial_dependence(model, frame, ["a", "c"], kind="both", grid_resolution=5, progress=False)
            sub = frame.take_rows(rows)
            share_subset(model, frame, rows, sub)
            shared = autopdp.partial_dependence(model, sub, sets, **kw)
            forget_plans(model)
            import autopdp.pd.tree.fastpath as fastpath
            assert not [e for e in fastpath._SHARED if e[1] is model]
    finally:
        TreePlan.subset = original
    assert built and built[0] is sub  # the shared plan was the one used
    for f, s in zip(fresh, shared):
        assert s.method == f.method
        np.testing.assert_allclose(s.average, f.average, rtol=0, atol=1e-12)
        np.testing.assert_allclose(s.individual, f.individual, rtol=0, atol=1e-12)
        np.testing.assert_allclose(s.std, f.std, rtol=0, atol=1e-12)
    assert "tree" in shared[0].method and "brute" in shared[2].method  # d is one-hot encoded: brute force
    Xs = X.iloc[rows].reset_index(drop=True)
    sk = sk_partial_dependence(model, Xs, ["a", "b"], kind="average", method="brute", sample_weight=w,
                               custom_values={"a": shared[1].grid[0], "b": shared[1].grid[1]})
    np.testing.assert_allclose(shared[1].average[0], sk["average"][0], rtol=0, atol=1e-10)

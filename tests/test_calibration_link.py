"""The ICE-variance link scale where probabilities saturate (issue 29, "saturated probabilities").

An additive logistic model with steep coefficients (12, -8, 6) gives probabilities that round to exactly
0 or 1 in float64.  Their log-odds are lost, and with them the additivity the criterion tests: the scale
comes from the model's margin (``decision_function``) where it has one, else from log-odds of
probabilities clipped to [2**-53, 1 - 2**-53], and the evidence names which.  Materiality is 0 here, so
the noise test alone decides.
"""

import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

from autopdp import AuditConfig
from autopdp import audit
from autopdp.pd.margin import margin_link
from autopdp.scores.utilities.ice_variance import EPS, link_scale

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from calibration_cases import ProbaOnly  # noqa: E402  (the benchmark's probabilities-only wrapper)

SEEDS = range(8)
CFG = dict(pairs=False, utilities=("ice_variance",), materiality=0)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _steep(seed, n=600, interaction=0.0):
    """Rows and outcomes of the steep logistic model (``interaction`` on x1*x2)."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 3)), columns=["x1", "x2", "x3"])
    eta = 12 * X["x1"] - 8 * X["x2"] + 6 * X["x3"] + interaction * X["x1"] * X["x2"]
    y = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(int)
    return X, y


def _fit(X, y, interaction=False):
    """A LogisticRegression with the data-generating coefficients (12, -8, 6[, 4 on x1*x2]), intercept 0."""
    Z = X.assign(x1x2=X["x1"] * X["x2"]) if interaction else X
    model = LogisticRegression(C=1e6, max_iter=10_000).fit(Z, y)
    model.coef_ = np.array([[12.0, -8.0, 6.0, 4.0][:Z.shape[1]]])
    model.intercept_ = np.zeros(1)
    return model


class _WithProduct:
    """A logistic model on x1, x2, x3 and x1*x2 (its decision_function and predict_proba on the three columns)."""

    def __init__(self, model):
        self.model, self.classes_ = model, model.classes_

    def _z(self, X):
        return X.assign(x1x2=X["x1"] * X["x2"])

    def decision_function(self, X):
        return self.model.decision_function(self._z(X))

    def predict_proba(self, X):
        return self.model.predict_proba(self._z(X))

    def predict(self, X):
        return self.model.predict(self._z(X))


def _saturated_share(curves) -> float:
    p = np.asarray(curves, dtype=float)
    return float(np.mean((p == 0.0) | (p == 1.0)))


@pytest.mark.parametrize("seed", SEEDS)
def test_steep_additive_logistic_has_no_ice_variance_finding_on_its_margin(seed):
    X, y = _steep(seed)
    model = _fit(X, y)
    a = audit(model, X, y, config=AuditConfig(**CFG))
    # the case of the issue: some probabilities on the ICE curves are exactly 0 or 1
    assert _saturated_share(a.pd("x1").individual) > 0
    ev = a.evidence["ice_variance"]
    assert not any(e.passed for e in ev.values())
    for e in ev.values():
        assert e.value < 1e-9
        assert e.details["scale"].startswith("log-odds (from the model's margin")
        assert "decision_function" in e.details["scale"]
        assert "clipped_share" not in e.details
    assert a.score("x1", "ice_variance").details["scale"] == ev[("x1",)].details["scale"]


def test_without_a_decision_function_saturated_probabilities_use_clipped_log_odds_named():
    X, y = _steep(0)
    model = ProbaOnly(_fit(X, y))
    a = audit(model, X, y, config=AuditConfig(**CFG))
    for e in a.evidence["ice_variance"].values():
        scale = e.details["scale"]
        assert scale.startswith("log-odds (probabilities clipped to")
        assert not scale.startswith("probability")
        assert 0 < e.details["clipped_share"] < 0.2
        assert "decision_function" in e.details["margin_unavailable"]
        assert np.isfinite(e.value) and np.isfinite(e.threshold)
    # the statistic and the finding's sentence name the log-odds scale
    e = a.evidence["ice_variance"][("x1",)]
    assert "log-odds scale" in e.statistic


def test_clipped_log_odds_are_finite_at_float64_resolution():
    p = np.array([[0.0, 1e-300, 0.3, 1.0 - 2 ** -53, 1.0]])
    v, name = link_scale(p, "predict_proba", all_classes=False)
    assert np.isfinite(v).all()
    assert EPS == 2 ** -53
    assert v[0, -1] == pytest.approx(np.log((1 - EPS) / EPS))
    assert v[0, 0] == pytest.approx(-v[0, -1]) and v[0, 1] == v[0, 0]
    assert v[0, 2] == pytest.approx(np.log(0.3 / 0.7))
    assert "clipped" in name
    v, name = link_scale(np.array([[0.2, 0.7]]), "predict_proba", all_classes=False)
    assert name == "log-odds"


@pytest.mark.parametrize("seed", SEEDS[:5])
def test_an_interacting_logistic_model_keeps_its_ice_variance_finding(seed):
    X, y = _steep(seed, interaction=4.0)
    model = _WithProduct(_fit(X, y, interaction=True))
    a = audit(model, X, y, config=AuditConfig(**CFG))
    ev = a.evidence["ice_variance"]
    assert {k for k, e in ev.items() if e.passed} == {("x1",), ("x2",)}
    assert ev[("x1",)].details["scale"].startswith("log-odds (from the model's margin")
    assert ev[("x3",)].value < 1e-9  # x3 enters additively: no spread on the margin


def test_an_interacting_logistic_model_is_found_at_the_default_materiality():
    X, y = _steep(0, interaction=4.0)
    model = _WithProduct(_fit(X, y, interaction=True))
    a = audit(model, X, y, config=AuditConfig(pairs=False, utilities=("ice_variance",)))
    assert {k for k, e in a.evidence["ice_variance"].items() if e.passed} == {("x1",), ("x2",)}


def test_multiclass_margin_is_the_centred_log_probability_and_one_class_its_log_odds():
    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.normal(size=(400, 3)), columns=["x1", "x2", "x3"])
    eta = 6 * X["x1"] - 4 * X["x2"]
    y = np.digitize(eta + rng.logistic(size=400), [-3, 3])
    model = LogisticRegression(C=1e6, max_iter=10_000).fit(X, y)
    a = audit(model, X, y, config=AuditConfig(**CFG))
    for e in a.evidence["ice_variance"].values():
        assert e.details["scale"].startswith("centred log-probability (from the model's margin")
        assert not e.passed and e.value < 1e-9
    one = audit(model, X, y, config=AuditConfig(**CFG, target=2))
    ev = one.evidence["ice_variance"]
    for e in ev.values():  # one class against the rest is not additive in the margins: a spread, finite
        assert e.details["scale"].startswith("log-odds (from the model's margin")
        assert np.isfinite(e.value) and np.isfinite(e.threshold)
    assert ev[("x3",)].value < 0.1 * ev[("x1",)].value


def test_margin_reproduces_the_probabilities_or_is_not_used():
    from autopdp.pd.data import as_frame
    from autopdp.pd.partial_dependence import partial_dependence
    from autopdp.pd.response import make_adapter

    X, y = _steep(1)

    class _Shifted(_WithProduct):  # a decision_function that is not the probabilities' logit
        def decision_function(self, X):
            return super().decision_function(X) + 1.0

    model = _Shifted(_fit(X, y, interaction=True))
    frame = as_frame(X)
    adapter = make_adapter(model, "predict_proba")
    res1 = partial_dependence(model, X, ["x1"], kind="both")
    link = margin_link(model, adapter, frame, res1, {})
    assert link is not None and not link.curves and "sigmoid" in link.reason
    a = audit(model, X, y, config=AuditConfig(**CFG))
    assert a.evidence["ice_variance"][("x1",)].details["scale"].startswith("log-odds (probabilities clipped")


def test_hist_gradient_boosting_margin_is_its_raw_score():
    from sklearn.ensemble import HistGradientBoostingClassifier

    X, y = _steep(2)
    model = HistGradientBoostingClassifier(max_iter=40, random_state=0).fit(X, y)
    a = audit(model, X, y, config=AuditConfig(pairs=False, utilities=("ice_variance",)))
    for e in a.evidence["ice_variance"].values():
        assert e.details["scale"].startswith("log-odds (from the model's margin")
        assert np.isfinite(e.value) and np.isfinite(e.threshold)

"""A model's kind from what it offers (issue 30).

``predict_proba`` makes a model a classifier unless it declares another type; without
``classes_`` its classes are the positions of its ``predict_proba`` columns (0, 1 for a binary
model, whose positive class is 1).  The models here are plain Python objects wrapping a fitted
LogisticRegression with no ``classes_`` (pygam's LogisticGAM offers the same: predict_proba with
one probability per row, predict with True/False), so every number can be checked against the
LogisticRegression audited directly.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LinearRegression, LogisticRegression

import autopdp
from autopdp import AuditConfig
from autopdp import audit
from autopdp.errors import InputError
from autopdp.pd.response import make_adapter
from autopdp.report.context import outcome_label

CFG = dict(pairs=False, utilities=("incidence", "ice_variance", "monotonicity"))


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _data(seed=0, n=600):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.standard_normal((n, 3)), columns=["x1", "x2", "x3"])
    eta = 1.0 * X["x1"] - 0.8 * X["x2"] + 0.5 * X["x3"]
    y = pd.Series((rng.random(n) < 1 / (1 + np.exp(-eta))).astype(int), name="y")
    model = LogisticRegression().fit(X, y)
    model.coef_, model.intercept_ = np.array([[1.0, -0.8, 0.5]]), np.zeros(1)  # the truth: calibrated
    return X, y, model


class GamLike:
    """pygam's LogisticGAM's interface: predict_proba gives P(y = 1) per row, predict gives True/False."""

    def __init__(self, model):
        self._model = model

    def predict_proba(self, X):
        return self._model.predict_proba(X)[:, 1]

    def predict(self, X):
        return self._model.predict_proba(X)[:, 1] > 0.5


class TwoColumns(GamLike):
    """The same with scikit-learn's two probability columns, still no classes_."""

    def predict_proba(self, X):
        return self._model.predict_proba(X)


class WithMargin(TwoColumns):
    """Also a decision_function (the margin the ICE-variance criterion reads), no classes_."""

    def decision_function(self, X):
        return self._model.decision_function(X)


def test_a_model_without_classes_is_explained_through_its_probabilities():
    X, y, lr = _data()
    a = audit(GamLike(lr), X, y, config=AuditConfig(**CFG))
    assert a.metadata["is_classifier"] is True
    assert a.metadata["response"] == "predict_proba"
    assert a.metadata["targets"] == [1]
    assert outcome_label(a) == "P(y = 1)"
    assert a.metadata["provenance"]["positive_class"] == 1
    assert any("has no classes_ attribute" in n and "classes 0, 1" in n for n in a.notes)
    ref = audit(lr, X, y, config=AuditConfig(**CFG))
    for feature in ("x1", "x2", "x3"):
        np.testing.assert_allclose(a.pd(feature).average, ref.pd(feature).average, rtol=0, atol=1e-12)
        for criterion in ("incidence", "monotonicity"):
            assert a.score(feature, criterion).value == pytest.approx(ref.score(feature, criterion).value, abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_no_false_calibration_finding_on_a_calibrated_model_without_classes(seed):
    X, y, lr = _data(seed)
    for model in (GamLike(lr), TwoColumns(lr)):
        a = audit(model, X, y, config=AuditConfig(**CFG))
        assert a.metadata["response"] == "predict_proba"
        assert not any(e.passed for e in a.evidence["incidence"].values()), seed


def test_every_response_it_has_a_method_for_is_accepted():
    X, y, lr = _data()
    model = GamLike(lr)
    (p1,) = autopdp.partial_dependence(model, X, ["x1"], response="predict_proba")
    (ref,) = autopdp.partial_dependence(lr, X, ["x1"], response="predict_proba")
    assert p1.targets == (1,) and p1.response == "predict_proba"
    np.testing.assert_allclose(p1.average, ref.average, rtol=0, atol=1e-12)
    (p0,) = autopdp.partial_dependence(model, X, ["x1"], response="predict_proba", target=0)
    assert p0.targets == (0,)
    np.testing.assert_allclose(p0.average, 1 - ref.average, rtol=0, atol=1e-12)
    # predict: the crisp labels True/False are the classes 1/0, the PD the share predicted 1
    (crisp,) = autopdp.partial_dependence(model, X, ["x1"], response="predict")
    (crisp_ref,) = autopdp.partial_dependence(lr, X, ["x1"], response="predict")
    assert crisp.response == "crisp" and crisp.targets == (0, 1)
    np.testing.assert_allclose(crisp.average, crisp_ref.average, rtol=0, atol=0)
    a = audit(model, X, y, config=AuditConfig(pairs=False, response="predict_proba", utilities=("incidence",)))
    assert a.metadata["response"] == "predict_proba" and outcome_label(a) == "P(y = 1)"
    with pytest.raises(InputError, match="no decision_function method"):
        make_adapter(model, "decision_function", probe=X.iloc[:5])


def test_a_margin_without_classes_is_used_for_ice_variance():
    X, y, lr = _data()
    a = audit(WithMargin(lr), X, y, config=AuditConfig(pairs=False, utilities=("ice_variance",)))
    for e in a.evidence["ice_variance"].values():
        assert e.details["scale"].startswith("log-odds (from the model's margin")
        assert e.value < 1e-9 and not e.passed
    (d,) = autopdp.partial_dependence(WithMargin(lr), X, ["x1"], response="decision_function")
    assert d.targets == (1,)


def test_multiclass_probabilities_without_classes_are_classes_0_to_k_minus_1():
    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.standard_normal((300, 2)), columns=["a", "b"])
    y = pd.Series(np.digitize(X["a"] + 0.3 * rng.standard_normal(300), [-0.5, 0.5]), name="grade")
    lr = LogisticRegression().fit(X, y)
    (r,) = autopdp.partial_dependence(TwoColumns(lr), X, ["a"])
    (ref,) = autopdp.partial_dependence(lr, X, ["a"])
    assert r.targets == (0, 1, 2) == ref.targets
    np.testing.assert_allclose(r.average, ref.average, rtol=0, atol=1e-12)
    a = audit(TwoColumns(lr), X, y, config=AuditConfig(pairs=False, utilities=("incidence",)))
    assert a.metadata["targets"] == [0, 1, 2] and outcome_label(a, 2) == "P(grade = 2)"


@pytest.mark.parametrize("labels", [(0.0, 1.0), (False, True)])
def test_y_may_hold_the_inferred_classes_as_floats_or_booleans(labels):
    X, y, lr = _data()
    y2 = y.map(dict(zip((0, 1), labels)))
    a = audit(GamLike(lr), X, y2, config=AuditConfig(**CFG))
    ref = audit(lr, X, y, config=AuditConfig(**CFG))
    assert a.score("x1", "incidence").value == pytest.approx(ref.score("x1", "incidence").value, abs=1e-12)


def test_y_with_other_labels_is_refused_naming_the_inferred_classes():
    X, y, lr = _data()
    with pytest.raises(InputError) as err:
        audit(GamLike(lr), X, y.map({0: "no", 1: "yes"}), config=AuditConfig(**CFG))
    text = str(err.value)
    assert "'no', 'yes'" in text or "'yes', 'no'" in text
    assert "no classes_" in text and "predict_proba columns" in text and "classes_ attribute" in text


class DeclaredRegressor(GamLike):
    """Says it is a regressor (scikit-learn's convention) though it has predict_proba."""

    _estimator_type = "regressor"

    def predict(self, X):
        return 3.0 * np.asarray(X, dtype=float)[:, 0]


def test_a_declared_type_is_kept_unless_probabilities_are_asked_for():
    X, y, lr = _data()
    model = DeclaredRegressor(lr)
    reg = make_adapter(model, probe=X.iloc[:5])
    assert not reg.is_classifier and reg.response == "predict" and reg.targets == ("prediction",)
    prob = make_adapter(model, "predict_proba", probe=X.iloc[:5])
    assert prob.is_classifier and prob.response == "predict_proba" and prob.targets == (1,)


def test_regressors_and_callables_are_unaffected():
    X, y, _ = _data()
    yr = X["x1"] * 2 + X["x2"]
    lin = LinearRegression().fit(X, yr)
    a = audit(lin, X, yr, config=AuditConfig(pairs=False, utilities=("incidence",)))
    assert a.metadata["is_classifier"] is False and a.metadata["response"] == "predict"
    assert not any("classes_" in n for n in a.notes)
    with pytest.raises(InputError, match="is a regressor"):
        make_adapter(lin, "predict_proba", probe=X.iloc[:5])
    c = audit(lambda d: d["x1"].to_numpy() * 2, X, yr, config=AuditConfig(pairs=False, utilities=("incidence",)))
    assert c.metadata["is_classifier"] is False and c.metadata["response"] == "callable"
    assert c.metadata["targets"] == ["prediction"]
    ad = make_adapter(lambda d: d["x1"].to_numpy(), probe=X.iloc[:5])
    assert ad.classes is None and not ad.inferred_classes


def test_a_scikit_learn_classifier_keeps_its_classes():
    X, y, _ = _data()
    lr = LogisticRegression().fit(X, y.map({0: "no", 1: "yes"}))
    ad = make_adapter(lr, probe=X.iloc[:5])
    assert ad.is_classifier and not ad.inferred_classes and ad.targets == ("yes",)
    assert list(ad.classes) == ["no", "yes"]

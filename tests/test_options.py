"""Issue 51: partial_dependence and compute_all take scikit-learn's parameter names and an options object; the old
keywords still work for one release, with a DeprecationWarning, and give the same numbers."""

import inspect
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.inspection import partial_dependence as sk_partial_dependence

import autopdp
from autopdp import PDOptions


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(300, 3)), columns=list("abc"))
    y = (X.a + X.b * X.c + rng.normal(0, 0.3, 300) > 0).astype(int)
    return HistGradientBoostingClassifier(max_iter=15, random_state=0).fit(X, y), X


def test_the_signature_uses_scikit_learns_names():
    ours = inspect.signature(autopdp.partial_dependence).parameters
    theirs = inspect.signature(sk_partial_dependence).parameters
    shared = [p for p in ours if p in theirs]
    assert shared[:3] == ["estimator", "X", "features"]
    assert {"sample_weight", "categorical_features", "response_method", "percentiles", "grid_resolution",
            "custom_values", "method", "kind"} <= set(shared)
    assert set(ours) - set(theirs) == {"options"} and len(ours) <= 12
    assert len(inspect.signature(autopdp.compute_all).parameters) <= 12


def test_the_old_keywords_warn_and_give_the_same_numbers(fitted):
    model, X = fitted
    new = autopdp.partial_dependence(model, X, ["a", ("b", "c")], response_method="predict_proba",
                                     options=PDOptions(subsample=40, random_state=3, target=1))
    with pytest.warns(DeprecationWarning) as caught:
        old = autopdp.partial_dependence(model=model, X=X, features=["a", ("b", "c")], response="predict_proba",
                                         subsample=40, random_state=3, target=1)
    message = str(caught[0].message)
    assert "model= is now estimator=" in message and "response= is now response_method=" in message
    assert "options=autopdp.PDOptions(random_state=..., subsample=..., target=...)" in message
    for a, b in zip(new, old):
        assert np.array_equal(a.average, b.average) and np.array_equal(a.individual, b.individual)
        assert np.array_equal(a.ice_rows, b.ice_rows)


def test_an_old_option_keyword_applies_on_top_of_the_options_given(fitted):
    model, X = fitted
    with pytest.warns(DeprecationWarning):
        (r,) = autopdp.partial_dependence(model, X, ["a"], options=PDOptions(random_state=3), subsample=25)
    assert r.individual.shape[1] == 25


def test_the_new_names_warn_nothing(fitted):
    model, X = fitted
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        autopdp.partial_dependence(model, X, ["a"], response_method="predict_proba", options=PDOptions(subsample=10))
        autopdp.compute_all(model, X, features=["a", "b"], options=PDOptions(grid_resolution_2d=4))


def test_bad_options_are_clear_errors(fitted):
    model, X = fitted
    with pytest.raises(TypeError, match="pass only 'response_method'"):
        autopdp.partial_dependence(model, X, ["a"], response="predict_proba", response_method="predict_proba")
    with pytest.raises(autopdp.InputTypeError, match="options must be an autopdp.PDOptions"):
        autopdp.partial_dependence(model, X, ["a"], options={"subsample": 10})
    with pytest.raises(TypeError):
        autopdp.partial_dependence(model, X, ["a"], nonsense=1)


def test_compute_all_keeps_its_defaults_for_old_and_new_callers(fitted):
    model, X = fitted
    new = autopdp.compute_all(model, X, features=["a", "b"])  # COMPUTE_ALL_OPTIONS: 1000 ICE rows, seed 0
    with pytest.warns(DeprecationWarning):
        old = autopdp.compute_all(model, X, features=["a", "b"], grid_resolution_2d=4, n_jobs=1)
    assert [r.features for r in new] == [r.features for r in old] == [("a",), ("b",), ("a", "b")]
    assert np.array_equal(new[0].average, old[0].average) and new[0].individual.shape[1] == 300
    assert old[2].grid_shape == (4, 4) and new[2].individual is None
    explicit = autopdp.compute_all(model, X, features=["a", "b"], options=PDOptions(ice_2d=True, subsample=50,
                                                                                     random_state=0))
    assert explicit[2].individual.shape[1] == 50

"""A table of bad inputs and the exact message each one gets."""

import re

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LinearRegression

from autopdp import InputError, compute_all, partial_dependence


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(60, 3)), columns=["a", "b", "c"])
    y = X.a + X.b
    return LinearRegression().fit(X, y), X


def _raises(exc, message, fn):
    with pytest.raises(exc, match="^" + re.escape(message) + "$"):
        fn()


CASES = [
    (
        "unknown feature",
        lambda m, X: partial_dependence(m, X, ["nope"]),
        ValueError,
        "Unknown feature 'nope': it is not a column of X. Columns are: 'a', 'b', 'c'.",
    ),
    (
        "same feature twice",
        lambda m, X: partial_dependence(m, X, [("a", "a")]),
        ValueError,
        "Feature pair ('a', 'a') names the same feature twice; a 2D partial dependence needs two different features.",
    ),
    (
        "three features",
        lambda m, X: partial_dependence(m, X, [("a", "b", "c")]),
        ValueError,
        "Feature set ('a', 'b', 'c') has 3 features; autopdp computes 1D and 2D partial dependence only.",
    ),
    (
        "unfitted model",
        lambda m, X: partial_dependence(RandomForestClassifier(), X, ["a"]),
        ValueError,
        "The model (RandomForestClassifier) is not fitted: call model.fit(X, y) before passing it to autopdp.",
    ),
    (
        "empty data",
        lambda m, X: partial_dependence(m, X.iloc[:0], ["a"]),
        ValueError,
        "X is empty (0 rows): partial dependence needs at least one row of data.",
    ),
    (
        "index out of range",
        lambda m, X: partial_dependence(m, X.to_numpy(), [5]),
        ValueError,
        "Feature index 5 is out of range: X has 3 columns (valid positions 0 to 2).",
    ),
    (
        "grid of one point",
        lambda m, X: partial_dependence(m, X, ["a"], grid_resolution=1),
        ValueError,
        "grid_resolution must be an integer >= 2 (a grid of one point has no shape to show), got 1.",
    ),
    (
        "bad percentiles",
        lambda m, X: partial_dependence(m, X, ["a"], percentiles=(0.9, 0.1)),
        ValueError,
        "percentiles must satisfy 0 <= low < high <= 1, got (0.9, 0.1).",
    ),
    (
        "bad kind",
        lambda m, X: partial_dependence(m, X, ["a"], kind="all"),
        ValueError,
        "kind='all' is not supported; use one of average, individual, both.",
    ),
    (
        "string features",
        lambda m, X: partial_dependence(m, X, "a"),
        TypeError,
        "features must be a list whose items are a column name/index (1D) or a pair of them (2D), "
        "e.g. ['age', ('age', 'income')]; got 'a'.",
    ),
    (
        "weights of wrong length",
        lambda m, X: partial_dependence(m, X, ["a"], sample_weight=[1.0, 2.0]),
        ValueError,
        "sample_weight has 2 values but X has 60 rows; give one weight per row.",
    ),
    (
        "duplicate columns",
        lambda m, X: partial_dependence(m, pd.concat([X, X[["a"]]], axis=1), ["b"]),
        ValueError,
        "X has duplicate column names ['a']: rename them so that every feature has a unique name.",
    ),
    (
        "model raises on predict",
        lambda m, X: partial_dependence(m, X[["a", "b"]], ["a"]),
        ValueError,
        None,  # message contains the model's own error; checked below
    ),
    (
        "not a model",
        lambda m, X: partial_dependence(42, X, ["a"]),
        TypeError,
        "model must be a fitted scikit-learn estimator, an object with predict or predict_proba, or a callable "
        "f(X) -> predictions, got int.",
    ),
    (
        "series instead of frame",
        lambda m, X: partial_dependence(m, X["a"], ["a"]),
        TypeError,
        "X is a pandas Series; pass a DataFrame with one column per feature (e.g. series.to_frame()).",
    ),
    (
        "infinite values",
        lambda m, X: partial_dependence(lambda d: d["a"].to_numpy(), X.assign(a=np.r_[np.inf, X.a[1:]]), ["a"]),
        ValueError,
        "Feature 'a' has infinite values: replace them (e.g. with NaN or a cap) before computing partial dependence.",
    ),
    (
        "unknown target class",
        lambda m, X: partial_dependence(m, X, ["a"], target=7),
        ValueError,
        "Unknown target 7: the model has 1 output(s) (prediction).",
    ),
    (
        "classifier response on regressor",
        lambda m, X: partial_dependence(m, X, ["a"], response="predict_proba"),
        ValueError,
        "response='predict_proba' is for classifiers; LinearRegression is a regressor (it has no such method): use "
        "'predict'.",
    ),
    (
        "unknown custom value key",
        lambda m, X: compute_all(m, X, custom_values={"zz": [1, 2]}),
        ValueError,
        "Unknown feature 'zz': it is not a column of X. Columns are: 'a', 'b', 'c'.",
    ),
]


@pytest.mark.parametrize("label,call,exc,message", CASES, ids=[c[0] for c in CASES])
def test_bad_input_table(fitted, label, call, exc, message):
    model, X = fitted
    if message is None:
        with pytest.raises(exc) as info:
            call(model, X)
        text = str(info.value)
        assert text.startswith("The model raised an error when predicting on X: ValueError:")
        assert "feature names" in text.lower() or "features" in text.lower()
        assert text.endswith("Check that X has the columns and types the model was trained on.")
    else:
        with pytest.raises(exc, match="^" + re.escape(message) + "$") as info:
            call(model, X)
    # raised by autopdp's own checks: the command line reports it as bad input (exit 2), not as a bug
    assert isinstance(info.value, InputError), type(info.value)

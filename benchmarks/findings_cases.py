"""Known-answer cases for the findings: models whose truth is known, and real data with named effects.

Shared by ``benchmarks/bench_findings.py`` (prints precision and recall) and
``tests/test_findings_known_answers.py`` (asserts them exactly).  Each case
returns ``(audit, truth)`` with ``truth = {criterion: set of feature tuples}``:
the PDPs that must be findings under that criterion, and no other.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from autopdp import AuditConfig
from autopdp import audit

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def _pairs(names):
    return {(a, b) for i, a in enumerate(names) for b in names[i + 1:]}


# ------------------------------------------------------------------ planted effects
PLANTED_COLUMNS = ["bump", "line", "step", "p1", "p2", "unused", "indep"]


def planted_data(n: int = 2000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(rng.uniform(-1, 1, size=(n, len(PLANTED_COLUMNS))), columns=PLANTED_COLUMNS)


def planted_model(d) -> np.ndarray:
    """A non-monotone bump, a straight line, a step, a product interaction, an unused and a small independent feature."""
    return (np.exp(-(d["bump"].to_numpy() ** 2) / 0.4) + d["line"].to_numpy() + 0.8 * (d["step"].to_numpy() > 0.2)
            + 1.2 * d["p1"].to_numpy() * d["p2"].to_numpy() + 0.3 * d["indep"].to_numpy())


def planted():
    X = planted_data()
    a = audit(planted_model, X)
    mains = ["bump", "line", "step", "indep"]
    truth = {
        "monotonicity": {("bump",)},
        "lipschitz": {("step",)},
        "ice_variance": {("p1",), ("p2",)},
        "slope": {(f,) for f in mains},
        "interaction": {("p1", "p2")},
        "correlation": set(),
        "importance": {tuple(sorted(p, key=PLANTED_COLUMNS.index)) for p in _pairs(mains)},
    }
    return a, truth


# ------------------------------------------------------------------ exactly additive: splines + ridge
def additive():
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import SplineTransformer

    rng = np.random.default_rng(1)
    n = 1500
    X = pd.DataFrame(rng.uniform(-2, 2, size=(n, 4)), columns=["a", "b", "c", "d"])
    y = np.sin(2 * X["a"]) + X["b"] ** 2 - X["c"] + 0.5 * X["a"] * X["d"] + rng.normal(0, 0.2, n)
    model = make_pipeline(SplineTransformer(n_knots=6, degree=3), Ridge(alpha=1.0)).fit(X, y)
    a = audit(model, X, y)
    # an additive model has no interaction and no heterogeneity, whatever the data's truth
    return a, {"interaction": set(), "ice_variance": set()}


# ------------------------------------------------------------------ a classifier with two levels swapped
def swapped_levels():
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(2)
    n = 4000
    grade = rng.choice(list("ABCD"), n)
    X = pd.DataFrame({"grade": grade, "income": rng.normal(0, 1, n), "age": rng.uniform(20, 70, n)})
    effect = pd.Series({"A": -2.0, "B": -0.7, "C": 0.7, "D": 2.0})
    logit = effect[grade].to_numpy() + 0.8 * X["income"].to_numpy() + 0.03 * (X["age"].to_numpy() - 45)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-logit))).astype(int)
    swapped = X.assign(grade=X["grade"].map({"A": "D", "D": "A", "B": "B", "C": "C"}))
    model = make_pipeline(
        make_column_transformer((OneHotEncoder(), ["grade"]), remainder="passthrough"),
        LogisticRegression(max_iter=1000),
    ).fit(swapped, y)
    a = audit(model, X, y, config=AuditConfig(pairs=False))
    # the model disagrees with the data on grade only
    return a, {"incidence": {("grade",)}}


# ------------------------------------------------------------------ real data
def adult(rows: int | None = 6000):
    from sklearn.ensemble import HistGradientBoostingClassifier

    df = pd.read_csv(SHARED / "adult" / "adult.csv", na_values="?", skipinitialspace=True)
    if rows is not None:
        df = df.sample(rows, random_state=0)
    y = df.pop("income")
    X = df.drop(columns=["education"])  # education_num encodes it
    for c in X.columns:
        if X[c].dtype == object or str(X[c].dtype).startswith(("str", "string")):
            X[c] = X[c].astype("category")
    model = HistGradientBoostingClassifier(max_iter=80, random_state=0, categorical_features="from_dtype").fit(X, y)
    a = audit(model, X, y.rename("income"), config=AuditConfig(pairs=False))
    # named effects: capital_gain's high-gain region is on the grid and matters most
    return a, {}


def bike(rows: int | None = 8000):
    from sklearn.ensemble import HistGradientBoostingRegressor

    df = pd.read_csv(SHARED / "bike_sharing" / "hour.csv")
    if rows is not None:
        df = df.sample(rows, random_state=0)
    y = df["cnt"].astype(float)
    X = df.drop(columns=["instant", "dteday", "casual", "registered", "cnt"])
    model = HistGradientBoostingRegressor(max_iter=80, random_state=0).fit(X, y)
    a = audit(model, X, y.rename("cnt"), config=AuditConfig(pairs=False))
    return a, {}


def precision_recall(a, truth: dict) -> dict:
    """Per criterion: found (PDPs that passed), truth, precision and recall (1 when both sets are empty)."""
    out = {}
    for crit, true in truth.items():
        found = {k for k, e in a.evidence.get(crit, {}).items() if e.passed}
        tp = len(found & true)
        precision = tp / len(found) if found else (1.0 if not true else 0.0)
        recall = tp / len(true) if true else 1.0
        out[crit] = {"found": found, "truth": true, "precision": precision, "recall": recall}
    return out

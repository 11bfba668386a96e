"""Real public data from ../shared/data: Bike Sharing (regression) and Adult (missing values, many levels)."""

import numpy as np
import pytest
from sklearn.compose import make_column_transformer
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

import autopdp


def test_bike_sharing_tree_path_equals_brute_force(shared_csv):
    df = shared_csv("bike_sharing/hour.csv").iloc[:3000]
    y = df["cnt"].astype(float)
    X = df.drop(columns=["instant", "dteday", "casual", "registered", "cnt"]).astype(float)
    model = HistGradientBoostingRegressor(max_iter=60, random_state=0).fit(X, y)
    feats = ["temp", "hr", ("temp", "hum"), ("hr", "workingday")]
    fast = autopdp.partial_dependence(model, X, feats, kind="average", method="tree", std_rows=0)
    brute = autopdp.partial_dependence(model, X, feats, kind="average", method="brute")
    for f, b in zip(fast, brute):
        np.testing.assert_allclose(f.average, b.average, rtol=0, atol=1e-9)
    hour = fast[1].average[0]
    assert hour[8] > 2 * hour[3]  # the morning rush is there


def test_adult_with_missing_values_audits_cleanly(shared_csv):
    df = shared_csv("adult/adult.csv", na_values="?", skipinitialspace=True).sample(3000, random_state=0)
    y = df.pop("income").astype(str).str.contains(">50K").astype(int)
    X = df[["age", "hours_per_week", "education_num", "workclass", "occupation", "sex"]]
    cat = ["workclass", "occupation", "sex"]
    model = make_pipeline(
        make_column_transformer(
            (make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")), cat),
            (StandardScaler(), ["age", "hours_per_week", "education_num"]),
        ),
        LogisticRegression(max_iter=1000),
    ).fit(X, y)
    a = autopdp.audit(model, X, y, config=autopdp.AuditConfig(grid_resolution=10, grid_resolution_2d=4))
    occ = a.pd("occupation")
    assert occ.n_missing[0] == int(X["occupation"].isna().sum()) > 0
    assert all(isinstance(v, str) for v in occ.grid[0])  # NaN is never a level
    # incidence of 'sex' by hand: the PD at each level against the share of y == 1 among that level's rows,
    # weighted by the level's share of rows (eq. 4-5)
    sex = a.pd("sex")
    shares = X["sex"].value_counts(normalize=True)
    rates = y.groupby(X["sex"]).mean()
    levels = list(sex.grid[0])
    gap = np.asarray(sex.average[0], dtype=float) - rates.loc[levels].to_numpy()
    w = shares.loc[levels].to_numpy()
    assert a.score("sex", "incidence").value == pytest.approx(float(np.sqrt(np.sum(w * gap**2) / w.sum())),
                                                             rel=0, abs=1e-12)
    ranked = a.ranking("incidence")
    assert sorted(f for (f,) in ranked["features"]) == sorted(X.columns)
    assert list(ranked["incidence"]) == sorted((a.score(f, "incidence").value for f in X.columns), reverse=True)
    assert a.importance.loc["education_num"].iloc[0] > a.importance.loc["sex"].iloc[0] / 10

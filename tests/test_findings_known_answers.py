"""Precision and recall of the findings on known answers (the cases of benchmarks/bench_findings.py), asserted exactly."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import findings_cases as cases  # noqa: E402

from autopdp import AuditConfig
from autopdp import audit
from score_checks import check_no_failed_scores  # noqa: E402


def _exact(a, truth):
    for crit, r in cases.precision_recall(a, truth).items():
        assert r["found"] == r["truth"], crit
        assert r["precision"] == 1.0 and r["recall"] == 1.0, crit


def test_planted_effects_precision_and_recall_are_one():
    a, truth = cases.planted()
    _exact(a, truth)
    check_no_failed_scores(a.to_dict(), expected_na={"incidence", "stratpd"})  # no y: both need it
    # and the curated selection never holds the line, the unused or the independent feature for shape criteria
    for s in a.selection:
        for crit, _ in s.reasons:
            if crit in ("monotonicity", "lipschitz", "ice_variance"):
                assert not set(s.features) & {"line", "unused", "indep"}


def test_exactly_additive_model_has_no_interaction_or_heterogeneity_finding():
    a, truth = cases.additive()
    _exact(a, truth)
    check_no_failed_scores(a.to_dict())
    assert max(e.value for e in a.evidence["interaction"].values()) < 1e-12
    assert max(e.value for e in a.evidence["ice_variance"].values()) < 1e-12


def test_swapped_levels_are_the_top_incidence_finding():
    a, truth = cases.swapped_levels()
    _exact(a, truth)
    check_no_failed_scores(a.to_dict())
    assert a.ranking("incidence")["features"].iloc[0] == ("grade",)
    sel = [s for s in a.selection if "incidence" in dict(s.reasons)]
    assert sel[0].features == ("grade",)


FAST = dict(pairs=False, utilities=("monotonicity", "lipschitz", "incidence", "slope", "ice_variance"))


def test_adult_capital_gain_effect_is_on_the_default_grid(shared_csv):
    from sklearn.ensemble import HistGradientBoostingClassifier

    df = shared_csv("adult/adult.csv", na_values="?", skipinitialspace=True).sample(4000, random_state=0)
    y = df.pop("income").rename("income")
    X = df[["age", "education_num", "capital_gain", "capital_loss", "hours_per_week", "fnlwgt"]]
    model = HistGradientBoostingClassifier(max_iter=60, random_state=0).fit(X, y)
    a = audit(model, X, y, config=AuditConfig(**FAST))
    r = a.pd("capital_gain")
    g = np.asarray(r.grid[0], dtype=float)
    above = float((X["capital_gain"] > 5000).mean())
    assert above > 0.03  # a material share of rows lies above 5,000 ...
    assert (g > 5000).sum() >= 3 and g.max() >= 15024  # ... and the grid reaches them
    f = r.average[0]
    assert f[np.searchsorted(g, 15024)] - f[0] > 0.3  # most of them earn over 50K
    # every grid point of the dominated features holds rows, so none drives importance alone
    for name in ("capital_gain", "capital_loss"):
        assert a.pd(name).counts.min() >= 1
    imp = a.importance.iloc[:, 0].sort_values(ascending=False)
    assert imp.index[0] != "capital_loss" and "capital_gain" in imp.index[:3]
    # centred ICE: fnlwgt is not 'most heterogeneous' and the positive class is named
    assert a.ranking("ice_variance")["features"].iloc[0] != ("fnlwgt",)
    assert "P(income = &gt;50K)" in a.to_html()


def test_bike_sharing_hour_keeps_every_hour_and_the_evening_peak(shared_csv):
    from sklearn.ensemble import HistGradientBoostingRegressor

    df = shared_csv("bike_sharing/hour.csv").sample(4000, random_state=0)
    y = df["cnt"].astype(float).rename("cnt")
    X = df[["hr", "temp", "hum", "workingday", "yr"]]
    model = HistGradientBoostingRegressor(max_iter=60, random_state=0).fit(X, y)
    a = audit(model, X, y, config=AuditConfig(**FAST))
    r = a.pd("hr")
    assert list(r.grid[0]) == list(range(24))
    f = r.average[0]
    assert 7 <= int(np.argmax(f[:12])) <= 9 and 16 <= 12 + int(np.argmax(f[12:])) <= 18
    assert f[17] > 3 * f[3] and f[23] < f[17] / 2
    assert a.evidence["monotonicity"][("hr",)].passed
    assert a.ranking("monotonicity")["features"].iloc[0] == ("hr",)

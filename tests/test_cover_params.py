"""Issue 30: the cover's key parameters are the ones set away from the defaults, then those that shape the
model's behaviour, at most a dozen; every other parameter is in the appendix."""

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from autopdp import AuditConfig
from autopdp import audit
from autopdp.report.context import build_context
from autopdp.report.params import COVER_PARAMS, split_params
from autopdp.auditing.summary import describe_model


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
    y = (X.a - X.c + rng.normal(size=n) > 0).astype(int)
    return X, y


def _names(rows):
    return [r["name"] for r in rows]


def test_histogram_boosting_leads_with_its_constraints_and_depth():
    X, y = _data()
    model = HistGradientBoostingClassifier(max_depth=3, monotonic_cst=[1, 0, -1], max_iter=30).fit(X, y)
    d = describe_model(model)
    assert sorted(d["changed_params"]) == ["max_depth", "max_iter", "monotonic_cst"]
    cover, rest = split_params(d["params"], d["changed_params"])
    names = _names(cover)
    assert names[:3] == ["monotonic_cst", "max_depth", "max_iter"]  # set by the user, behaviour first
    assert {"learning_rate", "l2_regularization", "max_leaf_nodes", "min_samples_leaf"} <= set(names)
    assert len(cover) <= COVER_PARAMS and all(r["set"] for r in cover[:3]) and not any(r["set"] for r in cover[3:])
    assert set(names) | set(_names(rest)) == set(d["params"]) and not set(names) & set(_names(rest))
    assert {"verbose", "tol", "validation_fraction"} <= set(_names(rest))


def test_random_forest_and_a_pipeline_use_the_final_steps_defaults():
    X, y = _data()
    rf = RandomForestClassifier(n_estimators=40, max_features=0.5, random_state=0)
    for model in (rf, make_pipeline(StandardScaler(), rf)):
        d = describe_model(model.fit(X, y))
        assert sorted(d["changed_params"]) == ["max_features", "n_estimators", "random_state"]
        cover, rest = split_params(d["params"], d["changed_params"])
        names = _names(cover)
        assert names[:3] == ["n_estimators", "max_features", "random_state"]
        assert {"max_depth", "min_samples_leaf", "criterion"} <= set(names)
        assert "verbose" in _names(rest) and "n_jobs" in _names(rest) and len(cover) <= COVER_PARAMS


def test_an_estimator_without_a_default_constructor_still_gets_the_behaviour_parameters():
    class Needs:
        def __init__(self, depth, max_depth=4, zeta=1):
            self.depth, self.max_depth, self.zeta = depth, max_depth, zeta

        def get_params(self, deep=False):
            return {"depth": self.depth, "max_depth": self.max_depth, "zeta": self.zeta}

    d = describe_model(Needs(3))
    assert "changed_params" not in d
    cover, rest = split_params(d["params"], d.get("changed_params"))
    assert _names(cover) == ["max_depth", "depth"] and _names(rest) == ["zeta"]


def test_the_report_puts_the_rest_in_the_appendix():
    X, y = _data()
    model = HistGradientBoostingClassifier(max_depth=3, monotonic_cst=[1, 0, -1], max_iter=30).fit(X, y)
    a = audit(model, X, y, config=AuditConfig(pairs=False, grid_resolution=8, utilities=("monotonicity",)), n_jobs=1)
    cover = build_context(a, formats=("html",))["cover"]
    assert _names(cover["key_params"])[:2] == ["monotonic_cst", "max_depth"]
    html = a.to_html()
    cover_html = html[html.index("Key parameters"):html.index("Review and sign-off")]
    assert "monotonic_cst *" in cover_html and "validation_fraction" not in cover_html
    appendix = html[html.index('id="appendix"'):]
    assert "Other model parameters: " in appendix and "validation_fraction" in appendix

"""One scale per model (issue 30): structure (interaction, ICE variance) on the link scale, levels on the response.

Glass boxes whose truth is known: a logistic model additive on the log-odds and a Poisson model additive on the
log scale have no interaction and no heterogeneity there (at materiality 0, the plain noise test), whatever their
probabilities or counts do; the same models given a product term are found (power); every sentence names its scale.
"""

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.linear_model import GammaRegressor, LinearRegression, LogisticRegression, PoissonRegressor, TweedieRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures, StandardScaler

from autopdp import AuditConfig
from autopdp import audit
from autopdp.pd.link import log_link_of

STRUCTURE = ("interaction", "ice_variance")
CONFIG = AuditConfig(materiality=0.0, noise_draws=200, max_noise_draws=2000)


def _data(seed, n=1200):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"]), rng


def _logistic(seed, interaction=0.0):
    X, rng = _data(seed)
    eta = 1.5 * X.a - 2.0 * X.b + X.c + interaction * X.a * X.b
    y = (rng.random(len(X)) < 1 / (1 + np.exp(-eta))).astype(int)
    if interaction:
        model = make_pipeline(PolynomialFeatures(2, interaction_only=True, include_bias=False), LogisticRegression())
    else:
        model = LogisticRegression()
    return model.fit(X, y), X, y


def _poisson(seed, interaction=0.0):
    X, rng = _data(seed)
    y = rng.poisson(np.exp(0.5 * X.a - 0.7 * X.b + 0.3 * X.c + interaction * X.a * X.b))
    if interaction:
        model = make_pipeline(PolynomialFeatures(2, interaction_only=True, include_bias=False), StandardScaler(),
                              PoissonRegressor(alpha=1e-6, max_iter=1000))
    else:
        model = make_pipeline(StandardScaler(), PoissonRegressor(alpha=1e-6))
    return model.fit(X, y), X, y


def _findings(a, criterion):
    return [k for k, e in a.evidence.get(criterion, {}).items() if e.significant]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("make, scale", [(_logistic, "log-odds"), (_poisson, "log")])
def test_additive_model_has_no_structure_finding_on_its_link_scale(make, scale, seed):
    model, X, y = make(seed)
    a = audit(model, X, y, config=CONFIG)
    for criterion in STRUCTURE:
        items = a.evidence[criterion]
        assert items, criterion
        assert not _findings(a, criterion), (criterion, [(k, e.why) for k, e in items.items()])
        for e in items.values():
            assert e.details["scale"].split(" (")[0] == scale
            assert f"on the {scale} scale" in e.statistic and f"on the {scale} scale" in e.why
            assert e.value < 1e-9


def test_additive_model_is_not_additive_on_its_response_and_the_rule_is_named():
    """The same Poisson model judged on its counts (ice_variance_scale="response") interacts: the bug the link
    scale removes; the level criteria stay on the response and say so."""
    model, X, y = _poisson(0)
    on_response = audit(model, X, y, config=AuditConfig(materiality=0.0, ice_variance_scale="response"))
    assert _findings(on_response, "interaction") and _findings(on_response, "ice_variance")
    assert all("prediction scale" in e.statistic for e in on_response.evidence["interaction"].values())
    a = audit(model, X, y, config=CONFIG)
    for criterion in ("monotonicity", "importance_1d"):
        for e in a.evidence[criterion].values():
            assert "on the prediction scale" in e.statistic and e.details["scale"] == "prediction"


@pytest.mark.parametrize("make, scale", [(_logistic, "log-odds"), (_poisson, "log")])
def test_a_real_interaction_on_the_link_scale_is_found(make, scale):
    model, X, y = make(0, interaction=0.8)
    a = audit(model, X, y, config=AuditConfig(materiality=0.05))
    found = _findings(a, "interaction")
    assert found == [("a", "b")], [(k, e.why) for k, e in a.evidence["interaction"].items()]
    e = a.evidence["interaction"][("a", "b")]
    assert f"Greenwell interaction on the {scale} scale" in e.why and e.value > e.threshold > 0
    assert set(_findings(a, "ice_variance")) == {("a",), ("b",)}
    assert all(f"on the {scale} scale" in e.why for e in a.evidence["ice_variance"].values())


def test_boosted_poisson_constrained_additive_has_no_structure_finding():
    X, rng = _data(3, n=2000)
    y = rng.poisson(np.exp(0.5 * X.a - 0.7 * X.b + 0.3 * np.sin(2 * X.c)))
    model = HistGradientBoostingRegressor(loss="poisson", interaction_cst=[[0], [1], [2]], max_iter=60,
                                          random_state=0).fit(X, y)
    a = audit(model, X, y, config=CONFIG)
    for criterion in STRUCTURE:
        assert not _findings(a, criterion), [(k, e.why) for k, e in a.evidence[criterion].items()]
        assert all(e.details["scale"].startswith("log (") for e in a.evidence[criterion].values())


def test_the_log_link_rule_reads_type_and_parameters_only():
    assert log_link_of(PoissonRegressor()) == "PoissonRegressor"
    assert log_link_of(GammaRegressor()) == "GammaRegressor"
    assert log_link_of(make_pipeline(StandardScaler(), PoissonRegressor())) == "PoissonRegressor"
    assert log_link_of(TweedieRegressor(power=1.5)).startswith("TweedieRegressor")
    assert log_link_of(TweedieRegressor(power=0.0)) == ""  # link="auto" with power 0: identity
    assert log_link_of(TweedieRegressor(power=0.0, link="log")).startswith("TweedieRegressor")
    assert log_link_of(TweedieRegressor(power=2.0, link="identity")) == ""
    assert log_link_of(HistGradientBoostingRegressor(loss="poisson")).startswith("HistGradientBoostingRegressor")
    assert log_link_of(HistGradientBoostingRegressor()) == ""
    assert log_link_of(LinearRegression()) == ""


def test_the_interaction_table_names_its_scale_in_every_column():
    """Issue 30: the interaction table's class columns say the scale the statistic was computed on."""
    from autopdp.report.context import build_context

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=300), "b": rng.normal(size=300), "c": rng.normal(size=300)})
    y = (X.a + X.b + rng.normal(size=300) > 0).astype(int)
    a = audit(LogisticRegression().fit(X, y), X, y,
              config=AuditConfig(grid_resolution=6, grid_resolution_2d=4, noise_draws=50, max_noise_draws=100))
    table = build_context(a, formats=("html",))["interaction_table"]
    assert table["columns"] and all(c.endswith(": log-odds scale") for c in table["columns"]), table["columns"]

"""Calibration of the findings' noise tests: null cases (level) and planted effects of known size (power).

Shared by ``benchmarks/bench_calibration.py`` (prints the rates) and
``tests/test_calibration.py`` (asserts them).  Materiality is 0 throughout, so
the noise test alone decides.

Level
    Each null case has the effect absent in the population for the PDPs it
    names (``null``: criterion -> the PDPs whose effect is absent); a run is a
    *false finding* for a criterion when any of those PDPs is a finding.  With
    the multiple-testing adjustment, the rate of runs with a false finding is
    the family-wise error under the complete null: at most the nominal 5%.

Power
    A planted effect whose size on the criterion's own scale is k times the
    *noise sd*: the density-weighted root-mean-square standard error of the
    quantity the criterion compares (the PD, the difference of two PDs, the
    bins' observed-minus-predicted means), computed from the design below.
    Power is the rate of runs in which the planted PDP is a finding.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from autopdp import AuditConfig
from autopdp import audit

N = 400
LEVEL = 0.05
UTILITIES_1D = ("monotonicity", "lipschitz", "incidence", "slope", "ice_variance")


def _frame(rng, n=N, k=3, names=("x1", "x2", "x3")):
    return pd.DataFrame(rng.standard_normal((n, k)), columns=list(names[:k]))


def _cfg(**kw):
    base = dict(pairs=False, materiality=0.0, utilities=UTILITIES_1D)
    base.update(kw)
    return AuditConfig(**base)


def _product(d):
    return d["x1"].to_numpy() * d["x2"].to_numpy()


def _passed(a, criterion, features):
    e = a.evidence.get(criterion, {}).get(tuple(features))
    return bool(e is not None and e.passed)


def _any_passed(a, criterion, items, *, kind=None):
    by = a.evidence.get(criterion, {})
    return any(by[k].passed and (kind is None or by[k].kind == kind) for k in items if k in by)


# ------------------------------------------------------------------ null cases
def null_product(seed: int, weighted: bool = False) -> dict:
    """f = x1 * x2 with E[x2] = E[x1] = 0: every 1D PD is flat in the population; x3 is unused.

    The model is the truth (y = f + N(0, 1)), features independent: incidence's null holds too.
    Weighted: 30 rows weigh 25 (the issue's case).
    """
    rng = np.random.default_rng(seed)
    X = _frame(rng)
    y = _product(X) + rng.standard_normal(N)
    w = None
    if weighted:
        w = np.ones(N)
        w[rng.choice(N, 30, replace=False)] = 25.0
    a = audit(_product, X, y, config=_cfg(), sample_weight=w)
    ones = [("x1",), ("x2",), ("x3",)]
    return {
        "monotonicity": _any_passed(a, "monotonicity", ones),
        "lipschitz": _any_passed(a, "lipschitz", ones),
        "slope": _any_passed(a, "slope", ones),
        "importance": _any_passed(a, "importance_1d", ones),
        "incidence": _any_passed(a, "incidence", ones),
        "ice_variance": _any_passed(a, "ice_variance", [("x3",)]),
    }


def _logistic_data(rng, correlated: bool):
    X = _frame(rng)
    if correlated:
        X["x2"] = 0.7 * X["x1"] + np.sqrt(1 - 0.49) * X["x2"]
    return X


def _logistic_truth(d):
    eta = 1.0 * d["x1"].to_numpy() - 0.8 * d["x2"].to_numpy() + 0.5 * d["x3"].to_numpy()
    return 1.0 / (1.0 + np.exp(-eta))


def null_logistic(seed: int, correlated: bool = False, weighted: bool = False) -> dict:
    """A logistic model that is the data's generating function (additive on the log-odds).

    Incidence: the calibration null holds always; with independent features the
    dependence null holds too (with correlated ones it is false: a dependence
    finding there is true, so only calibration findings count).  ICE variance:
    no heterogeneity on the log-odds scale for any feature.
    """
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(seed)
    X = _logistic_data(rng, correlated)
    y = (rng.random(N) < _logistic_truth(X)).astype(int)
    model = LogisticRegression()
    model.fit(X, y)
    model.coef_ = np.array([[1.0, -0.8, 0.5]])
    model.intercept_ = np.array([0.0])
    w = None
    if weighted:
        w = np.ones(N)
        w[rng.choice(N, 30, replace=False)] = 25.0
    a = audit(model, X, y, config=_cfg(utilities=("incidence", "ice_variance")), sample_weight=w)
    ones = [("x1",), ("x2",), ("x3",)]
    return {
        "incidence": _any_passed(a, "incidence", ones, kind="calibration" if correlated else None),
        "ice_variance": _any_passed(a, "ice_variance", ones),
    }


def null_exp_regression(seed: int) -> dict:
    """y = exp(1.5 x1) + x2 + N(0, 1), the model is that function: incidence's null holds (skewed target)."""
    rng = np.random.default_rng(seed)
    X = _frame(rng)

    def f(d):
        return np.exp(1.5 * d["x1"].to_numpy()) + d["x2"].to_numpy()

    y = f(X) + rng.standard_normal(N)
    a = audit(f, X, y, config=_cfg(utilities=("incidence",)))
    return {"incidence": _any_passed(a, "incidence", [("x1",), ("x2",), ("x3",)])}


def null_similarity(seed: int, weighted: bool = False) -> dict:
    """A = x1 x2 against B = x1 x3 (all independent, mean 0): both models' PDs are flat in the population,
    so no feature's PD shape differs; the sample's differences are noise the paired test must see."""
    rng = np.random.default_rng(seed)
    X = _frame(rng)

    def b(d):
        return d["x1"].to_numpy() * d["x3"].to_numpy()

    w = None
    if weighted:
        w = np.ones(N)
        w[rng.choice(N, 30, replace=False)] = 25.0
    a = audit(_product, X, compare={"b": b}, config=_cfg(utilities=("similarity",)), sample_weight=w)
    return {"similarity": _any_passed(a, "similarity:b", [("x1",), ("x2",), ("x3",)])}


def null_interaction(seed: int) -> dict:
    """f = x1 x2 x3 (independent, mean 0): every 2D PD is additive (0) in the population."""
    rng = np.random.default_rng(seed)
    X = _frame(rng)

    def f(d):
        return d["x1"].to_numpy() * d["x2"].to_numpy() * d["x3"].to_numpy()

    a = audit(f, X, config=AuditConfig(materiality=0.0, utilities=("slope",), max_rows_2d=None,
                                        criteria_2d=("interaction",)))
    return {"interaction": _any_passed(a, "interaction", [("x1", "x2"), ("x1", "x3"), ("x2", "x3")])}


NULL_CASES = {
    "x1*x2, model = truth": lambda s: null_product(s),
    "x1*x2, model = truth, 30 rows weigh 25": lambda s: null_product(s, weighted=True),
    "logistic = truth, independent": lambda s: null_logistic(s),
    "logistic = truth, correlated x1~x2": lambda s: null_logistic(s, correlated=True),
    "logistic = truth, independent, weighted": lambda s: null_logistic(s, weighted=True),
    "exp(1.5 x1) + x2 = truth": null_exp_regression,
    "similarity x1*x2 vs x1*x3": lambda s: null_similarity(s),
    "similarity x1*x2 vs x1*x3, weighted": lambda s: null_similarity(s, weighted=True),
    "interaction x1*x2*x3": null_interaction,
}


# ------------------------------------------------------------------ planted effects (power)
#: the noise sd of the x1*x2 design's PDs: sd(x2) / sqrt(N) at grid value 1, root-mean-square over x1 ~ N(0, 1)
PD_NOISE_SD = 1.0 / np.sqrt(N)


def _unit_gap(shape_fn, criterion) -> float:
    """The criterion's value for the planted shape at size 1, on the audited grid (exact: a noise-free audit)."""
    rng = np.random.default_rng(12345)
    X = _frame(rng, n=20_000)
    a = audit(lambda d: shape_fn(d["x1"].to_numpy()), X,
              config=_cfg(utilities=(criterion,), subsample=500, max_rows=N * 10))
    return float(a.score("x1", criterion).value)


def _bump(x):
    return x * x


def _step(x):
    return (x > 0).astype(float)


def power_case(criterion: str, k: float, seed: int) -> bool:
    """One run of a planted effect of k noise sd under ``criterion``; True when it is a finding."""
    rng = np.random.default_rng(seed)
    X = _frame(rng)
    if criterion in ("slope", "importance"):
        c = k * PD_NOISE_SD  # importance of c x1 = c sd(x1 grid) ~ c; slope noise is sd(x2) / sqrt(N) per unit
        a = audit(lambda d: _product(d) + c * d["x1"].to_numpy(), X, config=_cfg(utilities=("slope",)))
        return _passed(a, "slope" if criterion == "slope" else "importance_1d", ("x1",))
    if criterion == "monotonicity":
        c = k * PD_NOISE_SD / UNIT["monotonicity"]()
        a = audit(lambda d: _product(d) + c * _bump(d["x1"].to_numpy()), X, config=_cfg(utilities=("monotonicity",)))
        return _passed(a, "monotonicity", ("x1",))
    if criterion == "lipschitz":
        c = k * PD_NOISE_SD / UNIT["lipschitz"]()
        a = audit(lambda d: _product(d) + c * _step(d["x1"].to_numpy()), X, config=_cfg(utilities=("lipschitz",)))
        return _passed(a, "lipschitz", ("x1",))
    if criterion == "incidence":
        # the truth is x1 x2 + N(0, 1); the model adds c x1: its bins' observed-minus-predicted means are -c x1.
        # noise sd: the residual sd 1 over ~N/20 rows per bin
        c = k * np.sqrt(20.0 / N)
        y = _product(X) + rng.standard_normal(N)
        a = audit(lambda d: _product(d) + c * d["x1"].to_numpy(), X, y, config=_cfg(utilities=("incidence",)))
        return _passed(a, "incidence", ("x1",))
    if criterion == "similarity":
        # A = x1 x2 + c x1 against B = x1 x3: the paired difference's noise sd is sqrt(2) / sqrt(N)
        c = k * np.sqrt(2.0) * PD_NOISE_SD
        a = audit(lambda d: _product(d) + c * d["x1"].to_numpy(), X,
                  compare={"b": lambda d: d["x1"].to_numpy() * d["x3"].to_numpy()},
                  config=_cfg(utilities=("similarity",)))
        return _passed(a, "similarity:b", ("x1",))
    if criterion == "interaction":
        # f = x1 x2 x3 + c x1 x2: the (x1, x2) surface's interaction is ~c; its cells' noise sd is 1 / sqrt(N)
        c = k * PD_NOISE_SD

        def f(d):
            return d["x1"].to_numpy() * d["x2"].to_numpy() * (d["x3"].to_numpy() + c)
        a = audit(f, X, config=AuditConfig(materiality=0.0, utilities=("slope",), max_rows_2d=None,
                                            criteria_2d=("interaction",)))
        return _passed(a, "interaction", ("x1", "x2"))
    if criterion == "ice_variance":
        # heterogeneity c x1 x3 beside x2: the spread's z statistic does not depend on c
        c = k * PD_NOISE_SD
        a = audit(lambda d: d["x2"].to_numpy() + c * d["x1"].to_numpy() * d["x3"].to_numpy(), X,
                  config=_cfg(utilities=("ice_variance",)))
        return _passed(a, "ice_variance", ("x1",))
    raise ValueError(criterion)


_UNIT_CACHE: dict[str, float] = {}


def _cached(name, fn):
    def get():
        if name not in _UNIT_CACHE:
            _UNIT_CACHE[name] = fn()
        return _UNIT_CACHE[name]
    return get


UNIT = {
    "monotonicity": _cached("monotonicity", lambda: _unit_gap(_bump, "monotonicity")),
    "lipschitz": _cached("lipschitz", lambda: _unit_gap(_step, "lipschitz")),
}

POWER_CRITERIA = ("slope", "importance", "monotonicity", "lipschitz", "incidence", "similarity", "interaction",
                  "ice_variance")


def rate(fn, seeds) -> dict:
    """{criterion: share of runs where fn(seed)[criterion] is True}."""
    runs = [fn(s) for s in seeds]
    return {c: float(np.mean([r[c] for r in runs])) for c in runs[0]}


def binomial_slack(n: int, level: float = LEVEL, alpha: float = 0.01) -> int:
    """The most false findings in n runs a test at ``level`` gives with probability >= 1 - alpha."""
    from scipy import stats

    return int(stats.binom.ppf(1 - alpha, n, level))


def null_p_values(seed: int) -> np.ndarray:
    """Unadjusted p-values of the x1*x2 null case (slope, importance, monotonicity, lipschitz) for uniformity."""
    rng = np.random.default_rng(seed)
    X = _frame(rng)
    a = audit(_product, X, config=_cfg(utilities=("slope", "monotonicity", "lipschitz")))
    out = []
    for c in ("slope", "importance_1d", "monotonicity", "lipschitz"):
        out.extend(e.p_value for e in a.evidence[c].values() if np.isfinite(e.p_value) and e.value > 1e-9)
    return np.asarray(out)


__all__ = ["NULL_CASES", "POWER_CRITERIA", "power_case", "rate", "binomial_slack", "null_p_values"]


# ================================================================== issue 29: the awkward cases
# Each case returns {criterion: Outcome} for the PDPs whose null holds.  An *untested* PDP (fewer than 30
# effective rows, or Cochran's rule fails: the test is not run, with the reason) is not a finding: it is
# counted beside the false-finding rate, never in it.  Every null is conditional on the fitted model (the
# model is held fixed, only the audit rows vary): the learner's variance is not tested here.


@dataclass
class Outcome:
    """One run, one criterion, over the PDPs whose null holds."""

    finding: bool  #: any of them a finding (after the multiple-testing adjustment)
    items: int  #: how many PDPs
    untested: int  #: of which untested (neither a finding nor noise)
    p: list = field(default_factory=list)  #: unadjusted p-values of the tested ones (immaterial: p = 1)


def _outcome(a, criterion, items, *, kind=None) -> Outcome:
    by = a.evidence.get(criterion, {})
    es = [by[k] for k in items if k in by]
    return Outcome(
        finding=any(e.passed and (kind is None or e.kind == kind) for e in es),
        items=len(es),
        untested=sum(e.untested for e in es),
        p=[float(e.p_value) for e in es if not e.untested and np.isfinite(e.p_value)],
    )


def _flat_product_weighted(seed: int, n: int, heavy: int, weight: float, subsample=1000) -> dict:
    """f = x1 x2 (x3 unused), y = f + N(0, 1), model = truth: every 1D PD flat in the population (as
    :func:`null_product`), with ``heavy`` of ``n`` rows weighing ``weight``; ICE rows: ``subsample``."""
    rng = np.random.default_rng(seed)
    X = _frame(rng, n=n)
    y = _product(X) + rng.standard_normal(n)
    w = np.ones(n)
    w[rng.choice(n, heavy, replace=False)] = weight
    a = audit(_product, X, y, config=_cfg(subsample=subsample), sample_weight=w)
    ones = [("x1",), ("x2",), ("x3",)]
    out = {c: _outcome(a, c, ones) for c in ("monotonicity", "lipschitz", "slope")}
    out["importance"] = _outcome(a, "importance_1d", ones)
    out["incidence"] = _outcome(a, "incidence", ones)
    out["ice_variance"] = _outcome(a, "ice_variance", [("x3",)])
    return out


def _skew_factor(x2):
    """e^{1.5 x2} less its population mean e^{1.125}: mean 0, skewness ~ 33."""
    return np.exp(1.5 * x2) - np.exp(1.5 ** 2 / 2)


def skewed_ice(seed: int, n: int = 100) -> dict:
    """ICE = sin(x1) (e^{1.5 x2} - mean): every row's x1-curve is sin scaled by a skewed factor; both PDs
    (x1 and x2) are flat in the population (E sin x1 = 0, E factor = 0)."""
    rng = np.random.default_rng(seed)
    X = _frame(rng, n=n, k=2)

    def f(d):
        return np.sin(d["x1"].to_numpy()) * _skew_factor(d["x2"].to_numpy())

    a = audit(f, X, config=_cfg(utilities=("monotonicity", "lipschitz", "slope")))
    both = [("x1",), ("x2",)]
    out = {c: _outcome(a, c, both) for c in ("monotonicity", "lipschitz", "slope")}
    out["importance"] = _outcome(a, "importance_1d", both)
    return out


def skewed_two_valued(seed: int, n: int = 150) -> dict:
    """x1 in {0, 1} (fair coin), ICE of x1 = (x1 - 0.5) (e^{1.5 x2} - mean): both PDs flat in the population."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"x1": rng.integers(0, 2, n), "x2": rng.standard_normal(n)})

    def f(d):
        return (d["x1"].to_numpy() - 0.5) * _skew_factor(d["x2"].to_numpy())

    a = audit(f, X, config=_cfg(utilities=("monotonicity", "slope")))
    both = [("x1",), ("x2",)]
    out = {c: _outcome(a, c, both) for c in ("monotonicity", "slope")}
    out["importance"] = _outcome(a, "importance_1d", both)
    return out


STEEP = (12.0, -8.0, 6.0)


class ProbaOnly:
    """A classifier's probabilities without its decision_function (the clipped log-odds path)."""

    def __init__(self, model):
        self.model, self.classes_ = model, model.classes_

    def predict_proba(self, X):
        return self.model.predict_proba(X)

    def predict(self, X):
        return self.model.predict(X)


def saturated_logistic(seed: int, n: int = 600, proba_only: bool = False, materiality: float = 0.0) -> dict:
    """Additive logistic with steep coefficients (12, -8, 6), the data's generating function: some
    probabilities on the ICE curves are exactly 0 or 1 in float64.  ICE variance: additive on the margin
    (no heterogeneity); incidence: calibrated, independent features.

    ``proba_only``: the model without its decision_function, so the ICE spread is measured on log-odds of
    probabilities clipped to [2**-53, 1 - 2**-53].  The clipping itself spreads the curves on that scale (a
    true departure, ~0.4-0.7 log-odds against a threshold of ~0.77 at materiality 0.05), so that variant's
    null ("the spread is at most the threshold") holds at the default materiality, not at 0."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(seed)
    X = _frame(rng, n=n)
    eta = X.to_numpy() @ np.array(STEEP)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-eta))).astype(int)
    model = LogisticRegression().fit(X, y)  # fitted for its form; the coefficients are set to the truth's
    model.coef_ = np.array([STEEP])
    model.intercept_ = np.zeros(1)
    a = audit(ProbaOnly(model) if proba_only else model, X, y,
              config=_cfg(utilities=("incidence", "ice_variance"), materiality=materiality))
    ones = [("x1",), ("x2",), ("x3",)]
    return {"incidence": _outcome(a, "incidence", ones), "ice_variance": _outcome(a, "ice_variance", ones)}


#: the staircase model's truth on the log-odds: steep in x1, curved in x2, wavy in x3 (one feature per tree)
def _staircase_eta(d):
    return 1.2 * d["x1"].to_numpy() - 0.8 * d["x2"].to_numpy() ** 2 + 0.5 * np.sin(6 * d["x3"].to_numpy())


def _staircase_rows(rng, n, rho=0.0):
    """x1 ~ U(-2, 2), x3 ~ U(0, 1) and x2 ~ N(0, 1), x2 correlated ``rho`` with x1 (independent at 0)."""
    x1 = rng.uniform(-2, 2, n)
    x2 = rho * x1 / np.sqrt(4.0 / 3.0) + np.sqrt(1.0 - rho * rho) * rng.standard_normal(n)
    return pd.DataFrame({"x1": x1, "x2": x2, "x3": rng.uniform(0, 1, n)})


def staircase_model():
    """A gradient-boosted classifier, one feature per tree, fitted once on 20,000 rows of the log-odds above:
    its predictions are staircases in each feature, as every tree model's are."""
    if "staircase" not in _UNIT_CACHE:
        from sklearn.ensemble import HistGradientBoostingClassifier

        rng = np.random.default_rng(2024)
        X = _staircase_rows(rng, 20_000)
        y = (rng.random(len(X)) < 1.0 / (1.0 + np.exp(-_staircase_eta(X)))).astype(int)
        _UNIT_CACHE["staircase"] = HistGradientBoostingClassifier(
            max_iter=60, interaction_cst=[[0], [1], [2]], random_state=0).fit(X, y)
    return _UNIT_CACHE["staircase"]


def staircase(seed: int, n: int = 3000, rho: float = 0.0, weighted: bool = False) -> dict:
    """The staircase model as the truth (each row's class drawn with the model's own probability), on ``n``
    fresh rows with the default ICE subsample (1,000 of them): the calibration null holds for every feature,
    and with independent features (``rho`` 0) the dependence null too, so every incidence finding is false.
    With ``rho`` > 0 x1 and x2 are correlated: their dependence findings are true (``power``).  ``weighted``:
    50 rows weigh 20."""
    model = staircase_model()
    rng = np.random.default_rng(seed)
    X = _staircase_rows(rng, n, rho)
    y = (rng.random(n) < model.predict_proba(X)[:, 1]).astype(int)
    w = None
    if weighted:
        w = np.ones(n)
        w[rng.choice(n, 50, replace=False)] = 20.0
    a = audit(model, X, y, config=_cfg(utilities=("incidence",)), sample_weight=w)
    ones = [("x1",), ("x2",), ("x3",)]
    if rho:
        return {"dependence": _outcome(a, "incidence", [("x1",), ("x2",)], kind="dependence")}
    return {"incidence": _outcome(a, "incidence", ones)}


AWKWARD_CASES = {
    "5,000 rows, 10 weigh 1,000, ICE subsample 1,000 (n_eff 22.5)":
        lambda s: _flat_product_weighted(s, 5000, 10, 1000.0),
    "5,000 rows, 50 weigh 100, ICE subsample 1,000 (n_eff ~196)":
        lambda s: _flat_product_weighted(s, 5000, 50, 100.0),
    "400 rows, 3 weigh 1,000, every row kept (n_eff 3.8)":
        lambda s: _flat_product_weighted(s, 400, 3, 1000.0),
    "skewed ICE sin(x1)(e^{1.5 x2} - mean), n = 100": skewed_ice,
    "skewed ICE, two-valued x1, n = 150": skewed_two_valued,
    "saturated logistic (12, -8, 6), margin, n = 600": saturated_logistic,
    "saturated logistic, probabilities only (clipped log-odds), materiality 0.05":
        lambda s: saturated_logistic(s, proba_only=True, materiality=0.05),
    "staircase (a tree model = truth), independent, 3,000 rows": staircase,
    "staircase (a tree model = truth), independent, 3,000 rows, 50 weigh 20":
        lambda s: staircase(s, weighted=True),
}

#: what each awkward case measured before issue 29 (the issue's figures), printed beside the new ones
BEFORE = {
    "5,000 rows, 10 weigh 1,000, ICE subsample 1,000 (n_eff 22.5)": "slope and importance 41.7% of 60 seeds",
    "400 rows, 3 weigh 1,000, every row kept (n_eff 3.8)": "28.5% of 200 seeds",
    "skewed ICE sin(x1)(e^{1.5 x2} - mean), n = 100": "11.3% of 300 seeds",
    "skewed ICE, two-valued x1, n = 150": "13.0%",
    "saturated logistic (12, -8, 6), margin, n = 600": "ice_variance on every feature, 60/60",
    "staircase (a tree model = truth), independent, 3,000 rows": "incidence (dependence) 21 of 40",
}


# ------------------------------------------------------------------ effects exactly at the materiality threshold
THRESHOLD_N = 300
THRESHOLD_CRITERIA = ("slope", "importance", "monotonicity", "lipschitz", "interaction", "ice_variance")
#: the slope bound of the Lipschitz case (explicit, so the null is about a fixed bound)
LIPSCHITZ_BOUND = 1.0


def _threshold_model(criterion):
    """The model whose effect under ``criterion`` is planted on x1 (the pair (x1, x2) for interaction); x2 (x3)
    adds the rows' spread that makes the PD noisy."""
    if criterion in ("slope", "importance"):
        return lambda d: d["x1"].to_numpy() * (0.5 + d["x2"].to_numpy())  # PD 0.5 x1
    if criterion == "monotonicity":
        return lambda d: 0.3 * d["x1"].to_numpy() ** 2 + _product(d)  # PD 0.3 x1^2: a U, not monotone
    if criterion == "lipschitz":
        return lambda d: np.tanh(3.0 * d["x1"].to_numpy()) + _product(d)  # PD tanh(3 x1): slope 3 at 0, bound 1
    if criterion == "interaction":
        return lambda d: _product(d) * (d["x3"].to_numpy() + 0.5)  # 2D PD of (x1, x2): 0.5 x1 x2
    if criterion == "ice_variance":
        return lambda d: d["x2"].to_numpy() + 0.5 * d["x1"].to_numpy() * d["x3"].to_numpy()  # x1's curves fan out
    raise ValueError(criterion)


def _threshold_audit(criterion, X, materiality):
    (e, _), f = _threshold_audit_full(criterion, X, materiality)
    return e, f


def _threshold_audit_full(criterion, X, materiality):
    """``((evidence item, audit), model)`` of one at-threshold run."""
    f = _threshold_model(criterion)
    if criterion == "interaction":
        cfg = AuditConfig(materiality=materiality, utilities=("slope",), pairs=[("x1", "x2")], max_rows_2d=None,
                          criteria_2d=("interaction",))
        a = audit(f, X, config=cfg)
        return (a.evidence["interaction"][("x1", "x2")], a), f
    utilities = {"importance": ("slope",)}.get(criterion, (criterion,))
    # x1 alone: one PDP per criterion, so the multiple-testing adjustment leaves its p-value as it is
    cfg = AuditConfig(pairs=False, materiality=materiality, utilities=utilities, features=("x1",),
                      lipschitz={"x1": LIPSCHITZ_BOUND} if criterion == "lipschitz" else {})
    key = "importance_1d" if criterion == "importance" else criterion
    a = audit(f, X, config=cfg)
    return (a.evidence[key][("x1",)], a), f


_MATERIALITY_CACHE: dict[str, float] = {}


def population_materiality(criterion: str, rows: int = 200_000) -> float:
    """The materiality that puts the planted effect exactly at the threshold: the population's statistic over
    the population's prediction sd (200,000 rows, materiality 0; for the slope, the PD's change across the
    steepest interval, the quantity the slope's threshold is judged on)."""
    if criterion not in _MATERIALITY_CACHE:
        X = _frame(np.random.default_rng(123), n=rows)
        e, f = _threshold_audit(criterion, X, 0.0)
        value = abs(float(e.details["change"])) if criterion == "slope" else float(e.value)
        _MATERIALITY_CACHE[criterion] = value / float(np.std(f(X)))
    return _MATERIALITY_CACHE[criterion]


def _truth_on_grid(criterion: str, e, a) -> float:
    """The criterion's statistic of the *population* PD on this run's own grid, with this run's density weights:
    the quantity the minimum-effect null is about, given the grid and the weights the audit chose (both are
    data-derived, and the statistic depends on them: Greenwell's interaction moves with the spread of the grid
    points by several per cent from sample to sample).  The population PDs are known in closed form (x2 and x3
    have mean 0 and variance 1): slope and importance 0.5 x1, monotonicity 0.3 x1^2, Lipschitz tanh(3 x1) (bound
    1), interaction 0.5 x1 x2, and x1's centred ICE curves 0.5 x3 (x1 - mean)."""
    from dataclasses import replace

    from autopdp.scores.importance import flatness, interaction_statistic, marginal_weights
    from autopdp.scores.utilities import score_lipschitz, score_monotonicity

    r = next(r for r in a.results if tuple(r.features) == tuple(e.features))
    w = marginal_weights(r)
    g = [np.asarray(v, dtype=float) for v in r.grid]
    if criterion == "slope":  # the PD is linear: its change over the whole grid
        return 0.5 * float(g[0][-1] - g[0][0])
    if criterion == "importance":
        return float(flatness(0.5 * g[0][None], r.kinds[0], axis=-1, weights=w[0])[0])
    if criterion == "monotonicity":
        truth = replace(r, average=(0.3 * g[0] ** 2)[None])
        return float(score_monotonicity(truth, target_index=0, weights=w[0], loss=a.config.loss).value)
    if criterion == "lipschitz":
        truth = replace(r, average=np.tanh(3.0 * g[0])[None])
        return float(score_lipschitz(truth, target_index=0, weights=w[0], slopes=[LIPSCHITZ_BOUND],
                                     loss=a.config.loss).value)
    if criterion == "interaction":
        return float(interaction_statistic((0.5 * np.outer(g[0], g[1]))[None], r.kinds, w)[0][0])
    if criterion == "ice_variance":
        d = g[0] - w[0] @ g[0]
        return 0.5 * float(np.sqrt(w[0] @ (d * d)))
    raise ValueError(criterion)


def _scale_of(criterion: str, e) -> float:
    """The prediction sd the threshold is a multiple of (read from a run at materiality 1)."""
    return float(e.details["change_threshold"]) if criterion == "slope" else float(e.threshold)


def at_threshold(criterion: str, seed: int, multiple: float = 1.0) -> Outcome:
    """One run of ``THRESHOLD_N`` rows with the effect at ``multiple`` x the materiality threshold (1: the
    minimum-effect null holds at its least favourable point; 2: power).

    The null is conditional on what the audit derives from the data before it tests: the grid, the density
    weights and the threshold (materiality x this sample's prediction sd).  So the materiality is set per run to
    put the population PD's statistic *on this run's grid* exactly at this run's threshold
    (:func:`_truth_on_grid`); :func:`population_materiality` is the same ratio on 200,000 rows, printed for
    scale."""
    X = _frame(np.random.default_rng(seed), n=THRESHOLD_N)
    probe, _ = _threshold_audit_full(criterion, X, 1.0)
    e1, a1 = probe
    materiality = _truth_on_grid(criterion, e1, a1) / _scale_of(criterion, e1)
    e, _ = _threshold_audit(criterion, X, materiality / multiple)
    return Outcome(finding=e.passed, items=1, untested=int(e.untested),
                   p=[float(e.p_value)] if not e.untested and np.isfinite(e.p_value) else [])


# ------------------------------------------------------------------ summaries
def clopper_pearson(k: int, n: int, conf: float = 0.95) -> tuple:
    """The exact (Clopper-Pearson) interval of a binomial proportion k / n."""
    from scipy import stats

    a = (1 - conf) / 2
    lo = float(stats.beta.ppf(a, k, n - k + 1)) if k else 0.0
    hi = float(stats.beta.ppf(1 - a, k + 1, n - k)) if k < n else 1.0
    return lo, hi


def summarize(runs: list) -> dict:
    """``runs``: a list of {criterion: Outcome}; returns {criterion: dict(k, n, lo, hi, untested, items, p)}."""
    out = {}
    for c in runs[0]:
        rs = [r[c] for r in runs]
        k, n = sum(r.finding for r in rs), len(rs)
        lo, hi = clopper_pearson(k, n)
        out[c] = dict(k=k, n=n, lo=lo, hi=hi, items=sum(r.items for r in rs), untested=sum(r.untested for r in rs),
                      p=np.asarray([p for r in rs for p in r.p], dtype=float))
    return out


def ks_greater(p) -> float:
    """One-sided Kolmogorov-Smirnov p-value against uniform p-values (small: too many small p-values); NaN
    with fewer than 5."""
    from scipy import stats

    p = np.asarray(p, dtype=float)
    return float(stats.kstest(p, "uniform", alternative="greater").pvalue) if p.size >= 5 else float("nan")


def autopdp_version() -> str:
    import autopdp

    return getattr(autopdp, "__version__", "?")


__all__ += ["ProbaOnly", "autopdp_version", "AWKWARD_CASES", "THRESHOLD_CRITERIA", "Outcome", "at_threshold", "population_materiality",
            "clopper_pearson", "summarize", "ks_greater"]


# ================================================================== issue 31: findings that survive a refit
# A boosted classifier trained on a target that depends on x1..x4 only (x2 through a square, x3 and x4 also through
# their product), with two pure-noise features z1, z2.  The model's own tests find patterns on every feature (at the
# fitted-model level a boosted fit to noise is real); the learner-level test (refits on half-samples, Nadeau-Bengio
# corrected) must call the planted patterns robust and the noise ones not.

REFIT_COLUMNS = ("x1", "x2", "x3", "x4", "z1", "z2")
#: per criterion: (the PDPs whose pattern is planted, the PDPs whose learner-level null holds)
REFIT_TRUTH = {
    "importance_1d": ([("x1",), ("x2",), ("x3",), ("x4",)], [("z1",), ("z2",)]),
    "interaction": ([("x3", "x4")], [("z1", "z2"), ("x1", "z1"), ("x1", "x2")]),
    "ice_variance": ([("x3",), ("x4",)], [("x1",), ("x2",), ("z1",), ("z2",)]),
    "monotonicity": ([("x2",)], [("x1",), ("x3",), ("x4",), ("z1",), ("z2",)]),
    "slope": ([("x1",), ("x3",), ("x4",)], [("z1",), ("z2",)]),
}


def _refit_eta(X) -> np.ndarray:
    return np.asarray(2 * X.x1 - 2 * X.x2 ** 2 + 1.5 * X.x3 + 1.5 * X.x4 + 3 * X.x3 * X.x4, dtype=float)


def _refit_data(rng, n):
    X = pd.DataFrame(rng.uniform(-1, 1, size=(n, len(REFIT_COLUMNS))), columns=list(REFIT_COLUMNS))
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-_refit_eta(X)))).astype(int)
    return X, y


#: rows of the fixed sample the population PD is averaged over (its own Monte-Carlo error, ~0.2 / sqrt(rows), is
#: a few hundredths of the bands measured)
POPULATION_ROWS = 100_000


def _pd_of_truth(X: pd.DataFrame, feature: str, grid) -> np.ndarray:
    """PD of the true P(y = 1 | x) over the rows of ``X`` at each grid value of ``feature``."""
    out = []
    for v in np.asarray(grid, dtype=float):
        Xv = X.copy()
        Xv[feature] = v
        out.append(float(np.mean(1 / (1 + np.exp(-_refit_eta(Xv))))))
    return np.asarray(out)


def _refit_coverage(a, Xa: pd.DataFrame) -> dict:
    """Per 1D PDP: the share of grid values where the learner-PD's 95% interval holds the population PD, and the
    same for the refits' range the figure draws.

    The learner-PD's interval is ``mean +- 1.96 sqrt(c s^2 + se^2)``: ``s^2`` the refits' variance at the grid
    value, ``c`` the Nadeau-Bengio factor, ``se`` the PD's Monte-Carlo standard error over the audit rows (the
    fitted model's, standing in for the learner-PD's); against the PD of the truth over the audit rows themselves
    (``rows``: no Monte-Carlo part, the learner's part only) and over :data:`POPULATION_ROWS` fresh rows
    (``population``)."""
    if a.refits is None or not a.refits.assessed or not a.refit_curves:
        return {}
    c = float(a.refits.correction)
    population = _refit_data(np.random.default_rng(7), POPULATION_ROWS)[0]
    out = {}
    for r in a.results:
        if r.ndim != 1 or r.features not in a.refit_curves:
            continue
        t = [str(x) for x in r.targets].index("1") if "1" in [str(x) for x in r.targets] else len(r.targets) - 1
        curves = np.asarray(a.refit_curves[r.features], dtype=float)[:, t, :]
        mean, s2 = curves.mean(axis=0), curves.var(axis=0, ddof=1)
        se = np.asarray(r.stderr[t], dtype=float).ravel()
        grid = r.grid[0]
        on_rows, on_pop = _pd_of_truth(Xa, r.features[0], grid), _pd_of_truth(population, r.features[0], grid)
        half_rows, half_pop = 1.96 * np.sqrt(c * s2), 1.96 * np.sqrt(c * s2 + se * se)
        lo, hi = curves.min(axis=0), curves.max(axis=0)
        out[r.features] = {"rows": np.abs(on_rows - mean) <= half_rows, "population": np.abs(on_pop - mean) <= half_pop,
                           "range": (on_pop >= lo) & (on_pop <= hi),
                           "bias": float(np.mean(np.abs(on_rows - mean))), "half_width": float(np.mean(half_rows))}
    return out


def refit_case(seed: int, *, n_train: int = 3000, n_audit: int = 1000, refits: int = 10, max_iter: int = 150,
               materiality: float = 0.0, grid: int = 12) -> dict:
    """``{criterion: {"planted": [robust, ...], "noise": [robust, ...], "found_noise": [passed, ...]}}``
    for one seed (``robust`` None counts as not robust), and under ``"coverage"`` :func:`_refit_coverage`."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    rng = np.random.default_rng(seed)
    Xt, yt = _refit_data(rng, n_train)
    Xa, ya = _refit_data(rng, n_audit)
    model = HistGradientBoostingClassifier(max_iter=max_iter, random_state=seed).fit(Xt, yt)
    pairs = sorted({p for c in ("interaction",) for group in REFIT_TRUTH[c] for p in group})
    cfg = AuditConfig(refits=refits, materiality=materiality, pairs=tuple(pairs), grid_resolution=grid,
                      grid_resolution_2d=6, utilities=("monotonicity", "slope", "ice_variance"))
    a = audit(model, Xa, ya, train=(Xt, yt), config=cfg, random_state=seed, progress=False)
    out = {}
    for c, (planted, noise) in REFIT_TRUTH.items():
        by = a.evidence.get(c, {})
        out[c] = {"planted": [bool(by[k].robust) for k in planted if k in by],
                  "noise": [bool(by[k].robust) for k in noise if k in by],
                  "found_noise": [bool(by[k].passed) for k in noise if k in by]}
    out["coverage"] = _refit_coverage(a, Xa)
    return out


def refit_not_assessed_case() -> dict:
    """A callable audited with refits asked: ``{"reason": ..., "robust": set of every item's robust}``."""
    rng = np.random.default_rng(0)
    Xt, yt = _refit_data(rng, 400)
    Xa, _ = _refit_data(rng, 200)

    def f(X):
        X = np.asarray(X, dtype=float)
        return 1 / (1 + np.exp(-(2 * X[:, 0] + X[:, 2] * X[:, 3])))
    a = audit(f, Xa, train=(Xt, yt), config=AuditConfig(refits=5, pairs=(("x3", "x4"),), grid_resolution=8,
                                                        grid_resolution_2d=5), progress=False)
    return {"reason": a.refits.reason, "robust": {e.robust for by in a.evidence.values() for e in by.values()}}


__all__ += ["REFIT_TRUTH", "refit_case", "refit_not_assessed_case"]

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

import numpy as np
import pandas as pd

from autopdp import AuditConfig, audit

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

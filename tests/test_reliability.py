"""Reliability: every bad input gets a clear message, nothing is lost, results are deterministic."""

import collections
import json
import os
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.linear_model import LinearRegression, LogisticRegression

import autopdp
from autopdp import AuditConfig, partial_dependence
from autopdp import audit
from autopdp.utils.atomic import atomic_write_text
from autopdp.auditing.validation import MIN_ROWS
from autopdp.cli import main
from autopdp.errors import InputError
from autopdp.scores.utilities import isotonic_fit, lipschitz_fit


@pytest.fixture(scope="module")
def base():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=120), "b": rng.uniform(0, 1, 120), "c": rng.normal(size=120)})
    y = (X.a + X.b > 0.5).astype(int)
    return X, y, LogisticRegression().fit(X, y)


SMALL = AuditConfig(pairs=False, grid_resolution=6)


def _msg(exc_info):
    return str(exc_info.value)


AUDIT_CASES = [
    ("empty data", lambda X, y, m: audit(m, X.iloc[:0], y.iloc[:0], config=SMALL),
     "X is empty (0 rows): partial dependence needs at least one row of data."),
    ("constant target", lambda X, y, m: audit(m, X, np.ones(len(X)), config=SMALL),
     "the target y is constant (a single class or value); an audit needs a target that varies."),
    ("target with NaN", lambda X, y, m: audit(m, X, np.r_[np.nan, y.iloc[1:].to_numpy()], config=SMALL),
     "the target y has 1 missing value(s); drop those rows or fill them before auditing."),
    ("target of wrong length", lambda X, y, m: audit(m, X, y.iloc[:10], config=SMALL),
     "y has 10 values but X has 120 rows; give one target per row."),
    ("missing model columns", lambda X, y, m: audit(m, X[["a", "b"]], y, config=SMALL),
     "X lacks 1 column(s) the model was fitted on: 'c'; pass the data with every feature the model needs, named as "
     "in training."),
    ("comparison on other columns",
     lambda X, y, m: audit(m, X, y, compare={"other": LogisticRegression().fit(X[["a", "b"]], y)}, config=SMALL),
     "comparison model 'other' was trained on other columns than the audited model (missing ['c'], extra []); "
     "compare models trained on the same features."),
    ("grid of one point", lambda X, y, m: audit(m, X, y, config={"grid_resolution": 1}),
     "config key 'grid_resolution' must be an integer >= 2, got 1."),
    ("config of wrong type", lambda X, y, m: audit(m, X, y, config={"top_k": "3"}),
     "config key 'top_k' must be an integer >= 1, got '3'."),
    ("unknown config key", lambda X, y, m: audit(m, X, y, config={"topk": 3}),
     None),
    ("inf in a feature", lambda X, y, m: audit(m, X.assign(a=np.r_[np.inf, X.a.iloc[1:]]), y, config=SMALL),
     "Feature 'a' has infinite values: replace them (e.g. with NaN or a cap) before computing partial dependence."),
    ("model that raises", lambda X, y, m: audit(lambda d: 1 / 0, X, y, config=SMALL),
     "The model raised an error when predicting on X: ZeroDivisionError: division by zero. "
     "Check that X has the columns and types the model was trained on."),
    ("unknown feature in config", lambda X, y, m: audit(m, X, y, config=SMALL.replace(expected_monotonic={"zz": "increasing"})),
     "Unknown feature 'zz': it is not a column of X. Columns are: 'a', 'b', 'c'."),
]


@pytest.mark.parametrize("label,call,message", AUDIT_CASES, ids=[c[0] for c in AUDIT_CASES])
def test_audit_bad_input_table(base, label, call, message):
    X, y, m = base
    with pytest.raises((ValueError, TypeError)) as info:
        call(X, y, m)
    if message is None:
        assert _msg(info).startswith("unknown config key 'topk'; known keys:")
    else:
        assert _msg(info) == message


def test_numbers_stored_as_text_are_named():
    X = pd.DataFrame({"n": [str(i) for i in range(40)] + ["?"], "m": np.arange(41.0)})
    with pytest.raises(ValueError) as info:
        partial_dependence(lambda d: d["m"].to_numpy(), X, ["m"])
    assert _msg(info) == (
        "Feature 'n' looks numeric but holds non-numeric values such as ['?']: convert them to numbers or NaN "
        "(e.g. pandas.to_numeric(errors='coerce') or read_csv(na_values=...)), or list the column in "
        "categorical_features to treat it as categorical."
    )
    # declared categorical: accepted
    (r,) = partial_dependence(lambda d: d["m"].to_numpy(), X, ["n"], categorical_features=["n"])
    assert r.kinds == ("categorical",)


def test_constant_features_skipped_and_listed(base):
    X, y, _ = base
    Xc = X.assign(k=1.0)
    a = audit(lambda d: d["a"].to_numpy(), Xc, y, config=SMALL)
    assert "k" not in [r.features[0] for r in a.results_1d]
    assert any("'k' is constant" in n for n in a.notes)
    assert a.metadata["counts"]["features_skipped"] == 1


def test_extra_columns_are_left_out_with_a_note(base):
    X, y, m = base
    a = audit(m, X.assign(row_id=np.arange(len(X))), y, config=SMALL)
    assert [r.features[0] for r in a.results_1d] == ["a", "b", "c"]
    assert any("left out: row_id" in n for n in a.notes)


def test_thousands_of_levels_are_capped_with_a_note():
    rng = np.random.default_rng(0)
    n = 5000
    ids = np.where(rng.uniform(size=n) < 0.5, "common", np.char.add("id", rng.integers(0, 3000, n).astype(str)))
    X = pd.DataFrame({"code": ids, "v": rng.normal(size=n)})
    a = audit(lambda d: d["v"].to_numpy() + (d["code"] == "common"), X, config=AuditConfig(pairs=False, max_levels=20))
    r = a.pd("code")
    assert r.grid_shape == (20,) and "common" in list(r.grid[0])
    assert any("keeps the 20 most frequent" in note for note in a.notes)


def test_solver_fallback_and_na_when_every_solver_fails(monkeypatch):
    from autopdp.scores.utilities import lipschitz

    f = np.array([0.0, 1.0, 0.0, 1.0, 0.0])
    x = np.arange(5.0)
    lipschitz._CACHE.clear()
    monkeypatch.setattr(lipschitz, "SOLVERS", (("NO_SUCH_SOLVER", {}), ("CLARABEL", {})))
    g, how = lipschitz_fit(f, [x], [0.1])
    assert how == "CLARABEL"
    monkeypatch.setattr(lipschitz, "SOLVERS", (("NO_SUCH_SOLVER", {}), ("ALSO_MISSING", {})))
    lipschitz._CACHE.clear()
    X = pd.DataFrame({"x": np.tile(x, 20), "z": np.arange(100.0)})
    a = audit(lambda d: np.sin(d["x"].to_numpy() * 3), X, config=AuditConfig(pairs=False, lipschitz={"x": 0.01}))
    s = a.score("x", "lipschitz")
    assert not s.available and s.reason.startswith("Lipschitz fit failed (NO_SUCH_SOLVER:")
    assert a.score("x", "monotonicity").available  # one bad utility does not sink the rest
    assert any("lipschitz is n/a for 'x'" in n for n in a.notes)
    lipschitz._CACHE.clear()


def test_interrupted_write_leaves_previous_file_intact(tmp_path, monkeypatch):
    path = tmp_path / "results.json"
    atomic_write_text(path, '{"good": true}')

    def boom(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_text(path, '{"half": ')
    assert path.read_text() == '{"good": true}'
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


def test_unwritable_output_directory_is_a_clear_error(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code = main(["demo", "--out", str(blocker / "sub"), "--formats", "json"])
    err = capsys.readouterr().err
    assert code == 2
    assert re.match(r"autopdp: error: Cannot create output directory '.*sub': .*Choose a writable --out\.", err.strip())


def test_same_inputs_same_json_apart_from_run(base):
    X, y, m = base
    cfg = AuditConfig(grid_resolution=6, grid_resolution_2d=4, max_rows_2d=50)
    one = json.loads(audit(m, X, y, config=cfg, random_state=3).to_json())
    two = json.loads(audit(m, X, y, config=cfg, random_state=3).to_json())
    assert set(one) == set(two)
    for key in one:
        if key != "run":
            assert one[key] == two[key], key
    assert json.dumps({k: v for k, v in one.items() if k != "run"}, sort_keys=True) == json.dumps(
        {k: v for k, v in two.items() if k != "run"}, sort_keys=True)


# ---------------------------------------------------------------- property-based
finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)


def _resolvable(values: np.ndarray) -> bool:
    """A column whose range spans at least a thousand floating-point steps of its size: any grid can divide it
    (independent of the library's own test, which is stricter only between this and a single step)."""
    lo, hi = float(np.min(values)), float(np.max(values))
    return hi - lo > 1000 * np.spacing(max(abs(lo), abs(hi)))


def _audit_outcome(model, X, cfg) -> str:
    """Audit ``X``: "audited" (every score >= 0), or the refusal the data calls for, checked to be the right one
    and to name its reason: too few rows, or no feature that varies (constant, or a range floating point cannot
    resolve, e.g. a column of 5e-324 and zeros)."""
    try:
        a = audit(model, X, config=cfg)
    except InputError as exc:
        msg = str(exc)
        if len(X) < MIN_ROWS:
            assert msg.startswith(f"too few rows: the data has {len(X)} rows; an audit needs at least {MIN_ROWS}"), msg
            return "refused: too few rows"
        assert msg.startswith("every feature is constant in the data"), msg
        assert not any(_resolvable(X[c].to_numpy()) for c in X), msg  # some feature could have been audited
        if (X.nunique() > 1).any():  # not literally constant: the message says why it counts as constant
            assert "effectively constant" in msg and "too small a range to resolve in floating point" in msg, msg
        return "refused: no feature varies"
    assert len(X) >= MIN_ROWS and (X.nunique() > 1).any()
    assert any(r.ndim == 1 for r in a.results)
    values = a.scores.drop(columns=["features", "kind"]).to_numpy(dtype=float)
    assert np.all(values[np.isfinite(values)] >= 0)
    return "audited"


_OUTCOMES: collections.Counter = collections.Counter()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# a feature whose range (5e-324) cannot be split into histogram bins: effectively constant, skipped
@example(data=np.array([[5e-324, 1.0, 2.0], [0.0, 3.0, 1.0], [0.0, 2.0, 5.0]] * 4), coef=np.ones(3), res=3)
# values a subnormal apart: the surrogate's quantile spline knots coincide (found by CI's derandomised draw)
@example(data=np.array([[0.0, 2.22507386e-313, 2.22507386e-313]] + [[2.22507386e-313] * 3] * 4
                       + [[1.0, 2.22507386e-313, 2.22507386e-313]] + [[2.22507386e-313] * 3] * 4),
         coef=np.zeros(3), res=2)
# every feature effectively constant (a column of 5e-324 and zeros, the others constant): a fresh clone's failure
@example(data=np.array([[5e-324, 0.0, 0.0]] + [[0.0, 0.0, 0.0]] * 11), coef=np.ones(3), res=2)
@given(  # enough rows to audit (too few rows is test_property_refusals_name_their_reason's); every element
    # drawn (no fill value: Hypothesis otherwise fills most of an array with one value, a constant column)
    data=hnp.arrays(np.float64, st.tuples(st.integers(MIN_ROWS, 40), st.just(3)), elements=finite, fill=st.nothing()),
    coef=hnp.arrays(np.float64, 3, elements=st.floats(-5, 5)),
    res=st.integers(2, 12),
)
def _pd_and_audit_property(data, coef, res):
    X = pd.DataFrame(data, columns=["p", "q", "r"])

    def model(d):
        v = np.asarray(d, dtype=float)
        return v @ coef + np.sin(v[:, 0]) * v[:, 1] * 0.01

    results = partial_dependence(model, X, ["p", ("q", "r")], grid_resolution=res)
    # the analytic PDs of this model (the mean over rows of the model with the feature(s) set to the grid value)
    p, q, r_ = (X[c].to_numpy() for c in ("p", "q", "r"))
    scale = 1e-9 * (1 + 5 * np.abs(data).max() * 3)  # rounding of sums of terms up to 5 * 1e3 in size
    for r in results:
        assert np.all(np.isfinite(r.average))
        assert np.all(np.diff(np.sort(r.grid[0].astype(float))) > 0)
        if r.ndim == 1:
            v = np.asarray(r.grid[0], dtype=float)
            truth = coef[0] * v + coef[1] * q.mean() + coef[2] * r_.mean() + 0.01 * np.sin(v) * q.mean()
        else:
            a, b = np.meshgrid(np.asarray(r.grid[0], dtype=float), np.asarray(r.grid[1], dtype=float), indexing="ij")
            truth = coef[0] * p.mean() + coef[1] * a + coef[2] * b + 0.01 * np.sin(p).mean() * a
        np.testing.assert_allclose(r.average[0], truth, rtol=0, atol=scale)
        assert np.all(r.std >= 0) and r.counts.sum() == len(X)
    outcome = _audit_outcome(model, X, AuditConfig(grid_resolution=res, grid_resolution_2d=3, subsample=None))
    event(outcome)
    _OUTCOMES[outcome] += 1


def test_property_pd_matches_the_analytic_pd_and_audits_or_refuses_rightly():
    """Every draw's PDs equal the analytic PDs; its audit has scores >= 0 or is a refusal the data calls for.
    Not vacuous: most draws are audited (a refusal is an expected outcome, not the usual one)."""
    _OUTCOMES.clear()
    _pd_and_audit_property()
    total = sum(_OUTCOMES.values())
    assert total >= 20 and _OUTCOMES["audited"] >= 0.6 * total, dict(_OUTCOMES)


# columns that cannot be audited: one value, or two values 1 to 8 floating-point steps apart (e.g. 0 and 5e-324)
_flat_column = st.tuples(finite, st.integers(-1, 8)).map(
    lambda t: (t[0], t[0] if t[1] < 0 else np.nextafter(t[0], np.inf) if t[1] == 0 else t[0] + t[1] * np.spacing(t[0])))


@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(1, 40),
    columns=st.lists(_flat_column, min_size=1, max_size=3),
    spread=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_property_refusals_name_their_reason(n, columns, spread, seed):
    """Inputs the audit must refuse: too few rows (whatever the data), or no feature that varies enough to
    resolve.  Every one is refused with the reason, never audited or failed with another error."""
    rng = np.random.default_rng(seed)
    data = {f"x{i}": rng.choice(np.array([lo, hi]), size=n) if lo != hi else np.full(n, lo)
            for i, (lo, hi) in enumerate(columns)}
    if spread:  # a feature that varies: only too few rows can refuse it
        data["s"] = rng.normal(size=n)
        n = min(n, MIN_ROWS - 1)
        data = {k: v[:n] for k, v in data.items()}
    X = pd.DataFrame(data)
    assert all(not _resolvable(X[c].to_numpy()) for c in X if c != "s")
    with pytest.raises(InputError) as info:
        audit(lambda d: np.asarray(d, dtype=float).sum(axis=1), X,
              config=AuditConfig(grid_resolution=3, grid_resolution_2d=3, subsample=None, pairs=False))
    msg = str(info.value)
    if len(X) < MIN_ROWS:
        assert msg.startswith(f"too few rows: the data has {len(X)} row"), msg
    else:
        assert msg.startswith("every feature is constant in the data"), msg
        if (X.nunique() > 1).any():
            assert "effectively constant" in msg, msg


@settings(max_examples=60, deadline=None)
@given(f=hnp.arrays(np.float64, st.integers(2, 30), elements=finite), inc=st.booleans())
def test_property_isotonic_fit_is_monotone(f, inc):
    g = isotonic_fit(f, inc)
    d = np.diff(g)
    assert np.all(d >= -1e-9) if inc else np.all(d <= 1e-9)
    assert abs(g.mean() - f.mean()) <= 1e-6 * (1 + np.abs(f).max())  # isotonic regression preserves the mean


@settings(max_examples=25, deadline=None)
@given(f=hnp.arrays(np.float64, st.integers(2, 25), elements=st.floats(-10, 10)), bound=st.floats(0.01, 5))
def test_property_lipschitz_fit_respects_bound(f, bound):
    x = np.arange(f.size, dtype=float)
    g, _ = lipschitz_fit(f, [x], [bound])
    assert np.all(np.abs(np.diff(g)) <= bound * (1 + 1e-6) + 1e-6)
    assert np.sum((g - f) ** 2) <= np.sum((np.full_like(f, f.mean()) - f) ** 2) + 1e-6  # no worse than a flat line


def test_feature_with_unresolvable_range_is_skipped_as_effectively_constant():
    X = pd.DataFrame({"p": [5e-324] + [0.0] * 11, "q": [1.0, 3.0, 2.0, 4.0] * 3, "r": [2.0, 1.0, 5.0, 3.0] * 3})
    a = audit(lambda d: d["q"].to_numpy() + d["r"].to_numpy(), X,
              config=AuditConfig(grid_resolution=3, grid_resolution_2d=3, subsample=None))
    assert [n for n in a.notes if "'p'" in n] == [
        "Feature 'p' is effectively constant in the data (its values span too small a range to resolve in "
        "floating point) and was skipped."]
    assert ("p",) not in [tuple(f) for f in a.scores["features"]]
    assert ("q",) in [tuple(f) for f in a.scores["features"]]


def test_rank_scores_are_finite_between_values_a_subnormal_apart():
    """Found by `make fuzz`: np.interp's slope between 0 and a subnormal overflows, giving the OOD check an infinite
    rank score (and NaN conditional distances) at a grid value of 0."""
    from autopdp.trust.ood import _RankScores

    x = np.array([-3.0, -1.0, 0.0, 2.8e-269, 5e-324, 1.0, 4.0])
    scores = _RankScores(x)
    z = scores(np.array([-3.0, 0.0, 5e-324, 1e-300, 2.8e-269, 0.5, 4.0]))
    assert np.all(np.isfinite(z)) and np.all(np.diff(z) >= 0)
    np.testing.assert_allclose(z[[0, 1, 2, 4, 6]], scores.zs[[0, 2, 3, 4, 6]])


@pytest.mark.parametrize("y, problem", [
    (np.array([1.0, np.nan, 2.0]), "missing value"), (np.array(["a", None, "b"], dtype=object), "missing value"),
    (pd.Series(pd.Categorical(["a", None, "a"])), "missing value"), (np.array([3, 3, 3]), "constant"),
    (np.array(["x", "x", "x"], dtype=object), "constant"), (np.array([1, 1.0, True], dtype=object), "constant"),
])
def test_the_target_is_checked_on_its_own_type(y, problem):
    """The target's missing values and constancy are found on its own type (no object copy of every value): a
    missing value of any kind, and one class written three ways (1, 1.0, True), are what they were."""
    from autopdp.auditing.validation import _check_y

    with pytest.raises(InputError, match=problem):
        _check_y(y, len(y))
    assert _check_y(np.array([1, 2, 1]), 3) is not None

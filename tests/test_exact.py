"""Exact means exact at every size: the tree path against brute force past every chunk and cache boundary.

The exact tree path keeps every row's leaf codes between calls when they fit a memory budget and processes rows
in chunks of another; both limits are module constants (``autopdp.pd.tree.ice.CHUNK_BYTES``, ``CACHE_BYTES``;
``autopdp.pd.tree.moves.MOVED_BYTES`` for ALE's moved reads) that these tests shrink, so small data crosses
them: one-row chunks, chunks of a few dozen rows with the codes kept and without.  Every family the path reads
is compared with brute force (the model's own predictions averaged over copies of the data) for 1D and 2D PDs,
ICE curves and the std, to 1e-9 of the prediction's standard deviation (XGBoost sums its trees in float32: there
the model's own rounding, 2e-6), at ``n_jobs`` 1 and 2; and the limits, the threads and ``n_jobs`` never change a
number, bit for bit.  One case runs at a real size (26,000 Adult rows).  A corrupted kernel is caught by the
audit's self-check (exit 3 on the command line).
"""

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.ensemble import (
    ExtraTreesClassifier, ExtraTreesRegressor, GradientBoostingClassifier, GradientBoostingRegressor,
    HistGradientBoostingClassifier, HistGradientBoostingRegressor, RandomForestClassifier, RandomForestRegressor,
)

import autopdp
from autopdp import partial_dependence
from autopdp.config import AuditConfig
from autopdp.errors import ExactnessError
from autopdp.pd.tree import ice as tree_ice
from autopdp.pd.tree import kernels as tree_kernels
from autopdp.pd.tree import moves as tree_moves

FEATURES = ["a", "e", "b", ("a", "c"), ("e", "b"), ("b", "d")]
NUMERIC_FEATURES = ["a", "b", "d", ("a", "c"), ("b", "d")]

# (chunk bytes, cache bytes): the defaults; one-row chunks with the codes kept; chunks of a few dozen rows with
# the codes kept (the case that was wrong in November 2026) and not kept
LIMITS = [(None, None), (1.0, 1e12), (2e4, 1e12), (2e4, 0.0)]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(5)
    n = 260
    X = pd.DataFrame(rng.normal(size=(n, 4)), columns=list("abcd"))
    X["e"] = pd.Categorical(rng.choice(list("pqrst"), n))
    score = X.a * X.c + 1.5 * (X.e == "q") - (X.e == "t") + X.b - 0.5 * X.d
    X.loc[rng.choice(n, 26, replace=False), "b"] = np.nan  # missing values the trees route
    X.loc[rng.choice(n, 13, replace=False), "e"] = np.nan  # and a missing category
    y_bin = (score + rng.normal(0, 0.3, n) > 0.3).astype(int)
    y_multi = np.digitize(score, [-0.5, 0.8])
    y_reg = score.to_numpy() + rng.normal(0, 0.3, n)
    numeric = X.drop(columns="e").assign(b=X.b.fillna(0.0))
    return X, numeric, y_bin, y_multi, y_reg


def _families(X, numeric, y_bin, y_multi, y_reg):
    """(name, fitted model, its data, feature sets, tolerance relative to the prediction sd)."""
    hgb = dict(categorical_features="from_dtype", random_state=0)
    out = [
        ("random forest classifier", RandomForestClassifier(n_estimators=12, max_depth=6, random_state=0)
         .fit(numeric, y_bin), numeric),
        ("random forest regressor", RandomForestRegressor(n_estimators=12, max_depth=6, random_state=0)
         .fit(numeric, y_reg), numeric),
        ("random forest multiclass", RandomForestClassifier(n_estimators=8, max_depth=5, random_state=0)
         .fit(numeric, y_multi), numeric),
        ("extra trees classifier", ExtraTreesClassifier(n_estimators=10, max_depth=6, random_state=0)
         .fit(numeric, y_bin), numeric),
        ("extra trees regressor", ExtraTreesRegressor(n_estimators=10, max_depth=6, random_state=0)
         .fit(numeric, y_reg), numeric),
        ("gradient boosting regressor", GradientBoostingRegressor(n_estimators=30, max_depth=3, random_state=0)
         .fit(numeric, y_reg), numeric),
        ("gradient boosting classifier", GradientBoostingClassifier(n_estimators=25, max_depth=3, random_state=0)
         .fit(numeric, y_bin), numeric),
        ("gradient boosting multiclass", GradientBoostingClassifier(n_estimators=10, max_depth=2, random_state=0)
         .fit(numeric, y_multi), numeric),
        ("HGB classifier", HistGradientBoostingClassifier(max_iter=30, **hgb).fit(X, y_bin), X),
        ("HGB multiclass", HistGradientBoostingClassifier(max_iter=15, **hgb).fit(X, y_multi), X),
        ("HGB regressor", HistGradientBoostingRegressor(max_iter=30, **hgb).fit(X, y_reg), X),
    ]
    try:
        import xgboost as xgb

        kw = dict(n_estimators=25, max_depth=4, enable_categorical=True, tree_method="hist", random_state=0)
        out += [("XGBoost classifier", xgb.XGBClassifier(**kw).fit(X, y_bin), X),
                ("XGBoost multiclass", xgb.XGBClassifier(**kw).fit(X, y_multi), X),
                ("XGBoost regressor", xgb.XGBRegressor(**kw).fit(X, y_reg), X)]
    except ImportError:  # pragma: no cover - the test extra installs it
        pass
    try:
        import lightgbm as lgb

        kw = dict(n_estimators=25, num_leaves=8, min_child_samples=5, verbose=-1, random_state=0)
        out += [("LightGBM classifier", lgb.LGBMClassifier(**kw).fit(X, y_bin), X),
                ("LightGBM multiclass", lgb.LGBMClassifier(**kw).fit(X, y_multi), X),
                ("LightGBM regressor", lgb.LGBMRegressor(**kw).fit(X, y_reg), X)]
    except ImportError:  # pragma: no cover
        pass
    return out


@pytest.fixture(scope="module")
def families(data):
    return {name: (model, X) for name, model, X in _families(*data)}


def _features(X):
    return FEATURES if "e" in X.columns else NUMERIC_FEATURES


def _atol(name, model, X):
    sd = float(np.std(_response(model, X)))
    rel = 2e-6 if name.startswith("XGBoost") else 1e-9
    return rel * max(sd, 1e-3)


def _response(model, X):
    return model.predict_proba(X) if hasattr(model, "predict_proba") else model.predict(X)


def _limits(monkeypatch, chunk, cache, threads=None):
    if chunk is not None:
        monkeypatch.setattr(tree_ice, "CHUNK_BYTES", chunk)
    if cache is not None:
        monkeypatch.setattr(tree_ice, "CACHE_BYTES", cache)
    if threads is not None:
        monkeypatch.setattr(tree_ice, "n_threads", lambda: threads)


def _pds(model, X, features, method, n_jobs=1):
    return partial_dependence(model, X, features, kind="both", method=method, grid_resolution=7, n_jobs=n_jobs)


@pytest.fixture(scope="module")
def brute(families):
    return {name: _pds(model, X, _features(X), "brute") for name, (model, X) in families.items()}


def _assert_close(fast, slow, atol, what):
    for f, b in zip(fast, slow):
        assert f.method == "tree" and b.method == "brute", what
        assert f.individual.shape == b.individual.shape, what
        for field in ("average", "std", "individual"):
            np.testing.assert_allclose(getattr(f, field), getattr(b, field), rtol=0, atol=atol,
                                       err_msg=f"{what}: {f.features} {field}")


def _assert_same(one, other, what):
    for a, b in zip(one, other):
        for field in ("average", "std", "individual"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=f"{what}: {a.features}")


@pytest.mark.parametrize("limits", LIMITS, ids=["defaults", "one-row chunks", "chunks, codes kept",
                                                "chunks, codes walked"])
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_every_family_equals_brute_force_past_every_boundary(families, brute, limits, n_jobs, monkeypatch):
    _limits(monkeypatch, *limits)
    for name, (model, X) in families.items():
        fast = _pds(model, X, _features(X), "tree", n_jobs)
        _assert_close(fast, brute[name], _atol(name, model, X), f"{name} at {limits}, n_jobs={n_jobs}")


def test_limits_threads_and_jobs_never_change_a_number(families, monkeypatch):
    """Every set's sums run over the rows in row order on one thread: bit for bit the same whatever the chunk,
    the cache, the kernel's threads or ``n_jobs``."""
    for name in ("HGB classifier", "gradient boosting regressor", "random forest multiclass"):
        model, X = families[name]
        reference = _pds(model, X, _features(X), "tree")
        for chunk, cache in LIMITS[1:]:
            for threads in (1, 3):
                for n_jobs in (1, 2):
                    with monkeypatch.context() as m:
                        _limits(m, chunk, cache, threads)
                        other = _pds(model, X, _features(X), "tree", n_jobs)
                    _assert_same(reference, other, f"{name} at {chunk}, {cache}, {threads} threads, n_jobs={n_jobs}")


def test_kept_codes_serve_later_calls_exactly(families, brute, monkeypatch):
    """One plan (as in an audit) answers several calls from the codes it kept, chunked: each equals brute force."""
    from autopdp.pd.tree.fastpath import shared_plans

    _limits(monkeypatch, 2e4, 1e12)
    model, X = families["HGB classifier"]
    with shared_plans():
        for _ in range(3):
            _assert_close(_pds(model, X, FEATURES, "tree"), brute["HGB classifier"], _atol("HGB", model, X),
                          "a later call")


def test_moved_reads_equal_ice_in_one_row_chunks(families, monkeypatch):
    """ALE's moved reads (each row at the ends of its own interval) equal the kernel's ICE with tiny limits."""
    from autopdp.pd.tree.exact_ice import ExactICE

    monkeypatch.setattr(tree_moves, "MOVED_BYTES", 1.0)
    _limits(monkeypatch, 1.0, 0.0)
    model, X = families["HGB classifier"]
    source = ExactICE(model, X)
    grid = np.linspace(-2, 2, 6)
    lower = np.clip(np.searchsorted(grid, np.nan_to_num(X["a"].to_numpy()), side="right") - 1, 0, 4)[:, None]
    position = list(X.columns).index("a")
    moved = source.moved([[position]], [[grid]], [lower])[0]
    ice = source.ice([[position]], [[grid]])[0]
    rows = np.arange(len(X))
    np.testing.assert_allclose(moved[:, :, 0], ice[:, rows, lower[:, 0]], rtol=0, atol=1e-12)
    np.testing.assert_allclose(moved[:, :, 1], ice[:, rows, lower[:, 0] + 1], rtol=0, atol=1e-12)


@pytest.fixture(scope="module")
def adult_26k():
    from conftest import _shared_csv

    raw = _shared_csv("adult/adult.csv", na_values="?", skipinitialspace=True)
    raw = raw.sample(26_000, random_state=0).reset_index(drop=True)
    X = raw.drop(columns="income")
    for c in X.columns:
        X[c] = X[c].astype("category") if not pd.api.types.is_numeric_dtype(X[c]) else X[c].astype(float)
    y = raw["income"].str.startswith(">").astype(int)
    model = HistGradientBoostingClassifier(max_iter=40, categorical_features="from_dtype", random_state=0).fit(X, y)
    return model, X, y


def test_real_size_adult_equals_brute_force(adult_26k):
    """26,000 rows, native categoricals and missing values, default limits (many chunks): PDs and std on every
    row, ICE on a row sample, equal to brute force."""
    model, X, _ = adult_26k
    features = ["age", "workclass", "capital_gain", "hours_per_week", "native_country", ("age", "hours_per_week"),
                ("workclass", "capital_gain")]
    kw = dict(kind="both", grid_resolution=8, subsample=300, random_state=0)
    fast = partial_dependence(model, X, features, method="tree", **kw)
    slow = partial_dependence(model, X, features, method="brute", **kw)
    atol = 1e-9 * float(np.std(model.predict_proba(X)[:, 1]))
    for f, b in zip(fast, slow):
        assert f.method == "tree" and b.method == "brute"
        np.testing.assert_array_equal(f.ice_rows, b.ice_rows)
        for field in ("average", "std", "individual"):
            np.testing.assert_allclose(getattr(f, field), getattr(b, field), rtol=0, atol=atol,
                                       err_msg=f"{f.features} {field}")


def test_the_audit_self_check_passes_and_is_recorded(adult_26k):
    model, X, y = adult_26k
    config = AuditConfig(grid_resolution=8, grid_resolution_2d=4, pairs="top:3", max_rows_2d_tree=3000, subsample=200)
    result = autopdp.audit(model, X.iloc[:6000], y.iloc[:6000], config=config)
    check = result.run["self_check"]
    assert check["status"] == "passed" and check["largest_gap_in_tolerances"] <= 1.0
    assert check["checks"] > 100 and check["sampled_rows"] == 64
    assert "all 6,000 rows" in check["where"] or "sampled rows" in check["where"] or "own values" in check["where"]


def _corrupt(monkeypatch, kernel_name):
    """Wrap a compiled kernel so that its output is slightly off: every row's 1D ICE (``ice_from_codes``, 1e-4 on
    the raw score) or every 1D set's sums (``ice_singles``, 1e-4 of the rows' weight on each PD value)."""
    original = getattr(tree_kernels, kernel_name)

    def corrupted(lo_, hi_, *args):
        original(lo_, hi_, *args)
        if kernel_name == "ice_from_codes":
            args[-1][lo_:hi_] += 1e-4  # r1
        else:
            w, index, s1 = args[0], args[1][2], args[4][1]  # (w, sets, resp, r1, sums, keep_pos)
            s1[index[lo_:hi_]] += 1e-4 * w.sum()

    monkeypatch.setattr(tree_kernels, kernel_name, corrupted)


@pytest.mark.parametrize("kernel", ["ice_from_codes", "ice_singles"])
def test_a_corrupted_kernel_fails_the_audit_loudly(monkeypatch, kernel):
    rng = np.random.default_rng(2)
    X = pd.DataFrame(rng.normal(size=(400, 3)), columns=list("uvw"))
    y = (X.u + X.v * X.w + rng.normal(0, 0.3, 400) > 0).astype(int)
    model = HistGradientBoostingClassifier(max_iter=20, random_state=0).fit(X, y)
    config = AuditConfig(grid_resolution=5, grid_resolution_2d=3)
    _corrupt(monkeypatch, kernel)
    with pytest.raises(ExactnessError, match="disagrees with the model's own predictions"):
        autopdp.audit(model, X, y, config=config)


def test_a_corrupted_kernel_is_exit_3_in_one_line(monkeypatch, tmp_path, capsys):
    from autopdp.cli import main

    rng = np.random.default_rng(2)
    X = pd.DataFrame(rng.normal(size=(400, 3)), columns=list("uvw"))
    X["y"] = (X.u + X.v * X.w + rng.normal(0, 0.3, 400) > 0).astype(int)
    model = HistGradientBoostingClassifier(max_iter=20, random_state=0).fit(X[list("uvw")], X.y)
    import skops.io as sio

    sio.dump(model, tmp_path / "m.skops")
    X.to_csv(tmp_path / "d.csv", index=False)
    _corrupt(monkeypatch, "ice_singles")
    code = main(["report", "--model", str(tmp_path / "m.skops"), "--data", str(tmp_path / "d.csv"), "--target", "y",
                 "--out", str(tmp_path / "out"), "--formats", "json"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 3
    assert len(err) == 1 and "exact tree path disagrees with the model" in err[0]
    assert not (tmp_path / "out" / "results.json").exists()


_SHAPES = st.tuples(st.integers(8, 90), st.integers(1, 4), st.sampled_from(["rf", "et", "gb", "hgb", "hgbc"]),
                    st.integers(1, 5), st.sampled_from([None, 1.0, 3e3]), st.sampled_from([None, 0.0]),
                    st.integers(0, 2**16), st.booleans())


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_SHAPES)
def test_property_random_forests_and_shapes_equal_brute_force(shape):
    """Random ensembles on random data shapes (missing values, ties, weights), random limits: the tree path equals
    brute force for every 1D and 2D set."""
    n, p, family, depth, chunk, cache, seed, weighted = shape
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(np.round(rng.normal(size=(n, p)), 1), columns=[f"x{i}" for i in range(p)])
    y = X.sum(axis=1).to_numpy() + rng.normal(0, 0.5, n)
    if family.startswith("hgb"):
        X = X.mask(rng.random((n, p)) < 0.1)  # missing values the trees route
    models = {
        "rf": lambda: RandomForestRegressor(n_estimators=4, max_depth=depth, random_state=seed),
        "et": lambda: ExtraTreesRegressor(n_estimators=4, max_depth=depth, random_state=seed),
        "gb": lambda: GradientBoostingRegressor(n_estimators=6, max_depth=depth, random_state=seed),
        "hgb": lambda: HistGradientBoostingRegressor(max_iter=6, max_depth=depth + 1, min_samples_leaf=3,
                                                     random_state=seed),
        "hgbc": lambda: HistGradientBoostingClassifier(max_iter=6, max_depth=depth + 1, min_samples_leaf=3,
                                                       random_state=seed),
    }
    target = (y > np.median(y)).astype(int) if family == "hgbc" else y
    if family == "hgbc" and target.min() == target.max():
        target[0] = 1 - target[0]
    model = models[family]().fit(X, target)
    features = list(X.columns) + [(a, b) for i, a in enumerate(X.columns) for b in list(X.columns)[i + 1:]]
    w = rng.uniform(0.2, 3.0, n) if weighted else None
    kw = dict(kind="both", grid_resolution=5, sample_weight=w)
    slow = partial_dependence(model, X, features, method="brute", **kw)
    with pytest.MonkeyPatch.context() as m:
        _limits(m, chunk, cache)
        fast = partial_dependence(model, X, features, method="tree", **kw)
    atol = 1e-9 * max(float(np.std(_response(model, X))), 1e-3)
    _assert_close(fast, slow, atol, f"{shape}")

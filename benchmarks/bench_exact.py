"""The exact tree path against brute force at real sizes: full Adult's audit first, then every family.

    python benchmarks/bench_exact.py [--sizes 3000,25000,60000] [--families all] [--skip-adult]

1. **Full Adult, the default call**: ``autopdp.audit(model, X, y)`` of a HistGradientBoostingClassifier (200
   iterations, native categoricals, missing values) on the 48,842 rows; then, for every 1D PD, three grid values
   (seeded) recomputed by brute force (the model's ``predict_proba`` averaged over every row with the feature
   set there).  Prints the largest gap in prediction standard deviations, the audit's time, its self-check
   record and the load.
   Then Bike Sharing's hours with an HGB regressor of 50 iterations (leaf codes kept, several row chunks),
   every 1D grid value against brute force.
2. **Every family at every size**: random forest, extra trees, gradient boosting, HGB (native categoricals and
   missing values), XGBoost and LightGBM, binary, multiclass and regression, at each size and ``n_jobs`` 1 and 2:
   ``partial_dependence(kind="both", method="tree")`` of four features and two pairs against
   ``method="brute"`` (averages and std on every row), the largest gap in prediction standard deviations.

Exact means every gap under 1e-9 (XGBoost sums its trees in float32: its own rounding, ~1e-7).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ADULT = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "adult" / "adult.csv"


def _load() -> str:
    return "load average " + ", ".join(f"{v:.2f}" for v in os.getloadavg())


def _adult():
    raw = pd.read_csv(ADULT, na_values="?", skipinitialspace=True)
    X = raw.drop(columns="income")
    for c in X.columns:
        X[c] = X[c].astype("category") if not pd.api.types.is_numeric_dtype(X[c]) else X[c].astype(float)
    return X, raw["income"].str.startswith(">").astype(int)


def _brute_at(model, X, feature, value) -> float:
    Xc = X.copy()
    if isinstance(X[feature].dtype, pd.CategoricalDtype):
        Xc[feature] = pd.Categorical([value] * len(X), categories=X[feature].cat.categories)
    else:
        Xc[feature] = value
    return float(model.predict_proba(Xc)[:, 1].mean())


def full_adult() -> None:
    import autopdp
    from sklearn.ensemble import HistGradientBoostingClassifier

    X, y = _adult()
    model = HistGradientBoostingClassifier(max_iter=200, categorical_features="from_dtype", random_state=0).fit(X, y)
    print(f"full Adult: {len(X):,} rows, HGB classifier (200 iterations, native categoricals) [{_load()}]")
    t0 = time.perf_counter()
    result = autopdp.audit(model, X, y)
    seconds = time.perf_counter() - t0
    sd = float(np.std(model.predict_proba(X)[:, 1]))
    rng = np.random.default_rng(0)
    worst, n = 0.0, 0
    t1 = time.perf_counter()
    for r in result.results_1d:
        for i in rng.choice(len(r.grid[0]), size=min(3, len(r.grid[0])), replace=False):
            gap = abs(float(r.average[-1][i]) - _brute_at(model, X, r.features[0], r.grid[0][i]))
            worst, n = max(worst, gap), n + 1
    check = result.run["self_check"]
    print(f"  audit (defaults) {seconds:.1f} s; self-check {check['status']} in {check['seconds']:.2f} s "
          f"({100 * check['seconds'] / seconds:.1f}% of the audit), {check['checks']:,} numbers, largest gap "
          f"{check['largest_gap_in_tolerances']:.2g} tolerances [{_load()}]")
    print(f"  {n} PD values of {len(result.results_1d)} features against brute force on all rows "
          f"({time.perf_counter() - t1:.1f} s): largest gap {worst:.3g} = {worst / sd:.3g} prediction sd")


BIKE = ADULT.parents[1] / "bike_sharing" / "hour.csv"


def bike_sharing() -> None:
    """Bike Sharing's 17,379 hours and an HGB regressor of 50 iterations: its leaf codes fit the row kernel's cache
    and its rows take several chunks (the case b801425 summed wrongly: 1.77 prediction sd); every 1D grid value
    against brute force."""
    import autopdp
    from sklearn.ensemble import HistGradientBoostingRegressor

    d = pd.read_csv(BIKE)
    X = d[["season", "yr", "mnth", "hr", "holiday", "weekday", "workingday", "weathersit", "temp", "atemp", "hum",
           "windspeed"]].astype(float)
    model = HistGradientBoostingRegressor(max_iter=50, random_state=0).fit(X, d["cnt"].astype(float))
    t0 = time.perf_counter()
    result = autopdp.audit(model, X, d["cnt"])
    seconds = time.perf_counter() - t0
    worst = 0.0
    for r in result.results_1d:
        for i, g in enumerate(r.grid[0]):
            worst = max(worst, abs(float(model.predict(X.assign(**{r.features[0]: g})).mean()) - r.average[0][i]))
    sd = float(np.std(model.predict(X)))
    print(f"\nBike Sharing: {len(X):,} rows, HGB regressor (50 iterations): audit {seconds:.1f} s, self-check "
          f"{result.run['self_check']['status']}; every 1D grid value against brute force: largest gap {worst:.3g} = "
          f"{worst / sd:.3g} prediction sd [{_load()}]")


def _data(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 6)), columns=list("abcdfg"))
    X["e"] = pd.Categorical(rng.choice(list("pqrstuvw"), n))
    score = X.a * X.c + 1.5 * (X.e == "q") - (X.e == "t") + X.b - 0.5 * X.d + np.sin(X.f)
    X.loc[rng.random(n) < 0.05, "b"] = np.nan
    X.loc[rng.random(n) < 0.03, "e"] = np.nan
    y_bin = (score + rng.normal(0, 0.5, n) > 0.3).astype(int)
    y_multi = np.digitize(score + rng.normal(0, 0.5, n), [-0.5, 0.8])
    y_reg = score.to_numpy() + rng.normal(0, 0.5, n)
    numeric = X.drop(columns="e").assign(b=X.b.fillna(0.0))
    return X, numeric, y_bin, y_multi, y_reg


def _families(names):
    from sklearn import ensemble as en

    hgb = dict(categorical_features="from_dtype", random_state=0)
    out = {
        "random forest classifier": (lambda: en.RandomForestClassifier(30, max_depth=8, random_state=0), "bin", False),
        "random forest multiclass": (lambda: en.RandomForestClassifier(20, max_depth=8, random_state=0), "multi", False),
        "random forest regressor": (lambda: en.RandomForestRegressor(30, max_depth=8, random_state=0), "reg", False),
        "extra trees classifier": (lambda: en.ExtraTreesClassifier(30, max_depth=8, random_state=0), "bin", False),
        "extra trees regressor": (lambda: en.ExtraTreesRegressor(30, max_depth=8, random_state=0), "reg", False),
        "gradient boosting regressor": (lambda: en.GradientBoostingRegressor(n_estimators=60, max_depth=3,
                                                                             random_state=0), "reg", False),
        "gradient boosting classifier": (lambda: en.GradientBoostingClassifier(n_estimators=60, max_depth=3,
                                                                               random_state=0), "bin", False),
        "HGB classifier": (lambda: en.HistGradientBoostingClassifier(max_iter=100, **hgb), "bin", True),
        "HGB multiclass": (lambda: en.HistGradientBoostingClassifier(max_iter=40, **hgb), "multi", True),
        "HGB regressor": (lambda: en.HistGradientBoostingRegressor(max_iter=100, **hgb), "reg", True),
    }
    try:
        import xgboost as xgb

        kw = dict(n_estimators=60, max_depth=5, enable_categorical=True, tree_method="hist", random_state=0)
        out["XGBoost classifier"] = (lambda kw=kw: xgb.XGBClassifier(**kw), "bin", True)
        out["XGBoost multiclass"] = (lambda kw=kw: xgb.XGBClassifier(**kw), "multi", True)
        out["XGBoost regressor"] = (lambda kw=kw: xgb.XGBRegressor(**kw), "reg", True)
    except ImportError:
        pass
    try:
        import lightgbm as lgb

        kw = dict(n_estimators=60, num_leaves=15, verbose=-1, random_state=0)
        out["LightGBM classifier"] = (lambda kw=kw: lgb.LGBMClassifier(**kw), "bin", True)
        out["LightGBM multiclass"] = (lambda kw=kw: lgb.LGBMClassifier(**kw), "multi", True)
        out["LightGBM regressor"] = (lambda kw=kw: lgb.LGBMRegressor(**kw), "reg", True)
    except ImportError:
        pass
    return {k: v for k, v in out.items() if names == ["all"] or k in names}


def families(sizes, names) -> None:
    from autopdp import partial_dependence

    chosen = _families(names)
    print(f"\nevery family, PD and std on every row against brute force (gap in prediction sd) [{_load()}]")
    print(f"{'family':30s} {'rows':>7s} {'n_jobs=1':>10s} {'n_jobs=2':>10s} {'tree s':>7s} {'brute s':>8s}")
    for n in sizes:
        X, numeric, y_bin, y_multi, y_reg = _data(n)
        for name, (make, kind, native) in chosen.items():
            data = X if native else numeric
            y = {"bin": y_bin, "multi": y_multi, "reg": y_reg}[kind]
            model = make().fit(data, y)
            features = ["a", "b", "d", "e" if native else "f", ("a", "c"), ("b", "e" if native else "d")]
            out = model.predict_proba(data) if hasattr(model, "predict_proba") else model.predict(data)
            sd = float(np.std(out))
            t0 = time.perf_counter()
            slow = partial_dependence(model, data, features, kind="average", std=True, method="brute",
                                      grid_resolution=8)
            brute_s = time.perf_counter() - t0
            gaps, tree_s = [], 0.0
            for n_jobs in (1, 2):
                t0 = time.perf_counter()
                fast = partial_dependence(model, data, features, kind="both", method="tree", grid_resolution=8,
                                          n_jobs=n_jobs, subsample=200)
                tree_s = time.perf_counter() - t0 if n_jobs == 1 else tree_s
                assert all(f.method == "tree" for f in fast), name
                gaps.append(max(max(np.max(np.abs(f.average - b.average)), np.max(np.abs(f.std - b.std)))
                                for f, b in zip(fast, slow)) / sd)
            print(f"{name:30s} {n:7,d} {gaps[0]:10.2g} {gaps[1]:10.2g} {tree_s:7.1f} {brute_s:8.1f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="3000,25000,60000")
    ap.add_argument("--families", default="all", help="comma-separated family names, or all")
    ap.add_argument("--skip-adult", action="store_true")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    if not args.skip_adult:
        full_adult()
        bike_sharing()
    families([int(s) for s in args.sizes.split(",") if s], args.families.split(","))


if __name__ == "__main__":
    main()

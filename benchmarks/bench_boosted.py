"""Boosted classifiers, exact on all rows (issue #12), side by side with scikit-learn brute force in one run.

  A. HistGradientBoostingClassifier (200 iterations, native categoricals) on 4,000 Adult rows: the whole
     default ``autopdp.audit`` (every 1D and 2D PD on all rows, all scores, trust) against scikit-learn's
     brute-force PDs alone on the same grids and the raw predict floor (both timed on all 1D PDs and
     --pairs 2D PDs, the 2D part extrapolated by grid points to all pairs; --all-pairs times every pair).
     Every checked PD is compared with scikit-learn's brute force on all rows.
  B. The same for XGBoost and LightGBM classifiers (when installed).
  C. Wide: a default audit of a HistGradientBoostingClassifier(200) on 5,000 rows x {15, 30, 60} features.
  D. Full Adult (48,842 rows): all 1D and 2D PDs exact with std (partial_dependence, kind="average",
     std=True), time and peak memory in a child process.

    python benchmarks/bench_boosted.py [--pairs 4] [--all-pairs] [--skip A,B,C,D]
"""

from __future__ import annotations

import argparse
import itertools
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

import autopdp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_engine import raw_floor  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ADULT = next((p for p in (ROOT.parent / "shared" / "data" / "adult" / "adult.csv",) if p.exists()), None)


def load_adult(n=None):
    df = pd.read_csv(ADULT, na_values="?", skipinitialspace=True)
    y = df.pop("income").astype(str).str.contains(">50K").astype(int)
    for c in df.columns:
        if not pd.api.types.is_numeric_dtype(df[c]):
            df[c] = df[c].astype("category")
        else:
            df[c] = df[c].astype(float)  # scikit-learn's partial_dependence refuses integer columns
    if n is not None and n < len(df):
        df = df.sample(n, random_state=0)
    return df, y.loc[df.index].to_numpy()


def sk_brute(model, X, results):
    from sklearn.inspection import partial_dependence as sk_pd

    out = []
    for r in results:
        custom = {f: (list(g) if k == "categorical" else g) for f, g, k in zip(r.features, r.grid, r.kinds)}
        cats = [f for f, k in zip(r.features, r.kinds) if k == "categorical"] or None
        avg = sk_pd(model, X, list(r.features), custom_values=custom, method="brute", kind="average",
                    response_method="predict_proba", categorical_features=cats)["average"]
        out.append(np.asarray(avg)[-1:] if avg.shape[0] == 1 else np.asarray(avg)[1:2])
    return out


def audit_vs_sklearn(name, model, X, y, n_pairs, all_pairs):
    print(f"\n== {name}: {X.shape[0]:,} rows x {X.shape[1]} features ==")
    autopdp.partial_dependence(model, X.iloc[:30], [X.columns[0]], kind="both")  # warm-up (JIT cache, imports)
    t0 = time.perf_counter()
    a = autopdp.audit(model, X, y)  # the default call
    t_audit = time.perf_counter() - t0
    timings = {k: round(v, 1) for k, v in a.run["timings_s"].items() if k != "total"}
    print(f"autopdp default audit: {t_audit:.1f} s, stages {timings}", flush=True)
    r1, r2 = a.results_1d, a.results_2d
    chosen = r2 if all_pairs else r2[:: max(1, len(r2) // n_pairs)][:n_pairs]
    t0 = time.perf_counter()
    ref1 = sk_brute(model, X, r1)
    t_sk1 = time.perf_counter() - t0
    t0 = time.perf_counter()
    ref2 = sk_brute(model, X, chosen)
    t_sk2 = time.perf_counter() - t0
    scale = len(r2) / max(len(chosen), 1)
    t_sk = t_sk1 + t_sk2 * scale
    sets1 = [r.features for r in r1]
    f1 = raw_floor(model, X, sets1, r1, "predict_proba")
    f2 = raw_floor(model, X, [r.features for r in chosen], chosen, "predict_proba")
    floor = f1 + f2 * scale
    err = max(float(np.abs(r.average - s).max()) for r, s in zip(list(r1) + list(chosen), ref1 + ref2))
    label = "all pairs timed" if all_pairs else f"2D extrapolated from {len(chosen)} of {len(r2)} pairs"
    print(f"autopdp default audit ({len(r1)} 1D + {len(r2)} 2D PDs on all rows, method {a.metadata['pd_method']}): "
          f"{t_audit:7.1f} s  stages {timings}")
    print(f"sklearn brute PDs alone ({label}):  {t_sk:8.1f} s  -> sklearn / autopdp audit = {t_sk / t_audit:6.1f}x "
          f"(target >= 30x)")
    print(f"raw predict floor (same rows):        {floor:8.1f} s  -> floor / autopdp audit   = {floor / t_audit:6.1f}x")
    print(f"max |autopdp - sklearn brute| over {len(r1)} 1D + {len(chosen)} 2D PDs (all rows): {err:.1e}")
    ood_cost(X, r1, r2)
    return err


def ood_cost(X, r1, r2):
    """The out-of-distribution share of every PD on all rows (part of the audit's trust stage), timed alone."""
    from autopdp.pd.data import as_frame
    from autopdp.trust.ood import SupportModel

    kinds = {r.features[0]: r.kinds[0] for r in r1}
    t0 = time.perf_counter()
    sm = SupportModel(as_frame(X), kinds)
    t_build = time.perf_counter() - t0
    t0 = time.perf_counter()
    for r in list(r1) + list(r2):
        sm.share(r.features, r.grid)
    t_share = time.perf_counter() - t0
    rows = f"a sample of {sm.rows.size:,}" if sm.sampled else f"all {sm.rows.size:,}"
    print(f"OOD share of all {len(r1) + len(r2)} PDs on {rows} rows: index and distances {t_build:.1f} s, "
          f"shares {t_share:.1f} s (inside the audit's trust stage)")


def wide():
    from sklearn.ensemble import HistGradientBoostingClassifier

    print("\n== C. Wide: default audit, HistGradientBoostingClassifier(200) on 5,000 rows ==")
    rng = np.random.default_rng(0)
    for p in (15, 30, 60):
        X = pd.DataFrame(rng.normal(size=(5000, p)), columns=[f"x{i}" for i in range(p)])
        y = ((X.iloc[:, :8].sum(axis=1) + X.x0 * X.x1 + rng.normal(size=5000)) > 0).astype(int).to_numpy()
        model = HistGradientBoostingClassifier(max_iter=200, random_state=0).fit(X, y)
        t0 = time.perf_counter()
        a = autopdp.audit(model, X, y)
        dt = time.perf_counter() - t0
        t = a.run["timings_s"]
        print(f"{p:3d} features: {len(a.results_1d)} 1D + {len(a.results_2d)} 2D PDs ({a.metadata['pd_method']}, all rows): "
              f"{dt:7.1f} s  (PD 1D {t['pd_1d']:.1f}, PD 2D {t['pd_2d']:.1f}, trust {t['trust']:.1f} with "
              f"scoring {t['scoring']:.1f} beside it, noise tests {t['noise_tests']:.1f})")


FULL_CHILD = r"""
import sys, time, itertools
# this process's own peak resident memory (VmHWM; getrusage's maxrss carries the forking parent's peak over exec)
peak_mb = lambda: next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:')) / 1024
sys.path.insert(0, sys.argv[1])
from bench_boosted import load_adult
import autopdp
from sklearn.ensemble import HistGradientBoostingClassifier
X, y = load_adult()
model = HistGradientBoostingClassifier(max_iter=200, categorical_features="from_dtype", random_state=0).fit(X, y)
autopdp.partial_dependence(model, X.iloc[:30], [X.columns[0]], kind="both")
base = peak_mb()
feats = list(X.columns)
t0 = time.perf_counter()
res = autopdp.partial_dependence(model, X, feats, kind="average", std=True, grid_resolution=20)
res += autopdp.partial_dependence(model, X, list(itertools.combinations(feats, 2)), kind="average", std=True,
                                  grid_resolution=10)
dt = time.perf_counter() - t0
peak = peak_mb()
print(len(res), f"{dt:.1f}", f"{base:.0f}", f"{peak:.0f}", sorted({r.method for r in res}), len(X))
"""


def full_adult():
    out = subprocess.run([sys.executable, "-c", FULL_CHILD, str(Path(__file__).resolve().parent)],
                         capture_output=True, text=True)
    if out.returncode != 0:
        print(out.stderr[-3000:])
        return
    n, dt, base, peak, *rest = out.stdout.split(maxsplit=4)
    print(f"\n== D. Full Adult: all 1D (grid 20) + 2D (10x10) PDs exact with std, HGB classifier(200) ==")
    print(f"{n} PDs on {rest[-1].split()[-1]} rows in {dt} s (target < 60 s); peak RSS {peak} MB "
          f"(data + model alone {base} MB; target < 2048 MB); method {rest[0]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--all-pairs", action="store_true")
    ap.add_argument("--skip", default="")
    args = ap.parse_args()
    skip = set(args.skip.split(","))
    if ADULT is None:
        print("Adult data not found (shared/data/adult/adult.csv beside the repository)")
        return
    X, y = load_adult(4000)
    if "A" not in skip:
        from sklearn.ensemble import HistGradientBoostingClassifier

        hgb = HistGradientBoostingClassifier(max_iter=200, categorical_features="from_dtype", random_state=0).fit(X, y)
        audit_vs_sklearn("A. HistGradientBoostingClassifier(200), native categoricals, Adult", hgb, X, y,
                         args.pairs, args.all_pairs)
    if "B" not in skip:
        try:
            import lightgbm as lgb
            import xgboost as xgb
        except ImportError:
            print("\n== B. skipped: xgboost/lightgbm not installed ==")
        else:
            xm = xgb.XGBClassifier(n_estimators=200, max_depth=6, enable_categorical=True, tree_method="hist",
                                   random_state=0, n_jobs=1).fit(X, y)
            audit_vs_sklearn("B1. XGBClassifier(200), native categoricals, Adult", xm, X, y, args.pairs, args.all_pairs)
            lm = lgb.LGBMClassifier(n_estimators=200, verbose=-1, random_state=0, n_jobs=1).fit(X, y)
            audit_vs_sklearn("B2. LGBMClassifier(200), native categoricals, Adult", lm, X, y, args.pairs,
                             args.all_pairs)
    if "C" not in skip:
        wide()
    if "D" not in skip:
        full_adult()


if __name__ == "__main__":
    main()

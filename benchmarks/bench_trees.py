"""Tree fast path benchmark (issue #7): exact PDs of tree ensembles without predicting.

  A. RandomForestClassifier(100 trees, n_jobs=1) on 1,000 x 20: all 20 1D PDs (grid 20) and all
     190 2D PDs (20x20), PD averages only: autopdp's tree path vs the raw predict floor and
     sklearn brute (both timed on --pairs pairs and extrapolated), values checked against brute.
  B. HistGradientBoostingRegressor on Bike Sharing (17,379 rows): all 1D and 2D PDs likewise.
  C. Peak memory: 100,000 x 100, all 100 1D and 4,950 2D PDs through the tree path
     (HistGradientBoostingRegressor, 100 iterations), in a child process.

    python benchmarks/bench_trees.py [--pairs 3] [--skip-memory]
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
from bench_engine import raw_floor, sklearn_brute  # noqa: E402

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def run(name, model, X, pairs_sample, response_method):
    feats = list(X.columns)
    pairs = list(itertools.combinations(feats, 2))
    print(f"\n== {name}: {X.shape[0]:,} rows x {X.shape[1]} features, {len(feats)} 1D + {len(pairs)} 2D PDs ==")
    autopdp.partial_dependence(model, X.iloc[:50], feats[:1], kind="average", method="tree", std_rows=0)  # JIT warm-up
    t0 = time.perf_counter()
    res = autopdp.partial_dependence(model, X, feats + pairs, kind="average")  # the default call
    t_tree = time.perf_counter() - t0
    assert all(r.method == "tree" for r in res)
    chosen = pairs[:: max(1, len(pairs) // pairs_sample)][:pairs_sample]
    by = {r.features: r for r in res}
    sub = [by[(f,)] for f in feats] + [by[p] for p in chosen]
    sets = [(f,) for f in feats] + chosen
    t_floor_1d = raw_floor(model, X, sets[: len(feats)], sub[: len(feats)], "predict_proba" if response_method == "predict_proba" else "predict")
    t_floor_2d = raw_floor(model, X, chosen, sub[len(feats):], "predict_proba" if response_method == "predict_proba" else "predict")
    t0 = time.perf_counter()
    ref = sklearn_brute(model, X, sets, sub, response_method)
    t_sk = time.perf_counter() - t0
    err = max(float(np.abs(r.average - s).max()) for r, s in zip(sub, ref))
    scale = len(pairs) / len(chosen)
    # split sklearn's time between 1D and 2D by the grid points evaluated, then extrapolate the 2D part
    rows_1d = sum(np.prod(r.grid_shape) for r in sub[: len(feats)])
    rows_2d = sum(np.prod(r.grid_shape) for r in sub[len(feats):])
    t_sk_1d = t_sk * rows_1d / (rows_1d + rows_2d)
    t_sk_all = t_sk_1d + (t_sk - t_sk_1d) * scale
    floor_all = t_floor_1d + t_floor_2d * scale
    print(f"autopdp default kind='average' call, all {len(res)} PDs: {t_tree:7.2f} s (target < 2 s for A)")
    print(f"raw predict floor (1D + {len(chosen)} pairs x{scale:.0f}): {floor_all:8.1f} s  -> floor / tree = {floor_all / t_tree:6.1f}x")
    print(f"sklearn brute (extrapolated likewise):      {t_sk_all:8.1f} s  -> sklearn / tree = {t_sk_all / t_tree:6.1f}x")
    print(f"max |tree - sklearn brute| on the checked PDs: {err:.1e}")
    assert err < 1e-9


MEMORY_CHILD = r"""
import time, itertools, numpy as np, pandas as pd, autopdp
# this process's own peak resident memory (VmHWM; getrusage's maxrss carries the forking parent's peak over exec)
peak_mb = lambda: next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:')) / 1024
from sklearn.ensemble import HistGradientBoostingRegressor
rng = np.random.default_rng(0)
X = pd.DataFrame(rng.normal(size=(100_000, 100)).astype(np.float64), columns=[f"c{i}" for i in range(100)])
y = X.iloc[:, :10].sum(axis=1) + X.c0 * X.c1 + rng.normal(size=len(X))
model = HistGradientBoostingRegressor(max_iter=100, random_state=0).fit(X, y)
base = peak_mb()
t0 = time.perf_counter()
feats = list(X.columns)
res = autopdp.partial_dependence(model, X, feats + list(itertools.combinations(feats, 2)), kind="average",
                                 method="tree", std_rows=0)
dt = time.perf_counter() - t0
peak = peak_mb()
print(len(res), f"{dt:.1f}", f"{base:.0f}", f"{peak:.0f}", res[0].method)
"""


def memory():
    out = subprocess.run([sys.executable, "-c", MEMORY_CHILD], capture_output=True, text=True)
    if out.returncode != 0:
        print(out.stderr[-2000:])
        raise SystemExit(1)
    n, dt, base, peak, method = out.stdout.split()
    print("\n== C. Memory: 100,000 x 100, all 100 1D + 4,950 2D PDs (HGB regressor, 100 iterations) ==")
    print(f"{n} PDs ({method} path) in {dt} s; peak RSS {peak} MB (data + model alone {base} MB); target < 2048 MB")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--skip-memory", action="store_true")
    args = ap.parse_args()
    from sklearn.datasets import make_classification
    from sklearn.ensemble import HistGradientBoostingRegressor, RandomForestClassifier

    X, y = make_classification(n_samples=1000, n_features=20, n_informative=8, random_state=0)
    X = pd.DataFrame(X, columns=[f"f{i}" for i in range(20)])
    rf = RandomForestClassifier(n_estimators=100, n_jobs=1, random_state=0).fit(X, y)
    run("A. RandomForestClassifier(100)", rf, X, args.pairs, "predict_proba")
    path = SHARED / "bike_sharing" / "hour.csv"
    if path.exists():
        df = pd.read_csv(path)
        yb = df["cnt"].astype(float)
        Xb = df.drop(columns=["instant", "dteday", "casual", "registered", "cnt"]).astype(float)
        hgb = HistGradientBoostingRegressor(max_iter=200, random_state=0).fit(Xb, yb)
        run("B. HistGradientBoostingRegressor, Bike Sharing", hgb, Xb, args.pairs, "auto")
    else:
        print(f"\n== B. skipped: {path} not found ==")
    if not args.skip_memory:
        memory()


if __name__ == "__main__":
    main()

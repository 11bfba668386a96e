"""PD engine benchmark: autopdp vs scikit-learn brute vs the raw predict floor, in one run.

Workloads (issue #2):
  A. RandomForestClassifier(100 trees, n_jobs=1) on 1,000 x 20, grid 20: all 20 1D PDs and
     all 190 2D PDs at 20x20 (2D timed on --pairs pairs and extrapolated unless --all-pairs).
  B. HistGradientBoostingRegressor on Bike Sharing (17,379 rows): all 1D PDs, and 2D on
     --pairs pairs.
  C. Peak memory of compute_all's 1D PDs on 50,000 x 50 at grid 20 (a child process, so the
     figure is the process's own peak RSS).

The raw floor is predict/predict_proba on exactly the augmented rows autopdp evaluates, in
batches as large as the memory cap allows, with no PD bookkeeping. Values are checked
against scikit-learn on the same grids.

    python benchmarks/bench_engine.py [--pairs 4] [--all-pairs] [--skip-memory]
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
from autopdp.pd.data import as_frame
from autopdp.pd.engine import Augmenter, assemble, _grid_points, rows_per_batch
from autopdp.pd.grids import build_spec

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def raw_floor(model, X, feature_sets, results, method):
    """Predict the same augmented rows in maximal batches; time only the predict calls."""
    frame = as_frame(X)
    predict = getattr(model, method)
    budget = rows_per_batch(frame, 1, 256e6)
    total = 0.0
    pending, size = [], 0

    def flush():
        nonlocal total, pending, size
        if pending:
            batch = assemble(frame, pending)
            t0 = time.perf_counter()
            predict(batch)
            total += time.perf_counter() - t0
        pending, size = [], 0

    for fs, res in zip(feature_sets, results):
        fs = (fs,) if isinstance(fs, str) else tuple(fs)
        positions = [frame.position_of(f) for f in fs]
        specs = [
            build_spec(frame, p, categorical=k == "categorical", grid_resolution=len(g), percentiles=(0.05, 0.95),
                       grid_method="quantile", custom_values=g)
            for p, k, g in zip(positions, res.kinds, res.grid)
        ]
        aug = Augmenter(frame, specs)
        points = _grid_points(specs)
        n = frame.n_rows
        block = max(1, budget // n)
        rows = np.arange(n)
        for g0 in range(0, len(points[0]), block):
            part = aug(rows, [p[g0:g0 + block] for p in points])
            if size + len(part) > budget:
                flush()
            pending.append(part)
            size += len(part)
    flush()
    return total


def sklearn_brute(model, X, feature_sets, results, response_method):
    from sklearn.inspection import partial_dependence as sk_pd

    out = []
    for fs, res in zip(feature_sets, results):
        fs = (fs,) if isinstance(fs, str) else tuple(fs)
        custom = {f: g for f, g in zip(fs, res.grid)}
        out.append(sk_pd(model, X, list(fs), custom_values=custom, method="brute", kind="average",
                         response_method=response_method)["average"])
    return out


def compare(name, model, X, sets_1d, sets_2d, n_pairs_total, method, response_method):
    print(f"\n== {name}: {X.shape[0]:,} rows x {X.shape[1]} features ==")
    autopdp.partial_dependence(model, X.iloc[:20], sets_1d[:1], kind="average", method="brute")  # warm-up: imports
    # method="brute": this benchmark measures the brute-force engine (bench_trees.py measures the tree path,
    # which method="auto" picks for these models)
    t_ours1, res1 = timed(lambda: autopdp.partial_dependence(model, X, sets_1d, kind="average", method="brute"))
    t_sk1, sk1 = timed(lambda: sklearn_brute(model, X, sets_1d, res1, response_method))
    t_floor1 = raw_floor(model, X, sets_1d, res1, method)
    err1 = max(float(np.abs(r.average - s).max()) for r, s in zip(res1, sk1))
    t_ours2, res2 = timed(lambda: autopdp.partial_dependence(model, X, sets_2d, kind="average", method="brute"))
    t_sk2, sk2 = timed(lambda: sklearn_brute(model, X, sets_2d, res2, response_method))
    t_floor2 = raw_floor(model, X, sets_2d, res2, method)
    err2 = max(float(np.abs(r.average - s).max()) for r, s in zip(res2, sk2))
    scale = n_pairs_total / len(sets_2d)
    print(f"1D, {len(sets_1d)} features: autopdp {t_ours1:7.2f} s | sklearn brute {t_sk1:7.2f} s | raw floor {t_floor1:7.2f} s")
    print(f"    autopdp / floor = {t_ours1 / t_floor1:5.2f}x   sklearn / autopdp = {t_sk1 / t_ours1:5.1f}x   max |diff| vs sklearn = {err1:.1e}")
    extra = "" if scale == 1 else f" (timed on {len(sets_2d)} pairs, x{scale:.0f} for all {n_pairs_total})"
    print(f"2D, {n_pairs_total} pairs{extra}: autopdp {t_ours2 * scale:8.1f} s | sklearn brute {t_sk2 * scale:8.1f} s | raw floor {t_floor2 * scale:8.1f} s")
    print(f"    autopdp / floor = {t_ours2 / t_floor2:5.2f}x   sklearn / autopdp = {t_sk2 / t_ours2:5.1f}x   max |diff| vs sklearn = {err2:.1e}")
    assert err1 < 1e-9 and err2 < 1e-9, "autopdp disagrees with sklearn"


def workload_forest(n_pairs, all_pairs):
    from sklearn.datasets import make_classification
    from sklearn.ensemble import RandomForestClassifier

    X, y = make_classification(n_samples=1000, n_features=20, n_informative=8, random_state=0)
    X = pd.DataFrame(X, columns=[f"f{i}" for i in range(20)])
    model = RandomForestClassifier(n_estimators=100, n_jobs=1, random_state=0).fit(X, y)
    pairs = list(itertools.combinations(X.columns, 2))
    chosen = pairs if all_pairs else pairs[:: max(1, len(pairs) // n_pairs)][:n_pairs]
    compare("A. RandomForestClassifier(100), synthetic", model, X, list(X.columns), chosen, len(pairs),
            "predict_proba", "predict_proba")


def workload_bike(n_pairs, all_pairs):
    from sklearn.ensemble import HistGradientBoostingRegressor

    path = SHARED / "bike_sharing" / "hour.csv"
    if not path.exists():
        print(f"\n== B. Bike Sharing: skipped ({path} not found) ==")
        return
    df = pd.read_csv(path)
    y = df["cnt"].astype(float)
    X = df.drop(columns=["instant", "dteday", "casual", "registered", "cnt"]).astype(float)
    model = HistGradientBoostingRegressor(max_iter=200, random_state=0).fit(X, y)
    pairs = list(itertools.combinations(X.columns, 2))
    chosen = pairs if all_pairs else pairs[:: max(1, len(pairs) // n_pairs)][:n_pairs]
    compare("B. HistGradientBoostingRegressor, Bike Sharing", model, X, list(X.columns), chosen, len(pairs),
            "predict", "auto")


MEMORY_CHILD = r"""
import time, numpy as np, pandas as pd, autopdp
# this process's own peak resident memory (VmHWM; getrusage's maxrss carries the forking parent's peak over exec)
peak_mb = lambda: next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:')) / 1024
from sklearn.linear_model import Ridge
rng = np.random.default_rng(0)
X = pd.DataFrame(rng.normal(size=(50_000, 50)), columns=[f"c{i}" for i in range(50)])
y = X.to_numpy() @ rng.normal(size=50)
model = Ridge().fit(X, y)
base = peak_mb()
t0 = time.perf_counter()
res = autopdp.compute_all(model, X, pairs=False, grid_resolution=20, method="brute")
dt = time.perf_counter() - t0
peak = peak_mb()
print(f"{len(res)} {dt:.2f} {base:.0f} {peak:.0f}")
"""


def workload_memory():
    out = subprocess.run([sys.executable, "-c", MEMORY_CHILD], capture_output=True, text=True, check=True).stdout.split()
    n, dt, base, peak = int(out[0]), float(out[1]), float(out[2]), float(out[3])
    print("\n== C. Memory: compute_all 1D on 50,000 x 50, grid 20 (Ridge) ==")
    print(f"{n} PDs in {dt:.1f} s; peak RSS {peak:.0f} MB (data and model alone: {base:.0f} MB); target < 1024 MB")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=4, help="2D pairs to time (extrapolated to all)")
    ap.add_argument("--all-pairs", action="store_true", help="time every pair (slow: sklearn needs ~20 min)")
    ap.add_argument("--skip-memory", action="store_true")
    args = ap.parse_args()
    workload_forest(args.pairs, args.all_pairs)
    workload_bike(args.pairs, args.all_pairs)
    if not args.skip_memory:
        workload_memory()


if __name__ == "__main__":
    main()

"""How often a pure-noise feature is a slope finding, and the power on planted steps (issue 53: one materiality scale).

    python benchmarks/bench_slope_level.py [--seeds 100]

Data: x1 ~ U(-1, 1) the signal, x2, x3, x4 ~ U(-1, 1) pure noise, x5 ~ U(-1, 1) a planted step; y = 2 x1 +
h * [x5 > 0] + N(0, 1).  Each seed draws 1,000 training rows and 500 audit rows, fits a random forest (100 trees,
min_samples_leaf 5), a gradient boosting machine (100 trees, depth 3) and a HistGradientBoosting regressor (default),
and audits them with the default settings (pairs off).  Prints, per learner and with 95% Clopper-Pearson intervals:
the share of noise features (3 per seed) whose fitted PD passes the slope test (material and clear of noise: a
pattern of the fitted model), the same for the importance test (the bar the slope's is set against), the share that
are slope findings (passed, and not set aside: the held-out permutation importance shows the feature to matter,
:func:`autopdp.scores.selection.set_aside_features`), and the same two for the planted step (h = 0.4: about 4 times
the slope's threshold of 2 x 0.05 x the prediction sd, which is about 1.2).  `uptime`'s load is printed beside the figures.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.ensemble import GradientBoostingRegressor, HistGradientBoostingRegressor, RandomForestRegressor

sys.path.insert(0, str(Path(__file__).resolve().parent))
from calibration_cases import clopper_pearson  # noqa: E402
from autopdp import AuditConfig, audit

LEARNERS = {
    "RF": lambda s: RandomForestRegressor(n_estimators=100, min_samples_leaf=5, random_state=s, n_jobs=1),
    "GBM": lambda s: GradientBoostingRegressor(n_estimators=100, max_depth=3, random_state=s),
    "HGB": lambda s: HistGradientBoostingRegressor(random_state=s),
}
NOISE = ("x2", "x3", "x4")


def _data(seed: int, h: float):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.uniform(-1, 1, size=(1500, 5)), columns=["x1", "x2", "x3", "x4", "x5"])
    y = 2 * X.x1 + h * (X.x5 > 0) + rng.normal(size=1500)
    return X[:1000], y[:1000], X[1000:].reset_index(drop=True), y[1000:].reset_index(drop=True)


def _ci(k: int, n: int) -> str:
    lo, hi = clopper_pearson(k, n)
    return f"{k:4d}/{n:<4d} {k / n:6.1%} [{lo:5.1%}, {hi:5.1%}]"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--step", type=float, default=0.4)
    args = ap.parse_args(argv)
    print(f"load at start: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    started = time.perf_counter()
    cfg = AuditConfig(pairs=False, utilities=("slope",))
    for name, make in LEARNERS.items():
        slope_noise = imp_noise = planted = supported = planted_found = 0
        for seed in range(args.seeds):
            Xt, yt, Xa, ya = _data(seed, args.step)
            a = audit(make(seed).fit(Xt, yt), Xa, ya, config=cfg, random_state=seed)
            slope_noise += sum(a.evidence["slope"][(f,)].passed for f in NOISE)
            # a finding: passed its tests and not set aside (the held-out data show its feature to matter)
            supported += sum(a.evidence["slope"][(f,)].passed and f not in a.set_aside for f in NOISE)
            imp_noise += sum(a.evidence["importance_1d"][(f,)].passed for f in NOISE)
            planted += a.evidence["slope"][("x5",)].passed
            planted_found += a.evidence["slope"][("x5",)].passed and "x5" not in a.set_aside
        n = args.seeds * len(NOISE)
        print(f"{name:4s} noise features whose fitted PD passes the slope test  {_ci(slope_noise, n)}")
        print(f"{name:4s} noise features whose fitted PD passes the importance test {_ci(imp_noise, n)}")
        print(f"{name:4s} noise features that are slope findings (not set aside) {_ci(supported, n)}")
        print(f"{name:4s} planted step h = {args.step:g} passes the slope test        {_ci(planted, args.seeds)}")
        print(f"{name:4s} planted step h = {args.step:g} is a slope finding           {_ci(planted_found, args.seeds)}")
    print(f"({time.perf_counter() - started:.0f} s; load at end: "
          f"{subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Scoring benchmark (issue #3): all utilities on all 210 PDPs of a 20-feature model.

RandomForestClassifier(100 trees) on 1,000 x 20 synthetic data: 20 1D PDs at grid 20 and
190 2D PDs at 20x20.  The 2D PDs average over 100 rows (``max_rows_2d``) to keep the run
short: scoring works on the PD arrays, so its cost does not depend on that.  Prints the PD
time beside the scoring time, and the cost of one cvxpy Lipschitz fit of 50 points built
and solved each time vs re-solved as a cached parameterised problem.

    python benchmarks/bench_scoring.py
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd


def lipschitz_costs(repeats: int = 30):
    import cvxpy as cp

    from autopdp.scores.utilities.lipschitz import lipschitz_fit

    rng = np.random.default_rng(0)
    x = np.linspace(0, 1, 50)
    curves = [np.cumsum(rng.normal(size=50)) for _ in range(repeats)]
    t0 = time.perf_counter()
    for f in curves:
        g = cp.Variable(50)
        d = g[1:] - g[:-1]
        cp.Problem(cp.Minimize(cp.sum_squares(g - f)), [d <= 0.5 * np.diff(x), -d <= 0.5 * np.diff(x)]).solve(solver="CLARABEL")
    fresh = (time.perf_counter() - t0) / repeats
    lipschitz_fit(curves[0], [x], [0.5])  # build the cached problem once
    t0 = time.perf_counter()
    for f in curves:
        lipschitz_fit(f, [x], [0.5])
    cached = (time.perf_counter() - t0) / repeats
    print(f"Lipschitz fit, 50 points: built and solved each time {fresh * 1e3:.1f} ms | re-solved DPP {cached * 1e3:.1f} ms")


def main():
    from sklearn.datasets import make_classification
    from sklearn.ensemble import RandomForestClassifier

    import autopdp

    X, y = make_classification(n_samples=1000, n_features=20, n_informative=8, random_state=0)
    X = pd.DataFrame(X, columns=[f"f{i}" for i in range(20)])
    model = RandomForestClassifier(n_estimators=100, n_jobs=1, random_state=0).fit(X, y)
    cfg = autopdp.AuditConfig(grid_resolution=20, grid_resolution_2d=20, max_rows_2d=100)
    a = autopdp.audit(model, X, y, config=cfg)
    t = a.run["timings_s"]
    n1, n2 = len(a.results_1d), len(a.results_2d)
    print(f"{n1} 1D + {n2} 2D PDPs ({a.results_2d[0].grid_shape} grids)")
    print(f"PD time: 1D {t['pd_1d']:.1f} s, 2D {t['pd_2d']:.1f} s (on {a.metadata['data']['rows_used_2d']} rows)")
    core = [u for u in cfg.utilities if u not in ("stratpd", "ale_divergence", "ood_share")]
    print(f"Scoring all {n1 + n2} PDPs with {', '.join(core)}: {t['scoring']:.2f} s (target < 3 s)")
    print(f"  trust stage (stratpd, ale_divergence, ood_share, surrogate importance): {t['trust']:.2f} s")
    solved = sum(1 for s in a.utility_scores.values() if s["lipschitz"].details.get("solved_by") not in (None, "feasible"))
    print(f"  Lipschitz fits that needed a solve: {solved} of {n1 + n2}")
    lipschitz_costs()


if __name__ == "__main__":
    main()

"""Level and power of the findings' noise tests (materiality 0: the test alone decides).

    python benchmarks/bench_calibration.py [--seeds 200] [--power-seeds 100]

Prints, for every null case of ``calibration_cases.NULL_CASES``, each
criterion's false-finding rate over the seeds (nominal 5%, with the 99%
binomial bound beside it), the power at 1x, 2x and 4x the noise sd of every
criterion, and a Kolmogorov-Smirnov check of the unadjusted null p-values'
uniformity (Monte-Carlo p-values are discrete and slightly conservative, so
the check is one-sided: too many small p-values fail it).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
import calibration_cases as cases  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--power-seeds", type=int, default=100)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    bound = cases.binomial_slack(args.seeds)
    print(f"Level: false-finding rate over {args.seeds} seeds per null case (nominal {cases.LEVEL:.0%}; "
          f"99% binomial bound {bound}/{args.seeds} = {bound / args.seeds:.1%})")
    worst = 0.0
    for name, fn in cases.NULL_CASES.items():
        t0 = time.perf_counter()
        r = cases.rate(fn, range(args.seeds))
        worst = max(worst, max(r.values()))
        print(f"  {name:44s} " + "  ".join(f"{c} {v:.1%}" for c, v in r.items())
              + f"   ({time.perf_counter() - t0:.0f} s)", flush=True)
    print(f"  largest false-finding rate: {worst:.1%}")
    print(f"\nPower: share of {args.power_seeds} runs in which a planted effect of k noise sd is a finding")
    print("  criterion        1x      2x      4x")
    for c in cases.POWER_CRITERIA:
        row = [np.mean([cases.power_case(c, k, 10_000 + s) for s in range(args.power_seeds)]) for k in (1, 2, 4)]
        print(f"  {c:14s} " + "  ".join(f"{v:6.1%}" for v in row), flush=True)
    p = np.concatenate([cases.null_p_values(s) for s in range(min(args.seeds, 100))])
    ks = stats.kstest(p, "uniform", alternative="greater")
    print(f"\nNull p-values (slope, importance, monotonicity, lipschitz of x1*x2): {p.size} values, "
          f"share <= 0.05: {np.mean(p <= 0.05):.1%}, <= 0.01: {np.mean(p <= 0.01):.1%}; "
          f"one-sided KS (too many small p) p = {ks.pvalue:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

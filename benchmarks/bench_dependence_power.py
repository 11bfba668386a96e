"""Power of the incidence criterion's dependence test at the data's size (issue 53, item 7).

    python benchmarks/bench_dependence_power.py [--seeds 40] [--rows 3000]

The staircase case of benchmarks/calibration_cases.py: a HistGradientBoosting classifier with one feature per
tree is the truth (each row's class drawn with its own probability), x1 ~ U(-2, 2), x2 ~ N(0, 1) correlated
``rho`` with x1, x3 ~ U(0, 1); default settings, incidence only.  With rho > 0 the PD of x1 and x2 differs from
the data's trend (the dependence null is false): the share of seeds with a dependence finding on x1 or x2 is the
power.  rho = 0 gives the level (every incidence finding false).  95% Clopper-Pearson intervals; `uptime`'s load
beside the figures.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent))
from calibration_cases import clopper_pearson, staircase  # noqa: E402


def _ci(k: int, n: int) -> str:
    lo, hi = clopper_pearson(k, n)
    return f"{k:3d}/{n:<3d} {k / n:6.1%} [{lo:5.1%}, {hi:5.1%}]"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--rows", type=int, default=3000)
    args = ap.parse_args(argv)
    print(f"load at start: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    started = time.perf_counter()
    for rho in (0.0, 0.1, 0.2, 0.4):
        key = "incidence" if rho == 0 else "dependence"
        found = sum(staircase(1000 + s, n=args.rows, rho=rho)[key].finding for s in range(args.seeds))
        what = "level: any incidence finding" if rho == 0 else "power: a dependence finding on x1 or x2"
        print(f"rho {rho:.1f}, {args.rows:,} rows, {what:42s} {_ci(found, args.seeds)}")
    print(f"({time.perf_counter() - started:.0f} s; load at end: "
          f"{subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

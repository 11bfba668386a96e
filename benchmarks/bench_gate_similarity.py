"""Level and power of the gate's minimum-effect test of ``max_similarity`` (issue 52: the test draws the shape gap).

    python benchmarks/bench_gate_similarity.py [--seeds 200]

The model: x1 on 10 fixed values (30 rows each), x2 ~ N(0, 1) redrawn per seed; the candidate f = x1 + x1**2, the
champion f + 3 + D * bump(x1) + noise * x2 * sin(2 pi x1).  In the population (x2's mean 0) the PDs differ by
3 + D * bump(x1): the shift 3 is set aside and the shape gap is the density-weighted root mean square of
D * bump(x1) less its mean, ``v``, known exactly.  The rule ``x1: max_similarity = limit``.  Prints the gate's fail
rate (95% Clopper-Pearson interval) with the limit at v (the level: nominal 5% at most), at v / 4 and at v less
4 times the observed gap's own sd over the redraws (power), and with D = 0 (a champion that only shifts, and
reshapes nothing: a limit of 0.005 must pass).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from calibration_cases import clopper_pearson  # noqa: E402
from autopdp import AuditConfig, audit, gate

VALUES = np.linspace(0.0, 1.0, 10)
ROWS_EACH = 30


def _bump(x):
    return np.exp(-((np.asarray(x, dtype=float) - 0.3) ** 2) / 0.02)


def _shape_gap(dip: float) -> float:
    """The population's shape gap: every grid value holds the same rows, so the weights are equal."""
    d = dip * _bump(VALUES)
    return float(np.sqrt(np.mean((d - d.mean()) ** 2)))


def _audit(dip: float, seed: int, noise: float):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"x1": np.repeat(VALUES, ROWS_EACH), "x2": rng.normal(size=VALUES.size * ROWS_EACH)})

    def candidate(d):
        d = np.asarray(d, dtype=float)
        return d[:, 0] + d[:, 0] ** 2

    def champion(d):
        d = np.asarray(d, dtype=float)
        return candidate(d) + 3.0 + dip * _bump(d[:, 0]) + noise * d[:, 1] * d[:, 0]

    cfg = AuditConfig(pairs=False, features=("x1",), grid_resolution=VALUES.size, noise_draws=200)
    return audit(candidate, X, compare={"champion": champion}, config=cfg, random_state=seed)


def _check(a, limit: float):
    verdict = gate(a, {"features": {"x1": {"max_similarity": float(limit)}}})
    (c,) = [c for c in verdict.checks if c.check == "similarity"]
    return c


def _ci(k: int, n: int) -> str:
    lo, hi = clopper_pearson(k, n)
    return f"{k / n:6.1%} [{lo:5.1%}, {hi:5.1%}]"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=200)
    args = ap.parse_args(argv)
    n = args.seeds
    started = time.perf_counter()
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip() if os.name == "posix" else ""
    print(f"load at start: {load}")
    print(f"{'case':58s} {'fail rate [95% CI]':>24s}")
    for dip, noise in ((0.2, 0.3), (0.3, 0.3), (0.3, 0.6), (0.5, 0.6)):
        v = _shape_gap(dip)
        audits = [_audit(dip, s, noise) for s in range(n)]
        checks = [_check(a, v) for a in audits]
        sd = float(np.std([c.measured for c in checks], ddof=1))
        print(f"{f'dip {dip}, noise {noise}: limit = shape gap {v:.4f}':58s} "
              f"{_ci(sum(not c.passed for c in checks), n):>24s}")
        print(f"{f'dip {dip}, noise {noise}: limit = shape gap / 4':58s} "
              f"{_ci(sum(not _check(a, v / 4).passed for a in audits), n):>24s}")
        if v - 4 * sd > 0:
            print(f"{f'dip {dip}, noise {noise}: limit = gap - 4 sd ({sd:.4f})':58s} "
                  f"{_ci(sum(not _check(a, v - 4 * sd).passed for a in audits), n):>24s}")
        else:
            print(f"{f'dip {dip}, noise {noise}: gap - 4 sd ({sd:.4f}) <= 0':58s} {'(no such limit)':>24s}")
    shifted = sum(not _check(_audit(0.0, s, 0.6), 0.005).passed for s in range(n))
    print(f"{'only a shift of 3 (shape gap 0), noise 0.6, limit 0.005':58s} {_ci(shifted, n):>24s}")
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip() if os.name == "posix" else ""
    print(f"({time.perf_counter() - started:.0f} s; load at end: {load})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Level and power of the gate's minimum-effect tests of its limits (issue 29).

    python benchmarks/bench_gate_limits.py [--seeds 200]

The model of tests/test_gate_limits.py: x1 on 10 fixed values (30 rows each), x2 ~ N(0, 1) redrawn,
f = x1 - D * bump(x1) + noise * x2 * sin(2 pi x1); the rule ``x1 increasing, max_monotonicity = limit``.
Prints the fail rate (95% Clopper-Pearson interval) with the limit at the population's violation (the level:
nominal 5%), at a quarter of it, at the violation less 4 times its own noise sd (its spread over the redraws:
the power the issue asks for, at least 80%), and the issue's case (a dip scoring ~0.033 against a limit of 0.005,
below the audit's materiality of 0.1 x prediction sd), and whether x100 predictions give the same verdicts.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_gate_limits import K, _audit, _policy, _violation  # noqa: E402

from autopdp import AuditConfig
from autopdp import gate


def _ci(k: int, n: int) -> str:
    lo = stats.beta.ppf(0.025, k, n - k + 1) if k else 0.0
    hi = stats.beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return f"{k / n:6.1%} [{lo:5.1%}, {hi:5.1%}]"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=200)
    args = ap.parse_args(argv)
    n = args.seeds
    started = time.perf_counter()
    print(f"{'case':52s} {'fail rate [95% CI]':>24s}")
    for dip, noise in ((0.2, 0.3), (0.3, 0.3), (0.3, 0.6), (0.4, 0.3)):
        v = _violation(dip)
        audits = [_audit(dip, s, noise=noise) for s in range(n)]
        checks = [gate(a, _policy(v)).checks[0] for a in audits]
        at = sum(not c.passed for c in checks)
        # the noise sd of the violation itself: its spread over the redraws
        sd = float(np.std([c.measured for c in checks], ddof=1))
        far = sum(not gate(a, _policy(v / 4)).passed for a in audits)
        print(f"{f'dip {dip}, noise {noise}: limit = violation {v:.4f}':52s} {_ci(at, n):>24s}")
        print(f"{f'dip {dip}, noise {noise}: limit = violation / 4':52s} {_ci(far, n):>24s}")
        if v - 4 * sd > 0:
            four = sum(not gate(a, _policy(v - 4 * sd)).passed for a in audits)
            print(f"{f'dip {dip}, noise {noise}: limit = violation - 4 sd ({sd:.4f})':52s} {_ci(four, n):>24s}")
        else:
            print(f"{f'dip {dip}, noise {noise}: violation - 4 sd ({sd:.4f}) <= 0':52s} {'(no such limit)':>24s}")
    cfg = AuditConfig(pairs=False, utilities=("monotonicity",), grid_resolution=K, features=("x1",), materiality=0.1)
    issue = sum(not gate(_audit(0.39, s, config=cfg), _policy(0.005, materiality=0.1)).passed for s in range(n))
    print(f"{'issue 29: dip ~0.033 vs max_monotonicity 0.005':52s} {_ci(issue, n):>24s}")
    same = sum(gate(_audit(0.3, s), _policy()).checks[0].proof["p_value"]
               == gate(_audit(0.3, s, scale=100.0), _policy()).checks[0].proof["p_value"] for s in range(n))
    print(f"default limit, x1 vs x100 predictions: same p-value in {same}/{n} redraws")
    print(f"({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

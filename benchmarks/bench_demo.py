"""`autopdp demo` end to end, per stage (issue #4): train, all 1D and 2D PDPs, scoring,
figures, HTML and PDF.  Target: under 60 s on a 2-core machine.

    python benchmarks/bench_demo.py [--out DIR]
"""

from __future__ import annotations

import argparse
import tempfile
import time

import autopdp
from autopdp.datasets.demo import DEMO_CONFIG, demo_model
from autopdp.report import write_report


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="autopdp-demo-")
    t0 = time.perf_counter()
    model, X, y = demo_model()
    train = time.perf_counter() - t0
    a = autopdp.audit(model, X, y, config=DEMO_CONFIG)
    written = write_report(a, out)
    total = time.perf_counter() - t0
    stages = {"train": train, **{k: v for k, v in a.run["timings_s"].items() if k != "total"}, **written["timings"]}
    print(f"autopdp demo on German Credit ({X.shape[0]} rows, {X.shape[1]} features): "
          f"{len(a.results_1d)} 1D + {len(a.results_2d)} 2D PDPs "
          f"(1D grid {DEMO_CONFIG.grid_resolution}, 2D grid {DEMO_CONFIG.grid_resolution_2d}x{DEMO_CONFIG.grid_resolution_2d} "
          f"on {a.metadata['data']['rows_used_2d']} rows)")
    for k, v in stages.items():
        print(f"  {k:<22} {v:7.2f} s")
    largest = max(stages, key=stages.get)
    print(f"  {'total':<22} {total:7.2f} s   (issue #12 target < 20 s: {'met' if total < 20 else 'not met'}; "
          f"largest stage: {largest})   -> {out}")


if __name__ == "__main__":
    main()

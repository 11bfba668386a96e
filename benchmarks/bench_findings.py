"""Findings benchmark (issue 11): precision and recall of the findings on known answers, and their cost.

Cases (``benchmarks/findings_cases.py``): planted effects (bump, line, step, product
interaction, unused and independent features), an exactly additive model (splines + ridge),
a classifier trained with two levels of a categorical feature swapped, and the real Adult and
Bike Sharing data (../shared/data) with their named effects.  For each case it prints, per
criterion, the PDPs that are findings (material and clear of noise, default settings), the
truth, precision and recall; then the time of the noise tests beside the PD and scoring time of
the same audit, and the Lipschitz refit of the noise test (``scipy.optimize.lsq_linear``) beside
one cvxpy fit of the same curve.

    python benchmarks/bench_findings.py            # all cases
    python benchmarks/bench_findings.py --quick    # synthetic cases only
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import findings_cases as cases  # noqa: E402


def _names(keys) -> str:
    return ", ".join(sorted(" x ".join(k) for k in keys)) or "-"


def report_case(name, fn):
    t0 = time.perf_counter()
    a, truth = fn()
    wall = time.perf_counter() - t0
    t = a.run["timings_s"]
    print(f"\n## {name}: audit {wall:.1f} s (PDs {t.get('pd_1d', 0) + t.get('pd_2d', 0):.1f} s, scoring "
          f"{t.get('scoring', 0):.1f} s, noise tests {t.get('noise_tests', 0):.1f} s = "
          f"{t.get('noise_tests', 0) / max(t.get('total', 1e-9), 1e-9):.0%} of the audit)")
    for crit, r in cases.precision_recall(a, truth).items():
        print(f"  {crit:14s} precision {r['precision']:.2f} recall {r['recall']:.2f}   found: {_names(r['found'])}"
              f"   truth: {_names(r['truth'])}")
    if name == "adult":
        r = a.pd("capital_gain")
        g, f = np.asarray(r.grid[0], dtype=float), r.average[0]
        imp = a.importance.iloc[:, 0].sort_values(ascending=False)
        print(f"  capital_gain grid: {len(g)} points up to {g.max():,.0f}; PD {f[0]:.3f} at 0 -> {f[-1]:.3f} at the top; "
              f"importance rank {list(imp.index).index('capital_gain') + 1}, capital_loss rank "
              f"{list(imp.index).index('capital_loss') + 1}")
    if name == "bike":
        r = a.pd("hr")
        f = r.average[0]
        print(f"  hr grid: {[int(v) for v in r.grid[0]]}; PD peaks at hr {int(np.argmax(f[:12]))} and {12 + int(np.argmax(f[12:]))}")
    if not truth:  # real data: the findings under every criterion, for reading beside the named effects
        for crit, by in a.evidence.items():
            if crit == "incidence":  # which reading: the model misses the data, or the PD differs by dependence
                for kind in ("calibration", "dependence"):
                    print(f"  {'incidence':14s} {kind} findings: "
                          f"{_names(k for k, e in by.items() if e.passed and e.kind == kind)}")
            elif crit != "importance_1d":
                print(f"  {crit:14s} findings: {_names(k for k, e in by.items() if e.passed)}")
    for crit in ("monotonicity", "lipschitz", "incidence", "ice_variance", "interaction", "correlation"):
        by = a.evidence.get(crit, {})
        if by and not any(e.passed for e in by.values()) and any(np.isfinite(e.value) for e in by.values()):
            print(f"  {crit}: no material finding")
    return a


def lipschitz_refit_cost(repeats: int = 200):
    from autopdp.findings.evidence import fast_lipschitz_fit_1d
    from autopdp.scores.utilities.lipschitz import _CACHE, lipschitz_fit

    rng = np.random.default_rng(0)
    x = np.linspace(0, 1, 20)
    curves = [np.cumsum(rng.normal(size=20)) for _ in range(repeats)]
    _CACHE.clear()
    lipschitz_fit(curves[0], [x], [2.0])  # build the cached cvxpy problem once
    t0 = time.perf_counter()
    ref = [lipschitz_fit(f, [x], [2.0])[0] for f in curves]
    t_cvx = (time.perf_counter() - t0) / repeats
    t0 = time.perf_counter()
    fast = [fast_lipschitz_fit_1d(f, x, 2.0) for f in curves]
    t_fast = (time.perf_counter() - t0) / repeats
    gap = max(float(np.max(np.abs(a - b))) for a, b in zip(ref, fast))
    print(f"\nLipschitz fit of a 20-point curve: cvxpy (cached, Clarabel) {t_cvx * 1e3:.2f} ms, lsq_linear "
          f"{t_fast * 1e3:.2f} ms (x{t_cvx / t_fast:.1f}); largest difference {gap:.1e}")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    names = ["planted", "additive", "swapped_levels"]
    if "--quick" not in argv:
        names += ["adult", "bike"]
    for name in names:
        report_case(name, getattr(cases, name))
    lipschitz_refit_cost()


if __name__ == "__main__":
    main()

"""The interaction test's level under skewed rows and against the population's threshold (issue 53, item 3).

    python benchmarks/bench_interaction_level.py [--seeds 2000] [--rows 300] [--skews -2 0 2]

The model: f = x1 + x2 + x3 + x1 x2 (s + 0.5), x1, x2 ~ N(0, 1) and s the rows' factor with skewness g (g = 0:
N(0, 1); g = +-2: +-(Exp(1) - 1), mean 0, variance 1).  The (x1, x2) surface is x1 + x2 + 0.5 x1 x2 in the
population, and each row's ICE surface departs from it by (s_i) x1 x2: the rows' departures have skewness g.
Each seed draws ``rows`` audit rows and audits the pair (x1, x2) for interaction (``max_rows_2d=None``, default
``std_rows``).  The materiality is set so that the *population* surface's Greenwell interaction on this run's own
grid (with its density weights) is exactly at the threshold: the least favourable point of the minimum-effect
null.  Two thresholds:

* ``audit's own``: materiality x this sample's prediction sd (the null conditional on the threshold the audit
  measured);
* ``population``: materiality x the population's prediction sd (2,000,000 rows), while the audit, as always,
  measures its own: the threshold's own sampling error is part of what the test must carry.

A run is a false finding when the pair is an interaction finding.  The power column plants the effect at 2x the
population threshold.  Printed with 95% Clopper-Pearson intervals and the most false findings a test at 5% gives
in that many runs with probability 99% (``binomial_slack``), and ``uptime``'s load.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import _load  # noqa: E402 - the load average, as every benchmark prints it
from calibration_cases import binomial_slack, clopper_pearson  # noqa: E402
from autopdp import AuditConfig, audit  # noqa: E402
from autopdp.scores.importance import interaction_statistic, marginal_weights  # noqa: E402


def _rows(rng, n: int, skew: int) -> pd.DataFrame:
    X = pd.DataFrame(rng.standard_normal((n, 2)), columns=["x1", "x2"])
    X["x3"] = np.sign(skew) * (rng.exponential(1.0, n) - 1.0) if skew else rng.standard_normal(n)
    return X


def model(d) -> np.ndarray:
    x1, x2, x3 = d["x1"].to_numpy(), d["x2"].to_numpy(), d["x3"].to_numpy()
    return x1 + x2 + x3 + x1 * x2 * (x3 + 0.5)


def _audit(X, materiality: float):
    cfg = AuditConfig(materiality=materiality, utilities=("slope",), pairs=[("x1", "x2")], max_rows_2d=None,
                      criteria_2d=("interaction",))
    a = audit(model, X, config=cfg)
    return a.evidence["interaction"][("x1", "x2")], a


def _truth(a) -> float:
    """The population surface's interaction on this run's grid, with its density weights."""
    r = next(r for r in a.results if tuple(r.features) == ("x1", "x2"))
    g = [np.asarray(v, dtype=float) for v in r.grid]
    surface = g[0][:, None] + g[1][None, :] + 0.5 * np.outer(g[0], g[1])
    return float(interaction_statistic(surface[None], r.kinds, marginal_weights(r))[0][0])


def run(seed: int, n: int, skew: int, population_sd: float) -> dict:
    X = _rows(np.random.default_rng(seed), n, skew)
    probe, a = _audit(X, 1.0)
    truth, own_sd = _truth(a), float(probe.threshold)
    return {"own": _audit(X, truth / own_sd)[0].passed,
            "population": _audit(X, truth / population_sd)[0].passed,
            "power 2x": _audit(X, truth / (2.0 * population_sd))[0].passed}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=2000)
    ap.add_argument("--rows", type=int, default=300)
    ap.add_argument("--skews", type=int, nargs="+", default=[-2, 0, 2])
    args = ap.parse_args(argv)
    slack = binomial_slack(args.seeds)
    print(f"{args.seeds} seeds of {args.rows} rows; a 5% test gives at most {slack} false findings "
          f"({slack / args.seeds:.1%}) with probability 99%")
    for skew in args.skews:
        started = time.perf_counter()
        population_sd = float(np.std(model(_rows(np.random.default_rng(10 ** 6), 2_000_000, skew))))
        runs = [run(seed, args.rows, skew, population_sd) for seed in range(args.seeds)]
        for key in ("own", "population", "power 2x"):
            k = sum(r[key] for r in runs)
            lo, hi = clopper_pearson(k, len(runs))
            what = "power" if key.startswith("power") else "level"
            print(f"skewness {skew:+d}  {key:>10s} threshold  {what} {k:4d}/{len(runs)} = {k / len(runs):6.1%} "
                  f"[{lo:.1%}, {hi:.1%}]", flush=True)
        print(f"  ({time.perf_counter() - started:.0f} s; load {_load()})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

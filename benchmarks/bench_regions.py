"""Regions (issue 55): level on additive models, power and place on planted splits, over many seeds, in one run.

    python benchmarks/bench_regions.py [--seeds 100] [--rows 1000]

Each seed draws ``--rows`` training rows and as many audit rows of five features (a, c, e normal; b uniform on
[-1, 1]; d a category of four levels), fits a HistGradientBoostingRegressor (default settings, random_state = seed)
and runs :func:`autopdp.findings.regions.find_regions` on every feature's ICE curves (the exact tree path, 20-point
grids) with the audit's threshold (0.05 prediction sd), Benjamini-Hochberg over the five features at 5%.

* additive: ``y = a + b^2 + sin(c) + 0.5 [d in {p, q}] + e + noise``: the truth has no region; the fitted model's
  ICE curves are not exactly parallel.  A seed counts when any feature reports a region.
* numeric: ``y = 2 a sign(b - 0.2) + c + noise``: a's split must be on b, within 0.1 of 0.2.
* categorical: ``y = a (1.5 [d in {p, s}] - [d in {q, r}]) + c + noise``: a's split must be ``d in {p, s}`` (or its
  complement).

Printed: each rate with its 95% Clopper-Pearson interval, the time per feature, and the load.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _ci(k, n):
    from scipy.stats import beta

    lo = beta.ppf(0.025, k, n - k + 1) if k else 0.0
    hi = beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return f"{k:4d}/{n} = {100 * k / n:5.1f}% [{100 * lo:.1f}%, {100 * hi:.1f}%]"


def _rows(rng, n):
    return pd.DataFrame({"a": rng.normal(size=n), "b": rng.uniform(-1, 1, n), "c": rng.normal(size=n),
                         "d": pd.Categorical(rng.choice(list("pqrs"), n)), "e": rng.normal(size=n)})


TRUTH = {
    "additive": lambda X: X.a + X.b ** 2 + np.sin(X.c) + 0.5 * X.d.isin(["p", "q"]) + X.e,
    "numeric": lambda X: 2 * X.a * np.sign(X.b - 0.2) + X.c,
    "categorical": lambda X: X.a * np.where(X.d.isin(["p", "s"]), 1.5, -1.0) + X.c,
}


def _one(case, seed, n):
    import autopdp
    from autopdp.findings.regions import find_regions
    from autopdp.findings.significance import adjust_p_values
    from sklearn.ensemble import HistGradientBoostingRegressor

    rng = np.random.default_rng(seed)
    train, X = _rows(rng, n), _rows(rng, n)
    y = TRUTH[case](train) + 0.5 * rng.normal(size=n)
    model = HistGradientBoostingRegressor(categorical_features="from_dtype", random_state=seed).fit(train, y)
    threshold = 0.05 * float(np.std(model.predict(X)))
    splits, t0 = [], time.perf_counter()
    for r in autopdp.partial_dependence(model, X, list(X.columns), kind="both", options=autopdp.PDOptions(subsample=None)):
        f = r.features[0]
        ice = np.asarray(r.individual)[0]
        splits.append(find_regions(f, ice, r.grid[0], X.drop(columns=f), threshold=threshold, seed=seed))
    seconds = (time.perf_counter() - t0) / len(splits)
    p = np.array([s.p if np.isfinite(s.p) else 1.0 for s in splits])
    adjusted = adjust_p_values(p, "bh")
    found = {s.feature: s for s, q in zip(splits, adjusted) if q <= 0.05 and s.material}
    return found, seconds


def _at_place(case, found) -> bool:
    s = found.get("a")
    if s is None:
        return False
    first = s.regions[0].rule[0]
    if case == "numeric":
        return first[0] == "b" and abs(first[2] - 0.2) <= 0.1
    return first[0] == "d" and set(first[2]) in ({"p", "s"}, {"q", "r"})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--rows", type=int, default=1000)
    args = ap.parse_args()
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"{args.seeds} seeds of {args.rows} rows; load {load}")
    for case in TRUTH:
        t0 = time.perf_counter()
        hits, placed, secs = 0, 0, []
        for seed in range(args.seeds):
            found, s = _one(case, seed, args.rows)
            secs.append(s)
            hits += bool(found) if case == "additive" else ("a" in found)
            placed += case != "additive" and _at_place(case, found)
        what = "any region (level)" if case == "additive" else "a's region found (power)"
        print(f"{case:12s} {what:26s} {_ci(hits, args.seeds)}", end="")
        print("" if case == "additive" else f"   at its place {_ci(placed, args.seeds)}", end="")
        print(f"   ({np.mean(secs):.2f} s a feature; {time.perf_counter() - t0:.0f} s; load "
              f"{', '.join(f'{x:.2f}' for x in os.getloadavg())})")


if __name__ == "__main__":
    main()

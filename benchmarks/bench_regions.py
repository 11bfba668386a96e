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

``--effector N``: on the first N seeds of each case, effector's ``explain()`` (effector 0.6, ``method="pdp"``, its
defaults) runs beside autopdp on the same fitted model and audit rows (d as its category codes, the numeric design
matrix effector takes): the time of each (autopdp: the PDs with ICE and the regions of every feature; effector: the
whole call), whether a's first split is on the planted feature at its place, and the false splits (effector: every
split its final CALM chain keeps on a feature the truth gives no region (a and its planted partner have regions:
the interaction is symmetric), and every split below a's first one; autopdp: every reported region of a feature
the truth gives none, and every second-level split of a).
effector is not a dependency of autopdp: ``pip install effector`` to run this part.

``--adult``: the full Adult audit (48,842 rows x 14, a HistGradientBoostingClassifier of 200 iterations with native
categoricals, as ``bench_cli_full.py``) in Python: the time its regions take (``run.timings_s.regions``) beside the
whole audit's, the features examined and those with regions, and each one's sentence.
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


#: the feature the planted interaction pairs a with: its own ICE curves are heterogeneous too (their true regions)
PARTNER = {"numeric": "b", "categorical": "d"}


def _data(case, seed, n):
    from sklearn.ensemble import HistGradientBoostingRegressor

    rng = np.random.default_rng(seed)
    train, X = _rows(rng, n), _rows(rng, n)
    y = TRUTH[case](train) + 0.5 * rng.normal(size=n)
    model = HistGradientBoostingRegressor(categorical_features="from_dtype", random_state=seed).fit(train, y)
    return model, X


def _one(case, seed, n):
    import autopdp
    from autopdp.findings.regions import find_regions
    from autopdp.findings.significance import adjust_p_values

    model, X = _data(case, seed, n)
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
    return found, seconds * len(splits)


def _effector(case, seed, n):
    """effector's explain() on the same model and rows: (seconds, a's first split (feature, threshold or None),
    false splits)."""
    import effector

    model, X = _data(case, seed, n)
    levels = list(X.d.cat.categories)
    Z = X.assign(d=X.d.cat.codes.astype(float)).to_numpy()
    cols = list(X.columns)

    def predict(M):
        frame = pd.DataFrame(M, columns=cols)
        frame["d"] = pd.Categorical.from_codes(frame.d.round().astype(int).clip(0, len(levels) - 1), levels)
        return model.predict(frame)

    t0 = time.perf_counter()
    kinds = ["nominal" if c == "d" else "continuous" for c in cols]
    report = effector.explain(Z, predict, method="pdp", schema={"feature_types": kinds})
    seconds = time.perf_counter() - t0
    calms = report.to_dict().get("explained_variance", {}).get("calms") or [{}]
    partitions = calms[-1].get("partitions") or {}
    first, false = None, 0
    for feature, part in partitions.items():
        splits = [r for r in part.get("regions", []) if r.get("level", 0) >= 1]
        name = cols[int(feature)]
        if name == PARTNER.get(case):  # the planted interaction is symmetric: its partner has regions too
            continue
        if name == "a" and case != "additive":
            top = [r for r in splits if r.get("level") == 1]
            if top:
                c = top[0]["rule"]["conditions"][0]
                first = (cols[int(c["feature"])], c.get("lo") if c.get("lo") is not None else c.get("hi"))
            false += len([r for r in splits if r.get("level", 0) >= 2]) // 2
        else:
            false += len(splits) // 2
    return seconds, first, false


def _effector_table(args) -> None:
    print(f"effector 0.6 explain() beside autopdp, {args.effector} seeds a case (load "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())})")
    for case in TRUTH:
        ours_t, theirs_t, ours_place, theirs_place, ours_false, theirs_false = [], [], 0, 0, 0, 0
        for seed in range(args.effector):
            found, s = _one(case, seed, args.rows)
            ours_t.append(s)
            a = found.get("a")
            ours_place += case != "additive" and _at_place(case, found)
            ours_false += sum(1 for f in found if f not in ("a", PARTNER.get(case)) or case == "additive")
            ours_false += 0 if a is None or case == "additive" else sum(len(r.rule) > 1 for r in a.regions) // 2
            t, first, false = _effector(case, seed, args.rows)
            theirs_t.append(t)
            theirs_false += false
            if first is not None and case == "numeric":
                theirs_place += first[0] == "b" and abs(float(first[1]) - 0.2) <= 0.1
            elif first is not None and case == "categorical":
                theirs_place += first[0] == "d"  # an interval of codes: {p, s} needs two cuts
        k = args.effector
        print(f"  {case:12s} autopdp {np.mean(ours_t):5.2f} s, at place {ours_place}/{k}, false splits {ours_false}"
              f"   |   effector {np.mean(theirs_t):5.2f} s, first split on the planted feature {theirs_place}/{k}, "
              f"false splits {theirs_false}")


def _at_place(case, found) -> bool:
    s = found.get("a")
    if s is None:
        return False
    first = s.regions[0].rule[0]
    if case == "numeric":
        return first[0] == "b" and abs(first[2] - 0.2) <= 0.1
    return first[0] == "d" and set(first[2]) in ({"p", "s"}, {"q", "r"})


def _adult() -> None:
    import warnings

    import autopdp
    from autopdp.report.regions import regions_sentence
    from sklearn.ensemble import HistGradientBoostingClassifier

    warnings.simplefilter("ignore")
    raw = pd.read_csv(Path(__file__).resolve().parents[2] / "shared" / "data" / "adult" / "adult.csv",
                      na_values="?", skipinitialspace=True)
    X = raw.drop(columns="income")
    for c in X.columns:
        X[c] = X[c].astype("category") if not pd.api.types.is_numeric_dtype(X[c]) else X[c].astype(float)
    y = raw["income"].astype(str)
    model = HistGradientBoostingClassifier(max_iter=200, categorical_features="from_dtype", random_state=0).fit(X, y)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    audit = autopdp.audit(model, X, y, progress=False)
    t = audit.run["timings_s"]
    records = audit.regions()
    print(f"full Adult: regions {t['regions']:.2f} s of the audit's {t['total']:.1f} s (load before {load}; after "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}); {len(records)} features examined, "
          f"{sum(r['finding'] for r in records)} with regions")
    for r in records:
        print(f"  {r['feature']}: explained {r['explained'] if r['explained'] is None else round(r['explained'], 3)}"
              f", p {r['p']}, finding {r['finding']}.{regions_sentence(audit, (r['feature'],))}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--effector", type=int, default=0, metavar="N", help="seeds a case for effector's side-by-side")
    ap.add_argument("--skip-rates", action="store_true", help="only the effector side-by-side")
    ap.add_argument("--adult", action="store_true", help="the full Adult audit's regions time (and nothing else)")
    args = ap.parse_args()
    if args.adult:
        return _adult()
    if args.effector:
        _effector_table(args)
    if args.skip_rates:
        return
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

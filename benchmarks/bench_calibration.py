"""Level and power of the findings' noise tests, on the plain null cases and on the awkward ones of issue 29.

    python benchmarks/bench_calibration.py [--quick] [--seeds 200] [--power-seeds 60]
                                           [--awkward-seeds 200] [--threshold-seeds 200] [--awkward-only | --threshold-only]
    python benchmarks/bench_calibration.py --refits 40 [--refit-train 2000] [--refit-audit 600] [--refit-k 10]

Prints, for every null case of ``calibration_cases.NULL_CASES`` (materiality 0: the noise test alone
decides), each criterion's false-finding rate over the seeds (nominal 5%, with the 99% binomial bound
beside it), the power at 1x, 2x and 4x the noise sd of every criterion, and a Kolmogorov-Smirnov check of
the unadjusted null p-values' uniformity (Monte-Carlo p-values are discrete and slightly conservative, so
the check is one-sided: too many small p-values fail it).

Then the awkward cases of issue 29 (``calibration_cases.AWKWARD_CASES``: dominant and heavy weights with
and without the ICE subsample, skewed and two-valued ICE, saturated logistic), per criterion: the
false-finding rate with its 95% Clopper-Pearson interval, the share of null PDPs left **untested** (fewer
than 30 effective rows or Cochran's rule: not a finding, so not counted in the rate) and a one-sided KS
check of the p-values of the PDPs that were tested.  And the minimum-effect test: an effect exactly at the
materiality threshold (in each run the materiality is set so that the population PD's statistic on that run's
own grid, with its density weights, equals materiality x that run's prediction sd: the null is conditional on
the grid, the weights and the threshold the audit derives before it tests) for slope,
importance, monotonicity, interaction and ice_variance: its finding rate (nominal at most 5%) and the power
at twice the threshold.

Every null here is conditional on the fitted model: the model is held fixed and only the audit rows vary.
A learner's variance (a random forest fitted to pure noise gives its noise features real effects) is not
tested and not in these cases.  The default run takes ~12 minutes on 2 idle cores (~25 at load average 5); ``--quick`` ~3.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
import calibration_cases as cases  # noqa: E402

CONDITIONAL = ("Every level below is conditional on the fitted model: the model is held fixed and only the audit "
               "rows vary (the Monte-Carlo error of averaging over them). The learner's variance (a model refitted "
               "to other training data) is not tested: a flexible model fitted to pure noise can give its noise "
               "features real, testable effects (issue 29's random forest), and that case is not here.")


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} cores"


def _ci(k: int, n: int) -> str:
    lo, hi = cases.clopper_pearson(k, n)
    return f"{k:3d}/{n} = {k / n:5.1%} [{lo:5.1%}, {hi:5.1%}]"


def _ks(p) -> str:
    v = cases.ks_greater(p)
    return f"KS p = {v:.3f} ({len(p)} p)" if np.isfinite(v) else f"KS n/a ({len(p)} p)"


def _existing(args) -> None:
    bound = cases.binomial_slack(args.seeds)
    print(f"Level: false-finding rate over {args.seeds} seeds per null case, materiality 0 (nominal {cases.LEVEL:.0%}; "
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
          f"one-sided KS (too many small p) p = {ks.pvalue:.3f}", flush=True)


def _over(s) -> bool:
    """Over the nominal level: more false findings than the 99% binomial bound allows."""
    return s["k"] > cases.binomial_slack(s["n"])


def _above(s) -> bool:
    """Within the 99% bound but a measured rate over 5%: worth a look, not a failure of the bound."""
    return not _over(s) and s["k"] / s["n"] > cases.LEVEL


def _awkward(args, over: list) -> None:
    n = args.awkward_seeds
    print(f"\nAwkward cases (issue 29): false findings over {n} seeds per case (nominal {cases.LEVEL:.0%}, 99% binomial "
          f"bound {cases.binomial_slack(n)}/{n}), 95% Clopper-Pearson intervals. A run is a false finding when any "
          "null PDP is a finding. 'untested': the share of null PDPs whose test was not run (fewer than 30 "
          "effective rows, or Cochran's rule); an untested PDP is not a finding and is not counted as one. KS: "
          "one-sided, of the unadjusted p-values of the null PDPs that were tested.")
    for name, fn in cases.AWKWARD_CASES.items():
        t0 = time.perf_counter()
        summary = cases.summarize([fn(s) for s in range(n)])
        before = cases.BEFORE.get(name)
        print(f"  {name}" + (f"   (before: {before})" if before else "")
              + f"   ({time.perf_counter() - t0:.0f} s)")
        for c, s in summary.items():
            flag = "   OVER NOMINAL" if _over(s) else "   above 5%, within the bound" if _above(s) else ""
            if flag:
                over.append(f"{name}: {c} {_ci(s['k'], s['n'])}{flag}")
            print(f"    {c:13s} false findings {_ci(s['k'], s['n'])}   untested {s['untested'] / max(s['items'], 1):6.1%} "
                  f"of {s['items']} PDPs   {_ks(s['p'])}{flag}", flush=True)


def _threshold(args, over: list) -> None:
    n = args.threshold_seeds
    print(f"\nMinimum-effect test: an effect exactly at the materiality threshold ({cases.THRESHOLD_N} rows, one PDP, "
          f"materiality per run: the population PD's statistic on the run's grid / the run's prediction sd; the column "
          f"gives the same ratio on 200,000 rows; {n} seeds). Nominal: a "
          f"finding in at most {cases.LEVEL:.0%} (99% binomial bound {cases.binomial_slack(n)}/{n}); power at 2x the "
          "threshold (materiality halved) at least 80%.")
    print(f"  {'criterion':13s} {'materiality':>11s}   {'at the threshold [95% CI]':30s} {'untested':>8s}   "
          f"{'KS':24s} {'2x the threshold [95% CI]':30s}")
    for c in cases.THRESHOLD_CRITERIA:
        t0 = time.perf_counter()
        m = cases.population_materiality(c)
        at = cases.summarize([{c: cases.at_threshold(c, s)} for s in range(n)])[c]
        twice = cases.summarize([{c: cases.at_threshold(c, s, 2.0)} for s in range(n)])[c]
        flag = "   OVER NOMINAL" if _over(at) else "   above 5%, within the bound" if _above(at) else ""
        if flag:
            over.append(f"{c} at the threshold: {_ci(at['k'], at['n'])}{flag}")
        if twice["k"] < 0.8 * twice["n"]:
            flag += "   POWER UNDER 80%"
            over.append(f"{c} power at 2x the threshold: {_ci(twice['k'], twice['n'])}")
        print(f"  {c:13s} {m:11.4f}   {_ci(at['k'], at['n']):30s} {at['untested'] / max(at['items'], 1):8.1%}   "
              f"{_ks(at['p']):24s} {_ci(twice['k'], twice['n']):30s}{flag}   ({time.perf_counter() - t0:.0f} s)",
              flush=True)


def _coverage_counts(coverage: dict) -> str:
    """One seed's grid values covered, over every 1D PDP: learner-PD interval (audit rows, population), range."""
    out = []
    for key in ("rows", "population", "range"):
        hits = [bool(x) for by in coverage.values() for x in np.asarray(by[key], dtype=bool)]
        out.append(f"{key} {sum(hits)}/{len(hits)}")
    return ", ".join(out)


def _refits(args) -> None:
    """Issue 31: the learner-level test over seeds (``calibration_cases.refit_case``): power on the planted
    patterns, the rate of noise patterns called robust, per criterion."""
    n = args.refits
    size = dict(n_train=args.refit_train, n_audit=args.refit_audit, refits=args.refit_k, max_iter=args.refit_iter)
    print(f"Learner level (issue 31): HistGradientBoostingClassifier(max_iter={size['max_iter']}) on "
          f"{size['n_train']:,} training rows, target from x1..x4 (x2 squared, x3·x4 planted), noise z1, z2; "
          f"audit on {size['n_audit']:,} other rows, materiality 0; K = {size['refits']} refits on half-samples "
          f"(Nadeau-Bengio corrected); {n} seeds.")
    runs = []
    t0 = time.perf_counter()
    for seed in range(n):
        runs.append(cases.refit_case(1000 + seed, **size))
        r = runs[-1]
        print(f"    seed {1000 + seed}: " + "; ".join(
            f"{c} planted {sum(r[c]['planted'])}/{len(r[c]['planted'])} noise {sum(r[c]['noise'])}/{len(r[c]['noise'])}"
            for c in cases.REFIT_TRUTH) + "; coverage " + _coverage_counts(r.get("coverage", {}))
            + f" ({time.perf_counter() - t0:.0f} s)", flush=True)
    bound = cases.binomial_slack(n, level=0.05)
    for c in cases.REFIT_TRUTH:
        planted = [x for r in runs for x in r[c]["planted"]]
        noise = [x for r in runs for x in r[c]["noise"]]
        found = [x for r in runs for x in r[c]["found_noise"]]
        any_noise = sum(any(r[c]["noise"]) for r in runs)
        print(f"  {c:14s} planted robust {_ci(sum(planted), len(planted))}   noise robust "
              f"{_ci(sum(noise), len(noise))} (seeds with any: {any_noise}/{n}, 99% bound at 5%: {bound})   "
              f"noise found by the model's own test {sum(found)}/{len(found)}")
    # coverage of the learner-PD's 95% interval (and of the refits' range the figure draws) for the PD of the truth
    print("  coverage of the PD of the truth, share of grid values over seeds (95% Clopper-Pearson interval):")
    for f in cases.REFIT_COLUMNS:
        cov = [r["coverage"][(f,)] for r in runs if (f,) in r.get("coverage", {})]
        if not cov:
            continue
        line = []
        for key, what in (("rows", "learner-PD interval, truth on the audit rows"),
                          ("population", "learner-PD interval (+ Monte-Carlo), truth over the population"),
                          ("range", "refits' range")):
            hits = np.concatenate([np.asarray(c[key], dtype=bool) for c in cov])
            line.append(f"{what} {_ci(int(hits.sum()), hits.size)}")
        # the band is pointwise: the share of whole curves it holds at every grid value is lower (issue 53)
        whole = [bool(np.all(c["population"])) for c in cov]
        line.append(f"whole curve inside the pointwise band {_ci(sum(whole), len(whole))}")
        bias = float(np.mean([c["bias"] for c in cov]))
        half = float(np.mean([c["half_width"] for c in cov]))
        print(f"    {f}: " + "; ".join(line) + f"; mean |learner-PD - truth| {bias:.4f}, mean half-width {half:.4f}")
    print(f"  callable: {cases.refit_not_assessed_case()['reason']}")
    print(f"  ({time.perf_counter() - t0:.0f} s)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="40 seeds per case, 20 per power point (~3 minutes)")
    ap.add_argument("--seeds", type=int, default=None, help="seeds per plain null case (default 200)")
    ap.add_argument("--power-seeds", type=int, default=None, help="seeds per power point (default 60)")
    ap.add_argument("--awkward-seeds", type=int, default=None, help="seeds per awkward case (default 200)")
    ap.add_argument("--threshold-seeds", type=int, default=None, help="seeds per at-threshold case (default 200)")
    ap.add_argument("--awkward-only", action="store_true", help="only issue 29's cases")
    ap.add_argument("--threshold-only", action="store_true", help="only the minimum-effect tests at the threshold")
    ap.add_argument("--refits", type=int, default=0, metavar="SEEDS",
                    help="only issue 31's learner-level test, over SEEDS seeds (40: ~35 minutes on 2 busy cores)")
    ap.add_argument("--refit-train", type=int, default=2000, help="training rows of the refit case (default 2000)")
    ap.add_argument("--refit-audit", type=int, default=600, help="audit rows of the refit case (default 600)")
    ap.add_argument("--refit-k", type=int, default=10, help="refits per audit (default 10)")
    ap.add_argument("--refit-iter", type=int, default=100, help="boosting iterations (default 100)")
    args = ap.parse_args(argv)
    if args.refits:
        warnings.simplefilter("ignore")
        print(f"autopdp {cases.autopdp_version()}; {_load()} at the start")
        _refits(args)
        print(f"({_load()} at the end)")
        return 0
    defaults = dict(seeds=40, power_seeds=20, awkward_seeds=40, threshold_seeds=40) if args.quick else \
        dict(seeds=200, power_seeds=60, awkward_seeds=200, threshold_seeds=200)
    for k, v in defaults.items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    warnings.simplefilter("ignore")
    started = time.perf_counter()
    print(f"autopdp {cases.autopdp_version()}; {_load()} at the start")
    print(CONDITIONAL + "\n")
    if not (args.awkward_only or args.threshold_only):
        _existing(args)
    over: list[str] = []
    if not args.threshold_only:
        _awkward(args, over)
    _threshold(args, over)
    print("\nOVER NOMINAL: more false findings than the 99% binomial bound; 'above 5%': a rate over 5% within "
          "that bound; or under 80% power:")
    print("\n".join(f"  {o}" for o in over) if over else "  none")
    print(f"\n({time.perf_counter() - started:.0f} s; {_load()} at the end)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

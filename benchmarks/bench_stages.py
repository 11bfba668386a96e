"""Every stage of the default audit at 6k, 12k, 24k and all 48,842 Adult rows: which stages grow faster than the
rows (issue 32).

    python benchmarks/bench_stages.py [--sizes 6000,12000,24000,48842] [--repeat 1]

The model is the full-Adult one of the README's figures (as in ``bench_scale.py``): a
HistGradientBoostingClassifier with 200 iterations and native categoricals, fitted on the 48,842 rows of
``../shared/data/adult``.  Each size is that many Adult rows drawn without replacement (seed 0; all rows at
48,842), the income label with them, and each run is the default call ``autopdp.audit(model, X, y)`` in a new
process, so one run's memory does not carry into the next.

Printed per size and stage:

* the stage's time from ``Audit.run["timings_s"]`` (the scoring stage runs on a second thread beside the trust
  checks, so its time there includes waiting for the CPU they hold);
* ``MB+``: the stage's peak resident memory above the process's at the stage's start, sampled every 20 ms
  (scoring and trust run together: one figure for both, ``scores+trust``);
* then the scoring stage and the outside-grid stage once more, each alone on the audit's own inputs (after the
  audit, no other stage running): their time, then their peak traced allocation (a second run under
  ``tracemalloc``, numpy's arrays included) above their start, which is the stage's own memory.

Last, per stage, ``us/row`` at each size and the growth exponent ``log(t_max / t_min) / log(n_max / n_min)``:
1 is linear in the rows, above 1 superlinear; a stage of a few hundredths of a second is all overhead and its
exponent says nothing.  The load average is printed at the start, the end and beside each run: take the
figures on an idle machine (2 cores shared here).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import ADULT, ROOT, _adult, _load  # noqa: E402,F401 - the same data, loaded the same way

#: the audit's functions whose calls are stages (autopdp.audit's module names), and the label of each
STAGES = {"_validated_inputs": "validate", "_partial_dependences": "pds", "_scores_and_trust": "scores+trust",
          "assess": "noise_tests", "outside_grid": "outside_grid", "summarise_data": "data_summary"}


class _StageMemory:
    """Peak resident memory of this process per stage, above its memory at the stage's start (sampled)."""

    def __init__(self, every: float = 0.02):
        import psutil

        self.me = psutil.Process()
        self.every = every
        self.stage = None
        self.start = 0
        self.peak: dict[str, float] = {}
        self.overall = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.every)

    def _sample(self):
        rss = self.me.memory_info().rss
        self.overall = max(self.overall, rss)
        if self.stage is not None:
            self.peak[self.stage] = max(self.peak.get(self.stage, 0.0), (rss - self.start) / 2 ** 20)

    def wrap(self, fn, label):
        def wrapper(*args, **kwargs):
            outer = self.stage
            if outer is not None:  # a stage inside a stage counts for the outer one
                return fn(*args, **kwargs)
            self.stage, self.start = label, self.me.memory_info().rss
            try:
                return fn(*args, **kwargs)
            finally:
                self._sample()
                self.stage = None

        return wrapper

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def _alone(fn):
    """(seconds, peak traced MB above the start) of ``fn()`` with no other stage running: timed once as it is,
    then run again under ``tracemalloc`` (which slows every allocation) for its memory."""
    import tracemalloc

    t0 = time.perf_counter()
    fn()
    seconds = time.perf_counter() - t0
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return seconds, (peak - base) / 2 ** 20


def _one(size: int) -> dict:
    """One audit of ``size`` rows in this process, then the scoring and outside-grid stages alone."""
    import warnings

    import numpy as np
    from sklearn.ensemble import HistGradientBoostingClassifier

    import autopdp
    import autopdp.auditing.pipeline as audit_module
    from autopdp.scores.scoring import ScoringInputs, interaction_table, importance_table, pair_criteria, \
        score_result

    warnings.simplefilter("ignore")
    df, y = _adult()
    model = HistGradientBoostingClassifier(max_iter=200, categorical_features="from_dtype", random_state=0).fit(df, y)
    if size < len(df):
        rows = np.sort(np.random.default_rng(0).choice(len(df), size, replace=False))
        X, yy = df.iloc[rows].reset_index(drop=True), y[rows]
    else:
        X, yy = df, y
    del df
    seen = {}

    def keep(name, fn):
        def wrapper(*args, **kwargs):
            seen[name] = (args, kwargs)
            return fn(*args, **kwargs)
        return wrapper

    load_before = _load()
    with _StageMemory() as mem:
        for name, label in STAGES.items():
            fn = getattr(audit_module, name)
            if name in ("_scores_and_trust", "assess", "outside_grid"):
                fn = keep(name, fn)
            setattr(audit_module, name, mem.wrap(fn, label))
        t0 = time.perf_counter()
        a = autopdp.audit(model, X, yy, progress=False)
        seconds = time.perf_counter() - t0
    load_after = _load()
    # the scoring stage alone on the audit's inputs, with fresh caches (the audit's are filled)
    inputs = seen["assess"][0][0]
    results = list(seen["_scores_and_trust"][0][2].results)  # the PDs as scored (with the 2D ICE rows)
    res1 = [r for r in results if len(r.features) == 1]
    res2 = [r for r in results if len(r.features) == 2]

    def scoring():
        fresh = ScoringInputs(frame=inputs.frame, y=inputs.y, is_classifier=inputs.is_classifier,
                              prediction_std=inputs.prediction_std, config=inputs.config,
                              comparisons=inputs.comparisons, sample_weight=inputs.sample_weight,
                              predictions=inputs.predictions, link=inputs.link,
                              comparison_predictions=inputs.comparison_predictions)
        fresh.prepare_tables(results)  # as the audit's scoring stage does
        for r in results:
            score_result(fresh, r)
        imp, inter = importance_table(res1), interaction_table(res2)
        pair_criteria(fresh, res2, imp, inter)

    args, kwargs = seen["outside_grid"]
    from autopdp.pd.tree.fastpath import shared_plans
    from autopdp.scores.coverage import outside_grid

    scoring_alone = _alone(scoring)
    with shared_plans():  # as in the audit: the tree plan built and checked once, before the stage
        outside_grid(*args, **kwargs)
        outside_alone = _alone(lambda: outside_grid(*args, **kwargs))
    return {"size": size, "seconds": seconds, "peak_mb": mem.overall / 2 ** 20,
            "stages": {k: float(v) for k, v in a.run.get("timings_s", {}).items()},
            "stage_mb": mem.peak, "scoring_alone": scoring_alone, "outside_alone": outside_alone,
            "load_before": load_before, "load_after": load_after}


def _growth(sizes, values) -> str:
    pts = [(n, v) for n, v in zip(sizes, values) if v is not None and v > 0]
    if len(pts) < 2:
        return ""
    (n0, v0), (n1, v1) = pts[0], pts[-1]
    return f"{math.log(v1 / v0) / math.log(n1 / n0):.2f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="6000,12000,24000,48842")
    ap.add_argument("--repeat", type=int, default=1, help="runs per size (the fastest is kept)")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(_one(args.one)))
        return 0
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"autopdp.audit(model, X, y) on Adult rows; HGB 200 iterations, native categoricals; {os.cpu_count()} cores; "
          f"load average at start {_load()}")
    runs = []
    for size in sizes:
        best = None
        for _ in range(args.repeat):
            proc = subprocess.run([sys.executable, __file__, "--one", str(size)], capture_output=True, text=True)
            if proc.returncode != 0:
                print(f"{size:,d} rows failed:\n{proc.stderr[-2000:]}")
                continue
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            best = r if best is None or r["seconds"] < best["seconds"] else best
        if best is None:
            continue
        runs.append(best)
        r = best
        stages = ", ".join(f"{k} {v:.2f}" for k, v in r["stages"].items())
        mem = ", ".join(f"{k} {v:.0f}" for k, v in r["stage_mb"].items())
        (ts, ms), (to, mo) = r["scoring_alone"], r["outside_alone"]
        print(f"\n{size:,d} rows: audit {r['seconds']:.1f} s, peak {r['peak_mb']:.0f} MB (load {r['load_before']} / "
              f"{r['load_after']})\n  stages (s): {stages}\n  MB+ per stage: {mem}\n  alone: scoring {ts:.2f} s, "
              f"{ms:.1f} MB traced; outside_grid {to:.2f} s, {mo:.1f} MB traced", flush=True)
    if len(runs) > 1:
        ns = [r["size"] for r in runs]
        keys = [k for k in runs[-1]["stages"] if k != "total"] + ["total"]
        print(f"\nus per row by size ({', '.join(f'{n:,d}' for n in ns)}) and growth exponent (1 = linear):")
        for k in keys:
            vals = [r["stages"].get(k) for r in runs]
            per = ", ".join("-" if v is None else f"{1e6 * v / n:.1f}" for v, n in zip(vals, ns))
            print(f"  {k:14s} {per:40s} exponent {_growth(ns, vals)}")
        for label, key in (("scoring alone", "scoring_alone"), ("outside alone", "outside_alone")):
            vals = [r[key][0] for r in runs]
            mbs = [r[key][1] for r in runs]
            per = ", ".join(f"{1e6 * v / n:.1f}" for v, n in zip(vals, ns))
            print(f"  {label:14s} {per:40s} exponent {_growth(ns, vals)}; traced MB {', '.join(f'{m:.1f}' for m in mbs)}"
                  f" (exponent {_growth(ns, mbs)})")
    print(f"\nload average at end {_load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The issue-32 command lines end to end, as a user runs them: full Adult with every format, and 200k rows
through the brute-force path.

    python benchmarks/bench_cli_full.py [--cases adult,200k] [--repeat 2] [--keep DIR] [--before CHECKOUT]

``adult``: the 48,842 Adult rows x 14 and a HistGradientBoostingClassifier (200 iterations, native
categoricals, random_state 0) fitted on them and saved with skops; ``autopdp report ... --formats
json,html,pdf,docx``.  ``200k``: 200,000 rows resampled from Adult with replacement (seed 0) and a one-hot
LogisticRegression pipeline fitted on them; ``--formats json,html``.  The inputs are built once per run of
this script in a temporary folder (their building is not timed).

Each command runs in a new process, timed to its exit, with the CPU time of the command and of the children it
waited for: less sensitive than the wall time to a busy host.  Peak memory, sampled every
50 ms over the command and its child processes (joblib's figure workers), is given two ways:
the largest sum of their resident memory (RSS: a page two processes share counts twice, e.g. the libraries both
map, or a child's pages between fork and exec), and the largest sum of their proportional set sizes (PSS: a
shared page counts once, split between the processes sharing it), the memory the process tree occupies; PSS is
read every 250 ms (reading it costs ~4 ms for a 700 MB process).  The stage lines the command
prints are shown with the first run, and the load average before and after every run: take the figures on an
idle machine.  ``--before CHECKOUT`` runs an earlier version (a checkout, e.g. ``git worktree add /tmp/before REV``)
right after each run of this one on the same inputs, and prints this version's time over the earlier one's, run by
run: a ratio both versions measured under the same conditions, when the machine's speed drifts between runs.

Resident memory depends on the page cache: right after an environment is installed its libraries' files are mapped
in larger pieces, and the same run reads about 60 MB more resident than once the cache has been dropped and the
files read back (docs/performance.md).  Both sides of a ``--before`` pair use the same libraries, so they see
the same state; give the state with the figures.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import ADULT, _load  # noqa: E402 - the same data and load reading as the scale benchmark


def _inputs(folder: Path) -> dict:
    import warnings

    import pandas as pd
    import skops.io as sio
    from sklearn.compose import make_column_transformer
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    warnings.simplefilter("ignore")
    raw = pd.read_csv(ADULT, na_values="?", skipinitialspace=True)
    X = raw.drop(columns="income")
    for c in X.columns:
        X[c] = X[c].astype("category") if not pd.api.types.is_numeric_dtype(X[c]) else X[c].astype(float)
    hgb = HistGradientBoostingClassifier(max_iter=200, categorical_features="from_dtype", random_state=0)
    sio.dump(hgb.fit(X, raw["income"].astype(str)), folder / "adult_hgb.skops")
    big = raw.sample(200_000, replace=True, random_state=0).reset_index(drop=True)
    cat = [c for c in raw.columns if not pd.api.types.is_numeric_dtype(raw[c]) and c != "income"]
    num = [c for c in raw.columns if c not in cat and c != "income"]
    pipe = make_pipeline(make_column_transformer(
        (make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")), cat),
        (StandardScaler(), num)), LogisticRegression(max_iter=300))
    sio.dump(pipe.fit(big.drop(columns="income"), big["income"]), folder / "adult200k_logit.skops")
    big.to_csv(folder / "adult200k.csv", index=False)

    def trusted(path):
        return [a for t in sio.get_untrusted_types(file=path) for a in ("--trust-type", t)]

    cli = [sys.executable, "-m", "autopdp", "report", "--target", "income", "--na-values", "?"]
    return {
        "adult": cli + ["--model", str(folder / "adult_hgb.skops"), "--data", str(ADULT), "--formats",
                        "json,html,pdf,docx", *trusted(folder / "adult_hgb.skops")],
        "200k": cli + ["--model", str(folder / "adult200k_logit.skops"), "--data", str(folder / "adult200k.csv"),
                       "--formats", "json,html", *trusted(folder / "adult200k_logit.skops")],
    }


def _run(cmd: list, out: Path, source: str | None = None) -> dict:
    """One command, timed to its exit; ``source``: a checkout whose autopdp is imported instead of the installed one."""
    import psutil

    load_before = _load()
    env = {**os.environ, "CI": "true"}  # one line per stage, as in a CI log
    if source:
        env["PYTHONPATH"] = os.pathsep.join([str(Path(source).resolve()), *filter(None, [env.get("PYTHONPATH")])])
    import resource

    # run from the output's folder: ``python -m`` puts the working directory first on the path, so a run started
    # in a checkout would import that checkout's autopdp whatever PYTHONPATH says
    out = Path(out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    where = subprocess.run([sys.executable, "-c", "import autopdp; print(autopdp.__file__)"], env=env, cwd=out.parent,
                           capture_output=True, text=True).stdout.strip()  # which autopdp the command imports
    used0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd + ["--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=out.parent)
    ps, peak, peak_pss, peak_own, tick = psutil.Process(proc.pid), 0, 0, 0, 0
    while proc.poll() is None:
        # PSS walks the page tables (~4 ms for a 700 MB process): read every 5th sample, so that the sampler
        # takes ~1.5% of one core from the command instead of ~7%
        with_pss = tick % 5 == 0
        tick += 1
        total = total_pss = 0
        try:
            for p in [ps, *ps.children(recursive=True)]:
                if with_pss:
                    m = p.memory_full_info()
                    total_pss += m.pss
                else:
                    m = p.memory_info()
                total += m.rss
                if p is ps:
                    peak_own = max(peak_own, m.rss)
        except psutil.Error:  # a child that just exited
            pass
        peak, peak_pss = max(peak, total), max(peak_pss, total_pss)
        time.sleep(0.05)
    seconds = time.perf_counter() - t0
    _, err = proc.communicate()
    used = resource.getrusage(resource.RUSAGE_CHILDREN)  # the command and the children it waited for (the PDF's)
    cpu = (used.ru_utime - used0.ru_utime) + (used.ru_stime - used0.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"the command failed ({proc.returncode}): {err[-2000:]}")
    return {"seconds": seconds, "cpu": cpu, "peak_mb": peak / 2 ** 20, "peak_pss_mb": peak_pss / 2 ** 20,
            "peak_own_mb": peak_own / 2 ** 20, "stages": [l for l in err.splitlines() if l.startswith("autopdp:")],
            "load": f"{load_before} -> {_load()}", "autopdp": where}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="adult,200k")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--keep", default=None, help="folder for the inputs and outputs (default: a temporary one)")
    ap.add_argument("--before", default=None, metavar="CHECKOUT",
                    help="a checkout of an earlier autopdp (e.g. from git worktree add): each run of this version "
                         "is followed by one of that version, on the same inputs, so both see the same machine")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        print(f"building the inputs in {folder} (not timed); load average {_load()}", flush=True)
        commands = _inputs(folder)
        for case in args.cases.split(","):
            pairs = []
            for i in range(args.repeat):
                r = _run(commands[case], folder / f"out_{case}_{i}")
                print(f"{case:6s} run {i + 1}: {r['seconds']:6.1f} s ({r['cpu']:.1f} CPU-s), peak {r['peak_mb']:6.0f} MB "
                      f"resident, {r['peak_pss_mb']:.0f} MB proportional (command and its children; the command alone "
                      f"{r['peak_own_mb']:.0f} MB resident); load average {r['load']}", flush=True)
                if i == 0:
                    print(f"        autopdp imported from {r['autopdp']}", flush=True)
                    print("\n".join("        " + line for line in r["stages"]), flush=True)
                else:  # the trust checks' line of every run (the issue's 3 s)
                    print("\n".join("        " + line for line in r["stages"] if "trust checks" in line), flush=True)
                if args.before:
                    b = _run(commands[case], folder / f"out_{case}_{i}_before", args.before)
                    if i == 0:
                        print(f"        before: autopdp imported from {b['autopdp']}", flush=True)
                    print("\n".join("        before: " + line for line in b["stages"] if "trust checks" in line),
                          flush=True)
                    print(f"{case:6s} run {i + 1}, before: {b['seconds']:6.1f} s ({b['cpu']:.1f} CPU-s), peak "
                          f"{b['peak_mb']:6.0f} MB resident, {b['peak_pss_mb']:.0f} MB proportional; load average "
                          f"{b['load']}", flush=True)
                    pairs.append((r, b))
            for what in ("seconds", "cpu") if pairs else ():
                ratios = sorted(after[what] / before[what] for after, before in pairs)
                print(f"{case:6s} this version / before, {'time' if what == 'seconds' else 'CPU time'}, run by run: "
                      f"{', '.join(f'{x:.3f}' for x in ratios)} (median {ratios[len(ratios) // 2]:.3f})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The audit at 50k, 200k and 1M rows x 14, locally and on a Dask LocalCluster of 1 and 2 workers (issues 32, 54).

    python benchmarks/bench_scale.py [--sizes 50000,200000,1000000] [--workers 1,2] [--skip-dask] [--repeat N]
    python benchmarks/bench_scale.py --parquet 10000000 [--workers 2]
    python benchmarks/bench_scale.py --dask-frame 1000000 [--workers 2]

Each worker is a process with one thread (its kernels use that one thread: its share of the machine), so W workers
use W cores; the speed-up of W workers is printed over 1 worker and over the local run (every core of the machine).
``--repeat N`` runs the cluster's runs N times, alternating (1 worker, then W workers, then 1 again), each ratio
over the 1-worker run just before it, and prints the N ratios and their median: on a shared 2-vCPU host one run
of the same command varies by up to a quarter (2 workers at 1M rows: 241.7 s and 300.1 s within an hour), so one pair
of runs does not settle a ratio near its goal.

The model is the full-Adult one of the README's figures: a HistGradientBoostingClassifier with 200 iterations and
native categoricals, fitted on the 48,842 real rows of ``../shared/data/adult``.  Each size is the Adult rows
resampled with replacement (seed 0), the income label with them.  Every run is the default call,
``autopdp.audit(model, X, y)`` (with ``scheduler=`` the cluster's client on Dask), each in a new process so that
one run's memory does not carry into the next.

Printed per run: the audit's wall time, its stages (``Audit.run["timings_s"]``), and the peak memory: the calling
process's peak plus each Dask worker process's, each the kernel's own high-water mark (``VmHWM``, read once after the
audit), so at least the peak of them together.  Nothing samples memory during the audit: a sampler thread every
50 ms (as this script had until 3 December) costs the calling process about 5% of a core, which a 1-worker run
absorbs on the idle core and a 2-worker run on a 2-core machine takes from the workers.  The speed-up is the
local time over the cluster's.  The load average is printed beside each figure: take the figures on an idle machine.  On Dask every per-row pass runs on the workers' resident row partitions (the tree check, the
PDs, the PD outside the grid, the exact ALE's sums, the scores' cell tables and association tests, the
self-check's PD on every row, the data summary), the permutation importance one task per feature and OOD's and
StratPD's samples one task each; validation, the scores' fits on the PD curves, the surrogate's fit and the noise
tests run in the calling process (README, "When one machine is not enough").

``--parquet ROWS``: the README's commands on a folder of Parquet parts (ROWS resampled Adult rows, 20 parts, the
categorical columns stored as dictionaries): ``dask scheduler`` and ``--workers`` ``dask worker`` processes of one
thread, then ``python -m autopdp report --data FOLDER --scheduler ADDRESS``.  Printed: the command's wall time,
the peak resident memory of the calling process alone (the command; sampled every 50 ms) and of the workers, and
the data's size as one pandas frame (``pandas.read_parquet(FOLDER).memory_usage(deep=True)``).

``--dask-frame ROWS``: the same folder and cluster, audited from Python as a dask DataFrame:
``autopdp.audit(model, dask.dataframe.read_parquet(FOLDER), "income", scheduler=client)`` (its partitions computed
and kept on the workers); the same figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ADULT = ROOT.parent / "shared" / "data" / "adult" / "adult.csv"


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f}, {five:.2f}, {fifteen:.2f}"


def _adult():
    import pandas as pd

    df = pd.read_csv(ADULT, na_values="?", skipinitialspace=True)
    y = df.pop("income").astype(str).str.contains(">50K").astype(int).to_numpy()
    for c in df.columns:
        df[c] = df[c].astype("category") if not pd.api.types.is_numeric_dtype(df[c]) else df[c].astype(float)
    return df, y


def _vm_hwm() -> int:
    """This process's peak resident memory in bytes: the kernel's own high-water mark (``VmHWM``), read once."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) * 1024


def _one(size: int, workers: int) -> dict:
    """One run in this process: ``workers`` 0 is local, else a LocalCluster of that many worker processes."""
    import warnings

    import numpy as np
    from sklearn.ensemble import HistGradientBoostingClassifier

    import autopdp

    warnings.simplefilter("ignore")
    df, y = _adult()
    model = HistGradientBoostingClassifier(max_iter=200, categorical_features="from_dtype", random_state=0).fit(df, y)
    rows = np.random.default_rng(0).integers(0, len(df), size)
    X, yy = df.iloc[rows].reset_index(drop=True), y[rows]
    del df
    client = cluster = None
    if workers:
        from distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    load_before = _load()
    t0 = time.perf_counter()
    a = autopdp.audit(model, X, yy, progress=False, scheduler=client)
    seconds = time.perf_counter() - t0
    peak = _vm_hwm() + (sum(client.run(_vm_hwm).values()) if client is not None else 0)
    out = {"size": size, "workers": workers, "seconds": seconds, "peak_mb": peak / 2 ** 20,
           "stages": {k: round(float(v), 1) for k, v in a.run.get("timings_s", {}).items()},
           "load_before": load_before, "load_after": _load()}
    if client is not None:
        client.close()
        cluster.close()
    return out


def _rss(procs) -> int:
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except Exception:  # noqa: BLE001 - a process that just exited
            pass
    return total


def _write_parts(rows: int, folder: Path) -> Path:
    """ROWS resampled Adult rows (seed 0) with the income label, as 20 Parquet parts; the model beside them."""
    import numpy as np
    import skops.io as sio
    from sklearn.ensemble import HistGradientBoostingClassifier

    df, y = _adult()
    model = HistGradientBoostingClassifier(max_iter=200, categorical_features="from_dtype", random_state=0).fit(df, y)
    folder.mkdir(parents=True, exist_ok=True)
    sio.dump(model, folder.parent / "model.skops")
    pick = np.random.default_rng(0).integers(0, len(df), rows)
    for i, part in enumerate(np.array_split(pick, 20)):
        df.iloc[part].assign(income=y[part]).reset_index(drop=True).to_parquet(folder / f"part-{i:05d}.parquet")
    return folder.parent / "model.skops"


def start_cluster(workers: int, work: Path) -> tuple[list, str]:
    """The README's commands: ``dask scheduler`` (its address written in ``work``) and ``workers`` ``dask worker``
    processes of one thread each; returns the processes (scheduler first) and the scheduler's address."""
    address_file = work / "scheduler.json"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, "-m", "dask", "scheduler", "--scheduler-file", str(address_file),
                               "--no-dashboard"], stderr=subprocess.DEVNULL)]
    while not address_file.exists():
        time.sleep(0.2)
    time.sleep(1.0)
    address = json.loads(address_file.read_text())["address"]
    procs += [subprocess.Popen([sys.executable, "-m", "dask", "worker", address, "--nthreads", "1", "--nworkers", "1",
                                "--no-dashboard"], stderr=subprocess.DEVNULL, env=env) for _ in range(workers)]
    time.sleep(5.0)
    return procs, address


def stop_cluster(procs) -> None:
    """Stop the processes :func:`start_cluster` started, and wait for them."""
    for p in procs:
        p.terminate()
    for p in procs:
        p.wait()


def report_args(model: Path, folder: Path, address: str, out: Path) -> list[str]:
    """``autopdp report``'s arguments for the Parquet folder ``folder`` on the cluster at ``address``."""
    return ["report", "--model", str(model), "--data", str(folder), "--target", "income", "--scheduler", address,
            "--out", str(out), "--formats", "json", "--max-data-mb", "16384", "--trust-type", "functools.partial",
            "--trust-type", "sklearn.utils.validation.check_array"]  # HGB's categorical preprocessing


#: ``--dask-frame``'s audit: the folder read by ``dask.dataframe.read_parquet``, the default call on the cluster
_DASK_AUDIT = """
import sys, dask.dataframe as dd, autopdp
from distributed import Client
model = autopdp.load_model(sys.argv[1], trusted_types=["functools.partial",  # HGB's categorical preprocessing
                                                       "sklearn.utils.validation.check_array"])
with Client(sys.argv[3]) as client:
    audit = autopdp.audit(model, dd.read_parquet(sys.argv[2]), "income", scheduler=client, progress=False)
print(len(audit.results), "PDs")
"""


def _folder_run(rows: int, workers: int, dask_frame: bool) -> int:
    """The README's commands on a Parquet folder of ``rows`` rows: scheduler, workers, ``autopdp report`` (or, with
    ``dask_frame``, ``autopdp.audit`` of ``dd.read_parquet(folder)``), with the calling process's peak memory."""
    import shutil
    import tempfile

    import pandas as pd
    import psutil

    work = Path(tempfile.mkdtemp(prefix="autopdp-bench-"))
    folder = work / "portfolio"
    model = _write_parts(rows, folder)
    frame_mb = pd.read_parquet(folder).memory_usage(deep=True).sum() / 2 ** 20
    cluster, address = start_cluster(workers, work)
    command = ([sys.executable, "-c", _DASK_AUDIT, str(model), str(folder), address] if dask_frame else
               [sys.executable, "-m", "autopdp", *report_args(model, folder, address, work / "report")])
    try:
        load_before = _load()
        t0 = time.perf_counter()
        run = psutil.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        client_peak = worker_peak = 0
        workers_now = [psutil.Process(p.pid) for p in cluster[1:]]
        while run.poll() is None:
            client_peak = max(client_peak, _rss([run]))
            worker_peak = max(worker_peak, _rss([c for w in workers_now for c in [w, *w.children(recursive=True)]]))
            time.sleep(0.05)
        seconds = time.perf_counter() - t0
        err = run.stderr.read()
    finally:
        stop_cluster(cluster)
        shutil.rmtree(work, ignore_errors=True)
    if run.returncode != 0:
        print(f"the run failed ({run.returncode}): {err[-2000:]}")
        return 1
    print(f"{rows:,} rows in a folder of 20 Parquet parts; {workers} dask worker(s) of one thread; {os.cpu_count()} cores")
    what = ("autopdp.audit(model, dd.read_parquet(folder), 'income', scheduler=client)" if dask_frame else
            f"autopdp report --data {folder.name}/ --scheduler ...")
    print(f"  {what}: {seconds:.1f} s; load before / after {load_before} / {_load()}")
    print(f"  peak memory: the calling process {client_peak / 2 ** 20:,.0f} MB, the workers {worker_peak / 2 ** 20:,.0f} MB; "
          f"the data as one pandas frame {frame_mb:,.0f} MB")
    return 0


def _row(size: int, w: int, local, one, rep: int, repeats: int) -> dict | None:
    """One run (``w`` workers, 0 local) in a new process, printed as a row of the table; None when it failed."""
    where = "local" if not w else f"Dask {w} worker" + ("s" if w > 1 else "")
    where += f" #{rep + 1}" if repeats > 1 and w else ""
    proc = subprocess.run([sys.executable, __file__, "--one", str(size), str(w)], capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"{size:9,d}  {where:17s} failed:\n{proc.stderr[-2000:]}")
        return None
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    speed = f"{local / r['seconds']:.2f}x" if w and local else ""
    over_one = f"{r['seconds'] / one:.3f}" if w > 1 and one else ""
    stages = ", ".join(f"{k} {v}" for k, v in r["stages"].items())
    print(f"{size:9,d}  {where:17s} {r['seconds']:8.1f} {r['peak_mb']:8.0f} {speed:>8s} {over_one:>8s}   {stages}   "
          f"{r['load_before']} / {r['load_after']}", flush=True)
    return r


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="50000,200000,1000000")
    ap.add_argument("--workers", default="1,2", help="Dask LocalCluster worker processes to try")
    ap.add_argument("--skip-dask", action="store_true")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="run the cluster's sizes N times, alternating (1 worker, then W), and print the median ratio")
    ap.add_argument("--parquet", type=int, metavar="ROWS", help="the README's commands on a Parquet folder of ROWS rows")
    ap.add_argument("--dask-frame", type=int, metavar="ROWS",
                    help="autopdp.audit of dask.dataframe.read_parquet(folder) on the cluster, ROWS rows")
    ap.add_argument("--one", nargs=2, type=int, metavar=("SIZE", "WORKERS"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(_one(*args.one)))
        return 0
    if args.parquet or args.dask_frame:
        return _folder_run(args.parquet or args.dask_frame, int(args.workers.split(",")[-1]), bool(args.dask_frame))
    sizes = [int(s) for s in args.sizes.split(",")]
    modes = [0] + ([] if args.skip_dask else [int(w) for w in args.workers.split(",")])
    print(f"autopdp.audit(model, X, y) on the Adult rows resampled; HGB 200 iterations, native categoricals; "
          f"{os.cpu_count()} cores")
    print(f"{'rows':>9s}  {'where':17s} {'seconds':>8s} {'peak MB':>8s} {'vs local':>8s} {'vs 1 wkr':>8s}   stages (s)   "
          "load before / after")
    for size in sizes:
        local, ratios = None, {}
        for rep in range(args.repeat):
            one = None
            for w in modes if rep == 0 else modes[1:]:  # local once; the cluster runs alternate, 1 worker first
                r = _row(size, w, local, one, rep, args.repeat)
                if r is None:
                    continue
                local = r["seconds"] if not w else local
                one = r["seconds"] if w == 1 else one
                if w > 1 and one:
                    ratios.setdefault(w, []).append(r["seconds"] / one)
        for w, rs in ratios.items():
            if len(rs) > 1:
                print(f"{size:9,d}  {w} workers over 1, run by run: {', '.join(f'{x:.3f}' for x in rs)}; "
                      f"median {statistics.median(rs):.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

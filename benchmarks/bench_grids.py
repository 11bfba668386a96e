"""Grids of a Parquet folder built from its row partitions on Dask workers, beside the same grids built here.

``python benchmarks/bench_grids.py --rows 10000000 --workers 2`` writes ROWS resampled Adult rows as 20 Parquet
parts (as ``bench_scale.py --parquet`` does), starts ``dask scheduler`` and WORKERS ``dask worker`` processes of one
thread, and runs, each in a fresh process whose peak resident memory is its own:

1. the default call on the cluster: the folder as a :class:`autopdp.pd.partframe.PartFrame` (each worker reads its
   parts; this process reads the footers and each categorical column's levels), every feature's grid at the
   audit's two resolutions (20 points, 10 per axis of a pair) from the parts' profiles
   (:mod:`autopdp.pd.profiles`);
2. the reference: the folder read here as one frame, the same grids built from every row.

It prints each run's seconds, peak memory and ``uptime``'s load before it, the data's size as one frame, and
whether the grids are equal (they must be, bit for bit).
"""

from __future__ import annotations

import argparse
import os
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import _load, _write_parts, start_cluster, stop_cluster  # noqa: E402


def _grids(frame, mapper) -> list:
    from autopdp.pd.data import is_categorical_dtype
    from autopdp.pd.grids import build_spec

    out = []
    for position in range(frame.n_features):
        for resolution in (20, 10):
            spec = build_spec(frame, position, categorical=is_categorical_dtype(frame.dtype(position)),
                              grid_resolution=resolution, percentiles=(0.05, 0.95), grid_method="quantile",
                              mapper=mapper)
            out.append((spec.name, resolution, spec.grid, spec.n_missing))
    return out


def _child(mode: str, folder: str, address: str, out: str) -> None:
    """One measured run (in its own process): the grids on the cluster or here; writes them and the seconds."""
    t0 = time.perf_counter()
    files = sorted(Path(folder).glob("*.parquet"))
    if mode == "cluster":
        from distributed import Client

        from autopdp.pd.distributed import resident_rows
        from autopdp.pd.partframe import parquet_frame
        from autopdp.pd.rows import map_rows

        with Client(address) as client, resident_rows(client):
            import pyarrow.parquet as pq

            features = [c for c in pq.read_schema(files[0]).names if c != "income"]
            frame = parquet_frame(client, files, columns=features)
            grids = _grids(frame, lambda fn, payload: map_rows(fn, payload, frame, scheduler=client))
    else:
        from autopdp.io.loading import load_data
        from autopdp.pd.data import as_frame

        frame = as_frame(load_data(folder, max_mb=1 << 20).drop(columns="income"))
        grids = _grids(frame, None)
    seconds = time.perf_counter() - t0
    # this process's own peak (VmHWM: getrusage's maxrss would carry over the forking parent's peak across exec)
    status = Path("/proc/self/status").read_text().splitlines()
    peak_mb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024
    with open(out, "wb") as fh:
        pickle.dump({"grids": grids, "seconds": seconds, "peak_mb": peak_mb}, fh)


def _run(mode: str, folder: Path, address: str, work: Path) -> dict:
    out = work / f"{mode}.pkl"
    load = _load()
    subprocess.run([sys.executable, __file__, "--child", mode, str(folder), address, str(out)], check=True)
    with open(out, "rb") as fh:
        return {**pickle.load(fh), "load": load}


def _same(a: list, b: list) -> bool:
    import numpy as np

    return len(a) == len(b) and all(x[:2] == y[:2] and x[3] == y[3] and np.array_equal(x[2], y[2])
                                    and x[2].dtype == y[2].dtype for x, y in zip(a, b))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        _child(*args.child)
        return 0
    import shutil

    import pandas as pd

    work = Path(tempfile.mkdtemp(prefix="autopdp-grids-"))
    try:
        folder = work / "portfolio"
        _write_parts(args.rows, folder)
        frame_mb = pd.read_parquet(folder).drop(columns="income").memory_usage(deep=True).sum() / 2 ** 20
        procs, address = start_cluster(args.workers, work)
        try:
            cluster = _run("cluster", folder, address, work)
        finally:
            stop_cluster(procs)
        here = _run("here", folder, "", work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{args.rows:,} rows in 20 Parquet parts (features as one pandas frame: {frame_mb:,.0f} MB); "
          f"{os.cpu_count()} cores; every feature's grid at 20 points and at 10")
    print(f"  on {args.workers} dask worker(s), from the parts' profiles: {cluster['seconds']:.1f} s, calling process "
          f"peak {cluster['peak_mb']:,.0f} MB (load before {cluster['load']})")
    print(f"  here, from the frame read whole:            {here['seconds']:.1f} s, calling process "
          f"peak {here['peak_mb']:,.0f} MB (load before {here['load']})")
    print(f"  the grids and missing counts equal: {_same(cluster['grids'], here['grids'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The calling process's resident memory stage by stage: ``autopdp report --data FOLDER --scheduler`` (issue 54).

    python benchmarks/profile_memory.py [--rows 2000000] [--workers 2]

The README's commands on a folder of Parquet parts (``bench_scale.py --parquet``'s data: ROWS resampled Adult rows in
20 parts, its HGB): a ``dask scheduler`` and ``--workers`` ``dask worker`` processes of one thread, then the
command's ``main`` run in this process, so that its memory is this process's.  Every 20 ms the resident memory is
sampled and labelled by the stages running then (each stage's function wrapped; the scores and the trust checks
run side by side, so a label may name both).  Printed per label: the memory when it was first seen and its peak.
Also printed: the data's size as one pandas frame.  The figures are of this machine's allocators; compare them
within one run, and take the peak beside ``bench_scale.py --parquet``'s (which samples from outside).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

#: module:function of the stages labelled (each wrapped where the caller looks it up)
STAGES = [
    "autopdp.io.loading:_read_parts",
    "autopdp.auditing.pipeline:_validated_inputs",
    "autopdp.auditing.pipeline:_partial_dependences",
    "autopdp.auditing.pipeline:_margin",
    "autopdp.auditing.pipeline:_link_2d",
    "autopdp.auditing.pipeline:_after_pds",
    "autopdp.auditing.pipeline:_scores_and_trust",
    "autopdp.auditing.pipeline:self_check",
    "autopdp.auditing.pipeline:score_result",
    "autopdp.auditing.pipeline:pair_criteria",
    "autopdp.trust.checks:_exact_ale_curves",
    "autopdp.trust.checks:_stratpd_curves",
    "autopdp.trust.checks:_ood_measures",
    "autopdp.auditing.pipeline:assess",
    "autopdp.auditing.pipeline:summarise_data",
    "autopdp.auditing.pipeline:outside_grid",
    "autopdp.auditing.pipeline:audit_regions",
    "autopdp.auditing.pipeline:permutation_importance",
    "autopdp.auditing.pipeline:audit_metadata",
    "autopdp.cli.commands:_write",
]


class _Labelled:
    """Resident memory sampled every ``every`` s, under the names of the wrapped stages running then."""

    def __init__(self, every: float = 0.02):
        import psutil

        self.proc, self.every = psutil.Process(), every
        self.running: dict[int, list[str]] = {}  # thread -> its stack of stage names
        self.seen: dict[str, list[int]] = {}  # label -> [memory when first seen, peak]
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while True:
            rss = self.proc.memory_info().rss
            label = " | ".join("/".join(s) for s in list(self.running.values()) if s) or "-"
            first_peak = self.seen.setdefault(label, [rss, rss])
            first_peak[1] = max(first_peak[1], rss)
            time.sleep(self.every)

    def wrap(self, spec: str) -> None:
        module_name, name = spec.rsplit(":", 1)
        module = importlib.import_module(module_name)
        fn = getattr(module, name)

        @functools.wraps(fn)
        def labelled(*args, **kwargs):
            stack = self.running.setdefault(threading.get_ident(), [])
            stack.append(name)
            try:
                return fn(*args, **kwargs)
            finally:
                stack.pop()

        setattr(module, name, labelled)


_MAKE = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import pandas as pd
from bench_scale import _write_parts
model = _write_parts(int(sys.argv[2]), Path(sys.argv[3]))
print(model, pd.read_parquet(sys.argv[3]).memory_usage(deep=True).sum() / 2 ** 20)
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    import shutil

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_scale import _load, report_args, start_cluster, stop_cluster

    work = Path(tempfile.mkdtemp(prefix="autopdp-memory-"))
    folder = work / "portfolio"
    # the data written, and measured as one frame, in another process: this one's memory is the command's alone
    made = subprocess.run([sys.executable, "-c", _MAKE, str(Path(__file__).resolve().parent), str(args.rows),
                           str(folder)], check=True, capture_output=True, text=True).stdout.split()
    model, frame_mb = Path(made[0]), float(made[1])
    procs, address = start_cluster(args.workers, work)
    try:
        sampler = _Labelled()
        for spec in STAGES:
            sampler.wrap(spec)
        from autopdp.cli import main as autopdp_main

        t0 = time.perf_counter()
        code = autopdp_main(report_args(model, folder, address, work / "report"))
        seconds = time.perf_counter() - t0
    finally:
        stop_cluster(procs)
        shutil.rmtree(work, ignore_errors=True)
    print(f"{args.rows:,} rows, {args.workers} dask worker(s); exit {code} in {seconds:.1f} s; load after "
          f"{_load()}; the data as one pandas frame {frame_mb:,.0f} MB")
    for label, (first, peak) in sampler.seen.items():
        print(f"  {label:80s} first {first / 2 ** 20:7,.0f} MB  peak {peak / 2 ** 20:7,.0f} MB")
    return code


if __name__ == "__main__":
    sys.exit(main())

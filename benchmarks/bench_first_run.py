"""The demo's first run from a brand-new virtual environment against its second run (issue 32).

    python benchmarks/bench_first_run.py [--keep]

Builds the wheel, then, each in a brand-new virtual environment with the wheel and its dependencies installed from
the package index (pip's own download cache is used when it has them):

1. **a machine that never ran autopdp**: an empty kernel folder (``AUTOPDP_CACHE_DIR`` set to a new folder):
   ``autopdp demo`` twice.  The first run compiles the tree and OOD kernels into the folder;
2. **a new virtual environment on that machine** (a new ``make demo``, a CI runner that keeps the folder): a second
   brand-new environment with the same folder: ``autopdp demo`` twice.  The kernels compiled by the first
   environment are loaded, not compiled;
3. **a CI image built with ``autopdp warmup``**: a third environment and a new empty folder: ``autopdp warmup``
   (as an image build would run it), then ``autopdp demo`` twice.

Every ``autopdp demo`` is timed end to end as a user runs it (a new process: imports, the model's training, the
audit and the HTML, PDF and JSON report).  The ratio the issue bounds is first run / second run in the same
environment.  The load average is printed beside every figure: take the figures on an idle machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f}"


def _venv(work: Path, name: str, wheel: Path) -> Path:
    env = work / name
    subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
    py = env / "bin" / "python"
    for what in (["--upgrade", "pip"], [str(wheel)]):
        out = subprocess.run([str(py), "-m", "pip", "install", "--quiet", *what], capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(f"pip install {' '.join(what)} failed: {out.stderr[-2000:]}")
    return env


def _timed(cmd, env, cwd) -> float:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    took = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed ({out.returncode}): {out.stderr[-2000:]}")
    return took


def _demo_twice(venv: Path, folder: Path, work: Path, label: str, warmup: bool = False) -> None:
    env = dict(os.environ, AUTOPDP_CACHE_DIR=str(folder))
    autopdp = venv / "bin" / "autopdp"
    if warmup:
        w = _timed([str(autopdp), "warmup"], env, work)
        print(f"  autopdp warmup {w:6.1f} s; {_load()}", flush=True)
    first = _timed([str(autopdp), "demo", "--out", str(work / f"{label}-1")], env, work)
    print(f"  first demo     {first:6.1f} s; {_load()}", flush=True)
    second = _timed([str(autopdp), "demo", "--out", str(work / f"{label}-2")], env, work)
    print(f"  second demo    {second:6.1f} s; {_load()}", flush=True)
    print(f"  first / second = {first / second:.2f} (the issue's bound: 1.3)", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder (its path is printed)")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="autopdp-first-run-"))
    try:
        print(f"{_load()} at the start; work folder {work}", flush=True)
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(work / "dist"),
                        str(ROOT)], check=True, capture_output=True)
        wheel = next((work / "dist").glob("autopdp-*.whl"))
        machine = work / "kernels-machine"
        print("1. a machine that never ran autopdp (empty kernel folder), brand-new environment:", flush=True)
        _demo_twice(_venv(work, "venv1", wheel), machine, work, "one")
        print("2. another brand-new environment on the same machine (the kernel folder of 1.):", flush=True)
        _demo_twice(_venv(work, "venv2", wheel), machine, work, "two")
        print("3. a CI image: brand-new environment, empty kernel folder, `autopdp warmup` first:", flush=True)
        _demo_twice(_venv(work, "venv3", wheel), work / "kernels-image", work, "three", warmup=True)
        print(f"{_load()} at the end", flush=True)
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The shipped artifact against the trained model (issue 56): a full-Adult audit of an ONNX file beside the same
model saved with skops, in one run.

    python benchmarks/bench_onnx.py [--trees 200] [--keep DIR]

The data: the 48,842 Adult rows x 14, text columns as their category codes (missing as -1), so that one float
input feeds both models.  The model: a GradientBoostingClassifier (``--trees`` trees of depth 3, random_state 0)
fitted on them, saved with skops and converted with skl2onnx (no ZipMap).  Both are audited by the command line
(``autopdp report ... --formats json``), each in a new process timed to its exit, with the load average beside it.
Printed: the two times; the largest gap between the two audits' 1D PDs (onnxruntime thresholds and sums in float32,
scikit-learn in float64); whether the ONNX audit took the exact tree path; and ``autopdp compare``'s conversion gap
(rows whose prediction moved by more than 1e-6).  Building the inputs is not timed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ADULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "adult" / "adult.csv"


def _load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def _inputs(folder: Path, trees: int) -> tuple[Path, Path, Path]:
    import warnings

    import numpy as np
    import pandas as pd
    import skl2onnx
    import skops.io as sio
    from sklearn.ensemble import GradientBoostingClassifier

    warnings.simplefilter("ignore")
    raw = pd.read_csv(ADULT, na_values="?", skipinitialspace=True)
    X = raw.drop(columns="income")
    for c in X.columns:
        if not pd.api.types.is_numeric_dtype(X[c]):
            X[c] = X[c].astype("category").cat.codes.astype(float)  # missing: -1
    X = X.astype(np.float32).astype(float)  # values the float32 input holds exactly: both models see the same rows
    y = raw["income"].astype(str).str.rstrip(".").eq(">50K").astype(int)
    gbm = GradientBoostingClassifier(n_estimators=trees, max_depth=3, random_state=0).fit(X, y)
    data = folder / "adult_codes.csv"
    X.assign(income=y).to_csv(data, index=False)
    skops_path, onnx_path = folder / "adult_gbm.skops", folder / "adult_gbm.onnx"
    sio.dump(gbm, skops_path)
    onnx_path.write_bytes(skl2onnx.to_onnx(gbm, X[:1].to_numpy(np.float32), options={"zipmap": False},
                                           target_opset={"": 17, "ai.onnx.ml": 3}).SerializeToString())
    return data, skops_path, onnx_path


def _run(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{' '.join(cmd[:4])} ... failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return time.perf_counter() - t0


def _pds(out: Path):
    import autopdp

    records = autopdp.read_results(out / "results.json")
    return {tuple(r["features"]): r for r in records["results"] if len(r["features"]) == 1}, records


def autopdp_metadata(out: Path) -> dict:
    return json.loads((out / "results.json").read_text())["metadata"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trees", type=int, default=200)
    ap.add_argument("--keep", type=Path, default=None, help="keep the inputs and reports in this folder")
    args = ap.parse_args()
    import numpy as np
    import skops.io as sio

    folder = args.keep or Path(tempfile.mkdtemp(prefix="bench_onnx_"))
    folder.mkdir(parents=True, exist_ok=True)
    data, skops_path, onnx_path = _inputs(folder, args.trees)
    trust = [a for t in sio.get_untrusted_types(file=skops_path) for a in ("--trust-type", t)]
    cli = [sys.executable, "-m", "autopdp", "report", "--data", str(data), "--target", "income", "--formats", "json"]
    print(f"full Adult ({data.stat().st_size / 1e6:.1f} MB of codes), GradientBoostingClassifier of {args.trees} trees")
    times = {}
    for name, path, extra in (("skops", skops_path, trust), ("onnx", onnx_path, [])):
        before = _load()
        times[name] = _run(cli + ["--model", str(path), "--out", str(folder / name), *extra])
        print(f"  {name:6s} {times[name]:7.1f} s   (load before {before}; after {_load()})")
    print(f"  onnx / skops: {times['onnx'] / times['skops']:.2f}")
    a, ra = _pds(folder / "skops")
    b, rb = _pds(folder / "onnx")
    gap = max(float(np.max(np.abs(np.asarray(a[k]["average"]) - np.asarray(b[k]["average"])))) for k in a)
    methods = sorted({r["method"] for r in rb["results"]})
    print(f"  largest 1D PD gap, ONNX against skops: {gap:.2e} (P(income > 50K)); ONNX audit's methods: {methods}")
    out = folder / "compare"
    t = _run([sys.executable, "-m", "autopdp", "compare", "--model", f"trained={skops_path}", "--model",
              f"shipped={onnx_path}", "--data", str(data), "--target", "income", "--formats", "json", "--out",
              str(out), *trust])
    gap_note = autopdp_metadata(out)["comparison_gap"]
    print(f"  compare ({t:.1f} s): {json.dumps(gap_note)[:400]}")


if __name__ == "__main__":
    main()

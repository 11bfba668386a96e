"""The report at width (issue 24): a 200-iteration HistGradientBoostingClassifier on 5,000 rows x 60
features, defaults (60 1D + 1,770 2D PDPs = 1,830).  Prints the stages, the PDF's pages and the
files' sizes: the PDF stays curated (its length follows the findings, not the features), the HTML
holds every PDP.

    python benchmarks/bench_wide_report.py [--out DIR] [--features 60] [--rows 5000]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
import pandas as pd


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--features", type=int, default=60)
    ap.add_argument("--rows", type=int, default=5000)
    args = ap.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="autopdp-wide-")
    from sklearn.datasets import make_classification
    from sklearn.ensemble import HistGradientBoostingClassifier

    import autopdp
    from autopdp.report import write_report

    X, y = make_classification(n_samples=args.rows, n_features=args.features, n_informative=12, n_redundant=6,
                               random_state=0)
    X = pd.DataFrame(X, columns=[f"x{i:02d}" for i in range(args.features)])
    y = pd.Series(y, name="y")
    t0 = time.perf_counter()
    model = HistGradientBoostingClassifier(max_iter=200, random_state=0).fit(X, y)
    train = time.perf_counter() - t0
    a = autopdp.audit(model, X, y)
    written = write_report(a, out)
    total = time.perf_counter() - t0
    from pypdf import PdfReader

    pages = len(PdfReader(os.path.join(out, "report.pdf")).pages)
    print(f"{len(a.results_1d)} 1D + {len(a.results_2d)} 2D PDPs, {len(a.selection)} selected; "
          f"PDF {pages} pages; load {os.getloadavg()[0]:.1f}")
    for k, v in {"train": train, **{k: v for k, v in a.run["timings_s"].items() if k != "total"},
                 **written["timings"]}.items():
        print(f"  {k:<22} {v:7.2f} s")
    print(f"  {'total':<22} {total:7.2f} s")
    for name in sorted(os.listdir(out)):
        print(f"  {name:<16} {os.path.getsize(os.path.join(out, name)) / 1e6:8.2f} MB")


if __name__ == "__main__":
    main()

"""The report's stages beside the audit's own time, for the demo and a wide model (issue 24).

For each case: the audit's time (and its stages), then each report stage: figures, the rest of
the context, HTML, PDF (with its page count, read by pypdf), results.json and the optional ICE
sidecar, with the sizes of the HTML, JSON, PDF and ICE files.  Cases:

  demo  the embedded German Credit demo (autopdp.demo; 20 features, 210 PDPs)
  wide  a HistGradientBoostingClassifier(200) on 5,000 rows x 60 features (1,830 PDPs), built as
        case C of bench_boosted.py; a few minutes on 2 cores

    python benchmarks/bench_report.py [--cases demo,wide]

The machine's load average is printed at the start and the end of each case: timings taken
on a loaded machine are not comparable with timings on an idle one.
"""

from __future__ import annotations

import argparse
import io
import os
import time

import numpy as np
import pandas as pd

import autopdp
from autopdp.report.render import render_html, render_pdf, render_pdf_html
from autopdp.report.writer import report_context


def _load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def demo_case():
    from autopdp.demo import DEMO_CONFIG, demo_model

    model, X, y = demo_model()
    return "demo: German Credit random forest", model, X, y, DEMO_CONFIG


def wide_case(p: int = 60):
    from sklearn.ensemble import HistGradientBoostingClassifier

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(5000, p)), columns=[f"x{i}" for i in range(p)])
    y = ((X.iloc[:, :8].sum(axis=1) + X.x0 * X.x1 + rng.normal(size=5000)) > 0).astype(int).to_numpy()
    model = HistGradientBoostingClassifier(max_iter=200, random_state=0).fit(X, y)
    return f"wide: HistGradientBoostingClassifier(200) on 5,000 rows x {p} features", model, X, y, None


def _mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB"


def run(case) -> None:
    from pypdf import PdfReader

    title, model, X, y, config = case
    print(f"\n== {title} ==  [{_load()} at start]", flush=True)
    t0 = time.perf_counter()
    a = autopdp.audit(model, X, y, config=config)
    t_audit = time.perf_counter() - t0
    inner = ", ".join(f"{k} {v:.1f}" for k, v in a.run["timings_s"].items() if k != "total")
    print(f"audit: {len(a.results_1d)} 1D + {len(a.results_2d)} 2D PDPs in {t_audit:.1f} s ({inner})", flush=True)

    times, sizes = {}, {}
    t0 = time.perf_counter()
    context = report_context(a)
    t_context = time.perf_counter() - t0
    figures = next(float(r["seconds"]) for r in context["timings"] if r["stage"] == "figures")
    times["figures"] = figures
    times["context (without figures)"] = t_context - figures
    t0 = time.perf_counter()
    html = render_html(context)
    times["html"] = time.perf_counter() - t0
    sizes["report.html"] = len(html.encode())
    t0 = time.perf_counter()
    pdf = render_pdf(render_pdf_html(context))  # the curated document, as write_report renders it
    times["pdf"] = time.perf_counter() - t0
    sizes["report.pdf"] = len(pdf)
    pages = len(PdfReader(io.BytesIO(pdf)).pages)
    t0 = time.perf_counter()
    text = a.to_json()
    times["results.json"] = time.perf_counter() - t0
    sizes["results.json"] = len(text.encode())
    t0 = time.perf_counter()
    ice = a.to_ice()
    times["ice.parquet (--ice)"] = time.perf_counter() - t0
    sizes["ice.parquet (--ice)"] = len(ice)

    report_total = sum(times.values())
    print(f"report stages ({report_total:.1f} s in all, beside the audit's {t_audit:.1f} s; end to end "
          f"{(t_audit + report_total) / t_audit:.2f}x the audit):")
    for k, v in times.items():
        print(f"  {k:<28} {v:7.2f} s")
    print(f"PDF pages {pages}; sizes: " + ", ".join(f"{k} {_mb(v)}" for k, v in sizes.items()))
    print(f"[{_load()} at end]", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="demo,wide", help="comma-separated: demo, wide")
    args = ap.parse_args()
    cases = {"demo": demo_case, "wide": wide_case}
    for name in [c.strip() for c in args.cases.split(",") if c.strip()]:
        run(cases[name]())


if __name__ == "__main__":
    main()

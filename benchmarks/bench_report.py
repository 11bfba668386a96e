"""The report's stages beside the audit's own time, for the demo and a wide model (issue 24).

For each case: the audit's time (and its stages), then each report stage: figures, the rest of
the context, HTML, PDF (with its page count, read by pypdf), results.json and the optional ICE
sidecar, with the sizes of the HTML, JSON, PDF and ICE files.  Cases:

  demo  the embedded German Credit demo (autopdp.demo; 20 features, 210 PDPs)
  wide  a HistGradientBoostingClassifier(200) on 5,000 rows x 60 features (1,830 PDPs), built as
        case C of bench_boosted.py; a few minutes on 2 cores

Then the same model and data through the command line, as a user runs it: ``autopdp report`` with its
default formats on a skops model file and a Parquet data file (``autopdp demo`` for the demo), timed to its exit (process start, imports
and loading included), beside the audit's own time measured in the same run.

    python benchmarks/bench_report.py [--cases demo,wide] [--no-cli]

The machine's load average is printed at the start and the end of each case: timings taken
on a loaded machine are not comparable with timings on an idle one.
"""

from __future__ import annotations

import argparse
import io
import os
import re
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


def run(case, cli: bool = False) -> None:
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
    report_total = sum(times.values())  # the default formats (html, pdf, json); the ICE sidecar apart
    t0 = time.perf_counter()
    ice = a.to_ice()
    t_ice = time.perf_counter() - t0
    sizes["ice.parquet (--ice)"] = len(ice)
    print(f"report stages ({report_total:.1f} s in all, beside the audit's {t_audit:.1f} s; end to end "
          f"{(t_audit + report_total) / t_audit:.2f}x the audit):")
    for k, v in times.items():
        print(f"  {k:<28} {v:7.2f} s")
    print(f"  {'(ice.parquet, only with --ice)':<28} {t_ice:7.2f} s")
    print(f"PDF pages {pages}; sizes: " + ", ".join(f"{k} {_mb(v)}" for k, v in sizes.items()))
    if cli:
        _through_the_cli(model, X, y, config, t_audit)
    print(f"[{_load()} at end]", flush=True)


def _through_the_cli(model, X, y, config, t_audit: float) -> None:
    """``autopdp report`` with its defaults on the same model and data (a skops file and a Parquet file, as a
    user gives them), or ``autopdp demo`` for the demo, timed from the command's start to its exit, beside
    the audit's own time above."""
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    import skops.io as sio

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if config is not None:  # the demo: its own command trains its model and audits it with its config
            cmd = [sys.executable, "-m", "autopdp", "demo", "--out", str(tmp / "out")]
            what = "autopdp demo"
        else:
            sio.dump(model, tmp / "model.skops")
            X.assign(target=y).to_parquet(tmp / "data.parquet")
            cmd = [sys.executable, "-m", "autopdp", "report", "--model", str(tmp / "model.skops"), "--data",
                   str(tmp / "data.parquet"), "--target", "target", "--out", str(tmp / "out"),
                   "--trust-model"]  # skops asks before loading HistGradientBoosting's TreePredictor; we wrote it
            what = "autopdp report"
        t0 = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True)
        t_cli = time.perf_counter() - t0
        if done.returncode != 0:
            print(f"CLI failed (exit {done.returncode}): {done.stderr.strip()[-500:]}")
            return
        out = tmp / "out"
        from pypdf import PdfReader

        pages = len(PdfReader(out / "report.pdf").pages)
        html = (out / "report.html").read_text(encoding="utf-8")
        pdps = set(re.findall(r'data-pdp="([^"]+)"', html))
        figures_1d = {f for f in re.findall(r'data-pdp-figure="([^"]+)"', html) if "|" not in f}
        print(f"through the CLI ({what}, default formats): {t_cli:.1f} s end to end = "
              f"{t_cli / t_audit:.2f}x the audit alone above; PDF {pages} pages; results.json "
              f"{_mb((out / 'results.json').stat().st_size)}; report.html {_mb(len(html.encode()))}: "
              f"{len(pdps)} PDPs findable by data-pdp, {len(figures_1d)} 1D figures")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="demo,wide", help="comma-separated: demo, wide")
    ap.add_argument("--no-cli", action="store_true", help="skip the run through the command line")
    args = ap.parse_args()
    cases = {"demo": demo_case, "wide": wide_case}
    for name in [c.strip() for c in args.cases.split(",") if c.strip()]:
        run(cases[name](), cli=not args.no_cli)


if __name__ == "__main__":
    main()

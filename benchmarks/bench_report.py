"""The report's stages beside the audit's own time, for the demo and a wide model (issue 24).

For each case: the audit's time (and its stages), then each report stage: figures, the rest of
the context, HTML, PDF (with its page count, read by pypdf), results.json and the optional ICE
sidecar, with the sizes of the HTML, JSON, PDF and ICE files.  Cases:

  demo  the embedded German Credit demo (autopdp.datasets.demo; 20 features, 210 PDPs)
  wide  a HistGradientBoostingClassifier(200) on 5,000 rows x 60 features (1,830 PDPs), built as
        case C of bench_boosted.py; a few minutes on 2 cores

Then the same model and data through the command line, as a user runs it: ``autopdp report`` with its
default formats on a skops model file and a Parquet data file (``autopdp demo`` for the demo), timed to its
exit, in turn with the audit alone run the same way (a fresh process: the same imports, the inputs loaded
the same way, the audit call, no report), ``--repeat`` times each; the end-to-end ratio is of the fastest
of each.

    python benchmarks/bench_report.py [--cases demo,wide] [--no-cli] [--repeat 2]

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
    from autopdp.datasets.demo import DEMO_CONFIG, demo_model

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


def run(case, cli: bool = False, repeat: int = 2) -> None:
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
        _through_the_cli(model, X, y, config, t_audit, repeat)
    print(f"[{_load()} at end]", flush=True)


#: The audit alone in a fresh process, as the CLI runs it: the same imports, the same inputs loaded the same
#: way, the same audit call; no report.  ``{model}``/``{data}`` are filled in (the demo trains its model).
_AUDIT_ALONE = {
    "demo": ("import autopdp\nfrom autopdp.datasets.demo import DEMO_CONFIG, demo_model\n"
             "model, X, y = demo_model()\nautopdp.audit(model, X, y, config=DEMO_CONFIG)\n"),
    "report": ("import pandas as pd\nimport autopdp\nfrom autopdp.io.loading import load_model\n"
               "model = load_model({model!r})\ndata = pd.read_parquet({data!r})\n"
               "autopdp.audit(model, data.drop(columns='target'), data['target'])\n"),
}


def _timed(cmd) -> tuple[float, object]:
    import subprocess

    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    return time.perf_counter() - t0, done


def _through_the_cli(model, X, y, config, t_audit: float, repeat: int = 2) -> None:
    """``autopdp report`` with its defaults on the same model and data (a skops file and a Parquet file, as a
    user gives them), or ``autopdp demo`` for the demo, timed from the command's start to its exit; beside it,
    the audit alone in a fresh process the same way (imports, inputs loaded, the audit; no report), the two
    run in turn ``repeat`` times.  The ratio is of the fastest of each (load on the machine only adds time)."""
    import sys
    import tempfile
    from pathlib import Path

    import skops.io as sio

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if config is not None:  # the demo: its own command trains its model and audits it with its config
            cmd = [sys.executable, "-m", "autopdp", "demo", "--out", str(tmp / "out")]
            what, alone = "autopdp demo", _AUDIT_ALONE["demo"]
        else:
            sio.dump(model, tmp / "model.skops")
            X.assign(target=y).to_parquet(tmp / "data.parquet")
            cmd = [sys.executable, "-m", "autopdp", "report", "--model", str(tmp / "model.skops"), "--data",
                   str(tmp / "data.parquet"), "--target", "target", "--out", str(tmp / "out")]
            # HistGradientBoosting's TreePredictor is among autopdp's default trusted types (loading.py)
            what = "autopdp report"
            alone = _AUDIT_ALONE["report"].format(model=str(tmp / "model.skops"), data=str(tmp / "data.parquet"))
        cli_times, alone_times = [], []
        for _ in range(max(1, repeat)):
            t, done = _timed([sys.executable, "-c", alone])
            if done.returncode != 0:
                print(f"audit alone failed (exit {done.returncode}): {done.stderr.strip()[-500:]}")
                return
            alone_times.append(t)
            t, done = _timed(cmd)
            if done.returncode != 0:
                print(f"CLI failed (exit {done.returncode}): {done.stderr.strip()[-500:]}")
                return
            cli_times.append(t)
        out = tmp / "out"
        from pypdf import PdfReader

        pages = len(PdfReader(out / "report.pdf").pages)
        html = (out / "report.html").read_text(encoding="utf-8")
        pdps = set(re.findall(r'data-pdp="([^"]+)"', html))
        figures_1d = {f for f in re.findall(r'data-pdp-figure="([^"]+)"', html) if "|" not in f}
        t_cli, t_alone = min(cli_times), min(alone_times)
        print(f"through the CLI ({what}, default formats), {len(cli_times)} runs in turn with the audit alone in a "
              f"fresh process: CLI " + ", ".join(f"{t:.1f}" for t in cli_times) + " s; audit alone "
              + ", ".join(f"{t:.1f}" for t in alone_times) + " s")
        print(f"  end to end {t_cli:.1f} s = {t_cli / t_alone:.2f}x the audit alone ({t_alone:.1f} s, both fastest of "
              f"{len(cli_times)}; {t_cli / t_audit:.2f}x the in-process audit above)")
        print(f"  PDF {pages} pages; results.json {_mb((out / 'results.json').stat().st_size)}; report.html "
              f"{_mb(len(html.encode()))}: {len(pdps)} PDPs findable by data-pdp, {len(figures_1d)} 1D figures")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="demo,wide", help="comma-separated: demo, wide")
    ap.add_argument("--no-cli", action="store_true", help="skip the run through the command line")
    ap.add_argument("--repeat", type=int, default=2, help="CLI and audit-alone runs, in turn (default 2)")
    args = ap.parse_args()
    cases = {"demo": demo_case, "wide": wide_case}
    for name in [c.strip() for c in args.cases.split(",") if c.strip()]:
        run(cases[name](), cli=not args.no_cli, repeat=args.repeat)


if __name__ == "__main__":
    main()

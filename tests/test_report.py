"""The validator report: the demo rendered to HTML/PDF/JSON, checked as a reader would."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import autopdp
from autopdp import AuditConfig, audit
from autopdp.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def demo_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    assert main(["demo", "--out", str(out)]) == 0
    return out


def test_demo_writes_three_files(demo_dir):
    for name in ("report.html", "report.pdf", "results.json"):
        assert (demo_dir / name).stat().st_size > 10_000, name


def test_demo_has_no_failed_score_and_every_score_column_has_values(demo_dir):
    from score_checks import check_no_failed_scores

    check_no_failed_scores(json.loads((demo_dir / "results.json").read_text()))
    assert "Stage failures" not in (demo_dir / "report.html").read_text()


def test_pdf_has_sections_and_sane_page_count(demo_dir):
    from pypdf import PdfReader

    reader = PdfReader(str(demo_dir / "report.pdf"))
    n = len(reader.pages)
    assert 15 <= n <= 80, n
    text = "\n".join(page.extract_text() for page in reader.pages)
    for heading in [
        "Partial dependence validation report", "Executive summary", "Least monotonic", "Least Lipschitz-bounded",
        "Furthest from the data's incidence", "Steepest", "Two-feature partial dependence",
        "Importance and interaction", "Methodology and caveats", "Appendix", "Reproducibility",
    ]:
        assert heading in text, heading
    assert re.search(r"Page 3 of \d+", text)
    assert "German Credit demo" in reader.pages[2].extract_text()  # running header with the model name
    assert "sha256" in reader.pages[0].extract_text()


def test_html_is_self_contained_and_every_figure_has_caption_and_alt(demo_dir):
    html = (demo_dir / "report.html").read_text()
    assert "<script" not in html.lower()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "@import" not in html and "url(http" not in html
    figures = re.findall(r"<figure>(.*?)</figure>", html, flags=re.S)
    assert len(figures) >= 30
    for fig in figures:
        alt = re.search(r'role="img" aria-label="([^"]+)"', fig)
        cap = re.search(r"<figcaption>(.+?)</figcaption>", fig, flags=re.S)
        assert alt and len(alt.group(1)) > 20
        assert cap and len(cap.group(1).strip()) > 5
        assert "<svg" in fig


def test_results_json_holds_every_number(demo_dir):
    data = json.loads((demo_dir / "results.json").read_text())
    assert data["schema"] == "autopdp.Audit/1"
    assert len(data["results"]) == 20 + 190
    assert len(data["scores"]) == 210
    assert {"monotonicity", "lipschitz", "incidence", "slope", "ice_variance", "correlation"} <= set(data["scores"][0])
    assert data["config"]["expected_monotonic"] == {"duration_months": "increasing"}
    assert data["metadata"]["versions"]["autopdp"] == autopdp.__version__
    assert "timings_s" in data["run"]
    assert data["selection"]


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def test_html_renders_in_headless_chromium(demo_dir, tmp_path):
    browser = _chromium()
    if browser is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed; .ci/run installs Debian's chromium package")
        pytest.skip("chromium not installed on this machine (CI installs it)")
    shot = tmp_path / "shot.png"
    cmd = [
        browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
        "--window-size=1200,1600", f"--screenshot={shot}", (demo_dir / "report.html").as_uri(),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert shot.exists(), proc.stderr[-2000:]
    console = [line for line in proc.stderr.splitlines() if "CONSOLE" in line and "report.html" in line]
    assert not console, console
    from PIL import Image

    img = np.asarray(Image.open(shot).convert("L"), dtype=float)
    assert img.std() > 10  # not blank
    assert (img < 128).mean() > 0.005  # there is dark ink on the page


def test_html_and_pdf_escape_text_from_the_data(tmp_path):
    rng = np.random.default_rng(0)
    bad = "<script>alert(1)</script>"
    img = "<img src=x onerror=alert(1)>"
    X = pd.DataFrame({bad: rng.normal(size=200), img: rng.choice(["<b>bold</b>", "plain"], 200), "ok": rng.normal(size=200)})
    y = (X[bad] + rng.normal(size=200) > 0).astype(int)

    def model(d):
        return 1 / (1 + np.exp(-np.asarray(d[bad], dtype=float)))

    a = audit(model, X, y, config=AuditConfig(grid_resolution=6, grid_resolution_2d=4, model_name="<i>m</i>"))
    html = a.to_html(tmp_path / "r.html")
    assert bad not in html and img not in html and "<b>bold</b>" not in html and "<i>m</i>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "<script" not in html.lower()
    a.to_pdf(tmp_path / "r.pdf")
    from pypdf import PdfReader

    text = "\n".join(p.extract_text() for p in PdfReader(str(tmp_path / "r.pdf")).pages)
    assert "<script>alert(1)</script>" in text  # shown as text, never run


def test_figures_drawn_on_worker_processes_equal_those_drawn_here(german, monkeypatch):
    from autopdp.report import build_context, figures

    # draw_all hands figures to other processes and keeps their order
    monkeypatch.setattr(figures, "PARALLEL_FROM", 1)
    pids = figures.draw_all([(os.getpid, (), {})] * 4, n_jobs=2)
    assert len(pids) == 4 and os.getpid() not in pids
    assert figures.draw_all([(str, (i,), {}) for i in range(5)], n_jobs=2) == [str(i) for i in range(5)]
    X, y = german

    def model(d):
        return 1 / (1 + np.exp(-(d["duration_months"].to_numpy() / 24 - d["age"].to_numpy() / 40)))

    a = audit(model, X.iloc[:300], y.iloc[:300],
              config=AuditConfig(features=("duration_months", "age", "credit_amount"), grid_resolution=6,
                                 grid_resolution_2d=4))
    together = build_context(a)
    monkeypatch.setattr(figures, "PARALLEL_FROM", 10**9)  # every figure drawn here, one by one
    one_by_one = build_context(a)
    together.pop("timings"), one_by_one.pop("timings")
    assert together == one_by_one
    assert together["small_multiples"][0]["svg"].startswith("<svg") and together["importance_svg"].startswith("<svg")


def test_notebook_view(german):
    X, y = german
    a = audit(lambda d: d["duration_months"].to_numpy() / 72.0, X.iloc[:200], y.iloc[:200],
              config=AuditConfig(features=("duration_months", "age"), grid_resolution=5, pairs=False))
    html = a._repr_html_()
    assert "autopdp audit" in html and "duration_months" in html




def test_pdf_figures_as_images_give_the_same_pages_as_inline_svg(german, tmp_path):
    """The PDF hands WeasyPrint each figure as an <img> of its SVG (quicker than inline SVG):
    the same pages, with the same text (the figures' labels included), as the inline SVG."""
    import io

    from pypdf import PdfReader
    from weasyprint import HTML

    from autopdp.report.render import render_pdf, svg_figures_as_images

    X, y = german
    X = X[["duration_months", "credit_amount", "age", "checking_status"]]
    from sklearn.ensemble import RandomForestClassifier

    model = RandomForestClassifier(n_estimators=20, random_state=0).fit(pd.get_dummies(X, dtype=float), y)

    def predict(d):
        return model.predict_proba(pd.get_dummies(d, dtype=float).reindex(columns=model.feature_names_in_,
                                                                            fill_value=0.0))[:, 1]

    a = audit(predict, X, y, config=AuditConfig(grid_resolution=6, grid_resolution_2d=4, top_k=1))
    html = a.to_html(tmp_path / "r.html")
    n_svg = html.count("<svg")
    converted = svg_figures_as_images(html)
    assert n_svg >= 5 and "<svg" not in converted
    assert converted.count('src="data:image/svg+xml;base64,') == n_svg
    pages = {}
    for name, pdf in (("images", render_pdf(html)), ("inline", HTML(string=html).write_pdf())):
        pages[name] = [p.extract_text() for p in PdfReader(io.BytesIO(pdf)).pages]
    assert len(pages["images"]) == len(pages["inline"]) >= 5
    assert pages["images"] == pages["inline"]
    assert any("duration_months" in p and "PD" in p for p in pages["images"])

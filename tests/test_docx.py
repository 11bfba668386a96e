"""The Word report (--formats docx), the organisation's .docx template and HTML templates (--template-dir)."""

import hashlib
import html as html_lib
import io
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.linear_model import LogisticRegression

import autopdp.io.loading as loading_module
from autopdp import AuditConfig, ReportOptions
from autopdp import audit
from autopdp.cli import main
from cli_inputs import write_small_cli_inputs  # noqa: E402

docx = pytest.importorskip("docx")


def _paragraphs(document):
    return [(p.style.name, p.text) for p in document.paragraphs]


def _all_text(document):
    parts = [p.text for p in document.paragraphs]
    for t in document.tables:
        for row in t.rows:
            parts.extend(c.text for c in row.cells)
    return "\n".join(parts)


# ------------------------------------------------------------------ the demo as Word, beside its HTML and JSON
@pytest.fixture(scope="module")
def demo_docx(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo-docx")
    assert main(["demo", "--out", str(out), "--formats", "json,html,docx"]) == 0
    return out


def test_demo_docx_is_in_the_set_with_its_sha256(demo_docx):
    manifest = json.loads((demo_docx / "manifest.json").read_text())
    digest = hashlib.sha256((demo_docx / "report.docx").read_bytes()).hexdigest()
    assert manifest["files"]["report.docx"] == digest
    assert not (demo_docx / "report.pdf").exists()


def test_demo_docx_headings_match_the_report(demo_docx):
    d = docx.Document(str(demo_docx / "report.docx"))
    paras = _paragraphs(d)
    h1 = [t for s, t in paras if s == "Heading 1"]
    h2 = [t for s, t in paras if s == "Heading 2"]
    assert [t for s, t in paras if s == "Title"] == ["Partial dependence validation report"]
    # the curated PDF's chapters (report.pdf.j2), in its order
    order = ["Contents", "Executive summary", "Findings, one page each", "Two-feature partial dependence",
             "Importance and interaction", "Rankings: top 10 of each criterion", "Methodology and caveats", "Appendix"]
    assert [t for t in h1 if t in order] == order
    for heading in ["Review and sign-off", "Findings", "Reproducibility", "Assumptions and caveats"]:
        assert heading in h2, heading
    assert any(t.startswith("Finding 1: ") for t in h2)
    assert any(re.match(r"Least monotonic \(monotonicity, 1D: top \d+ of \d+\)", t) for t in h2)
    # the HTML's every-score table and every-PD gallery are the complete record, not the curated document's
    assert not any(t in ("All scores", "Every 1D partial dependence") for t in h2)
    # the built-in heading styles carry the outline level the navigation pane and TOC use
    assert "TOC" in d.element.body.xml


def test_demo_docx_finding_sentences_are_the_htmls_word_for_word(demo_docx):
    html = (demo_docx / "report.html").read_text()
    results = json.loads((demo_docx / "results.json").read_text())
    sentences = [html_lib.unescape(s).strip() for s in re.findall(
        r'<div class="finding"[^>]*><span class="badge">[^<]*</span>(.*?)<div class="why">', html, flags=re.S)]
    assert len(sentences) == len(results["selection"]) > 0
    d = docx.Document(str(demo_docx / "report.docx"))
    texts = [t for _, t in _paragraphs(d)]
    for sel, sentence in zip(results["selection"], sentences):
        assert any(t.endswith(sentence) and t.startswith(f"[{sel['kind']}]") for t in texts), sentence
        assert " × ".join(sel["features"]) in sentence


def test_demo_docx_tables_figures_and_alt_text(demo_docx):
    d = docx.Document(str(demo_docx / "report.docx"))
    headers = [[c.text for c in t.rows[0].cells] for t in d.tables]
    rankings = [t for t, h in zip(d.tables, headers) if h[:3] == ["rank", "PDP", "score"]]
    assert len(rankings) >= 8  # the top rows of every criterion, 1D and 2D
    assert all(len(t.rows) <= 1 + 10 for t in rankings)
    assert ["setting", "value"] in headers and ["library", "version"] in headers
    assert sum(h == ["selected by", "evidence"] for h in headers) >= 3  # one per 1D finding page (the demo has 4 since the slope's bar is the importance's)
    shapes = d.inline_shapes
    assert len(shapes) >= 10
    for s in shapes:
        assert len(s._inline.docPr.get("descr")) > 20  # alt text
        assert 0.5 < s.width.inches <= 7.0
    # a print-resolution PNG: ~200 dpi at the figure's size on the page
    blob = shapes[0]._inline.graphic.graphicData.pic.blipFill.blip.embed
    png = d.part.related_parts[blob].blob
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    px = int.from_bytes(png[16:20], "big")
    assert px / shapes[0].width.inches >= 190
    captions = [t for s, t in _paragraphs(d) if s == "Caption"]
    assert len(captions) == len(shapes) and all(len(c) > 10 for c in captions)
    # each finding page's figure is the report's figure of that finding, captioned by what it draws (its alt
    # text in the HTML): the sentence and the evidence stand above it on the page, not again under it
    html = html_lib.unescape((demo_docx / "report.html").read_text())
    html_alts = {" ".join(a.split()) for a in re.findall(r'aria-label="(Partial dependence of .*?)"', html, flags=re.S)}
    finding_captions = [" ".join(c.split()) for c in captions if re.match(r"(Figure \d*\s*[.:] )?Partial dependence of ", c)]
    assert len(finding_captions) >= 3
    assert all(any(c.endswith(a) for a in html_alts) for c in finding_captions)
    assert not any(re.match(r"(Figure \d*\s*[.:] )?#\d+ — ", c) for c in captions)


def test_demo_docx_provenance(demo_docx):
    d = docx.Document(str(demo_docx / "report.docx"))
    results = json.loads((demo_docx / "results.json").read_text())
    prov = results["metadata"]["provenance"]
    text = _all_text(d)
    assert prov["data_content_sha256"] in text
    assert f"Random seed: {results['metadata']['random_state']}" in text
    assert "Target column: bad_credit; positive class: 1" in text
    assert "python-docx" in text and "scikit-learn" in text  # library versions


# ------------------------------------------------------------------ a small audit for the template tests
@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(3)
    X = pd.DataFrame({"a": rng.normal(size=300), "b": rng.uniform(0, 5, 300), "c": rng.normal(size=300)})
    y = (1.5 * X.a + 0.6 * X.b + rng.normal(size=300) > 1.5).astype(int)
    cfg = AuditConfig(grid_resolution=8, grid_resolution_2d=4, top_k=1, noise_draws=50, max_noise_draws=100)
    cover = ReportOptions(model_name="scorecard v2", reviewer="A. Validator",
                          sign_off={"name": "B. Approver", "role": "Head of Model Risk", "date": "2025-03-01",
                                    "decision": "approve with conditions", "conditions": "Monitor a monthly."})
    return audit(LogisticRegression().fit(X, y), X, y, config=cfg, report=cover)


def _org_template(path, placeholder=True):
    from docx.shared import Pt, RGBColor

    d = docx.Document()
    h1 = d.styles["Heading 1"]
    h1.font.name = "Courier New"
    h1.font.size = Pt(21)
    h1.font.color.rgb = RGBColor(0x8B, 0x00, 0x00)
    d.sections[0].header.paragraphs[0].text = "CONFIDENTIAL - ACME Bank internal"
    d.sections[0].footer.paragraphs[0].text = "ACME Model Risk Management"
    d.add_paragraph("ACME preface written by the validator.")
    if placeholder:
        d.add_paragraph("{{autopdp}}")
        d.add_paragraph("ACME closing page.")
    d.save(str(path))
    return path


def test_sign_off_table(small, tmp_path):
    d = docx.Document(__import__("io").BytesIO(small.to_docx(tmp_path / "r.docx")))
    table = next(t for t in d.tables if t.rows[0].cells[0].text == "Reviewed by (validator)")
    rows = {r.cells[0].text: r.cells[1].text for r in table.rows}
    assert rows["Reviewed by (validator)"] == "A. Validator"
    assert rows["Signed off by"] == "B. Approver"
    assert rows["Role"] == "Head of Model Risk"
    assert rows["Date"] == "2025-03-01"
    assert "☒ Approve with conditions" in rows["Decision"] and "☐ Reject" in rows["Decision"]
    assert rows["Conditions"] == "Monitor a monthly."
    assert "Signature" in rows and rows["Signature"] == ""
    assert (tmp_path / "r.docx").read_bytes()[:2] == b"PK"


def test_docx_template_styles_header_and_placeholder_carry_over(small, tmp_path):
    template = _org_template(tmp_path / "acme.docx")
    d = docx.Document(__import__("io").BytesIO(small.to_docx(template=template)))
    assert d.sections[0].header.paragraphs[0].text == "CONFIDENTIAL - ACME Bank internal"
    assert d.sections[0].footer.paragraphs[0].text == "ACME Model Risk Management"
    h1 = d.styles["Heading 1"]
    assert h1.font.name == "Courier New" and h1.font.color.rgb == docx.shared.RGBColor(0x8B, 0x00, 0x00)
    texts = [t for _, t in _paragraphs(d)]
    assert "{{autopdp}}" not in texts
    preface, closing = texts.index("ACME preface written by the validator."), texts.index("ACME closing page.")
    summary = texts.index("Executive summary")
    assert preface < texts.index("Partial dependence validation report") < summary < closing
    assert texts.index("Appendix") < closing


def test_docx_template_without_placeholder_gets_the_report_at_the_end(small, tmp_path):
    template = _org_template(tmp_path / "plain.docx", placeholder=False)
    d = docx.Document(__import__("io").BytesIO(small.to_docx(template=template)))
    texts = [t for _, t in _paragraphs(d)]
    assert texts.index("ACME preface written by the validator.") < texts.index("Executive summary")
    assert d.sections[0].header.paragraphs[0].text == "CONFIDENTIAL - ACME Bank internal"


def test_dotx_template_is_accepted(small, tmp_path):
    import zipfile

    src = _org_template(tmp_path / "acme.docx")
    dotx = tmp_path / "acme.dotx"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dotx, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename == "[Content_Types].xml":
                data = data.replace(b"document.main+xml", b"template.main+xml")
            zout.writestr(item, data)
    d = docx.Document(__import__("io").BytesIO(small.to_docx(template=dotx)))
    assert d.sections[0].header.paragraphs[0].text == "CONFIDENTIAL - ACME Bank internal"


def test_docx_opens_in_libreoffice(small, tmp_path):
    soffice = shutil.which("soffice") or shutil.which("libreoffice")
    if soffice is None:
        import os

        if os.environ.get("CI"):
            pytest.fail("LibreOffice is not installed; .ci/run installs Debian's libreoffice-writer package")
        pytest.skip("LibreOffice not installed on this machine (CI installs libreoffice-writer)")
    from pypdf import PdfReader

    path = tmp_path / "report.docx"
    small.to_docx(path, template=_org_template(tmp_path / "acme.docx"))
    done = subprocess.run([soffice, f"-env:UserInstallation=file://{tmp_path}/lo-profile", "--headless",
                           "--convert-to", "pdf", "--outdir", str(tmp_path), str(path)],
                          capture_output=True, text=True, timeout=240)
    assert (tmp_path / "report.pdf").exists(), done.stderr
    reader = PdfReader(str(tmp_path / "report.pdf"))
    text = "\n".join(p.extract_text() for p in reader.pages)
    flat = " ".join(text.split())
    for heading in ["Partial dependence validation report", "Executive summary", "Review and sign-off",
                    "Methodology and caveats", "Appendix", "CONFIDENTIAL - ACME Bank internal"]:
        assert heading in flat, heading
    assert len(reader.pages) >= 5


# ------------------------------------------------------------------ HTML templates
def test_html_template_extending_one_block_keeps_the_rest(small, tmp_path):
    folder = tmp_path / "org"
    folder.mkdir()
    (folder / "report.html.j2").write_text(
        '{% extends "autopdp/report.html.j2" %}\n'
        '{% block cover %}<div class="org-banner">ACME Bank — Model Risk — {{ cover.model_name }}</div>'
        '{{ super() }}{% endblock %}\n'
        '{% block styles %}{{ super() }} .org-banner { color: #8b0000; }{% endblock %}\n')
    from autopdp.report import render_html
    from autopdp.report.writer import report_context

    context = report_context(small)
    default = render_html(context)
    html = render_html(context, template_dir=folder)
    assert "ACME Bank" in small.to_html(template_dir=folder)
    assert '<div class="org-banner">ACME Bank — Model Risk — scorecard v2</div>' in html
    assert ".org-banner { color: #8b0000; }" in html
    assert html.replace(
        '<div class="org-banner">ACME Bank — Model Risk — scorecard v2</div>', "").replace(
        " .org-banner { color: #8b0000; }", "") == default
    for part in ("Executive summary", "Methodology and caveats", "Appendix", "<svg"):
        assert part in html


def test_html_template_error_is_one_line_naming_the_template(small, tmp_path):
    from autopdp.errors import InputError

    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "report.html.j2").write_text('{% extends "autopdp/report.html.j2" %}\n{% block cover %}{{ oops(}}{% endblock %}')
    with pytest.raises(InputError, match=r"template 'report.html.j2' in --template-dir .* line 2"):
        small.to_html(template_dir=folder)


# ------------------------------------------------------------------ the CLI: bad templates, gate and compare
@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("docx-cli")
    X, y = write_small_cli_inputs(d, "grid_resolution = 6\ngrid_resolution_2d = 4\ntop_k = 1\nnoise_draws = 50\n"
                                     "max_noise_draws = 100\n")
    sio.dump(LogisticRegression(C=0.01).fit(X, y), d / "other.skops")
    (d / "not-a-docx.docx").write_text("plain text, not a Word file")
    return d


def _args(files, out, *extra, formats="json,docx"):
    return ["report", "--model", str(files / "model.skops"), "--data", str(files / "data.csv"), "--target", "target",
            "--out", str(out), "--formats", formats, "--config", str(files / "small.toml"), *extra]


@pytest.mark.parametrize("extra, formats, name, message", [
    (["--docx-template", "{d}/missing.docx"], "json,docx", "missing.docx", "does not exist"),
    (["--docx-template", "{d}/not-a-docx.docx"], "json,docx", "not-a-docx.docx", "is not a Word .docx file"),
    (["--docx-template", "{d}"], "json,docx", "docx-cli", "is not a file"),
    (["--template-dir", "{d}/no-such-folder"], "json,html", "no-such-folder", "does not exist"),
    (["--docx-template", "{d}/missing.docx"], "json,html", "--docx-template", "add docx to --formats"),
])
def test_bad_template_is_exit_2_with_one_line_before_any_work(files, tmp_path, capsys, monkeypatch, extra, formats,
                                                              name, message):
    def forbidden(*args, **kwargs):
        raise AssertionError("work started before the templates were checked")

    monkeypatch.setattr(loading_module, "load_model", forbidden)
    extra = [e.replace("{d}", str(files)) for e in extra]
    assert main(_args(files, tmp_path / "out", *extra, formats=formats)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("autopdp: error: ")
    assert name in err and message in err


def test_docx_template_flag_and_provenance_config_key_refused(files, tmp_path, capsys):
    template = _org_template(tmp_path / "acme.docx")
    # a template is code: a --config file cannot choose it (exit 2 naming the key and the flag)
    (tmp_path / "cfg.toml").write_text((files / "small.toml").read_text() + f'docx_template = "{template}"\n')
    out = tmp_path / "out"
    args = _args(files, out)
    args[args.index("--config") + 1] = str(tmp_path / "cfg.toml")
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "'docx_template'" in err and "--docx-template" in err and not out.exists()
    assert main(_args(files, out, "--docx-template", str(template))) == 0
    d = docx.Document(str(out / "report.docx"))
    assert d.sections[0].header.paragraphs[0].text == "CONFIDENTIAL - ACME Bank internal"
    results = json.loads((out / "results.json").read_text())
    inputs = results["metadata"]["provenance"]["inputs"]
    assert inputs["docx template"]["sha256"] == hashlib.sha256(template.read_bytes()).hexdigest()
    files_ = json.loads((out / "manifest.json").read_text())["files"]
    assert sorted(files_) == ["report.docx", "results.json"]
    assert files_["report.docx"] == hashlib.sha256((out / "report.docx").read_bytes()).hexdigest()


def test_compare_and_gate_write_docx(files, tmp_path):
    out = tmp_path / "cmp"
    assert main(["compare", "--model", f"current={files / 'model.skops'}", "--model", f"cand={files / 'other.skops'}",
                 "--data", str(files / "data.csv"), "--target", "target", "--out", str(out), "--formats", "docx",
                 "--config", str(files / "small.toml")]) == 0
    d = docx.Document(str(out / "report.docx"))
    assert "Model comparison" in [t for s, t in _paragraphs(d) if s == "Heading 1"]
    (tmp_path / "policy.toml").write_text('[features.a]\nmonotonic = "increasing"\n')
    out = tmp_path / "gate"
    code = main(["gate", "--policy", str(tmp_path / "policy.toml"), "--model", str(files / "model.skops"),
                 "--data", str(files / "data.csv"), "--target", "target", "--out", str(out), "--formats", "json,docx",
                 "--config", str(files / "small.toml")])
    assert code in (0, 1)
    d = docx.Document(str(out / "report.docx"))
    assert any(t.startswith("Pre-deployment gate: ") for s, t in _paragraphs(d) if s == "Heading 1")
    assert {"gate.json", "gate.xml", "report.docx", "results.json", "manifest.json"} <= {p.name for p in out.iterdir()}


def test_failed_docx_leaves_the_earlier_set_whole(files, tmp_path, monkeypatch):
    import autopdp.report.word as word

    out = tmp_path / "out"
    assert main(_args(files, out)) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def broken(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(word, "render_docx", broken)
    assert main(_args(files, out, "--title", "second run")) == 3
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_report_with_every_format_the_org_docx_and_the_org_html_block(files, tmp_path):
    """The issue's command: --formats json,html,pdf,docx --docx-template org.docx --template-dir tpl/."""
    org = _org_template(tmp_path / "org.docx")
    tpl = tmp_path / "tpl"
    tpl.mkdir()
    (tpl / "report.html.j2").write_text(
        '{% extends "autopdp/report.html.j2" %}\n'
        '{% block cover %}<div class="org-banner">ACME Bank model risk</div>{{ super() }}{% endblock %}\n')
    out = tmp_path / "out"
    assert main(_args(files, out, "--docx-template", str(org), "--template-dir", str(tpl),
                      formats="json,html,pdf,docx")) == 0
    html = (out / "report.html").read_text()
    assert 'class="org-banner">ACME Bank model risk' in html and 'id="explore"' in html  # the rest is kept
    d = docx.Document(str(out / "report.docx"))
    assert d.sections[0].header.paragraphs[0].text == "CONFIDENTIAL - ACME Bank internal"
    assert d.styles["Heading 1"].font.name == "Courier New"
    sentences = [html_lib.unescape(s).strip() for s in re.findall(
        r'<div class="finding"[^>]*><span class="badge">[^<]*</span>(.*?)<div class="why">', html, flags=re.S)]
    texts = [t for _, t in _paragraphs(d)]
    assert sentences and all(any(t.endswith(s) for t in texts) for s in sentences)
    results = json.loads((out / "results.json").read_text())
    assert [s["sentence"] for s in results["selection"]] == sentences
    text = _all_text(d)
    for f in results["metadata"]["provenance"]["inputs"].values():
        assert f["sha256"] in text
    manifest = json.loads((out / "manifest.json").read_text())
    assert {"report.docx", "report.pdf", "report.html", "results.json"} <= set(manifest["files"])


def test_one_overridden_block_changes_the_html_the_pdf_and_the_word_methodology(small, tmp_path):
    """An organisation's report.html.j2 overriding cover, appendix and methodology: the HTML record, the PDF (its
    printed text) and the Word report's methodology all carry the change; a report.pdf.j2 changes the PDF alone."""
    from pypdf import PdfReader

    folder = tmp_path / "org"
    folder.mkdir()
    (folder / "report.html.j2").write_text(
        '{% extends "autopdp/report.html.j2" %}\n'
        '{% block cover %}<p class="classification">SECRET-MARKING-42</p>{{ super() }}{% endblock %}\n'
        '{% block appendix %}{{ super() }}<section class="chapter"><h2>Checklist-77</h2></section>{% endblock %}\n'
        '{% block methodology %}<section class="chapter"><h2>House methodology 9</h2><p>Per MRM-07.</p></section>'
        '{{ super() }}{% endblock %}\n')
    html = small.to_html(template_dir=folder)
    pdf_text = "".join(p.extract_text() for p in PdfReader(io.BytesIO(small.to_pdf(template_dir=folder))).pages)
    word = [p.text for p in docx.Document(io.BytesIO(small.to_docx(template_dir=folder))).paragraphs]
    for text in ("SECRET-MARKING-42", "Checklist-77", "House methodology 9"):
        assert text in html and text in pdf_text, text
    assert "House methodology 9" in word and "Per MRM-07." in word and "Methodology and caveats" in word
    assert not any("SECRET-MARKING-42" in t for t in word)  # the Word cover is python-docx's; its marking: --docx-template
    # the built-in PDF is unchanged without the folder, and a report.pdf.j2 beside it changes the PDF only
    assert "SECRET-MARKING-42" not in "".join(p.extract_text() for p in PdfReader(io.BytesIO(small.to_pdf())).pages)
    both = shutil.copytree(folder, tmp_path / "org-pdf")
    (both / "report.pdf.j2").write_text('{% extends "autopdp/report.pdf.j2" %}\n'
                                        '{% block cover %}<p>PAPER-ONLY-5</p>{{ super() }}{% endblock %}\n')
    paper = "".join(p.extract_text() for p in PdfReader(io.BytesIO(small.to_pdf(template_dir=both))).pages)
    assert "PAPER-ONLY-5" in paper and "SECRET-MARKING-42" in paper and "Checklist-77" in paper
    assert "PAPER-ONLY-5" not in small.to_html(template_dir=both)


def test_a_template_that_renders_the_whole_page_leaves_the_word_methodology_built_in(small, tmp_path):
    folder = tmp_path / "whole"
    folder.mkdir()
    (folder / "report.html.j2").write_text("<html><body><h1>{{ cover.model_name }} only</h1></body></html>\n")
    assert "scorecard v2 only" in small.to_html(template_dir=folder)
    word = [p.text for p in docx.Document(io.BytesIO(small.to_docx(template_dir=folder))).paragraphs]
    assert "Methodology and caveats" in word and "scorecard v2 only" not in word

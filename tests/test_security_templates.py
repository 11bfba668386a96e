"""Issue 34, templates: no data file selects a template, every template renders sandboxed, the .docx
template is size-checked and loses its external links, and names from the data never break gate.xml or
the Word document.  Each proof of concept of the issue is a test that now fails safe."""

import io
import json
import re
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.linear_model import LogisticRegression

import autopdp.loading as loading_module
from autopdp import Audit, AuditConfig, audit
from autopdp.cli import main
from autopdp.errors import InputError
from cli_inputs import write_small_cli_inputs  # noqa: E402

docx = pytest.importorskip("docx")

SMALL = "grid_resolution = 6\ngrid_resolution_2d = 4\ntop_k = 1\nnoise_draws = 50\nmax_noise_draws = 100\n"


def _poc_template(folder: Path, marker: Path, expression=None, names=("report.html.j2", "report.pdf.j2")) -> Path:
    """A template folder whose templates try to run ``touch MARKER`` (the issue's PoC), line 3."""
    folder.mkdir(parents=True, exist_ok=True)
    expression = expression or f"cycler.__init__.__globals__.os.popen('touch {marker}').read()"
    for name in names:
        (folder / name).write_text(
            '{% extends "autopdp/' + name + '" %}\n'
            "{% block cover %}\n"
            "{{ " + expression + " }}{{ super() }}{% endblock %}\n")
    return folder


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("sec-templates")
    write_small_cli_inputs(d, SMALL)
    return d


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(5)
    X = pd.DataFrame({"a": rng.normal(size=200), "b": rng.uniform(0, 5, 200)})
    y = (X.a + 0.4 * X.b + rng.normal(size=200) > 1).astype(int)
    cfg = AuditConfig(grid_resolution=6, grid_resolution_2d=4, top_k=1, noise_draws=50, max_noise_draws=100)
    return audit(LogisticRegression().fit(X, y), X, y, config=cfg)


def _report(files, out, *extra, formats="json,html", config=None):
    return ["report", "--model", str(files / "model.skops"), "--data", str(files / "data.csv"), "--target", "target",
            "--out", str(out), "--formats", formats, "--config", str(config or files / "small.toml"), *extra]


def _no_work(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("work started before the input was refused")

    monkeypatch.setattr(loading_module, "load_model", forbidden)


# ------------------------------------------------------------------ no data file selects a template
@pytest.mark.parametrize("key, flag", [("template_dir", "--template-dir"), ("docx_template", "--docx-template")])
def test_config_file_cannot_choose_a_template(files, tmp_path, capsys, monkeypatch, key, flag):
    marker = tmp_path / "MARKER"
    tpl = _poc_template(tmp_path / "tpl", marker)
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(SMALL + f'{key} = "{tpl if key == "template_dir" else files / "data.csv"}"\n')
    _no_work(monkeypatch)
    assert main(_report(files, tmp_path / "out", config=cfg, formats="json,html,docx")) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"config key '{key}'" in err and flag in err
    assert not marker.exists() and not (tmp_path / "out").exists()
    # and in Python: the config is refused, naming the argument to use
    with pytest.raises(InputError, match=rf"config key '{key}'.*Python: (template_dir|template)="):
        AuditConfig.from_dict({key: str(tpl)})


@pytest.mark.parametrize("key", ["template_dir", "docx_template"])
def test_policy_audit_table_cannot_choose_a_template(files, tmp_path, capsys, monkeypatch, key):
    """The issue's PoC: `autopdp gate --policy policy.toml` ran the template's shell command and exited 0."""
    marker = tmp_path / "MARKER"
    tpl = _poc_template(tmp_path / "tpl", marker)
    policy = tmp_path / "policy.toml"
    policy.write_text(f'[features.a]\nmonotonic = "increasing"\n\n[audit]\n{key} = "{tpl}"\n')
    _no_work(monkeypatch)
    code = main(["gate", "--policy", str(policy), "--model", str(files / "model.skops"), "--data",
                 str(files / "data.csv"), "--target", "target", "--out", str(tmp_path / "out"), "--formats",
                 "json,html,docx", "--config", str(files / "small.toml")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and f"policy key 'audit.{key}'" in err and len(err.splitlines()) == 1
    assert not marker.exists() and not (tmp_path / "out").exists()


def test_results_json_config_block_chooses_nothing(small, tmp_path):
    """A results.json whose config names a code-running template folder and, as docx_template, another local
    file: it loads (older records carry the keys), and neither is used by to_html / to_docx."""
    marker = tmp_path / "MARKER"
    tpl = _poc_template(tmp_path / "tpl", marker)
    secret = tmp_path / "secret.docx"
    d = docx.Document()
    d.add_paragraph("SECRET-TOKEN-4711")
    d.save(str(secret))
    record = json.loads(small.to_json())
    record["config"]["template_dir"] = str(tpl)
    record["config"]["docx_template"] = str(secret)
    path = tmp_path / "results.json"
    path.write_text(json.dumps(record))
    loaded = Audit.from_json(path)
    assert "template_dir" not in loaded.config.to_dict() and "docx_template" not in loaded.config.to_dict()
    html = loaded.to_html()
    assert not marker.exists() and "Executive summary" in html
    word = docx.Document(io.BytesIO(loaded.to_docx()))
    assert "SECRET-TOKEN-4711" not in "\n".join(p.text for p in word.paragraphs)
    assert "SECRET-TOKEN-4711" not in json.dumps(json.loads(loaded.to_json()))
    assert not marker.exists()


# ------------------------------------------------------------------ every template sandboxed
def test_builtin_templates_render_in_the_sandbox(small):
    from jinja2.sandbox import SandboxedEnvironment

    from autopdp.report.render import environment, render_pdf, render_pdf_html
    from autopdp.report.writer import report_context

    assert isinstance(environment(), SandboxedEnvironment) and environment().autoescape("report.html.j2")
    assert "Executive summary" in small.to_html()
    pdf = render_pdf(render_pdf_html(report_context(small, formats=("pdf",))))
    assert pdf[:5] == b"%PDF-"


@pytest.mark.parametrize("expression", [
    "cycler.__init__.__globals__.os.popen('touch {m}').read()",
    "''.__class__.__mro__[1].__subclasses__()",
    "self._TemplateReference__context",
    "lipsum.__globals__['os'].popen('touch {m}').read()",
    "joiner.__init__.__globals__.__builtins__['__import__']('os').system('touch {m}')",
    "'{0.__init__.__globals__}'.format(cycler)",
])
def test_template_reaching_for_python_internals_is_refused(small, tmp_path, expression, monkeypatch):
    """Refused twice over: the folder's check before any work (a name starting with '_' in the template's code),
    and, for what the check cannot see (a format string), the sandbox when the template renders."""
    import autopdp.report.render as render

    marker = tmp_path / "MARKER"
    expression = expression.replace("{m}", str(marker))
    html = _poc_template(tmp_path / "html", marker, expression, names=("report.html.j2",))
    pdf = _poc_template(tmp_path / "pdf", marker, expression, names=("report.pdf.j2",))
    internals = r", line 3 reaches for Python internals"
    with pytest.raises(InputError, match=r"template 'report.html.j2' in --template-dir .*" + internals):
        small.to_html(template_dir=html)
    with pytest.raises(InputError, match=r"template 'report.pdf.j2' in --template-dir .*" + internals):
        small.to_pdf(template_dir=pdf)
    # the sandbox alone (the check before the work switched off) refuses them as well
    monkeypatch.setattr(render, "_precheck_templates", lambda *a: None)
    with pytest.raises(InputError, match=r"template 'report.html.j2' in --template-dir .*" + internals
                                         + r", which the sandbox refuses \(access to attribute"):
        small.to_html(template_dir=html)
    assert not marker.exists()


@pytest.mark.parametrize("expression, message", [
    ("'x' * 10**10", "a repetition to 10,000,000,000 items is over the limit"),
    ("[0] * 10**9", "a repetition to 1,000,000,000 items is over the limit"),
    ("7 ** 100000", "has over 4096 bits"),
    ("2.0 ** 100000", "OverflowError"),
])
def test_template_cannot_allocate_without_bound(small, tmp_path, expression, message):
    tpl = _poc_template(tmp_path / "tpl", tmp_path / "MARKER", expression)
    with pytest.raises(InputError, match=r"template 'report.html.j2' in --template-dir .*, line 3 .*"
                                         + re.escape(message)):
        small.to_html(template_dir=tpl)


def test_cli_template_poc_is_exit_2_naming_template_and_line(files, tmp_path, capsys, monkeypatch):
    """The issue's PoC through the command line: no MARKER, exit 2 before any work, one line naming the template
    and line."""
    marker = tmp_path / "MARKER"
    tpl = _poc_template(tmp_path / "tpl", marker)
    _no_work(monkeypatch)
    assert main(_report(files, tmp_path / "out", "--template-dir", str(tpl))) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "template 'report.html.j2'" in err and "line 3" in err
    assert "Python internals" in err and not marker.exists() and not (tmp_path / "out").exists()


def test_cli_template_syntax_error_is_exit_2_before_any_work(files, tmp_path, capsys, monkeypatch):
    tpl = tmp_path / "tpl"
    tpl.mkdir()
    (tpl / "report.css").write_text("body { color: red; }\n{% if %}\n")
    _no_work(monkeypatch)
    assert main(_report(files, tmp_path / "out", "--template-dir", str(tpl))) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "template 'report.css'" in err and "line 2" in err


def test_word_report_methodology_renders_sandboxed(small, monkeypatch):
    """The Word report's methodology comes from the built-in template, through the same sandboxed environment."""
    from jinja2.sandbox import SandboxedEnvironment

    import autopdp.report.render as render

    seen = []
    real = render.environment

    def spy(*args, **kwargs):
        env = real(*args, **kwargs)
        seen.append(env)
        return env

    monkeypatch.setattr(render, "environment", spy)
    word = docx.Document(io.BytesIO(small.to_docx()))
    assert seen and all(isinstance(e, SandboxedEnvironment) for e in seen)
    assert "Methodology and caveats" in [p.text for p in word.paragraphs]


# ------------------------------------------------------------------ the .docx template: size, external links
def test_docx_template_with_a_300_mb_part_is_refused_before_inflating(files, tmp_path, capsys, monkeypatch):
    """The issue's PoC: a few hundred KB .docx with a 300 MB part.  Refused from the zip's directory (no part
    is opened), exit 2 naming the part and the limit, before any work."""
    bomb = tmp_path / "bomb.docx"
    base = io.BytesIO()
    docx.Document().save(base)
    chunk = b"\0" * (1 << 20)
    with zipfile.ZipFile(base) as src, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info.filename))
        with dst.open("word/media/huge.bin", "w") as part:
            for _ in range(300):
                part.write(chunk)
    assert bomb.stat().st_size < 1024 * 1024
    opened = []
    real_open = zipfile.ZipFile.open
    monkeypatch.setattr(zipfile.ZipFile, "open", lambda self, name, *a, **k: (
        opened.append(getattr(name, "filename", name)), real_open(self, name, *a, **k))[1])
    _no_work(monkeypatch)
    assert main(_report(files, tmp_path / "out", "--docx-template", str(bomb), formats="json,docx")) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "bomb.docx" in err and "word/media/huge.bin" in err
    assert "300.0 MB" in err and "64 MB limit" in err
    assert "word/media/huge.bin" not in opened


def _png() -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    png = io.BytesIO()
    fig = plt.figure(figsize=(0.2, 0.2))
    fig.savefig(png, format="png")
    plt.close(fig)
    return png.getvalue()


def test_docx_template_whose_directory_understates_a_part_is_never_inflated(tmp_path):
    """A zip directory may lie: the template's picture declared at its PNG's size (with the PNG's CRC) while its
    stream inflates to 300 MB passes the size check; the template is then read in bounded steps, so the parser
    sees the PNG and nothing inflates the rest (before, python-docx's read inflated all 300 MB at once)."""
    import struct
    import tracemalloc
    import zlib

    from autopdp.report import word

    png = _png()
    base = io.BytesIO()
    d = docx.Document()
    d.add_picture(io.BytesIO(png))
    d.save(base)
    liar = tmp_path / "liar.docx"
    with zipfile.ZipFile(base) as src, zipfile.ZipFile(liar, "w", zipfile.ZIP_DEFLATED) as dst:
        media = [n for n in src.namelist() if n.startswith("word/media/")]
        assert len(media) == 1
        for info in src.infolist():
            if info.filename not in media:
                dst.writestr(info.filename, src.read(info.filename))
        with dst.open(media[0], "w") as part:
            part.write(png)
            for _ in range(300):
                part.write(b"\0" * (1 << 20))
    raw = bytearray(liar.read_bytes())
    name = media[0].encode()
    for sig, crc_at, size_at, name_at in ((b"PK\x03\x04", 14, 22, 30), (b"PK\x01\x02", 16, 24, 46)):
        at = raw.find(sig)
        while at >= 0:
            if raw[at + name_at:at + name_at + len(name)] == name:
                struct.pack_into("<I", raw, at + crc_at, zlib.crc32(png))
                struct.pack_into("<I", raw, at + size_at, len(png))
            at = raw.find(sig, at + 4)
    liar.write_bytes(bytes(raw))
    with zipfile.ZipFile(liar) as z:
        assert z.getinfo(media[0]).file_size == len(png)
    word.check_docx_template(liar)  # the directory is within the limits
    tracemalloc.start()
    try:
        document = word._open(liar)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert document.inline_shapes[0].type is not None  # the picture is there, at its declared size
    assert peak < 64 * 1024 * 1024, f"{peak / 2**20:.0f} MB"


def _template_with_external_links(path: Path) -> Path:
    """A .docx with the external relationships of the issue: an http attachedTemplate (settings.xml.rels),
    a linked picture (r:link), a hyperlink and an INCLUDEPICTURE field of the template's own content."""
    from docx.opc.constants import RELATIONSHIP_TYPE as RT
    from docx.oxml import OxmlElement, parse_xml
    from docx.oxml.ns import nsdecls, qn

    d = docx.Document()
    d.add_paragraph("ACME template preface")
    # a hyperlink to a server
    p = d.add_paragraph()
    rid = d.part.relate_to("http://evil.example/hyperlink", RT.HYPERLINK, is_external=True)
    link = OxmlElement("w:hyperlink")
    link.set(qn("r:id"), rid)
    run = OxmlElement("w:r")
    text = OxmlElement("w:t")
    text.text = "ACME intranet"
    run.append(text)
    link.append(run)
    p._p.append(link)
    # a picture linked (not embedded) from a server
    d.add_picture(io.BytesIO(_png()))
    linked = d.part.relate_to("http://evil.example/pixel.png", RT.IMAGE, is_external=True)
    blip = d.element.body.xpath(".//a:blip")[-1]
    blip.set(qn("r:link"), linked)
    # a field that fetches when Word updates fields
    d.add_paragraph()._p.append(parse_xml(
        f'<w:fldSimple {nsdecls("w")} w:instr=\' INCLUDEPICTURE "http://evil.example/field.png" \\d \'>'
        '<w:r><w:t>pic</w:t></w:r></w:fldSimple>'))
    # an attachedTemplate on a server (Word fetches it on open)
    settings = d.part._settings_part
    tid = settings.relate_to("http://evil.example/template.dotm", RT.HYPERLINK.replace("hyperlink", "attachedTemplate"),
                             is_external=True)
    attached = OxmlElement("w:attachedTemplate")
    attached.set(qn("r:id"), tid)
    settings.element.append(attached)
    d.save(str(path))
    with zipfile.ZipFile(path) as z:  # the template as built does hold all of them
        rels = "".join(z.read(n).decode() for n in z.namelist() if n.endswith(".rels"))
    assert rels.count('TargetMode="External"') == 3
    return path


def test_external_relationships_are_stripped_from_the_report(small, tmp_path):
    template = _template_with_external_links(tmp_path / "org.docx")
    data = small.to_docx(template=template)
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        everything = {n: z.read(n).decode("utf-8", "replace") for n in z.namelist()}
    rels = "".join(v for n, v in everything.items() if n.endswith(".rels"))
    assert "External" not in rels and "evil.example" not in rels
    assert not any("evil.example" in v for v in everything.values())
    assert "attachedTemplate" not in everything["word/settings.xml"]
    assert "r:link" not in everything["word/document.xml"] and "INCLUDEPICTURE" not in everything["word/document.xml"]
    word = docx.Document(io.BytesIO(data))  # still a document, with the template's own text
    texts = [p.text for p in word.paragraphs]
    assert "ACME template preface" in texts and "ACME intranet" in texts and "Executive summary" in texts


# ------------------------------------------------------------------ names from the data in XML and Word
@pytest.fixture(scope="module")
def control_names(tmp_path_factory):
    d = tmp_path_factory.mktemp("control-names")
    rng = np.random.default_rng(2)
    X = pd.DataFrame({"in\x01come": rng.normal(size=200), "a\x0bge": rng.uniform(0, 5, 200)})
    y = (X["in\x01come"] + 0.4 * X["a\x0bge"] + rng.normal(size=200) > 1).astype(int)
    X.assign(target=y).to_csv(d / "data.csv", index=False)
    sio.dump(LogisticRegression().fit(X, y), d / "model.skops")
    (d / "small.toml").write_text(SMALL)
    (d / "policy.toml").write_text('[features."in\\u0001come"]\nmonotonic = "decreasing"\n')
    return d


def test_control_characters_in_names_keep_gate_xml_parsable(control_names, tmp_path):
    d, out = control_names, tmp_path / "gate"
    code = main(["gate", "--policy", str(d / "policy.toml"), "--model", str(d / "model.skops"), "--data",
                 str(d / "data.csv"), "--target", "target", "--out", str(out), "--formats", "json",
                 "--config", str(d / "small.toml")])
    gate = json.loads((out / "gate.json").read_text())
    assert code == 1 and gate["passed"] is False  # income increases the score: the 'decreasing' rule fails
    root = ET.parse(out / "gate.xml").getroot()  # parses
    features = [p.get("value") for p in root.iter("property") if p.get("name") == "feature"]
    assert "in\\x01come" in features
    failure = next(root.iter("failure"))
    assert "in\\x01come" in failure.text and "\x01" not in failure.text


def test_control_characters_in_names_keep_the_word_report_writable(control_names, tmp_path):
    d, out = control_names, tmp_path / "report"
    assert main(["report", "--model", str(d / "model.skops"), "--data", str(d / "data.csv"), "--target", "target",
                 "--out", str(out), "--formats", "json,docx", "--config", str(d / "small.toml")]) == 0
    word = docx.Document(str(out / "report.docx"))
    text = "\n".join([p.text for p in word.paragraphs]
                     + [c.text for t in word.tables for r in t.rows for c in r.cells])
    assert "in\\x01come" in text and "a\\x0bge" in text
    assert "\x01" not in text and "\x0b" not in text


def test_xml_text_escapes_only_what_xml_forbids():
    from autopdp._xmltext import xml_text

    assert xml_text("a\x01b\x0bc\td\ne\rf") == "a\\x01b\\x0bc\td\ne\rf"
    assert xml_text("\ufffe\ud800é😀") == "\\ufffe\\ud800é😀"
    ET.fromstring(f"<a b='{xml_text(chr(0) + chr(31))}'>{xml_text(''.join(map(chr, range(32))))}</a>")


def test_control_characters_in_names_keep_the_pdf_figures(control_names):
    """The PDF's figures are SVG images WeasyPrint parses as XML: a control character in a name dropped them."""
    import base64

    from autopdp.report.render import render_pdf_html, svg_figures_as_images
    from autopdp.report.writer import report_context

    X = pd.read_csv(control_names / "data.csv")
    y = X.pop("target")
    cfg = AuditConfig(grid_resolution=6, grid_resolution_2d=4, top_k=1, noise_draws=50, max_noise_draws=100)
    html = render_pdf_html(report_context(audit(LogisticRegression().fit(X, y), X, y, config=cfg), formats=("pdf",)))
    assert "in\x01come" in html  # the figures carry the name as it is
    images = re.findall(r'src="data:image/svg\+xml;base64,([^"]+)"', svg_figures_as_images(html))
    assert images
    for data in images:
        ET.fromstring(base64.b64decode(data))  # each parses as XML

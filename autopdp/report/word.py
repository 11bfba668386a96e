"""Stage: report context -> an editable Word document (python-docx).

The document is built from the same context as the HTML and PDF (:func:`.context.build_context`):
every finding sentence, caption, number and provenance record comes from there, word for word.
The methodology's prose is the built-in template's own ``methodology`` block, rendered with the
same context and turned into Word paragraphs, so it is written once.

Structure: the title in the ``Title`` style, chapters in ``Heading 1`` and their parts in
``Heading 2`` (Word's navigation pane and table of contents use them), a table-of-contents
field, Word tables (rankings, evidence, provenance, the sign-off block) and the figures as
inline PNG images at print resolution with a caption (``Caption`` style, a ``SEQ Figure``
field) and alt text.

An organisation's own ``.docx`` (or ``.dotx``) can be the base: its styles, page setup, headers
and footers stay; the report goes after what the template holds, or in place of a paragraph
that reads ``{{autopdp}}``.
"""

from __future__ import annotations

import datetime as _dt
import io
import re
from html.parser import HTMLParser

from ..utils.xmltext import xml_text
from .word_package import _open, _rezip, _without_external_links, check_docx_template
from .word_writer import PNG_DPI, _Writer

__all__ = ["render_docx", "check_docx_template", "PLACEHOLDER", "PNG_DPI"]

#: A paragraph of the template with only this text is where the report goes.
PLACEHOLDER = "{{autopdp}}"

# the two captions the HTML template writes itself (the figures are the context's)
IMPORTANCE_CAPTION = ("PD-based importance (Greenwell et al. 2018): how much the average prediction moves with each "
                      "feature.")
IMPORTANCE_ALT = "Horizontal bar chart of the PD-based importance of every feature, most important on top."
INTERACTION_CAPTION = ("Strongest PD-based interactions (Greenwell): pairs whose joint effect is not the sum of their "
                       "separate effects.")
INTERACTION_ALT = "Horizontal bar chart of the interaction statistic of the strongest feature pairs."


# ---------------------------------------------------------------------------------------- sections
def _cover(w, ctx):
    c = ctx["cover"]
    w.para(c["title"], style="Title")
    w.para(f"Partial dependence validation of {c['model_name']}")
    rows = [["Model", f"{c['model_name']}" + (f", version {c['model_version']}" if c.get("model_version") else "")
             + f" ({c['model_type']})"]]
    if c.get("steps"):
        rows.append(["Pipeline steps", " → ".join(map(str, c["steps"]))])
    rows.append(["Explained response", f"{c['response']}" + (f" — target {c['targets']}" if c.get("targets") else "")])
    rows += [["Dataset", c["dataset"]], ["Rows × features", f"{c['rows']} × {c['features']}"],
             ["Target column", c["target"]], ["Positive class", c["positive_class"]]]
    if c.get("sample_weight"):
        rows.append(["Sample weights", c["sample_weight"]])
    if c.get("compare"):
        rows.append(["Comparison models", ", ".join(c["compare"])])
    if c.get("gaps"):
        rows.append(["Gap to the audited model", " ".join(c["gaps"])])
    rows += [["Date (UTC)", c["date"]], ["autopdp version", c["version"]], ["Random seed", c["seed"]]]
    w.table(None, rows, size=9, widths=(0.3, 0.7), header_col=True)
    if c.get("inputs"):
        w.heading("Input files", 2)
        w.table(["input", "file", "bytes", "sha256 (as sha256sum prints it)"],
                [[f["role"], f["name"], f["bytes"], f["sha256"]] for f in c["inputs"]], mono_cols=(3,),
                widths=(0.17, 0.23, 0.12, 0.48))
    p = w.para("Content hash of the data as loaded (sha256 of the column names and values: features, then target"
               + (" and sample weights" if c.get("sample_weight") else "") + "; not a file hash): ", size=8.5)
    w.run(p, c.get("content_sha256") or "", mono=True, size=8)
    if c.get("key_params"):
        w.heading("Key parameters", 2)
        w.table(["parameter", "value"], [[k["name"] + (" *" if k.get("set") else ""), k["value"]]
                                         for k in c["key_params"]], mono_cols=(1,), widths=(0.35, 0.65))
        rest = c.get("other_params") or []
        w.para(("* set away from the estimator's default; then the" if c.get("params_defaults_known") else "The")
               + " parameters that shape its behaviour"
               + (f"; the other {len(rest)} are in the appendix." if rest else "."), italic=True, size=8.5)
    _sign_off(w, c)


def _sign_off(w, c):
    from docx.shared import Pt

    w.heading("Review and sign-off", 2)
    so = c.get("sign_off") or {}
    decision = so.get("decision")
    choices = "    ".join(("☒ " if decision == d else "☐ ") + d.capitalize() for d in c.get("decisions", []))
    rows = [["Reviewed by (validator)", c.get("reviewer") or ""], ["Signed off by", so.get("name") or ""],
            ["Role", so.get("role") or ""], ["Date", so.get("date") or ""], ["Decision", choices],
            ["Conditions", so.get("conditions") or ""]]
    if so.get("statement"):
        rows.append(["Statement", so["statement"]])
    rows.append(["Signature", ""])
    t = w.table(None, rows, size=10, widths=(0.3, 0.7), header_col=True)
    for row, (label, value) in zip(t.rows, rows):
        if not value or label == "Signature":  # room to write by hand or type in Word
            row.height = Pt(48 if label in ("Conditions", "Signature") else 22)


def _contents(w, ctx):
    w.heading("Contents", 1)
    titles = []
    if ctx.get("gate"):
        titles.append("Pre-deployment gate")
    if ctx.get("comparison"):
        titles.append("Model comparison")
    if ctx.get("stage_failures"):
        titles.append("Stage failures")
    titles.append("Executive summary")
    if any(f["kind"] == "1d" for f in ctx.get("finding_pages") or []):
        titles.append("Findings, one page each")
    titles += ["Two-feature partial dependence", "Importance and interaction",
               *([f"Cohorts of {ctx['cohorts']['column']}"] if ctx.get("cohorts") else []),
               f"Rankings: top {ctx.get('top_rows') or 10} of each criterion", "Methodology and caveats", "Appendix"]
    w.toc(titles)


def _gate(w, g):
    w.heading(f"Pre-deployment gate: {'PASSED' if g['passed'] else 'FAILED'}", 1)
    text = f"{g['n']} checks, {g['failed']} failed. Each check compares a measured score with what the policy allows."
    if g.get("policy"):
        text += f" Policy file: {g['policy'].get('name')} (sha256 {g['policy'].get('sha256')})."
    if g.get("champion"):
        text += f" Champion: {g['champion']}" + (f" ({g['champion_file']})" if g.get("champion_file") else "") + "."
    w.para(text)
    w.table(["check", "feature", "result", "measured", "allowed", "detail"],
            [[c["check"], c["feature"], "pass" if c["passed"] else "FAIL", c["measured"], c["allowed"], c["message"]]
             for c in g["checks"]])
    if g.get("evidence"):
        w.heading("Evidence for the failed checks", 2)
    for f in g.get("evidence", []):
        w.figure(f)


def _comparison(w, cmp):
    w.heading("Model comparison", 1)
    w.para(f"{', '.join(cmp['models'])} on the same data and grids. Features are ordered by how differently the "
           "models learned them: the shape gap, the density-weighted root-mean-square difference of two PDs less "
           f"its mean, against {cmp['base']} (the similarity score of paper eq. 10 less the models' level "
           "difference, which is the same for every feature and stated once, in the notes).")
    w.table(["feature"] + [f"shape gap to {m}" for m in cmp["others"]] + [f"importance {m}" for m in cmp["models"]],
            [[r["feature"], *r["gaps"], *r["importance"]] for r in cmp["rows"]])
    for f in cmp["figures"]:
        w.figure(f)
    if cmp.get("pairs"):
        w.heading("Pairs whose surfaces differ most", 2)
        w.table(["pair"] + [f"shape gap to {m}" for m in cmp["others"]], [[r["pair"], *r["gaps"]] for r in cmp["pairs"]])
        for f in cmp["pair_figures"]:
            w.figure(f)


def _stage_failures(w, failures):
    w.heading("Stage failures", 1)
    w.para(f"{len(failures)} score(s) failed with an unexpected error: a fault in autopdp or a library it calls, not a "
           "condition of the data or the model. These scores show as n/a below, so the rankings and findings that "
           "would use them are incomplete. Please report these lines.")
    w.table(["stage", "score", "PDP", "error", "where"],
            [[f["stage"], f["item"], f["features"], f["error"], f["where"]] for f in failures], mono_cols=(4,))


def _summary(w, ctx):
    w.heading("Executive summary", 1)
    if ctx.get("skill"):
        p = w.para()
        w.run(p, "Skill on the audit data. ", bold=True)
        w.run(p, ctx["skill"]["sentence"])
    n = ctx["counts"]
    w.para(f"{n['pd_1d']} 1D partial dependences · {n['pd_2d']} 2D partial dependences · {n['utilities']} utilities "
           f"scored · {n['selected']} plots selected for review", bold=True)
    w.heading("Findings", 2)
    m = ctx["materiality"]
    w.para(f"{m['definition']} Explained response: {ctx['outcome']}.")
    w.para(m["tested"])
    if ctx.get("skill") and ctx["skill"].get("chance"):
        w.para(ctx["skill"]["chance"])
    if ctx.get("skill") and ctx["skill"].get("set_aside"):
        w.para(ctx["skill"]["set_aside"])
    for f in ctx["findings"]:
        p = w.para()
        w.run(p, f"[{f['kind']}] ", bold=True)
        w.run(p, f["sentence"])
        why = f"Selected by {f['reasons']}" + (f" ({f['evidence']})" if f.get("evidence") else "") \
            + f" · Can this PDP be trusted? {f['trust']}"
        w.para(why, italic=True, size=8.5)
    if not ctx["findings"]:
        if ctx.get("untested"):
            w.para("No finding shown, but material scores could not be tested for noise under: "
                   f"{', '.join(ctx['untested'])}; they are neither findings nor noise.")
        else:
            w.para("No material finding under any criterion: no PDP's effect is shown to exceed the materiality "
                   f"threshold with {m['confidence']} confidence.")
    elif ctx.get("untested"):
        w.para("Material scores that could not be tested for noise (neither findings nor noise): "
               f"{', '.join(ctx['untested'])}.", italic=True)
    if ctx.get("no_findings"):
        w.para(f"No material finding under: {', '.join(ctx['no_findings'])}.", italic=True)
    if ctx.get("cautions"):
        w.heading("Caution: PDPs computed mostly from unrealistic rows", 2)
        for c in ctx["cautions"]:
            w.bullet(c)
    if ctx.get("notes"):
        w.heading("Notes", 2)
        for n_ in ctx["notes"]:
            w.bullet(n_)


def _finding_pages(w, ctx):
    """One part per selected 1D finding, as the PDF's "Findings, one page each": the sentence, its figure,
    why it was selected (with its evidence), its trust checks and its row under every criterion."""
    ones = [f for f in ctx.get("finding_pages") or [] if f["kind"] == "1d"]
    if not ones:
        return
    w.heading("Findings, one page each", 1)
    for i, f in enumerate(ones, 1):
        w.heading(f"Finding {i}: {f['label']}", 2)
        w.para(f["sentence"])
        if f.get("figure"):
            w.figure(f["figure"])
        else:
            w.para("(No figure: see report.html.)", italic=True)
        w.table(["selected by", "evidence"],
                [[f"{r['title']} (#{r['rank']})", r["evidence"] or "not tested"] for r in f["reason_list"]],
                size=7.5, widths=(0.3, 0.7))
        w.para(f"Can this PDP be trusted? {f['trust']}", size=8.5)
        if f.get("scores"):
            w.table(["criterion", "rank", "score", "× pred. sd", "adjusted p", "finding?"],
                    [[s_["criterion"], f"{s_['rank']} of {s_['of']}", s_["score"], s_["scaled"], s_["p"],
                      s_.get("finding_text") or s_["finding"]]
                     for s_ in f["scores"]], size=7.5)


def _pair_pages(w, ctx):
    """The selected 2D PDs, as the PDF shows them: the heatmap and its trust checks."""
    pairs = ctx["pairs"]
    w.heading("Two-feature partial dependence", 1)
    w.para(f"{pairs['count']} pairs were computed. Pairs are selected by the association of the two features in the data "
           "(correlation), the importance of both features, their Greenwell interaction, and their standing across all "
           "criteria (intersection). Dots are data rows: regions of the heatmap without dots are extrapolation.")
    if pairs.get("no_finding"):
        w.para(f"No material finding under: {', '.join(pairs['no_finding'])}.", italic=True)
    for f in [f for f in ctx.get("finding_pages") or [] if f["kind"] == "2d"]:
        w.heading(f["label"], 2)
        if f.get("figure"):
            w.figure(f["figure"])
        w.para(f"Can this PDP be trusted? {f['trust']}", size=8.5)


def _rankings(w, ctx):
    """Each criterion's top rows, as the PDF's "Rankings" chapter; every row is in report.html and results.json."""
    n = ctx.get("top_rows") or 10
    w.heading(f"Rankings: top {n} of each criterion", 1)
    w.para(f"The first {n} rows of each criterion's ranking. Every PDP's row, under every criterion, is in report.html "
           "(sortable and filterable) and in results.json (scores, evidence).")
    t = ctx.get("importance_top")
    if t:
        w.heading(f"PD-based importance (top {min(n, len(t['rows']))} of {ctx['counts']['pd_1d']})", 2)
        w.table([t["index"], *t["columns"]], [[r["label"], *r["values"]] for r in t["rows"][:n]], size=7.5)
    for tab in ctx.get("rankings") or []:
        w.heading(f"{tab['title']} ({tab['uid']}, {tab['kind'].upper()}: top {min(n, tab['n'])} of {tab['n']})", 2)
        header = ["rank", "PDP", "score"] + (["× pred. sd"] if tab.get("in_sd") else []) \
            + (["adjusted p", "finding?"] if tab["tested"] else [])
        rows = [[r["rank"], r["label"], r["score"]] + ([r["scaled"]] if tab.get("in_sd") else [])
                + ([r["p"], r.get("finding_text") or r["finding"]] if tab["tested"] else []) for r in tab["rows"][:n]]
        w.table(header, rows, size=7.5)


def _importance(w, ctx):
    w.heading("Importance and interaction", 1)
    w.para(ctx["method"]["importance_text"])
    if ctx.get("importance_svg"):
        w.figure({"svg": ctx["importance_svg"], "caption": IMPORTANCE_CAPTION, "alt": IMPORTANCE_ALT})
    if ctx.get("interaction_svg"):
        w.figure({"svg": ctx["interaction_svg"], "caption": INTERACTION_CAPTION.replace(
            "(Greenwell):", f"(Greenwell) on the {ctx.get('interaction_scale', 'response')} scale:"), "alt": INTERACTION_ALT})


def _cohorts(w, c):
    w.heading(f"Cohorts of {c['column']}", 1)
    w.para(c["intro"])
    for sentence in c["sentences"] or ["No feature's PD shape differs across the cohorts."]:
        w.para(sentence)
    w.table(["feature", "shape gap", "p", "adjusted p", "finding"],
            [[r["feature"], r["shape_gap"], r["p"], r["adjusted_p"], r["finding"]] for r in c["rows"]])
    for f in c["figures"]:
        w.figure(f)


def _appendix(w, ctx):
    w.heading("Appendix", 1)
    w.para("Every PDP's figure and its score under every criterion are in report.html and results.json; this "
           "document, like the PDF, holds the findings and each criterion's top rows.", italic=True)
    w.heading("Reproducibility", 2)
    c = ctx["cover"]
    w.para(f"Random seed: {ctx['seed']}." + (" Command line:" if c.get("command") else ""))
    if c.get("command"):
        w.para(c["command"], mono=True, size=8)
    if c.get("inputs"):
        w.table(["input", "path", "bytes", "sha256"], [[f["role"], f["path"], f["bytes"], f["sha256"]] for f in c["inputs"]],
                mono_cols=(1, 3), widths=(0.15, 0.3, 0.1, 0.45))
    p = w.para(f"Target column: {c['target']}; positive class: {c['positive_class']}; content hash of the data as "
               "loaded: ")
    w.run(p, c.get("content_sha256") or "", mono=True, size=8)
    csv = ctx.get("csv_options") or {}
    if csv:
        w.run(p, "; CSV options: " + ", ".join(f"{k} = {v}" for k, v in csv.items()))
    w.run(p, ".")
    w.table(["setting", "value"], [[x["key"], x["value"]] for x in ctx["config"]], mono_cols=(1,), widths=(0.35, 0.65))
    if c.get("other_params"):
        w.para("Other model parameters: " + "; ".join(f"{x['name']} = {x['value']}" for x in c["other_params"]) + ".")
    w.table(["library", "version"], [[k, v] for k, v in ctx["versions"].items()]
            + [[k, v] for k, v in ctx.get("platform", {}).items()], widths=(0.35, 0.65))
    w.table(["stage", "seconds"], [[t["stage"], t["seconds"]] for t in ctx["timings"]], widths=(0.5, 0.5))


# ------------------------------------------------------------------- methodology (the template's block)
def _methodology(w, ctx, template_dir=None):
    """The templates' ``methodology`` block (the organisation's override from ``template_dir``, else the
    built-in one), rendered with this context, as Word paragraphs."""
    from .render import render_word_methodology

    _HtmlToWord(w).feed(render_word_methodology(ctx, template_dir))


class _HtmlToWord(HTMLParser):
    """The few elements of the methodology prose: h2/h3, p, ul/li, b/i/sub/sup, span.formula, tables."""

    BLOCKS = {"p", "li", "h2", "h3", "h4", "div", "span.formula"}

    def __init__(self, w):
        super().__init__(convert_charrefs=True)
        self.w = w
        self.p = None
        self.fmt: list[str] = []
        self.table = None  # list of rows, each a list of cell texts
        self.cell = None
        self.header = False
        self.block_tags: list[str] = []

    def _new(self, tag, cls=""):
        styles = {"h2": "Heading 1", "h3": "Heading 2", "h4": "Heading 2"}
        if tag == "li":
            self.p = self.w.bullet("")
        else:
            self.p = self.w.para(style=styles.get(tag))
        self.mono = cls == "formula"

    def handle_starttag(self, tag, attrs):
        cls = dict(attrs).get("class") or ""
        if tag == "table":
            self.table, self.p = [], None
        elif self.table is not None:
            if tag == "tr":
                self.table.append([])
            elif tag in ("td", "th"):
                self.cell = []
                self.header = self.header or tag == "th"
        elif tag in ("p", "li", "h2", "h3", "h4") or (tag == "span" and "formula" in cls):
            self._new(tag, "formula" if "formula" in cls else "")
            self.block_tags.append(tag)
        elif tag in ("b", "strong", "i", "em", "sub", "sup"):
            self.fmt.append(tag)
        elif tag == "br" and self.p is not None:
            self.p.add_run().add_break()

    def handle_endtag(self, tag):
        if tag == "table" and self.table is not None:
            rows = [r for r in self.table if r]
            if rows:
                self.w.table(rows[0] if self.header else None, rows[1:] if self.header else rows)
            self.table, self.header = None, False
        elif self.table is not None:
            if tag in ("td", "th") and self.cell is not None:
                self.table[-1].append(" ".join("".join(self.cell).split()))
                self.cell = None
        elif self.block_tags and tag == self.block_tags[-1]:
            self.block_tags.pop()
            self.p = None
        elif tag in ("b", "strong", "i", "em", "sub", "sup") and tag in self.fmt:
            self.fmt.remove(tag)

    def handle_data(self, data):
        if self.table is not None:
            if self.cell is not None:
                self.cell.append(data)
            return
        text = re.sub(r"\s+", " ", data)
        if not text.strip():
            return
        if self.p is None:  # loose text between blocks
            self._new("p")
        if not self.p.runs or not self.p.text:
            text = text.lstrip()
        self.w.run(self.p, text, bold=any(t in ("b", "strong") for t in self.fmt),
                   italic=any(t in ("i", "em") for t in self.fmt), sub="sub" in self.fmt, sup="sup" in self.fmt,
                   mono=getattr(self, "mono", False))


# ---------------------------------------------------------------------------------------- entry
def render_docx(context: dict, template=None, template_dir=None) -> bytes:
    """The report as a Word document (bytes of a .docx) from the report context.

    ``template_dir``: the organisation's HTML/PDF templates; their ``methodology`` block is the Word
    report's methodology (the other blocks have no Word counterpart: the Word report is written here).

    ``template``: path of an organisation's .docx/.dotx whose styles, page setup, headers and
    footers the document keeps; the report goes after its content, or in place of a paragraph
    reading ``{{autopdp}}``.  Figures must carry PNGs (:func:`.figures.with_png` while the context
    is built); a figure without one is a one-line note in the document.
    """
    from docx.shared import Cm, Inches

    doc = _open(template)
    body = doc.element.body
    before = len(body)  # the template's own content (and its final section properties)
    placeholder = next((p for p in doc.paragraphs if "".join(p.text.split()) == PLACEHOLDER), None)
    if template is None:
        section = doc.sections[0]
        if context.get("page_size") == "Letter":
            section.page_width, section.page_height = Inches(8.5), Inches(11)
        else:
            section.page_width, section.page_height = Cm(21.0), Cm(29.7)
        for side in ("left_margin", "right_margin"):
            setattr(section, side, Cm(2.0))
        section.top_margin, section.bottom_margin = Cm(2.0), Cm(2.0)
    w = _Writer(doc, context)
    _cover(w, context)
    _contents(w, context)
    if context.get("gate"):
        _gate(w, context["gate"])
    if context.get("comparison"):
        _comparison(w, context["comparison"])
    if context.get("stage_failures"):
        _stage_failures(w, context["stage_failures"])
    # the curated document's chapters, in the PDF's order (report.pdf.j2)
    _summary(w, context)
    _finding_pages(w, context)
    _pair_pages(w, context)
    _importance(w, context)
    if context.get("cohorts"):
        _cohorts(w, context["cohorts"])
    _rankings(w, context)
    _methodology(w, context, template_dir)
    _appendix(w, context)
    if placeholder is not None:
        # python-docx appends before the final sectPr: move the report to the placeholder
        sect = body[-1] if body[-1].tag.endswith("}sectPr") else None
        added = [el for el in list(body)[before - (1 if sect is not None else 0):] if el is not sect]
        anchor = placeholder._p
        for el in added:
            anchor.addprevious(el)
        anchor.getparent().remove(anchor)
    _properties(doc, context)
    buf = io.BytesIO()
    doc.save(buf)
    data = buf.getvalue()
    return _rezip(data, _without_external_links(data), fixed_time=(1980, 1, 1, 0, 0, 0))


def _properties(doc, ctx):
    c = ctx["cover"]
    cp = doc.core_properties
    cp.title = xml_text(c.get("title") or "")[:255]
    cp.subject = xml_text(f"Partial dependence validation of {c.get('model_name')}")[:255]
    cp.keywords = "autopdp; partial dependence; model validation"
    cp.author = xml_text(c.get("reviewer") or "autopdp")[:255]
    cp.last_modified_by = "autopdp"
    cp.comments = xml_text(f"Generated by autopdp {c.get('version')}")
    cp.revision = 1
    when = _date(c.get("date"))
    if when is not None:
        cp.created = cp.modified = when


def _date(text):
    try:
        d = _dt.datetime.fromisoformat(str(text).replace("Z", "+00:00").replace(" UTC", ""))
    except ValueError:
        return None
    return d.replace(tzinfo=None)

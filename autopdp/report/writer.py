"""Write a report's files as one set: the context is built once, the HTML rendered once.

Every file of the run is staged first and the previous set is replaced only when
all of them were written (see :func:`autopdp.utils.atomic.output_set`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Mapping

from ..utils.atomic import atomic_write_bytes, atomic_write_text, output_set
from ..io.ice import ICE_FILE
from ..utils.progress import announce
from .context import build_context
from .render import render_html, render_pdf, render_pdf_html
from ..errors import InputError

__all__ = ["write_report", "FORMATS", "DEFAULT_FORMATS", "audit_html", "audit_pdf", "audit_docx"]

#: Every format a run can write; ``docx`` is the editable Word document.
FORMATS = ("html", "pdf", "json", "docx")
#: What a run writes when not told.
DEFAULT_FORMATS = ("html", "pdf", "json")
#: The documents' names: report.html, report.pdf, report.docx; and the results'
STEM, JSON_NAME = "report", "results.json"


def write_report(audit, out_dir, *, formats=DEFAULT_FORMATS, page_size: str = "A4",
                 extra_files: Mapping[str, str | bytes] | None = None, gate=None, comparison=None,
                 progress=None, template_dir=None, docx_template=None, ice: bool = False) -> dict:
    """Write ``report.html``, ``report.pdf``, ``report.docx`` and ``results.json`` (as asked) as one
    all-or-nothing set.

    Parameters
    ----------
    audit : Audit
    out_dir : path
        Output directory (created if needed).
    formats : sequence of {"html", "pdf", "json", "docx"}
    page_size : {"A4", "Letter"}
        The HTML/PDF page; the Word document's when it has no ``docx_template``.
    extra_files : mapping of file name -> text or bytes, optional
        Further files of the same run (the gate's ``gate.json`` and ``gate.xml``).
    gate : GateResult, optional
        Adds the Gate section (as ``autopdp gate`` does).
    comparison : str, optional
        Name of the audited model: adds the Model comparison section (as ``autopdp compare`` does).
    progress : bool, optional
        Announce the stages (figures, HTML, PDF) on stderr; default only on a terminal outside CI.
    template_dir : path, optional
        A folder of templates that override the built-in HTML/PDF ones by name (rendered sandboxed).
        Only this argument chooses templates: the audit's config never does.
    docx_template : path, optional
        The organisation's .docx the Word document is built on (its external links dropped).
    ice : bool
        Also write the ICE curves to ``ice.parquet`` (:mod:`autopdp.io.ice`; results.json leaves
        them out and names the file), in the same set and manifest.

    Returns
    -------
    dict
        ``{"paths": [...], "timings": {stage: seconds}}``; ``manifest.json``
        (every file's sha256) is written beside them.
    """
    formats = tuple(formats)
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise InputError(f"unknown report format {unknown[0]!r}; choose from {', '.join(FORMATS)}.")
    template_dir, docx_template = report_templates(template_dir, docx_template, formats)
    timings = {}
    with output_set(Path(out_dir)) as staged:
        if ice:
            t0 = time.perf_counter()
            staged.write_bytes(ICE_FILE, audit.to_ice())
            timings["ice"] = time.perf_counter() - t0
        if "json" in formats:
            t0 = time.perf_counter()
            staged.write_text(JSON_NAME, audit.to_json(ice_file=ICE_FILE if ice else None))
            timings["json"] = time.perf_counter() - t0
        for name, content in (extra_files or {}).items():
            if isinstance(content, str):
                staged.write_text(name, content)
            else:
                staged.write_bytes(name, bytes(content))
        if any(f in formats for f in ("html", "pdf", "docx")):  # one context, its figures drawn once, for all
            t0 = time.perf_counter()
            with announce("building the report's figures", progress):
                context = _context(audit, page_size, gate, comparison, formats)
            timings["context_and_figures"] = time.perf_counter() - t0
        # the HTML is the complete record; the PDF its own short, curated document from the same figures:
        # render_pdf_html, not the HTML
        if "html" in formats:
            t0 = time.perf_counter()
            staged.write_text(f"{STEM}.html", render_html(context, template_dir=template_dir) if template_dir
                              else render_html(context))
            timings["html"] = time.perf_counter() - t0
        if "docx" in formats:
            from .word import render_docx

            t0 = time.perf_counter()
            with announce("writing the Word document", progress):
                staged.write_bytes(f"{STEM}.docx", render_docx(context, template=docx_template,
                                                                template_dir=template_dir))
            timings["docx"] = time.perf_counter() - t0
        if "pdf" in formats:
            t0 = time.perf_counter()
            with announce("rendering the PDF", progress):
                staged.write_bytes(f"{STEM}.pdf", render_pdf(
                    render_pdf_html(context, template_dir=template_dir) if template_dir
                    else render_pdf_html(context)))
            timings["pdf"] = time.perf_counter() - t0
        paths = staged.commit(provenance=dict(audit.metadata.get("provenance") or {}) or None)
    return {"paths": paths, "timings": timings}


def _context(audit, page_size, gate, comparison, formats):
    return report_context(audit, page_size=page_size, gate=gate, comparison=comparison, formats=formats,
                          png="docx" in formats)


def report_templates(template_dir=None, docx_template=None, formats=FORMATS):
    """``(template_dir, docx_template)``: the arguments (only they choose templates: a template is code, and
    no config, policy or results.json selects code), checked (a missing folder or a file that is not a .docx
    is bad input naming it) for the formats that use them."""
    if template_dir is not None and ("html" in formats or "pdf" in formats or "docx" in formats):
        from .render import check_template_dir

        template_dir = check_template_dir(template_dir)
    if docx_template is not None and "docx" in formats:
        from .word import check_docx_template

        docx_template = check_docx_template(docx_template)
    return template_dir, docx_template


def report_context(audit, *, page_size: str = "A4", gate=None, comparison=None, formats=FORMATS,
                   png: bool = False) -> dict:
    """The report's context with the optional Gate and Model comparison sections; only the figures
    ``formats`` show are drawn; with ``png`` every figure also carries its PNG at print resolution (for
    the Word document)."""
    if png:
        from .figures import with_png
        from .word import PNG_DPI

        with with_png(PNG_DPI):
            return report_context(audit, page_size=page_size, gate=gate, comparison=comparison, formats=formats)
    context = build_context(audit, page_size=page_size, formats=formats)
    if gate is not None:
        from .gate_section import gate_context

        context["gate"] = gate_context(audit, gate)
    if comparison is not None:
        from .compare import comparison_context

        if not audit.comparisons:
            raise InputError("comparison= needs an audit with comparison models (audit(..., compare={...})).")
        context["comparison"] = comparison_context(audit, base_name=str(comparison))
    from .fonts import glyph_note, report_texts

    note = glyph_note(report_texts(context))
    if note is not None:
        context["notes"] = [*context.get("notes", []), note]
    return context


def audit_html(audit, path=None, *, page_size: str = "A4", gate=None, comparison=None, template_dir=None) -> str:
    """``Audit.to_html``: the report as one self-contained HTML file; written atomically to ``path`` when given.

    ``gate`` (a :class:`GateResult` of this audit) adds the Gate section and ``comparison`` (the audited model's
    name) the Model comparison section, as ``autopdp gate`` and ``autopdp compare`` do.  ``template_dir``: a folder
    of templates overriding the built-in ones by name, rendered sandboxed (only this argument chooses templates:
    the config, and so a loaded results.json, never does).
    """
    template_dir, _ = report_templates(template_dir, None, ("html",))
    html = render_html(report_context(audit, page_size=page_size, gate=gate, comparison=comparison,
                                      formats=("html",)), template_dir=template_dir)
    if path is not None:
        atomic_write_text(path, html)
    return html


def audit_pdf(audit, path=None, *, page_size: str = "A4", gate=None, comparison=None, template_dir=None) -> bytes:
    """``Audit.to_pdf``: the report as PDF (WeasyPrint): the curated document (findings, top rows, methodology; the
    HTML is the complete record); written atomically to ``path`` when given (see :func:`audit_html`)."""
    template_dir, _ = report_templates(template_dir, None, ("pdf",))
    context = report_context(audit, page_size=page_size, gate=gate, comparison=comparison, formats=("pdf",))
    pdf = render_pdf(render_pdf_html(context, template_dir=template_dir))
    if path is not None:
        atomic_write_bytes(path, pdf)
    return pdf


def audit_docx(audit, path=None, template=None, *, page_size: str = "A4", gate=None, comparison=None,
               template_dir=None) -> bytes:
    """``Audit.to_docx``: the report as an editable Word document, from the same context as the HTML and PDF;
    written atomically to ``path`` when given.

    ``template`` (only this argument chooses it): the organisation's .docx whose styles, page setup, headers and
    footers the document keeps; the report goes after its content, or in place of a paragraph reading
    ``{{autopdp}}``.  ``page_size`` applies without a template.  ``gate`` and ``comparison`` as in
    :func:`audit_html`; ``template_dir``: the organisation's HTML/PDF templates, whose ``methodology`` block is
    also the Word report's.
    """
    from .word import render_docx

    template_dir, template = report_templates(template_dir, template, ("docx",))
    data = render_docx(report_context(audit, page_size=page_size, gate=gate, comparison=comparison, png=True),
                       template=template, template_dir=template_dir)
    if path is not None:
        atomic_write_bytes(path, data)
    return data

"""Write a report's files as one set: the context is built once, the HTML rendered once.

Every file of the run is staged first and the previous set is replaced only when
all of them were written (see :func:`autopdp._io.output_set`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Mapping

from .._io import output_set
from ..pd.ice_io import ICE_FILE
from .._progress import announce
from .context import build_context
from .render import render_html, render_pdf
from ..errors import InputError

__all__ = ["write_report", "FORMATS"]

FORMATS = ("html", "pdf", "json")


def write_report(audit, out_dir, *, formats=FORMATS, page_size: str = "A4", stem: str = "report",
                 json_name: str = "results.json", context_hook: Callable | None = None,
                 extra_files: Mapping[str, str | bytes] | None = None, gate=None, comparison=None,
                 progress=None, ice: bool = False) -> dict:
    """Write ``report.html``, ``report.pdf`` and ``results.json`` (as asked) as one all-or-nothing set.

    Parameters
    ----------
    audit : Audit
    out_dir : path
        Output directory (created if needed).
    formats : sequence of {"html", "pdf", "json"}
    page_size : {"A4", "Letter"}
    context_hook : callable, optional
        ``context -> context``, may add sections.
    extra_files : mapping of file name -> text or bytes, optional
        Further files of the same run (the gate's ``gate.json`` and ``gate.xml``).
    gate : GateResult, optional
        Adds the Gate section (as ``autopdp gate`` does).
    comparison : str, optional
        Name of the audited model: adds the Model comparison section (as ``autopdp compare`` does).
    progress : bool, optional
        Announce the stages (figures, HTML, PDF) on stderr; default only on a terminal outside CI.
    ice : bool
        Also write the ICE curves to ``ice.parquet`` (:mod:`autopdp.pd.ice_io`; results.json leaves
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
    timings = {}
    with output_set(Path(out_dir)) as staged:
        if ice:
            t0 = time.perf_counter()
            staged.write_bytes(ICE_FILE, audit.to_ice())
            timings["ice"] = time.perf_counter() - t0
        if "json" in formats:
            t0 = time.perf_counter()
            staged.write_text(json_name, audit.to_json(ice_file=ICE_FILE if ice else None))
            timings["json"] = time.perf_counter() - t0
        for name, content in (extra_files or {}).items():
            if isinstance(content, str):
                staged.write_text(name, content)
            else:
                staged.write_bytes(name, bytes(content))
        if "html" in formats or "pdf" in formats:
            t0 = time.perf_counter()
            with announce("building the report's figures", progress):
                context = report_context(audit, page_size=page_size, gate=gate, comparison=comparison)
                if context_hook is not None:
                    context = context_hook(context)
            timings["context_and_figures"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            html = render_html(context)
            timings["html"] = time.perf_counter() - t0
            if "html" in formats:
                staged.write_text(f"{stem}.html", html)
            if "pdf" in formats:
                t0 = time.perf_counter()
                with announce("rendering the PDF", progress):
                    staged.write_bytes(f"{stem}.pdf", render_pdf(html))
                timings["pdf"] = time.perf_counter() - t0
        paths = staged.commit(provenance=dict(audit.metadata.get("provenance") or {}) or None)
    return {"paths": paths, "timings": timings}


def report_context(audit, *, page_size: str = "A4", gate=None, comparison=None) -> dict:
    """The report's context with the optional Gate and Model comparison sections."""
    context = build_context(audit, page_size=page_size)
    if gate is not None:
        from .context import gate_context

        context["gate"] = gate_context(audit, gate)
    if comparison is not None:
        from .context import comparison_context

        if not audit.comparisons:
            raise InputError("comparison= needs an audit with comparison models (audit(..., compare={...})).")
        context["comparison"] = comparison_context(audit, base_name=str(comparison))
    from .fonts import glyph_note, report_texts

    note = glyph_note(report_texts(context))
    if note is not None:
        context["notes"] = [*context.get("notes", []), note]
    return context

"""Write a report's files in one go: the context is built once, the HTML rendered once."""

from __future__ import annotations

import time
from pathlib import Path

from .._io import atomic_write_bytes, atomic_write_text, ensure_writable_dir
from .context import build_context
from .render import render_html, render_pdf

__all__ = ["write_report", "FORMATS"]

FORMATS = ("html", "pdf", "json")


def write_report(audit, out_dir, *, formats=FORMATS, page_size: str = "A4", stem: str = "report",
                 json_name: str = "results.json", context_hook=None) -> dict:
    """Write ``report.html``, ``report.pdf`` and ``results.json`` (as asked) atomically.

    Returns ``{"paths": [...], "timings": {stage: seconds}}``.  ``context_hook``
    may add sections to the context (the gate does).
    """
    formats = tuple(formats)
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise ValueError(f"unknown report format {unknown[0]!r}; choose from {', '.join(FORMATS)}.")
    out = ensure_writable_dir(Path(out_dir))
    paths, timings = [], {}
    if "json" in formats:
        t0 = time.perf_counter()
        paths.append(atomic_write_text(out / json_name, audit.to_json()))
        timings["json"] = time.perf_counter() - t0
    if "html" in formats or "pdf" in formats:
        t0 = time.perf_counter()
        context = build_context(audit, page_size=page_size)
        if context_hook is not None:
            context = context_hook(context)
        timings["context_and_figures"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        html = render_html(context)
        timings["html"] = time.perf_counter() - t0
        if "html" in formats:
            paths.append(atomic_write_text(out / f"{stem}.html", html))
        if "pdf" in formats:
            t0 = time.perf_counter()
            paths.append(atomic_write_bytes(out / f"{stem}.pdf", render_pdf(html)))
            timings["pdf"] = time.perf_counter() - t0
    return {"paths": paths, "timings": timings}

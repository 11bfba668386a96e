"""Stage: report context -> HTML (Jinja2) -> PDF (WeasyPrint).

One Jinja environment, built once, with autoescaping on and the formatting
filters registered once.  Only autopdp's own SVG figures are marked safe.
"""

from __future__ import annotations

import base64
import functools
import re
import time

from .._io import atomic_write_bytes, atomic_write_text
from .findings import fmt
from ..errors import InputError

__all__ = [
    "environment", "render_html", "render_pdf_html", "render_pdf", "svg_figures_as_images", "write_html", "write_pdf",
    "PAGE_SIZES", "HTML_TEMPLATE", "PDF_TEMPLATE",
]

PAGE_SIZES = ("A4", "Letter")

#: The HTML report: the complete, explorable record (every PDP in sortable, filterable tables, every 1D PD).
HTML_TEMPLATE = "report.html.j2"
#: The PDF report: the short curated document (findings, top rows, methodology), on paper.
PDF_TEMPLATE = "report.pdf.j2"


@functools.lru_cache(maxsize=1)
def environment():
    from importlib import resources

    from jinja2 import ChoiceLoader, Environment, FileSystemLoader, PrefixLoader, StrictUndefined, select_autoescape

    # the templates are package data of autopdp.templates (inside the wheel too); each is also
    # loadable as "autopdp/<name>", so a template elsewhere can extend "autopdp/report.html.j2"
    folder = FileSystemLoader(str(resources.files("autopdp.templates")))
    env = Environment(
        loader=ChoiceLoader([folder, PrefixLoader({"autopdp": folder})]),
        autoescape=select_autoescape(enabled_extensions=("html", "j2", "xml"), default_for_string=True, default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = fmt
    env.filters["pct"] = lambda v: "n/a" if v is None else f"{float(v):.0%}"
    return env


def _check_page_size(context: dict) -> None:
    if context.get("page_size") not in PAGE_SIZES:
        raise InputError(f"page_size must be one of {', '.join(PAGE_SIZES)}, got {context.get('page_size')!r}.")


def render_html(context: dict) -> str:
    """The self-contained HTML report: the complete record (inline CSS, SVG and one small
    hand-written script for sorting, filtering and opening figures; nothing from the network)."""
    _check_page_size(context)
    return environment().get_template(HTML_TEMPLATE).render(**context)


def render_pdf_html(context: dict) -> str:
    """The HTML of the curated PDF document (no script): cover, findings, top rows, methodology."""
    _check_page_size(context)
    return environment().get_template(PDF_TEMPLATE).render(**context)


_SVG = re.compile(r"<svg\b.*?</svg>", flags=re.S)


def svg_figures_as_images(html: str) -> str:
    """The HTML with each inline ``<svg>`` figure as an ``<img>`` of the same SVG (a data: URI).

    WeasyPrint draws both the same way (the same pages and text), but an inline figure's
    thousands of SVG elements also go through its HTML parser and the page's CSS cascade:
    as images, the demo report's PDF renders in about 20% less time.  Only autopdp's own
    figures are inline SVG (text from data is escaped), so every match is one of them.
    """
    def as_image(match):
        data = base64.b64encode(match.group(0).encode("utf-8")).decode("ascii")
        return f'<img src="data:image/svg+xml;base64,{data}" alt="">'

    return _SVG.sub(as_image, html)


def render_pdf(html: str) -> bytes:
    """Render the HTML with WeasyPrint (print CSS: page size, numbers, running header); the
    figures are handed over as images (:func:`svg_figures_as_images`)."""
    import logging

    from weasyprint import HTML

    logging.getLogger("weasyprint").setLevel(logging.ERROR)
    logging.getLogger("fontTools").setLevel(logging.ERROR)
    # embedded data: URIs (the heatmaps' pixels) only; nothing is loaded from outside
    try:
        from weasyprint.urls import URLFetcher

        no_fetch = URLFetcher(allowed_protocols=("data",))
    except ImportError:  # WeasyPrint < 66: a fetcher function
        from weasyprint import default_url_fetcher

        def no_fetch(url, *args, **kwargs):
            if url.startswith("data:"):
                return default_url_fetcher(url, *args, **kwargs)
            raise InputError(f"autopdp reports load no external resources (asked for {url!r})")

    return HTML(string=svg_figures_as_images(html), url_fetcher=no_fetch).write_pdf()


def write_html(context: dict, path) -> float:
    t0 = time.perf_counter()
    atomic_write_text(path, render_html(context))
    return time.perf_counter() - t0


def write_pdf(context: dict, path, html: str | None = None) -> float:
    t0 = time.perf_counter()
    atomic_write_bytes(path, render_pdf(html if html is not None else render_pdf_html(context)))
    return time.perf_counter() - t0

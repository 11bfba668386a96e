"""The validator report: audit -> context -> HTML / PDF (lazy stages)."""

from .context import build_context
from .render import render_html, render_pdf
from .writer import FORMATS, write_report

__all__ = ["build_context", "render_html", "render_pdf", "write_report", "FORMATS"]

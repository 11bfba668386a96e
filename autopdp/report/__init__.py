"""The validator report: audit -> context -> HTML / PDF (lazy stages).

The names below are imported on first use, so that importing :mod:`autopdp.report.figures`
alone (as the figure-drawing worker processes do) does not load the audit's modules.
"""

import importlib

__all__ = ["build_context", "render_html", "render_pdf", "render_docx", "write_report", "FORMATS"]

_WHERE = {"build_context": ".context", "render_html": ".render", "render_pdf": ".render", "write_report": ".writer",
          "FORMATS": ".writer", "render_docx": ".word"}


def __getattr__(name):
    if name in _WHERE:
        value = getattr(importlib.import_module(_WHERE[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)

"""Stage: report context -> HTML (Jinja2) -> PDF (WeasyPrint).

One Jinja environment, built once, with autoescaping on and the formatting
filters registered once.  Only autopdp's own SVG figures are marked safe.
Every template, built-in or an organisation's, renders in Jinja's sandbox
(:class:`jinja2.sandbox.SandboxedEnvironment`): a template that reaches for
Python internals (``__globals__``, ``__class__``, ``_private`` attributes,
``str.format`` on internals) is bad input naming the template and line.
"""

from __future__ import annotations

import base64
import functools
import re
import time

from ..utils.atomic import atomic_write_bytes, atomic_write_text
from ..utils.formatting import fmt
from ..errors import InputError

__all__ = [
    "environment", "check_template_dir", "render_html", "render_pdf_html", "render_word_methodology", "render_pdf", "svg_figures_as_images",
    "write_html", "write_pdf", "PAGE_SIZES", "HTML_TEMPLATE", "PDF_TEMPLATE", "LAYOUTS",
]

PAGE_SIZES = ("A4", "Letter")

#: The report in every format (an organisation's ``report.html.j2`` in ``--template-dir`` replaces it), rendered
#: on a layout: the HTML record's, the PDF's or the Word methodology's (:data:`LAYOUTS`).
HTML_TEMPLATE = "report.html.j2"
#: The PDF's entry: ``report.html.j2`` on the paper layout (a ``report.pdf.j2`` in ``--template-dir`` changes
#: the PDF alone).
PDF_TEMPLATE = "report.pdf.j2"
#: The layouts ``report.html.j2`` extends, per format: they share the blocks ``styles``, ``cover``, ``summary``,
#: ``findings``, ``methodology`` and ``appendix`` (the record adds ``explore``; the Word layout has only
#: ``methodology``), so one overridden block changes every format that shows it.
LAYOUTS = {"html": "autopdp/_record.html.j2", "pdf": "autopdp/_paper.html.j2", "docx": "autopdp/_word.html.j2"}


from .sandbox import MAX_TEMPLATE_PRODUCT, bounded_filters, sandbox_class  # noqa: E402,F401


@functools.lru_cache(maxsize=8)
def environment(template_dir: str | None = None):
    """The Jinja environment: the built-in templates, or with ``template_dir`` an organisation's
    templates first.  A template in ``template_dir`` replaces the built-in one of the same name
    (``report.html.j2``, ``report.css``); the built-in ones stay loadable as ``autopdp/NAME``, so
    ``{% extends "autopdp/report.html.j2" %}`` overrides only the blocks it names.

    The environment is Jinja's sandbox: templates are code another team may supply, so none of
    them reaches Python internals (an unsafe attribute is an undefined that raises
    :class:`jinja2.exceptions.SecurityError` when used) or builds a huge text or number with ``*``
    or ``**`` (:data:`MAX_TEMPLATE_PRODUCT`)."""
    from importlib import resources

    from jinja2 import ChoiceLoader, FileSystemLoader, PrefixLoader, StrictUndefined, select_autoescape

    # the templates are package data of autopdp.templates (inside the wheel too); each is also
    # loadable as "autopdp/<name>", so a template elsewhere can extend "autopdp/report.html.j2";
    # a folder of the organisation's templates (template_dir) comes first and overrides by name
    folder = FileSystemLoader(str(resources.files("autopdp.templates")))
    loaders = [folder, PrefixLoader({"autopdp": folder})]
    if template_dir is not None:
        loaders = [PrefixLoader({"autopdp": folder}), confined_loader(str(template_dir)), folder]
    env = sandbox_class()(
        loader=ChoiceLoader(loaders),
        autoescape=select_autoescape(enabled_extensions=("html", "j2", "xml"), default_for_string=True, default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(bounded_filters(env.filters))
    env.filters["num"] = fmt
    env.filters["pct"] = lambda v: "n/a" if v is None else f"{float(v):.0%}"
    return env


def confined_loader(folder: str):
    """A FileSystemLoader of ``folder`` that reads no file whose path leaves the folder once links are followed:
    a template folder holding a link to ``/proc/self/environ`` would otherwise put the job's secrets in the
    report."""
    import os

    from jinja2 import FileSystemLoader
    from jinja2.exceptions import SecurityError
    from jinja2.loaders import split_template_path

    root = os.path.realpath(folder)

    class Confined(FileSystemLoader):
        def get_source(self, environment, template):
            path = os.path.join(root, *split_template_path(template))
            if os.path.lexists(path) and not os.path.realpath(path).startswith(root + os.sep):
                raise SecurityError(f"template {template!r} is a link out of the --template-dir folder; autopdp "
                                    "reads templates only from inside it")
            return super().get_source(environment, template)

    return Confined(root)


def check_template_dir(path) -> str:
    """``path`` as text when it is a folder whose templates parse and name no private attribute (checked
    before any work: the sandbox would refuse them at render time); otherwise :class:`InputError` naming it."""
    from pathlib import Path

    p = Path(path)
    if not p.is_dir():
        why = "does not exist" if not p.exists() else "is not a folder"
        raise InputError(f"--template-dir {str(p)!r} {why}; give the folder of your "
                         "organisation's report templates (e.g. report.html.j2).")
    folder = str(p.resolve())
    _precheck_templates(folder, path)
    return folder


#: The files of a --template-dir parsed before any work (the sandbox guards any other a template loads).
_TEMPLATE_SUFFIXES = (".j2", ".jinja", ".jinja2", ".html", ".htm", ".css", ".js", ".xml", ".svg")


def _template_files(root, shown, limit: int = 2000) -> list:
    """The files of a --template-dir (at most ``limit``, sorted), walked without following links; a link that
    leaves the folder (to ``/proc/self/environ``, or a folder link to ``/``) is :class:`InputError`."""
    import os
    from pathlib import Path

    real = root.resolve()
    found = []
    for here, dirs, files in os.walk(root, followlinks=False):
        for name in [*dirs, *files]:
            f = Path(here) / name
            if f.is_symlink() and not f.resolve().is_relative_to(real):
                raise InputError(f"--template-dir {str(shown)!r} holds {str(f.relative_to(root))!r}, a link to "
                                 f"{str(f.resolve())!r} outside the folder; autopdp reads templates only from inside "
                                 "it. Copy the file into the folder instead of linking it.")
        found.extend(Path(here) / name for name in files)
        if len(found) >= limit:
            break
    return sorted(found)[:limit]


def _precheck_templates(folder: str, shown) -> None:
    """Parse every template of ``folder`` (:data:`_TEMPLATE_SUFFIXES`, e.g. report.css) once, before any
    work: a syntax error, or an attribute or key starting with ``_`` (``__class__``, ``__globals__``: what
    the sandbox refuses), is :class:`InputError` naming the template and line."""
    from pathlib import Path

    from jinja2 import TemplateSyntaxError, nodes

    env = environment(folder)
    root = Path(folder)
    for f in _template_files(root, shown):
        if f.suffix.lower() not in _TEMPLATE_SUFFIXES or not f.is_file() or f.stat().st_size > 5 * 1024 * 1024:
            continue
        name = f.relative_to(root).as_posix()
        try:
            source = f.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # not a text template (a logo): loading it as a template would fail and say so
        try:
            tree = env.parse(source, name=name)
        except TemplateSyntaxError as exc:
            raise InputError(f"template {name!r} in --template-dir {str(shown)!r}, line {exc.lineno}: {exc.message}; "
                             "fix the template.") from None
        for node in tree.find_all((nodes.Getattr, nodes.Getitem)):
            key = node.attr if isinstance(node, nodes.Getattr) else getattr(node.arg, "value", None)
            if isinstance(key, str) and key.startswith("_"):
                raise InputError(f"template {name!r} in --template-dir {str(shown)!r}, line {node.lineno} reaches for "
                                 f"Python internals ({key!r}), which the sandbox refuses; a template may use only "
                                 "the report's variables (see docs/templates.md).")


def _check_page_size(context: dict) -> None:
    if context.get("page_size") not in PAGE_SIZES:
        raise InputError(f"page_size must be one of {', '.join(PAGE_SIZES)}, got {context.get('page_size')!r}.")


def _render(name: str, context: dict, template_dir=None, layout: str = "html") -> str:
    """Render template ``name`` on the format's layout (:data:`LAYOUTS`); with ``template_dir`` (see
    :func:`environment`) an error in one of the organisation's templates is bad input naming the template and
    line."""
    _check_page_size(context)
    context = dict(context, layout=LAYOUTS[layout])
    if template_dir is None:
        return environment().get_template(name).render(**context)
    from jinja2 import TemplateError, TemplateSyntaxError

    from jinja2.exceptions import SecurityError

    folder = check_template_dir(template_dir)
    try:
        return environment(folder).get_template(name).render(**context)
    except TemplateSyntaxError as exc:
        raise InputError(f"template {exc.name or exc.filename!r} in --template-dir {str(template_dir)!r}, line "
                         f"{exc.lineno}: {exc.message}; fix the template.") from None
    except SecurityError as exc:
        what = "reaches for Python internals, which" if "unsafe" in str(exc) else "does what"
        raise InputError(f"{_where(exc, folder, template_dir)} {what} the sandbox refuses ({exc}); a template may "
                         "use only the report's variables (see docs/templates.md).") from None
    except TemplateError as exc:
        raise InputError(f"{_where(exc, folder, template_dir)} failed: {type(exc).__name__}: {exc}; "
                         "see docs/templates.md for the variables a template sees.") from None
    except (ArithmeticError, TypeError, ValueError, LookupError) as exc:
        where = _where(exc, folder, template_dir)
        if not where.startswith("template "):  # not raised in the organisation's template: autopdp's own error
            raise
        raise InputError(f"{where} failed: {type(exc).__name__}: {exc}; fix the template.") from None


def _where(exc: BaseException, folder: str, template_dir) -> str:
    """'template NAME in --template-dir DIR, line N' for the innermost frame of ``exc`` in a template of
    ``folder`` (Jinja maps its frames to the template's file and line), else the built-in template's."""
    import traceback
    from pathlib import Path

    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.endswith(".py")
              and not f.filename.startswith("<")]
    root = Path(folder)
    mine = [f for f in frames if Path(f.filename).is_absolute() and root in Path(f.filename).parents]
    if mine:
        f = mine[-1]
        return f"template {Path(f.filename).relative_to(root).as_posix()!r} in --template-dir {str(template_dir)!r}, line {f.lineno}"
    if frames:
        f = frames[-1]
        return f"a template in --template-dir {str(template_dir)!r} (via {Path(f.filename).name!r}, line {f.lineno})"
    return f"a template in --template-dir {str(template_dir)!r}"


def render_html(context: dict, template_dir=None) -> str:
    """The self-contained HTML report: the complete record (inline CSS, SVG and one small
    hand-written script for sorting, filtering and opening figures; nothing from the network).
    ``template_dir``: a folder of the organisation's templates overriding the built-in ones by name."""
    return _render(HTML_TEMPLATE, context, template_dir)


def render_pdf_html(context: dict, template_dir=None) -> str:
    """The HTML of the curated PDF document (no script): cover, findings, top rows, methodology."""
    return _render(PDF_TEMPLATE, context, template_dir, layout="pdf")


def render_word_methodology(context: dict, template_dir=None) -> str:
    """The ``methodology`` block as HTML for the Word report: the organisation's (``report.html.j2`` in
    ``template_dir`` that extends the built-in report and overrides it) or the built-in one."""
    if template_dir is not None and not _extends(check_template_dir(template_dir)):
        template_dir = None  # a report.html.j2 that renders the whole page itself has no block to take
    return _render(HTML_TEMPLATE, context, template_dir, layout="docx")


def _extends(folder: str) -> bool:
    """Whether ``folder`` has no ``report.html.j2`` of its own, or one that extends another template."""
    from pathlib import Path

    from jinja2 import nodes

    own = Path(folder) / HTML_TEMPLATE
    if not own.is_file():
        return True
    tree = environment(folder).parse(own.read_text(encoding="utf-8"), name=HTML_TEMPLATE)
    return tree.find(nodes.Extends) is not None


_SVG = re.compile(r"<svg\b.*?</svg>", flags=re.S)


def svg_figures_as_images(html: str) -> str:
    """The HTML with each inline ``<svg>`` figure as an ``<img>`` of the same SVG (a data: URI).

    WeasyPrint draws both the same way (the same pages and text), but an inline figure's
    thousands of SVG elements also go through its HTML parser and the page's CSS cascade:
    as images, the demo report's PDF renders in about 20% less time.  Only autopdp's own
    figures are inline SVG (text from data is escaped), so every match is one of them.
    """
    from ..utils.xmltext import xml_text

    def as_image(match):
        # an image is parsed as XML: a control character from the data (a column name) is escaped, else
        # WeasyPrint drops the whole figure
        data = base64.b64encode(xml_text(match.group(0)).encode("utf-8")).decode("ascii")
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

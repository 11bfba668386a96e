"""The Word document's writing primitives: the styles it uses (Word's own ``Heading``, ``Title`` and ``Caption``
styles, created where a template lacks them; its ``Table Grid`` table style where it has one), and
:class:`_Writer`, which adds headings, paragraphs, tables, figures with their captions and alt text, and fields
to a python-docx document.  The document's structure (its chapters, in the PDF's order) is
:mod:`autopdp.report.word`'s."""

from __future__ import annotations

import io
import re

from ..utils.xmltext import xml_text

__all__ = ["PNG_DPI"]

#: Print resolution of the figures in the Word document.
PNG_DPI = 200

_MONO = "Courier New"


# ---------------------------------------------------------------------------------------- styles
_HEADING_SIZES = {1: 16, 2: 13}


def _style(doc, name: str):
    """The named paragraph style; created (plainly) when the template does not define it, so any
    organisation's template works.  Headings keep Word's built-in names and outline levels."""
    from docx.enum.style import WD_STYLE_TYPE
    from docx.shared import Pt

    try:
        return doc.styles[name]
    except KeyError:
        pass
    st = doc.styles.add_style(name, WD_STYLE_TYPE.PARAGRAPH)
    try:
        st.base_style = doc.styles["Normal"]
    except KeyError:
        pass
    m = re.fullmatch(r"Heading (\d)", name)
    if m:
        level = int(m.group(1))
        st.font.bold = True
        st.font.size = Pt(_HEADING_SIZES.get(level, 12))
        st.paragraph_format.space_before = Pt(12)
        st.paragraph_format.keep_with_next = True
        _set_outline_level(st, level - 1)
    elif name == "Title":
        st.font.bold = True
        st.font.size = Pt(24)
        _set_outline_level(st, None)
    elif name == "Caption":
        st.font.italic = True
        st.font.size = Pt(8.5)
    return st


def _set_outline_level(style, level):
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    if level is None:
        return
    ppr = style.element.get_or_add_pPr()
    el = OxmlElement("w:outlineLvl")
    el.set(qn("w:val"), str(level))
    ppr.append(el)


def _table_style(doc):
    from docx.enum.style import WD_STYLE_TYPE

    try:
        st = doc.styles["Table Grid"]
        return st if st.type == WD_STYLE_TYPE.TABLE else None
    except KeyError:
        return None


# ---------------------------------------------------------------------------------------- writer
class _Writer:
    def __init__(self, doc, context):
        from docx.shared import Emu

        self.doc = doc
        self.ctx = context
        self.n_figures = 0
        section = doc.sections[-1]
        width = (section.page_width or Emu(7560310)) - (section.left_margin or 0) - (section.right_margin or 0)
        self.text_width = int(width)
        self.grid_style = _table_style(doc)

    # -- text
    def heading(self, text, level):
        return self.doc.add_paragraph(xml_text(text), style=_style(self.doc, f"Heading {level}"))

    def para(self, text="", *, style=None, bold=False, italic=False, mono=False, size=None):
        p = self.doc.add_paragraph(style=_style(self.doc, style) if style else None)
        if text:
            self.run(p, text, bold=bold, italic=italic, mono=mono, size=size)
        return p

    @staticmethod
    def run(p, text, *, bold=False, italic=False, mono=False, size=None, sub=False, sup=False):
        from docx.shared import Pt

        r = p.add_run(xml_text(text))
        if bold:
            r.bold = True
        if italic:
            r.italic = True
        if mono:
            r.font.name = _MONO
        if size:
            r.font.size = Pt(size)
        if sub:
            r.font.subscript = True
        if sup:
            r.font.superscript = True
        return r

    def bullet(self, text, *, bold_lead=None):
        try:
            p = self.doc.add_paragraph(style=self.doc.styles["List Bullet"])
            prefix = ""
        except KeyError:
            p = self.doc.add_paragraph()
            prefix = "• "
        if bold_lead:
            self.run(p, prefix + bold_lead, bold=True)
            self.run(p, text)
        else:
            self.run(p, prefix + text)
        return p

    # -- tables
    def table(self, header, rows, *, mono_cols=(), size=8, widths=None, header_col=False):
        from docx.oxml import OxmlElement
        from docx.oxml.ns import qn
        from docx.shared import Pt

        ncols = len(header) if header else max((len(r) for r in rows), default=1)
        t = self.doc.add_table(rows=0, cols=ncols)
        if self.grid_style is not None:
            t.style = self.grid_style
        else:
            _borders(t)
        if header:
            cells = t.add_row().cells
            for c, text in zip(cells, header):
                self._cell(c, text, bold=True, size=size)
            trpr = t.rows[0]._tr.get_or_add_trPr()
            h = OxmlElement("w:tblHeader")  # repeat the header row on every page
            h.set(qn("w:val"), "true")
            trpr.append(h)
        for row in rows:
            cells = t.add_row().cells
            for i, (c, text) in enumerate(zip(cells, row)):
                self._cell(c, text, mono=i in mono_cols, size=size, bold=header_col and i == 0)
        self.widths(t, widths or _auto_widths(header, rows, ncols))
        self.doc.add_paragraph().paragraph_format.space_after = Pt(2)
        return t

    def widths(self, t, fractions):
        """Column widths as fractions of the text width (the grid for LibreOffice, each cell for Word)."""
        from docx.shared import Emu

        total = float(sum(fractions)) or 1.0
        emus = [Emu(int(self.text_width * f / total)) for f in fractions]
        t.autofit = False
        for col, e in zip(t.columns, emus):
            col.width = e
        for row in t.rows:
            for c, e in zip(row.cells, emus):
                c.width = e

    def _cell(self, cell, text, *, bold=False, mono=False, size=8):
        p = cell.paragraphs[0]
        text = "" if text is None else str(text)
        if text:
            self.run(p, text, bold=bold, mono=mono, size=size)
        return p

    # -- figures
    def figure(self, f, *, width_fraction=1.0):
        """An inline image at print resolution, its alt text and a numbered caption."""
        if not f:
            return
        self.image(self.doc.add_paragraph(), f.get("svg"), f.get("alt", ""), width_fraction)
        self.caption(self.doc.add_paragraph(style=_style(self.doc, "Caption")), f.get("caption", ""))

    def image(self, p, svg, alt, width_fraction=1.0, max_width=None):
        from docx.shared import Emu

        png = getattr(svg, "png", None)
        if not png:
            self.run(p, "[figure not available in this format]", italic=True)
            return
        dpi = getattr(svg, "dpi", PNG_DPI) or PNG_DPI
        px_w = int.from_bytes(png[16:20], "big")  # the PNG's IHDR width
        natural = int(px_w / dpi * 914400)
        width = min(natural, int((max_width or self.text_width) * width_fraction))
        shape = p.add_run().add_picture(io.BytesIO(png), width=Emu(width))
        self.n_figures += 1
        doc_pr = shape._inline.docPr
        doc_pr.set("descr", xml_text(alt or ""))
        doc_pr.set("title", f"Figure {self.n_figures}")
        p.paragraph_format.keep_with_next = True

    def caption(self, p, text):
        """'Figure N: text' with N a SEQ field (Word's list of figures and cross references use it)."""
        from docx.oxml import OxmlElement
        from docx.oxml.ns import qn

        self.run(p, "Figure ")
        fld = OxmlElement("w:fldSimple")
        fld.set(qn("w:instr"), " SEQ Figure \\* ARABIC ")
        r = OxmlElement("w:r")
        t = OxmlElement("w:t")
        t.text = str(self.n_figures)
        r.append(t)
        fld.append(r)
        p._p.append(fld)
        self.run(p, f": {text}")

    def toc(self, titles):
        """A table-of-contents field (Heading 1) whose shown text lists the chapters until Word
        updates it (References > Update table, or F9) with page numbers."""
        from docx.oxml import OxmlElement
        from docx.oxml.ns import qn

        def fld_char(p, kind):
            r = OxmlElement("w:r")
            fc = OxmlElement("w:fldChar")
            fc.set(qn("w:fldCharType"), kind)
            r.append(fc)
            p._p.append(r)

        first = self.doc.add_paragraph()
        fld_char(first, "begin")
        r = OxmlElement("w:r")
        instr = OxmlElement("w:instrText")
        instr.set(qn("xml:space"), "preserve")
        instr.text = ' TOC \\o "1-2" \\h \\z \\u '
        r.append(instr)
        first._p.append(r)
        fld_char(first, "separate")
        p = first
        for i, title in enumerate(titles):
            if i:
                p = self.doc.add_paragraph()
            self.run(p, title)
        fld_char(p, "end")


def _auto_widths(header, rows, ncols):
    """Widths in proportion to each column's typical text (long texts wrap, short ones stay narrow)."""
    out = []
    for i in range(ncols):
        cells = [len(str(r[i])) for r in rows if i < len(r) and r[i] is not None]
        head = max((len(word) for word in str(header[i]).split()), default=0) if header else 0
        typical = sum(cells) / len(cells) if cells else 0
        out.append(max(4.0, head, min(45.0, typical)) + 2.0)
    return out


def _borders(table):
    """Thin grey borders, for templates without the 'Table Grid' style."""
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    tbl_pr = table._tbl.tblPr
    borders = OxmlElement("w:tblBorders")
    for edge in ("top", "left", "bottom", "right", "insideH", "insideV"):
        el = OxmlElement(f"w:{edge}")
        el.set(qn("w:val"), "single")
        el.set(qn("w:sz"), "4")
        el.set(qn("w:space"), "0")
        el.set(qn("w:color"), "A0A7B0")
        borders.append(el)
    tbl_pr.append(borders)

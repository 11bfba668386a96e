"""The Word document's package: an organisation's ``.docx``/``.dotx`` template read within fixed bounds (its
file, each part and all parts uncompressed, the number of parts: a zip bomb is refused before it is inflated),
and the written document re-zipped without anything Word would fetch (external relationships and the fields
that fetch).  Used by :mod:`autopdp.report.word`, which writes the document itself."""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

from ..errors import InputError

__all__ = ["check_docx_template"]

_DOCX_MAIN = "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"
_DOTX_MAIN = "application/vnd.openxmlformats-officedocument.wordprocessingml.template.main+xml"


# ---------------------------------------------------------------------------------------- template
#: Limits on the organisation's .docx, checked from the file's size and the zip's directory before any
#: part is inflated: a template is styles, a header and a few pages, far below these.
MAX_TEMPLATE_MB = 50  # the file
MAX_TEMPLATE_PART_MB = 64  # one part, uncompressed
MAX_TEMPLATE_TOTAL_MB = 200  # every part, uncompressed
MAX_TEMPLATE_PARTS = 2000
#: The XML parts python-docx parses into trees in memory (a tree costs ~20 times its text: a 122 KB file of
#: 60 MB of XML asked 3.1 GB and 309 s): a template's document, styles and headers are far below these.
MAX_TEMPLATE_XML_PART_MB = 8
MAX_TEMPLATE_XML_TOTAL_MB = 24
_MB = 1024 * 1024


def check_docx_template(path) -> Path:
    """``path`` as a Path when it is a Word document (.docx or .dotx) python-docx can build on, within
    the size limits (:data:`MAX_TEMPLATE_MB` and the uncompressed limits, from the zip's directory: no part
    is inflated); otherwise :class:`InputError` naming it.  Cheap: reads the zip's directory only."""
    p = Path(path)
    what = f"--docx-template {str(p)!r}"
    if not p.exists():
        raise InputError(f"{what} does not exist; give the path of your organisation's .docx template.")
    if not p.is_file():
        raise InputError(f"{what} is not a file; give the path of a .docx template.")
    size = p.stat().st_size
    if size > MAX_TEMPLATE_MB * _MB:
        raise InputError(f"{what} is {size / _MB:.1f} MB, over the {MAX_TEMPLATE_MB} MB limit for a template; "
                         "give a template of styles and pages without large embedded files.")
    try:
        with zipfile.ZipFile(p) as z:
            infos = z.infolist()
            _check_template_sizes(infos, what)
            names = set(z.namelist())
            types = (_read_bounded(z, z.getinfo("[Content_Types].xml")).decode("utf-8", "replace")
                     if "[Content_Types].xml" in names else "")
    except (zipfile.BadZipFile, OSError) as exc:
        raise InputError(f"{what} is not a Word .docx file ({type(exc).__name__}: {exc}); save the template as "
                         "Word Document (.docx).") from None
    if "word/document.xml" not in names or (_DOCX_MAIN not in types and _DOTX_MAIN not in types):
        raise InputError(f"{what} is not a Word .docx file (no word/document.xml); save the template as Word "
                         "Document (.docx).")
    return p


def _check_template_sizes(infos, what: str) -> None:
    """The zip's declared sizes against the limits (zipfile never inflates a part past its declared size)."""
    if len(infos) > MAX_TEMPLATE_PARTS:
        raise InputError(f"{what} holds {len(infos)} parts, over the limit of {MAX_TEMPLATE_PARTS}; give a plain "
                         "Word template.")
    xml = [i for i in infos if i.filename.lower().endswith((".xml", ".rels"))]
    big_xml = max(xml, key=lambda i: i.file_size, default=None)
    if big_xml is not None and big_xml.file_size > MAX_TEMPLATE_XML_PART_MB * _MB:
        raise InputError(f"{what}: its XML part {big_xml.filename!r} inflates to {big_xml.file_size / _MB:.1f} MB, over "
                         f"the {MAX_TEMPLATE_XML_PART_MB} MB limit for one XML part of a template (parsed in memory); "
                         "give a template of styles and a few pages.")
    if sum(i.file_size for i in xml) > MAX_TEMPLATE_XML_TOTAL_MB * _MB:
        raise InputError(f"{what}: its XML parts inflate to {sum(i.file_size for i in xml) / _MB:.1f} MB, over the "
                         f"{MAX_TEMPLATE_XML_TOTAL_MB} MB limit for a template's XML (parsed in memory); give a "
                         "template of styles and a few pages.")
    big = max(infos, key=lambda i: i.file_size, default=None)
    if big is not None and big.file_size > MAX_TEMPLATE_PART_MB * _MB:
        raise InputError(f"{what}: its part {big.filename!r} inflates to {big.file_size / _MB:.1f} MB, over the "
                         f"{MAX_TEMPLATE_PART_MB} MB limit for one part of a template; give a template without "
                         "large embedded files.")
    total = sum(i.file_size for i in infos)
    if total > MAX_TEMPLATE_TOTAL_MB * _MB:
        raise InputError(f"{what} inflates to {total / _MB:.1f} MB, over the {MAX_TEMPLATE_TOTAL_MB} MB limit for a "
                         "template; give a template without large embedded files.")


def _open(template):
    """A python-docx Document: the default one, or the template's (a .dotx read as a .docx)."""
    import docx

    if template is None:
        return docx.Document()
    p = check_docx_template(template)
    try:
        data = _bounded_copy(p)
        if _DOTX_MAIN.encode() in _member(data, "[Content_Types].xml"):
            data = _rezip(data, {"[Content_Types].xml": lambda b: b.replace(_DOTX_MAIN.encode(), _DOCX_MAIN.encode())})
        return docx.Document(io.BytesIO(data))
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - any parse failure of the user's file is bad input
        raise InputError(f"--docx-template {str(p)!r} cannot be read as a Word document ({type(exc).__name__}: "
                         f"{exc}); save it again as Word Document (.docx).") from None


_CHUNK = 1024 * 1024


def _read_bounded(z: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """The part ``info`` inflated in 1 MB steps: never more than its declared size (checked against the
    limits) in memory, and a part whose data does not match its declared size and CRC is BadZipFile."""
    out = bytearray()
    with z.open(info) as f:
        while chunk := f.read(_CHUNK):
            out += chunk
    return bytes(out)


def _bounded_copy(path: Path) -> bytes:
    """The template re-packed from its parts read with :func:`_read_bounded`: what python-docx parses holds
    exactly the declared (size-checked) content, so a part whose stream inflates past its declared size
    (a lying zip directory) cannot make the parser inflate it."""
    out = io.BytesIO()
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        _check_template_sizes(src.infolist(), f"--docx-template {str(path)!r}")
        for info in src.infolist():
            new = zipfile.ZipInfo(info.filename, date_time=info.date_time)
            new.compress_type = zipfile.ZIP_DEFLATED
            new.external_attr = info.external_attr
            dst.writestr(new, _read_bounded(src, info))
    return out.getvalue()


def _member(data: bytes, name: str) -> bytes:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return z.read(name)


def _rezip(data: bytes, change=None, fixed_time=None) -> bytes:
    """The zip ``data`` with members changed by ``change[name](bytes)``; with ``fixed_time`` every
    member gets that timestamp (the same document is the same bytes)."""
    change = change or {}
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            blob = src.read(info.filename)
            if info.filename in change:
                blob = change[info.filename](blob)
            new = zipfile.ZipInfo(info.filename, date_time=fixed_time or info.date_time)
            new.compress_type = zipfile.ZIP_DEFLATED
            new.external_attr = info.external_attr
            dst.writestr(new, blob)
    return out.getvalue()


# ------------------------------------------------------------------- no external links (nothing for Word to fetch)
_REL_NS = "http://schemas.openxmlformats.org/package/2006/relationships"
_R_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
# elements that exist only to point at what their relationship names: dropped with it (elsewhere only the
# reference is dropped: a hyperlink keeps its text, a linked picture its place)
_DROP_WITH_LINK = {"attachedTemplate", "subDoc", "altChunk", "dataSource", "headerSource", "src"}
_FETCHING_FIELD = re.compile(r"^\s*(INCLUDEPICTURE|INCLUDETEXT|LINK|DDE|DDEAUTO|IMPORT)\b", re.I)


def _xml_parser():
    from lxml import etree

    # no DTD, no entities, no network: a template's XML is data
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)


def _without_external_links(data: bytes) -> dict:
    """Changes for :func:`_rezip` that remove every relationship with ``TargetMode="External"`` (the
    template's ``attachedTemplate`` on a server, a linked picture, a hyperlink, a mail-merge source) and
    what points at it in its part, and empty the instructions of fields that fetch (INCLUDEPICTURE,
    INCLUDETEXT, LINK, DDE): the report Word opens fetches nothing."""
    from lxml import etree

    changes: dict = {}
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        names = z.namelist()
        dropped: dict[str, set] = {}
        for name in names:
            if not name.endswith(".rels"):
                continue
            root = etree.fromstring(z.read(name), _xml_parser())
            gone = [el for el in root if el.get("TargetMode") == "External"]
            if not gone:
                continue
            for el in gone:
                root.remove(el)
            blob = etree.tostring(root, xml_declaration=True, encoding="UTF-8", standalone=True)
            changes[name] = lambda _b, blob=blob: blob
            folder, _, rels = name.rpartition("_rels/")
            dropped[folder + rels[: -len(".rels")]] = {el.get("Id") for el in gone}
        for name in names:
            if not name.endswith(".xml") or name.startswith("[") or name.endswith(".rels"):
                continue
            blob = z.read(name)
            ids = dropped.get(name, set())
            if not ids and not (b"instr" in blob and re.search(rb"INCLUDE|LINK|DDE|IMPORT", blob)):
                continue
            root = etree.fromstring(blob, _xml_parser())
            if _unlink(root, ids):
                out = etree.tostring(root, xml_declaration=True, encoding="UTF-8", standalone=True)
                changes[name] = lambda _b, out=out: out
    return changes


def _unlink(root, ids: set) -> bool:
    """Remove from the part ``root`` the references to the relationships ``ids`` and the instructions of
    fields that fetch; True when anything changed."""
    changed = False
    w_instr = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}instr"
    for el in list(root.iter()):
        if not isinstance(el.tag, str):
            continue
        local = el.tag.rpartition("}")[2]
        if local == "instrText" and el.text and _FETCHING_FIELD.match(el.text):
            el.text, changed = " ", True
        if el.get(w_instr) is not None and _FETCHING_FIELD.match(el.get(w_instr)):
            el.set(w_instr, " ")
            changed = True
        refs = [k for k, v in el.attrib.items() if k.startswith("{" + _R_NS + "}") and v in ids]
        if not refs:
            continue
        changed = True
        if local in _DROP_WITH_LINK:
            # a mail merge's data source goes with the whole mail merge; the rest with their element
            target = next((a for a in el.iterancestors() if isinstance(a.tag, str)
                           and a.tag.rpartition("}")[2] == "mailMerge"), el)
            if target.getparent() is not None:
                target.getparent().remove(target)
                continue
        for k in refs:
            del el.attrib[k]
    return changed

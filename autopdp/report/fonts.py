"""Fonts of the report: one stack for the HTML/PDF (report.css) and the figures (matplotlib's fallback),
and a check of which characters of the report no font on this machine can draw.

DejaVu Sans covers Latin, Greek and Cyrillic; Noto Sans CJK (Debian's ``fonts-noto-cjk``) covers
Chinese, Japanese and Korean.  WeasyPrint finds fonts through fontconfig and falls back to any
installed font that has a glyph; a character that no installed font has is drawn as an empty
box, so the report says which characters those are (:func:`glyph_note`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping

__all__ = ["FONT_STACK", "figure_fonts", "missing_glyphs", "glyph_note", "report_texts"]

#: The report's fonts in order of preference (report.css names the same families).
FONT_STACK = ("DejaVu Sans", "Noto Sans CJK SC", "Noto Sans CJK JP", "Noto Sans CJK KR", "Noto Sans CJK TC",
              "Noto Sans", "WenQuanYi Zen Hei", "Droid Sans Fallback")
#: Fonts that draw a placeholder for every character (matplotlib ships one): they cover nothing.
_PLACEHOLDER_FONTS = ("lastresort",)


@functools.lru_cache(maxsize=1)
def figure_fonts() -> tuple[str, ...]:
    """The families of :data:`FONT_STACK` matplotlib finds here, in that order: its font fallback for
    the figures (a CJK name is measured and drawn with the CJK font, not as DejaVu's missing glyph)."""
    from matplotlib import font_manager

    manager = font_manager.fontManager
    found = {entry.name for entry in manager.ttflist}
    if not set(FONT_STACK) <= found:
        # matplotlib's font list is cached: fonts installed after it was made (fonts-noto-cjk) are added here
        known = {entry.fname for entry in manager.ttflist}
        for path in _system_font_files():
            if path not in known:
                try:
                    manager.addfont(path)
                except (OSError, RuntimeError, ValueError):  # a font file FreeType cannot read
                    continue
        found = {entry.name for entry in manager.ttflist}
    return tuple(f for f in FONT_STACK if f in found) or ("DejaVu Sans",)


@functools.lru_cache(maxsize=1)
def _system_font_files() -> tuple[str, ...]:
    """The installed font files (what fontconfig, and so WeasyPrint, can use); the stack's fonts first."""
    from matplotlib import font_manager

    files = sorted({f for f in font_manager.findSystemFonts()
                    if not any(p in f.lower() for p in _PLACEHOLDER_FONTS)})
    preferred = []
    for name in FONT_STACK:
        preferred += [e.fname for e in font_manager.fontManager.ttflist if e.name == name and e.fname in files]
    return tuple(dict.fromkeys([*preferred, *files]))


@functools.lru_cache(maxsize=None)
def _charmap(path: str) -> frozenset:
    from matplotlib import ft2font

    try:
        return frozenset(ft2font.FT2Font(path).get_charmap())
    except (OSError, RuntimeError, ValueError):  # a font file FreeType cannot read covers nothing
        return frozenset()


def missing_glyphs(text: str) -> list[str]:
    """The characters of ``text`` (other than spaces and control characters) that no installed font
    has, in order of first appearance."""
    wanted = {c for c in text if ord(c) > 0x7E and c.isprintable() and not c.isspace()}
    if not wanted:
        return []
    for path in _system_font_files():
        wanted -= {c for c in wanted if ord(c) in _charmap(path)}
        if not wanted:
            return []
    return [c for c in dict.fromkeys(text) if c in wanted]


def report_texts(value) -> Iterable[str]:
    """Every text of a report context (nested dicts and lists), figures' SVG left out (their labels are
    texts of the context too)."""
    if isinstance(value, str):
        if not value.lstrip().startswith("<svg"):
            yield value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from report_texts(k)
            yield from report_texts(v)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            yield from report_texts(v)
    elif value is not None and not isinstance(value, (bool, int, float)):
        text = str(value)
        if not text.startswith("<"):  # objects' reprs are not shown
            yield text


def glyph_note(texts: Iterable[str]) -> str | None:
    """The report's note on characters no installed font can draw, or None when every one can."""
    missing = missing_glyphs("".join(texts))
    if not missing:
        return None
    shown = " ".join(missing[:20]) + (f" ... ({len(missing)} in all)" if len(missing) > 20 else "")
    return (f"Some characters of this report cannot be drawn: no font on the machine that made it has {shown}; "
            "they appear as empty boxes in the PDF and the figures. Install a font that covers them (Debian/Ubuntu: "
            "apt-get install fonts-noto-cjk for Chinese, Japanese and Korean) and rerun.")

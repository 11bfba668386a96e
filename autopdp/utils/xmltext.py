"""Text that XML 1.0 can carry: every character XML 1.0 forbids (the C0 control characters other
than tab, newline and carriage return; lone surrogates; U+FFFE and U+FFFF) written as a visible
escape (``\\x01``, ``\\ufffe``), so a name from the data (a column called ``"a\\x01b"``) never makes
gate.xml unparsable or the Word document unwritable, and a reader still sees that it was there."""

from __future__ import annotations

import re

__all__ = ["xml_text"]

_NOT_XML_1_0 = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _escape(match: re.Match) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def xml_text(text) -> str:
    """``text`` (made text with ``str``) with each character XML 1.0 forbids as a visible escape."""
    text = "" if text is None else str(text)
    return _NOT_XML_1_0.sub(_escape, text)

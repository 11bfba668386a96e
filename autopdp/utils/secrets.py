"""Credentials kept out of what autopdp records and prints: the passwords and tokens of URIs, secret query
values and the values of options whose names name a secret, replaced by ``***``."""

from __future__ import annotations

import re

__all__ = ["REDACTED", "secrets_in", "redact", "redact_argv"]

#: What replaces a secret in a recorded command line.
REDACTED = "***"
#: Words in an option's name or a URI query key that mark its value as a secret.
_SECRET_WORD = r"(?:token|passw(?:or)?d|pwd|secret|api[-_]?key|access[-_]?key|private[-_]?key|credential|signature|auth(?!or))"
#: ``scheme://user:password@`` or ``scheme://token@``: the user information of a URI.
_URI_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#@\s]*)@")
#: ``?token=...`` / ``&password=...``: a query (or ;-parameter) value whose key names a secret.
_SECRET_QUERY = re.compile(r"(?P<key>[?&;][^=&;#\s]*" + _SECRET_WORD + r"[^=&;#\s]*=)(?P<value>[^&;#\s]*)", re.I)
#: ``--token VALUE`` / ``--db-password=VALUE``: an option whose name names a secret.
_SECRET_OPTION = re.compile(r"-{1,2}[A-Za-z0-9_-]*" + _SECRET_WORD + r"[A-Za-z0-9_-]*", re.I)


def _redact_userinfo(match: re.Match) -> str:
    user, sep, _password = match.group("userinfo").partition(":")
    if sep:  # user:password -> user:*** (the user name says whose account; the password goes)
        return f"{match.group('scheme')}{user}:{REDACTED}@"
    return f"{match.group('scheme')}{REDACTED}@"  # a lone user part is often a token (https://TOKEN@host)


def secrets_in(text: str) -> list[str]:
    """The credentials :func:`redact` hides in ``text`` (passwords and tokens of URIs, secret query values)."""
    found = []
    for m in _URI_USERINFO.finditer(str(text)):
        user, sep, password = m.group("userinfo").partition(":")
        found.append(password if sep else user)
    found += [m.group("value") for m in _SECRET_QUERY.finditer(str(text))]
    return [f for f in found if f]


def redact(text: str, *, also=()) -> str:
    """``text`` with the credentials in URIs replaced by ``***``: ``tls://user:token@host`` ->
    ``tls://user:***@host``, ``https://TOKEN@host`` -> ``https://***@host``, ``?token=abc`` -> ``?token=***``;
    and every literal in ``also`` (e.g. :func:`secrets_in` of an address a library's message repeats in
    its own form)."""
    text = _URI_USERINFO.sub(_redact_userinfo, str(text))
    text = _SECRET_QUERY.sub(lambda m: m.group("key") + REDACTED, text)
    for secret in sorted((str(a) for a in also if a), key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


def redact_argv(argv) -> list[str]:
    """The arguments with every credential redacted: in URIs (:func:`redact`), and the value of an option
    whose name suggests a secret (``--token X``, ``--password=X``)."""
    out: list[str] = []
    secret_next = False
    for arg in (str(a) for a in argv):
        if secret_next:
            out.append(REDACTED)
            secret_next = False
            continue
        name, eq, _value = arg.partition("=")
        if arg.startswith("-") and _SECRET_OPTION.fullmatch(name):
            if eq:
                out.append(f"{name}={REDACTED}")
            else:
                out.append(arg)
                secret_next = True
            continue
        out.append(redact(arg))
    return out

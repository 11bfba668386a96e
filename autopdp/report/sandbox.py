"""Jinja's sandbox with every way a template can build a large text or list bounded.

A template is code another team may supply (``--template-dir``); the sandbox already keeps it from Python's
internals.  Here it is also kept from allocating: ``*`` and ``**``, the filters that build texts (``replace``,
``center``, ``indent``, ``join``, ``format``, ``wordwrap``, ``truncate``) and the text methods a template may call
(``"x".ljust(n)``, ``.center``, ``.zfill``, ``.expandtabs``, ``.replace``, ``.join``, ``.format``, ``%``) are
refused, before they run, when their result would pass :data:`MAX_TEMPLATE_PRODUCT` items.
"""

from __future__ import annotations

import re

__all__ = ["MAX_TEMPLATE_PRODUCT", "sandbox_class", "bounded_filters", "result_size"]

#: The longest text or list a template may build (and ``**`` results stay under 4096 bits): a template is not a
#: place to allocate gigabytes, so ``"x" * 10**10``, ``10**10**10`` or ``s|replace("", big)`` is refused, not run.
MAX_TEMPLATE_PRODUCT = 10_000_000
_MAX_POWER_BITS = 4096
_NUMBER = re.compile(r"\d+")


def _len(v) -> int:
    return len(v) if isinstance(v, (str, bytes, list, tuple)) else len(str(v))


def _widths(fmt) -> int:
    """The largest number written in a format string (a field width or precision), 0 without one."""
    return max((int(n) for n in _NUMBER.findall(fmt) if len(n) < 12), default=0) if isinstance(fmt, str) else 0


def _joined(items, sep) -> int | None:
    if not isinstance(items, (list, tuple, str)):
        return None
    return sum(_len(i) for i in items) + max(len(items) - 1, 0) * _len(sep)


def result_size(name: str, s, args: tuple, kwargs: dict) -> int | None:
    """An upper bound of the length of ``s.name(*args, **kwargs)`` (a text method or a filter of the same name),
    or None when the call builds nothing large."""
    def arg(i, key, default=None):
        return args[i] if len(args) > i else kwargs.get(key, default)

    n = _len(s)
    if name in ("center", "ljust", "rjust", "zfill"):
        width = arg(0, "width", 80)
        return max(n, width) if isinstance(width, int) else None
    if name == "indent":
        width = arg(0, "width", 4)
        pad = len(width) if isinstance(width, str) else width if isinstance(width, int) else 0
        return n + (str(s).count("\n") + 1) * max(pad, 0)
    if name == "expandtabs":
        size = arg(0, "tabsize", 8)
        return n * max(size, 1) if isinstance(size, int) else None
    if name == "replace":
        old, new = str(arg(0, "old", "")), str(arg(1, "new", ""))
        hits = (n + 1) if old == "" else str(s).count(old)
        return n + hits * max(len(new) - len(old), 0)
    if name == "join":
        return _joined(args[0], s) if args else None
    if name in ("format", "format_map"):
        return n + _widths(s) + sum(_len(a) for a in args) + sum(_len(v) for v in kwargs.values())
    if name in ("wordwrap", "truncate"):
        return n + max((a for a in args if isinstance(a, int) and not isinstance(a, bool)), default=0)
    return None


def _check(name: str, size) -> None:
    from jinja2.exceptions import SecurityError

    if size is not None and size > MAX_TEMPLATE_PRODUCT:
        raise SecurityError(f"{name} would build {size:,} items, over the limit of {MAX_TEMPLATE_PRODUCT:,} for a "
                            "template")


def bounded_filters(filters: dict) -> dict:
    """The text-building filters of ``filters`` wrapped so that a result over :data:`MAX_TEMPLATE_PRODUCT` is
    refused before it is built."""
    out = {}
    for name in ("replace", "center", "indent", "format", "wordwrap", "truncate"):
        original = filters[name]

        def wrapped(*args, __name=name, __original=original, **kwargs):
            # environment/context filters receive them first: the text is the first argument that is not Jinja's
            values = [a for a in args if type(a).__module__.split(".")[0] != "jinja2"]
            if values:
                _check(f"the {__name} filter", result_size(__name, values[0], tuple(values[1:]), kwargs))
            return __original(*args, **kwargs)

        for attr in ("jinja_pass_arg",):
            if hasattr(original, attr):
                setattr(wrapped, attr, getattr(original, attr))
        out[name] = wrapped
    join = filters["join"]

    def bounded_join(*args, **kwargs):
        values = [a for a in args if type(a).__module__.split(".")[0] != "jinja2"]
        if values and isinstance(values[0], (list, tuple)):
            _check("the join filter", _joined(values[0], values[1] if len(values) > 1 else kwargs.get("d", "")))
        return join(*args, **kwargs)

    if hasattr(join, "jinja_pass_arg"):
        bounded_join.jinja_pass_arg = join.jinja_pass_arg
    out["join"] = bounded_join
    return out


def sandbox_class():
    from jinja2.exceptions import SecurityError
    from jinja2.sandbox import SandboxedEnvironment

    class Sandbox(SandboxedEnvironment):
        """Jinja's sandbox, with ``*``, ``**``, ``%`` and the text methods bounded (:data:`MAX_TEMPLATE_PRODUCT`)."""

        intercepted_binops = frozenset(["*", "**", "%"])

        def call_binop(self, context, operator, left, right):
            def size(v):
                if isinstance(v, (str, bytes, list, tuple)):
                    return len(v)
                if isinstance(v, int) and not isinstance(v, bool):
                    return abs(v)
                return None

            a, b = size(left), size(right)
            if operator == "**" and isinstance(left, int) and isinstance(right, int) and a is not None and b is not None:
                if a > 1 and b * a.bit_length() > _MAX_POWER_BITS:
                    raise SecurityError(f"{left} ** {right} has over {_MAX_POWER_BITS} bits, over the limit for a "
                                        "template")
            if operator == "*" and a is not None and b is not None and isinstance(left, (str, bytes, list, tuple)) \
                    != isinstance(right, (str, bytes, list, tuple)) and a * b > MAX_TEMPLATE_PRODUCT:
                raise SecurityError(f"a repetition to {a * b:,} items is over the limit of "
                                    f"{MAX_TEMPLATE_PRODUCT:,} for a template")
            if operator == "%" and isinstance(left, str):
                _check("a % format", len(left) + _widths(left) + _len(right))
            return super().call_binop(context, operator, left, right)

        def wrap_str_format(self, value):
            """``str.format`` / ``format_map`` as a template reaches them (Jinja wraps them on access), bounded."""
            inner = super().wrap_str_format(value)
            if inner is None:
                return None
            text = value.__self__

            def bounded(*args, **kwargs):
                given = dict(args[0]) if value.__name__ == "format_map" and args and hasattr(args[0], "keys") else kwargs
                _check(f"str.{value.__name__}", result_size("format", text, args, given))
                return inner(*args, **kwargs)

            return bounded

        def call(__self, __context, __obj, *args, **kwargs):  # noqa: N805 - Jinja's signature
            owner = getattr(__obj, "__self__", None)
            if isinstance(owner, (str, bytes)):
                _check(f"str.{__obj.__name__}", result_size(__obj.__name__, owner, args, kwargs))
            return super().call(__context, __obj, *args, **kwargs)

    return Sandbox

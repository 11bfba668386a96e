"""The exception the exact tree path raises when it does not apply (a module of its own, so that
:mod:`autopdp.pd.tree.exact_pd` and :mod:`autopdp.pd.tree.ice` can both raise it without importing each other
both ways)."""

__all__ = ["TreePathUnavailable"]


class TreePathUnavailable(Exception):
    """The fast path does not apply; the message says why (the engine uses brute force)."""

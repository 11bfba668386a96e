"""Figures asked for while the report's context is built, drawn together once it is built.

Inside :func:`_figures_drawn_together`, :func:`_plot` queues a figure and returns a stand-in; on
leaving, the figures the context still holds are drawn at once (:func:`.figures.draw_all`; the same
figure asked for in several places is drawn once) and each stand-in is replaced by its SVG, which
every format then shares (the PDF and the HTML the same SVG, the Word document its PNG).
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar

from .figures import draw_all

__all__ = ["WORD_FIGURES"]

#: The parts of the context whose figures the Word document shows (word.py): only they carry a PNG too.
WORD_FIGURES = ("importance", "interaction", "pages", "cohorts")

_QUEUE: ContextVar = ContextVar("autopdp_figure_queue", default=None)


class _Queued:
    """Stands for the SVG of the queued figure number ``index`` until :func:`_figures_drawn_together` draws it."""

    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index


def _plot(fn, *args, **kwargs):
    """``fn(*args, **kwargs)``: an SVG string, or inside :func:`_figures_drawn_together` a stand-in for it."""
    queue = _QUEUE.get()
    if queue is None:
        return fn(*args, **kwargs)
    queue.append((fn, args, kwargs))
    return _Queued(len(queue) - 1)


@contextmanager
def _figures_drawn_together(out: dict, raster=WORD_FIGURES):
    """Queue the figures made inside; on leaving, draw them all at once (:func:`.figures.draw_all`)
    and put each SVG where its stand-in is in ``out``'s values.  Inside :func:`.figures.with_png`, the
    figures held under ``out``'s keys ``raster`` also carry their PNG (the others are SVG only)."""
    queue: list = []
    token = _QUEUE.set(queue)
    try:
        yield
    finally:
        _QUEUE.reset(token)
    # only the figures ``out`` still holds are drawn (a format's context drops those it does not show);
    # a stand-in held in several places is drawn once and the same SVG goes to each
    used: dict[int, int] = {}
    png: set[int] = set()

    def find(obj, with_png):
        if isinstance(obj, _Queued):
            used.setdefault(obj.index, len(used))
            if with_png:
                png.add(obj.index)
        elif isinstance(obj, dict):
            for v in obj.values():
                find(v, with_png)
        elif isinstance(obj, (list, tuple)):
            for v in obj:
                find(v, with_png)

    for key, value in out.items():
        find(value, key in raster)
    # the same figure asked for twice (e.g. a PD in its trust section and in the gallery) is drawn once
    same: dict = {}
    keys = {i: _job_key(queue[i]) for i in sorted(used)}
    for i, key in keys.items():
        same.setdefault(key, []).append(i)
    wants_png = {key: any(i in png for i in g) for key, g in same.items()}
    groups = list(same.items())
    svgs = draw_all([queue[g[0]] for _, g in groups], png=[wants_png[key] for key, _ in groups])
    drawn = {}
    for (key, g), svg in zip(groups, svgs):
        drawn.update({i: svg for i in g})

    def put(obj):
        if isinstance(obj, _Queued):
            return drawn[obj.index]
        if isinstance(obj, dict):
            return {k: put(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [put(v) for v in obj]
        if isinstance(obj, tuple):
            return tuple(put(v) for v in obj)
        return obj

    out.update(put(out))


def _job_key(job):
    """A figure's identity: its function and arguments (pickled), or the job itself when they do not pickle."""
    import hashlib
    import pickle

    fn, args, kwargs = job
    try:
        return hashlib.sha256(pickle.dumps((fn.__module__, fn.__qualname__, args, sorted(kwargs.items())),
                                           protocol=4)).digest()
    except Exception:
        return id(job)

"""Stage: audit results -> figures as SVG strings.

matplotlib is imported here only, lazily, with the non-interactive Agg
backend.  Every figure goes through :func:`svg_of`, which always closes it.
Text from the data (feature names, levels) is drawn as SVG text, which
matplotlib XML-escapes; ``$`` is escaped so names are never read as math.
"""

from __future__ import annotations

import io
import warnings
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np

__all__ = [
    "svg_of", "plot_pd_1d", "plot_pd_2d", "plot_importance", "plot_interaction", "plot_small_multiple", "draw_all",
    "FigureSVG", "with_png", "ICE_CURVES",
]

#: From this many figures on, :func:`draw_all` draws them on worker processes (one per CPU).  Starting
#: the workers (each imports matplotlib) costs about as much as drawing ~40 figures: the demo's 40 took
#: 3.6-4.0 s here and 5.0-5.3 s on two workers (2 cores, load ~6); the 60-feature report's ~100 gain.
PARALLEL_FROM = 60

#: The most ICE curves a 1D figure draws, evenly spaced over the rows the audit kept (its ``subsample``), however
#: many rows the data has: the figure's size and drawing time do not grow with the rows.  The 2D figures show where
#: the data lies by rows per grid cell (or by at most 400 sampled rows with ``keep_points``), never row by row.
ICE_CURVES = 40
PD_SIZE = (5.2, 3.2)  # a 1D PD figure's width and height (inches)

PD_COLOR = "#1f4e79"
BAND_COLOR = "#9ecae1"
ICE_COLOR = "#7f7f7f"
G_COLOR = "#d95f02"
DATA_COLOR = "#e6ab02"
OTHER_COLORS = ["#d95f02", "#7570b3", "#e7298a", "#66a61e", "#a6761d"]


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    from .fonts import figure_fonts

    plt.rcParams.update({
        "svg.fonttype": "none", "font.size": 9, "axes.titlesize": 10, "axes.spines.top": False,
        "axes.spines.right": False, "svg.hashsalt": "autopdp", "text.usetex": False,
        # the report's font stack, as matplotlib's font fallback: CJK names are measured and drawn with a CJK font
        "font.family": list(figure_fonts()),
    })
    return plt


def text(value) -> str:
    """A label safe for matplotlib (no mathtext)."""
    return str(value).replace("$", r"\$")


@contextmanager
def _figure(width: float, height: float):
    plt = _plt()
    fig = plt.figure(figsize=(width, height))
    try:
        yield fig
    finally:
        plt.close(fig)


#: Inside :func:`with_png`, the print resolution at which :func:`svg_of` also renders each figure as PNG.
_PNG_DPI: ContextVar = ContextVar("autopdp_png_dpi", default=None)


class FigureSVG(str):
    """An SVG string that also carries the same figure as PNG bytes (``.png``, at ``.dpi``), for
    formats that take raster images (the Word report).  It is a ``str`` everywhere else."""

    png: bytes = b""
    dpi: int = 0


@contextmanager
def with_png(dpi: int = 200):
    """Figures drawn inside (here or on :func:`draw_all`'s workers) are :class:`FigureSVG`: the same
    matplotlib figure saved once as SVG and once as PNG at ``dpi``."""
    token = _PNG_DPI.set(int(dpi))
    try:
        yield
    finally:
        _PNG_DPI.reset(token)


def svg_of(fig) -> str:
    """Render ``fig`` to an SVG string (no XML header, deterministic ids) and close it; inside
    :func:`with_png` a :class:`FigureSVG` that also holds the figure as PNG.

    The PNG is cropped to the box the SVG's ``bbox_inches="tight"`` found (padded the same way): matplotlib
    would otherwise lay the whole figure out once more, without drawing it, only to find that box again."""
    plt = _plt()
    dpi = _PNG_DPI.get()
    png = None
    try:
        buf = io.StringIO()
        boxes = _tight_boxes(fig) if dpi else []
        with warnings.catch_warnings():  # a glyph no font has is a note of the report (fonts.glyph_note)
            warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from", category=UserWarning)
            fig.savefig(buf, format="svg", bbox_inches="tight", dpi=150, metadata={"Date": None, "Creator": None})
            svg = buf.getvalue()
            if dpi:
                box = boxes[-1].padded(plt.rcParams["savefig.pad_inches"]) if boxes else "tight"
                raw = io.BytesIO()
                fig.savefig(raw, format="png", bbox_inches=box, dpi=dpi, metadata={"Software": None},
                            facecolor="white")
                png = raw.getvalue()
    finally:
        plt.close(fig)
    start = svg.find("<svg")
    svg = svg[start:] if start >= 0 else svg
    if png is None:
        return svg
    out = FigureSVG(svg)
    out.png, out.dpi = png, dpi
    return out


def _tight_boxes(fig) -> list:
    """The boxes (in inches) ``fig.get_tightbbox`` returns from now on, as ``savefig(bbox_inches="tight")``
    asks for it: the list it fills is read after the SVG is saved."""
    boxes: list = []
    measure = fig.get_tightbbox

    def recorded(*args, **kwargs):
        box = measure(*args, **kwargs)
        boxes.append(box)
        return box

    fig.get_tightbbox = recorded
    return boxes


def _x_positions(result, axis: int = 0):
    if result.kinds[axis] == "numeric":
        return np.asarray(result.grid[axis], dtype=float), None
    levels = [text(v) for v in result.grid[axis]]
    return np.arange(len(levels), dtype=float), levels


def _draw_distribution(ax, result, distribution):
    """The data's distribution in the bottom fifth of the plot, under everything else: x in the data's units,
    y a fraction of the axes' height (the highest bar at a fifth of it, less the autoscale margin a twin axis
    with its own y-limits gave it).  The bars are the figure's, drawn before the axes and clipped to them: no
    second axes to lay out, and neither the y-limits nor the legend's place depend on them."""
    if distribution is None:
        return
    from matplotlib.patches import Rectangle, StepPatch

    if distribution["kind"] == "numeric" and result.kinds[0] == "numeric":
        edges = np.asarray(distribution["edges"], dtype=float)
        counts = np.asarray(distribution["counts"], dtype=float)
        top = _distribution_top(counts)
        # one filled step outline: the histogram's bars as a single artist (30 bar patches took a third of the figure)
        bars = [StepPatch(counts / (5 * top), edges, baseline=0, fill=True, color=DATA_COLOR, alpha=0.45, linewidth=0)]
        span = [edges[0], edges[-1]]
    else:
        counts = np.asarray(result.counts, dtype=float)
        top = _distribution_top(counts)
        bars = [Rectangle((i - 0.3, 0), 0.6, c / (5 * top), color=DATA_COLOR, alpha=0.45, linewidth=0)
                for i, c in enumerate(counts)]
        span = [-0.3, len(counts) - 0.7]
    for bar in bars:
        bar.set_transform(ax.get_xaxis_transform())
        bar.set_clip_path(ax.patch)
        ax.figure.add_artist(bar)
    ax.update_datalim(np.column_stack([span, [0.0, 0.0]]), updatey=False)


def _distribution_top(counts) -> float:
    """The top of the y-axis a twin axis autoscaled to these counts had: the highest count plus the axes' margin
    (at least 1)."""
    peak = float(np.max(counts)) if len(counts) else 0.0
    return max(peak + peak * _plt().rcParams["axes.ymargin"], 1.0)


def _shade_ood(ax, x, ood, levels):
    """Grey bands over grid regions where most augmented rows are unrealistic (OOD share > 50%)."""
    if ood is None:
        return
    ood = np.asarray(ood, dtype=float)
    if levels is not None:
        for xi, o in zip(x, ood):
            if o > 0.5:
                ax.axvspan(xi - 0.4, xi + 0.4, color="#bbbbbb", alpha=0.35, linewidth=0, zorder=0)
        return
    mids = np.concatenate([[x[0]], (x[1:] + x[:-1]) / 2, [x[-1]]])
    labelled = False
    for i, o in enumerate(ood):
        if o > 0.5:
            ax.axvspan(mids[i], mids[i + 1], color="#bbbbbb", alpha=0.35, linewidth=0, zorder=0,
                       label=None if labelled else "mostly unrealistic rows")
            labelled = True


def _band(result, f, spread):
    """(low, high) of ``f`` +- ``spread``, clipped to [0, 1] where the response is a probability."""
    low, high = f - spread, f + spread
    if result.response == "predict_proba":
        low, high = np.clip(low, 0.0, 1.0), np.clip(high, 0.0, 1.0)
    return low, high


def plot_pd_1d(result, *, target_index=0, comparison=None, comparison_label=None, extra_curves=(),
               distribution=None, ice_curves=ICE_CURVES, title=None, ood=None, refits=None, ice_groups=None) -> str:
    """PD line, a sample of ICE curves, +-1 std band, the comparison curve g, the data distribution
    and grey bands where most of the PD's augmented rows are unrealistic.  ``refits`` (K, grid): the refits'
    PDs (issue 31): their range is drawn beside the PD's pointwise Monte-Carlo 95% band, with their mean (the learner-PD).
    ``ice_groups``: each ICE row's group number (-1: none), the curves drawn in the colour of the extra curve of that
    number (a region's ICE curves in its PD's colour)."""
    x, levels = _x_positions(result)
    f = np.asarray(result.average[target_index], dtype=float)
    std = np.asarray(result.std[target_index], dtype=float)
    with _figure(*PD_SIZE) as fig:
        ax = fig.add_subplot(111)
        _draw_distribution(ax, result, distribution)
        _shade_ood(ax, x, ood, levels)
        ax.set_zorder(3)
        ax.patch.set_visible(False)
        crisp = result.response == "crisp"
        if levels is None:
            if result.individual is not None and ice_curves and not crisp:
                from matplotlib.collections import LineCollection

                ice = np.asarray(result.individual[target_index], dtype=float)
                step = max(1, ice.shape[0] // ice_curves)
                curves = ice[::step][:ice_curves]
                groups = None if ice_groups is None else np.asarray(ice_groups)[::step][:ice_curves]
                colors = ICE_COLOR if groups is None else [
                    OTHER_COLORS[(g + 1) % len(OTHER_COLORS)] if g >= 0 else ICE_COLOR for g in groups]
                # one artist for all the curves (drawn as fast as a single line, the same look)
                ax.add_collection(LineCollection([np.column_stack([x, c]) for c in curves], colors=colors,
                                                 alpha=0.18 if groups is None else 0.3, linewidths=0.6))
                ax.update_datalim(np.column_stack([np.tile(x, len(curves)), curves.ravel()]))
                ax.autoscale_view()
            if not crisp and np.isfinite(std).all():
                ax.fill_between(x, *_band(result, f, std), color=BAND_COLOR, alpha=0.35, linewidth=0,
                                label="PD ± 1 std of ICE")
            if refits is not None and not crisp:
                _refit_bands(ax, x, _band(result, f, 1.96 * np.asarray(result.stderr[target_index], dtype=float)),
                             refits)
            if crisp:
                for t in range(result.n_targets):
                    ax.plot(x, result.average[t], linewidth=1.8, label=f"share predicted {text(result.targets[t])}")
            else:
                ax.plot(x, f, color=PD_COLOR, linewidth=2.2, label="partial dependence")
            if comparison is not None:
                ax.plot(x, comparison, color=G_COLOR, linewidth=1.6, linestyle="--", label=text(comparison_label or "comparison"))
            for i, (label, curve) in enumerate(extra_curves):
                ax.plot(x, curve, color=OTHER_COLORS[(i + 1) % len(OTHER_COLORS)], linewidth=1.4, linestyle="-.", label=text(label))
        else:
            if crisp:
                bottom = np.zeros(len(x))
                for t in range(result.n_targets):
                    ax.bar(x, result.average[t], bottom=bottom, width=0.6, label=f"share predicted {text(result.targets[t])}")
                    bottom += np.asarray(result.average[t])
            else:
                low, high = _band(result, f, std)
                ax.errorbar(x, f, yerr=np.vstack([f - low, high - f]), fmt="o", color=PD_COLOR, ecolor=BAND_COLOR, elinewidth=3, capsize=0,
                            markersize=6, label="partial dependence ± 1 std")
            if comparison is not None:
                ax.plot(x, comparison, "D", color=G_COLOR, markersize=5, label=text(comparison_label or "comparison"))
            for i, (label, curve) in enumerate(extra_curves):
                ax.plot(x, curve, "s", color=OTHER_COLORS[(i + 1) % len(OTHER_COLORS)], markersize=4, label=text(label))
            ax.set_xticks(x)
            ax.set_xticklabels(levels, rotation=30 if len(levels) > 4 else 0, ha="right" if len(levels) > 4 else "center")
        ax.set_xlabel(text(result.features[0]))
        ax.set_ylabel(_ylabel(result, target_index))
        if title:
            ax.set_title(text(title))
        ax.legend(loc="best", fontsize=7, frameon=False)
        return svg_of(fig)


def _refit_bands(ax, x, band, refits):
    """The PD's pointwise Monte-Carlo 95% band (``band``: low and high, ± 1.96 standard errors of averaging over the rows)
    and, beside it, the range of the K refits' PDs (hatched) with their mean, the learner-PD (dotted)."""
    refits = np.asarray(refits, dtype=float)
    if np.isfinite(band[0]).all() and np.isfinite(band[1]).all():
        ax.fill_between(x, *band, color=PD_COLOR, alpha=0.25, linewidth=0, label="pointwise Monte-Carlo 95% band")
    ax.fill_between(x, refits.min(axis=0), refits.max(axis=0), facecolor="none", edgecolor=G_COLOR, hatch="///",
                    linewidth=0.4, label=f"range of {refits.shape[0]} refits' PDs")
    ax.plot(x, refits.mean(axis=0), color=G_COLOR, linewidth=1.2, linestyle=":", label="learner-PD (mean of refits)")


def _ylabel(result, target_index) -> str:
    t = text(result.targets[target_index])
    return {
        "predict_proba": f"P(class {t})",
        "decision_function": f"decision function ({t})",
        "crisp": "share of rows predicted",
    }.get(result.response, "prediction" if t == "prediction" else t)


def _axis_coordinates(values, result, axis, rng):
    """Map raw data values onto the heatmap's index coordinates (categories jittered)."""
    grid = result.grid[axis]
    if result.kinds[axis] == "numeric":
        v = np.asarray(values, dtype=float)
        g = np.asarray(grid, dtype=float)
        pos = np.interp(v, g, np.arange(len(g)), left=-0.45, right=len(g) - 0.55)
        pos[~np.isfinite(v)] = np.nan
        return pos
    lookup = {level: i for i, level in enumerate(grid.tolist())}
    pos = np.array([lookup.get(v, np.nan) for v in values], dtype=float)
    return pos + rng.uniform(-0.3, 0.3, size=pos.shape)


def _ticks(ax_set_ticks, ax_set_labels, result, axis):
    grid = result.grid[axis]
    idx = np.arange(len(grid))
    step = max(1, len(grid) // 8)
    ax_set_ticks(idx[::step])
    if result.kinds[axis] == "numeric":
        ax_set_labels([f"{float(v):.4g}" for v in np.asarray(grid)[::step]])
    else:
        ax_set_labels([text(v) for v in np.asarray(grid, dtype=object)[::step]])


def plot_pd_2d(result, *, target_index=0, points=None, occupancy=None, title=None, ood=None, width=5.2,
               height=4.0) -> str:
    """Heatmap of a 2D PD with where the data lies overlaid and hatching over cells where most augmented
    rows are unrealistic.

    ``occupancy`` (rows per grid cell, the grid's shape) draws a dot on each cell with data, its area
    growing with the rows there; a cell without a dot has no data row.  ``points`` (raw values per axis,
    only from an audit run with ``keep_points``) scatters the rows themselves instead.
    """
    f = np.asarray(result.average[target_index], dtype=float)
    with _figure(width, height) as fig:
        ax = fig.add_subplot(111)
        im = ax.imshow(f.T, origin="lower", aspect="auto", cmap="viridis", interpolation="nearest")
        if ood is not None:
            _hatch_cells(ax, np.asarray(ood, dtype=float) > 0.5)
        cb = fig.colorbar(im, ax=ax, fraction=0.05, pad=0.02)
        cb.set_label(_ylabel(result, target_index))
        counts = None if occupancy is None else np.asarray(occupancy, dtype=float)
        if counts is not None and counts.shape == f.shape and counts.sum() > 0:
            ii, jj = np.nonzero(counts > 0)
            share = counts[ii, jj] / counts.max()
            ax.scatter(ii, jj, s=4 + 60 * np.sqrt(share), c="white", edgecolors="black", linewidths=0.4, alpha=0.8,
                       label="data rows (dot area ~ rows in the cell; no dot: none)")
            ax.legend(loc="upper right", fontsize=7, framealpha=0.7)
        elif points is not None and len(points[0]):
            rng = np.random.default_rng(0)
            px = _axis_coordinates(points[0], result, 0, rng)
            py = _axis_coordinates(points[1], result, 1, rng)
            # drawn as one embedded image (at the figure's dpi): hundreds of SVG markers slow PDF rendering
            ax.scatter(px, py, s=4, c="white", edgecolors="black", linewidths=0.3, alpha=0.7, label="data rows",
                       rasterized=True)
            ax.legend(loc="upper right", fontsize=7, framealpha=0.7)
        _ticks(ax.set_xticks, ax.set_xticklabels, result, 0)
        _ticks(ax.set_yticks, ax.set_yticklabels, result, 1)
        ax.set_xlim(-0.5, f.shape[0] - 0.5)
        ax.set_ylim(-0.5, f.shape[1] - 0.5)
        for lab in ax.get_xticklabels():
            lab.set_rotation(30)
            lab.set_ha("right")
        ax.set_xlabel(text(result.features[0]))
        ax.set_ylabel(text(result.features[1]))
        if title:
            ax.set_title(text(title))
        return svg_of(fig)


def _hatch_cells(ax, mask) -> None:
    """Hatch the heatmap's cells where ``mask`` holds, as one patch of their squares: the same look as a
    patch per cell, but one artist (a cell's patch was drawn, and rendered by WeasyPrint, one by one)."""
    cells = np.argwhere(mask)
    if not len(cells):
        return
    from matplotlib.patches import PathPatch
    from matplotlib.path import Path

    corners = np.array([[-0.5, -0.5], [0.5, -0.5], [0.5, 0.5], [-0.5, 0.5], [-0.5, -0.5]])
    vertices = (cells[:, None, :].astype(float) + corners[None, :, :]).reshape(-1, 2)
    codes = np.tile([Path.MOVETO, Path.LINETO, Path.LINETO, Path.LINETO, Path.CLOSEPOLY], len(cells))
    ax.add_patch(PathPatch(Path(vertices, codes), fill=False, hatch="///", edgecolor="#ffffff", linewidth=0,
                           alpha=0.6, label="mostly unrealistic rows"))


def _barh(labels, values, xlabel, title, width=5.2):
    height = 0.8 + 0.22 * len(labels)
    with _figure(width, height) as fig:
        ax = fig.add_subplot(111)
        y = np.arange(len(labels))[::-1]
        ax.barh(y, values, color=PD_COLOR)
        ax.set_yticks(y)
        ax.set_yticklabels([text(v) for v in labels])
        ax.set_xlabel(xlabel)
        ax.set_title(title)
        return svg_of(fig)


def plot_importance(importance, *, title="PD-based feature importance (Greenwell)") -> str:
    """Horizontal bars, most important on top (first target column)."""
    s = importance.iloc[:, 0].sort_values(ascending=False)
    return _barh(list(s.index), s.to_numpy(), "importance (density-weighted sd of the PD)", title)


def plot_interaction(interaction, *, top=15, title="PD-based interaction (Greenwell), strongest pairs") -> str:
    s = interaction.iloc[:, 0].sort_values(ascending=False).head(top)
    return _barh([f"{a} × {b}" for a, b in s.index], s.to_numpy(), "interaction statistic", title)


def plot_small_multiple(result, *, target_index=0, width=2.4, height=1.7) -> str:
    """A compact PD for the appendix grid."""
    x, levels = _x_positions(result)
    f = np.asarray(result.average[target_index], dtype=float)
    with _figure(width, height) as fig:
        ax = fig.add_subplot(111)
        if levels is None:
            ax.plot(x, f, color=PD_COLOR, linewidth=1.5)
        else:
            ax.plot(x, f, "o", color=PD_COLOR, markersize=3)
            ax.set_xticks(x)
            ax.set_xticklabels(levels, rotation=45, ha="right", fontsize=6)
        ax.set_title(text(result.features[0]), fontsize=8)
        ax.tick_params(labelsize=6)
        return svg_of(fig)


def draw_all(jobs, *, n_jobs: int | None = None, png=None) -> list[str]:
    """The SVG strings of ``[(plot function, args, kwargs), ...]``, in order.

    From :data:`PARALLEL_FROM` figures on, and with more than one CPU, they are drawn on joblib's
    worker processes, one per CPU (``n_jobs`` to set their number; 1 draws here).  Each figure is
    the same string wherever it is drawn (fixed SVG ids and metadata).  Inside :func:`with_png`,
    ``png`` (one flag per job; all when not given) says which figures also carry their PNG: those a
    raster format shows, the others are saved as SVG only.
    """
    jobs = list(jobs)
    dpi = _PNG_DPI.get()  # a context variable does not cross to the workers: handed over
    dpis = [dpi if want else None for want in (png if png is not None else [True] * len(jobs))]
    if n_jobs is None:
        from ..pd.tree.ice import n_threads

        n_jobs = n_threads()
    workers = min(int(n_jobs), len(jobs))
    if workers <= 1 or len(jobs) < PARALLEL_FROM:
        return [_draw(fn, args, kwargs, d) for (fn, args, kwargs), d in zip(jobs, dpis)]
    from joblib import Parallel, delayed

    _plt()  # matplotlib's font cache exists before the workers start
    return list(Parallel(n_jobs=workers)(delayed(_draw)(fn, args, kwargs, d) for (fn, args, kwargs), d in zip(jobs, dpis)))


def _draw(fn, args, kwargs, dpi):
    """``fn(*args, **kwargs)`` with a PNG at ``dpi`` as well, or none when ``dpi`` is None (:func:`with_png`)."""
    token = _PNG_DPI.set(int(dpi) if dpi else None)
    try:
        return fn(*args, **kwargs)
    finally:
        _PNG_DPI.reset(token)

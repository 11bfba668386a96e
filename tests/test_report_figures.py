"""The report's figures: what each one holds, drawn once for every format (issue 32)."""

import re

import numpy as np
import pytest

from autopdp import AuditConfig
from autopdp import audit


def _figures(obj):
    """Every figure dict ({"svg", ...}) held anywhere in ``obj``."""
    if isinstance(obj, dict):
        if "svg" in obj and isinstance(obj["svg"], str):
            yield obj
        for v in obj.values():
            yield from _figures(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _figures(v)


def _svg_inches(svg: str):
    w, h = (float(v) for v in re.search(r'<svg[^>]*width="([\d.]+)pt" height="([\d.]+)pt"', svg).groups())
    return w / 72, h / 72


def test_word_figures_carry_a_png_of_the_same_figure_and_html_only_ones_none(small_audit):
    from autopdp.report.writer import report_context

    with_png = report_context(small_audit, png=True)
    svg_only = report_context(small_audit)
    # the same SVG either way: the PNG is an addition for the Word document, drawn from the same figure
    for a, b in zip(_figures(with_png), _figures(svg_only)):
        assert str(a["svg"]) == str(b["svg"])
    word = [with_png["importance_svg"], with_png["interaction_svg"],
            *(p["figure"]["svg"] for p in with_png["finding_pages"] if p.get("figure"))]
    assert len(word) >= 3
    for svg in word:
        png = svg.png
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and svg.dpi == 200
        # cropped to the SVG's box: the same size on the page (to a pixel or two of text measured at 200 dpi)
        w, h = _svg_inches(svg)
        px_w, px_h = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
        assert abs(px_w / svg.dpi - w) < 0.05 and abs(px_h / svg.dpi - h) < 0.05
    # the gallery of every 1D PD is the HTML's alone: no PNG is made for it
    shown_in_word = {str(s) for s in word}
    gallery = [f["svg"] for f in with_png["small_multiples"] if str(f["svg"]) not in shown_in_word]
    assert gallery and not any(getattr(s, "png", b"") for s in gallery)


def test_docx_shows_every_figure_as_a_picture(small_audit):
    docx = pytest.importorskip("docx")
    import io

    from autopdp.report.word import render_docx
    from autopdp.report.writer import report_context

    context = report_context(small_audit, formats=("html", "docx"), png=True)
    d = docx.Document(io.BytesIO(render_docx(context)))
    text = "\n".join(p.text for p in d.paragraphs)
    assert "figure not available" not in text
    pages = [p for p in context["finding_pages"] if p.get("figure")]
    assert len(d.inline_shapes) == len(pages) + 2  # every finding's figure, the importance and interaction charts


def test_ice_curves_are_capped_whatever_the_rows(german):
    from autopdp.report.figures import ICE_CURVES, plot_pd_1d

    X, y = german
    a = audit(lambda d: d["duration_months"].to_numpy() / 72.0 + d["age"].to_numpy() / 100, X, y,
              config=AuditConfig(features=("duration_months", "age"), grid_resolution=6, pairs=False))
    r = a.pd(("duration_months",))
    assert r.individual.shape[1] > ICE_CURVES
    svg = plot_pd_1d(r)
    # each ICE curve is one grey stroke of the figure
    assert svg.count("stroke: #7f7f7f") == ICE_CURVES
    assert plot_pd_1d(r, ice_curves=5).count("stroke: #7f7f7f") == 5


def test_unrealistic_cells_of_a_heatmap_are_one_hatched_patch(small_audit):
    from autopdp.report.figures import plot_pd_2d

    r = small_audit.results_2d[0]
    ood = np.zeros(r.grid_shape)
    ood[0, :] = 0.9  # a column of mostly unrealistic cells
    ood[-1, -1] = 0.7
    svg = plot_pd_2d(r, ood=ood, occupancy=np.ones(r.grid_shape))
    hatched = re.findall(r'<path d="([^"]*)"[^>]*style="fill: url\(#h', svg)
    assert len(hatched) == 2  # the hatched region and its legend key
    region = max(hatched, key=len)
    assert region.count("M ") == int((ood > 0.5).sum())  # a square per cell
    assert svg.count("mostly unrealistic rows") == 1
    assert "mostly unrealistic rows" not in plot_pd_2d(r, ood=np.zeros(r.grid_shape), occupancy=np.ones(r.grid_shape))


def test_data_distribution_sits_under_the_pd_without_moving_its_axes(small_audit):
    from autopdp.report.figures import plot_pd_1d

    r = small_audit.pd(("duration_months",))
    dist = small_audit.data_summary["distributions"]["duration_months"]
    with_dist, without = plot_pd_1d(r, distribution=dist), plot_pd_1d(r)

    def ticks(svg):
        return re.findall(r'<g id="(?:x|y)tick_\d+">.*?<text[^>]*>([^<]*)</text>', svg, flags=re.S)

    assert ticks(with_dist) == ticks(without) and ticks(with_dist)  # the same x and y axes
    assert with_dist.count("fill: #e6ab02") == 1 and "fill: #e6ab02" not in without  # one histogram outline
    assert with_dist.count('id="axes_') == without.count('id="axes_') == 1  # no second (twin) axes

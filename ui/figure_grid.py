"""Several finished plotly figures drawn as ONE chart: cells of a grid, each with its own axes.

Every element a page draws costs the server a message to the browser (about 0.2 ms each here,
more than building most of them), and a chart costs a serialisation of its own. A view that shows
three related pictures (e.g. the decoder's self-attention, the next-token bars and the
cross-attention of one step) is therefore cheaper to rerun as one figure with three cells than
as three ``st.plotly_chart`` calls in columns. :func:`combine` takes figures built as usual (by
the page's own builders, unchanged) and lays them out without validating them again::

    fig = combine([[triangle, topk], [cross]], widths=[[3, 2], [1]], title_band=34)
    st.plotly_chart(fig, key="decoding.step_figure")

Each cell keeps its figure's traces, axes (ticks, titles, ranges, ``autorange``), shapes and
annotations, and its title (written above the cell); heatmap colour bars move beside their cell.
The result is a :class:`ui.frozen_figure.FrozenFigure` for drawing only: never change it.
"""
from __future__ import annotations

import copy
from typing import Sequence

import plotly.graph_objects as go

from ui.frozen_figure import FrozenFigure, freeze, frozen_from_dict

GAP_X = 0.07  # horizontal space between cells (fraction of the width): the next cell's y tick labels
TITLE_BAND_PX = 34  # space above each row of cells for the cells' titles
ROW_GAP_PX = 80  # space between rows: the x tick labels and x title of the row above
MARGIN = dict(l=10, r=10, t=10, b=10)
COLORBAR_W = 0.045  # width kept inside a cell for its heatmap's colour bar (fraction of the width)
LEGEND_TYPES = {"scatter", "bar", "scattergl"}  # traces plotly lists in a legend unless told not to


def _shows_legend(sub_layout: dict, traces: list[dict]) -> bool:
    """Whether plotly would draw a legend for this figure alone (explicit, or two or more entries)."""
    if sub_layout.get("showlegend") is not None:
        return bool(sub_layout["showlegend"])
    entries = [tr for tr in traces if tr.get("type", "scatter") in LEGEND_TYPES and tr.get("showlegend") is not False]
    return len(entries) >= 2


def _suffix(n: int) -> str:
    return "" if n == 1 else str(n)


def _remap_ref(ref: str | None, axis: str, suffix: str) -> str | None:
    """``"x"`` → ``"x3"``, ``"x domain"`` → ``"x3 domain"``; paper and others are kept."""
    if ref is None:
        return axis + suffix
    head, _, tail = ref.partition(" ")
    if head == axis:
        return f"{axis}{suffix}" + (f" {tail}" if tail else "")
    return ref


def _title_text(layout: dict) -> str:
    title = layout.get("title")
    if isinstance(title, dict):
        return title.get("text") or ""
    return title or ""


def combine(rows: Sequence[Sequence[go.Figure]], *, widths: Sequence[Sequence[float]] | None = None,
            title_band: int = TITLE_BAND_PX, row_gap: int = ROW_GAP_PX, gap_x: float = GAP_X,
            legend: dict | None = None, y_title_first_only: bool = False) -> FrozenFigure:
    """One figure drawing ``rows`` of figures as cells (row heights: the tallest figure of the row).

    ``widths`` gives each row's relative cell widths (default: equal). Each cell's title is its
    figure's ``layout.title``; ``legend`` is the combined figure's legend (default: plotly's).
    ``y_title_first_only`` keeps the y-axis title of the first cell of each row only (cells that
    share their meaning, where the others' titles would crowd the gap).
    """
    dicts = [[freeze(fig).to_dict() if not isinstance(fig, dict) else fig for fig in row] for row in rows]
    heights = [max(int(d.get("layout", {}).get("height") or 320) for d in row) for row in dicts]
    total = sum(heights) + title_band * len(heights) + row_gap * (len(heights) - 1) + MARGIN["t"] + MARGIN["b"]
    plot_h = total - MARGIN["t"] - MARGIN["b"]

    data: list[dict] = []
    layout: dict = {"height": total, "margin": dict(MARGIN), "showlegend": False}
    shapes: list[dict] = []
    annotations: list[dict] = []
    n = 0
    top_px = 0.0  # from the top of the plot area
    for r, row in enumerate(dicts):
        top_px += title_band
        y1 = 1 - top_px / plot_h
        y0 = 1 - (top_px + heights[r]) / plot_h
        top_px += heights[r] + row_gap
        share = list(widths[r]) if widths is not None else [1.0] * len(row)
        usable = 1 - gap_x * (len(row) - 1)
        x = 0.0
        for c, fig in enumerate(row):
            n += 1
            s = _suffix(n)
            x0, x1 = x, x + usable * share[c] / sum(share)
            x = x1 + gap_x
            sub = fig.get("layout", {})
            legend_here = _shows_legend(sub, fig.get("data", []))
            layout["showlegend"] = layout["showlegend"] or legend_here
            scaled = any(tr.get("type") == "heatmap" and tr.get("showscale", True) is not False
                         for tr in fig.get("data", []))
            if scaled:
                x1 -= COLORBAR_W
            xaxis = copy.deepcopy(sub.get("xaxis", {}))
            yaxis = copy.deepcopy(sub.get("yaxis", {}))
            xaxis.update(domain=[x0, x1], anchor=f"y{s}")
            if y_title_first_only and c > 0:
                yaxis.pop("title", None)
            yaxis.update(domain=[y0, y1], anchor=f"x{s}")
            layout[f"xaxis{s}"], layout[f"yaxis{s}"] = xaxis, yaxis
            for trace in fig.get("data", []):
                trace = dict(trace, xaxis=f"x{s}", yaxis=f"y{s}")
                if not legend_here:
                    trace["showlegend"] = False
                if trace.get("type") == "heatmap" and trace.get("showscale", True) is not False:
                    bar = dict(trace.get("colorbar") or {})
                    bar.update(x=x1 + 0.005, xanchor="left", y=(y0 + y1) / 2, yanchor="middle",
                               len=y1 - y0, thickness=bar.get("thickness", 10))
                    trace["colorbar"] = bar
                data.append(trace)
            for shape in sub.get("shapes", ()):
                shapes.append(dict(shape, xref=_remap_ref(shape.get("xref"), "x", s),
                                   yref=_remap_ref(shape.get("yref"), "y", s)))
            for note in sub.get("annotations", ()):
                annotations.append(dict(note, xref=_remap_ref(note.get("xref"), "x", s),
                                        yref=_remap_ref(note.get("yref"), "y", s)))
            if sub.get("plot_bgcolor"):  # a cell's own background, drawn as a rectangle behind it
                shapes.insert(0, dict(type="rect", xref=f"x{s} domain", yref=f"y{s} domain", x0=0, x1=1, y0=0,
                                      y1=1, fillcolor=sub["plot_bgcolor"], line=dict(width=0), layer="below"))
            title = _title_text(sub)
            if title:
                annotations.append(dict(text=title, xref="paper", yref="paper", x=(x0 + x1) / 2, y=y1,
                                        xanchor="center", yanchor="bottom", yshift=6, showarrow=False,
                                        font=dict(size=14)))
    if shapes:
        layout["shapes"] = shapes
    if annotations:
        layout["annotations"] = annotations
    if legend is not None:
        layout["legend"] = legend
    first = dicts[0][0].get("layout", {})
    for key in ("template", "barmode", "hovermode"):
        for row in dicts:
            for d in row:
                if key in d.get("layout", {}) and key not in layout:
                    layout[key] = d["layout"][key]
    if "template" not in layout and "template" in first:
        layout["template"] = first["template"]
    return frozen_from_dict({"data": data, "layout": layout})

"""The decoding page's pictures: one step's self-attention triangle, cross-attention and next-token
bars (drawn together as one figure), the teacher-forcing bars, and beam search's tree of hypotheses.

Every builder takes numbers and already-translated texts; weights and probabilities share one
0..1 colour scale.
"""
from __future__ import annotations

import html
import unicodedata
from typing import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from figures.heatmap import heatmap
from figures.labels import axis_labels, display_token, plain_number, token_label
from figures.style import figure

CHOSEN_COLOR = "#d62728"  # the token the step chose; a wrong teacher-forcing guess
CANDIDATE_COLOR = "#1f77b4"
SAMPLED_COLOR = "#ff7f0e"  # the distribution sampling draws from
RIGHT_COLOR = "#2ca02c"
UNWRITTEN_COLOR = "#f4f4f7"  # behind the triangle: positions not written yet
TOP_ROW_SHARE = (3, 2)  # triangle : next-token bars
GAP_X = 0.07  # between the triangle and the bars: room for the bars' token labels
TITLE_BAND_PX = 48  # above each row, for its titles (the top row's on two lines)
TITLE_LINE_WIDTH = 22  # a top-row title longer than this (CJK characters count 2) is written on two lines
ROW_GAP_PX = 80  # between the rows: the triangle's x ticks and axis title
LEGEND_PX = 26  # above the titles, for the legend of the two distributions (sampling)


def triangle(weights: np.ndarray, prefix: Sequence[str], final_length: int, *, title: str, x_title: str,
             y_title: str, hover: str) -> go.Figure:
    """The masked self-attention ``weights`` (t, t) of this step inside the frame of the last step (N, N).

    Positions not written yet are left empty (no label, no colour), so the triangle grows step by
    step in a fixed frame; the newest row, the one that predicts the next token, is outlined.
    """
    t = len(prefix)
    n = max(final_length, t)
    z = np.full((n, n), np.nan)
    z[:t, :t] = np.asarray(weights, dtype=float)
    tokens = list(prefix) + [""] * (n - t)
    blocked = np.zeros((n, n), dtype=bool)
    blocked[:t, :t] = np.triu(np.ones((t, t), dtype=bool), k=1)
    fig = heatmap(z, x_tokens=tokens, y_tokens=tokens, title=title, x_title=x_title, y_title=y_title, zmin=0.0,
                  zmax=1.0, masked=blocked, hover=hover, height=max(320, 26 * n + 140))
    fig.update_traces(hoverongaps=False, selector=dict(type="heatmap"))
    fig.add_shape(type="rect", x0=-0.5, x1=t - 0.5, y0=t - 1.5, y1=t - 0.5, line=dict(color=CHOSEN_COLOR, width=2))
    fig.update_layout(plot_bgcolor=UNWRITTEN_COLOR)
    fig.update_xaxes(showgrid=False, zeroline=False)
    fig.update_yaxes(showgrid=False, zeroline=False)
    return fig


def cross(weights: np.ndarray, src_tokens: Sequence[str], head_labels: Sequence[str], *, title: str, x_title: str,
          hover: str) -> go.Figure:
    """``weights`` (H, S): how each head of one layer spreads the newest position's attention over the source."""
    return heatmap(weights, x_tokens=src_tokens, y_tokens=head_labels, title=title, x_title=x_title, zmin=0.0,
                   zmax=1.0, hover=hover, text_values=True, height=max(200, 34 * len(head_labels) + 130))


def bar_value(p: float) -> str:
    """A probability as written at the end of its bar: two decimals, or two significant digits below 0.01
    (``0.0030``, in plain decimals)."""
    return f"{p:.2f}" if p >= 0.01 or p == 0 else plain_number(p, 2)


def topk(tokens: Sequence[str], probs: Sequence[float], chosen: str, *, sampling: Sequence[float] = (),
         names: tuple[str, str], title: str, x_title: str, hover: str) -> go.Figure:
    """The most likely next tokens as horizontal bars, most likely on top, each with its value.

    The chosen token is red, its label bold and red, and a red triangle points at the end of its
    bar, so it stays visible when its probability is too small for a bar (sampling can draw such a
    token; :func:`explain.decoding.decode` lists it last). With ``sampling``, a second bar per token
    shows the distribution actually sampled from; ``names`` labels the two in the legend.
    """
    k = len(tokens)
    labels = [token_label(tok) for tok in tokens]
    rows = list(range(k))
    bars = [go.Bar(x=np.round(probs, 4), y=rows, orientation="h", name=html.escape(names[0]),
                   marker_color=[CHOSEN_COLOR if tok == chosen else CANDIDATE_COLOR for tok in tokens],
                   customdata=labels, hovertemplate=hover + "<extra></extra>", text=[bar_value(p) for p in probs],
                   textposition="outside", cliponaxis=False)]
    if sampling:
        bars.append(go.Bar(x=np.round(sampling, 4), y=rows, orientation="h", name=html.escape(names[1]),
                           marker_color=SAMPLED_COLOR, opacity=0.7, customdata=labels,
                           hovertemplate=hover + "<extra></extra>", text=[bar_value(p) for p in sampling],
                           textposition="outside", cliponaxis=False))
    picked = [row for row, tok in zip(rows, tokens) if tok == chosen]
    marks = [go.Scatter(x=[-0.025] * len(picked), y=picked, mode="markers", showlegend=False, hoverinfo="skip",
                        marker=dict(symbol="triangle-right", size=12, color=CHOSEN_COLOR), cliponaxis=False)]
    fig = figure(*bars, *marks, title=title, height=max(260, 34 * k + 100), barmode="group",
                 showlegend=bool(sampling))
    ticks = axis_labels(tokens)
    ticks["ticktext"] = [f'<span style="color:{CHOSEN_COLOR}"><b>{text}</b></span>' if tok == chosen else text
                         for text, tok in zip(ticks["ticktext"], tokens)]
    fig.update_yaxes(**ticks, autorange="reversed", tickfont=dict(size=14))
    fig.update_xaxes(title=x_title, range=[-0.04, 1.25])
    return fig


def forcing(tokens: Sequence[str], true_probs: Sequence[float], correct: Sequence[bool], *, x_title: str,
            y_title: str, hover: str) -> go.Figure:
    """Probability of the true next token at each position under teacher forcing (red where wrong)."""
    bars = go.Bar(x=list(range(len(tokens))), y=np.round(true_probs, 4),
                  marker_color=[RIGHT_COLOR if ok else CHOSEN_COLOR for ok in correct],
                  customdata=[token_label(tok) for tok in tokens], hovertemplate=hover + "<extra></extra>")
    fig = figure(bars, height=300)
    fig.update_xaxes(title=x_title, **axis_labels(tokens))
    fig.update_yaxes(title=y_title, range=[0, 1.02])
    return fig


def cache_bars(tokens: Sequence[str], computed: Sequence[int], reused: Sequence[int], *, computed_name: str,
               reused_name: str, x_title: str, y_title: str, hover: str) -> go.Figure:
    """Key/value pairs per decoding step: computed with the cache (solid) under those reused from it.

    The whole bar is what the same step computes without a cache (every pair again); ``hover`` is
    a template with ``%{customdata}`` (the token written) and ``%{y}``.
    """
    steps = list(range(1, len(tokens) + 1))
    labels = [token_label(tok) for tok in tokens]
    bars = [go.Bar(x=steps, y=list(values), name=name, marker_color=color, customdata=labels,
                   hovertemplate=f"{name}<br>{hover}<extra></extra>")
            for values, name, color in ((computed, computed_name, CHOSEN_COLOR),
                                        (reused, reused_name, CANDIDATE_COLOR))]
    fig = figure(*bars, height=300, barmode="stack",
                 legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0))
    fig.update_xaxes(title=x_title, tickmode="array", tickvals=steps, ticktext=labels)
    fig.update_yaxes(title=y_title, rangemode="tozero")
    return fig


def step_figure(triangle_fig: go.Figure, topk_fig: go.Figure, cross_fig: go.Figure) -> go.Figure:
    """One step as one figure: the triangle beside the next-token bars, the cross-attention below.

    Each part keeps its traces, axes and title, and the triangle its outline and background; the
    cross-attention's colour bar, beside its row, serves the triangle too (both are weights on the
    same 0..1 scale).
    """
    top, bottom = max(_height(triangle_fig), _height(topk_fig)), _height(cross_fig)
    plot = top + ROW_GAP_PX + TITLE_BAND_PX + bottom
    legend = bool(topk_fig.layout.showlegend)
    cells = ((triangle_fig, 1, 1), (topk_fig, 1, 2), (cross_fig, 2, 1))
    fig = make_subplots(
        rows=2, cols=2, specs=[[{}, {}], [{"colspan": 2}, None]], row_heights=[top, bottom],
        column_widths=[share / sum(TOP_ROW_SHARE) for share in TOP_ROW_SHARE], horizontal_spacing=GAP_X,
        vertical_spacing=(ROW_GAP_PX + TITLE_BAND_PX) / plot,
        subplot_titles=[_title(part) if n == 3 else wrapped(_title(part)) for n, (part, _, _) in enumerate(cells, 1)],
    )
    placed = [(trace, row, col) for part, row, col in cells for trace in part.data]
    fig.add_traces([trace for trace, _, _ in placed], rows=[row for _, row, _ in placed],
                   cols=[col for _, _, col in placed])
    y0, y1 = fig.layout.yaxis3.domain
    fig.update_traces(showscale=False, selector=dict(type="heatmap", xaxis="x"))
    fig.update_traces(colorbar=dict(thickness=12, y=(y0 + y1) / 2, yanchor="middle", len=y1 - y0),
                      selector=dict(type="heatmap", xaxis="x3"))
    axes = {}
    for n, (part, _, _) in enumerate(cells, start=1):
        suffix = "" if n == 1 else str(n)
        axes[f"xaxis{suffix}"] = _axis_settings(part.layout.xaxis)
        axes[f"yaxis{suffix}"] = _axis_settings(part.layout.yaxis)
    # The triangle is cell 1, whose axes keep their names (x, y): its outline needs no new references.
    background = dict(type="rect", xref="x domain", yref="y domain", x0=0, x1=1, y0=0, y1=1, layer="below",
                      fillcolor=triangle_fig.layout.plot_bgcolor, line=dict(width=0))
    # The first row's titles sit in the top margin; a legend, when there is one, above them.
    margin = dict(l=10, r=10, t=TITLE_BAND_PX + (LEGEND_PX if legend else 0), b=10)
    fig.update_layout(
        axes, shapes=[background, *triangle_fig.layout.shapes], height=plot + margin["t"] + margin["b"],
        margin=margin, barmode="group", showlegend=legend,
        legend=dict(orientation="h", x=1, xanchor="right", y=1, yref="container", yanchor="top"),
    )
    fig.update_annotations(font=dict(size=14))
    for title, axis in zip(fig.layout.annotations[:2], (fig.layout.xaxis, fig.layout.xaxis2)):
        # Each starts at its own column, on two lines of 12 px: side by side on a 390 px phone they do not meet.
        title.update(x=axis.domain[0], xanchor="left", font=dict(size=12))
    return fig


def text_width(text: str) -> int:
    """Width of ``text`` in Latin characters: a CJK or full-width character counts 2."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def wrapped(title: str, limit: int = TITLE_LINE_WIDTH) -> str:
    """``title`` on two lines (``<br>``) when wider than ``limit``: broken after the punctuation, or
    else at the space, nearest its middle. The top row's two titles stand side by side over a phone's
    390 px; on one line each they run into each other."""
    if text_width(title) <= limit:
        return title
    middle = len(title) / 2
    breaks = [i + 1 for i, c in enumerate(title) if c in ",:;，：；、"] or [i for i, c in enumerate(title) if c == " "]
    if not breaks:
        return title
    cut = min(breaks, key=lambda i: abs(i - middle))
    return f"{title[:cut].rstrip()}<br>{title[cut:].lstrip()}"


def _height(fig: go.Figure) -> int:
    return int(fig.layout.height or 320)


def _title(fig: go.Figure) -> str:
    return fig.layout.title.text or ""


def _axis_settings(axis) -> dict:
    """An axis's own settings, without where it sits (the cell decides that)."""
    settings = axis.to_plotly_json()
    for placement in ("domain", "anchor"):
        settings.pop(placement, None)
    return settings


SAME_FILL = "#e3f2e5"  # a position where the two decodings agree
DIFFERENT_FILL = "#fbd5d3"  # one where they differ
ROW_CELL_PX = 34  # one position's row when the positions run down (a phone)


def two_rows(rows: Sequence[Sequence[str]], probs: Sequence[Sequence[float]], differs: Sequence[bool], *,
             names: Sequence[str], x_title: str, hover: str, down: bool = False) -> go.Figure:
    """Two decodings token by token, one row each, position by position; the cells of the positions
    where they differ red, the others green; each cell's hover gives its probability.

    ``down`` (a phone) turns it: the positions run down and the decodings stand side by side, so a long
    answer grows taller instead of cramming its tokens into 390 px. ``hover`` is a template with
    ``%{customdata[0]}`` (the decoding), ``%{customdata[1]}`` (the token), ``%{customdata[2]:.3f}`` (its
    probability) and ``%{customdata[3]}`` (the position).
    """
    n = len(differs)
    z = np.tile(np.asarray(differs, dtype=float), (len(rows), 1))  # (2, n)
    text = [[token_label(tok) for tok in row] for row in rows]
    custom = np.array([[[html.escape(name), label, p, i] for i, (label, p) in enumerate(zip(row, row_probs))]
                       for name, row, row_probs in zip(names, text, probs)], dtype=object)  # (2, n, 4)
    labels = [html.escape(name) for name in names]
    if down:
        z, text, custom = z.T, [list(col) for col in zip(*text)], custom.transpose(1, 0, 2)
    cells = go.Heatmap(z=z, text=text, texttemplate="%{text}", textfont=dict(size=15), customdata=custom,
                       colorscale=[[0, SAME_FILL], [1, DIFFERENT_FILL]], zmin=0, zmax=1, showscale=False, xgap=2,
                       ygap=2, hovertemplate=hover + "<extra></extra>")
    positions = dict(tickmode="array", tickvals=list(range(n)), ticktext=[str(i) for i in range(n)], title=x_title)
    names_axis = dict(tickmode="array", tickvals=list(range(len(rows))), ticktext=labels)
    if down:
        fig = figure(cells, height=ROW_CELL_PX * n + 90)
        fig.update_layout(margin=dict(t=50))
        fig.update_xaxes(**names_axis, side="top")
        fig.update_yaxes(**positions, autorange="reversed")
    else:
        fig = figure(cells, height=200)
        fig.update_xaxes(**positions)
        fig.update_yaxes(**names_axis, autorange="reversed")
    fig.update_xaxes(showgrid=False, zeroline=False)
    fig.update_yaxes(showgrid=False, zeroline=False)
    return fig


STATUS_MARKERS = {  # a beam-search hypothesis: (symbol, colour) of its node, by its status
    "kept": ("circle", CANDIDATE_COLOR),
    "pruned": ("x", "#8c8c8c"),
    "finished": ("square", RIGHT_COLOR),
    "open": ("circle-open", CANDIDATE_COLOR),
}
EDGE_COLOR = "#c4c7cf"
CURRENT_STEP_COLOR = "rgba(255, 193, 7, 0.22)"  # the band behind the step a step-by-step view is on
TREE_CELL_PX = 40  # one rank (across) or one step (down, a phone)
TREE_LABEL_CHARS = 6  # a node's token is written up to this many characters (its hover has it whole)
PHONE_LABELED_RANKS = 6  # on a phone, node labels only when a step has at most this many hypotheses


def short_label(token: str, limit: int = TREE_LABEL_CHARS) -> str:
    """``token`` for a node's label: visible, cut to ``limit`` characters with an ellipsis, escaped."""
    shown = display_token(token)
    return html.escape(shown if len(shown) <= limit else shown[: limit - 1] + "…")


def beam_tree(steps: Sequence[int], ranks: Sequence[int], labels: Sequence[str], statuses: Sequence[str],
              parents: Sequence[int | None], chosen: Sequence[bool], hovers: Sequence[str], *,
              names: dict[str, str], step_title: str, rank_title: str, down: bool = False,
              current: int | None = None) -> go.Figure:
    """Beam search as a tree: one node per hypothesis at (its step, its rank at that step, 1 = best), an
    edge from the hypothesis it extends, the answer's path drawn thick in red.

    Nodes are marked by status (:data:`STATUS_MARKERS`, ``names`` gives each one's legend name and
    ``names["chosen"]`` the path's) and labelled with their last token; ``hovers`` are the nodes' hover
    texts, already escaped. ``down`` (a phone) turns it: the steps run down the screen and the ranks
    across, and the labels are left out when a step has more than :data:`PHONE_LABELED_RANKS` nodes.
    ``current``: a band behind that step's hypotheses (the step a step-by-step view is on).
    """
    def place(step: int, rank: int) -> tuple[int, int]:
        return (rank, step) if down else (step, rank)

    edge_x, edge_y, path_x, path_y = [], [], [], []
    for child, parent in enumerate(parents):
        if parent is None:
            continue
        xs, ys = zip(place(steps[parent], ranks[parent]), place(steps[child], ranks[child]))
        on_path = chosen[child] and chosen[parent]
        (path_x if on_path else edge_x).extend([*xs, None])
        (path_y if on_path else edge_y).extend([*ys, None])
    traces = [go.Scatter(x=edge_x, y=edge_y, mode="lines", line=dict(color=EDGE_COLOR, width=1.5), hoverinfo="skip",
                         showlegend=False),
              go.Scatter(x=path_x, y=path_y, mode="lines", line=dict(color=CHOSEN_COLOR, width=5), hoverinfo="skip",
                         name=html.escape(names["chosen"]))]
    path_nodes = [place(steps[i], ranks[i]) for i, on in enumerate(chosen) if on]
    if path_nodes:  # a red ring behind each node of the path (the status markers stay as the legend shows them)
        xs, ys = zip(*path_nodes)
        traces.append(go.Scatter(x=xs, y=ys, mode="markers", hoverinfo="skip", showlegend=False,
                                 marker=dict(symbol="circle", size=19, color="rgba(0,0,0,0)",
                                             line=dict(width=2.5, color=CHOSEN_COLOR))))
    n_ranks, n_steps = max(ranks), max(steps)
    for status, (symbol, color) in STATUS_MARKERS.items():
        members = [i for i, s in enumerate(statuses) if s == status]
        if not members:
            continue
        xs, ys = zip(*(place(steps[i], ranks[i]) for i in members))
        traces.append(go.Scatter(
            x=xs, y=ys, mode="markers", name=html.escape(names[status]), hovertext=[hovers[i] for i in members],
            hovertemplate="%{hovertext}<extra></extra>", cliponaxis=False,
            marker=dict(symbol=symbol, color=color, size=11, line=dict(width=1.5, color=color))))
    if not down or n_ranks <= PHONE_LABELED_RANKS:
        # The labels ride on invisible markers as wide as the path's rings, so no ring covers a label.
        xs, ys = zip(*(place(step, rank) for step, rank in zip(steps, ranks)))
        traces.append(go.Scatter(x=xs, y=ys, mode="markers+text", text=[short_label(label) for label in labels],
                                 textposition="middle right" if down else "top center", textfont=dict(size=12),
                                 marker=dict(size=20, color="rgba(0,0,0,0)"), hoverinfo="skip", showlegend=False,
                                 cliponaxis=False))
    step_axis = dict(title=step_title, tickmode="array", tickvals=list(range(n_steps + 1)),
                     range=[-0.5, n_steps + 0.7], zeroline=False, showgrid=False)
    rank_axis = dict(title=rank_title, tickmode="array", tickvals=list(range(1, n_ranks + 1)),
                     range=[n_ranks + 0.6, 0.4], zeroline=False, showgrid=True)
    legend = dict(orientation="h", x=0, xanchor="left", y=1, yref="container", yanchor="top")
    if down:
        rank_axis.update(range=[0.6, n_ranks + 0.9], side="top")
        step_axis.update(range=[n_steps + 0.5, -0.5])
        fig = figure(*traces, height=TREE_CELL_PX * (n_steps + 1) + 150, legend=legend)
        fig.update_layout(margin=dict(t=110))
        fig.update_xaxes(**rank_axis)
        fig.update_yaxes(**step_axis)
    else:
        fig = figure(*traces, height=TREE_CELL_PX * n_ranks + 150, legend=legend)
        fig.update_layout(margin=dict(t=60))
        fig.update_xaxes(**step_axis)
        fig.update_yaxes(**rank_axis)
    if current is not None:
        band = dict(fillcolor=CURRENT_STEP_COLOR, line_width=0, layer="below")
        (fig.add_hrect if down else fig.add_vrect)(current - 0.45, current + 0.45, **band)
    return fig

"""Vega-Lite specs and their data tables for the training page's charts.

The live charts are redrawn about once a second while a run trains. Vega-Lite updates the chart
already on screen when only its named datasets change (a plotly chart would be remounted and
flicker), so each spec here is a pure function of its labels, never of the data, and the data go
in ``spec["datasets"]`` (:func:`with_datasets`) as small Arrow tables, downsampled to at most
:data:`MAX_POINTS` points so a long run costs the browser no more than a short one.

Labels are plain text (Vega-Lite draws text, not markup); tokens go through
:func:`figures.labels.display_token`.
"""
from __future__ import annotations

import json
from typing import Sequence

import numpy as np
import pyarrow as pa

from figures.labels import display_token, plain_number

MAX_POINTS = 300
DASHES = [[1, 0], [5, 4], [2, 2]]  # the planned curves' strokes: this run, the compared warmup, the paper
THIS_RUN = "#b8232f"  # the theme's primary colour
OTHER_RUN = "#8a8fa3"
NOW = "#1f2330"
CHART_HEIGHT = 260

# Learning rates in plain decimals (d3 formats): 0.0007, not 7.0e-4, which a class does not read
LR_FORMAT = ".2~r"
LR_TOOLTIP_FORMAT = ".3~r"


# ------------------------------------------------------------------ data tables


def bucket_means(values: Sequence[float], limit: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """``(steps, values)`` of a per-step series (step 1..n), averaged in at most ``limit`` buckets.

    Each bucket is plotted at its last step, so the final point is the latest step.
    """
    y = np.asarray(values, dtype=float)
    n = len(y)
    if n <= limit:
        return np.arange(1, n + 1), y
    edges = np.linspace(0, n, limit + 1).round().astype(int)
    sums = np.add.reduceat(y, edges[:-1])
    return edges[1:], sums / np.diff(edges)


def sampled_steps(max_steps: int, must_include: Sequence[int] = (), limit: int = MAX_POINTS,
                  geometric: bool = False) -> np.ndarray:
    """About ``limit`` steps spread over 1..max_steps (evenly, or evenly on a log axis with
    ``geometric``), plus ``must_include`` (those in range)."""
    spread = np.geomspace if geometric else np.linspace
    grid = np.unique(spread(1, max(max_steps, 1), limit).round().astype(int))
    extra = [s for s in must_include if 1 <= s <= max_steps]
    return np.unique(np.concatenate([grid, np.asarray(extra, dtype=int)]))


def curve_table(curves: Sequence[tuple[str, Sequence[int], Sequence[float]]]) -> pa.Table:
    """Columns step, lr, series from ``(label, steps, rates)`` curves (the ``curve`` dataset of :func:`lr_spec`)."""
    steps = [np.asarray(s, dtype=np.int64) for _, s, _ in curves] or [np.zeros(0, dtype=np.int64)]
    rates = [np.asarray(r, dtype=float) for _, _, r in curves] or [np.zeros(0)]
    labels = [label for label, s, _ in curves for _ in range(len(s))]
    return pa.table({"step": np.concatenate(steps), "lr": np.concatenate(rates),
                     "series": pa.array(labels, type=pa.string())})


def peak_table(peaks: Sequence[tuple[str, int, float]]) -> pa.Table:
    """Columns step, lr, series, label from ``(label, step, rate)`` peaks (the ``peak`` dataset of :func:`lr_spec`)."""
    return pa.table({
        "step": pa.array([step for _, step, _ in peaks], type=pa.int64()),
        "lr": pa.array([lr for _, _, lr in peaks], type=pa.float64()),
        "series": pa.array([label for label, _, _ in peaks], type=pa.string()),
        "label": pa.array([plain_number(lr, 3) for _, _, lr in peaks], type=pa.string()),
    })


def point_table(**values: float | str) -> pa.Table:
    """A one-row table (the current step's marker, the loss floor...)."""
    return pa.table({name: [value] for name, value in values.items()})


def series_table(runs: Sequence[tuple[str, Sequence[float]]], value: str) -> pa.Table:
    """Columns step, ``value``, series: each ``(label, per-step values)`` bucket-averaged."""
    steps_all, values_all, labels = [np.zeros(0, dtype=np.int64)], [np.zeros(0)], []
    for label, values in runs:
        steps, ys = bucket_means(values)
        steps_all.append(steps.astype(np.int64))
        values_all.append(ys)
        labels.extend([label] * len(steps))
    return pa.table({"step": np.concatenate(steps_all), value: np.concatenate(values_all),
                     "series": pa.array(labels, type=pa.string())})


def eval_table(runs: Sequence[tuple[str, Sequence[tuple[int, float]]]]) -> pa.Table:
    """Columns step, accuracy, series from each run's ``(step, accuracy)`` evaluations."""
    rows = [(s, a, label) for label, evals in runs for s, a in evals]
    return pa.table({
        "step": pa.array([r[0] for r in rows], type=pa.int64()),
        "accuracy": pa.array([r[1] for r in rows], type=pa.float64()),
        "series": pa.array([r[2] for r in rows], type=pa.string()),
    })


def attention_table(weights: np.ndarray) -> pa.Table:
    """Long form of one head's (T, S) weights: columns row, col, weight (labels come from the spec)."""
    T, S = weights.shape
    rows, cols = np.divmod(np.arange(T * S), S)
    return pa.table({"row": rows, "col": cols, "weight": np.asarray(weights, dtype=float).reshape(-1)})


def with_datasets(spec: dict, **datasets: pa.Table) -> dict:
    """A copy of ``spec`` carrying ``datasets`` by name (what ``st.vega_lite_chart`` sends as data)."""
    return {**spec, "datasets": dict(datasets)}


# ------------------------------------------------------------------ specs


def _color(series: Sequence[str]) -> dict:
    """This run in the theme colour, others grey; a fixed domain so colours never swap."""
    palette = [THIS_RUN, OTHER_RUN, "#3b6fb6", "#d9a21b"]
    return {
        "field": "series", "type": "nominal", "title": None,
        "scale": {"domain": list(series), "range": palette[: len(series)]},
        "legend": {"orient": "top", "direction": "vertical", "labelLimit": 600, "symbolType": "stroke"},
    }


def _x(title: str, domain: Sequence[float] | None = None, log: bool = False) -> dict:
    # ",d" and not "~s": Vega gives all ticks one SI prefix, so 200 and 400 read "0.2k" and "0.4k";
    # and not ",": Vega wrote 100 as "1e+2"
    x = {"field": "step", "type": "quantitative", "title": title, "axis": {"format": ",d"},
         "scale": {"zero": True}}
    if domain is not None:
        x["scale"] = {"domain": list(domain), "nice": False}
    if log:  # steps start at 1; only powers of ten are labelled, so the labels do not collide
        x["scale"] = {"type": "log"}
        x["axis"] = {"format": ",d", "values": [10 ** k for k in range(6)]}
    return x


def line_spec(dataset: str, value: str, *, x_title: str, y_title: str, series: Sequence[str],
              y_format: str = "~s", y_domain: Sequence[float] | None = None, x_domain: Sequence[float] | None = None,
              points: bool = False) -> dict:
    """One line per series of the named dataset (columns step, ``value``, series).

    The x axis starts at 0 and grows with the data (the spec stays the same, so the chart updates
    in place); ``x_domain`` pins it instead.
    """
    y = {"field": value, "type": "quantitative", "title": y_title, "axis": {"format": y_format}}
    if y_domain is not None:
        y["scale"] = {"domain": list(y_domain)}
    return {
        "data": {"name": dataset},
        "mark": {"type": "line", "point": points, "interpolate": "linear"},
        "encoding": {
            "x": _x(x_title, x_domain), "y": y, "color": _color(series),
            "tooltip": [{"field": "series", "title": " "}, {"field": "step", "title": x_title},
                        {"field": value, "title": y_title, "format": y_format}],
        },
    }


def with_floor(spec: dict, dataset: str, value: str) -> dict:
    """``spec`` with a dashed horizontal rule and its label from the named dataset (columns ``value``, label)."""
    y = {"field": value, "type": "quantitative"}
    return {
        "layer": [
            spec,
            {"data": {"name": dataset}, "mark": {"type": "rule", "strokeDash": [4, 4], "color": OTHER_RUN},
             "encoding": {"y": y}},
            {"data": {"name": dataset}, "mark": {"type": "text", "align": "left", "dy": -7, "x": 4,
                                                 "color": OTHER_RUN, "fontSize": 11},
             "encoding": {"y": y, "text": {"field": "label"}}},
        ],
    }


def lr_spec(*, x_title: str, y_title: str, series: Sequence[str], live: bool,
            x_domain: Sequence[float] | None = None, log_steps: bool = False) -> dict:
    """Planned Noam curves (dataset ``curve``) with their peaks (``peak``); with ``live``, the
    run's current step (``now``: one row step, lr) as a rule and a dot on top; with ``log_steps``,
    a logarithmic step axis (curves whose warmups differ twentyfold, like this app's and the paper's)."""
    x = _x(x_title, x_domain, log=log_steps)
    y = {"field": "lr", "type": "quantitative", "title": y_title, "axis": {"format": LR_FORMAT}}
    tooltip = [{"field": "series", "title": " "}, {"field": "step", "title": x_title},
               {"field": "lr", "title": y_title, "format": LR_TOOLTIP_FORMAT}]
    layers: list[dict] = [
        {
            "data": {"name": "curve"},
            "mark": {"type": "line"},
            "encoding": {
                "x": x, "y": y, "color": _color(series),
                "strokeDash": {"field": "series", "type": "nominal", "legend": None,
                               "scale": {"domain": list(series), "range": DASHES[: len(series)]}},
                "tooltip": tooltip,
            },
        },
        {
            "data": {"name": "peak"},
            "mark": {"type": "point", "filled": True, "size": 70, "shape": "diamond"},
            "encoding": {"x": x, "y": y, "color": _color(series), "tooltip": tooltip},
        },
        {
            "data": {"name": "peak"},
            "mark": {"type": "text", "dy": -10, "fontSize": 11},
            "encoding": {"x": x, "y": y, "text": {"field": "label"}, "color": _color(series)},
        },
    ]
    if live:
        layers += [
            {"data": {"name": "now"}, "mark": {"type": "rule", "strokeDash": [3, 3], "color": NOW},
             "encoding": {"x": x}},
            {"data": {"name": "now"}, "mark": {"type": "point", "filled": True, "size": 90, "color": NOW},
             "encoding": {"x": x, "y": y}},
        ]
    return {"layer": layers, "resolve": {"scale": {"color": "shared"}}}


def _token_list(tokens: Sequence[str]) -> str:
    """The tokens as a Vega expression array literal (JSON is valid there), e.g. ["a", "␣"]."""
    return json.dumps([display_token(tok) for tok in tokens])


def _token_axis(tokens: Sequence[str], title: str) -> dict:
    """An ordinal axis over positions 0..n-1 labelled with the tokens (duplicates stay separate)."""
    return {"title": title, "labelAngle": 0, "labelExpr": f"{_token_list(tokens)}[datum.value]", "labelOverlap": False}


def attention_spec(src_tokens: Sequence[str], tgt_tokens: Sequence[str], *, dataset: str, title: str,
                   x_title: str, y_title: str, weight_title: str, show_scale: bool) -> dict:
    """A (decoder position x encoder position) heatmap of the named dataset (see :func:`attention_table`).

    The spec depends only on the tokens, so a new snapshot of the same run updates it in place.
    """
    S, T = len(src_tokens), len(tgt_tokens)
    return {
        "title": {"text": title, "fontSize": 13},
        "data": {"name": dataset},
        "transform": [
            {"calculate": f"{_token_list(tgt_tokens)}[datum.row]", "as": "query"},
            {"calculate": f"{_token_list(src_tokens)}[datum.col]", "as": "key"},
        ],
        "mark": {"type": "rect"},
        "encoding": {
            "x": {"field": "col", "type": "ordinal", "scale": {"domain": list(range(S))},
                  "axis": _token_axis(src_tokens, x_title)},
            "y": {"field": "row", "type": "ordinal", "scale": {"domain": list(range(T))},
                  "axis": _token_axis(tgt_tokens, y_title)},
            "color": {"field": "weight", "type": "quantitative", "title": weight_title,
                      "scale": {"domain": [0, 1], "scheme": "blues"},
                      "legend": {"orient": "right", "gradientLength": 120} if show_scale else None},
            "tooltip": [{"field": "query", "title": y_title}, {"field": "key", "title": x_title},
                        {"field": "weight", "title": weight_title, "format": ".3f"}],
        },
    }


def attention_height(tgt_len: int) -> int:
    """Pixels for an attention heatmap of ``tgt_len`` rows: sized to the sentence, never squashed."""
    return max(200, 20 * tgt_len + 80)

"""The training page's Vega-Lite charts, drawn with ``st.vega_lite_chart`` (specs and tables: ``figures.training``).

Every chart has a fixed key and a spec that depends only on its labels; while a run trains the
page redraws them once a second with new datasets only, so the browser updates each chart in
place instead of remounting it (no flicker).

The run's own charts show the current run; the overlay (:func:`overlay_charts`) shows the runs
ticked in the compare list, one colour per run, with one legend for its three charts.
"""
from __future__ import annotations

import functools
import html
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa
import streamlit as st

from explain.alignment import gold_cells, head_alignment_scores, task_alignment, uniform_score
from explain.paper_card import PAPER_D_MODEL, PAPER_STEPS, PAPER_WARMUP
from figures import training as fig
from model.schedule import noam_lr
from model.tasks import get_task
from model.training import MODEL_PRESETS, ProbeAttention, RunSnapshot, loss_floor, pattern_score
from ui.i18n import t

PATTERNS = {"copy": "diagonal", "reverse": "anti"}  # the attention line a task's perfect answer follows


def planned_datasets(d_model: int, factor: float, max_steps: int,
                     curves: Sequence[tuple[str, int]], paper: str | None = None) -> dict[str, pa.Table]:
    """The ``curve`` and ``peak`` datasets of ``figures.training.lr_spec``: the Noam rate of each
    ``(label, warmup)`` over 1..max_steps, and each peak the step cap lets a run reach; with a
    ``paper`` label, also the paper's base-model schedule (:func:`paper_schedule`) under that label.

    Computed once per settings (cached): the live panel redraws the run's planned curve once a
    second, and the settings' curve is drawn on every rerun of the page. The tables are immutable."""
    return dict(_planned_datasets(d_model, float(factor), max_steps, tuple((label, w) for label, w in curves), paper))


@functools.lru_cache(maxsize=64)
def _planned_datasets(d_model: int, factor: float, max_steps: int, curves: tuple[tuple[str, int], ...],
                      paper: str | None) -> dict[str, pa.Table]:
    lines, peaks = [], []
    drawn = [(label, warmup, d_model, factor, max_steps) for label, warmup in curves]
    if paper is not None:
        drawn.append((paper, PAPER_WARMUP, PAPER_D_MODEL, 1.0, max(max_steps, PAPER_STEPS)))
    for label, warmup, width, scale, last in drawn:
        steps = fig.sampled_steps(last, [warmup], geometric=paper is not None)
        lines.append((label, steps, [noam_lr(int(s), width, warmup, scale) for s in steps]))
        if warmup <= last:
            peaks.append((label, warmup, noam_lr(warmup, width, warmup, scale)))
    return {"curve": fig.curve_table(lines), "peak": fig.peak_table(peaks)}


def peak_rate(d_model: int, warmup: int, factor: float) -> float:
    """The Noam rate at its peak, the last warmup step: factor · d_model^-0.5 · warmup^-0.5."""
    return noam_lr(warmup, d_model, warmup, factor)


def worked_peak(d_model: int, warmup: int, factor: float) -> str:
    """The peak rate worked out in LaTeX: lr_max = factor · d_model^-0.5 · warmup^-0.5 = value."""
    peak = noam_lr(warmup, d_model, warmup, factor)
    return (rf"$\mathrm{{lr}}_{{\max}} = {factor:g}\cdot {d_model}^{{-0.5}}\cdot "
            rf"{warmup}^{{-0.5}} = {latex_number(peak)}$")


def latex_number(value: float, digits: int = 3) -> str:
    """``value`` in LaTeX scientific notation, e.g. 1.25 \\times 10^{-2}."""
    if value == 0 or not np.isfinite(value):
        return f"{value:g}"
    exponent = int(np.floor(np.log10(abs(value))))
    if -2 <= exponent <= 2:
        return f"{value:.{digits}g}"
    return rf"{value / 10 ** exponent:.{digits}g} \times 10^{{{exponent}}}"


def planned_chart(d_model: int, factor: float, max_steps: int, curves: Sequence[tuple[str, int]],
                  paper: str | None = None) -> None:
    """The Noam curves a run with these settings would follow, one per ``(label, warmup)``; with a
    ``paper`` label, the paper's schedule too, on a logarithmic step axis (its warmup is 4000 steps)."""
    series = [label for label, _ in curves] + ([paper] if paper is not None else [])
    spec = fig.lr_spec(x_title=t("training.chart.step"), y_title=t("training.chart.lr"), series=series, live=False,
                       log_steps=paper is not None)
    st.vega_lite_chart(fig.with_datasets(spec, **planned_datasets(d_model, factor, max_steps, curves, paper)),
                       height=fig.CHART_HEIGHT, key="training.planned_chart")


def paper_schedule() -> tuple[int, int, float]:
    """The paper's base-model schedule (§5.3): d_model, warmup and its peak rate, 512^-0.5 · 4000^-0.5."""
    return PAPER_D_MODEL, PAPER_WARMUP, noam_lr(PAPER_WARMUP, PAPER_D_MODEL, PAPER_WARMUP, 1.0)


def run_label(snap: RunSnapshot, key: str) -> str:
    """A run's name in the legends: its warmup, and whether it trained without the look-ahead mask."""
    mask = "" if snap.config["use_look_ahead_mask"] else t("training.chart.no_look_ahead")
    return t(key, warmup=snap.config["warmup"], mask=mask)


def run_charts(snap: RunSnapshot) -> None:
    """Loss, learning rate, accuracy and speed of the run, two by two (other runs: :func:`overlay_charts`)."""
    this = run_label(snap, "training.chart.this_run")
    runs = [(this, snap)]
    left, right = st.columns(2)
    with left:
        _loss_chart(snap, runs)
    with right:
        _lr_chart(snap, this)
    left, right = st.columns(2)
    with left:
        _accuracy_chart(snap, runs)
    with right:
        _speed_chart(snap, this)


def _series(runs: list[tuple[str, RunSnapshot]], pick: Callable[[RunSnapshot], list]) -> list[tuple[str, list]]:
    return [(label, pick(run)) for label, run in runs]


def _loss_chart(snap: RunSnapshot, runs: list[tuple[str, RunSnapshot]]) -> None:
    st.markdown(f"**{t('training.chart.loss_heading')}**")
    spec = fig.line_spec("loss", "loss", x_title=t("training.chart.step"), y_title=t("training.chart.loss"),
                         series=[label for label, _ in runs], y_format=".2f")
    floor = loss_floor(snap.config["task"], snap.config["label_smoothing"], snap.config.get("tokens", "words"),
                       snap.config.get("seed", 0))
    st.vega_lite_chart(fig.with_datasets(
        fig.with_floor(spec, "floor", "loss"),
        loss=fig.series_table(_series(runs, lambda s: s.losses), "loss"),
        floor=fig.point_table(loss=floor, label=t("training.chart.floor", floor=f"{floor:.2f}")),
    ), height=fig.CHART_HEIGHT, key="training.loss_chart")


def _lr_chart(snap: RunSnapshot, this: str) -> None:
    st.markdown(f"**{t('training.chart.lr_heading')}**")
    cfg = snap.config
    spec = fig.lr_spec(x_title=t("training.chart.step"), y_title=t("training.chart.lr"), series=[this], live=True)
    planned = planned_datasets(MODEL_PRESETS[cfg["preset"]]["d_model"], cfg["factor"], snap.max_steps,
                               [(this, cfg["warmup"])])
    now = fig.point_table(step=max(snap.step, 1), lr=snap.lrs[-1] if snap.lrs else 0.0)
    st.vega_lite_chart(fig.with_datasets(spec, **planned, now=now), height=fig.CHART_HEIGHT,
                       key="training.lr_chart")


def _accuracy_chart(snap: RunSnapshot, runs: list[tuple[str, RunSnapshot]]) -> None:
    st.markdown(f"**{t('training.chart.accuracy_heading')}**")
    if not snap.evals and len(runs) == 1:  # an empty chart would have no x axis yet
        st.caption(t("training.chart.first_eval", step=snap.config["eval_every"], count=snap.config["eval_size"]))
        return
    spec = fig.line_spec("acc", "accuracy", x_title=t("training.chart.step"), y_title=t("training.chart.accuracy"),
                         series=[label for label, _ in runs], y_format=".0%", y_domain=(0, 1), points=True)
    st.vega_lite_chart(fig.with_datasets(spec, acc=fig.eval_table(_series(runs, lambda s: s.evals))),
                       height=fig.CHART_HEIGHT, key="training.accuracy_chart")


def _speed_chart(snap: RunSnapshot, this: str) -> None:
    st.markdown(f"**{t('training.chart.speed_heading')}**")
    spec = fig.line_spec("speed", "speed", x_title=t("training.chart.step"), y_title=t("training.chart.speed"),
                         series=[this])
    st.vega_lite_chart(fig.with_datasets(spec, speed=fig.series_table([(this, snap.tokens_per_s)], "speed")),
                       height=fig.CHART_HEIGHT, key="training.speed_chart")


def probe_source_text(task: str, tokens: list[str]) -> str:
    """The probe's source as it was typed: characters joined, words (a translation task's English) spaced,
    BPE pieces joined with each ▁ (a word's start) a space again."""
    if any(token.startswith("▁") for token in tokens):
        return "".join(tokens).replace("▁", " ").strip()
    return (" " if get_task(task).source_tokenizer().unit == "word" else "").join(tokens)


@dataclass(frozen=True)
class ProbeAlignment:
    """The probe's cross-attention scored against its gold alignment (``explain.alignment``) at every probe:
    ``steps``, the best head's score at each (``best``), the best head at the last one, and chance."""

    steps: list[int]
    best: list[float]
    last_scores: np.ndarray  # (L, H) at the last probe
    chance: float


def probe_alignment(task: str, source: str, probes: Sequence[ProbeAttention]) -> ProbeAlignment | None:
    """None for a task without a gold alignment or a probe whose maps do not match it in size."""
    gold = task_alignment(task, source)
    if gold is None or not probes:
        return None
    T, S = probes[0].weights().shape[-2:]
    if S != len(gold.source) or T != len(gold.target) + 1:
        return None
    cells = gold_cells(gold.links, T, S)
    if not cells.any():
        return None
    scores = [head_alignment_scores(p.weights(), cells) for p in probes]
    return ProbeAlignment([p.step for p in probes], [float(np.nanmax(s)) for s in scores], scores[-1],
                          uniform_score(cells))


def alignment_chart(found: ProbeAlignment) -> None:
    """The best head's alignment score over the steps, with chance as a dashed rule (updates in place)."""
    best = t("training.probe.align_series")
    spec = fig.line_spec("align", "score", x_title=t("training.chart.step"), y_title=t("training.probe.align_axis"),
                         series=[best], y_format=".0%", y_domain=(0, 1), points=True)
    table = pa.table({"step": pa.array(found.steps, type=pa.int64()), "score": pa.array(found.best, type=pa.float64()),
                      "series": pa.array([best] * len(found.steps), type=pa.string())})
    floor = fig.point_table(score=found.chance, label=t("training.probe.align_chance", chance=f"{found.chance:.0%}"))
    st.vega_lite_chart(fig.with_datasets(fig.with_floor(spec, "chance", "score"), align=table, chance=floor),
                       height=fig.CHART_HEIGHT, key="training.alignment_chart")


def head_score(weights: np.ndarray, task: str) -> tuple[str, float] | None:
    """``(pattern, score)``: how much of one head's (T, S) weights lie on the line ``task``'s perfect
    answer follows (``model.training.pattern_score``), or None for a task without one."""
    pattern = PATTERNS.get(task)
    score = pattern_score(weights, pattern) if pattern is not None else None
    return (pattern, score) if score is not None else None


def attention_head(weights: np.ndarray, src_tokens: Sequence[str], tgt_tokens: Sequence[str], head: int, *,
                   show_scale: bool) -> None:
    """One head's (T, S) cross-attention weights as a heatmap, keyed by the head so it updates in place."""
    spec = fig.attention_spec(
        src_tokens, tgt_tokens, dataset="weights", title=t("training.probe.head", n=head + 1),
        x_title=t("training.probe.x_title"), y_title=t("training.probe.y_title"),
        weight_title=t("training.probe.weight"), show_scale=show_scale)
    st.vega_lite_chart(fig.with_datasets(spec, weights=fig.attention_table(weights)),
                       height=fig.attention_height(len(tgt_tokens)), key=f"training.probe_head_{head}")


# ------------------------------------------------------------------ the compare overlay

# One colour per compared run (at most ui.training.session.MAX_COMPARED), the first the theme's.
OVERLAY_COLORS = ("#b8232f", "#3b6fb6", "#2a9d5c", "#d9a21b", "#7b4fb0", "#e07b39", "#1f9aa6", "#5c6370")
OVERLAY_KEYS = ("training.compare_loss", "training.compare_accuracy", "training.compare_lr")


def overlay_colors(spec: dict, count: int) -> dict:
    """``spec`` with one overlay colour per series and no legend of its own (the page draws one legend)."""
    def walk(node: object) -> None:
        if isinstance(node, dict):
            color = node.get("color")
            if isinstance(color, dict) and color.get("field") == "series":
                color["scale"] = {**color.get("scale", {}), "range": list(OVERLAY_COLORS[:count])}
                color["legend"] = None
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(spec)
    return spec


def overlay_datasets(runs: Sequence[tuple[str, RunSnapshot]]) -> dict[str, dict[str, pa.Table]]:
    """The overlay's data, chart by chart: each run's loss per step, its evaluations and the rate it used."""
    return {
        "loss": {"loss": fig.series_table(_series(list(runs), lambda s: s.losses), "loss")},
        "accuracy": {"acc": fig.eval_table(_series(list(runs), lambda s: s.evals))},
        "lr": {"rate": fig.series_table(_series(list(runs), lambda s: s.lrs), "lr")},
    }


def overlay_legend(labels: Sequence[str]) -> str:
    """The overlay's one legend as HTML: a colour swatch and the run's label, one line each."""
    items = "".join(
        f'<li><span style="display:inline-block;width:1.6em;height:0.3em;margin:0 0.5em 0.2em 0;'
        f'background:{color};vertical-align:middle"></span>{html.escape(label)}</li>'
        for label, color in zip(labels, OVERLAY_COLORS))
    return f'<ul class="training-overlay-legend" style="list-style:none;padding:0;margin:0">{items}</ul>'


def overlay_charts(runs: Sequence[tuple[str, RunSnapshot]]) -> None:
    """Loss, exact-match accuracy and learning rate of ``runs`` (label, snapshot) on shared axes,
    one colour per run; a run still training is redrawn with the page's live refresh."""
    labels = [label for label, _ in runs]
    st.html(overlay_legend(labels))
    data = overlay_datasets(runs)
    step = t("training.chart.step")
    specs = {
        "loss": fig.line_spec("loss", "loss", x_title=step, y_title=t("training.chart.loss"), series=labels,
                              y_format=".2f"),
        "accuracy": fig.line_spec("acc", "accuracy", x_title=step, y_title=t("training.chart.accuracy"),
                                  series=labels, y_format=".0%", y_domain=(0, 1), points=True),
        "lr": fig.line_spec("rate", "lr", x_title=step, y_title=t("training.chart.lr"), series=labels,
                            y_format=fig.LR_FORMAT),
    }
    headings = {"loss": "training.chart.loss_heading", "accuracy": "training.compare.accuracy_heading",
                "lr": "training.compare.lr_heading"}
    for column, (name, key) in zip(st.columns(3), zip(specs, OVERLAY_KEYS)):
        with column:
            st.markdown(f"**{t(headings[name])}**")
            st.vega_lite_chart(fig.with_datasets(overlay_colors(specs[name], len(labels)), **data[name]),
                               height=fig.CHART_HEIGHT, key=key)

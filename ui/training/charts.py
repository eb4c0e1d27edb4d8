"""The training page's Vega-Lite charts, drawn with ``st.vega_lite_chart`` (specs and tables: ``figures.training``).

Every chart has a fixed key and a spec that depends only on its labels; while a run trains the
page redraws them once a second with new datasets only, so the browser updates each chart in
place instead of remounting it (no flicker).
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import pyarrow as pa
import streamlit as st

from figures import training as fig
from model.schedule import noam_lr
from model.training import MODEL_PRESETS, RunSnapshot, loss_floor
from ui.i18n import t


def planned_datasets(d_model: int, factor: float, max_steps: int,
                     curves: Sequence[tuple[str, int]]) -> dict[str, pa.Table]:
    """The ``curve`` and ``peak`` datasets of ``figures.training.lr_spec``: the Noam rate of each
    ``(label, warmup)`` over 1..max_steps, and each peak the step cap lets a run reach."""
    lines, peaks = [], []
    for label, warmup in curves:
        steps = fig.sampled_steps(max_steps, [warmup])
        lines.append((label, steps, [noam_lr(int(s), d_model, warmup, factor) for s in steps]))
        if warmup <= max_steps:
            peaks.append((label, warmup, noam_lr(warmup, d_model, warmup, factor)))
    return {"curve": fig.curve_table(lines), "peak": fig.peak_table(peaks)}


def planned_chart(d_model: int, factor: float, max_steps: int, curves: Sequence[tuple[str, int]]) -> None:
    """The Noam curves a run with these settings would follow, one per ``(label, warmup)``."""
    spec = fig.lr_spec(x_title=t("training.chart.step"), y_title=t("training.chart.lr"),
                       series=[label for label, _ in curves], live=False)
    st.vega_lite_chart(fig.with_datasets(spec, **planned_datasets(d_model, factor, max_steps, curves)),
                       height=fig.CHART_HEIGHT, key="training.planned_chart")


def run_label(snap: RunSnapshot, key: str) -> str:
    """A run's name in the legends: its warmup, and whether it trained without the look-ahead mask."""
    mask = "" if snap.config["use_look_ahead_mask"] else t("training.chart.no_look_ahead")
    return t(key, warmup=snap.config["warmup"], mask=mask)


def run_charts(snap: RunSnapshot, previous: RunSnapshot | None) -> None:
    """Loss, learning rate, accuracy and speed of the run, two by two; loss and accuracy also show
    the run before (``previous``) for comparison."""
    this = run_label(snap, "training.chart.this_run")
    runs = [(this, snap)]
    if previous is not None:
        runs.append((run_label(previous, "training.chart.previous_run"), previous))
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
    floor = loss_floor(snap.config["task"], snap.config["label_smoothing"])
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


def attention_head(weights: np.ndarray, src_tokens: Sequence[str], tgt_tokens: Sequence[str], head: int, *,
                   show_scale: bool) -> None:
    """One head's (T, S) cross-attention weights as a heatmap, keyed by the head so it updates in place."""
    spec = fig.attention_spec(
        src_tokens, tgt_tokens, dataset="weights", title=t("training.probe.head", n=head + 1),
        x_title=t("training.probe.x_title"), y_title=t("training.probe.y_title"),
        weight_title=t("training.probe.weight"), show_scale=show_scale)
    st.vega_lite_chart(fig.with_datasets(spec, weights=fig.attention_table(weights)),
                       height=fig.attention_height(len(tgt_tokens)), key=f"training.probe_head_{head}")

"""The training page's compare list: every run of this session (at most ``MAX_COMPARED``), the
settings that differ between them, and the overlay of the ticked runs' curves.

The list lives in the browser session only (:class:`ui.training.session.TrainingSession`) and
holds each run's curves and settings, never its model. It is drawn with the run panel, so while
a run trains the panel's once-a-second refresh redraws it too: a run still going updates live in
the overlay. Each row has a tick (drawn in the overlay or not) and a remove button.
"""
from __future__ import annotations

from typing import Any, Sequence

import pandas as pd
import streamlit as st

from model.training import RunSnapshot
from ui.i18n import t
from ui.training import charts
from ui.training import session as ts
from ui.training.settings import COMPARED_FIELDS, DEFAULTS
from ui.training.status import STOPPED_REASONS, format_count, format_duration

_FLAGS = ("norm_first", "use_padding_mask", "use_look_ahead_mask")  # true / false settings
_KINDS = ("tokens", "heads", "head_dim", "norm_kind", "ffn_kind", "position_kind")  # settings named by their kind
SHOW_KEY = "training.compare_show_{number}"
REMOVE_KEY = "training.compare_remove_{number}"


def differing_fields(configs: Sequence[dict[str, Any]], fields: Sequence[str] = COMPARED_FIELDS) -> list[str]:
    """The ``fields`` whose value is not the same in all ``configs`` (an old config without a field
    counts as that field's default)."""
    values = [{name: config.get(name, DEFAULTS[name]) for name in fields} for config in configs]
    return [name for name in fields if len({repr(v[name]) for v in values}) > 1]


def setting_text(name: str, value: Any) -> str:
    """One setting as a few words in the session's language, e.g. ``warmup 200`` or ``pre-norm``."""
    if name == "task":
        return t(f"training.task_name.{value}")
    if name == "preset":
        return t(f"training.preset_name.{value}")
    if name in _FLAGS:
        return t(f"training.compare.setting.{name}.{'on' if value else 'off'}")
    if name in _KINDS:
        return t(f"training.compare.setting.{name}.{value}")
    shown = f"{value:g}" if isinstance(value, float) else format_count(value) if name == "max_steps" else value
    return t(f"training.compare.setting.{name}", value=shown)


def differences(config: dict[str, Any], fields: Sequence[str]) -> str:
    """The values of ``fields`` in ``config``, as one comma-separated phrase ("" for none)."""
    return t("training.compare.separator").join(setting_text(name, config.get(name, DEFAULTS[name])) for name in fields)


def run_label(run: ts.ComparedRun, fields: Sequence[str]) -> str:
    """A run's name in the overlay's legend: its name and what sets it apart from the others shown."""
    differs = differences(run.config, fields)
    return t("training.compare.label", name=run.name, differs=differs) if differs else run.name


def _loss(value: float | None) -> str:
    return f"{value:.3f}" if value is not None else "–"


def _state(snap: RunSnapshot) -> str:
    """Where the run stands, in a word or two: training, paused, stopped at a step, failed, or done."""
    if snap.state in ("queued", "running"):
        state = "running"
    elif snap.state in ("paused", "failed"):
        state = snap.state
    else:
        state = "stopped" if snap.reason in STOPPED_REASONS else "done"
    return t(f"training.compare.state.{state}", step=format_count(snap.step))


def summary(run: ts.ComparedRun, fields: Sequence[str]) -> str:
    """A row of the list: task, the settings that differ, final loss, exact match, time and state."""
    snap = run.snapshot
    accuracy = f"{snap.accuracy:.0%}" if snap.accuracy is not None else "–"
    differs = differences(run.config, fields) or t("training.compare.same")
    return t("training.compare.row", task=setting_text("task", run.config["task"]), differs=differs,
             loss=_loss(snap.loss), accuracy=accuracy, time=format_duration(snap.elapsed_s), state=_state(snap))


def _on_show(session: ts.TrainingSession, number: int) -> None:
    session.show(number, bool(st.session_state.get(SHOW_KEY.format(number=number))))


def _row(session: ts.TrainingSession, run: ts.ComparedRun, fields: Sequence[str]) -> None:
    key = SHOW_KEY.format(number=run.number)
    if key not in st.session_state:
        st.session_state[key] = run.shown
    training = run.snapshot.state in ("queued", "running", "paused")
    with st.container(horizontal=True, vertical_alignment="center", gap="small",
                      key=f"training_compare_row_{run.number}"):
        st.checkbox(run.name, key=key, on_change=_on_show, args=(session, run.number),
                    help=t("training.compare.show_help"))
        st.markdown(summary(run, fields), width="stretch")
        st.button(t("training.compare.remove"), icon=":material/delete:", type="tertiary",
                  key=REMOVE_KEY.format(number=run.number), on_click=session.remove, args=(run.number,),
                  disabled=training, help=t("training.compare.remove_help"))


def compare_section(session: ts.TrainingSession, current: RunSnapshot | None = None) -> None:
    """The compare list and, with two or more runs ticked, their overlay (nothing before a run has trained)."""
    runs = session.compared(current)
    if not runs:
        return
    st.subheader(t("training.compare.heading"))
    st.caption(t("training.compare.caption", limit=ts.MAX_COMPARED))
    if session.dropped:
        st.caption(t("training.compare.dropped", names=", ".join(session.dropped), limit=ts.MAX_COMPARED))
    fields = differing_fields([run.config for run in runs])
    for run in runs:
        _row(session, run, fields)
    shown = [run for run in runs if run.shown]
    if len(shown) < 2:
        st.caption(t("training.compare.tick_two"))
        return
    label_fields = differing_fields([run.config for run in shown], ("task",) + COMPARED_FIELDS)
    charts.overlay_charts([(run_label(run, label_fields), run.snapshot) for run in shown])
    scores_table([(run_label(run, label_fields), run.snapshot) for run in shown])


def scores_table(runs: Sequence[tuple[str, RunSnapshot]]) -> None:
    """Each ticked run's parameters and last evaluation side by side: exact match, held-out perplexity and
    (translation) BLEU, the numbers an experiment is read by (a loss with label smoothing has a floor, so it
    is not one of them)."""
    rows = [{t("training.compare.scores.run"): label,
             t("training.compare.scores.params"): f"{snap.num_params:,}",
             t("training.compare.scores.step"): format_count(snap.evals[-1][0]),
             t("training.compare.scores.accuracy"): f"{snap.evals[-1][1]:.1%}",
             t("training.compare.scores.perplexity"): f"{snap.held_out[-1].perplexity:.3f}" if snap.held_out else "–",
             t("training.compare.scores.bleu"): f"{snap.held_out[-1].bleu:.1f}"
             if snap.held_out and snap.held_out[-1].bleu is not None else "–"}
            for label, snap in runs if snap.evals]
    if rows:
        st.markdown(f"**{t('training.compare.scores.heading')}**")
        st.dataframe(pd.DataFrame(rows), hide_index=True)
        st.caption(t("training.compare.scores.caption"))

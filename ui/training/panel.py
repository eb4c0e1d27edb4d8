"""The training page's sections: settings, the planned schedule, the controls, the live run, the results.

``app_pages/training.py`` calls these in order. Settings widgets are mirrored in the URL
(``?tr_task=copy&tr_warmup=200...``); the run itself belongs to the browser session
(:mod:`ui.training.session`) and is read here as plain data (``model.training.RunSnapshot``).
Whether settings can train is decided by the engine alone (``TrainingConfig.problem``); this page
only translates its answer (:func:`problem_text`).

While a run is queued or training, :func:`run_panel` redraws its numbers, charts and attention
snapshot once a second in one fragment (only it reruns, not the page), with Vega-Lite charts that
update in place.
"""
from __future__ import annotations

from datetime import timedelta
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from model.checkpoint import CheckpointError
from model.config import FFN_KINDS, NORM_KINDS, POSITION_KINDS, InvalidConfig, Problem, ffn_parameter_count, swiglu_hidden
from model.schedule import noam_lr
from model.tasks import TASK_NAMES, TRANSLATION_TASKS, get_task
from model.training import (
    MAX_BATCH_SIZE, MODEL_PRESETS, ProbeAttention, RunSnapshot, parameter_count, pattern_score,
)
from ui import models
from ui.i18n import t
from ui.page_errors import fragment
from ui.training import charts
from ui.training import compare
from ui.training import experiments
from ui.training import session as ts
from ui.training import status as run_status
from ui.training.status import STOPPED_REASONS, format_count
from ui.url_state import BoolParam, ChoiceParam, FloatParam, IntParam, bind, markdown_literal

REFRESH_SECONDS = 1.0
_DEFAULTS = ts.Settings()

TASK = ChoiceParam("tr_task", default=_DEFAULTS.task, choices=TASK_NAMES)
PRESET = ChoiceParam("tr_size", default=_DEFAULTS.preset, choices=tuple(MODEL_PRESETS))
BATCH = IntParam("tr_batch", default=_DEFAULTS.batch_size, lo=1, hi=MAX_BATCH_SIZE)
WARMUP = IntParam("tr_warmup", default=_DEFAULTS.warmup, lo=1, hi=4000)
COMPARE = IntParam("tr_cmp", default=800, lo=0, hi=4000)
FACTOR = FloatParam("tr_factor", default=_DEFAULTS.factor, lo=0.1, hi=5.0, step=0.1)
SMOOTHING = FloatParam("tr_eps", default=_DEFAULTS.label_smoothing, lo=0.0, hi=0.5, step=0.05)
SEED = IntParam("tr_seed", default=_DEFAULTS.seed, lo=0, hi=2**31 - 1)
STEPS = IntParam("tr_steps", default=_DEFAULTS.max_steps, lo=1, hi=ts.PAGE_MAX_STEPS)
PADDING = BoolParam("tr_pad", default=_DEFAULTS.use_padding_mask)
LOOK_AHEAD = BoolParam("tr_ahead", default=_DEFAULTS.use_look_ahead_mask)
PRE_NORM = BoolParam("tr_prenorm", default=_DEFAULTS.norm_first)
NORM = ChoiceParam("tr_norm", default=_DEFAULTS.norm_kind, choices=NORM_KINDS)
FFN = ChoiceParam("tr_ffn", default=_DEFAULTS.ffn_kind, choices=FFN_KINDS)
POSITION = ChoiceParam("tr_pos", default=_DEFAULTS.position_kind, choices=POSITION_KINDS)
VARIANTS = {"norm_first": PRE_NORM, "norm_kind": NORM, "ffn_kind": FFN, "position_kind": POSITION}

KEYS = {  # Settings field -> session-state key of its widget
    "task": "training.task", "preset": "training.preset", "batch_size": "training.batch", "warmup": "training.warmup",
    "factor": "training.factor", "label_smoothing": "training.eps", "seed": "training.seed",
    "max_steps": "training.steps", "use_padding_mask": "training.pad", "use_look_ahead_mask": "training.ahead",
    "norm_first": "training.norm_first", "norm_kind": "training.norm_kind", "ffn_kind": "training.ffn_kind",
    "position_kind": "training.position_kind",
}
COMPARE_KEY = "training.compare"
_FLASH_KEY = "_training.flash"  # (where, kind, i18n key, args) shown once after a button's callback
_UPLOAD_KEY = "training.upload"
_UPLOAD_RESULT_KEY = "_training.upload_result"
_NAME_KEY = "training.model_name"
_NAME_FOR_KEY = "_training.name_for"  # the run number the name field was last filled for
_PROBE_KEY = "training.probe_step"
_LAYER_KEY = "training.probe_layer"
_SAMPLES_BATCH_KEY = "_training.samples_batch"

FAILURE_REASON_LIMIT = 600  # characters of a failed run's reason shown on the page (escaped, shown literally)
REASONS = {  # engine reason -> i18n key suffix
    "step cap reached": "step_cap", "time cap reached": "time_cap", "target accuracy reached": "target",
    **STOPPED_REASONS,
}
PATTERNS = {"copy": "diagonal", "reverse": "anti"}  # the attention line a task's perfect answer follows


def problem_message(problem: Problem) -> tuple[str, dict[str, Any]]:
    """``(i18n key, args)`` of the engine's ``problem``: its code names the sentence, text values are escaped."""
    args = {name: markdown_literal(value) if isinstance(value, str) else value
            for name, value in problem.values.items()}
    return f"training.invalid.{problem.code}", args


def problem_text(problem: Problem) -> str:
    """The engine's ``problem`` as one sentence in the session's language."""
    key, args = problem_message(problem)
    return t(key, **args)


# ------------------------------------------------------------------ settings


def settings_form() -> ts.Settings:
    """The settings widgets (left) and the planned learning-rate curve (right); returns the settings."""
    left, right = st.columns([2, 3], gap="large")
    with left, st.container(border=True):
        _settings_widgets()
    with right:
        st.subheader(t("training.schedule.heading"))
        st.latex(r"\mathrm{lr}(s) = \mathrm{factor}\cdot d_{\mathrm{model}}^{-0.5}\cdot"
                 r"\min\!\left(s^{-0.5},\; s\cdot \mathrm{warmup}^{-1.5}\right)")
        planned_schedule()
    return read_settings()


def _settings_widgets() -> None:
    st.subheader(t("training.settings.heading"))
    st.radio(t("training.settings.task"), TASK.choices, key=bind(TASK, key=KEYS["task"]),
             format_func=lambda name: t(f"training.task_name.{name}"), horizontal=True,
             help=t("training.settings.task_help"))
    if st.session_state.get(KEYS["task"]) in TRANSLATION_TASKS:
        st.caption(t("training.settings.translation_time"))
    st.radio(t("training.settings.preset"), PRESET.choices, key=bind(PRESET, key=KEYS["preset"]),
             format_func=preset_label, horizontal=True, help=t("training.settings.preset_help"))
    a, b = st.columns(2)
    with a:
        st.number_input(t("training.settings.batch"), BATCH.lo, BATCH.hi, step=8,
                        key=bind(BATCH, key=KEYS["batch_size"]), help=t("training.settings.batch_help"))
    with b:
        st.number_input(t("training.settings.steps"), STEPS.lo, STEPS.hi, step=100,
                        key=bind(STEPS, key=KEYS["max_steps"]),
                        help=t("training.settings.steps_help", seconds=int(ts.max_run_seconds())))
    st.slider(t("training.settings.factor"), FACTOR.lo, FACTOR.hi, step=FACTOR.step,
              key=bind(FACTOR, key=KEYS["factor"]), help=t("training.settings.factor_help"))
    a, b = st.columns(2)
    with a:
        st.slider(t("training.settings.smoothing"), SMOOTHING.lo, SMOOTHING.hi, step=SMOOTHING.step,
                  key=bind(SMOOTHING, key=KEYS["label_smoothing"]), help=t("training.settings.smoothing_help"))
    with b:
        st.number_input(t("training.settings.seed"), SEED.lo, SEED.hi, step=1, key=bind(SEED, key=KEYS["seed"]),
                        help=t("training.settings.seed_help"))
    st.toggle(t("training.settings.padding"), key=bind(PADDING, key=KEYS["use_padding_mask"]),
              help=t("training.settings.padding_help"))
    st.toggle(t("training.settings.look_ahead"), key=bind(LOOK_AHEAD, key=KEYS["use_look_ahead_mask"]),
              help=t("training.settings.look_ahead_help"))
    _variant_widgets({name: bind(param, key=KEYS[name]) for name, param in VARIANTS.items()})


def _variant_widgets(keys: dict[str, str]) -> None:
    """The four model-variant switches, each with one sentence (and its formula) on the choice made,
    and the parameter count that the task, size and switches give."""
    st.markdown(f"**{t('training.variant.heading')}**")
    st.radio(t("training.variant.norm_first.label"), (False, True), key=keys["norm_first"], horizontal=True,
             format_func=lambda pre: t(f"training.variant.norm_first.{'pre' if pre else 'post'}"))
    st.caption(t(f"training.variant.norm_first.{'pre' if st.session_state[keys['norm_first']] else 'post'}_explain"))
    for name, kinds in (("norm_kind", NORM_KINDS), ("ffn_kind", FFN_KINDS), ("position_kind", POSITION_KINDS)):
        st.radio(t(f"training.variant.{name}.label"), kinds, key=keys[name], horizontal=True,
                 format_func=lambda kind, name=name: t(f"training.variant.{name}.{kind}"))
        st.caption(t(f"training.variant.{name}.{st.session_state[keys[name]]}_explain"))
    settings = read_settings()
    if settings.task in TASK_NAMES and settings.preset in MODEL_PRESETS:
        st.caption(parameter_text(settings))


def variant_fields(settings: ts.Settings) -> dict[str, Any]:
    """The model-variant switches of ``settings``, as ``parameter_count`` takes them."""
    return {name: getattr(settings, name) for name in VARIANTS}


def parameter_text(settings: ts.Settings) -> str:
    """The model's parameter count with these switches, and what one feed-forward block costs with SwiGLU and ReLU."""
    sizes = MODEL_PRESETS[settings.preset]
    d_model, d_ff = sizes["d_model"], sizes["d_ff"]
    params = parameter_count(settings.task, settings.preset, **variant_fields(settings))
    return t("training.variant.params", params=f"{params:,}", d_ff=d_ff, hidden=swiglu_hidden(d_ff),
             relu=f"{ffn_parameter_count(d_model, d_ff, 'relu'):,}",
             swiglu=f"{ffn_parameter_count(d_model, d_ff, 'swiglu'):,}")


def preset_label(preset: str) -> str:
    """A model size's option: its name and shape. The parameter count, which also depends on the task and
    the switches, is the sentence under the switches: a radio's labels must not change while it is on
    screen (the browser would send back the old label, which is no longer an option)."""
    p = MODEL_PRESETS[preset]
    return t("training.settings.preset_option", name=preset_name(preset), d_model=p["d_model"],
             layers=p["n_layers"], heads=p["n_heads"])


def preset_name(preset: str) -> str:
    """A model size's name in the session's language (``tiny`` is 微型 in Chinese)."""
    return t(f"training.preset_name.{preset}")


def read_settings() -> ts.Settings:
    """The settings as the widgets hold them now (also usable inside a button callback)."""
    state = st.session_state
    values = {field: state.get(key, getattr(_DEFAULTS, field)) for field, key in KEYS.items()}
    return ts.Settings(**values)


@fragment
def planned_schedule() -> None:
    """The warmup slider, the peak it gives, the Noam curve the next run will follow and a second
    warmup to compare with: moving either slider reruns only this. The other settings are read from
    their widgets, which rerun the whole page."""
    st.slider(t("training.settings.warmup"), WARMUP.lo, WARMUP.hi, key=bind(WARMUP, key=KEYS["warmup"]),
              help=t("training.settings.warmup_help"))
    compare_key = bind(COMPARE, key=COMPARE_KEY)
    settings = read_settings()
    problem = settings.problem()
    if problem is not None:
        st.error(problem_text(problem), icon=":material/block:")
        return
    d_model = MODEL_PRESETS[settings.preset]["d_model"]
    st.caption(t("training.schedule.peak_worked", worked=worked_peak(d_model, settings.warmup, settings.factor)))
    compare = st.session_state[compare_key]
    warmups = [settings.warmup] + ([compare] if compare and compare != settings.warmup else [])
    charts.planned_chart(d_model, settings.factor, settings.max_steps,
                         [(t("training.schedule.series", warmup=w), w) for w in warmups])
    if settings.warmup > settings.max_steps:
        st.warning(t("training.schedule.peak_after_cap", warmup=settings.warmup, steps=settings.max_steps),
                   icon=":material/block:")
    st.caption(t("training.schedule.peak_caption"))
    st.slider(t("training.schedule.compare"), COMPARE.lo, COMPARE.hi, key=compare_key,
              help=t("training.schedule.compare_help"))


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


# ------------------------------------------------------------------ buttons


def _flash(kind: str, key: str, where: str = "controls", **args: Any) -> None:
    st.session_state[_FLASH_KEY] = (where, kind, key, args)


def _show_flash(where: str) -> None:
    """The message a button callback left for this place on the page, shown once."""
    flash = st.session_state.get(_FLASH_KEY)
    if flash is None or flash[0] != where:
        return
    del st.session_state[_FLASH_KEY]
    _, kind, key, args = flash
    (st.error if kind == "error" else st.success)(t(key, **args))


def _on_start(cheat: bool = False) -> None:
    if cheat:
        st.session_state[KEYS["use_look_ahead_mask"]] = False
    try:
        config = read_settings().to_config()
    except InvalidConfig as exc:
        key, args = problem_message(exc.problem)
        _flash("error", key, **args)
        return
    try:
        ts.session_training().start(config)
    except ValueError as exc:  # e.g. a TP_DEVICE the machine does not have
        _flash("error", "training.start_failed", detail=markdown_literal(str(exc), FAILURE_REASON_LIMIT))
        return
    st.session_state.pop(_PROBE_KEY, None)


def controls(session: ts.TrainingSession, settings: ts.Settings) -> None:
    """Start / pause / resume / stop / reset, and the one-click cheating experiment."""
    status = session.status()
    state = status.state if status is not None else "idle"
    live = session.live
    ready = settings.problem() is None
    with st.container(horizontal=True, key="training_controls"):
        st.button(t("training.control.start"), type="primary", icon=":material/play_arrow:", key="training.start",
                  disabled=live or not ready, on_click=_on_start)
        if state == "paused":
            st.button(t("training.control.resume"), icon=":material/resume:", key="training.resume",
                      on_click=session.resume)
        else:
            st.button(t("training.control.pause"), icon=":material/pause:", key="training.pause",
                      disabled=state not in ("running", "queued"), on_click=session.pause)
        st.button(t("training.control.stop"), icon=":material/stop:", key="training.stop", disabled=not live,
                  on_click=session.stop)
        st.button(t("training.control.reset"), icon=":material/restart_alt:", key="training.reset",
                  disabled=status is None, on_click=session.reset)
        st.button(t("training.control.cheat"), icon=":material/visibility:", key="training.cheat",
                  disabled=live or not ready, on_click=_on_start, kwargs={"cheat": True},
                  help=t("training.control.cheat_help"))
    _show_flash("controls")


def suggested_experiments(session: ts.TrainingSession) -> None:
    """The suggested experiments: one click sets the settings and queues their runs (ui.training.experiments)."""
    experiments.experiments_section(session, KEYS)


# ------------------------------------------------------------------ the run


def run_panel(session: ts.TrainingSession) -> None:
    """The run's status, charts and attention snapshot (refreshing themselves while it trains)."""
    if ts.debug_enabled():  # for the browser tests: does a closed tab's run really end?
        st.caption(f"training-threads-alive: {ts.alive_training_threads()}")
    snap = session.snapshot()
    if snap is None:
        st.info(t("training.run.none"), icon=":material/info:")
        compare.compare_section(session)
    elif _changing(session, snap):
        _live_run()
    else:
        _run_and_compare(session, snap)


@fragment(run_every=timedelta(seconds=REFRESH_SECONDS))
def _live_run() -> None:
    """The run and the compare list, redrawn once a second while the run trains or an experiment's
    next run is due (the one timer of the page: the overlay of a run still going updates with it)."""
    session = ts.session_training()
    snap = session.snapshot()
    if snap is None or not _changing(session, snap):
        st.rerun(scope="app")  # the run ended or paused: redraw the whole page once (buttons, results)
    _run_and_compare(session, snap)


def _run_and_compare(session: ts.TrainingSession, snap: RunSnapshot) -> None:
    """The run, then the compare list, each in a container of its own: an element that appears in the
    run (its first attention snapshot, its first evaluation) must not shift the overlay's charts, which
    the browser would then draw anew instead of updating in place."""
    with st.container():
        _run(session, snap)
    with st.container():
        compare.compare_section(session, snap)


def _changing(session: ts.TrainingSession, snap: RunSnapshot) -> bool:
    """True while the run changes by itself (queued or training) or an experiment's next run is due."""
    return snap.live or session.queued_runs > 0


def _run(session: ts.TrainingSession, snap: RunSnapshot) -> None:
    _sidebar_status(session, snap)
    _status(session, snap)
    experiments.experiment_status(session)
    _metrics(snap)
    charts.run_charts(snap)
    if ts.debug_enabled():  # for bench/train_ui_overhead.py: the engine's own clock
        st.caption(f"training-run-stats: state={snap.state} step={snap.step} elapsed_s={snap.elapsed_s:.3f}")
    _probe(snap)


def _sidebar_status(session: ts.TrainingSession, snap: RunSnapshot) -> None:
    """The sidebar's run status, from the snapshot this panel shows: on this page the sidebar and the
    panel read one snapshot, and the live fragment redraws both (a fragment may write to the sidebar)."""
    if snap.state == "idle":
        return
    with st.sidebar:
        run_status.render(run_status.run_model_name(session), snap)


_duration = run_status.format_duration


def _status(session: ts.TrainingSession, snap: RunSnapshot) -> None:
    cfg = snap.config
    st.markdown(t("training.run.config", task=t(f"training.task_name.{cfg['task']}"), preset=preset_name(cfg["preset"]),
                  params=f"{snap.num_params:,}", device=snap.device, batch=cfg["batch_size"], warmup=cfg["warmup"],
                  factor=f"{cfg['factor']:g}", eps=f"{cfg['label_smoothing']:g}", seed=cfg["seed"],
                  variant=compare.differences(cfg, tuple(VARIANTS))))
    if snap.state == "queued":
        if snap.queue_position:
            st.warning(t("training.run.queued", position=snap.queue_position, capacity=session.slots.capacity,
                         waiting=snap.queue_waiting), icon=":material/hourglass_top:")
        else:  # the instant before it joins the queue, or after it got a slot and before it trains
            st.info(t("training.run.queued_no_place"), icon=":material/hourglass_top:")
    elif snap.state == "running":
        st.caption(t("training.run.running", device=snap.device))
    elif snap.state == "paused":
        st.info(t("training.run.paused"), icon=":material/pause:")
        st.caption(t("training.paused_slot.given_back"))
    elif snap.state == "failed":
        reason = markdown_literal(snap.reason, FAILURE_REASON_LIMIT) or "?"
        st.error(t("training.run.failed", step=snap.step, reason=reason), icon=":material/error:")
        st.caption(t("training.run.failed_hint"))
    elif snap.state == "finished":
        if session.released and snap.reason == "stopped":
            st.info(t("training.run.released"), icon=":material/link_off:")
        else:
            key = REASONS.get(snap.reason, "stopped")
            st.success(t(f"training.run.finished_{key}", step=snap.step, seconds=int(cfg["max_seconds"])),
                       icon=":material/flag:")
    if not cfg["use_look_ahead_mask"]:
        st.warning(cheat_text(snap, session.previous), icon=":material/visibility:")


def cheat_text(snap: RunSnapshot, previous: RunSnapshot | None) -> str:
    """What the cheating experiment shows, led by exact-match accuracy (where the runs differ), not the loss.

    With a run before it that kept the look-ahead mask, and an accuracy measured for both, the
    sentence starts with the two accuracies; otherwise it says to watch the accuracy.
    """
    masked = previous if previous is not None and previous.config["use_look_ahead_mask"] else None
    if snap.accuracy is None or masked is None or masked.accuracy is None:
        return t("training.cheat.explain")
    return t("training.cheat.compare", accuracy=f"{snap.accuracy:.0%}", masked_accuracy=f"{masked.accuracy:.0%}",
             loss=_loss(snap.loss), masked_loss=_loss(masked.loss))


def _loss(value: float | None) -> str:
    return f"{value:.3f}" if value is not None else "–"


def _metrics(snap: RunSnapshot) -> None:
    cols = st.columns(4)
    cols[0].metric(t("training.metric.step", total=format_count(snap.max_steps)), format_count(snap.step))
    cols[1].metric(t("training.metric.loss"), _loss(snap.loss))
    cols[2].metric(t("training.metric.accuracy"), f"{snap.accuracy:.0%}" if snap.accuracy is not None else "–")
    speed = np.mean(snap.tokens_per_s[-20:]) if snap.tokens_per_s else None
    cols[3].metric(t("training.metric.speed"), f"{speed:,.0f}" if speed is not None else "–")
    if snap.eta_s is None:
        text = t("training.metric.time_done", elapsed=_duration(snap.elapsed_s))
    else:
        text = t("training.metric.time", elapsed=_duration(snap.elapsed_s), eta=_duration(snap.eta_s))
    st.progress(min(snap.step / snap.max_steps, 1.0) if snap.max_steps else 0.0, text=text)


def _probe(snap: RunSnapshot) -> None:
    """The cross-attention of the run's fixed example, head by head: the newest snapshot while it
    trains, any earlier one (a slider) once it is paused or over."""
    st.subheader(t("training.probe.heading"))
    if not snap.probes:
        st.caption(t("training.probe.waiting"))
        return
    probe = _chosen_probe(snap)
    weights = probe.weights()  # (L, H, T, S)
    L, H, T, S = weights.shape
    layer = L - 1
    if L > 1:
        chosen = st.segmented_control(t("training.probe.layer"), list(range(L)), key=_LAYER_KEY, required=True,
                                      default=L - 1, format_func=lambda i: t("training.probe.layer_option", n=i + 1))
        layer = chosen if chosen is not None else L - 1
    task = snap.config["task"]
    source = source_text(task, snap.probe_src_tokens)
    st.markdown(t("training.probe.caption", step=probe.step, source=markdown_literal(source, 60),
                  output=markdown_literal(probe.output, 60) or "∅"))
    pattern = PATTERNS.get(task)
    for h, column in enumerate(st.columns(H)):
        with column:
            charts.attention_head(weights[layer, h], snap.probe_src_tokens, snap.probe_tgt_tokens, h,
                                  show_scale=h == H - 1)
            score = pattern_score(weights[layer, h], pattern) if pattern is not None else None
            if score is not None:
                st.caption(t(f"training.probe.score_{pattern}", score=f"{score:.2f}", uniform=f"{1 / S:.2f}"))
    st.caption(t(f"training.probe.expect_{task}"))


def source_text(task: str, tokens: list[str]) -> str:
    """The probe's source as it was typed: characters joined, words (a translation task's English) spaced."""
    return (" " if get_task(task).source_tokenizer().unit == "word" else "").join(tokens)


def _chosen_probe(snap: RunSnapshot) -> ProbeAttention:
    """The snapshot to show: the newest while the run trains (a slider would fight the refresh),
    else the one the history slider picks."""
    steps = [p.step for p in snap.probes]
    if snap.live or len(steps) < 2:
        if snap.live:  # (from the first snapshot on: an element appearing later would remount the charts below)
            st.caption(t("training.probe.pause_to_look_back"))
        return snap.probes[-1]
    if st.session_state.get(_PROBE_KEY) not in steps:
        st.session_state[_PROBE_KEY] = steps[-1]
    st.select_slider(t("training.probe.history"), steps, key=_PROBE_KEY, help=t("training.probe.history_help"))
    return snap.probes[steps.index(st.session_state[_PROBE_KEY])]


# ------------------------------------------------------------------ results


def results(session: ts.TrainingSession) -> None:
    """Samples, "use this model", download: once the run is paused or over and has trained.

    Not for a failed run: its weights may be broken (a NaN loss, an exception halfway through an
    update), so its model is neither shown answering nor offered for use or download; the run's
    status says so (``training.run.failed_hint``).
    """
    status = session.status()
    if status is None or status.step == 0 or status.live or status.state == "failed":
        return
    st.subheader(t("training.results.heading"))
    _samples(session, status.step)
    _use_and_download(session)
    _show_flash("results")


def _samples(session: ts.TrainingSession, step: int) -> None:
    batch = st.session_state.get(_SAMPLES_BATCH_KEY, 0)
    samples = session.samples(step, batch)
    table = pd.DataFrame({
        t("training.results.source"): [s.source for s in samples],
        t("training.results.target"): [s.target for s in samples],
        t("training.results.output"): [s.output for s in samples],
        t("training.results.correct"): ["✓" if s.correct else "✗" for s in samples],
    })
    st.dataframe(table, hide_index=True, width="stretch")
    right = sum(s.correct for s in samples)
    st.caption(t("training.results.summary", right=right, total=len(samples)))
    st.button(t("training.results.more"), icon=":material/casino:", key="training.more_samples",
              on_click=lambda: st.session_state.__setitem__(_SAMPLES_BATCH_KEY, batch + 1))


def _use_and_download(session: ts.TrainingSession) -> None:
    """A name for the model, "use it on the other pages", and the checkpoint file."""
    default_name = ts.default_model_name(session.run.config.to_dict(), session.run_number)
    if _NAME_KEY not in st.session_state or st.session_state.get(_NAME_FOR_KEY) != session.run_number:
        st.session_state[_NAME_KEY] = default_name
        st.session_state[_NAME_FOR_KEY] = session.run_number
    a, b, c = st.columns([2, 2, 2], vertical_alignment="bottom")
    with a:
        st.text_input(t("training.use.name"), key=_NAME_KEY, max_chars=40, help=t("training.use.name_help"))
    with b:
        st.button(t("training.use.button"), type="primary", icon=":material/input:", key="training.use",
                  on_click=_on_use)
    with c:
        st.download_button(t("training.download.button"), data=session.checkpoint_bytes,
                           file_name=f"{ts.name_from_upload(st.session_state.get(_NAME_KEY) or default_name)}.pt",
                           mime="application/octet-stream", on_click="ignore", icon=":material/download:",
                           key="training.download", help=t("training.download.help"))


def _on_use() -> None:
    session = ts.session_training()
    name = str(st.session_state.get(_NAME_KEY, "")).strip()
    problem = ts.model_name_problem(name)
    if problem is not None:
        args = {k: markdown_literal(str(v)) for k, v in problem[1].items()}
        _flash("error", problem[0], where="results", **args)
        return
    try:
        ckpt = session.checkpoint_copy()
    except ts.FailedRunError:  # it failed after the page drew the button
        _flash("error", "training.use.failed")  # the results (and their flash) are gone: say it above
        return
    except CheckpointError as exc:  # e.g. the very last update made a weight NaN
        _flash("error", ts.checkpoint_error_key(exc), where="results")
        return
    models.register_session_model(name, ckpt)
    st.session_state[models.MODEL_STATE_KEY] = name
    _flash("success", "training.use.done", where="results", name=markdown_literal(name))


def upload_section() -> None:
    """Load a checkpoint file (validated by the engine) and select it on every page."""
    with st.expander(t("training.upload.heading"), icon=":material/upload_file:"):
        st.caption(t("training.upload.caption"))
        st.file_uploader(t("training.upload.label"), key=_UPLOAD_KEY, on_change=_on_upload)
        result = st.session_state.get(_UPLOAD_RESULT_KEY)
        if result is None:
            return
        kind, key, args = result
        if kind == "error":
            st.error(t(key, **args), icon=":material/error:")
        else:
            st.success(t(key, **args), icon=":material/check_circle:")


def _on_upload() -> None:
    uploaded = st.session_state.get(_UPLOAD_KEY)
    if uploaded is None:
        st.session_state.pop(_UPLOAD_RESULT_KEY, None)
        return
    try:
        ckpt = ts.read_upload(uploaded.getvalue())
    except CheckpointError as exc:
        st.session_state[_UPLOAD_RESULT_KEY] = ("error", ts.checkpoint_error_key(exc), {})
        return
    name = ts.name_from_upload(uploaded.name)
    models.register_session_model(name, ckpt)
    st.session_state[models.MODEL_STATE_KEY] = name
    facts = ts.checkpoint_summary(ckpt)
    steps = facts["steps"] if isinstance(facts["steps"], int) else "?"
    st.session_state[_UPLOAD_RESULT_KEY] = ("ok", "training.upload.done", {
        "name": markdown_literal(name), "task": markdown_literal(facts["task"]), "params": f"{facts['params']:,}",
        "steps": steps,
    })

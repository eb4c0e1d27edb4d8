"""What the training page draws: settings, the planned schedule, the live run, the results.

``app_pages/training.py`` calls these in order. Settings widgets are mirrored in the URL
(``?tr_task=copy&tr_warmup=200...``); the run itself belongs to the browser session
(:mod:`ui.training_session`) and is read here as plain data (``RunSnapshot``).

While a run is queued or training, :func:`run_panel` redraws its numbers and charts once a second
and the attention snapshot every two seconds, in two fragments (only they rerun, not the page),
with Vega-Lite charts that update in place.
"""
from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from model.tasks import TASK_NAMES
from model.training import MAX_BATCH_SIZE, MODEL_PRESETS, RunSnapshot
from ui import models
from ui import training_charts as charts
from ui import training_session as ts
from ui.i18n import t
from ui.training_status import STOPPED_REASONS
from ui.url_state import BoolParam, ChoiceParam, FloatParam, IntParam, bind, markdown_literal

REFRESH_SECONDS = 1.0
PROBE_REFRESH_SECONDS = 2.0  # a new attention snapshot comes every few dozen steps; half the redraws
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

KEYS = {  # Settings field -> session-state key of its widget
    "task": "training.task", "preset": "training.preset", "batch_size": "training.batch", "warmup": "training.warmup",
    "factor": "training.factor", "label_smoothing": "training.eps", "seed": "training.seed",
    "max_steps": "training.steps", "use_padding_mask": "training.pad", "use_look_ahead_mask": "training.ahead",
}
COMPARE_KEY = "training.compare"
_FLASH_KEY = "_training.flash"  # (kind, i18n key, args) shown once after a button's callback
_UPLOAD_KEY = "training.upload"
_UPLOAD_RESULT_KEY = "_training.upload_result"
_NAME_KEY = "training.model_name"
_PROBE_KEY = "training.probe_step"
_LAYER_KEY = "training.probe_layer"
_SAMPLES_BATCH_KEY = "_training.samples_batch"

FAILURE_REASON_LIMIT = 600  # characters of a failed run's reason shown on the page (escaped, shown literally)
REASONS = {  # engine reason -> i18n key suffix
    "step cap reached": "step_cap", "time cap reached": "time_cap", "target accuracy reached": "target",
    **STOPPED_REASONS,
}


# ------------------------------------------------------------------ settings


def settings_form() -> ts.Settings:
    """The settings widgets (left) and the planned learning-rate curve (right); returns the settings."""
    left, right = st.columns([2, 3], gap="large")
    with left, st.container(border=True):
        st.subheader(t("training.settings.heading"))
        task = st.radio(t("training.settings.task"), TASK.choices, key=bind(TASK, key=KEYS["task"]),
                        format_func=lambda name: t(f"training.task_name.{name}"), horizontal=True,
                        help=t("training.settings.task_help"))
        st.radio(t("training.settings.preset"), PRESET.choices, key=bind(PRESET, key=KEYS["preset"]),
                 format_func=lambda name: _preset_label(task, name), horizontal=True,
                 help=t("training.settings.preset_help"))
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
    with right:
        st.subheader(t("training.schedule.heading"))
        st.latex(r"\mathrm{lr}(s) = \mathrm{factor}\cdot d_{\mathrm{model}}^{-0.5}\cdot"
                 r"\min\!\left(s^{-0.5},\; s\cdot \mathrm{warmup}^{-1.5}\right)")
        compare_key = bind(COMPARE, key=COMPARE_KEY)
        # Every setting but the warmup is fixed while the fragment reruns alone (their widgets rerun
        # the page): read here, on the full run, and passed in with a new memo of drawn warmups.
        planned_schedule(read_settings(), st.session_state[compare_key], {})
        settings = read_settings()  # after the fragment: the warmup is bound there
        if ts.settings_problem(settings) is None:
            st.caption(t("training.schedule.peak_caption"))
            st.slider(t("training.schedule.compare"), COMPARE.lo, COMPARE.hi, key=compare_key,
                      help=t("training.schedule.compare_help"))
    return settings


def _preset_label(task: str, preset: str) -> str:
    params = ts.parameter_count(task if task in TASK_NAMES else "copy", preset)
    p = MODEL_PRESETS[preset]
    return t("training.settings.preset_option", name=preset, params=f"{params:,}", d_model=p["d_model"],
             layers=p["n_layers"], heads=p["n_heads"])


def read_settings() -> ts.Settings:
    """The settings as the widgets hold them now (also usable inside a button callback)."""
    state = st.session_state
    values = {field: state.get(key, getattr(_DEFAULTS, field)) for field, key in KEYS.items()}
    return ts.Settings(**values)


@st.fragment
def planned_schedule(others: ts.Settings, compare: int, drawn: dict[int, tuple]) -> None:
    """The warmup slider and the Noam curve the next run will follow (and the second warmup of the
    slider below it, to compare). A fragment drawing few elements (each costs the server a message):
    moving the warmup reruns only this.

    ``others`` are the settings and ``compare`` the second warmup as the last full run read them (their
    widgets rerun the page, so they hold while this reruns alone); ``drawn`` is a new dict on every full
    run, kept through the fragment's own reruns: each warmup's label and chart, made the first time it
    is shown, so going back and forth costs no translating or chart building."""
    key = bind(WARMUP, key=KEYS["warmup"])
    warmup = st.session_state[key]
    if warmup not in drawn:
        drawn[warmup] = schedule_view(replace(others, warmup=warmup), compare)
    label, chart, problem, late = drawn[warmup]
    st.slider(label, WARMUP.lo, WARMUP.hi, key=key, help=t("training.settings.warmup_help"))
    if problem is not None:
        st.error(problem, icon=":material/block:")
        return
    st.vega_lite_chart(chart, height=charts.CHART_HEIGHT, key="training.planned_chart")
    if late is not None:
        st.warning(late, icon=":material/block:")


def schedule_view(settings: ts.Settings, compare: int) -> tuple[str, dict | None, str | None, str | None]:
    """``(slider label, chart spec, problem, late-peak warning)`` for these settings, in this run's
    language: the label carries the worked peak (a slider is known by its key and range, so a new
    label keeps it, and that is one element fewer to send on every move); a problem replaces the chart."""
    problem = ts.settings_problem(settings)
    if problem is not None:
        return t("training.settings.warmup"), None, t(problem[0], **problem[1]), None
    d_model = ts.d_model_of(settings.preset)
    peak = charts.peak_lr(d_model, settings.warmup, settings.factor)
    label = t("training.schedule.warmup_label", worked=(
        rf"$\mathrm{{lr}}_{{\max}} = {settings.factor:g}\cdot {d_model}^{{-0.5}}\cdot "
        rf"{settings.warmup}^{{-0.5}} = {charts.latex_number(peak)}$"))
    curves = [(t("training.schedule.series", warmup=settings.warmup), settings.warmup)]
    if compare and compare != settings.warmup:
        curves.append((t("training.schedule.series", warmup=compare), compare))
    spec = charts.lr_spec(x_title=t("training.chart.step"), y_title=t("training.chart.lr"),
                          series=[name for name, _ in curves], live=False)
    chart = charts.with_datasets(
        spec, **charts.planned_datasets(d_model, settings.factor, settings.max_steps, tuple(curves)))
    late = (t("training.schedule.peak_after_cap", warmup=settings.warmup, steps=settings.max_steps)
            if settings.warmup > settings.max_steps else None)
    return label, chart, None, late


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
    settings = read_settings()
    config, problem = ts.make_config(settings)
    if problem is not None:
        _flash("error", problem[0], **problem[1])
        return
    try:
        ts.session_training().start(config)
    except ValueError as exc:  # e.g. a TP_DEVICE the machine does not have
        _flash("error", "training.problem.other", detail=str(exc))
        return
    st.session_state.pop(_PROBE_KEY, None)


def controls(session: ts.TrainingSession, settings: ts.Settings) -> None:
    """Start / pause / resume / stop / reset, and the one-click cheating experiment."""
    snap = session.snapshot()
    state = snap.state if snap is not None else "idle"
    live = session.live
    ready = ts.settings_problem(settings) is None
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
                  disabled=snap is None, on_click=session.reset)
        st.button(t("training.control.cheat"), icon=":material/visibility:", key="training.cheat",
                  disabled=live or not ready, on_click=_on_start, kwargs={"cheat": True},
                  help=t("training.control.cheat_help"))
    _show_flash("controls")


# ------------------------------------------------------------------ the run


def run_panel(session: ts.TrainingSession) -> None:
    """The run's status, live charts and attention probe (refreshing themselves while it trains)."""
    if ts.debug_enabled():  # for the browser tests: does a closed tab's run really end?
        st.caption(f"training-threads-alive: {ts.alive_training_threads()}")
    snap = session.snapshot()
    if snap is None:
        st.info(t("training.run.none"), icon=":material/info:")
        return
    if snap.state in ("queued", "running"):
        _live_numbers()
        _live_attention()
    else:
        _numbers(session, snap)
        _probe(snap, live=False)


@st.fragment(run_every=timedelta(seconds=REFRESH_SECONDS))
def _live_numbers() -> None:
    session = ts.session_training()
    snap = session.snapshot()
    if snap is None or snap.state not in ("queued", "running"):
        st.rerun(scope="app")  # the run ended or paused: redraw the whole page once (buttons, results)
    _numbers(session, snap)


@st.fragment(run_every=timedelta(seconds=PROBE_REFRESH_SECONDS))
def _live_attention() -> None:
    snap = ts.session_training().snapshot()
    if snap is not None:  # when the run has ended, _live_numbers reruns the page
        _probe(snap, live=snap.state in ("queued", "running"))


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    seconds = int(round(seconds))
    if seconds < 60:
        return t("training.duration.seconds", s=seconds)
    return t("training.duration.minutes", m=seconds // 60, s=f"{seconds % 60:02d}")


def _status(session: ts.TrainingSession, snap: RunSnapshot) -> None:
    cfg = snap.config
    st.markdown(t("training.run.config", task=t(f"training.task_name.{cfg['task']}"), preset=cfg["preset"],
                  params=f"{snap.num_params:,}", device=snap.device, batch=cfg["batch_size"], warmup=cfg["warmup"],
                  factor=f"{cfg['factor']:g}", eps=f"{cfg['label_smoothing']:g}", seed=cfg["seed"]))
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
    elif snap.state == "failed":
        reason = markdown_literal(snap.reason, FAILURE_REASON_LIMIT) or "?"
        st.error(t("training.run.failed", step=snap.step, reason=reason), icon=":material/error:")
        st.caption(t("training.run.failed_hint"))
    elif snap.state == "finished":
        if session.released and snap.reason == "stopped":
            st.info(t("training.run.released"), icon=":material/link_off:")
        else:
            key = REASONS.get(snap.reason, "stopped")
            st.success(t(f"training.run.finished_{key}", step=snap.step, seconds=int(snap.config["max_seconds"])),
                       icon=":material/flag:")
    if not cfg["use_look_ahead_mask"]:
        st.warning(t("training.cheat.explain"), icon=":material/visibility:")


def _metrics(snap: RunSnapshot) -> None:
    cols = st.columns(4)
    cols[0].metric(t("training.metric.step", total=f"{snap.max_steps:,}"), f"{snap.step:,}")
    cols[1].metric(t("training.metric.loss"), f"{snap.loss:.3f}" if snap.loss is not None else "–")
    cols[2].metric(t("training.metric.accuracy"), f"{snap.accuracy:.0%}" if snap.accuracy is not None else "–")
    speed = np.mean(snap.tokens_per_s[-20:]) if snap.tokens_per_s else None
    cols[3].metric(t("training.metric.speed"), f"{speed:,.0f}" if speed is not None else "–")
    if snap.eta_s is None:
        text = t("training.metric.time_done", elapsed=_duration(snap.elapsed_s))
    else:
        text = t("training.metric.time", elapsed=_duration(snap.elapsed_s), eta=_duration(snap.eta_s))
    st.progress(min(snap.step / snap.max_steps, 1.0) if snap.max_steps else 0.0, text=text)


def _run_labels(snap: RunSnapshot, previous: RunSnapshot | None) -> tuple[str, str | None]:
    def label(s: RunSnapshot, key: str) -> str:
        mask = "" if s.config["use_look_ahead_mask"] else t("training.chart.no_look_ahead")
        return t(key, warmup=s.config["warmup"], mask=mask)

    this = label(snap, "training.chart.this_run")
    other = label(previous, "training.chart.previous_run") if previous is not None else None
    return this, other


def _charts(session: ts.TrainingSession, snap: RunSnapshot) -> None:
    previous = session.previous
    this, other = _run_labels(snap, previous)
    series = [this] + ([other] if other else [])
    step_title = t("training.chart.step")

    def runs(pick) -> list:
        out = [(this, pick(snap))]
        if previous is not None:
            out.append((other, pick(previous)))
        return out

    left, right = st.columns(2)
    with left:
        st.markdown(f"**{t('training.chart.loss_heading')}**")
        spec = charts.line_spec("loss", "loss", x_title=step_title, y_title=t("training.chart.loss"), series=series,
                                y_format=".2f")
        floor = ts.loss_floor(snap.config["task"], snap.config["label_smoothing"])
        floor_row = charts.point_table(loss=floor, label=t("training.chart.floor", floor=f"{floor:.2f}"))
        st.vega_lite_chart(charts.with_datasets(
            charts.with_floor(spec, "floor", "loss"),
            loss=charts.series_table(runs(lambda s: s.losses), "loss"), floor=floor_row,
        ), height=charts.CHART_HEIGHT, key="training.loss_chart")
    with right:
        st.markdown(f"**{t('training.chart.lr_heading')}**")
        cfg = snap.config
        d_model = ts.d_model_of(cfg["preset"])
        curve = ((this, cfg["warmup"]),)
        spec = charts.lr_spec(x_title=step_title, y_title=t("training.chart.lr"), series=[this], live=True)
        now = charts.point_table(step=max(snap.step, 1), lr=snap.lrs[-1] if snap.lrs else 0.0)
        st.vega_lite_chart(charts.with_datasets(
            spec,
            **charts.planned_datasets(d_model, cfg["factor"], snap.max_steps, curve),
            now=now,
        ), height=charts.CHART_HEIGHT, key="training.lr_chart")
    left, right = st.columns(2)
    with left:
        st.markdown(f"**{t('training.chart.accuracy_heading')}**")
        if not snap.evals and previous is None:  # an empty chart would have no x axis yet
            st.caption(t("training.chart.first_eval", step=snap.config["eval_every"], count=snap.config["eval_size"]))
        else:
            spec = charts.line_spec("acc", "accuracy", x_title=step_title, y_title=t("training.chart.accuracy"),
                                    series=series, y_format=".0%", y_domain=(0, 1), points=True)
            st.vega_lite_chart(charts.with_datasets(spec, acc=charts.eval_table(runs(lambda s: s.evals))),
                               height=charts.CHART_HEIGHT, key="training.accuracy_chart")
    with right:
        st.markdown(f"**{t('training.chart.speed_heading')}**")
        spec = charts.line_spec("speed", "speed", x_title=step_title, y_title=t("training.chart.speed"),
                                series=[this])
        st.vega_lite_chart(charts.with_datasets(spec, speed=charts.series_table([(this, snap.tokens_per_s)], "speed")),
                           height=charts.CHART_HEIGHT, key="training.speed_chart")


def _probe(snap: RunSnapshot, live: bool) -> None:
    st.subheader(t("training.probe.heading"))
    if not snap.probes:
        st.caption(t("training.probe.waiting"))
        return
    steps = [p.step for p in snap.probes]
    if live or len(steps) < 2:
        # While the run trains the newest snapshot is shown; the slider would fight the refresh.
        probe = snap.probes[-1]
        if live and len(steps) > 1:
            st.caption(t("training.probe.pause_to_look_back"))
    else:
        if st.session_state.get(_PROBE_KEY) not in steps:
            st.session_state[_PROBE_KEY] = steps[-1]
        st.select_slider(t("training.probe.history"), steps, key=_PROBE_KEY, help=t("training.probe.history_help"))
        probe = snap.probes[steps.index(st.session_state[_PROBE_KEY])]
    weights = charts.attention_stack(probe.cross_attention)  # (L, H, T, S)
    L, H, T, S = weights.shape
    layer = 0
    if L > 1:
        layer = st.segmented_control(t("training.probe.layer"), list(range(L)), key=_LAYER_KEY, required=True,
                                     default=L - 1, format_func=lambda i: t("training.probe.layer_option", n=i + 1))
        layer = layer if layer is not None else L - 1
    task = snap.config["task"]
    source = "".join(snap.probe_src_tokens)
    st.markdown(t("training.probe.caption", step=probe.step, source=markdown_literal(source, 60),
                  output=markdown_literal(probe.output, 60) or "∅"))
    pattern = {"copy": "diagonal", "reverse": "anti"}.get(task)
    cols = st.columns(H)
    height = max(200, 20 * T + 80)
    for h in range(H):
        with cols[h]:
            spec = charts.attention_spec(
                snap.probe_src_tokens, snap.probe_tgt_tokens, dataset="weights",
                title=t("training.probe.head", n=h + 1), x_title=t("training.probe.x_title"),
                y_title=t("training.probe.y_title"), weight_title=t("training.probe.weight"), show_scale=h == H - 1)
            st.vega_lite_chart(charts.with_datasets(spec, weights=charts.attention_table(weights[layer, h])),
                               height=height,
                               key=f"training.probe_head_{h}")
            if pattern is not None:
                score = charts.diagonal_score(weights[layer, h], pattern)
                if score is not None:
                    st.caption(t(f"training.probe.score_{pattern}", score=f"{score:.2f}", uniform=f"{1 / S:.2f}"))
    st.caption(t(f"training.probe.expect_{task}"))


def _numbers(session: ts.TrainingSession, snap: RunSnapshot) -> None:
    _status(session, snap)
    _metrics(snap)
    _charts(session, snap)
    if ts.debug_enabled():  # for bench/train_ui_overhead.py: the engine's own clock
        st.caption(f"training-run-stats: state={snap.state} step={snap.step} elapsed_s={snap.elapsed_s:.3f}")


# ------------------------------------------------------------------ results


def results(session: ts.TrainingSession) -> None:
    """Samples, "use this model", download: once the run is paused or over and has trained.

    Not for a failed run: its weights may be broken (a NaN loss, an exception halfway through an
    update), so its model is neither shown answering nor offered for use or download; the run's
    status says so (``training.run.failed_hint``).
    """
    snap = session.snapshot()
    if snap is None or snap.step == 0 or snap.state in ("queued", "running", "failed"):
        return
    st.subheader(t("training.results.heading"))
    batch = st.session_state.get(_SAMPLES_BATCH_KEY, 0)
    samples = session.samples(snap.step, batch)
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

    default_name = ts.default_model_name(snap.config, session.run_number)
    if _NAME_KEY not in st.session_state or st.session_state.get("_training.name_for") != session.run_number:
        st.session_state[_NAME_KEY] = default_name
        st.session_state["_training.name_for"] = session.run_number
    a, b, c = st.columns([2, 2, 2], vertical_alignment="bottom")
    with a:
        st.text_input(t("training.use.name"), key=_NAME_KEY, max_chars=40, help=t("training.use.name_help"))
    with b:
        st.button(t("training.use.button"), type="primary", icon=":material/input:", key="training.use",
                  on_click=_on_use)
    with c:
        st.download_button(t("training.download.button"), data=session.checkpoint_bytes,
                           file_name=f"{_file_stem(st.session_state.get(_NAME_KEY) or default_name)}.pt",
                           mime="application/octet-stream", on_click="ignore", icon=":material/download:",
                           key="training.download", help=t("training.download.help"))
    _show_flash("results")


def _file_stem(name: str) -> str:
    return ts.name_from_upload(name) or "model"


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
    except ts.CheckpointError as exc:  # e.g. the very last update made a weight NaN
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
    except ts.CheckpointError as exc:
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

"""Training: watch a small Transformer learn a toy task live, following the warmup learning-rate schedule.

The page's sections, top to bottom: the settings and the planned schedule, the controls, the
suggested experiments, the live run (its numbers, charts and attention snapshot) with the compare
list, the results, loading a file. Settings are mirrored in the URL (``?training_task=copy&training_warmup=200...``)
and declared once, on ``model.training.TrainingConfig`` (:mod:`ui.training.settings` derives the
rest); whether they can train is decided by the engine alone, this page only translates its answer.
The run belongs to the browser session (:mod:`ui.training.session`) and is read as plain data.

While a run is queued or training, :func:`live_run` redraws its numbers, charts and attention
snapshot once a second in one fragment (only it reruns, not the page), with Vega-Lite charts that
update in place; it asks the run only for the metrics since the step it last drew. The buttons are a
fragment of their own (:func:`control_row`): Pause redraws only them, and the live panel then redraws the
page as paused on its next tick.
"""
from datetime import timedelta
from typing import Any, Callable

import numpy as np
import pandas as pd
import streamlit as st

from explain.paper_card import PAPER_STEPS, of_planned_run
from figures.labels import plain_number
from ui.code_panel import code_panel
from ui.i18n import t
from ui.scaffold import page
from ui.page_errors import fragment
from ui.paper_card import paper_card
from ui.training import actions, charts, compare, experiments
from ui.training import session as ts
from ui.training import settings as trs
from ui.training import status as run_status
from ui.training.status import FAILURE_REASON_LIMIT, STOPPED_REASONS, format_count
from ui.url_state import bind, markdown_literal
from ui.exercise_panel import exercise_panel

REFRESH_SECONDS = 1.0
REASONS = {  # engine reason -> i18n key suffix
    "step cap reached": "step_cap", "time cap reached": "time_cap", "target accuracy reached": "target",
    **STOPPED_REASONS,
}
NAME_FOR_KEY = "_training.name_for"  # the run number the name field was last filled for
LAYER_KEY = "training.probe_layer"
SAMPLES_BATCH_KEY = "_training.samples_batch"


# ------------------------------------------------------------------ settings


def setting_widget(widget, name: str, **options):
    """``widget`` (``st.radio``, ``st.slider``...) for setting ``name``, bound to the URL: its label,
    help, choices or range and key all come from the setting's declaration; ``options`` add to them."""
    spec = trs.SPECS[name]
    key = bind(trs.PARAMS[name], key=spec.key)
    args = (spec.choices,) if spec.choices else (spec.lo, spec.hi) if spec.lo is not None else ()
    declared = {"step": spec.step} if spec.step is not None else {}
    if spec.help and "help" not in options:
        declared["help"] = t(spec.help)
    return widget(t(spec.label), *args, key=key, **{**declared, **options})


def settings_form() -> None:
    """The settings widgets (left) and the planned learning-rate curve (right)."""
    left, right = st.columns([2, 3], gap="large")
    with left, st.container(border=True):
        settings_widgets()
    with right:
        st.subheader(t("training.schedule.heading"))
        st.latex(r"{\mathrm{lr}(s) = \mathrm{factor}\cdot d_{\mathrm{model}}^{-0.5}}\cdot\allowbreak"  # may wrap here
                 r"{\min\!\left(s^{-0.5},\; s\cdot \mathrm{warmup}^{-1.5}\right)}")
        planned_schedule()


def settings_widgets() -> None:
    st.subheader(t("training.settings.heading"))
    setting_widget(st.radio, "task", format_func=lambda name: t(f"training.task_name.{name}"), horizontal=True)
    if trs.is_translation(st.session_state.get(trs.KEYS["task"])):
        st.caption(t("training.settings.translation_time"))
        tokens_widget()
    setting_widget(st.radio, "preset", format_func=trs.preset_label, horizontal=True)
    preset_heads = trs.MODEL_PRESETS.get(st.session_state.get(trs.KEYS["preset"]), {}).get("n_heads", "?")
    setting_widget(st.radio, "heads", horizontal=True,
                   format_func=lambda h: t("training.settings.heads_preset", n=preset_heads) if h == "preset" else h)
    setting_widget(st.radio, "head_dim", horizontal=True, format_func=trs.head_width_label)
    a, b = st.columns(2)
    with a:
        setting_widget(st.number_input, "batch_size")
    with b:
        setting_widget(st.number_input, "max_steps",
                       help=t("training.settings.steps_help", seconds=int(ts.max_run_seconds())))
    setting_widget(st.slider, "factor")
    a, b = st.columns(2)
    with a:
        setting_widget(st.slider, "label_smoothing")
    with b:
        setting_widget(st.slider, "dropout")
    setting_widget(st.number_input, "seed")
    setting_widget(st.toggle, "use_padding_mask")
    setting_widget(st.toggle, "use_look_ahead_mask")
    variant_widgets()


def tokens_widget() -> None:
    """A translation task's tokens (its own, or BPE pieces) and, for BPE, what that changes, measured."""
    setting_widget(st.radio, "tokens", horizontal=True, format_func=lambda kind: t(f"training.settings.tokens_{kind}"))
    if st.session_state[trs.KEYS["tokens"]] == "bpe":
        st.caption(trs.bpe_text(trs.read_settings()))


def variant_widgets() -> None:
    """The four model-variant switches, each with one sentence (and its formula) on the choice made,
    and the parameter count that the task, size and switches give."""
    st.markdown(f"**{t('training.variant.heading')}**")
    setting_widget(st.radio, "norm_first", horizontal=True,
                   format_func=lambda pre: t(f"training.variant.norm_first.{'pre' if pre else 'post'}"))
    pre = st.session_state[trs.KEYS["norm_first"]]
    st.caption(t(f"training.variant.norm_first.{'pre' if pre else 'post'}_explain"))
    for name in trs.VARIANT_FIELDS[1:]:
        setting_widget(st.radio, name, horizontal=True,
                       format_func=lambda kind, name=name: t(f"training.variant.{name}.{kind}"))
        st.caption(t(f"training.variant.{name}.{st.session_state[trs.KEYS[name]]}_explain"))
    text = trs.parameter_text(trs.read_settings())
    if text is not None:
        st.caption(text)


@fragment
def planned_schedule() -> None:
    """The warmup slider, the peak it gives, the Noam curve the next run will follow and a second
    warmup to compare with: moving either slider reruns only this. The other settings are read from
    their widgets, which rerun the whole page."""
    setting_widget(st.slider, "warmup")
    compare_key = bind(trs.COMPARE, key=trs.COMPARE_KEY)
    settings = trs.read_settings()
    problem = settings.problem()
    if problem is not None:
        st.error(trs.problem_text(problem), icon=":material/block:")
        return
    d_model = trs.preset_width(settings.preset)
    st.caption(t("training.schedule.peak_worked",
                 worked=charts.worked_peak(d_model, settings.warmup, settings.factor)))
    second = st.session_state[compare_key]
    warmups = [settings.warmup] + ([second] if second and second != settings.warmup else [])
    with_paper = st.session_state[bind(trs.PAPER_LR, key=trs.PAPER_LR_KEY)]
    charts.planned_chart(d_model, settings.factor, settings.max_steps,
                         [(t("training.schedule.series", warmup=w), w) for w in warmups],
                         paper=t("training.schedule.paper_series") if with_paper else None)
    if settings.warmup > settings.max_steps:
        st.warning(t("training.schedule.peak_after_cap", warmup=settings.warmup, steps=settings.max_steps),
                   icon=":material/block:")
    if len(warmups) > 1 and second > settings.max_steps:
        st.caption(t("training.schedule.compare_after_cap", warmup=second, steps=settings.max_steps,
                     lr=plain_number(charts.peak_rate(d_model, second, settings.factor), 3)))
    st.caption(t("training.schedule.peak_caption"))
    st.slider(t("training.schedule.compare"), trs.COMPARE.lo, trs.COMPARE.hi, key=compare_key,
              help=t("training.schedule.compare_help"))
    st.toggle(t("training.schedule.paper_toggle"), key=trs.PAPER_LR_KEY, help=t("training.schedule.paper_help"))
    if with_paper:
        paper_schedule_caption(d_model, settings.warmup, settings.factor)
    code_panel("training", ("noam",), paper_rows=("dropout",))
    paper_card(of_planned_run(settings.preset, dropout=settings.dropout, label_smoothing=settings.label_smoothing,
                              warmup=settings.warmup, heads=settings.heads, head_dim=settings.head_dim),
               caption_key="common.paper_card.caption_training", key="training_paper_card")


def paper_schedule_caption(d_model: int, warmup: int, factor: float) -> None:
    """The paper's peak beside this run's: where each comes and how many times larger this one is."""
    paper_width, paper_warmup, paper_peak = charts.paper_schedule()
    ours = charts.peak_rate(d_model, warmup, factor)
    st.caption(t("training.schedule.paper_caption", d_model=paper_width, warmup=paper_warmup,
                 peak=plain_number(paper_peak, 3), steps=f"{PAPER_STEPS:,}", ours=plain_number(ours, 3),
                 our_warmup=warmup, times=f"{ours / paper_peak:.1f}", our_width=d_model, factor=f"{factor:g}"))


# ------------------------------------------------------------------ buttons


def show_flash(where: str) -> None:
    """The message a button callback left for this place on the page, shown once."""
    flashed = actions.take_flash(where)
    if flashed is not None:
        kind, key, args = flashed
        (st.error if kind == "error" else st.success)(t(key, **args))


def run_state_now(session: ts.TrainingSession) -> str:
    status = session.status()
    return status.state if status is not None else "idle"


def controls(session: ts.TrainingSession) -> None:
    """Start / pause / resume / stop / reset, and the one-click cheating experiment."""
    control_row(session, run_state_now(session))


@fragment
def control_row(session: ts.TrainingSession, drawn: str) -> None:
    """The buttons, in a fragment: Pause redraws only this row, so Resume takes its place at once (a
    whole page of charts takes the browser seconds to draw); a click that changes more redraws the page."""
    status = session.status()
    state = status.state if status is not None else "idle"
    if actions.redraws_page(drawn, state):
        st.rerun(scope="app")
    live = session.live
    ready = trs.read_settings().problem() is None
    with st.container(horizontal=True, key="training_controls"):
        st.button(t("training.control.start"), type="primary", icon=":material/play_arrow:", key="training.start",
                  disabled=live or not ready, on_click=actions.on_start)
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
                  disabled=live or not ready, on_click=actions.on_start, kwargs={"cheat": True},
                  help=t("training.control.cheat_help"))
    show_flash("controls")


# ------------------------------------------------------------------ the run


def run_panel(session: ts.TrainingSession) -> None:
    """The run's status, charts and attention snapshot (refreshing themselves while it trains)."""
    if ts.debug_enabled():  # for the browser tests: does a closed tab's run really end?
        st.caption(f"training-threads-alive: {ts.alive_training_threads()}")
    snap = session.snapshot()
    if snap is None:
        st.info(t("training.run.none"), icon=":material/info:")
        compare.compare_section(session)
    elif changing(session, snap):
        live_run()
    else:
        run_and_compare(session, snap)


@fragment(run_every=timedelta(seconds=REFRESH_SECONDS))
def live_run() -> None:
    """The run and the compare list, redrawn once a second while the run trains or an experiment's
    next run is due (the one timer of the page: the overlay of a run still going updates with it)."""
    session = ts.session_training()
    snap = session.snapshot()
    if snap is None or not changing(session, snap):
        st.rerun(scope="app")  # the run ended or paused: redraw the whole page once (buttons, results)
    run_and_compare(session, snap)


def run_and_compare(session: ts.TrainingSession, snap: ts.RunSnapshot) -> None:
    """The run, then the compare list, each in a container of its own: an element that appears in the
    run (its first attention snapshot, its first evaluation) must not shift the overlay's charts, which
    the browser would then draw anew instead of updating in place."""
    with st.container():
        run_section(session, snap)
    with st.container():
        compare.compare_section(session, snap)


def changing(session: ts.TrainingSession, snap: ts.RunSnapshot) -> bool:
    """True while the run changes by itself (queued or training) or an experiment's next run is due."""
    return snap.live or session.queued_runs > 0


def run_section(session: ts.TrainingSession, snap: ts.RunSnapshot) -> None:
    sidebar_status(session, snap)
    run_state(session, snap)
    experiments.experiment_status(session)
    metrics(snap)
    charts.run_charts(snap)
    if ts.debug_enabled():  # for bench/train_ui_overhead.py: the engine's own clock
        st.caption(f"training-run-stats: state={snap.state} step={snap.step} elapsed_s={snap.elapsed_s:.3f}")
    probe(snap)


def sidebar_status(session: ts.TrainingSession, snap: ts.RunSnapshot) -> None:
    """The sidebar's run status, from the snapshot this panel shows: on this page the sidebar and the
    panel read one snapshot, and the live fragment redraws both (a fragment may write to the sidebar)."""
    if snap.state == "idle":
        return
    with st.sidebar:
        run_status.render(run_status.run_model_name(session), snap)


def run_state(session: ts.TrainingSession, snap: ts.RunSnapshot) -> None:
    cfg = snap.config
    st.markdown(t("training.run.config", task=t(f"training.task_name.{cfg['task']}"),
                  preset=trs.preset_name(cfg["preset"]), params=f"{snap.num_params:,}", device=snap.device,
                  batch=cfg["batch_size"], warmup=cfg["warmup"], factor=f"{cfg['factor']:g}",
                  eps=f"{cfg['label_smoothing']:g}", dropout=f"{cfg.get('dropout', trs.DEFAULTS['dropout']):g}", seed=cfg["seed"],
                  variant=compare.differences(cfg, trs.token_fields(cfg) + ("heads", "head_dim") + trs.VARIANT_FIELDS)))
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


def cheat_text(snap: ts.RunSnapshot, previous: ts.RunSnapshot | None) -> str:
    """What the cheating experiment shows, led by exact-match accuracy (where the runs differ), not the loss.

    With a run before it that kept the look-ahead mask, and an accuracy measured for both, the
    sentence starts with the two accuracies; otherwise it says to watch the accuracy.
    """
    masked = previous if previous is not None and previous.config["use_look_ahead_mask"] else None
    if snap.accuracy is None or masked is None or masked.accuracy is None:
        return t("training.cheat.explain")
    return t("training.cheat.compare", accuracy=f"{snap.accuracy:.0%}", masked_accuracy=f"{masked.accuracy:.0%}",
             loss=loss_text(snap.loss), masked_loss=loss_text(masked.loss))


def loss_text(value: float | None) -> str:
    return f"{value:.3f}" if value is not None else "–"


def metrics(snap: ts.RunSnapshot) -> None:
    cols = st.columns(4)
    cols[0].metric(t("training.metric.step", total=format_count(snap.max_steps)), format_count(snap.step))
    cols[1].metric(t("training.metric.loss"), loss_text(snap.loss))
    cols[2].metric(t("training.metric.accuracy"), f"{snap.accuracy:.0%}" if snap.accuracy is not None else "–")
    speed = np.mean(snap.tokens_per_s[-20:]) if snap.tokens_per_s else None
    cols[3].metric(t("training.metric.speed"), f"{speed:,.0f}" if speed is not None else "–")
    duration = run_status.format_duration
    if snap.eta_s is None:
        text = t("training.metric.time_done", elapsed=duration(snap.elapsed_s))
    else:
        text = t("training.metric.time", elapsed=duration(snap.elapsed_s), eta=duration(snap.eta_s))
    st.progress(min(snap.step / snap.max_steps, 1.0) if snap.max_steps else 0.0, text=text)
    if snap.held_out:
        last = snap.held_out[-1]
        st.caption(t("training.metric.held_out", step=format_count(last.step), perplexity=f"{last.perplexity:.3f}",
                     bleu=t("training.metric.bleu", bleu=f"{last.bleu:.1f}") if last.bleu is not None else ""))


def probe(snap: ts.RunSnapshot) -> None:
    """The cross-attention of the run's fixed example, head by head: the newest snapshot while it
    trains, any earlier one (a slider) once it is paused or over."""
    st.subheader(t("training.probe.heading"))
    if not snap.probes:
        st.caption(t("training.probe.waiting"))
        return
    chosen_probe = chosen_snapshot(snap)
    weights = chosen_probe.weights()  # (L, H, T, S)
    L, H, T, S = weights.shape
    layer = L - 1
    if L > 1:
        chosen = st.segmented_control(t("training.probe.layer"), list(range(L)), key=LAYER_KEY, required=True,
                                      default=L - 1, format_func=lambda i: t("training.probe.layer_option", n=i + 1))
        layer = chosen if chosen is not None else L - 1
    task = snap.config["task"]
    source = charts.probe_source_text(task, snap.probe_src_tokens)
    st.markdown(t("training.probe.caption", step=chosen_probe.step, source=markdown_literal(source, 60),
                  output=markdown_literal(chosen_probe.output, 60) or "∅"))
    for h, column in enumerate(st.columns(H)):
        with column:
            charts.attention_head(weights[layer, h], snap.probe_src_tokens, snap.probe_tgt_tokens, h,
                                  show_scale=h == H - 1)
            scored = charts.head_score(weights[layer, h], task)
            if scored is not None:
                pattern, score = scored
                st.caption(t(f"training.probe.score_{pattern}", score=f"{score:.2f}", uniform=f"{1 / S:.2f}"))
    st.caption(t(f"training.probe.expect_{task}"))
    # The gold alignment is word to word: a run on BPE pieces has no score against it (a chance match of sizes aside).
    alignment = None if snap.config.get("tokens") == "bpe" else charts.probe_alignment(task, source, snap.probes)
    if alignment is not None:
        alignment_over_steps(alignment)


def alignment_over_steps(found: charts.ProbeAlignment) -> None:
    """How much of the best head's weight lies on the words each output token translates, probe by probe."""
    st.markdown(f"**{t('training.probe.align_heading')}**")
    charts.alignment_chart(found)
    layer, head = np.unravel_index(int(np.nanargmax(found.last_scores)), found.last_scores.shape)
    st.caption(t("training.probe.align_caption", score=f"{found.best[-1]:.0%}", layer=int(layer) + 1,
                 head=int(head) + 1, chance=f"{found.chance:.0%}"))


def chosen_snapshot(snap: ts.RunSnapshot):
    """The attention snapshot to show: the newest while the run trains (a slider would fight the
    refresh), else the one the history slider picks."""
    steps = [p.step for p in snap.probes]
    if snap.live or len(steps) < 2:
        if snap.live:  # (from the first snapshot on: an element appearing later would remount the charts below)
            st.caption(t("training.probe.pause_to_look_back"))
        return snap.probes[-1]
    if st.session_state.get(actions.PROBE_KEY) not in steps:
        st.session_state[actions.PROBE_KEY] = steps[-1]
    st.select_slider(t("training.probe.history"), steps, key=actions.PROBE_KEY, help=t("training.probe.history_help"))
    return snap.probes[steps.index(st.session_state[actions.PROBE_KEY])]


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
    samples(session, status.step)
    use_and_download(session)
    show_flash("results")


def samples(session: ts.TrainingSession, step: int) -> None:
    batch = st.session_state.get(SAMPLES_BATCH_KEY, 0)
    answered = session.samples(step, batch)
    table = pd.DataFrame({
        t("training.results.source"): [s.source for s in answered],
        t("training.results.target"): [s.target for s in answered],
        t("training.results.output"): [s.output for s in answered],
        t("training.results.correct"): ["✓" if s.correct else "✗" for s in answered],
    })
    st.dataframe(table, hide_index=True, width="stretch")
    right = sum(s.correct for s in answered)
    st.caption(t("training.results.summary", right=right, total=len(answered)))
    st.button(t("training.results.more"), icon=":material/casino:", key="training.more_samples",
              on_click=lambda: st.session_state.__setitem__(SAMPLES_BATCH_KEY, batch + 1))


def use_and_download(session: ts.TrainingSession) -> None:
    """A name for the model, "use it on the other pages", and the checkpoint file."""
    default_name = ts.default_model_name(session.run.config.to_dict(), session.run_number)
    if actions.NAME_KEY not in st.session_state or st.session_state.get(NAME_FOR_KEY) != session.run_number:
        st.session_state[actions.NAME_KEY] = default_name
        st.session_state[NAME_FOR_KEY] = session.run_number
    a, b, c = st.columns([2, 2, 2], vertical_alignment="bottom")
    with a:
        st.text_input(t("training.use.name"), key=actions.NAME_KEY, max_chars=40, help=t("training.use.name_help"))
    with b:
        st.button(t("training.use.button"), type="primary", icon=":material/input:", key="training.use",
                  on_click=actions.on_use)
    with c:
        name = st.session_state.get(actions.NAME_KEY) or default_name
        st.download_button(t("training.download.button"), data=session.checkpoint_bytes,
                           file_name=f"{ts.name_from_upload(name)}.pt",
                           mime="application/octet-stream", on_click="ignore", icon=":material/download:",
                           key="training.download", help=t("training.download.help"))


def upload_section() -> None:
    """Load a checkpoint file (validated by the engine) and select it on every page. The panel keeps its place
    on the page (:func:`section`) and its open state on the server, and an upload opens it, so its answer is
    always in sight."""
    with st.expander(t("training.upload.heading"), icon=":material/upload_file:", key=actions.UPLOAD_PANEL_KEY,
                     on_change="rerun"):
        st.caption(t("training.upload.caption"))
        st.file_uploader(t("training.upload.label"), key=actions.UPLOAD_KEY, on_change=actions.on_upload)
        result = st.session_state.get(actions.UPLOAD_RESULT_KEY)
        if result is None:
            return
        kind, key, args = result
        if kind == "error":
            st.error(t(key, **args), icon=":material/error:")
        else:
            st.success(t(key, **args), icon=":material/check_circle:")


def section(draw: Callable[..., None], *args: Any) -> None:
    """``draw(*args)`` inside a container of its own: each section is one element of the page however many it
    draws, so the ones below keep their place (and their state in the browser: a file being uploaded, an open
    panel) when a run finishing, or a message shown once, changes the sections above."""
    with st.container():
        draw(*args)


with page("training", model=False, try_this="bottom"):
    section(settings_form)
    session = ts.session_training()
    section(controls, session)
    section(experiments.experiments_section, session)
    section(run_panel, session)
    section(results, session)
    section(upload_section)
    section(exercise_panel, "training")

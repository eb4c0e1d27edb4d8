"""The training page's Streamlit side: run ownership (ui.training.session), the sidebar's status
(ui.training.status), the settings derived from their one declaration and the engine's problems in
words (ui.training.settings) and the planned curve's data (ui.training.charts).

A run belongs to one browser session, is stopped when Streamlit releases that session's cache,
never sees another session's run, and waits in the process-wide queue when the slots are full.
"""
from __future__ import annotations

import string
import time
from pathlib import Path

import pyarrow as pa
import numpy as np
import pytest
from streamlit.runtime.caching import cache_resource_api
from streamlit.testing.v1 import AppTest

from figures import training as fig
from model.checkpoint import CheckpointError
from model.config import Problem
from model.run_slots import RunSlots
from model.schedule import noam_lr
from model.training import MAX_BATCH_SIZE, MAX_STEPS, MESSAGES, RunStatus, TrainingConfig, TrainingRun
from ui.i18n import load_catalogs, translate
from ui.training import charts
from ui.training import settings as trs
from ui.training import session as ts
from ui.training import status as training_status
from tests.training_runs import FAST, long_config, wait_until
from ui.url_state import markdown_literal

ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------ limits from the environment


def test_limits_come_from_the_environment_with_safe_fallbacks():
    assert ts.max_concurrent_runs({}) >= 1
    assert ts.max_concurrent_runs({ts.ENV_MAX_RUNS: "3"}) == 3
    for bad in ("0", "-2", "many", " "):
        assert ts.max_concurrent_runs({ts.ENV_MAX_RUNS: bad}) == ts.max_concurrent_runs({})
    assert ts.max_run_seconds({}) == ts.DEFAULT_MAX_SECONDS
    assert ts.max_run_seconds({ts.ENV_MAX_SECONDS: "45"}) == 45.0
    assert ts.training_threads({}) == 1
    assert ts.training_threads({ts.ENV_THREADS: "2"}) == 2


def test_page_settings_become_a_config_with_the_server_caps(monkeypatch):
    monkeypatch.setenv(ts.ENV_MAX_SECONDS, "42")
    settings = trs.Settings(task="reverse", warmup=50, max_steps=400)
    assert settings.problem() is None
    config = settings.to_config()
    assert (config.task, config.warmup, config.max_steps, config.max_seconds) == ("reverse", 50, 400, 42.0)
    assert 10 <= config.eval_every <= 100 and 5 <= config.probe_every <= 50


@pytest.mark.parametrize(
    "change, problem",
    [
        (dict(warmup=0), Problem("warmup", {})),
        (dict(batch_size=100_000), Problem("batch_size", {"limit": MAX_BATCH_SIZE})),
        (dict(batch_size=0), Problem("batch_size", {"limit": MAX_BATCH_SIZE})),
        (dict(factor=0.0), Problem("factor", {})),
        (dict(label_smoothing=1.0), Problem("label_smoothing", {})),
        (dict(max_steps=0), Problem("max_steps", {"limit": MAX_STEPS})),
        (dict(max_steps=MAX_STEPS + 1), Problem("max_steps", {"limit": MAX_STEPS})),
        (dict(seed=-1), Problem("seed", {})),
        (dict(task="poetry"), Problem("task", {"task": "poetry", "tasks": "copy, reverse, sort, dates, en-zh, zh-en"})),
        (dict(preset="huge"), Problem("preset", {"preset": "huge", "presets": "tiny, small, base-mt"})),
    ],
)
def test_bad_settings_are_refused_by_the_engine_with_a_translated_sentence(change, problem, monkeypatch):
    settings = trs.Settings(**change)
    assert settings.problem() == problem  # the engine's own answer: the page checks nothing itself
    key, args = trs.problem_message(problem)
    assert key == f"training.invalid.{problem.code}"
    for lang in ("en", "zh"):
        monkeypatch.setattr(trs, "t", lambda k, **a: translate(k, lang, **a))
        text = trs.problem_text(problem)
        assert text == translate(key, lang, **args) and text != key  # exists and formats in both languages


def fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def test_every_problem_the_engine_can_name_has_a_sentence_in_both_languages():
    catalogs = load_catalogs()
    for code, english in MESSAGES.items():
        for lang in ("en", "zh"):
            sentence = catalogs[lang].get(f"training.invalid.{code}")
            assert sentence, (code, lang)
            assert fields(sentence) <= fields(english), (code, lang)  # it names only values the engine gives


def test_problem_values_from_user_text_are_escaped():
    _, args = trs.problem_message(Problem("task", {"task": "*bold* [x](y)", "tasks": "copy"}))
    assert args["task"] == markdown_literal("*bold* [x](y)") and r"\*bold\*" in args["task"]


def test_the_planned_curve_peaks_at_warmup_with_the_paper_formula():
    curves = (("a", 400), ("b", 4000))
    datasets = charts.planned_datasets(32, 1.0, 3000, curves)
    assert set(datasets) == {"curve", "peak"} and all(isinstance(v, pa.Table) for v in datasets.values())
    frame = datasets["curve"].to_pandas()
    a = frame[frame.series == "a"]
    top = a.loc[a.lr.idxmax()]
    assert top.step == 400
    assert top.lr == pytest.approx(32 ** -0.5 * 400 ** -0.5) == pytest.approx(noam_lr(400, 32, 400))
    assert len(a) <= fig.MAX_POINTS + 1
    assert datasets["peak"].column("series").to_pylist() == ["a"]  # warmup 4000 is never reached within 3000 steps
    assert datasets["peak"].column("label").to_pylist() == ["0.00884"]  # 8.84e-03 in plain decimals


def test_the_papers_curve_is_its_own_schedule_over_its_own_steps_sampled_for_a_log_axis():
    datasets = charts.planned_datasets(32, 2.0, 600, (("ours", 200),), paper="paper")
    frame = datasets["curve"].to_pandas()
    paper, ours = frame[frame.series == "paper"], frame[frame.series == "ours"]
    assert ours.step.max() == 600 and paper.step.max() == 100_000  # the paper's 100k steps, ours to the cap
    top = paper.loc[paper.lr.idxmax()]
    assert top.step == 4000 and top.lr == pytest.approx(512 ** -0.5 * 4000 ** -0.5)  # factor 1, not ours (2)
    assert ours.lr.max() == pytest.approx(2.0 * 32 ** -0.5 * 200 ** -0.5)
    assert (paper.step < 10).sum() >= 5  # geometric sampling: the first steps are drawn on a log axis too
    assert datasets["peak"].column("series").to_pylist() == ["ours", "paper"]
    assert charts.paper_schedule() == (512, 4000, pytest.approx(512 ** -0.5 * 4000 ** -0.5))
    log = fig.lr_spec(x_title="s", y_title="lr", series=["ours", "paper"], live=False, log_steps=True)
    assert {layer["encoding"]["x"]["scale"]["type"] for layer in log["layer"] if "x" in layer["encoding"]} == {"log"}
    assert "paper" not in charts.planned_datasets(32, 2.0, 600, (("ours", 200),))["curve"].to_pandas().series.values


def test_the_worked_peak_and_latex_numbers():
    assert charts.latex_number(0.0125) == "0.0125"
    assert charts.latex_number(8.8388e-4) == r"8.84 \times 10^{-4}"
    worked = charts.worked_peak(64, 50, 1.0)
    assert r"\mathrm{lr}_{\max}" in worked and "50^{-0.5}" in worked and f"{64 ** -0.5 * 50 ** -0.5:.3g}" in worked


def test_the_page_draws_charts_with_public_streamlit_api_and_imports_normally():
    for path in sorted((ROOT / "ui" / "training").glob("*.py")):
        source = path.read_text()
        assert "dataframe_util" not in source and "sys.modules" not in source, path


# ------------------------------------------------------------------ one session's run


def test_start_pause_resume_stop_reset(sessions):
    session = sessions()
    session.start(long_config())
    assert wait_until(lambda: session.snapshot().step >= 2)
    session.pause()
    assert wait_until(lambda: session.snapshot().state == "paused")
    time.sleep(0.3)
    held = session.snapshot().step
    time.sleep(0.4)
    assert session.snapshot().step == held
    session.resume()
    assert wait_until(lambda: session.snapshot().step > held)
    session.stop()
    snap = session.snapshot()
    assert (snap.state, snap.reason) == ("finished", "stopped") and not session.live
    session.reset()
    assert session.snapshot() is None and session.previous is None


def test_a_new_run_keeps_the_last_one_for_comparison(sessions):
    session = sessions()
    first = session.start(long_config())
    assert wait_until(lambda: first.snapshot().step >= 2)
    second = session.start(long_config(use_look_ahead_mask=False))
    assert not first.alive  # the old run was stopped, not left training
    assert session.previous is not None and session.previous.step >= 2
    assert session.run is second and session.run_number == 2
    assert session.snapshot().config["use_look_ahead_mask"] is False


def test_close_stops_the_thread_promptly(sessions):
    session = sessions()
    session.start(long_config())
    assert wait_until(lambda: session.snapshot().step >= 1)
    assert ts.alive_training_threads() == 1
    started = time.monotonic()
    session.close()
    assert time.monotonic() - started < 0.5  # never blocks the caller (Streamlit's event loop)
    assert wait_until(lambda: ts.alive_training_threads() == 0, 5) and session.released
    assert session.snapshot().reason == "stopped"


def test_two_sessions_never_touch_each_others_run(sessions):
    a, b = sessions(), sessions()
    a.start(long_config(seed=1))
    b.start(long_config(seed=2))
    assert wait_until(lambda: a.snapshot().step >= 2 and b.snapshot().step >= 2)
    assert a.run is not b.run and a.run.model is not b.run.model
    a.stop()
    b_step = b.snapshot().step
    assert wait_until(lambda: b.snapshot().step > b_step)  # b trains on
    assert b.snapshot().state == "running" and a.snapshot().state == "finished"


def test_the_cap_queues_runs_and_a_freed_slot_starts_the_next(sessions):
    slots = RunSlots(1)
    first, second, third = sessions(slots), sessions(slots), sessions(slots)
    first.start(long_config())
    assert wait_until(lambda: first.snapshot().state == "running")
    second.start(long_config())
    third.start(long_config())
    assert wait_until(lambda: third.snapshot().queue_position == 2)
    assert second.snapshot().state == "queued" and second.snapshot().queue_position == 1
    assert second.snapshot().step == 0
    first.stop()
    assert wait_until(lambda: second.snapshot().state == "running" and second.snapshot().step >= 1)
    assert third.snapshot().queue_position == 1
    third.stop()  # leaving the queue ends its thread without training
    assert third.snapshot().reason == "stopped before it started" and not third.live


def test_samples_and_checkpoint_copy_are_independent_of_the_run(sessions):
    session = sessions()
    session.start(TrainingConfig(**{**FAST, "max_steps": 6}))
    assert wait_until(lambda: not session.live)
    samples = session.samples(6)
    assert len(samples) == ts.SAMPLE_COUNT and samples is session.samples(6)  # cached
    assert session.samples(6, batch=1) != samples
    ckpt = session.checkpoint_copy()
    assert ckpt.model is not session.run.model and not ckpt.model.training
    assert ckpt.task["name"] == "copy" and ckpt.history["steps"] == 6


def fail_after(monkeypatch, steps: int, message: str = "injected failure") -> None:
    """Make every run raise ``RuntimeError(message)`` in the step after its ``steps``-th."""
    real_step = TrainingRun.train_step

    def failing_step(self):
        if self.status().step >= steps:
            raise RuntimeError(message)
        return real_step(self)

    monkeypatch.setattr(TrainingRun, "train_step", failing_step)


def test_a_failed_run_hands_out_no_checkpoint(sessions, monkeypatch):
    fail_after(monkeypatch, 3)
    session = sessions()
    session.start(long_config())
    assert wait_until(lambda: not session.live)
    assert session.status().state == "failed" and session.status().step == 3
    assert session.snapshot().reason == "RuntimeError: injected failure"
    with pytest.raises(ts.FailedRunError, match="injected failure"):
        session.checkpoint_bytes()  # not downloadable...
    with pytest.raises(ts.FailedRunError):
        session.checkpoint_copy()  # ...nor usable on the other pages
    monkeypatch.undo()
    session.start(long_config(max_steps=4))  # a new run after a failure trains and saves normally
    assert wait_until(lambda: not session.live)
    assert session.status().state == "finished"
    assert session.checkpoint_copy().history["steps"] == 4
    assert session.previous is not None and session.previous.state == "failed"  # kept for comparison


# ------------------------------------------------------------------ the sidebar's status line


def sidebar_case(state: str, **changes) -> RunStatus:
    base = dict(state=state, reason="", step=42, max_steps=600, loss=1.23456)
    return RunStatus(**{**base, **changes})


REASON = "RuntimeError: weights *exploded* at <b>step</b> #43 [x](y) $1$"
SIDEBAR_CASES = [  # (status, catalog key, its arguments, refreshes by itself?)
    (sidebar_case("queued", step=0, loss=None, queue_position=2, queue_waiting=3), "common.training.queued",
     dict(model="copy-tiny-1", position=2, waiting=3), True),
    (sidebar_case("queued", step=0, loss=None), "common.training.queued_no_place", dict(model="copy-tiny-1"), True),
    (sidebar_case("running"), "common.training.running",
     dict(model="copy-tiny-1", step=42, total=600, loss="1.2346"), True),
    (sidebar_case("paused"), "common.training.paused",
     dict(model="copy-tiny-1", step=42, total=600, loss="1.2346"), False),
    (sidebar_case("finished", reason="step cap reached", step=600), "common.training.finished",
     dict(model="copy-tiny-1", step=600, total=600, loss="1.2346"), False),
    (sidebar_case("finished", reason="time cap reached"), "common.training.finished",
     dict(model="copy-tiny-1", step=42, total=600, loss="1.2346"), False),
    (sidebar_case("finished", reason="stopped"), "common.training.stopped",
     dict(model="copy-tiny-1", step=42, total=600, loss="1.2346"), False),
    (sidebar_case("finished", reason="stopped before it started", step=0, loss=None),
     "common.training.stopped_queued", dict(model="copy-tiny-1"), False),
    (sidebar_case("failed", reason=REASON), "common.training.failed",
     dict(model="copy-tiny-1", step=42, reason=markdown_literal(REASON, training_status.REASON_LIMIT)), False),
]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_sidebar_says_which_state_the_run_is_in(monkeypatch, lang):
    monkeypatch.setattr(training_status, "t", lambda key, **args: translate(key, lang, **args))
    said = []
    for status, key, args, live in SIDEBAR_CASES:
        text = training_status.status_text("copy-tiny-1", status)
        assert text == translate(key, lang, **args) and text != key, (key, text)
        assert status.live is live, status.state  # only queued and running refresh themselves
        said.append(text)
    assert len(set(said)) == len(said)  # no two states read the same
    failed = said[-1]
    assert "*exploded*" not in failed and "<b>" not in failed and r"\*exploded\*" in failed  # shown literally


def test_the_sidebar_reads_the_cheap_status_not_the_history(sessions, monkeypatch):
    assert training_status.current_run() is None  # no session: nothing to say
    session = sessions(RunSlots(1))
    monkeypatch.setattr(ts, "peek_session", lambda: session)
    assert training_status.current_run() is None  # a session without a run
    fail_after(monkeypatch, 2, "boom")
    session.start(long_config())
    assert wait_until(lambda: not session.live)
    monkeypatch.setattr(session.run, "snapshot", lambda: pytest.fail("the sidebar copied the whole history"))
    model, status = training_status.current_run()
    assert (model, status.state, status.step, status.reason) == ("copy-tiny-1", "failed", 2, "RuntimeError: boom")
    assert status.max_steps == 100_000 and status.loss is not None and not status.live


# ------------------------------------------------------------------ ownership by the browser session

_APP = """
import streamlit as st
from model.training import TrainingConfig
from ui.training.session import session_training

session = session_training()
if st.button("start", key="start"):
    session.start(TrainingConfig(task="copy", task_max_len=6, preset="tiny", batch_size=8, eval_every=10,
                                 eval_size=10, probe_every=5, max_steps=100_000, max_seconds=120))
st.write(str(id(session)))
"""


def test_each_browser_session_owns_its_run_and_releasing_it_stops_the_thread(monkeypatch):
    # AppTest gives every simulated session the same id; give each its own, as a server does.
    current = {"id": "browser-A"}
    monkeypatch.setattr(cache_resource_api, "get_session_id_or_throw", lambda: current["id"])
    one = AppTest.from_string(_APP, default_timeout=60).run()
    current["id"] = "browser-B"
    two = AppTest.from_string(_APP, default_timeout=60).run()
    assert one.markdown[0].value != two.markdown[0].value  # one TrainingSession per browser session
    current["id"] = "browser-A"
    one.button(key="start").click().run()
    assert one.markdown[0].value == one.run().markdown[0].value  # the same one on every rerun
    assert wait_until(lambda: ts.alive_training_threads() == 1)
    current["id"] = "browser-B"
    two.run()
    assert ts.alive_training_threads() == 1  # B's visit neither starts nor sees A's run
    cache_resource_api.clear_session_cache("browser-B")
    assert ts.alive_training_threads() == 1  # B going away leaves A's run alone
    cache_resource_api.clear_session_cache("browser-A")  # what Streamlit does when A disconnects
    assert wait_until(lambda: ts.alive_training_threads() == 0, 5)


def test_the_session_cache_is_declared_with_a_release_hook():
    source = (ROOT / "ui" / "training" / "session.py").read_text()
    assert '@st.cache_resource(scope="session", on_release=_release' in source


# ------------------------------------------------------------------ checkpoints and names


def test_every_checkpoint_error_has_one_sentence_in_both_languages():
    from model.checkpoint import MESSAGES

    for reason in MESSAGES:
        error = CheckpointError.__new__(CheckpointError)
        error.reason = reason
        key = ts.checkpoint_error_key(error)
        assert key == f"training.upload.error.{reason}"
        for lang in ("en", "zh"):
            text = translate(key, lang)
            assert text and text.count("\n") == 0


@pytest.mark.parametrize(
    "data, reason",
    [(b"", "empty"), (b"hello, this is not a model", "not_checkpoint"), (b"PK\x03\x04 broken zip", "truncated")],
)
def test_bad_uploads_are_refused_with_a_reason(data, reason):
    with pytest.raises(CheckpointError) as info:
        ts.read_upload(data)
    assert info.value.reason == reason
    assert ts.checkpoint_error_key(info.value) == f"training.upload.error.{reason}"


def test_upload_names_are_tidy_and_never_a_shipped_name(monkeypatch):
    monkeypatch.setattr("ui.models.shipped_models", lambda: ["copy", "reverse"])
    assert ts.name_from_upload("my model.pt") == "my model"
    assert ts.name_from_upload("copy.pt") == "copy-uploaded"
    assert ts.name_from_upload("../../etc/evil.pt") == "evil"
    assert ts.name_from_upload("a<b>*c.PT") == "a-b-c"
    assert ts.name_from_upload(".pt") == "uploaded"
    assert ts.model_name_problem("copy")[0] == "training.use.shipped_name"
    assert ts.model_name_problem("  ")[0] == "training.use.bad_name"
    assert ts.model_name_problem("x" * 41)[0] == "training.use.bad_name"
    assert ts.model_name_problem("copy-tiny-1") is None


# ------------------------------------------------------------------ one declaration per setting


def test_every_page_setting_is_declared_once_and_the_rest_is_derived_from_it():
    engine = TrainingConfig()
    defaults = trs.Settings()
    for name in trs.SPECS:
        assert getattr(defaults, name) == getattr(engine, name) == trs.DEFAULTS[name] == trs.PARAMS[name].default
        assert trs.PARAMS[name].accepts(trs.DEFAULTS[name]), name
    assert trs.Settings().to_config().problem() is None
    assert trs.COMPARED_FIELDS == tuple(name for name in trs.SPECS if name != "task")
    # What a visitor sees on a fresh visit is what the page opened with before the settings were declared once.
    assert (engine.task, engine.preset, engine.batch_size, engine.warmup, engine.max_steps) == ("copy", "tiny", 32, 200, 600)


def test_shared_links_keep_their_parameter_names_and_widgets_their_keys():
    assert {name: param.name for name, param in trs.PARAMS.items()} == {
        "task": "training_task", "tokens": "training_tokens", "preset": "training_size", "heads": "training_heads", "head_dim": "training_head_dim", "norm_first": "training_prenorm", "norm_kind": "training_norm",
        "ffn_kind": "training_ffn", "position_kind": "training_pos", "warmup": "training_warmup", "factor": "training_factor",
        "label_smoothing": "training_eps", "dropout": "training_dropout", "batch_size": "training_batch", "seed": "training_seed", "max_steps": "training_steps",
        "use_padding_mask": "training_pad", "use_look_ahead_mask": "training_ahead",
    }
    assert trs.COMPARE.name == "training_cmp"
    assert trs.KEYS["batch_size"] == "training.batch" and trs.KEYS["max_steps"] == "training.steps"
    assert trs.PARAMS["batch_size"].parse("32") == 32  # a whole number's step is its widget's increment only
    assert trs.PARAMS["factor"].parse("0.33") == pytest.approx(0.3)  # a slider's grid


def test_every_declared_label_and_help_exists_in_both_languages():
    catalogs = load_catalogs()
    for name, spec in trs.SPECS.items():
        for key in filter(None, (spec.label, spec.help)):
            assert all(catalogs[lang].get(key) for lang in ("en", "zh")), (name, key)


def test_the_command_line_keeps_its_own_explicit_defaults():
    from model.train import parse_args

    args = parse_args([])
    assert (args.preset, args.batch_size, args.warmup, args.eval_size) == ("small", 64, 400, 1000)


# ------------------------------------------------------------------ the live panel reads only what is new


def test_the_session_snapshot_reads_only_new_metrics_and_matches_the_run(sessions, monkeypatch):
    session = sessions()
    session.start(TrainingConfig(**{**FAST, "max_steps": 30}))
    asked = []
    real = TrainingRun.metrics_since
    monkeypatch.setattr(TrainingRun, "metrics_since",
                        lambda self, *args: asked.append(args) or real(self, *args))
    looks = []
    while session.live:
        looks.append(session.snapshot().step)
        time.sleep(0.05)
    snap, full = session.snapshot(), session.run.snapshot()
    assert snap.step == full.step == 30 and len(asked) == len(looks) + 1
    assert [a[0] for a in asked] == sorted(a[0] for a in asked)  # each look asks from where the last one ended
    assert all(a[0] >= prev for a, prev in zip(asked[1:], looks))
    for name in ("losses", "lrs", "tokens_per_s", "evals", "probe_src_tokens", "probe_tgt_tokens", "config"):
        assert getattr(snap, name) == getattr(full, name), name
    assert [p.step for p in snap.probes] == [p.step for p in full.probes]
    assert (snap.state, snap.reason, snap.num_params, snap.device) == (full.state, full.reason, full.num_params,
                                                                       full.device)


def test_the_planned_schedule_is_computed_once_per_settings():
    curves = (("a", 400), ("b", 800))
    first, again = charts.planned_datasets(32, 1.0, 3000, curves), charts.planned_datasets(32, 1.0, 3000, list(curves))
    assert first["curve"] is again["curve"] and first["peak"] is again["peak"]
    assert charts.planned_datasets(32, 1.0, 2000, curves)["curve"] is not first["curve"]


def test_only_a_pause_of_a_live_run_leaves_the_page_as_it_was_drawn():
    """The controls row is a fragment (#35 item 22): Pause redraws only it (Resume at once; the live panel
    redraws the page on its next tick); Start, Resume, Stop and Reset redraw the page."""
    from ui.training.actions import redraws_page

    assert not redraws_page("running", "paused") and not redraws_page("queued", "paused")
    assert not redraws_page("running", "running") and not redraws_page("queued", "running")
    assert not redraws_page("running", "queued")  # paused and resumed before the live panel's tick
    assert redraws_page("paused", "queued") and redraws_page("paused", "running")  # Resume: the live panel again
    assert redraws_page("idle", "queued") and redraws_page("finished", "running")  # Start, the cheating experiment
    assert redraws_page("running", "finished") and redraws_page("paused", "finished")  # Stop
    assert redraws_page("paused", "idle")  # Reset


def test_the_probes_alignment_scores_every_snapshot_against_the_gold_alignment():
    """#31: the best head's weight on the aligned source tokens at every probe; None without a gold alignment."""
    from explain.alignment import gold_cells, task_alignment
    from model.training import ProbeAttention

    source = "hello"
    gold = task_alignment("reverse", source)
    T, S = len(gold.target) + 1, len(gold.source)
    perfect = np.zeros((1, 2, T, S))
    perfect[0, 1, :-1] = gold_cells(gold.links, T, S)[:-1]  # head 2 follows the anti-diagonal exactly
    perfect[0, 1, -1] = 1 / S
    perfect[0, 0] = 1 / S  # head 1 spreads evenly
    probes = [ProbeAttention(1, np.full((1, 2, T, S), 1 / S).tolist(), ""), ProbeAttention(5, perfect.tolist(), "")]
    found = charts.probe_alignment("reverse", source, probes)
    assert found.steps == [1, 5] and found.best[0] == pytest.approx(found.chance) and found.best[1] == pytest.approx(1.0)
    assert np.unravel_index(int(np.nanargmax(found.last_scores)), found.last_scores.shape) == (0, 1)
    assert charts.probe_alignment("dates", "2024-01-31", probes) is None
    assert charts.probe_alignment("reverse", "hello world", probes) is None  # maps of another size

"""The training page's run ownership (ui.training_session) and chart data (ui.training_charts).

A run belongs to one browser session, is stopped when Streamlit releases that session's cache,
never sees another session's run, and waits in the process-wide queue when the slots are full.
"""
from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from streamlit.runtime.caching import cache_resource_api
from streamlit.testing.v1 import AppTest

from model.checkpoint import CheckpointError
from model.run_slots import RunSlots
from model.schedule import noam_lr
from model.training import TrainingConfig, TrainingRun
from ui import training_charts as charts
from ui import training_session as ts
from ui import training_status
from ui.i18n import translate
from ui.url_state import markdown_literal

ROOT = Path(__file__).resolve().parents[2]
FAST = dict(task="copy", task_max_len=6, preset="tiny", batch_size=8, eval_every=10, eval_size=10, probe_every=5,
            max_seconds=120)


def wait_until(predicate, timeout=30.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def long_config(**overrides) -> TrainingConfig:
    return TrainingConfig(**{**FAST, "max_steps": 100_000, **overrides})


@pytest.fixture
def sessions():
    """Factory of TrainingSessions on CPU sharing one queue; every run is stopped afterwards."""
    made: list[ts.TrainingSession] = []

    def make(slots: RunSlots | None = None) -> ts.TrainingSession:
        session = ts.TrainingSession(slots=slots or RunSlots(4), device="cpu")
        made.append(session)
        return session

    yield make
    for session in made:
        session.close()
    assert wait_until(lambda: ts.alive_training_threads() == 0, 10)


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
    config, problem = ts.make_config(ts.Settings(task="reverse", warmup=50, max_steps=400))
    assert problem is None
    assert (config.task, config.warmup, config.max_steps, config.max_seconds) == ("reverse", 50, 400, 42.0)
    assert 10 <= config.eval_every <= 100 and 5 <= config.probe_every <= 50


@pytest.mark.parametrize(
    "change, key",
    [
        (dict(warmup=0), "training.problem.warmup"),
        (dict(batch_size=100_000), "training.problem.batch"),
        (dict(batch_size=0), "training.problem.batch"),
        (dict(factor=0.0), "training.problem.factor"),
        (dict(label_smoothing=1.0), "training.problem.smoothing"),
        (dict(max_steps=0), "training.problem.steps"),
        (dict(max_steps=ts.PAGE_MAX_STEPS + 1), "training.problem.steps"),
        (dict(seed=-1), "training.problem.seed"),
        (dict(task="poetry"), "training.problem.task"),
        (dict(preset="huge"), "training.problem.preset"),
    ],
)
def test_bad_settings_are_refused_with_a_translated_sentence(change, key):
    from ui.i18n import translate

    config, problem = ts.make_config(ts.Settings(**change))
    assert config is None and problem[0] == key
    for lang in ("en", "zh"):
        assert translate(problem[0], lang, **problem[1])  # exists and formats in both languages


def test_parameter_counts_match_a_real_model():
    from model.training import TrainingRun

    run = TrainingRun(TrainingConfig(task="dates", preset="tiny", max_steps=1), device="cpu")
    assert ts.parameter_count("dates", "tiny") == run.model.num_params()
    assert ts.parameter_count("copy", "small") > ts.parameter_count("copy", "tiny")


def test_loss_floor_is_the_entropy_of_the_smoothed_target():
    assert ts.loss_floor("copy", 0.0) == 0.0
    eps, others = 0.1, ts._vocab_size("copy") - 2
    q = np.array([1 - eps] + [eps / others] * others)
    assert ts.loss_floor("copy", eps) == pytest.approx(-(q * np.log(q)).sum())


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


def sidebar_case(state: str, **changes) -> training_status.RunSnapshot:
    base = dict(model_name="copy-tiny-1", state=state, step=42, total_steps=600, loss=1.23456)
    return training_status.RunSnapshot(**{**base, **changes})


REASON = "RuntimeError: weights *exploded* at <b>step</b> #43 [x](y) $1$"
SIDEBAR_CASES = [  # (snapshot, catalog key, its arguments, refreshes by itself?)
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
    for snapshot, key, args, live in SIDEBAR_CASES:
        text = training_status.status_text(snapshot)
        assert text == translate(key, lang, **args) and text != key, (key, text)
        assert snapshot.running is live, snapshot.state  # only queued and running refresh themselves
        said.append(text)
    assert len(set(said)) == len(said)  # no two states read the same
    failed = said[-1]
    assert "*exploded*" not in failed and "<b>" not in failed and r"\*exploded\*" in failed  # shown literally


def test_the_sidebar_reads_the_cheap_status_not_the_history(sessions, monkeypatch):
    assert training_status.current_run_snapshot() is None  # no session: nothing to say
    session = sessions(RunSlots(1))
    monkeypatch.setattr(ts, "peek_session", lambda: session)
    assert training_status.current_run_snapshot() is None  # a session without a run
    fail_after(monkeypatch, 2, "boom")
    session.start(long_config())
    assert wait_until(lambda: not session.live)
    monkeypatch.setattr(session.run, "snapshot", lambda: pytest.fail("the sidebar copied the whole history"))
    snap = training_status.current_run_snapshot()
    assert (snap.model_name, snap.state, snap.step, snap.reason) == ("copy-tiny-1", "failed", 2, "RuntimeError: boom")
    assert snap.total_steps == 100_000 and snap.loss is not None and not snap.running


# ------------------------------------------------------------------ ownership by the browser session

_APP = """
import streamlit as st
from model.training import TrainingConfig
from ui.training_session import session_training

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
    source = (ROOT / "ui" / "training_session.py").read_text()
    assert '@st.cache_resource(scope="session", on_release=_release' in source


# ------------------------------------------------------------------ checkpoints and names


def test_every_checkpoint_error_has_one_sentence_in_both_languages():
    from model.checkpoint import MESSAGES
    from ui.i18n import translate

    assert set(ts.CHECKPOINT_REASONS) == set(MESSAGES)
    for reason in ts.CHECKPOINT_REASONS:
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


# ------------------------------------------------------------------ chart data


def test_bucket_means_keep_short_series_and_shrink_long_ones():
    steps, values = charts.bucket_means([1.0, 2.0, 3.0])
    assert steps.tolist() == [1, 2, 3] and values.tolist() == [1.0, 2.0, 3.0]
    long = np.arange(1, 10_001, dtype=float)
    steps, values = charts.bucket_means(long, limit=100)
    assert len(steps) == 100 and steps[-1] == 10_000
    assert values.mean() == pytest.approx(long.mean())


def test_planned_curve_peaks_at_warmup_with_the_paper_formula():
    curves = (("a", 400), ("b", 4000))
    frame = charts.planned_curves(32, 1.0, 3000, curves).to_pandas()
    a = frame[frame.series == "a"]
    top = a.loc[a.lr.idxmax()]
    assert top.step == 400
    assert top.lr == pytest.approx(32 ** -0.5 * 400 ** -0.5) == pytest.approx(noam_lr(400, 32, 400))
    assert len(a) <= charts.MAX_POINTS + 1
    peaks = charts.peak_points(32, 1.0, 3000, curves)
    assert peaks.column("series").to_pylist() == ["a"]  # warmup 4000 is never reached within 3000 steps


def test_planned_datasets_are_the_tables_serialised_once():
    curves = (("a", 400), ("b", 800))
    datasets = charts.planned_datasets(32, 1.0, 3000, curves)
    assert datasets is charts.planned_datasets(32, 1.0, 3000, curves)  # cached: built once per process
    for name, table in (("curve", charts.planned_curves(32, 1.0, 3000, curves)),
                        ("peak", charts.peak_points(32, 1.0, 3000, curves))):
        assert isinstance(datasets[name], bytes)
        assert pa.ipc.open_stream(datasets[name]).read_all().equals(table)


def test_run_series_become_small_tables():
    table = charts.series_table([("this", [4.0] * 5000), ("before", [1.0, 2.0])], "loss")
    assert table.column_names == ["step", "loss", "series"]
    assert table.num_rows == charts.MAX_POINTS + 2
    assert table.column("step").to_pylist()[charts.MAX_POINTS - 1] == 5000
    evals = charts.eval_table([("this", [(10, 0.5), (20, 1.0)])])
    assert evals.to_pydict() == {"step": [10, 20], "accuracy": [0.5, 1.0], "series": ["this", "this"]}
    assert charts.series_table([], "loss").num_rows == 0


def test_latex_numbers_and_pattern_scores():
    assert charts.latex_number(0.0125) == "0.0125"
    assert charts.latex_number(8.8388e-4) == r"8.84 \times 10^{-4}"
    eye = np.eye(4)
    assert charts.diagonal_score(eye, "diagonal") == 1.0
    assert charts.diagonal_score(eye[::-1], "anti") == 1.0
    assert charts.diagonal_score(np.full((4, 4), 0.25), "diagonal") == 0.25


def test_attention_spec_labels_every_position_even_repeated_tokens():
    src, tgt = ["l", "l", " ", '"'], ["<bos>", "l"]
    spec = charts.attention_spec(src, tgt, dataset="w", title="t", x_title="x", y_title="y", weight_title="w",
                                 show_scale=True)
    expr = spec["encoding"]["x"]["axis"]["labelExpr"]
    labels = json.loads(expr[: expr.index("[datum.value]")])
    assert labels == ["l", "l", "␣", '"'] and spec["encoding"]["x"]["scale"]["domain"] == [0, 1, 2, 3]
    table = charts.attention_table(np.full((2, 4), 0.25))
    assert table.num_rows == 8 and math.isclose(sum(table.column("weight").to_pylist()), 2.0)
    assert spec["transform"][0]["calculate"] == '["<bos>", "l"][datum.row]'  # the tooltip's token


def test_live_specs_do_not_depend_on_the_data():
    """The in-place update needs the same spec every second: only the datasets may change."""
    kw = dict(x_title="step", y_title="lr", series=["this run"], live=True, x_domain=(0, 100))
    assert charts.lr_spec(**kw) == charts.lr_spec(**kw)
    assert "datasets" not in charts.lr_spec(**kw)

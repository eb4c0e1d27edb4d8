"""The training page's model-variant switches, compare list, overlay and suggested experiments under
AppTest (issue #23; #20's live experiment), in both languages; and the session's compare list and
experiment queue on their own (ui.training.session).

Like tests/app/test_training_page.py, each test releases AppTest's one session id before and after,
which stops any run (and any experiment queue) it left.
"""
from __future__ import annotations

import dataclasses
import json
import threading
import time

import pytest
from streamlit.runtime.caching import cache_resource_api
from streamlit.testing.v1 import AppTest

from model.config import ffn_parameter_count, swiglu_hidden
from model.run_slots import RunSlots
from model.training import parameter_count
from tests.app.apptest_helpers import clean, open_script, query, texts
from tests.training_runs import long_config, wait_until
from ui.i18n import translate
from ui.training import charts as training_charts
from ui.training import compare, experiments
from ui.training import session as ts

APPTEST_SESSION_ID = "test session id"


@pytest.fixture(autouse=True)
def no_run_left_behind():
    cache_resource_api.clear_session_cache(APPTEST_SESSION_ID)
    yield
    cache_resource_api.clear_session_cache(APPTEST_SESSION_ID)  # on_release stops the run and the queue
    assert wait_until(lambda: ts.alive_training_threads() == 0, 10), "a training thread outlived its session"
    assert wait_until(lambda: not any(th.name == ts.QUEUE_THREAD_NAME for th in threading.enumerate()), 10)


def open_training(app, lang: str = "en", **query_params: str) -> AppTest:
    return open_script(app, "app_pages/training.py", {"lang": lang, **query_params}, home_first=True)


def rerun_until(at: AppTest, predicate, timeout: float = 120.0) -> AppTest:
    """Rerun (as the page's once-a-second refresh would) until ``predicate(at)`` holds."""
    end = time.monotonic() + timeout
    while True:
        clean(at.run())
        if predicate(at):
            return at
        if time.monotonic() > end:
            raise AssertionError("the page never reached the expected state")
        time.sleep(0.3)


def params_caption(lang: str, params: int) -> str:
    """The sentence under the switches for a tiny model of ``params`` parameters (d_model 32, d_ff 64)."""
    return translate("training.variant.params", lang, params=f"{params:,}", d_ff=64, hidden=swiglu_hidden(64),
                     relu=f"{ffn_parameter_count(32, 64, 'relu'):,}", swiglu=f"{ffn_parameter_count(32, 64, 'swiglu'):,}")


def overlay(at: AppTest) -> dict[str, dict]:
    """The overlay's charts by dataset (loss, acc, rate): the Vega-Lite specs whose colour has no
    legend of its own (the page draws the one legend above them)."""
    found = {}
    for element in at.get("vega_lite_chart"):
        spec = json.loads(element.proto.spec)
        color = spec.get("encoding", {}).get("color", {})
        if color.get("field") == "series" and "legend" in color and color["legend"] is None:
            found[spec["data"]["name"]] = spec
    return found


def series(spec: dict) -> list[str]:
    return spec["encoding"]["color"]["scale"]["domain"]


def rows(at: AppTest) -> dict[str, str]:
    """The compare list: each run's name (its tick's label) and the text of its row, in order."""
    ticks = [box.label for box in at.checkbox if box.key and box.key.startswith("training.compare_show_")]
    marker = {lang: translate("training.compare.row", lang, task="", differs="", loss="L", accuracy="", time="",
                              state="").split("L")[0].rsplit("· ", 1)[1] for lang in ("en", "zh")}
    texts_ = [str(m.value) for m in at.markdown if any(f"· {word}" in str(m.value) for word in marker.values())]
    assert len(texts_) == len(ticks), (ticks, texts_)
    return dict(zip(ticks, texts_))


def finish_run(at: AppTest, steps: int, lang: str = "en") -> AppTest:
    """Press Start and rerun until the run reached its step cap."""
    clean(at.button(key="training.start").click().run())
    done = translate("training.run.finished_step_cap", lang, step=steps)
    return rerun_until(at, lambda a: done in texts(a.success))


# ------------------------------------------------------------------ the variant switches


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_variant_switches_explain_themselves_and_update_the_parameter_count(app, lang):
    at = open_training(app, lang)
    default = parameter_count("copy", "tiny")
    assert params_caption(lang, default) in texts(at.caption)
    assert translate("training.variant.norm_first.post_explain", lang) in texts(at.caption)
    for radio, value, field in (("training.ffn_kind", "swiglu", "ffn_kind"), ("training.norm_kind", "rms", "norm_kind"),
                                ("training.norm_first", True, "norm_first")):
        clean(at.radio(key=radio).set_value(value).run())
    expected = parameter_count("copy", "tiny", ffn_kind="swiglu", norm_kind="rms", norm_first=True)
    assert expected != default
    assert params_caption(lang, expected) in texts(at.caption)
    assert params_caption(lang, default) not in texts(at.caption)
    assert not any(f"{expected:,}" in option for option in at.radio(key="training.preset").options)  # (stable labels)
    assert translate("training.variant.ffn_kind.swiglu_explain", lang) in texts(at.caption)
    assert translate("training.variant.norm_first.pre_explain", lang) in texts(at.caption)
    assert (query(at, "training_ffn"), query(at, "training_norm"), query(at, "training_prenorm")) == ("swiglu", "rms", "true")
    assert at.radio(key="training.ffn_kind").label == translate("training.variant.ffn_kind.label", lang)


def test_the_variants_come_from_the_link_and_reach_the_run(app):
    at = open_training(app, training_pos="rope", training_prenorm="true", training_steps="3")
    assert at.radio(key="training.position_kind").value == "rope"
    assert at.radio(key="training.norm_first").value is True
    assert translate("training.variant.position_kind.rope_explain", "en") in texts(at.caption)
    at = finish_run(at, 3)
    config = at.session_state[ts._STATE_KEY].run.config
    assert (config.position_kind, config.norm_first, config.ffn_kind) == ("rope", True, "relu")
    assert any("pre-norm" in m.value and "RoPE" in m.value for m in at.markdown)  # "This run: ..." names them


def test_a_bad_variant_in_the_link_falls_back_with_a_notice(app):
    at = open_training(app, training_ffn="gelu")
    assert at.radio(key="training.ffn_kind").value == "relu"
    assert any("not valid here" in toast for toast in texts(at.toast))


# ------------------------------------------------------------------ the compare list and the overlay


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_two_runs_are_listed_with_what_differs_and_overlaid_then_removed(app, lang):
    at = finish_run(open_training(app, lang, training_steps="6"), 6, lang)
    assert overlay(at) == {}  # one run: nothing to overlay yet
    assert translate("training.compare.tick_two", lang) in texts(at.caption)
    clean(at.radio(key="training.norm_first").set_value(True).run())
    at = finish_run(at, 6, lang)
    listed = rows(at)
    assert list(listed) == ["copy-tiny-1", "copy-tiny-2"]
    post = translate("training.compare.setting.norm_first.off", lang)
    pre = translate("training.compare.setting.norm_first.on", lang)
    assert post in listed["copy-tiny-1"] and pre in listed["copy-tiny-2"]
    warmup = translate("training.compare.setting.warmup", lang, value=200)
    assert all(warmup not in text for text in listed.values())  # only what differs is named
    charts = overlay(at)
    assert set(charts) == {"loss", "acc", "rate"}
    for spec in charts.values():
        assert series(spec) == [translate("training.compare.label", lang, name="copy-tiny-1", differs=post),
                                translate("training.compare.label", lang, name="copy-tiny-2", differs=pre)]
        assert spec["encoding"]["color"]["scale"]["range"] == list(training_charts.OVERLAY_COLORS[:2])
    loss = next(e for e in at.get("vega_lite_chart") if json.loads(e.proto.spec) == charts["loss"])
    assert loss.proto.datasets  # the two runs' curves travel with the chart

    clean(at.checkbox(key="training.compare_show_1").uncheck().run())
    assert overlay(at) == {}
    clean(at.checkbox(key="training.compare_show_1").check().run())
    assert len(series(overlay(at)["loss"])) == 2
    clean(at.button(key="training.compare_remove_1").click().run())
    assert list(rows(at)) == ["copy-tiny-2"] and overlay(at) == {}


def test_the_list_is_bounded_and_says_which_run_it_dropped(app, monkeypatch):
    monkeypatch.setattr(ts, "MAX_COMPARED", 2)
    at = open_training(app, training_steps="2")
    for _ in range(3):
        at = finish_run(at, 2)
    assert list(rows(at)) == ["copy-tiny-2", "copy-tiny-3"]
    assert translate("training.compare.dropped", "en", names="copy-tiny-1", limit=2) in texts(at.caption)


def test_a_live_run_is_in_the_overlay_and_cannot_be_removed(app):
    at = finish_run(open_training(app, training_steps="4"), 4)
    clean(at.number_input(key="training.steps").set_value(20000).run())
    clean(at.button(key="training.start").click().run())
    at = rerun_until(at, lambda a: len(rows(a)) == 2 and "copy-tiny-2" in rows(a))
    running = translate("training.compare.state.running", "en", step="STEP").split("STEP")[0]
    assert running in rows(at)["copy-tiny-2"] and running not in rows(at)["copy-tiny-1"]
    assert at.button(key="training.compare_remove_2").disabled is True
    assert at.button(key="training.compare_remove_1").disabled is False
    assert len(series(overlay(at)["loss"])) == 2
    clean(at.button(key="training.stop").click().run())


# ------------------------------------------------------------------ the suggested experiments


def quick(monkeypatch, key: str, steps: int) -> experiments.Experiment:
    """Make experiment ``key`` a few steps long (its settings otherwise unchanged)."""
    short = dataclasses.replace(experiments.BY_KEY[key], shared={**experiments.BY_KEY[key].shared, "max_steps": steps})
    monkeypatch.setitem(experiments.BY_KEY, key, short)
    return short


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_experiment_sets_the_settings_and_trains_its_runs_one_after_another(app, monkeypatch, lang):
    quick(monkeypatch, "norm", 8)
    at = open_training(app, lang, training_task="reverse", training_warmup="300")
    clean(at.button(key=experiments.button_key("norm")).click().run())
    assert at.radio(key="training.task").value == "copy" and at.slider(key="training.warmup").value == 1
    assert at.radio(key="training.preset").value == experiments.BY_KEY["norm"].shared["preset"]
    assert query(at, "training_warmup") == "1"
    assert translate("training.experiment.norm.look", lang) in texts(at.info)
    most_at_once = []

    def both_done(a: AppTest) -> bool:
        most_at_once.append(ts.alive_training_threads())
        listed = rows(a)
        return len(listed) == 2 and all(translate("training.compare.state.done", lang, step=8) in text
                                        for text in listed.values())

    at = rerun_until(at, both_done)
    assert max(most_at_once) == 1  # one run at a time
    names = list(rows(at))
    preset = experiments.BY_KEY["norm"].shared["preset"]
    assert names == [f"copy-{preset}-1", f"copy-{preset}-2"]
    post = translate("training.compare.setting.norm_first.off", lang)
    pre = translate("training.compare.setting.norm_first.on", lang)
    assert series(overlay(at)["loss"]) == [translate("training.compare.label", lang, name=names[0], differs=post),
                                           translate("training.compare.label", lang, name=names[1], differs=pre)]
    first, second = [run.snapshot for run in at.session_state[ts._STATE_KEY].compared()]
    assert first.config["warmup"] == second.config["warmup"] == 1 and first.config["seed"] == second.config["seed"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_translation_smoothing_experiment_reads_perplexity_exact_match_and_bleu_side_by_side(app, monkeypatch, lang):
    """#31: label smoothing on a translation task, read by held-out perplexity beside exact match and BLEU."""
    quick(monkeypatch, "smoothing_mt", 20)
    at = open_training(app, lang)
    clean(at.button(key=experiments.button_key("smoothing_mt")).click().run())
    assert at.radio(key="training.task").value == "en-zh"
    at = rerun_until(at, lambda a: len(rows(a)) == 2 and all(
        translate("training.compare.state.done", lang, step=20) in text for text in rows(a).values()))
    table = next(frame.value for frame in at.dataframe
                 if translate("training.compare.scores.perplexity", lang) in frame.value.columns)
    snaps = [run.snapshot for run in at.session_state[ts._STATE_KEY].compared()]
    assert len(table) == 2 and [s.config["label_smoothing"] for s in snaps] == [0.1, 0.0]
    perplexity = table[translate("training.compare.scores.perplexity", lang)].tolist()
    assert perplexity == [f"{s.held_out[-1].perplexity:.3f}" for s in snaps]
    assert table[translate("training.compare.scores.bleu", lang)].tolist() == [f"{s.held_out[-1].bleu:.1f}" for s in snaps]
    assert all(s.held_out[-1].step == s.evals[-1][0] == 20 for s in snaps)
    assert table[translate("training.compare.scores.params", lang)].tolist() == [f"{s.num_params:,}" for s in snaps]


def test_stop_ends_the_experiment_and_its_queue(app, monkeypatch):
    quick(monkeypatch, "position", 20000)
    at = open_training(app)
    clean(at.button(key=experiments.button_key("position")).click().run())
    queued = translate("training.experiment.queued", "en", n=2)
    at = rerun_until(at, lambda a: queued in texts(a.caption))
    clean(at.button(key="training.stop").click().run())
    assert wait_until(lambda: ts.alive_training_threads() == 0, 10)
    time.sleep(0.5)  # longer than the queue's poll: no next run starts
    clean(at.run())
    assert ts.alive_training_threads() == 0 and at.session_state[ts._STATE_KEY].queued_runs == 0
    assert list(rows(at)) == ["reverse-tiny-1"]


def test_every_experiment_is_valid_and_changes_one_setting():
    """One setting apart, or (the heads experiment) the shape of attention: how many heads and how wide each is."""
    for experiment in experiments.EXPERIMENTS:
        runs = experiment.settings()
        assert len(runs) >= 2 and all(settings.problem() is None for settings in runs)
        configs = [dataclasses.asdict(settings) for settings in runs]
        differing = set(compare.differing_fields(configs))
        assert len(differing) == 1 or differing == {"heads", "head_dim"}, experiment.key
        assert len({settings.seed for settings in runs}) == 1 and len({settings.task for settings in runs}) == 1


# ------------------------------------------------------------------ the session's list and queue on their own


@pytest.fixture
def session():
    made = ts.TrainingSession(slots=RunSlots(4), device="cpu")
    yield made
    made.close()
    assert wait_until(lambda: ts.alive_training_threads() == 0, 10)


def short_config(**changes):
    return long_config(**{"max_steps": 3, **changes})


def test_the_session_lists_runs_without_their_models_and_bounds_the_list(session):
    for seed in range(ts.MAX_COMPARED + 2):
        session.start(short_config(seed=seed))
        assert wait_until(lambda: not session.live)
    listed = session.compared()
    assert [run.number for run in listed] == list(range(3, ts.MAX_COMPARED + 3))
    assert session.dropped == ("copy-tiny-2",)  # dropped when the last run started (run 1 the time before)
    assert all(run.snapshot.probes == [] and run.snapshot.step == 3 and run.shown for run in listed)
    assert all(not hasattr(run, "model") for run in listed)
    assert session.previous is listed[-2].snapshot
    assert session.remove(3) and [run.number for run in session.compared()][0] == 4
    session.show(4, False)
    assert not session.compared()[0].shown


def test_a_run_stopped_in_the_queue_is_not_listed(session):
    slots = RunSlots(1)
    blocker = ts.TrainingSession(slots=slots, device="cpu")
    waiting = ts.TrainingSession(slots=slots, device="cpu")
    try:
        blocker.start(long_config())
        waiting.start(long_config())
        assert wait_until(lambda: waiting.snapshot().queue_position == 1)
        waiting.stop()
        assert waiting.compared() == []
    finally:
        blocker.close()
        waiting.close()


def test_the_queue_trains_one_run_at_a_time_and_close_cancels_it(session):
    configs = [short_config(max_steps=5, seed=0), short_config(max_steps=5, seed=1), short_config(max_steps=5, seed=2)]
    session.start_queue(configs, "norm")
    seen = []
    assert wait_until(lambda: seen.append(ts.alive_training_threads()) or (
        len(session.compared()) == 3 and not session.live), 60)
    assert max(seen) == 1
    listed = session.compared()
    assert [run.config["seed"] for run in listed] == [0, 1, 2]
    assert all(run.snapshot.reason == "step cap reached" for run in listed)
    assert session.experiment == "norm"

    session.start_queue([long_config(seed=5), long_config(seed=6)], "norm")
    assert wait_until(lambda: session.snapshot().step >= 1)
    session.close()
    assert wait_until(lambda: ts.alive_training_threads() == 0, 5)
    time.sleep(3 * ts.QUEUE_POLL_S)
    assert ts.alive_training_threads() == 0 and session.queued_runs == 0
    assert session.snapshot().config["seed"] == 5  # the second run never started


def test_a_snapshot_taken_just_before_the_queue_starts_the_next_run_is_not_the_next_runs(session):
    """The race CI met under load: the page took the finished first run's snapshot, the experiment's
    queue started the second run, then the page drew the compare list with that snapshot. The second
    run's entry must not freeze with the first run's curves and settings."""
    session.start(short_config(seed=1, norm_first=False))
    assert wait_until(lambda: not session.live)
    first = session.snapshot()
    assert first.state == "finished"
    session.start(short_config(seed=2, norm_first=True))  # as the queue's thread would, between the two calls
    listed = session.compared(first)
    assert [run.config["seed"] for run in listed] in ([1], [1, 2])  # the second is listed once it has a step
    assert wait_until(lambda: not session.live)
    listed = session.compared(session.snapshot())
    assert [(run.config["seed"], run.config["norm_first"]) for run in listed] == [(1, False), (2, True)]
    assert listed[1].snapshot.step == 3


def test_reset_forgets_the_list_and_a_manual_start_ends_the_experiment(session):
    session.start_queue([long_config(seed=1), short_config(seed=2)], "smoothing")
    assert wait_until(lambda: session.snapshot().step >= 1)
    session.start(short_config(seed=9))  # a run of the visitor's own ends the experiment
    assert session.queued_runs == 0 and session.experiment is None
    assert wait_until(lambda: not session.live)
    assert [run.config["seed"] for run in session.compared()] == [1, 9]
    session.reset()
    assert session.compared() == [] and session.previous is None and session.snapshot() is None


def test_a_translation_task_trains_on_the_page_and_its_english_example_keeps_its_spaces(app):
    at = open_training(app, training_task="en-zh", training_steps="2")
    at = finish_run(at, 2)
    example = "the cat ate two apples in the garden yesterday"
    assert any(example in m.value.replace("\\", "") for m in at.markdown), [m.value for m in at.markdown]
    assert translate("training.probe.expect_en-zh", "en") in texts(at.caption)

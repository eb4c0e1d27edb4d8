"""The training page under AppTest: settings and URL, start / pause / stop, page switches, the
cheating experiment, results, the queue, and bad settings refused with the engine's sentence.

AppTest gives every simulated session the same id, so session-scoped caches (where the page
keeps its run) would leak from one test into the next: each test starts and ends by releasing
that session's cache, which is also what stops a run when a browser goes away.
"""
from __future__ import annotations

import dataclasses
import json
import re
import time

import pytest
from streamlit.runtime.caching import cache_resource_api
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import Block

from tests.app.apptest_helpers import clean, open_script, query, texts
from model import training as engine
from model.training import TrainingRun
from ui.i18n import LANGS, translate
from ui.training import charts as training_charts
from ui.training import settings as trs
from ui.training import session as ts
from ui.training import status as training_status
from ui.url_state import markdown_literal

APPTEST_SESSION_ID = "test session id"
LONG = "20000"  # a step cap no test reaches: the run is stopped by the test


def wait_until(predicate, timeout=60.0, pause=0.1) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(pause)
    return False


@pytest.fixture(autouse=True)
def no_run_left_behind():
    cache_resource_api.clear_session_cache(APPTEST_SESSION_ID)
    yield
    cache_resource_api.clear_session_cache(APPTEST_SESSION_ID)  # on_release stops the run
    assert wait_until(lambda: ts.alive_training_threads() == 0, 10), "a training thread outlived its session"


def open_training(app, **query: str) -> AppTest:
    return open_script(app, "app_pages/training.py", {"lang": "en", **query}, home_first=True)


def step_of(at: AppTest) -> int:
    """The run's step, from the first metric ("Step (of 20,000)": "123")."""
    return int(at.metric[0].value.replace(",", ""))


def charts(at: AppTest) -> list:
    return at.get("vega_lite_chart")


def rerun_until(at: AppTest, predicate, timeout=90.0) -> AppTest:
    """Rerun (as the page's once-a-second refresh would) until ``predicate(at)`` holds."""
    end = time.monotonic() + timeout
    while True:
        clean(at.run())
        if predicate(at):
            return at
        if time.monotonic() > end:
            raise AssertionError("the page never reached the expected state")
        time.sleep(0.3)


def start(at: AppTest) -> AppTest:
    clean(at.button(key="training.start").click().run())
    label = translate("training.metric.step", "en", total=f"{int(at.number_input(key='training.steps').value):,}")
    return rerun_until(at, lambda a: len(a.metric) > 0 and a.metric[0].label == label and step_of(a) >= 1)


# ------------------------------------------------------------------ before starting


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_page_explains_and_plans_the_schedule_in_both_languages(app, lang):
    at = open_training(app, lang=lang)
    assert at.title[0].value == translate("training.title", lang)
    assert r"\min" in at.latex[0].value  # the Noam formula; the worked peak is the caption under the slider
    assert at.slider(key="training.warmup").label == translate("training.settings.warmup", lang)
    assert any(r"\mathrm{lr}_{\max}" in c for c in texts(at.caption))
    assert translate("training.schedule.peak_caption", lang) in texts(at.caption)
    assert len(charts(at)) == 1  # the planned curve
    sizes = at.radio(key="training.preset").options
    assert len(sizes) == len(engine.MODEL_PRESETS)
    assert any("26,129" in caption for caption in texts(at.caption))  # the tiny model's parameters
    assert at.button(key="training.start").disabled is False
    assert translate("training.run.none", lang) in texts(at.info)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_translation_task_says_how_fast_it_trains_on_one_core(app, lang):
    caption = translate("training.settings.translation_time", lang)
    assert caption in texts(open_training(app, lang=lang, training_task="zh-en").caption)
    assert caption not in texts(open_training(app, lang=lang, training_task="copy").caption)


def test_a_link_shared_with_the_old_tr_names_opens_the_same_settings(app):
    """Links shared before the page's values were named ``training_*`` keep their settings."""
    at = open_training(app, tr_task="reverse", tr_size="small", tr_warmup="50", tr_ahead="false", tr_steps="300")
    assert at.radio(key="training.task").value == "reverse"
    assert at.radio(key="training.preset").value == "small"
    assert at.slider(key="training.warmup").value == 50
    assert at.toggle(key="training.ahead").value is False
    assert at.number_input(key="training.steps").value == 300
    clean(at.slider(key="training.warmup").set_value(400).run())
    assert at.query_params["training_warmup"] in ("400", ["400"])
    assert not [name for name in at.query_params if name.startswith("tr_")]


def test_settings_are_mirrored_in_the_url_and_shape_the_peak(app):
    at = open_training(app, training_task="reverse", training_size="small", training_warmup="50", training_ahead="false",
                       training_steps="300")
    assert at.radio(key="training.task").value == "reverse"
    assert at.radio(key="training.preset").value == "small"
    assert at.slider(key="training.warmup").value == 50
    assert at.toggle(key="training.ahead").value is False
    peak = 64 ** -0.5 * 50 ** -0.5

    def worked(a: AppTest) -> str:
        found = [c for c in texts(a.caption) if r"\mathrm{lr}_{\max}" in c]
        assert len(found) == 1, texts(a.caption)
        return found[0]

    assert f"{peak:.3g}" in worked(at) and "50^{-0.5}" in worked(at)
    assert worked(at) == translate("training.schedule.peak_worked", "en", worked=training_charts.worked_peak(64, 50, 1.0))
    clean(at.slider(key="training.warmup").set_value(400).run())
    assert at.query_params["training_warmup"] in ("400", ["400"])
    assert "400^{-0.5}" in worked(at)
    assert at.slider(key="training.warmup").label == translate("training.settings.warmup", "en")  # no status in it
    expected = translate("training.schedule.peak_after_cap", "en", warmup=400, steps=300)
    assert expected in texts(at.warning)


def test_bad_settings_in_the_link_are_refused_with_a_message(app):
    at = open_training(app, training_warmup="0", training_batch="100000")
    toasts = texts(at.toast)
    assert len(toasts) == 2 and all("not valid here" in t for t in toasts)
    assert at.slider(key="training.warmup").value == trs.Settings().warmup
    assert at.number_input(key="training.batch").value == trs.Settings().batch_size
    assert at.button(key="training.start").disabled is False


def test_a_setting_the_engine_refuses_blocks_start_with_a_sentence(app, monkeypatch):
    at = open_training(app)
    monkeypatch.setattr(engine, "MAX_STEPS", 10)  # the engine now refuses the page's default step cap
    clean(at.run())
    sentence = translate("training.invalid.max_steps", "en", limit=10)
    assert sentence in texts(at.error)
    assert at.button(key="training.start").disabled is True
    assert at.button(key="training.cheat").disabled is True


# ------------------------------------------------------------------ while training


def test_start_then_the_run_advances_pauses_resumes_and_stops(app):
    at = start(open_training(app, training_steps=LONG))
    assert at.button(key="training.start").disabled is True
    first = step_of(at)
    at = rerun_until(at, lambda a: step_of(a) > first)
    assert len(charts(at)) >= 5  # planned curve, loss, learning rate, accuracy, speed (+ attention heads)
    clean(at.button(key="training.pause").click().run())
    assert translate("training.run.paused", "en") in texts(at.info)
    # the pause is the run's state at once (#35 item 22): Resume is drawn by the Pause click's own rerun,
    # not after the training loop's next poll or the live panel's next tick
    assert [b.key for b in at.button if b.key in ("training.pause", "training.resume")] == ["training.resume"]

    def says_paused(a: AppTest) -> bool:  # (a step in flight when pausing may still land: rerun until it has)
        line = translate("common.training.paused", "en", model="copy-tiny-1", step=step_of(a), total="20,000",
                         loss="")
        return any(c.startswith(line) for c in texts(a.sidebar.caption))

    at = rerun_until(at, says_paused, timeout=10)
    clean(at.button(key="training.resume").click().run())
    held = step_of(at)
    at = rerun_until(at, lambda a: step_of(a) > held)
    clean(at.button(key="training.stop").click().run())
    stopped = step_of(at)
    assert translate("training.run.finished_stopped", "en", step=stopped) in texts(at.success)
    prefix = translate("common.training.stopped", "en", model="copy-tiny-1", step=stopped, total="20,000", loss="")
    assert any(c.startswith(prefix) for c in texts(at.sidebar.caption)), texts(at.sidebar.caption)
    assert ts.alive_training_threads() == 0
    assert at.button(key="training.start").disabled is False


def test_sidebar_and_panel_show_one_step_written_the_same_way(app, monkeypatch):
    """On the training page the sidebar's status and the panel read one snapshot and write its step
    alike ("2,415" in both); a run past step 1,000 is simulated by shifting the engine's step."""
    shift = 2400
    real_status, real_snapshot = TrainingRun.status, TrainingRun.snapshot
    monkeypatch.setattr(TrainingRun, "status", lambda self: dataclasses.replace(real_status(self),
                                                                                step=real_status(self).step + shift))
    monkeypatch.setattr(TrainingRun, "snapshot", lambda self: dataclasses.replace(real_snapshot(self),
                                                                                  step=real_snapshot(self).step + shift))
    real_metrics = TrainingRun.metrics_since  # what the page's live panel reads

    def shifted_metrics(self, *args):
        metrics = real_metrics(self, *args)
        return dataclasses.replace(metrics, step=metrics.step + shift)

    monkeypatch.setattr(TrainingRun, "metrics_since", shifted_metrics)
    at = start(open_training(app, training_steps=LONG))
    clean(at.button(key="training.pause").click().run())

    def sidebar_step(a: AppTest) -> str | None:
        found = [re.search(r"paused at step ([\d,]+) of ([\d,]+)", c) for c in texts(a.sidebar.caption)]
        return next((m.group(1) for m in found if m), None)

    at = rerun_until(at, lambda a: sidebar_step(a) is not None, timeout=10)
    assert sidebar_step(at) == at.metric[0].value  # the same step, both with the thousands separator
    assert "," in sidebar_step(at) and step_of(at) > shift
    assert "of 20,000" in " ".join(texts(at.sidebar.caption))
    assert at.metric[0].label == translate("training.metric.step", "en", total="20,000")
    clean(at.button(key="training.stop").click().run())


def test_the_run_keeps_going_on_another_page_and_the_sidebar_shows_it(app):
    at = start(open_training(app, training_steps=LONG))
    before = step_of(at)
    clean(at.switch_page("app_pages/attention.py").run())
    status = [c for c in texts(at.sidebar.caption) if c.startswith("Training copy-tiny-1: step")]
    assert status, texts(at.sidebar.caption)
    assert ts.alive_training_threads() == 1
    time.sleep(1.0)
    clean(at.switch_page("app_pages/training.py").run())
    assert step_of(at) > before  # the same run, further on
    assert at.slider(key="training.warmup").value == trs.Settings().warmup  # settings kept
    assert at.button(key="training.stop").disabled is False


def test_the_cheating_experiment_turns_the_mask_off_and_says_why(app):
    at = open_training(app, training_steps=LONG)
    clean(at.button(key="training.cheat").click().run())
    assert at.toggle(key="training.ahead").value is False
    assert at.query_params["training_ahead"] in ("false", ["false"])
    explanation = translate("training.cheat.explain", "en")
    assert explanation in texts(at.warning)


def test_the_cheating_experiment_leads_with_exact_match_accuracy(app):
    """After a normal run, the cheating run's message opens with the two exact-match accuracies
    (where the runs differ), before it mentions the loss."""
    at = open_training(app, training_steps="40")
    clean(at.button(key="training.start").click().run())
    done = translate("training.run.finished_step_cap", "en", step=40)
    at = rerun_until(at, lambda a: done in texts(a.success))
    clean(at.button(key="training.cheat").click().run())
    at = rerun_until(at, lambda a: done in texts(a.success) and at.toggle(key="training.ahead").value is False)
    message = next(w for w in texts(at.warning) if "look-ahead mask" in w)
    lead = re.match(r"\*\*Exact match: (\d+)% for this run without the look-ahead mask, "
                    r"against (\d+)% for the run before with it\.\*\*", message)
    assert lead, message
    assert f"{lead.group(1)}%" == at.metric[2].value  # the cheating run's own accuracy, as the metric shows it
    assert message.index("%") < message.index("loss")


def test_model_sizes_are_translated_in_chinese(app):
    at = open_training(app, lang="zh")
    sizes = at.radio(key="training.preset").options
    assert any(option.startswith("微型") for option in sizes) and any(option.startswith("小型") for option in sizes)
    assert not any("tiny" in option or "small" in option for option in sizes)
    english = open_training(app, lang="en").radio(key="training.preset").options
    assert [option.split(" (")[0] for option in english] == list(engine.MODEL_PRESETS)  # the English labels stay


def upload_place(at: AppTest) -> int:
    """Where the upload panel sits among the page's elements (its index in the main column)."""
    heading = translate("training.upload.heading", "en")
    places = [i for i, child in at.main.children.items()
              if isinstance(child, Block) and any(getattr(e, "label", None) == heading
                                                  for e in [child, *child.expander])]
    assert len(places) == 1, places
    return places[0]


def test_a_finished_run_offers_samples_use_and_download(app):
    at = open_training(app, training_steps="8")
    before = upload_place(at)
    clean(at.button(key="training.start").click().run())
    done = translate("training.run.finished_step_cap", "en", step=8)
    at = rerun_until(at, lambda a: done in texts(a.success))
    # A finished run draws more above the upload panel, yet it keeps its place: the browser keeps it (open, a file
    # being uploaded) instead of drawing a new one.
    assert upload_place(at) == before
    assert len(at.dataframe) == 1 and len(at.dataframe[0].value) == ts.SAMPLE_COUNT
    assert at.get("download_button")
    assert len(at.select_slider(key="training.probe_step").options) >= 2  # look back at snapshots
    clean(at.button(key="training.use").click().run())
    assert at.session_state["model"] == "copy-tiny-1"
    assert translate("training.use.done", "en", name="copy\\-tiny\\-1") in texts(at.success)
    assert upload_place(at) == before  # a message shown once above it does not move it either
    # (AppTest cannot rerun once a session-only model is selected: it formats the sidebar's choice
    # outside the session; the browser test walks to another page with it.)


def aligned(chart) -> bool:
    """Whether a Vega-Lite chart draws the probe's alignment (its ``align`` dataset)."""
    return json.loads(chart.proto.spec).get("layer", [{}])[0].get("data", {}).get("name") == "align"


@pytest.mark.parametrize("lang", LANGS)
def test_a_translation_run_plots_its_best_heads_alignment_over_the_steps(app, lang):
    """#31 (alignment): on Training, attention learning to align, live: the probe's best head against the grammar's
    gold alignment at every snapshot, with chance as a rule."""
    at = open_training(app, lang=lang, training_task="en-zh", training_steps="10")
    clean(at.button(key="training.start").click().run())
    done = translate("training.run.finished_step_cap", lang, step=10)
    at = rerun_until(at, lambda a: done in texts(a.success))
    snap = at.session_state[ts._STATE_KEY].snapshot()
    found = training_charts.probe_alignment("en-zh", training_charts.probe_source_text("en-zh", snap.probe_src_tokens),
                                            snap.probes)
    assert found is not None and found.steps == [p.step for p in snap.probes] and 0 < found.chance < 1
    spec = next(json.loads(c.proto.spec) for c in charts(at) if aligned(c))
    assert translate("training.probe.align_series", lang) in json.dumps(spec, ensure_ascii=False)
    caption = next(c for c in texts(at.caption) if f"{found.best[-1]:.0%}" in c and f"{found.chance:.0%}" in c)
    assert caption and not at.exception


def test_a_task_without_a_gold_alignment_draws_no_alignment_chart(app):
    at = open_training(app, training_task="dates", training_steps="5")
    clean(at.button(key="training.start").click().run())
    at = rerun_until(at, lambda a: translate("training.run.finished_step_cap", "en", step=5) in texts(a.success))
    assert not any(aligned(c) for c in charts(at)) and not at.exception


def test_a_run_waits_in_the_queue_when_the_slots_are_full(app, monkeypatch):
    monkeypatch.setenv(ts.ENV_MAX_RUNS, "1")
    ts.shared_slots.clear()
    current = {"id": "browser-A"}  # two browsers need two session ids (AppTest gives all the same)
    monkeypatch.setattr(cache_resource_api, "get_session_id_or_throw", lambda: current["id"])
    try:
        first = start(open_training(app, training_steps=LONG))
        current["id"] = "browser-B"
        second = open_training(app, training_steps=LONG)
        clean(second.button(key="training.start").click().run())
        queued = translate("training.run.queued", "en", position=1, capacity=1, waiting=1)
        second = rerun_until(second, lambda a: queued in texts(a.warning), timeout=10)  # (it joins in a moment)
        in_line = translate("common.training.queued", "en", model="copy-tiny-1", position=1, waiting=1)
        assert in_line in texts(second.sidebar.caption)
        current["id"] = "browser-A"
        clean(first.button(key="training.stop").click().run())
        current["id"] = "browser-B"
        second = rerun_until(second, lambda a: step_of(a) >= 1)
        assert queued not in texts(second.warning)
    finally:
        for sid in ("browser-A", "browser-B"):
            cache_resource_api.clear_session_cache(sid)
        ts.shared_slots.clear()


# ------------------------------------------------------------------ a run that fails


def test_a_failing_run_says_why_offers_no_model_and_the_app_keeps_serving(app, monkeypatch):
    message = "injected failure: weights *exploded* at <b>step</b> #3"
    real_step = TrainingRun.train_step
    failures = []

    def failing_step(self):  # the first run of this test fails after 3 steps; later runs train normally
        if not failures or failures[0] is self:
            if self.status().step >= 3:
                failures[:] = [self]
                raise RuntimeError(message)
        return real_step(self)

    monkeypatch.setattr(TrainingRun, "train_step", failing_step)
    at = open_training(app, training_steps=LONG)
    clean(at.button(key="training.start").click().run())
    reason = f"RuntimeError: {message}"
    on_page = translate("training.run.failed", "en", step=3,
                        reason=markdown_literal(reason, training_status.FAILURE_REASON_LIMIT))
    at = rerun_until(at, lambda a: on_page in texts(a.main.error))
    assert "*exploded*" not in on_page and r"\*exploded\*" in on_page  # the reason is shown literally
    assert wait_until(lambda: ts.alive_training_threads() == 0, 10)
    assert translate("training.run.failed_hint", "en") in texts(at.main.caption)
    assert step_of(at) == 3 and len(charts(at)) >= 5  # the curves up to the failure stay
    # the failed run's model is offered neither for use nor for download
    downloads = [d for d in at.get("download_button") if not d.key.startswith("training.exercise_")]  # not an exercise's
    assert not downloads and not at.dataframe
    assert "training.use" not in [b.key for b in at.button]
    assert at.button(key="training.start").disabled is False and at.button(key="training.stop").disabled is True
    in_sidebar = translate("common.training.failed", "en", model="copy-tiny-1", step=3,
                           reason=markdown_literal(reason, training_status.REASON_LIMIT))
    assert in_sidebar in texts(at.sidebar.error)

    clean(at.switch_page("app_pages/home.py").run())  # the app keeps serving, the sidebar remembers
    assert at.title[0].value == translate("common.app_title", "en")
    assert in_sidebar in texts(at.sidebar.error)

    at = start(clean(at.switch_page("app_pages/training.py").run()))  # and a new run trains
    assert not at.main.error
    assert at.button(key="training.stop").disabled is False
    clean(at.button(key="training.stop").click().run())


def test_the_compare_slider_adds_a_second_curve_from_the_link_and_when_moved(app):
    def series(at: AppTest) -> set[str]:
        spec = charts(at)[0].proto.spec
        return {w for w in (100, 250, 400, 800) if translate("training.schedule.series", "en", warmup=w) in spec}

    at = open_training(app, training_warmup="100", training_cmp="250")  # the chart reads the link's value on first draw
    assert at.slider(key="training.compare").value == 250
    assert series(at) == {100, 250}
    clean(at.slider(key="training.compare").set_value(400).run())
    assert at.query_params["training_cmp"] in ("400", ["400"]) and series(at) == {100, 400}
    clean(at.slider(key="training.compare").set_value(100).run())  # the same warmup: one curve
    assert series(at) == {100}
    clean(at.slider(key="training.warmup").set_value(800).run())
    assert series(at) == {800, 100}


@pytest.mark.parametrize("lang", LANGS)
def test_the_heads_setting_splits_attention_differently_with_the_same_parameter_count(app, lang):
    """#31 (heads or parameters?): a heads setting that keeps d_model, so d_k = d_model / heads and the count stays."""
    from model.training import parameter_count

    def params_caption(at: AppTest) -> str:
        return next(c for c in texts(at.caption) if f"{parameter_count('copy', 'tiny'):,}" in c)

    at = open_training(app, lang=lang)
    assert at.radio(key="training.heads").value == "preset"
    assert translate("training.settings.heads_preset", lang, n=2) in at.radio(key="training.heads").options
    before = params_caption(at)
    at = open_training(app, lang=lang, training_heads="8")
    assert at.radio(key="training.heads").value == "8" and params_caption(at) == before  # the same count
    assert parameter_count("copy", "tiny", heads="8") == parameter_count("copy", "tiny", heads="1")
    clean(at.radio(key="training.heads").set_value("1").run())
    assert query(at, "training_heads") == "1" and not at.exception
    at = open_training(app, lang=lang, training_heads="3")  # not a choice: the default, with a notice
    assert at.radio(key="training.heads").value == "preset" and not at.exception


@pytest.mark.parametrize("lang", LANGS)
def test_the_head_width_setting_widens_attention_and_the_count_and_card_follow(app, lang):
    """#31's third run: 1 head with h× the width (d_k set apart from d_model / heads: more parameters)."""
    from model.training import parameter_count

    at = open_training(app, lang=lang, training_size="small")
    assert at.radio(key="training.head_dim").value == "split"
    assert translate("training.settings.head_dim_split", lang) in at.radio(key="training.head_dim").options
    split = parameter_count("copy", "small", heads="1")
    wide = parameter_count("copy", "small", heads="1", head_dim="256")
    # Three attentions per layer pair, two layers: each gains (3·64·256 + 3·256 + 256·64) − (3·64·64 + 3·64 + 64·64).
    assert wide - split == 2 * 3 * ((4 * 64 * 256 + 3 * 256) - (4 * 64 * 64 + 3 * 64))
    at = open_training(app, lang=lang, training_size="small", training_heads="1", training_head_dim="256")
    assert at.radio(key="training.head_dim").value == "256" and not at.exception
    assert any(f"{wide:,}" in c for c in texts(at.caption)), texts(at.caption)
    clean(at.radio(key="training.head_dim").set_value("split").run())
    assert query(at, "training_head_dim") in (None, "split") and any(f"{split:,}" in c for c in texts(at.caption))
    at = open_training(app, lang=lang, training_head_dim="<b>9</b>")  # not a choice: the default
    assert at.radio(key="training.head_dim").value == "split" and not at.exception


@pytest.mark.parametrize("lang", LANGS)
def test_the_papers_schedule_is_drawn_from_the_link_and_the_toggle_with_its_peak_beside_this_runs(app, lang):
    """#31: the paper's learning-rate curve (d_model 512, warmup 4000) on the planned-schedule chart."""
    label = translate("training.schedule.paper_series", lang)
    at = open_training(app, lang=lang, training_warmup="100")
    assert label not in charts(at)[0].proto.spec and at.toggle(key="training.paper_lr").value is False
    at = open_training(app, lang=lang, training_warmup="100", training_paper_lr="1")
    assert at.toggle(key="training.paper_lr").value is True
    spec = json.loads(charts(at)[0].proto.spec)
    assert label in json.dumps(spec, ensure_ascii=False)
    assert {layer["encoding"]["x"]["scale"]["type"] for layer in spec["layer"] if "x" in layer["encoding"]} == {"log"}
    (d_model,) = {int(m) for c in texts(at.caption) for m in re.findall(r"(\d+)\^\{-0.5\}\\cdot 100", c)}
    paper_peak = 512 ** -0.5 * 4000 ** -0.5
    times = f"{training_charts.peak_rate(d_model, 100, 1.0) / paper_peak:.1f}"
    caption = [c for c in texts(at.caption) if "4000^{-0.5}" in c]
    assert len(caption) == 1 and f"{times}" in caption[0] and "100,000" in caption[0], texts(at.caption)
    clean(at.toggle(key="training.paper_lr").set_value(False).run())
    assert label not in charts(at)[0].proto.spec and not any("4000^{-0.5}" in c for c in texts(at.caption))
    assert at.query_params.get("training_paper_lr") in (None, "0", ["0"], "false", ["false"])
    at = open_training(app, lang=lang, training_paper_lr="<script>")  # a hostile value reads as the default
    assert not at.exception and at.toggle(key="training.paper_lr").value is False


@pytest.mark.parametrize("lang", LANGS)
def test_a_second_curve_that_peaks_after_the_cap_says_so_and_steps_read_in_full(app, lang):
    """#35 item 16: the second curve peaked beyond the axis with nothing said, and the step axis read "0.2k"."""
    at = open_training(app, lang=lang, training_warmup="100", training_cmp="800")
    pattern = re.escape(translate("training.schedule.compare_after_cap", lang, warmup=800, steps="@S", lr="@L"))
    pattern = pattern.replace("@S", r"(?P<steps>\d+)").replace("@L", r"(?P<lr>[\d.e+-]+)")
    found = [re.fullmatch(pattern, c) for c in texts(at.caption) if re.fullmatch(pattern, c)]
    assert len(found) == 1, texts(at.caption)
    (d_model,) = {int(m) for c in texts(at.caption) for m in re.findall(r"(\d+)\^\{-0.5\}\\cdot 100", c)}
    steps, rate = found[0]["steps"], found[0]["lr"]
    assert int(steps) < 800 and float(rate) == pytest.approx(training_charts.peak_rate(d_model, 800, 1.0), rel=1e-2)
    spec = json.loads(charts(at)[0].proto.spec)
    # ",d": whole steps with separators (Vega wrote "," as 1e+2; "~s" as 0.2k)
    assert {layer["encoding"]["x"]["axis"]["format"] for layer in spec["layer"] if "x" in layer["encoding"]} == {",d"}
    clean(at.slider(key="training.compare").set_value(200).run())  # peaks inside the run: nothing to say
    assert not any(re.fullmatch(pattern, c) for c in texts(at.caption))

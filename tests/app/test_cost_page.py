"""The cost-of-attention page under AppTest, on a small random model and short lengths (no timing asserted).

Opening the page measures nothing; the button measures once per process and model size, with a progress
bar; the result stays for the next visitor; the axes switch is in the URL.
"""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from explain import cost
from tests.app.apptest_helpers import chart, clean, open_script, query, random_model_fixtures, values
from ui import models
from ui.i18n import translate

LENGTHS = (8, 16, 32)
checkpoint_dir, random_models = random_model_fixtures(("copy", 1), folder="cost_checkpoints", d_model=16,
                                                      n_heads=2, n_layers=1, d_ff=32, max_len=40)


@pytest.fixture(autouse=True)
def short_measurements(monkeypatch):
    """Three short lengths, and no measurement kept from another test."""
    monkeypatch.setattr(cost, "LENGTHS", LENGTHS)
    cost.forget_measurements()
    yield
    cost.forget_measurements()


def open_cost(app, lang: str = "en", **query_values: str) -> AppTest:
    return open_script(app, "app_pages/attention_cost.py", {"lang": lang, **query_values}, home_first=True)


def measure(at: AppTest) -> AppTest:
    return clean(at.button(key="attention_cost.measure").click().run())


def lines(figure: dict) -> list[dict]:
    return [trace for trace in figure["data"] if trace["type"] == "scatter"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_page_opens_on_the_table_and_measures_nothing(app, lang):
    at = open_cost(app, lang)
    table = at.table[0].value
    assert table.index.name == translate("attention_cost.table.col_layer", lang)
    assert list(table.columns) == [translate(f"attention_cost.table.col_{c}", lang) for c in ("complexity", "sequential", "path")]
    rows = table.to_dict("index")
    operations, sequential, path = table.columns
    self_attention = rows[translate("attention_cost.table.row_self_attention", lang)]
    recurrent = rows[translate("attention_cost.table.row_recurrent", lang)]
    convolution = rows[translate("attention_cost.table.row_convolution", lang)]
    assert (self_attention[operations], self_attention[sequential], self_attention[path]) == ("O(n²·d)", "O(1)", "O(1)")
    assert (recurrent[operations], recurrent[sequential], recurrent[path]) == ("O(n·d²)", "O(n)", "O(n)")
    assert (convolution[operations], convolution[path]) == ("O(k·n·d²)", "O(logₖ n)")
    assert at.button(key="attention_cost.measure").label == translate("attention_cost.measure.button", lang)
    assert not at.get("plotly_chart") and not at.metric
    assert cost.cached_cost(models.get_model("copy").model.config, "cpu") is None


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_button_measures_every_length_on_both_paths(app, lang):
    at = measure(open_cost(app, lang))
    figure = chart(at, "attention_cost.chart")
    drawn = lines(figure)
    time_lines = [trace for trace in drawn if trace.get("yaxis", "y") == "y" and trace["mode"] == "lines+markers"]
    assert len(time_lines) == 2
    for trace in time_lines:
        assert values(trace["x"]).tolist() == list(LENGTHS)
        assert (values(trace["y"]) > 0).all()
    memory = [trace for trace in drawn if trace.get("yaxis") == "y2"]
    assert len(memory) == 1  # on the CPU only the explicit path's maps are counted
    assert np.allclose(values(memory[0]["y"]) * 2 ** 20, [2 * 1 * 2 * n * n * 4 for n in LENGTHS])
    assert len(at.metric) == 2
    assert figure["layout"]["xaxis"]["type"] == "log"
    assert translate("attention_cost.result.memory_note_maps", lang) in [c.value for c in at.caption]


def test_the_axes_switch_is_in_the_url(app):
    at = measure(open_cost(app))
    clean(at.toggle(key="attention_cost.log").set_value(False).run())
    assert query(at, "attention_cost_log") == "false"
    assert chart(at, "attention_cost.chart")["layout"]["xaxis"]["type"] == "linear"
    assert chart(at, "attention_cost.chart")["layout"]["yaxis"]["type"] == "linear"


def test_the_result_is_kept_for_the_next_visitor_and_a_link_sets_the_axes(app):
    measure(open_cost(app))
    later = open_cost(app, cst_log="false")
    assert not later.main.button  # nothing to press: the result is already there
    assert translate("attention_cost.measure.kept", "en") in [c.value for c in later.caption]
    assert later.toggle(key="attention_cost.log").value is False
    assert chart(later, "attention_cost.chart")["layout"]["xaxis"]["type"] == "linear"


def test_a_bad_link_value_falls_back_with_a_notice(app):
    measure(open_cost(app))
    at = open_cost(app, cst_log="sideways")
    assert len(at.toast) == 1
    assert at.toggle(key="attention_cost.log").value is True


def test_a_visitor_who_presses_during_someone_elses_measurement_waits_and_is_told(app, monkeypatch):
    at = open_cost(app)
    held = threading.Event()

    def someone_else() -> None:  # holds the first place in line for a second, as a measurement would
        with cost._LINE.turn():
            held.set()
            time.sleep(1.0)

    waited = []
    real = cost.measure_once

    def heard(*args, on_wait, **kwargs):
        return real(*args, on_wait=lambda ahead: (waited.append(ahead), on_wait(ahead)), **kwargs)

    other = threading.Thread(target=someone_else)
    other.start()
    assert held.wait(10)
    monkeypatch.setattr(cost, "measure_once", heard)  # the page imports it anew on every run
    at = measure(at)
    other.join(10)
    assert waited == [1] * len(waited) and waited  # told its place while the other measured
    assert translate("attention_cost.measure.queued", "en", ahead=1) not in [i.value for i in at.info]  # not after
    assert chart(at, "attention_cost.chart")


def test_no_model_gives_a_notice_not_a_traceback(app, monkeypatch, tmp_path):
    monkeypatch.setattr(models, "CHECKPOINT_DIR", tmp_path)
    at = open_cost(app)
    assert translate("common.model.none_available", "en") in [i.value for i in at.info]
    assert not at.main.button and not at.get("plotly_chart")

"""The cost-of-attention page under AppTest, on a small random model and short lengths (no timing asserted).

Opening the page measures nothing; the button measures once per process and model size, with a progress
bar; the result stays for the next visitor; the axes switch is in the URL. Latent attention: its maps on the
sentence (k and the head in the URL, hostile values refused), and its own measurement on a second button.
"""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from explain import cost, latent
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


def measurement_charts(at: AppTest) -> list:
    """The charts of a measurement (not the latent maps)."""
    return [c for c in at.get("plotly_chart") if not c.proto.id.endswith("-attention_cost.latent_maps")]


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
    assert not measurement_charts(at) and len(at.metric) == 3  # only the latent maps' numbers
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
    assert len(at.metric) == 2 + 3  # the two slopes, and the latent maps' numbers
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
    assert [b.key for b in later.main.button] == ["attention_cost.latent_measure"]  # nothing else to press
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


# ------------------------------------------------------------------ latent attention


def latent_maps_shown(at: AppTest) -> list[np.ndarray]:
    """The four maps' values: R (k × n), W (n × k), W·R and the model's own (n × n)."""
    return [values(trace["z"]) for trace in chart(at, "attention_cost.latent_maps")["data"]]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_latent_attention_shows_its_two_maps_their_product_and_the_real_map(app, lang):
    at = open_cost(app, lang)
    assert at.slider(key="attention_cost.latents").value == latent.LATENTS_DEFAULT
    assert at.segmented_control(key="attention_cost.latent_head").value == 1
    read, write, implied, full = latent_maps_shown(at)
    k, n = read.shape
    assert k == latent.LATENTS_DEFAULT and write.shape == (n, k) and implied.shape == full.shape == (n, n)
    for matrix in (read, write, implied, full):
        assert np.allclose(matrix.sum(axis=1), 1.0, atol=1e-4)  # float32 on the way to the browser
    assert np.allclose(write @ read, implied, atol=1e-4)
    metrics = {m.label: m.value for m in at.metric}
    assert int(metrics[translate("attention_cost.latent.rank_metric", lang)]) <= k
    assert translate("attention_cost.latent.heading", lang) in [h.value for h in at.subheader]
    markdown = " ".join(m.value for m in at.markdown)
    assert translate("attention_cost.latent.mla", lang) in markdown
    assert "DeepSeek-V2" in markdown
    assert f"{latent.full_multiply_adds(1024, 16):,}" in markdown
    assert f"{latent.latent_multiply_adds(1024, k, 16):,}" in markdown
    assert at.button(key="attention_cost.latent_measure").label == translate(
        "attention_cost.latent.measure_button", lang, k=k)


def test_k_and_the_head_come_from_the_url_and_the_slider_changes_the_maps(app):
    at = open_cost(app, attention_cost_latents="2", attention_cost_latent_head="2")
    assert at.slider(key="attention_cost.latents").value == 2
    assert at.segmented_control(key="attention_cost.latent_head").value == 2
    read, write, _, _ = latent_maps_shown(at)
    assert read.shape[0] == 2 and write.shape[1] == 2
    clean(at.slider(key="attention_cost.latents").set_value(1).run())
    assert query(at, "attention_cost_latents") == "1"
    read, write, implied, _ = latent_maps_shown(at)
    assert read.shape[0] == 1 and np.allclose(write, 1.0)
    assert np.allclose(implied, implied[0], atol=1e-5)  # one latent: every token reads the same row


def test_more_latents_than_tokens_say_so(app):
    at = open_cost(app, attention_cost_latents="32", attention_cost_text="abc")
    read, _, _, _ = latent_maps_shown(at)
    assert read.shape == (3, 3)
    assert translate("attention_cost.latent.fewer", "en", k=32, n=3) in [i.value for i in at.info]


@pytest.mark.parametrize("name, bad", [("attention_cost_latents", "999"), ("attention_cost_latents", "0"),
                                       ("attention_cost_latents", "-3"), ("attention_cost_latents", "2.5"),
                                       ("attention_cost_latents", "<script>"), ("attention_cost_latent_head", "9"),
                                       ("attention_cost_latent_head", "zero")])
def test_a_hostile_latent_value_falls_back_with_a_notice(app, name, bad):
    at = open_cost(app, **{name: bad})
    assert len(at.toast) == 1
    assert at.slider(key="attention_cost.latents").value == latent.LATENTS_DEFAULT
    assert at.segmented_control(key="attention_cost.latent_head").value == 1
    assert latent_maps_shown(at)[0].shape[0] == latent.LATENTS_DEFAULT


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_latent_button_measures_full_against_latent_attention(app, lang):
    at = open_cost(app, lang, attention_cost_latents="2")
    clean(at.button(key="attention_cost.latent_measure").click().run())
    figure = chart(at, "attention_cost.latent_chart")
    time_lines = [trace for trace in lines(figure)
                  if trace.get("yaxis", "y") == "y" and trace["mode"] == "lines+markers"]
    assert len(time_lines) == 2
    for trace in time_lines:
        assert values(trace["x"]).tolist() == list(LENGTHS)
    guides = [trace for trace in lines(figure) if trace["mode"] == "lines"]
    assert len(guides) == 2  # ∝ n² and ∝ n
    memory = [values(trace["y"]) * 2 ** 20 for trace in lines(figure) if trace.get("yaxis") == "y2"]
    heads = 2
    assert np.allclose(memory[0], [4 * heads * n * n for n in LENGTHS])
    assert np.allclose(memory[1], [4 * heads * 2 * n * 2 for n in LENGTHS])
    assert latent.cached_latent_cost(models.get_model("copy").model.config, 2, "cpu") is not None
    assert cost.cached_cost(models.get_model("copy").model.config, "cpu") is None  # the other one not measured
    labels = [m.label for m in at.metric]
    assert translate("attention_cost.latent.slope_latent", lang) in labels


def test_the_restricted_row_links_to_the_masks_page(app):
    at = open_cost(app)
    assert translate("attention_cost.table.meaning_restricted", "en") in " ".join(m.value for m in at.markdown)
    links = [el for el in at.main if getattr(el, "type", "") == "page_link"]
    assert any(el.proto.label == translate("attention_cost.table.restricted_link", "en") for el in links)

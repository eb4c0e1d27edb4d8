"""The positional-encoding page under AppTest, on a small random model written for the test.

The checks read what the page shows: the plotly figures' JSON, the worked-example table, metrics
and the URL.
"""
from __future__ import annotations

import numpy as np
import pytest

from ui.url_state import markdown_literal
from streamlit.testing.v1 import AppTest

from tests.app import apptest_helpers as helpers
from tests.app.apptest_helpers import clean, open_script, query, random_model_fixtures, values
from ui import models
from ui.i18n import LANGS, translate

SEED_002 = [0.9093, -0.4161, 0.1987, 0.9801, 0.0200, 0.9998, 0.0020, 0.999998]
PAGE = "app_pages/positional_encoding.py"
checkpoint_dir, random_model = random_model_fixtures(
    ("copy", 11), folder="positional_checkpoints", d_model=16, n_heads=2, n_layers=2, d_ff=32, max_len=64)


def open_positional(app, **query: str) -> AppTest:
    """Its URL path differs from its file name, so run the default page first, then switch."""
    return open_script(app, PAGE, {"lang": "en", **query}, home_first=True)


def chart(at: AppTest, key: str) -> dict:
    return helpers.chart(at, f"positional_encoding.{key}")


def table_z(at: AppTest) -> np.ndarray:
    return values(chart(at, "frequency_chart")["data"][0]["z"])


def waves(at: AppTest) -> tuple[np.ndarray, np.ndarray]:
    """The sine and cosine of the chosen pair: the two lines beside the table in the frequency chart."""
    lines = [trace for trace in chart(at, "frequency_chart")["data"] if trace["type"] == "scatter"]
    return values(lines[0]["y"]), values(lines[1]["y"])


def metric(at: AppTest, key: str) -> float:
    label = translate(f"positional_encoding.blind.{key}", "en")
    return float(next(m.value for m in at.metric if m.label == label))


# ------------------------------------------------------------------ default view


@pytest.mark.parametrize("lang", LANGS)
def test_default_view_in_both_languages(app, lang):
    at = open_positional(app, lang=lang)
    assert at.title[0].value == translate("positional_encoding.title", lang)
    assert any(r"\sin" in lat.value for lat in at.latex)
    assert len(at.get("plotly_chart")) == 1 + 3 + 3 + 3  # frequency (table + waves), binary, similarity x2,
    # blind x3, RoPE x3
    assert table_z(at).shape == (50, 64)
    example = [h.proto.body for h in at.get("html") if "tp-code" not in h.proto.body][0]  # not a code panel
    assert translate("positional_encoding.example.col_value", lang).replace("(", "(") in example


def test_worked_example_is_computed_and_matches_seed_002(app):
    at = open_positional(app)
    example = [h.proto.body for h in at.get("html") if "tp-code" not in h.proto.body][0]  # not a code panel
    for shown in ("0.909297", "-0.416147", "0.198669", "0.980067", "0.019999", "0.999800", "0.002000", "0.999998"):
        assert shown in example
    clean(at.slider(key="positional_encoding.d_model").set_value(8).run())
    z = table_z(at)
    assert z.shape == (50, 8)
    np.testing.assert_allclose(z[2], SEED_002, atol=5e-5)  # the heatmap's cell (pos 2, d 8)


# ------------------------------------------------------------------ sliders


@pytest.mark.parametrize(("key", "value", "shape"), [
    ("d_model", 2, (50, 2)), ("d_model", 256, (50, 256)), ("positions", 2, (2, 64)), ("positions", 128, (128, 64)),
])
def test_slider_extremes(app, key, value, shape):
    at = open_positional(app)
    clean(at.slider(key=f"positional_encoding.{key}").set_value(value).run())
    assert table_z(at).shape == shape
    assert len(at.get("plotly_chart")) == 10
    similarity = values(chart(at, "similarity_chart")["data"][0]["z"])
    assert similarity.shape == (shape[0], shape[0])
    np.testing.assert_allclose(np.diag(similarity), shape[1] / 2, rtol=1e-5)
    lines = chart(at, "offset_chart")["data"]
    for line in lines[1:]:
        np.testing.assert_allclose(values(line["y"]), values(lines[0]["y"]), atol=1e-3)


def test_one_pair_only_has_no_pair_slider(app):
    at = open_positional(app, pe_d="2")
    assert not [s for s in at.slider if s.key == "positional_encoding.pair"]
    (caption,) = [c.value for c in at.caption if translate("positional_encoding.table.one_pair", "en") in c.value]
    assert "i = 0**" in caption and f"{2 * np.pi:,.1f}" in caption  # the single pair's wavelength


@pytest.mark.parametrize("base", ["10", "100000"])
def test_base_extremes_redraw_everything(app, base):
    at = open_positional(app, pe_pair="3")  # pair 0 turns at 1 radian per position whatever the base
    before = {key: chart(at, key) for key in ("similarity_chart", "rope_matrix")}
    table, (sin, _) = table_z(at), waves(at)
    clean(at.select_slider(key="positional_encoding.base").set_value(base).run())
    assert at.query_params["positional_encoding_base"] in (base, [base])
    for key, old in before.items():
        assert chart(at, key)["data"][0] != old["data"][0], key
    assert not np.allclose(table_z(at), table) and not np.allclose(waves(at)[0], sin)
    z = table_z(at)
    np.testing.assert_allclose(z[:, 2], np.sin(np.arange(50) / float(base) ** (2 / 64)), atol=1e-5)


@pytest.mark.parametrize("pair", [0, 31])
def test_pair_extremes(app, pair):
    at = open_positional(app)
    clean(at.slider(key="positional_encoding.pair").set_value(pair).run())
    shape = chart(at, "frequency_chart")["layout"]["shapes"][0]
    assert (shape["x0"], shape["x1"], shape["xref"]) == (2 * pair - 0.5, 2 * pair + 1.5, "x")  # on the table
    sin, cos = waves(at)
    np.testing.assert_allclose(sin, table_z(at)[:, 2 * pair], atol=1e-6)
    np.testing.assert_allclose(cos, table_z(at)[:, 2 * pair + 1], atol=1e-6)
    wavelength = 2 * np.pi * 10000 ** (2 * pair / 64)
    assert at.slider(key="positional_encoding.pair").label == translate("positional_encoding.table.pair", "en")
    (status,) = [m.value for m in at.markdown if m.value.startswith("Pair **i = ")]  # the pair's numbers
    assert f"{wavelength:,.1f}" in status and f"i = {pair}**" in status and f"{2 * pair + 1}" in status


def test_shrinking_d_model_keeps_the_pair_in_range(app):
    at = open_positional(app, pe_pair="31")
    clean(at.slider(key="positional_encoding.d_model").set_value(8).run())
    assert at.slider(key="positional_encoding.pair").value == 3
    assert not at.toast


def test_bad_url_values_fall_back_with_a_notice(app):
    at = open_positional(app, pe_pair="40", pe_base="7")
    assert at.slider(key="positional_encoding.pair").value == 0
    assert at.select_slider(key="positional_encoding.base").value == "10000"
    assert len(at.toast) == 2


def test_odd_d_model_from_the_url_falls_back_with_a_notice(app):
    """sin/cos come in pairs: an odd size in a hand-edited link is refused, and the slider and
    the table agree on what is shown instead."""
    at = open_positional(app, pe_d="9")
    assert at.slider(key="positional_encoding.d_model").value == 64
    assert table_z(at).shape == (50, 64)
    assert len(at.toast) == 1 and markdown_literal("positional_encoding_d") in at.toast[0].value, [x.value for x in at.toast]


# ------------------------------------------------------------------ order blindness and RoPE


def test_without_positional_encoding_shuffling_only_permutes(app):
    at = open_positional(app)
    assert at.toggle(key="positional_encoding.use_pe").value is False
    assert metric(at, "attention_diff") < 1e-5 and metric(at, "output_diff") < 1e-4
    original = values(chart(at, "blind_original")["data"][0]["z"])
    restored = values(chart(at, "blind_restored")["data"][0]["z"])
    np.testing.assert_allclose(restored, original, atol=1e-6)
    assert any(s.value == translate("positional_encoding.blind.blind", "en") for s in at.success)


def test_with_positional_encoding_the_order_shows(app):
    at = open_positional(app)
    clean(at.toggle(key="positional_encoding.use_pe").set_value(True).run())
    assert at.query_params["positional_encoding_on"] in ("true", ["true"])
    assert metric(at, "attention_diff") > 1e-3
    assert any(i.value == translate("positional_encoding.blind.sees_order", "en") for i in at.info)


def test_shuffle_button_draws_a_new_order(app):
    at = open_positional(app)
    first = chart(at, "blind_shuffled")["layout"]["xaxis"]["ticktext"]
    clean(at.button(key="positional_encoding.shuffle_button").click().run())
    assert at.query_params["positional_encoding_shuffle"] in ("1", ["1"])
    second = chart(at, "blind_shuffled")["layout"]["xaxis"]["ticktext"]
    assert sorted(first) == sorted(second) and first != second
    assert metric(at, "attention_diff") < 1e-5


def test_identical_tokens_with_encoding_on_the_box_matches_the_numbers(app):
    """'aaaa' with positional encoding on: the shuffle is the same sentence, so both differences are 0,
    the restored map is the original, and the box says exactly that."""
    at = open_positional(app, pe_on="true")
    clean(at.text_input(key="positional_encoding.sentence").input("aaaa").run())
    assert metric(at, "attention_diff") == 0.0 and metric(at, "output_diff") == 0.0
    original = values(chart(at, "blind_original")["data"][0]["z"])
    restored = values(chart(at, "blind_restored")["data"][0]["z"])
    np.testing.assert_array_equal(restored, original)
    offline = translate("exercises.panel.offline", "en")  # the exercises' own notice (no code runs in AppTest)
    assert [i.value for i in at.info if i.value != offline] == [
        translate("positional_encoding.blind.nothing_to_shuffle", "en")]


def test_a_long_paste_is_kept_cut_and_said(app):
    """A paste longer than the box's 200 characters: the box keeps the first 200 (as the URL does),
    says what it cut, and the model's own 48-character limit is reported as for typed text."""
    at = open_positional(app)
    pasted = ("the cat sat on the mat " * 20)[:250]
    clean(at.text_input(key="positional_encoding.sentence").input(pasted).run())
    assert at.text_input(key="positional_encoding.sentence").value == pasted[:200]
    assert helpers.query(at, "positional_encoding_text") == pasted[:200]
    warnings = [w.value for w in at.warning]
    assert translate("common.link_and_paste.paste_cut", "en", count=250, limit=200) in warnings
    assert translate("common.input.truncated", "en", limit=48) in warnings
    clean(at.text_input(key="positional_encoding.sentence").input("hello world").run())  # new text: the notice goes
    assert not at.warning


@pytest.mark.parametrize(("sentence", "notice"), [
    ("", "common.input.empty"), ("   ", "common.input.empty"), ("ab " * 30, "common.input.truncated"),
])
def test_bad_sentences_are_explained(app, sentence, notice):
    at = open_positional(app)
    clean(at.text_input(key="positional_encoding.sentence").input(sentence).run())
    assert translate(notice, "en", limit=48) in [w.value for w in at.warning]


@pytest.mark.parametrize("sentence", ["你好 世界", "👍🏽 🇫🇷", "<b>x</b> <s>y</s>", "aaa aaa"])
def test_odd_sentences_never_break_the_page(app, sentence):
    at = open_positional(app)
    clean(at.text_input(key="positional_encoding.sentence").input(sentence).run())
    labels = "".join(chart(at, "blind_original")["layout"]["xaxis"]["ticktext"])
    assert "<b>" not in labels and "<s>" not in labels


def test_rope_scores_depend_only_on_the_offset(app):
    at = open_positional(app)
    matrix = values(chart(at, "rope_matrix")["data"][0]["z"])
    assert matrix.shape == (48, 48)
    for k in (-10, 0, 1, 20):
        diagonal = np.diagonal(matrix, offset=k)
        np.testing.assert_allclose(diagonal, diagonal[0], atol=1e-3)
    lines = chart(at, "rope_lines")["data"]
    rope = [values(line["y"]) for line in lines[:3]]
    added = [values(line["y"]) for line in lines[3:]]
    np.testing.assert_allclose(rope[1], rope[0], atol=1e-3)
    assert np.abs(added[1] - added[0]).max() > 1e-2


def test_without_a_model_the_encoding_still_shows(app, monkeypatch, tmp_path):
    monkeypatch.setattr(models, "CHECKPOINT_DIR", tmp_path)
    at = open_positional(app)
    assert len(at.get("plotly_chart")) == 4 + 3  # frequency, binary, similarity x2, RoPE x3 (no blindness charts)
    assert not at.metric


def test_growing_d_model_keeps_the_pair(app):
    """#35 item 11: a larger d_model made the pair slider a new widget, which opened on pair 0."""
    at = open_positional(app)
    clean(at.slider(key="positional_encoding.pair").set_value(5).run())
    clean(at.slider(key="positional_encoding.d_model").set_value(128).run())
    assert at.slider(key="positional_encoding.pair").value == 5 and query(at, "positional_encoding_pair") == "5"


@pytest.mark.parametrize("lang", LANGS)
def test_the_formulas_say_what_the_sliders_and_the_model_use(app, lang):
    """#35 item 11: the header no longer fixes b = 10000 under a moved base slider; the slowest wavelength is
    2π·b^((d−2)/d) (2π·1,000 at d = 8, as the page's own readout says); RoPE's θ uses the head size d_k."""
    at = open_positional(app, lang=lang, pe_base="100")
    assert not any("b = 10000" in latex.value for latex in at.latex)
    assert translate("positional_encoding.formula_note", lang) in [c.value for c in at.caption]
    assert any(r"\theta_i = b^{-2i/d_k}" in latex.value for latex in at.latex)
    assert "(d−2)/d" in at.select_slider(key="positional_encoding.base").help
    assert 2 * np.pi * 10000 ** ((8 - 2) / 8) == pytest.approx(2 * np.pi * 1000)


@pytest.mark.parametrize("lang", LANGS)
def test_the_positions_in_binary_beside_the_sine_columns(app, lang):
    """#31: the table as binary counting: bit b of position p beside pair i's sine, on one colour scale."""
    at = open_positional(app, lang=lang)
    bits, sines = chart(at, "binary_chart")["data"]
    digits = values(bits["customdata"]).astype(int)
    assert digits.shape == (50, 6)  # positions 0 … 49 need 6 bits
    assert digits[:, 0].tolist() == [p % 2 for p in range(50)] and digits[:, 5].tolist() == [p >> 5 & 1 for p in range(50)]
    np.testing.assert_allclose(values(bits["z"]), digits * 2 - 1)  # 0 → −1 (blue), 1 → +1 (red)
    np.testing.assert_allclose(values(sines["z"]), table_z(at)[:, 0::2], atol=1e-6)  # the table's sine columns
    assert {bits["coloraxis"], sines["coloraxis"]} == {"coloraxis"}
    assert translate("positional_encoding.binary.caption", lang) in [str(c.value) for c in at.caption]
    assert not at.exception

"""The output-and-loss page under AppTest, on small random models written for the test (no training).

Checks read what the page shows (the charts' numbers, the metrics, the captions) and the URL.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from model.checkpoint import save_checkpoint
from model.config import TransformerConfig
from model.tasks import get_task
from model.tokenizer import CharTokenizer
from model.transformer import Transformer
from tests.app.apptest_helpers import chart, clean, open_script, query, random_model_fixtures, values
from ui.i18n import LANGS, translate
from ui.url_state import markdown_literal

SECTIONS = ("logits", "seed", "loss", "smoothing")
checkpoint_dir, random_models = random_model_fixtures(
    ("copy", 5), ("reverse", 6), folder="output_checkpoints", d_model=32, n_heads=2, n_layers=1, d_ff=64, max_len=40)
SOURCE = get_task("copy").example  # what the page opens on


@pytest.fixture(scope="module")
def smoothed_model(checkpoint_dir):
    """A ``sort`` model whose saved training config says label smoothing 0.2."""
    torch.manual_seed(7)
    tokenizer = CharTokenizer(get_task("sort").alphabet)
    config = TransformerConfig(src_vocab_size=tokenizer.vocab_size, tgt_vocab_size=tokenizer.vocab_size, d_model=16,
                               n_heads=2, n_layers=1, d_ff=32, dropout=0.0, max_len=40)
    save_checkpoint(checkpoint_dir / "sort.pt", Transformer(config).eval(), tokenizer, {"name": "sort"},
                    history={"config": {"label_smoothing": 0.2}})
    return "sort"


@pytest.fixture(scope="module")
def pre_norm_model(checkpoint_dir):
    """A pre-norm ``dates`` model with RMSNorm and SwiGLU: its last vector comes out of the decoder's final norm."""
    torch.manual_seed(8)
    tokenizer = CharTokenizer(get_task("dates").alphabet)
    config = TransformerConfig(src_vocab_size=tokenizer.vocab_size, tgt_vocab_size=tokenizer.vocab_size, d_model=16,
                               n_heads=2, n_layers=1, d_ff=32, dropout=0.0, max_len=40, norm_first=True,
                               norm_kind="rms", ffn_kind="swiglu")
    save_checkpoint(checkpoint_dir / "dates.pt", Transformer(config).eval(), tokenizer, {"name": "dates"})
    return "dates"


def open_output(app, lang: str = "en", **params: str) -> AppTest:
    return open_script(app, "app_pages/output_and_loss.py", {"lang": lang, "model": "copy", **params}, home_first=True)


def metric(at: AppTest, label_key: str, lang: str = "en") -> str:
    label = translate(label_key, lang)
    found = [m.value for m in at.metric if m.label == label]
    assert len(found) == 1, [m.label for m in at.metric]
    return found[0]


def texts(elements) -> list[str]:
    return [str(e.value) for e in elements]


def probability_bars(at: AppTest) -> tuple[list[float], list[float], list[str]]:
    """(logits, probabilities, bar colours) of the logits-and-probabilities chart."""
    logits, probs = chart(at, "output_and_loss.logits")["data"]
    return values(logits["x"]).tolist(), values(probs["x"]).tolist(), probs["marker"]["color"]


# ------------------------------------------------------------------ default view, both languages


def test_default_view_follows_one_position_from_vector_to_probabilities(app):
    at = open_output(app)
    assert at.text_input(key="output_and_loss.target").value == SOURCE  # the copy task's answer is the source itself
    assert query(at, "output_and_loss_view") == "logits" and query(at, "output_and_loss_pos") == "0" and query(at, "output_and_loss_temp") == "1.0"
    vector = values(chart(at, "output_and_loss.vector")["data"][0]["z"])
    assert vector.shape == (1, 32)
    logits, probs, colors = probability_bars(at)
    assert len(probs) in (15, 16) and probs[:15] == sorted(probs[:15], reverse=True) and sum(probs) <= 1.0 + 1e-3
    target = colors.index("#d62728")
    assert float(metric(at, "output_and_loss.logits.p_target")) == pytest.approx(probs[target], abs=1e-3)
    # softmax of the shown logits, up to the tokens not shown: ratios of probabilities are e^(Δ logit).
    assert probs[0] / probs[1] == pytest.approx(math.exp(logits[0] - logits[1]), rel=1e-2)
    assert any(translate("output_and_loss.target_is_answer", "en") == c for c in texts(at.caption))
    assert not at.exception and not at.toast


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("section", SECTIONS)
def test_every_section_in_both_languages(app, lang, section):
    at = open_output(app, lang, out_view=section)
    assert at.title[0].value == translate("output_and_loss.title", lang)
    assert translate(f"output_and_loss.section_about.{section}", lang) in texts(at.caption)
    assert at.segmented_control(key="output_and_loss.section").value == section
    expected_charts = {"logits": 3, "seed": 1, "loss": 1, "smoothing": 3}[section]
    assert len(at.get("plotly_chart")) == expected_charts
    assert not at.exception


def test_the_seed_section_shows_the_seeds_numbers_computed_here(app):
    at = open_output(app, out_view="seed")
    code = at.code[0].value
    assert code.count("0.2014133") == 3, code  # from logits, from probabilities, the training loss
    softmax = at.dataframe[0].value
    assert [float(p) for p in softmax["softmax"]] == [0.0900, 0.2447, 0.6652]


# ------------------------------------------------------------------ why softmax and not x / Σx (#31)


def why_bars(at: AppTest) -> tuple[list[float], list[float] | None]:
    """(softmax bars, ratio bars or None) of the "why softmax" chart."""
    bars = chart(at, "output_and_loss.why_chart")["data"]
    return values(bars[0]["y"]).tolist(), values(bars[1]["y"]).tolist() if len(bars) > 1 else None


def warnings_of(at: AppTest) -> list[str]:
    return [str(w.value) for w in at.warning]


@pytest.mark.parametrize("lang", LANGS)
def test_softmax_ignores_a_constant_the_plain_ratio_does_not(app, lang):
    at = open_output(app, lang, out_view="seed")
    assert at.text_input(key="output_and_loss.scores").value == "1, 2, 3"
    softmax, ratio = why_bars(at)
    assert softmax == pytest.approx([0.0900, 0.2447, 0.6652], abs=1e-4)
    assert ratio == pytest.approx([1 / 6, 1 / 3, 1 / 2])
    clean(at.slider(key="output_and_loss.shift").set_value(10.0).run())
    assert query(at, "output_and_loss_shift") == "10.0"
    shifted_softmax, shifted_ratio = why_bars(at)
    assert shifted_softmax == pytest.approx(softmax, abs=1e-9)  # e^c cancels
    assert shifted_ratio == pytest.approx([11 / 36, 12 / 36, 13 / 36])  # flattened towards 1/3
    caption = translate("output_and_loss.seed.why.caption", lang, c="10", at_0="[0.167, 0.333, 0.500]",
                        now="[0.306, 0.333, 0.361]")
    assert caption in texts(at.caption)
    assert not warnings_of(at) and not at.exception


@pytest.mark.parametrize("lang", LANGS)
def test_scores_that_sum_to_zero_or_go_negative_break_the_ratio_not_softmax(app, lang):
    at = open_output(app, lang, out_view="seed", output_and_loss_scores="-1, 0, 1")
    softmax, ratio = why_bars(at)
    assert ratio is None and sum(softmax) == pytest.approx(1.0)
    assert warnings_of(at) == [translate("output_and_loss.seed.why.zero_sum", lang, softmax="[0.090, 0.245, 0.665]")]
    clean(at.text_input(key="output_and_loss.scores").set_value("-2 1 3").run())
    softmax, ratio = why_bars(at)
    assert ratio == pytest.approx([-1.0, 0.5, 1.5]) and all(0 < p < 1 for p in softmax)
    assert warnings_of(at) == [translate("output_and_loss.seed.why.negative", lang, ratio="[-1.000, 0.500, 1.500]",
                                         which="x1 + c")]
    clean(at.slider(key="output_and_loss.shift").set_value(3.0).run())  # all positive again: no warning
    assert not warnings_of(at) and why_bars(at)[1] == pytest.approx([1 / 11, 4 / 11, 6 / 11])


@pytest.mark.parametrize("typed, problem", [("", "empty"), ("1, two, 3", "not_number"), ("1 nan", "not_number"),
                                            ("1 " * 9, "too_many"), ("1e9", "too_large"),
                                            ("<b>1</b>", "not_number")])
def test_bad_scores_get_a_sentence_not_a_traceback(app, typed, problem):
    at = open_output(app, out_view="seed")
    clean(at.text_input(key="output_and_loss.scores").set_value(typed).run())
    assert [str(e.value) for e in at.error] == [translate(f"output_and_loss.seed.why.error.{problem}", "en",
                                                          max=8, limit="50")]
    assert chart_keys(at) == set() and not at.exception


def chart_keys(at: AppTest) -> set[str]:
    return {c.proto.id for c in at.get("plotly_chart") if "why_chart" in c.proto.id}


# ------------------------------------------------------------------ URL values


def test_url_values_open_that_view(app):
    at = open_output(app, out_view="smoothing", out_eps="0.3", out_pos="2")
    assert at.slider(key="output_and_loss.epsilon").value == pytest.approx(0.3)
    assert at.select_slider(key="output_and_loss.position").value == 2
    bars = chart(at, "output_and_loss.targets")["data"]
    one_hot, smoothed = values(bars[0]["x"]), values(bars[1]["x"])
    target = int(np.argmax(one_hot))
    assert smoothed[target] == pytest.approx(0.7) and one_hot.sum() == 1.0
    assert f"**{translate('output_and_loss.smoothing.targets_title', 'en', position=2, token=SOURCE[2])}"[2:] in \
        " ".join(texts(at.markdown))
    curve = chart(at, "output_and_loss.loss_curve")["data"]
    assert curve[2]["x"] == [pytest.approx(0.7)]  # the smoothed loss is lowest at 1 − ε
    assert not at.toast


def test_temperature_in_a_link(app):
    cold = open_output(app, out_temp="0.0", out_pos="1")
    _, probs, _ = probability_bars(cold)
    assert sorted(probs, reverse=True)[:2] == [1.0, 0.0] and float(metric(cold, "output_and_loss.logits.entropy")) == 0.0
    hot = open_output(app, out_temp="5.0", out_pos="1")
    assert float(metric(hot, "output_and_loss.logits.entropy")) > float(metric(open_output(app, out_pos="1"),
                                                                       "output_and_loss.logits.entropy"))


@pytest.mark.parametrize("name,bad", [("output_and_loss_view", "nope"), ("output_and_loss_temp", "99"), ("output_and_loss_temp", "hot"),
                                      ("output_and_loss_eps", "0.9"), ("output_and_loss_pos", "-1"), ("output_and_loss_pos", "500")])
def test_bad_url_values_fall_back_with_a_notice(app, name, bad):
    section = {"output_and_loss_eps": "smoothing"}.get(name, "logits")  # the ε slider is in the last section
    at = open_output(app, **{"output_and_loss_view": section, name: bad})
    defaults = {"output_and_loss_view": "logits", "output_and_loss_temp": "1.0", "output_and_loss_eps": "0.1", "output_and_loss_pos": "0"}
    assert query(at, name) == defaults[name]
    assert len(at.toast) == 1 and markdown_literal(bad) in at.toast[0].value
    assert not at.exception


# ------------------------------------------------------------------ each control


def test_each_control_changes_the_view_and_the_url(app):
    at = open_output(app)
    before = probability_bars(at)[1]
    clean(at.select_slider(key="output_and_loss.position").set_value(3).run())
    assert query(at, "output_and_loss_pos") == "3"
    assert any(m.value.startswith("**Position 3.**") for m in at.markdown)
    clean(at.slider(key="output_and_loss.temperature").set_value(3.0).run())
    assert query(at, "output_and_loss_temp") == "3.0"
    flat = probability_bars(at)[1]
    assert max(flat) < max(before) or max(before) < 0.1
    clean(at.segmented_control(key="output_and_loss.section").set_value("smoothing").run())
    assert query(at, "output_and_loss_view") == "smoothing"
    assert at.select_slider(key="output_and_loss.position").value == 3, "the position is kept across sections"
    clean(at.slider(key="output_and_loss.epsilon").set_value(0.0).run())
    assert query(at, "output_and_loss_eps") == "0.0"
    assert metric(at, "output_and_loss.smoothing.floor") == "0.000" and metric(at, "output_and_loss.smoothing.perfect_smoothed") == "0"
    clean(at.slider(key="output_and_loss.epsilon").set_value(0.25).run())
    assert metric(at, "output_and_loss.smoothing.perfect_smoothed") == "∞"
    assert float(metric(at, "output_and_loss.smoothing.floor")) > 0.5


def test_a_wrong_target_costs_more_and_the_page_says_it_is_not_the_answer(app):
    at = open_output(app, out_view="loss")
    right = float(metric(at, "output_and_loss.loss.mean"))
    right_bars = values(chart(at, "output_and_loss.losses")["data"][0]["y"])
    wrong_target = "x" + SOURCE[1:]
    clean(at.text_input(key="output_and_loss.target").set_value(wrong_target).run())
    assert query(at, "output_and_loss_target") == wrong_target
    assert any(c.startswith("This is not the task's answer") for c in texts(at.caption))
    wrong_bars = values(chart(at, "output_and_loss.losses")["data"][0]["y"])
    assert len(wrong_bars) == len(right_bars)
    assert wrong_bars[0] != pytest.approx(right_bars[0])
    mean = float(metric(at, "output_and_loss.loss.mean"))
    assert mean == pytest.approx(float(wrong_bars.mean()), abs=2e-3) and mean != right
    ppl = float(metric(at, "output_and_loss.loss.ppl"))
    assert ppl == pytest.approx(math.exp(float(wrong_bars.mean())), rel=2e-3)


def test_the_target_follows_the_source_until_the_visitor_types_one(app):
    at = open_output(app, model="reverse")
    task = get_task("reverse")
    assert at.text_input(key="output_and_loss.target").value == task.target_for(task.example)
    clean(at.text_input(key="output_and_loss.text").set_value("abc").run())
    assert at.text_input(key="output_and_loss.target").value == "cba", "an untouched target follows the new source"
    clean(at.text_input(key="output_and_loss.target").set_value("abd").run())
    clean(at.text_input(key="output_and_loss.text").set_value("xyz").run())
    assert at.text_input(key="output_and_loss.target").value == "abd", "a typed target is kept"


def test_an_empty_target_asks_for_one(app):
    at = open_output(app, out_target="   ")
    assert translate("output_and_loss.no_target", "en") in texts(at.info)
    assert not at.get("plotly_chart") and not at.exception


def test_the_smoothing_section_uses_the_epsilon_the_model_was_trained_with(app, smoothed_model):
    unknown = open_output(app, out_view="smoothing")
    assert translate("output_and_loss.smoothing.unknown_epsilon", "en") in texts(unknown.info)
    assert not chart(unknown, "output_and_loss.right_probs")["layout"].get("shapes")
    known = open_output(app, out_view="smoothing", model=smoothed_model)
    assert any(m.value.startswith("This model was trained with label smoothing ε = 0.2") for m in known.markdown)
    line = chart(known, "output_and_loss.right_probs")["layout"]["shapes"][0]
    assert line["y0"] == pytest.approx(0.8)
    assert not known.exception


def test_a_pre_norm_model_says_where_its_last_vector_comes_from(app, pre_norm_model):
    post = open_output(app)
    assert any(c.startswith(translate("output_and_loss.logits.vector_postnorm", "en")) for c in texts(post.caption))
    pre = open_output(app, model=pre_norm_model)
    assert any(c.startswith(translate("output_and_loss.logits.vector_prenorm", "en")) for c in texts(pre.caption))
    assert at_target(pre) == get_task("dates").target_for(get_task("dates").example)
    assert not pre.exception


def at_target(at: AppTest) -> str:
    return at.text_input(key="output_and_loss.target").value

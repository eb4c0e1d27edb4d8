"""The feed-forward page under AppTest, on small random models written for the test (no training).

Checks read what the page shows: the plotly figures' JSON, metrics, the table and the URL.
"""
from __future__ import annotations

import json
from dataclasses import fields

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from explain.ffn import ffn_view
from model.checkpoint import load_checkpoint, save_checkpoint
from model.config import TransformerConfig
from model.tasks import get_task
from model.tokenizer import CharTokenizer
from model.transformer import Transformer
from tests.app.apptest_helpers import (chart, clean, open_script, query, random_model_fixtures, values,
                                      write_random_checkpoint)
from ui.i18n import LANGS, translate

N_LAYERS, D_MODEL, D_FF = 2, 16, 32
checkpoint_dir, random_models = random_model_fixtures(
    ("copy", 3), ("dates", 4), folder="ffn_checkpoints", d_model=D_MODEL, n_heads=2, n_layers=N_LAYERS, d_ff=D_FF,
    max_len=40)
EXAMPLE = get_task("copy").example


def open_ffn(app, lang: str = "en", **query: str) -> AppTest:
    return open_script(app, "app_pages/feed_forward.py", {"lang": lang, **query}, home_first=True)


def heatmaps(figure: dict) -> list[np.ndarray]:
    return [values(trace["z"]) for trace in figure["data"] if trace["type"] == "heatmap"]


def expected_view(checkpoint_dir, stack: str, layer: int, source: str = EXAMPLE):
    return ffn_view(load_checkpoint(checkpoint_dir / "copy.pt"), source, stack, layer)


# ------------------------------------------------------------------ inside one layer


def test_default_view_shows_the_formula_and_the_first_encoder_layer(app, checkpoint_dir):
    at = open_ffn(app)
    assert at.text_input(key="feed_forward.text").value == EXAMPLE
    assert query(at, "feed_forward_text") == EXAMPLE
    assert any(r"\max(0" in latex.value for latex in at.latex)
    pre, post = heatmaps(chart(at, "feed_forward.activations"))
    want = expected_view(checkpoint_dir, "encoder", 0)
    assert pre.shape == (len(EXAMPLE), D_FF)
    np.testing.assert_allclose(pre, want.pre, atol=1e-5)
    np.testing.assert_allclose(post, np.maximum(pre, 0), atol=1e-6)  # the ReLU, as drawn


def test_share_of_zeros_per_token_is_what_the_relu_left(app):
    at = open_ffn(app)
    _, post = heatmaps(chart(at, "feed_forward.activations"))
    bars = chart(at, "feed_forward.zeros")["data"][0]
    np.testing.assert_allclose(values(bars["x"]), (post == 0).mean(axis=1), atol=1e-4)
    assert "%" in at.metric[0].value


def test_output_chart_is_the_ffn_output(app, checkpoint_dir):
    at = open_ffn(app, ff_stack="decoder", ff_layer="2")
    output = heatmaps(chart(at, "feed_forward.output"))[0]
    want = expected_view(checkpoint_dir, "decoder", 1)
    assert output.shape == (len(EXAMPLE) + 1, D_MODEL)  # <bos> + the task's answer
    np.testing.assert_allclose(output, want.output, atol=1e-5)
    assert any("teacher forcing" in c.value for c in at.caption)


def test_a_link_opens_the_same_view(app):
    at = open_ffn(app, ff_stack="decoder", ff_layer="2", ff_text="abc")
    assert at.segmented_control(key="feed_forward.stack").value == "decoder"
    assert at.segmented_control(key="feed_forward.layer").value == 2
    pre, _ = heatmaps(chart(at, "feed_forward.activations"))
    assert pre.shape[0] == 4  # <bos> a b c


def test_each_stack_and_layer_control_redraws(app, checkpoint_dir):
    at = open_ffn(app)
    first = heatmaps(chart(at, "feed_forward.activations"))[0]
    clean(at.segmented_control(key="feed_forward.layer").set_value(2).run())
    assert query(at, "feed_forward_layer") == "2"
    second = heatmaps(chart(at, "feed_forward.activations"))[0]
    np.testing.assert_allclose(second, expected_view(checkpoint_dir, "encoder", 1).pre, atol=1e-5)
    assert not np.allclose(first, second)
    clean(at.segmented_control(key="feed_forward.stack").set_value("decoder").run())
    assert query(at, "feed_forward_stack") == "decoder"


@pytest.mark.parametrize("name, bad", [("feed_forward_layer", "9"), ("feed_forward_stack", "middle"), ("feed_forward_view", "nope"),
                                       ("feed_forward_from", "-3")])
def test_bad_link_values_fall_back_with_a_notice(app, name, bad):
    at = open_ffn(app, ff_view="position", **{name: bad}) if name != "feed_forward_view" else open_ffn(app, **{name: bad})
    assert len(at.toast) == 1
    assert at.get("plotly_chart")


# ------------------------------------------------------------------ position-wise


def test_position_wise_copy_changes_only_that_position_in_the_ffn(app):
    at = open_ffn(app, ff_view="position", ff_from="0", ff_to="3")
    twin, ffn_others, attention_others = (float(m.value) for m in at.metric)
    assert twin == 0.0 and ffn_others == 0.0
    assert attention_others > 0.0
    ffn_bars, attention_bars = (values(bar["y"]) for bar in chart(at, "feed_forward.position_chart")["data"])
    assert ffn_bars[3] > 0 and np.count_nonzero(ffn_bars) == 1
    assert np.count_nonzero(attention_bars) > 1  # attention carries the change to other tokens


def test_position_pickers_are_bound_to_the_url(app):
    at = open_ffn(app, ff_view="position")
    clean(at.selectbox(key="feed_forward.copy_to").set_value(5).run())
    assert query(at, "feed_forward_to") == "5"
    ffn_bars = values(chart(at, "feed_forward.position_chart")["data"][0]["y"])
    assert np.flatnonzero(ffn_bars).tolist() == [5]


def test_decoder_attention_change_stops_before_the_copied_position(app):
    at = open_ffn(app, ff_view="position", ff_stack="decoder", ff_from="1", ff_to="4")
    attention_bars = values(chart(at, "feed_forward.position_chart")["data"][1]["y"])
    assert np.all(attention_bars[:4] == 0) and np.all(attention_bars[4:] > 0)  # the look-ahead mask


# ------------------------------------------------------------------ parameters


def test_parameters_of_this_model_and_the_paper(app):
    at = open_ffn(app, ff_view="params")
    table = at.dataframe[0].value
    assert len(table) == 4
    ffn_column = table[translate("feed_forward.params.col_ffn", "en")].tolist()
    assert ffn_column == [2 * D_MODEL * D_FF + D_FF + D_MODEL] * 2 + [2_099_712] * 2
    assert any("2{,}099{,}712" in latex.value and "1{,}050{,}624" in latex.value for latex in at.latex)
    assert chart(at, "feed_forward.params_chart")["data"]


@pytest.mark.parametrize("lang", LANGS)
def test_parameter_counts_are_written_with_thousands_separators(app, lang):
    """Issue #35 item 20: 198272 read as one long number; the counts are numbers shown "localized" (198,272)."""
    at = open_ffn(app, lang, ff_view="params")
    config = json.loads(at.dataframe[0].proto.columns)
    for name in ("ffn", "attention", "norm", "total"):
        header = translate(f"feed_forward.params.col_{name}", lang)
        assert config[header]["type_config"] == {"type": "number", "format": "localized"}, header
    assert at.dataframe[0].value[translate("feed_forward.params.col_total", lang)].dtype.kind == "i"  # still numbers


# ------------------------------------------------------------------ both languages, other models


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("section", ["inside", "position", "params"])
def test_every_section_in_both_languages(app, lang, section):
    at = open_ffn(app, lang, ff_view=section)
    assert at.title[0].value == translate("feed_forward.title", lang)
    assert at.get("plotly_chart")


def test_the_dates_model_works_too(app):
    at = open_ffn(app, model="dates")
    assert at.text_input(key="feed_forward.text").value == get_task("dates").example


def variant_checkpoint(path, **switches) -> None:
    missing = sorted(set(switches) - {f.name for f in fields(TransformerConfig)})
    if missing:
        pytest.skip(f"TransformerConfig has no {', '.join(missing)} field yet")
    torch.manual_seed(0)
    tokenizer = CharTokenizer(get_task("copy").alphabet)
    config = TransformerConfig(tokenizer.vocab_size, tokenizer.vocab_size, d_model=16, n_heads=2, n_layers=1, d_ff=48,
                               dropout=0.0, max_len=40, **switches)
    save_checkpoint(path, Transformer(config).eval(), tokenizer, {"name": "copy"})


def test_a_swiglu_model_shows_its_gate(app, tmp_path, monkeypatch):
    from ui import models

    variant_checkpoint(tmp_path / "copy.pt", ffn_kind="swiglu", norm_first=True, norm_kind="rms")
    monkeypatch.setattr(models, "CHECKPOINT_DIR", tmp_path)
    at = open_ffn(app)
    assert any("SwiGLU" in info.value for info in at.info)
    assert any("SiLU" in latex.value for latex in at.latex)
    figure = chart(at, "feed_forward.activations")
    assert "SiLU" in " ".join(a["text"] for a in figure["layout"]["annotations"])
    pre, post = heatmaps(figure)
    assert pre.shape[1] == 32  # swiglu_hidden(48)
    np.testing.assert_allclose(post, pre / (1 + np.exp(-pre)), atol=1e-4)  # SiLU(z) = z·sigmoid(z)
    clean(at.segmented_control(key="feed_forward.section").set_value("params").run())
    assert any("SwiGLU" in c.value for c in at.caption)


def test_a_token_that_is_markdown_is_shown_escaped_in_the_reading(app, tmp_path, monkeypatch):
    """An uploaded model's alphabet may hold Markdown characters: the caption names the token literally."""
    from ui import models

    write_random_checkpoint(tmp_path / "copy.pt", "copy", seed=0, max_len=40, alphabet="ab*_")
    monkeypatch.setattr(models, "CHECKPOINT_DIR", tmp_path)
    at = open_ffn(app, ff_view="position", ff_text="a*b_", ff_from="1", ff_to="3")
    reading = [c.value for c in at.caption if "position 3" in c.value]
    assert reading and "of \\*" in reading[0], [c.value for c in at.caption]


@pytest.mark.parametrize("lang", LANGS)
def test_the_try_this_box_compares_sizes_for_the_selected_model(app, lang):
    """The paper's encoder layer against this model's, computed (it said "about 60 times" for every model)."""
    at = open_ffn(app, lang)
    ratio = 3_152_384 / (2 * D_MODEL * D_FF + D_FF + D_MODEL + 4 * D_MODEL**2 + 4 * D_MODEL + 4 * D_MODEL)
    size = translate("feed_forward.try.size_smaller", lang, ratio=f"{ratio:.0f}")
    assert any(size in m.value for m in at.markdown)
    assert not any("60" in m.value for m in at.markdown if size in m.value)


def test_the_first_switch_to_the_decoder_computes_nothing_once_the_warm_up_has_run(app, monkeypatch):
    """The warm-up computes both stacks' first layer on the model's example when the model loads (#35 item 22)."""
    import functools

    import ui.cache

    import explain.ffn
    from ui import models
    from ui.warmup import start_warmup, warm_views

    calls, real = [], explain.ffn.ffn_view

    @functools.wraps(real)
    def spy(*args, **kwargs):
        calls.append(args[1:])
        return real(*args, **kwargs)

    at = open_ffn(app)
    assert start_warmup().views_done.wait(120)  # the process's own warm-up (started by the app) is over
    monkeypatch.setattr(explain.ffn, "ffn_view", spy)
    ui.cache.clear()
    warm_views(models.load_shipped("copy"))
    assert [c[1:] for c in calls] == [("encoder", 0), ("decoder", 0)]
    del calls[:]
    clean(at.button_group(key="feed_forward.stack").set_value("decoder").run())
    assert query(at, "feed_forward_stack") == "decoder"
    assert calls == []

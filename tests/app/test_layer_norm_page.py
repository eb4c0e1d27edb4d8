"""The LayerNorm page under AppTest, on small random models written for the test (no training):
a post-norm LayerNorm copy model and a pre-norm RMSNorm reverse model.

The checks read what the page shows: the table, the metrics, the charts as plotly JSON, the URL.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from model.checkpoint import save_checkpoint
from model.config import TransformerConfig
from model.tasks import get_task
from model.tokenizer import CharTokenizer
from model.transformer import Transformer
from tests.app.apptest_helpers import chart, clean, open_script, query, values
from tests.app.conftest import ROOT
from ui import models
from ui.i18n import LANGS, translate

PAGE = "app_pages/layer_norm.py"
BATCH = "hello world\nattention is all you need\nhi!"
SIZES = dict(d_model=16, n_heads=2, n_layers=2, d_ff=32, dropout=0.0, max_len=64)
VARIANTS = {"copy": dict(), "reverse": dict(norm_first=True, norm_kind="rms")}
CHARTS = ("layer_norm.gamma_beta", "layer_norm.rms_chart", "layer_norm.batch_layer", "layer_norm.batch_batch",
          "layer_norm.batch_means", "layer_norm.wiring_post", "layer_norm.wiring_pre", "layer_norm.grad_chart")


@pytest.fixture(scope="module")
def checkpoint_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("layernorm_checkpoints")
    for seed, (task, variant) in enumerate(VARIANTS.items()):
        tokenizer = CharTokenizer(get_task(task).alphabet)
        config = TransformerConfig(tokenizer.vocab_size, tokenizer.vocab_size, **SIZES, **variant)
        torch.manual_seed(seed)
        save_checkpoint(folder / f"{task}.pt", Transformer(config).eval(), tokenizer, {"name": task})
    return folder


@pytest.fixture(autouse=True)
def random_models(monkeypatch, checkpoint_dir):
    monkeypatch.setattr(models, "CHECKPOINT_DIR", checkpoint_dir)


def open_page(app, lang: str = "en", **params: str) -> AppTest:
    return open_script(app, PAGE, {"lang": lang, **params}, home_first=True)


def text(key: str, lang: str = "en", **fmt) -> str:
    return translate(f"layer_norm.{key}", lang, **fmt)


def metric(at: AppTest, key: str, lang: str = "en") -> str:
    return next(m.value for m in at.metric if m.label == text(key, lang))


def table(at: AppTest):
    return at.dataframe[0].value


def one_plus(at: AppTest, lang: str = "en"):
    """The "1 +" table: rows the quantities, columns the two wirings (strings as shown)."""
    (shown,) = [tab.value for tab in at.table if tab.value.index.name == text("grad.one_plus_col_quantity", lang)]
    return shown


@pytest.mark.parametrize("lang", LANGS)
def test_default_view_in_both_languages(app, lang):
    at = open_page(app, lang)
    assert at.title[0].value == text("title", lang)
    for key in CHARTS:
        chart(at, key)  # exactly one chart of each
    assert at.selectbox(key="layer_norm.site").value == "encoder.0.self_attn"
    assert at.toggle(key="layer_norm.count_pads").value is True
    assert at.segmented_control(key="layer_norm.seed").value == 0
    frame = table(at)
    assert list(frame.columns)[:3] == [text("token.col_token", lang), text("token.col_input_mean", lang),
                                       text("token.col_input_var", lang)]
    assert len(frame) == len("hello world")  # the encoder's norm: one row per source token
    assert np.abs(frame[text("token.col_normalised_mean", lang)]).max() < 1e-3
    assert np.abs(frame[text("token.col_normalised_var", lang)] - 1).max() < 1e-3
    assert metric(at, "batch.layer_shift", lang) == "0.000"
    assert float(metric(at, "batch.batch_shift", lang)) > 0
    assert any(text("token.reads_post", lang) == m.value for m in at.markdown)
    assert any(text("placement.model_post", lang, kind=text("placement.kind_layer", lang)) == m.value
               for m in at.markdown)
    assert "training" in [link.proto.page.strip("/") for link in at.get("page_link")]
    assert {"layer_norm_at", "layer_norm_tok", "layer_norm_pads", "layer_norm_seed",
            "layer_norm_skip_at"} <= set(at.query_params)
    gradients = chart(at, "layer_norm.grad_chart")
    assert [trace["name"] for trace in gradients["data"]] == [text(f"grad.name_{w}", lang)
                                                              for w in ("post", "pre", "no_residual")]
    assert gradients["layout"]["yaxis"]["type"] == "log"
    assert metric(at, "grad.lost_no_residual", lang) == "5 / 12"  # D1–D5: below float32 rounding
    assert at.selectbox(key="layer_norm.skip_at").value == "decoder.5.cross_attn"
    term = one_plus(at, lang)
    assert term.loc[text("grad.one_plus_row_skip", lang), text("grad.one_plus_col_no_residual", lang)] == "—"
    assert float(term.loc[text("grad.one_plus_row_gain", lang), text("grad.one_plus_col_post", lang)]) == (
        pytest.approx(1.0, abs=0.01))  # the skip hands the gradient on
    assert float(term.loc[text("grad.one_plus_row_gain", lang), text("grad.one_plus_col_no_residual", lang)]) < 1e-6


def test_url_values_open_that_view(app):
    at = open_page(app, ln_at="decoder.1.cross_attn", ln_tok="3", ln_pads="false", ln_seed="2", sent="1",
                   ln_skip_at="encoder.0.ffn")
    assert at.selectbox(key="layer_norm.skip_at").value == "encoder.0.ffn"
    assert one_plus(at).loc[text("grad.one_plus_row_skip"), text("grad.one_plus_col_no_residual")] == "—"
    assert at.selectbox(key="layer_norm.site").value == "decoder.1.cross_attn"
    assert at.select_slider(key="layer_norm.token").value == 3
    assert at.toggle(key="layer_norm.count_pads").value is False
    assert at.segmented_control(key="layer_norm.seed").value == 2
    assert at.selectbox(key="batch.sentence").value == 1
    target = "attention is all you need"  # copy: the decoder reads <bos> + the same sentence
    assert len(table(at)) == 1 + len(target)
    assert not at.toast


@pytest.mark.parametrize("name, bad", [("layer_norm_at", "encoder.0.cross_attn"), ("layer_norm_at", "decoder.final"),
                                       ("layer_norm_tok", "-1"), ("layer_norm_pads", "maybe"), ("layer_norm_seed", "9"),
                                       ("layer_norm_skip_at", "encoder.0.cross_attn"),
                                       ("layer_norm_skip_at", "decoder.6.ffn"), ("layer_norm_skip_at", "<script>")])
def test_bad_url_values_fall_back_with_a_notice(app, name, bad):
    at = open_page(app, **{name: bad})
    assert len(at.toast) == 1 and bad in at.toast[0].value.replace("\\", "")  # the toast escapes Markdown
    assert at.selectbox(key="layer_norm.site").value == "encoder.0.self_attn"
    assert query(at, name) != bad


def test_each_control_changes_its_view(app):
    at = open_page(app)
    gamma = values(chart(at, "layer_norm.gamma_beta")["data"][0]["y"])
    clean(at.selectbox(key="layer_norm.site").set_value("decoder.0.ffn").run())
    assert query(at, "layer_norm_at") == "decoder.0.ffn"
    assert len(table(at)) == 1 + len("hello world")  # the decoder input: <bos> + the answer
    assert values(chart(at, "layer_norm.gamma_beta")["data"][0]["y"]).shape == gamma.shape

    title = chart(at, "layer_norm.rms_chart")["layout"]["title"]["text"]
    clean(at.select_slider(key="layer_norm.token").set_value(2).run())
    assert query(at, "layer_norm_tok") == "2" and chart(at, "layer_norm.rms_chart")["layout"]["title"]["text"] != title

    shift = metric(at, "batch.batch_shift")
    clean(at.toggle(key="layer_norm.count_pads").set_value(False).run())
    assert query(at, "layer_norm_pads") == "false" and metric(at, "batch.batch_shift") != shift

    post = metric(at, "grad.growth_post")
    clean(at.segmented_control(key="layer_norm.seed").set_value(4).run())
    assert query(at, "layer_norm_seed") == "4" and metric(at, "grad.growth_post") != post

    gain = (text("grad.one_plus_row_gain"), text("grad.one_plus_col_no_residual"))
    assert float(one_plus(at).loc[gain]) < 1e-6  # the top cross-attention passes nothing back without the skip
    clean(at.selectbox(key="layer_norm.skip_at").set_value("decoder.5.ffn").run())
    assert query(at, "layer_norm_skip_at") == "decoder.5.ffn" and float(one_plus(at).loc[gain]) > 0.3
    assert not any(m.value == text("grad.one_plus_noise") for m in at.info)
    clean(at.selectbox(key="layer_norm.skip_at").set_value("decoder.0.ffn").run())
    assert any(m.value == text("grad.one_plus_noise") for m in at.info)  # nothing reaches D1 without the skip

    clean(at.selectbox(key="batch.sentence").set_value(2).run())
    assert len(values(chart(at, "layer_norm.batch_batch")["data"][0]["z"])) == len("hi!")


def test_editing_another_sentence_moves_batch_norm_not_layer_norm(app):
    at = open_page(app)
    layer = values(chart(at, "layer_norm.batch_layer")["data"][0]["z"])
    batch = values(chart(at, "layer_norm.batch_batch")["data"][0]["z"])
    shift = metric(at, "batch.batch_shift")
    clean(at.text_area(key="batch.text").input(BATCH.replace("you need", "you need today")).run())
    np.testing.assert_array_equal(values(chart(at, "layer_norm.batch_layer")["data"][0]["z"]), layer)
    assert np.abs(values(chart(at, "layer_norm.batch_batch")["data"][0]["z"]) - batch).max() > 0.01
    assert metric(at, "batch.layer_shift") == "0.000" and metric(at, "batch.batch_shift") != shift
    clean(at.text_area(key="batch.text").input("hello world").run())
    assert any(m.value == text("batch.one_sentence") for m in at.info)
    assert metric(at, "batch.batch_shift") == "0.000"


@pytest.mark.parametrize("lang", LANGS)
def test_a_pre_norm_rmsnorm_model_shows_rms_and_its_final_norms(app, lang):
    at = open_page(app, lang, model="reverse", ln_at="decoder.final")
    assert at.selectbox(key="layer_norm.site").value == "decoder.final"
    assert text("token.final_encoder", lang) in at.selectbox(key="layer_norm.site").options
    assert any(m.value == text("token.rms_model", lang) for m in at.info)
    frame = table(at)
    assert text("token.col_normalised_rms", lang) in frame.columns
    assert text("token.col_normalised_var", lang) not in frame.columns
    assert np.abs(frame[text("token.col_normalised_rms", lang)] - 1).max() < 1e-3
    assert len(chart(at, "layer_norm.gamma_beta")["data"]) == 1  # γ only: RMSNorm has no β
    assert any(text("token.reads_final", lang) == m.value for m in at.markdown)
    assert any(text("placement.model_pre", lang, kind=text("placement.kind_rms", lang)) == m.value
               for m in at.markdown)
    clean(at.selectbox(key="layer_norm.site").set_value("encoder.1.ffn").run())
    assert any(text("token.reads_pre", lang) == m.value for m in at.markdown)


def test_switching_to_a_post_norm_model_leaves_a_final_norm_quietly(app):
    at = open_page(app, model="reverse", ln_at="encoder.final")
    at.sidebar.selectbox(key="model").set_value("copy")
    clean(at.run())
    assert at.selectbox(key="layer_norm.site").value == "encoder.0.self_attn"
    assert not at.toast


def test_without_a_model_the_diagram_and_the_gradients_still_show(app, monkeypatch, tmp_path):
    monkeypatch.setattr(models, "CHECKPOINT_DIR", tmp_path)
    at = open_page(app)
    assert any(m.value == text("no_model") for m in at.info)
    for key in ("layer_norm.wiring_post", "layer_norm.wiring_pre", "layer_norm.grad_chart"):
        chart(at, key)
    assert not at.dataframe
    assert len(one_plus(at)) == 5  # the "1 +" needs no model either


@pytest.mark.parametrize("name", ["en-zh", "zh-en"])
def test_a_word_level_translation_model_runs_the_page(app, monkeypatch, name):
    """The translation models read words (en) or characters (zh) with a vocabulary of their own on each side."""
    shipped = ROOT / "assets" / "checkpoints"
    monkeypatch.setattr(models, "CHECKPOINT_DIR", shipped)
    if not (shipped / f"{name}.pt").exists():
        pytest.skip(f"no shipped {name} model")
    at = open_page(app, model=name, ln_at="decoder.0.cross_attn")
    for key in CHARTS:
        chart(at, key)
    assert len(table(at)) >= 1 and metric(at, "batch.layer_shift") == "0.000"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_page_opens_with_links_to_its_sections(app, lang):
    """#35 item 21: a long page gets a line of links to its five sections, each to its heading's anchor."""
    at = open_script(app, "app_pages/layer_norm.py", {"lang": lang}, home_first=True)
    line = next(m.value for m in at.markdown if m.value.startswith(translate("common.on_this_page", lang)))
    for section in ("token", "rms", "batch", "placement", "grad"):
        assert f"[{translate(f'layer_norm.{section}.heading', lang)}](#layer-norm-{section})" in line
    anchors = {h.proto.anchor for h in at.subheader}
    assert {f"layer-norm-{s}" for s in ("token", "rms", "batch", "placement", "grad")} <= anchors

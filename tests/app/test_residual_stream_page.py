"""The residual-stream page under AppTest, on small random models written for the test (no training).

Checks read what the page shows: the plotly figures' JSON, metrics, the answers and the URL.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from explain.residual import off_triples, stream_matrix, stream_view, switch_off
from model.checkpoint import load_checkpoint, save_checkpoint
from model.config import TransformerConfig
from model.tasks import get_task
from model.tokenizer import CharTokenizer
from model.transformer import Transformer
from tests.app.apptest_helpers import (chart, clean, open_script, query, random_model_fixtures, values,
                                      write_random_checkpoint)
from ui.i18n import LANGS, translate

N_LAYERS = 2
checkpoint_dir, random_models = random_model_fixtures(
    ("copy", 7), ("reverse", 8), folder="residual_checkpoints", d_model=16, n_heads=2, n_layers=N_LAYERS, d_ff=32,
    max_len=40)
EXAMPLE = get_task("copy").example


def open_residual(app, lang: str = "en", **query: str) -> AppTest:
    return open_script(app, "app_pages/residual_stream.py", {"lang": lang, **query}, home_first=True)


def heatmaps(figure: dict) -> list[np.ndarray]:
    return [values(trace["z"]) for trace in figure["data"] if trace["type"] == "heatmap"]


def copy_model(checkpoint_dir):
    return load_checkpoint(checkpoint_dir / "copy.pt")


# ------------------------------------------------------------------ sizes and turns


def test_default_view_shows_every_encoder_sublayer_for_every_token(app, checkpoint_dir):
    at = open_residual(app)
    assert at.text_input(key="residual_stream.text").value == EXAMPLE
    assert any("LayerNorm" in latex.value for latex in at.latex)  # the shipped kind: post-norm
    x_norm, update_norm, turn = heatmaps(chart(at, "residual_stream.stream"))
    assert x_norm.shape == (len(EXAMPLE), 2 * N_LAYERS)  # attention and FFN per layer
    view = stream_view(copy_model(checkpoint_dir), EXAMPLE)
    np.testing.assert_allclose(update_norm, stream_matrix(view, "encoder", "update_norm")[0], rtol=1e-4)
    assert np.all(np.abs(turn) <= 1 + 1e-5)


def test_the_decoder_has_three_sublayers_per_layer(app):
    at = open_residual(app, rs_stack="decoder")
    figure = chart(at, "residual_stream.stream")
    x_norm = heatmaps(figure)[0]
    assert x_norm.shape == (len(EXAMPLE) + 1, 3 * N_LAYERS)
    assert figure["layout"]["xaxis3"]["ticktext"][:3] == ["L1 attn", "L1 cross", "L1 FFN"]
    assert any("teacher forcing" in c.value for c in at.caption)


def test_following_a_token_draws_its_row(app):
    at = open_residual(app, rs_tok="2")
    x_norm = heatmaps(chart(at, "residual_stream.stream"))[0]
    path = chart(at, "residual_stream.path")["data"]
    np.testing.assert_allclose(values(path[0]["y"]), x_norm[2], rtol=1e-3)
    clean(at.selectbox(key="residual_stream.token").set_value(4).run())
    assert query(at, "residual_stream_tok") == "4"
    np.testing.assert_allclose(values(chart(at, "residual_stream.path")["data"][0]["y"]), x_norm[4], rtol=1e-3)


def test_stack_control_is_bound_to_the_url(app):
    at = open_residual(app)
    clean(at.segmented_control(key="residual_stream.stack").set_value("decoder").run())
    assert query(at, "residual_stream_stack") == "decoder"


# ------------------------------------------------------------------ switching a residual off


def test_switching_residuals_off_changes_the_answer_probability(app, checkpoint_dir):
    at = open_residual(app, rs_view="off", rs_off="enc-1-self,dec-1-ffn")
    assert at.multiselect(key="residual_stream.off").value == ["enc-1-self", "dec-1-ffn"]
    want = switch_off(copy_model(checkpoint_dir), EXAMPLE, off_triples(["enc-1-self", "dec-1-ffn"]))
    codes = [c.value for c in at.code]
    assert codes[:2] == [want.answer_on or " ", want.answer_off or " "]
    on, off = (values(bar["y"]) for bar in chart(at, "residual_stream.off_chart")["data"])
    np.testing.assert_allclose(on, want.per_token_on, atol=1e-4)
    assert not np.allclose(on, off, atol=1e-4)


def test_nothing_switched_off_shows_only_the_answer(app):
    at = open_residual(app, rs_view="off")
    assert len(at.metric) == 1
    assert at.info
    clean(at.multiselect(key="residual_stream.off").select("dec-2-cross").run())
    assert query(at, "residual_stream_off") == "dec-2-cross"
    assert len(at.metric) == 2


@pytest.mark.parametrize("name, bad", [("residual_stream_off", "enc-9-self"), ("residual_stream_stack", "middle"), ("residual_stream_view", "nope"),
                                       ("residual_stream_tok", "x")])
def test_bad_link_values_fall_back_with_a_notice(app, name, bad):
    section = {"residual_stream_off": "off"}.get(name, "sizes")
    at = open_residual(app, **({"residual_stream_view": section} if name != "residual_stream_view" else {}), **{name: bad})
    assert len(at.toast) == 1
    assert at.get("plotly_chart") or at.info


# ------------------------------------------------------------------ dropout on one update


def test_dropout_shows_one_real_update_eval_beside_train_from_the_link(app, checkpoint_dir):
    from explain.dropout import sublayer_update, through_dropout

    at = open_residual(app, residual_stream_view="dropout", residual_stream_drop_at="dec-2-cross",
                       residual_stream_drop_tok="3", residual_stream_drop_p="0.5", residual_stream_drop_seed="9")
    assert at.selectbox(key="residual_stream.drop_at").value == "dec-2-cross"
    assert any(r"\frac{m_i\, y_i}{1-p}" in latex.value for latex in at.latex)
    update = sublayer_update(copy_model(checkpoint_dir), EXAMPLE, "decoder", 1, "cross_attn", 3)
    want = through_dropout(update, 0.5, 9)
    bars = [trace for trace in chart(at, "residual_stream.dropout_chart")["data"] if trace["type"] == "bar"]
    n = min(32, len(update))
    np.testing.assert_allclose(values(bars[0]["y"]), update[:n], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(values(bars[1]["y"]), want.train[:n], rtol=1e-4, atol=1e-6)
    assert at.metric[0].value == f"{want.dropped} / {len(update)}" and at.metric[1].value == "× 2"
    assert not at.exception
    clean(at.slider(key="residual_stream.drop_p").set_value(0.0).run())  # p = 0: training mode is eval mode
    bars = [trace for trace in chart(at, "residual_stream.dropout_chart")["data"] if trace["type"] == "bar"]
    np.testing.assert_allclose(values(bars[1]["y"]), values(bars[0]["y"]))
    assert query(at, "residual_stream_drop_p") == "0.0" and at.metric[0].value == f"0 / {len(update)}"


@pytest.mark.parametrize("name, bad", [("residual_stream_drop_p", "1"), ("residual_stream_drop_at", "enc-9-ffn"),
                                       ("residual_stream_drop_tok", "99"), ("residual_stream_drop_seed", "-1")])
def test_dropout_bad_link_values_fall_back(app, name, bad):
    at = open_residual(app, residual_stream_view="dropout", **{name: bad})
    assert not at.exception and chart(at, "residual_stream.dropout_chart")["data"]


# ------------------------------------------------------------------ both languages, other models


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("section", ["sizes", "off", "dropout"])
def test_every_section_in_both_languages(app, lang, section):
    at = open_residual(app, lang, rs_view=section, rs_off="enc-1-ffn")
    assert at.title[0].value == translate("residual_stream.title", lang)
    assert at.get("plotly_chart")


def test_a_pre_norm_model_says_so(app, tmp_path, monkeypatch):
    from ui import models

    torch.manual_seed(0)
    tokenizer = CharTokenizer(get_task("copy").alphabet)
    config = TransformerConfig(tokenizer.vocab_size, tokenizer.vocab_size, d_model=16, n_heads=2, n_layers=1, d_ff=32,
                               dropout=0.0, max_len=40, norm_first=True)
    save_checkpoint(tmp_path / "copy.pt", Transformer(config).eval(), tokenizer, {"name": "copy"})
    monkeypatch.setattr(models, "CHECKPOINT_DIR", tmp_path)
    at = open_residual(app, rs_view="off", rs_off="enc-1-self")
    assert any("pre-norm" in c.value for c in at.caption)
    assert any(r"x + \mathrm{Sublayer}\big(" in latex.value for latex in at.latex)
    assert len(at.metric) == 2


def test_a_token_that_is_markup_is_escaped_in_the_chart_title(app, tmp_path, monkeypatch):
    """An uploaded model's alphabet may hold '<': plotly's title shows it, never reads it as a tag."""
    from ui import models

    write_random_checkpoint(tmp_path / "copy.pt", "copy", seed=0, max_len=40, alphabet="ab<>")
    monkeypatch.setattr(models, "CHECKPOINT_DIR", tmp_path)
    at = open_residual(app, rs_text="a<b", rs_tok="1")
    titles = [a["text"] for a in chart(at, "residual_stream.path")["layout"]["annotations"]]
    assert any(title.startswith("Token &lt;:") for title in titles), titles

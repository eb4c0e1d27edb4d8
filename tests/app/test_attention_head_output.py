"""The attention page's "what attention produces" view (Inside one head) under AppTest, on a small random model.

The page's three heatmaps must be the model's own numbers: the chosen head's weights · V, every head side by
side, and that concatenation times the checkpoint's W^O plus b.
"""
from __future__ import annotations

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from explain.attention import KINDS
from model.checkpoint import load_checkpoint
from tests.app.apptest_helpers import chart, clean, open_script, random_model_fixtures, values
from ui.i18n import translate

N_LAYERS, N_HEADS, D_MODEL = 2, 2, 32
D_K = D_MODEL // N_HEADS
checkpoint_dir, random_models = random_model_fixtures(
    ("copy", 1), folder="head_output_checkpoints", d_model=D_MODEL, n_heads=N_HEADS, n_layers=N_LAYERS, d_ff=64,
    max_len=40)


def open_inside(app, **query: str) -> AppTest:
    return open_script(app, "app_pages/attention.py", {"lang": "en", "attention_view": "inside", **query})


def heatmaps(figure: dict) -> list[np.ndarray]:
    return [values(trace["z"]) for trace in figure["data"] if trace["type"] == "heatmap"]


def out_projection(checkpoint_dir, kind: str, layer: int) -> tuple[np.ndarray, np.ndarray]:
    """(W^O, b) of ``kind`` in ``layer`` (1-based), read from the checkpoint file, not from the page."""
    model = load_checkpoint(checkpoint_dir / "copy.pt").model
    block = model.encoder_layers[layer - 1] if kind == "encoder" else model.decoder_layers[layer - 1]
    attn = block.cross_attn if kind == "cross" else block.self_attn
    return attn.out_proj.weight.detach().double().numpy().T, attn.out_proj.bias.detach().double().numpy()


@pytest.mark.parametrize("kind", KINDS)
def test_the_output_is_the_concatenation_times_w_o(app, checkpoint_dir, kind):
    at = open_inside(app, att_kind=kind, att_layer="2", att_head="2")
    head, concat, output = heatmaps(chart(at, "attention.head_output"))
    weights = heatmaps(chart(at, "attention.weights"))[0]
    v = heatmaps(chart(at, "attention.vectors"))[2]
    assert head.shape == (weights.shape[0], D_K)
    assert concat.shape == output.shape == (weights.shape[0], D_MODEL)
    assert np.allclose(head, weights @ v, atol=1e-3)  # weights · V, from the pictures above it
    assert np.allclose(concat[:, D_K:2 * D_K], head, atol=1e-6)  # head 2 takes the second block of columns
    w_o, bias = out_projection(checkpoint_dir, kind, 2)
    assert np.allclose(output, concat @ w_o + bias, atol=1e-4)


def test_shapes_are_written_on_each_step(app):
    at = open_inside(app, att_kind="encoder", att_layer="1", att_head="1", att_text="abcde")
    titles = [a["text"] for a in chart(at, "attention.head_output")["layout"]["annotations"]][:3]
    assert titles == [translate("attention.head_output.title_head", "en", head=1, tq=5, d_k=D_K),
                      translate("attention.head_output.title_concat", "en", tq=5, hd=D_MODEL),
                      translate("attention.head_output.title_output", "en", tq=5, d_model=D_MODEL)]
    shapes = translate("attention.head_output.shapes", "en", head=1, tq=5, tk=5, d_k=D_K, h=N_HEADS, hd=D_MODEL,
                       d_model=D_MODEL)
    assert shapes in [m.value for m in at.markdown]


def test_another_head_moves_the_outline(app):
    at = open_inside(app, att_kind="encoder", att_layer="1", att_head="1")
    rect = [s for s in chart(at, "attention.head_output")["layout"]["shapes"] if s["type"] == "rect"][0]
    assert rect["x0"] == -0.5
    clean(at.segmented_control(key="attention.head").set_value(2).run())
    rect = [s for s in chart(at, "attention.head_output")["layout"]["shapes"] if s["type"] == "rect"][0]
    assert rect["x0"] == D_K - 0.5


def test_both_languages(app):
    for lang in ("en", "zh"):
        at = open_script(app, "app_pages/attention.py", {"lang": lang, "attention_view": "inside"})
        headings = [m.value for m in at.markdown]
        assert f"**{translate('attention.head_output.heading', lang)}**" in headings
        caption = " ".join(c.value for c in at.caption)
        assert translate("attention.head_output.residual_post", lang) in caption

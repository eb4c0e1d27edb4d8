"""The code panels under AppTest (issue #30): each page's panel names the functions that computed
its view, lists the live intermediates of the current input with the shapes the trace holds, and
selecting one marks its line and frames the picture that shows it. Both languages.
"""
from __future__ import annotations

import json
import re

import pytest
from streamlit.testing.v1 import AppTest

from explain.code import SNIPPETS, source_of
from model.checkpoint import load_checkpoint
from tests.app.apptest_helpers import chart, clean, open_script, random_model_fixtures
from ui.code_panel import step_key
from ui.i18n import translate

N_LAYERS, N_HEADS, D_MODEL = 2, 2, 32
checkpoint_dir, random_models = random_model_fixtures(
    ("copy", 1), folder="code_panel_checkpoints", d_model=D_MODEL, n_heads=N_HEADS, n_layers=N_LAYERS,
    d_ff=64, max_len=40)


def panel_html(at: AppTest) -> list[str]:
    """The highlighted sources the page's panels show (st.html bodies)."""
    return [e.proto.body for e in at.get("html") if 'class="tp-code"' in e.proto.body]


def marked_lines(body: str) -> list[int]:
    found = re.search(r'data-marked="([0-9,]*)"', body)
    return [int(n) for n in found.group(1).split(",") if n] if found else []


def outlined(figure: dict) -> bool:
    return any(shape.get("xref") == "paper" and shape.get("line", {}).get("color") == "#ff8700"
               for shape in figure["layout"].get("shapes", []))


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("kind", ["encoder", "decoder", "cross"])
def test_the_attention_panel_lists_live_shapes_and_marks_the_line_and_picture(app, checkpoint_dir, lang, kind):
    at = open_script(app, "app_pages/attention.py", {"lang": lang, "attention_view": "inside",
                                                     "attention_kind": kind, "attention_layer": "2",
                                                     "attention_head": "1"})
    names = ", ".join(source_of(SNIPPETS[k].path).qualname
                      for k in ("multi_head", "scaled_dot_product_attention", "masked_softmax"))
    assert translate("code.panel.title", lang, names=names) in [e.label for e in at.expander]
    bodies = panel_html(at)
    assert len(bodies) == 3 and all(marked_lines(b) == [] for b in bodies)
    assert not outlined(chart(at, "attention.scores"))

    table = at.dataframe[-1].value
    shapes = dict(zip(table[translate("code.column.name", lang)], table[translate("code.column.shape", lang)]))
    att = {"encoder": "encoder.1.self_attn", "decoder": "decoder.1.self_attn", "cross": "decoder.1.cross_attn"}[kind]
    d_k = load_checkpoint(checkpoint_dir / "copy.pt").model.config.d_model // N_HEADS
    q_shape = eval(shapes[f"{att}.q"])  # noqa: S307 - the page's own text, a tuple literal
    k_shape = eval(shapes[f"{att}.k"])  # noqa: S307
    assert q_shape[:2] == (1, N_HEADS) and q_shape[3] == d_k and k_shape[3] == d_k
    assert eval(shapes[f"{att}.scores"]) == (1, N_HEADS, q_shape[2], k_shape[2])  # noqa: S307
    assert eval(shapes[f"{att}.concat"]) == (1, q_shape[2], D_MODEL)  # noqa: S307
    mask_stack = "decoder" if kind == "decoder" else "encoder"
    assert f"{mask_stack}.mask" in shapes

    clean(at.radio(key=step_key("attention")).set_value("scores").run())
    sdpa = source_of(SNIPPETS["scaled_dot_product_attention"].path)
    bodies = panel_html(at)
    marked = [marked_lines(b) for b in bodies]
    assert marked[1] == [sdpa.lines_of("scores = q @ k.transpose")[0]]
    assert marked[0] == [] and marked[2] == []
    assert outlined(chart(at, "attention.scores")) and not outlined(chart(at, "attention.weights"))
    assert "scores = q @ k.transpose" in re.sub(r"<[^>]+>", "", bodies[1]).replace("&gt;", ">")

    clean(at.radio(key=step_key("attention")).set_value("weights").run())
    assert outlined(chart(at, "attention.weights")) and not outlined(chart(at, "attention.scores"))


def test_the_copy_tab_gives_the_imports_and_the_source_that_runs(app):
    at = open_script(app, "app_pages/attention.py", {"lang": "en", "attention_view": "inside"})
    codes = [e.value for e in at.code]
    sdpa = source_of(SNIPPETS["scaled_dot_product_attention"].path)
    assert sdpa.text in codes and sdpa.imports in codes
    assert "from model.attention import masked_softmax" in sdpa.imports


def test_the_panel_follows_a_swapped_function(app, monkeypatch):
    """The panel reads the object that runs: replace the function in its module and the panel shows the new one."""
    import model.attention

    def scaled_dot_product_attention(q, k, v, mask=None, *, scale_scores=True):  # a learner's version
        weights = model.attention.masked_softmax(q @ k.transpose(-2, -1) / q.size(-1) ** 0.5, mask)
        return weights @ v, weights, None

    monkeypatch.setattr(model.attention, "scaled_dot_product_attention", scaled_dot_product_attention)
    at = open_script(app, "app_pages/attention.py", {"lang": "en", "attention_view": "inside"})
    codes = [e.value for e in at.code]
    assert any("# a learner's version" in code for code in codes)
    assert any("tests/app/test_code_panel.py" in str(m.value) for m in at.markdown)

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
from ui.code_panel import copy_text, open_key, step_key
from ui.i18n import translate

N_LAYERS, N_HEADS, D_MODEL = 2, 2, 32
checkpoint_dir, random_models = random_model_fixtures(
    ("copy", 1), folder="code_panel_checkpoints", d_model=D_MODEL, n_heads=N_HEADS, n_layers=N_LAYERS,
    d_ff=64, max_len=40)


def panel_html(at: AppTest) -> list[str]:
    """The highlighted sources the page's panels show (st.html bodies)."""
    return [e.proto.body for e in at.get("html") if 'class="tp-code"' in e.proto.body]


def steps_rows(elements) -> list[dict[str, str]]:
    """The live-intermediates table's rows (name, shape, lines) of the panels among ``elements``."""
    bodies = [e.proto.body for e in elements if "tp-steps" in e.proto.body]
    return [dict(zip(("name", "shape", "lines"), row)) for body in bodies
            for row in re.findall(r"<tr data-name='([^']*)' data-shape='([^']*)' data-lines='([^']*)'>", body)]


def marked_lines(body: str) -> list[int]:
    found = re.search(r'data-marked="([0-9,]*)"', body)
    return [int(n) for n in found.group(1).split(",") if n] if found else []


def outlined(figure: dict) -> bool:
    return any(shape.get("xref") == "paper" and shape.get("line", {}).get("color") == "#ff8700"
               for shape in figure["layout"].get("shapes", []))


def test_a_closed_panel_draws_nothing_and_opening_it_draws_it(app, checkpoint_dir):
    at = open_script(lambda **kw: app(**kw, code_open=False), "app_pages/attention.py",
                     {"lang": "en", "attention_view": "inside", "attention_layer": "1", "attention_head": "1"})
    names = ", ".join(source_of(SNIPPETS[k].path).qualname
                      for k in ("multi_head", "split_heads", "scaled_dot_product_attention", "masked_softmax"))
    title = translate("code.panel.title", "en", names=names)
    closed = next(e for e in at.expander if e.label == title)
    assert not closed.children and not panel_html(at) and not steps_rows(at.get("html"))

    at.session_state[open_key("attention")] = True  # what a click on the panel's title does
    clean(at.run())
    assert len(panel_html(at)) == 4 and steps_rows(at.get("html"))
    clean(at.radio(key=step_key("attention")).set_value("scores").run())
    assert outlined(chart(at, "attention.scores"))

    at.session_state[open_key("attention")] = False  # closed again: the pick and its frame go with it
    clean(at.run())
    assert not panel_html(at) and not outlined(chart(at, "attention.scores"))
    assert step_key("attention") not in at.session_state


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("kind", ["encoder", "decoder", "cross"])
def test_the_attention_panel_lists_live_shapes_and_marks_the_line_and_picture(app, checkpoint_dir, lang, kind):
    at = open_script(app, "app_pages/attention.py", {"lang": lang, "attention_view": "inside",
                                                     "attention_kind": kind, "attention_layer": "2",
                                                     "attention_head": "1"})
    names = ", ".join(source_of(SNIPPETS[k].path).qualname
                      for k in ("multi_head", "split_heads", "scaled_dot_product_attention", "masked_softmax"))
    assert translate("code.panel.title", lang, names=names) in [e.label for e in at.expander]
    bodies = panel_html(at)
    assert len(bodies) == 4 and all(marked_lines(b) == [] for b in bodies)
    assert not outlined(chart(at, "attention.scores"))

    shapes = {row["name"]: row["shape"] for row in steps_rows(at.get("html"))}
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
    assert marked[2] == [sdpa.lines_of("scores = q @ k.transpose")[0]]
    assert marked[0] == marked[1] == marked[3] == []
    assert outlined(chart(at, "attention.scores")) and not outlined(chart(at, "attention.weights"))
    assert "scores = q @ k.transpose" in re.sub(r"<[^>]+>", "", bodies[2]).replace("&gt;", ">")

    clean(at.radio(key=step_key("attention")).set_value("weights").run())
    assert outlined(chart(at, "attention.weights")) and not outlined(chart(at, "attention.scores"))


def test_the_copy_tab_gives_the_imports_and_the_source_that_runs(app):
    at = open_script(app, "app_pages/attention.py", {"lang": "en", "attention_view": "inside"})
    codes = [e.value for e in at.code]
    sdpa = source_of(SNIPPETS["scaled_dot_product_attention"].path)
    assert copy_text(sdpa) in codes and copy_text(sdpa).startswith(sdpa.imports)
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


# ------------------------------------------------------------------ every page's panel

# page -> (URL values, the panels it shows: their snippet keys, and whether each lists live intermediates)
PANELS: dict[str, tuple[dict[str, str], tuple[tuple[tuple[str, ...], bool], ...]]] = {
    "tokens": ({}, ((("token_embedding", "embed"), True),)),
    "masks": ({"masks_view": "matrices"},
              ((("padding_mask", "look_ahead_mask", "target_mask", "masked_softmax"), True),)),
    "masks?sparse": ({"masks_view": "sparse", "masks_pattern": "global"},
                     ((("global_window_mask", "window_mask", "restricted_attention", "restricted_look_ahead"), False),)),
    "positional_encoding": ({}, ((("positional_encoding", "embed"), False), (("rope", "rope_half"), False))),
    "feed_forward": ({"feed_forward_view": "inside"}, ((("feed_forward", "swiglu"), True),)),
    "residual_stream": ({}, ((("sublayer", "encoder_layer", "encode"), True),)),
    "layer_norm": ({}, ((("layer_norm", "rms_norm", "sublayer"), True),)),
    "decoding": ({}, ((("greedy", "decode_loop"), False), (("kv_cache",), False))),
    "output_and_loss": ({}, ((("decode", "label_smoothing"), True),)),
    "bleu": ({"bleu_view": "worked", "bleu_pair": "typed"}, ((("bleu_count", "ngrams", "bleu_clip", "bleu_score"), False),)),
    "attention_cost": ({}, ((("scaled_dot_product_attention", "fast_attention"), False),)),
    "training": ({}, ((("noam",), False),)),
    "home": ({}, ((("forward", "encode", "decode"), False),)),
}


TITLE_NAMES = {("global_window_mask", "window_mask", "restricted_attention", "restricted_look_ahead"):
               "masks.sparse.code_names"}  # a panel whose functions follow the view keeps one title


def panel_title(keys: tuple[str, ...], lang: str) -> str:
    names = (translate(TITLE_NAMES[keys], lang) if keys in TITLE_NAMES
             else ", ".join(source_of(SNIPPETS[k].path).qualname for k in keys))
    return translate("code.panel.title", lang, names=names)


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("page", sorted(PANELS))
def test_every_page_shows_the_code_that_computed_its_view(app, page, lang):
    query, panels = PANELS[page]
    at = open_script(app, f"app_pages/{page.split('?')[0]}.py", {"lang": lang, **query}, home_first=True)
    expanders = {e.label: e for e in at.expander}
    for keys, live in panels:
        title = panel_title(keys, lang)
        assert title in expanders, (title, list(expanders))
        panel = expanders[title]
        sources = [source_of(SNIPPETS[k].path) for k in keys]
        shown = [c.value for c in panel.code]
        assert all(copy_text(src) in shown for src in sources)
        rows = steps_rows(panel.get("html"))
        assert bool(rows) == live
        if live:
            first, last = min(s.first_line for s in sources), max(s.last_line for s in sources)
            for row in rows:
                assert all(first <= int(n) <= last for n in row["lines"].split(", "))
                assert re.fullmatch(r"\((\d+, )*\d+\)", row["shape"])
            radio = panel.radio[0]
            assert radio.value is None and len(radio.options) == len(rows)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_masks_panel_shows_why_not_minus_infinity(app, lang):
    at = open_script(app, "app_pages/masks.py", {"lang": lang}, home_first=True)
    notes = " ".join(str(m.value) for e in at.expander for m in e.markdown)
    assert "`[nan, nan, nan]`" in notes and "`[0, 0, 0]`" in notes


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_panel_links_the_paper_vs_code_rows_it_concerns(app, lang):
    at = open_script(app, "app_pages/masks.py", {"lang": lang}, home_first=True)
    links = [e.proto for e in at.get("page_link")]
    wanted = {row: translate("code.panel.paper_link", lang, title=translate(f"paper_vs_code.rows.{row}.title", lang))
              for row in ("mask_polarity", "neg_inf")}
    for row, label in wanted.items():
        found = [link for link in links if link.label == label]
        assert len(found) == 1, (label, [link.label for link in links])
        assert found[0].page == "paper-vs-code" and f"paper_vs_code_row={row}" in found[0].query_string

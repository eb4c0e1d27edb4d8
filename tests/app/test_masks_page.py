"""The masks page under AppTest, on a small random model written for the test (no training).

The checks read what the page shows: the masks and attention maps as plotly JSON, captions, code.
"""
from __future__ import annotations

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from explain import masks as em
from explain.tokens import batch_of
from model.checkpoint import load_checkpoint
from tests.app import apptest_helpers as helpers
from tests.app.apptest_helpers import BAD_INPUTS, clean, open_script, random_model_fixtures, values
from ui import models
from ui.i18n import LANGS, translate

N_LAYERS, N_HEADS = 2, 2
BATCH = "hello world\nattention is all you need\nhi!"
SEED, MODEL = 5, dict(d_model=16, n_heads=N_HEADS, n_layers=N_LAYERS, d_ff=32)
checkpoint_dir, random_model = random_model_fixtures(("copy", SEED), folder="masks_checkpoints", max_len=64, **MODEL)


def open_masks(app, **query: str) -> AppTest:
    return open_script(app, "app_pages/masks.py", {"lang": "en", **query})


# The page shows one section at a time, each picture a chart of its own: {picture: (section, chart key)}.
CHARTS = {
    **{f"matrix_{name}": ("matrices", f"masks.matrix.{name}") for name in ("padding", "look_ahead", "combined")},
    **{f"attention_{kind}_{n}": ("effect", f"masks.effect.{kind}.{n}")
       for kind in ("encoder", "decoder") for n in (0, 1)},
    **{f"row_{name}": ("row", f"masks.row.{name}") for name in ("raw", "masked", "weights")},
}


def show(at: AppTest, section: str) -> AppTest:
    """Switch the page to ``section`` (matrices, printout, effect, row) unless it is shown already."""
    control = at.segmented_control(key="masks.section")
    if control.value != section:
        clean(control.set_value(section).run())
        assert at.query_params["masks_view"] in (section, [section])
    return at


def switch(at: AppTest, mask: str, on: bool) -> AppTest:
    """Flip the ``mask`` toggle ("padding", "look_ahead") to ``on`` or off."""
    return clean(at.toggle(key=f"masks.{mask}").set_value(on).run())


def chart(at: AppTest, key: str) -> dict:
    """One picture of the page (e.g. ``matrix_padding``), switching to its section first."""
    section, chart_key = CHARTS[key]
    show(at, section)
    return helpers.chart(at, chart_key)


def z_of(figure: dict) -> np.ndarray:
    return values(figure["data"][0]["z"])


def ticks(figure: dict) -> list[str]:
    return figure["layout"]["xaxis"]["ticktext"]


PAD = "&lt;pad&gt;"


def pad_columns(figure: dict) -> list[int]:
    """The key positions holding <pad>, as the hover names them (a long axis labels every other tick only)."""
    return [j for j, (_, key) in enumerate(figure["data"][0]["customdata"][0]) if key == PAD]


def captions(at: AppTest) -> list[str]:
    return [c.value for c in at.caption]


def text(key: str, **fmt) -> str:
    return translate(f"masks.{key}", "en", **fmt)


# ------------------------------------------------------------------ default view


@pytest.mark.parametrize("lang", LANGS)
def test_default_view_in_both_languages(app, lang):
    at = open_masks(app, lang=lang)
    assert at.title[0].value == translate("masks.title", lang)
    assert any(r"\mathrm{Attention}" in lat.value for lat in at.latex)
    assert [(s.key, s.label, s.value) for s in at.main.toggle] == [  # one switch per mask, both on
        ("masks.padding", translate("masks.padding_switch", lang), True),
        ("masks.look_ahead", translate("masks.look_ahead_switch", lang), True)]
    assert at.segmented_control(key="masks.section").value == "matrices"
    assert len(at.get("plotly_chart")) == 3  # the three masks
    assert "training" in [link.proto.page.strip("/") for link in at.get("page_link")]
    assert at.selectbox(key="batch.sentence").value == 0


@pytest.mark.parametrize("lang", LANGS)
def test_the_formulas_speak_the_language_of_the_page(app, lang):
    """The words inside the formulas come from the catalog: no English left in the 中文 page's formulas."""
    at = open_masks(app, lang=lang, mask_view="row")
    formulas = " ".join(lat.value for lat in at.latex)
    assert r"\text{: " + translate("masks.formula_true", lang) + "}" in formulas
    assert translate("masks.row.formula_hidden", lang) in formulas
    if lang == "zh":
        assert "may attend" not in formulas and "hidden key" not in formulas


def test_masks_are_drawn_for_the_sentence_and_three_pads(app):
    """A short sentence of a long batch: its tokens and 3 of its 22 <pad>, not a 25×25 wall of <pad>;
    the text still counts the whole padded input, and a caption says how many <pad> are left out."""
    at = open_masks(app, sent="2")  # "hi!": 3 tokens padded to 25 (decoder input: <bos> hi! padded to 26)
    padding, ahead, combined = (chart(at, f"matrix_{k}") for k in ("padding", "look_ahead", "combined"))
    pad = z_of(padding)
    assert pad.shape == (6, 6) and (pad[:, :3] == 1).all() and (pad[:, 3:] == 0).all()
    assert ticks(padding) == ["h", "i", "!", PAD, PAD, PAD]
    assert (z_of(ahead) == np.tril(np.ones((7, 7)))).all()
    expected = np.tril(np.ones((7, 7)))
    expected[:, 4:] = 0
    assert (z_of(combined) == expected).all()
    assert text("matrices.intro", s=25, pads=22, t=26, tpads=22) in [m.value for m in at.markdown]
    notes = " ".join(captions(at))
    assert text("crop.encoder", real=3, shown=3, more=19, total=25) in notes
    assert text("crop.decoder", real=4, shown=3, more=19, total=26) in notes


def test_matrix_cells_say_true_or_false_and_the_hover_names_tokens_and_value(app):
    at = open_masks(app, sent="2")
    trace = chart(at, "matrix_padding")["data"][0]
    assert trace["texttemplate"] == "%{text}" and trace["textfont"]["size"] >= 12  # 6 a side: whole words
    assert trace["text"][0][0] == "True" and trace["text"][0][5] == "False"
    assert trace["customdata"][0][5] == ["h", PAD, "False"] and "%{customdata[2]}" in trace["hovertemplate"]
    longer = chart(open_masks(app, sent="0"), "matrix_padding")["data"][0]  # "hello world": 11 + 3 <pad> a side
    assert longer["texttemplate"] == "%{text}" and longer["text"][0][13] == "F"  # too narrow for the word
    assert longer["customdata"][0][13][2] == "False"  # ... which the hover still says


def test_printouts_and_the_corrected_seed_example(app):
    at = open_masks(app, sent="2", mask_view="printout")
    in_panel = {c.value for e in at.expander for c in e.code}  # the code panel's sources and imports
    codes = [c.value for c in at.code if c.value not in in_panel]
    # "hi!" at its own length as the pictures draw it: 3 tokens and 3 <pad>, not a wall of 25 × 26
    assert codes[0] == "tensor([[[[ True,  True,  True, False, False, False]]]])"
    assert codes[1].startswith("tensor([[ True, False,") and len(codes[1].splitlines()) == 7
    assert len(codes[2].splitlines()) == 7
    notes = " ".join(captions(at))
    assert text("crop.encoder", real=3, shown=3, more=19, total=25) in notes
    seed = codes[3]
    assert "[ True,  True,  True, False, False]]]])" in seed
    assert seed.count("[ True,  True,  True, False, False]") == 3  # rows 2-4; the notes had rows 3-4 wrong


# ------------------------------------------------------------------ the switches and the real attention


def test_padding_mask_on_zeroes_pad_columns_and_off_leaks(app):
    at = open_masks(app, sent="0")  # "hello world": 11 tokens padded to 25; 3 <pad> drawn
    current = chart(at, "attention_encoder_0")
    assert current["layout"]["title"]["text"] == text("effect.encoder_title", state=text("effect.on"))
    pads = pad_columns(current)
    assert pads == [11, 12, 13] and z_of(current).shape == (14, 14)
    assert (z_of(current)[:, pads] == 0).all()
    flipped = chart(at, "attention_encoder_1")
    assert (z_of(flipped)[:11, pads] > 0).all()

    switch(at, "padding", False)
    assert at.query_params["masks_pad"] in ("false", ["false"])
    assert at.query_params["masks_ahead"] in ("true", ["true"])
    current = chart(at, "attention_encoder_0")
    assert current["layout"]["title"]["text"] == text("effect.encoder_title", state=text("effect.off"))
    assert (z_of(current)[:11, pads] > 0).all()
    assert (z_of(chart(at, "attention_encoder_1"))[:, pads] == 0).all()
    assert any("%" in c and "`<pad>`" in c for c in captions(at))
    assert (z_of(chart(at, "matrix_padding")) == 1).all()


def test_the_leak_share_is_that_of_the_whole_padded_input(app, checkpoint_dir):
    """Only the picture is cropped: the share of attention that leaks to <pad> counts all 22 of them."""
    at = open_masks(app, sent="2", mask_pad="false", mask_view="effect")
    ckpt = load_checkpoint(checkpoint_dir / "copy.pt")
    pair = em.pair_tokens(batch_of(ckpt, tuple(BATCH.splitlines())), 2)
    full = em.head_map(em.masked_attention(ckpt, pair.src_ids, pair.tgt_ids, False, True), "encoder", 0, 0)
    share = em.leak_share(full.weights, full.hideable, pair.real("encoder"))
    drawn = full.cropped(pair.drawn("encoder"))
    cropped_share = em.leak_share(drawn.weights, drawn.hideable, pair.real("encoder")[:6])
    assert f"{share:.1%}" != f"{cropped_share:.1%}"  # the test tells the two apart
    notes = " ".join(captions(at))
    assert text("effect.encoder_off_caption", share=f"{share:.1%}") in notes
    assert text("effect.crop_numbers") in notes
    assert (z_of(chart(at, "attention_encoder_0")) == drawn.weights.astype(np.float32)).all()


def test_marked_cells_are_one_trace_each_and_no_picture_has_shapes(app):
    """What the browser paints: the hidden cells are one outline and one flat grey layer, the leaks one
    outline (never a shape or a marker per cell), and no picture carries shapes or annotations."""
    at = open_masks(app, sent="2", mask_pad="false")  # "hi!": 3 real tokens, 22 <pad>, 3 of them drawn
    for key in CHARTS:
        figure = chart(at, key)
        assert not figure["layout"].get("shapes") and not figure["layout"].get("annotations"), key
        assert len(figure["data"]) <= 4, key  # values, hidden outline + grey layer, leak outline
    leaked = chart(at, "attention_encoder_0")["data"]
    assert [trace["type"] for trace in leaked] == ["heatmap", "scatter"]
    assert leaked[1]["mode"] == "lines" and len(leaked[1]["meta"]) == 6 * 3  # one outline for every leak drawn
    assert len(leaked[1]["x"]) == 4 * 3  # ... drawn as the block's four sides, not a frame per cell


def test_look_ahead_mask_on_hides_the_future_and_off_sees_it(app):
    at = open_masks(app, sent="0")  # decoder input: <bos> + 11 tokens, and 3 of its 14 <pad> drawn
    upper = np.triu(np.ones((15, 15), bool), k=1)
    assert (z_of(chart(at, "attention_decoder_0"))[upper] == 0).all()
    assert (z_of(chart(at, "attention_decoder_1"))[:12, :12][upper[:12, :12]] > 0).all()
    switch(at, "look_ahead", False)
    assert at.query_params["masks_ahead"] in ("false", ["false"])
    current = z_of(chart(at, "attention_decoder_0"))
    assert (current[:12, :12][upper[:12, :12]] > 0).all()  # real positions read later real positions
    assert (z_of(chart(at, "matrix_look_ahead")) == 1).all()
    combined = z_of(chart(at, "matrix_combined"))
    assert (combined[:, :12] == 1).all() and (combined[:, 12:] == 0).all()  # padding alone is left


def test_both_switches_off(app):
    at = open_masks(app, mask_pad="false", mask_ahead="false", sent="2")
    for key in ("padding", "look_ahead", "combined"):
        assert (z_of(chart(at, f"matrix_{key}")) == 1).all()
    assert [c.value for c in show(at, "printout").code][:3] == ["None", "None", "None"]
    assert (z_of(chart(at, "attention_encoder_0")) > 0).all()


def test_the_longest_sentence_has_nothing_to_pad(app):
    at = open_masks(app, sent="1")
    assert any(i.value == text("matrices.no_padding") for i in at.info)
    assert any(text("effect.encoder_nothing") in c for c in captions(show(at, "effect")))


@pytest.mark.parametrize(("layer", "head"), [(0, 0), (N_LAYERS - 1, N_HEADS - 1)])
def test_layer_and_head_extremes(app, layer, head):
    at = open_masks(app, mask_view="effect")
    at.selectbox(key="masks.layer").set_value(layer)
    clean(at.selectbox(key="masks.head").set_value(head).run())
    assert at.query_params["masks_layer"] in (str(layer), [str(layer)])
    assert (z_of(chart(at, "attention_encoder_0"))[:, 11:] == 0).all()


def test_out_of_range_layer_in_the_url_is_refused(app):
    at = open_masks(app, mask_layer="7", mask_view="effect")
    assert at.selectbox(key="masks.layer").value == 0
    assert len(at.toast) == 1


# ------------------------------------------------------------------ one row, step by step


@pytest.mark.parametrize("kind", ["encoder", "decoder"])
def test_row_steps_at_both_query_extremes(app, kind):
    at = open_masks(app, sent="2", mask_kind=kind, mask_view="row")
    last = 5 if kind == "encoder" else 6  # "hi!" as drawn: 3 (or <bos> + 3) tokens and 3 <pad>
    assert at.select_slider(key="masks.query").options[-1].startswith(f"{last}: ")
    for query in (0, last):
        clean(at.select_slider(key="masks.query").set_value(query).run())
        raw, masked, weights = (chart(at, f"row_{k}") for k in ("raw", "masked", "weights"))
        w = values(weights["data"][0]["y"])
        hidden = values(masked["data"][1]["x"]).astype(int)  # the ✕ markers
        assert len(w) == last + 1 and len(hidden) and (w[hidden] == 0).all()
        assert w.sum() == pytest.approx(1.0)  # the hidden <pad> not drawn take nothing either
        assert np.isnan(values(masked["data"][0]["y"])[hidden]).all()  # −∞: no bar at all
        assert np.isfinite(values(raw["data"][0]["y"])).all()


def test_row_steps_without_masks_hide_nothing(app):
    at = open_masks(app, mask_pad="false", mask_ahead="false", mask_kind="decoder", mask_query="3", mask_view="row")
    weights = chart(at, "row_weights")
    assert len(weights["data"]) == 1 and (values(weights["data"][0]["y"]) > 0).all()


def test_switching_to_a_shorter_sentence_keeps_the_query_in_range(app):
    at = open_masks(app, mask_kind="encoder", sent="1", mask_view="row")
    clean(at.select_slider(key="masks.query").set_value(24).run())
    clean(at.selectbox(key="batch.sentence").set_value(2).run())
    assert at.select_slider(key="masks.query").value == 5  # "hi!" is drawn with 3 <pad>: positions 0..5
    assert at.query_params["masks_query"] in ("5", ["5"])
    clean(at.text_area(key="batch.text").input("ab\nabcd").run())
    assert at.select_slider(key="masks.query").value == 3
    assert at.selectbox(key="batch.sentence").value == 1


# ------------------------------------------------------------------ bad input, no model


@pytest.mark.parametrize("name", list(BAD_INPUTS))
@pytest.mark.parametrize("lang", LANGS)
def test_bad_input_never_breaks_the_page(app, name, lang):
    at = open_masks(app, lang=lang)
    clean(at.text_area(key="batch.text").input(BAD_INPUTS[name]).run())
    warnings = [w.value for w in at.warning]
    if name in ("empty", "spaces"):
        assert warnings == [translate("common.input.empty", lang)]
        assert not at.get("plotly_chart")
        return
    if name == "long":
        assert translate("common.input.truncated", lang, limit=48) in warnings
    if name == "many_lines":
        assert translate("common.input.too_many_lines", lang, limit=8, count=12) in warnings
    assert len(at.get("plotly_chart")) == 3
    for figure in (chart(at, "matrix_padding"), chart(at, "attention_encoder_0")):
        labels = "".join(ticks(figure))
        assert "<b>" not in labels and "<s>" not in labels and "<script>" not in labels


def test_without_a_model_the_masks_still_show(app, monkeypatch, tmp_path):
    monkeypatch.setattr(models, "CHECKPOINT_DIR", tmp_path)
    at = open_masks(app)
    assert len(at.get("plotly_chart")) == 3
    assert (z_of(chart(at, "matrix_padding"))[:, :11] == 1).all()
    show(at, "effect")
    assert any(i.value == text("effect.no_model") for i in at.info) and not at.get("plotly_chart")


def test_the_batch_is_shared_with_the_tokens_page_and_survives_page_switches(app):
    at = open_masks(app)
    clean(at.text_area(key="batch.text").input("abc\nab").run())
    clean(at.selectbox(key="batch.sentence").set_value(1).run())
    switch(at, "padding", False)
    clean(at.switch_page("app_pages/tokens.py").run())
    assert at.text_area(key="batch.text").value == "abc\nab"
    assert at.selectbox(key="batch.sentence").value == 1
    clean(at.switch_page("app_pages/masks.py").run())
    assert at.text_area(key="batch.text").value == "abc\nab"
    assert at.toggle(key="masks.padding").value is False and at.toggle(key="masks.look_ahead").value is True
    assert at.query_params["masks_pad"] in ("false", ["false"])


def test_a_model_with_few_positions_gets_shorter_sentences(app, monkeypatch, tmp_path):
    helpers.write_random_checkpoint(tmp_path / "copy.pt", "copy", seed=SEED, max_len=16, **MODEL)
    monkeypatch.setattr(models, "CHECKPOINT_DIR", tmp_path)
    for page in ("app_pages/masks.py", "app_pages/tokens.py"):
        at = app(query={"lang": "en", "sent": "1"})
        clean(at.switch_page(page).run())
        assert translate("common.input.truncated", "en", limit=15) in [w.value for w in at.warning]
    at = app(query={"lang": "en", "positional_encoding_text": "the quick brown fox jumps"})
    clean(at.run())
    clean(at.switch_page("app_pages/positional_encoding.py").run())
    assert translate("common.input.truncated", "en", limit=15) in [w.value for w in at.warning]


def test_small_masks_spell_out_true_and_false(app):
    at = open_masks(app, batch="abc\nab", sent="1")
    trace = chart(at, "matrix_padding")["data"][0]
    assert trace["text"][0] == ["True", "True", "False"]
    assert trace["texttemplate"] == "%{text}"  # 3 a side: the words are written in the cells
    assert trace["customdata"][0][2] == ["a", PAD, "False"]  # the hover names the tokens and the value
    zh = open_masks(app, lang="zh", batch="abc\nab", sent="1")
    assert chart(zh, "matrix_padding")["data"][0]["text"][0][2] == translate("masks.matrices.false", "zh")


@pytest.mark.parametrize("lang", LANGS)
def test_why_a_mask_when_positions_give_the_order_is_asked_and_answered(app, lang):
    """#31: the question a class asks on this page, answered beside the link to the run without the mask."""
    at = open_masks(app, lang=lang)
    shown = [str(m.value) for m in at.markdown]
    question = f"**{translate('masks.training.question', lang)}**"
    assert question in shown and translate("masks.training.answer", lang) in shown
    assert shown.index(question) > shown.index(translate("masks.training.body", lang))  # after the experiment it explains
    assert not at.exception


# ------------------------------------------------------------------ cheaper attention: sparse patterns (#32)


def sparse_z(at: AppTest, side: str) -> np.ndarray:
    return z_of(helpers.chart(at, f"masks.sparse.{side}"))


def page_links(at: AppTest) -> list[tuple[str, str]]:
    return [(link.proto.page.strip("/"), link.proto.query_string) for link in at.get("page_link")]


@pytest.mark.parametrize("lang", LANGS)
def test_the_sparse_section_draws_a_window_counts_its_scores_and_runs_the_model(app, lang):
    """"hi!": 3 source tokens, 4 decoder inputs; a window of radius 1 keeps 7 of 9 and, with the look-ahead
    mask, 7 of the causal 10 (the sentence alone: no <pad>)."""
    at = open_masks(app, lang=lang, sent="2", masks_view="sparse")
    assert at.segmented_control(key="masks.pattern").value == "window"
    assert [s.key for s in at.slider] == ["masks.radius"] and at.slider(key="masks.radius").value == 1
    np.testing.assert_array_equal(sparse_z(at, "encoder"), em.Pattern("window", radius=1).matrix(3))
    np.testing.assert_array_equal(sparse_z(at, "decoder"), np.tril(em.Pattern("window", radius=1).matrix(4)))
    title = helpers.chart(at, "masks.sparse.encoder")["layout"]["title"]["text"].replace("<br>", " ")
    assert title == translate("masks.sparse.encoder_title", lang, cells=7, full=9)
    counts = translate("masks.sparse.counts", lang, n=3, cells=7, full=9, share="78%", t=4, dcells=7, causal=10,
                       dshare="70%", dfull=16, fshare="44%")
    assert counts in captions(at)
    assert translate("masks.sparse.connect", lang, layers=2) + " " + translate(
        "masks.sparse.connect_enough", lang, have=N_LAYERS) in [m.value for m in at.markdown]
    assert "attention-cost" in [page for page, _ in page_links(at)]
    table = at.dataframe[0].value
    assert list(table.columns) == [translate(f"masks.sparse.col_{c}", lang) for c in ("mask", "answer", "prob")]
    assert table.iloc[0, 0] == translate("masks.sparse.full_mask", lang)
    where = translate("masks.sparse.where_encoder", lang)
    assert table.iloc[1, 0] == translate("masks.sparse.name_window", lang, r=1) + f" ({where})"
    assert all(0 <= float(p) <= 1 for p in table.iloc[:, 2])
    assert at.toggle(key="masks.sparse_decoder").value is False


def test_the_answers_are_the_models_own(app, checkpoint_dir):
    """The table's numbers are explain.masks.restricted_answers on the page's model and sentence."""
    at = open_masks(app, sent="0", masks_view="sparse", masks_pattern="block", masks_block="2",
                    masks_sparse_decoder="true")
    ckpt = load_checkpoint(checkpoint_dir / "copy.pt", map_location="cpu")
    expected = em.restricted_answers(ckpt, "hello world", em.Pattern("block", block=2), True)
    table = at.dataframe[0].value
    assert list(table.iloc[:, 1]) == [expected.full.text, expected.restricted.text]
    assert list(table.iloc[:, 2]) == [f"{expected.full.probability:.3g}", f"{expected.restricted.probability:.3g}"]
    assert table.iloc[1, 0].endswith(f"({text('sparse.where_both')})")
    assert at.toggle(key="masks.sparse_decoder").value is True


def test_a_pattern_switch_decodes_only_the_patterns_answer(app, monkeypatch):
    """The full masks' answer is the same for every pattern: one decode per sentence, then one per pattern."""
    import functools

    from ui import cache

    real, patterns = em.greedy_answer, []

    @functools.wraps(real)
    def counted(ckpt, source, pattern=None, decoder=False, should_stop=None):
        patterns.append(pattern)
        return real(ckpt, source, pattern, decoder, should_stop)

    monkeypatch.setattr(em, "greedy_answer", counted)
    cache.clear()
    at = open_masks(app, sent="0", masks_view="sparse", masks_pattern="window", masks_radius="1")
    assert patterns == [None, em.Pattern("window", radius=1)]
    patterns.clear()
    clean(at.slider(key="masks.radius").set_value(2).run())
    assert patterns == [em.Pattern("window", radius=2)]


@pytest.mark.parametrize("pattern, sizes, sliders", [
    ("window", {"masks_radius": "3"}, ["masks.radius"]),
    ("block", {"masks_block": "4"}, ["masks.block"]),
    ("strided", {"masks_stride": "3"}, ["masks.stride"]),
    ("global", {"masks_globals": "2", "masks_radius": "0"}, ["masks.globals", "masks.radius"]),
])
def test_every_pattern_and_its_sizes_come_from_the_url(app, pattern, sizes, sliders):
    at = open_masks(app, sent="0", masks_view="sparse", masks_pattern=pattern, **sizes)  # "hello world": 11 tokens
    assert at.segmented_control(key="masks.pattern").value == pattern
    assert [s.key for s in at.slider] == sliders
    read = {name.removeprefix("masks_"): int(value) for name, value in sizes.items()}
    expected = em.Pattern(pattern, radius=read.get("radius", 1), block=read.get("block", 4),
                          stride=read.get("stride", 4), n_global=read.get("globals", 1)).matrix(11)
    np.testing.assert_array_equal(sparse_z(at, "encoder"), expected)
    cells = int(expected.sum())
    title = helpers.chart(at, "masks.sparse.encoder")["layout"]["title"]["text"].replace("<br>", " ")
    assert title == text("sparse.encoder_title", cells=cells, full=121)
    assert not at.toast


def test_moving_a_size_slider_redraws_the_pattern_and_writes_the_url(app):
    at = open_masks(app, sent="0", masks_view="sparse")
    before = sparse_z(at, "encoder")
    clean(at.slider(key="masks.radius").set_value(3).run())
    assert helpers.query(at, "masks_radius") == "3"
    after = sparse_z(at, "encoder")
    assert after.sum() > before.sum()
    np.testing.assert_array_equal(after, em.Pattern("window", radius=3).matrix(11))
    clean(at.segmented_control(key="masks.pattern").set_value("block").run())
    assert helpers.query(at, "masks_pattern") == "block"
    np.testing.assert_array_equal(sparse_z(at, "encoder"), em.Pattern("block", block=4).matrix(11))
    assert text("sparse.connect_never") in [m.value for m in at.markdown]  # blocks of 4 never talk to each other


@pytest.mark.parametrize("name, raw", [
    ("masks_pattern", "<b>x</b>"), ("masks_pattern", "WINDOW"), ("masks_radius", "-1"), ("masks_radius", "99"),
    ("masks_radius", "1.5"), ("masks_block", "0"), ("masks_stride", "1"), ("masks_globals", "abc"),
    ("masks_sparse_decoder", "maybe"), ("masks_radius", "9" * 40),
])
def test_a_bad_sparse_value_in_the_url_falls_back_with_a_notice(app, name, raw):
    pattern = {"masks_block": "block", "masks_stride": "strided", "masks_globals": "global"}.get(name, "window")
    query = {"masks_pattern": pattern, name: raw} if name != "masks_pattern" else {name: raw}
    at = open_masks(app, sent="2", masks_view="sparse", **query)
    assert len(at.toast) == 1 and "masks" in str(at.toast[0].value)
    assert at.segmented_control(key="masks.pattern").value == pattern
    assert len(at.get("plotly_chart")) == 2 and len(at.dataframe) == 1


def test_without_a_model_the_patterns_still_show(app, monkeypatch, tmp_path):
    monkeypatch.setattr(models, "CHECKPOINT_DIR", tmp_path)
    at = open_masks(app, masks_view="sparse")
    assert len(at.get("plotly_chart")) == 2 and not at.dataframe
    assert any(i.value == text("sparse.no_model") for i in at.info)
    assert text("sparse.connect", layers=10) in [m.value for m in at.markdown]  # "hello world", r = 1: 10 hops


# ------------------------------------------------------------------ the three families (#32)


@pytest.mark.parametrize("lang", LANGS)
def test_the_families_section_draws_each_familys_mask_and_the_table_of_pages(app, lang):
    at = open_masks(app, lang=lang, sent="2", masks_view="families")  # "hi!": 3 source, <bos> + 3 decoder
    shapes = {key: z_of(helpers.chart(at, f"masks.families.{key}")) for key in (
        "encoder_decoder.encoder_self", "encoder_decoder.decoder_self", "encoder_decoder.cross",
        "encoder_only.bidirectional", "decoder_only.causal")}
    assert shapes["encoder_decoder.encoder_self"].shape == (3, 3) and shapes["encoder_decoder.encoder_self"].all()
    np.testing.assert_array_equal(shapes["encoder_decoder.decoder_self"], np.tril(np.ones((4, 4))))
    assert shapes["encoder_decoder.cross"].shape == (4, 3) and shapes["encoder_decoder.cross"].all()
    assert shapes["encoder_only.bidirectional"].shape == (5, 5) and shapes["encoder_only.bidirectional"].all()
    np.testing.assert_array_equal(shapes["decoder_only.causal"], np.tril(np.ones((7, 7))))
    gpt = helpers.chart(at, "masks.families.decoder_only.causal")
    assert ticks(gpt) == ["h", "i", "!", "&lt;sep&gt;", "h", "i", "!"]
    shown = [m.value for m in at.markdown]
    assert any(translate("masks.families.note.no_cross", lang) in m and m.startswith("| ") for m in shown)
    for family in ("encoder_decoder", "encoder_only", "decoder_only"):  # each family's name, bold, leads its text
        name = translate(f"masks.families.{family}.name", lang)
        lead = next(m for m in shown if m.startswith(f"**{name}"))
        assert lead.startswith(f"**{name}.** " if lang == "en" else f"**{name}**：")  # no English full stop in 中文
        assert lead.endswith(translate(f"masks.families.{family}.body", lang))
    assert translate("masks.families.table_caption", lang) in captions(at)
    assert not at.main.toggle  # the padding / look-ahead switches belong to the other views


def test_every_section_value_is_reachable_and_the_old_ones_still_work(app):
    at = open_masks(app, sent="2")
    for section, charts in (("sparse", 2), ("families", 5), ("matrices", 3)):
        show(at, section)
        assert len(at.get("plotly_chart")) == charts, section

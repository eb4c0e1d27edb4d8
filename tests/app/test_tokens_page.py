"""The tokens page under AppTest, on a small random model written for the test (no training).

The checks read what the page shows: the batch tables (HTML), their captions, the embedding figures
(plotly JSON), warnings and the URL.
"""
from __future__ import annotations

from html import escape
import math

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests.app import apptest_helpers as helpers
from tests.app.apptest_helpers import BAD_INPUTS, clean, open_script, query, random_model_fixtures, values
from ui import models
from ui.i18n import LANGS, translate

D_MODEL = 16
checkpoint_dir, random_models = random_model_fixtures(
    ("copy", 3), ("reverse", 3), folder="tokens_checkpoints", d_model=D_MODEL, n_heads=2, n_layers=1, d_ff=32,
    max_len=64)


def open_tokens(app, **query: str) -> AppTest:
    return open_script(app, "app_pages/tokens.py", {"lang": "en", **query})


def tables(at: AppTest) -> list[str]:
    """The HTML of the page's tables: batch tokens, batch ids, the chosen sentence."""
    return [h.proto.body for h in at.get("html") if "tp-code" not in h.proto.body and "tp-steps" not in h.proto.body
            and not h.proto.body.lstrip().startswith(("<style>", "<script>"))  # the app's CSS, ui/prefetch.py
            and "T_lookup_" not in h.proto.body  # the lookup-is-a-product example (lookup_tables)
            and "T_bpe_" not in h.proto.body and "tp-bpe" not in h.proto.body]  # byte-pair encoding (bpe_html)


def lookup_tables(at: AppTest) -> dict[str, str]:
    """The lookup example's tables by name: one_hot, weight, product, rows."""
    return {name: next(h.proto.body for h in at.get("html") if f"T_lookup_{name}" in h.proto.body)
            for name in ("one_hot", "weight", "product", "rows")}


def batch_caption(at: AppTest) -> str:
    """The caption under the batch's tables: what the side is and its shape."""
    (caption,) = [c.value for c in at.caption if "(B, " in c.value]
    return caption


def chart(at: AppTest, key: str) -> dict:
    return helpers.chart(at, f"tokens.{key}")


def cells(html: str, kind: str) -> int:
    return html.count(f' {kind}"')


# ------------------------------------------------------------------ default view


@pytest.mark.parametrize("lang", LANGS)
def test_default_view_in_both_languages(app, lang):
    at = open_tokens(app, lang=lang)
    assert at.title[0].value == translate("tokens.title", lang)
    assert any("PE(p)" in lat.value for lat in at.latex)
    tokens, ids, sentence = tables(at)
    assert cells(tokens, "pad") == cells(ids, "pad") == (25 - 11) + (25 - 3)
    assert "&lt;pad&gt;" in tokens and ">0<" in ids.replace(" ", "")
    assert "␣" in tokens
    assert "&lt;bos&gt;" in sentence and "&lt;eos&gt;" in sentence
    # the embedding table, the four steps in one figure; a word's neighbours, the pairs' cosines, the PCA map;
    # byte-pair encoding's vocabulary and lengths against the merges
    assert len(at.get("plotly_chart")) == 6
    assert at.segmented_control(key="tokens.side").value == "source"


def test_the_three_sides_of_the_batch(app):
    at = open_tokens(app)
    assert "&lt;bos&gt;" not in tables(at)[0]
    clean(at.segmented_control(key="tokens.side").set_value("decoder_in").run())
    assert at.query_params["tokens_side"] in ("decoder_in", ["decoder_in"])
    tokens = tables(at)[0]
    assert tokens.count("&lt;bos&gt;") == 3 and cells(tokens, "special") == 3
    assert cells(tokens, "pad") == 3 * 26 - (12 + 26 + 4)
    clean(at.segmented_control(key="tokens.side").set_value("labels").run())
    tokens = tables(at)[0]
    assert tokens.count("&lt;eos&gt;") == 3 and "&lt;bos&gt;" not in tokens
    assert "(B, T) = (3, 26)" in batch_caption(at)  # the side's caption, under its tables


def test_the_decoder_side_follows_the_task(app):
    at = open_tokens(app, model="reverse", tok_side="decoder_in", batch="abc")
    assert at.selectbox(key="model").value == "reverse"
    row = tables(at)[0]
    assert row.index(">c<") < row.index(">b<") < row.index(">a<")


def test_choosing_a_sentence(app):
    at = open_tokens(app)
    clean(at.selectbox(key="batch.sentence").set_value(2).run())
    assert at.query_params["sent"] in ("2", ["2"])
    sentence = tables(at)[2]
    assert ">!<" in sentence and "attention" not in sentence
    figure = chart(at, "stages")
    assert figure["layout"]["yaxis4"]["ticktext"][:4] == ["h", "i", "!", "&lt;pad&gt;"]


def test_embedding_stages_add_up_on_one_scale(app):
    at = open_tokens(app, sent="0")
    steps = chart(at, "stages")
    lookup, scaled, pe, total = (values(steps["data"][n]["z"]) for n in range(4))
    assert lookup.shape == (25, D_MODEL)
    np.testing.assert_allclose(scaled, lookup * math.sqrt(D_MODEL), rtol=1e-6)
    np.testing.assert_allclose(total, scaled + pe, atol=1e-6)
    np.testing.assert_allclose(pe[2, :8], [0.9093, -0.4161, 0.5911, 0.8066, 0.1987, 0.9801, 0.0632, 0.9980],
                               atol=1e-4)  # PE(p=2) of a 16-dimensional model
    np.testing.assert_array_equal(lookup[2], lookup[3])  # "l", "l": one row of E
    assert {trace["coloraxis"] for trace in steps["data"]} == {"coloraxis"}  # one scale, one bar
    assert steps["layout"]["coloraxis"]["cmax"] == pytest.approx(-steps["layout"]["coloraxis"]["cmin"])
    assert steps["layout"]["coloraxis"]["cmax"] == pytest.approx(max(np.abs(v).max() for v in (lookup, scaled, pe, total)),
                                                                 rel=1e-5)
    titles = [note["text"] for note in steps["layout"]["annotations"]]
    for title, stage in zip(titles, (lookup, scaled, pe, total)):  # each step titled with its typical size
        assert translate("tokens.embed.rms", "en", value=f"{np.sqrt(np.mean(stage ** 2)):.3f}") in title
    matrix = chart(at, "matrix_chart")
    marked = [t for t in matrix["layout"]["yaxis"]["ticktext"] if t.startswith("▶")]
    assert len(marked) == len(set("hello world")) + 1  # + <pad>


def test_url_restores_the_view(app):
    at = open_tokens(app, batch="ab\nabcd", tok_side="labels", sent="1")
    assert at.text_area(key="batch.text").value == "ab\nabcd"
    assert at.segmented_control(key="tokens.side").value == "labels"
    assert at.selectbox(key="batch.sentence").value == 1


def test_fewer_sentences_keep_the_chosen_one_in_range(app):
    at = open_tokens(app, sent="2")
    clean(at.text_area(key="batch.text").input("only one").run())
    assert at.selectbox(key="batch.sentence").value == 0
    assert len(tables(at)) == 3


# ------------------------------------------------------------------ bad input, no model


@pytest.mark.parametrize("name", list(BAD_INPUTS))
@pytest.mark.parametrize("lang", LANGS)
def test_bad_input_is_explained_and_shown_safely(app, name, lang):
    at = open_tokens(app, lang=lang)
    clean(at.text_area(key="batch.text").input(BAD_INPUTS[name]).run())
    warnings = [w.value for w in at.warning]
    if name in ("empty", "spaces"):
        assert warnings == [translate("common.input.empty", lang)]
        assert not tables(at)
        assert len(at.get("plotly_chart")) == 4  # only the table's meaning and BPE, which need no sentence
        return
    html = "".join(tables(at))
    assert "<b>" not in html and "<script>" not in html and "<s>" not in html
    if name == "long":
        assert translate("common.input.truncated", lang, limit=48) in warnings
        assert html.count("<tr>") > 0 and "(1, 48)" in batch_caption(at)
    if name == "many_lines":
        assert translate("common.input.too_many_lines", lang, limit=8, count=12) in warnings
        assert "line 7" in [o for o in at.selectbox(key="batch.sentence").options][-1]
    if name in ("emoji", "chinese", "html"):
        assert cells(tables(at)[0], "unk") > 0
        assert any(w.startswith(translate("common.input.unknown_chars", lang, chars="")[:10]) for w in warnings)
    assert len(at.get("plotly_chart")) == 6  # the embedding table, the four steps, the three views of its meaning, BPE


def test_html_text_reaches_the_axes_escaped(app):
    at = open_tokens(app, batch="<s>x</s>")
    labels = chart(at, "stages")["layout"]["yaxis"]["ticktext"]
    assert labels[:3] == ["&lt;unk&gt;", "s", "&lt;unk&gt;"]


def test_without_a_model_the_tokens_still_show(app, monkeypatch, tmp_path):
    monkeypatch.setattr(models, "CHECKPOINT_DIR", tmp_path)
    at = open_tokens(app)
    assert len(tables(at)) == 3 and [c.proto.id.endswith("-tokens.bpe_curve") for c in at.get("plotly_chart")] == [True]
    assert [i.value for i in at.info].count(translate("tokens.embed.no_model", "en")) == 2  # the steps, the meaning


# ------------------------------------------------------------------ a lookup is a product with a one-hot matrix (#31)

NOTES_TABLE = [[0.3367, 0.1288, 0.2345], [0.2303, -1.1229, -0.1863], [2.2082, -0.6380, 0.4617],
               [0.2674, 0.5349, 0.8094], [1.1103, -1.6898, -0.9890]]  # nn.Embedding(5, 3) after manual_seed(42)


def numbers(table_html: str) -> list[list[str]]:
    """The cells of a table, row by row (the header row and the row labels left out)."""
    import re

    rows = re.findall(r"<tr>(.*?)</tr>", table_html, flags=re.S)[1:]
    return [re.findall(r"<td[^>]*>([^<]*)</td>", row) for row in rows]


@pytest.mark.parametrize("lang", LANGS)
def test_a_lookup_is_the_product_with_a_one_hot_matrix(app, lang):
    at = open_tokens(app, lang=lang)
    assert at.text_input(key="tokens.lookup_ids").value == "0, 2, 4"
    found = lookup_tables(at)
    assert numbers(found["weight"]) == [[f"{v:.4f}" for v in row] for row in NOTES_TABLE]  # torch's own draw
    assert numbers(found["one_hot"]) == [["1", "0", "0", "0", "0"], ["0", "0", "1", "0", "0"], ["0", "0", "0", "0", "1"]]
    picked = [[f"{v:.4f}" for v in NOTES_TABLE[i]] for i in (0, 2, 4)]
    assert numbers(found["product"]) == numbers(found["rows"]) == picked
    assert found["weight"].count(" special") == 9 and found["one_hot"].count(" special") == 3  # rows 0, 2, 4; the 1s
    captions = [str(c.value) for c in at.caption]
    prefix = translate("tokens.lookup.same", lang, difference="§", zeros=36, vocab=0, d_model=0, tokens=0, copied=0,
                       products=0).split("§")[0]
    assert any(c.startswith(prefix + "0") and "36" in c for c in captions), captions  # 3 × 4 × 3 zero terms
    assert any("F.one_hot(ids, 5).float() @ E.weight" in c.value for c in at.code)
    assert not at.exception


def test_typed_ids_repeat_and_bad_ones_get_a_sentence(app):
    at = open_tokens(app)
    clean(at.text_input(key="tokens.lookup_ids").set_value("3 3 1").run())
    assert at.query_params["tokens_lookup_ids"] in ("3 3 1", ["3 3 1"])
    found = lookup_tables(at)
    assert numbers(found["product"]) == [[f"{v:.4f}" for v in NOTES_TABLE[i]] for i in (3, 3, 1)]
    for typed, problem in (("5", "out_of_range"), ("a, 1", "not_int"), ("", "empty"), ("0 " * 7, "too_many"),
                           ("<b>1</b>", "not_int")):
        clean(at.text_input(key="tokens.lookup_ids").set_value(typed).run())
        assert translate(f"tokens.lookup.error.{problem}", "en", max=6, rows=5, last=4) in [str(e.value) for e in at.error]
        assert "T_lookup_" not in " ".join(h.proto.body for h in at.get("html")) and not at.exception


# ------------------------------------------------------------------ what an embedding means (neighbours, cosines, PCA)

SPECIALS = ("<pad>", "<bos>", "<eos>", "<unk>")


def table_of(checkpoint_dir, task: str, side: str = "source") -> tuple[list[str], np.ndarray]:
    """A random model's table read straight from its file: tokens and rows, special tokens included."""
    import torch

    from model.tasks import get_task

    state = torch.load(checkpoint_dir / f"{task}.pt", weights_only=True)
    weight = state["state_dict"][f"{'src' if side == 'source' else 'tgt'}_embed.lookup.weight"].double().numpy()
    return list(SPECIALS) + list(dict.fromkeys(get_task(task).alphabet)), weight


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def bar_words(figure: dict) -> list[str]:
    return figure["layout"]["yaxis"]["ticktext"]


@pytest.mark.parametrize("lang", LANGS)
def test_a_character_model_s_table_neighbours_pairs_and_map(app, checkpoint_dir, lang):
    at = open_tokens(app, lang=lang)
    assert at.segmented_control(key="tokens.space_side").value == "source"
    assert at.checkbox(key="tokens.space_specials").value is False
    assert at.selectbox(key="tokens.space_word").value == "a"  # a character task has no dog: its first character
    assert at.multiselect(key="tokens.space_words").value == ["a", "b", "c"]
    tokens, weight = table_of(checkpoint_dir, "copy")
    rows = {tok: weight[i] for i, tok in enumerate(tokens) if tok not in SPECIALS}
    expected = sorted((tok for tok in rows if tok != "a"), key=lambda tok: -cos(rows["a"], rows[tok]))[:8]
    near = chart(at, "space_nearest")
    assert bar_words(near) == [("␣" if w == " " else w) for w in expected]  # the independent ranking
    np.testing.assert_allclose(values(near["data"][0]["x"]), [cos(rows["a"], rows[w]) for w in expected], atol=1e-6)
    assert near["data"][1]["text"] == [f"{cos(rows['a'], rows[w]):.3f}" for w in expected]  # the numbers written
    pairs = values(chart(at, "space_pairs")["data"][0]["z"])
    np.testing.assert_allclose(pairs, [[cos(rows[x], rows[y]) for y in "abc"] for x in "abc"], atol=1e-6)
    picture = chart(at, "space_map")
    assert sum(len(trace["customdata"]) for trace in picture["data"]) == len(rows)  # no special token on the map
    compared = [w for w in "bc" if w not in expected]  # a row in two groups is drawn by the later: picked, nearest
    assert [trace["customdata"] for trace in picture["data"][1:]] == [compared, expected, ["a"]]
    x_title = picture["layout"]["xaxis"]["title"]["text"]
    assert x_title.startswith(translate("tokens.space.map_x", lang, share="§").split("§")[0]) and "%" in x_title
    infos = [str(i.value) for i in at.info]
    assert any(i.startswith(translate("tokens.space.honest_characters", lang, d=16, spread="0.25", chance="§",
                                      task="copy").split("§")[0]) for i in infos), infos
    assert query(at, "tokens_space_words") == "a,b,c" and query(at, "tokens_space_word") == "a"


def test_the_table_s_controls_reach_the_url_and_redraw_it(app):
    at = open_tokens(app)
    clean(at.selectbox(key="tokens.space_word").set_value("z").run())
    assert query(at, "tokens_space_word") == "z"
    assert chart(at, "space_map")["data"][3]["text"] == ["z"]
    clean(at.multiselect(key="tokens.space_words").set_value([",", "z", "?"]).run())  # a comma is written \,
    assert query(at, "tokens_space_words") == "\\,,z,?"
    assert chart(at, "space_pairs")["layout"]["xaxis"]["ticktext"] == [",", "z", "?"]
    clean(at.multiselect(key="tokens.space_words").set_value(["z"]).run())
    assert translate("tokens.space.too_few", "en", units="characters") in [str(i.value) for i in at.info]
    assert len(at.get("plotly_chart")) == 5
    clean(at.checkbox(key="tokens.space_specials").check().run())
    assert query(at, "tokens_space_specials") == "true"
    assert sum(len(trace["customdata"]) for trace in chart(at, "space_map")["data"]) == 49  # all 45 + 4 specials
    clean(at.segmented_control(key="tokens.space_side").set_value("target").run())
    assert query(at, "tokens_space_side") == "target"


def test_a_link_restores_the_table_s_view(app, checkpoint_dir):
    at = open_tokens(app, model="reverse", tokens_space_side="target", tokens_space_word="<unk>",
                     tokens_space_words="\\,,<pad>,q", tokens_space_specials="true")
    assert at.segmented_control(key="tokens.space_side").value == "target"
    assert at.selectbox(key="tokens.space_word").value == "<unk>"
    assert at.multiselect(key="tokens.space_words").value == [",", "<pad>", "q"]
    tokens, weight = table_of(checkpoint_dir, "reverse", "target")
    unk = weight[tokens.index("<unk>")]
    best = max((t for t in tokens if t != "<unk>"), key=lambda t: cos(unk, weight[tokens.index(t)]))
    assert bar_words(chart(at, "space_nearest"))[0] == ("&lt;pad&gt;" if best == "<pad>" else best).replace(" ", "␣")
    assert chart(at, "space_pairs")["layout"]["yaxis"]["ticktext"] == [",", "&lt;pad&gt;", "q"]  # escaped for plotly
    assert not at.toast


@pytest.mark.parametrize("query_values", [
    {"tokens_space_side": "decoder"},
    {"tokens_space_word": "<script>alert(1)</script>"},
    {"tokens_space_word": "<pad>"},  # a special token while they are left out
    {"tokens_space_words": "a,a"},
    {"tokens_space_words": "a,\\"},  # an escape with nothing after it
    {"tokens_space_words": ",".join("abcdefghijklm")},  # 13: one more than the heatmap takes
    {"tokens_space_words": "x" * 5000},
    {"tokens_space_specials": "maybe"},
])
def test_hostile_table_values_are_refused_with_a_toast(app, query_values):
    at = open_tokens(app, **query_values)
    assert len(at.toast) == 1 and not at.exception
    assert at.segmented_control(key="tokens.space_side").value == "source"
    assert at.selectbox(key="tokens.space_word").value == "a"
    assert at.multiselect(key="tokens.space_words").value == ["a", "b", "c"]
    assert len(at.get("plotly_chart")) == 6


TRANSLATION_MODELS = models.CHECKPOINT_DIR


@pytest.mark.skipif(not (TRANSLATION_MODELS / "en-zh.pt").exists() or not (TRANSLATION_MODELS / "zh-en.pt").exists(),
                    reason="the shipped en-zh / zh-en checkpoints are not in assets/checkpoints")
@pytest.mark.parametrize("lang", LANGS)
def test_the_shipped_translation_tables(app, monkeypatch, lang):
    """en-zh's English table opens on dog (its nearest: dogs) and cat, dog, apple; its Chinese table on
    猫, 狗, 苹, 果 (characters: 苹果 is two rows, said in a caption); the honest sentence is the translation one."""
    monkeypatch.setattr(models, "CHECKPOINT_DIR", TRANSLATION_MODELS)
    at = open_tokens(app, lang=lang, model="en-zh")
    assert at.selectbox(key="tokens.space_word").value == "dog"
    assert at.multiselect(key="tokens.space_words").value == ["cat", "dog", "apple"]
    near = chart(at, "space_nearest")
    assert bar_words(near)[0] == "dogs" and values(near["data"][0]["x"])[0] > 0.3
    assert translate("tokens.space.characters", lang) not in [str(c.value) for c in at.caption]
    infos = [str(i.value) for i in at.info]
    assert any(i.startswith(translate("tokens.space.honest_translation", lang, d=128, spread="0.09", chance="§")
                            .split("§")[0]) for i in infos)
    clean(at.segmented_control(key="tokens.space_side").set_value("target").run())
    assert at.selectbox(key="tokens.space_word").value == "狗"
    assert at.multiselect(key="tokens.space_words").value == ["猫", "狗", "苹", "果"]
    assert translate("tokens.space.characters", lang) in [str(c.value) for c in at.caption]
    assert query(at, "tokens_space_words") == "猫,狗,苹,果"


# ------------------------------------------------------------------ byte-pair encoding (#32)


def bpe_html(at: AppTest) -> dict[str, str]:
    """The BPE section's HTML by part: the cut sentence (pieces), the comparison, the merges."""
    bodies = [h.proto.body for h in at.get("html")]
    marks = {"pieces": "tp-bpe-pieces", "compare": "T_bpe_compare", "merges": "T_bpe_merges"}
    return {name: next((b for b in bodies if mark in b), "") for name, mark in marks.items()}


def chips(pieces_html: str) -> list[list[str]]:
    """The tokens of each line of the cut sentence (escaped as shown)."""
    import re

    lines = pieces_html.split('<div style="margin-bottom')[1:]
    return [re.findall(r"<span[^>]*>([^<]*)</span>", line) for line in lines]


@pytest.fixture(scope="module")
def english_bpe():
    from explain.bpe import learn_bpe

    return learn_bpe("english")


@pytest.mark.parametrize("lang", LANGS)
def test_bpe_default_english_sentences_in_both_languages(app, english_bpe, lang):
    at = open_tokens(app, lang=lang)
    assert at.segmented_control(key="tokens.bpe_corpus").value == "english"
    assert at.slider(key="tokens.bpe_merges").value == 100 and at.slider(key="tokens.bpe_merges").max == 300
    assert at.text_input(key="tokens.bpe_sentence").value == "the happiest dogs ate the catfish ."
    found = bpe_html(at)
    characters, words, bpe = chips(found["pieces"])
    assert len(characters) == len("the happiest dogs ate the catfish .") + 1 and characters[0] == "▁"
    assert words == ["the", "&lt;unk&gt;", "dogs", "ate", "the", "&lt;unk&gt;", "."]  # happiest, catfish: unknown
    assert "&lt;unk&gt;" not in bpe and bpe[0] == "▁the" and "▁cat" in bpe  # the unknown word in known pieces
    assert escape(translate("tokens.bpe.cut_unknown", lang, count=2)) in found["pieces"]
    compare_rows = numbers(found["compare"])
    assert compare_rows == [[f"{english_bpe.vocab_sizes[0]:,}", f"{english_bpe.mean_pieces[0]:.1f}", "0", "36", "0"],
                            [f"{len(english_bpe.words):,}", f"{english_bpe.mean_words:.1f}",
                             str(english_bpe.unknown_words), "7", "2"],
                            [f"{english_bpe.vocab_sizes[100]:,}", f"{english_bpe.mean_pieces[100]:.1f}", "0",
                             str(len(bpe)), "0"]]
    assert found["merges"].count("<tr>") == 1 + 100 and found["merges"].count(" special") == 3  # the 100th, marked
    curve = chart(at, "bpe_curve")
    np.testing.assert_array_equal(values(curve["data"][0]["y"]), english_bpe.vocab_sizes)
    np.testing.assert_allclose(values(curve["data"][2]["y"]), english_bpe.mean_pieces)
    assert curve["data"][1]["x"] == [100] and curve["data"][3]["x"] == [100]
    assert curve["layout"]["annotations"][0]["text"] == translate("tokens.bpe.chart_vocab", lang)
    assert query(at, "tokens_bpe_corpus") == "english" and query(at, "tokens_bpe_merges") == "100"


def test_bpe_slider_and_sentence_reach_the_url_and_redraw(app):
    at = open_tokens(app)
    clean(at.slider(key="tokens.bpe_merges").set_value(0).run())
    assert query(at, "tokens_bpe_merges") == "0"
    characters, _, bpe = chips(bpe_html(at)["pieces"])
    assert bpe == characters and chart(at, "bpe_curve")["data"][1]["x"] == [0]
    assert translate("tokens.bpe.no_merges_yet", "en") in [str(c.value) for c in at.caption]
    clean(at.slider(key="tokens.bpe_merges").set_value(300).run())
    clean(at.text_input(key="tokens.bpe_sentence").input("The Catfish!").run())
    assert query(at, "tokens_bpe_sentence") == "The Catfish!"
    read_as = translate("tokens.bpe.normalized_english", "en", text="the catfish \\!")  # as markdown_literal writes it
    assert read_as in [str(c.value) for c in at.caption]
    _, words, bpe = chips(bpe_html(at)["pieces"])
    assert words == ["the", "&lt;unk&gt;", "&lt;unk&gt;"]  # the grammar writes no "!"
    assert bpe[:2] == ["▁the", "▁cat"] and bpe[-1] == "&lt;unk&gt;"  # catfish in pieces; "!" a character never seen


def test_bpe_sentence_follows_the_corpus_until_typed(app):
    at = open_tokens(app)
    clean(at.segmented_control(key="tokens.bpe_corpus").set_value("chinese").run())
    assert query(at, "tokens_bpe_corpus") == "chinese"
    assert at.text_input(key="tokens.bpe_sentence").value == "小猫明天早上在公园里喝牛奶。"
    assert at.slider(key="tokens.bpe_merges").value == 100
    clean(at.text_input(key="tokens.bpe_sentence").input("猫吃鱼").run())
    clean(at.segmented_control(key="tokens.bpe_corpus").set_value("typed").run())
    assert at.text_input(key="tokens.bpe_sentence").value == "猫吃鱼"  # typed: it stays
    assert at.slider(key="tokens.bpe_merges").value == at.slider(key="tokens.bpe_merges").max  # fewer merges here
    assert numbers(bpe_html(at)["compare"])[0][-1] == "3"  # 猫, 吃, 鱼: characters Sennrich's words never had


def test_bpe_chinese_and_typed_text_via_the_url(app):
    at = open_tokens(app, tokens_bpe_corpus="chinese", tokens_bpe_merges="300")
    assert at.slider(key="tokens.bpe_merges").value == 300
    assert at.text_input(key="tokens.bpe_sentence").value == "小猫明天早上在公园里喝牛奶。"  # the corpus's default
    rows = chips(bpe_html(at)["pieces"])
    assert len(rows) == 2 and "明天早上" in rows[1]  # no word row: Chinese writes no spaces
    assert len(numbers(bpe_html(at)["compare"])) == 2
    assert translate("tokens.bpe.compare_caption_chinese", "en") in [str(c.value) for c in at.caption]
    at = open_tokens(app, tokens_bpe_corpus="typed", tokens_bpe_sentence="lowest")
    assert at.text_area(key="tokens.bpe_text").value.startswith("low low low low low\nlower lower")
    k = at.slider(key="tokens.bpe_merges").value
    assert k == at.slider(key="tokens.bpe_merges").max < 100  # Sennrich's example has few pairs to merge
    assert chips(bpe_html(at)["pieces"])[2] == ["▁low", "est"]
    assert numbers(bpe_html(at)["merges"])[:2] == [["e", "s", "es"], ["es", "t", "est"]]


def test_bpe_typed_text_too_short_or_empty(app):
    at = open_tokens(app, tokens_bpe_corpus="typed", tokens_bpe_text="abc xyz")
    assert translate("tokens.bpe.nothing_to_merge", "en") in [str(i.value) for i in at.info]
    assert "tokens.bpe_merges" not in [s.key for s in at.slider]  # no merge to pick
    clean(at.text_area(key="tokens.bpe_text").input("   \n  ").run())
    assert translate("tokens.bpe.text_empty", "en") in [str(w.value) for w in at.warning]
    assert not bpe_html(at)["pieces"] and not at.exception


@pytest.mark.parametrize("lang", LANGS)
def test_bpe_hostile_text_is_shown_as_text(app, lang):
    hostile = "<script>alert(1)</script> <b>x</b> 👍🏽"
    at = open_tokens(app, lang=lang, tokens_bpe_corpus="typed", tokens_bpe_text=hostile + "\n" + hostile,
                     tokens_bpe_sentence=hostile + " é")
    found = bpe_html(at)
    assert "<script>" not in found["pieces"] + found["merges"] and "<b>" not in found["pieces"] + found["merges"]
    assert "▁&lt;script&gt;alert(1)&lt;/script&gt;" in numbers(found["merges"])[-1]  # a line seen twice: one piece
    assert numbers(found["compare"])[-1][-1] == "1"  # é: the one character the text never had
    assert not at.exception


@pytest.mark.parametrize("query_values", [
    {"tokens_bpe_corpus": "french"},
    {"tokens_bpe_merges": "301"},
    {"tokens_bpe_merges": "-1"},
    {"tokens_bpe_merges": "ten"},
    {"tokens_bpe_sentence": "x" * 500},
    {"tokens_bpe_sentence": "a\x00b"},
])
def test_hostile_bpe_values_are_refused_with_a_toast(app, query_values):
    at = open_tokens(app, **query_values)
    assert len(at.toast) == 1 and not at.exception
    assert at.segmented_control(key="tokens.bpe_corpus").value == "english"
    assert at.slider(key="tokens.bpe_merges").value == 100
    assert at.text_input(key="tokens.bpe_sentence").value == "the happiest dogs ate the catfish ."
    assert len(at.get("plotly_chart")) == 6


def test_a_too_long_typed_text_in_the_url_is_refused(app):
    at = open_tokens(app, tokens_bpe_corpus="typed", tokens_bpe_text="y" * 5000)
    assert len(at.toast) == 1 and not at.exception
    assert at.text_area(key="tokens.bpe_text").value.startswith("low low")  # the default text instead

"""Every page with the shipped word-level translation models (en-zh, zh-en) in both languages, the default
model that follows the language, the sentence box's unknown words, the word-by-word decoding, and the
Attention page's reordering and pronoun examples.

These run on the shipped checkpoints (``assets/checkpoints/en-zh.pt`` and ``zh-en.pt``); without them
the module is skipped with that reason.
"""
from __future__ import annotations

import html
import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from explain.pronoun import SENTENCES
from model.tokenizer import split_words
from tests.app.apptest_helpers import chart, clean, open_script, query, texts
from ui import models
from ui.i18n import LANGS, translate
from ui.tour import TOUR, stop
from ui.url_state import markdown_literal

TRANSLATION = ("en-zh", "zh-en")
pytestmark = pytest.mark.skipif(any(not models.checkpoint_path(m).exists() for m in TRANSLATION),
                                reason="the shipped en-zh / zh-en checkpoints are not in assets/checkpoints")
EXAMPLE = {"en-zh": "the cat ate two apples in the garden yesterday .", "zh-en": "猫昨天在花园里吃了两个苹果。"}
ANSWER = {"en-zh": "猫昨天在花园里吃了两个苹果。", "zh-en": "the cat ate two apples in the garden yesterday ."}
# Pages whose default view draws the sentence's tokens on an axis (or in a table).
TOKEN_PAGES = ("tokens", "masks", "attention", "feed_forward", "residual_stream", "layer_norm", "decoding")


def open_page(app, key: str, query: dict[str, str], locale: str | None = None) -> AppTest:
    """Page ``key`` in a fresh session with ``query`` in the URL (the default page first where AppTest needs it)."""
    s = stop(key)
    if s.is_default:
        return clean(app(query=query, locale=locale).run())
    return open_script(app, s.script, query, locale=locale, home_first=Path(s.script).stem != s.url_path)


def shown_tokens(at: AppTest) -> set[str]:
    """Every axis tick label of every chart and every cell of every table on the page."""
    labels: set[str] = set()
    for element in at.get("plotly_chart"):
        layout = json.loads(element.proto.spec)["layout"]
        for name, axis in layout.items():
            if name.startswith(("xaxis", "yaxis")) and isinstance(axis, dict):
                labels.update(str(v) for v in axis.get("ticktext") or [])
        for trace in json.loads(element.proto.spec)["data"]:
            for axis in ("x", "y"):
                if isinstance(trace.get(axis), list):
                    labels.update(str(v) for v in trace[axis])
    for frame in at.dataframe:
        labels.update(str(v) for v in frame.value.to_numpy().ravel())
    for table in at.table:
        labels.update(str(v) for v in table.value.to_numpy().ravel())
    return labels


# ------------------------------------------------------------------ every page, both models, both languages


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("model", TRANSLATION)
@pytest.mark.parametrize("key", [s.key for s in TOUR])
def test_every_page_runs_with_the_translation_models(app, key, model, lang):
    at = open_page(app, key, {"model": model, "lang": lang})
    assert at.selectbox(key="model").value == model
    assert not at.error, texts(at.error)
    assert at.title[0].value == translate("common.app_title" if key == "home" else f"{key}.title", lang)
    assert not [w for w in texts(at.warning) if "<unk>" in w or "unknown" in w.lower() or "未知" in w], key
    if key in TOKEN_PAGES:
        source = set(split_words(EXAMPLE[model])) if model == "en-zh" else set(EXAMPLE[model])
        shown = shown_tokens(at) & source  # labels that are whole words (en-zh) or characters (zh-en)
        assert len(shown) >= 4, (key, sorted(shown))


@pytest.mark.parametrize("model", TRANSLATION)
def test_the_loss_of_a_translation_is_labelled_with_the_answers_words_or_characters(app, model):
    """The output page's loss bars stand on the decoder's side: Chinese characters for en-zh, English words for zh-en."""
    at = open_page(app, "output_and_loss", {"model": model, "output_and_loss_view": "loss"})
    answer = set(split_words(ANSWER[model])) if model == "zh-en" else set(ANSWER[model]) - {"。"}
    assert answer <= shown_tokens(at), sorted(answer - shown_tokens(at))


@pytest.mark.parametrize("model", TRANSLATION)
def test_attention_axes_are_words_and_characters(app, model):
    """The cross-attention's keys are the source's tokens, its queries the decoder's (words or characters)."""
    at = open_page(app, "attention", {"model": model, "lang": "en", "attention_kind": "cross"})
    spec = json.loads(next(c for c in at.get("plotly_chart") if c.proto.id.endswith("-attention.zoom")).proto.spec)
    keys, queries = ([html.unescape(v) for v in spec["layout"][axis]["ticktext"]] for axis in ("xaxis", "yaxis"))
    source = split_words(EXAMPLE[model]) if model == "en-zh" else list(EXAMPLE[model])
    target = list(ANSWER[model]) if model == "en-zh" else split_words(ANSWER[model])
    assert [k for k in keys if k != "<pad>"] == source
    assert queries[1:] == target and queries[0] == "<bos>"


@pytest.mark.parametrize("model", TRANSLATION)
def test_the_tokens_page_shows_one_token_a_word(app, model):
    at = open_page(app, "tokens", {"model": model, "lang": "en"})
    text = at.text_area(key="batch.text").value
    assert text.splitlines()[0] == EXAMPLE[model], "the batch's example follows the model's language"
    shown = shown_tokens(at)
    if model == "en-zh":
        assert {"apples", "garden", "yesterday"} <= shown
    else:
        assert {"苹", "花", "园"} <= shown and "猫昨" not in shown  # one token a character
    # Hundreds of vocabulary rows: the matrix labels only the rows this sentence looks up, and says so.
    matrix = json.loads(next(c for c in at.get("plotly_chart") if "matrix_chart" in c.proto.id).proto.spec)
    labels = matrix["layout"]["yaxis"]["ticktext"]
    assert labels and all(label.startswith("▶") for label in labels)
    # Rows too close for a label each share one ("▶ apples · ate"): every looked-up token is named once.
    named = [token for label in labels for token in label.removeprefix("▶ <b>").removesuffix("</b>").split(" · ")]
    assert sorted(named) == sorted(set(text.splitlines()[0].split() if model == "en-zh" else text.splitlines()[0]))
    assert translate("tokens.embed.matrix_some_rows", "en", v=models.load_shipped(model).tokenizer.vocab_size) in texts(at.caption)


# ------------------------------------------------------------------ decoding, word by word


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("model", TRANSLATION)
@pytest.mark.parametrize("strategy", ["greedy", "beam", "sample"])
def test_decoding_steps_word_by_word(app, model, strategy, lang):
    """One step a token (a word of English, a character of Chinese), and the text written so far joined as the
    language writes it: spaces between English words, none between Chinese characters."""
    at = open_page(app, "decoding", {"model": model, "lang": lang, "decoding_strategy": strategy, "decoding_temp": "0.0"})
    target_tokens = split_words(ANSWER[model]) if model == "zh-en" else list(ANSWER[model])
    slider = at.slider(key="decoding.step")
    assert slider.max == len(target_tokens) + 1  # every token, then <eos>
    clean(slider.set_value(3).run())
    written = translate("decoding.steps.written", lang, written="").split("{")[0]
    status = next(m.value for m in at.markdown if written.strip() and written.strip()[:6] in m.value)
    joined = (" " if model == "zh-en" else "").join(target_tokens[:3])
    assert joined.replace(".", "\\.") in status or joined in status, status
    clean(at.slider(key="decoding.step").set_value(slider.max).run())
    done = translate("decoding.steps.done", lang, output=ANSWER[model].replace(".", "\\.").replace("。", "。"))
    assert done.replace("\\", "") in [s.replace("\\", "") for s in texts(at.success)]


@pytest.mark.parametrize("model", TRANSLATION)
def test_strategies_side_by_side_write_the_translation(app, model):
    at = open_page(app, "decoding", {"model": model, "lang": "en", "decoding_view": "compare", "decoding_temp": "0.0"})
    assert [c.value for c in at.code][:2] == [ANSWER[model]] * 2  # greedy and beam
    beams = at.dataframe[0].value
    column = translate("decoding.beams.text", "en")
    written = [str(v).removesuffix(" <eos>") for v in beams[column] if str(v)]
    if model == "zh-en":
        assert all(" " in w or len(split_words(w)) == 1 for w in written)
    else:
        assert all(" " not in w for w in written)


# ------------------------------------------------------------------ the default model follows the language


@pytest.mark.parametrize(("lang", "expected", "locale"), [("en", "en-zh", "en-GB"), ("zh", "zh-en", "zh-CN")])
def test_the_default_model_reads_the_ui_language(app, lang, expected, locale):
    at = clean(app(locale=locale).run())
    assert at.radio(key="lang").value == lang
    assert at.selectbox(key="model").value == expected and query(at, "model") == expected
    clean(at.switch_page("app_pages/attention.py").run())
    assert at.text_input(key="attention.text").value == EXAMPLE[expected]


def test_switching_the_language_on_the_default_switches_the_model(app):
    at = clean(app(locale="en-US").run())
    clean(at.switch_page("app_pages/attention.py").run())
    assert at.selectbox(key="model").value == "en-zh"
    clean(at.radio(key="lang").set_value("zh").run())
    assert at.selectbox(key="model").value == "zh-en" and query(at, "model") == "zh-en"
    assert at.text_input(key="attention.text").value == EXAMPLE["zh-en"]  # the example follows the model
    clean(at.radio(key="lang").set_value("en").run())
    assert at.selectbox(key="model").value == "en-zh"


def test_a_picked_model_stays_when_the_language_changes(app):
    at = clean(app(locale="en-US").run())
    clean(at.selectbox(key="model").set_value("zh-en").run())  # picked in English: 中文's default, as it happens
    clean(at.radio(key="lang").set_value("zh").run())
    clean(at.radio(key="lang").set_value("en").run())
    assert at.selectbox(key="model").value == "zh-en"  # not moved back to English's default
    clean(at.selectbox(key="model").set_value("copy").run())
    clean(at.radio(key="lang").set_value("en").run())
    assert at.selectbox(key="model").value == "copy"


@pytest.mark.parametrize("named", ["copy", "en-zh"])
def test_a_model_named_by_the_link_stays_when_the_language_changes(app, named):
    at = clean(app(query={"model": named}, locale="zh-CN").run())
    assert at.selectbox(key="model").value == named
    clean(at.radio(key="lang").set_value("en").run())
    clean(at.radio(key="lang").set_value("zh").run())
    assert at.selectbox(key="model").value == named


def test_the_shipped_list_starts_with_the_translation_models():
    assert models.shipped_models()[:2] == ["en-zh", "zh-en"]
    assert models.shipped_models()[2:6] == ["copy", "reverse", "sort", "dates"]


# ------------------------------------------------------------------ the sentence box and the words the model knows


@pytest.mark.parametrize("lang", LANGS)
def test_unknown_words_are_flagged_with_suggestions(app, lang):
    at = open_page(app, "attention", {"model": "en-zh", "lang": lang,
                                      "attention_text": "the cat ate two aples in the gardn yesterday ."})
    warnings = texts(at.warning)
    assert translate("common.vocabulary.unknown_words", lang, words="aples gardn") in warnings
    suggestion = next(w for w in warnings if w.startswith(translate("common.vocabulary.did_you_mean", lang, pairs="")))
    assert "aples → apples" in suggestion and "gardn → garden" in suggestion


@pytest.mark.parametrize("lang", LANGS)
def test_the_words_the_model_knows_are_listed(app, lang):
    at = open_page(app, "attention", {"model": "en-zh", "lang": lang})
    known = models.load_shipped("en-zh").tokenizer.known_units
    assert translate("common.vocabulary.words_note", lang, count=len(known)) in [c.value for c in at.caption]
    listing = next(e for e in at.expander if e.label == translate("common.vocabulary.list_words", lang,
                                                                    count=len(known)))
    listed = listing.markdown[0].value
    for word in ("apples", "garden", "yesterday", "tired"):
        assert f" {word} " in listed or f" {word}  \n" in listed or listed.endswith(f" {word}"), word


def test_chinese_input_flags_unknown_characters(app):
    at = open_page(app, "attention", {"model": "zh-en", "lang": "zh", "attention_text": "猫昨天在花园里吃了两个苹果和橘子。"})
    assert translate("common.input.unknown_chars", "zh", chars="和 橘") in texts(at.warning)
    known = models.load_shipped("zh-en").tokenizer.known_units
    assert translate("common.vocabulary.chars_note", "zh", count=len(known)) in [c.value for c in at.caption]


@pytest.mark.parametrize(("model", "lang", "typed", "marks"), [("zh-en", "zh", "猫昨天在花园里吃了两个苹果", "。 ？"),
                                                          ("en-zh", "en", "the cat ate two apples", ". ?")])
def test_a_sentence_without_its_end_mark_is_flagged(app, model, lang, typed, marks):
    notice = translate("common.input.no_end_mark", lang, marks=markdown_literal(marks, 600))
    at = open_page(app, "attention", {"model": model, "lang": lang, "attention_text": typed})
    assert notice in texts(at.warning)
    at = open_page(app, "attention", {"model": model, "lang": lang})  # the example ends with its mark
    assert notice not in texts(at.warning)


def test_the_length_limit_counts_words(app):
    long = " ".join(["i ate a cake ."] * 12)  # 60 words in 179 characters
    at = open_page(app, "attention", {"model": "en-zh", "lang": "en", "attention_text": long})
    limit = min(48, models.load_shipped("en-zh").model.config.max_len)
    assert translate("common.vocabulary.truncated_words", "en", limit=limit) in texts(at.warning)
    spec = json.loads(next(c for c in at.get("plotly_chart") if c.proto.id.endswith("-attention.zoom")).proto.spec)
    assert len(spec["layout"]["xaxis"]["ticktext"]) == limit


# ------------------------------------------------------------------ the Attention page's translation examples


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("model", TRANSLATION)
def test_the_reordering_example_opens_the_cross_attention(app, model, lang):
    at = open_page(app, "attention", {"model": model, "lang": lang, "attention_text": "the dog ate a cake ."})
    clean(at.button(key="attention.try_reorder").click().run())
    assert at.text_input(key="attention.text").value == EXAMPLE[model]
    assert query(at, "attention_kind") == "cross" and query(at, "attention_view") == "overview"
    assert at.selectbox(key="model").value == model


@pytest.mark.parametrize("lang", LANGS)
def test_the_pronoun_pair_names_the_computed_head(app, lang):
    at = open_page(app, "attention", {"model": "en-zh", "lang": lang})
    from explain.pronoun import pronoun_heads
    result = pronoun_heads(models.load_shipped("en-zh"))
    cross = result.best["cross"]
    line = translate(f"attention.translation.cross_{'resolves' if cross.resolves else 'does_not'}", lang,
                     layer=cross.layer, head=cross.head, tired_ref="cat", wide_ref="road",
                     tired_w=f"{cross.right[0]:.2f}", wide_w=f"{cross.right[1]:.2f}")
    assert line in [m.value for m in at.markdown]
    shown = result.best["encoder"] if result.resolved_by("encoder") else cross
    clean(at.button(key="attention.try_wide_button").click().run())
    assert at.text_input(key="attention.text").value == SENTENCES[1]
    assert (query(at, "attention_kind"), query(at, "attention_layer"), query(at, "attention_head")) == (
        shown.kind, str(shown.layer), str(shown.head))


def test_the_translation_examples_switch_another_model_to_en_zh(app):
    at = open_page(app, "attention", {"model": "copy", "lang": "en"})
    clean(at.button(key="attention.try_pronoun_switch").click().run())
    assert at.selectbox(key="model").value == "en-zh"
    assert at.text_input(key="attention.text").value == SENTENCES[0]
    assert query(at, "model") == "en-zh" and query(at, "attention_kind") == "cross"


@pytest.mark.parametrize("lang", LANGS)
def test_a_sampled_unk_is_shown_as_unk_and_the_chance_of_a_right_sample_is_said(app, lang):
    """#35 item 3: the default sample (T = 1, seed 0) of en-zh draws an <unk>; it was shown as U+FFFD, and nothing
    said why sampling at T = 1 goes wrong. The chance of the right answer, computed, is 0.181 at T = 1."""
    at = open_page(app, "decoding", {"model": "en-zh", "lang": lang, "decoding_view": "compare"})
    sampled = [c.value for c in at.code][2]
    assert "\ufffd" not in sampled and "<unk>" in sampled
    assert translate("common.answer_unk", lang) in [c.value for c in at.caption]
    note = translate("decoding.sample_chance", lang, temperature="1", top_k="",
                     which=translate("decoding.sample_chance_right", lang), chance="0.181")
    smoothing = translate("decoding.sample_chance_smoothing", lang, epsilon="0.1", steps=15)  # 14 tokens + <eos>
    assert f"{note} {smoothing}" in [c.value for c in at.caption]

    clean(at.slider(key="decoding.temperature").set_value(0.5).run())
    note = translate("decoding.sample_chance", lang, temperature="0.5", top_k="",
                     which=translate("decoding.sample_chance_right", lang), chance="0.999")
    assert note in [c.value for c in at.caption]  # no smoothing sentence once the chance is high
    assert not any(c.value.startswith(note + " ") for c in at.caption)


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize(("model", "unit"), [("en-zh", "word"), ("copy", "char")])
def test_texts_name_words_or_characters_as_the_model_reads(app, lang, model, unit):
    """#35 item 4: "queries and keys are both the source characters" and a "Source character" axis under a word
    model. Each now names the model's own unit."""
    at = open_page(app, "attention", {"model": model, "lang": lang})
    about = translate("attention.kind_about.encoder", lang, src_units=translate(f"common.units.{unit}", lang))
    assert about in [c.value for c in at.caption]
    at = open_page(app, "decoding", {"model": model, "lang": lang})
    layout = chart(at, "decoding.step_figure")["layout"]
    titles = [axis["title"]["text"] for name, axis in layout.items()
              if name.startswith("xaxis") and isinstance(axis.get("title"), dict) and "text" in axis["title"]]
    assert translate("decoding.source_axis", lang, src_unit=translate(f"common.unit.{unit}", lang)) in titles


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("page", ["attention", "decoding"])
def test_an_answer_built_on_unknown_words_says_it_is_a_guess(app, lang, page):
    """#35 item 8: "my mother likes green tea ." came back as a fluent 玛丽打开了苹果。 with only "no known
    correct answer" beside it. The unknown words are named in sentence order, capitals read as lower case."""
    query = {"model": "en-zh", "lang": lang, ("attention_text" if page == "attention" else "decoding_text"):
             "My mother likes green tea!"}
    if page == "decoding":
        query["decoding_view"] = "compare"
    at = open_page(app, page, query)
    note = translate("common.answer_unknown_source", lang, units=markdown_literal("my mother likes green !", 600))
    assert note in texts(at.warning)
    at = open_page(app, page, {**query, query_key(page): EXAMPLE["en-zh"]})
    assert not any(w.startswith(note.split("`")[0]) for w in texts(at.warning))


def query_key(page: str) -> str:
    return "attention_text" if page == "attention" else "decoding_text"

"""Properties of every pure function a page hands user text to: whatever is typed or pasted
(arbitrary Unicode, control characters, NUL, bidi and combining marks, emoji, CJK, markup, empty,
blank, a megabyte), they never raise anything but their documented error, they keep to the limits,
and they say so with a notice the catalogs can show in both languages.

The tokenizer's own round-trip properties live in ``test_tokenizer.py``; here it is fed what the
pages feed it (whole batches, a megabyte).
"""
from __future__ import annotations

import io
import os
import re
from html.parser import HTMLParser
from types import SimpleNamespace

import pytest
import torch
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from model.checkpoint import Checkpoint, load_checkpoint, save_checkpoint
from model.config import TransformerConfig
from model.tasks import TASKS, DEFAULT_ALPHABET, get_task
from model.tokenizer import CharTokenizer
from model.transformer import Transformer
from explain import attention as xa
from explain.tasks import expected_output, task_example
from explain import decoding as dv
from explain import positional as pv
from explain import tokens as tv
from explain.tokens import sentence_frame, side_frames
from ui.training import session as ts
from figures.labels import display_token, token_label
from figures.tokens import kind_table_html
from ui.head_set import HeadSetParam
from ui.i18n import LANGS, catalogs, translate
from explain.text import LISTED_UNKNOWN, MAX_CHARS, MAX_LINES, MAX_RAW_CHARS, prepare_sentence, prepare_sentences
from ui.url_state import (
    BadValue,
    BoolParam,
    ChoiceParam,
    FloatParam,
    IntParam,
    TextParam,
    markdown_literal,
    read,
)

os.environ["TP_I18N_STRICT"] = "1"  # a notice the catalogs cannot format must fail, not show its key

# What a classroom pastes: line breaks of every kind, invisible and bidi controls, combining marks,
# emoji sequences, CJK, Markdown and HTML specials.
NASTY_CHARS = [
    "\x00", "\n", "\r", "\t", "\x0b", "\x0c", "\x1b", "\x7f", "\x85", "\u2028", "\u2029", "\u200b", "\u200d",
    "\u200e", "\u200f", "\u202e", "\u2066", "\u0301", "\u0308", "\u3000", "\u00a0", "\ufeff", "\ufffd",
    "👍", "🏽", "🇫", "🇷", "👨\u200d👩\u200d👧", "你", "好", "，", "<", ">", "&", "*", "_", "`", "$", "[", "]", "(",
    ")", "#", "|", "\\", "{", "}", "%", "=", "-", ":", " ", "a", "b", "z", "0", "9",
]
MARKUP = ["<img src=x onerror=alert(1)>", "<style>body{display:none}</style>", "[link](javascript:alert(1))",
          "**bold**", "$x$", "x\n===", "{0}", "{name}", "%s"]


def nasty(max_size: int) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(NASTY_CHARS), max_size=max_size).map("".join)


USER_TEXT = st.one_of(
    st.text(),  # any Unicode scalar value (hypothesis leaves surrogates out)
    nasty(200),
    st.lists(st.one_of(st.sampled_from(MARKUP), nasty(60)), max_size=20).map("\n".join),  # many lines
    st.sampled_from(["", " ", "   \n\t \n", "\n" * 50, "\u3000\u00a0"]),
)
MEGABYTE = ("<img src=x onerror=alert(1)> **b** 你好\x00\u202e👍🏽\n" * 30_000)[:1_000_000]
ALPHABETS = [DEFAULT_ALPHABET, get_task("dates").alphabet]
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MODEL_PROPERTY = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
INPUT_NOTICES = {"common.input.empty", "common.input.too_many_lines", "common.input.truncated",
                 "common.input.unknown_chars", "common.input.unknown_chars_more"}
BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
MD_SPECIAL = set("\\`*_{}[]()#+-.!|<>~$")


def shown_in_both_languages(key: str, values: dict) -> None:
    """A notice as the pages show it: its values Markdown-escaped, formatted in every language."""
    for lang in LANGS:
        assert translate(key, lang, **{k: markdown_literal(str(v), 80) for k, v in values.items()})


def non_blank_lines(text: str) -> list[str]:
    """The lines of ``text`` (split at ``\\n`` only) with something visible in them."""
    return [line for line in text.split("\n") if any(ch.isprintable() and ch != " " for ch in line)]


# ------------------------------------------------------------------ ui.text_input


@PROPERTY
@given(text=st.one_of(st.none(), USER_TEXT), max_lines=st.integers(1, 10), max_chars=st.integers(1, 60),
       alphabet=st.sampled_from(ALPHABETS))
@example(text=MEGABYTE, max_lines=MAX_LINES, max_chars=MAX_CHARS, alphabet=DEFAULT_ALPHABET)
@example(text="\n".join(["x"] * 1000), max_lines=MAX_LINES, max_chars=MAX_CHARS, alphabet=DEFAULT_ALPHABET)
def test_prepared_sentences_keep_every_limit_and_say_so(text, max_lines, max_chars, alphabet):
    tokenizer = CharTokenizer(alphabet)
    prepared = prepare_sentences(text, tokenizer, max_lines=max_lines, max_chars=max_chars)
    keys = [n.key for n in prepared.notices]
    assert set(keys) <= INPUT_NOTICES and len(keys) == len(set(keys))
    for notice in prepared.notices:
        shown_in_both_languages(notice.key, notice.values)

    lines = non_blank_lines((text or "")[:MAX_RAW_CHARS])
    if not lines:
        assert prepared.sentences == [] and prepared.unknown == [] and keys == ["common.input.empty"]
        return
    assert "common.input.empty" not in keys
    assert len(prepared.sentences) == min(len(lines), max_lines)
    assert ("common.input.too_many_lines" in keys) == (len(lines) > max_lines)
    if len(lines) > max_lines:
        too_many = prepared.notices[keys.index("common.input.too_many_lines")]
        assert too_many.values == {"limit": max_lines, "count": len(lines)}
    cut = False
    for sentence, line in zip(prepared.sentences, lines):
        assert 1 <= len(sentence) <= max_chars
        assert sentence[0] != " " and all(ch.isprintable() for ch in sentence)
        visible = "".join(ch if ch.isprintable() else " " for ch in line).strip(" ")
        assert visible.startswith(sentence)  # the line itself, invisible characters shown as spaces
        cut = cut or len(visible) > max_chars
    assert ("common.input.truncated" in keys) == cut

    assert len(prepared.unknown) == len(prepared.sentences)
    for sentence, unknown in zip(prepared.sentences, prepared.unknown):
        assert unknown == [(i, ch) for i, ch in enumerate(sentence) if ch not in alphabet]
    unknown_notices = [n for n in prepared.notices if n.key.startswith("common.input.unknown_chars")]
    assert len(unknown_notices) == (1 if any(prepared.unknown) else 0)  # past 20 it names 20 and counts the rest
    for notice in unknown_notices:
        named = notice.values["chars"].split(" ")
        assert len(named) <= LISTED_UNKNOWN
        assert (notice.key == "common.input.unknown_chars_more") == (notice.values.get("more", 0) > 0)


@PROPERTY
@given(text=st.one_of(st.none(), USER_TEXT), max_chars=st.integers(1, 60))
@example(text=MEGABYTE, max_chars=MAX_CHARS)
def test_one_sentence_at_most(text, max_chars):
    prepared = prepare_sentence(text, CharTokenizer(DEFAULT_ALPHABET), max_chars=max_chars)
    assert len(prepared.sentences) <= 1
    assert all(1 <= len(s) <= max_chars for s in prepared.sentences)
    keys = [n.key for n in prepared.notices]
    assert ("common.input.too_many_lines" in keys) == (len(non_blank_lines((text or "")[:MAX_RAW_CHARS])) > 1)
    for notice in prepared.notices:
        shown_in_both_languages(notice.key, notice.values)


# ------------------------------------------------------------------ ui.url_state


def unescape(markdown: str) -> str:
    """What Markdown shows for ``markdown`` made of text and backslash escapes only."""
    return re.sub(r"\\(.)", r"\1", markdown, flags=re.S)


@PROPERTY
@given(text=USER_TEXT, limit=st.integers(1, 200))
@example(text=MEGABYTE, limit=40)
@example(text="x\n===\n- item\n# title", limit=40)
def test_markdown_literal_shows_the_text_and_nothing_else(text, limit):
    shown = markdown_literal(text, limit)
    assert not re.search(r"[\x00-\x1f\x7f]", shown.replace("\t", "")), "no control character, no line break"
    assert not BIDI.search(shown), "no bidi control: it would reorder the sentence around the value"
    escaped = False
    for ch in shown:  # every Markdown special character is escaped
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        else:
            assert ch not in MD_SPECIAL, (ch, shown)
    assert not escaped, "no dangling backslash"
    visible = unescape(shown)
    short = text if len(text) <= limit else text[: limit - 1] + "…"
    expected = BIDI.sub("", re.sub(r"[\x00-\x08\x0b-\x1f\x7f]", "", short)).replace("\n", " ")
    assert visible == expected and len(visible) <= limit


PARAMS = [IntParam("i", 2, lo=1, hi=8), IntParam("seed", 0, lo=0, hi=2**31 - 1), FloatParam("f", 1.0, lo=0.0, hi=2.0),
          FloatParam("s", 1.0, lo=0.1, hi=5.0, step=0.1), BoolParam("b", True),
          ChoiceParam("c", "all", choices=("1", "5", "all")), TextParam("t", "hello", max_len=200),
          HeadSetParam("att_off", default=[], choices=tuple(xa.all_heads(2, 2)))]


@PROPERTY
@given(raw=st.one_of(USER_TEXT, st.text(st.sampled_from("0123456789.-+eE_ ,x"), max_size=30)))
@example(raw="9" * 5000)  # int() refuses more than 4300 digits with a ValueError
@example(raw="1" * 5000 + ".5")
@example(raw="1e999")
@example(raw="NaN")
@example(raw="-0")
@example(raw="٣")  # an Arabic-Indic digit: int() reads it
@example(raw=MEGABYTE)
def test_query_values_are_read_or_refused_never_raised(raw):
    """test_shell covers short text; here any length and number-like junk."""
    for param in PARAMS:
        try:
            value = param.parse(raw)
        except BadValue:
            assert read(param, {param.name: raw}) == (param.default, raw)
        else:
            assert param.accepts(value) and read(param, {param.name: raw}) == (value, None)
            assert param.parse(param.format(value)) == value


# ------------------------------------------------------------------ labels, tables and batches


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list]] = []

    def handle_starttag(self, tag, attrs) -> None:
        self.tags.append((tag, attrs))


@PROPERTY
@given(token=USER_TEXT)
@example(token=MEGABYTE)
def test_token_labels_are_escaped_and_visible(token):
    label, cell = token_label(token), display_token(token)
    assert all(ch.isprintable() for ch in label + cell)
    assert "<" not in label and ">" not in label
    assert re.fullmatch(r"([^&]|&(lt|gt|amp|quot|#x27);)*", label), "every & starts an entity"
    if token == " ":
        assert cell == "␣"  # a lone space cannot vanish
    else:
        assert all(ch in cell for ch in token if ch.isprintable())  # printable text stays as typed


@pytest.mark.slow
@PROPERTY
@given(texts=st.lists(USER_TEXT, min_size=1, max_size=4), task=st.one_of(
    st.sampled_from([*TASKS, None, "no-such-task", ""]), st.text(max_size=20)))
@example(texts=[MEGABYTE], task="dates")
def test_the_batch_of_any_text_builds_and_its_tables_stay_plain(texts, task):
    tokenizer = CharTokenizer(DEFAULT_ALPHABET)
    sentences = [s for text in texts for s in prepare_sentences(text, tokenizer).sentences][:MAX_LINES]
    assume(sentences)  # (blank text stops the page at a notice: see the prepare tests)
    batch = tv.sentence_batch(sentences, tokenizer, task)
    for side in tv.SIDES:
        rows = batch.side(side)
        assert len(rows) == len(sentences) and len({len(r.ids) for r in rows}) == 1
        assert all(0 <= i < tokenizer.vocab_size for r in rows for i in r.ids)
    assert [r.length for r in batch.source] == [len(s) for s in sentences]
    labels = [f"Sentence {n}" for n in range(len(sentences))]
    tokens, ids, kinds = side_frames(batch.source, labels)
    frame, cell_kinds = sentence_frame(batch, 0, {k: k for k in ("chars", "source", "source_ids", "decoder_in",
                                                                  "decoder_in_ids", "labels", "labels_ids")})
    tables = (kind_table_html(tokens, kinds, "t"), kind_table_html(ids, kinds, "i"),
              kind_table_html(frame, cell_kinds, "s"))
    for html in tables:
        parser = _Tags()
        parser.feed(html)
        assert {tag for tag, _ in parser.tags} <= {"div", "style", "table", "thead", "tbody", "tr", "th", "td"}
        assert not [name for _, attrs in parser.tags for name, _ in attrs if name.startswith("on")]


@PROPERTY
@given(text=USER_TEXT, task=st.sampled_from(sorted(TASKS)))
@example(text=MEGABYTE, task="dates")
@example(text="31 feb 2026", task="dates")
def test_every_task_answers_any_text_or_says_it_has_none(text, task):
    target = get_task(task).target_for(text)
    assert target is None or isinstance(target, str)
    if task in ("copy", "reverse", "sort"):  # dates and the translation tasks answer only their own sentences
        assert target is not None and len(target) == len(text)


@PROPERTY
@given(text=USER_TEXT, name=st.one_of(st.sampled_from([*TASKS, "no-such-task"]), st.text(max_size=20), st.none()))
def test_views_find_the_task_of_any_checkpoint(text, name):
    for task in ({"name": name}, {}, None, "copy"):
        ckpt = SimpleNamespace(task=task)
        assert isinstance(task_example(ckpt), str)
        assert expected_output(ckpt, text) is None or isinstance(expected_output(ckpt, text), str)
    assert tv.batch_target(name, text) is None or isinstance(tv.batch_target(name, text), str)


@PROPERTY
@given(name=st.one_of(USER_TEXT, st.text(max_size=60)))
@example(name=MEGABYTE)
@example(name="copy")
@example(name="../../etc/passwd.pt")
def test_a_model_name_is_accepted_or_refused_with_a_sentence(name):
    problem = ts.model_name_problem(name)
    if problem is not None:
        key, values = problem
        for lang in LANGS:
            assert key in catalogs()[lang]
        shown_in_both_languages(key, values)
    tidy = ts.name_from_upload(name)
    assert tidy and len(tidy) <= 40 and "/" not in tidy
    assert ts.model_name_problem(tidy) is None, "an uploaded file's name always makes a usable model name"


# ------------------------------------------------------------------ the model on any text


def untrained_checkpoint(max_len: int) -> Checkpoint:
    """A checkpoint as the pages get it (saved, then loaded and checked), of a tiny untrained model."""
    torch.manual_seed(0)
    tokenizer = CharTokenizer(DEFAULT_ALPHABET)
    config = TransformerConfig(src_vocab_size=tokenizer.vocab_size, tgt_vocab_size=tokenizer.vocab_size, d_model=16,
                               n_heads=2, n_layers=1, d_ff=32, max_len=max_len)
    file = io.BytesIO()
    save_checkpoint(file, Transformer(config), tokenizer, {"name": "copy"})
    return load_checkpoint(file.getvalue(), map_location="cpu")


CKPT = untrained_checkpoint(max_len=16)  # short: sentences get cut, and decoding stays quick
MAX_LEN = CKPT.model.config.max_len


def page_sentence(text: str, max_chars: int) -> str | None:
    """The sentence a page would hand on for ``text`` (None: the page stops at a notice)."""
    prepared = prepare_sentence(text, CKPT.tokenizer, max_chars=max_chars)
    return prepared.sentences[0] if prepared.sentences else None


@pytest.mark.slow
@MODEL_PROPERTY
@given(text=USER_TEXT, target=st.one_of(st.none(), USER_TEXT))
@example(text=MEGABYTE, target=MEGABYTE)
def test_attention_views_of_any_sentence(text, target):
    source = page_sentence(text, min(MAX_CHARS, MAX_LEN))  # as the attention page cuts it
    assume(source is not None)
    view = xa.attention_view(CKPT, source, target, need_details=True)
    assert view.src_tokens == CKPT.tokenizer.token_strings(CKPT.tokenizer.encode(source)[:MAX_LEN])
    assert (view.answer is None) == (target is not None)  # a view given its target decodes nothing
    answer = view.answer if target is None else xa.attention_view(CKPT, source).answer
    assert isinstance(answer, str) and len(answer) < MAX_LEN
    assert view.encoder.shape[-1] == len(view.src_tokens) == view.cross.shape[-1]
    assert xa.greedy_answer(CKPT, source) == answer


@pytest.mark.slow
@MODEL_PROPERTY
@given(text=USER_TEXT, target=USER_TEXT, strategy=st.sampled_from(dv.STRATEGIES))
@example(text=MEGABYTE, target=MEGABYTE, strategy="beam")
def test_decoding_and_teacher_forcing_of_any_sentence(text, target, strategy):
    source = page_sentence(text, min(MAX_CHARS, MAX_LEN))  # as the decoding page cuts them
    wanted = page_sentence(target, min(MAX_CHARS, MAX_LEN - 1))
    assume(source is not None)
    assert 1 <= dv.decode_limit(CKPT, source) <= MAX_LEN
    trace = dv.decode(CKPT, source, strategy, beam_size=2, temperature=0.7, top_k=5)
    assert trace.steps and len(trace.steps) <= trace.max_len and isinstance(trace.output, str)
    if wanted is not None:
        forced = dv.teacher_forcing(CKPT, source, wanted)
        assert len(forced.target_tokens) == len(wanted) + 1  # every character and <eos>
        assert all(0.0 <= p <= 1.0 for p in forced.true_probs)


@MODEL_PROPERTY
@given(text=USER_TEXT, seed=st.integers(0, 999), use_pe=st.booleans())
@example(text=MEGABYTE, seed=0, use_pe=True)
def test_order_blindness_of_any_sentence(text, seed, use_pe):
    sentence = page_sentence(text, max(1, min(MAX_CHARS, MAX_LEN - 1)))  # ui.widgets.char_limit
    assume(sentence is not None)
    result = pv.order_blindness(CKPT, sentence, seed, use_pe)
    assert sorted(result.order) == list(range(len(result.tokens)))
    assert sorted(result.shuffled_tokens) == sorted(result.tokens)


# ------------------------------------------------------------------ the tokenizer on what pages feed it


@pytest.mark.parametrize("alphabet", ALPHABETS)
def test_a_megabyte_encodes_one_id_per_character(alphabet):
    tokenizer = CharTokenizer(alphabet)
    encoding = tokenizer.encode_with_report(MEGABYTE, add_bos=True, add_eos=True)
    assert len(encoding.ids) == len(MEGABYTE) + 2
    assert len(encoding.unknown) == sum(ch not in alphabet for ch in MEGABYTE)
    assert tokenizer.decode(encoding.ids, skip_special=False).startswith("<bos>")


@PROPERTY
@given(texts=st.lists(USER_TEXT, min_size=1, max_size=6), max_len=st.one_of(st.none(), st.integers(1, 80)),
       alphabet=st.sampled_from(ALPHABETS))
def test_any_batch_of_texts_encodes_to_one_padded_tensor(texts, max_len, alphabet):
    tokenizer = CharTokenizer(alphabet)
    ids, lengths = tokenizer.encode_batch(texts, add_bos=True, add_eos=True, max_len=max_len)
    expected = [len(t) + 2 if max_len is None else min(len(t) + 2, max_len) for t in texts]
    assert lengths.tolist() == expected and ids.shape == (len(texts), max(expected))
    for row, n in zip(ids, lengths):
        assert (row[n:] == tokenizer.pad_id).all() and ((row >= 0) & (row < tokenizer.vocab_size)).all()


def test_the_documented_errors_only():
    tokenizer = CharTokenizer(DEFAULT_ALPHABET)
    with pytest.raises(ValueError):
        tokenizer.encode_batch([])
    with pytest.raises(ValueError):
        tokenizer.encode_batch("one string")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        tokenizer.encode(None)  # type: ignore[arg-type]

"""Widgets that more than one page draws: the sentence boxes, the batch's sentence picker,
notices about typed text, and CSV downloads.

Every widget that defines a view is bound to the URL (:func:`ui.url_state.bind`), so a teacher's
link opens the same view. Labels and help texts come from the catalogs of the calling page.

The text boxes set no ``max_chars``: with one, the browser silently refuses a paste longer than
the limit and keeps the old text. Instead a box takes any paste, :func:`ui.url_state.bind` cuts it
to its ``TextParam.max_len`` (which also bounds the URL, whose value is the cut text) and
:func:`show_box_cut` says how much was cut, until the text changes.
"""
from __future__ import annotations

from typing import Any, Callable

import streamlit as st

from explain.tasks import FALLBACK_BATCH, source_end_marks, task_batch_example, task_example
from explain.text import (LISTED_UNKNOWN, MAX_CHARS, MAX_LINES, PreparedText, known_units, prepare_sentence,
                          prepare_sentences, unit_of, unknown_units)
from explain.tokens import SentenceBatch, batch_of, fallback_batch, fallback_tokenizer, target_tokenizer
from figures.style import upright_axis_titles
from model.tokenizer import REPLACEMENT_CHAR, SPECIAL_TOKENS, UNK_ID
from ui.cache import computed
from ui.i18n import t
from ui.presenter import presented
from ui.url_state import IntParam, TextParam, bind, box_cut, clamp_state, markdown_literal
from ui.viewport import guessed_narrow

BATCH_PARAM = TextParam("batch", default=FALLBACK_BATCH, max_len=2000)  # the default: the batch box without a model
BATCH_KEY = "batch.text"
SENTENCE_KEY = "batch.sentence"
SENTENCE_BOX_CHARS = 200  # what a one-sentence box keeps (the model then takes at most MAX_CHARS of it)
LISTED_CHARS = 100  # an alphabet up to this size is written out in the caption; a larger one goes in an expander
_SHARED_OWNER_KEY = "_widgets.page_of_shared"  # {widget key: page that drew it last}

UNK_SHOWN = SPECIAL_TOKENS[UNK_ID]  # "<unk>"


def char_limit(checkpoint: Any) -> int:
    """Tokens per sentence the pages accept (characters; words for a word-level model): 48, or fewer
    if the model's positions run out first.

    The decoder reads ``<bos>`` + the answer, so a sentence may use ``max_len - 1`` positions.
    """
    if checkpoint is None:
        return MAX_CHARS
    return max(1, min(MAX_CHARS, checkpoint.model.config.max_len - 1))


def show_notices(prepared: PreparedText) -> None:
    """One warning per notice about typed text (cut, unknown characters, empty)."""
    for notice in prepared.notices:
        # a generous bound: a list of words or suggestions is never cut in the middle of one
        values = {k: markdown_literal(v, 600) if isinstance(v, str) else v for k, v in notice.values.items()}
        st.warning(t(notice.key, **values), icon=":material/warning:")


def show_box_cut(key: str, text: str | None, limit: int) -> None:
    """A warning that the box ``key`` kept only the first ``limit`` characters of a paste, shown
    while it still holds that cut text (:func:`ui.url_state.box_cut`)."""
    count = box_cut(key, text)
    if count is not None:
        st.warning(t("common.link_and_paste.paste_cut", count=f"{count:,}", limit=f"{limit:,}"),
                   icon=":material/content_cut:")


def sentence_input(checkpoint: Any, page: str) -> str | None:
    """The one-sentence box of the page ``page`` (its key) that runs the model: the model's example by
    default (and again when another model is picked, until the visitor types), bound to
    ``?<page>_text=`` (session key ``<page>.text``), cut to what the encoder reads (``max_len``
    positions, at most ``MAX_CHARS``), with its notices shown. Returns the sentence, or None when
    there is nothing to run.

    Its label and help are ``<page>.input_label`` / ``<page>.input_help``.
    """
    key = f"{page}.text"
    example = task_example(checkpoint)
    param = TextParam(f"{page}_text", example, max_len=SENTENCE_BOX_CHARS)
    text = st.text_input(t(f"{page}.input_label"), key=bind(param, key=key, follows=key),
                         help=t(f"{page}.input_help", example=example))
    show_box_cut(key, text, param.max_len)
    alphabet_note(checkpoint.tokenizer)
    prepared = prepare_sentence(text, checkpoint.tokenizer,  # the encoder's positions (char_limit: the decoder's)
                                max_chars=min(MAX_CHARS, checkpoint.model.config.max_len),
                                end_marks=source_end_marks(checkpoint))
    show_notices(prepared)
    return prepared.sentences[0] if prepared.sentences else None


def _shared_key(param, key: str, page: str, follows: str | None = None) -> str:
    """``bind(param, key=key)`` for a widget that two pages create under the same key.

    Streamlit gives each page's widget its own id, so on the first run after a switch the state
    left by the other page's widget would not reach this one (it would start empty). Assigning
    the value again in that run hands it over; later runs leave the widget alone.
    """
    bind(param, key=key, follows=follows)
    owners = st.session_state.setdefault(_SHARED_OWNER_KEY, {})
    if owners.get(key) != page or not isinstance(param, TextParam):
        # A select box (the sentence picker) gets its value on every run too: its labels are written in
        # the page's language, and after a language switch Streamlit would reset one whose browser
        # state is a label of the other language to its first option.
        st.session_state[key] = st.session_state[key]
        owners[key] = page
    return key


def unit_names(checkpoint: Any) -> dict[str, str]:
    """What one token of the model's source and of its answer is, in the visitor's language, for the texts that
    name it: ``src_unit`` ("word" or "character"), ``src_units`` (plural) and ``out_unit``."""
    src, out = unit_of(checkpoint.tokenizer), unit_of(target_tokenizer(checkpoint))
    return {"src_unit": t(f"common.unit.{src}"), "src_units": t(f"common.units.{src}"), "out_unit": t(f"common.unit.{out}")}


def alphabet_note(tokenizer: Any) -> None:
    """What the model can read, beside its text box. A small alphabet (the character models') is written
    out in a caption; a word model's vocabulary, or a large alphabet such as zh-en's Chinese characters,
    is counted in the caption and listed in an expander."""
    units, unit = known_units(tokenizer), unit_of(tokenizer)
    if unit != "word" and len(units) <= LISTED_CHARS:
        st.caption(t("common.alphabet.note", chars=markdown_literal("".join(units).replace(" ", ""), limit=200)))
        return
    kind = {"word": "words", "piece": "pieces"}.get(unit, "chars")
    st.caption(t(f"common.vocabulary.{kind}_note", count=len(units)))
    with st.expander(t(f"common.vocabulary.list_{kind}", count=len(units)), icon=":material/dictionary:"):
        st.markdown(vocabulary_markdown(units, unit))


def vocabulary_markdown(units: tuple[str, ...], unit: str) -> str:
    """The known units as Markdown: words sorted and grouped by their first letter, one line a letter
    (punctuation first); characters in their order, separated by spaces."""
    if unit != "word":  # characters, or BPE pieces (a few characters each)
        return " ".join(markdown_literal(ch, limit=4 if unit == "char" else 24) for ch in units if not ch.isspace())
    groups: dict[str, list[str]] = {}
    for word in sorted(units):
        groups.setdefault(word[0] if word[0].isalpha() else "·", []).append(word)
    return "  \n".join(f"**{markdown_literal(head)}** {' · '.join(markdown_literal(w) for w in words)}"
                       for head, words in sorted(groups.items(), key=lambda item: (item[0] != "·", item[0])))


def batch_input(checkpoint: Any, page: str) -> PreparedText:
    """The batch's text box (``?batch=``), shared by the pages that show a batch (``page``: which),
    with what the model can read and the notices about the text; returns the prepared sentences.

    Its default is a few example sentences of ``checkpoint``'s task (English ones for the character
    models, Chinese ones for zh-en; the fallback batch without a model), and they follow the model as
    :func:`sentence_input`'s example does. Each line is cut to what the model takes (:func:`char_limit`).
    """
    tokenizer = checkpoint.tokenizer if checkpoint is not None else fallback_tokenizer()
    limit = char_limit(checkpoint)
    param = TextParam(BATCH_PARAM.name, default=task_batch_example(checkpoint), max_len=BATCH_PARAM.max_len)
    text = st.text_area(t("tokens.batch.input", lines=MAX_LINES, chars=limit), height=120,
                        key=_shared_key(param, BATCH_KEY, page, follows=BATCH_KEY), help=t("tokens.batch.input_help"))
    show_box_cut(BATCH_KEY, text, BATCH_PARAM.max_len)
    alphabet_note(tokenizer)
    prepared = prepare_sentences(text, tokenizer, max_chars=limit,
                                 end_marks=source_end_marks(checkpoint) if checkpoint is not None else ())
    show_notices(prepared)
    return prepared


def sentence_picker(label: str, sentences: tuple[str, ...], option: str, page: str) -> int:
    """Which sentence of the batch the page looks at (``?sent=``); ``option`` formats ``{n}``, ``{text}``.

    Kept inside the batch when it shrinks; shared by the tokens and masks pages like :func:`batch_input`.
    """
    param = IntParam("sent", default=0, lo=0, hi=len(sentences) - 1)
    clamp_state(SENTENCE_KEY, param.hi)
    return st.selectbox(label, range(len(sentences)), key=_shared_key(param, SENTENCE_KEY, page),
                        format_func=lambda n: option.format(n=n + 1, text=sentences[n]))


def unknown_source_note(checkpoint: Any, source: str) -> None:
    """Beside an answer: which units of ``source`` the model was given as ``<unk>``, and that an answer built on
    them is a guess (it looks like any other translation otherwise)."""
    unknown = unknown_units(checkpoint.tokenizer, source)
    if unknown:
        shown = " ".join("␣" if u == " " else u for u in unknown[:LISTED_UNKNOWN])
        st.warning(t("common.answer_unknown_source", units=markdown_literal(shown, 600)), icon=":material/help:")


def answer_box(text: str) -> None:
    """A model's answer (or a target) in a monospace box that wraps, so a long answer stays on a phone's screen.

    A token the tokenizer cannot write (``<unk>``, which ``decode`` turns into U+FFFD) is shown as ``<unk>``,
    with one line saying what it is."""
    st.code(text.replace(REPLACEMENT_CHAR, UNK_SHOWN) or " ", language=None, wrap_lines=True)
    if REPLACEMENT_CHAR in text:
        st.caption(t("common.answer_unk"))


def csv_download(label_key: str, make_csv: Callable[[], str], file_name: str, key: str) -> None:
    """A button that downloads what ``make_csv()`` returns (computed only when clicked)."""
    st.download_button(t(label_key), data=make_csv, file_name=file_name, mime="text/csv", key=key,
                       on_click="ignore", icon=":material/download:")


def plot(fig: Any, *, key: str, where: Any = None, **options: Any) -> Any:
    """``st.plotly_chart(fig)`` (in ``where``, e.g. a column), with Chinese vertical-axis titles
    written across rather than turned on their side (:func:`figures.style.upright_axis_titles`).

    On a phone the chart's toolbar goes: a touch screen shows it all the time (there is no hover),
    and its eight buttons would lie across the chart's title and legend on a 390-px screen."""
    if guessed_narrow(st.context.headers):
        options["config"] = {**options.get("config", {}), "displayModeBar": False}
    return (where or st).plotly_chart(presented(upright_axis_titles(fig)), key=key, **options)


def model_batch(checkpoint: Any, sentences: tuple[str, ...]) -> SentenceBatch:
    """``sentences`` tokenised and padded as ``checkpoint`` reads them (its own tokenizers), through the
    cache; without a model, as the default alphabet does."""
    if checkpoint is None:
        return computed(fallback_batch, sentences)
    return computed(batch_of, sentences, model=checkpoint)

"""Tokens and embeddings: typed sentences → characters → token ids → a padded batch → vectors, what
the rows of an embedding table mean (nearest neighbours, cosines, a PCA map), and sub-word pieces learnt
by byte-pair encoding (characters, words and BPE compared)."""
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from explain.bpe import (CORPORA, DEFAULT_MERGES, DEFAULT_SENTENCES, SENTENCE_MAX_CHARS, TYPED_DEFAULT,
                         TYPED_MAX_CHARS, LearntBpe, Tokenization, compare, learn_bpe, normalize)
from explain.embeddings import (COMPARED_MAX, LOOKUP_DIM, LOOKUP_IDS_DEFAULT, LOOKUP_IDS_MAX, LOOKUP_ROWS,
                                TABLE_SIDES, EmbeddingStages, Neighbours, TablePca, default_word,
                                default_words, embedding_stages, lookup_is_product, parse_ids, rms, table_pca,
                                table_tokenizer, word_neighbours, word_similarities)
from explain.text import LISTED_UNKNOWN, PreparedText, unit_of
from explain.tokens import SENTENCE_ROWS, SIDES, SentenceBatch, fallback_tokenizer, sentence_frame, side_frames
from figures.labels import display_token
from figures.style import PALETTE
from figures.tokens import (ROW_LABELS_MAX, bpe_curve_figure, kind_table_html, matrix_figure, matrix_table_html,
                            neighbours_figure, pca_figure, pieces_html, similarity_figure, stage_figure)
from explain.tasks import TRANSLATION_TASKS
from ui.cache import computed
from ui.code_panel import code_panel
from ui.i18n import t
from ui.page_css import formula_row
from ui.page_errors import fragment
from ui.scaffold import page
from ui.url_state import BadValue, BoolParam, ChoiceParam, IntParam, Param, TextParam, bind, markdown_literal
from ui.viewport import NARROW_KEY, guessed_narrow, is_narrow
from ui.warmup import BPE_DEFAULT_CORPUS
from ui.widgets import batch_input, csv_download, model_batch, plot, sentence_picker, show_box_cut

SIDE = ChoiceParam("tokens_side", default="source", choices=SIDES)
LOOKUP_IDS = TextParam("tokens_lookup_ids", LOOKUP_IDS_DEFAULT, max_len=40)
SPACE_SIDE = ChoiceParam("tokens_space_side", default="source", choices=TABLE_SIDES)
SPACE_SPECIALS = BoolParam("tokens_space_specials", False)
BPE_CORPUS = ChoiceParam("tokens_bpe_corpus", default=BPE_DEFAULT_CORPUS, choices=CORPORA)
BPE_TEXT = TextParam("tokens_bpe_text", TYPED_DEFAULT, max_len=TYPED_MAX_CHARS)


@fragment
def batch_tables(batch: SentenceBatch) -> None:
    """The side switch and that side of the batch as two tables, tokens then ids, with its shape.
    A fragment: switching sides redraws only this."""
    side = st.segmented_control(t("tokens.batch.side"), SIDE.choices, key=bind(SIDE, key="tokens.side"),
                                format_func=lambda s: t(f"tokens.batch.side_{s}"), required=True) or SIDE.default
    rows = batch.side(side)
    tokens, ids, kinds = side_frames(rows, [t("tokens.batch.row", n=n + 1) for n in range(len(rows))])
    for values, frame in (("tokens", tokens), ("ids", ids)):
        st.markdown(f"**{t(f'tokens.batch.tab_{values}')}**")
        st.html(kind_table_html(frame, kinds, f"batch_{side}_{values}"))
    width = kinds.shape[1]
    st.caption(t(f"tokens.batch.caption_{side}", b=len(rows), s=width, pads=int((kinds == "pad").sum()),
                 cells=len(rows) * width))


def sentence_table(batch: SentenceBatch, prepared: PreparedText, index: int, unit: str) -> None:
    """Sentence ``index`` as characters (or words) → tokens → ids, and which of them became ``<unk>``."""
    labels = {k: t(f"tokens.sentence.row_{k}") for k in SENTENCE_ROWS}
    if unit == "word":
        labels["chars"] = t("tokens.sentence.row_words")
    frame, kinds = sentence_frame(batch, index, labels, unit)
    st.html(kind_table_html(frame, kinds, "sentence"))
    unknown = prepared.unknown[index]
    if unknown:
        listed = ", ".join(t("tokens.sentence.unknown_item", pos=pos, char=markdown_literal(display_token(ch)))
                           for pos, ch in unknown[:LISTED_UNKNOWN])
        if len(unknown) > LISTED_UNKNOWN:
            listed += t("tokens.sentence.unknown_more", more=len(unknown) - LISTED_UNKNOWN)
        st.warning(t(f"tokens.sentence.unknown{'_words' if unit == 'word' else ''}", count=len(unknown),
                     listed=listed), icon=":material/help:")
    st.caption(t("tokens.sentence.caption"))


def embedding_matrix(stages: EmbeddingStages) -> None:
    """The whole embedding table, the rows this sentence looks up marked."""
    vocab, d_model = stages.matrix.shape
    st.markdown(f"**{t('tokens.embed.matrix_title', v=vocab, d=d_model)}**")
    axis = (t("tokens.embed.x_dim"), t("tokens.embed.y_vocab"), t("tokens.embed.hover_vocab"))
    plot(matrix_figure(stages.matrix, stages.vocab, stages.ids, axis), key="tokens.matrix_chart")
    if vocab > ROW_LABELS_MAX:
        st.caption(t("tokens.embed.matrix_some_rows", v=vocab))


def embedding_steps(stages: EmbeddingStages) -> None:
    """The four steps from ids to the encoder's input in one figure (two by two; one above the other on a
    phone), each titled with its typical size."""
    values = (stages.lookup, stages.scaled, stages.positional, stages.total)
    titles = (t("tokens.embed.stage_lookup"), t("tokens.embed.stage_scaled", scale=f"{stages.scale:.2f}"),
              t("tokens.embed.stage_pe"), t("tokens.embed.stage_total"))
    notes = [t("tokens.embed.rms", value=f"{rms(v):.3f}") for v in values]
    axis = (t("tokens.embed.x_dim"), t("tokens.embed.y_token"), t("tokens.embed.hover"))
    if stages.position_kind != "sinusoidal":  # RoPE or no positions: nothing is added here (see explain.embeddings)
        st.info(t(f"tokens.embed.no_table_{stages.position_kind}"), icon=":material/info:")
    plot(stage_figure(stages.tokens, values, titles, notes, axis, columns=1 if is_narrow() else 2),
         key="tokens.stages")


def embedding_section(ckpt, ids: tuple[int, ...]) -> None:
    """From ids to vectors with the selected model's weights (a notice without a model)."""
    st.subheader(t("tokens.embed.heading"))
    if ckpt is None:
        st.info(t("tokens.embed.no_model"), icon=":material/info:")
        return
    stages = computed(embedding_stages, ids, model=ckpt)
    vocab, d_model = stages.matrix.shape
    st.markdown(t("tokens.embed.intro", v=vocab, d=d_model, scale=f"{stages.scale:.3f}"))
    left, right = st.columns([2, 5], gap="medium")
    with left:
        embedding_matrix(stages)
    with right:
        embedding_steps(stages)
    st.caption(t("tokens.embed.caption"))
    code_panel("tokens", ("token_embedding", "embed"), ckpt=ckpt, source=ids, where={"stack": "encoder"},
               paper_rows=("embed_scale", "shared_embeddings"))


@fragment
def lookup_section(ckpt, tokens: int) -> None:
    """E[ids] and one_hot(ids) · E for nn.Embedding(5, 3)'s table at seed 42: the same numbers."""
    st.subheader(t("tokens.lookup.heading"))
    st.markdown(t("tokens.lookup.intro"))
    typed = st.text_input(t("tokens.lookup.ids_label", max=LOOKUP_IDS_MAX, last=LOOKUP_ROWS - 1),
                          key=bind(LOOKUP_IDS, key="tokens.lookup_ids"), max_chars=LOOKUP_IDS.max_len,
                          help=t("tokens.lookup.ids_help"))
    ids, problem = parse_ids(typed)
    if problem is not None:
        st.error(t(f"tokens.lookup.error.{problem}", max=LOOKUP_IDS_MAX, rows=LOOKUP_ROWS, last=LOOKUP_ROWS - 1),
                 icon=":material/error:")
        return
    shown = computed(lookup_is_product, ids)
    n, v, d = len(ids), LOOKUP_ROWS, LOOKUP_DIM
    id_rows = [f"ids[{k}] = {i}" for k, i in enumerate(ids)]  # unique even where an id repeats
    table_rows, dims = [str(j) for j in range(v)], [f"d{k}" for k in range(d)]
    used = np.isin(np.arange(v), ids)
    one_hot, times, weight, equals, product = st.columns([2.5, 0.2, 3, 0.2, 3.6], vertical_alignment="center",
                                                         gap="small")
    with one_hot:
        st.caption(t("tokens.lookup.one_hot", n=n, v=v))
        st.html(matrix_table_html(shown.one_hot, id_rows, table_rows, shown.one_hot == 1, "lookup_one_hot"))
    times.markdown("**·**")
    with weight:
        st.caption(t("tokens.lookup.weight", v=v, d=d))
        st.html(matrix_table_html(shown.weight, table_rows, dims, np.repeat(used[:, None], d, axis=1), "lookup_weight"))
    equals.markdown("**=**")
    with product:
        st.caption(t("tokens.lookup.product", n=n, d=d))
        st.html(matrix_table_html(shown.product, id_rows, dims, np.zeros((n, d), bool), "lookup_product"))
        st.caption(t("tokens.lookup.lookup", n=n, d=d))
        st.html(matrix_table_html(shown.lookup, id_rows, dims, np.zeros((n, d), bool), "lookup_rows"))
    zeros = n * (v - 1) * d
    difference = f"{shown.difference:g}"
    if ckpt is None:
        st.caption(t("tokens.lookup.same_no_model", difference=difference, zeros=zeros))
    else:
        vocab, d_model = ckpt.model.src_embed.lookup.weight.shape
        st.caption(t("tokens.lookup.same", difference=difference, zeros=zeros, vocab=vocab, d_model=d_model,
                     tokens=tokens, copied=tokens * d_model, products=tokens * vocab * d_model))
    st.code(t("tokens.lookup.code", ids=", ".join(str(i) for i in ids)), language="python")


# ------------------------------------------------------------------ what an embedding means


@dataclass(frozen=True)
class TokenListParam(Param[list]):
    """Distinct tokens of ``choices`` (at most ``max_items``), as a ``st.multiselect`` holds them, written
    comma-separated (``cat,dog,apple``); a comma or backslash inside a token (a character model has ``,``)
    is written ``\\,`` or ``\\\\``."""

    choices: tuple[str, ...] = ()
    max_items: int = COMPARED_MAX
    max_len: int = 1000  # the longest URL text read at all

    def parse(self, text: str) -> list:
        if len(text) > self.max_len:
            raise BadValue(text)
        if not text:
            return []
        items, current, escaped = [], [], False
        for ch in text:
            if escaped or ch not in ",\\":
                current.append(ch)
                escaped = False
            elif ch == "\\":
                escaped = True
            else:
                items.append("".join(current))
                current = []
        if escaped:
            raise BadValue(text)
        items.append("".join(current))
        if not self.accepts(items):
            raise BadValue(text)
        return items

    def format(self, value: list) -> str:
        return ",".join(v.replace("\\", "\\\\").replace(",", "\\,") for v in value)

    def accepts(self, value: Any) -> bool:
        return (isinstance(value, list) and len(value) <= self.max_items and len(set(value)) == len(value)
                and all(isinstance(v, str) and v in self.choices for v in value))


def side_label(ckpt, side: str) -> str:
    """The switch's name for a side: the encoder's or the decoder's table, its rows (the special tokens'
    counted) and what one row stands for."""
    tokenizer = table_tokenizer(ckpt, side)
    return t(f"tokens.space.side_{side}", count=tokenizer.vocab_size, unit=t(f"common.unit.{unit_of(tokenizer)}"))


def nearest_view(ckpt, side: str, specials: bool, tokens: tuple[str, ...], unit: str) -> Neighbours:
    """The word picker (``?tokens_space_word=``) and its nearest tokens by cosine, as bars."""
    param = ChoiceParam("tokens_space_word", default=default_word(tokens), choices=tokens)
    word = st.selectbox(t("tokens.space.word_label", unit=unit), tokens, key=bind(param, key="tokens.space_word"),
                        format_func=display_token, help=t("tokens.space.word_help"))
    near = computed(word_neighbours, side, word, specials, model=ckpt)
    title = t("tokens.space.nearest_title", k=len(near.tokens), word=markdown_literal(display_token(word)))
    st.markdown(f"**{title}**")
    plot(neighbours_figure(near.tokens, near.cosines, x_title=t("tokens.space.cosine"),
                           hover=t("tokens.space.nearest_hover"), chance=near.chance,
                           chance_name=t("tokens.space.chance_name", value=f"{near.chance:.2f}")),
         key="tokens.space_nearest")
    return near


def compared_view(ckpt, side: str, tokens: tuple[str, ...], units: str) -> list[str]:
    """The words to compare (``?tokens_space_words=``) and the cosine of every pair, as a heatmap."""
    param = TokenListParam("tokens_space_words", default=default_words(tokens), choices=tokens)
    words = st.multiselect(t("tokens.space.words_label", units=units, max=COMPARED_MAX), tokens,
                           key=bind(param, key="tokens.space_words"), format_func=display_token,
                           max_selections=COMPARED_MAX, placeholder=t("tokens.space.words_placeholder"))
    if len(words) < 2:
        st.info(t("tokens.space.too_few", units=units), icon=":material/info:")
        return words
    cosines = computed(word_similarities, side, tuple(words), model=ckpt)
    st.markdown(f"**{t('tokens.space.pairs_title')}**")
    plot(similarity_figure(words, cosines, hover=t("tokens.space.pairs_hover")), key="tokens.space_pairs")
    return words


def narrow_known() -> bool:
    """Whether the window is a phone's, as this session already knows it (:func:`ui.viewport.is_narrow` mounts
    its reporting script once a run, for the steps above; a second mount would be a duplicate), else as the
    browser's User-Agent says."""
    return bool(st.session_state.get(NARROW_KEY, guessed_narrow(st.context.headers)))


def map_view(found: TablePca, near: Neighbours, words: list[str], units: str) -> None:
    """The whole table on its two principal axes, the picked word, its neighbours and the compared words marked."""
    row = {token: k for k, token in enumerate(found.tokens)}
    groups = ((t("tokens.space.map_compared"), [row[w] for w in words], PALETTE[2]),
              (t("tokens.space.map_nearest"), [row[w] for w in near.tokens], PALETTE[0]),
              (t("tokens.space.map_picked"), [row[near.word]], PALETTE[1]))
    first, second = (f"{share:.1%}" for share in found.shares)
    st.markdown(f"**{t('tokens.space.map_title', units=units)}**")
    plot(pca_figure(found.tokens, found.points, groups, other_name=t("tokens.space.map_other", units=units),
                    axis=(t("tokens.space.map_x", share=first), t("tokens.space.map_y", share=second)),
                    hover=t("tokens.space.map_hover"), narrow=narrow_known()),
         key="tokens.space_map")
    random_first, random_second = (f"{share:.1%}" for share in found.random_shares)
    st.caption(t("tokens.space.map_caption", first=first, second=second, both=f"{sum(found.shares):.1%}",
                 d=found.d_model, random_first=random_first, random_second=random_second))


@fragment
def space_section(ckpt) -> None:
    """What the rows of the model's embedding tables mean: a word's nearest neighbours by cosine, the
    cosines of chosen words, and the whole table on its two principal axes. A fragment: its controls
    redraw only this."""
    st.subheader(t("tokens.space.heading"))
    st.markdown(t("tokens.space.intro"))
    if ckpt is None:
        st.info(t("tokens.embed.no_model"), icon=":material/info:")
        return
    side = st.segmented_control(t("tokens.space.side"), SPACE_SIDE.choices,
                                key=bind(SPACE_SIDE, key="tokens.space_side"),
                                format_func=lambda s: side_label(ckpt, s), required=True) or SPACE_SIDE.default
    specials = st.checkbox(t("tokens.space.specials"), key=bind(SPACE_SPECIALS, key="tokens.space_specials"))
    unit = unit_of(table_tokenizer(ckpt, side))
    found = computed(table_pca, side, specials, model=ckpt)
    if len(found.tokens) < 2:
        st.info(t("tokens.space.too_small"), icon=":material/info:")
        return
    if unit == "char" and {"苹", "果"} <= set(found.tokens):
        st.caption(t("tokens.space.characters"))
    one, many = t(f"common.unit.{unit}"), t(f"common.units.{unit}")
    near_column, pairs_column = st.columns(2, gap="large")
    with near_column:
        near = nearest_view(ckpt, side, specials, found.tokens, one)
    with pairs_column:
        words = compared_view(ckpt, side, found.tokens, many)
    map_view(found, near, words, many)
    task = ckpt.task.get("name")
    honest = "honest_translation" if task in TRANSLATION_TASKS else "honest_characters"
    st.info(t(f"tokens.space.{honest}", d=found.d_model, spread=f"{near.spread:.2f}", chance=f"{near.chance:.2f}",
              task=markdown_literal(str(task))), icon=":material/lightbulb:")
    csv_download("tokens.space.download", lambda: found.table().to_csv(index=False), f"embedding_map_{side}.csv",
                 "tokens.space_csv")


# ------------------------------------------------------------------ byte-pair encoding (#32)


def bpe_pieces(rows: tuple[Tokenization, ...], k: int) -> None:
    """The visitor's sentence cut every way, a line of coloured pieces each, with its count."""
    lines = []
    for row in rows:
        label = t(f"tokens.bpe.cut_{row.name}", k=k, n=len(row.sentence))
        if row.sentence_unknown:
            label += t("tokens.bpe.cut_unknown", count=row.sentence_unknown)
        lines.append((label, [p.token for p in row.sentence], [p.surface for p in row.sentence],
                      [p.unknown for p in row.sentence]))
    st.html(pieces_html(lines))


def bpe_comparison(rows: tuple[Tokenization, ...], learnt: LearntBpe, k: int) -> None:
    """Characters, words and BPE@k side by side: vocabulary, mean length and <unk> on the measured
    sentences, and on the visitor's sentence."""
    names = ("vocab", "mean", "unknown", "yours", "yours_unknown")
    columns = [t(f"tokens.bpe.col_{name}", n=len(learnt.measured)) for name in names]
    frame = pd.DataFrame([[f"{r.vocab_size:,}", f"{r.mean_pieces:.1f}", f"{r.unknown:,}", str(len(r.sentence)),
                           str(r.sentence_unknown)] for r in rows],
                         index=[t(f"tokens.bpe.row_{r.name}", k=k) for r in rows], columns=columns)
    kinds = np.array([["char", "char", "unk" if r.unknown else "char", "char",
                       "unk" if r.sentence_unknown else "char"] for r in rows])
    st.html(kind_table_html(frame, kinds, "bpe_compare"))


def bpe_merges_table(learnt: LearntBpe, k: int) -> None:
    """The first ``k`` merges in the order learnt, the last one marked, in a box of its own that scrolls."""
    if k == 0:
        st.caption(t("tokens.bpe.no_merges_yet"))
        return
    names = [t(f"tokens.bpe.merge_{name}") for name in ("left", "right", "new")]
    frame = pd.DataFrame([[a, b, a + b] for a, b in learnt.merges[:k]], index=[str(n + 1) for n in range(k)],
                         columns=names)
    kinds = np.full(frame.shape, "char", dtype=object)
    kinds[-1, :] = "special"
    st.html(f'<div style="max-height: 420px; overflow-y: auto">{kind_table_html(frame, kinds, "bpe_merges")}</div>')


def bpe_text(corpus: str) -> str | None:
    """The typed text to learn from (the "typed" corpus; "" for the others), or None when it holds nothing."""
    if corpus != "typed":
        return ""
    text = st.text_area(t("tokens.bpe.text_label", max=TYPED_MAX_CHARS), key=bind(BPE_TEXT, key="tokens.bpe_text"),
                        max_chars=BPE_TEXT.max_len, help=t("tokens.bpe.text_help"), height=120)
    show_box_cut("tokens.bpe_text", text, BPE_TEXT.max_len)
    if not normalize(text or "", corpus):
        st.warning(t("tokens.bpe.text_empty"), icon=":material/warning:")
        return None
    return text


def bpe_controls(learnt: LearntBpe, corpus: str) -> tuple[int, str]:
    """The merges slider (``?tokens_bpe_merges=``, 0 … the merges learnt) and the visitor's sentence
    (``?tokens_bpe_sentence=``, the corpus's example until typed); returns k and the sentence, normalised."""
    merges_column, sentence_column = st.columns(2, gap="large")
    with merges_column:
        if learnt.max_k == 0:
            st.info(t("tokens.bpe.nothing_to_merge"), icon=":material/info:")
            k = 0
        else:
            param = IntParam("tokens_bpe_merges", min(DEFAULT_MERGES, learnt.max_k), lo=0, hi=learnt.max_k)
            k = st.slider(t("tokens.bpe.merges_label"), 0, learnt.max_k, key=bind(param, key="tokens.bpe_merges"),
                          help=t("tokens.bpe.merges_help", max=learnt.max_k))
    with sentence_column:
        param = TextParam("tokens_bpe_sentence", DEFAULT_SENTENCES[corpus], max_len=SENTENCE_MAX_CHARS)
        typed = st.text_input(t("tokens.bpe.sentence_label"), max_chars=SENTENCE_MAX_CHARS,
                              key=bind(param, key="tokens.bpe_sentence", follows="tokens.bpe_sentence"),
                              help=t("tokens.bpe.sentence_help"))
        show_box_cut("tokens.bpe_sentence", typed, SENTENCE_MAX_CHARS)
    sentence = normalize(typed or "", corpus)
    if not sentence:
        st.info(t("tokens.bpe.sentence_empty"), icon=":material/info:")
    elif sentence != typed:
        st.caption(t(f"tokens.bpe.normalized_{corpus}", text=markdown_literal(sentence, SENTENCE_MAX_CHARS)))
    return k, sentence


def bpe_curve(learnt: LearntBpe, k: int) -> None:
    """Vocabulary size and pieces a sentence against k, k marked, whole words as dotted lines."""
    words = None if learnt.words is None else (len(learnt.words), learnt.mean_words)
    titles = (t("tokens.bpe.chart_vocab"), t("tokens.bpe.chart_length", n=len(learnt.measured)))
    plot(bpe_curve_figure(learnt.vocab_sizes, learnt.mean_pieces, k, titles=titles, x_title=t("tokens.bpe.chart_x"),
                          hovers=(t("tokens.bpe.hover_vocab"), t("tokens.bpe.hover_length")), words=words,
                          words_name=t("tokens.bpe.chart_words"), narrow=narrow_known()),
         key="tokens.bpe_curve")


@fragment
def bpe_section() -> None:
    """Byte-pair encoding learnt on the grammar's English or Chinese sentences or on typed text
    (``?tokens_bpe_corpus=``, ``?tokens_bpe_text=``); the first k merges cut the visitor's sentence,
    beside characters and whole words. A fragment: its controls redraw only this."""
    st.subheader(t("tokens.bpe.heading"))
    st.markdown(t("tokens.bpe.intro"))
    corpus = st.segmented_control(t("tokens.bpe.corpus"), BPE_CORPUS.choices,
                                  key=bind(BPE_CORPUS, key="tokens.bpe_corpus"), required=True,
                                  format_func=lambda c: t(f"tokens.bpe.corpus_{c}")) or BPE_CORPUS.default
    text = bpe_text(corpus)
    if text is None:
        return
    learnt = computed(learn_bpe, corpus, text)
    k, sentence = bpe_controls(learnt, corpus)
    rows = compare(learnt, k, sentence)
    if sentence:
        bpe_pieces(rows, k)
    measured = "typed" if corpus == "typed" else "held_out"
    st.markdown(f"**{t(f'tokens.bpe.compare_title_{measured}', n=len(learnt.measured))}**")
    bpe_comparison(rows, learnt, k)
    st.caption(t(f"tokens.bpe.compare_caption_{'chinese' if learnt.words is None else 'spaces'}"))
    chart_column, merges_column = st.columns(2, gap="large")
    with chart_column:
        bpe_curve(learnt, k)
    with merges_column:
        st.markdown(f"**{t('tokens.bpe.merges_title', k=k, total=learnt.max_k)}**")
        bpe_merges_table(learnt, k)
    st.caption(t("tokens.bpe.caption"))
    csv_download("tokens.bpe.download", lambda: bpe_csv(learnt), f"bpe_{corpus}.csv", "tokens.bpe_csv")


def bpe_csv(learnt: LearntBpe) -> str:
    """The chart's numbers, one row per k, with the merge that step adds."""
    return pd.DataFrame({"k": range(learnt.max_k + 1), "vocab_size": learnt.vocab_sizes,
                         "mean_pieces": learnt.mean_pieces,
                         "merge": [""] + [f"{a} + {b}" for a, b in learnt.merges]}).to_csv(index=False)


FORMULAS = (formula_row(r"x_p \;=\; E[\,t_p\,]\cdot\sqrt{d_{model}} \;+\; PE(p),", r"E \in \mathbb{R}^{V \times d_{model}}"),)

with page("tokens", formulas=FORMULAS, try_this="top") as ckpt:
    tokenizer = ckpt.tokenizer if ckpt is not None else fallback_tokenizer()
    if ckpt is None:
        st.caption(t("tokens.no_model_tokens"))

    st.subheader(t("tokens.batch.heading"))
    prepared = batch_input(ckpt, "tokens")

    if prepared.sentences:
        sentences = tuple(prepared.sentences)
        batch = model_batch(ckpt, sentences)
        batch_tables(batch)
        st.caption(t("tokens.batch.legend"))
        if any(target is None for target in batch.targets):
            st.info(t("tokens.batch.no_target"), icon=":material/info:")

        st.subheader(t("tokens.sentence.heading"))
        index = sentence_picker(t("tokens.sentence.pick"), sentences,
                                t("tokens.sentence.option", n="{n}", text="{text}"),
                                "tokens")
        sentence_table(batch, prepared, index, unit_of(tokenizer))
        embedding_section(ckpt, tuple(batch.source[index].ids))
        lookup_section(ckpt, len(batch.source[index].ids))
    space_section(ckpt)
    bpe_section()

"""Tokens and embeddings: typed sentences → characters → token ids → a padded batch → vectors."""
import numpy as np
import streamlit as st

from explain.embeddings import (LOOKUP_DIM, LOOKUP_IDS_DEFAULT, LOOKUP_IDS_MAX, LOOKUP_ROWS, EmbeddingStages,
                                embedding_stages, lookup_is_product, parse_ids, rms)
from explain.text import LISTED_UNKNOWN, PreparedText, unit_of
from explain.tokens import SENTENCE_ROWS, SIDES, SentenceBatch, fallback_tokenizer, sentence_frame, side_frames
from figures.labels import display_token
from figures.tokens import ROW_LABELS_MAX, kind_table_html, matrix_figure, matrix_table_html, stage_figure
from ui.cache import computed
from ui.code_panel import code_panel
from ui.i18n import t
from ui.page_css import formula_row
from ui.page_errors import fragment
from ui.scaffold import page
from ui.url_state import ChoiceParam, TextParam, bind, markdown_literal
from ui.viewport import is_narrow
from ui.widgets import batch_input, model_batch, plot, sentence_picker

SIDE = ChoiceParam("tokens_side", default="source", choices=SIDES)
LOOKUP_IDS = TextParam("tokens_lookup_ids", LOOKUP_IDS_DEFAULT, max_len=40)


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

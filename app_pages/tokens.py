"""Tokens and embeddings: typed sentences → characters → token ids → a padded batch → vectors."""
import streamlit as st

from ui import tokens_view as tv
from ui.i18n import t
from ui.models import selected_model
from ui.nav import tour_links
from ui.prepared_html import show_html
from explain.text import MAX_LINES, prepare_sentences
from ui.url_state import ChoiceParam, bind, markdown_literal

SIDE = ChoiceParam("tok_side", default="source", choices=tv.SIDES)

st.title(t("tokens.title"))
st.markdown(t("tokens.intro"))
st.latex(r"x_p \;=\; E[\,t_p\,]\cdot\sqrt{d_{model}} \;+\; PE(p), \qquad E \in \mathbb{R}^{V \times d_{model}}")
with st.container(border=True):
    st.markdown(t("tokens.try_this"))

ckpt = selected_model()
tokenizer = ckpt.tokenizer if ckpt is not None else tv.fallback_tokenizer()
task_name = ckpt.task.get("name") if ckpt is not None else "copy"
limit = tv.char_limit(ckpt)
if ckpt is None:
    st.caption(t("tokens.no_model_tokens"))

@st.fragment
def batch_view(sentences: tuple[str, ...], tokenizer, task_name: str) -> None:
    """One side of the batch as tokens and as ids, with what it is (one HTML element). A fragment,
    drawing as few elements as it can (each costs the server a message), so switching sides reruns
    only this."""
    batch = tv.cached_batch(sentences, tokenizer, task_name)
    row_labels = tuple(t("tokens.batch.row", n=n + 1) for n in range(len(sentences)))
    side = st.segmented_control(t("tokens.batch.side"), SIDE.choices, key=bind(SIDE, key="tokens.side"),
                                format_func=lambda s: t(f"tokens.batch.side_{s}"), required=True)
    side = side or SIDE.default
    rows = batch.side(side)
    width = len(rows[0].ids)
    pads = sum(len(row.ids) - row.length for row in rows)
    caption = t(f"tokens.batch.caption_{side}", b=len(rows), s=width, pads=pads, cells=len(rows) * width)
    show_html(tv.side_tables_html(sentences, tokenizer, task_name, side, row_labels,
                                (t("tokens.batch.tab_tokens"), t("tokens.batch.tab_ids")), caption))


# ------------------------------------------------------------------ the text → the batch
st.subheader(t("tokens.batch.heading"))
raw = tv.batch_input(t("tokens.batch.input", lines=MAX_LINES, chars=limit), t("tokens.batch.input_help"),
                     "tokens")
prepared = prepare_sentences(raw, tokenizer, max_chars=limit)
tv.show_notices(prepared)

if prepared.sentences:
    sentences = tuple(prepared.sentences)
    batch = tv.cached_batch(sentences, tokenizer, task_name)
    batch_view(sentences, tokenizer, task_name)
    st.caption(t("tokens.batch.legend"))
    if any(target is None for target in batch.targets):
        st.info(t("tokens.batch.no_target"), icon=":material/info:")

    # -------------------------------------------------------------- one sentence in detail
    st.subheader(t("tokens.sentence.heading"))
    index = tv.sentence_picker(t("tokens.sentence.pick"), sentences,
                               t("tokens.sentence.option", n="{n}", text="{text}"), "tokens")
    labels = tuple((k, t(f"tokens.sentence.row_{k}")) for k in ("chars", "source", "source_ids", "decoder_in",
                                                                 "decoder_in_ids", "labels", "labels_ids"))
    show_html(tv.sentence_table_html(sentences, tokenizer, task_name, index, labels))
    unknown = prepared.unknown[index]
    if unknown:
        listed = ", ".join(t("tokens.sentence.unknown_item", pos=pos, char=markdown_literal(tv.display_token(ch)))
                           for pos, ch in unknown[:12])
        st.warning(t("tokens.sentence.unknown", count=len(unknown), listed=listed), icon=":material/help:")
    st.caption(t("tokens.sentence.caption"))

    # -------------------------------------------------------------- the embedding lookup
    st.subheader(t("tokens.embed.heading"))
    if ckpt is None:
        st.info(t("tokens.embed.no_model"), icon=":material/info:")
    else:
        ids = tuple(batch.source[index].ids)
        stages = tv.cached_stages(ckpt, ids)
        d_model = stages.matrix.shape[1]
        st.markdown(t("tokens.embed.intro", v=stages.matrix.shape[0], d=d_model, scale=f"{stages.scale:.3f}"))
        axis = (t("tokens.embed.x_dim"), t("tokens.embed.y_token"), t("tokens.embed.hover"))
        left, right = st.columns([2, 5], gap="medium")
        with left:
            st.markdown(f"**{t('tokens.embed.matrix_title', v=stages.matrix.shape[0], d=d_model)}**")
            matrix_axis = (t("tokens.embed.x_dim"), t("tokens.embed.y_vocab"), t("tokens.embed.hover_vocab"))
            st.plotly_chart(tv.matrix_figure(ckpt, ids, matrix_axis), key="tokens.matrix_chart")
        with right:
            titles = (t("tokens.embed.stage_lookup"), t("tokens.embed.stage_scaled", scale=f"{stages.scale:.2f}"),
                      t("tokens.embed.stage_pe"), t("tokens.embed.stage_total"))
            figures = tv.stage_figures(ckpt, ids, titles, axis)
            sizes = (tv.rms(stages.lookup), tv.rms(stages.scaled), tv.rms(stages.positional), tv.rms(stages.total))
            for row in ((0, 1), (2, 3)):
                cols = st.columns(2, gap="small")
                for col, n in zip(cols, row):
                    with col:
                        st.plotly_chart(figures[n], key=f"tokens.stage_{n}")
                        st.caption(t("tokens.embed.rms", value=f"{sizes[n]:.3f}"))
        st.caption(t("tokens.embed.caption"))

tour_links("tokens")

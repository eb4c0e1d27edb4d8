"""Masks: which position may attend to which, and what switching a mask off does to real attention."""
import streamlit as st

from ui import masks_view as mv
from ui import tokens_view as tv
from ui.i18n import t
from ui.models import selected_model
from ui.nav import link, tour_links
from ui.text_input import MAX_LINES, prepare_sentences
from ui.tour import stop
from ui.url_state import BoolParam, ChoiceParam, IntParam, bind

PADDING = BoolParam("mask_pad", default=True)
LOOK_AHEAD = BoolParam("mask_ahead", default=True)
KIND = ChoiceParam("mask_kind", default="decoder", choices=mv.KINDS)


def clamp_state(key: str, hi: int) -> None:
    """Keep a bound index inside a range that just shrank (fewer sentences, layers or positions)."""
    if st.session_state.get(key, 0) > hi:
        st.session_state[key] = hi


st.title(t("masks.title"))
st.markdown(t("masks.intro"))
st.latex(r"\mathrm{Attention}(Q,K,V) = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}} + M\right)V,"
         r"\qquad M_{ij} = \begin{cases} 0 & \text{mask}_{ij} = \text{True (may attend)} \\"
         r" -\infty & \text{mask}_{ij} = \text{False} \end{cases}")
with st.container(border=True):
    st.markdown(t("masks.try_this"))

ckpt = selected_model()
tokenizer = ckpt.tokenizer if ckpt is not None else tv.fallback_tokenizer()
task_name = ckpt.task.get("name") if ckpt is not None else "copy"
limit = tv.char_limit(ckpt)

raw = tv.batch_input(t("tokens.batch.input", lines=MAX_LINES, chars=limit), t("tokens.batch.input_help"),
                     "masks")
prepared = prepare_sentences(raw, tokenizer, max_chars=limit)
tv.show_notices(prepared)

if prepared.sentences:
    batch = tv.cached_batch(tuple(prepared.sentences), tokenizer, task_name)
    c1, c2, c3 = st.columns([4, 2, 2], vertical_alignment="bottom")
    with c1:
        index = tv.sentence_picker(t("tokens.sentence.pick"), tuple(batch.sentences),
                                   t("tokens.sentence.option", n="{n}", text="{text}"), "masks")
    with c2:
        use_padding = st.toggle(t("masks.padding_switch"), key=bind(PADDING, key="masks.padding"),
                                help=t("masks.padding_help"))
    with c3:
        use_look_ahead = st.toggle(t("masks.look_ahead_switch"), key=bind(LOOK_AHEAD, key="masks.look_ahead"),
                                   help=t("masks.look_ahead_help"))

    src_row, tgt_row = batch.source[index], batch.decoder_in[index]
    src_ids, tgt_ids = tuple(src_row.ids), tuple(tgt_row.ids)
    src_tokens, tgt_tokens = tuple(src_row.tokens), tuple(tgt_row.tokens)
    src_pads, tgt_pads = len(src_ids) - src_row.length, len(tgt_ids) - tgt_row.length

    # -------------------------------------------------------------- the three masks
    st.subheader(t("masks.matrices.heading"))
    st.markdown(t("masks.matrices.intro", s=len(src_ids), pads=src_pads, t=len(tgt_ids), tpads=tgt_pads))
    off = t("masks.matrices.off")
    figures = mv.mask_figures(
        src_tokens, tgt_tokens, src_ids, tgt_ids, use_padding, use_look_ahead,
        (t("masks.matrices.padding") + ("" if use_padding else off),
         t("masks.matrices.look_ahead") + ("" if use_look_ahead else off),
         t("masks.matrices.combined"), t("masks.matrices.true"), t("masks.matrices.false"),
         t("masks.key"), t("masks.query"), t("masks.matrices.hover")),
    )
    cols = st.columns(3, gap="small")
    for col, fig, key in zip(cols, figures, ("padding", "look_ahead", "combined")):
        with col:
            st.plotly_chart(fig, key=f"masks.matrix_{key}")
    st.caption(t("masks.matrices.caption"))
    if src_pads == 0:
        st.info(t("masks.matrices.no_padding"), icon=":material/info:")
    masks = mv.cached_mask_set(src_ids, tgt_ids, tokenizer.pad_id, use_padding, use_look_ahead)
    with st.expander(t("masks.printout.heading")):
        st.markdown(t("masks.printout.intro"))
        for key in ("padding", "look_ahead", "combined"):
            st.markdown(f"**{t(f'masks.printout.{key}')}**")
            st.code(masks.printouts[key], language="python")
        seed_text, _ = mv.cached_seed_example()
        st.markdown(t("masks.printout.seed"))
        st.code("decoder_mask(torch.tensor([[1, 2, 3, 0, 0]]))\n" + seed_text, language="python")

    # -------------------------------------------------------------- effect on the real attention
    st.subheader(t("masks.effect.heading"))
    if ckpt is None:
        st.info(t("masks.effect.no_model"), icon=":material/info:")
    else:
        n_layers, n_heads = ckpt.model.config.n_layers, ckpt.model.config.n_heads
        LAYER = IntParam("mask_layer", default=0, lo=0, hi=n_layers - 1)
        HEAD = IntParam("mask_head", default=0, lo=0, hi=n_heads - 1)
        clamp_state("masks.layer", LAYER.hi)
        clamp_state("masks.head", HEAD.hi)
        c1, c2 = st.columns(2)
        with c1:
            layer = st.selectbox(t("masks.effect.layer"), range(n_layers), key=bind(LAYER, key="masks.layer"),
                                 format_func=lambda n: t("masks.effect.layer_option", n=n + 1, total=n_layers))
        with c2:
            head = st.selectbox(t("masks.effect.head"), range(n_heads), key=bind(HEAD, key="masks.head"),
                                format_func=lambda n: t("masks.effect.head_option", n=n + 1, total=n_heads))
        st.markdown(t("masks.effect.intro"))
        on_off = {True: t("masks.effect.on"), False: t("masks.effect.off")}
        axis = (t("masks.key"), t("masks.query"))
        settings = {
            "encoder": [(use_padding, use_look_ahead), (not use_padding, use_look_ahead)],
            "decoder": [(use_padding, use_look_ahead), (use_padding, not use_look_ahead)],
        }
        for kind in mv.KINDS:
            tokens = src_tokens if kind == "encoder" else tgt_tokens
            real = [tok != "<pad>" for tok in tokens]
            st.markdown(f"**{t(f'masks.effect.{kind}_heading')}**")
            cols = st.columns(2, gap="medium")
            for n, (col, (pad_on, ahead_on)) in enumerate(zip(cols, settings[kind])):
                switch = pad_on if kind == "encoder" else ahead_on
                title = t(f"masks.effect.{kind}_title", state=on_off[switch])
                if n == 1:
                    title = t("masks.effect.flipped", title=title)
                with col:
                    st.plotly_chart(
                        mv.attention_figure(ckpt, src_ids, tgt_ids, tokens, kind, pad_on, ahead_on, layer, head,
                                            (title,) + axis),
                        key=f"masks.attention_{kind}_{n}",
                    )
                    att = mv.cached_attention(ckpt, src_ids, tgt_ids, pad_on, ahead_on)
                    weights = (att.encoder if kind == "encoder" else att.decoder)[layer, head]
                    hideable = att.encoder_hideable if kind == "encoder" else att.decoder_hideable
                    share = mv.leak_share(weights, hideable, real)
                    if not hideable.any():
                        st.caption(t(f"masks.effect.{kind}_nothing"))
                    elif switch:
                        st.caption(t(f"masks.effect.{kind}_on_caption"))
                    else:
                        st.caption(t(f"masks.effect.{kind}_off_caption", share=f"{share:.1%}"))

        # ---------------------------------------------------------- one row, step by step
        st.subheader(t("masks.row.heading"))
        st.markdown(t("masks.row.intro"))
        c1, c2 = st.columns([2, 5])
        with c1:
            kind = st.radio(t("masks.row.kind"), mv.KINDS, key=bind(KIND, key="masks.kind"),
                            format_func=lambda k: t(f"masks.row.kind_{k}"))
        tokens = src_tokens if kind == "encoder" else tgt_tokens
        QUERY = IntParam("mask_query", default=0, lo=0, hi=len(tokens) - 1)
        clamp_state("masks.query", QUERY.hi)
        with c2:
            query = st.select_slider(t("masks.row.query"), list(range(len(tokens))), key=bind(QUERY, key="masks.query"),
                                     format_func=lambda q: f"{q}: {tv.display_token(tokens[q])}")
        figures = mv.row_figures(
            ckpt, src_ids, tgt_ids, tokens, kind, use_padding, use_look_ahead, layer, head, query,
            (t("masks.row.raw"), t("masks.row.masked"), t("masks.row.weights"), t("masks.key"), "−∞"),
        )
        cols = st.columns(3, gap="small")
        for col, fig, key in zip(cols, figures, ("raw", "masked", "weights")):
            with col:
                st.plotly_chart(fig, key=f"masks.row_{key}")
        st.latex(r"w_j = \frac{e^{s_j}}{\sum_k e^{s_k}}, \qquad e^{-\infty} = 0 \;\Rightarrow\; w_j = 0"
                 r"\text{ for every hidden key } j")
        st.caption(t("masks.row.caption"))

    # -------------------------------------------------------------- the training experiment
    st.subheader(t("masks.training.heading"))
    st.markdown(t("masks.training.body"))
    link(stop("training"), t("masks.training.link"), icon=":material/model_training:")

tour_links("masks")

"""Masks: which position may attend to which, and what switching a mask off does to real attention."""
import streamlit as st

from ui import masks_view as mv
from ui import tokens_view as tv
from ui.frozen_figure import FrozenFigure
from ui.i18n import t
from ui.models import selected_model
from ui.nav import link, tour_links
from explain.text import MAX_LINES, prepare_sentences
from ui.tour import stop
from ui.url_state import BoolParam, ChoiceParam, IntParam, bind, clamp_state

SECTIONS = ("matrices", "printout", "effect", "row")
SECTION = ChoiceParam("mask_view", default="matrices", choices=SECTIONS)

PADDING = BoolParam("mask_pad", default=True)
LOOK_AHEAD = BoolParam("mask_ahead", default=True)
KIND = ChoiceParam("mask_kind", default="decoder", choices=mv.KINDS)


SWITCHES_KEY = "masks.switches"
SWITCH_KEYS = {"padding": "masks.padding", "look_ahead": "masks.look_ahead"}  # each: a bool, bound to the URL
SWITCHES: tuple[str, ...] = tuple(SWITCH_KEYS)  # the pills, in this order


def _switched() -> None:
    on = st.session_state.get(SWITCHES_KEY) or []
    for name, key in SWITCH_KEYS.items():
        st.session_state[key] = name in on


def switches(drawn: dict) -> tuple[bool, bool]:
    """The padding and look-ahead switches, as two pills in one element (inside the fragment: flipping
    one reruns only it, and one element is one message fewer on every flip). Each switch keeps its
    own URL value (``?mask_pad=``, ``?mask_ahead=``) and session value; the pills show them."""
    use_padding = st.session_state[bind(PADDING, key=SWITCH_KEYS["padding"])]
    use_look_ahead = st.session_state[bind(LOOK_AHEAD, key=SWITCH_KEYS["look_ahead"])]
    st.session_state[SWITCHES_KEY] = [name for name, on in zip(SWITCHES, (use_padding, use_look_ahead)) if on]
    if "switches" not in drawn:
        names = {name: t(f"masks.{name}_switch") for name in SWITCHES}
        drawn["switches"] = (t("masks.switches"), names, "\n\n".join(
            f"**{names[name]}**: {t(f'masks.{name}_help')}" for name in SWITCHES))
    label, names, help_text = drawn["switches"]
    st.pills(label, SWITCHES, selection_mode="multi", key=SWITCHES_KEY, on_change=_switched,
             format_func=names.__getitem__, help=help_text)
    return use_padding, use_look_ahead


@st.fragment
def masks_view(section: str, ckpt, tokenizer, pair: "mv.PairTokens", layer: int, head: int, kind: str,
               query: int, drawn: dict) -> None:
    """The switches and the chosen section's picture. A fragment that draws as few elements as it can
    (each costs the server a message): flipping a switch reruns only this.

    ``drawn`` is a new dict on every full run (the section, sentence, layer, head and language hold
    until then), kept through the fragment's own reruns: the switches' words and each pair of switch
    values' picture, made the first time they are shown, so flipping back and forth costs no
    translating or figure lookup."""
    use_padding, use_look_ahead = switches(drawn)
    if section == "printout":
        masks = mv.cached_mask_set(pair.src_ids, pair.tgt_ids, tokenizer.pad_id, use_padding, use_look_ahead)
        for name in ("padding", "look_ahead", "combined"):
            st.markdown(f"**{t(f'masks.printout.{name}')}**")
            st.code(masks.printouts[name], language="python")
        return
    if (use_padding, use_look_ahead) not in drawn:
        drawn[use_padding, use_look_ahead] = section_picture(section, ckpt, pair, layer, head, kind, query,
                                                             use_padding, use_look_ahead)
    figure, chart_key, caption = drawn[use_padding, use_look_ahead]
    st.plotly_chart(figure, key=chart_key)
    if caption is not None:
        st.caption(caption)


def section_picture(section: str, ckpt, pair: "mv.PairTokens", layer: int, head: int, kind: str, query: int,
                    use_padding: bool, use_look_ahead: bool) -> tuple[FrozenFigure, str, str | None]:
    """``(figure, its element key, caption or None)`` of a picture section for these switch values."""
    if section == "matrices":
        off = t("masks.matrices.off")
        return mv.matrices_figure(
            pair.src_tokens, pair.tgt_tokens, pair.src_ids, pair.tgt_ids, use_padding, use_look_ahead,
            (t("masks.matrices.padding") + ("" if use_padding else off),
             t("masks.matrices.look_ahead") + ("" if use_look_ahead else off),
             t("masks.matrices.combined"), t("masks.matrices.true"), t("masks.matrices.false"),
             t("masks.key"), t("masks.query"), t("masks.matrices.hover"))), "masks.matrices", None
    if section == "effect":
        on_off = {True: t("masks.effect.on"), False: t("masks.effect.off")}
        titles = []
        for kind_ in mv.KINDS:
            switch = use_padding if kind_ == "encoder" else use_look_ahead
            title = t(f"masks.effect.{kind_}_title", state=on_off[switch])
            titles += [title, t("masks.effect.flipped", title=t(f"masks.effect.{kind_}_title",
                                                                  state=on_off[not switch]))]
        figure = mv.effect_figure(ckpt, pair.src_ids, pair.tgt_ids, pair.src_tokens, pair.tgt_tokens,
                                  use_padding, use_look_ahead, layer, head,
                                  tuple(titles), (t("masks.key"), t("masks.query")))
        return figure, "masks.effect", "  \n".join(effect_captions(ckpt, pair, use_padding, use_look_ahead,
                                                                    layer, head))
    tokens = pair.src_tokens if kind == "encoder" else pair.tgt_tokens
    return mv.row_figure(ckpt, pair.src_ids, pair.tgt_ids, tokens, kind, use_padding, use_look_ahead,
                         layer, head, query,
                         (t("masks.row.raw"), t("masks.row.masked"), t("masks.row.weights"),
                          t("masks.key"), "−∞")), "masks.row", None


def effect_captions(ckpt, pair: "mv.PairTokens", use_padding: bool, use_look_ahead: bool, layer: int,
                    head: int) -> list[str]:
    """What each of the four maps shows: nothing to hide, hidden exactly, or how much leaked."""
    lines = []
    for kind in mv.KINDS:
        tokens = pair.src_tokens if kind == "encoder" else pair.tgt_tokens
        real = [tok != "<pad>" for tok in tokens]
        switch = use_padding if kind == "encoder" else use_look_ahead
        for flipped in (False, True):
            pad_on = use_padding != (flipped and kind == "encoder")
            ahead_on = use_look_ahead != (flipped and kind == "decoder")
            att = mv.cached_attention(ckpt, pair.src_ids, pair.tgt_ids, pad_on, ahead_on)
            weights = (att.encoder if kind == "encoder" else att.decoder)[layer, head]
            hideable = att.encoder_hideable if kind == "encoder" else att.decoder_hideable
            on = switch != flipped
            if not hideable.any():
                line = t(f"masks.effect.{kind}_nothing")
            elif on:
                line = t(f"masks.effect.{kind}_on_caption")
            else:
                line = t(f"masks.effect.{kind}_off_caption", share=f"{mv.leak_share(weights, hideable, real):.1%}")
            lines.append(line)
            if not hideable.any():
                break  # the same words would follow for the flipped map
    return lines


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
    index = tv.sentence_picker(t("tokens.sentence.pick"), tuple(batch.sentences),
                               t("tokens.sentence.option", n="{n}", text="{text}"), "masks")
    pair = mv.PairTokens.of(batch, index)
    section = st.segmented_control(t("masks.section_label"), SECTIONS, required=True,
                                   format_func=lambda s: t(f"masks.{s}.heading"),
                                   key=bind(SECTION, key="masks.section"))
    layer = head = query = 0
    kind = KIND.default
    needs_model = section in ("effect", "row")
    if needs_model and ckpt is None:
        st.info(t("masks.effect.no_model"), icon=":material/info:")
    elif needs_model:
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
        if section == "row":
            c1, c2 = st.columns([2, 5])
            with c1:
                kind = st.radio(t("masks.row.kind"), mv.KINDS, key=bind(KIND, key="masks.kind"),
                                format_func=lambda k: t(f"masks.row.kind_{k}"), horizontal=True)
            tokens = pair.src_tokens if kind == "encoder" else pair.tgt_tokens
            QUERY = IntParam("mask_query", default=0, lo=0, hi=len(tokens) - 1)
            clamp_state("masks.query", QUERY.hi)
            with c2:
                query = st.select_slider(t("masks.row.query"), list(range(len(tokens))),
                                         key=bind(QUERY, key="masks.query"),
                                         format_func=lambda q: f"{q}: {tv.display_token(tokens[q])}")
            st.markdown(t("masks.row.intro"))
        else:
            st.markdown(t("masks.effect.intro"))
    if section == "matrices":
        st.markdown(t("masks.matrices.intro", s=len(pair.src_ids), pads=pair.src_pads, t=len(pair.tgt_ids),
                      tpads=pair.tgt_pads))
    elif section == "printout":
        st.markdown(t("masks.printout.intro"))
    if not needs_model or ckpt is not None:
        masks_view(section, ckpt, tokenizer, pair, layer, head, kind, query, {})
    if section == "matrices":
        st.caption(t("masks.matrices.caption"))
        if pair.src_pads == 0:
            st.info(t("masks.matrices.no_padding"), icon=":material/info:")
    elif section == "printout":
        seed_text, _ = mv.cached_seed_example()
        st.markdown(t("masks.printout.seed"))
        st.code("decoder_mask(torch.tensor([[1, 2, 3, 0, 0]]))\n" + seed_text, language="python")
    elif section == "row" and ckpt is not None:
        st.latex(r"w_j = \frac{e^{s_j}}{\sum_k e^{s_k}}, \qquad e^{-\infty} = 0 \;\Rightarrow\; w_j = 0"
                 r"\text{ for every hidden key } j")
        st.caption(t("masks.row.caption"))

    # -------------------------------------------------------------- the training experiment
    st.subheader(t("masks.training.heading"))
    st.markdown(t("masks.training.body"))
    link(stop("training"), t("masks.training.link"), icon=":material/model_training:")

tour_links("masks")

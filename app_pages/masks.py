"""Masks: which position may attend to which, and what switching a mask off does to real attention;
beyond the paper, sparse patterns that make attention cheaper (and what they break), and the masks of
encoder-only and decoder-only models."""
from typing import Sequence

import pandas as pd
import streamlit as st

from explain.masks import (PATTERNS, SELF_ATTENTION_KINDS, SHOWN_PADS, HeadMap, PairTokens, Pattern,
                           RestrictedAnswers, family_masks, flipped, greedy_answer, head_map, leak_share, mask_frame,
                           mask_set, masked_attention, pair_tokens, pattern_view, row_steps, seed_example)
from explain.code import fully_masked_row
from explain.tokens import fallback_tokenizer
from figures.labels import display_token
from figures.masks import attention_map, labelled_mask, mask_matrix, row_bars, title_lines
from ui.cache import computed
from ui.code_panel import code_panel, numbers
from ui.home_view import family_table
from ui.i18n import current_lang, t
from ui.nav import link
from ui.page_errors import fragment
from ui.scaffold import page
from ui.tour import stop
from ui.url_state import BoolParam, ChoiceParam, IntParam, bind, clamp_state
from ui.widgets import batch_input, csv_download, model_batch, plot, sentence_picker
from ui.exercise_panel import UseMine, exercise_panel

BEYOND = ("sparse", "families")  # #32: beyond the paper's model
SECTIONS = ("matrices", "printout", "effect", "row", *BEYOND)
SECTION = ChoiceParam("masks_view", default="matrices", choices=SECTIONS)
PADDING = BoolParam("masks_pad", default=True)
LOOK_AHEAD = BoolParam("masks_ahead", default=True)
KIND = ChoiceParam("masks_kind", default="decoder", choices=SELF_ATTENTION_KINDS)
MATRICES = ("padding", "look_ahead", "combined")
ROW_STEPS = ("raw", "masked", "weights")
PATTERN = ChoiceParam("masks_pattern", default="window", choices=PATTERNS)
RADIUS = IntParam("masks_radius", default=1, lo=0, hi=16)
BLOCK = IntParam("masks_block", default=4, lo=1, hi=16)
STRIDE = IntParam("masks_stride", default=4, lo=2, hi=16)
GLOBALS = IntParam("masks_globals", default=1, lo=1, hi=8)
SPARSE_DECODER = BoolParam("masks_sparse_decoder", default=False)
PATTERN_SIZES = {"window": ("radius",), "block": ("block",), "strided": ("stride",), "global": ("globals", "radius")}
SIZE_PARAMS = {"radius": RADIUS, "block": BLOCK, "stride": STRIDE, "globals": GLOBALS}


def mask_switches() -> tuple[bool, bool]:
    """The padding and look-ahead switches, side by side: ``(use_padding, use_look_ahead)``.
    Each is its own toggle, bound to its own URL value (``?masks_pad=``, ``?masks_ahead=``)."""
    with st.container(horizontal=True):
        use_padding = st.toggle(t("masks.padding_switch"), key=bind(PADDING, key="masks.padding"),
                                help=t("masks.padding_help"))
        use_look_ahead = st.toggle(t("masks.look_ahead_switch"), key=bind(LOOK_AHEAD, key="masks.look_ahead"),
                                   help=t("masks.look_ahead_help"))
    return use_padding, use_look_ahead


def crop_notes(pair: PairTokens, kinds: Sequence[str] = SELF_ATTENTION_KINDS) -> list[str]:
    """One sentence for each side of ``pair`` whose views leave ``<pad>`` positions out: how many."""
    return [t(f"masks.crop.{kind}", real=int(pair.real(kind).sum()), shown=pair.pads(kind) - pair.not_drawn(kind),
              more=pair.not_drawn(kind), total=len(pair.tokens(kind)))
            for kind in kinds if pair.not_drawn(kind)]


def matrices_section(pair: PairTokens, pad_id: int, use_padding: bool, use_look_ahead: bool) -> None:
    """The padding, look-ahead and combined masks as True/False matrices, side by side, drawn for the
    sentence's tokens and its first few ``<pad>`` (the masks of those ids are the full masks cropped)."""
    shown = pair.cropped()
    masks = computed(mask_set, shown.src_ids, shown.tgt_ids, pad_id, use_padding, use_look_ahead)
    off = t("masks.matrices.off")
    titles = {"padding": t("masks.matrices.padding") + ("" if use_padding else off),
              "look_ahead": t("masks.matrices.look_ahead") + ("" if use_look_ahead else off),
              "combined": t("masks.matrices.combined")}
    for column, name in zip(st.columns(3), MATRICES):
        tokens = shown.src_tokens if name == "padding" else shown.tgt_tokens
        plot(mask_matrix(getattr(masks, name), tokens, title=titles[name],
                                        true_text=t("masks.matrices.true"), false_text=t("masks.matrices.false"),
                                        true_short=t("masks.matrices.true_short"),
                                        false_short=t("masks.matrices.false_short"),
                                        x_title=t("masks.key"), y_title=t("masks.query"),
                                        hover=t("masks.matrices.hover")),
                            where=column, key=f"masks.matrix.{name}")


def printout_section(pair: PairTokens, pad_id: int, use_padding: bool, use_look_ahead: bool) -> None:
    """The three masks as PyTorch prints the tensors the model builds, for the sentence cropped as the
    pictures draw it (its tokens and its first few ``<pad>``), then what the crop left out."""
    shown = pair.cropped()
    masks = computed(mask_set, shown.src_ids, shown.tgt_ids, pad_id, use_padding, use_look_ahead)
    for name in MATRICES:
        st.markdown(f"**{t(f'masks.printout.{name}')}**")
        st.code(masks.printouts[name], language="python")
    if notes := crop_notes(pair):
        st.caption("  \n".join(notes))


def effect_notes(kind: str, switch_on: bool, maps: list[HeadMap], real: Sequence[bool]) -> list[str]:
    """What the switched and the flipped map of ``kind`` show: nothing to hide, hidden exactly, or
    how much leaked (``real``: which queries are real tokens, (T,))."""
    if not maps[0].hideable.any():
        return [t(f"masks.effect.{kind}_nothing")]  # the same words for both maps
    return [t(f"masks.effect.{kind}_on_caption") if on else
            t(f"masks.effect.{kind}_off_caption", share=f"{leak_share(m.weights, m.hideable, real):.1%}")
            for m, on in zip(maps, (switch_on, not switch_on))]


def effect_section(ckpt, pair: PairTokens, layer: int, head: int, use_padding: bool, use_look_ahead: bool) -> None:
    """Encoder (top) and decoder (bottom) self-attention of one head, each with its mask as
    switched (left) and flipped (right); then what each map shows."""
    on_off = {True: t("masks.effect.on"), False: t("masks.effect.off")}
    notes = []
    for kind in SELF_ATTENTION_KINDS:
        switch_on = use_padding if kind == "encoder" else use_look_ahead
        runs = ((use_padding, use_look_ahead), flipped(kind, use_padding, use_look_ahead))
        maps = [head_map(computed(masked_attention, pair.src_ids, pair.tgt_ids, *run, model=ckpt),
                         kind, layer, head) for run in runs]
        drawn = pair.drawn(kind)
        title = t(f"masks.effect.{kind}_title", state=on_off[switch_on])
        flipped_title = t(f"masks.effect.{kind}_title", state=on_off[not switch_on])
        titles = (title, t("masks.effect.flipped", title=flipped_title))
        room = title_lines(titles)
        for n, (column, m, map_title) in enumerate(zip(st.columns(2), maps, titles)):
            view = m.cropped(drawn)
            plot(attention_map(view.weights, view.mask, view.leaks, pair.tokens(kind)[:drawn],
                                              title=map_title, x_title=t("masks.key"), y_title=t("masks.query"),
                                              title_room=room),
                                where=column, key=f"masks.effect.{kind}.{n}")
        notes += effect_notes(kind, switch_on, maps, pair.real(kind))
    if crops := crop_notes(pair):
        notes += [*crops, t("masks.effect.crop_numbers")]
    st.caption("  \n".join(notes))


def row_section(ckpt, pair: PairTokens, kind: str, layer: int, head: int, query: int, use_padding: bool,
                use_look_ahead: bool) -> None:
    """One query row from scores to weights, as three bar charts side by side (the keys a view draws;
    the softmax ran over the whole padded row)."""
    attention = computed(masked_attention, pair.src_ids, pair.tgt_ids, use_padding, use_look_ahead, model=ckpt)
    drawn = pair.drawn(kind)
    steps = row_steps(attention, kind, layer, head, query).cropped(drawn)
    figures = row_bars(steps.raw, steps.weights, steps.allowed, pair.tokens(kind)[:drawn],
                       titles=tuple(t(f"masks.row.{name}") for name in ROW_STEPS), x_title=t("masks.key"),
                       minus_inf="−∞")
    for column, name, fig in zip(st.columns(3), ROW_STEPS, figures):
        plot(fig, where=column, key=f"masks.row.{name}")
    if notes := crop_notes(pair, (kind,)):
        st.caption("  \n".join(notes))


@fragment
def mask_view(section: str, ckpt, pad_id: int, pair: PairTokens, layer: int, head: int, kind: str,
              query: int) -> None:
    """The switches and the picture they drive: flipping a switch reruns only this."""
    use_padding, use_look_ahead = mask_switches()
    if section == "matrices":
        matrices_section(pair, pad_id, use_padding, use_look_ahead)
    elif section == "printout":
        printout_section(pair, pad_id, use_padding, use_look_ahead)
    elif section == "effect":
        effect_section(ckpt, pair, layer, head, use_padding, use_look_ahead)
    else:
        row_section(ckpt, pair, kind, layer, head, query, use_padding, use_look_ahead)
    row = computed(fully_masked_row)
    code_panel("masks", ("padding_mask", "look_ahead_mask", "target_mask", "masked_softmax"), ckpt=ckpt,
               source=pair.src_ids if ckpt is not None else None, target=pair.tgt_ids, where={"stack": "encoder"},
               use_padding_mask=use_padding, use_look_ahead_mask=use_look_ahead,
               notes=(t("code.panel.minus_inf", naive=numbers(row.with_minus_inf), ours=numbers(row.this_code)),),
               paper_rows=("mask_polarity", "neg_inf"))


def mask_labels() -> dict[str, str]:
    """The texts of a True/False matrix's cells, hover and axes."""
    return dict(true_text=t("masks.matrices.true"), false_text=t("masks.matrices.false"),
                true_short=t("masks.matrices.true_short"), false_short=t("masks.matrices.false_short"),
                x_title=t("masks.key"), y_title=t("masks.query"), hover=t("masks.matrices.hover"))


# ------------------------------------------------------------------ cheaper attention: sparse patterns (#32)


def pattern_controls() -> Pattern:
    """The pattern picker (``?masks_pattern=``) and the sliders of its sizes: the window's radius
    (``?masks_radius=``), the block size (``?masks_block=``), the stride (``?masks_stride=``) and the number of
    global tokens (``?masks_globals=``); a size the pattern does not read keeps its default."""
    kind = st.segmented_control(t("masks.sparse.pattern"), PATTERNS, required=True,
                                format_func=lambda k: t(f"masks.sparse.pattern_{k}"),
                                key=bind(PATTERN, key="masks.pattern"))
    sizes = {name: param.default for name, param in SIZE_PARAMS.items()}
    for column, name in zip(st.columns(2), PATTERN_SIZES[kind]):
        param = SIZE_PARAMS[name]
        sizes[name] = column.slider(t(f"masks.sparse.{name}"), param.lo, param.hi,
                                    key=bind(param, key=f"masks.{name}"), help=t(f"masks.sparse.{name}_help"))
    return Pattern(kind, radius=sizes["radius"], block=sizes["block"], stride=sizes["stride"],
                   n_global=sizes["globals"])


def pattern_name(pattern: Pattern) -> str:
    """The pattern with its sizes, e.g. "sliding window, r = 1"."""
    return t(f"masks.sparse.name_{pattern.kind}", r=pattern.radius, b=pattern.block, s=pattern.stride,
             g=pattern.n_global)


def percent(part: int, whole: int) -> str:
    return f"{part / whole:.0%}"


def connect_note(connect: int | None, ckpt) -> str:
    """How many encoder layers the pattern needs before every word has heard from every other."""
    if connect is None:
        return t("masks.sparse.connect_never")
    if ckpt is None:
        return t("masks.sparse.connect", layers=connect)
    have = ckpt.model.config.n_layers
    return t("masks.sparse.connect", layers=connect) + " " + t(
        "masks.sparse.connect_enough" if connect <= have else "masks.sparse.connect_short", have=have)


def answers_verdict(answers: RestrictedAnswers) -> str:
    """Same answer (and how its probability moved) or where the two answers part."""
    full, restricted = answers.full, answers.restricted
    probs = dict(full=f"{full.probability:.3g}", restricted=f"{restricted.probability:.3g}")
    position = answers.first_difference
    if position is None:
        return t("masks.sparse.same", **probs)
    end = t("masks.sparse.end")

    def token(answer) -> str:
        return f"`{display_token(answer.tokens[position])}`" if position < len(answer.tokens) else end

    return t("masks.sparse.differ", position=position + 1, full_token=token(full),
             restricted_token=token(restricted), **probs)


def answers_section(ckpt, sentence: str, pattern: Pattern) -> None:
    """The chosen model's greedy answer with the full masks and with the pattern, and their probabilities."""
    st.markdown(f"**{t('masks.sparse.model_heading')}**")
    if ckpt is None:
        st.info(t("masks.sparse.no_model"), icon=":material/info:")
        return
    st.markdown(t("masks.sparse.model_intro"))
    decoder = st.toggle(t("masks.sparse.decoder_switch"), key=bind(SPARSE_DECODER, key="masks.sparse_decoder"),
                        help=t("masks.sparse.decoder_help"))
    # Two cache entries: the full masks' answer is the same for every pattern, so a switch decodes once, not twice.
    answers = RestrictedAnswers(full=computed(greedy_answer, sentence, model=ckpt),
                                restricted=computed(greedy_answer, sentence, pattern, decoder, model=ckpt))
    where = t("masks.sparse.where_both" if decoder else "masks.sparse.where_encoder")
    rows = ((t("masks.sparse.full_mask"), answers.full), (f"{pattern_name(pattern)} ({where})", answers.restricted))
    st.dataframe(pd.DataFrame({t("masks.sparse.col_mask"): [name for name, _ in rows],
                               t("masks.sparse.col_answer"): [a.text for _, a in rows],
                               t("masks.sparse.col_prob"): [f"{a.probability:.3g}" for _, a in rows]}),
                 hide_index=True, key="masks.sparse.answers")
    st.markdown(answers_verdict(answers))
    st.caption(t("masks.sparse.answers_caption"))


# The functions that build each pattern (a window plus global tokens is built on the window).
PATTERN_CODE = {"window": ("window_mask",), "block": ("block_mask",), "strided": ("strided_mask",),
                "global": ("global_window_mask", "window_mask")}


@fragment
def sparse_view(ckpt, pair: PairTokens, sentence: str) -> None:
    """The pattern picker, the pattern on this sentence (encoder: n × n; decoder: AND the look-ahead
    mask) with the scores each computes, and what it does to the model's answer: its controls rerun only this."""
    pattern = pattern_controls()
    shown = pair.unpadded()
    view = computed(pattern_view, pattern, len(shown.src_tokens), len(shown.tgt_tokens))
    enc, dec = view.encoder_count, view.decoder_count
    titles = (t("masks.sparse.encoder_title", cells=enc.cells, full=enc.full),
              t("masks.sparse.decoder_title", cells=dec.causal_cells, causal=dec.causal))
    room = title_lines(titles)
    for column, mask, tokens, title, name in zip(st.columns(2), (view.encoder, view.decoder),
                                                 (shown.src_tokens, shown.tgt_tokens), titles, ("encoder", "decoder")):
        plot(labelled_mask(mask, tokens, tokens, title=title, title_room=room, **mask_labels()),
             where=column, key=f"masks.sparse.{name}")
    st.caption(t("masks.sparse.counts", n=enc.n, cells=enc.cells, full=enc.full, share=percent(enc.cells, enc.full),
                 t=dec.n, dcells=dec.causal_cells, causal=dec.causal, dshare=percent(dec.causal_cells, dec.causal),
                 dfull=dec.full, fshare=percent(dec.causal_cells, dec.full)))
    st.markdown(connect_note(view.connect, ckpt))
    csv_download("masks.sparse.csv", lambda: mask_frame(view.encoder, shown.src_tokens, shown.src_tokens).to_csv(),
                 f"masks_{pattern.kind}.csv", "masks.sparse.download")
    answers_section(ckpt, sentence, pattern)
    code_panel("masks", (*PATTERN_CODE[pattern.kind], "restricted_attention", "restricted_look_ahead"),
               name="sparse_code", notes=(t("masks.sparse.code_note"),), title_names=t("masks.sparse.code_names"))


def sparse_section(ckpt, pair: PairTokens, sentence: str) -> None:
    """Cheaper attention: what the paper's restricted self-attention and today's sparse patterns compute."""
    st.markdown(t("masks.sparse.intro"))
    link(stop("attention_cost"), t("masks.sparse.cost_link"), icon=":material/speed:")
    sparse_view(ckpt, pair, sentence)


# ------------------------------------------------------------------ the three families (#32)


def families_section(pair: PairTokens) -> None:
    """The mask each family uses for this sentence: encoder-decoder's three, encoder-only's one bidirectional
    matrix, decoder-only's one causal matrix over source and answer; then which pages apply to each."""
    shown = pair.unpadded()
    masks = {(m.family, m.part): m for m in computed(family_masks, shown.src_tokens, shown.tgt_tokens)}
    st.markdown(t("masks.families.intro"))

    def draw(family: str, part: str, title: str, room: int, where) -> None:
        m = masks[(family, part)]
        plot(labelled_mask(m.mask, m.cols, m.rows, title=title, title_room=room, **mask_labels()), where=where,
             key=f"masks.families.{family}.{part}")

    def lead(family: str) -> str:  # "**name.** body" in English, "**name**：body" in Chinese
        return t("masks.families.lead", name=t(f"masks.families.{family}.name"), body=t(f"masks.families.{family}.body"))

    st.markdown(lead("encoder_decoder"))
    parts = ("encoder_self", "decoder_self", "cross")
    titles = [t(f"masks.families.part.{part}") for part in parts]
    for column, part, title in zip(st.columns(3), parts, titles):
        draw("encoder_decoder", part, title, title_lines(titles), column)
    singles = (("encoder_only", "bidirectional"), ("decoder_only", "causal"))
    titles = [t(f"masks.families.part.{part}") for _, part in singles]
    for column, (family, part), title in zip(st.columns(2), singles, titles):
        column.markdown(lead(family))
        draw(family, part, title, title_lines(titles), column)
    st.caption(t("masks.families.caption"))
    st.markdown(f"**{t('masks.families.table_heading')}**")
    st.markdown(family_table(current_lang()))
    st.caption(t("masks.families.table_caption"))


def layer_and_head(ckpt) -> tuple[int, int]:
    """The layer and head pickers (``?masks_layer=``, ``?masks_head=``), side by side."""
    n_layers, n_heads = ckpt.model.config.n_layers, ckpt.model.config.n_heads
    layer_param = IntParam("masks_layer", default=0, lo=0, hi=n_layers - 1)
    head_param = IntParam("masks_head", default=0, lo=0, hi=n_heads - 1)
    clamp_state("masks.layer", layer_param.hi)
    clamp_state("masks.head", head_param.hi)
    c1, c2 = st.columns(2)
    with c1:
        layer = st.selectbox(t("masks.effect.layer"), range(n_layers), key=bind(layer_param, key="masks.layer"),
                             format_func=lambda n: t("masks.effect.layer_option", n=n + 1, total=n_layers))
    with c2:
        head = st.selectbox(t("masks.effect.head"), range(n_heads), key=bind(head_param, key="masks.head"),
                            format_func=lambda n: t("masks.effect.head_option", n=n + 1, total=n_heads))
    return layer, head


def kind_and_query(pair: PairTokens) -> tuple[str, int]:
    """Which self-attention (``?masks_kind=``) and which of its query positions (``?masks_query=``): the
    positions a view draws (see :meth:`PairTokens.drawn`)."""
    c1, c2 = st.columns([2, 5])
    with c1:
        kind = st.radio(t("masks.row.kind"), SELF_ATTENTION_KINDS, key=bind(KIND, key="masks.kind"),
                        format_func=lambda k: t(f"masks.row.kind_{k}"), horizontal=True)
    tokens = pair.tokens(kind)[:pair.drawn(kind)]
    query_param = IntParam("masks_query", default=0, lo=0, hi=len(tokens) - 1)
    clamp_state("masks.query", query_param.hi)
    with c2:
        query = st.select_slider(t("masks.row.query"), list(range(len(tokens))),
                                 key=bind(query_param, key="masks.query"),
                                 format_func=lambda q: f"{q}: {display_token(tokens[q])}")
    return kind, query


FORMULAS = (r"\begin{gathered}\mathrm{Attention}(Q,K,V) \\ = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}} + M\right)V,"
            r"\end{gathered}",  # two lines: one is wider than a phone
            r"M_{ij} = \begin{cases} 0 & \text{mask}_{ij} \text{: " + t("masks.formula_true") + r"} \\"
            r" -\infty & \text{mask}_{ij} \text{: " + t("masks.formula_false") + r"} \end{cases}",)

with page("masks", formulas=FORMULAS, try_this="top") as ckpt:
    tokenizer = ckpt.tokenizer if ckpt is not None else fallback_tokenizer()

    prepared = batch_input(ckpt, "masks")

    if prepared.sentences:
        sentences = tuple(prepared.sentences)
        index = sentence_picker(t("tokens.sentence.pick"), sentences, t("tokens.sentence.option", n="{n}",
                                                                        text="{text}"),
                                "masks")
        batch = model_batch(ckpt, sentences)
        pair = pair_tokens(batch, index)
        section = st.segmented_control(t("masks.section_label"), SECTIONS, required=True,
                                       format_func=lambda s: t(f"masks.{s}.heading"),
                                       key=bind(SECTION, key="masks.section"))
        layer = head = query = 0
        kind = KIND.default
        needs_model = section in ("effect", "row")
        if needs_model and ckpt is None:
            st.info(t("masks.effect.no_model"), icon=":material/info:")
        elif needs_model:
            layer, head = layer_and_head(ckpt)
            if section == "row":
                kind, query = kind_and_query(pair)
                st.markdown(t("masks.row.intro"))
            else:
                st.markdown(t("masks.effect.intro"))
        if section == "matrices":
            st.markdown(t("masks.matrices.intro", s=len(pair.src_ids), pads=pair.src_pads, t=len(pair.tgt_ids),
                          tpads=pair.tgt_pads))
        elif section == "printout":
            st.markdown(t("masks.printout.intro", shown=SHOWN_PADS))
        if section == "sparse":
            sparse_section(ckpt, pair, sentences[index])
        elif section == "families":
            families_section(pair)
        elif not needs_model or ckpt is not None:
            mask_view(section, ckpt, tokenizer.pad_id, pair, layer, head, kind, query)
        if section == "matrices":
            st.caption("  \n".join([t("masks.matrices.caption"), *crop_notes(pair)]))
            if pair.src_pads == 0:
                st.info(t("masks.matrices.no_padding"), icon=":material/info:")
        elif section == "printout":
            seed_text, _ = computed(seed_example)
            st.markdown(t("masks.printout.seed"))
            st.code("decoder_mask(torch.tensor([[1, 2, 3, 0, 0]]))\n" + seed_text, language="python")
        elif section == "row" and ckpt is not None:
            st.latex(r"\begin{gathered} w_j = \frac{e^{s_j}}{\sum_k e^{s_k}}, \qquad e^{-\infty} = 0 \\ \Rightarrow\; w_j = 0"
                     r"\text{ " + t("masks.row.formula_hidden") + r" } j \end{gathered}")
            st.caption(t("masks.row.caption"))

        # -------------------------------------------------------------- the training experiment
        st.subheader(t("masks.training.heading"))
        st.markdown(t("masks.training.body"))
        link(stop("training"), t("masks.training.link"), icon=":material/model_training:")
        with st.container(border=True, key="masks_why_mask"):  # a question a class asks here (#31)
            st.markdown(f"**{t('masks.training.question')}**")
            st.markdown(t("masks.training.answer"))
    exercise_panel("masks", use_mine=UseMine.batch(batch, index) if ckpt is not None and prepared.sentences else None)

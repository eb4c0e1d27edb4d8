"""The residual stream: every sublayer adds an update to each token's vector. Sizes and turns through
every sublayer of every layer, and what happens to the answer when a residual connection is switched off."""
import numpy as np
import streamlit as st

from explain.attention import format_probability
from explain.dropout import DRAWS, P_MAX, sublayer_update, through_dropout
from explain.paper_vs_code import trained_setting
from explain.residual import (STACKS, all_connections, off_triples, parse_connection, stream_csv, stream_matrix,
                              stream_view, switch_off, token_path)
from figures import residual as charts
from figures.attention import ablation_figure
from figures.labels import display_token, token_label
from figures.style import outline
from ui.cache import computed
from ui.code_panel import chosen, code_panel
from ui.head_set import HeadSetParam
from ui.i18n import t
from ui.page_errors import fragment
from ui.scaffold import PLOT_CONFIG, page
from ui.url_state import ChoiceParam, FloatParam, IntParam, bind, clamp_state, markdown_literal
from ui.viewport import is_narrow
from ui.widgets import answer_box, csv_download, plot, sentence_input

SECTIONS = ("sizes", "off", "dropout")
SECTION = ChoiceParam("residual_stream_view", "sizes", choices=SECTIONS)
STACK = ChoiceParam("residual_stream_stack", "encoder", choices=STACKS)


def norm_name(ckpt) -> str:
    return t(f"residual_stream.norm_name.{getattr(ckpt.model.config, 'norm_kind', 'layer')}")


def formula(ckpt) -> None:
    """The model's sublayer connection as a formula: post-norm (the paper's) or pre-norm."""
    norm = r"\mathrm{RMSNorm}" if getattr(ckpt.model.config, "norm_kind", "layer") == "rms" else r"\mathrm{LayerNorm}"
    if ckpt.model.config.norm_first:
        st.latex(rf"x_{{\text{{out}}}} = x + \mathrm{{Sublayer}}\big({norm}(x)\big)")
        st.caption(t("residual_stream.pre_norm", norm=norm_name(ckpt)))
    else:
        st.latex(rf"x_{{\text{{out}}}} = {norm}\big(x + \mathrm{{Sublayer}}(x)\big)")
        st.caption(t("residual_stream.post_norm", norm=norm_name(ckpt)))


def column_names(columns: list[tuple[int, str]]) -> list[str]:
    """``L1 attn``-style names of the sublayer connections of a stack, in order."""
    return [t("residual_stream.column", layer=layer, sublayer=t(f"residual_stream.short.{sub}")) for layer,
            sub in columns]


# ------------------------------------------------------------------ sizes and turns


def token_picker(tokens: list[str]) -> int:
    """The token the path chart follows (``?residual_stream_tok=``), kept inside the sentence when it shrinks."""
    last = len(tokens) - 1
    clamp_state("residual_stream.token", last)
    return st.selectbox(t("residual_stream.sizes.token"), list(range(len(tokens))),
                        format_func=lambda i: t("residual_stream.sizes.token_option", i=i,
                                                token=display_token(tokens[i])),
                        key=bind(IntParam("residual_stream_tok", 0, lo=0, hi=last), key="residual_stream.token"))


@fragment
def sizes(ckpt, source: str) -> None:
    """The stack picker, its heatmaps of sizes and turns, and one token's path. A fragment: the
    stack and the token redraw only this."""
    view = computed(stream_view, source, model=ckpt)
    stack = st.segmented_control(t("residual_stream.stack_label"), STACKS, required=True,
                                 format_func=lambda s: t(f"residual_stream.stack.{s}"),
                                 key=bind(STACK, key="residual_stream.stack"))
    if stack == "decoder":
        st.caption(t(f"residual_stream.decoder_reads_{view.target.origin}",
                     target=markdown_literal(view.target.text, limit=60)))
    tokens = view.src_tokens if stack == "encoder" else view.tgt_tokens
    x_norm, columns = stream_matrix(view, stack, "x_norm")
    update_norm, _ = stream_matrix(view, stack, "update_norm")
    turn, _ = stream_matrix(view, stack, "turn_cos")
    names = column_names(columns)
    titles = (t("residual_stream.sizes.x_title"), t("residual_stream.sizes.update_title"),
              t("residual_stream.sizes.turn_title"))
    hovers = ("%{y} · %{x}: ‖x‖ = %{z:.2f}", f"%{{y}} · %{{x}}: ‖{t('residual_stream.update')}‖ = %{{z:.2f}}",
              "%{y} · %{x}: cos = %{z:.3f}")
    stream = charts.stream_figure(x_norm, update_norm, turn, tokens, names, titles=titles, hovers=hovers)
    marked = chosen("residual_stream") in ("x_in", "update", "x_out")  # what the code panel below selected
    plot(outline(stream) if marked else stream, key="residual_stream.stream", config=PLOT_CONFIG)
    st.caption(t("residual_stream.sizes.reading_pre" if view.norm_first else "residual_stream.sizes.reading_post",
                 norm=norm_name(ckpt)))
    position = token_picker(tokens)
    path = token_path(view, stack, position)
    line_names = (t("residual_stream.sizes.x_line"), t("residual_stream.sizes.update_line"),
                  t("residual_stream.sizes.turn_line"))
    plot(charts.token_path_figure(names, path["x_norm"].to_numpy(), path["update_norm"].to_numpy(),
                                  path["turn_cos"].to_numpy(), names=line_names,
                                  titles=(t("residual_stream.sizes.path_sizes", token=token_label(tokens[position])),
                                          t("residual_stream.sizes.path_turn")),
                                  size_title=t("residual_stream.sizes.size_axis"), cos_title="cos"),
         key="residual_stream.path", config=PLOT_CONFIG)
    csv_download("residual_stream.export", lambda: stream_csv(view), "residual_stream.csv",
                 "residual_stream.export_stream")
    layer_code = "encoder_layer" if stack == "encoder" else "decoder_layer"
    code_panel("residual_stream", ("sublayer", layer_code, "encode" if stack == "encoder" else "decode"), ckpt=ckpt,
               source=source, target=view.target.text, where={"stack": stack, "i": "0", "sub": "self_attn"},
               paper_rows=("norm", "dropout"))


# ------------------------------------------------------------------ switching a residual off


def connection_label(code: str) -> str:
    """A connection code (``enc-1-ffn``) in words: stack, layer and sublayer."""
    stack, layer, sublayer = parse_connection(code)
    return t("residual_stream.off.option", stack=t(f"residual_stream.stack.{stack}"), layer=layer + 1,
             sublayer=t(f"residual_stream.long.{sublayer}"))


def connections_to_switch_off(ckpt) -> list[str]:
    """The multiselect of sublayer connections (``?residual_stream_off=``): their codes, e.g. ``["enc-1-ffn"]``."""
    codes = all_connections(ckpt.model.config.n_layers)
    param = HeadSetParam("residual_stream_off", default=[], choices=tuple(codes))
    return st.multiselect(t("residual_stream.off.label"), codes, format_func=connection_label, key=bind(param,
                                                                                             key="residual_stream.off"),
                          placeholder=t("residual_stream.off.placeholder"), help=t("residual_stream.off.help"))


@fragment
def switching_off(ckpt, source: str) -> None:
    """The answer with every residual connection on, next to the answer with the chosen ones off.
    A fragment: the choice redraws only this."""
    st.markdown(t("residual_stream.off.intro_pre" if ckpt.model.config.norm_first else "residual_stream.off.intro_post",
                  norm=norm_name(ckpt)))
    off = connections_to_switch_off(ckpt)
    result = computed(switch_off, source, off_triples(off), model=ckpt)
    left, right = st.columns(2)
    with left, st.container(border=True):
        st.markdown(f"**{t('residual_stream.off.all_on')}**")
        answer_box(result.answer_on)
        st.metric(t("residual_stream.off.probability"), format_probability(result.p_on))
    if not off:
        right.info(t("residual_stream.off.none"), icon=":material/touch_app:")
        return
    with right, st.container(border=True):
        st.markdown(f"**{t('residual_stream.off.some_off', count=len(off))}**")
        answer_box(result.answer_off)
        if not result.answer_off:
            st.caption(t("residual_stream.off.empty"))
        st.metric(t("residual_stream.off.probability_same"), format_probability(result.p_off),
                  delta=format_probability(result.p_off - result.p_on, sign=True))
        st.caption(t("residual_stream.off.own", p=format_probability(result.p_own)))
    if result.answer_off == result.answer_on:
        st.success(t("residual_stream.off.same_answer"), icon=":material/check_circle:")
    else:
        st.warning(t("residual_stream.off.changed_answer"), icon=":material/swap_horiz:")
    names = (t("residual_stream.off.all_on"), t("residual_stream.off.some_off", count=len(off)))
    plot(ablation_figure(result.tokens, result.per_token_on, result.per_token_off, names=names,
                         x_title=t("residual_stream.off.x_title"), y_title=t("residual_stream.off.y_title"),
                         hover="%{x}: %{y:.3f}"),
         key="residual_stream.off_chart", config=PLOT_CONFIG)


# ------------------------------------------------------------------ dropout on one update

DROP_P = FloatParam("residual_stream_drop_p", 0.1, lo=0.0, hi=P_MAX, step=0.05)
DROP_SEED = IntParam("residual_stream_drop_seed", 0, lo=0, hi=9999)
DIMS_SHOWN = (16, 32)  # the update's first numbers drawn: on a phone, elsewhere


@fragment
def dropout_section(ckpt, source: str) -> None:
    """One token's update at one sublayer connection, eval mode beside training mode with a drawn
    dropout mask, and the average of many masks. A fragment: its controls redraw only this."""
    st.markdown(t("residual_stream.dropout.intro"))
    st.latex(r"\mathrm{dropout}(y)_i = \frac{m_i\, y_i}{1-p},\quad m_i \sim \mathrm{Bernoulli}(1-p),\quad"
             r"\mathbb{E}[\mathrm{dropout}(y)] = y")
    codes = all_connections(ckpt.model.config.n_layers)
    where = st.selectbox(t("residual_stream.dropout.where"), codes, format_func=connection_label,
                         key=bind(ChoiceParam("residual_stream_drop_at", codes[0], choices=tuple(codes)),
                                  key="residual_stream.drop_at"))
    stack, layer, sublayer = parse_connection(where)
    view = computed(stream_view, source, model=ckpt)
    tokens = view.src_tokens if stack == "encoder" else view.tgt_tokens
    last = len(tokens) - 1
    clamp_state("residual_stream.drop_tok", last)
    position = st.selectbox(t("residual_stream.sizes.token"), list(range(len(tokens))),
                            format_func=lambda i: t("residual_stream.sizes.token_option", i=i,
                                                    token=display_token(tokens[i])),
                            key=bind(IntParam("residual_stream_drop_tok", 0, lo=0, hi=last),
                                     key="residual_stream.drop_tok"))
    left, right = st.columns([3, 2], vertical_alignment="bottom")
    p = left.slider(t("residual_stream.dropout.p"), DROP_P.lo, DROP_P.hi, step=DROP_P.step,
                    key=bind(DROP_P, key="residual_stream.drop_p"), help=t("residual_stream.dropout.p_help"))
    seed = right.number_input(t("residual_stream.dropout.seed"), DROP_SEED.lo, DROP_SEED.hi, step=1,
                              key=bind(DROP_SEED, key="residual_stream.drop_seed"),
                              help=t("residual_stream.dropout.seed_help"))
    update = computed(sublayer_update, source, stack, layer, sublayer, position, model=ckpt)
    drop = computed(through_dropout, update, round(float(p), 2), int(seed))
    shown = DIMS_SHOWN[0] if is_narrow() else DIMS_SHOWN[1]
    n = min(shown, len(update))
    names = (t("residual_stream.dropout.eval"), t("residual_stream.dropout.train", p=f"{drop.p:g}"))
    plot(charts.dropout_figure(drop.update[:n], drop.train[:n], drop.kept[:n], names=names,
                               title=t("residual_stream.dropout.title", n=n, d=len(update),
                                       token=token_label(tokens[position])),
                               x_title=t("residual_stream.dropout.x_axis"), y_title=t("residual_stream.dropout.y_axis"),
                               dropped_name=t("residual_stream.dropout.dropped_marker")),
         key="residual_stream.dropout_chart", config=PLOT_CONFIG)
    a, b, c = st.columns(3)
    a.metric(t("residual_stream.dropout.dropped"), f"{drop.dropped} / {len(update)}",
             help=t("residual_stream.dropout.dropped_help", p=f"{drop.p:g}", expected=f"{drop.p * len(update):.1f}"))
    b.metric(t("residual_stream.dropout.scale"), f"× {drop.scale:.3g}")
    c.metric(t("residual_stream.dropout.norms"), f"{np.linalg.norm(drop.train):.2f}",
             delta=f"{np.linalg.norm(drop.train) - np.linalg.norm(drop.update):+.2f}", delta_color="off",
             help=t("residual_stream.dropout.norms_help", eval=f"{np.linalg.norm(drop.update):.2f}"))
    st.caption(t("residual_stream.dropout.average", draws=f"{DRAWS:,}", gap=f"{drop.average_gap:.3f}",
                 size=f"{np.abs(drop.update).max():.3f}"))
    trained = trained_setting(ckpt, "dropout")
    st.info(t("residual_stream.dropout.eval_note", trained=f"{trained:g}" if trained is not None else "?"),
            icon=":material/info:")
    csv_download("residual_stream.export", lambda: drop.table().to_csv(index=False), "dropout.csv",
                 "residual_stream.dropout_csv")


# ------------------------------------------------------------------ the page


def explorer(ckpt) -> None:
    formula(ckpt)
    source = sentence_input(ckpt, "residual_stream")
    if source is None:
        return
    section = st.segmented_control(t("residual_stream.section_label"), SECTIONS, required=True,
                                   format_func=lambda s: t(f"residual_stream.section.{s}"),
                                   key=bind(SECTION, key="residual_stream.section"))
    if section == "sizes":
        sizes(ckpt, source)
    elif section == "off":
        switching_off(ckpt, source)
    else:
        dropout_section(ckpt, source)


with page("residual_stream", try_this="bottom") as checkpoint:
    if checkpoint is not None:
        explorer(checkpoint)

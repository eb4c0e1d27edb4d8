"""Feed-forward network: one layer's FFN on a typed sentence (hidden activations before and after the
non-linearity, the share of zeros, the output), why it is called position-wise, and how many of a
layer's parameters sit in it."""
import streamlit as st

from explain.ffn import (PAPER_D_FF, PAPER_D_MODEL, activations_csv, attention_parameters, ffn_kind, ffn_parameters,
                         layer_size_ratio,
                         ffn_view, model_sizes, output_csv, parameter_rows, position_wise)
from explain.residual import STACKS
from figures import ffn as charts
from figures.labels import display_token, plain_number
from figures.style import outline
from ui.cache import computed
from ui.code_panel import chosen, code_panel
from ui.i18n import t
from ui.page_errors import fragment
from ui.scaffold import PLOT_CONFIG, page
from ui.url_state import ChoiceParam, IntParam, bind, clamp_state, markdown_literal
from ui.widgets import csv_download, plot, sentence_input
from ui.exercise_panel import exercise_panel

SECTIONS = ("inside", "position", "params")
SECTION = ChoiceParam("feed_forward_view", "inside", choices=SECTIONS)
STACK = ChoiceParam("feed_forward_stack", "encoder", choices=STACKS)
RELU_LATEX = r"\mathrm{FFN}(x)=\max(0,\;xW_1+b_1)\,W_2+b_2"
SWIGLU_LATEX = r"\mathrm{FFN}(x)=\big(\mathrm{SiLU}(xW_{\text{gate}})\odot xV\big)\,W_2,\qquad \mathrm{SiLU}(z)=z\,\sigma(z)"


def formula(ckpt) -> None:
    """The model's FFN as a formula, with its sizes; a SwiGLU model says how it differs from the paper's."""
    sizes = model_sizes(ckpt)
    if ffn_kind(ckpt) == "swiglu":
        st.info(t("feed_forward.swiglu_note", hidden=sizes["hidden"], d_ff=sizes["d_ff"]), icon=":material/info:")
        st.latex(SWIGLU_LATEX)
    else:
        st.latex(RELU_LATEX)
    st.caption(t(f"feed_forward.sizes_{ffn_kind(ckpt)}", d_model=sizes["d_model"], hidden=sizes["hidden"],
                 paper_d=PAPER_D_MODEL, paper_ff=PAPER_D_FF))


def stack_and_layer(ckpt) -> tuple[str, int]:
    """The stack and layer controls (``?feed_forward_stack=``, ``?feed_forward_layer=``); layer 1-based."""
    n_layers = ckpt.model.config.n_layers
    left, right = st.columns(2)
    stack = left.segmented_control(t("feed_forward.stack_label"), STACKS, required=True,
                                   format_func=lambda s: t(f"feed_forward.stack.{s}"),
                                   key=bind(STACK, key="feed_forward.stack"))
    clamp_state("feed_forward.layer", n_layers)
    layer = right.segmented_control(t("feed_forward.layer_label"), list(range(1, n_layers + 1)), required=True,
                                    key=bind(IntParam("feed_forward_layer", 1, lo=1, hi=n_layers),
                                             key="feed_forward.layer"))
    return stack, layer


def target_note(stack: str, target) -> None:
    """Which text the decoder reads (teacher forcing), or what the encoder reads."""
    if stack == "decoder":
        st.caption(t(f"feed_forward.decoder_reads_{target.origin}", target=markdown_literal(target.text, limit=60)))


# ------------------------------------------------------------------ inside one layer's FFN


def token_hover(value: str) -> str:
    return f"%{{y}} · {value}: %{{z:.3f}}"


@fragment
def inside(ckpt, source: str) -> None:
    """The stack and layer, and that layer's FFN: hidden activations, the share of zeros, the output.
    A fragment: another stack or layer redraws only this."""
    stack, layer = stack_and_layer(ckpt)
    view = computed(ffn_view, source, stack, layer - 1, model=ckpt)
    target_note(stack, view.target)
    T, hidden = view.pre.shape
    kind = view.kind
    st.markdown(t("feed_forward.inside.shapes", t=T, d=view.x.shape[1], h=hidden))
    titles = (t(f"feed_forward.inside.before_{kind}"), t(f"feed_forward.inside.after_{kind}"))
    marked = chosen("feed_forward")  # the intermediate the code panel below has selected
    activations = charts.activations_figure(view.pre, view.post, view.tokens, titles=titles,
                                            x_title=t("feed_forward.inside.unit"),
                                            hover=token_hover(t("feed_forward.inside.unit") + " %{x}"))
    plot(outline(activations) if marked in ("hidden_pre", "hidden") else activations,
         key="feed_forward.activations", config=PLOT_CONFIG)
    st.caption(t(f"feed_forward.inside.caption_{kind}"))
    csv_download("feed_forward.export", lambda: activations_csv(view), f"ffn_{stack}_L{layer}_hidden.csv",
                 "feed_forward.export_hidden")
    st.markdown(f"**{t(f'feed_forward.inside.zeros_heading_{kind}')}**")
    share = float(view.off_share.mean())
    st.metric(t(f"feed_forward.inside.zeros_metric_{kind}"), f"{share:.0%}",
              help=t(f"feed_forward.inside.zeros_help_{kind}"))
    plot(charts.off_share_figure(view.off_share, view.tokens, x_title=t(f"feed_forward.inside.zeros_axis_{kind}"),
                                 hover="%{y}: %{x:.1%}"),
         key="feed_forward.zeros", config=PLOT_CONFIG)
    st.markdown(f"**{t('feed_forward.inside.output_heading')}**")
    output = charts.output_figure(view.output, view.tokens, title=t("feed_forward.inside.output_title"),
                                  x_title=t("feed_forward.inside.dimension"),
                                  hover=token_hover(t("feed_forward.inside.dimension") + " %{x}"))
    plot(outline(output) if marked == "ffn_out" else output, key="feed_forward.output", config=PLOT_CONFIG)
    st.caption(t("feed_forward.inside.output_caption"))
    csv_download("feed_forward.export", lambda: output_csv(view), f"ffn_{stack}_L{layer}_output.csv",
                 "feed_forward.export_output")
    kinds = ("swiglu", "feed_forward") if kind == "swiglu" else ("feed_forward", "swiglu")  # the model's first
    code_panel("feed_forward", kinds, ckpt=ckpt, source=source, target=view.target.text,
               where={"stack": stack, "i": str(layer - 1)}, paper_rows=("dropout",))


# ------------------------------------------------------------------ position-wise


def position_pickers(tokens: list[str]) -> tuple[int, int]:
    """The two positions (``?feed_forward_from=``, ``?feed_forward_to=``): whose vector is copied, and where to."""
    last = len(tokens) - 1
    options = list(range(len(tokens)))

    def label(i: int) -> str:
        return t("feed_forward.position.option", i=i, token=display_token(tokens[i]))

    left, right = st.columns(2)
    clamp_state("feed_forward.copy_from", last)
    clamp_state("feed_forward.copy_to", last)
    copy_from = left.selectbox(t("feed_forward.position.from"), options, format_func=label,
                               key=bind(IntParam("feed_forward_from", 0, lo=0, hi=last), key="feed_forward.copy_from"))
    copy_to = right.selectbox(t("feed_forward.position.to"), options, format_func=label,
                              key=bind(IntParam("feed_forward_to", min(1, last), lo=0, hi=last),
                                       key="feed_forward.copy_to"))
    return copy_from, copy_to


@fragment
def position(ckpt, source: str) -> None:
    """Copy one position's vector into another: the FFN's other outputs stay put, attention's move.
    A fragment: the pickers redraw only this."""
    stack, layer = stack_and_layer(ckpt)
    view = computed(ffn_view, source, stack, layer - 1, model=ckpt)
    target_note(stack, view.target)
    if len(view.tokens) < 2:
        st.info(t("feed_forward.position.too_short"), icon=":material/info:")
        return
    copy_from, copy_to = position_pickers(view.tokens)
    result = computed(position_wise, source, stack, layer - 1, copy_from, copy_to, model=ckpt)
    others = [i for i in range(len(result.tokens)) if i != result.copy_to]
    ffn_others = float(result.ffn_change[others].max()) if others else 0.0
    att_others = float(result.attention_change[others].max()) if others else 0.0
    c1, c2, c3 = st.columns(3)
    c1.metric(t("feed_forward.position.twin_metric"), plain_number(result.twin_gap),
              help=t("feed_forward.position.twin_help"))
    c2.metric(t("feed_forward.position.ffn_others"), plain_number(ffn_others), help=t("feed_forward.position.others_help"))
    c3.metric(t("feed_forward.position.attention_others"), f"{att_others:.2f}",
              help=t("feed_forward.position.others_help"))
    names = (t("feed_forward.position.ffn_name"), t("feed_forward.position.attention_name"))
    plot(charts.position_wise_figure(result.tokens, result.ffn_change, result.attention_change, names=names,
                                     changed=result.copy_to, x_title=t("feed_forward.position.x_title"),
                                     y_title=t("feed_forward.position.y_title"), hover="%{x}: %{y:.3f}"),
         key="feed_forward.position_chart", config=PLOT_CONFIG)
    if copy_from == copy_to:
        st.caption(t("feed_forward.position.same"))
    else:
        token = markdown_literal(display_token(result.tokens[copy_from]))
        st.caption(t(f"feed_forward.position.reading_{stack}", to=copy_to, token=token))


# ------------------------------------------------------------------ parameters


def latex_count(n: int) -> str:
    """``2{,}099{,}712``: thousands separators that LaTeX does not space like list commas."""
    return f"{n:,}".replace(",", "{,}")


def parameters(ckpt) -> None:
    """How many of a layer's parameters sit in the FFN: this model and the paper's base model."""
    rows = computed(parameter_rows, model=ckpt)
    st.markdown(t("feed_forward.params.intro"))
    d, ff = PAPER_D_MODEL, PAPER_D_FF
    st.latex(rf"\underbrace{{2\cdot{d}\cdot{ff}+{ff}+{d}}}_{{\mathrm{{FFN}}}}={latex_count(ffn_parameters(d, ff))}"
             rf"\qquad\underbrace{{4\cdot{d}^2+4\cdot{d}}}_{{W^Q,W^K,W^V,W^O}}={latex_count(attention_parameters(d))}")
    if ffn_kind(ckpt) == "swiglu":
        st.caption(t("feed_forward.params.swiglu", hidden=model_sizes(ckpt)["hidden"]))
    shown = rows.assign(
        model=[t(f"feed_forward.params.model_{m}") for m in rows["model"]],
        stack=[t(f"feed_forward.stack.{s}") for s in rows["stack"]],
        ffn_share=[f"{v:.1%}" for v in rows["ffn_share"]],
    )
    columns = {name: t(f"feed_forward.params.col_{name}") for name in shown.columns}
    counts = {columns[name]: st.column_config.NumberColumn(format="localized")  # 198,272 (the browser's separators)
              for name in ("ffn", "attention", "norm", "total")}
    st.dataframe(shown.rename(columns=columns), hide_index=True, width="stretch", column_config=counts)
    labels = [t("feed_forward.params.bar_label", model=m, stack=s) for m, s in zip(shown["model"], shown["stack"])]
    totals = rows["total"].to_numpy(dtype=float)
    names = (t("feed_forward.params.col_ffn"), t("feed_forward.params.col_attention"),
             t("feed_forward.params.col_norm"))
    plot(charts.parameter_figure(labels, rows["ffn"] / totals, rows["attention"] / totals, rows["norm"] / totals,
                                 names=names, x_title=t("feed_forward.params.x_title")),
         key="feed_forward.params_chart", config=PLOT_CONFIG)
    this_encoder = rows.iloc[0]
    st.caption(t("feed_forward.params.reading", share=f"{this_encoder['ffn_share']:.0%}",
                 paper=f"{rows.iloc[2]['ffn_share']:.0%}"))
    csv_download("feed_forward.export", lambda: rows.to_csv(index=False), "ffn_parameters.csv",
                 "feed_forward.export_params")


# ------------------------------------------------------------------ the page


def explorer(ckpt) -> None:
    source = sentence_input(ckpt, "feed_forward")
    formula(ckpt)
    section = st.segmented_control(t("feed_forward.section_label"), SECTIONS, required=True,
                                   format_func=lambda s: t(f"feed_forward.section.{s}"),
                                   key=bind(SECTION, key="feed_forward.section"))
    if section == "params":
        parameters(ckpt)
    elif source is None:
        return
    elif section == "inside":
        inside(ckpt, source)
    else:
        st.markdown(t("feed_forward.position.intro"))
        position(ckpt, source)


def try_values(ckpt) -> dict[str, str]:
    """The try-this box's size comparison, computed for the selected model (63× for a character model, 16× for en-zh)."""
    ratio = computed(layer_size_ratio, model=ckpt) if ckpt is not None else None
    if ratio is None or ratio < 2:
        return {"size": t("feed_forward.try.size_other")}
    return {"size": t("feed_forward.try.size_smaller", ratio=f"{ratio:.0f}")}


with page("feed_forward", try_this="bottom", try_values=try_values) as checkpoint:
    if checkpoint is not None:
        explorer(checkpoint)
    exercise_panel("feed_forward")

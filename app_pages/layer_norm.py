"""LayerNorm and where it goes: one normalisation of the model token by token, RMSNorm beside it,
LayerNorm vs BatchNorm on a padded batch, and post-norm vs pre-norm with the gradients at initialisation,
beside a third wiring without residual connections and the "1 +" the skip adds to one connection's gradient."""
import numpy as np
import streamlit as st

from explain.layernorm import (FINAL, TokenNorm, batch_compare, matrix_csv, norm_sites, parse_site,
                               rms_vs_layer, sentence_pair_ids, token_norm, trace_name)
from explain.norm_placement import (BATCH_SIZE, GRADIENT_WIRINGS, N_LAYERS, NO_RESIDUAL, ONE_PLUS_ROWS,
                                    PLACEMENTS, SEEDS, TASK, OnePlus, connections, gradient_csv, growth,
                                    init_gradient_norms, one_plus_term, spread)
from figures.labels import display_token, token_label
from figures.layernorm import (feature_means_figure, gamma_beta_figure, gradient_figure, normalised_heatmap,
                               rms_layer_figure, wiring_figure)
from ui.cache import computed
from ui.code_panel import code_panel
from ui.i18n import t
from ui.nav import link, section_links
from ui.page_errors import fragment
from ui.scaffold import page
from ui.tour import stop
from ui.url_state import BoolParam, ChoiceParam, IntParam, bind, clamp_state
from ui.widgets import batch_input, csv_download, plot, sentence_picker
from ui.exercise_panel import UseMine, exercise_panel

COUNT_PADS = BoolParam("layer_norm_pads", default=True)
SEED = IntParam("layer_norm_seed", default=SEEDS[0], lo=SEEDS[0], hi=SEEDS[-1])
LAYER_NORM = r"\mathrm{LayerNorm}(x) = \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} \odot \gamma + \beta"
STATS = r"\mu = \frac{1}{d}\sum_{j=1}^{d} x_j,\qquad \sigma^2 = \frac{1}{d}\sum_{j=1}^{d} (x_j - \mu)^2"
RMS_NORM = r"\mathrm{RMSNorm}(x) = \frac{x}{\sqrt{\frac{1}{d}\sum_{j} x_j^2 + \epsilon}} \odot \gamma"
BATCH_NORM = (r"\begin{gathered}\mathrm{BatchNorm}(x)_{b,t,j} = \frac{x_{b,t,j} - \mu_j}{\sqrt{\sigma_j^2 + \epsilon}},"
              r" \\ \mu_j = \frac{1}{N}\sum_{b,t} x_{b,t,j}\end{gathered}")  # two lines: one is wider than a phone
WIRINGS = {"post": r"y = \mathrm{LayerNorm}(x + \mathrm{Sublayer}(x))",
           "pre": r"y = x + \mathrm{Sublayer}(\mathrm{LayerNorm}(x))"}
NO_RESIDUAL_WIRING = r"y = \mathrm{LayerNorm}(\mathrm{Sublayer}(x))"
ONE_PLUS = (r"\begin{aligned}\frac{\partial L}{\partial x} &= \frac{\partial L}{\partial (x+F)}"
            r"\Big(1 + \frac{\partial F}{\partial x}\Big) \\ &= \frac{\partial L}{\partial (x+F)} + "
            r"\frac{\partial L}{\partial (x+F)}\,\frac{\partial F}{\partial x}\end{aligned}")  # two lines: a phone
WITHOUT_SKIP = r"\frac{\partial L}{\partial x} = \frac{\partial L}{\partial F}\,\frac{\partial F}{\partial x}"
SKIP_SITES = tuple(f"{stack}.{layer}.{sub}" for stack, layer, sub in connections(N_LAYERS))
SKIP_AT = ChoiceParam("layer_norm_skip_at", default=f"decoder.{N_LAYERS - 1}.cross_attn", choices=SKIP_SITES)


# ------------------------------------------------------------------ one norm, token by token


def site_label(site: str, n_layers: int) -> str:
    """A norm site as the picker writes it, e.g. "Decoder layer 1 of 2 · cross-attention"."""
    stack, layer, sublayer = parse_site(site)
    if sublayer == FINAL:
        return t(f"layer_norm.token.final_{stack}")
    return t("layer_norm.token.site_option", stack=t(f"layer_norm.token.stack_{stack}"), n=layer + 1, total=n_layers,
             sublayer=t(f"layer_norm.token.sublayer_{sublayer}"))


def site_picker(ckpt) -> str:
    """Which of the model's norms to look at (``?layer_norm_at=``): every Add & Norm, and a pre-norm
    stack's final norm."""
    config = ckpt.model.config
    sites = norm_sites(config.n_layers, config.norm_first)
    param = ChoiceParam("layer_norm_at", default=sites[0], choices=sites)
    return st.selectbox(t("layer_norm.token.site"), sites, key=bind(param, key="layer_norm.site"),
                        format_func=lambda s: site_label(s, config.n_layers), help=t("layer_norm.token.site_help"))


def reads_sentence(view: TokenNorm) -> str:
    """What the chosen norm reads, in one sentence: post-norm x + Sublayer(x), pre-norm x, or the stack's end."""
    if parse_site(view.site)[2] == FINAL:
        return t("layer_norm.token.reads_final")
    return t("layer_norm.token.reads_pre" if view.norm_first else "layer_norm.token.reads_post")


def token_table(view: TokenNorm) -> None:
    """Each token's mean and variance (or RMS) before, after normalising, after γ and β."""
    table = view.table()
    table.columns = [t(f"layer_norm.token.col_{column}") for column in table.columns]
    table.insert(0, t("layer_norm.token.col_token"), [display_token(token) for token in view.tokens])
    numbers = {column: st.column_config.NumberColumn(format="%.4f") for column in table.columns[1:]}
    st.dataframe(table, hide_index=True, width="stretch", height=min(420, 38 + 35 * len(view.tokens)),
                 column_config=numbers)


def gamma_beta(view: TokenNorm) -> None:
    """The learned γ (and β) of the chosen norm, feature by feature."""
    title = t("layer_norm.token.gamma_title" if view.beta is None else "layer_norm.token.gamma_beta_title")
    plot(gamma_beta_figure(view.gamma, view.beta, names=(t("layer_norm.token.gamma"), t("layer_norm.token.beta")),
                           title=title, x_title=t("layer_norm.feature")), key="layer_norm.gamma_beta")


def rms_beside(view: TokenNorm) -> None:
    """One token's vector normalised by LayerNorm and by RMSNorm, and the numbers each divides by."""
    st.subheader(t("layer_norm.rms.heading"), anchor="layer-norm-rms")
    st.markdown(t("layer_norm.rms.intro"))
    st.latex(RMS_NORM)
    tokens = view.tokens
    param = IntParam("layer_norm_tok", default=0, lo=0, hi=len(tokens) - 1)
    clamp_state("layer_norm.token", param.hi)
    position = st.select_slider(t("layer_norm.rms.token"), list(range(len(tokens))),
                                key=bind(param, key="layer_norm.token"),
                                format_func=lambda n: f"{n}: {display_token(tokens[n])}")
    both = computed(rms_vs_layer, view.inputs[position], view.eps)
    mean_col, std_col, rms_col = st.columns(3)
    mean_col.metric(t("layer_norm.rms.mean"), f"{both.mean:.3f}")
    std_col.metric(t("layer_norm.rms.std"), f"{both.std:.3f}")
    rms_col.metric(t("layer_norm.rms.rms"), f"{both.rms_value:.3f}")
    plot(rms_layer_figure(both.layer, both.rms, names=(t("layer_norm.rms.layer_name"), t("layer_norm.rms.rms_name")),
                          title=t("layer_norm.rms.figure_title", token=token_label(tokens[position])),
                          x_title=t("layer_norm.feature"), y_title=""), key="layer_norm.rms_chart")
    st.caption(t("layer_norm.rms.caption", shift=f"{both.mean / both.std:+.3f}" if both.std else "0",
                 ratio=f"{both.std / both.rms_value:.3f}" if both.rms_value else "1"))


@fragment
def norm_view(ckpt, source: str) -> None:
    """The norm picker and everything it drives: the token table, γ and β, RMSNorm beside LayerNorm.
    A fragment: picking another norm or token redraws only this."""
    site = site_picker(ckpt)
    view = computed(token_norm, source, site, model=ckpt)
    st.markdown(reads_sentence(view))
    if view.kind == "rms":
        st.info(t("layer_norm.token.rms_model"), icon=":material/info:")
    token_table(view)
    st.caption(t("layer_norm.token.table_caption_rms" if view.kind == "rms" else "layer_norm.token.table_caption",
                 eps=f"{view.eps:g}"))
    gamma_beta(view)
    st.caption(t("layer_norm.token.gamma_caption_rms" if view.beta is None else "layer_norm.token.gamma_caption"))
    csv_download("layer_norm.token.csv", view.csv, "layernorm_tokens.csv", key="layer_norm.token_csv")
    src_ids, tgt_ids = computed(sentence_pair_ids, source, model=ckpt)
    stack, layer, sublayer = parse_site(site)
    place = {"norm": trace_name(site)} if sublayer == FINAL else {"norm": trace_name(site), "stack": stack,
                                                                  "i": str(layer), "sub": sublayer}
    code_panel("layer_norm", ("layer_norm", "rms_norm", "sublayer"), ckpt=ckpt, source=tuple(src_ids),
               target=tuple(tgt_ids), where=place, paper_rows=("norm",))
    rms_beside(view)


# ------------------------------------------------------------------ LayerNorm vs BatchNorm


@fragment
def batch_view(ckpt, sentences: tuple[str, ...], index: int) -> None:
    """The pads switch and this sentence normalised both ways: the two heatmaps, how much each moves
    when the batch changes, and each feature's mean with and without the pads."""
    count_pads = st.toggle(t("layer_norm.batch.count_pads"), key=bind(COUNT_PADS, key="layer_norm.count_pads"),
                           help=t("layer_norm.batch.count_pads_help"))
    view = computed(batch_compare, sentences, index, count_pads, model=ckpt)
    labels = dict(x_title=t("layer_norm.feature"), y_title=t("layer_norm.batch.token"),
                  hover=t("layer_norm.batch.hover"))
    layer_col, batch_col = st.columns(2)
    plot(normalised_heatmap(view.layer_norm, view.tokens, title=t("layer_norm.batch.layer_title"), **labels),
         where=layer_col, key="layer_norm.batch_layer")
    plot(normalised_heatmap(view.batch_norm, view.tokens, title=t("layer_norm.batch.batch_title"), **labels),
         where=batch_col, key="layer_norm.batch_batch")
    layer_col.metric(t("layer_norm.batch.layer_shift"), f"{view.layer_shift:.3f}")
    batch_col.metric(t("layer_norm.batch.batch_shift"), f"{view.batch_shift:.3f}")
    st.caption(t("layer_norm.batch.shift_caption"))
    if len(sentences) == 1:
        st.info(t("layer_norm.batch.one_sentence"), icon=":material/info:")
    plot(feature_means_figure(view.feature_mean_all, view.feature_mean_real,
                              names=(t("layer_norm.batch.mean_all"), t("layer_norm.batch.mean_real")),
                              title=t("layer_norm.batch.means_title"), x_title=t("layer_norm.feature"), y_title=""),
         key="layer_norm.batch_means")
    st.caption(t("layer_norm.batch.means_caption", pads=view.pads, positions=view.positions,
                 share=f"{view.pads / view.positions:.0%}"))
    csv_download("layer_norm.batch.csv",
                 lambda: matrix_csv(view.batch_norm, view.tokens), "batchnorm_sentence.csv", key="layer_norm.batch_csv")


# ------------------------------------------------------------------ post-norm vs pre-norm


def wirings(ckpt) -> None:
    """The two wirings of one sublayer connection side by side, each with its formula."""
    for column, placement in zip(st.columns(2), PLACEMENTS):
        labels = {name: t(f"layer_norm.placement.{name}") for name in ("x", "sublayer", "norm", "final")}
        labels["title"] = t(f"layer_norm.placement.title_{placement}")
        labels["out"] = t(f"layer_norm.placement.out_{placement}")
        with column:
            plot(wiring_figure(placement, labels), key=f"layer_norm.wiring_{placement}")
            st.latex(WIRINGS[placement])
    if ckpt is not None:
        config = ckpt.model.config
        st.markdown(t("layer_norm.placement.model_pre" if config.norm_first else "layer_norm.placement.model_post",
                      kind=t(f"layer_norm.placement.kind_{config.norm_kind}")))


def one_plus_table(term: OnePlus) -> None:
    """The connection's gradient, with the skip and without, one row per quantity; 4 significant digits
    (scientific where small: without the skip some are ~1e-9). A static table: its cells wrap on a phone."""
    table = term.table().map(lambda v: "—" if np.isnan(v) else f"{v:.4g}")
    table.columns = [t(f"layer_norm.grad.one_plus_col_{wiring}") for wiring in table.columns]
    table.index = [t(f"layer_norm.grad.one_plus_row_{row}") for row in ONE_PLUS_ROWS]
    table.index.name = t("layer_norm.grad.one_plus_col_quantity")
    st.table(table)


def one_plus(seed: int) -> None:
    """The "1 +" of one sublayer connection (``?layer_norm_skip_at=``), post-norm with and without the skip."""
    st.markdown(t("layer_norm.grad.one_plus_intro"))
    st.latex(ONE_PLUS)
    st.markdown(t("layer_norm.grad.one_plus_without"))
    st.latex(WITHOUT_SKIP)
    site = st.selectbox(t("layer_norm.grad.one_plus_site"), SKIP_SITES, key=bind(SKIP_AT, key="layer_norm.skip_at"),
                        format_func=lambda s: site_label(s, N_LAYERS), help=t("layer_norm.grad.one_plus_site_help"))
    stack, layer, sub = parse_site(site)
    term = computed(one_plus_term, seed, (stack, layer, sub), N_LAYERS)
    one_plus_table(term)
    st.caption(t("layer_norm.grad.one_plus_caption", with_skip=f"{term.gain('post'):.4g}",
                 without=f"{term.gain(NO_RESIDUAL):.4g}"))
    if not term.resolved(NO_RESIDUAL):
        st.info(t("layer_norm.grad.one_plus_noise"), icon=":material/info:")


@fragment
def gradients() -> None:
    """The seed picker, the gradient norm of every layer at initialisation for the three wirings on a log axis,
    and the "1 +" of one connection."""
    seed = st.segmented_control(t("layer_norm.grad.seed"), SEEDS, key=bind(SEED, key="layer_norm.seed"),
                                required=True, help=t("layer_norm.grad.seed_help"))
    result = computed(init_gradient_norms, seed, N_LAYERS)
    ticks = [t(f"layer_norm.grad.tick_{stack}", n=layer + 1) for stack, layer in zip(result.stacks, result.layers)]
    names = {w: t(f"layer_norm.grad.name_{w}") for w in GRADIENT_WIRINGS}
    plot(gradient_figure(result.norms, ticks, names=names, title=t("layer_norm.grad.title", layers=N_LAYERS),
                         x_title=t("layer_norm.grad.x"), y_title="", split=N_LAYERS, floor=result.floor(),
                         floor_label=t("layer_norm.grad.floor")),
         key="layer_norm.grad_chart")
    columns = st.columns(3)
    for column, placement in zip(columns, PLACEMENTS):
        decoder = result.decoder(placement)
        column.metric(t(f"layer_norm.grad.growth_{placement}"), f"{growth(decoder):.2f}×",
                      help=t("layer_norm.grad.growth_help"))
        column.caption(t("layer_norm.grad.spread", spread=f"{spread(decoder):.2f}"))
    lost = result.below_floor(NO_RESIDUAL)
    columns[2].metric(t("layer_norm.grad.lost_no_residual"), f"{int(lost.sum())} / {len(lost)}",
                      help=t("layer_norm.grad.lost_help"))
    st.caption(t("layer_norm.grad.caption", task=TASK, batch=BATCH_SIZE, layers=N_LAYERS))
    st.caption(t("layer_norm.grad.floor_caption", floor=f"{result.floor():.1e}"))
    st.markdown(t("layer_norm.grad.no_residual_reading"))
    csv_download("layer_norm.grad.csv", lambda: gradient_csv(result), "gradient_norms_at_init.csv",
                 key="layer_norm.grad_csv")
    one_plus(seed)


# ------------------------------------------------------------------ the page

FORMULAS = (LAYER_NORM, STATS)

SECTIONS = ("token", "rms", "batch", "placement", "grad")  # in page order; the first three need a model and a sentence

with page("layer_norm", formulas=FORMULAS, try_this="top") as ckpt:
    jump = st.empty()  # the section links, once it is known which sections the page draws
    prepared = batch_input(ckpt, "layer_norm")
    sentences = tuple(prepared.sentences)
    drawn = SECTIONS if ckpt is not None and sentences else SECTIONS[3:]
    with jump.container():
        section_links([(f"layer-norm-{s}", t(f"layer_norm.{s}.heading")) for s in drawn])
    if sentences:
        index = sentence_picker(t("tokens.sentence.pick"), sentences, t("tokens.sentence.option", n="{n}",
                                                                        text="{text}"),
                                "layer_norm")
        st.subheader(t("layer_norm.token.heading"), anchor="layer-norm-token")
        st.markdown(t("layer_norm.token.intro"))
        if ckpt is None:
            st.info(t("layer_norm.no_model"), icon=":material/info:")
        else:
            norm_view(ckpt, sentences[index])
            st.subheader(t("layer_norm.batch.heading"), anchor="layer-norm-batch")
            st.markdown(t("layer_norm.batch.intro"))
            st.latex(BATCH_NORM)
            batch_view(ckpt, sentences, index)

    st.subheader(t("layer_norm.placement.heading"), anchor="layer-norm-placement")
    st.markdown(t("layer_norm.placement.intro"))
    wirings(ckpt)
    st.subheader(t("layer_norm.grad.heading"), anchor="layer-norm-grad")
    st.markdown(t("layer_norm.grad.intro"))
    st.markdown(t("layer_norm.grad.no_residual"))
    st.latex(NO_RESIDUAL_WIRING)
    gradients()
    st.markdown(t("layer_norm.grad.training"))
    link(stop("training"), t("layer_norm.grad.training_link"), icon=":material/model_training:")
    exercise_panel("layer_norm", use_mine=UseMine.sentence(ckpt, sentences[index]) if ckpt is not None and sentences
                   else None)

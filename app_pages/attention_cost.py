"""The cost of attention: the paper's complexity table, the cost measured live on this server for the
chosen model's size (time and attention memory against sequence length, explicit vs fused), and latent
attention (k latents read the tokens, the tokens read the latents): its maps on a sentence beside the
model's own, and its O(n·k) cost measured beside O(n²)."""
import pandas as pd
import streamlit as st

from explain import latent
from explain.cost import (COMPLEXITY, LENGTHS, MAX_LENGTH, PATHS, TOTAL_BUDGET_S, CostMeasurement, cached_cost,
                          is_measuring, measure_once)
from figures.cost import cost_figure, latent_maps_figure
from ui.cache import computed
from ui.code_panel import code_panel
from ui.i18n import t
from ui.models import selected_model
from ui.nav import link
from ui.page_errors import fragment
from ui.scaffold import PLOT_CONFIG, page
from ui.tour import stop
from ui.url_state import BoolParam, IntParam, bind, clamp_state
from ui.viewport import is_narrow
from ui.widgets import csv_download, plot, sentence_input

LOG_AXES = BoolParam("attention_cost_log", True)
LATENTS = IntParam("attention_cost_latents", latent.LATENTS_DEFAULT, lo=latent.LATENTS_MIN, hi=latent.LATENTS_MAX)
LATENT_HEAD_KEY = "attention_cost.latent_head"
LATENT_STEPS = (r"R = \operatorname{softmax}\!\Big(\tfrac{Q_{L}K^{\top}}{\sqrt{d_k}}\Big)_{k\times n}",
                r"W = \operatorname{softmax}\!\Big(\tfrac{Q\,(RK)^{\top}}{\sqrt{d_k}}\Big)_{n\times k}",
                r"\text{out} = W\,(R\,V) = \underbrace{(W R)}_{n\times n,\ \operatorname{rank}\le k}\, V")
LONG_N = 1024  # the formula's numbers are also given at this length


# ------------------------------------------------------------------ the table


def complexity_table() -> None:
    """Seed 004's table: operations per layer, sequential operations, maximum path length, with what each means."""
    st.subheader(t("attention_cost.table.heading"))
    header = [t(f"attention_cost.table.col_{name}") for name in ("layer", "complexity", "sequential", "path")]
    rows = [[t(f"attention_cost.table.row_{kind}"), ops, seq, path] for kind, ops, seq, path in COMPLEXITY]
    st.table(pd.DataFrame(rows, columns=header).set_index(header[0]))
    st.caption(t("attention_cost.table.symbols"))
    st.markdown("\n".join(f"- {t(f'attention_cost.table.meaning_{name}')}" for name in ("complexity", "sequential",
                                                                                        "path", "restricted")))
    link(stop("masks"), t("attention_cost.table.restricted_link"), icon=":material/grid_on:")
    st.latex(r"\underbrace{Q}_{n\times d}\,\underbrace{K^{\top}}_{d\times n} = \underbrace{S}_{n\times n}"
             r"\;\Rightarrow\; n^2 \cdot d")
    st.latex(r"\underbrace{A}_{n\times n}\,\underbrace{V}_{n\times d} \;\Rightarrow\; n^2 \cdot d")
    st.markdown(t("attention_cost.table.why"))


# ------------------------------------------------------------------ measured here


def sizes_line(ckpt) -> str:
    cfg = ckpt.model.config
    return t("attention_cost.measure.sizes", d_model=cfg.d_model, heads=cfg.n_heads, layers=cfg.n_layers, d_ff=cfg.d_ff,
             device=str(ckpt.model.device))


def run_measurement(ckpt) -> CostMeasurement:
    """Measure now with a progress bar; behind other visitors' measurements, wait in line and see the place.
    (The wait checks in every quarter second, so a click elsewhere or a closed tab leaves the line.)"""
    cfg, device = ckpt.model.config, str(ckpt.model.device)
    line = st.empty()
    if is_measuring():
        line.info(t("attention_cost.measure.busy"), icon=":material/hourglass_top:")
    bar = st.progress(0.0, text=t("attention_cost.measure.starting"))

    def waiting(ahead: int) -> None:
        line.info(t("attention_cost.measure.queued", ahead=ahead), icon=":material/hourglass_top:")

    def progress(fraction: float, length: int) -> None:
        line.empty()  # its turn came: no more waiting
        bar.progress(min(1.0, fraction), text=t("attention_cost.measure.progress", n=length))

    result = measure_once(cfg, device, on_progress=progress, on_wait=waiting)
    line.empty()
    bar.empty()
    return result


def measured(ckpt) -> None:
    """The model's sizes, the button, and the cached result of this size and device, if any."""
    st.subheader(t("attention_cost.measure.heading"))
    st.markdown(t("attention_cost.measure.intro", lo=min(LENGTHS), hi=MAX_LENGTH))
    st.markdown(sizes_line(ckpt))
    device = str(ckpt.model.device)
    st.caption(t("attention_cost.measure.gpu" if device.startswith("cuda") else "attention_cost.measure.no_gpu"))
    result = cached_cost(ckpt.model.config, device)
    if result is None:
        if not st.button(t("attention_cost.measure.button"), type="primary", icon=":material/speed:",
                         key="attention_cost.measure"):
            st.caption(t("attention_cost.measure.not_yet", budget=TOTAL_BUDGET_S))
            return
        result = run_measurement(ckpt)
    else:
        st.caption(t("attention_cost.measure.kept"))
    show_result(result)


@fragment
def show_result(result: CostMeasurement) -> None:
    """The two curves with their fitted slopes, the axes switch, the notes and the CSV. A fragment: the
    switch redraws only this."""
    log_axes = st.toggle(t("attention_cost.result.log"), key=bind(LOG_AXES, key="attention_cost.log"),
                         help=t("attention_cost.result.log_help"))
    slopes = {path: result.slope(path) for path in PATHS}
    columns = st.columns(len(PATHS))
    for column, path in zip(columns, PATHS):
        slope = slopes[path]
        column.metric(t(f"attention_cost.result.slope_{path}"), "–" if slope is None else f"{slope:.2f}",
                      help=t("attention_cost.result.slope_help"))
    names = {path: t(f"attention_cost.result.name_{path}") + ("" if slopes[path] is None else
                                                    t("attention_cost.result.name_slope", slope=f"{slopes[path]:.2f}"))
             for path in PATHS}
    series = {path: (*result.series(path, "seconds"), result.series(path, "memory_bytes")[1]) for path in PATHS}
    fig = cost_figure(series, names, log_axes=log_axes,
                      titles=(t("attention_cost.result.time_title"),
                              t(f"attention_cost.result.memory_title_{result.memory}")),
                      x_title=t("attention_cost.result.x_title"), time_title=t("attention_cost.result.seconds"),
                      memory_title=t("attention_cost.result.mib"), guide_name=t("attention_cost.result.guide"),
                      time_hover=t("attention_cost.result.time_hover"),
                      memory_hover=t("attention_cost.result.memory_hover"))
    plot(fig, key="attention_cost.chart", config=PLOT_CONFIG)
    st.caption(t(f"attention_cost.result.memory_note_{result.memory}"))
    if result.stopped != "done":
        st.caption(t(f"attention_cost.result.stopped_{result.stopped}", n=max(result.lengths)))
    st.caption(t("attention_cost.result.reading"))
    csv_download("attention_cost.result.export", result.csv, "attention_cost.csv", "attention_cost.export")


# ------------------------------------------------------------------ latent attention


@fragment
def latent_section(ckpt) -> None:
    """k latents read the sentence, the sentence reads the latents: the two maps, their product beside the
    head's real map, the cost formula, the measurement against full attention, and what DeepSeek's MLA is
    instead. A fragment: the sentence, k and the head redraw only this."""
    st.subheader(t("attention_cost.latent.heading"), anchor="latent")
    st.markdown(t("attention_cost.latent.intro"))
    for latex in LATENT_STEPS:  # one line each: a phone's width holds one
        st.latex(latex)
    sentence = sentence_input(ckpt, "attention_cost")
    if sentence is None:
        return
    cfg = ckpt.model.config
    left, right = st.columns([3, 2])
    k = left.slider(t("attention_cost.latent.k_label"), LATENTS.lo, LATENTS.hi,
                    key=bind(LATENTS, key="attention_cost.latents"), help=t("attention_cost.latent.k_help"))
    clamp_state(LATENT_HEAD_KEY, cfg.n_heads)
    head = right.segmented_control(t("attention_cost.latent.head_label", layers=cfg.n_layers),
                                   list(range(1, cfg.n_heads + 1)), required=True,
                                   key=bind(IntParam("attention_cost_latent_head", 1, lo=1, hi=cfg.n_heads),
                                            key=LATENT_HEAD_KEY))
    maps = computed(latent.latent_maps, sentence, k, 1, head, model=ckpt)
    n = len(maps.tokens)
    st.markdown(t("attention_cost.latent.init"))
    if maps.latents < k:
        st.info(t("attention_cost.latent.fewer", k=k, n=n), icon=":material/info:")
    latent_maps_view(maps)
    latent_formula(n, maps.latents, k, cfg.d_model)
    latent_measured(ckpt, k)
    st.markdown(t("attention_cost.latent.mla"))


def latent_maps_view(maps: latent.LatentMaps) -> None:
    """The rank and the distance to the real map as numbers, the four maps, how to read them and their CSV."""
    first, second, third = st.columns(3)
    first.metric(t("attention_cost.latent.latents_metric"), maps.latents)
    second.metric(t("attention_cost.latent.rank_metric"), maps.rank, help=t("attention_cost.latent.rank_help"))
    third.metric(t("attention_cost.latent.distance_metric"), f"{maps.distance:.2f}",
                 help=t("attention_cost.latent.distance_help"))
    tokens, k = list(maps.tokens), maps.latents
    titles = [t(f"attention_cost.latent.title_{name}", k=k, n=len(tokens), head=maps.head)
              for name in ("read", "write", "implied", "full")]
    plot(latent_maps_figure(maps.read, maps.write, maps.implied, maps.full, tokens, maps.latent_labels(),
                            titles=titles, hover=t("attention_cost.latent.hover"), narrow=is_narrow()),
         key="attention_cost.latent_maps", config=PLOT_CONFIG)
    st.caption(t("attention_cost.latent.reading"))
    csv_download("attention_cost.latent.export", maps.csv, "latent_attention.csv", "attention_cost.latent_export")


def latent_formula(n: int, k_here: int, k: int, d: int) -> None:
    """Multiply-adds of full and latent attention over all heads: for this sentence (``k_here`` latents, at most
    one per token) and at :data:`LONG_N` tokens with ``k``."""
    st.markdown(t("attention_cost.latent.cost_heading"))
    st.latex(r"\underbrace{k n d}_{Q_L K^{\top}} + \underbrace{2 k n d}_{R K,\ R V}"
             r" + \underbrace{n k d}_{Q (RK)^{\top}} + \underbrace{n k d}_{W (RV)} = 5\,n k d")
    st.latex(r"O(n\cdot k\cdot d)\quad\text{vs}\quad 2\,n^2 d = O(n^2\cdot d)")
    st.markdown(t("attention_cost.latent.cost_numbers", n=n, k_here=k_here, k=k, d=d,
                  full=f"{latent.full_multiply_adds(n, d):,}", lat=f"{latent.latent_multiply_adds(n, k_here, d):,}",
                  long=LONG_N, long_full=f"{latent.full_multiply_adds(LONG_N, d):,}",
                  long_lat=f"{latent.latent_multiply_adds(LONG_N, k, d):,}", even=f"{2.5 * k:g}"))


def latent_measured(ckpt, k: int) -> None:
    """The button, then one latent attention timed against one full attention (kept per size, k and device)."""
    cfg, device = ckpt.model.config, str(ckpt.model.device)
    st.markdown(t("attention_cost.latent.measure_intro", k=k, heads=cfg.n_heads, d_k=cfg.d_k,
                  lo=min(LENGTHS), hi=MAX_LENGTH))
    result = latent.cached_latent_cost(cfg, k, device)
    if result is None:
        if not st.button(t("attention_cost.latent.measure_button", k=k), icon=":material/speed:",
                         key="attention_cost.latent_measure"):
            return
        line = st.empty()
        bar = st.progress(0.0, text=t("attention_cost.measure.starting"))

        def waiting(ahead: int) -> None:
            line.info(t("attention_cost.measure.queued", ahead=ahead), icon=":material/hourglass_top:")

        def progress(fraction: float, length: int) -> None:
            line.empty()
            bar.progress(min(1.0, fraction), text=t("attention_cost.measure.progress", n=length))

        result = latent.measure_latent_once(cfg, k, device, on_progress=progress, on_wait=waiting)
        line.empty()
        bar.empty()
    slopes = {path: result.slope(path) for path in latent.PATHS}
    columns = st.columns(len(latent.PATHS))
    for column, path in zip(columns, latent.PATHS):
        shown = "–" if slopes[path] is None else f"{slopes[path]:.2f}"
        column.metric(t(f"attention_cost.latent.slope_{path}"), shown, help=t("attention_cost.result.slope_help"))
    names = {path: t(f"attention_cost.latent.name_{path}", k=k) + ("" if slopes[path] is None else
                                                    t("attention_cost.result.name_slope", slope=f"{slopes[path]:.2f}"))
             for path in latent.PATHS}
    series = {path: (*result.series(path, "seconds"), result.series(path, "memory_bytes")[1]) for path in latent.PATHS}
    fig = cost_figure(series, names, log_axes=True,
                      titles=(t("attention_cost.latent.time_title"), t("attention_cost.latent.memory_title")),
                      x_title=t("attention_cost.result.x_title"), time_title=t("attention_cost.result.seconds"),
                      memory_title=t("attention_cost.result.mib"), guide_name=t("attention_cost.result.guide"),
                      time_hover=t("attention_cost.result.time_hover"),
                      memory_hover=t("attention_cost.result.memory_hover"), guide_path="full",
                      linear_guide=("latent", t("attention_cost.latent.linear_guide")))
    plot(fig, key="attention_cost.latent_chart", config=PLOT_CONFIG)
    if result.stopped != "done":
        st.caption(t(f"attention_cost.result.stopped_{result.stopped}", n=max(result.lengths)))
    st.caption(t("attention_cost.latent.measure_reading"))
    csv_download("attention_cost.result.export", result.csv, "latent_attention_cost.csv",
                 "attention_cost.latent_cost_export")


# ------------------------------------------------------------------ the page


with page("attention_cost", try_this="bottom", model=False):
    complexity_table()
    code_panel("attention_cost", ("scaled_dot_product_attention", "fast_attention"))
    checkpoint = selected_model()
    if checkpoint is not None:
        measured(checkpoint)
        latent_section(checkpoint)

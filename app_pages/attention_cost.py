"""The cost of attention: the paper's complexity table, and the cost measured live on this server
for the chosen model's size (time and attention memory against sequence length, explicit vs fused)."""
import pandas as pd
import streamlit as st

from explain.cost import (COMPLEXITY, LENGTHS, MAX_LENGTH, PATHS, TOTAL_BUDGET_S, CostMeasurement, cached_cost,
                          is_measuring, measure_once)
from figures.cost import cost_figure
from ui.code_panel import code_panel
from ui.i18n import t
from ui.models import selected_model
from ui.page_errors import fragment
from ui.scaffold import PLOT_CONFIG, page
from ui.url_state import BoolParam, bind
from ui.widgets import csv_download, plot

LOG_AXES = BoolParam("attention_cost_log", True)


# ------------------------------------------------------------------ the table


def complexity_table() -> None:
    """Seed 004's table: operations per layer, sequential operations, maximum path length, with what each means."""
    st.subheader(t("attention_cost.table.heading"))
    header = [t(f"attention_cost.table.col_{name}") for name in ("layer", "complexity", "sequential", "path")]
    rows = [[t(f"attention_cost.table.row_{kind}"), ops, seq, path] for kind, ops, seq, path in COMPLEXITY]
    st.table(pd.DataFrame(rows, columns=header).set_index(header[0]))
    st.caption(t("attention_cost.table.symbols"))
    st.markdown("\n".join(f"- {t(f'attention_cost.table.meaning_{name}')}" for name in ("complexity", "sequential",
                                                                                        "path")))
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


# ------------------------------------------------------------------ the page


with page("attention_cost", try_this="bottom", model=False):
    complexity_table()
    code_panel("attention_cost", ("scaled_dot_product_attention", "fast_attention"))
    checkpoint = selected_model()
    if checkpoint is not None:
        measured(checkpoint)

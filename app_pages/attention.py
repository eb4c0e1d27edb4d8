"""Attention explorer: every head of the sidebar's model on one sentence, from the overview down
to the numbers inside one head, with statistics and switching heads off."""
import streamlit as st

from ui import attention_view as av
from ui.figure_cache import cached_figure
from ui.frozen_figure import FrozenFigure
from ui.head_view import build_head_view_figure
from ui.i18n import t
from ui.models import selected_model
from ui.nav import tour_links
from ui.url_state import BoolParam, ChoiceParam, IntParam, bind, markdown_literal

SECTIONS = ("overview", "heads", "inside", "stats", "ablation")
SECTION = ChoiceParam("att_view", "overview", choices=SECTIONS)
KIND = ChoiceParam("att_kind", "encoder", choices=av.KINDS)
SCALE = BoolParam("att_scale", True)
ALL_HEADS = BoolParam("att_all", True)
PLOT_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"scale": 2}}


def csv_button(label_key: str, make_csv, file_name: str, key: str) -> None:
    st.download_button(t(label_key), data=make_csv, file_name=file_name, mime="text/csv", key=key,
                       on_click="ignore", icon=":material/download:")


def pick_from_grid() -> None:
    """A click on a small map of the overview selects its layer and head."""
    event = st.session_state.get("attention.grid")
    points = event.selection.points if event else []
    if points:
        custom = points[0].get("customdata") or []
        if len(custom) >= 5:
            st.session_state["attention.layer"] = int(custom[3])
            st.session_state["attention.head"] = int(custom[4])


def weight_hover() -> str:
    return f"{t('attention.query')} %{{y}} → {t('attention.key')} %{{x}}: %{{z:.3f}}"


def overview_grid(view, kind: str) -> None:
    """Every head as a small map (outside the head fragment: picking a head does not re-send it)."""
    maps = av.attention_maps(view, kind)
    queries, keys = av.query_key_tokens(view, kind)
    L, H = maps.shape[:2]
    titles = tuple(t("attention.grid.subplot", layer=l, head=h) for l in range(1, L + 1) for h in range(1, H + 1))
    hover = (f"{t('attention.grid.subplot', layer='{layer}', head='{head}')}<br>{t('attention.query')} "
             f"%{{customdata[0]}} → {t('attention.key')} %{{customdata[1]}}: %{{customdata[2]:.3f}}")
    st.caption(t("attention.grid.caption") + " " + t(f"attention.zoom.reading_{kind}"))
    grid = cached_figure(av.build_grid_figure, maps, queries, keys, titles=titles, hover=hover)
    st.plotly_chart(grid, key="attention.grid", on_select=pick_from_grid, selection_mode="points",
                    config=PLOT_CONFIG)
    csv_button("attention.export_all", lambda: av.every_head_csv(maps, queries, keys),
               f"attention_{kind}_every_head.csv", "attention.export_grid")


def overview(view, kind: str, layer: int, head: int, drawn: dict[tuple[int, int], FrozenFigure]) -> None:
    """The chosen head, large (its numbers are in the grid's CSV, above). ``drawn`` keeps each head's
    figure for the fragment's own reruns (a new dict on every full run: the view, kind and language
    hold until then), so going back and forth between heads costs no translating or figure lookup."""
    if (layer, head) not in drawn:
        maps = av.attention_maps(view, kind)
        queries, keys = av.query_key_tokens(view, kind)
        title = t("attention.zoom.title", kind=t(f"attention.kind.{kind}"), layer=layer, head=head)
        drawn[layer, head] = cached_figure(
            av.build_zoom_figure, maps[layer - 1, head - 1], queries, keys,
            blocked=av.blocked_cells(kind, len(queries), len(keys)), title=title,
            x_title=t("attention.key_axis"), y_title=t("attention.query_axis"), hover=weight_hover())
    st.plotly_chart(drawn[layer, head], key="attention.zoom", config=PLOT_CONFIG)


def head_view(view, kind: str, layer: int, head: int) -> None:
    maps = av.attention_maps(view, kind)
    queries, keys = av.query_key_tokens(view, kind)
    H = maps.shape[1]
    every = st.toggle(t("attention.heads.all"), key=bind(ALL_HEADS, key="attention.all_heads"),
                      help=t("attention.heads.all_help"))
    heads = tuple(range(1, H + 1)) if every else (head,)
    st.caption(t("attention.heads.caption", layer=layer))
    fig = cached_figure(build_head_view_figure, maps[layer - 1], queries, keys, heads=heads,
                        head_label=t("attention.head"), column_titles=(t("attention.queries"), t("attention.keys")),
                        query_hover="%{customdata}")
    st.plotly_chart(fig, key="attention.head_view", config=PLOT_CONFIG)
    csv_button("attention.export", lambda: av.long_attention_csv(maps[layer - 1], queries, keys, heads, layer),
               f"attention_{kind}_L{layer}_heads.csv", "attention.export_heads")


def inside(ckpt, key, source: str, answer: str, kind: str, layer: int, head: int) -> None:
    scale = st.toggle(t("attention.inside.scale"), key=bind(SCALE, key="attention.scale"),
                      help=t("attention.inside.scale_help"))
    view = av.cached_view(ckpt, key, source, answer, scale_scores=scale, need_details=True)
    other = av.cached_view(ckpt, key, source, answer, scale_scores=not scale)
    details = view.details[kind]
    queries, keys = av.query_key_tokens(view, kind)
    q, k, v = (details[name][layer - 1, head - 1] for name in ("q", "k", "v"))
    scores = details["scores"][layer - 1, head - 1]
    weights = av.attention_maps(view, kind)[layer - 1, head - 1]
    other_weights = av.attention_maps(other, kind)[layer - 1, head - 1]
    d_k = q.shape[-1]

    st.markdown(t("attention.inside.shapes", tq=len(queries), tk=len(keys), d_k=d_k, sqrt=f"{d_k ** 0.5:.2f}"))
    vec_hover = f"%{{customdata}} · {t('attention.inside.dimension')} %{{x}}: %{{z:.3f}}"
    vectors = cached_figure(av.build_vectors_figure, q, k, v, queries, keys,
                            titles=(t("attention.inside.q"), t("attention.inside.k"), t("attention.inside.v")),
                            x_title=t("attention.inside.dimension"), hover=vec_hover)
    st.plotly_chart(vectors, key="attention.vectors", config=PLOT_CONFIG)
    blocked = av.blocked_cells(kind, len(queries), len(keys))
    scores_title = t("attention.inside.scores_scaled" if scale else "attention.inside.scores_raw")
    score_fig = cached_figure(av.build_scores_figure, scores, queries, keys, blocked=blocked, title=scores_title,
                              x_title=t("attention.key_axis"), y_title=t("attention.query_axis"),
                              hover=f"{t('attention.query')} %{{y}} → {t('attention.key')} %{{x}}: %{{z:.2f}}")
    st.plotly_chart(score_fig, key="attention.scores", config=PLOT_CONFIG)
    if blocked is not None:
        st.caption(t("attention.inside.masked_note"))
    entropy_now = float(av.row_entropy(weights).mean())
    entropy_other = float(av.row_entropy(other_weights).mean())
    col1, col2 = st.columns(2)
    col1.metric(t("attention.inside.entropy_metric"), f"{entropy_now:.2f}",
                delta=f"{entropy_now - entropy_other:+.2f}", delta_color="off",
                help=t("attention.inside.entropy_help"))
    col2.metric(t("attention.inside.peak_metric"), f"{float(weights.max(axis=-1).mean()):.2f}",
                delta=f"{float(weights.max(axis=-1).mean() - other_weights.max(axis=-1).mean()):+.2f}",
                delta_color="off", help=t("attention.inside.peak_help"))
    st.caption(t("attention.inside.compare_scaled" if scale else "attention.inside.compare_raw"))
    weights_fig = cached_figure(
        av.build_weights_entropy_figure, weights, queries, keys, blocked=blocked,
        titles=(t("attention.inside.weights"), t("attention.inside.entropy")), x_title=t("attention.key_axis"),
        y_title=t("attention.query_axis"), entropy_title=t("attention.inside.bits"), hover=weight_hover(),
        entropy_hover=f"%{{customdata}}: %{{x:.2f}} {t('attention.inside.bits')}")
    st.plotly_chart(weights_fig, key="attention.weights", config=PLOT_CONFIG)
    if not scale:
        st.info(t("attention.inside.raw_answer", answer=markdown_literal(view.answer, limit=60)),
                icon=":material/science:")
    csv_button("attention.export", lambda: av.attention_csv(weights, queries, keys),
               f"attention_{kind}_L{layer}_H{head}_{'scaled' if scale else 'unscaled'}.csv",
               "attention.export_inside")


def statistics(view, kind: str) -> None:
    stats = av.head_statistics(av.attention_maps(view, kind))
    st.caption(t("attention.stats.caption"))
    columns = {name: t(f"attention.stats.col_{name}") for name in stats.columns}
    st.dataframe(stats.rename(columns=columns), hide_index=True, width="stretch")
    hover = (f"{t('attention.layer')} %{{customdata[0]}} · {t('attention.head')} %{{customdata[1]}}<br>"
             f"{t('attention.stats.col_distance')}: %{{x:.2f}}<br>{t('attention.stats.col_entropy')}: %{{y:.2f}}<br>"
             f"{t('attention.stats.col_diagonal')}: %{{customdata[2]:.2f}}")
    chart = cached_figure(av.build_stats_figure, stats, x_title=t("attention.stats.col_distance"),
                          y_title=t("attention.stats.col_entropy"), layer_label=t("attention.layer"), hover=hover)
    st.plotly_chart(chart, key="attention.stats_chart", config=PLOT_CONFIG)
    st.caption(t("attention.stats.legend"))


def ablation(ckpt, key, source: str, base) -> None:
    cfg = ckpt.model.config
    codes = av.all_heads(cfg.n_layers, cfg.n_heads)
    param = av.HeadSetParam("att_off", default=[], choices=tuple(codes))

    def label(code: str) -> str:
        head = av.HeadId.parse(code)
        return t("attention.ablation.option", kind=t(f"attention.kind.{head.kind}"), layer=head.layer, head=head.head)

    off = st.multiselect(t("attention.ablation.label"), codes, format_func=label,
                         key=bind(param, key="attention.ablate"), placeholder=t("attention.ablation.placeholder"),
                         help=t("attention.ablation.help"))
    ids = av.answer_ids(ckpt.tokenizer, base.answer)
    p_base, per_base = av.sequence_probability(base, ids)
    left, right = st.columns(2)
    with left, st.container(border=True):
        st.markdown(f"**{t('attention.ablation.all_on')}**")
        st.code(base.answer or " ", language=None)
        st.metric(t("attention.ablation.probability"), av.format_probability(p_base))
    if not off:
        right.info(t("attention.ablation.none"), icon=":material/touch_app:")
        return
    triples = av.ablation_triples(off)
    same = av.cached_view(ckpt, key, source, base.answer, ablate=triples)
    own = av.cached_view(ckpt, key, source, None, ablate=triples)
    p_same, per_same = av.sequence_probability(same, ids)
    p_own, _ = av.sequence_probability(own, av.answer_ids(ckpt.tokenizer, own.answer))
    with right, st.container(border=True):
        st.markdown(f"**{t('attention.ablation.some_off', count=len(off))}**")
        st.code(own.answer or " ", language=None)
        st.metric(t("attention.ablation.probability_same"), av.format_probability(p_same),
                  delta=av.format_probability(p_same - p_base, sign=True))
        st.caption(t("attention.ablation.own", p=av.format_probability(p_own)))
    if own.answer == base.answer:
        st.success(t("attention.ablation.same_answer"), icon=":material/check_circle:")
    else:
        st.warning(t("attention.ablation.changed_answer"), icon=":material/swap_horiz:")
    names = (t("attention.ablation.all_on"), t("attention.ablation.some_off", count=len(off)))
    chart = cached_figure(av.build_ablation_figure, ckpt.tokenizer.token_strings(ids), per_base, per_same,
                          names=names, x_title=t("attention.ablation.x_title"), y_title=t("attention.ablation.y_title"),
                          hover="%{x}: %{y:.3f}")
    st.plotly_chart(chart, key="attention.ablation_chart", config=PLOT_CONFIG)


def explorer(ckpt) -> None:
    key = av.model_key(ckpt)
    source = av.sentence_input(ckpt, "attention.text", "att_text")
    if source is None:
        return
    base = av.cached_view(ckpt, key, source)
    expected = av.task_target(ckpt, source)
    answer_col, check_col = st.columns([3, 2])
    with answer_col:
        st.markdown(t("attention.answer_label"))
        st.code(base.answer or " ", language=None)
    with check_col:
        if expected is None:
            st.caption(t("attention.no_expected"))
        elif expected == base.answer:
            st.success(t("attention.correct"), icon=":material/check:")
        else:
            st.warning(t("attention.expected", expected=markdown_literal(expected, limit=60)),
                       icon=":material/close:")

    section = st.segmented_control(t("attention.section_label"), SECTIONS, required=True,
                                   format_func=lambda s: t(f"attention.section.{s}"),
                                   key=bind(SECTION, key="attention.section"))
    if section == "ablation":
        ablation(ckpt, key, source, base)
        return
    kind = st.segmented_control(t("attention.kind_label"), av.KINDS, required=True,
                                format_func=lambda k: t(f"attention.kind.{k}"), key=bind(KIND, key="attention.kind"),
                                help=t("attention.kind_help"))
    st.caption(t(f"attention.kind_about.{kind}"))
    if section == "stats":
        statistics(base, kind)
        return
    if section == "overview":
        overview_grid(base, kind)
    one_head(ckpt, key, source, base, section, kind, {})


@st.fragment
def one_head(ckpt, key, source: str, base, section: str, kind: str, drawn: dict) -> None:
    """The layer, then the head and the section that shows them. A fragment: picking another layer
    reruns only this, and it draws as few elements as it can (each costs the server a message)."""
    cfg = ckpt.model.config
    layer = st.segmented_control(t("attention.layer"), list(range(1, cfg.n_layers + 1)), required=True,
                                 key=bind(IntParam("att_layer", 1, lo=1, hi=cfg.n_layers), key="attention.layer"))
    head_section(ckpt, key, source, base, section, kind, layer, drawn)


@st.fragment
def head_section(ckpt, key, source: str, base, section: str, kind: str, layer: int, drawn: dict) -> None:
    """The head and the section that shows it: a fragment inside the layer's, so picking another head
    (what a class does most) reruns only the head's control and its pictures."""
    cfg = ckpt.model.config
    head = st.segmented_control(t("attention.head"), list(range(1, cfg.n_heads + 1)), required=True,
                                key=bind(IntParam("att_head", 1, lo=1, hi=cfg.n_heads), key="attention.head"))
    if section == "overview":
        overview(base, kind, layer, head, drawn)
    elif section == "heads":
        head_view(base, kind, layer, head)
    else:
        inside(ckpt, key, source, base.answer, kind, layer, head)


st.title(t("attention.title"))
st.markdown(t("attention.intro"))
st.latex(r"\mathrm{Attention}(Q,K,V)=\mathrm{softmax}\!\left(\frac{QK^{\top}}{\sqrt{d_k}}\right)V"
         r"\qquad \mathrm{head}_i=\mathrm{Attention}(XW_i^{Q},\,XW_i^{K},\,XW_i^{V})")
st.caption(t("attention.formula_note"))
checkpoint = selected_model()
if checkpoint is not None:
    explorer(checkpoint)
with st.container(border=True):
    st.markdown(f"**{t('attention.try.heading')}**")
    st.markdown(t("attention.try.body"))

tour_links("attention")

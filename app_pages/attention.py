"""Attention explorer: every head of the sidebar's model on one sentence, from the overview down
to the numbers inside one head, with statistics and switching heads off."""
import functools

import streamlit as st

from explain.alignment import ALIGNED_TASKS, HeadAlignment, head_alignment, score_frame
from explain.attention import (KINDS, AttentionView, HeadId, ablation_triples, all_heads, answer_ids, attention_csv,
                               attention_maps, attention_name, attention_view, blocked_cells, every_head_csv, format_probability,
                               greedy_answer, head_statistics, long_attention_csv, mean_peak, most_focused_head,
                               query_key_tokens, row_entropy, sequence_probability, why_scale)
from explain.compatibility import COMPATIBILITIES, AdditiveView, CompatibilityCost, additive_view
from explain.examples import REORDER, TRANSLATIONS
from explain.head_output import head_outputs, head_outputs_csv
from explain.pronoun import SENTENCES, PronounHeads, pronoun_frame, pronoun_heads, pronoun_missing
from explain.tasks import expected_output, task_of
from explain.text import unit_of
from explain.tokens import target_tokenizer
from figures import attention as charts
from figures.head_output import head_output_figure
from figures.head_view import head_view_figure
from figures.style import outline
from ui.cache import computed
from ui.code_panel import chosen, code_panel
from ui.head_set import HeadSetParam
from ui.i18n import t
from ui.models import MODEL_STATE_KEY, available_models
from ui.nav import scroll_if_asked, scroll_later, smoothing_note
from ui.page_css import formula_row, hide_cell_text_below
from ui.page_errors import fragment
from ui.scaffold import PLOT_CONFIG, page
from ui.url_state import BoolParam, ChoiceParam, IntParam, bind, markdown_literal, pick
from ui.viewport import NARROW_KEY, guessed_narrow, is_narrow
from ui.widgets import answer_box, csv_download, plot, sentence_input, unit_names, unknown_source_note
from ui.exercise_panel import UseMine, exercise_panel

SECTIONS = ("overview", "heads", "inside", "stats", "ablation")
SECTION = ChoiceParam("attention_view", "overview", choices=SECTIONS)
KIND = ChoiceParam("attention_kind", "encoder", choices=KINDS)
SCALE = BoolParam("attention_scale", True)
COMPAT = ChoiceParam("attention_compat", "dot", choices=COMPATIBILITIES)
ALL_HEADS = BoolParam("attention_all", True)
SHOW_ALIGNMENT = BoolParam("attention_alignment", True)
LAYER_KEY, HEAD_KEY = "attention.layer", "attention.head"
FOCUS = "attention.focus"  # the layer and head choice: the sharpest head until the visitor picks one


def view_of(ckpt, source: str, target: str | None = None, *, scale_scores: bool = True,
            ablate_heads: tuple[tuple[str, int, int], ...] = (), need_details: bool = False) -> AttentionView:
    """The forward pass of ``source`` (and ``target``; default: the model's answer), cached."""
    return computed(attention_view, source, target, model=ckpt, scale_scores=scale_scores,
                    ablate_heads=ablate_heads, need_details=need_details)


def weight_hover() -> str:
    return f"{t('attention.query')} %{{y}} → {t('attention.key')} %{{x}}: %{{z:.3f}}"


def answer_and_check(ckpt, source: str, answer: str) -> None:
    """The model's answer, and whether the task says it is right."""
    expected = expected_output(ckpt, source)
    answer_col, check_col = st.columns([3, 2])
    with answer_col:
        st.markdown(t("attention.answer_label"))
        answer_box(answer)
    with check_col:
        unknown_source_note(ckpt, source)
        if expected is None:
            st.caption(t("attention.no_expected"))
        elif expected == answer:
            st.success(t("attention.correct"), icon=":material/check:")
        else:
            st.warning(t("attention.expected", expected=markdown_literal(expected, limit=60)),
                       icon=":material/close:")


# ------------------------------------------------------------------ every head at once


PHONE_MAPS_PER_ROW = 2  # on a phone, the overview's maps two a row: four would be strips of 5-px cells


def pick_from_grid(key: str = "attention.grid") -> None:
    """A click on a small map of the overview (the chart ``key``) selects its layer and head."""
    event = st.session_state.get(key)
    points = event.selection.points if event else []
    picked = charts.picked_head(points[0]) if points else None
    if picked is not None:
        st.session_state[LAYER_KEY], st.session_state[HEAD_KEY] = picked
        pick(FOCUS)


def overview_grid(view: AttentionView, kind: str, units: dict[str, str]) -> None:
    """Every head as a small map; a click on one picks it for the zoom below."""
    maps = attention_maps(view, kind)
    queries, keys = query_key_tokens(view, kind)
    L, H = maps.shape[:2]
    titles = [t("attention.grid.subplot", layer=layer, head=head) for layer in range(1, L + 1)
              for head in range(1, H + 1)]
    st.caption(t("attention.grid.caption") + " " + t(f"attention.zoom.reading_{kind}", **units))
    with st.container(key="attention.grid_view"):
        # one layout sent: the phone's two maps a row, or every head of a layer in a row
        key, per_row = ("attention.phone_grid", PHONE_MAPS_PER_ROW) if is_narrow() else ("attention.grid", None)
        grid = charts.grid_figure(maps, queries, keys, titles=titles, hover=weight_hover(), per_row=per_row)
        plot(grid, key=key, on_select=functools.partial(pick_from_grid, key), selection_mode="points",
             config=PLOT_CONFIG)
    csv_download("attention.export_all", lambda: every_head_csv(maps, queries, keys),
                 f"attention_{kind}_every_head.csv", "attention.export_grid")


# ------------------------------------------------------------------ one layer, one head


@fragment
def one_head(ckpt, source: str, base: AttentionView, section: str, kind: str) -> None:
    """The layer and head controls and the section that shows that head. A fragment: picking
    another layer or head redraws only this, not the overview grid above it."""
    cfg = ckpt.model.config
    focused = most_focused_head(attention_maps(base, kind))  # shown until a layer or head is picked (or linked)
    layer_param = IntParam("attention_layer", focused[0], lo=1, hi=cfg.n_layers)
    head_param = IntParam("attention_head", focused[1], lo=1, hi=cfg.n_heads)
    layer = st.segmented_control(t("attention.layer"), list(range(1, cfg.n_layers + 1)), required=True,
                                 key=bind(layer_param, key=LAYER_KEY, follows=FOCUS), on_change=pick, args=(FOCUS,))
    head = st.segmented_control(t("attention.head"), list(range(1, cfg.n_heads + 1)), required=True,
                                key=bind(head_param, key=HEAD_KEY, follows=FOCUS), on_change=pick, args=(FOCUS,))
    if section == "overview":
        zoom(ckpt, source, base, kind, layer, head)
    elif section == "heads":
        head_view(base, kind, layer, head)
    else:
        inside(ckpt, source, base.answer, kind, layer, head)


def zoom(ckpt, source: str, view: AttentionView, kind: str, layer: int, head: int) -> None:
    """The chosen head, large (its numbers are in the grid's CSV, above); for cross-attention, the gold
    alignment outlined over it and every head's alignment score below."""
    weights = attention_maps(view, kind)[layer - 1, head - 1]
    queries, keys = query_key_tokens(view, kind)
    alignment = computed(head_alignment, source, model=ckpt) if kind == "cross" else None
    outline = "off"  # or "drawn", or "other_answer": the rows are the model's own answer, not the gold target
    if alignment is not None and st.toggle(t("attention.alignment.toggle"), help=t("attention.alignment.toggle_help"),
                                           key=bind(SHOW_ALIGNMENT, key="attention.alignment")):
        outline = "drawn" if view.answer == alignment.gold.target_text else "other_answer"
    title = t("attention.zoom.title", kind=t(f"attention.kind.{kind}"), layer=layer, head=head)
    fig = charts.zoom_figure(weights, queries, keys, blocked=blocked_cells(kind, len(queries), len(keys)),
                             title=title, x_title=t("attention.key_axis"), y_title=t("attention.query_axis"),
                             hover=weight_hover(), aligned=alignment.cells if outline == "drawn" else None)
    hide_cell_text_below("attention.zoom", columns=len(keys))  # a phone's cells are too small for them
    plot(fig, key="attention.zoom", config=PLOT_CONFIG)
    if kind == "cross":
        alignment_view(ckpt, alignment, layer, head, outline)


def show_head(layer: int, head: int) -> None:
    """A click on "show the best-aligned head": that layer and head in the views above."""
    st.session_state[LAYER_KEY], st.session_state[HEAD_KEY] = layer, head
    pick(FOCUS)


def narrow_known() -> bool:
    """Whether the window is a phone's, as the overview grid above already asked (:func:`ui.viewport.is_narrow`
    mounts its reporting script once a run; a second mount would be a duplicate), else by the User-Agent."""
    return bool(st.session_state.get(NARROW_KEY, guessed_narrow(st.context.headers)))


def alignment_view(ckpt, alignment: HeadAlignment | None, layer: int, head: int, outline: str) -> None:
    """What the outline shows (``outline``: "drawn", "other_answer" or "off"), and how well every
    cross-attention head follows the gold alignment."""
    task = getattr(task_of(ckpt), "name", None)
    if alignment is None:
        st.caption(t("attention.alignment.no_sentence" if task in ALIGNED_TASKS else "attention.alignment.no_task"))
        return
    units = unit_names(ckpt)
    if outline == "drawn":
        st.caption(t(f"attention.alignment.outline_{'grammar' if task in TRANSLATIONS else task}", **units))
    elif outline == "other_answer":
        st.caption(t("attention.alignment.other_answer",
                     expected=markdown_literal(alignment.gold.target_text, limit=80)))
    st.markdown(f"**{t('attention.alignment.heading')}**")
    st.markdown(t("attention.alignment.intro", chance=f"{alignment.chance:.2f}", **units))
    best_layer, best_head, best_score = alignment.best[0]
    lines = [t("attention.alignment.best", layer=best_layer, head=best_head, score=f"{best_score:.2f}")]
    if alignment.best[1:]:
        lines.append(t("attention.alignment.next", heads=t("attention.alignment.separator").join(
            t("attention.alignment.head_score", layer=lay, head=hd, score=f"{sc:.2f}")
            for lay, hd, sc in alignment.best[1:])))
    lines.append(t("attention.alignment.this", layer=layer, head=head,
                   score=f"{alignment.scores[layer - 1, head - 1]:.2f}"))
    st.markdown(" ".join(lines))
    if (best_layer, best_head) != (layer, head):
        st.button(t("attention.alignment.show_best", layer=best_layer, head=best_head),
                  icon=":material/center_focus_strong:",
                  key="attention.alignment_best", on_click=show_head, args=(best_layer, best_head))
    hover = (f"{t('attention.layer')} %{{customdata[0]}} · {t('attention.head')} %{{customdata[1]}}: "
             f"%{{y:.3f}}")
    chart = charts.alignment_figure(alignment.scores, alignment.chance, y_title=t("attention.alignment.axis"),
                                    layer_label=t("attention.layer"), head_label=t("attention.head"),
                                    chance_label=t("attention.alignment.chance", chance=f"{alignment.chance:.2f}"),
                                    hover=hover, narrow=narrow_known())
    plot(chart, key="attention.alignment_chart", config=PLOT_CONFIG)
    csv_download("attention.alignment.export", lambda: score_frame(alignment.scores).to_csv(index=False),
                 "attention_alignment_scores.csv", "attention.export_alignment")


def head_view(view: AttentionView, kind: str, layer: int, head: int) -> None:
    """Lines from queries to keys for every head of the layer (or only the chosen one)."""
    maps = attention_maps(view, kind)[layer - 1]
    queries, keys = query_key_tokens(view, kind)
    every = st.toggle(t("attention.heads.all"), key=bind(ALL_HEADS, key="attention.all_heads"),
                      help=t("attention.heads.all_help"))
    heads = tuple(range(1, maps.shape[0] + 1)) if every else (head,)
    st.caption(t("attention.heads.caption", layer=layer))
    fig = head_view_figure(maps, queries, keys, heads=heads, head_label=t("attention.head"), chosen=head,
                           column_titles=(t("attention.queries"), t("attention.keys")), query_hover="%{customdata}")
    plot(fig, key="attention.head_view", config=PLOT_CONFIG)
    csv_download("attention.export", lambda: long_attention_csv(maps, queries, keys, heads, layer),
                 f"attention_{kind}_L{layer}_heads.csv", "attention.export_heads")


def inside(ckpt, source: str, answer: str, kind: str, layer: int, head: int) -> None:
    """Q, K, V, the scores and the weights of one head, with or without the √d_k scaling; the scores by the
    model's dot product or, on the same Q and K, by the additive compatibility function (what each costs)."""
    scale = st.toggle(t("attention.inside.scale"), key=bind(SCALE, key="attention.scale"),
                      help=t("attention.inside.scale_help"))
    view = view_of(ckpt, source, answer, scale_scores=scale, need_details=True)
    other = view_of(ckpt, source, answer, scale_scores=not scale)
    details = view.details[kind]
    queries, keys = query_key_tokens(view, kind)
    q, k, v, scores = (details[name][layer - 1, head - 1] for name in ("q", "k", "v", "scores"))
    weights = attention_maps(view, kind)[layer - 1, head - 1]
    other_weights = attention_maps(other, kind)[layer - 1, head - 1]
    blocked = blocked_cells(kind, len(queries), len(keys))
    d_k = q.shape[-1]
    marked = chosen("attention")  # the intermediate the code panel below has selected, framed where drawn

    st.markdown(t("attention.inside.shapes", tq=len(queries), tk=len(keys), d_k=d_k, sqrt=f"{d_k ** 0.5:.2f}"))
    vectors = charts.vectors_figure(
        q, k, v, queries, keys, titles=(t("attention.inside.q"), t("attention.inside.k"), t("attention.inside.v")),
        x_title=t("attention.inside.dimension"),
        hover=f"%{{y}} · {t('attention.inside.dimension')} %{{x}}: %{{z:.3f}}")
    plot(outline(vectors) if marked in ("q", "k", "v") else vectors, key="attention.vectors", config=PLOT_CONFIG)
    compat = st.segmented_control(t("attention.compat.label"), COMPATIBILITIES, required=True,
                                  format_func=lambda c: t(f"attention.compat.option.{c}"),
                                  key=bind(COMPAT, key="attention.compat"), help=t("attention.compat.help"))
    if compat == "additive":
        additive = additive_section(q, k, scores, weights, queries, keys, blocked)
        raw_answer_note(ckpt, source, scale)
        csv_download("attention.compat.export", lambda: attention_csv(additive.weights, queries, keys),
                     f"attention_{kind}_L{layer}_H{head}_additive.csv", "attention.export_additive")
        cost_section(len(queries), len(keys), d_k)
    else:
        score_fig = charts.scores_figure(
            scores, queries, keys, blocked=blocked,
            title=t("attention.inside.scores_scaled" if scale else "attention.inside.scores_raw"),
            x_title=t("attention.key_axis"), y_title=t("attention.query_axis"), hover=score_hover())
        plot(outline(score_fig) if marked == "scores" else score_fig, key="attention.scores", config=PLOT_CONFIG)
        if blocked is not None:
            st.caption(t("attention.inside.masked_note"))
        cost = CompatibilityCost(len(queries), len(keys), d_k, d_k)
        st.caption(t("attention.compat.dot_cost", tq=len(queries), tk=len(keys), d_k=d_k, mults=f"{cost.dot_mults:,}"))
        sharpness(weights, other_weights)
        st.caption(t("attention.inside.compare_scaled" if scale else "attention.inside.compare_raw"))
    why_scale_view(d_k)
    if compat == "dot":
        weights_fig = charts.weights_entropy_figure(
            weights, queries, keys, row_entropy(weights), blocked=blocked,
            titles=(t("attention.inside.weights"), t("attention.inside.entropy")), x_title=t("attention.key_axis"),
            y_title=t("attention.query_axis"), entropy_title=t("attention.inside.bits"), hover=weight_hover(),
            entropy_hover=f"%{{y}}: %{{x:.2f}} {t('attention.inside.bits')}")
        plot(outline(weights_fig) if marked == "weights" else weights_fig, key="attention.weights",
             config=PLOT_CONFIG)
        raw_answer_note(ckpt, source, scale)
        csv_download("attention.export", lambda: attention_csv(weights, queries, keys),
                     f"attention_{kind}_L{layer}_H{head}_{'scaled' if scale else 'unscaled'}.csv",
                     "attention.export_inside")
    code_panel("attention", ("multi_head", "split_heads", "scaled_dot_product_attention", "masked_softmax"),
               ckpt=ckpt, source=source, target=answer, scale_scores=scale, paper_rows=("w_o", "mask_polarity"),
               where={"att": attention_name(kind, layer - 1), "stack": "decoder" if kind == "decoder" else "encoder"})
    what_attention_produces(ckpt, view, kind, layer, head)


def score_hover() -> str:
    return f"{t('attention.query')} %{{y}} → {t('attention.key')} %{{x}}: %{{z:.2f}}"


def raw_answer_note(ckpt, source: str, scale: bool) -> None:
    """Without the √d_k division, the answer the whole model then gives."""
    if not scale:
        raw_answer = computed(greedy_answer, source, model=ckpt, scale_scores=False)  # the views above decode nothing
        st.info(t("attention.inside.raw_answer", answer=markdown_literal(raw_answer, limit=60)),
                icon=":material/science:")


def additive_section(q, k, dot_scores, dot_weights, queries: list[str], keys: list[str], blocked) -> AdditiveView:
    """The same Q and K scored by vᵀ tanh(W_q q + W_k k) with untrained, seeded weights, and its softmax
    weights against the model's own dot-product ones."""
    d_k = q.shape[-1]
    shown = computed(additive_view, q, k, blocked)
    st.info(t("attention.compat.honest", d_a=d_k), icon=":material/casino:")
    st.latex(r"\mathrm{score}(q_i, k_j) = v^{\top}\tanh(W_q\,q_i + W_k\,k_j)")
    st.markdown(t("attention.compat.shapes", d_a=d_k, d_k=d_k))
    fig = charts.scores_figure(shown.scores, queries, keys, blocked=blocked, title=t("attention.compat.scores_title"),
                               x_title=t("attention.key_axis"), y_title=t("attention.query_axis"), hover=score_hover())
    plot(fig, key="attention.additive_scores", config=PLOT_CONFIG)
    if blocked is not None:
        st.caption(t("attention.inside.masked_note"))
    visible = dot_scores if blocked is None else dot_scores[~blocked]
    st.caption(t("attention.compat.bound", d_a=d_k, bound=f"{shown.params.bound:.2f}",
                 dot_max=f"{float(abs(visible).max()):.2f}"))
    sharpness(shown.weights, dot_weights)
    st.caption(t("attention.compat.compare"))
    weights_fig = charts.weights_entropy_figure(
        shown.weights, queries, keys, row_entropy(shown.weights), blocked=blocked,
        titles=(t("attention.compat.weights_title"), t("attention.inside.entropy")), x_title=t("attention.key_axis"),
        y_title=t("attention.query_axis"), entropy_title=t("attention.inside.bits"), hover=weight_hover(),
        entropy_hover=f"%{{y}}: %{{x:.2f}} {t('attention.inside.bits')}")
    plot(weights_fig, key="attention.additive_weights", config=PLOT_CONFIG)
    return shown


def cost_section(n_q: int, n_k: int, d_k: int) -> None:
    """What scoring this head's queries and keys costs each way (d_a = d_k), and the paper's verdict."""
    cost = CompatibilityCost(n_q, n_k, d_k, d_k)
    st.markdown(f"**{t('attention.compat.cost.heading')}**")
    st.markdown(t("attention.compat.cost.intro", tq=n_q, tk=n_k, d_k=d_k, d_a=d_k))
    table = cost.table()
    table["quantity"] = [t(f"attention.compat.cost.row_{name}") for name in table["quantity"]]
    # a static table: its long formulas wrap on a phone, where a data grid would cut them off
    st.table(table.rename(columns={c: t(f"attention.compat.cost.col_{c}") for c in table.columns})
             .set_index(t("attention.compat.cost.col_quantity")))
    st.caption(t("attention.compat.cost.paper"))


def why_scale_view(d_k: int) -> None:
    """Why the paper divides by √d_k: at initialisation q·k has variance d_k (random unit-variance vectors)."""
    box = st.expander(t("attention.why_scale.heading"), icon=":material/functions:", key="attention.why_scale_open",
                      on_change="rerun")  # drawn only while open: a closed one costs the view's clicks nothing
    if not box.open:
        return
    with box:
        st.markdown(t("attention.why_scale.intro", d_k=d_k))
        table = computed(why_scale, tuple(sorted({4, 16, 64, 256, d_k})))
        shown = table.rename(columns={c: t(f"attention.why_scale.col_{c}") for c in table.columns})
        st.dataframe(shown, hide_index=True, width="stretch",
                     column_config={name: st.column_config.NumberColumn(format="%.2f")
                                    for name in shown.columns[1:]})
        st.caption(t("attention.why_scale.caption"))


def what_attention_produces(ckpt, view: AttentionView, kind: str, layer: int, head: int) -> None:
    """After the weights: each head's weights · V, every head side by side, and W^O mixing them into
    the sublayer's output, with the shape of every step."""
    cfg = ckpt.model.config
    result = head_outputs(view, kind, layer)
    queries, keys = query_key_tokens(view, kind)
    sizes = dict(tq=len(queries), tk=len(keys), d_k=result.d_k, h=result.n_heads, hd=result.concat.shape[1],
                 d_model=result.output.shape[1], head=head)
    st.markdown(f"**{t('attention.head_output.heading')}**")
    st.markdown(t("attention.head_output.intro"))
    for line in (r"\mathrm{head}_i = A_i V_i", r"H = \mathrm{Concat}(\mathrm{head}_1,\dots,\mathrm{head}_h)",
                 r"\mathrm{MultiHead} = H\,W^{O} + b"):  # three short lines: one long one runs off a phone
        st.latex(line)
    st.markdown(t("attention.head_output.shapes", **sizes))
    titles = [t(f"attention.head_output.{name}", **sizes) for name in ("title_head", "title_concat", "title_output")]
    fig = head_output_figure(result.heads[head - 1], result.concat, result.output, queries, chosen=head,
                             titles=titles, x_title=t("attention.head_output.column"),
                             hover=f"%{{y}} · {t('attention.head_output.column')} %{{x}}: %{{z:.3f}}")
    plot(fig, key="attention.head_output", config=PLOT_CONFIG)
    residual = "residual_pre" if cfg.norm_first else "residual_post"
    st.caption(t("attention.head_output.outline", **sizes) + " " + t(f"attention.head_output.{residual}"))
    csv_download("attention.head_output.export", lambda: head_outputs_csv(result, queries, head),
                 f"attention_{kind}_L{layer}_output.csv", "attention.export_head_output")


def sharpness(weights, other_weights) -> None:
    """Mean row entropy and mean largest weight of the head, against the other scaling's."""
    entropy_now, entropy_other = float(row_entropy(weights).mean()), float(row_entropy(other_weights).mean())
    peak_now, peak_other = mean_peak(weights), mean_peak(other_weights)
    col1, col2 = st.columns(2)
    col1.metric(t("attention.inside.entropy_metric"), f"{entropy_now:.2f}", delta=f"{entropy_now - entropy_other:+.2f}",
                delta_color="off", help=t("attention.inside.entropy_help"))
    col2.metric(t("attention.inside.peak_metric"), f"{peak_now:.2f}", delta=f"{peak_now - peak_other:+.2f}",
                delta_color="off", help=t("attention.inside.peak_help"))


# ------------------------------------------------------------------ statistics, switching heads off


def statistics(view: AttentionView, kind: str) -> None:
    stats = head_statistics(attention_maps(view, kind))
    st.caption(t("attention.stats.caption"))
    # Cross-attention's queries (the answer) and keys (the source) are two sentences: a distance between their
    # positions, or a diagonal, means nothing there.
    positional = kind != "cross"
    shown = stats if positional else stats.drop(columns=["distance", "diagonal"])
    columns = {name: t(f"attention.stats.col_{name}") for name in shown.columns}
    st.dataframe(shown.rename(columns=columns), hide_index=True, width="stretch")
    if not positional:
        st.caption(t("attention.stats.cross_note"))
    hover = (f"{t('attention.layer')} %{{customdata[0]}} · {t('attention.head')} %{{customdata[1]}}<br>"
             f"{t('attention.stats.col_focus')}: %{{y:.2f}}<br>{t('attention.stats.col_entropy')}: %{{customdata[2]:.2f}}")
    if positional:
        hover += (f"<br>{t('attention.stats.col_distance')}: %{{customdata[3]:.2f}}<br>"
                  f"{t('attention.stats.col_diagonal')}: %{{customdata[4]:.2f}}")
    chart = charts.stats_figure(stats, x_title=t("attention.head"), y_title=t("attention.stats.col_focus"),
                                layer_label=t("attention.layer"), head_label=t("attention.head"), hover=hover)
    plot(chart, key="attention.stats_chart", config=PLOT_CONFIG)
    st.caption(t("attention.stats.legend"))


def heads_to_switch_off(ckpt) -> list[str]:
    """The multiselect of heads (``?attention_off=``): their codes, e.g. ``["enc-1-2"]``."""
    cfg = ckpt.model.config
    codes = all_heads(cfg.n_layers, cfg.n_heads)

    def label(code: str) -> str:
        head = HeadId.parse(code)
        return t("attention.ablation.option", kind=t(f"attention.kind.{head.kind}"), layer=head.layer, head=head.head)

    param = HeadSetParam("attention_off", default=[], choices=tuple(codes))
    return st.multiselect(t("attention.ablation.label"), codes, format_func=label,
                          key=bind(param, key="attention.ablate"), placeholder=t("attention.ablation.placeholder"),
                          help=t("attention.ablation.help"))


def ablation(ckpt, source: str, base: AttentionView) -> None:
    """The answer with every head on, next to the answer with the chosen heads off."""
    off = heads_to_switch_off(ckpt)
    ids = answer_ids(target_tokenizer(ckpt), base.answer)
    p_base, per_base = sequence_probability(base, ids)
    left, right = st.columns(2)
    with left, st.container(border=True):
        st.markdown(f"**{t('attention.ablation.all_on')}**")
        answer_box(base.answer)
        st.metric(t("attention.ablation.probability"), format_probability(p_base))
        smoothing_note(ckpt, "attention.ablation.smoothing_note")
    if not off:
        right.info(t("attention.ablation.none"), icon=":material/touch_app:")
        return
    triples = ablation_triples(off)
    same = view_of(ckpt, source, base.answer, ablate_heads=triples)
    own = view_of(ckpt, source, ablate_heads=triples)
    p_same, per_same = sequence_probability(same, ids)
    p_own, _ = sequence_probability(own, answer_ids(target_tokenizer(ckpt), own.answer))
    with right, st.container(border=True):
        st.markdown(f"**{t('attention.ablation.some_off', count=len(off))}**")
        answer_box(own.answer)
        st.metric(t("attention.ablation.probability_same"), format_probability(p_same),
                  delta=format_probability(p_same - p_base, sign=True))
        st.caption(t("attention.ablation.own", p=format_probability(p_own)))
    if own.answer == base.answer:
        st.success(t("attention.ablation.same_answer"), icon=":material/check_circle:")
    else:
        st.warning(t("attention.ablation.changed_answer"), icon=":material/swap_horiz:")
    names = (t("attention.ablation.all_on"), t("attention.ablation.some_off", count=len(off)))
    chart = charts.ablation_figure(target_tokenizer(ckpt).token_strings(ids), per_base, per_same, names=names,
                                   x_title=t("attention.ablation.x_title"), y_title=t("attention.ablation.y_title"),
                                   hover="%{x}: %{y:.3f}")
    plot(chart, key="attention.ablation_chart", config=PLOT_CONFIG)


# ------------------------------------------------------------------ try this: the translation models



def open_example(model: str, sentence: str, kind: str, head: tuple[int, int] | None = None) -> None:
    """A "try this" button's click: ``sentence`` on ``model`` in the overview of ``kind``, on ``head`` if given."""
    state = st.session_state
    if state.get(MODEL_STATE_KEY) != model:
        state[MODEL_STATE_KEY] = model
        pick(MODEL_STATE_KEY)
    state["attention.text"] = sentence  # not the model's example: a text of the visitor's, kept
    state["attention.section"], state["attention.kind"] = "overview", kind
    if head is not None:
        state[LAYER_KEY], state[HEAD_KEY] = head
        pick(FOCUS)
    scroll_later("attention.section")  # the view it opened is far above the button


def reorder_try(task: str) -> None:
    """Where the words of 在花园里 go: the cross-attention of the reordering sentence of ``task``."""
    source, target = REORDER[task]
    st.markdown(t(f"attention.translation.reorder_{task.replace('-', '_')}", source=source, target=target))
    st.button(t("attention.translation.reorder_button"), icon=":material/swap_horiz:", key="attention.try_reorder",
              on_click=open_example, args=(task, source, "cross"))


def pronoun_try(ckpt) -> None:
    """The pronoun pair on an en-zh model, with the heads that tell what "it" is (computed, see explain.pronoun)."""
    if missing := pronoun_missing(ckpt):  # an uploaded en-zh model with other words than the grammar's
        words = markdown_literal(", ".join(missing[:8]), limit=200)  # whole words, never cut
        st.caption(t("attention.translation.pronoun_unknown_words", words=words))
        return
    result: PronounHeads = computed(pronoun_heads, model=ckpt)
    tired, wide = result.cases
    st.markdown(t("attention.translation.pronoun", tired=tired.sentence, wide=wide.sentence,
                  tired_zh=tired.referent_zh, wide_zh=wide.referent_zh))
    st.markdown(t("attention.translation.pronoun_answers", tired_answer=tired.answer, wide_answer=wide.answer))
    for kind in ("encoder", "cross"):
        best = result.best[kind]
        verdict = "resolves" if best.resolves else "does_not"
        st.markdown(t(f"attention.translation.{kind}_{verdict}", layer=best.layer, head=best.head,
                      tired_ref=tired.referent, wide_ref=wide.referent,
                      tired_w=f"{best.right[0]:.2f}", wide_w=f"{best.right[1]:.2f}"))
    shown = result.best["encoder"] if result.resolved_by("encoder") else result.best["cross"]
    with st.container(horizontal=True):
        for case, label in ((tired, "tired_button"), (wide, "wide_button")):
            st.button(t(f"attention.translation.{label}"), key=f"attention.try_{label}", on_click=open_example,
                      args=("en-zh", case.sentence, shown.kind, (shown.layer, shown.head)))
    csv_download("attention.translation.pronoun_export", lambda: pronoun_frame(result).to_csv(index=False),
                 "attention_pronoun_heads.csv", "attention.export_pronoun")


def translation_try(ckpt) -> None:
    """The reordering and pronoun examples: on a translation model, its own; on another, buttons that switch to en-zh."""
    task = getattr(task_of(ckpt), "name", None) if ckpt is not None else None
    if "en-zh" not in available_models() and task not in TRANSLATIONS:
        return
    st.markdown(f"**{t('attention.translation.heading')}**")
    if task not in TRANSLATIONS:
        st.caption(t("attention.translation.other_model"))
        reorder_try("en-zh")
        st.button(t("attention.translation.tired_button"), key="attention.try_pronoun_switch", on_click=open_example,
                  args=("en-zh", SENTENCES[0], "cross"))
        return
    reorder_try(task)
    if task == "en-zh" and unit_of(ckpt.tokenizer) != "word":  # a model trained on BPE pieces
        st.caption(t("attention.translation.pronoun_needs_words"))
    elif task == "en-zh":
        pronoun_try(ckpt)
    elif "en-zh" in available_models():
        st.caption(t("attention.translation.pronoun_needs_en_zh"))
        st.button(t("attention.translation.tired_button"), key="attention.try_pronoun_switch", on_click=open_example,
                  args=("en-zh", SENTENCES[0], "cross"))


# ------------------------------------------------------------------ the page


def explorer(ckpt) -> tuple[str, str] | None:
    """The page's sections; returns (sentence, answer) shown, for "use mine" (None without a sentence)."""
    source = sentence_input(ckpt, "attention")
    if source is None:
        return None
    base = view_of(ckpt, source)
    answer_and_check(ckpt, source, base.answer)
    sections(ckpt, source, base)
    return source, base.answer


def sections(ckpt, source: str, base: AttentionView) -> None:
    """The section picker and the section it names."""
    section = st.segmented_control(t("attention.section_label"), SECTIONS, required=True,
                                   format_func=lambda s: t(f"attention.section.{s}"),
                                   key=bind(SECTION, key="attention.section"))
    if section == "ablation":
        ablation(ckpt, source, base)
        return
    kind = st.segmented_control(t("attention.kind_label"), KINDS, required=True,
                                format_func=lambda k: t(f"attention.kind.{k}"), key=bind(KIND, key="attention.kind"),
                                help=t("attention.kind_help"))
    st.caption(t(f"attention.kind_about.{kind}", **unit_names(ckpt)))
    if section == "stats":
        statistics(base, kind)
        return
    if section == "overview":
        overview_grid(base, kind, unit_names(ckpt))
    one_head(ckpt, source, base, section, kind)


FORMULAS = (formula_row(r"\mathrm{Attention}(Q,K,V)=", r"\mathrm{softmax}\!\left(\frac{QK^{\top}}{\sqrt{d_k}}\right)V",
                        r"\mathrm{head}_i=\mathrm{Attention}(XW_i^{Q},\,XW_i^{K},\,XW_i^{V})", after="="),)

with page("attention", formulas=FORMULAS, formula_note=True, try_this="bottom",
          try_extra=translation_try) as checkpoint:
    shown = explorer(checkpoint) if checkpoint is not None else None
    exercise_panel("attention", use_mine=None if shown is None else UseMine.sentence(checkpoint, *shown))
scroll_if_asked()

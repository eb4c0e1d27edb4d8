"""Decoding: the autoregressive loop step by step, greedy / beam / sampling side by side, and
teacher forcing (training) against free running (inference)."""
import streamlit as st

from ui import attention_view as av
from ui import decoding_view as dv
from ui import tokens_view as tv
from ui.figure_cache import cached_figure
from ui.figure_grid import combine
from ui.frozen_figure import FrozenFigure
from ui.i18n import t
from ui.models import selected_model
from ui.nav import tour_links
from explain.text import MAX_CHARS, prepare_sentence
from ui.url_state import (ChoiceParam, FloatParam, IntParam, SliderIntParam, TextParam, bind, bound_widget,
                          markdown_literal, remember)

SECTIONS = ("steps", "compare", "forcing")
SECTION = ChoiceParam("dec_view", "steps", choices=SECTIONS)
STRATEGY = ChoiceParam("dec_strategy", "greedy", choices=dv.STRATEGIES)
BEAM = IntParam("dec_beam", 3, lo=1, hi=8)
TEMPERATURE = FloatParam("dec_temp", 1.0, lo=0.0, hi=2.0, step=0.1)
TOP_K = ChoiceParam("dec_topk", "all", choices=dv.TOP_K_CHOICES)
SEED = IntParam("dec_seed", 0, lo=0, hi=9999)
# The step slider's session key, and its name in the URL: Streamlit keeps it there itself
# (``bind="query-params"``), so a step costs no URL message of ours (ui.url_state.bound_widget).
STEP_KEY = "dec_step"
PLOT_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"scale": 2}}


def beam_slider() -> int:
    return st.slider(t("decoding.beam_size"), 1, 8, key=bind(BEAM, key="decoding.beam"),
                     help=t("decoding.beam_size_help"))


def sampling_controls() -> tuple[float, int | None, int]:
    temp_col, k_col, seed_col = st.columns(3)
    temperature = temp_col.slider(t("decoding.temperature"), 0.0, 2.0, step=0.1,
                                  key=bind(TEMPERATURE, key="decoding.temperature"),
                                  help=t("decoding.temperature_help"))
    top_k = k_col.select_slider(t("decoding.top_k"), dv.TOP_K_CHOICES, key=bind(TOP_K, key="decoding.top_k"),
                                format_func=lambda c: t("decoding.top_k_all") if c == "all" else c,
                                help=t("decoding.top_k_help"))
    seed = seed_col.number_input(t("decoding.seed"), min_value=0, max_value=9999, step=1,
                                 key=bind(SEED, key="decoding.seed"), help=t("decoding.seed_help"))
    return float(temperature), dv.parse_top_k(top_k), int(seed)


def run(ckpt, key, source: str, strategy: str, **params) -> "dv.DecodeTrace":
    return dv.decode(ckpt, key, source, strategy, **params)


def move_step(delta: int, n_steps: int) -> None:
    current = st.session_state.get(STEP_KEY, 1)
    st.session_state[STEP_KEY] = min(max(int(current) + delta, 1), n_steps)


def step_by_step(ckpt, key, source: str) -> None:
    strategy = st.segmented_control(t("decoding.strategy"), dv.STRATEGIES, required=True,
                                    format_func=lambda s: t(f"decoding.strategy_name.{s}"),
                                    key=bind(STRATEGY, key="decoding.strategy"))
    if strategy == "beam":
        trace = run(ckpt, key, source, "beam", beam_size=beam_slider())
        st.caption(t("decoding.steps.beam_note"))
    elif strategy == "sample":
        temperature, top_k, seed = sampling_controls()
        trace = run(ckpt, key, source, "sample", temperature=temperature, top_k=top_k, seed=seed)
    else:
        trace = run(ckpt, key, source, "greedy")
    cfg = ckpt.model.config
    with st.container(horizontal=True, gap="large"):
        layer = st.segmented_control(t("decoding.layer"), list(range(1, cfg.n_layers + 1)), required=True,
                                     key=bind(IntParam("dec_layer", 1, lo=1, hi=cfg.n_layers), key="decoding.layer"))
        head = st.segmented_control(t("decoding.head"), list(range(1, cfg.n_heads + 1)), required=True,
                                    key=bind(IntParam("dec_head", 1, lo=1, hi=cfg.n_heads), key="decoding.head"))
    n = len(trace.steps)
    step_param = SliderIntParam(STEP_KEY, 1, lo=1, hi=n)
    if n > 1:
        if st.session_state.get(STEP_KEY, 1) > n:
            # That step is not in this decoding: start it from the beginning. (The nearest step would
            # not reach the URL: the slider is a new widget for Streamlit once its range changes.)
            st.session_state[STEP_KEY] = 1
        bound_widget(step_param)
    step_view(cfg, trace, strategy, layer, head, step_param, {})
    st.caption(" ".join((t("decoding.steps.triangle_caption"),
                         t("decoding.steps.topk_caption", k=len(trace.steps[0].top_tokens)),
                         t("decoding.steps.cross_caption"))))


@st.fragment
def step_view(cfg, trace: "dv.DecodeTrace", strategy: str, layer: int, head: int, step_param: SliderIntParam,
              drawn: dict[int, tuple[str, FrozenFigure]]) -> None:
    """One step of ``trace``. A fragment: moving through the steps reruns only this part of the page,
    and it draws as few elements as it can (each costs the server a message): the step's three
    pictures are one figure, and the URL is Streamlit's to update (the full run decided the step).

    ``drawn`` is a new dict on every full run (the fragment keeps it through its own reruns, in
    which only the step changes): each step's status and figure, made the first time it is shown,
    so going back and forth costs no translating or figure lookup."""
    n = len(trace.steps)
    step = min(max(int(st.session_state.get(STEP_KEY, 1)), 1), n) if n > 1 else 1
    current = trace.steps[step - 1]
    if step not in drawn:
        drawn[step] = (step_status(trace, step),
                       cached_figure(step_figure, current, len(trace.steps[-1].prefix), trace.src_tokens,
                                     layer, head, cfg.n_heads, step_texts()))
    status, figure = drawn[step]
    if n > 1:
        # The step's status is the slider's label (a slider is known by its key and range, so a
        # new label keeps it): one element fewer to send on every step.
        # ``value`` is the default (what the URL leaves out), not the step: the step is in
        # session state. Given, it also spares Streamlit a copy of the whole session state.
        st.slider(status, 1, n, value=1, key=STEP_KEY, bind="query-params")
        remember(step_param, step)
        with st.container(horizontal=True):
            st.button(t("decoding.steps.previous"), icon=":material/chevron_left:", on_click=move_step, args=(-1, n),
                      key="decoding.prev", disabled=step <= 1)
            st.button(t("decoding.steps.next"), icon=":material/chevron_right:", icon_position="right",
                      on_click=move_step, args=(1, n), key="decoding.next", disabled=step >= n)
    else:
        st.markdown(status)
    if current.chosen == dv.EOS:
        st.success(t("decoding.steps.done", output=markdown_literal(trace.output, limit=80)),
                   icon=":material/flag:")
    elif step == n and not trace.finished:
        st.warning(t("decoding.steps.limit", limit=trace.max_len), icon=":material/block:")
    st.plotly_chart(figure, key="decoding.step_figure", config=PLOT_CONFIG)
    if strategy == "beam" and trace.beams and step <= len(trace.beams):
        st.dataframe(dv.beams_table(trace, beam_columns(), step), hide_index=True, width="stretch")


def step_status(trace: "dv.DecodeTrace", step: int) -> str:
    """Markdown: step ``step`` of ``n``, what the decoder reads and writes, and what it has written so far."""
    current = trace.steps[step - 1]
    prefix = " ".join(dv.visible(tok) for tok in current.prefix)
    written = "".join(tok for tok in dv.generated_tokens(trace, step) if tok != dv.EOS)
    return (t("decoding.steps.status", step=step, n=len(trace.steps), prefix=markdown_literal(prefix, limit=200),
              chosen=markdown_literal(dv.visible(current.chosen)), p=f"{current.chosen_prob:.3f}")
            + " " + t("decoding.steps.written", written=markdown_literal(written, limit=200) or "∅"))


def step_texts() -> dict[str, str]:
    """The step figure's words in this run's language (templates keep their {layer}/{head} fields)."""
    texts = {name: t(f"decoding.{name}") for name in ("query", "key", "key_axis", "query_axis", "probability",
                                                       "source_axis")}
    texts.update({name: t(f"decoding.steps.{name}", layer="{layer}", head="{head}")
                  for name in ("triangle", "cross", "model_probs", "sampled_probs", "topk")})
    texts["head_label"] = t("decoding.head_label", head="{head}")
    return texts


def step_figure(current: "dv.StepView", final_length: int, src_tokens, layer: int, head: int, n_heads: int,
                texts: dict) -> FrozenFigure:
    """The step's decoder self-attention triangle and next-token bars side by side, its cross-attention below."""
    hover = f"{texts['query']} %{{y}} → {texts['key']} %{{x}}: %{{z:.3f}}"
    triangle = dv.build_triangle_figure(current.decoder_attention[layer - 1, head - 1], current.prefix, final_length,
                                        title=texts["triangle"].format(layer=layer, head=head),
                                        x_title=texts["key_axis"], y_title=texts["query_axis"], hover=hover)
    topk = dv.build_topk_figure(current.top_tokens, current.top_probs, current.chosen,
                                sampling=current.sampling_probs, names=(texts["model_probs"], texts["sampled_probs"]),
                                x_title=texts["probability"], hover="%{customdata}: %{x:.3f}")
    topk.update_layout(title=texts["topk"])
    triangle.update_traces(showscale=False, selector=dict(type="heatmap"))  # the cross-attention's scale is the same 0..1
    labels = tuple(texts["head_label"].format(head=h) for h in range(1, n_heads + 1))
    cross = dv.build_cross_figure(current.cross_attention[layer - 1], src_tokens, labels,
                                  title=texts["cross"].format(layer=layer), x_title=texts["source_axis"],
                                  hover="%{y} → %{x}: %{z:.3f}")
    return combine([[triangle, topk], [cross]], widths=[[3, 2], [1]],
                   legend=dict(orientation="h", x=1, xanchor="right", y=1, yanchor="bottom"))


def beam_columns() -> dict[str, str]:
    return {name: t(f"decoding.beams.{name}") for name in ("step", "rank", "text", "score", "finished")}


def compare(ckpt, key, source: str) -> None:
    beam_size = beam_slider()
    temperature, top_k, seed = sampling_controls()
    traces = {
        "greedy": run(ckpt, key, source, "greedy"),
        "beam": run(ckpt, key, source, "beam", beam_size=beam_size),
        "sample": run(ckpt, key, source, "sample", temperature=temperature, top_k=top_k, seed=seed),
    }
    expected = av.task_target(ckpt, source)
    for column, (strategy, trace) in zip(st.columns(3), traces.items()):
        with column, st.container(border=True):
            st.markdown(f"**{t(f'decoding.strategy_name.{strategy}')}**")
            st.code(trace.output or " ", language=None)
            st.metric(t("decoding.compare.score"), f"{trace.score:.3f}", help=t("decoding.compare.score_help"))
            state = "decoding.compare.finished" if trace.finished else "decoding.compare.unfinished"
            st.caption(t(state, steps=len(trace.steps)))
            if expected is not None:
                ok = trace.output == expected
                st.caption(t("decoding.compare.right" if ok else "decoding.compare.wrong"))
    if traces["beam"].output == traces["greedy"].output:
        st.caption(t("decoding.compare.beam_same"))
    else:
        st.caption(t("decoding.compare.beam_differs"))
    st.subheader(t("decoding.compare.beams_heading"))
    st.caption(t("decoding.compare.beams_caption", size=beam_size))
    st.dataframe(dv.beams_table(traces["beam"], beam_columns()), hide_index=True, width="stretch", height=300)


def forcing(ckpt, key, source: str) -> None:
    expected = av.task_target(ckpt, source)
    if expected is None:
        st.info(t("decoding.forcing.no_target"), icon=":material/edit:")
        typed = st.text_input(t("decoding.forcing.target_label"), max_chars=200,
                              key=bind(TextParam("dec_target", "", max_len=200), key="decoding.target"))
        prepared = prepare_sentence(typed, ckpt.tokenizer,
                                    max_chars=min(MAX_CHARS, ckpt.model.config.max_len - 1))
        tv.show_notices(prepared)
        if not prepared.sentences:
            return
        target = prepared.sentences[0]
    else:
        target = expected[: ckpt.model.config.max_len - 1]
        st.markdown(t("decoding.forcing.target_known"))
        st.code(target or " ", language=None)
    tf = dv.teacher_forcing(ckpt, key, source, target)
    free = run(ckpt, key, source, "greedy")
    n = len(tf.target_tokens)
    own = dv.generated_tokens(free)
    miss = dv.first_difference(own, tf.target_tokens)
    left, right = st.columns(2)
    left.metric(t("decoding.forcing.tf_metric"), f"{tf.n_correct} / {n}", help=t("decoding.forcing.tf_help"))
    right.metric(t("decoding.forcing.free_metric"),
                 t("decoding.forcing.free_ok") if miss is None else t("decoding.forcing.free_miss", position=miss),
                 help=t("decoding.forcing.free_help"))
    columns = {name: t(f"decoding.forcing.col_{name}") for name in
               ("position", "reads_true", "should", "predicts", "p_true", "ok", "reads_own", "writes_own")}
    st.dataframe(dv.forcing_table(tf, free, columns), hide_index=True, width="stretch")
    correct = tuple(p == s for p, s in zip(tf.predicted_tokens, tf.target_tokens))
    chart = cached_figure(dv.build_forcing_figure, tf.target_tokens, tf.true_probs, correct,
                          x_title=t("decoding.forcing.x_title"), y_title=t("decoding.probability"),
                          hover="%{customdata}: %{y:.3f}")
    st.plotly_chart(chart, key="decoding.forcing_chart", config=PLOT_CONFIG)
    st.caption(t("decoding.forcing.caption"))


def decoder_page(ckpt) -> None:
    key = av.model_key(ckpt)
    source = av.sentence_input(ckpt, "decoding.text", "dec_text")
    if source is None:
        return
    section = st.segmented_control(t("decoding.section_label"), SECTIONS, required=True,
                                   format_func=lambda s: t(f"decoding.section.{s}"),
                                   key=bind(SECTION, key="decoding.section"))
    st.caption(t(f"decoding.section_about.{section}"))
    if section == "steps":
        step_by_step(ckpt, key, source)
    elif section == "compare":
        compare(ckpt, key, source)
    else:
        forcing(ckpt, key, source)


st.title(t("decoding.title"))
st.markdown(t("decoding.intro"))
st.latex(r"P(y\mid x)=\prod_{t=1}^{T} P(y_t\mid y_{<t},\,x)\qquad "
         r"y_t=\arg\max_{w} P(w\mid y_{<t},\,x)\qquad "
         r"P_\tau(w)\propto P(w\mid y_{<t},\,x)^{1/\tau}")
st.caption(t("decoding.formula_note"))
checkpoint = selected_model()
if checkpoint is not None:
    decoder_page(checkpoint)
with st.container(border=True):
    st.markdown(f"**{t('decoding.try.heading')}**")
    st.markdown(t("decoding.try.body"))

tour_links("decoding")

"""Decoding: the autoregressive loop step by step, greedy / beam / sampling side by side (with beam
search's hypotheses as a tree and its length normalisation), teacher forcing (training) against free
running (inference), and all at once (one pass) against one at a time."""
import html

import streamlit as st

from explain.decoding import (BEAM_STATUSES, EOS, PARALLEL_COLUMNS, PLACEHOLDERS, RANKING_COLUMNS, STRATEGIES,
                              TOP_K_CHOICES, TRACE_K, TREE_COLUMNS, BeamNode, BeamTree, DecodeTrace, TokenCount,
                              all_at_once, beam_tree, beams_table, cache_savings, decode, first_difference,
                              forcing_table, generated_tokens, parse_top_k, ranking_table, sample_chance, step_after,
                              teacher_forcing, tree_table)
from explain.attention import format_probability
from explain.examples import PRONOUN_SENTENCES, REFERENT_AFTER, REORDER, TRANSLATIONS
from explain.output import trained_epsilon
from explain.tasks import expected_output, task_of
from explain.text import first_units, join_units, prepare_sentence, unit_of
from explain.tokens import target_tokenizer
from figures import decoding as pictures
from figures.labels import display_token
from ui.cache import computed
from ui.code_panel import code_panel
from ui.i18n import t
from ui.models import MODEL_STATE_KEY, available_models
from ui.nav import scroll_if_asked, scroll_later, smoothing_note
from ui.page_css import formula_row
from ui.page_errors import fragment
from ui.scaffold import PLOT_CONFIG, page
from ui.url_state import ChoiceParam, FloatParam, IntParam, TextParam, bind, clamp_state, markdown_literal, pick
from ui.viewport import is_narrow
from ui.widgets import (answer_box, char_limit, csv_download, plot, sentence_input, show_box_cut, show_notices,
                        unit_names, unknown_source_note)

SECTIONS = ("steps", "compare", "forcing", "parallel")
SECTION = ChoiceParam("decoding_view", "steps", choices=SECTIONS)
STRATEGY = ChoiceParam("decoding_strategy", "greedy", choices=STRATEGIES)
BEAM = IntParam("decoding_beam", 3, lo=1, hi=8)
LENGTH_PENALTY = FloatParam("decoding_length_penalty", 0.0, lo=0.0, hi=2.0, step=0.1)  # α in score / length ** α
TEMPERATURE = FloatParam("decoding_temp", 1.0, lo=0.0, hi=2.0, step=0.1)
TOP_K = ChoiceParam("decoding_topk", "all", choices=TOP_K_CHOICES)
TARGET_CHARS = 200  # the typed teacher-forcing answer: any paste is taken and cut to this
SEED = IntParam("decoding_seed", 0, lo=0, hi=9999)
PLACEHOLDER = ChoiceParam("decoding_placeholder", "unk", choices=PLACEHOLDERS)
STEP_KEY = "decoding.step"
JUMP_KEY = "decoding.jump_after"  # session state: an example's text; step-by-step opens on the step after it


def trace_of(ckpt, source: str, strategy: str, **params) -> DecodeTrace:
    """``source`` decoded with ``strategy`` (cached: moving through the steps never decodes again)."""
    return computed(decode, source, strategy, model=ckpt, **params)


def beam_controls() -> tuple[int, float]:
    """The beam size and the length penalty α, side by side."""
    size_col, alpha_col = st.columns(2)
    beam_size = size_col.slider(t("decoding.beam_size"), 1, 8, key=bind(BEAM, key="decoding.beam"),
                                help=t("decoding.beam_size_help"))
    alpha = alpha_col.slider(t("decoding.length_penalty"), 0.0, 2.0, step=0.1,
                             key=bind(LENGTH_PENALTY, key="decoding.length_penalty"),
                             help=t("decoding.length_penalty_help"))
    return int(beam_size), float(alpha)


def sampling_controls() -> tuple[float, int | None, int]:
    temp_col, k_col, seed_col = st.columns(3)
    temperature = temp_col.slider(t("decoding.temperature"), 0.0, 2.0, step=0.1,
                                  key=bind(TEMPERATURE, key="decoding.temperature"),
                                  help=t("decoding.temperature_help"))
    top_k = k_col.select_slider(t("decoding.top_k"), TOP_K_CHOICES, key=bind(TOP_K, key="decoding.top_k"),
                                format_func=lambda c: t("decoding.top_k_all") if c == "all" else c,
                                help=t("decoding.top_k_help"))
    seed = seed_col.number_input(t("decoding.seed"), min_value=0, max_value=9999, step=1,
                                 key=bind(SEED, key="decoding.seed"), help=t("decoding.seed_help"))
    return float(temperature), parse_top_k(top_k), int(seed)


def sample_chance_note(ckpt, source: str, temperature: float, top_k: int | None) -> None:
    """Under a sampled answer: the chance that a sample is the right answer (else the greedy one) token for token,
    and why it is low at T = 1 for a label-smoothed model."""
    expected = expected_output(ckpt, source)
    answer = expected if expected is not None else trace_of(ckpt, source, "greedy").output
    if not answer:
        return
    chance = computed(sample_chance, source, answer, float(temperature), top_k, model=ckpt)
    k = t("decoding.sample_chance_top_k", k=top_k) if top_k is not None else ""
    which = t("decoding.sample_chance_right" if expected is not None else "decoding.sample_chance_greedy")
    note = t("decoding.sample_chance", temperature=f"{temperature:g}", top_k=k, which=which,
             chance=format_probability(chance))
    epsilon = trained_epsilon(ckpt)
    if epsilon and chance < 0.5:
        steps = len(target_tokenizer(ckpt).encode(answer)) + 1  # <eos> too
        note += " " + t("decoding.sample_chance_smoothing", epsilon=f"{epsilon:g}", steps=steps)
    st.caption(note)


# ------------------------------------------------------------------ step by step


def step_by_step(ckpt, source: str) -> None:
    strategy = st.segmented_control(t("decoding.strategy"), STRATEGIES, required=True,
                                    format_func=lambda s: t(f"decoding.strategy_name.{s}"),
                                    key=bind(STRATEGY, key="decoding.strategy"))
    if strategy == "beam":
        beam_size, alpha = beam_controls()
        trace = trace_of(ckpt, source, "beam", beam_size=beam_size, length_penalty=alpha)
        st.caption(t("decoding.steps.beam_note"))
    elif strategy == "sample":
        temperature, top_k, seed = sampling_controls()
        trace = trace_of(ckpt, source, "sample", temperature=temperature, top_k=top_k, seed=seed)
        sample_chance_note(ckpt, source, temperature, top_k)
    else:
        trace = trace_of(ckpt, source, "greedy")
    if (after := st.session_state.pop(JUMP_KEY, None)) is not None and (step := step_after(trace, after)):
        st.session_state[STEP_KEY] = step  # an example's button: open on the step it is about
    cfg = ckpt.model.config
    with st.container(horizontal=True, gap="large"):
        layer = st.segmented_control(t("decoding.layer"), list(range(1, cfg.n_layers + 1)), required=True,
                                     key=bind(IntParam("decoding_layer", 1, lo=1, hi=cfg.n_layers),
                                              key="decoding.layer"))
        head = st.segmented_control(t("decoding.head"), list(range(1, cfg.n_heads + 1)), required=True,
                                    key=bind(IntParam("decoding_head", 1, lo=1, hi=cfg.n_heads), key="decoding.head"))
    step_view(trace, strategy, layer, head, cfg.n_heads, unit_of(target_tokenizer(ckpt)),
              t("decoding.source_axis", **unit_names(ckpt)), alpha if strategy == "beam" else 0.0)
    st.caption(" ".join((t("decoding.steps.triangle_caption"), t("decoding.steps.topk_caption", k=TRACE_K),
                         t("decoding.steps.cross_caption"))))
    smoothing_note(ckpt, "decoding.smoothing_note")


def move_step(delta: int, n_steps: int) -> None:
    st.session_state[STEP_KEY] = min(max(st.session_state[STEP_KEY] + delta, 1), n_steps)


def step_controls(n: int) -> int:
    """The step slider (``?decoding_step=``) with ‹ Previous / Next › buttons; returns the step (1-based)."""
    # Streamlit knows a slider by its key and its range: with another number of steps (a new
    # sentence) it is a new widget, which starts at 1 unless handed the step again (the nearest
    # one when there are fewer steps now).
    clamp_state(STEP_KEY, n)
    if STEP_KEY in st.session_state:
        st.session_state[STEP_KEY] = st.session_state[STEP_KEY]
    step = st.slider(t("decoding.steps.slider"), 1, n, key=bind(IntParam("decoding_step", 1, lo=1, hi=n), key=STEP_KEY),
                     label_visibility="collapsed")
    with st.container(horizontal=True):
        st.button(t("decoding.steps.previous"), icon=":material/chevron_left:", on_click=move_step, args=(-1, n),
                  key="decoding.prev", disabled=step <= 1)
        st.button(t("decoding.steps.next"), icon=":material/chevron_right:", icon_position="right",
                  on_click=move_step, args=(1, n), key="decoding.next", disabled=step >= n)
    return step


@fragment
def step_view(trace: DecodeTrace, strategy: str, layer: int, head: int, n_heads: int, unit: str = "char",
              source_axis: str = "", alpha: float = 0.0) -> None:
    """The step controls and what the chosen step shows (``unit``: what one output token is, "char" or
    "word"; ``source_axis``: the cross-attention's x title, "Source word" or "Source character"; ``alpha``:
    beam search's length penalty, for the tree's hovers). A fragment: moving through the steps reruns only
    this part of the page (the trace is already decoded)."""
    n = len(trace.steps)
    status = st.empty()  # above the slider, though it says what the slider chose
    step = step_controls(n) if n > 1 else 1
    status.markdown(step_status(trace, step, unit))
    current = trace.steps[step - 1]
    if current.chosen == EOS:
        st.success(t("decoding.steps.done", output=markdown_literal(trace.output, limit=80)),
                   icon=":material/flag:")
    elif step == n and not trace.finished:
        st.warning(t("decoding.steps.limit", limit=trace.max_len), icon=":material/block:")
    plot(step_figure(trace, step, layer, head, n_heads, source_axis), key="decoding.step_figure", config=PLOT_CONFIG)
    if strategy == "beam" and step <= len(trace.beams):
        st.dataframe(beams_table(trace, beam_columns(), step), hide_index=True, width="stretch")
    if strategy == "beam":  # where this step's beams sit in the whole search
        plot(tree_figure(beam_tree(trace), alpha, current=step), key="decoding.step_tree", config=PLOT_CONFIG)
        st.caption(t("decoding.steps.tree_caption", step=step))


def step_status(trace: DecodeTrace, step: int, unit: str = "char") -> str:
    """Markdown: step ``step`` of ``n``, what the decoder reads and writes, and what it has written so far
    (words joined by spaces, characters by nothing)."""
    current = trace.steps[step - 1]
    prefix = " ".join(display_token(tok) for tok in current.prefix)
    written = join_units([tok for tok in generated_tokens(trace, step) if tok != EOS], unit)
    return (t("decoding.steps.status", step=step, n=len(trace.steps), prefix=markdown_literal(prefix, limit=200),
              chosen=markdown_literal(display_token(current.chosen)), p=f"{current.chosen_prob:.3f}")
            + " " + t("decoding.steps.written", written=markdown_literal(written, limit=200) or "∅"))


def step_figure(trace: DecodeTrace, step: int, layer: int, head: int, n_heads: int, source_axis: str):
    """Step ``step``'s decoder self-attention triangle and next-token bars side by side, its cross-attention below."""
    current = trace.steps[step - 1]
    triangle = pictures.triangle(
        current.decoder_attention[layer - 1, head - 1], current.prefix, len(trace.steps[-1].prefix),
        title=t("decoding.steps.triangle", layer=layer, head=head), x_title=t("decoding.key_axis"),
        y_title=t("decoding.query_axis"),
        hover=f"{t('decoding.query')} %{{y}} → {t('decoding.key')} %{{x}}: %{{z:.3f}}")
    topk = pictures.topk(
        current.top_tokens, current.top_probs, current.chosen, sampling=current.sampling_probs,
        names=(t("decoding.steps.model_probs"), t("decoding.steps.sampled_probs")), title=t("decoding.steps.topk"),
        x_title=t("decoding.probability"), hover="%{customdata}: %{x:.3f}")
    cross = pictures.cross(
        current.cross_attention[layer - 1], trace.src_tokens,
        [t("decoding.head_label", head=h) for h in range(1, n_heads + 1)],
        title=t("decoding.steps.cross", layer=layer), x_title=source_axis,
        hover="%{y} → %{x}: %{z:.3f}")
    return pictures.step_figure(triangle, topk, cross)


def beam_columns() -> dict[str, str]:
    return {name: t(f"decoding.beams.{name}") for name in ("step", "rank", "text", "score", "finished")}


# ------------------------------------------------------------------ strategies side by side


def compare(ckpt, source: str) -> None:
    beam_size, alpha = beam_controls()
    temperature, top_k, seed = sampling_controls()
    traces = {
        "greedy": trace_of(ckpt, source, "greedy"),
        "beam": trace_of(ckpt, source, "beam", beam_size=beam_size, length_penalty=alpha),
        "sample": trace_of(ckpt, source, "sample", temperature=temperature, top_k=top_k, seed=seed),
    }
    expected = expected_output(ckpt, source)
    for column, (strategy, trace) in zip(st.columns(3), traces.items()):
        with column, st.container(border=True):
            st.markdown(f"**{t(f'decoding.strategy_name.{strategy}')}**")
            answer_box(trace.output)
            st.metric(t("decoding.compare.score"), f"{trace.score:.3f}", help=t("decoding.compare.score_help"))
            state = "decoding.compare.finished" if trace.finished else "decoding.compare.unfinished"
            st.caption(t(state, steps=len(trace.steps)))
            if expected is not None:
                st.caption(t("decoding.compare.right" if trace.output == expected else "decoding.compare.wrong"))
    sample_chance_note(ckpt, source, temperature, top_k)
    unknown_source_note(ckpt, source)
    same = traces["beam"].output == traces["greedy"].output
    st.caption(t("decoding.compare.beam_same" if same else "decoding.compare.beam_differs"))
    st.subheader(t("decoding.compare.beams_heading"))
    st.caption(t("decoding.compare.beams_caption", size=beam_size))
    tree = beam_tree(traces["beam"])
    tree_view(tree, beam_size, alpha)
    st.dataframe(beams_table(traces["beam"], beam_columns()), hide_index=True, width="stretch", height=300)
    length_normalisation(tree, alpha)


def status_names() -> dict[str, str]:
    return {status: t(f"decoding.tree.status.{status}") for status in BEAM_STATUSES}


def node_hover(node: BeamNode, alpha: float, names: dict[str, str]) -> str:
    """A node's hover: the whole hypothesis, its summed log-probability, its length-normalised score and its
    status (``names``), escaped for plotly."""
    if node.parent is None:
        return html.escape(t("decoding.tree.hover_root"))
    text = node.text + (" " + EOS if node.status == "finished" else "")
    return html.escape(t("decoding.tree.hover", step=node.step, rank=node.rank, text=text or "∅",
                         score=f"{node.score:.3f}", length=node.length, alpha=f"{alpha:g}",
                         normalised=f"{node.rank_score:.3f}", status=names[node.status])).replace("\n", "<br>")


def tree_figure(tree: BeamTree, alpha: float, current: int | None = None):
    """The tree's chart (``current``: the step a band marks)."""
    nodes, names = tree.nodes, status_names()
    return pictures.beam_tree(
        [n.step for n in nodes], [n.rank for n in nodes], [n.label for n in nodes], [n.status for n in nodes],
        [n.parent for n in nodes], [n.chosen for n in nodes], [node_hover(n, alpha, names) for n in nodes],
        names={**names, "chosen": t("decoding.tree.chosen")}, step_title=t("decoding.tree.step_axis"),
        rank_title=t("decoding.tree.rank_axis"), down=is_narrow(), current=current)


def tree_view(tree: BeamTree, beam_size: int, alpha: float) -> None:
    """Every hypothesis beam search kept or finished, as a tree over the steps, the answer's path in red."""
    names = status_names()
    plot(tree_figure(tree, alpha), key="decoding.beam_tree", config=PLOT_CONFIG)
    st.caption(" ".join((t("decoding.tree.caption"), t("decoding.tree.not_drawn"))))
    if beam_size == 1:
        st.info(t("decoding.tree.greedy" if alpha == 0 else "decoding.tree.greedy_alpha"),
                icon=":material/linear_scale:")
    columns = {name: t(f"decoding.tree.col_{name}") for name in TREE_COLUMNS}
    csv_download("decoding.tree.download",
                 lambda: tree_table(tree, columns, show=display_token, status_names=names).to_csv(index=False),
                 "beam_tree.csv", "decoding.tree_csv")


def length_normalisation(tree: BeamTree, alpha: float) -> None:
    """score / length ** α: what it is, what α changes, and the hypotheses the answer was chosen among."""
    st.markdown(f"**{t('decoding.tree.length_heading')}**")
    st.latex(r"s(y) = \frac{\sum_{t=1}^{|y|} \log P(y_t\mid y_{<t},\,x)}{|y|^{\alpha}}")
    st.markdown(t("decoding.tree.length_body"))
    pool = tree.candidates()
    finished = pool[0].status == "finished"
    st.caption(t("decoding.tree.ranking_caption" if finished else "decoding.tree.ranking_open", alpha=f"{alpha:g}"))
    columns = {name: t(f"decoding.tree.rcol_{name}") for name in RANKING_COLUMNS}
    st.dataframe(ranking_table(tree, columns), hide_index=True, width="stretch")
    if alpha > 0 and finished:
        by_sum = max(pool, key=lambda node: node.score)
        st.caption(t("decoding.tree.alpha_same" if by_sum is pool[0] else "decoding.tree.alpha_changed",
                     alpha=f"{alpha:g}"))


# ------------------------------------------------------------------ teacher forcing


def forcing_target(ckpt, source: str) -> str | None:
    """The answer teacher forcing feeds: the task's correct one, else one the visitor types (None: none yet)."""
    expected = expected_output(ckpt, source)
    if expected is not None:
        target = first_units(expected, ckpt.model.config.max_len - 1, unit_of(target_tokenizer(ckpt)))
        st.markdown(t("decoding.forcing.target_known"))
        answer_box(target)
        return target
    st.info(t("decoding.forcing.no_target"), icon=":material/edit:")
    typed = st.text_input(t("decoding.forcing.target_label"),
                          key=bind(TextParam("decoding_target", "", max_len=TARGET_CHARS), key="decoding.target"))
    show_box_cut("decoding.target", typed, TARGET_CHARS)
    prepared = prepare_sentence(typed, target_tokenizer(ckpt), max_chars=char_limit(ckpt))
    show_notices(prepared)
    return prepared.sentences[0] if prepared.sentences else None


def forcing(ckpt, source: str) -> None:
    target = forcing_target(ckpt, source)
    if target is None:
        return
    tf = computed(teacher_forcing, source, target, model=ckpt)
    free = trace_of(ckpt, source, "greedy")
    miss = first_difference(generated_tokens(free), tf.target_tokens)
    left, right = st.columns(2)
    left.metric(t("decoding.forcing.tf_metric"), f"{tf.n_correct} / {len(tf.target_tokens)}",
                help=t("decoding.forcing.tf_help"))
    right.metric(t("decoding.forcing.free_metric"),
                 t("decoding.forcing.free_ok") if miss is None else t("decoding.forcing.free_miss", position=miss),
                 help=t("decoding.forcing.free_help"))
    columns = {name: t(f"decoding.forcing.col_{name}") for name in
               ("position", "reads_true", "should", "predicts", "p_true", "ok", "reads_own", "writes_own")}
    st.dataframe(forcing_table(tf, free, columns, show=display_token), hide_index=True, width="stretch",
                 column_config={columns["p_true"]: st.column_config.NumberColumn(format="%.3f")})
    correct = [p == s for p, s in zip(tf.predicted_tokens, tf.target_tokens)]
    chart = pictures.forcing(tf.target_tokens, tf.true_probs, correct, x_title=t("decoding.forcing.x_title"),
                             y_title=t("decoding.probability"), hover="%{customdata}: %{y:.3f}")
    plot(chart, key="decoding.forcing_chart", config=PLOT_CONFIG)
    smoothing_note(ckpt, "decoding.smoothing_note", before=t("decoding.forcing.caption"))


# ------------------------------------------------------------------ all at once vs one at a time


def counted(counts: list[TokenCount]) -> str:
    """The tokens one decoding writes a different number of times from the other, with both counts
    (a missing token that the pass never writes: its name only)."""
    def one(c: TokenCount) -> str:
        token = markdown_literal(display_token(c.token))
        if c.parallel == 0:
            return t("decoding.parallel.token", token=token)
        key = "count" if c.parallel > c.greedy else "count_fewer"
        return t(f"decoding.parallel.{key}", token=token, parallel=c.parallel, greedy=c.greedy)
    return t("decoding.parallel.list_sep").join(one(c) for c in counts)


@fragment
def parallel(ckpt, source: str) -> None:
    """ONE decoder pass over <bos> + placeholders with the argmax at every position, beside greedy decoding
    (one pass per token): both answers token by token, the positions that differ, the tokens written too
    often or not at all, and the passes each needed."""
    placeholder = st.segmented_control(t("decoding.parallel.placeholder"), PLACEHOLDERS, required=True,
                                       format_func=lambda p: t(f"decoding.parallel.placeholder_name.{p}"),
                                       key=bind(PLACEHOLDER, key="decoding.placeholder"),
                                       help=t("decoding.parallel.placeholder_help"))
    shown = computed(all_at_once, source, placeholder, model=ckpt)
    names = (t("decoding.parallel.greedy"), t("decoding.parallel.parallel"))
    once, steps = shown.passes
    left, right = st.columns(2)
    left.metric(t("decoding.parallel.passes", name=names[0]), steps, help=t("decoding.parallel.passes_greedy_help"))
    right.metric(t("decoding.parallel.passes", name=names[1]), once, help=t("decoding.parallel.passes_parallel_help"))
    st.markdown(t("decoding.parallel.inputs", n=len(shown.inputs), placeholder=markdown_literal(shown.placeholder),
                  many=len(shown.inputs) - 1))
    fig = pictures.two_rows((shown.greedy, shown.parallel), (shown.greedy_probs, shown.parallel_probs),
                            shown.differs, names=names, x_title=t("decoding.parallel.position"),
                            hover=t("decoding.parallel.hover"), down=is_narrow())
    plot(fig, key="decoding.parallel_chart", config=PLOT_CONFIG)
    same = shown.differs.count(False)
    st.caption(t("decoding.parallel.caption", same=same, n=len(shown.differs)))
    for column, name, text in zip(st.columns(2), names, (shown.greedy_output, shown.parallel_output)):
        with column:
            st.markdown(f"**{name}**")
            answer_box(text)
    if not any(shown.differs):
        st.success(t("decoding.parallel.all_same"), icon=":material/check:")
    else:
        first = shown.differs.index(True)
        notes = [t("decoding.parallel.first_difference", position=first)]
        if shown.too_often:
            notes.append(t("decoding.parallel.too_often", tokens=counted(shown.too_often)))
        if shown.missing:
            notes.append(t("decoding.parallel.missing", tokens=counted(shown.missing)))
        if not shown.parallel_finished:
            notes.append(t("decoding.parallel.no_eos"))
        st.warning("\n".join(f"- {note}" for note in notes), icon=":material/difference:")
    st.markdown(t("decoding.parallel.why"))
    st.caption(t("decoding.parallel.length_note"))
    columns = {name: t(f"decoding.parallel.col_{name}") for name in PARALLEL_COLUMNS}
    csv_download("decoding.parallel.download", lambda: shown.table(columns).to_csv(index=False),
                 "all_at_once.csv", "decoding.parallel_csv")


# ------------------------------------------------------------------ the page


def decoder_page(ckpt) -> str | None:
    """The page's sections for ``ckpt``; returns the source sentence (None when there is none)."""
    source = sentence_input(ckpt, "decoding")
    if source is None:
        return None
    section = st.segmented_control(t("decoding.section_label"), SECTIONS, required=True,
                                   format_func=lambda s: t(f"decoding.section.{s}"),
                                   key=bind(SECTION, key="decoding.section"))
    st.caption(t(f"decoding.section_about.{section}"))
    if section == "steps":
        step_by_step(ckpt, source)
    elif section == "compare":
        compare(ckpt, source)
    elif section == "parallel":
        parallel(ckpt, source)
    else:
        forcing(ckpt, source)
    code_panel("decoding", {"steps": ("greedy", "decode_loop"), "compare": ("greedy", "beam_search"),
                            "parallel": ("decode", "decode_loop")}.get(section, ("decode",)))
    return source


# ------------------------------------------------------------------ what the key/value cache saves


def cache_section(ckpt, source: str) -> None:
    """Per step of the real cached greedy decode: key/value pairs computed, and reused from the cache."""
    savings = computed(cache_savings, source, model=ckpt)
    if not savings.tokens:
        return
    st.subheader(t("decoding.cache.heading"))
    st.markdown(t("decoding.cache.intro", layers=savings.n_layers, source=savings.source_len))
    chart = pictures.cache_bars(savings.tokens, savings.computed, savings.reused,
                                computed_name=t("decoding.cache.computed"), reused_name=t("decoding.cache.reused"),
                                x_title=t("decoding.cache.x_title"), y_title=t("decoding.cache.y_title"),
                                hover=t("decoding.cache.hover"))
    plot(chart, key="decoding.cache_chart", config=PLOT_CONFIG)
    st.markdown(t("decoding.cache.total", steps=len(savings.tokens), computed=savings.total_computed,
                  without=savings.total_without, ratio=f"{savings.total_without / savings.total_computed:.1f}"))
    code_panel("decoding", ("kv_cache",), name="cache_code")


# ------------------------------------------------------------------ try this: the translation examples


def open_example(model: str, sentence: str, after: str | None = None) -> None:
    """An example's click: ``sentence`` on ``model``, step by step with greedy decoding, on the step that
    writes what follows ``after`` (the first step when None), brought into view."""
    state = st.session_state
    if state.get(MODEL_STATE_KEY) != model:
        state[MODEL_STATE_KEY] = model
        pick(MODEL_STATE_KEY)
    state["decoding.text"] = sentence
    state["decoding.section"], state["decoding.strategy"] = "steps", "greedy"
    state[STEP_KEY] = 1
    if after is not None:
        state[JUMP_KEY] = after
    scroll_later("decoding.section")


def examples_try(ckpt) -> None:
    """Buttons that open the reordering sentence and the pronoun pair step by step (switching to a
    translation model when the sidebar's is not one)."""
    task = getattr(task_of(ckpt), "name", None) if ckpt is not None else None
    names = available_models()
    reorder_task = task if task in TRANSLATIONS else ("en-zh" if "en-zh" in names else None)
    if reorder_task is None:
        return
    st.markdown(f"**{t('decoding.examples.heading')}**")
    if task not in TRANSLATIONS:
        st.caption(t("decoding.examples.other_model"))
    source, target = REORDER[reorder_task]
    st.markdown(t(f"decoding.examples.reorder_{reorder_task.replace('-', '_')}", source=source, target=target))
    st.button(t("decoding.examples.reorder_button"), icon=":material/swap_horiz:", key="decoding.try_reorder",
              on_click=open_example, args=(reorder_task, source))
    if "en-zh" not in names:
        return
    tired, wide = PRONOUN_SENTENCES
    st.markdown(t("decoding.examples.pronoun", tired=tired, wide=wide, after=REFERENT_AFTER))
    with st.container(horizontal=True):
        for sentence, label in ((tired, "tired_button"), (wide, "wide_button")):
            st.button(t(f"decoding.examples.{label}"), key=f"decoding.try_{label}", on_click=open_example,
                      args=("en-zh", sentence, REFERENT_AFTER))


FORMULAS = (formula_row(r"P(y\mid x)=\prod_{t=1}^{T} P(y_t\mid y_{<t},\,x)",
                        r"y_t=\arg\max_{w} P(w\mid y_{<t},\,x)",
                        r"P_\tau(w)\propto P(w\mid y_{<t},\,x)^{1/\tau}"),)

with page("decoding", formulas=FORMULAS, formula_note=True, try_this="bottom", try_extra=examples_try) as checkpoint:
    if checkpoint is not None and (source := decoder_page(checkpoint)) is not None:
        cache_section(checkpoint, source)
scroll_if_asked()

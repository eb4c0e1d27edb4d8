"""Output and loss: the decoder's last vector → logits (the linear layer) → softmax with a temperature;
seed 004's worked numbers; the sentence's cross-entropy and perplexity; label smoothing as training used it."""
import numpy as np
import pandas as pd
import streamlit as st

from explain.output import (SCORE_LIMIT, SCORES_DEFAULT, SCORES_MAX, SEED_CE_LOGITS, SEED_CE_TARGET,
                            SEED_SOFTMAX_INPUT, TOP_K, OutputView, distribution, parse_scores, softmax_vs_ratio,
                            distribution_table, loss_by_right_probability, mean_loss, output_view, perplexity,
                            position_losses, positions_table, predicted_ids, seed_cross_entropy, seed_softmax,
                            smoothed_floor, spread_over, target_probs, target_rows, targets_table, temperature_sweep)
from explain.tasks import expected_output
from explain.text import prepare_sentence
from explain.tokens import target_tokenizer
from figures import output as pictures
from figures.labels import display_token
from ui.cache import computed
from ui.code_panel import code_panel
from ui.i18n import t
from ui.page_errors import fragment
from ui.scaffold import PLOT_CONFIG, page
from ui.sidebar import CARRIED_PARAMS
from ui.tour import st_page, stop
from ui.url_state import (ChoiceParam, FloatParam, IntParam, TextParam, bind, clamp_state, current_query,
                          markdown_literal)
from ui.widgets import char_limit, csv_download, plot, sentence_input, show_box_cut, show_notices
from ui.exercise_panel import UseMine, exercise_panel

SECTIONS = ("logits", "seed", "loss", "smoothing")
SECTION = ChoiceParam("output_and_loss_view", "logits", choices=SECTIONS)
TEMPERATURE = FloatParam("output_and_loss_temp", 1.0, lo=0.0, hi=5.0, step=0.1)
EPSILON = FloatParam("output_and_loss_eps", 0.1, lo=0.0, hi=0.5, step=0.05)
SCORES = TextParam("output_and_loss_scores", SCORES_DEFAULT, max_len=120)
SHIFT = FloatParam("output_and_loss_shift", 0.0, lo=-10.0, hi=10.0, step=0.5)
TARGET_CHARS = 200  # the target box keeps this much of any paste (the model then takes what fits)
TARGET_KEY = "output_and_loss.target"
POSITION_KEY = "output_and_loss.position"
SWEEP = np.round(np.concatenate([[0.0], np.geomspace(0.05, 5.0, 60)]), 4)  # the temperature curve's x
P_GRID = np.linspace(0.001, 0.999, 200)  # the loss curve's p(right)


def number(value: float, digits: int = 3) -> str:
    """``value`` as the page writes it: fixed ``digits`` decimals, ∞ for an infinite loss."""
    return "∞" if not np.isfinite(value) else f"{value:.{digits}f}"


def shown(tokens) -> str:
    """Tokens written as one Markdown-safe run (spaces made visible)."""
    return markdown_literal(" ".join(display_token(tok) for tok in tokens), limit=200)


# ------------------------------------------------------------------ the target box


def target_input(ckpt, source: str) -> str | None:
    """The target box (``?output_and_loss_target=``): the task's correct answer by default, editable. Returns the
    target the decoder reads, or None when there is none."""
    answer = expected_output(ckpt, source) or ""
    param = TextParam("output_and_loss_target", answer, max_len=TARGET_CHARS)
    typed = st.text_input(t("output_and_loss.target_label"), key=bind(param, key=TARGET_KEY, follows=TARGET_KEY),
                          help=t("output_and_loss.target_help"))
    show_box_cut(TARGET_KEY, typed, TARGET_CHARS)
    prepared = prepare_sentence(typed, target_tokenizer(ckpt), max_chars=char_limit(ckpt))
    show_notices(prepared)
    if not prepared.sentences:
        st.info(t("output_and_loss.no_target"), icon=":material/edit:")
        return None
    target = prepared.sentences[0]
    if answer:
        st.caption(t("output_and_loss.target_is_answer") if target == answer else
                   t("output_and_loss.target_not_answer", answer=markdown_literal(answer, limit=80)))
    return target


def forcing_note(view: OutputView) -> None:
    """The decoder reads the target shifted right (teacher forcing), with a link to the Decoding page's view of it."""
    st.markdown(t("output_and_loss.forcing_note", reads=shown(view.input_tokens), writes=shown(view.target_tokens)))
    st.page_link(st_page(stop("decoding")), label=t("output_and_loss.forcing_link"), icon=":material/output:",
                 query_params={**current_query(*CARRIED_PARAMS), "decoding_view": "forcing"})


def position_picker(view: OutputView) -> int:
    """Which position to look at (``?output_and_loss_pos=``): each written as the token it should write."""
    n = len(view.target_tokens)
    param = IntParam("output_and_loss_pos", 0, lo=0, hi=n - 1)
    clamp_state(POSITION_KEY, param.hi)
    return st.select_slider(t("output_and_loss.position"), list(range(n)), key=bind(param, key=POSITION_KEY),
                            format_func=lambda i: f"{i}: {display_token(view.target_tokens[i])}",
                            help=t("output_and_loss.position_help"))


def position_status(view: OutputView, position: int) -> None:
    st.markdown(t("output_and_loss.position_status", position=position, reads=shown(view.input_tokens[:position + 1]),
                  should=markdown_literal(display_token(view.target_tokens[position]))))


# ------------------------------------------------------------------ 1. logits and softmax


@fragment
def logits_section(view: OutputView) -> None:
    """One position from its last vector to logits to probabilities; the temperature slider and what it does."""
    position = position_picker(view)
    position_status(view, position)
    d_model = view.hidden.shape[1]
    plot(pictures.last_vector(view.hidden[position], title=t("output_and_loss.logits.vector_title", d=d_model),
                              x_title=t("output_and_loss.logits.vector_axis"),
                              hover=t("output_and_loss.logits.vector_hover")),
         key="output_and_loss.vector", config=PLOT_CONFIG)
    where = "output_and_loss.logits.vector_prenorm" if view.norm_first else "output_and_loss.logits.vector_postnorm"
    st.caption(t(where) + " "
               + t("output_and_loss.logits.generator_note"))
    st.latex(r"z = W\,h + b,\qquad W \in \mathbb{R}^{%d \times %d},\; b \in \mathbb{R}^{%d}"
             % (view.weight_shape[0], view.weight_shape[1], view.weight_shape[0]))
    st.latex(r"p_i = \mathrm{softmax}(z / T)_i = \frac{e^{z_i / T}}{\sum_{j=1}^{%d} e^{z_j / T}}" % view.vocab_size)
    temperature = float(st.slider(t("output_and_loss.logits.temperature"), 0.0, 5.0, step=0.1,
                                  key=bind(TEMPERATURE, key="output_and_loss.temperature"),
                                  help=t("output_and_loss.logits.temperature_help")))
    dist = distribution(view, position, temperature)
    fig = pictures.logits_and_probs(
        dist.tokens, dist.logits, dist.probs, dist.target_index,
        titles=(t("output_and_loss.logits.logits_title"), t("output_and_loss.logits.probs_title",
                                                            temperature=f"{temperature:g}")),
        hover=(t("output_and_loss.logits.logit_hover"), t("output_and_loss.logits.prob_hover")))
    plot(fig, key="output_and_loss.logits", config=PLOT_CONFIG)
    st.caption(t("output_and_loss.logits.listed", k=min(TOP_K, view.vocab_size), vocab=view.vocab_size)
               + (" " + t("output_and_loss.logits.target_added",
                          rank=dist.target_rank) if dist.target_rank > TOP_K else ""))
    cols = st.columns(4)
    cols[0].metric(t("output_and_loss.logits.p_target"), number(dist.target_prob),
                   help=t("output_and_loss.logits.p_target_help"))
    cols[1].metric(t("output_and_loss.logits.top_p"), number(dist.top_prob))
    cols[2].metric(t("output_and_loss.logits.entropy"), number(dist.entropy),
                   help=t("output_and_loss.logits.entropy_help"))
    cols[3].metric(t("output_and_loss.logits.choices"), f"{np.exp(dist.entropy):.2f}",
                   help=t("output_and_loss.logits.choices_help", vocab=view.vocab_size))
    sweep = temperature_sweep(view.logits[position], view.target_ids[position], SWEEP)
    curve = pictures.temperature_curve(
        sweep["temperature"], sweep["top"], sweep["target"], sweep["entropy"], temperature,
        float(np.log(view.vocab_size)),
        names=(t("output_and_loss.logits.top_p"), t("output_and_loss.logits.p_target"),
               t("output_and_loss.logits.entropy")),
        x_title=t("output_and_loss.logits.temperature"), y_title=t("output_and_loss.probability"),
        y2_title=t("output_and_loss.logits.entropy"))
    plot(curve, key="output_and_loss.temperature_curve", config=PLOT_CONFIG)
    st.caption(t("output_and_loss.logits.curve_caption"))
    columns = {name: t(f"output_and_loss.col.{name}") for name in ("id", "token", "logit", "probability", "target")}

    def distribution_csv() -> str:
        return distribution_table(view, position, temperature, columns).to_csv(index=False)

    csv_download("output_and_loss.download", distribution_csv, f"distribution_position{position}.csv",
                 "output_and_loss.logits_csv")


# ------------------------------------------------------------------ 2. the seeds' worked numbers


def seed_section() -> None:
    """softmax([1, 2, 3]) and seed 004's cross-entropy example, computed here by torch."""
    st.subheader(t("output_and_loss.seed.softmax_heading"))
    st.latex(r"\mathrm{softmax}(x)_i = \frac{e^{x_i}}{\sum_j e^{x_j}}")
    probs = computed(seed_softmax)
    exps = np.exp(SEED_SOFTMAX_INPUT)
    st.dataframe(pd.DataFrame({"x": SEED_SOFTMAX_INPUT, "e^x": np.round(exps, 4),
                               t("output_and_loss.seed.share"): [f"{e:.4f} / {exps.sum():.4f}" for e in exps],
                               "softmax": [f"{p:.4f}" for p in probs]}), hide_index=True)
    st.caption(t("output_and_loss.seed.softmax_caption", values=", ".join(f"{p:.4f}" for p in probs)))
    why_softmax()
    st.subheader(t("output_and_loss.seed.ce_heading"))
    st.latex(r"\mathcal{L} = -\sum_i y_i \log \hat{y}_i = -\log \hat{y}_{\text{target}}")
    ce = computed(seed_cross_entropy)
    rows = pd.DataFrame({
        t("output_and_loss.seed.row"): [1, 2],
        t("output_and_loss.seed.logits"): [str(list(r)) for r in SEED_CE_LOGITS],
        t("output_and_loss.seed.target"): list(SEED_CE_TARGET),
        t("output_and_loss.seed.probs"): [f"[{a:.4f}, {b:.4f}]" for a, b in ce.probs],
        "−log p(target)": [f"{x:.4f}" for x in ce.row_losses],
    })
    st.dataframe(rows, hide_index=True)
    st.code(t("output_and_loss.seed.code", from_logits=repr(ce.from_logits), from_probs=repr(ce.from_probs),
              training=repr(ce.training_loss)), language="python")
    st.caption(t("output_and_loss.seed.ce_caption"))


def listed(values) -> str:
    return "[" + ", ".join(f"{v:.3f}" for v in values) + "]"


@fragment
def why_softmax() -> None:
    """Typed scores plus a constant c made into probabilities by softmax and by the plain ratio: softmax
    ignores c, the ratio does not, and breaks on scores that sum to 0 or include negatives."""
    st.subheader(t("output_and_loss.seed.why.heading"))
    st.markdown(t("output_and_loss.seed.why.intro"))
    limit = f"{SCORE_LIMIT:g}"
    left, right = st.columns([3, 2], vertical_alignment="bottom")
    text = left.text_input(t("output_and_loss.seed.why.scores_label", max=SCORES_MAX, limit=limit),
                           key=bind(SCORES, key="output_and_loss.scores"), max_chars=SCORES.max_len,
                           help=t("output_and_loss.seed.why.scores_help"))
    shift = right.slider(t("output_and_loss.seed.why.shift_label"), SHIFT.lo, SHIFT.hi, step=SHIFT.step,
                         key=bind(SHIFT, key="output_and_loss.shift"), help=t("output_and_loss.seed.why.shift_help"))
    scores, problem = parse_scores(text)
    if problem is not None:
        st.error(t(f"output_and_loss.seed.why.error.{problem}", max=SCORES_MAX, limit=limit), icon=":material/error:")
        return
    both = computed(softmax_vs_ratio, scores, shift)
    names = (t("output_and_loss.seed.why.softmax"), t("output_and_loss.seed.why.ratio"))
    plot(pictures.softmax_vs_ratio([x + both.shift for x in both.scores], both.softmax, both.ratio, names=names,
                                   title=t("output_and_loss.seed.why.title"), x_title=t("output_and_loss.seed.why.x_axis"),
                                   y_title=t("output_and_loss.seed.why.y_axis"), hover=t("output_and_loss.seed.why.hover")),
         key="output_and_loss.why_chart")
    if both.ratio is None:
        st.warning(t("output_and_loss.seed.why.zero_sum", softmax=listed(both.softmax)), icon=":material/warning:")
    elif both.negative:
        which = ", ".join(f"x{i + 1} + c" for i in both.negative)
        st.warning(t("output_and_loss.seed.why.negative", ratio=listed(both.ratio), which=which),
                   icon=":material/warning:")
    no_ratio = t("output_and_loss.seed.why.no_ratio")
    st.caption(t("output_and_loss.seed.why.caption", c=f"{both.shift:g}",
                 at_0=listed(both.ratio_at_0) if both.ratio_at_0 is not None else no_ratio,
                 now=listed(both.ratio) if both.ratio is not None else no_ratio))
    csv_download("output_and_loss.download", lambda: both.table().to_csv(index=False), "softmax_vs_ratio.csv",
                 "output_and_loss.why_csv")


# ------------------------------------------------------------------ 3. the sentence's loss and perplexity


def loss_section(view: OutputView) -> None:
    """Cross-entropy at every position, its mean, and perplexity = exp(mean)."""
    st.latex(r"\mathcal{L} = \frac{1}{N}\sum_{t=1}^{N} -\log p(y_t \mid y_{<t},\,x), \qquad "
             r"\mathrm{PPL} = e^{\mathcal{L}}")
    losses = position_losses(view)
    predicted = predicted_ids(view)
    correct = [p == y for p, y in zip(predicted, view.target_ids)]
    mean = float(losses.mean())
    chosen = st.session_state.get(POSITION_KEY)
    fig = pictures.position_losses(
        view.target_tokens, losses, correct, mean, chosen if isinstance(chosen, int) else None,
        mean_label=t("output_and_loss.loss.mean_label", mean=number(mean)), x_title=t("output_and_loss.loss.x_title"),
        y_title=t("output_and_loss.loss.y_title"), hover=t("output_and_loss.loss.hover"))
    plot(fig, key="output_and_loss.losses", config=PLOT_CONFIG)
    cols = st.columns(4)
    cols[0].metric(t("output_and_loss.loss.mean"), number(mean), help=t("output_and_loss.loss.mean_help"))
    cols[1].metric(t("output_and_loss.loss.ppl"), f"{perplexity(losses):.3f}", help=t("output_and_loss.loss.ppl_help"))
    cols[2].metric(t("output_and_loss.loss.uniform"), f"{view.vocab_size}", help=t("output_and_loss.loss.uniform_help"))
    cols[3].metric(t("output_and_loss.loss.right"), f"{sum(correct)} / {len(correct)}")
    st.markdown(t("output_and_loss.loss.ppl_meaning", ppl=f"{perplexity(losses):.2f}", vocab=view.vocab_size,
                  worst=number(float(losses.max())), at=int(losses.argmax()),
                  token=markdown_literal(display_token(view.target_tokens[int(losses.argmax())]))))
    epsilon = view.trained_epsilon if view.trained_epsilon is not None else EPSILON.default
    columns = {name: t(f"output_and_loss.col.{name}", epsilon=f"{epsilon:g}") for name in
               ("position", "reads", "should", "predicts", "p_right", "loss", "smoothed_loss")}
    table = positions_table(view, epsilon, columns, show=display_token)
    st.dataframe(table, hide_index=True, width="stretch")
    csv_download("output_and_loss.download", lambda: table.to_csv(index=False), "losses.csv",
                 "output_and_loss.losses_csv")
    st.caption(t("output_and_loss.loss.caption"))


# ------------------------------------------------------------------ 4. label smoothing


def smoothing_section(view: OutputView) -> None:
    """Why a label-smoothed model tops out near 1 − ε: p(right) per position, then the targets and the loss curve."""
    trained = view.trained_epsilon
    n = spread_over(view.vocab_size, view.pad_id)
    if trained is None:
        st.info(t("output_and_loss.smoothing.unknown_epsilon"), icon=":material/help:")
    else:
        st.markdown(t("output_and_loss.smoothing.trained", epsilon=f"{trained:g}", p=f"{1 - trained:g}"))
    probs = target_probs(view)
    chosen = st.session_state.get(POSITION_KEY)
    fig = pictures.right_token_probs(
        view.target_tokens, probs, None if trained is None else 1 - trained,
        chosen if isinstance(chosen, int) else None,
        ceiling_label=t("output_and_loss.smoothing.ceiling", p=f"{1 - (trained or 0):g}"),
        x_title=t("output_and_loss.loss.x_title"), y_title=t("output_and_loss.smoothing.p_right"),
        hover=t("output_and_loss.smoothing.hover"))
    plot(fig, key="output_and_loss.right_probs", config=PLOT_CONFIG)
    if trained is not None:
        st.caption(t("output_and_loss.smoothing.measured", mean=number(float(probs.mean())), p=f"{1 - trained:g}",
                     loss=number(mean_loss(view, trained)), floor=number(smoothed_floor(view.vocab_size, trained,
                                                                                         view.pad_id))))
    st.latex(r"q_i = \begin{cases} 1-\varepsilon & i = y \\ 0 & i = \texttt{<pad>} \\ "
             r"\varepsilon / %d & \text{%s} \end{cases}" % (n, t("output_and_loss.smoothing.formula_other")))
    st.caption(t("output_and_loss.smoothing.convention", n=n, vocab=view.vocab_size))
    smoothing_view(view)


@fragment
def smoothing_view(view: OutputView) -> None:
    """The ε slider and what it drives: the one-hot and smoothed targets at one position, and the loss curve."""
    epsilon = float(st.slider(t("output_and_loss.smoothing.epsilon"), 0.0, 0.5, step=0.05,
                              key=bind(EPSILON, key="output_and_loss.epsilon"),
                              help=t("output_and_loss.smoothing.epsilon_help")))
    position = position_picker(view)
    rows = target_rows(view, position, epsilon)
    names = (t("output_and_loss.smoothing.one_hot"), t("output_and_loss.smoothing.smoothed", epsilon=f"{epsilon:g}"),
             t("output_and_loss.smoothing.model"))
    st.markdown(t("output_and_loss.smoothing.targets_title", position=position,
                  token=markdown_literal(display_token(view.target_tokens[position]))))
    plot(pictures.targets(rows.tokens, rows.one_hot, rows.smoothed, rows.model, rows.target_index, names=names,
                          x_title=t("output_and_loss.smoothing.log_axis"),
                          hover=t("output_and_loss.smoothing.target_hover")),
         key="output_and_loss.targets", config=PLOT_CONFIG)
    st.caption(t("output_and_loss.smoothing.targets_caption", n=rows.n_shared, each=f"{rows.shared:.5f}",
                 k=min(TOP_K, view.vocab_size)))
    floor = smoothed_floor(view.vocab_size, epsilon, view.pad_id)
    one_hot_loss = loss_by_right_probability(P_GRID, view.vocab_size, 0.0, view.pad_id)
    smoothed_loss = loss_by_right_probability(P_GRID, view.vocab_size, epsilon, view.pad_id)
    plot(pictures.loss_curve(P_GRID, one_hot_loss, smoothed_loss, epsilon, floor,
                             names=(t("output_and_loss.smoothing.curve_one_hot"),
                                    t("output_and_loss.smoothing.curve_smoothed", epsilon=f"{epsilon:g}")),
                             best_label=t("output_and_loss.smoothing.best", p=f"{1 - epsilon:g}"),
                             x_title=t("output_and_loss.smoothing.p_right"), y_title=t("output_and_loss.loss.y_title")),
         key="output_and_loss.loss_curve", config=PLOT_CONFIG)
    cols = st.columns(3)
    cols[0].metric(t("output_and_loss.smoothing.perfect_one_hot"), "0",
                   help=t("output_and_loss.smoothing.perfect_one_hot_help"))
    cols[1].metric(t("output_and_loss.smoothing.perfect_smoothed"), "∞" if epsilon > 0 else "0",
                   help=t("output_and_loss.smoothing.perfect_smoothed_help"))
    cols[2].metric(t("output_and_loss.smoothing.floor"), number(floor), help=t("output_and_loss.smoothing.floor_help"))
    st.markdown(t("output_and_loss.smoothing.why", epsilon=f"{epsilon:g}", p=f"{1 - epsilon:g}", floor=number(floor),
                  sentence=number(mean_loss(view, epsilon))))
    columns = {name: t(f"output_and_loss.col.{name}") for name in ("id", "token", "one_hot", "smoothed", "model")}
    csv_download("output_and_loss.download", lambda: targets_table(view, position, epsilon,
                                                                   columns).to_csv(index=False),
                 f"targets_position{position}.csv", "output_and_loss.targets_csv")


# ------------------------------------------------------------------ the page


def output_page(ckpt) -> UseMine | None:
    """The page's sections; returns its sentence and target, for "use mine" (None without them)."""
    source = sentence_input(ckpt, "output_and_loss")
    if source is None:
        return None
    target = target_input(ckpt, source)
    if target is None:
        return None
    view = computed(output_view, source, target, model=ckpt)
    forcing_note(view)
    section = st.segmented_control(t("output_and_loss.section_label"), SECTIONS, required=True,
                                   format_func=lambda s: t(f"output_and_loss.section.{s}"),
                                   key=bind(SECTION, key="output_and_loss.section"))
    st.caption(t(f"output_and_loss.section_about.{section}"))
    if section == "logits":
        logits_section(view)
    elif section == "seed":
        seed_section()
    elif section == "loss":
        loss_section(view)
    else:
        smoothing_section(view)
    code_panel("output_and_loss", ("decode", "label_smoothing"), ckpt=ckpt, source=source, target=target,
               paper_rows=("label_smoothing", "shared_embeddings"))
    with st.container(border=True):
        st.markdown(f"**{t('output_and_loss.try.heading')}**")
        st.markdown(t(f"output_and_loss.try.{section}"))
    return UseMine.sentence(ckpt, source, target)


with page("output_and_loss") as checkpoint:
    mine_runs_on = output_page(checkpoint) if checkpoint is not None else None  # (`shown` is this page's helper)
    exercise_panel("output_and_loss", use_mine=mine_runs_on)

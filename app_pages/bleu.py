"""Scoring translations: BLEU. The chosen model's answers to N fresh task samples scored with corpus
BLEU (sacrebleu) beside exact match, one candidate worked n-gram by n-gram, and the same model with its
weights rounded to int8: its size, answers, scores and one head's attention before and after."""
import math
from collections.abc import Callable

import streamlit as st

from explain.bleu import (CHUNK, MAX_ORDER, NGRAM_COLUMNS, NOISES, ORDER_COLUMNS, SAMPLE_COLUMNS, TOKENIZATIONS,
                          LibrarySentence, ScoredSamples, WorkedSentence, bleu_tokenize, chunks_for, decode_chunk,
                          decode_turns, default_pick, has_samples, library_sentence, ngram_table, order_table,
                          sample_table, score_samples, telling_sample, work_sentence)
from explain.attention import KINDS
from explain.quantise import (CHANGE_COLUMNS, MATRIX_COLUMNS, PAIR_COLUMNS, QuantReport, attention_pair, change_table,
                              changed_answers, decode_chunk_int8, default_sample, matrix_table, quantisation_report)
from figures.bleu import attention_map, precision_bars
from figures.labels import display_token
from ui.cache import computed, is_cached, session_gone_check
from ui.code_panel import code_panel
from ui.i18n import t
from ui.page_errors import fragment
from ui.scaffold import page
from ui.url_state import ChoiceParam, IntParam, TextParam, bind, clamp_state, markdown_literal
from ui.widgets import csv_download, plot, show_box_cut
from ui.exercise_panel import exercise_panel

SECTIONS = ("corpus", "worked", "int8")
SECTION = ChoiceParam("bleu_view", "corpus", choices=SECTIONS)
N_SAMPLES = IntParam("bleu_n", 50, lo=10, hi=200, step=10)
SEED = IntParam("bleu_seed", 0, lo=0, hi=9999)
NOISE = ChoiceParam("bleu_noise", "none", choices=NOISES)
PAIRS = ("sample", "typed")
PAIR = ChoiceParam("bleu_pair", "sample", choices=PAIRS)
ORDER = IntParam("bleu_order", 1, lo=1, hi=MAX_ORDER)
TYPED_CHARS = 200
CANDIDATE = TextParam("bleu_cand", "thank you so much", max_len=TYPED_CHARS)
REFERENCE = TextParam("bleu_ref", "thank you so much, my brother", max_len=TYPED_CHARS)
PICK_KEY = "bleu.pick"
QUANT_KIND = ChoiceParam("bleu_q_kind", "cross", choices=KINDS)
QUANT_PICK_KEY, QUANT_LAYER_KEY, QUANT_HEAD_KEY = "bleu.q_pick", "bleu.q_layer", "bleu.q_head"


# ------------------------------------------------------------------ the samples


def n_and_seed() -> tuple[int, int]:
    """N and the seed (``?bleu_n=``, ``?bleu_seed=``), shared by the sections that decode samples."""
    n_col, seed_col = st.columns([3, 1])
    n = n_col.slider(t("bleu.n_samples"), 10, 200, step=10, key=bind(N_SAMPLES, key="bleu.n"),
                     help=t("bleu.n_samples_help"))
    seed = seed_col.number_input(t("bleu.seed"), min_value=0, max_value=9999, step=1, key=bind(SEED, key="bleu.seed"),
                                 help=t("bleu.seed_help"))
    return int(n), int(seed)


def sample_controls() -> tuple[int, int, str]:
    """N, the seed and what is done to the answers (``?bleu_n=``, ``?bleu_seed=``, ``?bleu_noise=``)."""
    n, seed = n_and_seed()
    noise = st.radio(t("bleu.noise_label"), NOISES, horizontal=True, key=bind(NOISE, key="bleu.noise"),
                     format_func=lambda k: t(f"bleu.noise.{k}"), help=t("bleu.noise_help"))
    return n, seed, noise


def decoded(ckpt, n: int, seed: int, decode: Callable = decode_chunk,
            progress: str = "bleu.progress") -> tuple[tuple[str, str, str], ...]:
    """The first ``n`` samples of the seeded stream with the model's answers, decoded :data:`CHUNK` at a
    time through the cache by ``decode`` (the float32 model's :func:`explain.bleu.decode_chunk`, or the int8
    model's). Chunks not cached yet are decoded in turn with other visitors
    (:func:`explain.bleu.decode_turns`): while others decode, a line says how many are ahead, and a
    progress bar (its text the catalog's ``progress``) follows the chunks once this visitor's turn has
    come. Views already seen draw neither."""
    count = chunks_for(n)
    if all(is_cached(decode, seed, chunk, model=ckpt) for chunk in range(count)):
        return samples_of(ckpt, n, seed, count, decode=decode)
    note = st.empty()
    with decode_turns().turn(on_wait=place_note(note)):
        note.empty()
        bar = st.progress(0.0, text=t(progress, done=0, n=n)) if count > 1 else None
        parts = samples_of(ckpt, n, seed, count, bar, decode, progress)
        if bar is not None:
            bar.empty()
        return parts


def place_note(note) -> Callable[[int], None]:
    """What a waiting visitor is told: their place, drawn again only when it changes (a class waiting sends
    no stream of identical messages). A visitor whose tab has closed leaves the line."""
    shown: list[int] = []
    gone = session_gone_check()

    def tell(ahead: int) -> None:
        if gone is not None and gone():
            st.stop()  # nobody to show it to: leave the line (not an error)
        if shown != [ahead]:
            note.info(t("bleu.queued", ahead=ahead), icon=":material/hourglass_top:")
            shown[:] = [ahead]
    return tell


def samples_of(ckpt, n: int, seed: int, count: int, bar=None, decode: Callable = decode_chunk,
               progress: str = "bleu.progress") -> tuple[tuple[str, str, str], ...]:
    """The ``count`` chunks of ``decode`` through the cache, ``bar`` (if any) moved after each."""
    parts = []
    for chunk in range(count):
        parts.extend(computed(decode, seed, chunk, model=ckpt))
        if bar is not None:
            bar.progress((chunk + 1) / count, text=t(progress, done=min(n, (chunk + 1) * CHUNK), n=n))
    return tuple((s.source, s.reference, s.output) for s in parts[:n])


def scored(ckpt, tokenize: str) -> ScoredSamples:
    """The sample controls, and the answers they ask for, scored. Scoring 200 answers takes a moment
    when it is not cached (a new seed, noise or N): a spinner says so (Streamlit shows it after 0.5 s,
    so a cached score draws none)."""
    n, seed, noise = sample_controls()
    answers = decoded(ckpt, n, seed)
    with st.spinner(t("bleu.scoring", n=len(answers))):
        return computed(score_samples, answers, noise, seed, tokenize)


# ------------------------------------------------------------------ corpus BLEU


def one_decimal(value: float) -> str:
    """A BLEU score as the page writes it (0–100, one decimal)."""
    return f"{value:.1f}"


def corpus_metrics(view: ScoredSamples) -> None:
    """BLEU, exact match, brevity penalty and length ratio, side by side."""
    score = view.corpus
    bleu_col, em_col = st.columns(2)
    bp_col, ratio_col = st.columns(2)
    bleu_col.metric(t("bleu.metric.bleu"), one_decimal(score.bleu), help=t("bleu.metric.bleu_help"))
    em_col.metric(t("bleu.metric.exact"), f"{score.exact_match:.1%}", help=t("bleu.metric.exact_help"))
    bp_col.metric(t("bleu.metric.bp"), f"{score.bp:.3f}", help=t("bleu.metric.bp_help"))
    ratio_col.metric(t("bleu.metric.ratio"), f"{score.ratio:.3f}",
                     help=t("bleu.metric.ratio_help", c=score.hyp_len, r=score.ref_len))


def precision_chart(precisions, matches, totals, key: str, title: str) -> None:
    """The four precisions as bars, with their geometric mean (a dashed line, named below) when none is 0."""
    mean = math.exp(sum(math.log(p / 100) for p in precisions) / len(precisions)) * 100 \
        if all(p > 0 for p in precisions) else None
    hover = t("bleu.chart.hover", order="%{x}", p="%{customdata[1]:.1f}", counts="%{customdata[0]}")
    fig = precision_bars(precisions, matches, totals, names=[t("bleu.order_name", n=n) for n in range(1,
                                                                                                      MAX_ORDER + 1)],
                         title=title, y_title=t("bleu.chart.y"), hover=hover, mean=mean)
    plot(fig, key=key, config={"displayModeBar": False})
    if mean is not None:
        st.caption(t("bleu.chart.mean", mean=f"{mean:.1f}"))


def log_mean_lines(logs: list[str], mean: float) -> str:
    """The opening of a ``gathered`` block: (1/4)(log p_1 + … + log p_4) = mean, two terms a line (phone-wide)."""
    return (rf"\begin{{gathered}}\tfrac14\textstyle\sum_n \log p_n = \tfrac14\big({logs[0]} + {logs[1]} \\"
            rf" + {logs[2]} + {logs[3]}\big) = {mean:.4f}")


def corpus_formula(view: ScoredSamples) -> None:
    """The corpus formula with this corpus's numbers."""
    score = view.corpus
    if 0 in score.matches:  # sacrebleu smoothed that order's precision: no formula of plain logs gives its score
        st.caption(t("bleu.corpus.zero_order"))
        return
    logs = [f"\\log {p / 100:.3f}" for p in score.precisions]
    mean = sum(math.log(p / 100) for p in score.precisions) / len(score.precisions)
    st.latex(log_mean_lines(logs, mean) + rf"\\ \mathrm{{BLEU}} = {score.bp:.3f}\cdot e^{{{mean:.4f}}}\times 100"
             rf" = {score.bleu:.1f}\end{{gathered}}")


def why_they_differ(view: ScoredSamples) -> None:
    """Why exact match and BLEU part, with the sample where they part most."""
    st.subheader(t("bleu.differ.heading"))
    st.markdown(t("bleu.differ.body"))
    found = telling_sample(view.samples, view.bleus)
    if found is None:
        st.info(t("bleu.differ.none"), icon=":material/info:")
        return
    index, kind = found
    sample = view.samples[index]
    st.markdown(t(f"bleu.differ.{kind}", number=index + 1, bleu=one_decimal(view.bleus[index]),
                  output=markdown_literal(sample.output, limit=80) or "∅",
                  reference=markdown_literal(sample.reference, limit=80)))


def sample_columns() -> dict[str, str]:
    return {name: t(f"bleu.samples.{name}") for name in SAMPLE_COLUMNS}


@fragment
def corpus_view(ckpt, tokenize: str) -> None:
    """The sample controls and what they drive: the scores, the precisions, why EM and BLEU differ, the samples."""
    view = scored(ckpt, tokenize)
    corpus_metrics(view)
    unsmoothed = [p if m else 0.0 for p, m in zip(view.corpus.precisions, view.corpus.matches)]
    precision_chart(unsmoothed, view.corpus.matches, view.corpus.totals, "bleu.corpus_chart",
                    t("bleu.corpus.chart_title", n=view.corpus.n))
    corpus_formula(view)
    st.caption(t("bleu.corpus.caption"))
    why_they_differ(view)
    st.subheader(t("bleu.samples.heading"))
    table = sample_table(view.samples, view.bleus, sample_columns())
    st.dataframe(table, hide_index=True, width="stretch", height=300)
    st.caption(t("bleu.samples.caption"))
    csv_download("bleu.download", lambda: table.to_csv(index=False), "bleu_samples.csv", "bleu.samples_csv")


# ------------------------------------------------------------------ one sentence by hand


def picked_sample(ckpt, tokenize: str) -> tuple[str, str, str, int]:
    """(candidate, reference, tokenize, number) of the sample the picker chooses (``?bleu_pick=``)."""
    view = scored(ckpt, tokenize)
    samples = view.samples
    param = IntParam("bleu_pick", default=default_pick(samples), lo=0, hi=len(samples) - 1)
    clamp_state(PICK_KEY, param.hi)
    index = st.selectbox(t("bleu.worked.pick"), range(len(samples)), key=bind(param, key=PICK_KEY),
                         format_func=lambda i: t("bleu.worked.pick_option", n=i + 1,
                                                 mark="✓" if samples[i].exact else "✗",
                                                 text=samples[i].output or "∅"), help=t("bleu.worked.pick_help"))
    sample = samples[index]
    return sample.output, sample.reference, tokenize, index + 1


def typed_pair(tokenize: str) -> tuple[str, str, str]:
    """(candidate, reference, tokenize) typed by the visitor (``?bleu_cand=``, ``?bleu_ref=``, ``?bleu_tok=``)."""
    reference = st.text_input(t("bleu.worked.reference_label"), key=bind(REFERENCE, key="bleu.reference"),
                              help=t("bleu.worked.reference_help"))
    show_box_cut("bleu.reference", reference, TYPED_CHARS)
    candidate = st.text_input(t("bleu.worked.candidate_label"), key=bind(CANDIDATE, key="bleu.candidate"),
                              help=t("bleu.worked.candidate_help"))
    show_box_cut("bleu.candidate", candidate, TYPED_CHARS)
    chosen = st.radio(t("bleu.worked.tokenize_label"), TOKENIZATIONS, horizontal=True,
                      key=bind(ChoiceParam("bleu_tok", tokenize, choices=TOKENIZATIONS), key="bleu.tokenize"),
                      format_func=lambda k: t(f"bleu.tokenize_name.{k}"), help=t("bleu.worked.tokenize_help"))
    return candidate, reference, chosen


def code_span(token: str) -> str:
    """``token`` as a Markdown code span (shown verbatim; one holding a backtick gets double ones)."""
    shown = display_token(token)[:40]
    return f"`` {shown} ``" if "`" in shown else f"`{shown}`"


def tokens_line(label_key: str, tokens, count_name: str) -> None:
    """One side's tokens, as BLEU counts them."""
    shown = " ".join(code_span(tok) for tok in tokens[:120])
    more = " …" if len(tokens) > 120 else ""
    st.markdown(t(label_key, count=len(tokens), name=count_name) + " " + (shown + more if tokens else "∅"))


def worked_formula(worked: WorkedSentence) -> None:
    """BP and BLEU with this sentence's numbers."""
    if worked.c >= worked.r:
        st.latex(rf"c = {worked.c} \ge r = {worked.r} \;\Rightarrow\; \mathrm{{BP}} = 1")
    elif worked.c == 0:
        st.latex(r"c = 0 \;\Rightarrow\; \mathrm{BP} = 0")
    else:
        st.latex(rf"c = {worked.c} < r = {worked.r} \;\Rightarrow\; \mathrm{{BP}} = e^{{1 - {worked.r}/{worked.c}}}"
                 rf" = {worked.bp:.4f}")
    if worked.missing:
        orders = ", ".join(f"p_{n}" for n in worked.missing)
        st.latex(rf"\begin{{gathered}}{orders} = 0 \;\Rightarrow\; \log 0 = -\infty \\ \Rightarrow\;"
                 rf" \mathrm{{BLEU}} = 0\end{{gathered}}")
        return
    logs = [rf"\log\tfrac{{{o.matches}}}{{{o.total}}}" for o in worked.orders]
    st.latex(log_mean_lines(logs, worked.log_mean) + rf"\\ \mathrm{{BLEU}} = {worked.bp:.4f}\cdot"
             rf" e^{{{worked.log_mean:.4f}}}\times 100 = {worked.bleu:.2f}\end{{gathered}}")


def library_check(worked: WorkedSentence, plain: LibrarySentence, smoothed: LibrarySentence) -> None:
    """sacrebleu's numbers for the same sentence: unsmoothed (must agree) and with its default smoothing."""
    same = math.isclose(plain.bleu, worked.bleu, abs_tol=1e-9) and math.isclose(plain.bp, worked.bp, abs_tol=1e-12)
    key = "bleu.worked.library_same" if same else "bleu.worked.library_differs"
    st.markdown(t(key, bleu=f"{plain.bleu:.2f}", tokenize=worked.tokenize))
    st.caption(t("bleu.worked.library_smoothed", bleu=f"{smoothed.bleu:.2f}"))


@fragment
def worked_view(ckpt, tokenize: str) -> None:
    """The pair (a sample or a typed one), and its n-grams counted by hand, order by order."""
    sampled = has_samples(ckpt)
    pair = st.radio(t("bleu.worked.pair_label"), PAIRS, horizontal=True, key=bind(PAIR, key="bleu.pair"),
                    format_func=lambda k: t(f"bleu.worked.pair.{k}"))
    if pair == "sample" and sampled:
        candidate, reference, tok, number = picked_sample(ckpt, tokenize)
        st.markdown(t("bleu.worked.sample_intro", number=number))
    else:
        if pair == "sample":
            st.info(t("bleu.no_task"), icon=":material/info:")
        candidate, reference, tok = typed_pair(tokenize)
    worked = computed(work_sentence, candidate, reference, tok)
    tokens_line("bleu.worked.reference_tokens", worked.reference, "r")
    tokens_line("bleu.worked.candidate_tokens", worked.candidate, "c")
    st.caption(t(f"bleu.tokenize_note.{tok}"))

    st.markdown(f"**{t('bleu.worked.step1')}**")
    order = st.segmented_control(t("bleu.worked.order_label"), list(range(1, MAX_ORDER + 1)), required=True,
                                 format_func=lambda n: t("bleu.order_name", n=n), key=bind(ORDER, key="bleu.order"))
    picked = worked.orders[order - 1]
    st.dataframe(ngram_table(worked, order, {c: t(f"bleu.worked.ngram_col.{c}") for c in NGRAM_COLUMNS}),
                 hide_index=True, width="stretch", height=min(320, 38 + 35 * max(1, len(picked.ngrams))))
    st.latex(rf"p_{order} = \frac{{\sum \mathrm{{Count_{{clip}}}}}}{{\sum \mathrm{{Count}}}}"
             rf" = \frac{{{picked.matches}}}{{{picked.total}}} = {picked.precision:.4f}")

    st.markdown(f"**{t('bleu.worked.step2')}**")
    st.dataframe(order_table(worked, {c: t(f"bleu.worked.order_col.{c}") for c in ORDER_COLUMNS}),
                 hide_index=True, width="stretch")
    precision_chart([o.precision * 100 for o in worked.orders], [o.matches for o in worked.orders],
                    [o.total for o in worked.orders], "bleu.worked_chart", t("bleu.worked.chart_title"))
    if worked.missing:
        orders = t("bleu.list_separator").join(t("bleu.order_name", n=n) for n in worked.missing)
        st.warning(t("bleu.worked.missing", orders=orders),
                   icon=":material/block:")

    st.markdown(f"**{t('bleu.worked.step3')}**")
    worked_formula(worked)
    library_check(worked, computed(library_sentence, candidate, reference, tok, "none"),
                  computed(library_sentence, candidate, reference, tok, "exp"))
    code_panel("bleu", ("bleu_count", "ngrams", "bleu_clip", "bleu_score"))


# ------------------------------------------------------------------ int8 weights


def megabytes(n: int) -> str:
    return f"{n / 1e6:.2f} MB"


def size_table(report: QuantReport) -> None:
    """The model's bytes before and after, from the tensors and as torch.save writes them, with the sum spelt out."""
    rows = (("tensors", report.float_bytes, report.int8_total_bytes),
            ("saved", report.float_saved_bytes, report.int8_saved_bytes))
    table = {t("bleu.int8.size.what"): [t(f"bleu.int8.size.{name}") for name, _, _ in rows],
             t("bleu.int8.size.before"): [megabytes(before) for _, before, _ in rows],
             t("bleu.int8.size.after"): [megabytes(after) for _, _, after in rows],
             t("bleu.int8.size.ratio"): [f"{after / before:.1%}" for _, before, after in rows]}
    st.dataframe(table, hide_index=True, width="stretch")
    st.caption(t("bleu.int8.size.sum", weights=f"{report.quantised_weights:,}", rows=f"{report.rows:,}",
                 kept=f"{report.kept_params:,}", total=f"{report.int8_total_bytes:,}", params=f"{report.params:,}",
                 float=f"{report.float_bytes:,}", saved_float=f"{report.float_saved_bytes:,}",
                 saved_int8=f"{report.int8_saved_bytes:,}"))


def weight_error(report: QuantReport) -> None:
    """How far the weights moved: the largest and the mean |w − ŵ|, and the largest in steps of its row's scale."""
    max_col, mean_col, step_col = st.columns(3)
    max_col.metric(t("bleu.int8.error.max"), f"{report.max_error:.2e}", help=t("bleu.int8.error.max_help"))
    mean_col.metric(t("bleu.int8.error.mean"), f"{report.mean_error:.2e}", help=t("bleu.int8.error.mean_help"))
    step_col.metric(t("bleu.int8.error.step"), f"{report.max_relative_error:.3f}", help=t("bleu.int8.error.step_help"))
    with st.expander(t("bleu.int8.matrices.heading")):
        table = matrix_table(report, {c: t(f"bleu.int8.matrices.{c}") for c in MATRIX_COLUMNS})
        st.dataframe(table, hide_index=True, width="stretch", height=300,
                     column_config={t(f"bleu.int8.matrices.{c}"): st.column_config.NumberColumn(format="%.2e")
                                    for c in ("max_error", "mean_error", "max_scale")})
        csv_download("bleu.download", lambda: table.to_csv(index=False), "int8_weights.csv", "bleu.int8_matrices_csv")


def arrow(before: str, after: str) -> str:
    return f"{before} → {after}"


def answers_before_after(ckpt, tokenize: str) -> tuple[tuple, tuple]:
    """N and the seed, the float32 and the int8 model's answers, their scores and the answers that changed."""
    n, seed = n_and_seed()
    before = decoded(ckpt, n, seed)
    after = decoded(ckpt, n, seed, decode_chunk_int8, "bleu.int8.progress")
    with st.spinner(t("bleu.scoring", n=2 * len(before))):
        scored_before = computed(score_samples, before, "none", seed, tokenize)
        scored_after = computed(score_samples, after, "none", seed, tokenize)
    old, new = scored_before.corpus, scored_after.corpus
    bleu_col, em_col, changed_col = st.columns(3)
    bleu_col.metric(t("bleu.int8.metric.bleu"), arrow(one_decimal(old.bleu), one_decimal(new.bleu)),
                    help=t("bleu.int8.metric.bleu_help"))
    em_col.metric(t("bleu.int8.metric.exact"), arrow(f"{old.exact_match:.1%}", f"{new.exact_match:.1%}"),
                  help=t("bleu.int8.metric.exact_help"))
    changed = changed_answers(scored_before.samples, scored_after.samples)
    changed_col.metric(t("bleu.int8.metric.changed"), t("bleu.int8.metric.changed_value", k=len(changed), n=old.n),
                       help=t("bleu.int8.metric.changed_help"))
    if changed:
        table = change_table(scored_before.samples, scored_after.samples,
                             {c: t(f"bleu.int8.changes.{c}") for c in CHANGE_COLUMNS})
        st.dataframe(table, hide_index=True, width="stretch", height=min(300, 38 + 35 * len(table)))
        st.caption(t("bleu.int8.changes.caption"))
        csv_download("bleu.download", lambda: table.to_csv(index=False), "int8_changed_answers.csv",
                     "bleu.int8_changes_csv")
    else:
        st.success(t("bleu.int8.changes.none", n=old.n), icon=":material/check_circle:")
    return scored_before.samples, scored_after.samples


def head_controls(ckpt, before, after) -> tuple[int, str, int, int]:
    """The sample (``?bleu_q_pick=``), the attention (``?bleu_q_kind=``), its layer and head
    (``?bleu_q_layer=``, ``?bleu_q_head=``, from 1)."""
    cfg = ckpt.model.config
    changed = set(changed_answers(before, after))
    pick_param = IntParam("bleu_q_pick", default=default_sample(before, after), lo=0, hi=len(before) - 1)
    clamp_state(QUANT_PICK_KEY, pick_param.hi)
    index = st.selectbox(t("bleu.int8.attention.pick"), range(len(before)), key=bind(pick_param, key=QUANT_PICK_KEY),
                         format_func=lambda i: t("bleu.int8.attention.pick_option", n=i + 1,
                                                 mark="≠" if i in changed else "", text=before[i].source),
                         help=t("bleu.int8.attention.pick_help"))
    kind = st.segmented_control(t("bleu.int8.attention.kind"), KINDS, required=True,
                                format_func=lambda k: t(f"bleu.int8.attention.kinds.{k}"),
                                key=bind(QUANT_KIND, key="bleu.q_kind"))
    layer_col, head_col = st.columns(2)
    clamp_state(QUANT_LAYER_KEY, cfg.n_layers)
    clamp_state(QUANT_HEAD_KEY, cfg.n_heads)
    layer = layer_col.segmented_control(
        t("bleu.int8.attention.layer"), list(range(1, cfg.n_layers + 1)), required=True,
        key=bind(IntParam("bleu_q_layer", 1, lo=1, hi=cfg.n_layers), key=QUANT_LAYER_KEY))
    head = head_col.segmented_control(
        t("bleu.int8.attention.head"), list(range(1, cfg.n_heads + 1)), required=True,
        key=bind(IntParam("bleu_q_head", 1, lo=1, hi=cfg.n_heads), key=QUANT_HEAD_KEY))
    return index, kind, layer, head


def attention_before_after(ckpt, before, after) -> None:
    """One head's map on one sample, float32 beside int8, the cell where they differ most outlined."""
    st.subheader(t("bleu.int8.attention.heading"))
    st.markdown(t("bleu.int8.attention.intro"))
    index, kind, layer, head = head_controls(ckpt, before, after)
    pair = computed(attention_pair, before[index].source, kind, layer - 1, head - 1, model=ckpt)
    where = pair.where
    labels = dict(x_title=t(f"bleu.int8.attention.keys.{kind}"), y_title=t(f"bleu.int8.attention.queries.{kind}"),
                  hover=t("bleu.int8.attention.hover", query="%{y}", key="%{x}", weight="%{z:.4f}"), mark=where)
    left, right = st.columns(2)
    for where_col, weights, name in ((left, pair.before, "float32"), (right, pair.after, "int8")):
        fig = attention_map(weights, pair.query_tokens, pair.key_tokens, title=t(
            "bleu.int8.attention.title", model=t(f"bleu.int8.attention.model.{name}"), layer=layer, head=head),
            **labels)
        plot(fig, key=f"bleu.int8_map_{name}", where=where_col, config={"displayModeBar": False})
    query, key = where
    st.markdown(t("bleu.int8.attention.difference", diff=f"{pair.max_difference:.2e}",
                  query=code_span(pair.query_tokens[query]) if pair.query_tokens else "∅",
                  key=code_span(pair.key_tokens[key]) if pair.key_tokens else "∅",
                  before=f"{pair.before[where]:.4f}" if pair.before.size else "∅",
                  after=f"{pair.after[where]:.4f}" if pair.after.size else "∅"))
    st.caption(t("bleu.int8.attention.answers", before=markdown_literal(pair.answer_before, limit=80) or "∅",
                 after=markdown_literal(pair.answer_after, limit=80) or "∅"))
    columns = {c: t(f"bleu.int8.attention.columns.{c}") for c in PAIR_COLUMNS}
    csv_download("bleu.download", lambda: pair.table(columns).to_csv(index=False), "int8_attention.csv",
                 "bleu.int8_attention_csv")


@fragment
def int8_view(ckpt, tokenize: str) -> None:
    """The model's weights rounded to int8: size and weight error; with a task, the answers and their scores
    before and after, and one head's attention side by side; what LLM.int8(), GPTQ and AWQ do instead."""
    st.subheader(t("bleu.int8.size.heading"))
    st.markdown(t("bleu.int8.how"))
    # two lines: one is wider than a phone
    st.latex(r"\begin{gathered}s_r = \frac{\max_j |w_{rj}|}{127},\quad \hat w_{rj} = q_{rj}\, s_r,"
             r"\\ q_{rj} = \mathrm{clamp}\big(\mathrm{round}(w_{rj}/s_r), -127, 127\big)\end{gathered}")
    with st.spinner(t("bleu.int8.quantising")):
        report = computed(quantisation_report, model=ckpt)
    size_table(report)
    weight_error(report)
    st.subheader(t("bleu.int8.answers_heading"))
    if has_samples(ckpt):
        before, after = answers_before_after(ckpt, tokenize)
        attention_before_after(ckpt, before, after)
    else:
        st.info(t("bleu.int8.no_task"), icon=":material/info:")
    st.subheader(t("bleu.int8.others.heading"))
    st.markdown(t("bleu.int8.others.body"))


# ------------------------------------------------------------------ the page


def bleu_page(ckpt) -> None:
    tokenize = bleu_tokenize(ckpt)
    st.info(t(f"bleu.tokenize_page.{tokenize}"), icon=":material/content_cut:")
    section = st.segmented_control(t("bleu.section_label"), SECTIONS, required=True,
                                   format_func=lambda s: t(f"bleu.section.{s}"), key=bind(SECTION, key="bleu.section"))
    st.caption(t(f"bleu.section_about.{section}"))
    if section == "worked":
        worked_view(ckpt, tokenize)
    elif section == "int8":
        int8_view(ckpt, tokenize)
    elif has_samples(ckpt):
        corpus_view(ckpt, tokenize)
    else:
        st.info(t("bleu.no_task"), icon=":material/info:")


FORMULAS = (r"\begin{gathered}\mathrm{BLEU} = \mathrm{BP}\cdot\exp\!\Big(\sum_{n=1}^{4} w_n \log p_n\Big),"
            r"\\ w_n = \tfrac14\end{gathered}",  # two lines: one is wider than a phone
            r"\begin{gathered}p_n = \frac{\sum_{g} \mathrm{Count_{clip}}(g)}{\sum_{g} \mathrm{Count}(g)},"
            r"\\ \mathrm{Count_{clip}} = \min(\mathrm{Count},\ \mathrm{Max\_Ref\_Count})\end{gathered}",
            r"\mathrm{BP} = \begin{cases} 1 & c > r \\ e^{\,1 - r/c} & c \le r \end{cases}")

with page("bleu", formulas=FORMULAS, formula_note=True, try_this="bottom") as checkpoint:
    if checkpoint is not None:
        bleu_page(checkpoint)
    exercise_panel("bleu")

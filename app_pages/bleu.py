"""Scoring translations: BLEU. The chosen model's answers to N fresh task samples scored with corpus
BLEU (sacrebleu) beside exact match, and one candidate worked n-gram by n-gram."""
import math
from collections.abc import Callable

import streamlit as st

from explain.bleu import (CHUNK, MAX_ORDER, NGRAM_COLUMNS, NOISES, ORDER_COLUMNS, SAMPLE_COLUMNS, TOKENIZATIONS,
                          LibrarySentence, ScoredSamples, WorkedSentence, bleu_tokenize, chunks_for, decode_chunk,
                          decode_turns, default_pick, has_samples, library_sentence, ngram_table, order_table,
                          sample_table, score_samples, telling_sample, work_sentence)
from figures.bleu import precision_bars
from figures.labels import display_token
from ui.cache import computed, is_cached, session_gone_check
from ui.code_panel import code_panel
from ui.i18n import t
from ui.page_errors import fragment
from ui.scaffold import page
from ui.url_state import ChoiceParam, IntParam, TextParam, bind, clamp_state, markdown_literal
from ui.widgets import csv_download, plot, show_box_cut
from ui.exercise_panel import exercise_panel

SECTIONS = ("corpus", "worked")
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


# ------------------------------------------------------------------ the samples


def sample_controls() -> tuple[int, int, str]:
    """N, the seed and what is done to the answers (``?bleu_n=``, ``?bleu_seed=``, ``?bleu_noise=``)."""
    n_col, seed_col = st.columns([3, 1])
    n = n_col.slider(t("bleu.n_samples"), 10, 200, step=10, key=bind(N_SAMPLES, key="bleu.n"),
                     help=t("bleu.n_samples_help"))
    seed = seed_col.number_input(t("bleu.seed"), min_value=0, max_value=9999, step=1, key=bind(SEED, key="bleu.seed"),
                                 help=t("bleu.seed_help"))
    noise = st.radio(t("bleu.noise_label"), NOISES, horizontal=True, key=bind(NOISE, key="bleu.noise"),
                     format_func=lambda k: t(f"bleu.noise.{k}"), help=t("bleu.noise_help"))
    return int(n), int(seed), noise


def decoded(ckpt, n: int, seed: int) -> tuple[tuple[str, str, str], ...]:
    """The first ``n`` samples of the seeded stream with the model's answers, decoded :data:`CHUNK` at a
    time through the cache. Chunks not cached yet are decoded in turn with other visitors
    (:func:`explain.bleu.decode_turns`): while others decode, a line says how many are ahead, and a
    progress bar follows the chunks once this visitor's turn has come. Views already seen draw neither."""
    count = chunks_for(n)
    if all(is_cached(decode_chunk, seed, chunk, model=ckpt) for chunk in range(count)):
        return samples_of(ckpt, n, seed, count)
    note = st.empty()
    with decode_turns().turn(on_wait=place_note(note)):
        note.empty()
        bar = st.progress(0.0, text=t("bleu.progress", done=0, n=n)) if count > 1 else None
        parts = samples_of(ckpt, n, seed, count, bar)
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


def samples_of(ckpt, n: int, seed: int, count: int, bar=None) -> tuple[tuple[str, str, str], ...]:
    """The ``count`` chunks through the cache, ``bar`` (if any) moved after each."""
    parts = []
    for chunk in range(count):
        parts.extend(computed(decode_chunk, seed, chunk, model=ckpt))
        if bar is not None:
            bar.progress((chunk + 1) / count, text=t("bleu.progress", done=min(n, (chunk + 1) * CHUNK), n=n))
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


# ------------------------------------------------------------------ the page


def bleu_page(ckpt) -> None:
    tokenize = bleu_tokenize(ckpt)
    st.info(t(f"bleu.tokenize_page.{tokenize}"), icon=":material/content_cut:")
    section = st.segmented_control(t("bleu.section_label"), SECTIONS, required=True,
                                   format_func=lambda s: t(f"bleu.section.{s}"), key=bind(SECTION, key="bleu.section"))
    st.caption(t(f"bleu.section_about.{section}"))
    if section == "worked":
        worked_view(ckpt, tokenize)
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

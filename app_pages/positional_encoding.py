"""Positional encoding: the sinusoidal table, its frequencies, what it says about distance, and why
a Transformer needs it at all (order blindness); RoPE as a second kind."""
import streamlit as st

from explain.positional import (BASES, ROPE_CIRCLE_POSITIONS, ROPE_MAX_POSITIONS, binary_digits, offset_similarity,
                                order_blindness, sine_columns,
                                pe_table, position_similarity, relative_starts, rope_circle, rope_layouts, rope_scores,
                                rope_starts, wavelength, worked_example)
from explain.code import line_with
from explain.tasks import sentence_example
from explain.text import prepare_sentence
from figures.labels import plain_number, readable_number
from figures.positional import (attention_maps, binary_figure, example_table_html, frequency_figure, offset_figure,
                                rope_circle_figure, rope_lines_figure, rope_matrix_figure, similarity_figure)
from ui.cache import computed
from ui.code_panel import code_panel
from ui.i18n import t
from ui.models import selected_model
from ui.page_css import formula_row
from ui.page_errors import fragment
from ui.scaffold import page
from ui.url_state import BoolParam, ChoiceParam, IntParam, TextParam, bind, clamp_state
from ui.widgets import char_limit, plot, show_box_cut, show_notices
from ui.exercise_panel import UseMine, exercise_panel

D_MODEL = IntParam("positional_encoding_d", default=64, lo=2, hi=256, step=2)  # sin/cos pairs: even sizes only
POSITIONS = IntParam("positional_encoding_len", default=50, lo=2, hi=128)
BASE = ChoiceParam("positional_encoding_base", default="10000", choices=BASES)
SENTENCE = TextParam("positional_encoding_text", default="the cat sat on the mat", max_len=200)
SENTENCE_KEY = "positional_encoding.sentence"
USE_PE = BoolParam("positional_encoding_on", default=False)
VERDICT_KEYS = {  # OrderBlindness.verdict -> positional.blind.<key>
    "same_sentence": "nothing_to_shuffle", "blind": "blind", "sees_order": "sees_order",
    "no_change": "no_change", "changed_without_pe": "changed_without_pe",
}
VERDICT_ICONS = {"blind": ":material/visibility_off:", "sees_order": ":material/visibility:"}
SHUFFLE = IntParam("positional_encoding_shuffle", default=0, lo=0, hi=999)


def table_settings() -> tuple[int, int, float]:
    """The three sliders of the table: (d_model, positions, base)."""
    c1, c2, c3 = st.columns(3)
    with c1:
        d_model = st.slider(t("positional_encoding.table.d_model"), D_MODEL.lo, D_MODEL.hi, step=2,
                            key=bind(D_MODEL, key="positional_encoding.d_model"),
                            help=t("positional_encoding.table.d_model_help"))
    with c2:
        positions = st.slider(t("positional_encoding.table.positions"), POSITIONS.lo, POSITIONS.hi,
                              key=bind(POSITIONS, key="positional_encoding.positions"))
    with c3:
        base = st.select_slider(t("positional_encoding.table.base"), BASE.choices,
                                key=bind(BASE, key="positional_encoding.base"),
                                format_func=lambda b: f"{int(b):,}", help=t("positional_encoding.table.base_help"))
    return d_model, positions, float(base)


def pair_status(pair: int, positions: int, d_model: int, base: float) -> str:
    """What pair ``pair`` is: its columns, its wavelength (as a formula and a number), its turns."""
    lam = wavelength(pair, d_model, base)
    # "{,}" keeps LaTeX from spacing the thousands separators like list commas.
    formula = (rf"$\lambda_{{{pair}}} = 2\pi \cdot {int(base):,}^{{2\cdot{pair}/{d_model}}} \approx {lam:,.2f}$"
               .replace(",", "{,}"))
    return t("positional_encoding.table.pair_status", i=pair, a=2 * pair, b=2 * pair + 1, formula=formula,
             wavelength=f"{lam:,.1f}", turns=f"{positions / lam:.2f}")


@fragment
def frequency(positions: int, d_model: int, base: float) -> None:
    """The pair slider, the pair's numbers and the table with that pair's waves beside it.
    A fragment: scrubbing through the pairs redraws only this."""
    pairs = d_model // 2
    pair_param = IntParam("positional_encoding_pair", default=0, lo=0, hi=pairs - 1)
    clamp_state("positional_encoding.pair", pair_param.hi)
    key = bind(pair_param, key="positional_encoding.pair")
    if pairs > 1:
        pair = st.slider(t("positional_encoding.table.pair"), 0, pairs - 1, key=key,
                         help=t("positional_encoding.table.pair_help"))
        st.markdown(pair_status(pair, positions, d_model, base))
    else:
        pair = st.session_state[key]
        st.caption(t("positional_encoding.table.one_pair") + "  \n" + pair_status(pair, positions, d_model, base))
    table = computed(pe_table, positions, d_model, base)
    table_labels = (t("positional_encoding.table.x_dim"), t("positional_encoding.table.y_pos"),
                    t("positional_encoding.table.hover"))
    wave_labels = (t("positional_encoding.table.sin_name", dim=2 * pair), t("positional_encoding.table.cos_name",
                                                                            dim=2 * pair + 1),
                   t("positional_encoding.table.y_pos"), t("positional_encoding.table.one_turn"))
    plot(frequency_figure(table, pair, wavelength(pair, d_model, base), table_labels, wave_labels),
                    key="positional_encoding.frequency_chart")


def binary(positions: int, d_model: int, base: float) -> None:
    """The positions' binary digits beside the table's sine columns, on one colour scale."""
    st.subheader(t("positional_encoding.binary.heading"))
    st.markdown(t("positional_encoding.binary.intro"))
    titles = (t("positional_encoding.binary.bits_title"), t("positional_encoding.binary.sines_title"))
    x_titles = (t("positional_encoding.binary.x_bits"), t("positional_encoding.binary.x_sines"))
    hovers = (t("positional_encoding.binary.hover_bit"), t("positional_encoding.binary.hover_sine"))
    plot(binary_figure(computed(binary_digits, positions), computed(sine_columns, positions, d_model, base),
                       titles=titles, x_titles=x_titles, y_title=t("positional_encoding.table.y_pos"), hovers=hovers),
         key="positional_encoding.binary_chart")
    st.caption(t("positional_encoding.binary.caption"))


def similarity(positions: int, d_model: int, base: float) -> None:
    """PE(p) · PE(q) as a matrix, and against the offset from three starts (the lines coincide)."""
    st.subheader(t("positional_encoding.similarity.heading"))
    st.markdown(t("positional_encoding.similarity.intro"))
    st.latex(r"PE(p)\cdot PE(p+k) = \sum_{i} \cos\!\left(\frac{k}{b^{2i/d_{model}}}\right)")
    starts = relative_starts(positions)
    left, right = st.columns(2, gap="medium")
    with left:
        values = computed(position_similarity, positions, d_model, base)
        labels = (t("positional_encoding.similarity.x"), t("positional_encoding.similarity.y"),
                  t("positional_encoding.similarity.hover"))
        plot(similarity_figure(values, d_model / 2, labels), key="positional_encoding.similarity_chart")
    with right:
        values = computed(offset_similarity, d_model, base, positions, starts)
        names = [t("positional_encoding.similarity.line_name", p=p) for p in starts]
        labels = (t("positional_encoding.similarity.k"), t("positional_encoding.similarity.dot"))
        plot(offset_figure(values, names, labels), key="positional_encoding.offset_chart")
    st.caption(t("positional_encoding.similarity.caption", half=d_model // 2))


def worked_example_table() -> None:
    """Seed 002's worked example, computed with the model's code."""
    st.subheader(t("positional_encoding.example.heading"))
    st.markdown(t("positional_encoding.example.intro"))
    headers = [t(f"positional_encoding.example.col_{c}") for c in ("dim", "i", "fn", "angle", "value")]
    st.html(example_table_html(computed(worked_example).set_axis(headers, axis=1)))
    st.caption(t("positional_encoding.example.caption"))


def reshuffle() -> None:
    """The shuffle button's callback: draw the next word order (it runs before the page does)."""
    key = "positional_encoding.shuffle"
    st.session_state[key] = (st.session_state[key] + 1) % (SHUFFLE.hi + 1)


@fragment
def blind_sentence(ckpt) -> UseMine | None:
    """The order-blindness view's sentence (the one "use mine" runs), as that view reads it; None when empty."""
    raw = st.session_state.get(SENTENCE_KEY) or sentence_example(ckpt, SENTENCE.default)
    prepared = prepare_sentence(raw, ckpt.tokenizer, max_chars=char_limit(ckpt))
    return UseMine.sentence(ckpt, prepared.sentences[0]) if prepared.sentences else None


def order_blindness_view(ckpt) -> None:
    """A sentence and its shuffle through the encoder, positional encoding on or off: the three
    attention maps, the largest differences and what they mean. A fragment: the switch, the
    shuffle and the sentence redraw only this."""
    c1, c2, c3 = st.columns([4, 2, 2], vertical_alignment="bottom")
    with c1:
        example = TextParam(SENTENCE.name, sentence_example(ckpt, SENTENCE.default), max_len=SENTENCE.max_len)
        raw = st.text_input(t("positional_encoding.blind.sentence"),
                            key=bind(example, key=SENTENCE_KEY, follows=SENTENCE_KEY))
    with c2:
        use_pe = st.toggle(t("positional_encoding.blind.use_pe"), key=bind(USE_PE, key="positional_encoding.use_pe"))
    with c3:
        seed = st.session_state[bind(SHUFFLE,
                                     key="positional_encoding.shuffle")]  # no widget of its own: the button moves it
        st.button(t("positional_encoding.blind.shuffle"), icon=":material/shuffle:", on_click=reshuffle,
                  key="positional_encoding.shuffle_button")
    show_box_cut(SENTENCE_KEY, raw, SENTENCE.max_len)
    prepared = prepare_sentence(raw, ckpt.tokenizer, max_chars=char_limit(ckpt))
    show_notices(prepared)
    if not prepared.sentences:
        return
    result = computed(order_blindness, prepared.sentences[0], seed, use_pe, model=ckpt)
    maps = ((result.original, result.tokens, t("positional_encoding.blind.title_original")),
            (result.shuffled, result.shuffled_tokens, t("positional_encoding.blind.title_shuffled")),
            (result.restored, result.tokens, t("positional_encoding.blind.title_restored")))
    figures = attention_maps(maps, (t("positional_encoding.blind.x"), t("positional_encoding.blind.y")))
    for column, figure, name in zip(st.columns(3, gap="small"), figures, ("original", "shuffled", "restored")):
        with column:
            plot(figure, key=f"positional_encoding.blind_{name}")
    m1, m2 = st.columns(2)
    m1.metric(t("positional_encoding.blind.attention_diff"), plain_number(result.max_attention_diff))
    m2.metric(t("positional_encoding.blind.output_diff"), plain_number(result.max_output_diff))
    verdict = result.verdict  # from the numbers above, so the sentence never contradicts them
    if verdict == "blind":
        st.success(t("positional_encoding.blind.blind"), icon=":material/visibility_off:")
    else:
        st.info(t(f"positional_encoding.blind.{VERDICT_KEYS[verdict]}"), icon=VERDICT_ICONS.get(verdict,
                                                                                                ":material/info:"))


def rope(positions: int, d_model: int, base: float) -> None:
    """RoPE: pair 0 of a query turning with the position, the score matrix, scores against offset."""
    st.subheader(t("positional_encoding.rope.heading"))
    st.markdown(t("positional_encoding.rope.intro"))
    st.latex(formula_row(r"\begin{pmatrix} q'_{2i} \\ q'_{2i+1} \end{pmatrix} =",
                         r"\begin{pmatrix} \cos p\theta_i & -\sin p\theta_i \\ \sin p\theta_i & \cos p\theta_i \end{pmatrix}"
                         r"\begin{pmatrix} q_{2i} \\ q_{2i+1} \end{pmatrix},",
                         r"\theta_i = b^{-2i/d_k},", r"\langle q'_p, k'_s\rangle = g(q, k, s-p)", after="="))
    st.caption(t("positional_encoding.rope.intro_dk"))
    shown = min(positions, ROPE_MAX_POSITIONS)
    starts = rope_starts(positions)
    # Pair 0 turns one radian per position: the clearest rotation, whatever pair the slider shows.
    points = computed(rope_circle, d_model, base, 0, min(shown, ROPE_CIRCLE_POSITIONS))
    scores, additive = computed(rope_scores, d_model, base, shown)
    circle, matrix, lines = st.columns(3, gap="small")
    with circle:
        plot(rope_circle_figure(points, t("positional_encoding.rope.circle_title", a=0, b=1)),
                        key="positional_encoding.rope_circle")
    with matrix:
        labels = (t("positional_encoding.rope.key_pos"), t("positional_encoding.rope.query_pos"),
                  t("positional_encoding.rope.hover"))
        plot(rope_matrix_figure(scores, t("positional_encoding.rope.matrix_title"), labels),
                        key="positional_encoding.rope_matrix")
    with lines:
        plot(rope_lines_figure(scores, additive, starts,
                                          [t("positional_encoding.rope.rope_name", p=p) for p in starts],
                                          [t("positional_encoding.rope.additive_name", p=p) for p in starts],
                                          t("positional_encoding.rope.lines_title"),
                                          (t("positional_encoding.similarity.k"), t("positional_encoding.rope.score"))),
                        key="positional_encoding.rope_lines")
    st.caption(t("positional_encoding.rope.caption", positions=shown))
    layouts = computed(rope_layouts, d_model, base, shown)
    code_panel("positional_encoding", ("rope", "rope_half"), name="rope_code",
               notes=(t("code.panel.rope_layouts", positions=shown, differ=readable_number(layouts.layouts_differ),
                        inter=f"{layouts.interleaved_spread:.1g}", half=f"{layouts.half_spread:.1g}"),))


FORMULAS = (formula_row(r"PE_{(p,\,2i)} = \sin\!\left(\frac{p}{b^{2i/d_{model}}}\right),",
                        r"PE_{(p,\,2i+1)} = \cos\!\left(\frac{p}{b^{2i/d_{model}}}\right)"),)

with page("positional_encoding", formulas=FORMULAS, formula_note=True, try_this="top", model=False):
    st.subheader(t("positional_encoding.table.heading"))
    d_model, positions, base = table_settings()
    frequency(positions, d_model, base)
    st.caption(t("positional_encoding.table.caption"))
    buffer = computed(line_with, "model.transformer.Transformer.__init__", "register_buffer")
    code_panel("positional_encoding", ("positional_encoding", "embed"),
               notes=(t("code.panel.buffer", file=buffer.file, line=buffer.number, text=buffer.text),))

    binary(positions, d_model, base)
    similarity(positions, d_model, base)
    worked_example_table()

    st.subheader(t("positional_encoding.blind.heading"))
    st.markdown(t("positional_encoding.blind.intro"))
    ckpt = selected_model()
    if ckpt is not None:
        order_blindness_view(ckpt)

    rope(positions, d_model, base)
    exercise_panel("positional_encoding", use_mine=None if ckpt is None else blind_sentence(ckpt))

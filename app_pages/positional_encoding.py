"""Positional encoding: the sinusoidal table, its frequencies, what it says about distance, and why
a Transformer needs it at all (order blindness); RoPE as a second kind."""
import streamlit as st

from ui import positional_view as pv
from ui import tokens_view as tv
from ui.figure_cache import cached_figure
from ui.figure_grid import combine
from ui.frozen_figure import FrozenFigure
from ui.i18n import t
from ui.models import selected_model
from ui.nav import tour_links
from ui.prepared_html import show_html
from explain.text import prepare_sentence
from ui.url_state import BoolParam, ChoiceParam, IntParam, TextParam, bind, clamp_state

D_MODEL = IntParam("pe_d", default=64, lo=2, hi=256, step=2)  # sin/cos pairs: even sizes only
POSITIONS = IntParam("pe_len", default=50, lo=2, hi=128)
BASE = ChoiceParam("pe_base", default="10000", choices=pv.BASES)
SENTENCE = TextParam("pe_text", default="the cat sat on the mat", max_len=200)
USE_PE = BoolParam("pe_on", default=False)
SHUFFLE = IntParam("pe_shuffle", default=0, lo=0, hi=999)


def reshuffle() -> None:
    """The shuffle button's callback: draw the next word order (it runs before the page does)."""
    st.session_state["positional.shuffle"] = (st.session_state.get("positional.shuffle", 0) + 1) % (SHUFFLE.hi + 1)


def frequency_figure(positions: int, d_model: int, base: float, pair: int, table_labels: tuple, wave_labels: tuple):
    """The table with pair ``pair`` framed, and that pair's sine and cosine beside it: one chart."""
    return combine([[pv.table_figure(positions, d_model, base, pair, table_labels),
                     pv.waves_figure(positions, d_model, base, pair, wave_labels)]], widths=[[5, 4]],
                   legend=dict(orientation="h", x=1, xanchor="right", y=1, yanchor="bottom"))


@st.fragment
def frequency(positions: int, d_model: int, base: float, drawn: dict[int, tuple[str, str, FrozenFigure]]) -> None:
    """The pair slider and what it shows. A fragment, drawing as few elements as it can (each costs
    the server a message), so scrubbing through the pairs reruns only this. ``drawn`` is a new dict on
    every full run (the table's size, base and language hold until then), kept through the fragment's
    own reruns: each pair's words and figure, made the first time it is shown, so scrubbing back
    costs no translating or figure lookup."""
    pairs = d_model // 2
    PAIR = IntParam("pe_pair", default=0, lo=0, hi=pairs - 1)
    clamp_state("positional.pair", PAIR.hi)
    pair = st.session_state[bind(PAIR, key="positional.pair")]  # bound before the slider: its label needs it
    if pair not in drawn:
        drawn[pair] = pair_view(positions, d_model, base, pair)
    status, help_text, figure = drawn[pair]
    if pairs > 1:
        # The pair's numbers are the slider's label (a slider is known by its key and range, so a new
        # label keeps it): one element fewer to send on every step of the scrub.
        st.slider(status, 0, pairs - 1, key="positional.pair", format="%d", help=help_text)
    else:
        st.caption(t("positional.table.one_pair") + "  \n" + status)
    st.plotly_chart(figure, key="positional.frequency_chart")


def pair_view(positions: int, d_model: int, base: float, pair: int) -> tuple[str, str, FrozenFigure]:
    """``(status, slider help, figure)`` of dimension pair ``pair``, in this run's language."""
    lam = pv.wavelength(pair, d_model, base)
    a, b = 2 * pair, 2 * pair + 1
    # "{,}" keeps LaTeX from spacing the thousands separators like list commas.
    formula = (rf"$\lambda_{{{pair}}} = 2\pi \cdot {int(base):,}^{{2\cdot{pair}/{d_model}}} \approx {lam:,.2f}$"
               .replace(",", "{,}"))
    status = t("positional.table.pair_status", i=pair, a=a, b=b, formula=formula, wavelength=f"{lam:,.1f}",
               turns=f"{positions / lam:.2f}")
    table_labels = (t("positional.table.x_dim"), t("positional.table.y_pos"), t("positional.table.hover"))
    wave_labels = (t("positional.table.sin_name", dim=a), t("positional.table.cos_name", dim=b),
                   t("positional.table.y_pos"), t("positional.table.one_turn"))
    return (status, t("positional.table.pair") + " — " + t("positional.table.pair_help"),
            cached_figure(frequency_figure, positions, d_model, base, pair, table_labels, wave_labels))


st.title(t("positional.title"))
st.markdown(t("positional.intro"))
st.latex(r"PE_{(p,\,2i)} = \sin\!\left(\frac{p}{b^{2i/d_{model}}}\right),\qquad "
         r"PE_{(p,\,2i+1)} = \cos\!\left(\frac{p}{b^{2i/d_{model}}}\right),\qquad b = 10000")
with st.container(border=True):
    st.markdown(t("positional.try_this"))

# ------------------------------------------------------------------ the table and one frequency
st.subheader(t("positional.table.heading"))
c1, c2, c3 = st.columns(3)
with c1:
    d_model = st.slider(t("positional.table.d_model"), D_MODEL.lo, D_MODEL.hi, step=2,
                        key=bind(D_MODEL, key="positional.d_model"), help=t("positional.table.d_model_help"))
with c2:
    positions = st.slider(t("positional.table.positions"), POSITIONS.lo, POSITIONS.hi,
                          key=bind(POSITIONS, key="positional.positions"))
with c3:
    base_text = st.select_slider(t("positional.table.base"), BASE.choices, key=bind(BASE, key="positional.base"),
                                 format_func=lambda b: f"{int(b):,}", help=t("positional.table.base_help"))
base = float(base_text)

frequency(positions, d_model, base, {})
st.caption(t("positional.table.caption"))

# ------------------------------------------------------------------ similarity of positions
st.subheader(t("positional.similarity.heading"))
st.markdown(t("positional.similarity.intro"))
st.latex(r"PE(p)\cdot PE(p+k) = \sum_{i} \cos\!\left(\frac{k}{b^{2i/d_{model}}}\right)")
left, right = st.columns(2, gap="medium")
with left:
    similarity_axis = (t("positional.similarity.x"), t("positional.similarity.y"), t("positional.similarity.hover"))
    st.plotly_chart(pv.similarity_figure(positions, d_model, base, similarity_axis), key="positional.similarity_chart")
with right:
    st.plotly_chart(
        pv.offset_figure(positions, d_model, base,
                         tuple(t("positional.similarity.line_name", p=p) for p in pv.relative_starts(positions)),
                         (t("positional.similarity.k"), t("positional.similarity.dot"))),
        key="positional.offset_chart",
    )
st.caption(t("positional.similarity.caption", half=d_model // 2))

# ------------------------------------------------------------------ seed 002's worked example
st.subheader(t("positional.example.heading"))
st.markdown(t("positional.example.intro"))
show_html(pv.worked_example_html(tuple(t(f"positional.example.col_{c}") for c in ("dim", "i", "fn", "angle", "value"))))
st.caption(t("positional.example.caption"))

# ------------------------------------------------------------------ why: order blindness
st.subheader(t("positional.blind.heading"))
st.markdown(t("positional.blind.intro"))
ckpt = selected_model()
if ckpt is not None:
    c1, c2, c3 = st.columns([4, 2, 2], vertical_alignment="bottom")
    with c1:
        raw = st.text_input(t("positional.blind.sentence"), key=bind(SENTENCE, key="positional.sentence"),
                            max_chars=SENTENCE.max_len)
    with c2:
        use_pe = st.toggle(t("positional.blind.use_pe"), key=bind(USE_PE, key="positional.use_pe"))
    with c3:
        bind(SHUFFLE, key="positional.shuffle")  # no widget of its own: the button below moves it
        st.button(t("positional.blind.shuffle"), icon=":material/shuffle:", on_click=reshuffle,
                  key="positional.shuffle_button")
    prepared = prepare_sentence(raw, ckpt.tokenizer, max_chars=tv.char_limit(ckpt))
    tv.show_notices(prepared)
    if prepared.sentences:
        sentence = prepared.sentences[0]
        seed = st.session_state["positional.shuffle"]
        result = pv.cached_order_blindness(ckpt, sentence, seed, use_pe)
        figures = pv.blindness_figures(
            ckpt, sentence, seed, use_pe,
            (t("positional.blind.title_original"), t("positional.blind.title_shuffled"),
             t("positional.blind.title_restored"), t("positional.blind.x"), t("positional.blind.y")),
        )
        cols = st.columns(3, gap="small")
        for col, fig, key in zip(cols, figures, ("original", "shuffled", "restored")):
            with col:
                st.plotly_chart(fig, key=f"positional.blind_{key}")
        m1, m2 = st.columns(2)
        m1.metric(t("positional.blind.attention_diff"), f"{result.max_attention_diff:.2e}")
        m2.metric(t("positional.blind.output_diff"), f"{result.max_output_diff:.2e}")
        if len(set(result.tokens)) < 2:
            st.info(t("positional.blind.nothing_to_shuffle"), icon=":material/info:")
        elif not use_pe:
            st.success(t("positional.blind.blind"), icon=":material/visibility_off:")
        else:
            st.info(t("positional.blind.sees_order"), icon=":material/visibility:")

# ------------------------------------------------------------------ RoPE
st.subheader(t("positional.rope.heading"))
st.markdown(t("positional.rope.intro"))
st.latex(r"\begin{pmatrix} q'_{2i} \\ q'_{2i+1} \end{pmatrix} = "
         r"\begin{pmatrix} \cos p\theta_i & -\sin p\theta_i \\ \sin p\theta_i & \cos p\theta_i \end{pmatrix}"
         r"\begin{pmatrix} q_{2i} \\ q_{2i+1} \end{pmatrix},\quad \theta_i = b^{-2i/d_{model}}"
         r",\qquad \langle q'_p, k'_s\rangle = g(q, k, s-p)")
# The circle turns pair 0 (one radian per position: the clearest rotation); the pair slider above
# lives in a fragment, and a picture out here would not follow it.
circle, matrix, lines = pv.rope_figures(
    d_model, base, positions, 0,
    (t("positional.rope.circle_title", a=0, b=1), t("positional.rope.matrix_title"),
     t("positional.rope.lines_title"), t("positional.rope.query_pos"), t("positional.rope.key_pos"),
     t("positional.rope.hover"), t("positional.similarity.k"), t("positional.rope.score")),
    tuple(t("positional.rope.rope_name", p=p) for p in pv.rope_starts(positions)),
    tuple(t("positional.rope.additive_name", p=p) for p in pv.rope_starts(positions)),
)
cols = st.columns(3, gap="small")
for col, fig, key in zip(cols, (circle, matrix, lines), ("circle", "matrix", "lines")):
    with col:
        st.plotly_chart(fig, key=f"positional.rope_{key}")
st.caption(t("positional.rope.caption", positions=min(positions, pv.ROPE_MAX_POSITIONS)))

tour_links("positional")

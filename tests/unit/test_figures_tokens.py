"""figures.tokens: escaped tables that colour cells by kind, and the embedding heatmaps."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from tests.app.apptest_helpers import values

from explain.tokens import SENTENCE_ROWS, sentence_frame, side_frames
from explain.tokens import sentence_batch
from figures.labels import VISIBLE_SPACE
from figures.style import DIVERGING
from figures.tokens import LABEL_PX, PLOT_MARGIN_PX, ROW_LABELS_MAX, kind_table_html, matrix_figure, stage_figure
from model.tasks import DEFAULT_ALPHABET
from model.tokenizer import CharTokenizer


@pytest.fixture(scope="module")
def tokenizer() -> CharTokenizer:
    return CharTokenizer(DEFAULT_ALPHABET)


def test_table_html_escapes_and_marks_cells(tokenizer):
    batch = sentence_batch(["<b>x</b>", "ab"], tokenizer, "copy")
    tokens, _, kinds = side_frames(batch.source, ["<i>row</i>", "row 2"])
    html = kind_table_html(tokens, kinds, "t1")
    assert "<b>x" not in html and "<i>row" not in html
    assert "&lt;unk&gt;" in html and "&lt;pad&gt;" in html and "&lt;i&gt;row&lt;/i&gt;" in html
    assert html.count(" pad\"") == (kinds == "pad").sum()
    assert html.count(" unk\"") == (kinds == "unk").sum()
    assert "#T_t1 td.pad" in html  # the kinds' colours, scoped to this table


def test_table_cells_are_visible(tokenizer):
    batch = sentence_batch(["a b", "ab"], tokenizer, "copy")
    tokens, ids, kinds = side_frames(batch.source, ["one", "two"])
    assert f">{VISIBLE_SPACE}<" in kind_table_html(tokens, kinds, "t2")
    ids_html = kind_table_html(ids, kinds, "t3")
    assert ">0<" in ids_html and ids_html.count(" pad\"") == (kinds == "pad").sum()
    control = pd.DataFrame([["\x01", "&"]], index=["<r>"], columns=[0, 1], dtype=object)
    html = kind_table_html(control, np.array([["char", "unk"]], dtype=object), "t4")
    assert ">\\x01<" in html and ">&amp;<" in html and "&lt;r&gt;" in html and "\x01" not in html


def test_sentence_table_marks_specials(tokenizer):
    batch = sentence_batch(["ab"], tokenizer, "copy")
    frame, kinds = sentence_frame(batch, 0, {k: k for k in SENTENCE_ROWS})
    html = kind_table_html(frame, kinds, "s")
    assert html.count(" special\"") == 4  # <bos> and its id, <eos> and its id
    assert "&lt;bos&gt;" in html and "&lt;eos&gt;" in html


@pytest.mark.parametrize("columns, rows", [(2, 2), (1, 4)])
def test_the_four_steps_are_one_figure_on_one_colour_scale(columns, rows):
    rng = np.random.default_rng(0)
    stages = [rng.standard_normal((3, 8)) * scale for scale in (0.1, 1.0, 0.5, 2.0)]
    fig = stage_figure(["h", "i", "<pad>"], stages, ("a", "b<c", "c", "d"), ("n1", "n2", "n3", "n4"),
                       ("x", "y", "%{z}"), columns=columns).to_dict()
    traces, layout = fig["data"], fig["layout"]
    assert len(traces) == 4 and {tr["coloraxis"] for tr in traces} == {"coloraxis"}
    assert layout["coloraxis"]["cmax"] == pytest.approx(max(np.abs(s).max() for s in stages), rel=1e-6)
    assert layout["coloraxis"]["cmin"] == -layout["coloraxis"]["cmax"]
    assert layout["coloraxis"]["colorscale"] == go.Figure(go.Heatmap(colorscale=DIVERGING)).to_dict()["data"][0]["colorscale"]
    for n, trace in enumerate(traces):  # each step's values, as float32, in its own subplot
        np.testing.assert_allclose(values(trace["z"]), stages[n].astype(np.float32))
        axis = "yaxis" if n == 0 else f"yaxis{n + 1}"
        assert layout[axis]["ticktext"] == ["h", "i", "&lt;pad&gt;"] and layout[axis]["autorange"] == "reversed"
    # laid out ``columns`` across: the subplots' domains give the grid
    xs = {tuple(layout["xaxis" if n == 0 else f"xaxis{n + 1}"]["domain"]) for n in range(4)}
    ys = {tuple(layout["yaxis" if n == 0 else f"yaxis{n + 1}"]["domain"]) for n in range(4)}
    assert (len(xs), len(ys)) == (columns, rows)
    x_titled = [n for n in range(4) if layout["xaxis" if n == 0 else f"xaxis{n + 1}"].get("title", {}).get("text")]
    y_titled = [n for n in range(4) if layout["yaxis" if n == 0 else f"yaxis{n + 1}"].get("title", {}).get("text")]
    assert x_titled == list(range(4 - columns, 4)) and y_titled == [0]  # no title between two rows
    titles = [note["text"] for note in layout["annotations"]]
    assert titles[1].startswith("b&lt;c<br>") and "n2" in titles[1]  # escaped, the note on a line of its own
    assert "customdata" not in traces[0]  # the hover names positions; the axes name the tokens


def test_matrix_figure_marks_the_rows_used():
    matrix = np.arange(20, dtype=float).reshape(5, 4) - 10
    fig = matrix_figure(matrix, ["<pad>", "a", "b", "<b>", "d"], (1, 3, 1), ("dim", "token", "%{z}")).to_dict()
    ticks = fig["layout"]["yaxis"]["ticktext"]
    assert ticks == ["&lt;pad&gt;", "▶ <b>a</b>", "b", "▶ <b>&lt;b&gt;</b>", "d"]
    frames = [(s["y0"], s["y1"]) for s in fig["layout"]["shapes"]]
    assert frames == [(0.5, 1.5), (2.5, 3.5)]
    assert (fig["data"][0]["zmin"], fig["data"][0]["zmax"]) == (-10.0, 10.0)


def test_a_large_vocabulary_labels_only_the_rows_used():
    vocab = [f"w{i}" for i in range(ROW_LABELS_MAX + 1)]
    matrix = np.zeros((len(vocab), 4))
    fig = matrix_figure(matrix, vocab, (9, 2, 9), ("dim", "token", "%{z}")).to_dict()
    assert fig["layout"]["yaxis"]["tickvals"] == [2, 9]
    assert fig["layout"]["yaxis"]["ticktext"] == ["▶ <b>w2</b>", "▶ <b>w9</b>"]
    assert fig["data"][0]["z"] is not None and len(fig["layout"]["shapes"]) == 2  # every row is still drawn
    small = matrix_figure(matrix[:ROW_LABELS_MAX], vocab[:ROW_LABELS_MAX], (2,), ("dim", "token", "%{z}")).to_dict()
    assert len(small["layout"]["yaxis"]["ticktext"]) == ROW_LABELS_MAX


def test_marked_rows_too_close_for_a_label_each_share_one():
    vocab = [f"w{i}" for i in range(255)]  # zh-en's characters: 255 rows in 900 px, ~3.3 px a row
    fig = matrix_figure(np.zeros((255, 4)), vocab, (40, 41, 100, 103, 200), ("dim", "token", "%{z}"))
    axis = fig.layout.yaxis
    assert list(axis.ticktext) == ["▶ <b>w40 · w41</b>", "▶ <b>w100 · w103</b>", "▶ <b>w200</b>"]
    assert list(axis.tickvals) == [40.5, 101.5, 200]
    plot_px = fig.layout.height - PLOT_MARGIN_PX
    gaps = np.diff(axis.tickvals) * plot_px / len(vocab)
    assert (gaps >= LABEL_PX).all()  # no two labels closer than one label's height: they cannot overlap
    assert len(fig.layout.shapes) == 5  # every used row is still framed

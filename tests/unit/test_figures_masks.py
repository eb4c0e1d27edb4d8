"""figures.masks: an attention map with its hidden and leaking cells, and one row in three bar charts."""
from __future__ import annotations

import numpy as np

from figures import masks as fm
from figures.heatmap import region_outline
from figures.style import MASKED_COLOR, MASKED_EDGE

TOKENS = ("h", "i", "<pad>", "<pad>")
REAL = np.array([True, True, False, False])


def uniform(allowed: np.ndarray) -> np.ndarray:
    """Weights spread evenly over the allowed keys of each row."""
    return allowed / allowed.sum(axis=1, keepdims=True)


def test_attention_map_marks_hidden_and_leaking_cells():
    padding = np.broadcast_to(REAL, (4, 4))
    hideable = ~padding
    everything = np.ones((4, 4), bool)
    on = fm.attention_map(uniform(padding), padding, hideable & padding, TOKENS, title="t", x_title="x",
                          y_title="y")
    off = fm.attention_map(uniform(everything), everything, hideable & everything, TOKENS, title="t", x_title="x",
                           y_title="y")
    # The hidden cells: one outline around their region and one flat grey layer over them.
    assert len(on.data) == 3 and on.data[1].mode == "lines" and on.data[2].type == "heatmap"
    assert on.data[1].line.color == MASKED_EDGE
    assert [col for _, col in on.data[1].meta] == [2, 3, 2, 3, 2, 3, 2, 3]
    assert np.array_equal(np.isnan(np.asarray(on.data[2].z, float)), padding)  # grey exactly where hidden
    # The leaks: an outline only, so the weights inside it keep their colour.
    assert len(off.data) == 2 and off.data[1].mode == "lines"
    assert off.data[1].line.color == fm.LEAK_COLOR
    assert [tuple(cell) for cell in off.data[1].meta] == [(r, c) for r in range(4) for c in (2, 3)]
    assert list(on.data[0].x) == [0, 1, 2, 3]
    assert list(off.layout.xaxis.ticktext) == ["h", "i", "&lt;pad&gt;", "&lt;pad&gt;"]
    assert on.layout.title.text == "t" and on.layout.height == fm.map_height(4)
    assert not on.layout.shapes and not on.layout.annotations


def test_attention_map_without_a_mask_or_a_leak_is_one_trace():
    everything = np.ones((3, 3), bool)
    fig = fm.attention_map(uniform(everything), everything, np.zeros((3, 3), bool), ("a", "b", "c"), title="t",
                           x_title="x", y_title="y")
    assert [trace.type for trace in fig.data] == ["heatmap"]


def test_map_height_follows_the_sentence_within_limits():
    assert fm.map_height(1) == 280 and fm.map_height(10) == 360 and fm.map_height(100) == 560


def test_row_bars_show_hidden_keys_in_three_steps():
    raw = np.array([1.0, -0.5, 2.0, 0.3])
    allowed = np.array([True, True, False, False])
    weights = np.array([0.8, 0.2, 0.0, 0.0])
    raw_fig, masked_fig, weights_fig = fm.row_bars(raw, weights, allowed, TOKENS, titles=("1", "2", "3"),
                                                   x_title="key", minus_inf="−∞")
    assert [f.layout.title.text for f in (raw_fig, masked_fig, weights_fig)] == ["1", "2", "3"]
    assert list(raw_fig.data[0].marker.color[2:]) == [fm.HIDDEN_BAR_COLOR] * 2  # grey: hidden by the mask
    np.testing.assert_array_equal(raw_fig.data[0].y, raw)
    assert np.isnan(masked_fig.data[0].y[2:]).all()  # −∞: no bar at all
    assert list(masked_fig.data[1].x) == [2, 3] and list(masked_fig.data[1].text) == ["−∞", "−∞"]
    assert masked_fig.data[1].marker.line.color == MASKED_COLOR
    assert list(weights_fig.data[1].x) == [2, 3] and weights_fig.data[1].text is None
    assert tuple(weights_fig.layout.yaxis.range) == (0, 1.0)
    assert list(raw_fig.layout.xaxis.ticktext) == ["h", "i", "&lt;pad&gt;", "&lt;pad&gt;"]
    assert raw_fig.data[0].hovertemplate[2] == "&lt;pad&gt;: %{y:.3f}<extra></extra>"


def test_row_bars_label_minus_infinity_only_when_few_keys_are_hidden():
    n = fm.FEW_LABELS + 1
    allowed = np.arange(n + 1) == 0
    _, masked_fig, _ = fm.row_bars(np.zeros(n + 1), allowed.astype(float), allowed, ("x",) * (n + 1),
                                   titles=("1", "2", "3"), x_title="key", minus_inf="−∞")
    assert masked_fig.data[1].mode == "markers" and masked_fig.data[1].text is None


def test_row_bars_without_a_mask_have_no_markers():
    figures = fm.row_bars(np.zeros(3), np.full(3, 1 / 3), np.ones(3, bool), ("a", "b", "c"), titles=("1", "2", "3"),
                          x_title="key", minus_inf="−∞")
    assert [len(f.data) for f in figures] == [1, 1, 1]


def _segments(xs, ys) -> set[tuple[float, float, float, float]]:
    """The outline's straight runs as (x0, y0, x1, y1), from the None-separated point lists."""
    points = [(x, y) for x, y in zip(xs, ys)]
    return {(*points[i], *points[i + 1]) for i in range(0, len(points), 3)}


def test_outline_of_a_block_is_its_four_sides_whatever_its_area():
    cells = np.zeros((26, 26), bool)
    cells[:, 12:] = True  # the padding columns of a 12-token sentence in a batch of 26
    xs, ys = region_outline(cells)
    assert _segments(xs, ys) == {(11.5, -0.5, 25.5, -0.5), (11.5, 25.5, 25.5, 25.5),
                                 (11.5, -0.5, 11.5, 25.5), (25.5, -0.5, 25.5, 25.5)}


def test_outline_of_the_look_ahead_triangle_is_a_staircase():
    cells = np.triu(np.ones((4, 4), bool), k=1)
    segments = _segments(*region_outline(cells))
    # Two sides along the border (top, right) and a step down and across for each row.
    assert (0.5, -0.5, 3.5, -0.5) in segments and (3.5, -0.5, 3.5, 2.5) in segments
    assert len(segments) == 2 + 2 * 3
    inside = {(x, y) for x0, y0, x1, y1 in segments for x, y in ((x0, y0), (x1, y1))}
    assert all(x - y >= 0 for x, y in inside)  # on or above the diagonal: it never cuts into an allowed cell


# ------------------------------------------------------------------ narrow charts: glyphs, titles, ticks


def mask_of(n: int) -> np.ndarray:
    return np.tril(np.ones((n, n), bool))


def test_a_small_mask_says_true_or_false_in_every_cell_at_a_readable_size():
    trace = fm.mask_matrix(mask_of(6), ["a"] * 6, title="m", true_text="True", false_text="False").data[0]
    assert trace.texttemplate == "%{text}" and trace.textfont.size >= 12
    assert trace.text[0][0] == "True" and trace.text[0][5] == "False"
    assert trace.customdata[0][5] == ["a", "a", "False"] and "%{customdata[2]}" in trace.hovertemplate


def test_a_mid_sized_mask_writes_the_short_mark_and_hovers_the_word():
    trace = fm.mask_matrix(mask_of(14), ["a"] * 14, title="m", true_text="真", false_text="假",
                           true_short="T", false_short="F").data[0]
    assert trace.texttemplate == "%{text}" and trace.textfont.size >= 12
    assert trace.text[0][0] == "T" and trace.text[0][13] == "F"  # a cell too narrow for the word
    assert trace.customdata[0][13][2] == "假"


def test_a_large_mask_writes_nothing_in_its_cells():
    trace = fm.mask_matrix(mask_of(26), ["a"] * 26, title="m").data[0]
    assert trace.texttemplate is None and trace.customdata[0][25][2] == "False"


def test_titles_wrap_at_spaces_cjk_punctuation_or_before_brackets():
    assert fm.wrap_title("Decoder, look-ahead mask off (switch flipped)") == ["Decoder, look-ahead mask off",
                                                                           "(switch flipped)"]
    assert fm.wrap_title("2. Scores with the mask (−∞ = hidden)") == ["2. Scores with the mask", "(−∞ = hidden)"]
    assert fm.wrap_title("编码器，填充掩码：开（开关反转）") == ["编码器，填充掩码：开", "（开关反转）"]
    assert fm.wrap_title("Combined decoder mask") == ["Combined decoder mask"]
    for title in ("Decoder, look-ahead mask off (switch flipped)", "编码器，填充掩码：开（开关反转）"):
        assert all(fm._width(line) <= fm.TITLE_WIDTH for line in fm.wrap_title(title))


def test_charts_side_by_side_make_the_same_room_for_their_titles():
    weights = uniform(np.ones((4, 4), bool))
    short, long = (fm.attention_map(weights, np.ones((4, 4), bool), np.zeros((4, 4), bool), TOKENS, title=title,
                                    x_title="k", y_title="q", title_room=fm.title_lines(["Short", "A much longer "
                                                                                         "title (switch flipped)"]))
                   for title in ("Short", "A much longer title (switch flipped)"))
    assert long.layout.title.text == "A much longer title<br>(switch flipped)"
    assert short.layout.margin.t == long.layout.margin.t > 40


def test_a_long_token_axis_labels_every_kth_position():
    n = 45
    fig = fm.mask_matrix(mask_of(n), [str(i) for i in range(n)], title="m")
    assert list(fig.layout.xaxis.tickvals) == list(range(0, n, 3)) and len(fig.layout.xaxis.tickvals) <= 20
    assert list(fig.layout.yaxis.ticktext) == [str(i) for i in range(0, n, 3)]
    few = fm.mask_matrix(mask_of(12), [str(i) for i in range(12)], title="m")
    assert list(few.layout.xaxis.tickvals) == list(range(12))


def test_a_fifteen_token_axis_labels_every_token_in_a_smaller_font():
    tokens = list("猫昨天在花园里吃了两个苹果。") + ["。"]
    figs = (fm.mask_matrix(mask_of(15), tokens, title="m"),
            fm.attention_map(uniform(mask_of(15)), mask_of(15), np.zeros((15, 15), bool), tokens, title="t",
                             x_title="k", y_title="q"))
    for fig in figs:
        for axis in (fig.layout.xaxis, fig.layout.yaxis):
            assert axis.tickmode == "array" and list(axis.tickvals) == list(range(15))
            assert list(axis.ticktext) == tokens
            assert fm.TICK_FONT_MIN <= axis.tickfont.size < fm.TICK_FONT_MAX
            # 15 CJK labels, each as wide as its font, fit the narrowest axis with room between them
            assert 15 * axis.tickfont.size <= 0.9 * fm.TICK_AXIS_PX
    few = fm.mask_matrix(mask_of(6), tokens[:6], title="m")
    assert few.layout.xaxis.tickfont.size == fm.TICK_FONT_MAX


def test_short_chinese_tokens_are_written_across_not_turned():
    tokens = list("猫昨天在花园里吃了两个苹果。")
    fig = fm.attention_map(uniform(mask_of(14)), mask_of(14), np.zeros((14, 14), bool), tokens, title="t",
                           x_title="k", y_title="q")
    assert fig.layout.xaxis.tickangle == 0
    bars = fm.row_bars(np.zeros(14), np.full(14, 1 / 14), np.ones(14, bool), tokens, titles=("1", "2", "3"),
                       x_title="key", minus_inf="−∞")
    assert all(f.layout.xaxis.tickangle == 0 for f in bars)
    # Two-character words too; English words are left to plotly, which slants them
    words = fm.attention_map(uniform(mask_of(3)), mask_of(3), np.zeros((3, 3), bool), ["昨天", "花园", "。"],
                             title="t", x_title="k", y_title="q")
    assert words.layout.xaxis.tickangle == 0 and "<br>" not in "".join(words.layout.xaxis.ticktext)
    latin = fm.attention_map(uniform(mask_of(3)), mask_of(3), np.zeros((3, 3), bool), ["the", "cat", "ate"],
                             title="t", x_title="k", y_title="q")
    assert latin.layout.xaxis.tickangle is None


def _label_spans(texts, slot, size):
    """(line, left, right) of each staggered label, widths estimated as :func:`figures.masks.stagger` does."""
    import html

    spans = []
    for n, text in enumerate(texts):
        line, plain = text.count("<br>"), html.unescape(text.replace("<br>", ""))
        half = size * sum(1.0 if fm._width(ch) == 2 else 0.6 for ch in plain) / 2
        spans.append((line, n * slot - half, n * slot + half))
    return spans


def test_chinese_beside_special_tokens_is_written_across_and_staggered():
    """en-zh's decoder (the English page's default): <bos> then 15 characters, and a shorter sentence's <pad>s.
    Plotly turned them all by 90° (the characters on their side, run together); now they are written across
    and a label that would meet its neighbour moves down a line."""
    for tokens in (["<bos>", *"猫昨天在花园里吃了两个苹果。", "。"], ["<bos>", *"你看见了狗吗？", "<pad>", "<pad>", "<pad>"]):
        n = len(tokens)
        fig = fm.mask_matrix(mask_of(n), tokens, title="m")
        axis = fig.layout.xaxis
        assert axis.tickangle == 0 and list(axis.tickvals) == list(range(n))
        assert [t.replace("<br>", "") for t in axis.ticktext] == [t.replace("<", "&lt;").replace(">", "&gt;")
                                                                   for t in tokens]
        assert any("<br>" in t for t in axis.ticktext)  # at least one label moved down
        spans = _label_spans(axis.ticktext, fm.TICK_AXIS_PX / n, axis.tickfont.size)
        for i, (line, _, right) in enumerate(spans):
            same_line = [left for other, left, _ in spans[i + 1:] if other == line]
            assert all(left >= right for left in same_line), (tokens[i], axis.ticktext)


def test_a_labelled_mask_may_be_rectangular_and_says_true_or_false_in_its_cells():
    """Cross-attention's mask: 4 decoder queries (rows) over 3 source keys (columns)."""
    mask = np.tril(np.ones((4, 3), bool))
    fig = fm.labelled_mask(mask, ("a", "b", "c"), ("<bos>", "a", "b", "c"), title="Cross-attention",
                           true_text="True", false_text="False", x_title="key", y_title="query", title_room=2)
    trace = fig.data[0]
    assert np.asarray(trace.z).shape == (4, 3)
    np.testing.assert_array_equal(np.asarray(trace.z), mask.astype(int))
    assert trace.text[0][1] == "False" and trace.text[3][2] == "True"
    assert len(fig.layout.xaxis.tickvals) == 3 and len(fig.layout.yaxis.tickvals) == 4
    one_line = fm.labelled_mask(mask, ("a", "b", "c"), ("<bos>", "a", "b", "c"), title="Cross-attention")
    assert fig.layout.margin.t > one_line.layout.margin.t  # room for a second title line beside a longer title

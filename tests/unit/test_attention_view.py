"""The attention explorer's plain-data helpers and figure builders (no Streamlit run needed)."""
from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd
import pytest
import torch

from model.config import TransformerConfig
from model.tokenizer import CharTokenizer
from model.transformer import Transformer
from ui import attention_view as av
from explain.attention import attention_view
from ui.url_state import read


def softmax_rows(rng: np.random.Generator, *shape: int) -> np.ndarray:
    x = rng.normal(size=shape)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


class Ckpt:
    """What ui.inference needs of a checkpoint: a model and a tokenizer."""

    def __init__(self, seed: int = 0) -> None:
        torch.manual_seed(seed)
        self.tokenizer = CharTokenizer("abcdefgh ")
        v = self.tokenizer.vocab_size
        self.model = Transformer(TransformerConfig(v, v, d_model=16, n_heads=2, n_layers=2, d_ff=32, dropout=0.0,
                                                   max_len=24)).eval()
        self.task = {"name": "copy"}


# ------------------------------------------------------------------ statistics


def test_entropy_of_one_hot_and_uniform_rows():
    assert av.row_entropy(np.eye(4)).tolist() == [0.0] * 4
    assert av.row_entropy(np.full((3, 8), 1 / 8)) == pytest.approx([3.0] * 3)
    assert av.row_entropy(np.array([[0.5, 0.5, 0.0]]))[0] == pytest.approx(1.0)


def test_distance_and_diagonal_of_identity_and_previous_token_maps():
    identity = np.eye(5)
    previous = np.eye(5, k=-1)
    previous[0, 0] = 1.0  # the first token has no previous one
    assert av.mean_distance(identity).tolist() == [0.0] * 5
    assert av.diagonal_share(identity) == pytest.approx(1.0)
    assert av.mean_distance(previous).tolist() == [0.0, 1.0, 1.0, 1.0, 1.0]
    assert av.diagonal_share(previous) == pytest.approx(0.2)


def test_diagonal_of_a_rectangular_cross_attention_map():
    weights = np.zeros((3, 5))
    weights[np.arange(3), np.arange(3)] = 1.0
    assert av.diagonal_share(weights) == pytest.approx(1.0)


def test_head_statistics_one_row_per_head():
    maps = softmax_rows(np.random.default_rng(0), 2, 3, 6, 6)
    stats = av.head_statistics(maps)
    assert list(stats.columns) == ["layer", "head", "entropy", "max_entropy", "distance", "diagonal"]
    assert list(zip(stats["layer"], stats["head"])) == [(l, h) for l in (1, 2) for h in (1, 2, 3)]
    assert (stats["entropy"] <= stats["max_entropy"] + 1e-9).all()
    assert stats["max_entropy"].iloc[0] == pytest.approx(math.log2(6), abs=1e-3)
    assert ((stats["diagonal"] >= 0) & (stats["diagonal"] <= 1)).all()


# ------------------------------------------------------------------ heads and the URL


def test_head_codes_round_trip_and_become_zero_based_triples():
    codes = av.all_heads(2, 3)
    assert len(codes) == 3 * 2 * 3 and codes[0] == "enc-1-1" and codes[-1] == "cross-2-3"
    for code in codes:
        assert av.HeadId.parse(code).code == code
    assert av.ablation_triples(["cross-2-1", "enc-1-3"]) == (("cross", 1, 0), ("encoder", 0, 2))
    assert av.ablation_triples(["enc-1-3", "cross-2-1"]) == av.ablation_triples(["cross-2-1", "enc-1-3"])


def test_head_set_param_reads_good_links_and_refuses_bad_ones():
    param = av.HeadSetParam("att_off", default=[], choices=tuple(av.all_heads(2, 2)))
    assert read(param, {"att_off": "enc-1-2,cross-2-1"}) == (["enc-1-2", "cross-2-1"], None)
    assert read(param, {"att_off": ""}) == ([], None)
    for bad in ("enc-3-1", "enc-1-2,enc-1-2", "dec-1", "<script>"):
        assert read(param, {"att_off": bad}) == ([], bad)
    assert param.format(["dec-1-1", "enc-2-2"]) == "dec-1-1,enc-2-2"
    assert param.accepts(["dec-1-1"]) and not param.accepts(["dec-9-1"]) and not param.accepts("dec-1-1")


def test_probabilities_are_written_readably_at_any_size():
    assert av.format_probability(0.27612) == "0.276"
    assert av.format_probability(3.1e-7) == "3.10e-07"
    assert av.format_probability(-0.25, sign=True) == "-0.250"
    assert av.format_probability(0.0) == "0.000"


# ------------------------------------------------------------------ with a real (random) model


def test_views_of_every_kind_have_rows_that_sum_to_one():
    ckpt = Ckpt()
    view = attention_view(ckpt, "abc dea")
    for kind in av.KINDS:
        maps = av.attention_maps(view, kind)
        queries, keys = av.query_key_tokens(view, kind)
        assert maps.shape[2:] == (len(queries), len(keys))
        assert np.allclose(maps.sum(axis=-1), 1.0, atol=1e-5)
    assert av.blocked_cells("encoder", 3, 3) is None
    assert av.blocked_cells("decoder", 3, 3).tolist() == [[False, True, True], [False, False, True],
                                                          [False, False, False]]


def test_sequence_probability_matches_the_answer_probability():
    from explain.attention import answer_probability

    ckpt = Ckpt(seed=1)
    view = attention_view(ckpt, "bad cab")
    ids = av.answer_ids(ckpt.tokenizer, view.answer)
    total, per_token = av.sequence_probability(view, ids)
    assert ids[-1] == ckpt.tokenizer.eos_id
    assert total == pytest.approx(answer_probability(view, ckpt.tokenizer))
    assert total == pytest.approx(float(np.prod(per_token)))


def test_switching_a_head_off_changes_the_probability_of_the_same_answer():
    ckpt = Ckpt(seed=2)
    base = attention_view(ckpt, "face")
    ids = av.answer_ids(ckpt.tokenizer, base.answer)
    off = attention_view(ckpt, "face", base.answer, ablate_heads=av.ablation_triples(["cross-2-1", "cross-2-2"]))
    assert av.sequence_probability(off, ids)[0] != pytest.approx(av.sequence_probability(base, ids)[0])


# ------------------------------------------------------------------ CSV


def test_attention_csv_keeps_repeated_tokens_apart_and_defuses_formulas():
    weights = np.array([[0.25, 0.75], [1.0, 0.0]])
    text = av.attention_csv(weights, ["=", "a"], ["a", "a"])
    frame = pd.read_csv(io.StringIO(text), index_col=0)
    assert list(frame.columns) == ["0:a", "1:a"]
    assert list(frame.index) == ["0:=", "1:a"]
    assert frame.to_numpy() == pytest.approx(weights)
    assert not any(line.startswith("=") for line in text.splitlines())


def test_long_csv_has_one_line_per_head_query_and_key():
    maps = softmax_rows(np.random.default_rng(1), 3, 2, 4)
    frame = pd.read_csv(io.StringIO(av.long_attention_csv(maps, ["x", "y"], list("abcd"), heads=(1, 3), layer=2)))
    assert len(frame) == 2 * 2 * 4
    assert set(frame["head"]) == {1, 3} and set(frame["layer"]) == {2}
    assert frame.groupby(["head", "query_position"])["weight"].sum().to_numpy() == pytest.approx(1.0, abs=1e-5)


# ------------------------------------------------------------------ figures


def test_grid_has_one_map_per_head_on_one_colour_scale():
    maps = softmax_rows(np.random.default_rng(2), 2, 3, 4, 5)
    titles = [f"L{l} H{h}" for l in (1, 2) for h in (1, 2, 3)]
    fig = av.build_grid_figure(maps, ["<b>", "q", "r", "s"], list("abcde"), titles=titles,
                               hover="L{layer} H{head}: %{customdata[2]}")
    maps_drawn = [trace for trace in fig.data if trace.type == "heatmap"]
    assert len(maps_drawn) == 6 and {trace.coloraxis for trace in maps_drawn} == {"coloraxis"}
    assert np.allclose(np.asarray(maps_drawn[5].z), np.round(maps[1, 2], 4))
    targets = [trace for trace in fig.data if trace.type == "scatter"]
    assert list(targets[5].customdata[0][3:]) == [2, 3] and "L2 H3" in targets[5].hovertemplate
    assert fig.layout.yaxis.ticktext[0] == "&lt;b&gt;"


def test_scores_figure_leaves_masked_cells_empty():
    scores = np.arange(9, dtype=float).reshape(3, 3)
    fig = av.build_scores_figure(scores, list("abc"), list("abc"), blocked=av.blocked_cells("decoder", 3, 3),
                                 title="", x_title="", y_title="", hover="%{z}")
    z = np.asarray(fig.data[0].z, dtype=float)
    assert np.isnan(z[0, 1]) and np.isnan(z[0, 2]) and z[2, 0] == 6.0
    assert fig.data[0].text[0][1] == "" and fig.data[0].text[2][0] == "6.00"


def test_weights_figure_shows_each_rows_entropy():
    weights = np.array([[1.0, 0.0], [0.5, 0.5]])
    fig = av.build_weights_entropy_figure(weights, ["a", "b"], ["a", "b"], blocked=None, titles=("w", "h"),
                                          x_title="", y_title="", entropy_title="bits", hover="%{z}",
                                          entropy_hover="%{x}")
    bars = [trace for trace in fig.data if trace.type == "bar"][0]
    assert list(bars.x) == pytest.approx([0.0, 1.0])

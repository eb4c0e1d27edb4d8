"""The decoding page's plain data: traces, tables and figures, on a small random model."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from model.config import TransformerConfig
from model.tokenizer import CharTokenizer
from model.transformer import Transformer
from ui import decoding_view as dv

COLUMNS = {name: name for name in ("position", "reads_true", "should", "predicts", "p_true", "ok", "reads_own",
                                   "writes_own")}
BEAM_COLUMNS = {name: name for name in ("step", "rank", "text", "score", "finished")}


class Ckpt:
    def __init__(self, seed: int = 0) -> None:
        torch.manual_seed(seed)
        self.tokenizer = CharTokenizer("abcdef ")
        v = self.tokenizer.vocab_size
        self.model = Transformer(TransformerConfig(v, v, d_model=16, n_heads=2, n_layers=2, d_ff=32, dropout=0.0,
                                                   max_len=20)).eval()
        self.task = {"name": "copy"}


KEY = ("unit-test", 0)


@pytest.fixture(scope="module")
def ckpt() -> Ckpt:
    return Ckpt()


def test_small_helpers():
    assert dv.visible(" ") == "␣" and dv.visible("a") == "a" and dv.visible("<eos>") == "<eos>"
    assert dv.parse_top_k("all") is None and dv.parse_top_k("5") == 5
    assert dv.first_difference("abc", "abc") is None
    assert dv.first_difference("abx", "abc") == 2
    assert dv.first_difference("ab", "abc") == 2


def test_decode_limit_fits_the_model(ckpt):
    assert dv.decode_limit(ckpt, "abc") == 3 + 16
    assert dv.decode_limit(ckpt, "a" * 30) == ckpt.model.config.max_len


@pytest.mark.parametrize("strategy", dv.STRATEGIES)
def test_traces_are_plain_data_with_one_growing_prefix_per_step(ckpt, strategy):
    trace = dv.decode(ckpt, KEY, "face", strategy, beam_size=2 if strategy == "beam" else 1)
    assert trace.src_tokens == list("face")
    assert 1 <= len(trace.steps) <= trace.max_len
    for number, step in enumerate(trace.steps, start=1):
        assert step.prefix[0] == dv.BOS and len(step.prefix) == number
        assert isinstance(step.decoder_attention, np.ndarray)
        assert step.decoder_attention.shape == (2, 2, number, number)
        assert step.cross_attention.shape == (2, 2, 4)
        assert np.allclose(step.decoder_attention.sum(axis=-1), 1.0, atol=1e-5)
        assert step.top_probs == sorted(step.top_probs, reverse=True)
        if number > 1:
            assert step.prefix[:-1] == trace.steps[number - 2].prefix
    assert trace.finished == (trace.steps[-1].chosen == dv.EOS)
    assert dv.EOS not in [s.chosen for s in trace.steps[:-1]]
    ordinary = [s.chosen for s in trace.steps if len(s.chosen) == 1]  # an untrained model also writes <bos>, <unk>
    assert "".join(ordinary) == trace.output.replace("\ufffd", "")
    assert trace.score == pytest.approx(sum(np.log(s.chosen_prob) for s in trace.steps), abs=1e-4)


def test_beam_of_one_is_greedy_and_sampling_repeats_with_its_seed(ckpt):
    greedy = dv.decode(ckpt, KEY, "bead", "greedy")
    assert dv.decode(ckpt, KEY, "bead", "beam", beam_size=1).output == greedy.output
    first = dv.decode(ckpt, KEY, "bead", "sample", temperature=1.5, top_k=None, seed=3)
    again = dv.decode(ckpt, KEY, "bead", "sample", temperature=1.5, top_k=None, seed=3)
    assert first.output == again.output
    assert dv.decode(ckpt, KEY, "bead", "sample", temperature=0.0, seed=9).output == greedy.output
    with pytest.raises(ValueError):
        dv.decode(ckpt, KEY, "bead", "nucleus")


def test_beams_table(ckpt):
    trace = dv.decode(ckpt, KEY, "cafe", "beam", beam_size=3)
    table = dv.beams_table(trace, BEAM_COLUMNS)
    assert list(table.columns) == list(BEAM_COLUMNS)
    assert table["step"].max() == len(trace.beams)
    assert (table["score"] <= 0).all()
    one = dv.beams_table(trace, BEAM_COLUMNS, step=1)
    assert set(one["step"]) == {1} and list(one["rank"]) == list(range(1, len(one) + 1))


def test_teacher_forcing_against_free_running(ckpt):
    tf = dv.teacher_forcing(ckpt, KEY, "a cab", "a cab")
    assert tf.input_tokens == ["<bos>", "a", " ", "c", "a", "b"]
    assert tf.target_tokens == ["a", " ", "c", "a", "b", "<eos>"]
    assert tf.n_correct == sum(p == t for p, t in zip(tf.predicted_tokens, tf.target_tokens))
    free = dv.decode(ckpt, KEY, "a cab", "greedy")
    table = dv.forcing_table(tf, free, COLUMNS)
    assert len(table) == 6
    assert table["reads_true"].tolist()[:3] == ["<bos>", "a", "␣"]
    assert set(table["ok"]) <= {"✓", "✗"}
    own = dv.generated_tokens(free)
    assert table["writes_own"].tolist()[: len(own)] == [dv.visible(t) for t in own][:6]


def test_triangle_figure_fills_only_the_prefix():
    weights = np.tril(np.ones((3, 3))) / np.arange(1, 4)[:, None]
    fig = dv.build_triangle_figure(weights, ["<bos>", "a", "b"], 6, title="", x_title="", y_title="", hover="%{z}")
    z = np.asarray(fig.data[0].z, dtype=float)
    assert z.shape == (6, 6)
    assert (~np.isnan(z)).sum() == 9 and np.allclose(z[:3, :3].sum(axis=1), 1.0, atol=1e-3)
    assert list(fig.layout.xaxis.ticktext) == ["&lt;bos&gt;", "a", "b", "", "", ""]
    assert len(fig.layout.shapes) == 1 and fig.layout.shapes[0].y0 == pytest.approx(1.5)


def test_top_k_figure_marks_the_chosen_token():
    fig = dv.build_topk_figure(["a", " ", "<eos>"], [0.7, 0.2, 0.1], " ", names=("m", "s"), x_title="p",
                               hover="%{x}")
    assert list(fig.data[0].marker.color) == ["#1f77b4", "#d62728", "#1f77b4"]
    assert list(fig.layout.yaxis.ticktext) == ["a", "␣", "&lt;eos&gt;"]
    assert len(fig.data) == 1 and not fig.layout.showlegend
    both = dv.build_topk_figure(["a"], [1.0], "a", sampling=[1.0], names=("m", "s"), x_title="p", hover="%{x}")
    assert len(both.data) == 2 and both.layout.showlegend

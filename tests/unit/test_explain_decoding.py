"""explain.decoding: traces of the three strategies and teacher forcing as plain data, and their tables."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from explain import decoding as dec
from figures.labels import display_token
from model.config import TransformerConfig
from model.tokenizer import CharTokenizer
from model.transformer import Transformer

COLUMNS = {name: name for name in dec.FORCING_COLUMNS}
BEAM_COLUMNS = {name: name for name in dec.BEAM_COLUMNS}


class Ckpt:
    def __init__(self, seed: int = 0) -> None:
        torch.manual_seed(seed)
        self.tokenizer = CharTokenizer("abcdef ")
        v = self.tokenizer.vocab_size
        self.model = Transformer(TransformerConfig(v, v, d_model=16, n_heads=2, n_layers=2, d_ff=32, dropout=0.0,
                                                   max_len=20)).eval()
        self.task = {"name": "copy"}


@pytest.fixture(scope="module")
def ckpt() -> Ckpt:
    return Ckpt()


def test_small_helpers():
    assert dec.parse_top_k("all") is None and dec.parse_top_k("5") == 5
    assert all(choice == "all" or dec.parse_top_k(choice) == int(choice) for choice in dec.TOP_K_CHOICES)
    assert dec.first_difference("abc", "abc") is None
    assert dec.first_difference("abx", "abc") == 2
    assert dec.first_difference("ab", "abc") == 2


def test_decode_limit_fits_the_model(ckpt):
    assert dec.decode_limit(ckpt, "abc") == 3 + 16
    assert dec.decode_limit(ckpt, "a" * 30) == ckpt.model.config.max_len


@pytest.mark.parametrize("strategy", dec.STRATEGIES)
def test_traces_are_plain_data_with_one_growing_prefix_per_step(ckpt, strategy):
    trace = dec.decode(ckpt, "face", strategy, beam_size=2 if strategy == "beam" else 1)
    assert trace.strategy == strategy and trace.src_tokens == list("face")
    assert 1 <= len(trace.steps) <= trace.max_len
    for number, step in enumerate(trace.steps, start=1):
        assert step.prefix[0] == dec.BOS and len(step.prefix) == number
        assert isinstance(step.decoder_attention, np.ndarray) and step.decoder_attention.dtype == np.float32
        assert step.decoder_attention.shape == (2, 2, number, number)
        assert step.cross_attention.shape == (2, 2, 4)
        assert np.allclose(step.decoder_attention.sum(axis=-1), 1.0, atol=1e-5)
        assert step.top_probs == sorted(step.top_probs, reverse=True)  # a chosen token listed last is the least likely
        appended = step.top_tokens.index(step.chosen) == dec.TRACE_K
        assert len(step.top_tokens) == len(step.top_probs) == dec.TRACE_K + appended
        assert step.chosen in step.top_tokens
        if number > 1:
            assert step.prefix[:-1] == trace.steps[number - 2].prefix
    assert trace.finished == (trace.steps[-1].chosen == dec.EOS)
    assert dec.EOS not in [s.chosen for s in trace.steps[:-1]]
    ordinary = [s.chosen for s in trace.steps if len(s.chosen) == 1]  # an untrained model also writes <bos>, <unk>
    assert "".join(ordinary) == trace.output.replace("\ufffd", "")
    assert trace.score == pytest.approx(sum(np.log(s.chosen_prob) for s in trace.steps), abs=1e-4)
    assert dec.generated_tokens(trace) == [s.chosen for s in trace.steps]
    assert dec.generated_tokens(trace, 1) == [trace.steps[0].chosen]


def test_beam_of_one_is_greedy_and_sampling_repeats_with_its_seed(ckpt):
    greedy = dec.decode(ckpt, "bead", "greedy")
    assert dec.decode(ckpt, "bead", "beam", beam_size=1).output == greedy.output
    first = dec.decode(ckpt, "bead", "sample", temperature=1.5, top_k=None, seed=3)
    again = dec.decode(ckpt, "bead", "sample", temperature=1.5, top_k=None, seed=3)
    assert first.output == again.output
    assert dec.decode(ckpt, "bead", "sample", temperature=0.0, seed=9).output == greedy.output
    with pytest.raises(ValueError):
        dec.decode(ckpt, "bead", "nucleus")


def test_beams_table(ckpt):
    trace = dec.decode(ckpt, "cafe", "beam", beam_size=3)
    table = dec.beams_table(trace, BEAM_COLUMNS)
    assert list(table.columns) == list(BEAM_COLUMNS)
    assert table["step"].max() == len(trace.beams)
    assert (table["score"] <= 0).all()
    one = dec.beams_table(trace, BEAM_COLUMNS, step=1)
    assert set(one["step"]) == {1} and list(one["rank"]) == list(range(1, len(one) + 1))
    shown = dec.beams_table(trace, {name: name.upper() for name in dec.BEAM_COLUMNS})
    assert list(shown.columns) == [name.upper() for name in dec.BEAM_COLUMNS]


def test_teacher_forcing_against_free_running(ckpt):
    tf = dec.teacher_forcing(ckpt, "a cab", "a cab")
    assert tf.input_tokens == ["<bos>", "a", " ", "c", "a", "b"]
    assert tf.target_tokens == ["a", " ", "c", "a", "b", "<eos>"]
    assert tf.n_correct == sum(p == t for p, t in zip(tf.predicted_tokens, tf.target_tokens))
    free = dec.decode(ckpt, "a cab", "greedy")
    table = dec.forcing_table(tf, free, COLUMNS, show=display_token)
    assert len(table) == 6
    assert table["reads_true"].tolist()[:3] == ["<bos>", "a", "␣"]
    assert set(table["ok"]) <= {"✓", "✗"}
    own = dec.generated_tokens(free)
    assert table["writes_own"].tolist()[: len(own)] == [display_token(t) for t in own][:6]
    raw = dec.forcing_table(tf, free, COLUMNS)
    assert raw["reads_true"].tolist()[:3] == ["<bos>", "a", " "], "tokens as they are unless told how to show them"


def test_a_sampled_token_outside_the_most_likely_is_listed_last_with_both_probabilities(ckpt):
    """At a high temperature sampling draws tokens the model finds unlikely; the step still lists the
    chosen one (last), with its probability under the model and in the distribution sampled from."""
    steps = [step for seed in range(10)
             for step in dec.decode(ckpt, "abcabc", "sample", temperature=2.0, seed=seed).steps]
    outside = [step for step in steps if step.top_tokens.index(step.chosen) >= dec.TRACE_K]
    assert outside, "a temperature of 2 should draw at least one unlikely token"
    for step in steps:
        assert step.chosen in step.top_tokens and len(step.top_probs) == len(step.sampling_probs) == len(step.top_tokens)
    for step in outside:
        assert len(step.top_tokens) == dec.TRACE_K + 1 and step.top_tokens[-1] == step.chosen
        assert step.top_probs[-1] == pytest.approx(step.chosen_prob)
        # P_τ(a) / P_τ(b) = (P(a) / P(b))^(1/τ) for any two tokens of the distribution sampled from
        assert step.sampling_probs[-1] / step.sampling_probs[0] == pytest.approx(
            (step.top_probs[-1] / step.top_probs[0]) ** 0.5, rel=1e-4)


def test_cache_savings_are_read_off_the_real_cached_greedy_decode(ckpt):
    savings = dec.cache_savings(ckpt, "face")
    greedy = dec.decode(ckpt, "face", "greedy")
    assert savings.tokens == dec.generated_tokens(greedy)  # the same answer as the page's greedy decode
    L, S = ckpt.model.config.n_layers, savings.source_len
    assert (L, S) == (2, 4)
    for t, (computed, reused, without) in enumerate(zip(savings.computed, savings.reused, savings.without), start=1):
        # per layer: the newest position's pair (+ the memory's S pairs at the first step); the rest is reused
        assert computed == L * (1 + (S if t == 1 else 0))
        assert reused == L * ((t - 1) + (S if t > 1 else 0))
        assert without == computed + reused == L * (t + S)
    assert savings.total_computed < savings.total_without or len(savings.tokens) == 1
    table = dec.cache_table(savings, {name: name.upper() for name in dec.CACHE_COLUMNS}, show=display_token)
    assert list(table.columns) == [name.upper() for name in dec.CACHE_COLUMNS]
    assert table["STEP"].tolist() == list(range(1, len(savings.tokens) + 1))
    assert table["COMPUTED"].sum() == savings.total_computed

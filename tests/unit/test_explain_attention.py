"""What the attention page reads from a forward pass: maps, statistics, heads to switch off,
probabilities and CSV exports (plain numpy and pandas, no Streamlit)."""
from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd
import pytest
import torch

from explain import attention as xa
from model.config import TransformerConfig
from model.tokenizer import BOS_ID, CharTokenizer
from model.transformer import Transformer


def softmax_rows(rng: np.random.Generator, *shape: int) -> np.ndarray:
    x = rng.normal(size=shape)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


class Ckpt:
    """What explain.attention needs of a checkpoint: a model and a tokenizer."""

    def __init__(self, seed: int = 0) -> None:
        torch.manual_seed(seed)
        self.tokenizer = CharTokenizer("abcdefgh ")
        v = self.tokenizer.vocab_size
        self.model = Transformer(TransformerConfig(v, v, d_model=16, n_heads=2, n_layers=2, d_ff=32, dropout=0.0,
                                                   max_len=24)).eval()
        self.task = {"name": "copy"}


# ------------------------------------------------------------------ statistics


def test_entropy_of_one_hot_and_uniform_rows():
    assert xa.row_entropy(np.eye(4)).tolist() == [0.0] * 4
    assert xa.row_entropy(np.full((3, 8), 1 / 8)) == pytest.approx([3.0] * 3)
    assert xa.row_entropy(np.array([[0.5, 0.5, 0.0]]))[0] == pytest.approx(1.0)


def test_mean_peak_is_one_for_one_hot_rows_and_one_over_n_for_uniform_ones():
    assert xa.mean_peak(np.eye(4)) == pytest.approx(1.0)
    assert xa.mean_peak(np.full((3, 8), 1 / 8)) == pytest.approx(1 / 8)
    assert xa.mean_peak(np.array([[1.0, 0.0], [0.5, 0.5]])) == pytest.approx(0.75)


def test_distance_and_diagonal_of_identity_and_previous_token_maps():
    identity = np.eye(5)
    previous = np.eye(5, k=-1)
    previous[0, 0] = 1.0  # the first token has no previous one
    assert xa.mean_distance(identity).tolist() == [0.0] * 5
    assert xa.diagonal_share(identity) == pytest.approx(1.0)
    assert xa.mean_distance(previous).tolist() == [0.0, 1.0, 1.0, 1.0, 1.0]
    assert xa.diagonal_share(previous) == pytest.approx(0.2)


def test_diagonal_of_a_rectangular_cross_attention_map():
    weights = np.zeros((3, 5))
    weights[np.arange(3), np.arange(3)] = 1.0
    assert xa.diagonal_share(weights) == pytest.approx(1.0)


def test_head_statistics_one_row_per_head():
    maps = softmax_rows(np.random.default_rng(0), 2, 3, 6, 6)
    stats = xa.head_statistics(maps)
    assert list(stats.columns) == ["layer", "head", "focus", "entropy", "max_entropy", "distance", "diagonal"]
    assert list(zip(stats["layer"], stats["head"])) == [(l, h) for l in (1, 2) for h in (1, 2, 3)]
    assert (stats["entropy"] <= stats["max_entropy"] + 1e-9).all()
    assert stats["max_entropy"].iloc[0] == pytest.approx(math.log2(6), abs=1e-3)
    assert ((stats["diagonal"] >= 0) & (stats["diagonal"] <= 1)).all()


def test_focus_does_not_care_which_cells_are_sharp():
    """An anti-diagonal head (reverse's cross-attention) is as focused as a diagonal one, though its
    diagonal share is 0 and its mean distance is large."""
    diagonal, anti = np.eye(5), np.eye(5)[::-1]
    uniform = np.full((5, 5), 0.2)
    assert xa.focus(diagonal) == pytest.approx(1.0) and xa.focus(anti) == pytest.approx(1.0)
    assert xa.focus(uniform) == pytest.approx(0.2)
    stats = xa.head_statistics(np.stack([np.stack([diagonal, anti, uniform])]))
    assert list(stats["focus"]) == [1.0, 1.0, 0.2]
    assert stats["diagonal"].iloc[1] < 0.3 and stats["distance"].iloc[1] > stats["distance"].iloc[0]


def test_the_most_focused_head_is_found_wherever_it_is():
    maps = np.full((2, 3, 5, 5), 0.2)
    maps[1, 2] = np.eye(5)[::-1]  # layer 2, head 3: a clean anti-diagonal
    assert xa.most_focused_head(maps) == (2, 3)
    maps[0, 1] = np.eye(5)  # an equally sharp head earlier wins the tie
    assert xa.most_focused_head(maps) == (1, 2)
    maps[0, 1, 0, 0] = np.nan  # a weight that is not a number counts as 0
    assert xa.most_focused_head(maps) == (2, 3)


# ------------------------------------------------------------------ heads to switch off


def test_head_codes_round_trip_and_become_zero_based_triples():
    codes = xa.all_heads(2, 3)
    assert len(codes) == 3 * 2 * 3 and codes[0] == "enc-1-1" and codes[-1] == "cross-2-3"
    for code in codes:
        assert xa.HeadId.parse(code).code == code
    assert xa.ablation_triples(["cross-2-1", "enc-1-3"]) == (("cross", 1, 0), ("encoder", 0, 2))
    assert xa.ablation_triples(["enc-1-3", "cross-2-1"]) == xa.ablation_triples(["cross-2-1", "enc-1-3"])


def test_probabilities_are_written_readably_at_any_size():
    assert xa.format_probability(0.27612) == "0.276"
    assert xa.format_probability(3.1e-7) == "0.000000310"  # plain decimals (issue #35 item 20)
    assert xa.format_probability(0.00042) == "0.000420"
    assert xa.format_probability(-0.25, sign=True) == "-0.250"
    assert xa.format_probability(-3.1e-7, sign=True) == "-0.000000310"
    assert xa.format_probability(0.0) == "0.000"


# ------------------------------------------------------------------ with a real (random) model


def test_views_of_every_kind_have_rows_that_sum_to_one():
    ckpt = Ckpt()
    view = xa.attention_view(ckpt, "abc dea")
    for kind in xa.KINDS:
        maps = xa.attention_maps(view, kind)
        queries, keys = xa.query_key_tokens(view, kind)
        assert maps.shape[2:] == (len(queries), len(keys))
        assert np.allclose(maps.sum(axis=-1), 1.0, atol=1e-5)
    assert xa.query_key_tokens(view, "cross") == (view.tgt_tokens, view.src_tokens)
    assert xa.blocked_cells("encoder", 3, 3) is None
    assert xa.blocked_cells("decoder", 3, 3).tolist() == [[False, True, True], [False, False, True],
                                                          [False, False, False]]


def test_sequence_probability_is_the_models_own_likelihood_of_the_answer():
    ckpt = Ckpt(seed=1)
    view = xa.attention_view(ckpt, "bad cab")
    ids = xa.answer_ids(ckpt.tokenizer, view.answer)
    total, per_token = xa.sequence_probability(view, ids)
    assert ids[-1] == ckpt.tokenizer.eos_id
    assert total == pytest.approx(float(np.prod(per_token)))
    with torch.inference_mode():  # teacher forcing, straight from the model's logits
        src = torch.tensor([ckpt.tokenizer.encode("bad cab")])
        tgt = torch.tensor([[BOS_ID] + ids[:-1]])
        log_probs = ckpt.model(src, tgt).logits[0].log_softmax(-1)
        likelihood = math.exp(float(log_probs[torch.arange(len(ids)), torch.tensor(ids)].sum()))
    assert total == pytest.approx(likelihood, rel=1e-4)


def test_switching_a_head_off_changes_the_probability_of_the_same_answer():
    ckpt = Ckpt(seed=2)
    base = xa.attention_view(ckpt, "face")
    ids = xa.answer_ids(ckpt.tokenizer, base.answer)
    off = xa.attention_view(ckpt, "face", base.answer, ablate_heads=xa.ablation_triples(["cross-2-1", "cross-2-2"]))
    assert xa.sequence_probability(off, ids)[0] != pytest.approx(xa.sequence_probability(base, ids)[0])


def count_calls(monkeypatch, owner, name: str) -> list:
    """Every call of ``owner.name`` from now on, recorded (the function still runs)."""
    calls, original = [], getattr(owner, name)

    def counted(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)
    monkeypatch.setattr(owner, name, counted)
    return calls


@pytest.mark.parametrize("target", [None, "dcba"], ids=["answer", "given-target"])
def test_one_view_tokenises_once_runs_the_encoder_once_and_decodes_only_without_a_target(monkeypatch, target):
    ckpt = Ckpt(seed=4)
    encodes = count_calls(monkeypatch, ckpt.model, "encode")
    loops = count_calls(monkeypatch, xa, "decode_loop")
    tokenised = count_calls(monkeypatch, ckpt.tokenizer, "encode")
    view = xa.attention_view(ckpt, "abcd", target, need_details=True)
    assert len(encodes) == 1
    assert [args[0] for args in tokenised].count("abcd") == 1
    assert len(loops) == (1 if target is None else 0)
    assert (view.answer is None) == (target is not None)
    if target is None:  # the answer is the one greedy_answer gives, with the same switches
        assert view.answer == xa.greedy_answer(ckpt, "abcd")


# ------------------------------------------------------------------ CSV


def test_attention_csv_keeps_repeated_tokens_apart_and_defuses_formulas():
    weights = np.array([[0.25, 0.75], [1.0, 0.0]])
    text = xa.attention_csv(weights, ["=", "a"], ["a", "a"])
    frame = pd.read_csv(io.StringIO(text), index_col=0)
    assert list(frame.columns) == ["0:a", "1:a"]
    assert list(frame.index) == ["0:=", "1:a"]
    assert frame.to_numpy() == pytest.approx(weights)
    assert not any(line.startswith("=") for line in text.splitlines())


def test_long_csv_has_one_line_per_head_query_and_key():
    maps = softmax_rows(np.random.default_rng(1), 3, 2, 4)
    frame = pd.read_csv(io.StringIO(xa.long_attention_csv(maps, ["x", "y"], list("abcd"), heads=(1, 3), layer=2)))
    assert len(frame) == 2 * 2 * 4
    assert set(frame["head"]) == {1, 3} and set(frame["layer"]) == {2}
    assert frame.groupby(["head", "query_position"])["weight"].sum().to_numpy() == pytest.approx(1.0, abs=1e-5)


def test_every_head_csv_covers_every_layer_and_head():
    maps = softmax_rows(np.random.default_rng(3), 2, 3, 2, 4)
    frame = pd.read_csv(io.StringIO(xa.every_head_csv(maps, ["x", "y"], list("abcd"))))
    assert list(frame.columns) == xa.LONG_COLUMNS
    assert len(frame) == 2 * 3 * 2 * 4
    assert set(zip(frame["layer"], frame["head"])) == {(l, h) for l in (1, 2) for h in (1, 2, 3)}
    row = frame[(frame["layer"] == 2) & (frame["head"] == 3) & (frame["query_position"] == 1)]
    assert row["weight"].to_numpy() == pytest.approx(maps[1, 2, 1], abs=1e-6)


def test_why_scale_measures_the_variance_the_paper_gives():
    """#35 item 10: unit-variance q and k give q·k a variance of d_k; divided by √d_k it is 1 for every d_k, and
    the softmax of a row stops saturating."""
    from explain.attention import why_scale
    table = why_scale((4, 64, 256))
    assert table["var_raw"].to_numpy() == pytest.approx([4, 64, 256], rel=0.1)
    assert table["var_scaled"].to_numpy() == pytest.approx([1, 1, 1], rel=0.1)
    assert list(table["peak_raw"]) == sorted(table["peak_raw"]) and table["peak_raw"].iloc[-1] > 0.9
    assert table["peak_scaled"].to_numpy() == pytest.approx([0.32] * 3, abs=0.03)

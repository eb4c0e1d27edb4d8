"""explain.output: the decoder's last vectors and logits, softmax with a temperature, the seeds' worked
numbers, cross-entropy and perplexity, and label smoothing exactly as model/loss.py trains with it."""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from explain import output as out
from model.checkpoint import load_checkpoint
from model.config import TransformerConfig
from model.loss import label_smoothed_cross_entropy
from model.tokenizer import CharTokenizer, WordTokenizer
from model.transformer import Transformer
from tests.untrained import untrained_checkpoint
from ui import models


@pytest.fixture(scope="module")
def ckpt():
    checkpoint = untrained_checkpoint(seed=3)
    checkpoint.history = {"config": {"label_smoothing": 0.1}}
    return checkpoint


@pytest.fixture(scope="module")
def view(ckpt) -> out.OutputView:
    return out.output_view(ckpt, "hello world", "hello world")


def model_logits(ckpt, source: str, target: str) -> np.ndarray:
    """The model's own forward pass over ``<bos>`` + target, as training runs it."""
    tok, model = ckpt.tokenizer, ckpt.model
    with torch.inference_mode():
        logits = model(torch.tensor([tok.encode(source)]), torch.tensor([[tok.bos_id] + tok.encode(target)])).logits
    return logits[0].double().numpy()


# ------------------------------------------------------------------ the seeds' numbers


def test_softmax_of_1_2_3_matches_seed_004():
    seed = [0.0900, 0.2447, 0.6652]
    assert np.allclose(out.seed_softmax(), seed, atol=1e-4)
    assert np.allclose(out.softmax(np.array(out.SEED_SOFTMAX_INPUT)), seed, atol=1e-4)


def test_cross_entropy_example_of_seed_004_from_logits_and_from_probabilities():
    ce = out.seed_cross_entropy()
    seed = 0.2014133334159851
    assert ce.from_logits == pytest.approx(seed, abs=1e-7)
    assert ce.from_probs == pytest.approx(seed, abs=1e-6)
    assert ce.training_loss == pytest.approx(seed, abs=1e-6)
    # Each row gives its target softmax([2, 0.5])[0] = 1 / (1 + e^-1.5); the loss is minus its log, the mean of both.
    p = 1 / (1 + math.exp(-1.5))
    assert np.allclose(ce.probs, [[p, 1 - p], [1 - p, p]], atol=1e-6)
    assert np.allclose(ce.row_losses, [-math.log(p)] * 2, atol=1e-6)


# ------------------------------------------------------------------ the model's pass


def test_the_view_is_the_models_own_teacher_forced_pass(ckpt, view):
    assert view.input_tokens == ["<bos>"] + list("hello world")
    assert view.target_tokens == list("hello world") + ["<eos>"]
    assert view.target_ids == ckpt.tokenizer.encode("hello world") + [ckpt.tokenizer.eos_id]
    T, d, V = 12, ckpt.model.config.d_model, ckpt.model.config.tgt_vocab_size
    assert view.hidden.shape == (T, d) and view.logits.shape == (T, V) and view.vocab_size == V
    assert view.weight_shape == (V, d)
    assert np.allclose(view.logits, model_logits(ckpt, "hello world", "hello world"), atol=1e-4)
    # The logits are the linear layer applied to the shown vectors: z = W h + b.
    W = ckpt.model.generator.weight.detach().double().numpy()
    b = ckpt.model.generator.bias.detach().double().numpy()
    assert np.allclose(view.hidden @ W.T + b, view.logits, atol=1e-4)
    assert view.trained_epsilon == 0.1 and view.pad_id == 0 and not view.norm_first


@pytest.mark.parametrize("variant", [dict(norm_first=True), dict(norm_first=True, norm_kind="rms", ffn_kind="swiglu",
                                                                   position_kind="rope")])
def test_the_last_vector_of_a_pre_norm_model_is_what_its_generator_reads(variant):
    torch.manual_seed(0)
    tok = CharTokenizer("abc ")
    config = TransformerConfig(tok.vocab_size, tok.vocab_size, d_model=16, n_heads=2, n_layers=2, d_ff=32,
                               dropout=0.0, max_len=16, **variant)
    ckpt = SimpleNamespace(model=Transformer(config).eval(), tokenizer=tok, task={"name": "copy"}, history={})
    view = out.output_view(ckpt, "abc", "cab")
    assert view.norm_first and view.trained_epsilon is None
    assert np.allclose(view.logits, model_logits(ckpt, "abc", "cab"), atol=1e-4)


def test_a_translation_model_reads_its_target_with_the_target_tokenizer():
    torch.manual_seed(0)
    src, tgt = CharTokenizer("abc "), WordTokenizer(["the", "cat", "sat", "."])
    config = TransformerConfig(src.vocab_size, tgt.vocab_size, d_model=16, n_heads=2, n_layers=1, d_ff=32,
                               dropout=0.0, max_len=16)
    ckpt = SimpleNamespace(model=Transformer(config).eval(), tokenizer=src, target_tokenizer=tgt, task={}, history={})
    view = out.output_view(ckpt, "abc", "the cat sat .")
    assert view.input_tokens == ["<bos>", "the", "cat", "sat", "."]
    assert view.target_tokens == ["the", "cat", "sat", ".", "<eos>"]
    assert view.vocab == tgt.token_strings(range(tgt.vocab_size)) and view.logits.shape == (5, tgt.vocab_size)


def test_a_target_longer_than_the_model_is_cut_to_its_positions(ckpt):
    long = out.output_view(ckpt, "a", "x" * 200)
    assert len(long.input_tokens) == ckpt.model.config.max_len and long.target_tokens[-1] == "<eos>"


def test_trained_epsilon_reads_the_saved_training_config():
    assert out.trained_epsilon(SimpleNamespace(history={"config": {"label_smoothing": 0.2}})) == 0.2
    for history in ({}, {"config": {}}, {"config": {"label_smoothing": "x"}}, {"config": {"label_smoothing": 1.5}},
                    {"config": {"label_smoothing": True}}, None, {"config": []}):
        assert out.trained_epsilon(SimpleNamespace(history=history)) is None
    assert out.trained_epsilon(SimpleNamespace()) is None


# ------------------------------------------------------------------ softmax and temperature


def test_softmax_with_temperature_keeps_the_order_and_goes_from_argmax_to_uniform():
    z = np.array([1.0, 3.0, 2.0, 3.0, -1.0])
    for temperature in (0.3, 1.0, 4.0):
        p = out.softmax(z, temperature)
        assert p.sum() == pytest.approx(1.0) and np.argmax(p) == 1
        assert np.allclose(p, torch.tensor(z / temperature).softmax(-1).numpy())
    assert out.softmax(z, 0.0).tolist() == [0, 1, 0, 0, 0]  # ties: the first largest
    assert out.entropy(out.softmax(z, 0.0)) == 0.0 and not math.copysign(1, out.entropy(out.softmax(z, 0.0))) < 0
    assert out.entropy(out.softmax(z, 1e4)) == pytest.approx(math.log(5), abs=1e-3)
    assert np.allclose(out.softmax(z + 10.0), out.softmax(z))  # only differences of logits matter


def test_temperature_sweep_flattens_the_distribution(view):
    sweep = out.temperature_sweep(view.logits[0], view.target_ids[0], [0.0, 0.5, 1.0, 2.0, 5.0])
    assert sweep["top"][0] == 1.0 and sweep["entropy"][0] == 0.0
    assert np.all(np.diff(sweep["top"]) <= 1e-12) and np.all(np.diff(sweep["entropy"]) >= -1e-12)
    assert sweep["entropy"][-1] <= math.log(view.vocab_size)


def test_a_distribution_lists_the_top_k_then_the_target(view):
    position = 3
    full = out.softmax(view.logits[position])
    dist = out.distribution(view, position, 1.0, k=5)
    order = np.argsort(-view.logits[position], kind="stable")
    target = view.target_ids[position]
    rank = int(np.flatnonzero(order == target)[0]) + 1
    assert dist.target_rank == rank and dist.target_prob == pytest.approx(full[target])
    assert dist.ids[:5] == [int(i) for i in order[:5]]
    assert dist.probs == sorted(dist.probs[:5], reverse=True) + dist.probs[5:]
    if rank > 5:
        assert len(dist.ids) == 6 and dist.target_index == 5 and dist.ids[-1] == target
    else:
        assert len(dist.ids) == 5 and dist.ids[dist.target_index] == target
    # An untrained model ranks the right token anywhere: with k = 1 it is added unless it is the top one.
    one = out.distribution(view, position, 1.0, k=1)
    assert one.tokens[one.target_index] == view.target_tokens[position]
    assert one.entropy == pytest.approx(float(-(full * np.log(full)).sum()))


# ------------------------------------------------------------------ loss and perplexity


def test_position_losses_are_minus_log_p_right_and_the_training_loss_is_their_mean(view):
    losses = out.position_losses(view)
    assert np.allclose(losses, -np.log(out.target_probs(view)), atol=1e-5)
    assert out.mean_loss(view) == pytest.approx(float(losses.mean()), abs=1e-5)
    assert out.perplexity(losses) == pytest.approx(math.exp(out.mean_loss(view)), rel=1e-5)
    smoothed = out.position_losses(view, 0.1)
    assert out.mean_loss(view, 0.1) == pytest.approx(float(smoothed.mean()), abs=1e-5)


def test_perplexity_is_exp_of_the_mean_cross_entropy_on_a_padded_batch():
    torch.manual_seed(1)
    V, pad = 9, 0
    logits = torch.randn(3, 6, V)
    target = torch.randint(1, V, (3, 6))
    target[0, 4:] = pad
    target[2, 2:] = pad
    mean = float(label_smoothed_cross_entropy(logits, target, epsilon=0.0, pad_id=pad))
    keep = target != pad
    per_token = F.cross_entropy(logits[keep], target[keep], reduction="none").numpy()
    assert out.perplexity(per_token) == pytest.approx(math.exp(mean), rel=1e-5)
    assert out.perplexity(per_token) == pytest.approx(math.exp(float(per_token.mean())), rel=1e-9)
    uniform = np.full(V, -math.log(V))  # a model that gives every token 1/V has perplexity V
    assert out.perplexity(-uniform[:4]) == pytest.approx(V)


# ------------------------------------------------------------------ label smoothing


@pytest.mark.parametrize("epsilon", [0.0, 0.1, 0.3])
@pytest.mark.parametrize("pad_id", [0, None])
def test_the_smoothed_target_is_what_training_aims_at(epsilon, pad_id):
    V, target = 11, 4
    q = out.smoothed_target(V, target, epsilon, pad_id)
    assert q.sum() == pytest.approx(1.0) and q[target] == pytest.approx(1 - epsilon)
    others = [i for i in range(V) if i not in (target, pad_id)]
    assert np.allclose(q[others], epsilon / len(others)) and out.spread_over(V, pad_id) == len(others)
    if pad_id is not None:
        assert q[pad_id] == 0.0
    # Cross-entropy against q is exactly the training loss of model/loss.py.
    torch.manual_seed(2)
    logits = torch.randn(1, V, dtype=torch.float64)
    ours = float(-(q * F.log_softmax(logits, -1)[0].numpy()).sum())
    theirs = float(label_smoothed_cross_entropy(logits, torch.tensor([target]), epsilon, pad_id))
    assert ours == pytest.approx(theirs, abs=1e-5)


def test_a_label_smoothed_model_does_best_at_1_minus_epsilon():
    V, pad, epsilon = 49, 0, 0.1
    p = np.linspace(0.001, 0.999, 999)
    curve = out.loss_by_right_probability(p, V, epsilon, pad)
    assert p[np.argmin(curve)] == pytest.approx(1 - epsilon, abs=1e-3)
    floor = out.smoothed_floor(V, epsilon, pad)
    assert curve.min() == pytest.approx(floor, abs=1e-5)
    # 0.710 for the shipped models' 49 tokens: where their training loss flattens out.
    assert floor == pytest.approx(-(0.9 * math.log(0.9) + 0.1 * math.log(0.1 / 47)), abs=1e-9)
    assert out.smoothed_floor(V, 0.0, pad) == 0.0
    plain = out.loss_by_right_probability(p, V, 0.0, pad)
    assert np.allclose(plain, -np.log(p)) and np.all(np.diff(plain) < 0)  # one-hot: lower all the way to p = 1
    assert np.isinf(out.loss_by_right_probability(np.array([1.0]), V, epsilon, pad)[0])
    # The curve is the training loss of such a model (<pad> all but impossible).
    for right in (0.3, 0.9, 0.99):
        probs = np.full(V, (1 - right) / (V - 2))
        probs[pad], probs[5] = 1e-30, right
        loss = label_smoothed_cross_entropy(torch.tensor(np.log(probs))[None], torch.tensor([5]), epsilon, pad)
        assert float(loss) == pytest.approx(float(out.loss_by_right_probability(np.array([right]), V, epsilon, pad)[0]),
                                            abs=1e-6)


def test_target_rows_list_the_top_tokens_the_target_and_pad(view):
    rows = out.target_rows(view, 2, 0.1, k=4)
    assert "<pad>" in rows.tokens and rows.tokens[rows.target_index] == view.target_tokens[2]
    pad = rows.tokens.index("<pad>")
    assert rows.smoothed[pad] == 0.0 and rows.one_hot[pad] == 0.0
    assert rows.smoothed[rows.target_index] == pytest.approx(0.9) and rows.one_hot[rows.target_index] == 1.0
    assert rows.n_shared == view.vocab_size - 2 and rows.shared == pytest.approx(0.1 / (view.vocab_size - 2))
    assert sum(rows.one_hot) == 1.0


def test_tables_hold_every_token_and_every_position(view):
    dist = out.distribution_table(view, 1, 2.0, {name: name.upper() for name in out.DISTRIBUTION_COLUMNS})
    assert len(dist) == view.vocab_size and dist["PROBABILITY"].sum() == pytest.approx(1.0, abs=1e-4)
    assert dist["TARGET"].sum() == 1 and dist.loc[dist["TARGET"], "ID"].item() == view.target_ids[1]
    positions = out.positions_table(view, 0.1, {name: name for name in out.POSITION_COLUMNS})
    assert list(positions.columns) == list(out.POSITION_COLUMNS) and len(positions) == len(view.target_ids)
    assert positions["should"].tolist() == view.target_tokens
    targets = out.targets_table(view, 0, 0.2, {name: name for name in out.TARGET_COLUMNS})
    assert targets["smoothed"].sum() == pytest.approx(1.0, abs=1e-4) and targets["one_hot"].sum() == 1.0


@pytest.mark.skipif("copy" not in models.shipped_models(), reason="no shipped copy model")
def test_the_shipped_copy_model_gives_the_right_token_about_1_minus_epsilon():
    """The claim of the page's last section, measured: trained with ε = 0.1, the model's right tokens sit near 0.9."""
    ckpt = load_checkpoint(models.checkpoint_path("copy"), map_location="cpu")
    view = out.output_view(ckpt, "hello world", "hello world")
    assert view.trained_epsilon == 0.1
    probs = out.target_probs(view)
    assert np.all(probs > 0.8) and np.all(probs < 0.95) and abs(float(probs.mean()) - 0.9) < 0.02
    floor = out.smoothed_floor(view.vocab_size, 0.1, view.pad_id)
    assert floor < out.mean_loss(view, 0.1) < floor + 0.02


# ------------------------------------------------------------------ why softmax and not x / Σx (#31)


@pytest.mark.parametrize("typed, scores", [("1, 2, 3", (1.0, 2.0, 3.0)), ("-2 1 3", (-2.0, 1.0, 3.0)),
                                           ("0.5;−1，2e-1", (0.5, -1.0, 0.2)), ("  7  ", (7.0,))])
def test_typed_scores_are_read_whatever_separates_them(typed, scores):
    assert out.parse_scores(typed) == (scores, None)


@pytest.mark.parametrize("typed, problem", [("", "empty"), (" , ", "empty"), ("1, x", "not_number"),
                                            ("inf", "not_number"), ("nan 1", "not_number"), ("1 " * 9, "too_many"),
                                            ("-51", "too_large"), ("1e400", "not_number")])
def test_bad_scores_are_named_not_raised(typed, problem):
    assert out.parse_scores(typed) == (None, problem)


def test_softmax_ignores_the_constant_and_the_ratio_does_not():
    at_0, at_10 = out.softmax_vs_ratio((1, 2, 3), 0.0), out.softmax_vs_ratio((1, 2, 3), 10.0)
    assert at_0.softmax == pytest.approx((0.0900306, 0.2447285, 0.6652410), abs=1e-7)
    assert at_10.softmax == pytest.approx(at_0.softmax, abs=1e-12)
    assert at_0.ratio == pytest.approx((1 / 6, 2 / 6, 3 / 6)) and at_10.ratio == pytest.approx((11 / 36, 12 / 36, 13 / 36))
    assert at_10.ratio_at_0 == at_0.ratio and not at_10.negative
    table = at_10.table()
    assert list(table["x + c"]) == [11.0, 12.0, 13.0] and table["softmax(x + c)"].sum() == pytest.approx(1.0)


def test_the_ratio_has_no_answer_for_a_zero_sum_and_a_negative_one_below_zero():
    zero = out.softmax_vs_ratio((-1, 0, 1), 0.0)
    assert zero.ratio is None and zero.negative == () and sum(zero.softmax) == pytest.approx(1.0)
    assert zero.table()["(x + c) / sum(x + c)"].isna().all()
    negative = out.softmax_vs_ratio((-2, 1, 3), 0.0)
    assert negative.ratio == pytest.approx((-1.0, 0.5, 1.5)) and negative.negative == (0,)
    assert all(0 < p < 1 for p in negative.softmax)
    big = out.softmax_vs_ratio((50, -50), 10.0)  # the limits: still finite
    assert big.softmax == pytest.approx((1.0, 0.0), abs=1e-12) and all(math.isfinite(p) for p in big.softmax)

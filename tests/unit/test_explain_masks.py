"""explain.masks: the masks as the model builds them, and their effect on real attention; sparse patterns
(model.masks' builders, their counts, the model's answers under them) and the three families' masks."""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from explain import masks as em
from explain.tokens import sentence_batch
from model import decoding
from model.masks import block_mask, global_window_mask, strided_mask, window_mask
from model.tasks import DEFAULT_ALPHABET
from model.tokenizer import CharTokenizer
from model.trace import Trace
from model.transformer import ForwardOptions
from tests.untrained import untrained_checkpoint
from ui.tour import TOUR


@pytest.fixture(scope="module")
def ckpt() -> SimpleNamespace:
    return untrained_checkpoint()


def padded(ckpt, text: str, width: int, bos: bool = False) -> tuple[int, ...]:
    ids = ckpt.tokenizer.encode(text, add_bos=bos)
    return tuple(ids + [0] * (width - len(ids)))


def test_seed_004_combined_mask_is_computed_correctly():
    printout, mask = em.seed_example()
    assert printout.startswith("tensor([[[[ True, False, False, False, False],")
    expected = np.array([[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0], [1, 1, 1, 0, 0], [1, 1, 1, 0, 0]], bool)
    np.testing.assert_array_equal(mask, expected)  # the seed printed [T, T, T, T, F] in the last two rows


def test_mask_set_follows_the_switches():
    src, tgt = (5, 6, 0), (1, 5, 6, 0)
    both = em.mask_set(src, tgt, 0, True, True)
    np.testing.assert_array_equal(both.padding, np.array([[1, 1, 0]] * 3, bool))
    np.testing.assert_array_equal(both.look_ahead, np.tril(np.ones((4, 4), bool)))
    np.testing.assert_array_equal(both.combined, np.tril(np.ones((4, 4), bool)) & np.array([1, 1, 1, 0], bool))
    assert "tensor([[[[ True,  True, False]]]])" == both.printouts["padding"]
    pad_only = em.mask_set(src, tgt, 0, True, False)
    assert pad_only.look_ahead.all() and pad_only.printouts["look_ahead"] == "None"
    np.testing.assert_array_equal(pad_only.combined, np.array([[1, 1, 1, 0]] * 4, bool))
    ahead_only = em.mask_set(src, tgt, 0, False, True)
    assert ahead_only.padding.all() and ahead_only.printouts["padding"] == "None"
    np.testing.assert_array_equal(ahead_only.combined, np.tril(np.ones((4, 4), bool)))
    none = em.mask_set(src, tgt, 0, False, False)
    assert none.padding.all() and none.combined.all() and none.printouts["combined"] == "None"


def test_pair_tokens_take_one_sentence_of_the_padded_batch():
    batch = sentence_batch(["hello", "hi"], CharTokenizer(DEFAULT_ALPHABET), "copy")
    pair = em.pair_tokens(batch, 1)
    assert pair.src_tokens == ("h", "i", "<pad>", "<pad>", "<pad>") and pair.src_pads == 3
    assert pair.tgt_tokens[:3] == ("<bos>", "h", "i") and pair.tgt_pads == 3 and len(pair.tgt_ids) == 6
    assert pair.tokens("encoder") == pair.src_tokens and pair.tokens("decoder") == pair.tgt_tokens
    np.testing.assert_array_equal(pair.real("encoder"), [True, True, False, False, False])
    np.testing.assert_array_equal(pair.real("decoder"), [True, True, True, False, False, False])


def test_a_view_draws_the_real_tokens_and_at_most_three_pads():
    batch = sentence_batch(["the quick brown fox", "hi", "abcd"], CharTokenizer(DEFAULT_ALPHABET), "copy")
    short = em.pair_tokens(batch, 1)  # 2 tokens padded to 19
    assert (short.drawn("encoder"), short.not_drawn("encoder")) == (2 + em.SHOWN_PADS, 17 - em.SHOWN_PADS)
    view = short.cropped()
    assert view.src_tokens == ("h", "i", "<pad>", "<pad>", "<pad>") and view.src_pads == 3
    assert view.tgt_tokens == ("<bos>", "h", "i", "<pad>", "<pad>", "<pad>") and view.tgt_pads == 3
    longest = em.pair_tokens(batch, 0)
    assert longest.cropped() == longest and longest.not_drawn("encoder") == 0
    two_pads = em.pair_tokens(sentence_batch(["abcd", "ab"], CharTokenizer(DEFAULT_ALPHABET), "copy"), 1)
    assert two_pads.cropped() == two_pads  # fewer <pad> than a view may draw: nothing left out


@pytest.mark.parametrize(("padding", "look_ahead"), [(True, True), (True, False), (False, True), (False, False)])
def test_the_masks_of_the_cropped_ids_are_the_full_masks_cropped(padding, look_ahead):
    """What lets the matrices and the printout be built from the drawn positions alone."""
    pair = em.pair_tokens(sentence_batch(["hello world", "hi"], CharTokenizer(DEFAULT_ALPHABET), "copy"), 1)
    view = pair.cropped()
    full = em.mask_set(pair.src_ids, pair.tgt_ids, 0, padding, look_ahead)
    drawn = em.mask_set(view.src_ids, view.tgt_ids, 0, padding, look_ahead)
    s, t = len(view.src_ids), len(view.tgt_ids)
    np.testing.assert_array_equal(drawn.padding, full.padding[:s, :s])
    np.testing.assert_array_equal(drawn.look_ahead, full.look_ahead[:t, :t])
    np.testing.assert_array_equal(drawn.combined, full.combined[:t, :t])


def test_a_cropped_head_map_and_row_keep_the_numbers_of_the_whole_pass(ckpt):
    src, tgt = padded(ckpt, "hi", 12), padded(ckpt, "hi", 13, bos=True)
    attention = em.masked_attention(ckpt, src, tgt, False, True)
    full = em.head_map(attention, "encoder", 0, 0)
    view = full.cropped(5)
    np.testing.assert_array_equal(view.weights, full.weights[:5, :5])
    np.testing.assert_array_equal(view.leaks, full.leaks[:5, :5])
    # padding off: the real queries' rows still sum to 1 over all 12 keys, so less over the 5 drawn
    assert (view.weights[:2].sum(axis=1) < 1 - 1e-3).all() and full.weights[:2].sum(axis=1) == pytest.approx([1, 1])
    row = em.row_steps(attention, "encoder", 0, 0, 0)
    cut = row.cropped(5)
    np.testing.assert_array_equal(cut.weights, row.weights[:5])
    np.testing.assert_array_equal(cut.allowed, row.allowed[:5])
    assert len(cut.raw) == len(cut.masked) == 5


def test_flipped_flips_the_switch_of_its_own_kind():
    assert em.flipped("encoder", True, True) == (False, True)
    assert em.flipped("decoder", True, True) == (True, False)
    assert em.flipped("decoder", False, False) == (False, True)


def test_padding_mask_zeroes_the_pad_columns(ckpt):
    src, tgt = padded(ckpt, "hi", 6), padded(ckpt, "hi", 6, bos=True)
    on = em.masked_attention(ckpt, src, tgt, True, True)
    off = em.masked_attention(ckpt, src, tgt, False, True)
    assert on.encoder.shape == (2, 2, 6, 6) and on.decoder.shape == (2, 2, 6, 6)
    assert on.encoder.dtype == np.float64
    assert (on.encoder[..., 2:] == 0).all()
    assert (on.decoder[..., 3:] == 0).all()
    assert (off.encoder[..., 2:] > 0).all()
    np.testing.assert_allclose(on.encoder.sum(-1), 1.0, atol=1e-6)
    assert on.encoder_hideable[:, 2:].all() and not on.encoder_hideable[:, :2].any()
    np.testing.assert_array_equal(off.encoder_hideable, on.encoder_hideable)
    assert off.encoder_mask.all()


def test_look_ahead_mask_zeroes_the_future(ckpt):
    src, tgt = padded(ckpt, "hello", 5), padded(ckpt, "hello", 6, bos=True)
    on = em.masked_attention(ckpt, src, tgt, True, True)
    off = em.masked_attention(ckpt, src, tgt, True, False)
    upper = np.triu(np.ones((6, 6), bool), k=1)
    assert (on.decoder[..., upper] == 0).all()
    assert (off.decoder[..., upper] > 0).all()


def test_head_map_and_its_leaks(ckpt):
    src, tgt = padded(ckpt, "hi", 4), padded(ckpt, "hi", 3, bos=True)
    on = em.head_map(em.masked_attention(ckpt, src, tgt, True, True), "encoder", 1, 0)
    off = em.head_map(em.masked_attention(ckpt, src, tgt, False, True), "encoder", 1, 0)
    assert on.weights.shape == on.mask.shape == on.hideable.shape == (4, 4)
    assert not on.leaks.any()  # the mask hid all it could
    np.testing.assert_array_equal(off.leaks, np.array([[0, 0, 1, 1]] * 4, bool))
    decoder = em.head_map(em.masked_attention(ckpt, src, tgt, True, False), "decoder", 0, 1)
    np.testing.assert_array_equal(decoder.leaks, np.triu(np.ones((3, 3), bool), k=1))


def test_leak_share(ckpt):
    src, tgt = padded(ckpt, "hi", 8), padded(ckpt, "hi", 3, bos=True)
    real = np.array([True, True] + [False] * 6)
    on = em.masked_attention(ckpt, src, tgt, True, True)
    off = em.masked_attention(ckpt, src, tgt, False, True)
    assert em.leak_share(on.encoder[0, 0], on.encoder_hideable, real) == 0.0
    share = em.leak_share(off.encoder[0, 0], off.encoder_hideable, real)
    assert 0.0 < share < 1.0
    assert em.leak_share(off.encoder[0, 0], off.encoder_hideable, np.zeros(8, bool)) == 0.0


def test_row_steps_turn_minus_infinity_into_zero(ckpt):
    src, tgt = padded(ckpt, "abc", 3), padded(ckpt, "abc", 4, bos=True)
    att = em.masked_attention(ckpt, src, tgt, True, True)
    steps = em.row_steps(att, "decoder", 1, 1, 1)
    np.testing.assert_array_equal(steps.allowed, [True, True, False, False])
    assert np.isneginf(steps.masked[2:]).all() and np.isfinite(steps.masked[:2]).all()
    assert (steps.weights[2:] == 0).all() and steps.weights.sum() == pytest.approx(1.0)
    expected = np.exp(steps.raw[:2] - steps.raw[:2].max())
    np.testing.assert_allclose(steps.weights[:2], expected / expected.sum(), atol=1e-6)


# ------------------------------------------------------------------ sparse patterns (#32)

SIZES = (1, 2, 5, 12, 30)


def brute(n: int, allowed) -> np.ndarray:
    """The (n, n) mask written cell by cell from the pattern's definition."""
    return np.array([[bool(allowed(i, j)) for j in range(n)] for i in range(n)])


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("k", (0, 1, 2, 3, 5, 40))
def test_the_pattern_builders_match_their_definitions(n, k):
    np.testing.assert_array_equal(window_mask(n, k).numpy(), brute(n, lambda i, j: abs(i - j) <= k))
    b = max(k, 1)
    np.testing.assert_array_equal(block_mask(n, b).numpy(), brute(n, lambda i, j: i // b == j // b))
    s = max(k, 2)
    np.testing.assert_array_equal(strided_mask(n, s).numpy(),
                                  brute(n, lambda i, j: abs(i - j) < s or abs(i - j) % s == 0))
    g = max(k, 1)
    np.testing.assert_array_equal(global_window_mask(n, g, 1).numpy(),
                                  brute(n, lambda i, j: abs(i - j) <= 1 or i < g or j < g))


def window_cells(n: int, r: int) -> int:
    """|i − j| ≤ r: the diagonal n, and 2(n − d) cells at each distance d = 1..r."""
    r = min(r, n - 1)
    return n * (2 * r + 1) - r * (r + 1)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("r", (0, 1, 3, 40))
def test_a_window_computes_n_times_2r_plus_1_less_the_corners(n, r):
    count = em.pattern_count(em.Pattern("window", radius=r), n)
    assert count.cells == window_cells(n, r)
    rr = min(r, n - 1)
    assert count.causal_cells == n * (rr + 1) - rr * (rr + 1) // 2  # the lower half of the band
    assert count.full == n * n and count.causal == n * (n + 1) // 2
    if r >= n - 1:
        assert count.cells == count.full and count.causal_cells == count.causal


def test_the_worked_numbers_of_a_window():
    """12 tokens, r = 2: 12·5 − 2·3 = 54 of 144 scores; under the look-ahead mask 12·3 − 3 = 33 of 78."""
    count = em.pattern_count(em.Pattern("window", radius=2), 12)
    assert (count.cells, count.full, count.causal_cells, count.causal) == (54, 144, 33, 78)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("b", (1, 3, 4, 12))
def test_blocks_compute_the_sum_of_their_squares(n, b):
    q, m = divmod(n, b)
    count = em.pattern_count(em.Pattern("block", block=b), n)
    assert count.cells == q * b * b + m * m
    assert count.causal_cells == q * b * (b + 1) // 2 + m * (m + 1) // 2


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("s", (2, 3, 5))
def test_strided_counts_each_kept_distance_twice(n, s):
    kept = [d for d in range(1, n) if d < s or d % s == 0]
    count = em.pattern_count(em.Pattern("strided", stride=s), n)
    assert count.cells == n + 2 * sum(n - d for d in kept)
    assert count.causal_cells == n + sum(n - d for d in kept)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("g", (1, 2, 8))
@pytest.mark.parametrize("r", (0, 1, 3))
def test_global_tokens_add_their_rows_and_columns_to_the_window(n, g, r):
    g_in = min(g, n)
    rest = n - g_in
    expected = 2 * g_in * n - g_in * g_in + (window_cells(rest, r) if rest else 0)
    causal = sum(i + 1 if i < g_in else g_in + min(r, i - g_in) + 1 for i in range(n))
    count = em.pattern_count(em.Pattern("global", radius=r, n_global=g), n)
    assert (count.cells, count.causal_cells) == (expected, causal)


def test_an_unknown_pattern_is_refused():
    with pytest.raises(ValueError, match="Unknown pattern"):
        em.Pattern("random")


@pytest.mark.parametrize("n", (2, 7, 13))
@pytest.mark.parametrize("r", (1, 2, 5))
def test_a_window_needs_n_minus_1_over_r_layers_to_connect_every_pair(n, r):
    """The paper's maximum path length of restricted self-attention, O(n/r): here exactly ⌈(n − 1)/r⌉."""
    assert em.layers_to_connect(em.Pattern("window", radius=r).matrix(n), n) == -(-(n - 1) // r)


def test_what_never_connects_and_what_connects_in_two_hops():
    assert em.layers_to_connect(em.Pattern("window", radius=0).matrix(5), 5) is None
    assert em.layers_to_connect(em.Pattern("block", block=4).matrix(9), 9) is None  # blocks never talk
    assert em.layers_to_connect(em.Pattern("block", block=9).matrix(9), 9) == 1
    assert em.layers_to_connect(em.Pattern("global", radius=0, n_global=1).matrix(9), 9) == 2  # via the global
    assert em.layers_to_connect(em.Pattern("strided", stride=3).matrix(12), 12) == 2  # a jump of 3k, then a step
    assert em.layers_to_connect(em.Pattern("strided", stride=3).matrix(4), 4) == 1
    assert em.layers_to_connect(em.Pattern("window", radius=1).matrix(9), 3) is None  # 8 hops, 3 allowed


def test_pattern_view_draws_the_encoder_pattern_and_the_decoder_pattern_under_the_look_ahead_mask():
    pattern = em.Pattern("window", radius=1)
    view = em.pattern_view(pattern, 4, 5)
    np.testing.assert_array_equal(view.encoder, brute(4, lambda i, j: abs(i - j) <= 1))
    np.testing.assert_array_equal(view.decoder, brute(5, lambda i, j: 0 <= i - j <= 1))
    assert (view.encoder_count.cells, view.decoder_count.causal_cells, view.connect) == (10, 9, 3)
    frame = em.mask_frame(view.encoder, ("a", "b", "c", "d"), ("a", "b", "c", "d"))
    assert frame.values.tolist()[0] == [1, 1, 0, 0] and list(frame.index) == ["a", "b", "c", "d"]


def test_the_pattern_enters_the_encoders_self_attention_exactly(ckpt):
    """AND-ed into the mask, every weight outside the pattern is exactly 0 and each row still sums to 1."""
    pattern = em.Pattern("window", radius=1)
    src = torch.tensor([ckpt.tokenizer.encode("hello there")])
    trace = Trace(replace={"attention": em.restricted_attention(pattern)})
    with torch.inference_mode():
        ckpt.model.encode(src, ForwardOptions(), trace)
    allowed = pattern.matrix(src.size(1))
    for layer in range(ckpt.model.config.n_layers):
        weights = trace[f"encoder.{layer}.self_attn.weights"][0].numpy()  # (H, S, S)
        assert (weights[:, ~allowed] == 0).all() and (weights[:, allowed] > 0).all()
        np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-6)


def test_the_decoder_keeps_the_look_ahead_mask_under_a_pattern(ckpt):
    pattern = em.Pattern("strided", stride=2)
    build = em.restricted_look_ahead(pattern)
    np.testing.assert_array_equal(build(6).numpy(), np.tril(pattern.matrix(6)))
    src = torch.tensor([ckpt.tokenizer.encode("abc")])
    tgt = torch.tensor([ckpt.tokenizer.encode("abcdef", add_bos=True)])
    trace = Trace(replace={"look_ahead_mask": build})
    with torch.inference_mode():
        ckpt.model.decode(tgt, ckpt.model.encode(src), ForwardOptions(), trace)
    weights = trace["decoder.0.self_attn.weights"][0].numpy()
    assert (weights[:, ~np.tril(pattern.matrix(tgt.size(1)))] == 0).all()


def test_greedy_with_the_full_mask_is_the_models_own_greedy_decoding(ckpt):
    answer = em.greedy_answer(ckpt, "hello")
    src = ckpt.tokenizer.encode("hello")
    own = decoding.greedy_decode(ckpt.model, src, max_len=decoding.decode_bound(len(src), ckpt.model.config.max_len))
    assert answer.tokens == tuple(ckpt.tokenizer.token_strings(own.tokens))
    assert math.isclose(answer.probability, float(np.exp(own.score)), rel_tol=1e-5)
    assert answer.finished == own.finished


def test_a_window_wider_than_the_sentence_changes_nothing_and_a_narrow_one_does(ckpt):
    wide = em.restricted_answers(ckpt, "hello", em.Pattern("window", radius=64), True)
    assert wide.restricted.tokens == wide.full.tokens and wide.first_difference is None
    assert math.isclose(wide.restricted.probability, wide.full.probability, rel_tol=1e-5)
    narrow = em.restricted_answers(ckpt, "hello world", em.Pattern("window", radius=0), True)
    assert not math.isclose(narrow.restricted.probability, narrow.full.probability, rel_tol=1e-3)


def test_where_two_answers_part():
    def answer(*tokens: str, finished: bool = True) -> em.Answer:
        return em.Answer(tokens, "".join(tokens), 0.5, finished)

    assert em.RestrictedAnswers(answer("a", "b"), answer("a", "b")).first_difference is None
    assert em.RestrictedAnswers(answer("a", "b"), answer("a", "c")).first_difference == 1
    assert em.RestrictedAnswers(answer("a", "b"), answer("a", "b", "b")).first_difference == 2
    assert em.RestrictedAnswers(answer("a"), answer("a", finished=False)).first_difference == 1


# ------------------------------------------------------------------ the three families (#32)


def test_each_family_uses_its_own_mask_for_one_sentence():
    src, tgt = ("h", "i", "!"), ("<bos>", "h", "i", "!")
    masks = {(m.family, m.part): m for m in em.family_masks(src, tgt)}
    assert [m.family for m in masks.values()] == [*["encoder_decoder"] * 3, "encoder_only", "decoder_only"]
    enc, dec, cross = (masks[("encoder_decoder", p)] for p in ("encoder_self", "decoder_self", "cross"))
    assert enc.mask.shape == (3, 3) and enc.mask.all()  # padding only, and one sentence has no <pad>
    np.testing.assert_array_equal(dec.mask, np.tril(np.ones((4, 4), bool)))
    assert cross.mask.shape == (4, 3) and cross.mask.all() and cross.rows == tgt and cross.cols == src
    bert = masks[("encoder_only", "bidirectional")]
    assert bert.rows == ("[CLS]", "h", "i", "!", "[SEP]") and bert.mask.shape == (5, 5) and bert.mask.all()
    gpt = masks[("decoder_only", "causal")]
    assert gpt.rows == gpt.cols == ("h", "i", "!", "<sep>", "h", "i", "!")
    np.testing.assert_array_equal(gpt.mask, np.tril(np.ones((7, 7), bool)))
    assert not gpt.mask[0, 1]  # even a source word cannot see the next source word


def test_the_family_table_names_real_pages_and_known_notes():
    keys = {s.key for s in TOUR}
    for page, values in em.FAMILY_PAGES:
        assert page in keys and len(values) == len(em.FAMILIES)
    assert dict(em.FAMILY_PAGES)["attention"] == ("yes", "no_cross", "no_cross")
    assert dict(em.FAMILY_PAGES)["decoding"][1] == "no"  # an encoder-only model writes no text


def test_unpadded_drops_the_padding_of_both_sides():
    pair = em.PairTokens(("h", "i", "<pad>"), ("<bos>", "h", "i", "<pad>"), (5, 6, 0), (1, 5, 6, 0), 1, 1)
    alone = pair.unpadded()
    assert alone.src_tokens == ("h", "i") and alone.tgt_ids == (1, 5, 6) and alone.src_pads == alone.tgt_pads == 0

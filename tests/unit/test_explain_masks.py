"""explain.masks: the masks as the model builds them, and their effect on real attention."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from explain import masks as em
from explain.tokens import sentence_batch
from model.tasks import DEFAULT_ALPHABET
from model.tokenizer import CharTokenizer
from tests.untrained import untrained_checkpoint


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

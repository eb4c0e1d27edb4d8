"""explain.positional: the seed's worked numbers, distance-only similarity, order blindness, RoPE."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from explain import positional as pv
from tests.untrained import untrained_checkpoint

SEED_002 = [0.9093, -0.4161, 0.1987, 0.9801, 0.0200, 0.9998, 0.0020, 0.999998]


@pytest.fixture(scope="module")
def ckpt() -> SimpleNamespace:
    return untrained_checkpoint()


def test_worked_example_matches_seed_002():
    table = pv.worked_example()
    assert list(table["dimension"]) == list(range(8))
    assert list(table["function"]) == ["sin", "cos"] * 4
    np.testing.assert_allclose(table["value"], SEED_002, atol=5e-5)
    np.testing.assert_allclose(table["angle"], [2, 2, 0.2, 0.2, 0.02, 0.02, 0.002, 0.002])


def test_table_is_the_models_table():
    table = pv.pe_table(10, 8, 10000.0)
    assert table.shape == (10, 8)
    np.testing.assert_allclose(table[2], SEED_002, atol=5e-5)
    np.testing.assert_allclose(table[:, 0::2] ** 2 + table[:, 1::2] ** 2, 1.0, atol=1e-6)


def test_pair_columns_and_wavelength():
    assert pv.pair_columns(0) == (0, 1) and pv.pair_columns(31) == (62, 63)
    assert pv.wavelength(0, 64, 10000.0) == pytest.approx(2 * np.pi)
    assert pv.wavelength(16, 64, 10000.0) == pytest.approx(2 * np.pi * 100)


def test_position_similarity_is_the_tables_dot_products():
    table = pv.pe_table(20, 16, 10000.0)
    similarity = pv.position_similarity(20, 16, 10000.0)
    np.testing.assert_allclose(similarity, table @ table.T)
    np.testing.assert_allclose(np.diag(similarity), 8.0, rtol=1e-6)


@pytest.mark.parametrize(("d_model", "base"), [(2, 10.0), (8, 10000.0), (64, 10000.0), (256, 100000.0)])
def test_dot_product_depends_only_on_the_offset(d_model, base):
    starts = (0, 7, 23)
    values = pv.offset_similarity(d_model, base, 40, starts)
    assert values.shape == (3, 40)
    for row in values[1:]:
        np.testing.assert_allclose(row, values[0], atol=1e-4)
    assert values[0, 0] == pytest.approx(d_model / 2, rel=1e-5)  # sin^2 + cos^2 per pair


def test_relative_starts_fit_the_table():
    assert pv.relative_starts(2) == (0, 1)
    assert pv.relative_starts(50) == (0, 16, 33)
    assert max(pv.relative_starts(128)) < 128


@pytest.mark.parametrize("sentence", ["the cat sat on the mat", "hello world", "a b", "abcdef", "aa bb aa"])
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_word_shuffle_is_a_real_permutation(sentence, seed):
    shuffled, order = pv.word_shuffle(sentence, seed)
    assert sorted(order) == list(range(len(sentence)))
    assert "".join(sentence[i] for i in order) == shuffled
    if len(set(sentence.split())) > 1 or len(set(sentence)) > 1:
        assert shuffled != sentence
    assert sorted(shuffled.split()) == sorted(sentence.split()) or " " not in sentence


def test_word_shuffle_collapses_spaces_and_survives_tiny_input():
    shuffled, order = pv.word_shuffle("  the   cat ", 0)
    assert shuffled == "cat the" and len(order) == 7
    assert pv.word_shuffle("a", 3) == ("a", [0])
    assert pv.word_shuffle("", 0) == ("", [])


def test_without_positional_encoding_attention_only_permutes(ckpt):
    result = pv.order_blindness(ckpt, "the cat sat on the mat", seed=0, use_pe=False)
    assert result.shuffled_tokens != result.tokens
    assert result.max_attention_diff < 1e-5
    assert result.max_output_diff < 1e-4
    np.testing.assert_allclose(result.restored, result.original, atol=1e-6)


def test_with_positional_encoding_order_matters(ckpt):
    result = pv.order_blindness(ckpt, "the cat sat on the mat", seed=0, use_pe=True)
    assert result.max_attention_diff > 1e-3
    assert result.max_output_diff > 1e-3


@pytest.mark.parametrize("sentence", ["aaaa", "ab ab ab", "a", "x x"])
@pytest.mark.parametrize("seed", [0, 3])
def test_a_shuffle_that_spells_the_same_sentence_is_the_identity(sentence, seed):
    shuffled, order = pv.word_shuffle(sentence, seed)
    assert shuffled == " ".join(sentence.split()) and order == list(range(len(shuffled)))


@pytest.mark.parametrize("use_pe", [False, True])
def test_identical_tokens_give_no_difference_and_say_why(ckpt, use_pe):
    """'aaaa': every order is this very sentence, so the numbers are 0 and the verdict says so."""
    result = pv.order_blindness(ckpt, "aaaa", seed=0, use_pe=use_pe)
    assert result.same_sentence and result.verdict == "same_sentence"
    assert result.max_attention_diff == 0.0 and result.max_output_diff == 0.0
    np.testing.assert_array_equal(result.restored, result.original)


def test_the_verdict_follows_the_measured_difference(ckpt):
    off = pv.order_blindness(ckpt, "the cat sat on the mat", seed=0, use_pe=False)
    on = pv.order_blindness(ckpt, "the cat sat on the mat", seed=0, use_pe=True)
    assert off.verdict == "blind" and off.max_attention_diff <= pv.ORDER_TOLERANCE
    assert on.verdict == "sees_order" and on.max_attention_diff > pv.ORDER_TOLERANCE
    unchanged = pv.OrderBlindness(**{**on.__dict__, "max_attention_diff": 0.0})
    assert unchanged.verdict == "no_change"  # PE on but nothing measured: the sentence must not claim a change


def test_rope_starts_fit_the_matrix():
    assert pv.rope_starts(50) == (0, 12, 24)
    assert pv.rope_starts(2) == (0, 1)
    assert max(pv.rope_starts(128)) < pv.ROPE_MAX_POSITIONS


def test_rope_scores_depend_only_on_the_offset():
    rope, additive = pv.rope_scores(16, 10000.0, 12)
    for k in range(-11, 12):
        diagonal = np.diagonal(rope, offset=k)
        np.testing.assert_allclose(diagonal, diagonal[0], atol=1e-4)
    assert np.ptp(np.diagonal(additive, offset=1)) > 1e-2  # the added table is not purely relative


def test_rope_circle_keeps_the_length_and_turns_by_theta():
    points = pv.rope_circle(16, 10000.0, pair=0, positions=5)
    radii = np.hypot(points[:, 0], points[:, 1])
    np.testing.assert_allclose(radii, radii[0], rtol=1e-5)
    angles = np.unwrap(np.arctan2(points[:, 1], points[:, 0]))
    np.testing.assert_allclose(np.diff(angles), 1.0, atol=1e-4)  # theta_0 = base^0 = 1 radian


@pytest.mark.parametrize("sentence", ["猫坐在垫子上。", "hello", "狗饿了，因为它没有吃东西。"])
def test_a_word_model_given_one_word_shuffles_nothing(sentence):
    """A word model reads a text without spaces (Chinese typed into the en-zh model) as one word: there is no
    order to shuffle, so the three maps are the same sentence (found by bench/load.py --random-controls)."""
    from tests.app.test_crafted_checkpoints import en_zh_words_as
    from model.checkpoint import load_checkpoint

    words = load_checkpoint(en_zh_words_as("en-zh"), map_location="cpu")
    result = pv.order_blindness(words, sentence, 0, True)
    assert result.shuffled_tokens == result.tokens
    for seed in range(4):  # and a sentence of several words still shuffles its words
        several = pv.order_blindness(words, "the cat sat on the mat .", seed, True)
        assert sorted(several.shuffled_tokens) == sorted(several.tokens) and len(several.tokens) == 7


def test_binary_digits_count_like_bits_and_sine_columns_are_the_tables():
    from explain.positional import binary_digits, pe_table, sine_columns

    digits = binary_digits(6)
    assert digits.tolist() == [[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 0, 1], [1, 0, 1]]
    assert binary_digits(1).shape == (1, 1) and binary_digits(2).shape == (2, 1) and binary_digits(65).shape == (65, 7)
    assert all(int("".join(map(str, row[::-1])), 2) == p for p, row in enumerate(binary_digits(50)))
    np.testing.assert_array_equal(sine_columns(10, 8, 10000.0), pe_table(10, 8, 10000.0)[:, [0, 2, 4, 6]])

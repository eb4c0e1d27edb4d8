"""The small worked examples printed in the seed notes (../shared/seeds/), pinned."""
import torch
from torch.nn import functional as F

from model import decoder_mask, label_smoothed_cross_entropy, look_ahead_mask, padding_mask, positional_encoding

T, F_ = True, False


def test_positional_encoding_d8_pos2_matches_seed_002():
    expected = torch.tensor([0.9093, -0.4161, 0.1987, 0.9801, 0.0200, 0.9998, 0.0020, 0.999998])
    assert torch.allclose(positional_encoding(3, 8)[2], expected, atol=1e-4)


def test_positional_encoding_even_columns_sin_odd_cos_and_base_is_configurable():
    pe = positional_encoding(50, 16, base=100.0)
    p = torch.arange(50.0)
    assert torch.allclose(pe[:, 2], torch.sin(p / 100.0 ** (2 / 16)), atol=1e-6)
    assert torch.allclose(pe[:, 3], torch.cos(p / 100.0 ** (2 / 16)), atol=1e-6)


def test_padding_mask_matches_seed_004():
    seq = torch.tensor([[5, 7, 9, 0, 0], [8, 6, 0, 0, 0]])
    m = padding_mask(seq)
    assert m.shape == (2, 1, 1, 5) and m.dtype == torch.bool
    assert m.squeeze().tolist() == [[T, T, T, F_, F_], [T, T, F_, F_, F_]]


def test_look_ahead_mask_matches_seed_004():
    assert look_ahead_mask(5).tolist() == [
        [T, F_, F_, F_, F_],
        [T, T, F_, F_, F_],
        [T, T, T, F_, F_],
        [T, T, T, T, F_],
        [T, T, T, T, T],
    ]


def test_decoder_mask_of_seed_004_input_with_its_misprint_corrected():
    # Seed 004 prints [T,T,T,T,F] for the last two rows of the mask of [[1, 2, 3, 0, 0]]. Its own
    # code (look-ahead AND padding) gives [T,T,T,F,F]: position 3 holds <pad> (id 0), so its key
    # column must be False for every query, including queries 3 and 4.
    m = decoder_mask(torch.tensor([[1, 2, 3, 0, 0]]))
    assert m.shape == (1, 1, 5, 5)
    assert m[0, 0].tolist() == [
        [T, F_, F_, F_, F_],
        [T, T, F_, F_, F_],
        [T, T, T, F_, F_],
        [T, T, T, F_, F_],
        [T, T, T, F_, F_],
    ]


def test_softmax_of_1_2_3_matches_seed_004():
    assert torch.allclose(torch.tensor([1.0, 2.0, 3.0]).softmax(-1), torch.tensor([0.0900, 0.2447, 0.6652]), atol=1e-4)


def test_cross_entropy_example_of_seed_004():
    logits = torch.tensor([[2.0, 0.5], [0.5, 2.0]])
    target = torch.tensor([0, 1])
    ours = label_smoothed_cross_entropy(logits, target, epsilon=0.0, pad_id=None)
    assert abs(ours.item() - 0.2014133334159851) < 1e-6
    assert abs(F.cross_entropy(logits, target).item() - ours.item()) < 1e-7

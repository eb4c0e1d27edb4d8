"""What the pages say is what the model does (#35): the token position i must guess is at position i + 1 of the
decoder's input, and a hidden score is the most negative finite float, not −∞, with fully hidden rows set to zeros
(Masks, items 1 and 13); a zero update leaves the vector unchanged only before LayerNorm (Residual stream, 12)."""
from __future__ import annotations

import torch

from model.attention import masked_softmax
from model.tasks import batch_from_pairs
from model.tokenizer import CharTokenizer
from ui.i18n import translate


def test_position_1_must_guess_the_token_at_position_2_of_the_decoder_input():
    batch = batch_from_pairs([("abcd", "abcd")], CharTokenizer("abcd"))
    assert batch.tgt_out[0, 1] == batch.tgt_in[0, 2]  # the label of position 1 is what position 2 reads
    assert "position 1 can read position 2, the very token it is meant to guess" in translate("masks.try_this", "en")
    assert "位置 1 可以读到位置 2——正是它本该去猜的那个词元" in translate("masks.try_this", "zh")
    assert "position 5" not in translate("masks.try_this", "en") and "位置 5" not in translate("masks.try_this", "zh")


def test_a_hidden_score_is_the_most_negative_float_and_a_fully_hidden_row_is_zero():
    scores = torch.tensor([[0.5, -1.0, 2.0], [0.5, -1.0, 2.0]])
    mask = torch.tensor([[True, False, True], [False, False, False]])
    weights = masked_softmax(scores, mask)
    assert weights[0, 1] == 0 and torch.equal(weights[1], torch.zeros(3))  # zeros, not NaN
    assert f"{torch.finfo(torch.float32).min:.1e}" == "-3.4e+38"
    assert "−3.4·10³⁸" in translate("masks.intro", "en") and "−3.4·10³⁸" in translate("masks.intro", "zh")
    assert "instead of the NaN" in translate("masks.intro", "en") and "NaN" in translate("masks.intro", "zh")


def test_the_residual_intro_says_a_zero_update_is_renormalised_in_post_norm_layers():
    from model.checkpoint import available_pretrained, load_checkpoint, pretrained_path
    from ui.models import LANGUAGE_DEFAULTS
    for default in LANGUAGE_DEFAULTS.values():
        if default in available_pretrained():
            assert not load_checkpoint(pretrained_path(default)).model.config.norm_first  # "the default models"
    assert "post-norm" in translate("residual_stream.intro", "en") and "LayerNorm" in translate("residual_stream.intro", "en")
    assert "后置归一化" in translate("residual_stream.intro", "zh") and "LayerNorm" in translate("residual_stream.intro", "zh")

""""Use mine" without the sandbox: :func:`in_model` with the references (trusted code) gives the model's own
maps, answer and loss; a planted mistake gives its symptom; what the page hands in is checked."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from explain.exercises import EXERCISES, reference_function
from explain.exercises.use_mine import FUNCTIONS, LOSS, batch_ids, in_model, sentence_ids
from explain.tokens import batch_of
from model.checkpoint import load_checkpoint

ROOT = Path(__file__).resolve().parents[2]
MODEL = "copy"
BY_FUNCTION = {ex.function: ex for ex in EXERCISES.values() if ex.function in FUNCTIONS}


@pytest.fixture(scope="module")
def ckpt():
    return load_checkpoint((ROOT / "assets" / "checkpoints" / f"{MODEL}.pt").read_bytes(), map_location="cpu")


@pytest.fixture(scope="module")
def one(ckpt):
    return sentence_ids(ckpt, "hello world", "hello world")


@pytest.fixture(scope="module")
def padded(ckpt):
    return batch_ids(batch_of(ckpt, ("a longer sentence", "hi!")))


def learner(function: str, bug: str | None = None):
    """The function a learner would write: the reference's own source, or a planted mistake, compiled here
    (trusted: both are written in this project)."""
    ex = BY_FUNCTION[function]
    if bug is None:
        return reference_function(ex)
    namespace: dict = {}
    exec(compile(ex.bug(bug).source, "<bug>", "exec"), namespace)  # noqa: S102 - a planted bug of this project
    return namespace[ex.function]


def test_every_use_mine_function_is_an_exercise():
    assert set(BY_FUNCTION) == set(FUNCTIONS)


def test_sentence_ids_are_the_forward_the_pages_make(ckpt, one):
    src, tgt_in, labels = one
    assert len(src[0]) == len("hello world") and tgt_in[0][0] == 1 and labels[0][-1] == 2  # <bos> … / … <eos>
    assert tgt_in[0][1:] == labels[0][:-1]  # shifted right by one


@pytest.mark.parametrize("function", [f for f in FUNCTIONS if f != LOSS])
@pytest.mark.parametrize("batch", ["one", "padded"])
def test_the_reference_inside_the_model_gives_the_models_own_maps_and_answer(function, batch, request):
    ids = request.getfixturevalue(batch)
    row = 1 if batch == "padded" else 0
    ours = in_model(None, function, MODEL, *ids, row)
    mine = in_model(learner(function), function, MODEL, *ids, row)
    for a, b in zip(ours[:3], mine[:3]):
        assert a.shape == b.shape and np.abs(a - b).max() < 1e-4
    assert (ours[3] == mine[3]).all()


@pytest.mark.parametrize(("function", "bug", "index"), [
    ("scaled_dot_product_attention", "mask_polarity", 0),
    ("look_ahead_mask", "polarity", 1),
    ("look_ahead_mask", "upper", 1),
    ("positional_encoding", "sin_cos_swapped", 0),
    ("layer_norm", "gamma_beta_swapped", 0),
])
def test_a_planted_mistake_changes_what_the_page_draws(function, bug, index, one):
    ours = in_model(None, function, MODEL, *one)
    mine = in_model(learner(function, bug), function, MODEL, *one)
    assert not np.allclose(np.nan_to_num(mine[index], nan=9.0), ours[index], atol=1e-3)


def test_a_padding_mask_that_ignores_pads_shows_only_with_padding(one, padded):
    """A mask that hides nothing: the row padded to the longer sentence's length attends to its pads; the
    unpadded sentence is untouched by it. (The planted "pad_id_ignored" shows only for a pad id other
    than 0; these models pad with 0.)"""
    def wrong(ids, pad_id):
        return torch.ones_like(ids, dtype=torch.bool)[:, None, None, :]

    same = in_model(wrong, "padding_mask", MODEL, *one)
    assert np.abs(same[0] - in_model(None, "padding_mask", MODEL, *one)[0]).max() < 1e-6
    ours, mine = in_model(None, "padding_mask", MODEL, *padded, 1), in_model(wrong, "padding_mask", MODEL, *padded, 1)
    real = sum(1 for i in padded[0][1] if i != 0)
    assert ours[0][:, :, :, real:].max() == 0  # the model's own: no attention on a pad
    assert mine[0][:, :, :, real:].max() > 0.01


def test_the_loss_is_scored_position_by_position(one, padded):
    ours = in_model(None, LOSS, MODEL, *one)
    mine = in_model(learner(LOSS), LOSS, MODEL, *one)
    assert ours[0].shape == (len(one[2][0]),) and ours[1].shape == (1,)
    assert np.allclose(ours[0], mine[0], atol=1e-5) and np.allclose(ours[1], mine[1], atol=1e-5)
    assert abs(float(ours[0].mean()) - float(ours[1][0])) < 1e-4  # one sentence, no pads: the mean of the positions
    wrong = in_model(learner(LOSS, "softmax_axis"), LOSS, MODEL, *one)
    assert np.abs(wrong[0] - ours[0]).max() > 0.01
    assert (wrong[0] > 0.1).all()  # each position scored on the whole row: the wrong axis is wrong everywhere
    assert abs(float(wrong[0].mean()) - float(wrong[1][0])) < 1e-4  # (on one position alone it would give 0)
    padded_loss = in_model(None, LOSS, MODEL, *padded, 1)[0]
    assert np.isnan(padded_loss[-1]) and np.isfinite(padded_loss[0])  # a pad label has no loss


@pytest.mark.parametrize(("args", "message"), [
    (("../secrets", [[5]], [[1]], [[2]]), "shipped model"),
    ((MODEL, [[5, 999]], [[1]], [[2]]), "src"),
    ((MODEL, [[-1]], [[1]], [[2]]), "src"),
    ((MODEL, [[5]], [[1, 4]], [[2]]), "shapes"),
    ((MODEL, [[5]], [[1]], [[2]], 3), "shapes"),
])
def test_what_the_page_hands_in_is_checked(args, message):
    with pytest.raises(ValueError, match=message):
        in_model(None, "look_ahead_mask", *args)


def test_only_the_use_mine_functions_run():
    with pytest.raises(ValueError, match="does not run"):
        in_model(None, "noam_lr", MODEL, [[5]], [[1]], [[2]])

"""The pretrained models shipped in assets/checkpoints/: they load, are small, and really solve their task."""
import random

import pytest
import torch

from model.checkpoint import load_checkpoint, pretrained_path
from model.tasks import batch_from_pairs, exact_match, get_task
from model.training import greedy_batch
from model.transformer import ForwardOptions

REQUIRED = {"copy": 0.99, "reverse": 0.99, "sort": 0.99, "dates": 0.97}
FRESH_SEED = 20261122  # not the training seed (0) nor its held-out set's


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/unit/conftest.py


@pytest.mark.slow
@pytest.mark.parametrize("task_name", list(REQUIRED))
def test_shipped_model_solves_fresh_samples(task_name):
    path = pretrained_path(task_name)
    assert path.exists(), f"{path} is missing: train it with the command in the README"
    assert path.stat().st_size < 2 * 2**20
    ckpt = load_checkpoint(path, map_location="cpu")
    assert ckpt.task["name"] == task_name
    task = get_task(task_name)
    assert task.max_src_len >= 32 or task_name == "dates"
    pairs = task.sample_pairs(random.Random(FRESH_SEED), 500)
    batch = batch_from_pairs(pairs, ckpt.tokenizer)
    out = greedy_batch(ckpt.model, batch.src, task.max_tgt_len + 1, ForwardOptions(need_weights=False))
    predictions = [ckpt.tokenizer.decode(row) for row in out.tolist()]
    accuracy = exact_match(predictions, [t for _, t in pairs])
    assert accuracy >= REQUIRED[task_name], f"{task_name}: {accuracy:.3f} exact match on 500 fresh samples"


def test_shipped_models_take_typed_input_of_32_characters():
    ckpt = load_checkpoint(pretrained_path("reverse"), map_location="cpu")
    text = "the quick brown fox, 32 chars!!!"[:32]
    assert len(text) == 32
    src = torch.tensor([ckpt.tokenizer.encode(text)])
    out = greedy_batch(ckpt.model, src, 40, ForwardOptions(need_weights=False))
    assert ckpt.tokenizer.decode(out[0].tolist()) == text[::-1]

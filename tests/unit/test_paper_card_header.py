"""Home's paper card (#31) read from a checkpoint's header (model/checkpoint_header.py): the same values as a full
load gives for every shipped model, and every hostile file refused as a full load refuses it, with no model built."""
from __future__ import annotations

import io

import pytest
import torch

from explain.paper_card import of_checkpoint, of_checkpoint_file, of_saved
from model.checkpoint import CheckpointError, load_checkpoint
from model.checkpoint_header import CheckpointHeader, read_header
from tests.hostile_checkpoints import hostile_checkpoints
from ui import models

pytestmark = pytest.mark.filterwarnings("ignore:Detected pickle protocol")

SHIPPED = models.shipped_models()
SUITE = hostile_checkpoints()
# What a header leaves out (its docstring says why): the weights, and the total parameter count of the model.
WEIGHT_REASONS = {"bad_weights", "missing_weights", "unexpected_weights", "shape_mismatch", "non_finite",
                  "hollow_weights", "huge_weights"}
PARAMETER_COUNT_ONLY = {"too_many_parameters"}  # every size within its limit, their product over 2,000,000


def refusal(read, data: bytes) -> CheckpointError:
    with pytest.raises(CheckpointError) as info:
        read(data)
    return info.value


@pytest.mark.skipif(not SHIPPED, reason="no shipped model in assets/checkpoints")
@pytest.mark.parametrize("name", SHIPPED)
def test_the_header_gives_every_shipped_model_the_values_of_a_full_load(name):
    path = models.checkpoint_path(name)
    ckpt = load_checkpoint(path, map_location="cpu")
    header = read_header(path)
    assert header.config == ckpt.config == ckpt.model.config
    assert header.history == ckpt.history and header.task == ckpt.task
    mine = of_checkpoint_file(str(path), models.shipped_key(name))
    assert mine == of_saved(header) == of_checkpoint(ckpt)
    assert mine["d_k"] == ckpt.model.encoder_layers[0].self_attn.d_k  # the width the model's heads really have
    assert (mine["dropout"], mine["label_smoothing"]) == (ckpt.history["config"]["dropout"],
                                                          ckpt.history["config"]["label_smoothing"])
    assert mine["warmup"] == ckpt.history["config"]["warmup"]


@pytest.mark.parametrize("name", list(SUITE))
def test_a_hostile_file_is_refused_as_a_full_load_refuses_it(name):
    hostile = SUITE[name]
    if hostile.reason in WEIGHT_REASONS or name in PARAMETER_COUNT_ONLY:
        assert isinstance(read_header(hostile.data), CheckpointHeader)  # nothing built from it: nothing to guard
        return
    header_error = refusal(read_header, hostile.data)
    assert header_error.reason == hostile.reason
    assert str(header_error) == str(refusal(lambda data: load_checkpoint(data, map_location="cpu"), hostile.data))


@pytest.mark.skipif(not SHIPPED, reason="no shipped model in assets/checkpoints")
@pytest.mark.parametrize("fraction", [0.0, 0.001, 0.5, 0.99])
def test_a_truncated_file_gives_no_values_and_no_traceback(tmp_path, fraction):
    data = models.checkpoint_path(SHIPPED[0]).read_bytes()
    path = tmp_path / "cut.pt"
    path.write_bytes(data[: int(len(data) * fraction)])
    assert refusal(read_header, path).reason == ("empty" if fraction == 0 else "truncated")
    assert of_checkpoint_file(str(path), "cut") is None


def test_a_missing_file_a_foreign_file_and_the_size_bound(tmp_path):
    assert of_checkpoint_file(str(tmp_path / "none.pt"), "none") is None
    foreign = io.BytesIO()
    torch.save({"weights": torch.zeros(2)}, foreign)
    assert refusal(read_header, foreign.getvalue()).reason == "not_checkpoint"
    assert refusal(lambda data: read_header(data, max_bytes=16), foreign.getvalue()).reason == "too_large"
    with pytest.raises(ValueError):
        read_header(foreign.getvalue(), max_bytes=0)

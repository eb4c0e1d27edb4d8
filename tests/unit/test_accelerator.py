"""The model on an accelerator (CUDA or Apple MPS) agrees with the same model on the CPU.

The CPU is the reference: the same weights, inputs and switches go through both, and every
logit, attention map and decoded token must match. On a machine without an accelerator (the
project's own CI) every test here is skipped with that reason; run them where there is one:

    python -m pytest tests/unit/test_accelerator.py
"""
import io
import random

import pytest
import torch

from model import Transformer, TransformerConfig
from model.checkpoint import available_pretrained, load_checkpoint, pretrained_path
from model.decoding import beam_search, greedy_decode, sample_decode, teacher_forced_predictions
from model.device import pick_device
from model.tasks import get_task
from model.training import TrainingConfig, TrainingRun

ACCELERATORS = [
    kind for kind, present in (
        ("cuda", torch.cuda.is_available()),
        ("mps", bool(getattr(torch.backends, "mps", None)) and torch.backends.mps.is_available()),
    ) if present
]
pytestmark = pytest.mark.skipif(not ACCELERATORS, reason="no CUDA or MPS device on this machine")
# A device each test runs on (the parameter list cannot be empty, so CPU stands in when skipped).
DEVICES = ACCELERATORS or ["cpu"]
# fp32 on both sides; the GPU's kernels add in another order, and its attention may take TF32 paths.
ATOL = 2e-4


@pytest.fixture(autouse=True)
def exact_fp32():
    """No TF32 matmuls for the comparison: the point is the code path, not the number format."""
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32 = before


def twin_models(device: str, **config) -> tuple[Transformer, Transformer]:
    torch.manual_seed(0)
    cfg = TransformerConfig(20, 22, d_model=32, n_heads=4, n_layers=2, d_ff=64, dropout=0.0, max_len=16, **config)
    cpu = Transformer(cfg).eval()
    other = Transformer(cfg).eval()
    other.load_state_dict(cpu.state_dict())
    return cpu, other.to(device)


def padded_batch() -> tuple[torch.Tensor, torch.Tensor]:
    src = torch.tensor([[5, 6, 7, 8, 9, 3], [10, 11, 12, 0, 0, 0]])  # second row padded (pad id 0)
    tgt = torch.tensor([[1, 5, 6, 7, 8], [1, 10, 11, 0, 0]])
    return src, tgt


@pytest.mark.parametrize("device", DEVICES)
def test_pick_device_prefers_the_accelerator(device):
    assert pick_device().type == device
    assert pick_device("cpu").type == "cpu"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("switches", [
    dict(),
    dict(use_padding_mask=False),
    dict(use_look_ahead_mask=False),
    dict(scale_scores=False, use_positional_encoding=False),
    dict(ablate_heads=[("encoder", 0, 1), ("cross", 1, 3)]),
])
def test_forward_with_every_attention_map_matches_the_cpu(device, norm_first, switches):
    cpu, acc = twin_models(device, norm_first=norm_first)
    src, tgt = padded_batch()
    with torch.inference_mode():
        want = cpu(src, tgt, need_details=True, **switches)
        got = acc(src.to(device), tgt.to(device), need_details=True, **switches)
    assert got.logits.device.type == device
    torch.testing.assert_close(got.logits.cpu(), want.logits, atol=ATOL, rtol=1e-4)
    for kind in ("encoder_attention", "decoder_attention", "cross_attention"):
        for w_got, w_want in zip(getattr(got, kind), getattr(want, kind), strict=True):
            torch.testing.assert_close(w_got.cpu(), w_want, atol=ATOL, rtol=1e-4)
            rows = w_got.sum(-1)
            assert torch.allclose(rows, torch.ones_like(rows), atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_fast_training_path_matches_the_explicit_one_on_the_device(device):
    """need_weights=False takes SDPA (flash/efficient kernels on CUDA); its logits equal the explicit path's."""
    _, acc = twin_models(device)
    src, tgt = padded_batch()
    with torch.inference_mode():
        fast = acc(src.to(device), tgt.to(device), need_weights=False)
        slow = acc(src.to(device), tgt.to(device), need_weights=True)
    assert fast.decoder_attention == ()
    torch.testing.assert_close(fast.logits, slow.logits, atol=ATOL, rtol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("task", available_pretrained())
def test_shipped_model_decodes_the_same_on_the_device(device, task):
    cpu = load_checkpoint(pretrained_path(task), map_location="cpu")
    acc = load_checkpoint(pretrained_path(task), map_location=device)
    assert acc.model.device.type == device
    tok = cpu.tokenizer
    for text, _target in get_task(task).sample_pairs(random.Random(7), 3):  # words or characters, as the task has
        src = tok.encode(text)
        max_len = cpu.config.max_len
        g_cpu, g_acc = (greedy_decode(c.model, src, max_len=max_len) for c in (cpu, acc))
        assert g_acc.tokens == g_cpu.tokens
        assert g_acc.score == pytest.approx(g_cpu.score, abs=1e-3)
        for s_cpu, s_acc in zip(g_cpu.steps, g_acc.steps, strict=True):
            # what the pages draw comes back as CPU tensors, whatever the model runs on
            assert s_acc.decoder_attention.device.type == "cpu"
            torch.testing.assert_close(s_acc.cross_attention, s_cpu.cross_attention, atol=ATOL, rtol=1e-4)
            assert s_acc.top_ids == s_cpu.top_ids
        b_cpu, b_acc = (beam_search(c.model, src, beam_size=3, max_len=max_len) for c in (cpu, acc))
        assert b_acc.tokens == b_cpu.tokens
        t_cpu, t_acc = (teacher_forced_predictions(c.model, src, g_cpu.tokens) for c in (cpu, acc))
        assert t_acc.predicted_ids == t_cpu.predicted_ids
        assert t_acc.score == pytest.approx(t_cpu.score, abs=1e-3)
        first, second = (sample_decode(acc.model, src, temperature=1.0, top_k=3, seed=0, max_len=max_len)
                         for _ in range(2))
        assert first.tokens == second.tokens  # the seed decides the sample on the device too


@pytest.mark.parametrize("device", DEVICES)
def test_training_on_the_device_learns_and_its_checkpoint_loads_on_the_cpu(device):
    cfg = TrainingConfig(task="copy", task_max_len=5, preset="tiny", batch_size=32, warmup=400, eval_every=50,
                         eval_size=50, probe_every=25, max_steps=150, max_seconds=120)
    run = TrainingRun(cfg, device=device)
    snap = run.train_until_done()
    assert snap.device.startswith(device)
    assert snap.step == 150
    assert all(torch.isfinite(torch.tensor(snap.losses)))
    assert sum(snap.losses[-20:]) / 20 < sum(snap.losses[:20]) / 20  # it learns something
    assert snap.probes and snap.probes[-1].cross_attention  # the probe's attention reached the UI side
    again = TrainingRun(cfg, device=device).train_until_done()
    # the seed decides the run on the device too (its attention backward may add in any order)
    assert again.losses[:10] == pytest.approx(snap.losses[:10], rel=1e-3)

    loaded = load_checkpoint(io.BytesIO(run.checkpoint_bytes()), map_location="cpu")
    src = loaded.tokenizer.encode("abc")
    with torch.inference_mode():
        on_device = run.model.eval()(torch.tensor([src], device=device), torch.tensor([[1, 5]], device=device))
        on_cpu = loaded.model(torch.tensor([src]), torch.tensor([[1, 5]]))
    torch.testing.assert_close(on_device.logits.cpu(), on_cpu.logits, atol=ATOL, rtol=1e-4)

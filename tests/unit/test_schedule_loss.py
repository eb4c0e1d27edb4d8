"""Warmup (Noam) schedule and label-smoothed loss."""
import pytest
import torch
from torch.nn import functional as F

from model import label_smoothed_cross_entropy, noam_lr, noam_scheduler


def test_noam_rises_linearly_then_peaks_at_warmup_then_decays_as_inverse_sqrt():
    d, w, f = 512, 4000, 2.0
    assert noam_lr(200, d, w, f) == pytest.approx(2 * noam_lr(100, d, w, f))  # linear rise
    peak = f * d ** -0.5 * w ** -0.5
    assert noam_lr(w, d, w, f) == pytest.approx(peak, rel=1e-12)
    assert max(noam_lr(s, d, w, f) for s in range(1, 3 * w)) == pytest.approx(peak, rel=1e-12)
    assert noam_lr(4 * w, d, w, f) == pytest.approx(peak / 2)  # step^-0.5: 4x the steps, half the rate
    assert noam_lr(0, d, w, f) == noam_lr(1, d, w, f) > 0


def test_noam_rejects_zero_warmup():
    with pytest.raises(ValueError, match="warmup"):
        noam_lr(1, 64, 0)


def test_noam_scheduler_drives_an_optimizer_with_base_lr_one():
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=1.0)
    sched = noam_scheduler(opt, d_model=64, warmup=10, factor=1.0)
    seen = []
    for _ in range(20):
        seen.append(opt.param_groups[0]["lr"])
        opt.step(), sched.step()
    assert seen == pytest.approx([noam_lr(i, 64, 10) for i in range(1, 21)])
    with pytest.raises(ValueError, match="lr must be 1.0"):
        noam_scheduler(torch.optim.SGD([p], lr=0.1), 64, 10)


def test_label_smoothing_zero_equals_cross_entropy_ignoring_padding():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 5, 7, generator=g)
    target = torch.randint(1, 7, (2, 5), generator=g)
    target[1, 3:] = 0
    ours = label_smoothed_cross_entropy(logits, target, epsilon=0.0, pad_id=0)
    ref = F.cross_entropy(logits.reshape(-1, 7), target.reshape(-1), ignore_index=0)
    assert ours.item() == pytest.approx(ref.item(), rel=1e-6)


def test_label_smoothing_matches_the_smoothed_distribution_and_ignores_padding():
    g = torch.Generator().manual_seed(1)
    V, eps = 6, 0.1
    logits = torch.randn(4, V, generator=g)
    target = torch.tensor([2, 5, 0, 1])
    q = torch.full((4, V), eps / (V - 2))
    q[:, 0] = 0
    q[torch.arange(4), target] = 1 - eps
    per_row = -(q * logits.log_softmax(-1)).sum(-1)
    expected = per_row[[0, 1, 3]].mean()
    assert label_smoothed_cross_entropy(logits, target, eps, pad_id=0).item() == pytest.approx(expected.item(), rel=1e-6)
    # a perfect, confident prediction is still penalised: smoothing discourages overconfidence
    sure = torch.full((1, V), -20.0)
    sure[0, 3] = 20.0
    assert label_smoothed_cross_entropy(sure, torch.tensor([3]), 0.1) > label_smoothed_cross_entropy(sure, torch.tensor([3]), 0.0)

"""explain.ffn: the FFN view is the model's own FFN, position-wise really is, and the parameter counts."""
from dataclasses import fields, replace

import numpy as np
import pytest
import torch

from explain import ffn
from explain.residual import decoder_target
from model.config import TransformerConfig
from model.transformer import Transformer
from tests.untrained import untrained_checkpoint

SOURCE = "hello world"


@pytest.fixture(scope="module")
def ckpt():
    return untrained_checkpoint(n_layers=2, seed=3)


def captured_ffn_io(ckpt, stack: str, layer: int, source: str):
    """(input, output) of that FFN module during the model's own forward pass (a hook, nothing re-implemented)."""
    module = (ckpt.model.encoder_layers if stack == "encoder" else ckpt.model.decoder_layers)[layer].feed_forward
    seen = {}
    handle = module.register_forward_hook(lambda m, args, out: seen.update(x=args[0], y=out))
    try:
        tok = ckpt.tokenizer
        target = decoder_target(ckpt, source).text
        with torch.no_grad():
            ckpt.model(torch.tensor([tok.encode(source)]), torch.tensor([[tok.bos_id] + tok.encode(target)]))
    finally:
        handle.remove()
    return seen["x"][0].numpy(), seen["y"][0].numpy()


@pytest.mark.parametrize("stack", ["encoder", "decoder"])
@pytest.mark.parametrize("layer", [0, 1])
def test_the_view_equals_the_models_ffn_in_its_forward_pass(ckpt, stack, layer):
    view = ffn.ffn_view(ckpt, SOURCE, stack, layer)
    x, y = captured_ffn_io(ckpt, stack, layer, SOURCE)
    np.testing.assert_allclose(view.x, x, atol=1e-6)
    np.testing.assert_allclose(view.output, y, atol=1e-5)


def test_relu_parts_add_up(ckpt):
    view = ffn.ffn_view(ckpt, SOURCE, "encoder", 1)
    module = ckpt.model.encoder_layers[1].feed_forward
    w1, b1 = module.linear1.weight.detach().numpy(), module.linear1.bias.detach().numpy()
    w2, b2 = module.linear2.weight.detach().numpy(), module.linear2.bias.detach().numpy()
    np.testing.assert_allclose(view.pre, view.x @ w1.T + b1, atol=1e-5)
    np.testing.assert_array_equal(view.post, np.maximum(view.pre, 0))
    np.testing.assert_allclose(view.output, view.hidden @ w2.T + b2, atol=1e-5)
    np.testing.assert_allclose(view.off_share, (view.post == 0).mean(axis=1))
    assert view.kind == "relu" and view.tokens == list(SOURCE)


def test_decoder_view_reads_bos_and_the_tasks_answer(ckpt):
    view = ffn.ffn_view(ckpt, "abc", "decoder", 0)
    assert view.target.origin == "task" and view.target.text == "abc"  # the copy task
    assert view.tokens == ["<bos>", "a", "b", "c"]


def swiglu_checkpoint(ckpt):
    if "ffn_kind" not in {f.name for f in fields(TransformerConfig)}:
        pytest.skip("TransformerConfig has no ffn_kind field yet")
    torch.manual_seed(0)
    model = Transformer(replace(ckpt.model.config, ffn_kind="swiglu")).eval()
    return type(ckpt)(model=model, tokenizer=ckpt.tokenizer, task=ckpt.task)


def test_swiglu_view_is_the_gate_and_equals_the_models_ffn(ckpt):
    sw = swiglu_checkpoint(ckpt)
    view = ffn.ffn_view(sw, SOURCE, "decoder", 1)
    _, y = captured_ffn_io(sw, "decoder", 1, SOURCE)
    assert view.kind == "swiglu"
    np.testing.assert_allclose(view.output, y, atol=1e-5)
    np.testing.assert_allclose(view.post, view.pre / (1 + np.exp(-view.pre)), atol=1e-5)
    np.testing.assert_allclose(view.off_share, (view.pre <= 0).mean(axis=1))


@pytest.mark.parametrize("stack", ["encoder", "decoder"])
def test_position_wise_copy_moves_only_that_position(ckpt, stack):
    result = ffn.position_wise(ckpt, SOURCE, stack, 0, copy_from=1, copy_to=4)
    assert result.twin_gap == 0.0
    assert result.ffn_change[4] > 0
    assert np.all(np.delete(result.ffn_change, 4) == 0)
    assert np.count_nonzero(result.attention_change) > 1
    if stack == "decoder":  # masked self-attention: only position 4 and the later ones may read it
        assert np.all(result.attention_change[:4] == 0)


def test_position_wise_clamps_positions_to_the_sentence(ckpt):
    result = ffn.position_wise(ckpt, "abc", "encoder", 0, copy_from=0, copy_to=99)
    assert result.copy_to == 2


def test_paper_numbers_from_the_formula():
    assert ffn.ffn_parameters(512, 2048) == 2 * 512 * 2048 + 2048 + 512 == 2_099_712
    assert ffn.attention_parameters(512) == 4 * 512 ** 2 + 4 * 512 == 1_050_624
    encoder = ffn.paper_layer_row("encoder")
    assert encoder["total"] == 2_099_712 + 1_050_624 + 2 * 1024
    assert encoder["ffn_share"] == pytest.approx(2 / 3, abs=0.001)


def test_paper_formula_counts_a_real_layer_of_that_size():
    cfg = TransformerConfig(10, 10, d_model=512, n_heads=8, n_layers=1, d_ff=2048)
    model = Transformer(cfg)
    for stack, layer in (("encoder", model.encoder_layers[0]), ("decoder", model.decoder_layers[0])):
        row = ffn.paper_layer_row(stack)
        assert sum(p.numel() for p in layer.feed_forward.parameters()) == row["ffn"]
        assert sum(p.numel() for p in layer.parameters()) == row["total"]


def test_this_models_numbers_come_from_its_modules(ckpt):
    rows = ffn.parameter_rows(ckpt)
    cfg = ckpt.model.config
    this = rows[rows["model"] == "this"].set_index("stack")
    assert this.loc["encoder", "ffn"] == 2 * cfg.d_model * cfg.d_ff + cfg.d_ff + cfg.d_model
    assert this.loc["decoder", "attention"] == 2 * (4 * cfg.d_model ** 2 + 4 * cfg.d_model)
    assert this.loc["encoder", "total"] == sum(p.numel() for p in ckpt.model.encoder_layers[0].parameters())


def test_csv_exports_hold_every_value(ckpt):
    view = ffn.ffn_view(ckpt, "abc", "encoder", 0)
    lines = ffn.activations_csv(view).strip().splitlines()
    assert lines[0] == "position,token,unit,before,after"
    assert len(lines) == 1 + 3 * view.pre.shape[1]
    assert len(ffn.output_csv(view).strip().splitlines()) == 4


@pytest.mark.parametrize(("task", "times"), [("copy", 63), ("en-zh", 16)])
def test_the_paper_layer_is_so_many_times_a_shipped_model_layer(task, times):
    """3,152,384 parameters per encoder layer in the paper's base model; 49,984 in a character model (d 64, d_ff 256),
    198,272 in the translation models (d 128, d_ff 512)."""
    from model.checkpoint import available_pretrained, load_checkpoint, pretrained_path
    if task not in available_pretrained():
        pytest.skip(f"no shipped {task} model")
    assert round(ffn.layer_size_ratio(load_checkpoint(pretrained_path(task)))) == times

"""Each head's width set apart from d_model / n_heads (``TransformerConfig.head_dim``): the projections widen
with it, the parameter count follows the formula, the forward, the trace and the checkpoint carry it, and a
checkpoint with a hostile width is refused before anything is built."""
import io

import pytest
import torch

from model import Transformer, TransformerConfig
from model.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from model.config import LIMITS, InvalidConfig
from model.tokenizer import CharTokenizer
from model.trace import Trace

TOK = CharTokenizer("abcd")
TASK = {"name": "copy", "min_len": 3, "max_len": 5, "alphabet": "abcd"}


def config(**kw) -> TransformerConfig:
    sizes = dict(d_model=32, n_heads=4, n_layers=1, d_ff=64, dropout=0.0, max_len=16)
    return TransformerConfig(TOK.vocab_size, TOK.vocab_size, **{**sizes, **kw})


def attention_parameters(d_model: int, n_heads: int, d_k: int) -> int:
    """W_Q, W_K, W_V (d_model → H·d_k, with biases) and W^O (H·d_k → d_model, with its bias)."""
    width = n_heads * d_k
    return 3 * (d_model * width + width) + width * d_model + d_model


@pytest.mark.parametrize("n_heads, head_dim", [(4, None), (1, 32), (1, 128), (4, 32), (2, 5)])
def test_the_attention_weights_have_the_widths_and_count_of_the_formula(n_heads, head_dim):
    cfg = config(n_heads=n_heads, head_dim=head_dim)
    d_k = 32 // n_heads if head_dim is None else head_dim
    assert cfg.d_k == d_k and cfg.attention_width == n_heads * d_k
    model = Transformer(cfg)
    attention = model.encoder_layers[0].self_attn
    assert tuple(attention.in_proj.weight.shape) == (3 * n_heads * d_k, 32)
    assert tuple(attention.out_proj.weight.shape) == (32, n_heads * d_k)
    assert sum(p.numel() for p in attention.parameters()) == attention_parameters(32, n_heads, d_k)


def test_one_head_as_wide_as_the_model_has_the_parameters_of_the_split_heads_and_a_wider_one_has_more():
    split, one, wide = (Transformer(config(**kw)).num_params()
                        for kw in (dict(n_heads=4), dict(n_heads=1), dict(n_heads=1, head_dim=4 * 32)))
    assert split == one  # d_k = d_model / h: the heads, not the parameters, differ
    # Three attentions (encoder self, decoder self, cross), each 4× as wide: 3·(attention(32, 1, 128) − attention(32, 1, 32)).
    assert wide - one == 3 * (attention_parameters(32, 1, 128) - attention_parameters(32, 1, 32))


def test_the_trace_records_heads_of_the_set_width_and_the_output_keeps_d_model():
    torch.manual_seed(0)
    model = Transformer(config(n_heads=2, head_dim=24)).eval()
    trace = Trace()
    src, tgt = torch.tensor([[4, 5, 6, 7]]), torch.tensor([[1, 4, 5]])
    out = model(src, tgt, trace=trace)
    assert tuple(trace["encoder.0.self_attn.q"].shape) == (1, 2, 4, 24)
    assert tuple(trace["decoder.0.cross_attn.k"].shape) == (1, 2, 4, 24)
    assert tuple(trace["decoder.0.cross_attn.concat"].shape) == (1, 3, 48)
    assert tuple(trace["decoder.0.cross_attn.out"].shape) == (1, 3, 32)
    torch.testing.assert_close(out.logits, model(src, tgt).logits)  # the SDPA path (no trace) agrees


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "16", LIMITS.head_dim + 1])
def test_a_bad_head_width_is_refused_with_its_sentence(bad):
    with pytest.raises(InvalidConfig) as info:
        config(head_dim=bad)
    assert info.value.problem.code == "head_dim"


def test_heads_that_together_are_wider_than_the_limit_are_refused():
    with pytest.raises(InvalidConfig):
        config(n_heads=8, head_dim=LIMITS.attention_width // 8 + 1)
    assert config(n_heads=3, head_dim=8).attention_width == 24  # heads need not split d_model once d_k is set


def test_a_checkpoint_keeps_the_width_and_the_answers():
    torch.manual_seed(1)
    model = Transformer(config(n_heads=1, head_dim=96)).eval()
    buffer = io.BytesIO()
    save_checkpoint(buffer, model, TOK, TASK, {})
    loaded = load_checkpoint(buffer.getvalue(), map_location="cpu")
    assert loaded.config.head_dim == 96 and loaded.config == model.config
    src, tgt = torch.tensor([[4, 5, 6, 7]]), torch.tensor([[1, 4, 5]])
    with torch.inference_mode():
        assert torch.equal(loaded.model(src, tgt).logits, model(src, tgt).logits)


def test_a_checkpoint_without_the_field_is_the_papers_split():
    buffer = io.BytesIO()
    save_checkpoint(buffer, Transformer(config()).eval(), TOK, TASK, {})
    payload = torch.load(io.BytesIO(buffer.getvalue()), weights_only=True)
    payload["config"].pop("head_dim")
    again = io.BytesIO()
    torch.save(payload, again)
    assert load_checkpoint(again.getvalue(), map_location="cpu").config.d_k == 8


@pytest.mark.parametrize("bad", [10**9, -1, "wide", [8], 2.0])
def test_a_hostile_head_width_in_a_checkpoint_is_refused_before_anything_is_built(bad):
    buffer = io.BytesIO()
    save_checkpoint(buffer, Transformer(config()).eval(), TOK, TASK, {})
    payload = torch.load(io.BytesIO(buffer.getvalue()), weights_only=True)
    payload["config"]["head_dim"] = bad
    again = io.BytesIO()
    torch.save(payload, again)
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(again.getvalue(), map_location="cpu")
    assert info.value.reason == "bad_config"
    assert "1000000000" not in str(info.value)  # the schema names the field, never the value

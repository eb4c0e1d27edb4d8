"""What attention produces: weights · V per head, the concatenation, and W^O, read from the forward's trace and
checked against the model's own MultiHeadAttention modules."""
from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
import torch

from explain.attention import KINDS, attention_view, query_key_tokens
from explain.head_output import head_outputs, head_outputs_csv
from model.config import TransformerConfig
from model.tokenizer import CharTokenizer
from model.transformer import Transformer


class Ckpt:
    """A checkpoint as explain/ sees it: a model and a tokenizer."""

    def __init__(self, seed: int = 0, **variant) -> None:
        torch.manual_seed(seed)
        self.tokenizer = CharTokenizer("abcdefgh ")
        v = self.tokenizer.vocab_size
        self.model = Transformer(TransformerConfig(v, v, d_model=16, n_heads=4, n_layers=2, d_ff=32, dropout=0.0,
                                                   max_len=24, **variant)).eval()


def attention_module(model, kind: str, layer: int):
    """The ``MultiHeadAttention`` of ``kind`` in ``layer`` (1-based) of ``model``."""
    if kind == "encoder":
        return model.encoder_layers[layer - 1].self_attn
    block = model.decoder_layers[layer - 1]
    return block.self_attn if kind == "decoder" else block.cross_attn


def module_outputs(ckpt, source: str, target: str) -> dict[tuple[str, int], np.ndarray]:
    """(kind, layer 1-based) → (T_q, d_model) output of every attention module in one forward of the model,
    caught by forward hooks on the modules themselves."""
    caught, hooks = {}, []
    for kind in KINDS:
        for layer in range(1, ckpt.model.config.n_layers + 1):
            def keep(module, inputs, output, key=(kind, layer)):
                caught[key] = output[0][0].double().numpy()
            hooks.append(attention_module(ckpt.model, kind, layer).register_forward_hook(keep))
    try:
        attention_view(ckpt, source, target, need_details=True)
    finally:
        for hook in hooks:
            hook.remove()
    return caught


@pytest.mark.parametrize("variant", [{}, {"norm_first": True}, {"position_kind": "rope"}],
                         ids=["post-norm", "pre-norm", "rope"])
def test_concat_times_w_o_is_the_attention_modules_output(variant):
    ckpt = Ckpt(seed=3, **variant)
    source, target = "abc de", "edcba"
    view = attention_view(ckpt, source, target, need_details=True)
    caught = module_outputs(ckpt, source, target)
    for kind in KINDS:
        for layer in (1, 2):
            result = head_outputs(view, kind, layer)
            assert np.allclose(result.output, caught[(kind, layer)], atol=1e-5), (kind, layer)
            out_proj = attention_module(ckpt.model, kind, layer).out_proj  # the paper's W^O is its weight, transposed
            w_o, bias = out_proj.weight.detach().double().numpy().T, out_proj.bias.detach().double().numpy()
            assert np.allclose(result.output, result.concat @ w_o + bias, atol=1e-5), (kind, layer)


def test_shapes_of_every_step():
    ckpt = Ckpt()
    view = attention_view(ckpt, "abcdefg", "gfe", need_details=True)
    result = head_outputs(view, "cross", 1)
    t_q = len(view.tgt_tokens)  # cross-attention: the decoder's queries
    assert result.heads.shape == (4, t_q, 4)
    assert result.concat.shape == (t_q, 16)
    assert result.output.shape == (t_q, 16)
    assert (result.n_heads, result.d_k) == (4, 4)


def test_the_concatenation_puts_head_i_in_columns_i_times_d_k():
    ckpt = Ckpt()
    view = attention_view(ckpt, "abcd", need_details=True)
    result = head_outputs(view, "encoder", 2)
    for i in range(result.n_heads):
        assert np.array_equal(result.concat[:, i * 4:(i + 1) * 4], result.heads[i])


def test_a_head_output_is_a_weighted_average_of_the_values():
    """Weights · V: with rows that sum to 1, every output lies between the smallest and largest value."""
    ckpt = Ckpt()
    view = attention_view(ckpt, "hgfe", need_details=True)
    result = head_outputs(view, "decoder", 1)
    values = view.details["decoder"]["v"][0]  # (H, T, d_k)
    assert (result.heads >= values.min(axis=1, keepdims=True) - 1e-9).all()
    assert (result.heads <= values.max(axis=1, keepdims=True) + 1e-9).all()
    # The decoder's first query may only look at itself: its output is its own value.
    assert np.allclose(result.heads[:, 0], values[:, 0])


def test_csv_holds_the_chosen_head_the_concat_and_the_output():
    ckpt = Ckpt()
    view = attention_view(ckpt, "abc", need_details=True)
    result = head_outputs(view, "encoder", 1)
    queries, _ = query_key_tokens(view, "encoder")
    frame = pd.read_csv(io.StringIO(head_outputs_csv(result, queries, head=2)), keep_default_na=False)
    assert list(frame.columns) == ["matrix", "query_position", "query_token", "column", "value"]
    sizes = frame.groupby("matrix").size().to_dict()
    assert sizes == {"head_2": 3 * 4, "concat": 3 * 16, "output": 3 * 16}
    head_2 = frame[frame.matrix == "head_2"].pivot(index="query_position", columns="column", values="value")
    assert np.allclose(head_2.to_numpy(), result.heads[1], atol=1e-6)
    assert frame[frame.matrix == "output"].query_token.tolist()[:16] == [queries[0]] * 16

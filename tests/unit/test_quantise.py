"""explain.quantise: per-row int8 scales and round trip, the model's size before and after, the int8 twin
(the shipped model never changed), its answers, and one head's attention before and after."""
from __future__ import annotations

import copy
import io
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from explain import quantise as eq
from explain.attention import greedy_answer
from explain.bleu import Sample, decode_chunk
from explain.tasks import task_example
from model.checkpoint import Checkpoint, load_checkpoint
from model.config import TransformerConfig
from model.tasks import get_task
from model.transformer import Transformer

pytestmark = pytest.mark.usefixtures("one_torch_thread")
SHIPPED_COPY = Path(__file__).resolve().parents[2] / "assets" / "checkpoints" / "copy.pt"


def small_checkpoint(seed: int = 0, task: str = "copy") -> Checkpoint:
    torch.manual_seed(seed)
    tokenizer = get_task(task).source_tokenizer()
    config = TransformerConfig(tokenizer.vocab_size, tokenizer.vocab_size, d_model=16, n_heads=2, n_layers=1, d_ff=32,
                               dropout=0.0, max_len=64)
    return Checkpoint(model=Transformer(config).eval(), tokenizer=tokenizer, config=config, task={"name": task},
                      history={}, format_version=1)


@pytest.fixture(scope="module")
def shipped_copy() -> Checkpoint:
    if not SHIPPED_COPY.exists():
        pytest.skip("no shipped copy model")
    return load_checkpoint(SHIPPED_COPY, map_location="cpu")


# ------------------------------------------------------------------ one matrix


def test_each_row_gets_its_own_scale_and_its_largest_weight_becomes_127():
    w = torch.tensor([[0.5, -1.27, 0.0], [2.54, 1.0, -0.3], [0.0, 0.0, 0.0]])
    got = eq.quantise_rows(w)
    assert got.q.dtype == torch.int8 and got.scale.dtype == torch.float32
    assert torch.allclose(got.scale, torch.tensor([0.01, 0.02, 1.0]))  # max|row| / 127; a zero row gets 1
    assert got.q[0].tolist() == [50, -127, 0] and got.q[1].tolist() == [127, 50, -15]
    assert got.q[2].tolist() == [0, 0, 0]


def test_round_trip_error_is_at_most_half_a_step_per_weight():
    torch.manual_seed(3)
    w = torch.randn(64, 48) * torch.logspace(-3, 1, 64)[:, None]  # rows of very different sizes
    got = eq.quantise_rows(w)
    error = (w - got.dequantised()).abs()
    assert (error <= got.scale[:, None] / 2 * (1 + 1e-5)).all()
    assert int(got.q.abs().max()) == 127 and int(got.q.min()) >= -127
    assert torch.equal(got.dequantised().abs().amax(1), w.abs().amax(1))  # each row's largest weight is exact


def test_the_int8_numbers_are_torchs_quantize_per_channel_with_the_same_scales(shipped_copy):
    """An independent computation: torch's own per-channel quantiser, zero point 0, the scales of quantise_rows."""
    for name, weight in dict(shipped_copy.model.named_parameters()).items():
        if name not in eq.quantised_names(shipped_copy.model):
            continue
        got = eq.quantise_rows(weight)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch marks its quantized tensors deprecated
            theirs = torch.quantize_per_channel(weight.detach(), got.scale.double(),
                                                torch.zeros(len(got.scale), dtype=torch.long), 0, torch.qint8)
        assert torch.equal(theirs.int_repr(), got.q), name
        assert torch.allclose(theirs.dequantize(), got.dequantised()), name


def test_a_weight_that_is_not_a_matrix_is_refused():
    with pytest.raises(ValueError, match="2 dimensions"):
        eq.quantise_rows(torch.ones(4))


# ------------------------------------------------------------------ a whole model


def test_every_linear_weight_and_both_embedding_tables_are_quantised_biases_and_norms_are_not():
    model = small_checkpoint().model
    names = eq.quantised_names(model)
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    assert len(names) == len(linears) + 2
    assert "src_embed.lookup.weight" in names and "tgt_embed.lookup.weight" in names and "generator.weight" in names
    assert not any(name.endswith("bias") or "norm" in name for name in names)


def test_size_is_about_a_quarter_plus_the_scales_and_the_float32_rest():
    ckpt = small_checkpoint()
    report = eq.quantisation_report(ckpt)
    params = dict(ckpt.model.named_parameters())
    names = eq.quantised_names(ckpt.model)
    n_quantised = sum(params[n].numel() for n in names)
    rows = sum(params[n].size(0) for n in names)
    total = sum(p.numel() for p in params.values())
    assert (report.params, report.quantised_weights, report.rows) == (total, n_quantised, rows)
    assert report.float_bytes == 4 * total
    assert report.int8_total_bytes == n_quantised + 4 * rows + 4 * (total - n_quantised)
    assert report.ratio == pytest.approx(report.int8_total_bytes / report.float_bytes)
    assert 0.25 < report.ratio < 0.25 + 4 * rows / report.float_bytes + 4 * (total - n_quantised) / report.float_bytes
    buffer = io.BytesIO()
    torch.save({name: p.detach() for name, p in params.items()}, buffer)
    assert report.float_saved_bytes == buffer.getbuffer().nbytes > report.float_bytes  # the data plus the file's names
    assert report.int8_total_bytes < report.int8_saved_bytes < report.float_saved_bytes  # tiny: the names weigh much


def test_the_shipped_copy_model_shrinks_to_about_a_quarter(shipped_copy):
    report = eq.quantisation_report(shipped_copy)
    assert 0.25 < report.ratio < 0.3 and 0.25 < report.saved_ratio < 0.32
    assert report.max_relative_error <= 0.5 + 1e-5
    assert 0 < report.mean_error < report.max_error < 0.05
    assert len(report.matrices) == len(eq.quantised_names(shipped_copy.model))


def test_the_int8_state_dict_holds_int8_weights_and_float32_scales():
    model = small_checkpoint().model
    quantised = eq.quantise_model(model)
    state = eq.int8_state_dict(model, quantised)
    for name, param in model.named_parameters():
        if name in quantised:
            assert state[name].dtype == torch.int8 and state[f"{name}.scale"].shape == (param.size(0),)
        else:
            assert state[name].dtype == torch.float32 and torch.equal(state[name], param.detach())


def test_the_int8_twin_computes_with_the_dequantised_weights_and_leaves_the_model_alone():
    ckpt = small_checkpoint()
    before = copy.deepcopy(ckpt.model.state_dict())
    twin = eq.quantised_checkpoint(ckpt)
    assert twin is eq.quantised_checkpoint(ckpt)  # built once per checkpoint
    assert all(torch.equal(before[k], v) for k, v in ckpt.model.state_dict().items())
    params = dict(twin.model.named_parameters())
    for name, item in eq.quantise_model(ckpt.model).items():
        assert torch.equal(params[name], item.dequantised())
    assert torch.equal(params["generator.bias"], dict(ckpt.model.named_parameters())["generator.bias"])
    assert not twin.model.training and twin.tokenizer is ckpt.tokenizer


def test_torchs_dynamic_quantisation_does_not_fit_this_models_modules():
    """Why the module quantises by hand: quantize_dynamic's linear layers have no weight tensor to read."""
    ckpt = small_checkpoint()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

        swapped = quantize_dynamic(copy.deepcopy(ckpt.model), {nn.Linear: per_channel_dynamic_qconfig},
                                   dtype=torch.qint8)
    assert callable(swapped.generator.weight)
    with pytest.raises(AttributeError):
        swapped.encode(torch.tensor([[4, 5, 6]]))


# ------------------------------------------------------------------ answers and attention


def test_the_quantised_shipped_copy_model_still_answers_its_example(shipped_copy):
    example = task_example(shipped_copy)
    twin = eq.quantised_checkpoint(shipped_copy)
    assert greedy_answer(shipped_copy, example) == example
    assert greedy_answer(twin, example) == example


def test_int8_answers_are_the_same_samples_and_changes_are_counted():
    ckpt = small_checkpoint(seed=1)
    before = decode_chunk(ckpt, 0, 0)
    after = eq.decode_chunk_int8(ckpt, 0, 0)
    assert [s.source for s in after] == [s.source for s in before]
    assert [s.output for s in after] == [s.output for s in decode_chunk(eq.quantised_checkpoint(ckpt), 0, 0)]
    changed = eq.changed_answers(before, after)
    assert changed == tuple(i for i in range(len(before)) if before[i].output != after[i].output)


def test_change_table_lists_only_changed_answers_marked_right_or_wrong():
    before = (Sample("ab", "ab", "ab"), Sample("cd", "cd", "cd"), Sample("ef", "ef", "ex"))
    after = (Sample("ab", "ab", "ab"), Sample("cd", "cd", "cx"), Sample("ef", "ef", "ef"))
    assert eq.changed_answers(before, after) == (1, 2)
    table = eq.change_table(before, after, {c: c for c in eq.CHANGE_COLUMNS})
    assert table["number"].tolist() == [2, 3]
    assert table["before"].tolist() == ["✓ cd", "✗ ex"] and table["after"].tolist() == ["✗ cx", "✓ ef"]
    assert eq.default_sample(before, after) == 1 and eq.default_sample(before, before) == 0
    with pytest.raises(ValueError):
        eq.changed_answers(before, after[:2] + (Sample("zz", "zz", "zz"),))


@pytest.mark.parametrize("kind", ["encoder", "decoder", "cross"])
def test_attention_pair_is_one_head_of_both_models_on_the_same_input(shipped_copy, kind):
    from explain.attention import attention_maps, attention_view

    pair = eq.attention_pair(shipped_copy, "hello world", kind, 1, 2)
    float_view = attention_view(shipped_copy, "hello world")
    int8_view = attention_view(eq.quantised_checkpoint(shipped_copy), "hello world", float_view.answer)
    assert np.allclose(pair.before, attention_maps(float_view, kind)[1, 2])
    assert np.allclose(pair.after, attention_maps(int8_view, kind)[1, 2])
    assert pair.before.shape == pair.after.shape == (len(pair.query_tokens), len(pair.key_tokens))
    assert np.allclose(pair.after.sum(-1), 1, atol=1e-5)
    assert 0 < pair.max_difference < 0.1  # half-step rounding moves the weights a little, not the picture
    q, k = pair.where
    assert pair.difference[q, k] == pair.max_difference
    assert pair.answer_before == pair.answer_after == "hello world"
    table = pair.table({c: c for c in eq.PAIR_COLUMNS})
    assert len(table) == pair.before.size and table["difference"].max() == pytest.approx(pair.max_difference)


def test_matrix_table_has_one_row_per_quantised_weight():
    report = eq.quantisation_report(small_checkpoint())
    table = eq.matrix_table(report, {c: c.upper() for c in eq.MATRIX_COLUMNS})
    assert list(table.columns) == [c.upper() for c in eq.MATRIX_COLUMNS]
    assert len(table) == len(report.matrices) and table["MAX_ERROR"].max() == pytest.approx(report.max_error)
    assert table["ROWS"].sum() == report.rows


def test_the_attention_map_figure_uses_one_fixed_scale_and_outlines_the_marked_cell():
    from figures.bleu import MARK_COLOR, attention_map

    weights = np.array([[0.9, 0.1], [0.3, 0.7]])
    fig = attention_map(weights, ["a", "b"], ["x", "y"], title="t", x_title="k", y_title="q", hover="%{z}", mark=(1, 0))
    heat = fig.data[0]
    assert (heat.zmin, heat.zmax, heat.showscale) == (0.0, 1.0, False)
    assert np.allclose(np.asarray(heat.z, dtype=float), weights)
    outline = [trace for trace in fig.data if getattr(trace, "mode", None) == "lines"]
    assert len(outline) == 1 and outline[0].line.color == MARK_COLOR and list(outline[0].meta) == [[1, 0]]
    assert len(attention_map(weights, ["a", "b"], ["x", "y"], title="t", x_title="k", y_title="q",
                             hover="%{z}").data) == 1

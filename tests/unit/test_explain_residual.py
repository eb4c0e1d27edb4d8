"""explain.residual: sizes and turns of the stream, connection codes, and switching residuals off."""
import numpy as np
import pytest
import torch

from explain import residual
from model.stream import trace_stream
from tests.untrained import untrained_checkpoint

SOURCE = "hello world"


@pytest.fixture(scope="module")
def ckpt():
    return untrained_checkpoint(n_layers=2, seed=5)


def test_rows_hold_every_token_of_every_sublayer(ckpt):
    view = residual.stream_view(ckpt, SOURCE)
    S, T = len(SOURCE), len(SOURCE) + 1
    assert len(view.rows) == 2 * 2 * S + 2 * 3 * T
    assert view.target.origin == "task" and view.tgt_tokens[0] == "<bos>"
    assert list(view.rows.columns) == residual.STREAM_COLUMNS


def test_sizes_and_turn_match_the_trace(ckpt):
    view = residual.stream_view(ckpt, SOURCE)
    src = torch.tensor([ckpt.tokenizer.encode(SOURCE)])
    tgt = torch.tensor([[1] + ckpt.tokenizer.encode(SOURCE)])
    trace = trace_stream(ckpt.model, src, tgt)
    s = trace.sublayers[1]  # encoder layer 1's FFN
    x, u = s.x_in[0].double(), s.update[0].double()
    matrix, columns = residual.stream_matrix(view, "encoder", "update_norm")
    assert columns == [(1, "self_attn"), (1, "ffn"), (2, "self_attn"), (2, "ffn")]
    np.testing.assert_allclose(matrix[:, 1], u.norm(dim=-1).numpy(), rtol=1e-6)
    turn, _ = residual.stream_matrix(view, "encoder", "turn_cos")
    want = torch.nn.functional.cosine_similarity(x, x + u, dim=-1).numpy()
    np.testing.assert_allclose(turn[:, 1], want, rtol=1e-6)
    ratio, _ = residual.stream_matrix(view, "encoder", "ratio")
    np.testing.assert_allclose(ratio[:, 1], (u.norm(dim=-1) / x.norm(dim=-1)).numpy(), rtol=1e-6)


def test_decoder_matrix_has_three_sublayers_per_layer(ckpt):
    view = residual.stream_view(ckpt, SOURCE)
    matrix, columns = residual.stream_matrix(view, "decoder", "x_norm")
    assert matrix.shape == (len(SOURCE) + 1, 6)
    assert [sub for _, sub in columns] == ["self_attn", "cross_attn", "ffn"] * 2
    path = residual.token_path(view, "decoder", 0)
    np.testing.assert_allclose(path["x_norm"], matrix[0])


def test_connection_codes_round_trip():
    codes = residual.all_connections(2)
    assert codes[:2] == ["enc-1-self", "enc-1-ffn"] and codes[-1] == "dec-2-ffn" and len(codes) == 10
    assert [residual.connection_code(s, layer + 1, sub)
            for s, layer, sub in map(residual.parse_connection, codes)] == codes
    assert residual.off_triples(["dec-1-cross", "enc-2-self"]) == (("decoder", 0, "cross_attn"),
                                                                   ("encoder", 1, "self_attn"))


def test_switching_nothing_off_is_the_model_itself(ckpt):
    result = residual.switch_off(ckpt, SOURCE, ())
    assert result.answer_on == result.answer_off
    np.testing.assert_array_equal(result.per_token_on, result.per_token_off)
    assert result.tokens[-1] == "<eos>" or len(result.tokens) == len(result.per_token_on)
    assert result.p_on == pytest.approx(float(np.prod(result.per_token_on)))


def test_switching_a_residual_off_changes_the_probabilities(ckpt):
    result = residual.switch_off(ckpt, SOURCE, residual.off_triples(["enc-1-self"]))
    assert result.per_token_on.shape == result.per_token_off.shape
    assert not np.allclose(result.per_token_on, result.per_token_off)
    assert 0 <= result.p_own <= 1


def test_the_trained_reverse_model_breaks_without_a_residual():
    from model.checkpoint import load_checkpoint, pretrained_path

    ckpt = load_checkpoint(pretrained_path("reverse"), map_location="cpu")
    result = residual.switch_off(ckpt, SOURCE, residual.off_triples(["dec-1-cross"]))
    assert result.answer_on == "dlrow olleh"
    assert result.answer_off != result.answer_on
    assert result.p_off < result.p_on / 100


def test_a_model_without_a_known_task_reads_its_own_answer(ckpt):
    from types import SimpleNamespace

    other = SimpleNamespace(model=ckpt.model, tokenizer=ckpt.tokenizer, task={"name": "nope"})
    target = residual.decoder_target(other, SOURCE)
    assert target.origin == "answer"
    assert target.text == ckpt.tokenizer.decode(residual.greedy_ids(other, SOURCE))


def test_stream_csv_has_a_line_per_row(ckpt):
    view = residual.stream_view(ckpt, "abc")
    assert len(residual.stream_csv(view).strip().splitlines()) == 1 + len(view.rows)

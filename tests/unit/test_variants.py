"""The modern variants (pre-norm, RMSNorm, SwiGLU, RoPE, no positions): parity with references, the two
attention paths, training, checkpoints, and the shipped models staying the paper's model."""
import io
import itertools

import pytest
import torch
from torch import nn

from model import Transformer, TransformerConfig
from model.attention import MultiHeadAttention
from model.checkpoint import (
    MAX_ABS_WEIGHT,
    CheckpointError,
    available_pretrained,
    load_checkpoint,
    pretrained_path,
    save_checkpoint,
)
from model.config import (
    FFN_KINDS,
    LIMITS,
    NORM_KINDS,
    POSITION_KINDS,
    InvalidConfig,
    Problem,
    ffn_parameter_count,
    norm_parameter_count,
    swiglu_hidden,
)
from model.layers import FeedForward, RMSNorm, SublayerConnection, SwiGLUFeedForward, make_feed_forward, make_norm
from model.positional import rope_rotate_sequence
from model.tokenizer import CharTokenizer
from model.training import TrainingConfig, TrainingRun, parameter_count
from model.transformer import ForwardOptions
from tests.unit.test_transformer import copy_into_reference, random_batch

V = 23
DETAILS = ForwardOptions(need_details=True)
DEFAULT_KINDS = {"norm_kind": "layer", "ffn_kind": "relu", "position_kind": "sinusoidal"}
EVERY_VARIANT = [
    dict(norm_first=norm_first, norm_kind=norm, ffn_kind=ffn, position_kind=position)
    for norm_first, norm, ffn, position in itertools.product((False, True), NORM_KINDS, FFN_KINDS, POSITION_KINDS)
]


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/unit/conftest.py


def variant_id(kw: dict) -> str:
    return "-".join(["pre" if kw["norm_first"] else "post", kw["norm_kind"], kw["ffn_kind"], kw["position_kind"]])


def make_model(d_model=16, n_heads=2, d_ff=32, seed=0, **kw) -> Transformer:
    torch.manual_seed(seed)
    cfg = TransformerConfig(V, V + 4, d_model=d_model, n_heads=n_heads, n_layers=2, d_ff=d_ff, dropout=0.0, **kw)
    return Transformer(cfg)


# -- the switches ------------------------------------------------------------------------------------
@pytest.mark.parametrize("field, kinds", [("norm_kind", NORM_KINDS), ("ffn_kind", FFN_KINDS),
                                          ("position_kind", POSITION_KINDS)])
def test_a_kind_outside_the_choices_is_refused_with_its_field_and_choices(field, kinds):
    problem = Problem("variant", {"name": field, "value": "'gelu'", "choices": ", ".join(kinds)})
    with pytest.raises(InvalidConfig) as info:
        TransformerConfig(10, 10, **{field: "gelu"})
    assert info.value.problem == problem
    assert str(info.value) == f"{field} must be one of {', '.join(kinds)}, got 'gelu'."
    with pytest.raises(InvalidConfig) as info:
        TrainingConfig(**{field: "gelu"})
    assert info.value.problem == problem


def test_the_defaults_are_the_papers_model():
    cfg = TransformerConfig(10, 10)
    assert (cfg.norm_first, cfg.norm_kind, cfg.ffn_kind, cfg.position_kind) == (False, "layer", "relu", "sinusoidal")
    model = Transformer(cfg)
    layer = model.encoder_layers[0]
    assert type(layer.feed_forward) is FeedForward and type(layer.attn_sublayer.norm) is nn.LayerNorm
    assert layer.self_attn.rope_base is None and model.encoder_norm is None


def test_training_config_passes_the_switches_to_the_model():
    settings = TrainingConfig(preset="tiny", norm_first=True, norm_kind="rms", ffn_kind="swiglu", position_kind="rope")
    task = settings.make_task()
    cfg = settings.model_config(CharTokenizer(task.alphabet), task)
    assert (cfg.norm_first, cfg.norm_kind, cfg.ffn_kind, cfg.position_kind) == (True, "rms", "swiglu", "rope")


# -- parameter counts --------------------------------------------------------------------------------
def expected_parameters(cfg: TransformerConfig) -> int:
    """The documented count: embeddings, attention, feed-forward, norms and generator, summed by hand."""
    d, V_src, V_tgt = cfg.d_model, cfg.src_vocab_size, cfg.tgt_vocab_size
    attention = 4 * d * d + 4 * d  # in_proj (3d x d + 3d) and out_proj (d x d + d)
    norm = norm_parameter_count(d, cfg.norm_kind)
    ffn = ffn_parameter_count(d, cfg.d_ff, cfg.ffn_kind)
    encoder = cfg.n_layers * (attention + ffn + 2 * norm)
    decoder = cfg.n_layers * (2 * attention + ffn + 3 * norm)
    final_norms = 2 * norm if cfg.norm_first else 0
    return (V_src + V_tgt) * d + encoder + decoder + final_norms + d * V_tgt + V_tgt


@pytest.mark.parametrize("kw", EVERY_VARIANT, ids=variant_id)
def test_the_parameter_count_follows_the_documented_formulas(kw):
    model = make_model(**kw)
    assert model.num_params() == expected_parameters(model.config)


def test_swiglu_keeps_the_feed_forward_parameter_count_within_two_percent():
    assert (swiglu_hidden(256), swiglu_hidden(64), swiglu_hidden(1)) == (171, 43, 1)
    for d_model, d_ff in ((64, 256), (32, 64), (128, 512)):
        relu, swiglu = ffn_parameter_count(d_model, d_ff, "relu"), ffn_parameter_count(d_model, d_ff, "swiglu")
        assert abs(swiglu - relu) / relu < 0.02, (d_model, d_ff, relu, swiglu)
        block = SwiGLUFeedForward(d_model, d_ff)
        assert sum(p.numel() for p in block.parameters()) == swiglu
    assert ffn_parameter_count(64, 256, "relu") == 33_088 and ffn_parameter_count(64, 256, "swiglu") == 32_832


def test_parameter_count_of_the_training_page_takes_the_switches():
    plain = parameter_count("copy", "small")
    assert parameter_count("copy", "small", norm_first=False) == plain  # the old positional call is unchanged
    counts = {kw["ffn_kind"] + kw["norm_kind"]: parameter_count("copy", "small", norm_kind=kw["norm_kind"],
                                                                ffn_kind=kw["ffn_kind"])
              for kw in EVERY_VARIANT}
    assert counts["relulayer"] == plain and len(set(counts.values())) == 4
    assert parameter_count("copy", "small", position_kind="rope") == plain  # positions have no weights


# -- parity with references --------------------------------------------------------------------------
@pytest.mark.parametrize("position_kind", ["sinusoidal", "none"])
@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
@pytest.mark.filterwarnings("ignore:enable_nested_tensor")
def test_layer_norm_variants_equal_torch_nn_transformer_with_copied_weights(norm_first, position_kind):
    ours = make_model(d_model=32, n_heads=4, d_ff=64, norm_first=norm_first, position_kind=position_kind)
    ref = copy_into_reference(ours)
    ours.train(), ref.train()  # dropout is 0; train() keeps nn.Transformer off its nested-tensor fast path
    for seed in range(2):
        src, tgt = random_batch(seed=seed)
        memory = ref.encoder(ours.embed(src, "src"), src_key_padding_mask=src == 0)
        out = ref.decoder(ours.embed(tgt, "tgt"), memory,
                          tgt_mask=nn.Transformer.generate_square_subsequent_mask(tgt.size(1), dtype=torch.bool),
                          tgt_key_padding_mask=tgt == 0, memory_key_padding_mask=src == 0)
        mine = ours(src, tgt).logits
        assert torch.allclose(mine, ours.generator(out), atol=1e-5), (mine - ours.generator(out)).abs().max()


def test_rms_norm_equals_torch_nn_rms_norm_in_values_and_gradients():
    torch.manual_seed(0)
    ours, theirs = RMSNorm(24), nn.RMSNorm(24, eps=1e-5)
    with torch.no_grad():
        ours.weight.copy_(torch.randn(24))
        theirs.weight.copy_(ours.weight)
    for scale in (1e-3, 1.0, 1e3):
        x = (torch.randn(3, 5, 24) * scale + scale).requires_grad_()
        x2 = x.detach().clone().requires_grad_()
        a, b = ours(x), theirs(x2)
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-6)
        a.sin().sum().backward()
        b.sin().sum().backward()
        assert torch.allclose(x.grad, x2.grad, rtol=1e-4, atol=1e-5)
        assert torch.allclose(ours.weight.grad, theirs.weight.grad, rtol=1e-4, atol=1e-4)
        ours.weight.grad = theirs.weight.grad = None


def test_rms_norm_does_not_centre_and_has_no_bias():
    norm = make_norm("rms", 4)
    assert [name for name, _ in norm.named_parameters()] == ["weight"]
    x = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
    assert torch.allclose(norm(x), x / x.square().mean().sqrt(), atol=1e-5)
    assert torch.allclose(norm(x + 10), (x + 10) / (x + 10).square().mean().sqrt(), atol=1e-5)  # no mean removed


def test_swiglu_equals_a_hand_written_reference():
    torch.manual_seed(0)
    block = make_feed_forward(TransformerConfig(10, 10, d_model=16, n_heads=2, d_ff=48, ffn_kind="swiglu")).eval()
    assert isinstance(block, SwiGLUFeedForward) and block.linear1.out_features == swiglu_hidden(48) == 32
    x = torch.randn(2, 5, 16)
    W1, V_, W2 = block.linear_gate.weight.T, block.linear1.weight.T, block.linear2.weight.T  # (16, 32), (32, 16)
    gate = x @ W1
    reference = (gate * torch.sigmoid(gate) * (x @ V_)) @ W2  # (SiLU(x W1) ⊙ x V) W2
    assert torch.allclose(block(x), reference, atol=1e-6)
    assert torch.allclose(block.hidden(x) @ W2, reference, atol=1e-6)


# -- RoPE ------------------------------------------------------------------------------------------
def test_rope_scores_depend_only_on_the_offset_between_query_and_key():
    model = make_model(position_kind="rope").eval()
    src = torch.tensor([[5, 6, 7, 8, 9, 10]])
    for shift in (1, 4):
        shifted = torch.cat([torch.randint(4, V, (1, shift), generator=torch.Generator().manual_seed(shift)), src], 1)
        with torch.inference_mode():
            scores = model.encode(src, DETAILS).details[0].scores  # (1, H, S, S): first layer, per token inputs
            moved = model.encode(shifted, DETAILS).details[0].scores[..., shift:, shift:]
        assert torch.allclose(scores, moved, atol=1e-4), (scores - moved).abs().max()


def test_rope_cross_attention_scores_depend_only_on_the_offset_too():
    torch.manual_seed(0)
    attention = MultiHeadAttention(16, 2, rope_base=10000.0).eval()
    x, memory = torch.randn(1, 4, 16), torch.randn(1, 6, 16)
    scores = attention(x, memory, need_details=True)[2].scores
    for shift in (2, 5):
        pad_x, pad_m = torch.randn(1, shift, 16), torch.randn(1, shift, 16)
        moved = attention(torch.cat([pad_x, x], 1), torch.cat([pad_m, memory], 1), need_details=True)[2].scores
        assert torch.allclose(scores, moved[..., shift:, shift:], atol=1e-4)
    plain = MultiHeadAttention(16, 2).eval()
    plain.load_state_dict(attention.state_dict())
    assert not torch.allclose(scores, plain(x, memory, need_details=True)[2].scores, atol=1e-3)  # RoPE did rotate


def test_rope_changes_the_scores_when_the_offset_changes():
    model = make_model(position_kind="rope").eval()
    with torch.inference_mode():
        near = model.encode(torch.tensor([[5, 6]]), DETAILS).details[0].scores[..., 0, 1]
        far = model.encode(torch.tensor([[5, 9, 9, 6]]), DETAILS).details[0].scores[..., 0, 3]
    assert not torch.allclose(near, far, atol=1e-3)


def test_rope_leaves_the_last_dimension_of_an_odd_head_unrotated():
    x = torch.randn(2, 5, 3)
    rotated = rope_rotate_sequence(x, 10000.0)
    assert torch.equal(rotated[..., 2], x[..., 2]) and not torch.allclose(rotated[..., :2], x[..., :2])
    model = make_model(d_model=6, n_heads=2, position_kind="rope").eval()  # heads of size 3
    src, tgt = random_batch()
    assert bool(torch.isfinite(model(src, tgt).logits).all())


@pytest.mark.parametrize("position_kind", ["none", "rope", "sinusoidal"])
def test_without_positions_ab_and_ba_give_the_same_encoder_vectors(position_kind):
    model = make_model(position_kind=position_kind).eval()
    ab, ba = torch.tensor([[5, 6]]), torch.tensor([[6, 5]])
    with torch.inference_mode():
        same_multiset = torch.allclose(model.encode(ab).memory[:, [1, 0]], model.encode(ba).memory, atol=1e-5)
        off = ForwardOptions(use_positional_encoding=False)
        blind = torch.allclose(model.encode(ab, off).memory[:, [1, 0]], model.encode(ba, off).memory, atol=1e-5)
    assert same_multiset == (position_kind == "none")
    assert blind  # the positional page's switch takes every kind of position signal away


# -- the two attention paths -------------------------------------------------------------------------
@pytest.mark.parametrize("kw", EVERY_VARIANT, ids=variant_id)
def test_explicit_path_equals_sdpa_path_for_every_variant(kw):
    model = make_model(**kw)
    src, tgt = random_batch()
    src[1] = 0  # an all-padding source row: every encoder and cross key masked
    outs, grads = [], []
    for need_weights in (True, False):
        model.zero_grad()
        out = model(src, tgt, need_weights=need_weights).logits
        out.square().mean().backward()
        outs.append(out.detach())
        grads.append([p.grad.clone() for p in model.parameters()])
    assert torch.allclose(outs[0], outs[1], atol=1e-5)
    for explicit, fast in zip(*grads):
        assert torch.allclose(explicit, fast, atol=1e-5)


@pytest.mark.parametrize("kw", EVERY_VARIANT, ids=variant_id)
def test_every_variant_returns_every_trace(kw):
    model = make_model(**kw).eval()
    src, tgt = random_batch()
    out = model(src, tgt, need_details=True)
    B, S, T, H = src.size(0), src.size(1), tgt.size(1), model.config.n_heads
    assert [a.shape for a in out.encoder_attention] == [(B, H, S, S)] * 2
    assert [a.shape for a in out.decoder_attention] == [(B, H, T, T)] * 2
    assert [a.shape for a in out.cross_attention] == [(B, H, T, S)] * 2
    for details, weights in zip(out.cross_details, out.cross_attention):
        scores = details.q @ details.k.transpose(-2, -1) / details.q.size(-1) ** 0.5
        assert torch.allclose(details.scores, scores, atol=1e-5)  # q and k are the ones the scores used
        assert torch.allclose(weights.sum(-1)[0], torch.ones(H, T), atol=1e-5)


def test_the_layers_keep_the_names_the_pages_read():
    model = make_model(norm_first=True, norm_kind="rms", ffn_kind="swiglu", position_kind="rope")
    sublayer = model.decoder_layers[0].ff_sublayer
    assert isinstance(sublayer, SublayerConnection) and sublayer.norm_first and isinstance(sublayer.norm, RMSNorm)
    assert isinstance(model.encoder_norm, RMSNorm) and isinstance(model.decoder_norm, RMSNorm)
    x = torch.randn(1, 3, 16)
    block = model.encoder_layers[0].feed_forward
    assert torch.allclose(block(x), block.linear2(block.hidden(x)))


# -- training ----------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("task, kw", [
    ("copy", dict(norm_first=True)),
    ("copy", dict(norm_kind="rms")),
    ("copy", dict(ffn_kind="swiglu")),
    ("copy", dict(position_kind="rope")),
    # Without positions the encoder hands the decoder a multiset, so copy cannot be learnt; sort needs no order.
    ("sort", dict(position_kind="none")),
], ids=["pre-norm", "rms", "swiglu", "rope", "none"])
def test_each_variant_trains_to_a_clear_drop_in_loss(task, kw):
    settings = TrainingConfig(task=task, task_min_len=3, task_max_len=6, preset="tiny", dropout=0.0, batch_size=32,
                              warmup=50, max_steps=200, eval_every=10**6, probe_every=10**6, seed=0, **kw)
    run = TrainingRun(settings, device="cpu")
    assert all(getattr(run.model_config, k) == v for k, v in kw.items())
    snapshot = run.train_until_done()
    assert snapshot.state == "finished", snapshot.reason
    first, last = sum(snapshot.losses[:10]) / 10, sum(snapshot.losses[-10:]) / 10
    assert last < 0.6 * first, (first, last)


# -- checkpoints -------------------------------------------------------------------------------------
@pytest.mark.parametrize("kw", EVERY_VARIANT, ids=variant_id)
def test_a_checkpoint_of_every_variant_loads_with_the_same_logits(kw):
    tokenizer = CharTokenizer("abcdefgh")
    torch.manual_seed(1)
    model = Transformer(TransformerConfig(tokenizer.vocab_size, tokenizer.vocab_size, d_model=16, n_heads=2,
                                          n_layers=1, d_ff=32, max_len=16, **kw)).eval()
    buffer = io.BytesIO()
    save_checkpoint(buffer, model, tokenizer, {"name": "copy"})
    loaded = load_checkpoint(buffer.getvalue(), map_location="cpu")
    assert loaded.config == model.config
    src, tgt = torch.tensor([[4, 5, 6, 7, 0]]), torch.tensor([[1, 4, 5, 6]])
    with torch.inference_mode():
        assert torch.equal(loaded.model(src, tgt).logits, model(src, tgt).logits)


def test_a_checkpoint_with_an_unknown_kind_is_refused_with_a_sentence():
    tokenizer = CharTokenizer("abcd")
    buffer = io.BytesIO()
    save_checkpoint(buffer, make_model_for(tokenizer), tokenizer, {"name": "copy"})
    payload = torch.load(io.BytesIO(buffer.getvalue()), weights_only=True)
    payload["config"]["ffn_kind"] = "geglu"
    edited = io.BytesIO()
    torch.save(payload, edited)
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(edited.getvalue(), map_location="cpu")
    assert info.value.reason == "bad_config"
    assert str(info.value) == ("The model description in the checkpoint is invalid (ffn_kind: input should be "
                               "'relu' or 'swiglu').")


def test_weights_of_another_variant_are_refused():
    tokenizer = CharTokenizer("abcd")
    buffer = io.BytesIO()
    save_checkpoint(buffer, make_model_for(tokenizer, norm_kind="rms"), tokenizer, {"name": "copy"})
    payload = torch.load(io.BytesIO(buffer.getvalue()), weights_only=True)
    payload["config"]["norm_kind"] = "layer"  # the config says LayerNorm, the weights have no norm biases
    edited = io.BytesIO()
    torch.save(payload, edited)
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(edited.getvalue(), map_location="cpu")
    assert info.value.reason == "missing_weights" and "norm.bias" in str(info.value)


def make_model_for(tokenizer: CharTokenizer, **kw) -> Transformer:
    torch.manual_seed(0)
    return Transformer(TransformerConfig(tokenizer.vocab_size, tokenizer.vocab_size, d_model=8, n_heads=2,
                                         n_layers=1, d_ff=16, max_len=16, **kw)).eval()


OLDER_THAN_THE_VARIANTS = ("copy", "reverse", "sort", "dates")  # shipped checkpoints written without the fields


def test_the_character_task_checkpoints_were_written_before_the_variants():
    for task in OLDER_THAN_THE_VARIANTS:
        raw = torch.load(pretrained_path(task), weights_only=True)
        assert not set(DEFAULT_KINDS) & set(raw["config"]), task


@pytest.mark.parametrize("task", available_pretrained())
def test_shipped_checkpoints_load_as_the_papers_model(task):
    raw = torch.load(pretrained_path(task), weights_only=True)
    assert {k: raw["config"].get(k, v) for k, v in DEFAULT_KINDS.items()} == DEFAULT_KINDS
    ckpt = load_checkpoint(pretrained_path(task), map_location="cpu")
    assert {k: getattr(ckpt.config, k) for k in DEFAULT_KINDS} == DEFAULT_KINDS
    assert ckpt.config.norm_first is False
    assert set(ckpt.model.state_dict()) == set(raw["state_dict"])  # every key of the old file, no new one


@pytest.mark.parametrize("kw", [dict(norm_kind="rms"), dict(ffn_kind="swiglu"), dict(position_kind="rope"),
                                dict(norm_first=True, norm_kind="rms", ffn_kind="swiglu", position_kind="rope")],
                         ids=["rms", "swiglu", "rope", "modern"])
def test_every_variant_at_the_size_and_weight_limits_stays_finite(kw):
    cfg = TransformerConfig(40, 40, d_model=LIMITS.d_model, n_heads=1, n_layers=LIMITS.n_layers, d_ff=LIMITS.d_ff,
                            max_len=LIMITS.max_len, dropout=0.0, **kw)
    with torch.device("meta"):
        assert Transformer(cfg).num_params() <= LIMITS.parameters
    torch.manual_seed(0)
    model = Transformer(cfg).eval()
    with torch.no_grad():
        for weight in model.parameters():
            weight.copy_(torch.randn_like(weight).sign() * MAX_ABS_WEIGHT)
    src, tgt = torch.randint(4, 40, (1, 48)), torch.randint(4, 40, (1, 50))
    with torch.inference_mode():
        assert bool(torch.isfinite(model(src, tgt).logits).all())

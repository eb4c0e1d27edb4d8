"""The key/value cache: cached and uncached decoding give the same tokens, log-probabilities and attention, for
every variant and every strategy, and the cached decoder computes only the newest position."""
import itertools

import pytest
import torch

from model.config import FFN_KINDS, NORM_KINDS, POSITION_KINDS, TransformerConfig
from model.decoding import beam_search, greedy_decode, greedy_ids, sample_decode
from model.trace import Trace
from model.training import greedy_batch
from model.transformer import DecoderCache, ForwardOptions, Transformer

V = 17
TOL = 1e-5
VARIANTS = [
    dict(norm_first=nf, norm_kind=nk, ffn_kind=fk, position_kind=pk)
    for nf, nk, fk, pk in itertools.product((False, True), NORM_KINDS, FFN_KINDS, POSITION_KINDS)
] + [dict(head_dim=24), dict(head_dim=5, position_kind="rope", norm_first=True)]  # heads wider than d/H; odd
SOURCE = [5, 9, 3, 11, 7, 4]


def ids(kw):
    return "-".join(str(v) for v in kw.values())


def make(seed=0, **kw):
    torch.manual_seed(seed)
    cfg = TransformerConfig(V, V + 2, d_model=16, n_heads=2, n_layers=2, d_ff=32, dropout=0.1, max_len=24, **kw)
    model = Transformer(cfg).eval()
    with torch.no_grad():  # make <eos> (id 2) likely enough that some decodings end before max_len
        model.generator.bias[2] += 1.5
    return model


def same_steps(cached, full):
    assert cached.tokens == full.tokens and cached.finished == full.finished
    assert abs(cached.score - full.score) < TOL * max(1, len(full.steps))
    assert len(cached.steps) == len(full.steps)
    for a, b in zip(cached.steps, full.steps):
        assert a.prefix == b.prefix and a.chosen == b.chosen and a.top_ids == b.top_ids
        assert abs(a.chosen_logprob - b.chosen_logprob) < TOL
        torch.testing.assert_close(torch.tensor(a.top_probs), torch.tensor(b.top_probs), atol=TOL, rtol=0)
        torch.testing.assert_close(a.decoder_attention, b.decoder_attention, atol=TOL, rtol=0)
        torch.testing.assert_close(a.cross_attention, b.cross_attention, atol=TOL, rtol=0)


@pytest.mark.parametrize("kw", VARIANTS, ids=ids)
def test_greedy_beam_and_sampling_are_the_same_with_and_without_the_cache(kw):
    model = make(**kw)
    cached = greedy_decode(model, SOURCE, max_len=8)
    same_steps(cached, greedy_decode(model, SOURCE, max_len=8, use_cache=False))
    for seed in (0,):
        args = dict(temperature=1.3, top_k=None, seed=seed, max_len=8)
        same_steps(sample_decode(model, SOURCE, **args), sample_decode(model, SOURCE, use_cache=False, **args))
    beam = beam_search(model, SOURCE, beam_size=2, max_len=8, length_penalty=1.0)
    full = beam_search(model, SOURCE, beam_size=2, max_len=8, length_penalty=1.0, use_cache=False)
    same_steps(beam, full)
    assert len(beam.beams) == len(full.beams)
    for row_a, row_b in zip(beam.beams, full.beams):
        assert [b.tokens for b in row_a] == [b.tokens for b in row_b]
        assert all(abs(a.score - b.score) < 8 * TOL for a, b in zip(row_a, row_b))


@pytest.mark.parametrize("kw", VARIANTS, ids=ids)
def test_batch_greedy_with_padding_is_the_same_with_and_without_the_cache(kw):
    model = make(**kw)
    g = torch.Generator().manual_seed(3)
    src = torch.randint(3, V, (4, 7), generator=g)
    src[1, 4:] = 0  # padded sources
    src[3, 2:] = 0
    cached = greedy_ids(model, src, 8)
    full = greedy_ids(model, src, 8, use_cache=False)
    assert torch.equal(cached, full)
    assert torch.equal(greedy_batch(model, src, 8, ForwardOptions(need_weights=False)), cached)
    # the log-probabilities along the decoded batch: teacher-forced on the answer, cached step by step
    tgt = torch.cat([torch.full((4, 1), 1), cached], dim=1)  # (B, 1 + T)
    with torch.inference_mode():
        encoded = model.encode(src, ForwardOptions(need_weights=False))
        whole = model.decode(tgt, encoded, ForwardOptions(need_weights=False)).logits.log_softmax(-1)
        cache = DecoderCache.empty(model.config.n_layers)
        steps = [model.decode(tgt[:, :t], encoded, ForwardOptions(need_weights=False), cache=cache).logits
                 for t in range(1, tgt.size(1) + 1)]
    torch.testing.assert_close(torch.cat(steps, dim=1).log_softmax(-1), whole, atol=TOL, rtol=0)


def test_the_cached_decoder_computes_only_the_newest_position_and_reuses_the_memorys_keys():
    model = make(position_kind="rope")
    widths = []
    model.generator.register_forward_hook(lambda m, args, out: widths.append(args[0].size(1)))
    result = greedy_decode(model, SOURCE, max_len=10)
    n = len(result.steps)
    assert widths == [1] * n
    widths.clear()
    greedy_decode(model, SOURCE, max_len=10, use_cache=False)
    assert widths == list(range(1, n + 1))

    cache = DecoderCache.empty(2)
    tgt = torch.tensor([[1, 4, 6, 8]])
    with torch.inference_mode():
        encoded = model.encode(torch.tensor([SOURCE]))
        model.decode(tgt[:, :2], encoded, cache=cache)
        memory_keys = cache.cross_attn[1].k
        model.decode(tgt, encoded, cache=cache)
    assert cache.length == 4
    assert cache.self_attn[1].k.shape == (1, 2, 4, 8)  # (B, H, T, d_k): grows by every new position
    assert cache.cross_attn[1].k.shape == (1, 2, len(SOURCE), 8)  # (B, H, S, d_k): the memory's
    assert cache.cross_attn[1].k is memory_keys  # computed at the first step, reused after


def test_without_the_look_ahead_mask_the_cache_is_not_used_and_the_answer_is_unchanged():
    model = make()
    opts = ForwardOptions(use_look_ahead_mask=False)
    widths = []
    model.generator.register_forward_hook(lambda m, args, out: widths.append(args[0].size(1)))
    cached = greedy_decode(model, SOURCE, max_len=8, options=opts)
    assert widths == list(range(1, len(cached.steps) + 1))  # earlier positions see later ones: no cache
    same_steps(cached, greedy_decode(model, SOURCE, max_len=8, options=opts, use_cache=False))


def test_interventions_reach_the_cached_loop():
    model = make(norm_first=True)
    src = torch.tensor([SOURCE])
    off = Trace(residual_off={("decoder", 0, "ffn"), ("encoder", 1, "self_attn")}, record=False)
    cached = greedy_ids(model, src, 12, trace=off)
    assert torch.equal(cached, greedy_ids(model, src, 12, trace=off, use_cache=False))
    heads = Trace(heads_off={("decoder", 1, 0), ("cross", 0, 1)}, record=False)
    assert torch.equal(greedy_ids(model, src, 12, trace=heads), greedy_ids(model, src, 12, trace=heads,
                                                                              use_cache=False))

"""Greedy, beam search, sampling and teacher forcing on a copy model trained here, and on a random one."""
import random

import pytest
import torch

from model import ForwardOptions, Transformer, TransformerConfig, label_smoothed_cross_entropy
from model.decoding import (
    DecodeResult,
    beam_search,
    greedy_decode,
    sample_decode,
    sampling_distribution,
    teacher_forced_predictions,
)
from model.tasks import make_batch, make_task
from model.tokenizer import EOS_ID, CharTokenizer

TASK = make_task("copy", min_len=3, max_len=5, alphabet="abcd")
TOK = CharTokenizer(TASK.alphabet)
SOURCES = ["abc", "dcba", "aabbd", "cdcd", "bbb", "dab"]


def float32_tolerance(score: float, n_terms: int) -> float:
    """How far two sums of ``n_terms`` float32 log-probabilities totalling ``score`` may differ when
    computed by different kernels (a beam's batched forward against greedy's single one): a few units
    of float32's last place per term, so equal outputs never count as a worse score."""
    return 4 * n_terms * torch.finfo(torch.float32).eps * max(1.0, abs(score))


def small_config(**kw) -> TransformerConfig:
    return TransformerConfig(TOK.vocab_size, TOK.vocab_size, d_model=32, n_heads=4, n_layers=2, d_ff=64,
                             dropout=0.0, max_len=16, **kw)


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tiny matrices: tests/unit/conftest.py


@pytest.fixture(scope="module")
def copy_model() -> Transformer:
    """~250 Adam steps on copy (length 3-5 over "abcd"): a few seconds on one core."""
    torch.manual_seed(0)
    model = Transformer(small_config())
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    rng = random.Random(0)
    for _ in range(250):
        batch = make_batch(TASK, TOK, 32, rng)
        logits = model(batch.src, batch.tgt_in, need_weights=False).logits
        loss = label_smoothed_cross_entropy(logits, batch.tgt_out, epsilon=0.0)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval()


@pytest.fixture(scope="module")
def random_model() -> Transformer:
    torch.manual_seed(1)
    return Transformer(small_config()).eval()


def test_trained_model_copies_greedily(copy_model):
    results = [greedy_decode(copy_model, TOK.encode(s), max_len=10) for s in SOURCES]
    assert sum(TOK.decode(r.tokens) == s for r, s in zip(results, SOURCES)) >= len(SOURCES) - 1
    assert all(r.finished for r in results)


def test_result_bookkeeping(copy_model):
    r = greedy_decode(copy_model, TOK.encode("abcd"), max_len=10)
    assert r.finished and r.steps[-1].chosen == EOS_ID and EOS_ID not in r.tokens
    assert len(r.steps) == len(r.tokens) + 1
    assert [s.chosen for s in r.steps[:-1]] == r.tokens
    assert r.score == pytest.approx(sum(s.chosen_logprob for s in r.steps))
    for i, s in enumerate(r.steps):
        assert s.prefix == [1] + r.tokens[:i]
    assert r.beams == []


def test_max_len_cuts_an_unfinished_output(copy_model):
    r = greedy_decode(copy_model, TOK.encode("abcd"), max_len=2)
    assert not r.finished and len(r.tokens) == 2 and len(r.steps) == 2


@pytest.mark.parametrize("which", ["copy_model", "random_model"])
def test_beam_of_one_is_greedy(which, request):
    model = request.getfixturevalue(which)
    for s in SOURCES:
        g = greedy_decode(model, TOK.encode(s), max_len=8)
        b = beam_search(model, TOK.encode(s), beam_size=1, max_len=8)
        assert b.tokens == g.tokens and b.finished == g.finished
        assert b.score == g.score
        assert [st.chosen for st in b.steps] == [st.chosen for st in g.steps]


def test_wider_beam_scores_at_least_greedy(copy_model):
    for s in SOURCES:
        g = greedy_decode(copy_model, TOK.encode(s), max_len=10)
        for k in (2, 4):
            b = beam_search(copy_model, TOK.encode(s), beam_size=k, max_len=10)
            assert b.score >= g.score - float32_tolerance(g.score, len(g.steps))


def test_beam_trace_follows_the_winner(copy_model, random_model):
    for model in (copy_model, random_model):
        r = beam_search(model, TOK.encode("abcd"), beam_size=3, max_len=8, length_penalty=0.6)
        assert [s.chosen for s in r.steps] == r.tokens + ([EOS_ID] if r.finished else [])
        assert r.score == pytest.approx(sum(s.chosen_logprob for s in r.steps))
        assert 1 <= len(r.beams) <= 8
        for i, beams in enumerate(r.beams):
            live = [b for b in beams if not b.finished]
            assert len(live) <= 3
            assert all(len(b.tokens) == i + 1 for b in live)
            assert [b.score for b in live] == sorted((b.score for b in live), reverse=True)
            for b in beams:
                assert b.rank_score == pytest.approx(b.score / (len(b.tokens) + b.finished) ** 0.6)


def test_sampling_at_zero_temperature_is_greedy(copy_model, random_model):
    for model in (copy_model, random_model):
        for s in SOURCES[:3]:
            g = greedy_decode(model, TOK.encode(s), max_len=8)
            for temperature in (0, 0.0, 1e-8):
                r = sample_decode(model, TOK.encode(s), temperature=temperature, top_k=None, seed=3, max_len=8)
                assert r.tokens == g.tokens and r.score == g.score and r.finished == g.finished


def test_sampling_is_seeded_and_leaves_the_global_rng_alone(random_model):
    src = TOK.encode("abcd")
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    samples = [sample_decode(random_model, src, temperature=1.5, top_k=None, seed=s, max_len=12) for s in range(6)]
    assert torch.rand(1) == before  # decoding drew nothing from the global generator
    again = sample_decode(random_model, src, temperature=1.5, top_k=None, seed=0, max_len=12)
    assert again.tokens == samples[0].tokens and again.score == samples[0].score
    assert len({tuple(s.tokens) for s in samples}) > 1


def test_sampling_distribution_follows_temperature_and_top_k(random_model):
    r = sample_decode(random_model, TOK.encode("abc"), temperature=0.7, top_k=2, seed=0, max_len=6)
    for step in r.steps:
        assert len(step.sampling_probs) == len(step.top_ids)
        assert sum(step.sampling_probs[:2]) == pytest.approx(1.0, abs=1e-5)  # only the top 2 can be drawn
        assert step.chosen in step.top_ids[:2]
    logprobs = torch.log_softmax(torch.tensor([2.0, 1.0, 0.0, -1.0]), dim=0)
    assert torch.allclose(sampling_distribution(logprobs, 1.0, None), logprobs.exp())
    sharp, flat = sampling_distribution(logprobs, 0.5, None), sampling_distribution(logprobs, 2.0, None)
    assert sharp[0] > logprobs.exp()[0] > flat[0]
    assert sampling_distribution(logprobs, 0.0, None).tolist() == [1.0, 0.0, 0.0, 0.0]


@pytest.mark.parametrize("decode", ["greedy", "beam", "sample"])
def test_trace_invariants(decode, random_model, copy_model):
    L, H, S = 2, 4, 4
    for model in (random_model, copy_model):
        src = TOK.encode("abcd")
        if decode == "greedy":
            r = greedy_decode(model, src, max_len=7, top_k=5)
        elif decode == "beam":
            r = beam_search(model, src, beam_size=3, max_len=7, top_k=5)
        else:
            r = sample_decode(model, src, temperature=1.0, top_k=None, seed=0, max_len=7)
        assert r.steps
        for i, step in enumerate(r.steps):
            assert len(step.top_ids) == len(step.top_probs) == 5
            assert step.top_probs == sorted(step.top_probs, reverse=True)
            assert all(0.0 <= p <= 1.0 for p in step.top_probs)
            assert step.chosen_logprob <= 0.0
            assert step.decoder_attention.shape == (L, H, i + 1, i + 1)
            assert step.decoder_attention.device.type == "cpu"
            assert step.decoder_attention.dtype == torch.float32
            assert torch.allclose(step.decoder_attention.sum(-1), torch.ones(L, H, i + 1), atol=1e-5)
            assert torch.all(step.decoder_attention.triu(1) == 0)  # no peeking at the future
            assert step.cross_attention.shape == (L, H, S)
            assert torch.allclose(step.cross_attention.sum(-1), torch.ones(L, H), atol=1e-5)


def test_options_reach_the_model(random_model):
    src = TOK.encode("abc")
    plain = greedy_decode(random_model, src, max_len=3)
    cross_off = ForwardOptions(need_weights=False, ablate_heads=[("cross", 1, h) for h in range(4)])
    ablated = greedy_decode(random_model, src, max_len=3, options=cross_off)
    assert ablated.steps[0].cross_attention.shape == (2, 4, 3)  # weights still traced
    assert ablated.steps[0].top_probs != plain.steps[0].top_probs


def test_teacher_forcing_on_the_copy_model(copy_model):
    for s in SOURCES:
        ids = TOK.encode(s)
        tf = teacher_forced_predictions(copy_model, ids, ids)
        assert tf.input_ids == [1] + ids and tf.target_ids == ids + [EOS_ID]
        assert tf.predicted_ids == tf.target_ids
        assert tf.n_correct == len(ids) + 1
        assert all(p == pytest.approx(q) for p, q in zip(tf.predicted_probs, tf.true_probs))
        assert all(p > 0.5 for p in tf.true_probs)
        T = len(ids) + 1
        assert tf.decoder_attention.shape == (2, 4, T, T)
        assert tf.cross_attention.shape == (2, 4, T, len(ids))


def test_teacher_forcing_matches_greedy_when_greedy_is_right(copy_model):
    """Free-running greedy and teacher forcing see the same prefixes when greedy makes no mistake."""
    ids = TOK.encode("abcd")
    g = greedy_decode(copy_model, ids, max_len=10)
    assert g.tokens == ids
    tf = teacher_forced_predictions(copy_model, ids, ids)
    assert tf.score == pytest.approx(g.score, abs=1e-4)


def test_teacher_forcing_shows_a_wrong_target(copy_model):
    ids = TOK.encode("abcd")
    tf = teacher_forced_predictions(copy_model, ids, TOK.encode("abdd"))
    assert tf.predicted_ids[2] == TOK.encode("c")[0]
    assert tf.true_probs[2] < 0.5


def test_validation_errors(random_model):
    src = TOK.encode("abc")
    with pytest.raises(ValueError, match="source is empty"):
        greedy_decode(random_model, [], max_len=5)
    with pytest.raises(ValueError, match="beam_size"):
        beam_search(random_model, src, beam_size=0, max_len=5)
    with pytest.raises(ValueError, match="temperature must be 0 or more"):
        sample_decode(random_model, src, temperature=-0.5, top_k=None, seed=0, max_len=5)
    with pytest.raises(ValueError, match="max_len must be a whole number of at least 1"):
        greedy_decode(random_model, src, max_len=0)
    with pytest.raises(ValueError, match="longer than the longest sequence"):
        greedy_decode(random_model, src, max_len=17)
    with pytest.raises(ValueError, match="reads at most 16"):
        beam_search(random_model, TOK.encode("a" * 17), beam_size=2, max_len=5)
    with pytest.raises(ValueError, match="outside this model's vocabulary"):
        greedy_decode(random_model, [4, 99], max_len=5)
    with pytest.raises(ValueError, match="length_penalty"):
        beam_search(random_model, src, beam_size=2, max_len=5, length_penalty=-1.0)
    with pytest.raises(ValueError, match="top_k"):
        sample_decode(random_model, src, temperature=1.0, top_k=0, seed=0, max_len=5)
    with pytest.raises(ValueError, match="source is empty"):
        teacher_forced_predictions(random_model, [], src)
    random_model.train()
    try:
        with pytest.raises(ValueError, match="model.eval"):
            greedy_decode(random_model, src, max_len=5)
    finally:
        random_model.eval()


def test_returns_plain_results(random_model):
    r = greedy_decode(random_model, torch.tensor(TOK.encode("abc")), max_len=4)
    assert isinstance(r, DecodeResult)
    assert all(isinstance(t, int) for t in r.tokens)
    assert isinstance(r.score, float)


def test_the_chance_of_a_sample_is_what_sampling_does():
    """TeacherForcing.chance: the probability that sample_decode writes the target exactly, checked against the
    frequency of 150 seeded samples, and its limits (T = 0 writes the argmax answer; top-k 1 is greedy)."""
    import random as _random

    from model.checkpoint import available_pretrained, load_checkpoint, pretrained_path
    if "copy" not in available_pretrained():
        pytest.skip("no shipped copy model")
    model = load_checkpoint(pretrained_path("copy")).model
    tok = load_checkpoint(pretrained_path("copy")).tokenizer
    src = tok.encode("hello world")
    greedy = greedy_decode(model, src, max_len=20).tokens
    tf = teacher_forced_predictions(model, src, greedy)
    assert tf.chance(0.0) == 1.0 and tf.chance(1.0, top_k=1) == pytest.approx(1.0)
    chance = tf.chance(1.0)
    assert 0.05 < chance < 0.95  # a label-smoothed model at T = 1: far from sure
    assert tf.chance(0.5) > chance > tf.chance(1.5)
    seeds = _random.Random(0).sample(range(10_000), 150)
    hits = sum(sample_decode(model, src, temperature=1.0, top_k=None, seed=s, max_len=20).tokens == greedy
               for s in seeds)
    assert hits / len(seeds) == pytest.approx(chance, abs=0.12)

"""explain.bleu: the hand-worked BLEU of one sentence against sacrebleu, the corpus score, the
model's batched answers, the corruptions and the tables the page shows."""
from __future__ import annotations

import math
import random

import pytest
import torch
from sacrebleu.metrics import BLEU

from explain import bleu as eb
from model import decoding
from model.bleu import corpus_bleu
from model.config import TransformerConfig
from model.tasks import get_task
from model.tokenizer import CharTokenizer, WordTokenizer
from model.transformer import Transformer

# (name, candidate, reference, tokenize): every kind of case the page shows.
CASES = [
    ("identical", "hello world", "hello world", "char"),
    ("one substitution", "hello wurld", "hello world", "char"),
    ("short candidate", "thank you so much", "thank you so much, my brother", "char"),
    ("short candidate, words", "thank you so much", "thank you so much, my brother", "13a"),
    ("long candidate", "2026-11-22 2026-11-22", "2026-11-22", "char"),
    ("no 4-gram match", "abcxbcyabz", "abcdabce", "char"),
    ("clipping", "the the the the", "the cat is on the mat", "13a"),
    ("chinese", "猫在花园里吃了苹果。", "猫昨天在花园里吃了两个苹果。", "zh"),
    ("chinese identical", "猫昨天在花园里吃了两个苹果。", "猫昨天在花园里吃了两个苹果。", "zh"),
    ("english words", "the cat ate two apples in the garden .", "the cat ate two apples in the garden yesterday .",
     "13a"),
    ("shorter than 4 tokens", "abc", "abc", "char"),
    ("empty candidate", "", "abc", "char"),
    ("nothing in common", "xyz", "abc", "char"),
]
IDS = [case[0] for case in CASES]


def sacrebleu_unsmoothed(candidate: str, reference: str, tokenize: str):
    return BLEU(tokenize=tokenize, smooth_method="none").sentence_score(candidate, [reference])


@pytest.mark.parametrize("name,candidate,reference,tokenize", CASES, ids=IDS)
def test_hand_worked_numbers_equal_sacrebleu(name, candidate, reference, tokenize):
    worked = eb.work_sentence(candidate, reference, tokenize)
    library = sacrebleu_unsmoothed(candidate, reference, tokenize)
    assert [o.matches for o in worked.orders] == list(library.counts)
    assert [o.total for o in worked.orders] == list(library.totals)
    assert (worked.c, worked.r) == (library.sys_len, library.ref_len)
    assert [o.precision * 100 for o in worked.orders] == pytest.approx(library.precisions, abs=1e-9)
    assert worked.bp == pytest.approx(library.bp, abs=1e-12)
    assert worked.bleu == pytest.approx(library.score, abs=1e-9)


def test_the_cases_cover_what_the_page_teaches():
    worked = {name: eb.work_sentence(c, r, tok) for name, c, r, tok in CASES}
    assert worked["identical"].bleu == pytest.approx(100.0)
    assert 0 < worked["one substitution"].bleu < 100 and worked["one substitution"].bp == 1.0
    short = worked["short candidate"]
    assert short.c < short.r and short.bp == pytest.approx(math.exp(1 - short.r / short.c)) and short.bp < 1
    assert all(o.precision == 1.0 for o in short.orders) and short.bleu == pytest.approx(100 * short.bp)
    assert worked["long candidate"].bp == 1.0 and worked["long candidate"].c > worked["long candidate"].r
    assert worked["no 4-gram match"].missing == (4,) and worked["no 4-gram match"].bleu == 0.0
    assert worked["no 4-gram match"].orders[2].matches > 0
    clip = worked["clipping"]
    assert clip.orders[0].ngrams[0].ngram == ("the",) and clip.orders[0].ngrams[0].clipped == 2
    assert (clip.orders[0].matches, clip.orders[0].total) == (2, 4) and clip.missing == (2, 3, 4)
    assert worked["chinese"].candidate[:3] == ("猫", "在", "花") and worked["chinese"].bp < 1
    assert worked["shorter than 4 tokens"].missing == (4,) and worked["shorter than 4 tokens"].orders[3].total == 0
    assert worked["empty candidate"].bp == 0.0 and worked["empty candidate"].bleu == 0.0


def test_tokens_are_sacrebleus():
    assert eb.bleu_tokens("hi there ", "char") == ("h", "i", "t", "h", "e", "r", "e")  # spaces are not tokens
    assert eb.bleu_tokens("thank you, brother.", "13a") == ("thank", "you", ",", "brother", ".")
    assert eb.bleu_tokens("猫吃了2个苹果。", "zh") == ("猫", "吃", "了", "2", "个", "苹", "果", "。")


@pytest.mark.parametrize("smooth", ["none", "exp"])
@pytest.mark.parametrize("name,candidate,reference,tokenize", CASES[:8], ids=IDS[:8])
def test_library_sentence_is_sacrebleus_sentence_score(name, candidate, reference, tokenize, smooth):
    ours = eb.library_sentence(candidate, reference, tokenize, smooth)
    theirs = BLEU(tokenize=tokenize, smooth_method=smooth).sentence_score(candidate, [reference])
    assert ours.bleu == pytest.approx(theirs.score) and ours.bp == pytest.approx(theirs.bp)
    assert list(ours.precisions) == pytest.approx(theirs.precisions)


def test_smoothing_is_what_separates_sacrebleus_default_from_the_formula():
    plain = eb.library_sentence("abcxbcyabz", "abcdabce", "char", "none")
    smoothed = eb.library_sentence("abcxbcyabz", "abcdabce", "char", "exp")
    assert plain.bleu == 0.0 < smoothed.bleu


def sample(output: str, reference: str) -> eb.Sample:
    return eb.Sample("src", reference, output)


def test_corpus_score_is_sacrebleus_and_sums_the_sentences_counts():
    samples = (sample("hello world", "hello world"), sample("hello wurld", "hello world"),
               sample("ab", "abc"), sample("2026-11-22", "2026-11-23"))
    hyps, refs = [s.output for s in samples], [s.reference for s in samples]
    score = eb.corpus_score(samples, "char")
    library = BLEU(tokenize="char").corpus_score(hyps, [refs])
    assert score.bleu == pytest.approx(library.score) == pytest.approx(corpus_bleu(hyps, refs, "char"))
    assert list(score.precisions) == pytest.approx(library.precisions) and score.bp == pytest.approx(library.bp)
    assert (score.hyp_len, score.ref_len) == (library.sys_len, library.ref_len)
    assert score.ratio == pytest.approx(library.sys_len / library.ref_len)
    assert score.exact_match == 0.25 and score.n == 4
    # By hand: the corpus sums every sentence's clipped matches, totals and lengths, then applies the formula once.
    worked = [eb.work_sentence(s.output, s.reference, "char") for s in samples]
    matches = [sum(w.orders[k].matches for w in worked) for k in range(4)]
    totals = [sum(w.orders[k].total for w in worked) for k in range(4)]
    assert list(score.matches) == matches and list(score.totals) == totals
    c, r = sum(w.c for w in worked), sum(w.r for w in worked)
    bp = 1.0 if c >= r else math.exp(1 - r / c)
    by_hand = 100 * bp * math.exp(sum(math.log(m / t) for m, t in zip(matches, totals)) / 4)
    assert score.bleu == pytest.approx(by_hand)
    # ...which is not the mean of the sentence scores.
    assert score.bleu != pytest.approx(sum(w.bleu for w in worked) / len(worked))


class FakeCkpt:
    def __init__(self, task: str, target=None) -> None:
        self.task = {"name": task}
        self.tokenizer = CharTokenizer("abc")
        if target is not None:
            self.target_tokenizer = target


def test_the_tokenisation_follows_the_task_and_the_target_tokenizer():
    assert eb.bleu_tokenize(FakeCkpt("copy")) == "char"
    assert eb.bleu_tokenize(FakeCkpt("dates")) == "char"
    assert eb.bleu_tokenize(FakeCkpt("en-zh", CharTokenizer("猫狗"))) == "zh"
    assert eb.bleu_tokenize(FakeCkpt("zh-en", WordTokenizer(["the", "cat"]))) == "13a"
    assert eb.bleu_tokenize(FakeCkpt("mystery", WordTokenizer(["the", "cat"]))) == "13a"
    assert eb.bleu_tokenize(FakeCkpt("mystery")) == "char"


# ------------------------------------------------------------------ the model's answers


class Ckpt:
    def __init__(self, seed: int = 0) -> None:
        torch.manual_seed(seed)
        self.tokenizer = CharTokenizer(get_task("copy").alphabet)
        v = self.tokenizer.vocab_size
        self.model = Transformer(TransformerConfig(v, v, d_model=16, n_heads=2, n_layers=1, d_ff=32, dropout=0.0,
                                                   max_len=64)).eval()
        self.task = {"name": "copy"}


@pytest.fixture(scope="module")
def ckpt() -> Ckpt:
    return Ckpt()


@pytest.mark.slow
def test_chunks_follow_one_seeded_stream_and_match_one_by_one_greedy_decoding(ckpt):
    first, second = eb.decode_chunk(ckpt, 7, 0), eb.decode_chunk(ckpt, 7, 1)
    assert len(first) == len(second) == eb.CHUNK
    stream = get_task("copy").sample_pairs(random.Random(7), 2 * eb.CHUNK)
    assert [(s.source, s.reference) for s in first + second] == stream
    for chunk, index in ((first, 0), (first, 3), (second, 5)):  # batched greedy = greedy one sentence at a time
        # The batch decodes up to its longest source + DECODE_MARGIN tokens (this untrained model never stops).
        limit = decoding.decode_bound(max(len(x.source) for x in chunk), 64)
        alone = decoding.greedy_decode(ckpt.model, ckpt.tokenizer.encode(chunk[index].source), bos_id=1, eos_id=2,
                                       max_len=limit)
        assert chunk[index].output == ckpt.tokenizer.decode(alone.tokens)
    assert eb.chunks_for(eb.CHUNK) == 1 and eb.chunks_for(eb.CHUNK + 1) == 2 and eb.chunks_for(200 * eb.CHUNK) == 200


def test_a_checkpoint_of_an_unknown_task_has_no_samples(ckpt):
    other = Ckpt()
    other.task = {"name": "mystery"}
    assert not eb.has_samples(other) and eb.decode_chunk(other, 0, 0) == ()
    assert eb.has_samples(ckpt)


def test_a_decode_whose_visitor_has_gone_stops_at_its_next_step(ckpt):
    asked = []

    def gone_after_three() -> bool:
        asked.append(1)
        return len(asked) > 3

    with pytest.raises(decoding.DecodingStopped):
        eb.decode_chunk(ckpt, 7, 0, should_stop=gone_after_three)
    assert len(asked) == 4  # three steps ran, the fourth was refused


def test_heavy_decodes_come_from_the_environment():
    assert eb.heavy_decodes({}) == 1
    assert eb.heavy_decodes({"TP_HEAVY_DECODES": "3"}) == 3
    for bad in ("0", "-1", "two", "1.5"):
        assert eb.heavy_decodes({"TP_HEAVY_DECODES": bad}) == 1
    assert eb.decode_turns() is eb.decode_turns() and eb.decode_turns().slots == 1


SAMPLES = (sample("hello world", "hello world"), sample("abcdefgh", "abcdefgh"), sample("2026-11-22", "2026-11-22"))


def test_swap_changes_one_token_of_every_answer_reproducibly():
    swapped = eb.corrupt(SAMPLES, "swap", 3, "char")
    assert swapped == eb.corrupt(SAMPLES, "swap", 3, "char")
    for before, after in zip(SAMPLES, swapped):
        assert len(after.output) == len(before.output) and not after.exact
        assert sum(a != b for a, b in zip(after.output, before.output)) == 1
    score = eb.corpus_score(swapped, "char")
    assert score.exact_match == 0 and 50 < score.bleu < 100 and score.bp == 1.0


def test_short_cuts_the_last_quarter_and_the_brevity_penalty_shows_it():
    short = eb.corrupt(SAMPLES, "short", 0, "char")
    assert [s.output for s in short] == ["hello wor", "abcdef", "2026-11-"]  # 11 − 2, 8 − 2, 10 − 2
    score = eb.corpus_score(short, "char")
    assert score.precisions == (100.0, 100.0, 100.0, 100.0) and score.bp < 1
    assert score.bleu == pytest.approx(100 * score.bp)


def test_word_answers_change_word_by_word():
    words = (sample("the cat ate two apples .", "the cat ate two apples ."),)
    swapped = eb.corrupt(words, "swap", 0, "13a")[0].output.split(" ")
    assert len(swapped) == 6 and sum(a != b for a, b in zip(swapped, words[0].reference.split(" "))) == 1
    assert eb.corrupt(words, "short", 0, "13a")[0].output == "the cat ate two apples"
    assert eb.corrupt(words, "none", 0, "13a") == words
    with pytest.raises(ValueError):
        eb.corrupt(words, "loud", 0, "13a")


def test_default_pick_and_the_sample_where_exact_match_and_bleu_part():
    assert eb.default_pick(SAMPLES) == 0
    mixed = (sample("abc", "abc"), sample("hello wurld", "hello world"), sample("hello world", "hello world"))
    assert eb.default_pick(mixed) == 1
    bleus = eb.sentence_bleus(mixed, "char")
    assert bleus[0] == 0.0 and 0 < bleus[1] < 100 and bleus[2] == pytest.approx(100)
    assert eb.telling_sample(mixed, bleus) == (1, "wrong_high")
    right_short = (sample("hello world", "hello world"), sample("abc", "abc"))
    assert eb.telling_sample(right_short, eb.sentence_bleus(right_short, "char")) == (1, "right_zero")
    assert eb.telling_sample(SAMPLES, eb.sentence_bleus(SAMPLES, "char")) is None


def test_score_samples_scores_the_changed_answers():
    triples = tuple((s.source, s.reference, s.output) for s in SAMPLES)
    view = eb.score_samples(triples, "short", 0, "char")
    assert view.samples == eb.corrupt(SAMPLES, "short", 0, "char")
    assert view.corpus == eb.corpus_score(view.samples, "char")
    assert view.bleus == eb.sentence_bleus(view.samples, "char")


def test_tables():
    worked = eb.work_sentence("the the the the", "the cat is on the mat", "13a")
    orders = eb.order_table(worked, {c: c.upper() for c in eb.ORDER_COLUMNS})
    assert list(orders.columns) == [c.upper() for c in eb.ORDER_COLUMNS]
    assert orders["MATCHES"].tolist() == [2, 0, 0, 0] and orders["TOTAL"].tolist() == [4, 3, 2, 1]
    assert orders["PRECISION"].tolist() == [0.5, 0, 0, 0]
    assert orders["LOG_PRECISION"].tolist() == [f"{math.log(0.5):.4f}", "−∞", "−∞", "−∞"]
    grams = eb.ngram_table(worked, 2, {c: c for c in eb.NGRAM_COLUMNS})
    assert grams.to_dict("records") == [{"ngram": "the the", "in_candidate": 3, "in_reference": 0, "clipped": 0}]
    mixed = (sample("abc", "abc"), sample("hello wurld", "hello world"))
    table = eb.sample_table(mixed, eb.sentence_bleus(mixed, "char"), {c: c for c in eb.SAMPLE_COLUMNS})
    assert table["number"].tolist() == [1, 2] and table["exact"].tolist() == ["✓", "✗"]
    assert table["bleu"].iloc[0] == 0.0 and 0 < table["bleu"].iloc[1] < 100

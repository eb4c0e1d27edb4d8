"""Byte-pair encoding (explain.bpe, figures.tokens' BPE pictures): pieces give the text back, the first k
learnt merges cut as the library does (checked against the library's own trained tokenizer and against a
merge-by-rank written here), k = 0 is characters, and an unknown word falls apart into known pieces."""
from __future__ import annotations

import math
from collections import Counter

import pytest

from explain.bpe import (CORPORA, DEFAULT_SENTENCES, HELD_OUT_SENTENCES, MAX_MERGES, MIN_PAIR_COUNT, TRAIN_SENTENCES,
                         TYPED_DEFAULT, TYPED_MAX_CHARS, UNK, WORD_START, compare, corpus_sentences, detokenize,
                         learn_bpe, normalize, prefix_tokenizer, segment, train_tokenizer, word_pieces)
from figures.tokens import bpe_curve_figure, pieces_html

HOSTILE = "<b>x</b> 👍🏽 café &amp; ▁ end"


@pytest.fixture(scope="module")
def learnt():
    """Every corpus learnt once (the typed one from Sennrich et al.'s example)."""
    return {corpus: learn_bpe(corpus, TYPED_DEFAULT if corpus == "typed" else "") for corpus in CORPORA}


def merge_by_rank(word: str, merges: list[tuple[str, str]], alphabet: set[str]) -> list[str]:
    """BPE written out: start from characters (unknown ones as <unk>), then merge the adjacent pair of
    lowest rank, leftmost first, until no pair of ``merges`` is left."""
    ranks = {pair: rank for rank, pair in enumerate(merges)}
    pieces = [ch if ch in alphabet else UNK for ch in word]
    while True:
        found = [(ranks[pair], i) for i, pair in enumerate(zip(pieces, pieces[1:])) if pair in ranks]
        if not found:
            return pieces
        _, i = min(found)
        pieces[i:i + 2] = [pieces[i] + pieces[i + 1]]


def words_of(text: str) -> list[str]:
    """The words the pre-tokenizer makes: a ▁ in front of each, split at spaces."""
    return [WORD_START + word for word in text.split(" ")]


# ------------------------------------------------------------------ the corpora


def test_the_grammar_s_corpora_are_a_fixed_seeded_sample(learnt):
    train, held = corpus_sentences("english")
    assert len(train) == TRAIN_SENTENCES and len(held) == HELD_OUT_SENTENCES
    assert corpus_sentences("english") == (train, held)  # the same every time
    assert train[0] == "the happy cat finds three small maps in the park every morning ."
    zh_train, _ = corpus_sentences("chinese")
    assert zh_train[0] == "快乐的猫每天早上在公园里找到三张小地图。"  # the same pair's other side
    assert learnt["english"].measured == held


def test_typed_text_is_its_lines_cut_to_the_limit():
    train, measured = corpus_sentences("typed", "a  b\n\n   \nc d  \n")
    assert train == measured == ("a b", "c d")
    long = "x" * (TYPED_MAX_CHARS + 50)
    assert corpus_sentences("typed", long)[0] == ("x" * TYPED_MAX_CHARS,)
    with pytest.raises(ValueError):
        corpus_sentences("french")


def test_normalize_writes_text_as_each_corpus_does():
    assert normalize("The Cat, ate!", "english") == "the cat , ate !"
    assert normalize("猫 吃 鱼.", "chinese") == "猫吃鱼。"
    assert normalize("  a\tb ▁c  ", "typed") == "a b c"  # ▁ is the word mark: typed, it is a space
    assert normalize("a\ud800b", "typed") == "ab"  # a lone surrogate goes


# ------------------------------------------------------------------ the merges learnt


def test_sennrich_s_example_learns_es_est_first(learnt):
    """low ×5, lower ×2, newest ×6, widest ×3: e·s occurs 6 + 3 = 9 times, more than any other pair."""
    bpe = learnt["typed"]
    counts = Counter()
    for line in corpus_sentences("typed", TYPED_DEFAULT)[0]:
        for word in words_of(line):
            counts.update(zip(word, word[1:]))
    assert counts[("e", "s")] == counts[("s", "t")] == 9 == max(counts.values())
    assert bpe.merges[:2] == (("e", "s"), ("es", "t"))
    assert [p.token for p in segment(bpe, bpe.max_k, "lowest")] == ["▁low", "est"]


def test_merges_stop_at_the_limit_or_where_no_pair_repeats(learnt):
    assert learnt["english"].max_k == learnt["chinese"].max_k == MAX_MERGES
    typed = learnt["typed"]
    assert typed.max_k < MAX_MERGES
    # after the last merge no pair of neighbouring pieces occurs MIN_PAIR_COUNT times in the text
    counts = Counter()
    for line in typed.measured:
        for word in words_of(line):
            pieces = merge_by_rank(word, list(typed.merges), set(typed.alphabet))
            counts.update(zip(pieces, pieces[1:]))
    assert max(counts.values(), default=0) < MIN_PAIR_COUNT
    assert learn_bpe("typed", "abc xyz").max_k == 0


# ------------------------------------------------------------------ cutting with the first k merges


@pytest.mark.parametrize("corpus", CORPORA)
def test_all_merges_reproduce_the_library_s_own_segmentation(learnt, corpus):
    bpe = learnt[corpus]
    train, held = corpus_sentences(corpus, TYPED_DEFAULT)
    library = train_tokenizer(train)
    sentences = [*held, normalize(DEFAULT_SENTENCES[corpus], corpus), normalize(HOSTILE, corpus)]
    for sentence in sentences:
        assert [p.token for p in segment(bpe, bpe.max_k, sentence)] == library.encode(sentence).tokens, sentence


@pytest.mark.parametrize("corpus", ["english", "chinese"])
@pytest.mark.parametrize("k", [0, 1, 7, 60, 299, 300])
def test_the_first_k_merges_cut_as_merge_by_rank_does(learnt, corpus, k):
    bpe = learnt[corpus]
    merges, alphabet = list(bpe.merges[:k]), set(bpe.alphabet)
    for sentence in bpe.measured[:150]:
        expected = [piece for word in words_of(sentence) for piece in merge_by_rank(word, merges, alphabet)]
        assert [p.token for p in segment(bpe, k, sentence)] == expected


def test_k_beyond_the_merges_is_all_of_them(learnt):
    bpe = learnt["typed"]
    assert segment(bpe, 10_000, "lowest newer") == segment(bpe, bpe.max_k, "lowest newer")
    assert segment(bpe, -3, "low") == segment(bpe, 0, "low")


@pytest.mark.parametrize("corpus", CORPORA)
def test_no_merge_is_characters(learnt, corpus):
    bpe = learnt[corpus]
    for sentence in [*bpe.measured[:50], normalize(DEFAULT_SENTENCES[corpus], corpus)]:
        tokens = [p.token for p in segment(bpe, 0, sentence)]
        assert tokens == [WORD_START] + [WORD_START if ch == " " else ch for ch in sentence]
    assert bpe.mean_pieces[0] == pytest.approx(sum(len(s) + 1 for s in bpe.measured) / len(bpe.measured))


@pytest.mark.parametrize("corpus", CORPORA)
@pytest.mark.parametrize("k", [0, 25, 300])
def test_pieces_give_the_text_back(learnt, corpus, k):
    bpe = learnt[corpus]
    for sentence in [*bpe.measured[:100], normalize(HOSTILE, corpus), ""]:
        pieces = segment(bpe, k, sentence)
        assert detokenize(pieces) == sentence
        assert "".join(p.token for p in pieces if not p.unknown).replace(WORD_START, "") == "".join(
            p.surface for p in pieces if not p.unknown).replace(" ", "")


def test_an_unknown_character_is_unk_and_keeps_what_it_was(learnt):
    bpe = learnt["english"]
    pieces = segment(bpe, bpe.max_k, "café 👍")
    unknown = [p for p in pieces if p.unknown]
    assert [p.token for p in unknown] == [UNK, UNK] and [p.surface for p in unknown] == ["é", "👍"]
    assert [p.token for p in pieces if not p.unknown][0].startswith("▁c")


def test_typed_unk_is_text_not_the_special_token():
    """The library's trained tokenizer would read a typed ``<unk>`` as its special token; cut with the
    learnt merges alone it stays the five characters typed (typed text never injects a special token)."""
    bpe = learn_bpe("typed", "<unk> <unk> <unk>")
    assert train_tokenizer(corpus_sentences("typed", "<unk>")[0]).encode("<unk>").tokens == [UNK]
    pieces = segment(bpe, 0, "<unk>")
    assert [p.token for p in pieces] == ["▁", "<", "u", "n", "k", ">"] and not any(p.unknown for p in pieces)
    assert detokenize(segment(bpe, bpe.max_k, "<unk>")) == "<unk>"


def test_an_unknown_word_falls_apart_into_known_pieces(learnt):
    bpe = learnt["english"]
    sentence = normalize(DEFAULT_SENTENCES["english"], "english")  # the happiest dogs ate the catfish .
    for word in ("happiest", "catfish"):
        assert word not in bpe.words
        assert all(word not in s.split() for s in corpus_sentences("english")[0])
    words = word_pieces(bpe, sentence)
    assert [p.token for p in words] == ["the", UNK, "dogs", "ate", "the", UNK, "."]
    pieces = segment(bpe, bpe.max_k, sentence)
    assert not any(p.unknown for p in pieces) and detokenize(pieces) == sentence
    cut = [p.token for p in segment(bpe, bpe.max_k, "catfish")]
    assert len(cut) > 1 and cut[0] == "▁cat" and all(token in prefix_tokenizer(bpe.alphabet, bpe.merges)
                                                      .get_vocab() for token in cut)


def test_vocabulary_grows_and_sentences_shrink_with_k(learnt):
    for corpus, bpe in learnt.items():
        sizes, lengths = bpe.vocab_sizes, bpe.mean_pieces
        assert len(sizes) == len(lengths) == bpe.max_k + 1
        assert sizes[0] == len(bpe.alphabet)
        assert all(b >= a for a, b in zip(sizes, sizes[1:])) and sizes[-1] > sizes[0]
        assert all(b <= a + 1e-12 for a, b in zip(lengths, lengths[1:])) and lengths[-1] < lengths[0]
        for k in (0, 1, bpe.max_k // 2, bpe.max_k):
            expected = set(bpe.alphabet) | {a + b for a, b in bpe.merges[:k]}
            assert sizes[k] == len(expected)
            assert sizes[k] == prefix_tokenizer(bpe.alphabet, bpe.merges[:k]).get_vocab_size() - 1  # less <unk>
            library = prefix_tokenizer(bpe.alphabet, bpe.merges[:k])
            assert lengths[k] == pytest.approx(
                sum(len(library.encode(s).tokens) for s in bpe.measured) / len(bpe.measured))


# ------------------------------------------------------------------ characters, words and BPE compared


def test_characters_words_and_bpe_on_the_same_sentences(learnt):
    bpe = learnt["english"]
    train, held = corpus_sentences("english")
    vocabulary = {w for s in train for w in s.split()}
    sentence = normalize(DEFAULT_SENTENCES["english"], "english")
    chars, words, sub = compare(bpe, 100, sentence)
    assert (chars.name, words.name, sub.name) == ("chars", "words", "bpe")
    assert chars.vocab_size == len(set("".join(train)) | {WORD_START}) - (" " in "".join(train))
    assert words.vocab_size == len(vocabulary)
    assert words.mean_pieces == pytest.approx(sum(len(s.split()) for s in held) / len(held))
    assert words.unknown == sum(w not in vocabulary for s in held for w in s.split()) > 0
    assert chars.unknown == sub.unknown == 0  # every held-out character was seen in training
    assert sub.vocab_size == bpe.vocab_sizes[100] and sub.mean_pieces == bpe.mean_pieces[100]
    assert chars.mean_pieces > sub.mean_pieces > words.mean_pieces
    assert (len(chars.sentence), len(words.sentence)) == (len(sentence) + 1, 7)
    assert (chars.sentence_unknown, words.sentence_unknown, sub.sentence_unknown) == (0, 2, 0)
    assert math.isclose(words.mean_pieces, bpe.mean_words)


def test_chinese_has_no_word_row(learnt):
    bpe = learnt["chinese"]
    assert bpe.words is None and word_pieces(bpe, "猫吃鱼。") is None
    rows = compare(bpe, 300, normalize(DEFAULT_SENTENCES["chinese"], "chinese"))
    assert [r.name for r in rows] == ["chars", "bpe"]
    assert "明天早上" in [p.token for p in rows[1].sentence]  # a word found from the counts alone


def test_hostile_typed_text_learns_and_cuts():
    bpe = learn_bpe("typed", HOSTILE * 3 + "\n" + "\x0b👍🏽 <script>")
    pieces = segment(bpe, bpe.max_k, normalize(HOSTILE, "typed"))
    assert detokenize(pieces) == normalize(HOSTILE, "typed") and not any(p.unknown for p in pieces)


# ------------------------------------------------------------------ the pictures


def test_pieces_html_escapes_and_marks_unknown():
    bpe = learn_bpe("typed", "<b>x</b>\n<b>y</b>")
    pieces = segment(bpe, bpe.max_k, "<b>x</b> é")
    html = pieces_html([("BPE <i>", [p.token for p in pieces], [p.surface for p in pieces],
                         [p.unknown for p in pieces])])
    assert "<b>" not in html and "<i>" not in html and "&lt;b&gt;" in html.replace("&lt;unk&gt;", "")
    assert html.count("#fde0df") == sum(p.unknown for p in pieces) == 1
    assert 'title="é"' in html


def test_the_curve_marks_k_and_the_words(learnt):
    bpe = learnt["english"]
    fig = bpe_curve_figure(bpe.vocab_sizes, bpe.mean_pieces, 40, titles=("V", "L"), x_title="k",
                           hovers=("%{y}", "%{y}"), words=(312, 10.0), words_name="words")
    lines, marks = fig.data[0::2], fig.data[1::2]
    assert list(lines[0].y) == list(bpe.vocab_sizes) and list(marks[0].x) == [40]
    assert list(marks[0].y) == [bpe.vocab_sizes[40]] and list(marks[1].y) == [pytest.approx(bpe.mean_pieces[40])]
    assert [shape.y0 for shape in fig.layout.shapes if shape.line.dash == "dot"] == [312, 10.0]
    assert bpe_curve_figure(bpe.vocab_sizes, bpe.mean_pieces, 0, titles=("V", "L"), x_title="k",
                            hovers=("", ""), words=None, words_name="").layout.shapes[0].line.dash == "dash"

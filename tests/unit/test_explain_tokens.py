"""explain.tokens: the batch as the model builds it, and the kind of every cell."""
from __future__ import annotations

import pytest

from explain.tokens import (SENTENCE_ROWS, batch_of, batch_target, fallback_batch, sentence_batch, sentence_frame,
                            side_frames)
from model.tasks import DEFAULT_ALPHABET, batch_from_pairs
from model.tokenizer import CharTokenizer

SENTENCES = ["hello world", "attention is all you need", "hi!"]


@pytest.fixture(scope="module")
def tokenizer() -> CharTokenizer:
    return CharTokenizer(DEFAULT_ALPHABET)


def test_batch_is_the_training_batch(tokenizer):
    batch = sentence_batch(SENTENCES, tokenizer, "reverse")
    reference = batch_from_pairs([(s, s[::-1]) for s in SENTENCES], tokenizer)
    assert [r.ids for r in batch.source] == reference.src.tolist()
    assert [r.ids for r in batch.decoder_in] == reference.tgt_in.tolist()
    assert [r.ids for r in batch.labels] == reference.tgt_out.tolist()
    assert batch.targets == [s[::-1] for s in SENTENCES]


def test_rows_know_their_kinds(tokenizer):
    batch = sentence_batch(["ab", "abcd", "a你"], tokenizer, "copy")
    assert batch.source[0].kinds == ["char", "char", "pad", "pad"]
    assert batch.source[0].length == 2
    assert batch.decoder_in[1].kinds[0] == "special" and batch.decoder_in[1].tokens[0] == "<bos>"
    assert batch.labels[0].tokens[:3] == ["a", "b", "<eos>"]
    assert batch.source[2].kinds[:2] == ["char", "unk"]
    assert batch.source[2].tokens[1] == "<unk>"


def test_unknown_task_falls_back_to_copy_and_dates_may_have_no_answer(tokenizer):
    assert batch_target("no such task", "abc") == "abc"
    assert batch_target(None, "abc") == "abc"
    batch = sentence_batch(["hello"], tokenizer, "dates")
    assert batch.targets == [None]
    assert batch.decoder_in[0].tokens == ["<bos>"] and batch.labels[0].tokens == ["<eos>"]


def test_without_a_model_the_batch_is_the_default_alphabets_copy_batch(tokenizer):
    assert fallback_batch(tuple(SENTENCES)) == sentence_batch(SENTENCES, tokenizer, "copy")


def test_a_models_batch_goes_through_its_own_tokenizers_not_its_tasks():
    """#33 item 6: an uploaded model may name a task and bring other words (the page built the task's)."""
    from types import SimpleNamespace

    from model.tokenizer import WordTokenizer
    source, target = WordTokenizer(["the", "cat"]), CharTokenizer("猫")
    ckpt = SimpleNamespace(tokenizer=source, target_tokenizer=target, task={"name": "en-zh"})
    batch = batch_of(ckpt, ("the cat ate two apples .",))
    assert batch.source[0].tokens == ["the", "cat", *["<unk>"] * 4]
    assert batch.targets == ["猫吃了两个苹果。"]
    assert batch.decoder_in[0].tokens == ["<bos>", "猫", *["<unk>"] * 7]
    word_copy = SimpleNamespace(tokenizer=source, target_tokenizer=source, task={"name": "copy"})
    assert batch_of(word_copy, ("the cat",)).labels[0].tokens == ["the", "cat", "<eos>"]


def test_side_frames_shape_and_raw_tokens(tokenizer):
    batch = sentence_batch(SENTENCES, tokenizer, "copy")
    tokens, ids, kinds = side_frames(batch.source, ["s1", "s2", "s3"])
    assert tokens.shape == ids.shape == kinds.shape == (3, 25)
    assert list(tokens.index) == ["s1", "s2", "s3"] and list(tokens.columns) == list(range(25))
    assert tokens.iloc[0, 5] == " "  # made visible by the picture (figures.tokens), not here
    assert tokens.iloc[2, 3] == "<pad>"
    assert (kinds == "pad").sum() == (25 - 11) + 0 + (25 - 3)
    assert int(ids.iloc[2, 3]) == 0


def test_sentence_frame_shows_the_shift(tokenizer):
    batch = sentence_batch(["abc"], tokenizer, "reverse")
    frame, kinds = sentence_frame(batch, 0, {k: k for k in SENTENCE_ROWS})
    assert list(frame.index) == list(SENTENCE_ROWS)
    assert list(frame.loc["chars"]) == ["a", "b", "c", ""]
    assert list(frame.loc["decoder_in"]) == ["<bos>", "c", "b", "a"]
    assert list(frame.loc["labels"]) == ["c", "b", "a", "<eos>"]
    assert frame.loc["source_ids"].iloc[0] == str(tokenizer.encode("a")[0])
    assert kinds.shape == frame.shape
    assert list(kinds[3]) == ["special", "char", "char", "char"] and list(kinds[0]) == ["char"] * 4


def test_sentence_frame_leaves_the_batch_padding_out(tokenizer):
    batch = sentence_batch(["a", "abcdef"], tokenizer, "copy")
    frame, kinds = sentence_frame(batch, 0, {k: k for k in SENTENCE_ROWS})
    assert frame.shape == (7, 2) and "<pad>" not in frame.to_numpy()
    assert not (kinds == "pad").any()


def test_a_word_models_first_row_holds_its_words_above_their_tokens():
    """#35 item 5: the letters row and the word tokens shared column numbers, so "t" sat above "the"."""
    from model.tasks import get_task
    task = get_task("en-zh")
    batch = sentence_batch(["The cat ate two apples ."], task.source_tokenizer(), "en-zh", task.target_tokenizer())
    frame, _ = sentence_frame(batch, 0, {k: k for k in SENTENCE_ROWS}, unit="word")
    words = ["the", "cat", "ate", "two", "apples", "."]
    assert list(frame.loc["chars"])[:len(words)] == words
    assert list(frame.loc["source"])[:len(words)] == words  # word i above token i

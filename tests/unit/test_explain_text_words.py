"""explain.text with a word-level tokenizer: the limit counts words, unknown words get suggestions."""
from __future__ import annotations

from explain.text import first_units, join_units, known_units, prepare_sentence, prepare_sentences, suggestions
from model.tokenizer import CharTokenizer, WordTokenizer

WORDS = WordTokenizer(["the", "cat", "ate", "two", "apples", "in", "garden", "yesterday", ".", "tired", "tree"])


def test_unknown_words_are_flagged_with_close_known_words():
    prepared = prepare_sentence("The cat ate two aples in the gardn .", WORDS)
    assert prepared.unknown == [[(4, "aples"), (7, "gardn")]]
    keys = [n.key for n in prepared.notices]
    assert keys == ["common.vocabulary.unknown_words", "common.vocabulary.did_you_mean"]
    assert prepared.notices[0].values == {"words": "aples gardn"}
    assert prepared.notices[1].values == {"pairs": "aples → apples; gardn → garden"}


def test_a_word_with_no_close_known_word_gets_no_suggestion():
    prepared = prepare_sentence("the cat ate xylophone .", WORDS)
    assert [n.key for n in prepared.notices] == ["common.vocabulary.unknown_words"]
    assert suggestions("tird", WORDS.known_units) == ["tired"]


def test_the_length_limit_counts_words_not_characters():
    sentence = " ".join(["the cat ate two apples ."] * 3)  # 18 words, 74 characters
    prepared = prepare_sentence(sentence, WORDS, max_chars=10)
    assert prepared.sentences == ["the cat ate two apples . the cat ate two"]
    assert [n.key for n in prepared.notices] == ["common.vocabulary.truncated_words"]
    assert prepare_sentence(sentence, WORDS, max_chars=48).notices == []  # 74 characters but 18 words


def test_character_tokenizers_keep_their_character_limit_and_notice():
    prepared = prepare_sentences("hello world", CharTokenizer("helo wrd"), max_chars=5)
    assert prepared.sentences == ["hello"]
    assert [n.key for n in prepared.notices] == ["common.input.truncated"]
    chinese = prepare_sentence("猫吃了橘子", CharTokenizer("猫吃了"))
    assert [n.key for n in chinese.notices] == ["common.input.unknown_chars"]
    assert chinese.notices[0].values == {"chars": "橘 子"}  # in the order they were written


def test_units_are_joined_as_each_language_writes_them():
    assert join_units(["the", "cat", "."], "word") == "the cat ."
    assert join_units(["猫", "吃"], "char") == "猫吃"
    assert first_units("the cat ate two apples .", 3, "word") == "the cat ate"
    assert first_units("猫昨天在花园里", 3, "char") == "猫昨天"
    assert known_units(CharTokenizer("ab")) == ("a", "b") and known_units(WORDS)[:2] == ("the", "cat")


def test_unknown_units_are_listed_in_sentence_order_with_a_visible_space_and_the_rest_counted():
    """#35 items 5 and 8: the list was sorted, cut at 20 without a word, and an unknown space was invisible."""
    chars = prepare_sentence("zy x", CharTokenizer("abc"))
    assert chars.notices[0].key == "common.input.unknown_chars"
    assert chars.notices[0].values == {"chars": "z y ␣ x"}
    many = prepare_sentence("".join(chr(0x4E00 + i) for i in range(25)), CharTokenizer("abc"), max_chars=100)
    assert many.notices[0].key == "common.input.unknown_chars_more"
    assert many.notices[0].values["more"] == 5 and many.notices[0].values["chars"].startswith("一 丁")
    words = prepare_sentence("the zebra ate a kiwi .", WORDS)
    assert words.notices[0].values == {"words": "zebra a kiwi"}  # as written, not sorted


def test_a_sentence_without_the_end_mark_a_translation_model_always_read_is_flagged():
    from explain.tasks import _end_marks
    from explain.text import prepare_sentences
    from model.tasks import get_task

    zh = get_task("zh-en").source_tokenizer()
    marks = _end_marks("zh-en")
    assert marks == ("。", "？")
    flagged = prepare_sentences("猫吃了苹果", zh, end_marks=marks)
    assert [n.key for n in flagged.notices] == ["common.input.no_end_mark"]
    assert flagged.notices[0].values == {"marks": "。 ？"}
    assert flagged.sentences == ["猫吃了苹果"]  # flagged, not changed behind the visitor's back
    assert not prepare_sentences("猫吃了苹果。\n你看见了狗吗？", zh, end_marks=marks).notices
    assert not prepare_sentences("猫吃了苹果", zh).notices  # a model with no end marks: nothing to say
    assert _end_marks("en-zh") == (".", "?")

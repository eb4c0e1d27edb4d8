"""The gold word alignment of the translation grammar (model.translation) and of the character tasks, the
alignment score of a cross-attention map (explain.alignment), its pictures, and the shipped models' heads."""
from __future__ import annotations

import random

import numpy as np
import pytest

from explain.alignment import (alignment_score, best_heads, gold_cells, head_alignment, head_alignment_scores,
                               score_frame, task_alignment, uniform_score)
from explain.attention import attention_view
from figures.attention import ALIGNMENT_EDGE, alignment_figure, zoom_figure
from model.checkpoint import load_checkpoint
from model.translation import (Clause, PronounClause, alignment_of, chinese, english, english_tokenizer,
                               chinese_tokenizer, sample_en_zh, sample_zh_en, word_alignment, parse_english)
from ui.models import checkpoint_path


def readable(source: str, direction: str) -> list[tuple[str, str]]:
    """(target token, the source tokens it translates, joined) for a typed sentence."""
    found = alignment_of(source, direction)
    assert found is not None, source
    glue = "" if direction == "zh-en" else " "
    return [(tok, glue.join(found.source[i] for i in links)) for tok, links in zip(found.target, found.links)]


# ------------------------------------------------------------------ the grammar's alignment, by hand


def test_the_reordering_example_aligns_phrase_by_phrase():
    assert readable("the cat ate two apples in the garden yesterday .", "en-zh") == [
        ("猫", "cat"), ("昨", "yesterday"), ("天", "yesterday"), ("在", "in the garden"), ("花", "in the garden"),
        ("园", "in the garden"), ("里", "in the garden"), ("吃", "ate"), ("了", "ate"), ("两", "two"), ("个", "two"),
        ("苹", "apples"), ("果", "apples"), ("。", ".")]


def test_the_other_way_the_and_nothing_else_translate_nothing():
    assert readable("猫昨天在花园里吃了两个苹果。", "zh-en") == [
        ("the", ""), ("cat", "猫"), ("ate", "吃了"), ("two", "两个"), ("apples", "苹果"), ("in", "在花园里"),
        ("the", "在花园里"), ("garden", "在花园里"), ("yesterday", "昨天"), (".", "。")]


@pytest.mark.parametrize("source, expected", [
    # a question: the auxiliary in front carries the tense (了) and, with "?", the question (吗)
    ("did you drink a cup of tea ?", [("你", "you"), ("喝", "drink"), ("了", "did"), ("一", "a"), ("杯", "cup"),
                                      ("茶", "tea"), ("吗", "did ?"), ("？", "?")]),
    # a negative future: 不会 is "will not"; a name; a place without 里
    ("tom will not buy three red cars at home .", [
        ("汤", "tom"), ("姆", "tom"), ("不", "will not"), ("会", "will not"), ("在", "at home"), ("家", "at home"),
        ("买", "buy"), ("三", "three"), ("辆", "three"), ("红", "red"), ("车", "cars"), ("。", ".")]),
    # an adjective on the subject, the present, a time
    ("the hungry dog eats the cake every day .", [
        ("饥", "hungry"), ("饿", "hungry"), ("的", "hungry"), ("狗", "dog"), ("每", "every day"), ("天", "every day"),
        ("吃", "eats"), ("蛋", "cake"), ("糕", "cake"), ("。", ".")]),
    # a future statement: will ↔ 会
    ("we will see the tree tomorrow .", [("我", "we"), ("们", "we"), ("明", "tomorrow"), ("天", "tomorrow"),
                                         ("会", "will"), ("看", "see"), ("见", "see"), ("树", "tree"), ("。", ".")]),
    # the pronoun sentence: the referent after 因为 translates "it", 太…了 is "too"
    ("the cat did not cross the road because it was too wide .", [
        ("猫", "cat"), ("没", "did not"), ("有", "did not"), ("过", "cross"), ("马", "road"), ("路", "road"),
        ("，", ""), ("因", "because"), ("为", "because"), ("马", "it"), ("路", "it"), ("太", "too"), ("宽", "wide"),
        ("了", "too"), ("。", ".")]),
])
def test_hand_written_pairs(source, expected):
    assert readable(source, "en-zh") == expected


def test_a_typed_sentence_is_read_back_in_any_case_and_spacing():
    assert alignment_of("The cat ate two apples in the garden yesterday.", "en-zh") == \
        alignment_of("the cat ate two apples in the garden yesterday .", "en-zh")
    typed = alignment_of("猫 昨天在花园里吃了两个苹果.", "zh-en")
    assert typed == alignment_of("猫昨天在花园里吃了两个苹果。", "zh-en")


@pytest.mark.parametrize("source, direction", [("the cat ate two aples .", "en-zh"), ("hello world", "en-zh"),
                                               ("猫吃了苹果和橘子。", "zh-en"), ("", "zh-en"), (None, "en-zh")])
def test_a_sentence_the_grammar_cannot_write_has_none(source, direction):
    assert alignment_of(source, direction) is None


def test_an_unknown_direction_is_refused():
    with pytest.raises(ValueError, match="direction"):
        word_alignment(parse_english("the cat ate the cake ."), "en-fr")


@pytest.mark.parametrize("direction, sample", [("en-zh", sample_en_zh), ("zh-en", sample_zh_en)])
def test_every_generated_pair_has_an_alignment_in_the_tokenizers_tokens(direction, sample):
    rng = random.Random(7)
    en_tok, zh_tok = english_tokenizer(), chinese_tokenizer()
    src_tok, tgt_tok = (en_tok, zh_tok) if direction == "en-zh" else (zh_tok, en_tok)
    for _ in range(1500):
        source, target = sample(rng)
        found = alignment_of(source, direction)
        assert found is not None, source
        assert list(found.source) == src_tok.token_strings(src_tok.encode(source))
        assert list(found.target) == tgt_tok.token_strings(tgt_tok.encode(target))
        assert len(found.links) == len(found.target)
        assert all(0 <= i < len(found.source) for links in found.links for i in links)
        assert any(found.links), source


def test_the_two_directions_are_one_alignment_transposed():
    rng = random.Random(3)
    for _ in range(300):
        clause = parse_english(sample_en_zh(rng)[0])
        there, back = word_alignment(clause, "en-zh"), word_alignment(clause, "zh-en")
        forward = {(j, i) for j, links in enumerate(there.links) for i in links}
        assert forward == {(i, j) for j, links in enumerate(back.links) for i in links}


def test_the_writings_are_unchanged():
    """The alignment is built beside english() and chinese(): they write what they always wrote."""
    clause = Clause("cat", None, parse_english("the cat ate the cake .").verb, "past", False, False,
                    parse_english("the cat ate the cake .").obj, 2, None, "in the garden", "yesterday")
    assert english(clause) == "the cat ate two cakes in the garden yesterday ."
    assert chinese(clause) == "猫昨天在花园里吃了两块蛋糕。"
    pronoun = PronounClause("cat", "cross", "road", "tired")
    assert chinese(pronoun) == "猫没有过马路，因为猫太累了。"


# ------------------------------------------------------------------ the character tasks


def test_copy_reverse_and_sort_align_by_position_and_character():
    assert task_alignment("copy", "abc").links == ((0,), (1,), (2,))
    reverse = task_alignment("reverse", "abc")
    assert reverse.target_text == "cba" and reverse.links == ((2,), (1,), (0,))
    sort = task_alignment("sort", "bab")
    assert sort.target == ("a", "b", "b") and sort.links == ((1,), (0, 2), (0, 2))
    assert task_alignment("dates", "22 nov 2026") is None
    assert task_alignment("copy", "") is None
    assert task_alignment("en-zh", "猫。") is None
    assert task_alignment("zh-en", "猫昨天在花园里吃了两个苹果。").target_text == \
        "the cat ate two apples in the garden yesterday ."


# ------------------------------------------------------------------ the score


def test_gold_cells_put_target_token_j_on_row_j_and_leave_the_eos_row_empty():
    cells = gold_cells(((1,), (), (0, 2), (5,)), 5, 3)
    expected = np.zeros((5, 3), bool)
    expected[0, 1] = expected[2, 0] = expected[2, 2] = True  # position 5 is past the 3 keys: dropped
    assert (cells == expected).all()
    assert gold_cells(((0,), (1,)), 1, 2).tolist() == [[True, False]]  # rows cut to n_rows


def test_the_score_is_1_for_the_alignment_itself_and_lower_for_a_uniform_map():
    gold = gold_cells(((0,), (1, 2), (), (3,)), 5, 4)
    rows = gold.sum(axis=1, keepdims=True)
    itself = np.where(rows > 0, gold / np.maximum(rows, 1), 0.25)  # row-normalised; gold-less rows anything
    assert alignment_score(itself, gold) == pytest.approx(1.0)
    uniform = np.full((5, 4), 0.25)
    # independent: the rows with gold have 1, 2 and 1 of 4 keys → (0.25 + 0.5 + 0.25) / 3
    assert alignment_score(uniform, gold) == pytest.approx(1 / 3)
    assert uniform_score(gold) == pytest.approx(1 / 3)
    wrong = np.roll(itself, 1, axis=1)
    assert alignment_score(wrong, gold) < uniform_score(gold)


def test_the_score_of_a_made_up_map_by_hand():
    gold = gold_cells(((1,), (0,)), 3, 2)
    weights = np.array([[0.2, 0.8], [0.6, 0.4], [0.5, 0.5]])
    assert alignment_score(weights, gold) == pytest.approx((0.8 + 0.6) / 2)


def test_the_score_takes_many_heads_at_once_and_is_nan_without_gold():
    rng = np.random.default_rng(0)
    maps = rng.random((2, 3, 4, 5))
    maps /= maps.sum(-1, keepdims=True)
    gold = gold_cells(((0,), (2, 3), (4,)), 4, 5)
    scores = head_alignment_scores(maps, gold)
    assert scores.shape == (2, 3)
    for layer in range(2):
        for head in range(3):
            assert scores[layer, head] == pytest.approx(alignment_score(maps[layer, head], gold))
    assert np.isnan(alignment_score(maps[0, 0], np.zeros((4, 5), bool)))
    broken = maps[0, 0].copy()
    broken[0, 0] = np.nan
    assert np.isfinite(alignment_score(broken, gold))


def test_best_heads_and_the_table():
    scores = np.array([[0.2, 0.9], [0.9, 0.5]])
    assert best_heads(scores, 3) == [(1, 2, 0.9), (2, 1, 0.9), (2, 2, 0.5)]
    frame = score_frame(scores)
    assert list(frame.columns) == ["layer", "head", "score"] and frame["score"].tolist() == [0.2, 0.9, 0.9, 0.5]


# ------------------------------------------------------------------ the pictures


def test_the_zoom_outlines_the_gold_cells_and_the_bars_show_every_head():
    weights = np.full((3, 2), 0.5)
    gold = gold_cells(((1,), (0,)), 3, 2)
    fig = zoom_figure(weights, ["<bos>", "a", "b"], ["x", "y"], blocked=None, title="", x_title="", y_title="",
                      hover="", aligned=gold)
    lines = [trace for trace in fig.data if trace.type == "scatter"]
    assert len(lines) == 1 and lines[0].line.color == ALIGNMENT_EDGE
    assert sorted(map(tuple, lines[0].meta)) == [(0, 1), (1, 0)]
    plain = zoom_figure(weights, ["<bos>", "a", "b"], ["x", "y"], blocked=None, title="", x_title="",
                        y_title="", hover="")
    assert not [trace for trace in plain.data if trace.type == "scatter"]
    scores = np.array([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]])
    bars = alignment_figure(scores, 0.25, y_title="s", layer_label="Layer", head_label="Head",
                            chance_label="even", hover="")
    assert [list(trace.y) for trace in bars.data if trace.type == "bar"] == scores.tolist()
    chance = [trace for trace in bars.data if trace.type == "scatter"][0]
    assert list(chance.y) == [0.25, 0.25] and chance.name == "even"
    narrow = alignment_figure(scores, 0.25, y_title="s", layer_label="L", head_label="H", chance_label="e",
                              hover="", narrow=True)
    assert all(trace.text is None for trace in narrow.data if trace.type == "bar")


# ------------------------------------------------------------------ the shipped models


@pytest.mark.parametrize("task, source", [("en-zh", "the cat ate two apples in the garden yesterday ."),
                                          ("zh-en", "猫昨天在花园里吃了两个苹果。"), ("reverse", "hello world")])
def test_a_shipped_model_has_heads_well_above_an_even_spread(task, source):
    if not checkpoint_path(task).exists():
        pytest.skip(f"no shipped {task} checkpoint")
    ckpt = load_checkpoint(checkpoint_path(task))
    result = head_alignment(ckpt, source)
    assert result is not None
    view = attention_view(ckpt, source, result.gold.target_text)  # recomputed outside the function
    assert result.cells.shape == view.cross.shape[-2:]
    assert np.allclose(result.scores, head_alignment_scores(view.cross, result.cells))
    layer, head, score = result.best[0]
    assert score == pytest.approx(float(result.scores.max())) == pytest.approx(result.scores[layer - 1, head - 1])
    assert score > result.chance + 0.3, (score, result.chance)


def test_no_alignment_for_a_sentence_the_grammar_cannot_write():
    if not checkpoint_path("en-zh").exists():
        pytest.skip("no shipped en-zh checkpoint")
    assert head_alignment(load_checkpoint(checkpoint_path("en-zh")), "the cat ate two aples .") is None

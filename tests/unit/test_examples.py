"""The translation examples Attention and Decoding open, and finding the step an example is about."""
from __future__ import annotations

from explain.decoding import DecodeTrace, StepView, step_after
from explain.examples import PRONOUN_SENTENCES, REFERENT_AFTER, REORDER
from model.translation import chinese
from explain.pronoun import PAIR


def trace(tokens: list[str]) -> DecodeTrace:
    steps = [StepView(["<bos>", *tokens[:n]], tokens[n], 0.5, [], [], [], None, None) for n in range(len(tokens))]
    return DecodeTrace("greedy", [], "".join(tokens), True, 0.0, steps)


def test_step_after_finds_the_step_that_writes_what_follows_a_text():
    chars = list("猫没有过马路，因为马路太宽了。") + ["<eos>"]
    assert step_after(trace(chars), "因为") == 10  # reads ... 因 为, writes 马
    words = ["the", "cat", "is", "tired", "<eos>"]
    assert step_after(trace(words), "the cat") == 3
    assert step_after(trace(chars), "花园") is None


def test_the_examples_are_the_grammars_own_sentences():
    assert REORDER["en-zh"] == tuple(reversed(REORDER["zh-en"]))
    for clause, sentence in zip(PAIR, PRONOUN_SENTENCES):
        assert REFERENT_AFTER in chinese(clause) and sentence.endswith(" .")

"""Which head of an en-zh model tells what "it" is, in seed 001's sentence pair, read off the attention.

    the cat did not cross the road because it was too tired .  →  猫没有过马路，因为猫太累了。   ("it" = the cat)
    the cat did not cross the road because it was too wide .   →  猫没有过马路，因为马路太宽了。 ("it" = the road)

The Chinese has to name the referent, so the model must work out what "it" is. Two places can show it:

* ``encoder``: the encoder self-attention from the token "it" to the noun it stands for;
* ``cross``: the cross-attention of the decoder step that writes the referent (its input is the 为 of
  因为, its output the referent's first character) to that noun in the English.

For every layer and head, :func:`pronoun_heads` takes the weight on the right noun in each sentence
and on the other noun. A head *resolves* the pronoun when it puts more weight on the right noun than
on the other one in both sentences; the head reported for each kind is the one whose smaller of the
two right-noun weights is largest (the strongest in both sentences, not in one of them). The decoder
reads the correct translation (teacher forcing), so the step that writes the referent exists even
where the model's own answer is wrong; the model's own answers are reported beside it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from explain.attention import attention_view, greedy_answer
from model.checkpoint import Checkpoint
from model.translation import PronounClause, chinese, english

PAIR: tuple[PronounClause, PronounClause] = (PronounClause("cat", "cross", "road", "tired"),
                                             PronounClause("cat", "cross", "road", "wide"))
SENTENCES: tuple[str, str] = (english(PAIR[0]), english(PAIR[1]))  # the grammar's exact wording
PRONOUN = "it"
KINDS: tuple[str, ...] = ("encoder", "cross")


@dataclass(frozen=True)
class PronounCase:
    """One sentence of the pair: the English, the correct Chinese, the model's answer and the two nouns."""

    sentence: str
    expected: str
    answer: str
    referent: str  # the English noun "it" stands for
    other: str  # the other noun
    referent_zh: str  # how the Chinese names it after 因为

    @property
    def correct(self) -> bool:
        return self.answer == self.expected


@dataclass(frozen=True)
class HeadReading:
    """One head's weights on the right noun and on the other noun, in each sentence of the pair."""

    kind: str  # "encoder" or "cross"
    layer: int  # 1-based
    head: int  # 1-based
    right: tuple[float, float]
    wrong: tuple[float, float]

    @property
    def resolves(self) -> bool:
        """More weight on the right noun than on the other one, in both sentences."""
        return all(r > w for r, w in zip(self.right, self.wrong))

    @property
    def score(self) -> float:
        """The smaller of its two weights on the right noun: high only when it is high in both sentences."""
        return min(self.right)


@dataclass(frozen=True)
class PronounHeads:
    """The pair, and per kind the best head and every head (the reading of each layer/head)."""

    cases: tuple[PronounCase, PronounCase]
    best: dict[str, HeadReading]
    every: dict[str, tuple[HeadReading, ...]]

    def resolved_by(self, kind: str) -> bool:
        """Whether some head of ``kind`` ("encoder" or "cross") resolves the pronoun."""
        return self.best[kind].resolves


def _case(ckpt: Checkpoint, clause: PronounClause) -> PronounCase:
    sentence, expected = english(clause), chinese(clause)
    referent, other = (clause.animal, clause.obj) if clause.refers_to_animal else (clause.obj, clause.animal)
    named = expected.split("因为", 1)[1].split("太", 1)[0]
    answer = greedy_answer(ckpt, sentence)
    return PronounCase(sentence, expected, answer, referent, other, named)


def _weights(ckpt: Checkpoint, case: PronounCase) -> dict[str, np.ndarray]:
    """Per kind, (L, H, 2): the weight on the right noun and on the other one, from "it" / the referent's step."""
    view = attention_view(ckpt, case.sentence, case.expected)
    src = list(view.src_tokens)
    right, wrong = src.index(case.referent), src.index(case.other)
    step = case.expected.index("因为") + len("因为")  # the row whose input is 为 and whose output is the referent
    rows = {"encoder": view.encoder[:, :, src.index(PRONOUN)], "cross": view.cross[:, :, step]}
    return {kind: np.stack([row[..., right], row[..., wrong]], axis=-1) for kind, row in rows.items()}


def pronoun_missing(ckpt: Checkpoint, pair: tuple[PronounClause, PronounClause] = PAIR) -> tuple[str, ...]:
    """The words (or characters) of the pair, either language, that this model's tokenizers do not know, in
    order: the example reads the attention on "it" and on both nouns, so it needs every one of them (an
    uploaded en-zh model may bring other words than the shipped one's)."""
    missing: dict[str, None] = {}
    for clause in pair:
        for tokenizer, text in ((ckpt.tokenizer, english(clause)), (ckpt.target_tokenizer, chinese(clause))):
            missing.update(dict.fromkeys(u.char for u in tokenizer.encode_with_report(text).unknown))
    return tuple(missing)


def pronoun_heads(ckpt: Checkpoint, pair: tuple[PronounClause, PronounClause] = PAIR) -> PronounHeads:
    """Every encoder and cross-attention head's reading of the pair, and the best head of each kind."""
    cases = tuple(_case(ckpt, clause) for clause in pair)
    weights = [_weights(ckpt, case) for case in cases]
    every: dict[str, tuple[HeadReading, ...]] = {}
    for kind in KINDS:
        n_layers, n_heads = weights[0][kind].shape[:2]
        every[kind] = tuple(
            HeadReading(kind, layer + 1, head + 1,
                        right=tuple(float(w[kind][layer, head, 0]) for w in weights),
                        wrong=tuple(float(w[kind][layer, head, 1]) for w in weights))
            for layer in range(n_layers) for head in range(n_heads))
    best = {kind: max(readings, key=lambda r: (r.resolves, r.score)) for kind, readings in every.items()}
    return PronounHeads(cases=cases, best=best, every=every)  # type: ignore[arg-type]


def pronoun_frame(result: PronounHeads) -> pd.DataFrame:
    """Every head's weights as rows (kind, layer, head, the right/other noun's weight per sentence, resolves)."""
    a, b = result.cases
    rows = [{"kind": r.kind, "layer": r.layer, "head": r.head,
             f"{a.referent}|{a.sentence.split()[-2]}": round(r.right[0], 4),
             f"{a.other}|{a.sentence.split()[-2]}": round(r.wrong[0], 4),
             f"{b.referent}|{b.sentence.split()[-2]}": round(r.right[1], 4),
             f"{b.other}|{b.sentence.split()[-2]}": round(r.wrong[1], 4),
             "resolves": r.resolves}
            for kind in KINDS for r in result.every[kind]]
    return pd.DataFrame(rows)

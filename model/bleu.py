"""Corpus BLEU (0..100) with sacrebleu, the standard implementation, so the numbers compare with published ones."""
from __future__ import annotations

from collections.abc import Sequence

import sacrebleu

#: sacrebleu's tokenizer for output in each language: "zh" splits Chinese into characters, "13a" is its default.
TOKENIZE_FOR = {"zh": "zh", "en": "13a"}


def corpus_bleu(hypotheses: Sequence[str], references: Sequence[str], tokenize: str = "13a") -> float:
    """BLEU of the hypotheses against one reference each, with sacrebleu's ``tokenize`` ("zh", "13a", "char"...)."""
    if len(hypotheses) != len(references):
        raise ValueError(
            f"BLEU needs one reference per hypothesis, got {len(hypotheses)} hypotheses and {len(references)} references."
        )
    if not references:
        raise ValueError("BLEU needs at least one sentence; the lists are empty.")
    # force: the English side is written tokenised ("... garden yesterday ."), references and outputs alike
    return float(sacrebleu.corpus_bleu(list(hypotheses), [list(references)], tokenize=tokenize, force=True).score)

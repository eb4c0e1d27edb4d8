"""BLEU by hand: modified_precision(candidate, reference, n) (clipped) and brevity_penalty(c, r)."""
from __future__ import annotations

from explain.exercises.core import Bug, Case, Exercise

_PRECISION = '''from collections import Counter


def modified_precision(candidate, reference, n):
    cand = Counter(tuple(candidate[i:i + n]) for i in range(len(candidate) - n + 1))
    ref = Counter(tuple(reference[i:i + n]) for i in range(len(reference) - n + 1))
    total = sum(cand.values())
    matches = sum(min(count, ref[gram]) for gram, count in cand.items())
    return matches / total if total else 0.0
'''


def _precision_variant(old: str, new: str) -> str:
    if old not in _PRECISION:
        raise ValueError(f"{old!r} is not in the precision source")
    return _PRECISION.replace(old, new)


def _precision_cases() -> list[Case]:
    words = lambda s: s.split()
    return [
        Case("clipping", (words("the the the the the the the"), words("the cat is on the mat"), 1)),
        Case("bigrams", (words("the cat the cat on the mat"), words("the cat is on the mat"), 2)),
        Case("identical", (words("a b c d e"), words("a b c d e"), 4)),
        Case("too_short", (words("a b"), words("a b c"), 3)),
        Case("characters", (list("猫在垫子上猫"), list("猫坐在垫子上"), 1)),
    ]


MODIFIED_PRECISION = Exercise(
    key="modified_precision", page="bleu", function="modified_precision",
    reference="explain.exercises.reference.modified_precision", outputs=("precision",), atol=1e-6, rtol=1e-6,
    starter_template='''
from collections import Counter


def modified_precision(candidate, reference, n):
    #> doc
    #> todo
    raise NotImplementedError
''',
    make_cases=_precision_cases,
    bugs=(
        Bug("no_clipping", _precision_variant("min(count, ref[gram])", "(count if gram in ref else 0)")),
        Bug("reference_total", _precision_variant("total = sum(cand.values())", "total = sum(ref.values())")),
        Bug("unigrams_only", _precision_variant("def modified_precision(candidate, reference, n):\n",
                                                "def modified_precision(candidate, reference, n):\n    n = 1\n")),
    ),
)

_PENALTY = '''import math


def brevity_penalty(c, r):
    if c >= r:
        return 1.0
    return math.exp(1 - r / c) if c else 0.0
'''


def _cases() -> list[Case]:
    return [Case("same_length", (10, 10)), Case("longer", (12, 10)), Case("shorter", (8, 10)),
            Case("much_shorter", (1, 5)), Case("empty", (0, 4))]


BREVITY_PENALTY = Exercise(
    key="brevity_penalty", page="bleu", function="brevity_penalty",
    reference="explain.exercises.reference.brevity_penalty", outputs=("bp",), atol=1e-6, rtol=1e-6,
    starter_template='''
import math


def brevity_penalty(c, r):
    #> doc
    #> todo
    raise NotImplementedError
''',
    make_cases=_cases,
    bugs=(
        Bug("inverted", _PENALTY.replace("math.exp(1 - r / c)", "math.exp(1 - c / r)")),
        Bug("penalises_long", _PENALTY.replace("if c >= r:\n        return 1.0\n    ", "")),
        Bug("no_exp", _PENALTY.replace("math.exp(1 - r / c)", "1 - r / c")),
    ),
)

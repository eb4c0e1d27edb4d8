"""User text → what the model can take: limits, truncation and unknown characters, as plain data.

Every text box of the app goes through :func:`prepare_sentences` or :func:`prepare_sentence`; the
page shows ``notices`` (keys into the ``common`` catalog with their format values) instead of ever
raising on odd input. For a word-level tokenizer (``tokenizer.unit == "word"``, the English side of
the translation models) the length limit counts words, and an unknown word comes with the known
words closest to it in spelling (:func:`suggestions`).
"""
from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field

from model.tokenizer import split_words

MAX_CHARS = 48  # per sentence; the shipped models are trained on up to 32 characters
MAX_LINES = 8
MAX_RAW_CHARS = 20_000  # what is even looked at, so a 1 MB paste costs nothing


@dataclass(frozen=True)
class Notice:
    key: str  # i18n key, e.g. "common.input.truncated"
    values: dict = field(default_factory=dict)


@dataclass(frozen=True)
class PreparedText:
    sentences: list[str]
    unknown: list[list[tuple[int, str]]]  # per sentence: (position, char or word) that became <unk>
    notices: list[Notice]


def _clean(text: str) -> str:
    # NUL and other control characters would reach the tokenizer as <unk>; newlines split lines.
    return "".join(ch if ch.isprintable() or ch == "\n" else " " for ch in text)


def prepare_sentences(text: str | None, tokenizer, *, max_lines: int = MAX_LINES,
                      max_chars: int = MAX_CHARS, end_marks: Sequence[str] = ()) -> PreparedText:
    """Split ``text`` into at most ``max_lines`` non-blank lines of at most ``max_chars`` tokens
    (characters; words for a word-level tokenizer, whose cut lines are written as its words).

    ``end_marks``: the marks every sentence the model learnt from ends with (a translation model's
    "." / "?" or "。" / "？"); a line that ends with none of them gets a notice (the model never read one)."""
    notices: list[Notice] = []
    text = (text or "")[:MAX_RAW_CHARS]
    lines = [line.strip() for line in _clean(text).splitlines()]
    lines = [line for line in lines if line]
    if not lines:
        return PreparedText([], [], [Notice("common.input.empty")])
    if len(lines) > max_lines:
        notices.append(Notice("common.input.too_many_lines", {"limit": max_lines, "count": len(lines)}))
        lines = lines[:max_lines]
    words = unit_of(tokenizer) == "word"
    if words:
        cut = [line for line in lines if len(split_words(line)) > max_chars]
        lines = [" ".join(split_words(line)[:max_chars]) if line in cut else line for line in lines]
    else:
        cut = [line for line in lines if len(line) > max_chars]
        lines = [line[:max_chars] for line in lines]
    if cut:
        notices.append(Notice("common.vocabulary.truncated_words" if words else "common.input.truncated",
                              {"limit": max_chars}))
    if end_marks and any(not line.endswith(tuple(end_marks)) for line in lines):
        notices.append(Notice("common.input.no_end_mark", {"marks": " ".join(end_marks)}))
    unknown = [[(u.position, u.char) for u in tokenizer.encode_with_report(line).unknown] for line in lines]
    if any(unknown):
        in_order = list(dict.fromkeys(c for row in unknown for _, c in row))  # as the visitor wrote them
        notices.extend(_unknown_notices(in_order, tokenizer, words))
    return PreparedText(lines, unknown, notices)


def unit_of(tokenizer) -> str:
    """``"word"`` or ``"char"``: what one token of ``tokenizer`` is (a tokenizer without ``unit`` reads characters)."""
    return getattr(tokenizer, "unit", "char")


def known_units(tokenizer) -> tuple[str, ...]:
    """The words or characters ``tokenizer`` knows, in id order."""
    units = getattr(tokenizer, "known_units", None)
    return tuple(units) if units is not None else tuple(tokenizer.alphabet)


def suggestions(word: str, known: Sequence[str], n: int = 3) -> list[str]:
    """The known words closest to ``word`` in spelling (difflib's ratio of at least 0.6), best first."""
    return difflib.get_close_matches(word, known, n=n)


def unknown_units(tokenizer, text: str) -> list[str]:
    """The characters or words of ``text`` that ``tokenizer`` does not know (each once, as written)."""
    return list(dict.fromkeys(u.char for u in tokenizer.encode_with_report(text).unknown))


LISTED_UNKNOWN = 20  # unknown characters or words named in a notice; the rest are counted


def _unknown_notices(units: list[str], tokenizer, words: bool) -> list[Notice]:
    """The notice naming the unknown characters or words (in the order they were written, a space as ␣, the
    ones past :data:`LISTED_UNKNOWN` counted), and for words one with "did you mean" suggestions."""
    listed, more = units[:LISTED_UNKNOWN], len(units) - LISTED_UNKNOWN
    if not words:
        chars = " ".join("␣" if ch == " " else ch for ch in listed)
        if more > 0:
            return [Notice("common.input.unknown_chars_more", {"chars": chars, "more": more})]
        return [Notice("common.input.unknown_chars", {"chars": chars})]
    known = known_units(tokenizer)
    if more > 0:
        notices = [Notice("common.vocabulary.unknown_words_more", {"words": " ".join(listed), "more": more})]
    else:
        notices = [Notice("common.vocabulary.unknown_words", {"words": " ".join(listed)})]
    pairs = [f"{word} → {' / '.join(close)}" for word in listed if (close := suggestions(word, known))]
    if pairs:
        notices.append(Notice("common.vocabulary.did_you_mean", {"pairs": "; ".join(pairs)}))
    return notices


def join_units(tokens: Sequence[str], unit: str) -> str:
    """Tokens written as text: words with a space between them, characters with none."""
    return (" " if unit == "word" else "").join(tokens)


def first_units(text: str, n: int, unit: str) -> str:
    """The first ``n`` tokens of ``text``: characters, or for ``unit == "word"`` whole words (never half of one)."""
    return join_units(split_words(text)[:n], unit) if unit == "word" else text[:n]


def prepare_sentence(text: str | None, tokenizer, *, max_chars: int = MAX_CHARS,
                     end_marks: Sequence[str] = ()) -> PreparedText:
    """One sentence: the first non-blank line (a notice if more were given)."""
    prepared = prepare_sentences(text, tokenizer, max_lines=1, max_chars=max_chars, end_marks=end_marks)
    return prepared


def typed_list(text: str) -> list[str]:
    """The items of a typed list of numbers: separated by commas, semicolons (also full-width ones, as a
    Chinese keyboard types them) or spaces; empty items left out."""
    for separator in (";", "；", "，"):
        text = text.replace(separator, ",")
    return text.replace(",", " ").split()

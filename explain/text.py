"""User text → what the model can take: limits, truncation and unknown characters, as plain data.

Every text box of the app goes through :func:`prepare_sentences` or :func:`prepare_sentence`; the
page shows ``notices`` (keys into the ``common`` catalog with their format values) instead of ever
raising on odd input.
"""
from __future__ import annotations

from dataclasses import dataclass, field

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
    unknown: list[list[tuple[int, str]]]  # per sentence: (position, char) that became <unk>
    notices: list[Notice]


def _clean(text: str) -> str:
    # NUL and other control characters would reach the tokenizer as <unk>; newlines split lines.
    return "".join(ch if ch.isprintable() or ch == "\n" else " " for ch in text)


def prepare_sentences(text: str | None, tokenizer, *, max_lines: int = MAX_LINES,
                      max_chars: int = MAX_CHARS) -> PreparedText:
    """Split ``text`` into at most ``max_lines`` non-blank lines of at most ``max_chars`` characters."""
    notices: list[Notice] = []
    text = (text or "")[:MAX_RAW_CHARS]
    lines = [line.strip() for line in _clean(text).splitlines()]
    lines = [line for line in lines if line]
    if not lines:
        return PreparedText([], [], [Notice("common.input.empty")])
    if len(lines) > max_lines:
        notices.append(Notice("common.input.too_many_lines", {"limit": max_lines, "count": len(lines)}))
        lines = lines[:max_lines]
    cut = [line for line in lines if len(line) > max_chars]
    if cut:
        notices.append(Notice("common.input.truncated", {"limit": max_chars}))
        lines = [line[:max_chars] for line in lines]
    unknown = [[(u.position, u.char) for u in tokenizer.encode_with_report(line).unknown] for line in lines]
    if any(unknown):
        chars = sorted({c for row in unknown for _, c in row})
        notices.append(Notice("common.input.unknown_chars", {"chars": " ".join(chars[:20])}))
    return PreparedText(lines, unknown, notices)


def prepare_sentence(text: str | None, tokenizer, *, max_chars: int = MAX_CHARS) -> PreparedText:
    """One sentence: the first non-blank line (a notice if more were given)."""
    prepared = prepare_sentences(text, tokenizer, max_lines=1, max_chars=max_chars)
    return prepared

"""The one way a token is written on a picture or in a table.

Tokens are user text. :func:`display_token` makes a token visible (a space becomes ``␣``, control
characters ``\\xNN``); :func:`token_label` also escapes it for plotly, which reads ``<b>``, ``<s>``
and ``<br>`` as markup. Tokens are plotted at integer positions with :func:`axis_labels`: a
categorical axis would merge two equal tokens into one tick.
"""
from __future__ import annotations

import html
import math
import re
from typing import Sequence

VISIBLE_SPACE = "␣"
UPRIGHT_MAX_CHARS = 2  # a CJK token of up to this many characters is written across, never turned
CJK = re.compile(r"[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef]")  # Chinese characters, CJK punctuation, full-width forms


def display_token(token: str) -> str:
    """``token`` made visible for a table cell or a sentence (plain text: never escaped)."""
    if token == " ":
        return VISIBLE_SPACE
    return "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in token)


def token_label(token: str) -> str:
    """``token`` as a plotly label: visible, then HTML-escaped."""
    return html.escape(display_token(token))


def short_cjk(tokens: Sequence[str]) -> bool:
    """Whether every token is Chinese (or CJK punctuation) of at most :data:`UPRIGHT_MAX_CHARS` characters."""
    return bool(tokens) and all(0 < len(t) <= UPRIGHT_MAX_CHARS and CJK.search(t) for t in tokens)


def axis_labels(tokens: Sequence[str]) -> dict:
    """``tickvals``/``ticktext`` for tokens plotted at ``0..n-1`` (duplicates stay separate).

    Short Chinese tokens (:func:`short_cjk`) are written across (``tickangle=0``): where plotly's labels
    would meet it turns them by 90°, which lays the characters on their side and runs them together.
    """
    ticks = dict(tickmode="array", tickvals=list(range(len(tokens))), ticktext=[token_label(t) for t in tokens])
    return dict(ticks, tickangle=0) if short_cjk(tokens) else ticks


def plain_number(value: float, digits: int = 2) -> str:
    """``value`` as plain decimals with ``digits`` significant digits and thousands separators
    (``0.00040``, ``0.0088``, ``198,272``): never ``4.0e-04``, which a class does not read."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    return f"{value:,.{decimals}f}"


SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
PLAIN_RANGE = (1e-4, 1e7)  # inside it a number is written out; outside it as a power of ten


def readable_number(value: float, digits: int = 3) -> str:
    """``value`` for a sentence or a row of numbers: plain decimals without trailing zeros inside
    :data:`PLAIN_RANGE` (``0.25``, ``198,272``), else a power of ten written as one (``1.2 × 10⁻⁷``,
    ``-3.4 × 10³⁸``), never ``1.2e-07``. ``nan`` and ``inf`` as Python writes them."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}" if value else "0"
    if PLAIN_RANGE[0] <= abs(value) < PLAIN_RANGE[1]:
        text = plain_number(value, digits)
        return text.rstrip("0").rstrip(".") if "." in text else text
    exponent = math.floor(math.log10(abs(value)))
    mantissa = round(value / 10 ** exponent, digits - 1)
    if abs(mantissa) >= 10:  # 9.996 rounds up to 10.0
        mantissa, exponent = mantissa / 10, exponent + 1
    head = f"{mantissa:.{digits - 1}f}".rstrip("0").rstrip(".")
    return f"{head} × 10{str(exponent).translate(SUPERSCRIPT)}"

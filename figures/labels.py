"""The one way a token is written on a picture or in a table.

Tokens are user text. :func:`display_token` makes a token visible (a space becomes ``␣``, control
characters ``\\xNN``); :func:`token_label` also escapes it for plotly, which reads ``<b>``, ``<s>``
and ``<br>`` as markup. Tokens are plotted at integer positions with :func:`axis_labels`: a
categorical axis would merge two equal tokens into one tick.
"""
from __future__ import annotations

import html
from typing import Sequence

VISIBLE_SPACE = "␣"


def display_token(token: str) -> str:
    """``token`` made visible for a table cell or a sentence (plain text: never escaped)."""
    if token == " ":
        return VISIBLE_SPACE
    return "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in token)


def token_label(token: str) -> str:
    """``token`` as a plotly label: visible, then HTML-escaped."""
    return html.escape(display_token(token))


def axis_labels(tokens: Sequence[str]) -> dict:
    """``tickvals``/``ticktext`` for tokens plotted at ``0..n-1`` (duplicates stay separate)."""
    return dict(tickmode="array", tickvals=list(range(len(tokens))), ticktext=[token_label(t) for t in tokens])

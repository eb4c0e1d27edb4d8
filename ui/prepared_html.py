"""``st.html`` for markup the project built itself, sent as it is.

``st.html`` runs a ``str`` body through ``textwrap.dedent`` and ``strip`` on every call: about 1 ms
for the 20 kB of the tokens page's batch tables, a third of a whole trivial rerun, paid again on
every rerun for a string that comes out of a cache unchanged. A body with ``_repr_html_`` skips
that step (Streamlit still sanitises the markup in the browser)::

    from ui.prepared_html import show_html

    show_html(compact(styler.to_html()))   # instead of st.html(styler.to_html())

Only for markup that is already clean: escaped by the code that built it, no indentation to remove.
"""
from __future__ import annotations

import re

import streamlit as st

_LAYOUT_WHITESPACE = re.compile(r">\n\s*<")


class PreparedHtml:
    """A finished HTML string that ``st.html`` takes as it is (through ``_repr_html_``)."""

    __slots__ = ("body",)

    def __init__(self, body: str) -> None:
        self.body = body

    def _repr_html_(self) -> str:
        return self.body


def show_html(body: str) -> None:
    """``st.html(body)`` without Streamlit's per-call dedent of the whole string."""
    st.html(PreparedHtml(body))


def compact(markup: str) -> str:
    """``markup`` without the line breaks and indentation a template puts between tags (pandas'
    Styler: a third of its output). Text inside elements is untouched."""
    return _LAYOUT_WHITESPACE.sub("><", markup)

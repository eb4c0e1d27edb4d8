"""The app's own CSS for every page, and the layout helpers that rely on it.

What must change on a phone without a run changes in the browser: a formula wraps or scrolls in
its own box, a chart hides its cell numbers once its cells get too small to hold them
(:func:`hide_cell_text_below`). A view with a whole phone layout asks :func:`ui.viewport.is_narrow`.
"""
from __future__ import annotations

import streamlit as st

PHONE_MAX_PX = 640  # Streamlit's own breakpoint: below it, columns stack

# Streamlit's formula box scrolls, but shows its scrollbar only under a hovering mouse: on a phone
# a long formula just looks cut. Here the scrollbar is always drawn (and room left for it), and a
# formula that says where it may break (\allowbreak, see formula_row) wraps there instead.
# "[data-testid=stApp]" outranks Streamlit's own ".st-emotion-cache-… .katex-display" rule.
# A markdown table wider than a phone (the families' table of pages) scrolls in its own box too.
PAGE_CSS = f"""
[data-testid="stApp"] [data-testid="stMarkdownContainer"] .katex-display {{
  overflow-x: auto; overflow-y: hidden; padding: 0.25rem 0 0.5rem;
  scrollbar-width: thin; scrollbar-color: rgba(128, 128, 128, 0.6) transparent;
}}
[data-testid="stApp"] [data-testid="stMarkdownContainer"] .katex-display:has(.allowbreak) > .katex {{
  white-space: normal;
}}
.st-key-tp_prefetch {{ display: none; }}
[data-testid="stApp"] [data-testid="stMarkdownContainer"] table {{
  display: block; max-width: 100%; overflow-x: auto; scrollbar-width: thin;
}}
"""


def inject_page_css() -> None:
    """Put :data:`PAGE_CSS` on the page (app.py, every run: a style-only ``st.html`` takes no room)."""
    st.html(f"<style>{PAGE_CSS}</style>")


def formula_row(*formulas: str, after: str | None = None) -> str:
    r"""Several formulas on one line, ``\qquad`` apart, that wrap between them (and only there)
    when the line is wider than its box: each is braced, so its own ``=`` is no break point.

    A part that ends with ``after`` (e.g. ``"="``, the left side of a formula too long for a phone)
    is followed by a break point instead of the ``\qquad``: the formula may go on on the next line.
    """
    parts = []
    for formula in formulas:
        parts.append("{" + formula + "}")
        ends_side = after is not None and formula.rstrip().endswith(after)
        parts.append(r"\;\allowbreak " if ends_side else r"\qquad\allowbreak ")
    return "".join(parts[:-1])


def hide_cell_text_below(key: str, *, columns: int, min_cell_px: int = 30, other_px: int = 170) -> None:
    """Hide the numbers written in the cells of the heatmap drawn with ``key`` when its chart is
    too narrow for ``columns`` cells of ``min_cell_px`` (plus ``other_px`` of axis labels and colour
    bar): plotly would shrink them to a few pixels. The hover still gives every value."""
    box = f".st-key-{key.replace('.', '-')}"
    st.html(f"<style>{box} {{ container-type: inline-size; }}"
            f"@container (max-width: {columns * min_cell_px + other_px}px) {{ {box} g.heatmap-label {{ display: none; }} }}"
            "</style>")

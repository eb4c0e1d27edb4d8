"""ui.prepared_html: finished markup reaches the browser as built, with only layout whitespace removed."""
import re

import pandas as pd
from pandas.io.formats.style import Styler
from streamlit.testing.v1 import AppTest

from ui.prepared_html import PreparedHtml, compact


def _text(markup: str) -> list[str]:
    return [s for s in re.split(r"<[^>]+>", markup) if s.strip()]


def test_compact_drops_only_the_whitespace_between_tags():
    frame = pd.DataFrame([[" a ", "<pad>"], ["b  c", ""]], index=["x", "y"])
    markup = Styler(frame, cell_ids=False).format(escape="html").to_html()
    small = compact(markup)
    assert len(small) < len(markup)
    assert ">\n<" not in small
    assert _text(small) == [s for s in _text(markup)]  # every cell's text, its spaces included
    assert "<td class=\"data row0 col0\" > a </td>" in small
    assert "&lt;pad&gt;" in small


def test_compact_keeps_text_that_starts_with_a_line_break():
    assert compact("<td>\nx</td>") == "<td>\nx</td>"
    assert compact("<tr>\n  <td>1</td>\n</tr>") == "<tr><td>1</td></tr>"


def _app():
    import streamlit as st

    from ui.prepared_html import show_html

    show_html("  <p>indented</p>\n    <p>kept as built</p>  ")
    st.html("  <p>indented</p>\n    <p>kept as built</p>  ")


def test_show_html_sends_the_body_unchanged_where_st_html_would_dedent_it():
    at = AppTest.from_function(_app).run()
    assert not at.exception
    bodies = [el.proto.body for el in at.get("html")]
    assert bodies[0] == "  <p>indented</p>\n    <p>kept as built</p>  "
    assert bodies[1] == "<p>indented</p>\n  <p>kept as built</p>"  # what the shortcut saves: dedent + strip
    assert PreparedHtml("<b>x</b>")._repr_html_() == "<b>x</b>"

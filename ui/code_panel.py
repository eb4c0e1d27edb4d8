"""The "Code" panel under a view: the project's functions that computed it, read from the running
objects (:mod:`explain.code`), and the live intermediates of the current input with their shapes.

A page draws it where the view is::

    code_panel("attention", ("multi_head", "scaled_dot_product_attention"), ckpt=ckpt,
               source=source, target=answer, where={"att": "encoder.0.self_attn"})

Selecting an intermediate marks the line(s) that computed it; a page that draws that intermediate
reads :func:`chosen` *before* drawing its picture and frames it (:func:`figures.style.outline`).
The panel is an expander drawn only while open (:func:`open_key`): opening it reruns the page (or the
fragment it is in), and a closed panel costs no click anything (its highlighted code, tables and tabs
took about 0.4 s of the browser's time on every rerun of "Inside one head"). Closing it forgets the
intermediate picked in it.
"""
from __future__ import annotations

import html
from typing import Any, Mapping, Sequence

import streamlit as st
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from explain.code import SNIPPETS, LiveStep, Source, Text, model_dims, source_of, traced_steps
from figures.labels import readable_number
from ui.cache import computed
from ui.i18n import t
from ui.nav import link
from ui.tour import stop

MARK_COLOR = "#ffe8a3"  # the lines that made the selected intermediate
_LEXER = PythonLexer()


def step_key(page: str, name: str = "code") -> str:
    """The session key of a panel's intermediate choice."""
    return f"{page}.{name}_step"


def open_key(page: str, name: str = "code") -> str:
    """The session key that says whether a panel is open (True) or closed."""
    return f"{page}.{name}_open"


def chosen(page: str, name: str = "code") -> str | None:
    """The intermediate selected in the page's panel (its step key, e.g. "scores"), or None (also while
    the panel is closed: the pick goes with it)."""
    if not st.session_state.get(open_key(page, name)):
        return None
    value = st.session_state.get(step_key(page, name))
    return value if isinstance(value, str) else None


def highlighted_html(source: Source, marked: Sequence[int] = ()) -> str:
    """``source`` as highlighted HTML with the file's line numbers, lines ``marked`` (file numbers)
    on a coloured band; it scrolls inside its own box (a phone's page never scrolls sideways)."""
    relative = [n - source.first_line + 1 for n in marked if source.first_line <= n <= source.last_line]
    formatter = HtmlFormatter(noclasses=True, linenos="inline", linenostart=source.first_line,
                              hl_lines=relative, style="default", nobackground=True)
    body = highlight(source.text, _LEXER, formatter)
    body = body.replace("background-color: #ffffcc", f"background-color: {MARK_COLOR}")
    return (
        '<div class="tp-code" style="max-height: 28rem; overflow: auto; border: 1px solid rgba(128,128,128,.35); '
        'border-radius: .5rem; padding: .25rem .5rem; font-size: .8rem; line-height: 1.35; '
        f'background: rgba(128,128,128,.06)" data-file="{html.escape(source.file)}" '
        f'data-marked="{",".join(str(n) for n in marked)}">{body}</div>'
    )


def copy_text(source: Source) -> str:
    """What the copy button gives: the imports, then the function (one notebook cell that runs)."""
    return f"{source.imports}\n\n\n{source.text}" if source.imports else source.text


def numbers(values: Sequence[float]) -> str:
    """A short row of numbers as code, e.g. ``[nan, nan, nan]`` or ``[0, 0.25, 0.75]``."""
    return "`[" + ", ".join(readable_number(x) for x in values) + "]`"


def _preview(step: LiveStep) -> str:
    numbers = ", ".join(readable_number(x) for x in step.preview)
    return f"[{numbers}{', …' if len(step.preview) < _size(step.shape) else ''}]"


def _size(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


COLUMNS = ("name", "shape", "what", "line", "first")


def steps_html(steps: Sequence[LiveStep], dims: Mapping[str, int]) -> str:
    """The live intermediates as one small table: name in the trace, shape, what it is, the line(s)
    that make it, its first numbers. Plain HTML in a box that scrolls sideways by itself (a phone's
    page never does), each row carrying its name, shape and lines as data for tests and tools."""
    head = "".join(f"<th style='text-align:left;padding:.2rem .5rem'>{html.escape(t(f'code.column.{c}'))}</th>"
                   for c in COLUMNS)
    rows = []
    for s in steps:
        lines = ", ".join(str(n) for n in s.lines)
        cells = (f"<code>{html.escape(s.name)}</code>", html.escape(str(s.shape)), html.escape(t(f"code.step.{s.key}", **dims)),
                 lines, f"<code>{html.escape(_preview(s))}</code>")
        rows.append(f"<tr data-name='{html.escape(s.name)}' data-shape='{html.escape(str(s.shape))}' "
                    f"data-lines='{lines}'>" + "".join(f"<td style='padding:.2rem .5rem;vertical-align:top'>{c}</td>"
                                                        for c in cells) + "</tr>")
    return ("<div class='tp-steps' style='overflow-x:auto;font-size:.85rem'><table style='border-collapse:collapse;"
            f"min-width:36rem'><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>")


def code_panel(
    page: str,
    snippets: Sequence[str],
    *,
    ckpt: Any = None,
    source: Text | None = None,
    target: Text | None = None,
    where: Mapping[str, str] | None = None,
    name: str = "code",
    notes: Sequence[str] = (),
    paper_rows: Sequence[str] = (),
    expanded: bool = False,
    title_names: str | None = None,
    **switches: bool,
) -> None:
    """The panel of ``snippets`` (keys of :data:`explain.code.SNIPPETS`); with ``ckpt`` and ``source``
    also the live intermediates of one forward of ``source`` / ``target`` (sentences or ids) at
    ``where``, with the forward's ``switches`` (scale_scores, use_padding_mask, use_look_ahead_mask).
    ``notes``: markdown the page adds under the caption (a fact about this code, computed live).
    ``paper_rows``: rows of the "Paper vs this code" page this code concerns (links that open them).
    ``title_names``: what the title names instead of the functions' names, for a panel whose functions change
    with the view (Streamlit knows an expander by its title: a new title would be a new, closed panel)."""
    sources = [source_of(SNIPPETS[key].path) for key in snippets]
    names = title_names or ", ".join(s.qualname for s in sources)
    # Drawn only while open (a click reruns the page, or its fragment): closed, it costs the browser nothing.
    panel = st.expander(t("code.panel.title", names=names), icon=":material/code:", expanded=expanded,
                        key=open_key(page, name), on_change="rerun")
    if not panel.open:
        return
    with panel:
        st.caption(t("code.panel.caption"))
        for note in notes:
            st.markdown(note)
        for row in paper_rows:
            link(stop("paper_vs_code"), t("code.panel.paper_link", title=t(f"paper_vs_code.rows.{row}.title")),
                 icon=":material/difference:", view={"paper_vs_code_row": row})
        traced: dict[str, tuple[LiveStep, ...]] = {}
        if ckpt is not None and source is not None:
            traced = dict(computed(traced_steps, source, target or "", tuple(snippets),
                                   tuple(sorted((where or {}).items())), model=ckpt, **switches))
        first: dict[str, LiveStep] = {}  # one row per intermediate, named by the first snippet that makes it
        for steps in traced.values():
            for step in steps:
                first.setdefault(step.name, step)
        live = list(first.values())
        by_key = {step.key: step for step in live}
        picked_name = None
        if live:
            picked = st.radio(t("code.panel.pick"), list(by_key), index=None, horizontal=True,
                              key=step_key(page, name), help=t("code.panel.pick_help"),
                              format_func=lambda k: f"{k} {by_key[k].shape}")
            st.html(steps_html(live, model_dims(ckpt)))
            picked_name = by_key[picked].name if picked in by_key else None
        for key, src in zip(snippets, sources):
            # every line, in every function shown, that makes the selected intermediate
            marked = [n for step in traced.get(key, ()) if step.name == picked_name for n in step.lines]
            lines = t("code.panel.lines", first=src.first_line, last=src.last_line)
            st.markdown(f"`{src.file}` · **`{src.qualname}`** · {lines}")
            read, copy = st.tabs([t("code.panel.read"), t("code.panel.copy")])
            with read:
                st.html(highlighted_html(src, marked))
            with copy:
                st.caption(t("code.panel.method_note" if src.is_method else "code.panel.import_note",
                             cls=src.qualname.split(".")[0]))
                st.code(copy_text(src), language="python")

"""The frame every page is drawn in: title, intro, formula, model gate, try-this box, tour links.

A page file (``app_pages/<key>.py``, ``<key>`` its name in :data:`ui.tour.TOUR`) draws its own
sections inside it::

    from ui.scaffold import PLOT_CONFIG, page

    with page("feed_forward", try_this="bottom") as ckpt:   # title, intro, the selected model
        if ckpt is not None:                                 # None: the sidebar has no model (a notice says so)
            explorer(ckpt)
    # on leaving: the try-this box, then "← previous / next →"

The texts come from the page's catalog ``assets/i18n/{en,zh}/<key>.json``: ``title``, ``intro``,
``formula_note`` (with ``formula_note=True``), ``try_this`` (a box above the page's sections,
``try_this="top"``) or ``try.heading`` + ``try.body`` (a box below them, ``try_this="bottom"``).
The page's URL values are named ``<key>_<name>`` (``stop(key).url_name(name)``; ``tests/unit/test_tour.py``
checks every one), its session keys ``<key>.<name>``, and its charts are drawn with
``plot(fig, key=..., config=PLOT_CONFIG)`` (:func:`ui.widgets.plot`).
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator, Literal, Mapping, Sequence

import streamlit as st

from ui.i18n import t
from ui.models import selected_model
from ui.nav import tour_links
from ui.presenter import presenter_bar
from ui.tour import stop
from ui.url_state import page_scope

# Plotly's toolbar without its logo; "download as PNG" at twice the size (sharp on a projector).
PLOT_CONFIG: dict[str, Any] = {"displaylogo": False, "toImageButtonOptions": {"scale": 2}}


@contextmanager
def page(
    key: str,
    *,
    formulas: Sequence[str] = (),
    formula_note: bool = False,
    try_this: Literal["top", "bottom"] | None = None,
    try_extra: Callable[[Any], None] | None = None,
    try_values: Callable[[Any], Mapping[str, Any]] | None = None,
    model: bool = True,
    title: str | None = None,
) -> Iterator[Any]:
    """Draw the page ``key``'s frame around the ``with`` block; yield the selected checkpoint.

    ``formulas``: LaTeX drawn under the intro (then ``<key>.formula_note`` as a caption if
    ``formula_note``). ``try_this``: where the try-this box goes (None: the page has none);
    ``try_extra(ckpt)`` draws more into a bottom box (e.g. buttons that open an example);
    ``try_values(ckpt)`` fills the bottom box's placeholders (numbers of the selected model).
    ``model=False``: the frame does not ask for a model (the page asks :func:`ui.models.selected_model`
    itself, where its model-dependent part starts) and yields None. ``title``: a title other than
    ``<key>.title`` (the home page shows the app's name).
    """
    s = stop(key)
    presenter_bar(s.key)
    st.title(title or t(s.title_key))
    st.markdown(t(f"{s.key}.intro"))
    for latex in formulas:
        st.latex(latex)
    if formula_note:
        st.caption(t(f"{s.key}.formula_note"))
    if try_this == "top":
        with st.container(border=True):
            st.markdown(t(f"{s.key}.try_this"))
    checkpoint = selected_model() if model else None
    with page_scope(s.key):  # what the page binds is its view: "reset this page" forgets it
        yield checkpoint
    if try_this == "bottom":
        with st.container(border=True):
            st.markdown(f"**{t(f'{s.key}.try.heading')}**")
            st.markdown(t(f"{s.key}.try.body", **(try_values(checkpoint) if try_values else {})))
            if try_extra is not None:
                try_extra(checkpoint)
    tour_links(s.key)

"""Moving through the tour without losing the session's language and model.

Every page ends with ``tour_links("<its key>")``::

    from ui.nav import tour_links

    tour_links("attention")   # ← Previous: Positional encoding      Next: Decoding →

and the home page draws its architecture diagram with ``linked_diagram(path, key=...)``: an inline
SVG whose ``<a href="./<url_path>" data-page="<stop key>">`` parts switch pages inside the
session (a plain link would reload the browser tab and start a new session, losing a model
trained in it); Ctrl/middle-click still opens the ``href`` in a new tab.

Links and switches carry the shared URL values (``lang``, ``model``) along; page-specific values
are restored by :func:`ui.url_state.bind` from the session when the visitor comes back.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import NoReturn

import streamlit as st

from ui.i18n import t
from ui.sidebar import CARRIED_PARAMS
from ui.tour import TOUR, Stop, neighbours, page, stop
from ui.url_state import current_query


def link(s: Stop, label: str | None = None, *, icon: str | None = None, icon_position: str = "left") -> None:
    """An in-app link to stop ``s`` (its title and icon unless given) that keeps language and model."""
    st.page_link(
        page(s),  # a Page object: a path string would be resolved on disk on every call
        label=label or s.title,
        icon=icon or s.icon,
        icon_position=icon_position,
        query_params=current_query(*CARRIED_PARAMS),
    )


def tour_links(current: str) -> None:
    """A divider, then "← previous" on the left and "next →" on the right of page ``current``."""
    previous, following = neighbours(current)
    st.divider()
    align = "distribute" if previous and following else ("right" if following else "left")
    with st.container(horizontal=True, horizontal_alignment=align, key=f"tour_links_{current}"):
        if previous is not None:
            link(previous, t("common.nav.previous", title=previous.title), icon=":material/arrow_back:")
        if following is not None:
            link(
                following,
                t("common.nav.next", title=following.title),
                icon=":material/arrow_forward:",
                icon_position="right",
            )


def switch_to(key: str) -> NoReturn:
    """Go to the stop ``key`` now (e.g. from a click on the diagram), keeping language and model."""
    st.switch_page(stop(key).script, query_params=current_query(*CARRIED_PARAMS))


# Runs in the page (components v2 are not sandboxed): swaps in the SVG when the language changes,
# keeps each link's href pointing at its page with the current ?lang=&model=, and turns a plain
# left click into a trigger value instead of a full page load.
_DIAGRAM_JS = """
export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  let host = parentElement.querySelector(".tp-diagram");
  if (!host) {
    host = document.createElement("div");
    host.className = "tp-diagram";
    parentElement.appendChild(host);
  }
  if (host.dataset.version !== data.version) {
    host.innerHTML = data.svg;
    host.dataset.version = data.version;
  }
  const search = window.location.search;
  host.querySelectorAll("a[data-page]").forEach((a) => {
    if (!a.dataset.base) a.dataset.base = a.getAttribute("href");
    a.setAttribute("href", a.dataset.base + search);
    a.onclick = (event) => {
      if (event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) return;
      event.preventDefault();
      setTriggerValue("clicked", a.dataset.page);
    };
  });
}
"""
_DIAGRAM_CSS = ".tp-diagram svg { width: 100%; height: auto; }"


@functools.cache
def _read_svg(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def linked_diagram(path: Path, *, key: str) -> None:
    """Draw the SVG at ``path`` inline; a click on an ``<a data-page="<stop key>">`` opens that stop.

    The file is read once per process. Only project-written SVGs may be passed (the markup is
    inserted as is).
    """
    svg = _read_svg(Path(path))
    diagram = st.components.v2.component("tp_linked_diagram", css=_DIAGRAM_CSS, js=_DIAGRAM_JS)
    result = diagram(key=key, data={"svg": svg, "version": Path(path).name}, on_clicked_change=lambda: None)
    clicked = getattr(result, "clicked", None)
    if isinstance(clicked, str) and clicked in {s.key for s in TOUR}:
        switch_to(clicked)

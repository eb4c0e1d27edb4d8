"""Moving through the tour without losing the session's language and model.

Every page ends with ``tour_links("<its key>")``::

    from ui.nav import tour_links

    tour_links("attention")   # ← Previous: Positional encoding      Next: Decoding →

and the home page draws its architecture diagram and tour with ``linked_html(markup, key=...)``:
markup whose ``<a href="./<url_path>" data-page="<stop key>">`` links switch pages inside the
session (a plain link would reload the browser tab and start a new session, losing a model
trained in it); Ctrl/middle-click still opens the ``href`` in a new tab.

Links and switches carry the shared URL values (``lang``, ``model``) along; page-specific values
are restored by :func:`ui.url_state.bind` from the session when the visitor comes back.
"""
from __future__ import annotations

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


# Runs in the page (components v2 are not sandboxed): swaps in the markup when it changes (e.g. the
# language), keeps each link's href pointing at its page with the current ?lang=&model=, and turns a
# plain left click into a trigger value instead of a full page load.
_LINKED_JS = """
export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  let host = parentElement.querySelector(".tp-linked");
  if (!host) {
    host = document.createElement("div");
    host.className = "tp-linked";
    parentElement.appendChild(host);
  }
  if (host.tpMarkup !== data.html) {
    host.innerHTML = data.html;
    host.tpMarkup = data.html;
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
# The theme's colours and font come in as --st-* custom properties (components v2 theming).
_LINKED_CSS = """
.tp-linked { font-family: var(--st-font); color: var(--st-text-color); }
.tp-diagram svg { width: 100%; height: auto; }
.tp-map { display: grid; grid-template-columns: 7fr 4fr; gap: 1rem 3rem; align-items: start; }
@media (max-width: 760px) { .tp-map { grid-template-columns: 1fr; } }
.tp-map h3 { font-size: 1.75rem; font-weight: 700; line-height: 1.2; margin: 0.5rem 0 1rem; }
.tp-caption, .tp-tour p { font-size: 0.875rem; line-height: 1.6; opacity: 0.65; margin: 0 0 0.75rem; }
.tp-tour { list-style: none; padding: 0; margin: 0; }
.tp-tour li { margin: 0 0 0.5rem; }
.tp-tour a { display: inline-flex; align-items: center; gap: 0.5rem; padding: 0.25rem 0.5rem; margin-left: -0.5rem;
             border-radius: 0.5rem; color: inherit; text-decoration: none; font-size: 0.875rem; }
.tp-tour a:hover, .tp-tour a:focus-visible { background: var(--st-secondary-background-color); }
.tp-tour a:hover strong { color: var(--st-primary-color); }
.tp-tour strong { font-weight: 600; }
.tp-icon { font-family: "Material Symbols Rounded"; font-size: 1.15rem; line-height: 1; font-weight: 400;
           font-feature-settings: "liga"; -webkit-font-smoothing: antialiased; }
"""


def linked_html(markup: str, *, key: str) -> None:
    """Draw ``markup`` as one element; a click on an ``<a data-page="<stop key>">`` in it opens that stop
    in this session (Ctrl/middle-click still opens the ``href`` in a new tab).

    Only project-written markup may be passed (it is inserted as is): escape every text in it.
    """
    component = st.components.v2.component("tp_linked_html", css=_LINKED_CSS, js=_LINKED_JS)
    result = component(key=key, data={"html": markup}, on_clicked_change=lambda: None)
    clicked = getattr(result, "clicked", None)
    if isinstance(clicked, str) and clicked in {s.key for s in TOUR}:
        switch_to(clicked)

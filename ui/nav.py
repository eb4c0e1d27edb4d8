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
from urllib.parse import parse_qsl

import streamlit as st

from explain.output import trained_epsilon
from ui.i18n import t
from ui.sidebar import CARRIED_PARAMS
from ui.tour import TOUR, Stop, current_name, neighbours, st_page, stop
from ui.url_state import current_query


def link(s: Stop, label: str | None = None, *, icon: str | None = None, icon_position: str = "left",
         view: dict[str, str] | None = None) -> None:
    """An in-app link to stop ``s`` (its title and icon unless given) that keeps language and model;
    ``view`` adds that page's URL values (e.g. ``{"output_and_loss_view": "smoothing"}``) to open one of its views."""
    st.page_link(
        st_page(s),
        label=label or s.title,
        icon=icon or s.icon,
        icon_position=icon_position,
        query_params={**current_query(*CARRIED_PARAMS), **(view or {})},
    )


def section_links(sections: list[tuple[str, str]]) -> None:
    """At the top of a long page: one line of links to its sections, ``(anchor, title)`` each (the anchor that
    the section's ``st.subheader(..., anchor=...)`` sets)."""
    st.markdown(t("common.on_this_page") + " " + " · ".join(f"[{title}](#{anchor})" for anchor, title in sections))


def smoothing_note(ckpt, key: str, before: str = "") -> None:
    """Under a probability: why a right token tops out near 1 − ε, with the ε the checkpoint's training used
    (``key``'s text, after ``before``), and the link to the output page's label-smoothing view. A model trained
    without label smoothing, or one whose checkpoint does not say, gets ``before`` alone."""
    epsilon = trained_epsilon(ckpt)
    note = t(key, epsilon=f"{epsilon:g}", p=f"{1 - epsilon:g}") if epsilon else ""
    if before or note:
        st.caption(" ".join(text for text in (before, note) if text))
    if note:
        smoothing_link()


def smoothing_link() -> None:
    """Under a probability: why a right token tops out near 0.9, explained on the output page's label-smoothing view."""
    link(stop("output_and_loss"), t("common.smoothing_link"), icon=":material/functions:",
         view={"output_and_loss_view": "smoothing"})


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


def switch_to(key: str, values: dict[str, str] | None = None) -> NoReturn:
    """Go to the stop ``key`` now (e.g. from a click on the diagram), keeping language and model, with
    the page's own URL ``values`` (e.g. ``{"attention_kind": "cross"}``) if given."""
    st.switch_page(stop(key).script, query_params={**current_query(*CARRIED_PARAMS), **(values or {})})


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
    const [path, own] = a.dataset.base.split("?");
    const params = new URLSearchParams(search);
    new URLSearchParams(own || "").forEach((value, name) => params.set(name, value));
    a.setAttribute("href", path + (params.toString() ? "?" + params.toString() : ""));
    a.onclick = (event) => {
      if (event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) return;
      event.preventDefault();
      setTriggerValue("clicked", a.dataset.query ? a.dataset.page + "?" + a.dataset.query : a.dataset.page);
    };
  });
}
"""
# The theme's colours and font come in as --st-* custom properties (components v2 theming); the
# markup brings its own <style> for the rest (the component's shadow root keeps it inside).
_LINKED_CSS = ".tp-linked { font-family: var(--st-font); color: var(--st-text-color); }"


# Runs in the page: brings the element of widget key ``data.key`` into view once per ``data.nonce`` (a click
# that changed a view far above the button that made it, e.g. Attention's "Open the reordering example").
_SCROLL_JS = """
export default function (component) {
  const { data, parentElement } = component;
  if (!data || parentElement.tpNonce === data.nonce) return;
  parentElement.tpNonce = data.nonce;
  const find = (tries) => {
    const target = document.querySelector(".st-key-" + data.key);
    if (target) {
      target.style.scrollMarginTop = "4.5rem";  // clear of Streamlit's fixed header
      target.scrollIntoView({ block: "start", behavior: "smooth" });
    }
    else if (tries > 0) setTimeout(() => find(tries - 1), 100);
  };
  find(30);
}
"""
SCROLL_REQUEST = "_nav.scroll_to"  # session state: the widget key to bring into view on the next run


def scroll_later(key: str) -> None:
    """From a callback: on the run it starts, :func:`scroll_if_asked` brings the widget ``key`` into view."""
    st.session_state[SCROLL_REQUEST] = key


def scroll_if_asked() -> None:
    """Bring into view the widget a callback asked for (:func:`scroll_later`), once; nothing otherwise."""
    key = st.session_state.pop(SCROLL_REQUEST, None)
    if key is None:
        return
    nonce = st.session_state.get("_nav.scroll_nonce", 0) + 1
    st.session_state["_nav.scroll_nonce"] = nonce
    component = st.components.v2.component("tp_scroll_to", js=_SCROLL_JS)
    component(key="tp_scroll_to", data={"key": key.replace(".", "-"), "nonce": nonce})


def linked_html(markup: str, *, key: str) -> None:
    """Draw ``markup`` as one element; a click on an ``<a data-page="<stop key>">`` in it opens that stop
    in this session (Ctrl/middle-click still opens the ``href`` in a new tab). A link with
    ``data-query="name=value&..."`` opens the stop on that view (its href carries the same values).

    Only project-written markup may be passed (it is inserted as is): escape every text in it.
    """
    component = st.components.v2.component("tp_linked_html", css=_LINKED_CSS, js=_LINKED_JS)
    result = component(key=key, data={"html": markup}, on_clicked_change=lambda: None)
    clicked = getattr(result, "clicked", None)
    if isinstance(clicked, str):
        stop_key, _, query = clicked.partition("?")
        if current_name(stop_key) in {s.key for s in TOUR}:
            switch_to(stop_key, {name: value for name, value in parse_qsl(query) if name not in CARRIED_PARAMS})

"""Presenter mode and "reset this page": what a teacher in front of a class needs.

Presenter mode (``?present=1``, carried from page to page like the language) hides the sidebar,
draws every text and control larger (the root font size: Streamlit sizes everything in ``rem``) and
every chart's lettering larger (:func:`presented`, applied by :func:`ui.widgets.plot`), and lets the
keyboard step through the page: → brings the next heading, chart or table to the top, at the page's
end the next of its sections (the section picker's next option), then the next page; ← goes back the
same way; Esc leaves the mode. A bar above the
title says so and holds the two buttons the hidden sidebar would: leave, and reset this page.

"Reset this page" (in the sidebar, and in that bar) puts the page's view back to its defaults:
every value the page bound (:func:`ui.url_state.forget_page`), language and model kept.
"""
from __future__ import annotations

from typing import Any

import streamlit as st

from ui.i18n import t
from ui.tour import neighbours
from ui.url_state import BoolParam, forget_page

PRESENT_KEY = "present"  # session state: presenter mode on or off
PARAM = BoolParam("present", default=False)
ROOT_FONT_PX = 22  # Streamlit's 16 px root, about ×1.4: body text reads from the back of a room
CHART_FONT_SCALE = 1.5  # plotly letters are in px (not rem): scaled on each figure
_FALLBACK_CHART_FONT = 12  # plotly's default size, for text that sets none

# Hidden: the sidebar and the button that reopens it (the bar above the title replaces what it holds).
CSS = f"""<style>
html {{ font-size: {ROOT_FONT_PX}px; }}
section[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="stExpandSidebarButton"]
  {{ display: none !important; }}
[data-testid="stMainBlockContainer"] {{ max-width: none; padding-left: 2rem; padding-right: 2rem; }}
</style>"""


def bind_presenter() -> bool:
    """Settle presenter mode from the URL (``?present=1`` / ``0``) or the session; write it back to the
    URL only while it is on (every other link stays as it was). Called before any page runs."""
    raw = st.query_params.get(PARAM.name)
    if raw is not None:
        try:
            st.session_state[PRESENT_KEY] = PARAM.parse(raw)
        except ValueError:
            st.session_state[PRESENT_KEY] = False
    on = bool(st.session_state.get(PRESENT_KEY, False))
    _write_url(on)
    return on


def is_presenting() -> bool:
    return bool(st.session_state.get(PRESENT_KEY, False))


def _write_url(on: bool) -> None:
    if on:
        st.query_params[PARAM.name] = "1"
    elif PARAM.name in st.query_params:
        del st.query_params[PARAM.name]


def _set(on: bool) -> None:
    st.session_state[PRESENT_KEY] = on
    _write_url(on)


def _toggled() -> None:
    _write_url(bool(st.session_state.get(PRESENT_KEY)))


def sidebar_controls(page: str | None) -> None:
    """In the sidebar: the presenter-mode switch, and "reset this page" for page ``page`` (its key)."""
    st.toggle(t("common.presenter.toggle"), key=PRESENT_KEY, on_change=_toggled, help=t("common.presenter.help"))
    if page is not None:
        reset_button(page, key="presenter.reset_sidebar")


def reset_button(page: str, *, key: str) -> None:
    st.button(t("common.presenter.reset"), key=key, icon=":material/restart_alt:", on_click=forget_page, args=(page,),
              help=t("common.presenter.reset_help"))


def presenter_bar(page: str) -> None:
    """Above the title, in presenter mode: the page's larger lettering, the keyboard, and leave / reset."""
    if not is_presenting():
        return
    st.html(CSS)
    with st.container(horizontal=True, vertical_alignment="center", key="tp_presenter"):
        st.caption(t("common.presenter.keys"))
        reset_button(page, key="presenter.reset_bar")
        st.button(t("common.presenter.leave"), key="presenter.leave", icon=":material/close_fullscreen:",
                  on_click=_set, args=(False,))
    _keyboard(page)


def _keyboard(page: str) -> None:
    """The page's keys (see the module docstring); at either end of the page the tour's neighbour opens."""
    component = st.components.v2.component("tp_presenter_keys", js=_KEYS_JS)
    # Esc: off in a callback (it runs before the sidebar's switch, whose state a run may not change after drawing it).
    result = component(key="tp_presenter_keys", data={"page": page},
                       on_go_change=lambda: None, on_leave_change=lambda: _set(False))
    go = getattr(result, "go", None)
    if go in ("next", "previous"):
        previous, following = neighbours(page)
        target = following if go == "next" else previous
        if target is not None:
            from ui.nav import switch_to  # ui.nav imports the sidebar, which imports this module

            switch_to(target.key)


def presented(fig: Any) -> Any:
    """``fig`` with its lettering :data:`CHART_FONT_SCALE` times larger in presenter mode (as it is otherwise)."""
    if not is_presenting():
        return fig
    base = fig.layout.font.size or _FALLBACK_CHART_FONT
    fig.update_layout(font_size=round(base * CHART_FONT_SCALE))
    for annotation in fig.layout.annotations or ():
        if annotation.font.size:
            annotation.font.size = round(annotation.font.size * CHART_FONT_SCALE)
    for axis in (fig.layout[name] for name in fig.layout if name.startswith(("xaxis", "yaxis"))):
        if axis.tickfont.size:
            axis.tickfont.size = round(axis.tickfont.size * CHART_FONT_SCALE)
        if axis.title.font.size:
            axis.title.font.size = round(axis.title.font.size * CHART_FONT_SCALE)
    if fig.layout.title.font.size:
        fig.layout.title.font.size = round(fig.layout.title.font.size * CHART_FONT_SCALE)
    if fig.layout.height:
        fig.layout.height = round(fig.layout.height * 1.25)  # room for the larger letters
    return fig


# Runs in the page (components v2 are not sandboxed). One keydown listener per browser tab, installed
# once; it acts only while the presenter bar is on the page, and never on a key meant for a control
# (a text box, a slider, a select list, a radio, a chart). Stops: the headings (h1-h3), the charts and
# tables, and the page's section picker (``<page>.section``). → scrolls the next stop to the top (or a
# screen down when it is further); at the end of the page it opens the picker's next section, else the
# next page (never while the page still runs: its end is not final). ← does the reverse: the previous section when the picker is at the top, the previous page
# at the page's top.
_KEYS_JS = """
export default function (component) {
  const { data, setTriggerValue } = component;
  const self = window.tpPresenterKeys = window.tpPresenterKeys || {};
  self.setTriggerValue = setTriggerValue;
  self.page = data.page;
  if (self.installed) return;
  self.installed = true;
  const TOP = 80;
  const FIELD = "input, textarea, select, [contenteditable=''], [contenteditable='true'], [role='slider'], " +
                "[role='combobox'], [role='listbox'], [role='option'], [role='radio'], .js-plotly-plot";
  const topOf = (el) => el.getBoundingClientRect().top;
  const sectionButtons = () =>
    [...document.querySelectorAll(".st-key-" + self.page + "-section button[role='radio']")];
  const stepSection = (main, delta) => {
    const buttons = sectionButtons();
    const at = buttons.findIndex((b) => b.getAttribute("aria-checked") === "true");
    const next = buttons[at + delta];
    if (at < 0 || !next) return false;
    next.click();
    main.scrollBy(0, topOf(document.querySelector(".st-key-" + self.page + "-section")) - TOP);
    return true;
  };
  document.addEventListener("keydown", (event) => {
    if (!document.querySelector(".st-key-tp_presenter")) return;
    if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey || event.defaultPrevented) return;
    const active = document.activeElement;
    if (active && active !== document.body && (active.matches(FIELD) || active.closest(FIELD))) return;
    if (event.key === "Escape") { self.setTriggerValue("leave", true); return; }
    if (event.key !== "ArrowRight" && event.key !== "ArrowLeft") return;
    const main = document.querySelector("[data-testid='stMain']");
    if (!main) return;
    event.preventDefault();
    // While the page still runs, its end is not where it will be: no step (the next press will do).
    if (document.querySelector("[data-testid='stApp'][data-test-script-state='running']")) return;
    const view = main.clientHeight;
    const stops = [...main.querySelectorAll(":is(h1, h2, h3), [data-testid='stPlotlyChart'], " +
                   "[data-testid='stDataFrame'], .st-key-" + self.page + "-section")]
      .filter((el) => el.offsetParent !== null);
    if (event.key === "ArrowRight") {
      if (main.scrollTop + view >= main.scrollHeight - 4) {
        if (!stepSection(main, 1)) self.setTriggerValue("go", "next");
        return;
      }
      const next = stops.find((el) => topOf(el) > TOP + 8);
      main.scrollBy(0, next && topOf(next) - TOP < view * 0.9 ? topOf(next) - TOP : view * 0.8);
    } else {
      const picker = document.querySelector(".st-key-" + self.page + "-section");
      if (picker && Math.abs(topOf(picker) - TOP) < 12 && stepSection(main, -1)) return;
      if (main.scrollTop <= 4) { self.setTriggerValue("go", "previous"); return; }
      const previous = stops.filter((el) => topOf(el) < TOP - 8).pop();
      main.scrollBy(0, previous && TOP - topOf(previous) < view * 0.9 ? topOf(previous) - TOP : -view * 0.8);
    }
  });
}
"""

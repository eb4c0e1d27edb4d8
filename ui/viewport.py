"""Whether this visitor's window is a phone's (narrow), for the views that have a phone layout and
should send the browser only the one it shows.

The first guess comes from the request: a phone's browser says "Mobile" in its User-Agent. A small
script in the page compares the window's width with :data:`ui.page_css.PHONE_MAX_PX` and reports
only where the guess is wrong (a narrow desktop window, a phone held sideways) or the window later
crosses that width; the report reruns the page once and is kept for the session. So a phone and a
desktop draw their layout at once, with no extra run.
"""
from __future__ import annotations

import streamlit as st

from ui.page_css import PHONE_MAX_PX

NARROW_KEY = "_viewport.narrow"  # session state: the last answer (the guess until the page reports)
COMPONENT_KEY = "tp_viewport"


def guessed_narrow(headers) -> bool:
    """A phone's browser, by its User-Agent (``Mobile`` is in every phone's, and in no desktop's or tablet's)."""
    agent = (headers or {}).get("User-Agent") or ""
    return "Mobile" in agent and "iPad" not in agent


def is_narrow() -> bool:
    """True on a window of at most :data:`PHONE_MAX_PX` px. Mounts the (invisible) reporting script
    where it is called: call it where the view's layout is chosen."""
    if NARROW_KEY not in st.session_state:
        st.session_state[NARROW_KEY] = guessed_narrow(st.context.headers)
    component = st.components.v2.component("tp_viewport", js=_JS)
    result = component(key=COMPONENT_KEY, data={"narrow": st.session_state[NARROW_KEY], "max": PHONE_MAX_PX},
                       on_narrow_change=lambda: None)
    reported = getattr(result, "narrow", None)
    if isinstance(reported, bool):
        st.session_state[NARROW_KEY] = reported
    return st.session_state[NARROW_KEY]


# Reports only a width that disagrees with what the server drew for (data.narrow), at mount and
# after a resize settles: a desktop or a phone that was guessed right never causes a run.
_JS = """
export default function (component) {
  const { data, setStateValue } = component;
  let drawnFor = data.narrow;  // what the server drew for, as far as this mount knows
  const check = () => {
    const narrow = window.innerWidth <= data.max;
    if (narrow !== drawnFor) { drawnFor = narrow; setStateValue("narrow", narrow); }
  };
  check();
  let timer = null;
  const onResize = () => { clearTimeout(timer); timer = setTimeout(check, 250); };
  window.addEventListener("resize", onResize);
  return () => { clearTimeout(timer); window.removeEventListener("resize", onResize); };
}
"""

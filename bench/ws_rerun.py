"""Server-side time of the rerun a widget change causes, on a real server, asked by a websocket client.

The same measure as :mod:`bench.browser_rerun` (the server runs under :mod:`bench.timed_server`,
which logs the duration of every script run; a widget inside an ``st.fragment`` reruns only its
fragment), but the change is sent by :class:`bench.load.Session`, which speaks Streamlit's
websocket protocol the way a browser does and draws nothing. On this 2-core machine a chromium
tab that renders every chart while the server is still running the script takes CPU from the
server and counts in its time; in a classroom the browsers are on other computers. So this is
the default client of ``bench/page_latency.py``; ``--client browser`` measures with chromium.

As in the browser mode, the widget flips between the value the page drew and the next one (next
option, one slider step, the other boolean), so every change asks for the other view and both
views are warm after the first two changes (a view nobody has asked for yet costs more: its
figures are built then, once per process). The reference is the same kind of change on a
one-widget script served the same way, each page change followed at once by a reference change;
the pages are all open at once and their changes go round in rotating rounds (:func:`rerun_ratios`).
Like a browser, the client keeps the large messages it was sent and reports their hashes with every
request, so a chart that has not changed since the last two runs comes back as a short reference.
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.browser_rerun import TRIVIAL_SCRIPT, _runs, summarize, timed_server  # noqa: E402
from bench.load import Session, WidgetState, another_value  # noqa: E402

# The view-defining widget each page's benchmark changes (the same as the browser mode's).
WIDGET_KEYS: dict[str, str] = {
    "home": "lang",
    "tokens": "tokens.side",
    "masks": "masks.switches",
    "positional": "positional.pair",
    "attention": "attention.head",
    "decoding": "dec_step",
    "training": "training.warmup",
}
# Reruns that page_latency measures beside the pages' own: "<page>:<what>" -> the widget(s) changed.
# Two buttons "a|b" are pressed in turn, b first (decoding: next, then previous, and so on).
EXTRA_CHANGES: dict[str, str] = {
    "decoding:buttons": "decoding.prev|decoding.next",
}
SETTLE_S = 0.15  # a run the first one triggers (st.rerun) lands in the log within this
LOG_WAIT_S = 2.0  # on a loaded machine the log line can come after the session has settled


def rotated(items: list, i: int) -> list:
    """``items`` starting at position ``i`` (mod its length): round ``i``'s order of changes."""
    return items[i % len(items):] + items[:i % len(items)] if items else []


def drawn_state(session: Session, key: str) -> WidgetState:
    """The WidgetState of widget ``key`` at the value the page drew it with."""
    widget = session.widgets[key]
    el, state = widget.element, WidgetState(id=widget.id)
    if widget.type in ("radio", "selectbox"):
        state.string_value = el.raw_value or list(el.options)[el.default]
    elif widget.type == "button_group":
        state.string_array_value.data.extend(list(el.raw_values) or [el.options[i].content for i in el.default])
    elif widget.type == "checkbox":
        state.bool_value = el.value if el.set_value else el.default
    elif widget.type == "slider":
        state.double_array_value.data.extend(list(el.value) if el.set_value else list(el.default))
    else:
        raise RuntimeError(f"cannot flip a {widget.type} widget ({key})")
    return state


def flip(session: Session, key: str, states: list[WidgetState], i: int) -> None:
    """Change ``key`` to ``states[(i + 1) % 2]``: the other of its two benchmark values (for two
    buttons ``"a|b"``, press the other one)."""
    state = states[(i + 1) % 2]
    widget = next(w for w in session.widgets.values() if w.id == state.id)
    pressed = state.WhichOneof("value") == "trigger_value"
    session.rerun("click" if pressed else "widget", extra=state, fragment_id=widget.fragment_id)


def two_states(session: Session, key: str) -> list[WidgetState]:
    """``[drawn value, next value]`` of widget ``key``; for two buttons ``"a|b"``, a press of each."""
    if "|" in key:
        presses = []
        for button in key.split("|"):
            presses.append(WidgetState(id=session.widgets[button].id, trigger_value=True))
        return presses
    drawn = drawn_state(session, key)
    return [drawn, another_value(session.widgets[key], drawn)]


def change_and_time(session: Session, log: Path, key: str, states: list[WidgetState],
                    i: int, clock: str = "wall") -> tuple[float, str]:
    """Flip widget ``key`` (change ``i``); ``(seconds, kinds)`` of the script runs it caused, from ``log``
    (wall-clock seconds, or with ``clock="cpu"`` the server's CPU seconds: ``browser_rerun._runs``)."""
    before = len(_runs(log))
    flip(session, key, states, i)
    time.sleep(SETTLE_S)
    session._settle(session.request_timeout)
    runs = _runs(log, clock)[before:]
    deadline = time.monotonic() + LOG_WAIT_S
    while not runs and time.monotonic() < deadline:  # the run's line is written just after its last message
        time.sleep(0.01)
        runs = _runs(log, clock)[before:]
    if not runs:
        raise RuntimeError(f"changing {key!r} caused no script run")
    return sum(s for s, _ in runs), ",".join(sorted({k for _, k in runs}))


def rerun_ratios(runs: int, pages: dict[str, str], clock: str = "wall") -> dict[str, dict]:
    """Per page key (``{key: url path with query}``): medians of page and reference reruns.

    Every page is open in its own session on one app server, and the changes go round the pages:
    each round changes every page once, each change followed at once by a reference change (the
    pair a ratio is made of), in an order that rotates round by round. So every page's pairs are
    spread over the whole measurement, and a burst of load from outside (on a shared machine a
    burst can last seconds) lands on all pages alike instead of on the one being measured."""
    results: dict[str, dict] = {}
    client = "websocket client" + (", server CPU time" if clock == "cpu" else "")
    with tempfile.TemporaryDirectory() as tmp:
        trivial = Path(tmp) / "trivial_app.py"
        trivial.write_text(TRIVIAL_SCRIPT)
        with timed_server(Path(__file__).resolve().parents[1] / "app.py") as (app_url, app_log), \
                timed_server(trivial) as (ref_url, ref_log):
            reference = Session(ref_url, name="reference").connect()
            reference.open("", "lang=en")
            ref_states = two_states(reference, "lang")
            ref_changes = 0
            open_pages: dict[str, tuple[Session, str, list]] = {}
            for key, path in pages.items():
                page_path, _, query = path.partition("?")
                session = Session(app_url, name=key).connect()
                try:
                    session.open(page_path, query)
                    time.sleep(1.0)  # the first run's follow-ups and the background warm-up
                    widget = {**WIDGET_KEYS, **EXTRA_CHANGES}[key]
                    open_pages[key] = (session, widget, two_states(session, widget))
                except Exception as exc:  # a broken page is reported; the others are still measured
                    print(f"{key:<12} FAILED: {exc}", flush=True)
                    results[key] = {"error": str(exc)[:300]}
                    session.close()
            times = {key: ([], [], set()) for key in open_pages}  # page seconds, reference seconds, run kinds
            for i in range(3 + runs):  # 3 rounds to warm both sides; i carries on, so every change flips
                for key in rotated(list(open_pages), i):
                    session, widget, states = open_pages[key]
                    try:
                        seconds, kind = change_and_time(session, app_log, widget, states, i, clock)
                        ref_seconds = change_and_time(reference, ref_log, "lang", ref_states, ref_changes, clock)[0]
                        ref_changes += 1
                    except Exception as exc:
                        print(f"{key:<12} FAILED: {exc}", flush=True)
                        results[key] = {"error": str(exc)[:300]}
                        session.close()
                        del open_pages[key], times[key]
                        continue
                    if i >= 3:
                        times[key][0].append(seconds)
                        times[key][1].append(ref_seconds)
                        times[key][2].add(kind)
            for key, (session, _, _) in open_pages.items():
                session.close()
                page_s, ref_s, kinds = times[key]
                results[key] = summarize(key, page_s, ref_s, kinds, client)
            reference.close()
    return {key: results[key] for key in pages}

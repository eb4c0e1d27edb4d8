"""Many sessions at once: N visitors walking the tour against one ``streamlit run app.py`` server.

What a classroom does to the shared server, without 30 browsers on the machine that measures it:
each session is a light websocket client that speaks Streamlit's own protocol the way the browser
does (``BackMsg.rerun_script`` over ``ws://127.0.0.1:PORT/_stcore/stream``, subprotocol
``streamlit``; ``ForwardMsg`` deltas back until ``script_finished``):

* it opens the app (home, in English or, for every third session, with a Chinese browser locale);
* on every page it gives the page's own view widget (:data:`PAGE_WIDGETS`, one per page) a
  random other value: the widget's id, kind, options and current
  value come from the page's deltas, and the rerun carries ``widget_states`` with the changed
  widget, and ``fragment_id`` when the widget's delta has one, as the browser does (the browser
  also repeats the values of the widgets left alone, which the server already holds; this client
  repeats only those it changed that are still on screen);
* it moves on by clicking the page's "Next" link (``page_script_hash`` and ``query_string`` of
  that ``st.page_link``) and, from the last page, back home through the sidebar navigation
  (``page_script_hash``, empty query string), keeping the query string the server last wrote;
* between clicks it "thinks" for a random ``--think`` interval, during which it answers the
  server's ``auto_rerun`` requests (the training page's live fragments) as the browser's timers
  do: a rerun with that ``fragment_id`` and ``is_auto_rerun``;
* ``--trainers`` of the sessions (default 2) first open ``/training?training_steps=--train-steps``,
  wait for each other, press Start at the same moment, watch their runs live until they finish,
  and then walk the tour like the others.

Before the clock starts, one visitor opens every page once (a classroom server is started before
the class) and the server's background warm-up is given ``settle`` seconds. The default think
time, 3-8 s between two clicks, is a class following the teacher page by page; ``--think 1 3``
is a class clicking as fast as it reads.

Measured per rerun: milliseconds from sending the BackMsg to the ``script_finished`` that ends
it. ``p50_ms``/``p95_ms`` cover the reruns a visitor causes (open, widget change, link, sidebar,
button); the live fragments' background reruns are reported apart (``auto_*``). Errors: an
exception element in any delta, a page-not-found or compile error, a disconnect, a rerun without
``script_finished`` within ``--request-timeout``, or a session still going at ``--timeout``.
Server memory (RSS, via psutil or ``/proc/PID/status``) is read after the warm-up ("before"),
sampled during the load ("peak") and read again after every session has closed ("after"; the
closed sessions are still within Streamlit's ``server.disconnectedSessionTTL``).

    nice -n 10 python bench/load.py [--sessions 30] [--rounds 1 | --duration 120] [--think 3 8]

The server is started here (127.0.0.1, a free port, headless, ``TP_TRAINING_DEBUG=1`` so the
training page prints its run's state for the report) unless ``--url`` names a running one
(loopback only). Everything is bounded: ``--sessions``, ``--rounds``/``--duration`` and a hard
``--timeout``. The last stdout line is one JSON object (``sessions``, ``p50_ms``, ``p95_ms``,
``errors`` and the rest). Target on the project's 2-core machine: 30 sessions, p95 < 2 s, 0 errors.

The client is importable (``import bench.load``): :func:`run_load` is what the short load test
in ``tests/ops/test_load_short.py`` runs, and :class:`Session` drives one visitor.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import resource
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: ``python bench/load.py``
    sys.path.insert(0, str(ROOT))

import websocket  # noqa: E402  (websocket-client, in requirements-dev.txt)

from bench import server as _server  # noqa: E402
from streamlit.proto.BackMsg_pb2 import BackMsg  # noqa: E402
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # noqa: E402
from streamlit.proto.WidgetStates_pb2 import WidgetState  # noqa: E402

# The widget a visitor changes on each page, by URL path (one view control per page).
PAGE_WIDGETS: dict[str, str] = {
    "": "lang",
    "tokens": "tokens.side",
    "masks": "masks.padding",
    "positional-encoding": "positional_encoding.pair",
    "attention": "attention.head",
    "feed-forward": "feed_forward.stack",
    "residual-stream": "residual_stream.stack",
    "layer-norm": "layer_norm.site",
    "decoding": "decoding.step",
    "output-and-loss": "output_and_loss.temperature",
    "bleu": "bleu.noise",
    # The cost page's only view control (its log-axes toggle) appears after a measurement, which a
    # visitor has to ask for; before that the language radio is the control every visitor has.
    "attention-cost": "lang",
    "training": "training.warmup",
    "paper-vs-code": "paper_vs_code.row",
}
FALLBACK_WIDGET = "lang"  # the sidebar's language radio, on every page
START_BUTTON = "training.start"
TRAINING_PATH = "training"
WIDGET_TYPES = frozenset({
    "button", "button_group", "checkbox", "number_input", "radio", "selectbox", "slider", "text_input",
    "text_area", "multiselect", "file_uploader", "download_button", "date_input", "time_input", "color_picker",
})
RUN_STATS = re.compile(r"training-run-stats: state=(\w+) step=(\d+)")
THREADS_ALIVE = re.compile(r"training-threads-alive: (\d+)")

FINISHED = ForwardMsg.FINISHED_SUCCESSFULLY
COMPILE_ERROR = ForwardMsg.FINISHED_WITH_COMPILE_ERROR
EARLY_FOR_RERUN = ForwardMsg.FINISHED_EARLY_FOR_RERUN
FRAGMENT_FINISHED = ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY

SERVER_START_TIMEOUT_S = 120
REQUEST_TIMEOUT_S = 60.0
TARGET_P95_MS = 2000.0
USER_KINDS = ("open", "widget", "link", "nav", "click")


class SessionError(Exception):
    """A session cannot go on (disconnected, timed out, a widget or link it needs is missing)."""


# ------------------------------------------------------------------ the server


def start_server(*, env: dict[str, str] | None = None, extra_args: tuple[str, ...] = (),
                 log_path: Path | None = None) -> tuple[subprocess.Popen, str]:
    """``streamlit run app.py`` on 127.0.0.1, headless, in a process session of its own
    (:mod:`bench.server`); the process and its base URL once ``/_stcore/health`` answers."""
    return _server.start_server("app.py", env=env, extra_args=extra_args, log_path=log_path,
                                timeout_s=SERVER_START_TIMEOUT_S)


stop_server = _server.stop_server


def rss_bytes(pid: int) -> int:
    """Resident memory of process ``pid`` (psutil if installed, else ``VmRSS`` of /proc/PID/status)."""
    try:
        import psutil
    except ImportError:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        raise RuntimeError(f"no VmRSS for process {pid}") from None
    return psutil.Process(pid).memory_info().rss


def thread_count(pid: int) -> int:
    """OS threads of process ``pid`` (``/proc/PID/task``)."""
    return len(os.listdir(f"/proc/{pid}/task"))


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds used so far by process ``pid`` (``/proc/PID/stat``)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def active_sessions(url: str) -> int | None:
    """Connected sessions as the server counts them (``/_stcore/metrics``), or None if unavailable."""
    try:
        with urllib.request.urlopen(f"{url}/_stcore/metrics?families=active_sessions", timeout=5) as response:
            text = response.read().decode()
    except OSError:
        return None
    match = re.search(r"^active_sessions\s+(\d+)", text, re.M)
    return int(match.group(1)) if match else None


def ws_url(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        raise ValueError(f"loopback servers only, not {url}")
    return f"ws://{parts.netloc}{parts.path.rstrip('/')}/_stcore/stream"


# ------------------------------------------------------------------ one visitor


@dataclass
class Widget:
    id: str
    type: str  # the Element oneof name: "slider", "radio", ...
    element: object  # the widget's proto, as last sent
    fragment_id: str


@dataclass
class Record:
    kind: str  # open / widget / link / nav / click / auto
    page: str
    ms: float
    key: str = ""  # the widget changed, for widget and click reruns


@dataclass
class Session:
    """One browser session, driven over Streamlit's websocket protocol.

    Not thread-safe: one thread drives one session. ``stop`` (an Event) makes every wait give up.
    """

    url: str
    name: str = "session"
    locale: str = "en-US"
    request_timeout: float = REQUEST_TIMEOUT_S
    stop: threading.Event = field(default_factory=threading.Event)
    rng: random.Random | None = None  # random widget values (None: always the next value)

    def __post_init__(self) -> None:
        self.ws: websocket.WebSocket | None = None
        self.records: list[Record] = []
        self.errors: list[str] = []
        self.pages: dict[str, str] = {}  # url path -> page_script_hash (from the navigation message)
        self.page_hash = ""
        self.query_string = ""
        self.widgets: dict[str, Widget] = {}  # user key -> widget, as drawn by the current page
        self.links: list[tuple[str, str, str]] = []  # (page_script_hash, query_string, label)
        self.states: dict[str, WidgetState] = {}  # widget id -> the state this session sent
        self.visited: set[str] = set()  # url paths whose full run finished without an error
        self.auto: dict[str, list[float]] = {}  # fragment id -> [interval s, next due (monotonic)]
        self.run_stats: tuple[str, int] | None = None  # training page's debug line (state, step)
        self.run_stats_line = ""
        self.threads_alive: int | None = None  # training page's debug line
        self.alerts: list[str] = []  # the bodies of the st.success / warning / error boxes drawn, in order
        self.running = False
        self._finished: int | None = None
        self._seen_ids: set[str] = set()
        self._run_errors = 0
        self._context_sent = False
        # As the browser's ForwardMsgCache: hash -> [message, run count when last used]. The hashes
        # go back with every rerun request, and the server sends a short reference for those.
        self.message_cache: dict[str, list] = {}
        self._cache_runs = 0
        self._cache_max_age = 2  # the server's global.maxCachedMessageAge, read from new_session
        self._run_fragments: tuple[str, ...] = ()
        self.cache_hits = 0  # references the server sent instead of a message
        self._changing = ""  # the user key of the widget the rerun in flight changes

    # -- connection ------------------------------------------------------------------------------
    def connect(self) -> "Session":
        self.ws = websocket.create_connection(ws_url(self.url), subprotocols=["streamlit"],
                                              timeout=self.request_timeout)
        return self

    def close(self) -> None:
        """Close the websocket, as a closed tab does."""
        if self.ws is not None:
            try:
                self.ws.close(timeout=1)
            except Exception:
                pass
            self.ws = None

    def drop(self) -> None:
        """Cut the connection without a closing handshake, as a crashed or offline laptop does."""
        if self.ws is not None:
            try:
                self.ws.sock.shutdown(socket.SHUT_RDWR)
            except Exception:
                pass
            try:
                self.ws.sock.close()
            except Exception:
                pass
            self.ws = None

    # -- reading the server's messages ------------------------------------------------------------
    def _recv(self, timeout: float) -> bool:
        """Handle one ForwardMsg if one comes within ``timeout`` s; False if none came."""
        if self.ws is None:
            raise SessionError("not connected")
        self.ws.settimeout(max(timeout, 0.01))
        try:
            data = self.ws.recv()
        except websocket.WebSocketTimeoutException:
            return False
        except (websocket.WebSocketConnectionClosedException, ConnectionError, OSError) as exc:
            raise SessionError(f"disconnected: {type(exc).__name__}: {exc}") from None
        if not data:
            raise SessionError("disconnected: empty frame")
        msg = ForwardMsg()
        msg.ParseFromString(data)
        self._handle(self._through_cache(msg))
        return True

    def _through_cache(self, msg: ForwardMsg) -> ForwardMsg:
        """Keep a cacheable message, and replace a reference by the message it names (the browser's
        ForwardMsgCache does both)."""
        if msg.WhichOneof("type") == "ref_hash":
            entry = self.message_cache.get(msg.ref_hash)
            if entry is None:
                raise SessionError(f"the server referred to a message this session does not have ({msg.ref_hash})")
            entry[1] = self._cache_runs
            self.cache_hits += 1
            cached = ForwardMsg()
            cached.CopyFrom(entry[0])
            cached.metadata.CopyFrom(msg.metadata)  # where this run puts it
            return cached
        if msg.metadata.cacheable and msg.hash:
            self.message_cache[msg.hash] = [msg, self._cache_runs]
        return msg

    def _age_cache(self) -> None:
        """A run finished: forget the cached messages not used in the last ``max age`` runs (in a
        fragment run, only those of its fragments), as the browser does."""
        self._cache_runs += 1
        for key, (message, used) in list(self.message_cache.items()):
            fragment = message.delta.fragment_id if message.WhichOneof("type") == "delta" else ""
            if self._run_fragments and (not fragment or fragment not in self._run_fragments):
                continue
            if self._cache_runs - used > self._cache_max_age:
                del self.message_cache[key]

    def _handle(self, msg: ForwardMsg) -> None:
        kind = msg.WhichOneof("type")
        if kind == "delta":
            self._handle_delta(msg.delta)
        elif kind == "new_session":
            self._run_fragments = tuple(msg.metadata.run.fragment_ids)
            self._cache_max_age = msg.new_session.config.max_cached_message_age or self._cache_max_age
            if not msg.metadata.run.fragment_ids:  # a full run: the page is drawn anew
                self.widgets.clear()
                self.links.clear()
                self._seen_ids.clear()
                self.auto.clear()  # this run re-registers the fragments it still draws
            self._run_errors = 0
        elif kind == "navigation":
            self.pages = {p.url_pathname: p.page_script_hash for p in msg.navigation.app_pages}
            self.page_hash = msg.navigation.page_script_hash
        elif kind == "page_info_changed":
            self.query_string = msg.page_info_changed.query_string
        elif kind == "session_status_changed":
            self.running = msg.session_status_changed.script_is_running
        elif kind == "auto_rerun":
            interval = max(float(msg.auto_rerun.interval), 0.1)
            self.auto[msg.auto_rerun.fragment_id] = [interval, time.monotonic() + interval]
        elif kind == "stop_auto_rerun":
            for fragment_id in msg.stop_auto_rerun.fragment_ids:
                self.auto.pop(fragment_id, None)
        elif kind == "page_not_found":
            self._error(f"page not found: {msg.page_not_found.page_name!r}")
        elif kind == "session_event" and msg.session_event.HasField("script_compilation_exception"):
            self._error(f"compile error: {msg.session_event.script_compilation_exception.message}")
        elif kind == "script_finished":
            self._finished = msg.script_finished
            if msg.script_finished != EARLY_FOR_RERUN:
                self._age_cache()
            if msg.script_finished == FINISHED:
                if self._run_errors == 0:
                    self.visited.add(self.current_path)
                # As the browser does: forget the states of widgets that are no longer drawn.
                self.states = {k: v for k, v in self.states.items() if k in self._seen_ids}

    def _handle_delta(self, delta) -> None:
        if delta.WhichOneof("type") != "new_element":
            return
        element = delta.new_element
        etype = element.WhichOneof("type")
        if etype == "exception":
            exc = element.exception
            self._error(f"exception on {self.current_path!r}: {exc.type}: {exc.message}"[:400])
        elif etype == "alert":
            self.alerts.append(element.alert.body)
        elif etype == "page_link":
            link = element.page_link
            self.links.append((link.page_script_hash, link.query_string, link.label))
        elif etype == "markdown":
            body = element.markdown.body
            if (m := RUN_STATS.search(body)) is not None:
                self.run_stats = (m.group(1), int(m.group(2)))
                self.run_stats_line = body  # the whole line (bench/train_ui_overhead.py reads its clock)
            if (m := THREADS_ALIVE.search(body)) is not None:
                self.threads_alive = int(m.group(1))
        elif etype in WIDGET_TYPES:
            proto = getattr(element, etype)
            widget_id = getattr(proto, "id", "")
            if widget_id:
                self._seen_ids.add(widget_id)
                self.widgets[user_key(widget_id)] = Widget(widget_id, etype, proto, delta.fragment_id)

    def _error(self, what: str) -> None:
        self._run_errors += 1
        self.errors.append(f"{self.name}: {what}")

    @property
    def current_path(self) -> str:
        return next((path for path, h in self.pages.items() if h == self.page_hash), "?")

    # -- asking for reruns -----------------------------------------------------------------------
    def _settle(self, timeout: float) -> None:
        """Wait (bounded) until no script run is going, so a new request is not answered by an old run."""
        end = time.monotonic() + timeout
        while self.running and time.monotonic() < end and not self.stop.is_set():
            self._recv(min(0.5, end - time.monotonic()))

    def rerun(self, kind: str, *, page_hash: str | None = None, page_name: str | None = None,
              query: str | None = None, extra: WidgetState | None = None, fragment_id: str = "",
              auto: bool = False, wait: bool = True) -> float:
        """Send one ``rerun_script`` and wait for the ``script_finished`` that ends it; returns ms.

        ``extra`` is the changed widget's state (a trigger is sent once, a value is kept and sent
        again on later reruns while the widget is on screen, as the browser's widget manager does).
        With ``wait=False`` the request is only sent (for a tab that goes away at once); returns 0.
        """
        self._settle(self.request_timeout)
        self._changing = next((k for k, w in self.widgets.items() if extra is not None and w.id == extra.id), "")
        if extra is not None and extra.WhichOneof("value") != "trigger_value":
            self.states[extra.id] = extra
            bound = next((w for w in self.widgets.values() if w.id == extra.id), None)
            if bound is not None and query is None:
                self.query_string = browser_query(self.query_string, bound.element, extra)
        msg = BackMsg()
        cs = msg.rerun_script
        cs.query_string = self.query_string if query is None else query
        cs.page_script_hash = self.page_hash if page_hash is None else page_hash
        if page_name is not None:
            cs.page_name = page_name
        if fragment_id:
            cs.fragment_id = fragment_id
        cs.is_auto_rerun = auto
        cs.widget_states.widgets.extend(self.states.values())
        cs.cached_message_hashes.extend(self.message_cache)
        if extra is not None and extra.WhichOneof("value") == "trigger_value":
            cs.widget_states.widgets.append(extra)
        if not self._context_sent:
            cs.context_info.locale = self.locale
            cs.context_info.timezone = "Europe/London"
            self._context_sent = True
        done = {FINISHED, COMPILE_ERROR} | ({FRAGMENT_FINISHED} if fragment_id else set())
        self._finished = None
        start = time.perf_counter()
        if self.ws is None:
            raise SessionError("not connected")
        try:
            self.ws.send_binary(msg.SerializeToString())
        except (websocket.WebSocketConnectionClosedException, ConnectionError, OSError) as exc:
            raise SessionError(f"disconnected while sending: {exc}") from None
        if not wait:
            return 0.0
        end = time.monotonic() + self.request_timeout
        while self._finished not in done:
            if self.stop.is_set():
                raise SessionError("stopped")
            remaining = end - time.monotonic()
            if remaining <= 0:
                raise SessionError(f"{kind} rerun on {self.current_path!r}: no script_finished in "
                                   f"{self.request_timeout:.0f} s")
            self._recv(min(remaining, 1.0))
        ms = (time.perf_counter() - start) * 1e3
        if self._finished == COMPILE_ERROR:
            self._error(f"{kind} rerun on {self.current_path!r} ended with a compile error")
        self.records.append(Record(kind, self.current_path, ms, self._changing))
        return ms

    def open(self, path: str = "", query: str = "") -> float:
        """The first run, as a browser tab opening ``/<path>?<query>`` does."""
        return self.rerun("open", page_hash="", page_name=path, query=query)

    def change(self, key: str, *, wait: bool = True) -> float:
        """Give widget ``key`` another valid value (or press it, if it is a button) and rerun."""
        widget = self.widgets.get(key)
        if widget is None:
            raise SessionError(f"no widget {key!r} on {self.current_path!r}")
        state = another_value(widget, self.states.get(widget.id), self.rng)
        return self.rerun("click" if state.WhichOneof("value") == "trigger_value" else "widget", extra=state,
                          fragment_id=widget.fragment_id, wait=wait)

    def set_text(self, key: str, text: str) -> float:
        """Type ``text`` into the text box ``key`` and commit it (Ctrl+Enter or leaving the box) and rerun."""
        widget = self.widgets.get(key)
        if widget is None:
            raise SessionError(f"no widget {key!r} on {self.current_path!r}")
        state = WidgetState(id=widget.id)
        state.string_value = text
        return self.rerun("widget", extra=state, fragment_id=widget.fragment_id)

    def click(self, key: str, *, wait: bool = True) -> float:
        """Press button ``key`` (``wait=False``: send the press and return at once)."""
        return self.change(key, wait=wait)

    def follow_link(self, path: str) -> float:
        """Click the ``st.page_link`` to ``/<path>`` drawn by the current page."""
        target = self.pages.get(path)
        link = next((ln for ln in self.links if ln[0] == target), None) if target else None
        if link is None:
            raise SessionError(f"no link to {path!r} on {self.current_path!r}")
        return self.rerun("link", page_hash=link[0], query=link[1])

    def navigate(self, path: str) -> float:
        """Click ``/<path>`` in the sidebar's navigation (which clears the query string)."""
        target = self.pages.get(path)
        if target is None:
            raise SessionError(f"no page {path!r} in the navigation")
        return self.rerun("nav", page_hash=target, query="")

    def idle(self, seconds: float) -> None:
        """Think for ``seconds``: read what the server sends and answer its auto-reruns when due."""
        end = time.monotonic() + seconds
        while not self.stop.is_set():
            now = time.monotonic()
            due = [(entry[1], fid) for fid, entry in self.auto.items()]
            if due and not self.running:
                when, fragment_id = min(due)
                if when <= now:
                    self.auto[fragment_id][1] = now + self.auto[fragment_id][0]
                    self.rerun("auto", fragment_id=fragment_id, auto=True)
                    continue
                wake = min(when, end)
            else:
                wake = end
            if now >= end:
                return
            self._recv(max(min(wake - now, 1.0), 0.01))

    def watch_run(self, max_seconds: float) -> None:
        """Stay on the training page until its run is over (no live fragments left) or ``max_seconds``."""
        end = time.monotonic() + max_seconds
        self.idle(1.0)
        while (self.auto or self.running) and time.monotonic() < end and not self.stop.is_set():
            self.idle(1.0)
        if self.auto:
            raise SessionError(f"the training run was still live after {max_seconds:.0f} s")


def browser_query(query: str, element, state: WidgetState) -> str:
    """The query string after a browser sends ``state`` for the widget drawn as ``element``.

    A widget drawn with ``bind="query-params"`` carries ``query_param_key``, and the browser writes
    its new value into the address bar itself before asking for the rerun (and leaves the name out
    while the value is the default); the server sends nothing for it. Sliders only: the one kind the
    app binds this way. Any other widget leaves ``query`` as it is."""
    name = getattr(element, "query_param_key", "")
    if not name or state.WhichOneof("value") != "double_array_value":
        return query
    kept = [(k, v) for k, v in urllib.parse.parse_qsl(query, keep_blank_values=True) if k != name]
    values = list(state.double_array_value.data)
    if values != list(element.default):
        kept += [(name, f"{v:g}") for v in values]
    return urllib.parse.urlencode(kept)


def user_key(widget_id: str) -> str:
    """The ``key=`` a widget was given, from its element id (``$$ID-<hash>-<key>``); else the id."""
    parts = widget_id.split("-", 2)
    return parts[2] if widget_id.startswith("$$ID-") and len(parts) == 3 else widget_id


def _pick(options: list, current, rng: random.Random | None):
    """The option after ``current`` (no rng), or a random option other than ``current``."""
    if rng is None:
        return options[(options.index(current) + 1) % len(options) if current in options else 0]
    others = [o for o in options if o != current]
    return rng.choice(others or options)


def another_value(widget: Widget, sent: WidgetState | None, rng: random.Random | None = None) -> WidgetState:
    """A WidgetState giving ``widget`` a valid value other than its current one (a button: a press).

    The current value is what this session last sent for it, else what the server drew. Without
    ``rng`` the value is the next one (next option, one step up, the other boolean); with it, a
    random other value, so that sessions do not all ask for the same views.
    """
    el = widget.element
    state = WidgetState(id=widget.id)
    if widget.type in ("button", "download_button"):
        state.trigger_value = True
    elif widget.type in ("radio", "selectbox"):
        options = list(el.options)
        current = sent.string_value if sent is not None else (el.raw_value or options[el.default])
        state.string_value = _pick(options, current, rng)
    elif widget.type == "button_group":
        options = [o.content for o in el.options]
        if sent is not None:
            current = list(sent.string_array_value.data)
        elif el.raw_values:
            current = list(el.raw_values)
        else:
            current = [options[i] for i in el.default]
        state.string_array_value.data.append(_pick(options, current[0] if current else None, rng))
    elif widget.type == "checkbox":
        current = sent.bool_value if sent is not None else (el.value if el.set_value else el.default)
        state.bool_value = not current
    elif widget.type == "slider" and el.type != el.SELECT_SLIDER:
        if sent is not None:
            current = list(sent.double_array_value.data)
        else:
            current = list(el.value) if el.set_value else list(el.default)
        step = el.step or 1
        top = current[1] if len(current) > 1 else el.max
        if rng is None:
            first = current[0] + step if current[0] + step <= top else el.min
        else:
            slots = int(round((top - el.min) / step))
            first = current[0]
            for _ in range(10):
                if first != current[0] or slots < 1:
                    break
                first = round(el.min + rng.randint(0, slots) * step, 10)
        state.double_array_value.data.extend([first, *current[1:]])
    elif widget.type == "number_input":
        if sent is not None:
            current = sent.int_value if sent.WhichOneof("value") == "int_value" else sent.double_value
        else:
            current = el.value if el.set_value else el.default
        step = el.step or 1
        up_ok = not el.has_max or current + step <= el.max
        down_ok = not el.has_min or current - step >= el.min
        go_up = up_ok and (rng is None or not down_ok or rng.random() < 0.5)
        new = current + step if go_up else current - step
        if el.data_type == el.INT:
            state.int_value = int(new)
        else:
            state.double_value = float(new)
    elif widget.type in ("text_input", "text_area"):
        state.string_value = "abc" if (sent is None or sent.string_value != "abc") else "abcd"
    else:
        raise SessionError(f"cannot change a {widget.type} widget ({widget.id})")
    return state


# ------------------------------------------------------------------ many visitors


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (``q`` in 0..100) of ``values``; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(math.ceil(q / 100 * len(ordered)) - 1, 0)]


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


# --random-controls: what a visitor may click at random. Not: the training page's buttons (only the trainers
# train), downloads, uploads, the exercises' Check / Use mine (learners' code has its own benchmark,
# bench/learners.py), or the cost page's Measure (a queued measurement of its own, #33 item 5).
NOT_CLICKED = re.compile(r"^(training\.|.*download|.*upload|.*exercise|.*check|.*use_mine|attention_cost\.(latent_)?measure)")
CLICKABLE = frozenset({"button", "radio", "selectbox", "button_group", "checkbox", "slider", "number_input",
                       "text_input", "text_area"})  # what another_value can change
SENTENCES = {  # typed into a text box, in the language the default model reads
    "en": ("the cat sat on the mat .", "i like green tea .", "my brother reads a book .", "she is tired .",
           "the dog was hungry because it did not eat ."),
    "zh": ("猫坐在垫子上。", "我喜欢绿茶。", "我的哥哥在看书。", "她累了。", "狗饿了，因为它没有吃东西。"),
}


def random_controls(session: Session, rng: random.Random, think: tuple[float, float]) -> None:
    """Change 1 to 3 controls of the current page, picked at random (sentences typed into text boxes)."""
    for _ in range(rng.randint(1, 3)):
        keys = sorted(k for k, w in session.widgets.items() if w.type in CLICKABLE and not NOT_CLICKED.match(k)
                      and not (w.type == "slider" and w.element.type == w.element.SELECT_SLIDER))
        if not keys:
            return
        key = rng.choice(keys)
        widget = session.widgets[key]
        if widget.type in ("text_input", "text_area"):
            lang = "zh" if session.locale.startswith("zh") else "en"
            session.set_text(key, rng.choice(SENTENCES[lang]))
        else:
            session.change(key)
        session.idle(rng.uniform(*think))


def tour(session: Session, order: list[str], rng: random.Random, think: tuple[float, float],
         rounds: int | None, until: float, start_path: str, random_clicks: bool = False) -> None:
    """Walk the tour from ``start_path``: change the page's widget (``random_clicks``: 1 to 3 random
    controls), think, click Next, think; repeat.

    Stops after ``rounds`` full tours (None: no limit) or at monotonic time ``until``.
    """
    path = start_path
    if path != order[0]:  # e.g. a trainer on /training: back home through the sidebar first
        session.navigate(order[0])
        path = order[0]
        session.idle(rng.uniform(*think))
    done_rounds = 0
    while not session.stop.is_set() and time.monotonic() < until:
        if random_clicks:
            random_controls(session, rng, think)
        else:
            key = PAGE_WIDGETS.get(path, FALLBACK_WIDGET)
            session.change(key if key in session.widgets else FALLBACK_WIDGET)
            session.idle(rng.uniform(*think))
        i = order.index(path)
        if random_clicks and rng.random() < 0.5:  # random navigation: half the time, any page from the sidebar
            path = rng.choice([p for p in order if p != path])
            session.navigate(path)
        elif i + 1 < len(order):
            path = order[i + 1]
            session.follow_link(path)
        else:
            done_rounds += 1
            if rounds is not None and done_rounds >= rounds:
                return
            path = order[0]
            session.navigate(path)
        session.idle(rng.uniform(*think))


def run_load(url: str | None = None, pid: int | None = None, *, sessions: int = 30, rounds: int | None = 1,
             duration: float | None = None, trainers: int = 2, train_steps: int = 100,
             think: tuple[float, float] = (3.0, 8.0), ramp: float = 15.0, timeout: float = 900.0,
             request_timeout: float = REQUEST_TIMEOUT_S, seed: int = 0, settle: float = 5.0,
             random_clicks: bool = False, log: Callable[[str], None] = print) -> dict:
    """Drive ``sessions`` visitors against ``url`` (or a server started here); return the report.

    ``pid`` is the server's process id (for RSS); a server started here knows its own. Stops after
    ``rounds`` tours per session (None: until ``duration`` seconds); ``timeout`` bounds the whole run.
    """
    if sessions < 1 or trainers < 0 or trainers > sessions:
        raise ValueError("need at least one session and 0 <= trainers <= sessions")
    if rounds is None and duration is None:
        raise ValueError("give rounds or duration")
    own = None
    if url is None:
        own = start_server(env={"TP_TRAINING_DEBUG": "1"})
        url, pid = own[1], own[0].pid
    else:
        ws_url(url)  # loopback only
    try:
        return _run_load(url, pid, sessions=sessions, rounds=rounds, duration=duration, trainers=trainers,
                         train_steps=train_steps, think=think, ramp=ramp, timeout=timeout,
                         request_timeout=request_timeout, seed=seed, settle=settle, random_clicks=random_clicks,
                         log=log)
    finally:
        if own is not None:
            stop_server(own[0])


def warm_up(url: str, request_timeout: float) -> list[str]:
    """One visitor opens every page once (imports, compiled scripts, shipped models); returns the tour order."""
    session = Session(url, "warm-up", request_timeout=max(request_timeout, 120.0)).connect()
    try:
        session.open("")
        order = list(session.pages)
        for path in order[1:]:
            session.navigate(path)
        session.navigate(order[0])
        if session.errors:
            raise RuntimeError(f"warm-up failed: {session.errors[:3]}")
        return order
    finally:
        session.close()


def _run_load(url: str, pid: int | None, *, sessions: int, rounds: int | None, duration: float | None,
              trainers: int, train_steps: int, think: tuple[float, float], ramp: float, timeout: float,
              request_timeout: float, seed: int, settle: float, log: Callable[[str], None],
              random_clicks: bool = False) -> dict:
    t_start = time.monotonic()
    hard_end = t_start + timeout
    rss_start = rss_bytes(pid) if pid else None
    order = warm_up(url, request_timeout)
    time.sleep(settle)  # let the background warm-up (shipped models) finish before measuring
    rss_before = rss_bytes(pid) if pid else None
    cpu_before = cpu_seconds(pid) if pid else None
    client_cpu_before = sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
    load_before = os.getloadavg()
    log(f"warm server: rss {_mb(rss_before)} MB, load average {load_before[0]:.2f}; "
        f"{sessions} sessions ({trainers} training {train_steps} steps), think {think[0]:g}-{think[1]:g} s")

    stop = threading.Event()
    barrier = threading.Barrier(trainers, timeout=max(ramp, 0) + 120) if trainers else None
    visitors = [Session(url, f"s{i:02d}", locale="zh-CN" if i % 3 == 2 else "en-US",
                        request_timeout=request_timeout, stop=stop, rng=random.Random(seed * 1000 + i))
                for i in range(sessions)]
    trainer_ids = set(range(trainers))
    training: dict[str, dict] = {}
    until = hard_end if duration is None else min(hard_end, time.monotonic() + ramp + duration)

    def visit(i: int) -> None:
        s = visitors[i]
        rng = random.Random(seed * 1000 + i + 500)  # think times
        try:
            if stop.wait(ramp * i / max(sessions, 1)):
                return
            s.connect()
            if i in trainer_ids:
                s.open(TRAINING_PATH, f"training_steps={train_steps}")
                try:
                    barrier.wait()
                except threading.BrokenBarrierError:
                    s.errors.append(f"{s.name}: the trainers' barrier broke (another trainer failed)")
                started = time.monotonic()
                s.click(START_BUTTON)
                s.watch_run(max(until - time.monotonic(), 1.0))
                training[s.name] = {"state": s.run_stats[0] if s.run_stats else None,
                                    "step": s.run_stats[1] if s.run_stats else None,
                                    "wall_s": round(time.monotonic() - started, 1)}
                tour(s, order, rng, think, rounds, until, TRAINING_PATH, random_clicks)
            else:
                s.open("", "")
                s.idle(rng.uniform(*think))
                tour(s, order, rng, think, rounds, until, order[0], random_clicks)
        except SessionError as exc:
            if not stop.is_set():
                s.errors.append(f"{s.name}: {exc}")
        except Exception as exc:  # a client bug is reported, not hidden
            s.errors.append(f"{s.name}: client error {type(exc).__name__}: {exc}")
        finally:
            s.close()

    threads = [threading.Thread(target=visit, args=(i,), name=f"load-{i}", daemon=True) for i in range(sessions)]
    peak = [rss_before or 0]
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.wait(0.5):
            try:
                peak[0] = max(peak[0], rss_bytes(pid))
            except Exception:
                return

    sampler = threading.Thread(target=sample, daemon=True) if pid else None
    if sampler:
        sampler.start()
    load_start = time.monotonic()
    for th in threads:
        th.start()
    timed_out: list[str] = []
    for i, th in enumerate(threads):
        th.join(max(hard_end - time.monotonic(), 0))
        if th.is_alive():
            timed_out.append(visitors[i].name)
    if timed_out:
        stop.set()
        for th in threads:
            th.join(request_timeout + 5)
    wall = time.monotonic() - load_start
    sampling.set()
    load_after = os.getloadavg()
    cpu_after = cpu_seconds(pid) if pid else None
    client_cpu = sum(resource.getrusage(resource.RUSAGE_SELF)[:2]) - client_cpu_before
    time.sleep(settle)
    rss_after = rss_bytes(pid) if pid else None

    records = [r for s in visitors for r in s.records]
    user = [r.ms for r in records if r.kind in USER_KINDS]
    autos = [r.ms for r in records if r.kind == "auto"]
    errors = [e for s in visitors for e in s.errors] + [f"{n}: still going at the hard timeout" for n in timed_out]
    by_kind = {}
    for kind in (*USER_KINDS, "auto"):
        values = [r.ms for r in records if r.kind == kind]
        if values:
            by_kind[kind] = {"n": len(values), "p50_ms": _ms(percentile(values, 50)),
                             "p95_ms": _ms(percentile(values, 95)), "max_ms": _ms(max(values))}
    by_page = {}
    for path in order:
        values = [r.ms for r in records if r.page == path and r.kind in USER_KINDS]
        if values:
            by_page[path or "home"] = {"n": len(values), "p50_ms": _ms(percentile(values, 50)),
                                       "p95_ms": _ms(percentile(values, 95))}
    by_control: dict[tuple[str, str], list[float]] = {}
    for r in records:
        if r.kind in ("widget", "click") and r.key:
            by_control.setdefault((r.page or "home", r.key), []).append(r.ms)
    slowest = sorted(({"page": page, "control": key, "n": len(v), "p95_ms": _ms(percentile(v, 95)),
                       "max_ms": _ms(max(v))} for (page, key), v in by_control.items()),
                     key=lambda row: -row["p95_ms"])[:15]
    pages_visited = {s.name: len(s.visited & set(order)) for s in visitors}
    p95 = percentile(user, 95)
    report = {
        "sessions": sessions, "trainers": trainers, "train_steps": train_steps,
        "rounds": rounds, "duration_s": duration, "think_s": list(think), "ramp_s": ramp,
        "wall_s": round(wall, 1), "reruns": len(user),
        "p50_ms": _ms(percentile(user, 50)), "p95_ms": _ms(p95), "max_ms": _ms(max(user) if user else None),
        "auto_reruns": len(autos), "auto_p50_ms": _ms(percentile(autos, 50)), "auto_p95_ms": _ms(percentile(autos, 95)),
        "errors": len(errors), "error_samples": errors[:10],
        "pages": len(order), "sessions_with_all_pages": sum(n == len(order) for n in pages_visited.values()),
        "min_pages_visited": min(pages_visited.values()),
        "training": training,
        "rss_start_mb": _mb(rss_start), "rss_before_mb": _mb(rss_before), "rss_peak_mb": _mb(peak[0] if pid else None),
        "rss_after_mb": _mb(rss_after),
        "server_cpu_s": round(cpu_after - cpu_before, 1) if pid else None, "client_cpu_s": round(client_cpu, 1),
        "loadavg_before": [round(x, 2) for x in load_before], "loadavg_after": [round(x, 2) for x in load_after],
        "cpus": os.cpu_count(), "by_kind": by_kind, "by_page": by_page, "random_controls": random_clicks,
        "slowest_controls": slowest,
        "target_p95_ms": TARGET_P95_MS,
        "ok": not errors and p95 is not None and p95 < TARGET_P95_MS,
    }
    return report


def _mb(value: int | None) -> float | None:
    return None if value is None else round(value / 2**20, 1)


# ------------------------------------------------------------------ command line


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog="The last line of stdout is one JSON object: sessions, p50_ms, p95_ms, "
                                       "errors, rss_*_mb, by_kind, by_page, training and the settings used.")
    p.add_argument("--sessions", type=int, default=30, help="concurrent sessions (default 30)")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--rounds", type=int, default=None, help="full tours per session (default 1)")
    group.add_argument("--duration", type=float, default=None,
                       help="instead of rounds: keep touring for this many seconds after the ramp-up")
    p.add_argument("--trainers", type=int, default=2, help="sessions that start a training run together (default 2)")
    p.add_argument("--train-steps", type=int, default=100, help="step cap of those runs (default 100)")
    p.add_argument("--think", type=float, nargs=2, default=(3.0, 8.0), metavar=("MIN", "MAX"),
                   help="seconds a visitor waits between two clicks, uniform in [MIN, MAX] (default 3 8)")
    p.add_argument("--ramp", type=float, default=15.0, help="seconds over which the sessions arrive (default 15)")
    p.add_argument("--timeout", type=float, default=900.0, help="hard limit for the whole load, seconds (default 900)")
    p.add_argument("--request-timeout", type=float, default=REQUEST_TIMEOUT_S,
                   help="a rerun without script_finished after this many seconds is an error (default 60)")
    p.add_argument("--url", default=None, help="a running server on 127.0.0.1 (default: start one here)")
    p.add_argument("--pid", type=int, default=None, help="with --url: the server's process id, for its RSS")
    p.add_argument("--seed", type=int, default=0, help="seed of the think times (default 0)")
    p.add_argument("--random-controls", action="store_true",
                   help="on every page change 1 to 3 controls picked at random (text boxes get typed sentences) "
                        "instead of the page's one view widget")
    args = p.parse_args(argv)
    if args.rounds is None and args.duration is None:
        args.rounds = 1
    if args.sessions < 1 or not 0 <= args.trainers <= args.sessions:
        p.error("need --sessions >= 1 and 0 <= --trainers <= --sessions")
    if args.think[0] < 0 or args.think[1] < args.think[0]:
        p.error("--think MIN MAX needs 0 <= MIN <= MAX")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.chdir(ROOT)
    report = run_load(args.url, args.pid, sessions=args.sessions, rounds=args.rounds, duration=args.duration,
                      trainers=args.trainers, train_steps=args.train_steps, think=tuple(args.think), ramp=args.ramp,
                      timeout=args.timeout, request_timeout=args.request_timeout, seed=args.seed,
                      random_clicks=args.random_controls, log=lambda line: print(line, flush=True))
    for kind, row in report["by_kind"].items():
        print(f"{kind:<7} n={row['n']:<5} p50 {row['p50_ms']:8.1f} ms   p95 {row['p95_ms']:8.1f} ms"
              f"   max {row['max_ms']:8.1f} ms", flush=True)
    for error in report["error_samples"]:
        print(f"error: {error}", flush=True)
    print(f"{report['sessions']} sessions: p50 {report['p50_ms']} ms, p95 {report['p95_ms']} ms, "
          f"{report['errors']} errors, rss {report['rss_before_mb']} -> peak {report['rss_peak_mb']} -> "
          f"{report['rss_after_mb']} MB", flush=True)
    print(json.dumps(report, ensure_ascii=False))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())

"""A class behind a proxy: N ``streamlit run app.py`` replicas on loopback behind HAProxy.

The proxy runs ``deploy/haproxy.cfg`` itself, unchanged, with its addresses from the environment
(``TP_PROXY_BIND``, ``TP_REPLICA1..N``: loopback ports here, the containers in
``deploy/docker-compose.yml``). Every replica gets the same ``server.cookieSecret``. Each visitor
is a :class:`ProxiedSession`, the websocket client of ``bench/load.py`` with what a browser adds
in front of a proxy:

* it first loads the page (``GET /``, where the proxy picks a replica and sets its ``TP_REPLICA``
  cookie) and ``/_stcore/health`` (where Streamlit sets its XSRF cookie), then opens the websocket
  with those cookies, the page's ``Origin`` and the XSRF token as the second subprotocol;
* it uploads a checkpoint as ``st.file_uploader`` does: ``file_urls_request`` over the websocket,
  an HTTP ``PUT`` of the file to the URL the server answered (multipart, cookies and the
  ``X-Xsrftoken`` header), then a rerun whose widget state names the uploaded file;
* it can lose its connection and come back (:meth:`ProxiedSession.reconnect`): the new websocket
  asks for its old session id (the third subprotocol), as the browser does after a network drop.

The proxy names the replica that answered each response in an ``X-TP-Replica`` header; every
response a session gets (page, health, websocket handshakes, uploads) must come from the replica
its cookie names. Some visitors upload a checkpoint, some train a tiny model and "use" it, the
others look at a page and change a widget; every session then loses its websocket and reconnects,
and must find the same session id and its own models in the sidebar's model list. While all of
them are connected, each replica's own ``/_stcore/metrics`` (bypassing the proxy) must count as
many sessions as there are cookies naming it.

    nice -n 10 python bench/replicas.py [--replicas 2] [--sessions 40] [--uploaders 6] [--trainers 2]

Last stdout line: one JSON object (``p50_ms``, ``p95_ms``, ``errors``, ``sessions_per_replica``,
``routing_violations``, ...). Needs HAProxy 2.4+ (``/usr/sbin/haproxy`` or ``$TP_HAPROXY``).
"""
from __future__ import annotations

import argparse
import io
import json
import os
import random
import re
import resource
import secrets
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: ``python bench/replicas.py``
    sys.path.insert(0, str(ROOT))

import requests  # noqa: E402  (a dependency of streamlit)
import websocket  # noqa: E402  (websocket-client, in requirements-dev.txt)
from requests.structures import CaseInsensitiveDict  # noqa: E402

from bench import load  # noqa: E402
from bench import server as _server  # noqa: E402
from streamlit.proto.BackMsg_pb2 import BackMsg  # noqa: E402
from streamlit.proto.Common_pb2 import FileURLs  # noqa: E402
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # noqa: E402
from streamlit.proto.WidgetStates_pb2 import WidgetState  # noqa: E402

HAPROXY = Path(os.environ.get("TP_HAPROXY", "/usr/sbin/haproxy"))
HAPROXY_CFG = ROOT / "deploy" / "haproxy.cfg"
PROXY_COOKIE = "TP_REPLICA"  # set by the proxy (deploy/haproxy.cfg: "cookie TP_REPLICA insert")
REPLICA_HEADER = "X-TP-Replica"  # the replica that answered (deploy/haproxy.cfg: "http-response set-header")
XSRF_COOKIE = "_streamlit_xsrf"
MODEL_WIDGET = "model"  # the sidebar's model selectbox (ui/models.py MODEL_STATE_KEY)
UPLOAD_WIDGET = "training.upload"  # the training page's file uploader (app_pages/training.py)
USE_BUTTON = "training.use"  # "use this model on the other pages"
NAME_WIDGET = "training.model_name"  # the name it gets
USER_KINDS = (*load.USER_KINDS, "upload")  # the reruns in p50/p95, as in bench/load.py (plus the upload's)
RECONNECT = "reconnect"  # the first rerun on a new websocket to an old session, reported apart
START_TIMEOUT_S = 120.0
PROXY_START_TIMEOUT_S = 20.0


def replica_name(i: int) -> str:
    """The proxy's name (and cookie value) of replica ``i`` (1-based), as in deploy/haproxy.cfg."""
    return f"replica{i}"


# ------------------------------------------------------------------ the replicas and the proxy


@dataclass
class Cluster:
    """Replicas (name -> direct URL, process) behind a proxy at ``proxy_url``."""

    proxy_url: str
    proxy: subprocess.Popen
    urls: dict[str, str]
    processes: dict[str, subprocess.Popen]
    stats_socket: Path | None = None

    def proxy_stats(self) -> list[dict[str, str]]:
        """HAProxy's ``show stat`` rows (needs the stats socket)."""
        if self.stats_socket is None:
            raise RuntimeError("the proxy was started without a stats socket")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect(str(self.stats_socket))
            sock.sendall(b"show stat\n")
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        lines = b"".join(chunks).decode().splitlines()
        header = lines[0].lstrip("# ").split(",")
        return [dict(zip(header, line.split(","))) for line in lines[1:] if line]


def start_proxy(replicas: dict[str, str], *, log_path: Path | None = None, stats_socket: Path | None = None,
                timeout_s: float = PROXY_START_TIMEOUT_S) -> tuple[subprocess.Popen, str]:
    """HAProxy on a free loopback port with ``deploy/haproxy.cfg``; ``(process, URL)`` once it
    routes to every replica (each ``replicaN`` cookie reaches its replica's ``/_stcore/health``)."""
    port = _server.free_port()
    env = {**os.environ, "TP_PROXY_BIND": f"127.0.0.1:{port}"}
    for name, url in replicas.items():
        env[f"TP_{name.upper()}"] = urllib.parse.urlsplit(url).netloc
    if stats_socket is not None:
        env["TP_PROXY_STATS_SOCKET"] = str(stats_socket)
    out = log_path.open("w") if log_path is not None else subprocess.DEVNULL
    proc = subprocess.Popen([str(HAPROXY), "-db", "-f", str(HAPROXY_CFG)], env=env, stdout=out,
                            stderr=subprocess.STDOUT, cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout_s
    pending = set(replicas)
    while pending and time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"haproxy exited with {proc.returncode}" + (f"; see {log_path}" if log_path else ""))
        for name in sorted(pending):
            try:
                response = requests.get(f"{url}/_stcore/health", cookies={PROXY_COOKIE: name}, timeout=2)
            except requests.RequestException:
                continue
            if response.status_code == 200 and response.headers.get(REPLICA_HEADER) == name:
                pending.discard(name)
        if pending:
            time.sleep(0.1)
    if pending:
        _server.stop_server(proc)
        raise RuntimeError(f"haproxy did not route to {sorted(pending)} in {timeout_s:.0f} s")
    return proc, url


@contextmanager
def replica_cluster(n: int = 2, *, env: dict[str, str] | None = None, log_dir: Path | None = None,
                    stats_socket: Path | None = None, new_session: bool = True) -> Iterator[Cluster]:
    """``n`` replicas of ``streamlit run app.py`` (started side by side, one cookie secret) behind
    HAProxy; everything started here is stopped on exit, whatever happens."""
    if not HAPROXY.exists():
        raise FileNotFoundError(f"{HAPROXY} is missing (Debian: apt-get install haproxy)")
    secret = secrets.token_hex(32)
    names = [replica_name(i) for i in range(1, n + 1)]
    replica_env = {**(env or {}), "STREAMLIT_SERVER_COOKIE_SECRET": secret}
    with ExitStack() as stack:
        def start(name: str) -> tuple[subprocess.Popen, str]:
            log_path = log_dir / f"{name}.log" if log_dir is not None else None
            return _server.start_server("app.py", env=replica_env, log_path=log_path, timeout_s=START_TIMEOUT_S,
                                        new_session=new_session)

        with ThreadPoolExecutor(max_workers=n) as pool:
            futures = {name: pool.submit(start, name) for name in names}
        started = {}
        for name, future in futures.items():  # register every started process before raising
            if future.exception() is None:
                proc, url = future.result()
                stack.callback(_server.stop_server, proc)
                started[name] = (proc, url)
        for future in futures.values():
            if future.exception() is not None:
                raise future.exception()
        urls = {name: url for name, (_, url) in started.items()}
        proxy, proxy_url = start_proxy(urls, log_path=log_dir / "haproxy.log" if log_dir is not None else None,
                                       stats_socket=stats_socket)
        stack.callback(_server.stop_server, proxy)
        yield Cluster(proxy_url, proxy, urls, {name: proc for name, (proc, _) in started.items()}, stats_socket)


# ------------------------------------------------------------------ one visitor through the proxy


@dataclass
class Upload:
    """One checkpoint upload: the HTTP status of its PUT, the replica that took it, milliseconds."""

    status: int
    replica: str | None
    ms: float


@dataclass
class ProxiedSession(load.Session):
    """A :class:`bench.load.Session` that reaches its server through a proxy, as a browser does:
    cookies on every request, the proxy's cookie first of all, and uploads beside the websocket."""

    replicas_seen: list[tuple[str, str | None]] = field(default_factory=list)  # (what, X-TP-Replica)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.http = requests.Session()  # the browser's cookie jar for this origin
        self.session_id = ""  # the server's id of this session (new_session.initialize)
        self.session_ids: list[str] = []  # every id the server announced, in order
        self.uploads: list[Upload] = []
        self._file_urls: dict[str, object] = {}  # request id -> FileURLsResponse

    @property
    def cookie(self) -> str | None:
        """The proxy's cookie (the replica this session belongs to), once set."""
        return self.http.cookies.get(PROXY_COOKIE)

    def _saw(self, what: str, headers) -> None:
        self.replicas_seen.append((what, CaseInsensitiveDict(headers or {}).get(REPLICA_HEADER)))

    def arrive(self) -> "ProxiedSession":
        """Load the page and Streamlit's health check (the cookies), then open the websocket."""
        for path in ("/", "/_stcore/health"):
            response = self.http.get(f"{self.url}{path}", timeout=self.request_timeout)
            self._saw(f"GET {path}", response.headers)
            if response.status_code != 200:
                raise load.SessionError(f"GET {path}: HTTP {response.status_code}")
        return self.connect()

    def connect(self, existing_session_id: str = "") -> "ProxiedSession":
        xsrf = self.http.cookies.get(XSRF_COOKIE, "")
        protocols = ["streamlit", xsrf or "", existing_session_id] if existing_session_id else ["streamlit", xsrf]
        cookies = "; ".join(f"{c.name}={c.value}" for c in self.http.cookies)
        try:
            self.ws = websocket.create_connection(load.ws_url(self.url), subprotocols=protocols, cookie=cookies,
                                                  origin=self.url, timeout=self.request_timeout)
        except (websocket.WebSocketException, OSError) as exc:
            raise load.SessionError(f"websocket handshake failed: {exc}") from None
        self._saw("websocket" if not existing_session_id else "websocket again", self.ws.headers)
        return self

    def reconnect(self) -> None:
        """Lose the connection (no closing handshake) and open a new websocket to the same session."""
        self.drop()
        self.connect(existing_session_id=self.session_id)

    def _handle(self, msg: ForwardMsg) -> None:
        kind = msg.WhichOneof("type")
        if kind == "new_session" and msg.new_session.initialize.session_id:
            self.session_id = msg.new_session.initialize.session_id
            if not self.session_ids or self.session_ids[-1] != self.session_id:
                self.session_ids.append(self.session_id)
        elif kind == "file_urls_response":
            self._file_urls[msg.file_urls_response.response_id] = msg.file_urls_response
        super()._handle(msg)

    def _send(self, msg: BackMsg) -> None:
        if self.ws is None:
            raise load.SessionError("not connected")
        try:
            self.ws.send_binary(msg.SerializeToString())
        except (websocket.WebSocketConnectionClosedException, ConnectionError, OSError) as exc:
            raise load.SessionError(f"disconnected while sending: {exc}") from None

    def upload(self, key: str, file_name: str, data: bytes) -> Upload:
        """Upload ``data`` as ``file_name`` through the file uploader ``key``, as the browser does."""
        widget = self.widgets.get(key)
        if widget is None or widget.type != "file_uploader":
            raise load.SessionError(f"no file uploader {key!r} on {self.current_path!r}")
        urls = self.file_urls(file_name)
        start = time.perf_counter()
        response = self.put_file(urls.upload_url, file_name, data)
        done = Upload(response.status_code, response.headers.get(REPLICA_HEADER), (time.perf_counter() - start) * 1e3)
        self.uploads.append(done)
        self._saw("PUT upload", response.headers)
        if response.status_code != 204:
            raise load.SessionError(f"upload PUT: HTTP {response.status_code} {response.text[:200]}")
        state = WidgetState(id=widget.id)
        info = state.file_uploader_state_value.uploaded_file_info.add()
        info.file_id, info.name, info.size = urls.file_id, file_name, len(data)
        info.file_urls.CopyFrom(urls)
        self.rerun("upload", extra=state, fragment_id=widget.fragment_id)
        return done

    def file_urls(self, file_name: str) -> FileURLs:
        """Ask the server where to upload ``file_name`` (``file_urls_request`` over the websocket)."""
        self._settle(self.request_timeout)
        request_id = uuid.uuid4().hex
        msg = BackMsg()
        msg.file_urls_request.request_id = request_id
        msg.file_urls_request.file_names.append(file_name)
        msg.file_urls_request.session_id = self.session_id
        self._send(msg)
        end = time.monotonic() + self.request_timeout
        while request_id not in self._file_urls:
            if time.monotonic() > end:
                raise load.SessionError("no file_urls_response")
            self._recv(min(end - time.monotonic(), 1.0))
        answer = self._file_urls.pop(request_id)
        if answer.error_msg or len(answer.file_urls) != 1:
            raise load.SessionError(f"file_urls_response: {answer.error_msg or len(answer.file_urls)}")
        return answer.file_urls[0]

    def put_file(self, upload_url: str, file_name: str, data: bytes, *,
                 cookies: dict[str, str] | None = None) -> requests.Response:
        """The upload's HTTP PUT (``cookies`` replace the jar's, to send it somewhere else on purpose)."""
        jar = cookies if cookies is not None else self.http.cookies
        return requests.put(urllib.parse.urljoin(self.url + "/", upload_url.lstrip("/")),
                            files={"file": (file_name, io.BytesIO(data), "application/octet-stream")},
                            headers={"X-Xsrftoken": self.http.cookies.get(XSRF_COOKIE, ""), "Origin": self.url},
                            cookies=jar, timeout=self.request_timeout)

    def type_text(self, key: str, text: str) -> float:
        """Type ``text`` into the text input ``key`` (the rerun a browser asks for when it loses focus)."""
        widget = self.widgets.get(key)
        if widget is None or widget.type not in ("text_input", "text_area"):
            raise load.SessionError(f"no text input {key!r} on {self.current_path!r}")
        return self.rerun("widget", extra=WidgetState(id=widget.id, string_value=text), fragment_id=widget.fragment_id)

    def model_names(self) -> list[str]:
        """The names in the sidebar's model list as last drawn (session models are labelled, so a
        label is matched by the name it contains)."""
        widget = self.widgets.get(MODEL_WIDGET)
        return list(widget.element.options) if widget is not None else []

    def has_model(self, name: str) -> bool:
        return any(re.search(rf"(^|\W){re.escape(name)}(\W|$)", label) for label in self.model_names())


# ------------------------------------------------------------------ many visitors


def small_checkpoint(seed: int = 0) -> bytes:
    """A small untrained checkpoint file (the tests' model, ``tests/untrained.py``), ~60 kB."""
    from model.checkpoint import save_checkpoint
    from model.tasks import DEFAULT_ALPHABET
    from tests.untrained import untrained_checkpoint

    ckpt = untrained_checkpoint(seed=seed)
    buffer = io.BytesIO()
    save_checkpoint(buffer, ckpt.model, ckpt.tokenizer,
                    {"name": "copy", "min_len": 1, "max_len": 10, "alphabet": DEFAULT_ALPHABET})
    return buffer.getvalue()


def _role(i: int, trainers: int, uploaders: int) -> str:
    return "trainer" if i < trainers else "uploader" if i < trainers + uploaders else "viewer"


def run_replicas(cluster: Cluster, *, sessions: int = 40, uploaders: int = 6, trainers: int = 2,
                 train_steps: int = 20, think: tuple[float, float] = (0.3, 1.0), ramp: float = 8.0,
                 reconnect_spread: float | None = None, timeout: float = 150.0,
                 request_timeout: float = load.REQUEST_TIMEOUT_S, seed: int = 0,
                 log: Callable[[str], None] = print) -> dict:
    """Drive ``sessions`` visitors through ``cluster``'s proxy; return the report (see the module doc).

    They arrive over ``ramp`` seconds; once all are connected they lose their connections and come
    back spread over ``reconnect_spread`` seconds (default: ``ramp``; 0: all at once, a Wi-Fi blip).
    """
    if sessions < 1 or trainers < 0 or uploaders < 0 or trainers + uploaders > sessions:
        raise ValueError("need sessions >= 1 and trainers + uploaders <= sessions")
    spread = ramp if reconnect_spread is None else reconnect_spread
    with ThreadPoolExecutor(max_workers=len(cluster.urls)) as pool:  # a server is started before the class
        orders = list(pool.map(lambda url: load.warm_up(url, request_timeout), cluster.urls.values()))
    order = orders[0]
    checkpoint = small_checkpoint(seed)
    hard_end = time.monotonic() + timeout
    stop = threading.Event()
    counts: dict[str, int | None] = {}

    def count_sessions() -> None:  # every visitor is connected: ask each replica itself
        counts.update({name: load.active_sessions(url) for name, url in cluster.urls.items()})

    gathered = threading.Barrier(sessions, action=count_sessions, timeout=timeout)
    visitors = [ProxiedSession(cluster.proxy_url, f"s{i:02d}", locale="zh-CN" if i % 3 == 2 else "en-US",
                               request_timeout=request_timeout, stop=stop, rng=random.Random(seed * 1000 + i))
                for i in range(sessions)]
    expected: dict[str, list[str]] = {s.name: [] for s in visitors}  # session -> its own models
    kept_after_rerun: dict[str, bool] = {}
    kept_after_reconnect: dict[str, bool] = {}
    training: dict[str, dict] = {}
    reached = [False] * sessions

    def wait_together(s: ProxiedSession) -> None:
        """Wait at the barrier for every session, answering the server meanwhile as an open tab does.

        The first sessions wait for the last ones to arrive (the ramp, longer on a busy machine);
        a client that stopped reading its socket for that long would miss the server's websocket
        pings and be dropped, which is the client's fault, not the replica's.
        """
        broken: list[threading.BrokenBarrierError] = []

        def wait() -> None:
            try:
                gathered.wait()
            except threading.BrokenBarrierError as exc:
                broken.append(exc)

        waiter = threading.Thread(target=wait, name=f"{s.name}-barrier", daemon=True)
        waiter.start()
        while waiter.is_alive() and not stop.is_set():
            s.idle(0.5)
        waiter.join()
        if broken:
            raise broken[0]

    def visit(i: int) -> None:
        s = visitors[i]
        rng = random.Random(seed * 1000 + i + 500)
        role = _role(i, trainers, uploaders)
        try:
            if stop.wait(ramp * i / sessions):
                return
            s.arrive()
            if role == "trainer":
                s.open(load.TRAINING_PATH, f"training_steps={train_steps}&training_size=tiny")
                s.click(load.START_BUTTON)
                s.watch_run(max(hard_end - time.monotonic(), 1.0))
                training[s.name] = {"state": s.run_stats[0] if s.run_stats else None,
                                    "step": s.run_stats[1] if s.run_stats else None}
                if USE_BUTTON not in s.widgets:  # the last live refresh was a fragment: draw the page
                    s.rerun("nav", page_hash=s.page_hash, query=s.query_string)
                s.type_text(NAME_WIDGET, f"{s.name}-trained")
                s.click(USE_BUTTON)
                expected[s.name] = [f"{s.name}-trained"]
            elif role == "uploader":
                s.open(load.TRAINING_PATH, "")
                s.idle(rng.uniform(*think))
                s.upload(UPLOAD_WIDGET, f"{s.name}-upload.pt", checkpoint)
                expected[s.name] = [f"{s.name}-upload"]
            else:
                s.open("", "")
                s.idle(rng.uniform(*think))
                s.change(load.PAGE_WIDGETS[""])
            s.idle(rng.uniform(*think))
            s.navigate(order[1])  # a later rerun, on another page
            kept_after_rerun[s.name] = all(s.has_model(name) for name in expected[s.name])
            reached[i] = True
            try:
                wait_together(s)
            except threading.BrokenBarrierError:
                s.errors.append(f"{s.name}: not every session was connected at once (another one failed)")
            s.idle(spread * i / sessions + rng.uniform(*think))
            s.reconnect()
            s.rerun(RECONNECT, page_hash=s.pages[order[2]], query="")
            kept_after_reconnect[s.name] = all(s.has_model(name) for name in expected[s.name])
        except load.SessionError as exc:
            if not stop.is_set():
                s.errors.append(f"{s.name}: {exc}")
        except Exception as exc:  # a client bug is reported, not hidden
            s.errors.append(f"{s.name}: client error {type(exc).__name__}: {exc}")
        finally:
            if not reached[i]:
                gathered.abort()  # the others must not wait for this one
            s.close()

    threads = [threading.Thread(target=visit, args=(i,), name=f"replicas-{i}", daemon=True) for i in range(sessions)]
    load_before = os.getloadavg()
    client_cpu_before = sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
    log(f"{len(cluster.urls)} replicas behind {cluster.proxy_url}; {sessions} sessions ({trainers} training "
        f"{train_steps} steps, {uploaders} uploading), think {think[0]:g}-{think[1]:g} s, "
        f"load average {load_before[0]:.2f}")
    started = time.monotonic()
    for th in threads:
        th.start()
    timed_out = []
    for i, th in enumerate(threads):
        th.join(max(hard_end - time.monotonic(), 0))
        if th.is_alive():
            timed_out.append(visitors[i].name)
    if timed_out:
        stop.set()
        gathered.abort()
        for th in threads:
            th.join(request_timeout + 5)
    wall = time.monotonic() - started
    return _report(cluster, visitors, order, expected, kept_after_rerun, kept_after_reconnect, training, counts,
                   timed_out, wall=wall, load_before=load_before, load_after=os.getloadavg(),
                   client_cpu=sum(resource.getrusage(resource.RUSAGE_SELF)[:2]) - client_cpu_before,
                   settings={"sessions": sessions, "uploaders": uploaders, "trainers": trainers,
                             "train_steps": train_steps, "think_s": list(think), "ramp_s": ramp,
                             "reconnect_spread_s": spread})


def _stats(values: list[float]) -> dict:
    return {"n": len(values), "p50_ms": load._ms(load.percentile(values, 50)),
            "p95_ms": load._ms(load.percentile(values, 95)), "max_ms": load._ms(max(values) if values else None)}


def _report(cluster: Cluster, visitors: list[ProxiedSession], order: list[str], expected: dict[str, list[str]],
            kept_after_rerun: dict[str, bool], kept_after_reconnect: dict[str, bool], training: dict[str, dict],
            counts: dict[str, int | None], timed_out: list[str], *, wall: float, load_before, load_after,
            client_cpu: float, settings: dict) -> dict:
    records = [r for s in visitors for r in s.records]
    user = [r.ms for r in records if r.kind in USER_KINDS]
    errors = [e for s in visitors for e in s.errors] + [f"{n}: still going at the hard timeout" for n in timed_out]
    by_cookie = {name: sorted(s.name for s in visitors if s.cookie == name) for name in cluster.urls}
    violations = [f"{s.name} (cookie {s.cookie}): {what} answered by {replica}"
                  for s in visitors for what, replica in s.replicas_seen if replica != s.cookie]
    owners = [s for s in visitors if expected[s.name]]
    uploads = [u for s in visitors for u in s.uploads]
    p95 = load.percentile(user, 95)
    report = {
        **settings, "replicas": len(cluster.urls), "wall_s": round(wall, 1), "pages": len(order),
        "reruns": len(user), "p50_ms": load._ms(load.percentile(user, 50)), "p95_ms": load._ms(p95),
        "max_ms": load._ms(max(user) if user else None),
        "by_kind": {kind: _stats([r.ms for r in records if r.kind == kind])
                    for kind in (*USER_KINDS, RECONNECT, "auto") if any(r.kind == kind for r in records)},
        "uploads": {**_stats([u.ms for u in uploads]), "statuses": sorted({u.status for u in uploads})},
        "errors": len(errors), "error_samples": errors[:10],
        "sessions_per_replica": {name: len(members) for name, members in by_cookie.items()},
        "active_sessions_per_replica": counts,
        "responses_checked": sum(len(s.replicas_seen) for s in visitors),
        "routing_violations": len(violations), "violation_samples": violations[:10],
        "sessions_without_cookie": sum(s.cookie is None for s in visitors),
        "sessions_reconnected_to_same_session": sum(len(s.session_ids) == 1 and s.name in kept_after_reconnect
                                                    for s in visitors),
        "model_owners": len(owners),
        "models_kept_after_rerun": sum(kept_after_rerun.get(s.name, False) for s in owners),
        "models_kept_after_reconnect": sum(kept_after_reconnect.get(s.name, False) for s in owners),
        "training": training,
        "loadavg_before": [round(x, 2) for x in load_before], "loadavg_after": [round(x, 2) for x in load_after],
        "client_cpu_s": round(client_cpu, 1), "cpus": os.cpu_count(), "target_p95_ms": load.TARGET_P95_MS,
    }
    report["ok"] = (not errors and not violations and p95 is not None and p95 < load.TARGET_P95_MS
                    and report["sessions_without_cookie"] == 0
                    and all(by_cookie.values()) and counts == report["sessions_per_replica"]
                    and report["sessions_reconnected_to_same_session"] == len(visitors)
                    and report["models_kept_after_reconnect"] == len(owners))
    return report


# ------------------------------------------------------------------ command line


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog="The last line of stdout is one JSON object: p50_ms, p95_ms, errors, "
                                       "sessions_per_replica, routing_violations and the rest.")
    p.add_argument("--replicas", type=int, default=2, help="app processes behind the proxy (1-4, default 2)")
    p.add_argument("--sessions", type=int, default=40, help="concurrent sessions (default 40)")
    p.add_argument("--uploaders", type=int, default=6, help="sessions that upload a checkpoint (default 6)")
    p.add_argument("--trainers", type=int, default=2, help="sessions that train a tiny model and use it (default 2)")
    p.add_argument("--train-steps", type=int, default=20, help="step cap of those runs (default 20)")
    p.add_argument("--think", type=float, nargs=2, default=(0.3, 1.0), metavar=("MIN", "MAX"),
                   help="seconds between two clicks, uniform in [MIN, MAX] (default 0.3 1)")
    p.add_argument("--ramp", type=float, default=8.0, help="seconds over which the sessions arrive (default 8)")
    p.add_argument("--reconnect-spread", type=float, default=None,
                   help="seconds over which the sessions reconnect (default: --ramp; 0: all at once)")
    p.add_argument("--timeout", type=float, default=150.0, help="hard limit for the load, seconds (default 150)")
    p.add_argument("--log-dir", type=Path, default=None, help="write replicaN.log and haproxy.log here")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if not 1 <= args.replicas <= 4:
        p.error("deploy/haproxy.cfg has lines for 1 to 4 replicas")
    if args.sessions < 1 or args.trainers < 0 or args.uploaders < 0 or args.trainers + args.uploaders > args.sessions:
        p.error("need --sessions >= 1 and --trainers + --uploaders <= --sessions")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.chdir(ROOT)
    if args.log_dir is not None:
        args.log_dir.mkdir(parents=True, exist_ok=True)
    with replica_cluster(args.replicas, env={"TP_TRAINING_DEBUG": "1"}, log_dir=args.log_dir) as cluster:
        report = run_replicas(cluster, sessions=args.sessions, uploaders=args.uploaders, trainers=args.trainers,
                              train_steps=args.train_steps, think=tuple(args.think), ramp=args.ramp,
                              reconnect_spread=args.reconnect_spread, timeout=args.timeout, seed=args.seed,
                              log=lambda line: print(line, flush=True))
    for kind, row in report["by_kind"].items():
        print(f"{kind:<9} n={row['n']:<5} p50 {row['p50_ms']:8.1f} ms   p95 {row['p95_ms']:8.1f} ms"
              f"   max {row['max_ms']:8.1f} ms", flush=True)
    for line in report["error_samples"] + report["violation_samples"]:
        print(f"error: {line}", flush=True)
    print(f"{report['sessions']} sessions on {report['sessions_per_replica']} (replicas count "
          f"{report['active_sessions_per_replica']}): p50 {report['p50_ms']} ms, p95 {report['p95_ms']} ms, "
          f"{report['errors']} errors, {report['routing_violations']} of {report['responses_checked']} responses "
          f"from another replica, {report['models_kept_after_reconnect']}/{report['model_owners']} models kept",
          flush=True)
    print(json.dumps(report, ensure_ascii=False))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())

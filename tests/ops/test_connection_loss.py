"""How soon the server notices a visitor who is gone while their run trains, through a TCP relay.

A session speaks the browser's protocol (``bench/load.py``) to a ``streamlit run app.py`` server
through a small loopback relay of this module, starts a long run, and then the relay either

* **cuts** the connection (closes both sides, as a proxy that gives up or a closed tab does): the
  server sees the close at once; or
* **freezes** it (stops forwarding, both sockets left open, as a laptop whose Wi-Fi died or a
  proxy that silently dropped the path): nothing tells the server, which finds out only when its
  websocket ping gets no pong. With ``server.websocketPingInterval = T`` (uvicorn then waits T
  seconds for the pong), that is between T and 2T seconds after the freeze.

Noticed means the server no longer counts the session as connected (``/_stcore/metrics``), which
is the moment Streamlit releases the session's cache and so stops the run; the test then checks
that no training thread is left.
"""
from __future__ import annotations

import socket
import threading
import time
import tomllib
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from bench import load
from tests.e2e import conftest as _conftest


ROOT = Path(__file__).resolve().parents[2]
PING_S = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())["server"]["websocketPingInterval"]
SLACK_S = 2.0  # scheduling on a busy 2-core machine
CUT_NOTICED_S = 2.0
STEP_SLACK_S = 5.0  # a noticed disconnect stops the run after its current step; a step on a busy machine


class Relay:
    """A loopback TCP relay to ``127.0.0.1:target_port`` whose connections can be cut or frozen."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.frozen = threading.Event()
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, name="relay-accept", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:  # the listener was closed
                return
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            self._sockets += [client, upstream]
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), name="relay-pump", daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        """Copy bytes from ``src`` to ``dst``; once frozen, read and drop them (no reply ever comes)."""
        while True:
            try:
                data = src.recv(65536)
                if not data:
                    break
                if not self.frozen.is_set():
                    dst.sendall(data)
            except OSError:
                break
        if not self.frozen.is_set():
            self._shut(dst)

    @staticmethod
    def _shut(sock: socket.socket) -> None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def cut(self) -> None:
        """Close every connection both ways (the server gets a FIN)."""
        for sock in self._sockets:
            self._shut(sock)

    def freeze(self) -> None:
        """Stop forwarding but keep every socket open: the server hears nothing, not even a close."""
        self.frozen.set()

    def close(self) -> None:
        self.listener.close()
        for sock in self._sockets:
            self._shut(sock)
            sock.close()


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, int]]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TP_TRAINING_DEBUG", "1")
        proc, url = _conftest.start_server("server-connection-loss")
    try:
        yield url, int(url.rsplit(":", 1)[1])
    finally:
        _conftest.stop_server(proc)


@contextmanager
def training_through(relay: Relay) -> Iterator[load.Session]:
    """A session, connected through ``relay``, whose run has trained a few steps."""
    session = load.Session(f"http://127.0.0.1:{relay.port}", "cut-off", request_timeout=120).connect()
    try:
        session.open("training", "training_steps=20000")
        session.click(load.START_BUTTON)
        end = time.monotonic() + 60
        while time.monotonic() < end and not (session.run_stats and session.run_stats[0] == "running"
                                              and session.run_stats[1] >= 3):
            session.idle(0.3)
        assert session.errors == [], session.errors
        assert session.run_stats and session.run_stats[0] == "running", session.run_stats
        yield session
    finally:
        session.drop()
        relay.close()


def seconds_until_noticed(url: str, limit: float) -> float:
    """Seconds until the server counts no connected session (at most ``limit``)."""
    started = time.monotonic()
    while load.active_sessions(url) != 0 and time.monotonic() - started < limit:
        time.sleep(0.1)
    return time.monotonic() - started


def training_threads_alive(url: str) -> int:
    probe = load.Session(url, "probe").connect()
    try:
        probe.open("training", "lang=en")
        assert probe.threads_alive is not None, "the training page printed no training-threads-alive line"
        return probe.threads_alive
    finally:
        probe.close()


def wait_for_no_training(url: str, limit: float) -> int:
    """The training threads still alive after waiting up to ``limit`` seconds for them to end."""
    end = time.monotonic() + limit
    while (alive := training_threads_alive(url)) and time.monotonic() < end:
        time.sleep(0.2)
    return alive


def test_the_server_pings_often_enough_to_notice_a_dead_connection():
    assert isinstance(PING_S, int) and 1 <= PING_S <= 10  # noticed within 2 * PING_S seconds


@pytest.mark.parametrize("how, limit", [("cut", CUT_NOTICED_S), ("freeze", 2 * PING_S + SLACK_S)])
def test_a_lost_connection_is_noticed_in_time_and_its_run_stops(server, how, limit):
    url, port = server
    relay = Relay(port)
    with training_through(relay):
        assert load.active_sessions(url) == 1
        getattr(relay, how)()
        noticed = seconds_until_noticed(url, limit + 30)
    print(f"{how}: noticed after {noticed:.1f} s (ping interval {PING_S} s)")
    assert noticed <= limit, f"{how}: the server noticed only after {noticed:.1f} s"
    assert wait_for_no_training(url, STEP_SLACK_S) == 0  # its run was stopped (at most one step later)

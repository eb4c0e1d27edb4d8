"""Starting and stopping a ``streamlit run`` server on 127.0.0.1 for the benchmarks.

One place for what every benchmark does before measuring: pick a free port, start the server
headless (in a process session of its own, so that with Linux's autogroup scheduling the clients
in the benchmark's process do not take the CPU from it unfairly; in a classroom the browsers run
on other computers), wait until ``/_stcore/health`` answers, and stop it afterwards::

    from bench.server import serving

    with serving("app.py", env={"TP_TRAINING_DEBUG": "1"}) as url:
        ...
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 120
STREAMLIT_RUN: tuple[str, ...] = (sys.executable, "-m", "streamlit", "run")


def logged_tracebacks(path: Path, limit: int = 4000) -> str:
    """The tracebacks a server wrote to its log at ``path`` (``ui.page_errors`` logs what a visitor sees as one
    sentence), the last ``limit`` characters: for a failure's message."""
    text = path.read_text(errors="replace") if path.exists() else ""
    start = text.find("Traceback")
    return text[start:][-limit:] if start >= 0 else "(no traceback in the server's log)"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(script: str | Path = "app.py", *, launcher: Sequence[str] = STREAMLIT_RUN,
                 env: dict[str, str] | None = None, extra_args: Sequence[str] = (),
                 log_path: Path | None = None, timeout_s: float = START_TIMEOUT_S,
                 new_session: bool = True) -> tuple[subprocess.Popen, str]:
    """``launcher + [script, server options]`` on a free port; ``(process, base URL)`` once healthy.

    ``launcher`` is ``python -m streamlit run`` unless given; its output goes to ``log_path`` (default: discarded). ``new_session=False``
    keeps the server in the caller's process group (the tests: a Ctrl-C stops it too).
    """
    port = free_port()
    out = log_path.open("w") if log_path is not None else subprocess.DEVNULL
    proc = subprocess.Popen(
        [*launcher, str(script), "--server.port", str(port), "--server.address", "127.0.0.1",
         "--server.headless", "true", *extra_args],
        cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}, stdout=out,
        stderr=subprocess.STDOUT, start_new_session=new_session,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{Path(script).name}: streamlit exited with {proc.returncode}"
                               + (f"; see {log_path}" if log_path else ""))
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return proc, url
        except OSError:
            time.sleep(0.05)
    stop_server(proc)
    raise RuntimeError(f"{Path(script).name}: streamlit did not become healthy in {timeout_s:.0f} s")


def stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@contextmanager
def serving(script: str | Path = "app.py", **options) -> Iterator[str]:
    """:func:`start_server` as a context manager yielding the base URL; the server stops on exit."""
    proc, url = start_server(script, **options)
    try:
        yield url
    finally:
        stop_server(proc)

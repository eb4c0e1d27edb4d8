"""Run a learner's Python / PyTorch function outside the server's process, under limits the operating system enforces.

    result = run(source, [Call("softmax", (np.ones((2, 3), np.float32),))])
    result.ok, result.outputs[0].value   # True, array([[0.333.., ...]])

The learner's code runs in ``sandbox.worker`` processes inside bubblewrap: every namespace unshared (no network, its
own pid / ipc / uts / user / cgroup namespaces), user nobody without capabilities, the environment cleared, only the
interpreter, its packages, /usr and the project's ``sandbox`` / ``model`` / ``explain`` bound, and everything
read-only. Each run is a child process under resource limits and a seccomp filter, watched by its own supervisor
(``sandbox.worker``'s docstring has the details). The server's side is a backstop deadline: past it the whole
sandbox is killed and started again.

Warm path: the sandbox's mother process (started by the first ``run`` or by ``prestart()``) has torch imported and
forks a fresh supervisor and child per run, so a warm check pays only the forks. Nothing of one learner's run is left
for the next: the mother never touches requests or answers, and nothing in the sandbox is writable.

Nothing here decides WHO may run code: ask ``sandbox.policy.allowed`` first.
"""
from __future__ import annotations

import atexit
import functools
import logging
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sandbox import worker

PROJECT = Path(__file__).resolve().parents[1]
INSIDE_PROJECT = "/app"  # where sandbox/, model/, explain/ appear inside the sandbox (read-only)
BOUND_PACKAGES = ("sandbox", "model", "explain")
SHIPPED_MODELS = "assets/checkpoints"
STARTUP_S = 60.0  # time a cold sandbox may take to import torch, on top of the run's own timeout
MAX_AT_ONCE = max(2, os.cpu_count() or 1)  # runs at once per server process, more wait (each may take ~1 GB)
ERROR_KINDS = ("timeout", "memory", "crashed", "output_too_large", "not_allowed", "syntax", "no_function",
               "exception", "unavailable")

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Call:
    """One call of the learner's ``function``: arguments are numpy arrays (turned into torch tensors of the same
    dtype inside), numbers, str, bool, None, and lists / tuples / dicts of them."""
    function: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Output:
    """What one call gave: ``value`` (numpy arrays and plain values, as returned), or ``kind`` and ``message``
    (``"exception"``, ``"not_allowed"``, ``"memory"``, ``"unsupported_result"``) when it raised."""
    value: Any = None
    kind: str | None = None
    message: str | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.kind is None


@dataclass(frozen=True)
class RunError:
    kind: str  # one of ERROR_KINDS
    message: str  # one plain sentence, no paths, no traceback


@dataclass(frozen=True)
class Result:
    """``ok``: the run finished and every call returned. ``error``: the whole run failed (then ``outputs`` is
    empty). ``printed``: the first few kB the learner's code printed. ``seconds``: the wall time of the run."""
    outputs: list[Output]
    error: RunError | None = None
    printed: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None and all(output.ok for output in self.outputs)


def bwrap() -> str | None:
    """The bubblewrap executable, or None."""
    return shutil.which("bwrap") or ("/usr/bin/bwrap" if os.access("/usr/bin/bwrap", os.X_OK) else None)


def command(socket_fd: int) -> list[str]:
    """The bubblewrap command line that starts the sandbox's mother process, listening on ``socket_fd``."""
    binds: list[str] = []
    for top in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            binds += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            binds += ["--ro-bind", top, top]
    for path in {sys.base_prefix, sys.prefix, os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix)}:
        if not path.startswith("/usr"):
            binds += ["--ro-bind", path, path]
    for name in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/localtime"):
        if os.path.exists(name):
            binds += ["--ro-bind", name, name]
    for package in BOUND_PACKAGES:
        binds += ["--ro-bind", str(PROJECT / package), f"{INSIDE_PROJECT}/{package}"]
    if (PROJECT / SHIPPED_MODELS).is_dir():  # "use mine" runs a shipped model (read-only, nothing else of assets/)
        binds += ["--ro-bind", str(PROJECT / SHIPPED_MODELS), f"{INSIDE_PROJECT}/{SHIPPED_MODELS}"]
    environment = {"PYTHONPATH": INSIDE_PROJECT, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1",
                   "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1",
                   "MKL_NUM_THREADS": "1", "PATH": "/usr/bin"}
    env_args = [arg for name, value in environment.items() for arg in ("--setenv", name, value)]
    return [bwrap() or "bwrap",
            # every namespace (net, pid, ipc, uts, user, cgroup); the worker is pid 1 of its own pid namespace
            "--unshare-all", "--die-with-parent", "--new-session", "--as-pid-1",
            # nobody, without capabilities (even when the server runs as root)
            "--cap-drop", "ALL", "--uid", "65534", "--gid", "65534",
            # an empty /tmp first, so that the binds may land inside it (a clone and its venv under /tmp)
            "--clearenv", *env_args, "--tmpfs", "/tmp", *binds, "--proc", "/proc", "--dev", "/dev",
            # nothing writable: /tmp, /dev and / all read-only
            "--remount-ro", "/tmp", "--remount-ro", "/dev", "--remount-ro", "/", "--chdir", "/tmp",
            "--hostname", "sandbox",
            sys.executable, "-B", "-m", "sandbox.worker", str(socket_fd)]


class Mother:
    """The sandbox's long-lived process (``sandbox.worker.main``, torch imported), started lazily: nothing starts
    before the first ``run`` or ``prestart``. It forks one supervisor per run, so a warm check pays only a fork.

    It is started from one long-lived thread: bubblewrap's ``--die-with-parent`` (PR_SET_PDEATHSIG) fires when the
    THREAD that started it ends, and a Streamlit script thread ends after each rerun."""

    def __init__(self):
        self.lock = threading.Lock()
        self.process: subprocess.Popen | None = None
        self.channel: socket.socket | None = None
        self.started = 0.0
        self.spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sandbox-spawner")

    def _start(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with theirs:
            self.process = subprocess.Popen(command(theirs.fileno()), stdin=subprocess.DEVNULL,
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                            pass_fds=(theirs.fileno(),), start_new_session=True, env={})
        self.channel, self.started = ours, time.monotonic()

    def ensure(self) -> None:
        with self.lock:
            if self.process is None or self.process.poll() is not None:
                self._stop()
                self.spawner.submit(self._start).result()

    def send(self, fds: list[int]) -> float:
        """Hand one run's two pipe ends to the mother; the seconds it has been starting (torch import) so far."""
        for attempt in (1, 2):
            self.ensure()
            with self.lock:
                try:
                    socket.send_fds(self.channel, [b"r"], fds)
                    return time.monotonic() - self.started
                except OSError:
                    if attempt == 2:
                        raise
                    self._stop()
        raise AssertionError("unreachable")

    def pids(self) -> set[int]:
        """bubblewrap's process and the mother inside it (tests tell them from leftovers)."""
        with self.lock:
            if self.process is None or self.process.poll() is not None:
                return set()
            outer = self.process.pid
        return {outer, *children(outer)}

    def restart(self) -> None:
        """Kill the sandbox with every run in it (a run past the server's own deadline)."""
        with self.lock:
            self._stop()

    def _stop(self) -> None:
        if self.process is not None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.process.wait()
        if self.channel is not None:
            self.channel.close()
        self.process = self.channel = None

    close = restart


def children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _write(fd: int, data: bytes) -> None:
    try:
        with open(fd, "wb") as pipe:
            pipe.write(data)
    except OSError:
        pass


def exchange(answers: int, deadline: float) -> bytes | None:
    """The answer (a tag byte and one frame) read from fd ``answers``; None past ``deadline``."""
    data = bytearray()
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select([answers], [], [], left)
        if not ready:
            continue
        chunk = os.read(answers, 1 << 20)
        if not chunk:
            return bytes(data)
        data += chunk
        if len(data) > worker.MAX_RESPONSE_BYTES + (1 << 20):
            return b"E" + worker.encode({"kind": "output_too_large", "message": "the result is too large"})
        try:
            whole = worker.frame_size(data, start=1)
        except (ValueError, struct.error, UnicodeDecodeError):
            return bytes(data)  # not a frame: the caller reports it
        if whole is not None:
            return bytes(data[:1 + whole])


MOTHER = Mother()
atexit.register(MOTHER.close)
_turns = threading.BoundedSemaphore(MAX_AT_ONCE)


@functools.cache
def available() -> bool:
    """Whether learner code can run here: bubblewrap present and able to make its namespaces (asked once)."""
    if bwrap() is None:
        return False
    try:
        done = subprocess.run([bwrap(), "--unshare-all", "--die-with-parent", "--cap-drop", "ALL", "--uid", "65534",
                               "--gid", "65534", "--ro-bind", "/", "/", "true"],
                              capture_output=True, timeout=10, env={})
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


MOTHER_STARTING = threading.Event()  # set once a prestart was asked for (the server's first exercise page)


def prestart() -> None:
    """Start the warm worker now (e.g. when a page with an exercise opens and ``policy.allowed`` said yes)."""
    if available():
        MOTHER.ensure()


def run(source: str, calls: list[Call], *, timeout_s: float = 10.0, entry: str | None = None) -> Result:
    """Run ``source`` (the learner's module) in a sandboxed process, then each of ``calls``; never raises for what the
    learner's code does. ``entry`` ("package.module:function", trusted project code) wraps every call:
    ``entry(learner_function, *args, **kwargs)`` (the extension point for "use mine")."""
    started = time.monotonic()
    if not available():
        return Result([], RunError("unavailable", "learner code cannot run on this server (no working bubblewrap)"))
    try:
        request = worker.encode({"source": source, "timeout_s": timeout_s, "entry": entry,
                                 "calls": [{"function": c.function, "args": tuple(c.args), "kwargs": dict(c.kwargs)}
                                           for c in calls]})
    except TypeError as error:
        raise TypeError(f"a call's arguments cannot be sent to the sandbox: {error}") from None
    with _turns:
        request_in, request_out = os.pipe()
        answer_in, answer_out = os.pipe()
        try:
            starting_for = MOTHER.send([request_in, answer_out])
        finally:
            os.close(request_in)
            os.close(answer_out)
        writer = threading.Thread(target=_write, args=(request_out, request), daemon=True)
        writer.start()
        deadline = time.monotonic() + timeout_s + 5.0 + max(0.0, STARTUP_S - starting_for)
        try:
            answer = exchange(answer_in, deadline)
        finally:
            os.close(answer_in)
        if answer is None:
            MOTHER.restart()  # the supervisor missed its own deadline: start over
    seconds = time.monotonic() - started
    if answer is None:
        return Result([], RunError("timeout", f"the code ran longer than {timeout_s:g} seconds"), seconds=seconds)
    try:
        tag, body = answer[:1], worker.decode(answer[1:])
        if tag == b"E":
            return Result([], RunError(str(body["kind"]), str(body["message"])), seconds=seconds)
        if tag != b"A":
            raise ValueError("unknown answer")
        error = body["error"] and RunError(str(body["error"]["kind"]), str(body["error"]["message"]))
        outputs = [Output(value=o.get("value"), kind=o.get("kind"), message=o.get("message"),
                          seconds=float(o.get("seconds", 0.0))) for o in body["outputs"]] if not error else []
        printed = str(body.get("printed", ""))
        if body.get("printed_dropped"):
            printed += f"\n... ({int(body['printed_dropped'])} more characters not shown)"
        return Result(outputs, error, printed, seconds)
    except (ValueError, KeyError, TypeError, AttributeError, struct.error):
        _log.warning("sandbox worker gave no readable answer (%d bytes)", len(answer))
        return Result([], RunError("crashed", "the code's process stopped without a readable answer"),
                      seconds=seconds)

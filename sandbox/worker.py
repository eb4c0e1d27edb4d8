"""The process that runs a learner's code: started by ``sandbox.runner`` inside bubblewrap, never imported by the server
for anything but the wire format (``encode`` / ``decode``, numpy and the standard library only).

Three generations, all inside one bubblewrap sandbox, none but the last ever running learner code:

1. The mother (``main``) imports torch (one thread) once and waits on a unix socket: this is the *warm* state. Per
   request the runner sends it two pipe descriptors; it forks a supervisor with them, closes its copies, and waits for
   the next. It never reads a request or an answer, so nothing of one run is in the memory later runs are forked from.
2. The supervisor (``answer``, trusted code only) makes itself undumpable, reads the request (the wire format below)
   from its pipe, forks the child, reads the child's answer (at most ``MAX_RESPONSE_BYTES``), kills it at the
   wall-clock deadline, and writes exactly one response frame on its answer pipe, naming what happened (answered,
   timeout, memory, crashed, output_too_large). Then it exits.
3. The child makes itself undumpable, closes the supervisor's descriptors, points fds 0-2 at /dev/null, sets its
   resource limits (``limit_resources``), installs the seccomp filter (``deny_syscalls``), and only then compiles and
   runs the learner's source: ``exec`` in a fresh namespace, then one call per requested ``Call``. Inputs arrive as
   numpy arrays and are turned into torch tensors (dtype kept); what the function returns goes back as numpy arrays
   and plain values.

Runs that overlap are siblings in one pid namespace: they are undumpable, have no capabilities and may signal only
themselves, so none can read, write or stop another; nothing in the sandbox is writable (/tmp too), so none leaves
a file for another.

Extension point (the lead's "use mine"): a request may carry ``"entry": "package.module:function"`` naming a TRUSTED
function in the project (``model`` / ``explain`` are bound read-only inside the sandbox). The worker imports it before
the filter is installed, and each call then runs ``entry(learner_function, *args, **kwargs)`` instead of
``learner_function(*args, **kwargs)``: the project's code drives the learner's function inside the same limits.

Wire format (both directions; never pickle): ``u64 length + JSON header``, then per array ``u64 length + .npy bytes``
(``np.save`` / ``np.load(allow_pickle=False)``). In the JSON an array is ``{"__array__": i}``, a tuple
``{"__tuple__": [...]}``, a dict ``{"__dict__": [[key, value], ...]}``; lists, str, int, float (NaN too), bool and None
are themselves.
"""
from __future__ import annotations

import io
import json
import os
import re
import select
import signal
import struct
import sys
import time

import numpy as np

MAX_RESPONSE_BYTES = 64 * 1024 * 1024  # what a run may send back (arrays included)
MAX_PRINTED_CHARS = 4096  # what the learner's print()s keep; the rest is counted and dropped
CPU_SECONDS = 5  # RLIMIT_CPU of the child (the torch import happened in the parent and does not count)
MEMORY_BYTES = 1024 * 1024 * 1024  # RLIMIT_AS headroom above what the forked child already maps (torch: ~0.6 GB)
NICENESS = 5  # a learner's check yields the CPU to the class's page reruns (about a quarter share against them)
FILE_BYTES = 0  # RLIMIT_FSIZE: no file content at all (and the whole sandbox is mounted read-only)
OPEN_FILES = 64  # RLIMIT_NOFILE
SOURCE_NAME = "<exercise>"  # the filename the learner's code is compiled under (tracebacks point at its lines)

# Syscalls the child may not make. Each fails with EPERM (Python raises PermissionError); the rest of the kernel
# interface is allowed. Network and mounts are also cut by bubblewrap's namespaces; this list is the second wall.
DENIED_SYSCALLS = (
    # new processes and threads (torch runs with one thread: it never needs clone after import)
    "fork", "vfork", "clone", "clone3", "execve", "execveat",
    # network, including local sockets
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
    # other processes' memory, namespaces, the kernel
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_open", "pidfd_getfd", "pidfd_send_signal",
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "move_mount", "open_tree", "fsopen", "fsmount",
    "fspick", "mount_setattr", "swapon", "swapoff", "reboot", "init_module", "finit_module", "delete_module",
    "kexec_load", "kexec_file_load", "bpf", "perf_event_open", "keyctl", "add_key", "request_key", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "personality", "acct", "quotactl", "settimeofday",
    "clock_settime", "adjtimex", "sethostname", "setdomainname", "syslog", "vhangup", "lookup_dcookie",
    "name_to_handle_at", "open_by_handle_at",
)
SIGNAL_SYSCALLS = ("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")  # allowed to itself only


# ---------------------------------------------------------------- wire format (runner and worker)

def encode(value) -> bytes:
    """``value`` (plain values, numpy arrays, lists / tuples / dicts of them) as one frame."""
    arrays: list[np.ndarray] = []

    def plain(v):
        if isinstance(v, np.ndarray):
            arrays.append(v)
            return {"__array__": len(arrays) - 1}
        if isinstance(v, np.generic):
            return v.item()
        if isinstance(v, tuple):
            return {"__tuple__": [plain(x) for x in v]}
        if isinstance(v, list):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {"__dict__": [[plain(k), plain(x)] for k, x in v.items()]}
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        raise TypeError(f"cannot send a {type(v).__name__}")

    header = json.dumps(plain(value)).encode()
    parts = [struct.pack("<Q", len(header)), header]
    for array in arrays:
        buffer = io.BytesIO()
        np.save(buffer, np.ascontiguousarray(array).reshape(array.shape), allow_pickle=False)  # 0-d stays 0-d
        parts += [struct.pack("<Q", buffer.tell()), buffer.getvalue()]
    return b"".join(parts)


def decode(data: bytes):
    """The value ``encode`` framed; ValueError if ``data`` is not one well-formed frame."""
    view = memoryview(data)
    offset = 0

    def take() -> memoryview:
        nonlocal offset
        if offset + 8 > len(view):
            raise ValueError("truncated frame")
        (size,) = struct.unpack_from("<Q", view, offset)
        if offset + 8 + size > len(view):
            raise ValueError("truncated frame")
        offset += 8 + size
        return view[offset - size:offset]

    header = json.loads(bytes(take()))
    arrays = []

    def value(v):
        if isinstance(v, list):
            return [value(x) for x in v]
        if isinstance(v, dict):
            if "__array__" in v:
                while len(arrays) <= v["__array__"]:
                    arrays.append(np.load(io.BytesIO(bytes(take())), allow_pickle=False))
                return arrays[v["__array__"]]
            if "__tuple__" in v:
                return tuple(value(x) for x in v["__tuple__"])
            if "__dict__" in v:
                return {value(k): value(x) for k, x in v["__dict__"]}
            raise ValueError("unknown tag in frame")
        return v

    result = value(header)
    if offset != len(view):
        raise ValueError("trailing bytes after frame")
    return result


def frame_size(data, start: int = 0) -> int | None:
    """The length of the frame at ``data[start:]``, or None while ``data`` holds only part of it."""
    if len(data) < start + 8:
        return None
    (size,) = struct.unpack_from("<Q", data, start)
    offset = start + 8 + size
    if len(data) < offset:
        return None
    for _ in range(count_arrays(json.loads(bytes(data[start + 8:offset])))):
        if len(data) < offset + 8:
            return None
        offset += 8 + struct.unpack_from("<Q", data, offset)[0]
    return offset - start if len(data) >= offset else None


def read_frame(fd: int, limit: int) -> bytes:
    """One frame from ``fd`` (blocking), at most ``limit`` bytes; ValueError when larger or cut short."""
    data = b""
    while (size := frame_size(data)) is None:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            raise ValueError("stream ended inside a frame")
        data += chunk
        if len(data) > limit:
            raise ValueError("frame too large")
    return data[:size]


def count_arrays(v) -> int:
    if isinstance(v, list):
        return sum(count_arrays(x) for x in v)
    if isinstance(v, dict):
        return 1 if "__array__" in v else sum(count_arrays(x) for x in v.values())
    return 0


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


# ---------------------------------------------------------------- messages (one sentence, no server paths)

def learner_line(tb) -> int | None:
    """The deepest line of the learner's source in traceback ``tb``."""
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == SOURCE_NAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def without_paths(text: str) -> str:
    """``text`` with any absolute file path cut to its last part, on one line, at most 300 characters."""
    text = re.sub(r"(?:/[\w.+\-@]+){2,}/?", lambda m: m.group(0).rstrip("/").rsplit("/", 1)[-1], text)
    text = " ".join(text.split())
    return text if len(text) <= 300 else text[:297] + "..."


def describe(error: BaseException) -> str:
    """``"NameError: name 'x' is not defined (line 4)"``: the exception in one sentence, at the learner's line."""
    if isinstance(error, SyntaxError):
        line = error.lineno if error.filename == SOURCE_NAME else None
        message = f"SyntaxError: {error.msg}"
    else:
        line = learner_line(error.__traceback__)
        message = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    message = without_paths(message)
    return f"{message} (line {line})" if line else message


def error_kind(error: BaseException) -> str:
    if isinstance(error, MemoryError) or (isinstance(error, RuntimeError) and "alloc" in str(error).lower()):
        return "memory"
    if isinstance(error, (PermissionError, BlockingIOError)) or (
            isinstance(error, OSError) and error.errno in (1, 13, 30)):  # EPERM, EACCES, EROFS
        return "not_allowed"
    return "exception"


# ---------------------------------------------------------------- the child: limits, filter, learner code

class Printed(io.TextIOBase):
    """A stdout / stderr that keeps the first ``MAX_PRINTED_CHARS`` characters and counts the rest."""

    def __init__(self):
        self.kept, self.dropped = [], 0
        self.size = 0

    def writable(self):
        return True

    def write(self, text):
        text = str(text)
        room = MAX_PRINTED_CHARS - self.size
        if room > 0:
            self.kept.append(text[:room])
            self.size += len(self.kept[-1])
        self.dropped += max(0, len(text) - max(room, 0))
        return len(text)

    def text(self) -> str:
        return "".join(self.kept)


def limit_resources() -> None:
    """The operating system's limits on this (child) process, set before any learner code runs."""
    import resource

    mapped = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
    highest_fd = max((int(name) for name in os.listdir("/proc/self/fd")), default=2)
    os.nice(NICENESS)  # before the limits and the filter: the learner cannot undo it (raising priority needs a capability)
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS + 1))  # SIGXCPU, then SIGKILL a second later
    for limit, value in (
            (resource.RLIMIT_AS, mapped + MEMORY_BYTES),
            (resource.RLIMIT_FSIZE, FILE_BYTES),
            (resource.RLIMIT_NOFILE, max(OPEN_FILES, highest_fd + 1)),
            (resource.RLIMIT_NPROC, 0),
            (resource.RLIMIT_CORE, 0),
            (resource.RLIMIT_MEMLOCK, 0),
    ):
        resource.setrlimit(limit, (value, value))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a too-large write raises OSError instead of killing


def deny_syscalls() -> None:
    """Install the seccomp filter (libseccomp through pyseccomp): ``DENIED_SYSCALLS`` fail with EPERM, signals only
    to this process itself. Other architectures' syscall tables are refused by libseccomp's default (kill)."""
    import errno

    import pyseccomp as seccomp

    denied = seccomp.ERRNO(errno.EPERM)
    rules = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    for name in DENIED_SYSCALLS:
        try:
            rules.add_rule(denied, name)
        except (OSError, RuntimeError, ValueError):  # a syscall this kernel / architecture does not have
            pass
    me = os.getpid()
    for name in SIGNAL_SYSCALLS:
        rules.add_rule(denied, name, seccomp.Arg(0, seccomp.NE, me))
    rules.load()


def to_torch(value, torch):
    if isinstance(value, np.ndarray) and value.dtype.kind in "fiub" and value.dtype.names is None:
        try:
            return torch.from_numpy(value.copy())
        except TypeError:
            return value
    if isinstance(value, list):
        return [to_torch(v, torch) for v in value]
    if isinstance(value, tuple):
        return tuple(to_torch(v, torch) for v in value)
    if isinstance(value, dict):
        return {k: to_torch(v, torch) for k, v in value.items()}
    return value


def to_plain(value, torch, depth: int = 0):
    """What the learner's function returned, as numpy arrays and plain values; TypeError for anything else."""
    if depth > 8:
        raise TypeError("the result is nested too deeply")
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        if value.dtype in (torch.bfloat16,) or value.is_complex():
            value = value.float() if not value.is_complex() else value
        return value.resolve_conj().numpy().copy()
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise TypeError("the function returned an array of Python objects")
        return value
    if isinstance(value, (list, tuple)):
        items = [to_plain(v, torch, depth + 1) for v in value]
        return tuple(items) if isinstance(value, tuple) else items
    if isinstance(value, dict):
        return {str(k): to_plain(v, torch, depth + 1) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"the function returned a {type(value).__name__}, not a tensor, number or list of them")


def child(request: dict, out_fd: int) -> None:
    """Run the learner's code on the request's calls and write the answer to ``out_fd``. Never returns."""
    import importlib

    import torch

    printed = Printed()
    sys.stdout = sys.stderr = printed
    answer: dict = {"error": None, "outputs": [], "printed": "", "printed_dropped": 0}
    try:
        entry = None
        if request.get("entry"):  # trusted project code, imported before the filter
            module, _, name = request["entry"].partition(":")
            entry = getattr(importlib.import_module(module), name)
        limit_resources()
        deny_syscalls()
        namespace = {"__name__": "exercise", "__builtins__": __builtins__, "torch": torch, "math": __import__("math")}
        try:
            exec(compile(request["source"], SOURCE_NAME, "exec"), namespace)
        except SyntaxError as error:
            answer["error"] = {"kind": "syntax", "message": describe(error)}
        except BaseException as error:  # noqa: BLE001 - anything the learner's module code raises
            answer["error"] = {"kind": error_kind(error), "message": describe(error)}
        for call in request["calls"] if answer["error"] is None else []:
            function = namespace.get(call["function"])
            if not callable(function):
                answer["error"] = {"kind": "no_function",
                                   "message": f"the code defines no function named {call['function']!r}"}
                answer["outputs"] = []
                break
            started = time.perf_counter()
            try:
                args = to_torch(call["args"], torch)
                kwargs = to_torch(call["kwargs"], torch)
                value = entry(function, *args, **kwargs) if entry else function(*args, **kwargs)
                output = {"value": to_plain(value, torch)}
            except BaseException as error:  # noqa: BLE001
                if isinstance(error, TypeError) and str(error).startswith("the function returned"):
                    output = {"kind": "unsupported_result", "message": str(error)}
                else:
                    output = {"kind": error_kind(error), "message": describe(error)}
            output["seconds"] = time.perf_counter() - started
            answer["outputs"].append(output)
        answer["printed"], answer["printed_dropped"] = printed.text(), printed.dropped
        try:
            data = encode(answer)
        except (TypeError, ValueError) as error:
            data = encode({"error": {"kind": "crashed", "message": without_paths(str(error))}, "outputs": []})
        write_all(out_fd, data)
        os._exit(0)
    except MemoryError:
        os._exit(3)
    except BaseException:  # noqa: BLE001 - the child must never return into the supervisor's code
        os._exit(4)


# ---------------------------------------------------------------- the supervisor (trusted; never runs learner code)

def undumpable() -> None:
    """PR_SET_DUMPABLE 0: no other process of the same user (without capabilities, as in the sandbox) may open this
    one's /proc/<pid>/mem, fd/ or environ, nor ptrace it."""
    import ctypes

    if ctypes.CDLL(None).prctl(4, 0, 0, 0, 0) != 0:
        raise OSError("prctl(PR_SET_DUMPABLE) failed")


def supervise(request: dict, keep_out: tuple[int, ...] = ()) -> dict:
    """Fork the child for ``request``, collect its answer within the deadline, and say what happened. ``keep_out``:
    the supervisor's own descriptors, closed in the child."""
    timeout_s = float(request.get("timeout_s", 10.0))
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        try:
            undumpable()  # other runs' children (same user) cannot read this one's memory
            for fd in (read_fd, *keep_out):
                os.close(fd)
            null = os.open("/dev/null", os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            os.close(null)
            child(request, write_fd)
        finally:
            os._exit(5)
    os.close(write_fd)
    deadline = time.monotonic() + timeout_s
    chunks, size, verdict = [], 0, None
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            verdict = "timeout"
            break
        ready, _, _ = select.select([read_fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(read_fd, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_RESPONSE_BYTES:
            verdict = "output_too_large"
            break
    if verdict:
        os.kill(pid, signal.SIGKILL)
    os.close(read_fd)
    _, status = os.waitpid(pid, 0)
    if verdict == "timeout":
        return {"error": {"kind": "timeout", "message": f"the code ran longer than {timeout_s:g} seconds"}}
    if verdict == "output_too_large":
        return {"error": {"kind": "output_too_large",
                          "message": f"the result is larger than {MAX_RESPONSE_BYTES // 2**20} MB"}}
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig in (signal.SIGXCPU,):
            return {"error": {"kind": "timeout", "message": f"the code used more than {CPU_SECONDS} seconds of CPU"}}
        if sig == signal.SIGSYS:
            return {"error": {"kind": "not_allowed", "message": "the code made a system call the sandbox forbids"}}
        return {"error": {"kind": "crashed", "message": f"the code's process died ({signal.Signals(sig).name})"}}
    code = os.WEXITSTATUS(status)
    if code == 3:
        return {"error": {"kind": "memory", "message": "the code ran out of memory"}}
    if code != 0 or not chunks:
        return {"error": {"kind": "crashed", "message": f"the code's process stopped without an answer (exit {code})"}}
    return {"frame": b"".join(chunks)}


def answer(in_fd: int, out_fd: int) -> None:
    """The supervisor of one request: read it from ``in_fd``, run it, write the verdict to ``out_fd``, exit."""
    try:
        undumpable()
        request = decode(read_frame(in_fd, MAX_RESPONSE_BYTES))
        os.close(in_fd)
        outcome = supervise(request, keep_out=(out_fd,))
        # "A" + the child's frame (the runner parses it), or "E" + the supervisor's own verdict
        write_all(out_fd, b"A" + outcome["frame"] if "frame" in outcome else b"E" + encode(outcome["error"]))
    finally:
        os._exit(0)  # no interpreter teardown (torch's takes seconds)


def reap(*_) -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main(socket_fd: int) -> None:
    """The mother: import torch once, then fork one supervisor per request. A request is a message on the unix socket
    ``socket_fd`` carrying two descriptors (SCM_RIGHTS): the pipe to read it from and the pipe to answer on. The
    mother never reads a request or an answer, so nothing of one run is in the memory the next run is forked from."""
    import socket

    os.environ.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    import tempfile

    import torch

    # Nothing in the sandbox is writable, so Python finds no temporary folder and a module that only asks for
    # its name at import (torch's compile cache, reached when project code imports more of torch) would fail;
    # name one: a write there fails as any other write does.
    tempfile.tempdir = "/tmp"
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = "/tmp"  # exists (read-only): torch's compile cache asks for it at import
    import torch._dynamo  # noqa: F401 - building a model reaches it; imported once here, not in every run

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    undumpable()
    channel = socket.socket(fileno=socket_fd)
    signal.signal(signal.SIGCHLD, reap)  # pid 1 of the namespace: reap every supervisor as it ends
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(channel, 16, 4)
        except InterruptedError:
            continue
        except OSError:
            break
        if not message:
            break  # the server went away
        if len(fds) != 2:
            for fd in fds:
                os.close(fd)
            continue
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            channel.close()
            answer(*fds)
        for fd in fds:
            os.close(fd)
    os._exit(0)


if __name__ == "__main__":
    main(int(sys.argv[1]))

"""The hostile suite: learner code that attacks the server is contained, answered with one plain sentence, and the
server (this test process) keeps working. Every run goes through ``sandbox.runner.run``: bubblewrap, rlimits, seccomp.

Network traffic goes to 127.0.0.0/8 only. After every test no worker process is left behind (the sandbox's waiting
mother process aside).
"""
from __future__ import annotations

import os
import socket
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from sandbox import runner
from sandbox.runner import Call, run

pytestmark = pytest.mark.skipif(not runner.available(),
                                reason="bubblewrap is missing or cannot make namespaces here")

PROJECT = Path(__file__).resolve().parents[2]
X = np.arange(6, dtype=np.float32).reshape(2, 3)


def worker_processes() -> set[int]:
    """Pids of the processes below this test process that run ``sandbox.worker`` (bubblewrap's and the ones inside).
    Only this process's: another pytest worker (xdist) may hold a sandbox of its own, started by its own tests."""
    commands, children = {}, {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            commands[int(pid)] = Path(f"/proc/{pid}/cmdline").read_bytes()
            parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(pid))
    found, todo = set(), [os.getpid()]
    while todo:
        for child in children.get(todo.pop(), []):
            todo.append(child)
            if b"sandbox.worker" in commands.get(child, b""):
                found.add(child)
    return found


def zombies_of(pid: int) -> list[int]:
    found = []
    for child in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] == "Z" and int(fields[1]) == pid:
            found.append(int(child))
    return found


@pytest.fixture(autouse=True)
def nothing_left_behind():
    yield
    deadline = time.monotonic() + 5
    while True:  # a killed namespace takes a moment to go
        left = worker_processes() - runner.MOTHER.pids()
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert not left, f"worker processes left behind: {sorted(left)}"
    assert not zombies_of(os.getpid()), "unreaped children of the server"


def one(source: str, *args, timeout_s: float = 10.0, function: str = "f"):
    """The run of ``function`` in ``source`` on ``args``: (result, its only output or None)."""
    result = run(source, [Call(function, args)], timeout_s=timeout_s)
    return result, (result.outputs[0] if result.outputs else None)


def plain(sentence: str | None) -> None:
    """One sentence for the learner: no server path, no traceback."""
    assert sentence and "Traceback" not in sentence and "\n" not in sentence
    for path in (str(PROJECT), "site-packages", "/root", "/work"):
        assert path not in sentence, sentence


# ---------------------------------------------------------------- correct code

def test_a_correct_function_returns_the_exact_numbers():
    import torch

    source = "import torch\n\ndef softmax(x, dim=-1):\n    e = torch.exp(x - x.max(dim, keepdim=True).values)\n" \
             "    return e / e.sum(dim, keepdim=True)\n"
    x = np.random.default_rng(0).standard_normal((2, 4, 5))
    result = run(source, [Call("softmax", (x,)), Call("softmax", (x.astype(np.float32),), {"dim": 1})])
    assert result.ok, result
    t = torch.from_numpy(x)
    expected = torch.exp(t - t.max(-1, keepdim=True).values)
    np.testing.assert_array_equal(result.outputs[0].value, (expected / expected.sum(-1, keepdim=True)).numpy())
    assert result.outputs[0].value.dtype == np.float64 and result.outputs[1].value.dtype == np.float32
    np.testing.assert_allclose(result.outputs[1].value.sum(1), 1.0, rtol=1e-6)


def test_inputs_arrive_as_tensors_of_their_dtype_and_results_come_back_as_arrays():
    source = ("import torch\n"
              "def f(a, b, c, n, s, nothing):\n"
              "    return (str(a.dtype), str(b.dtype), str(c.dtype), isinstance(a, torch.Tensor), n, s, nothing,\n"
              "            [a * 2, {'sum': float(a.sum())}], torch.ones(2, dtype=torch.bfloat16))\n")
    result, output = one(source, np.ones(3, np.float16), np.arange(3), np.array([True, False]), 7, "text", None)
    assert result.ok, result
    a_dtype, b_dtype, c_dtype, is_tensor, n, s, nothing, nested, bf16 = output.value
    assert (a_dtype, b_dtype, c_dtype, is_tensor) == ("torch.float16", "torch.int64", "torch.bool", True)
    assert (n, s, nothing) == (7, "text", None)
    np.testing.assert_array_equal(nested[0], np.full(3, 2, np.float16))
    assert nested[1] == {"sum": 3.0} and bf16.dtype == np.float32


def test_wrong_shapes_nan_and_non_arrays_come_back_as_data_for_the_caller_to_judge():
    source = ("import torch\n"
              "def shape(x):\n    return x.T\n"
              "def nan(x):\n    return x / 0 * 0\n"
              "def number(x):\n    return 1.5\n"
              "def thing(x):\n    return lambda: 1\n"
              "def module(x):\n    return torch\n")
    result = run(source, [Call(name, (X,)) for name in ("shape", "nan", "number", "thing", "module")])
    shape, nan, number, thing, module = result.outputs
    assert shape.value.shape == (3, 2) and np.isnan(nan.value).all() and number.value == 1.5
    for output in (thing, module):
        assert output.kind == "unsupported_result"
        plain(output.message)
    assert not result.ok and result.error is None


def test_mistakes_are_one_sentence_at_the_learners_line():
    result, output = one("import torch\n\ndef f(x):\n    y = x + 1\n    return z\n", X)
    assert output.kind == "exception" and output.message == "NameError: name 'z' is not defined (line 5)"
    result, output = one("import torch\ndef f(x):\n    return x @ torch.ones(5, 5)\n", X)
    assert output.kind == "exception" and output.message.startswith("RuntimeError") and "(line 3)" in output.message
    plain(output.message)
    result, _ = one("def f(x):\n    return x +\n", X)
    assert result.error.kind == "syntax" and "(line 2)" in result.error.message
    result, _ = one("def g(x):\n    return x\n", X)
    assert result.error.kind == "no_function" and "'f'" in result.error.message
    result, _ = one("raise ValueError('at import')\ndef f(x):\n    return x\n", X)
    assert result.error.kind == "exception" and result.error.message == "ValueError: at import (line 1)"


def test_a_trusted_entry_drives_the_learners_function_and_the_project_is_importable():
    """The extension point for "use mine": ``entry`` (project code) is called with the learner's function."""
    result = run("def add(a, b):\n    return a + b\n", [Call("add", ([1, 2, 3],))], entry="functools:reduce")
    assert result.ok and result.outputs[0].value == 6, result
    result, output = one("import model.masks, explain.attention\ndef f(x):\n    return model.masks.__name__\n", X)
    assert output.value == "model.masks", result


# ---------------------------------------------------------------- time, memory, output

def test_an_infinite_loop_is_stopped_at_the_deadline():
    started = time.monotonic()
    result, _ = one("def f(x):\n    while True:\n        pass\n", X, timeout_s=1.5)
    assert result.error.kind == "timeout", result
    plain(result.error.message)
    assert time.monotonic() - started < 30


@pytest.mark.slow
def test_cpu_seconds_are_capped_by_the_kernel_even_with_a_long_deadline():
    result, _ = one("def f(x):\n    while True:\n        pass\n", X, timeout_s=60)
    assert result.error.kind == "timeout" and "CPU" in result.error.message, result


@pytest.mark.parametrize("source", [
    "import torch\ndef f(x):\n    return torch.empty(50 * 2**30, dtype=torch.uint8)\n",
    "def f(x):\n    return len(bytearray(50 * 2**30))\n",
    "import torch\ndef f(x):\n    keep = []\n    while True:\n        keep.append(torch.ones(2**24))\n",
], ids=["torch-50GB", "bytearray-50GB", "grow-until-full"])
def test_allocating_50_gb_is_a_memory_error(source):
    result, output = one(source, X)
    kind = output.kind if output else result.error.kind
    assert kind == "memory", result
    plain(output.message if output else result.error.message)


def test_100_mb_printed_is_cut_and_the_run_still_answers():
    source = ("import os\ndef f(x):\n    line = 'x' * 2**20\n    for _ in range(100):\n        print(line)\n"
              "    os.write(1, line.encode())\n    os.write(2, line.encode())\n    return x\n")
    result, output = one(source, X)
    assert result.ok, result
    np.testing.assert_array_equal(output.value, X)
    assert len(result.printed) < 10_000 and "more characters not shown" in result.printed


def test_a_result_larger_than_the_cap_is_refused():
    result, _ = one("import torch\ndef f(x):\n    return torch.zeros(80 * 2**20, dtype=torch.uint8)\n", X)
    assert result.error.kind in ("output_too_large", "memory"), result


# ---------------------------------------------------------------- processes and signals

@pytest.mark.parametrize("source", [
    "import os\ndef f(x):\n    while True:\n        os.fork()\n",
    "import multiprocessing\ndef g():\n    pass\ndef f(x):\n    multiprocessing.Process(target=g).start()\n",
    "import subprocess\ndef f(x):\n    return subprocess.run(['/usr/bin/true']).returncode\n",
    "import os\ndef f(x):\n    os.execv('/usr/bin/true', ['true'])\n",
    "import ctypes\ndef f(x):\n    if ctypes.CDLL(None).syscall(57) == 0:\n        ctypes.CDLL(None)._exit(0)\n"
    "    raise PermissionError(ctypes.get_errno())\n",  # raw fork(2) through libc
], ids=["fork-bomb", "multiprocessing", "subprocess", "exec", "ctypes-raw-fork"])
def test_no_new_process_can_start(source):
    result, output = one(source, X)
    kind = output.kind if output else result.error.kind
    assert kind in ("not_allowed", "crashed"), result
    plain(output.message if output else result.error.message)


def test_os_system_and_libc_system_run_nothing(tmp_path):
    marker = tmp_path / "ran"
    source = ("import os, ctypes\n"
              f"def f(x):\n    return os.system('touch {marker}'), ctypes.CDLL(None).system(b'touch {marker}')\n")
    result, output = one(source, X)
    assert result.ok, result
    assert all(code != 0 for code in output.value), output
    assert not marker.exists()


def test_a_thread_cannot_start():
    result, output = one("import threading\ndef f(x):\n    threading.Thread(target=print).start()\n", X)
    assert output.kind in ("exception", "not_allowed"), result


@pytest.mark.parametrize("target", ["os.getppid()", "1", "0", "-1"])
def test_signals_reach_no_other_process(target):
    result, output = one(f"import os, signal\ndef f(x):\n    os.kill({target}, signal.SIGKILL)\n", X)
    assert output is not None and output.kind == "not_allowed", result  # the supervisor answered: it lives
    plain(output.message)


def test_killing_itself_is_a_crash_in_one_sentence():
    result, _ = one("import os, signal\ndef f(x):\n    os.kill(os.getpid(), signal.SIGKILL)\n", X)
    assert result.error.kind == "crashed" and "SIGKILL" in result.error.message


# ---------------------------------------------------------------- network

@pytest.mark.parametrize("address", ["127.0.0.1", "127.0.0.2"])
def test_no_socket_reaches_the_servers_port_or_another_loopback_address(address):
    with socket.socket() as listener:
        listener.bind((address, 0))
        listener.listen()
        listener.settimeout(0.5)
        port = listener.getsockname()[1]
        source = ("import socket\n"
                  f"def f(x):\n    s = socket.create_connection(('{address}', {port}), timeout=2)\n"
                  "    s.sendall(b'hello')\n    return 'connected'\n")
        result, output = one(source, X)
        assert output.kind == "not_allowed", result
        plain(output.message)
        with pytest.raises(socket.timeout):
            listener.accept()


def test_the_network_is_gone_even_below_python():
    source = ("import ctypes\n"
              "def f(x):\n    return ctypes.CDLL(None, use_errno=True).socket(2, 1, 0), ctypes.get_errno()\n")
    result, output = one(source, X)
    assert output.value == (-1, 1), result  # EPERM


# ---------------------------------------------------------------- files, environment, other sessions

def test_the_servers_files_and_environment_are_out_of_sight(tmp_path, monkeypatch):
    monkeypatch.setenv("TP_TEST_SECRET", "s3cr3t-value")
    host_file = tmp_path / "session.txt"
    host_file.write_text("another session's data")
    readme = PROJECT / "README.md"
    source = ("import os\n"
              "def read(p):\n    try:\n        return open(p).read()\n    except OSError as e:\n"
              "        return type(e).__name__\n"
              "def f(x):\n"
              f"    return ([read(p) for p in ({str(readme)!r}, {str(host_file)!r}, '/etc/shadow', '/etc/passwd',\n"
              "             '/proc/1/environ', '/proc/self/environ', '/root/.bash_history')], dict(os.environ),\n"
              "            os.listdir('/'), os.listdir('/proc'))\n")
    result, output = one(source, X)
    assert result.ok, result
    contents, environ, root, proc = output.value
    assert contents[:5] == ["FileNotFoundError"] * 4 + [contents[4]]
    assert "s3cr3t" not in str(output.value) and "TP_TEST_SECRET" not in environ
    assert "another session" not in str(output.value)
    # the interpreter's prefixes are bound where they are, so their top folder shows (a clone under /check, /work…)
    prefixes = {Path(p).parts[1] for p in (sys.prefix, sys.base_prefix, os.path.realpath(sys.prefix),
                                           os.path.realpath(sys.base_prefix))}
    assert set(root) <= {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "tmp", "proc", "dev",
                         "app"} | prefixes, (root, prefixes)
    assert not {"home", "root", "work", "check"} & (set(root) - prefixes), root
    assert len([p for p in proc if p.isdigit()]) == 3, proc  # its own pid namespace: mother, supervisor, itself


def test_the_supervisor_is_out_of_reach():
    """The child can neither open the supervisor's memory nor its pipe to the server (it is not dumpable, the child
    has no capabilities), so it cannot forge the answer of another run."""
    source = ("import os\n"
              "def attempt(p, mode):\n    try:\n        open(p, mode, buffering=0)\n        return 'opened'\n"
              "    except OSError as e:\n        return type(e).__name__\n"
              "def f(x):\n    return (os.getuid(), [attempt(f'/proc/{os.getppid()}/{name}', mode) for name, mode in\n"
              "            (('mem', 'r+b'), ('mem', 'rb'), ('fd/1', 'wb'), ('fd/0', 'rb'), ('environ', 'rb'))],\n"
              "            open('/proc/self/status').read().split('CapEff:')[1].split()[0])\n")
    result, output = one(source, X)
    uid, attempts, capabilities = output.value
    assert uid == 65534 and set(attempts) == {"PermissionError"} and int(capabilities, 16) == 0, result


def test_writes_fail_and_leave_nothing_on_the_host(tmp_path):
    targets = [str(PROJECT / "pwned.txt"), str(tmp_path / "pwned.txt"), "/app/sandbox/pwned.py", "/usr/pwned",
               "/etc/pwned", "/pwned", "/dev/pwned", "/dev/shm/pwned"]
    source = ("def attempt(p):\n    try:\n        open(p, 'w').write('x')\n        return 'written'\n"
              "    except OSError as e:\n        return type(e).__name__\n"
              f"def f(x):\n    return [attempt(p) for p in {targets!r}], attempt('/tmp/scratch.txt')\n")
    result, output = one(source, X)
    assert result.ok, result
    outside, scratch = output.value
    assert "written" not in outside and scratch != "written"  # nothing in the sandbox is writable
    assert not (PROJECT / "pwned.txt").exists() and not (tmp_path / "pwned.txt").exists()
    assert not (PROJECT / "sandbox" / "pwned.py").exists()


def test_one_run_leaves_nothing_for_the_next():
    first, output = one("import torch\nSECRET = 'first learner'\ndef f(x):\n    torch.secret = SECRET\n"
                        "    open('/tmp/note', 'w').write(SECRET)\n", X)
    assert output.kind == "not_allowed", first  # read-only file system
    second, output = one("import os, torch\ndef f(x):\n    return os.listdir('/tmp'), hasattr(torch, 'secret')\n", X)
    # /tmp holds nothing but the mount points of what is bound under it (a clone and its venv in /tmp)
    bound = sorted({Path(p).relative_to("/tmp").parts[0] for p in {sys.prefix, os.path.realpath(sys.prefix),
                                                                   sys.base_prefix} if p.startswith("/tmp/")})
    assert (sorted(output.value[0]), output.value[1]) == (bound, False), second
    assert "note" not in output.value[0]


def test_runs_at_the_same_time_cannot_reach_each_other():
    """Two runs overlap in one sandbox: the second sees the first's process but can neither read its memory or
    environment nor signal it."""
    import threading

    holder = {}
    first = threading.Thread(target=lambda: holder.update(result=run(
        "import time\nSECRET = 'first learner'\ndef f(x):\n    time.sleep(4)\n    return SECRET\n",
        [Call("f", (X,))])))
    first.start()
    time.sleep(1.5)
    source = ("import os, signal\n"
              "def attempt(action):\n    try:\n        action()\n        return 'done'\n"
              "    except OSError as e:\n        return type(e).__name__\n"
              "def f(x):\n    me, found = os.getpid(), {}\n"
              "    for pid in [int(p) for p in os.listdir('/proc') if p.isdigit() and int(p) != os.getpid()]:\n"
              "        found[pid] = (attempt(lambda: open(f'/proc/{pid}/mem', 'rb').close()),\n"
              "                      attempt(lambda: open(f'/proc/{pid}/environ', 'rb').read()),\n"
              "                      attempt(lambda: os.kill(pid, signal.SIGKILL)))\n"
              "    return found\n")
    second, output = one(source, X)
    first.join(timeout=60)
    assert second.ok, second
    assert len(output.value) >= 3, output.value  # the mother, the two supervisors, the first run's child
    assert all(set(attempts) == {"PermissionError"} for attempts in output.value.values()), output.value
    assert holder["result"].ok and holder["result"].outputs[0].value == "first learner"


# ---------------------------------------------------------------- load

def test_four_runs_at_once_all_answer_correctly():
    source = "import torch\ndef f(x, k):\n    return x * k\n"
    results = {}

    def check(k):
        results[k] = run(source, [Call("f", (X, k))], timeout_s=10)

    threads = [threading.Thread(target=check, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    for k in range(4):
        assert results[k].ok, results[k]
        np.testing.assert_array_equal(results[k].outputs[0].value, X * k)


def test_the_server_still_serves_after_all_of_that():
    result, output = one("def f(x):\n    return x + 1\n", X)
    assert result.ok and np.array_equal(output.value, X + 1)


# ---------------------------------------------------------------- the exercises' planted mistakes, end to end

def _planted():
    from explain.exercises import EXERCISES
    return [(ex.key, bug.key) for ex in EXERCISES.values() for bug in ex.bugs]


@pytest.mark.parametrize(("key", "bug"), _planted())
def test_every_planted_mistake_run_in_the_sandbox_is_named_by_its_hint(key, bug):
    """What a learner gets who makes a classic mistake: the same hint as the in-process check promises
    (the answers crossed the sandbox's frames: shapes, dtypes and 0-d scalars intact)."""
    from explain.exercises import EXERCISES
    from ui.exercise_panel import run_check

    ex = EXERCISES[key]
    report = run_check(ex, ex.bug(bug).source)  # the panel's own path: the sandbox, its probe, the check
    assert report.hint.key == f"exercises.{key}.bug.{bug}", (report.hint, [c.hint for c in report.cases])
    assert not report.passed


def test_the_code_runs_below_the_servers_priority_and_cannot_raise_it():
    """A check yields the CPU to the class's page reruns (niceness +5 over the server's), and cannot undo that."""
    source = ("import os\n"
              "def f(x):\n    before = os.getpriority(os.PRIO_PROCESS, 0)\n"
              "    try:\n        os.nice(-1)\n        raised = 'raised'\n    except OSError as e:\n"
              "        raised = type(e).__name__\n"
              "    return before, raised, os.getpriority(os.PRIO_PROCESS, 0)\n")
    result, output = one(source, X)
    before, raised, after = output.value
    assert before >= os.getpriority(os.PRIO_PROCESS, 0) + 5, result
    assert raised == "PermissionError" and after == before

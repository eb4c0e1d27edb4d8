"""Learners checking their code while the rest of the class browses: what the sandbox costs the others.

``--learners`` sessions (default 10) open the Masks page, type a look-ahead mask into its exercise,
press **Check** ``--checks`` times (a few seconds apart, alternating a correct answer and a planted
mistake, so every press runs a sandboxed process on every case) and, after the first, **Use mine**
(the mask inside the shipped ``copy`` model). Meanwhile ``--browsers`` sessions (default 30) walk the
tour as in ``bench/load.py`` (same client, same think times). Everything goes over Streamlit's own
websocket protocol (:class:`bench.load.Session`), against a server started here with
``TP_LEARNER_CODE=on`` (the operator's setting for a class server).

Reported (the last stdout line, one JSON object): the browsing sessions' rerun p50/p95 (the number
that matters: target p95 < 1 s, ``target_met``), the learners' Check and Use mine p50/p95 (each from the press to the
end of the rerun that shows the answer), how many presses drew a report, errors, and the server's
processes before the load and after it (the sandbox's warm mother stays; no run may leave a process).
The exit status is 0 when the run itself went right (``ok``: no error, every press answered, no process
left), whatever the figures.

    nice -n 10 python bench/learners.py [--learners 10] [--browsers 30] [--checks 5]

:func:`run_learners` is what ``tests/ops/test_learners_load.py`` runs, smaller.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import load  # noqa: E402
from bench.server import logged_tracebacks  # noqa: E402
from explain.exercises import EXERCISES, reference_source  # noqa: E402

EXERCISE = EXERCISES["look_ahead_mask"]
PAGE, QUERY = "masks", "model=copy"
CODE_KEY = f"masks.exercise_{EXERCISE.key}_code"
CHECK_KEY = f"masks.exercise_{EXERCISE.key}_check"
USE_MINE_KEY = f"masks.exercise_{EXERCISE.key}_use_mine"
TARGET_P95_MS = 1000.0  # the browsing sessions' p95 rerun while learners check


def descendants(pid: int) -> list[int]:
    """The process ids below ``pid`` (children, their children...), from /proc."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return sorted(found)


def learner(session: load.Session, rng: random.Random, checks: int, think: tuple[float, float],
            timings: dict[str, list[float]], reports: list[int]) -> None:
    """One learner: the page, their code, ``checks`` presses of Check (and Use mine after the first)."""
    session.open(PAGE, QUERY)
    sources = (reference_source(EXERCISE), EXERCISE.bugs[0].source)
    drawn = 0
    for k in range(checks):
        session.set_text(CODE_KEY, sources[k % 2])
        before = len(session.alerts)
        timings["check"].append(session.click(CHECK_KEY))
        drawn += len(session.alerts) > before  # the report's summary box
        if k == 0:
            timings["use_mine"].append(session.click(USE_MINE_KEY))
        session.idle(rng.uniform(*think))
    reports.append(drawn)


def run_learners(url: str, pid: int, *, learners: int = 10, browsers: int = 30, checks: int = 5,
                 think: tuple[float, float] = (1.0, 3.0), browse_think: tuple[float, float] = (3.0, 8.0),
                 rounds: int = 1, ramp: float = 10.0, timeout: float = 900.0, settle: float = 5.0,
                 log: Callable[[str], None] = print) -> dict:
    """Drive ``learners`` + ``browsers`` sessions against the server at ``url`` (process ``pid``)."""
    order = load.warm_up(url, load.REQUEST_TIMEOUT_S)
    warm = load.Session(url, "warm-learner")  # the sandbox's mother starts on the first check
    warm.connect()
    try:
        warm.open(PAGE, QUERY)
        warm.click(CHECK_KEY)
    finally:
        warm.close()
    time.sleep(settle)
    processes_before = descendants(pid)
    log(f"warm: {len(processes_before)} processes below the server; {learners} learners, {browsers} browsing")

    stop = threading.Event()
    hard_end = time.monotonic() + timeout
    until = hard_end
    timings: dict[str, list[float]] = {"check": [], "use_mine": []}
    reports: list[int] = []
    sessions = [load.Session(url, f"{'l' if i < learners else 'b'}{i:02d}", stop=stop,
                             locale="zh-CN" if i % 3 == 2 else "en-US", rng=random.Random(i))
                for i in range(learners + browsers)]

    def visit(i: int) -> None:
        s, rng = sessions[i], random.Random(1000 + i)
        try:
            if stop.wait(ramp * i / len(sessions)):
                return
            s.connect()
            if i < learners:
                learner(s, rng, checks, think, timings, reports)
            else:
                s.open("", "")
                s.idle(rng.uniform(*browse_think))
                load.tour(s, order, rng, browse_think, rounds, until, order[0])
        except load.SessionError as exc:
            if not stop.is_set():
                s.errors.append(f"{s.name}: {exc}")
        except Exception as exc:  # a client bug is reported, not hidden
            s.errors.append(f"{s.name}: client error {type(exc).__name__}: {exc}")
        finally:
            s.close()

    threads = [threading.Thread(target=visit, args=(i,), daemon=True) for i in range(len(sessions))]
    started = time.monotonic()
    for th in threads:
        th.start()
    timed_out = []
    for th, s in zip(threads, sessions):
        th.join(max(hard_end - time.monotonic(), 0))
        if th.is_alive():
            timed_out.append(s.name)
    stop.set()
    wall = time.monotonic() - started
    time.sleep(settle)
    processes_after = descendants(pid)

    browsing = [r.ms for s in sessions[learners:] for r in s.records if r.kind in load.USER_KINDS]
    errors = [e for s in sessions for e in s.errors] + [f"{n}: still going at the hard timeout" for n in timed_out]

    def stats(values: list[float]) -> dict:
        return {"n": len(values), "p50_ms": load._ms(load.percentile(values, 50)),
                "p95_ms": load._ms(load.percentile(values, 95)), "max_ms": load._ms(max(values) if values else None)}

    p95 = load.percentile(browsing, 95)
    return {
        "learners": learners, "browsers": browsers, "checks_each": checks, "wall_s": round(wall, 1),
        "browsing": stats(browsing), "check": stats(timings["check"]), "use_mine": stats(timings["use_mine"]),
        "checks_with_a_report": sum(reports), "checks_sent": len(timings["check"]),
        "errors": len(errors), "error_samples": errors[:10],
        "processes_before": len(processes_before), "processes_after": len(processes_after),
        "processes_left": sorted(set(processes_after) - set(processes_before)),
        "cpus": os.cpu_count(), "target_p95_ms": TARGET_P95_MS,
        "target_met": p95 is not None and p95 < TARGET_P95_MS,
        # the run itself went right: no error, every press answered, no process left (the figures are the report)
        "ok": not errors and sum(reports) == len(timings["check"]) and processes_after == processes_before,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--learners", type=int, default=10)
    p.add_argument("--browsers", type=int, default=30)
    p.add_argument("--checks", type=int, default=5)
    p.add_argument("--rounds", type=int, default=1, help="tours per browsing session")
    p.add_argument("--think", type=float, nargs=2, default=(1.0, 3.0), help="a learner's pause between presses (s)")
    p.add_argument("--browse-think", type=float, nargs=2, default=(3.0, 8.0), help="a browser's pause between clicks")
    p.add_argument("--ramp", type=float, default=10.0, help="seconds over which the sessions arrive")
    p.add_argument("--timeout", type=float, default=900.0)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tp-learners-") as folder:
        server_log = Path(folder) / "server.log"
        proc, url = load.start_server(env={"TP_LEARNER_CODE": "on"}, log_path=server_log)
        try:
            report = run_learners(url, proc.pid, learners=args.learners, browsers=args.browsers, checks=args.checks,
                                  think=tuple(args.think), browse_think=tuple(args.browse_think), rounds=args.rounds,
                                  ramp=args.ramp, timeout=args.timeout, log=lambda m: print(m, file=sys.stderr))
        finally:
            load.stop_server(proc)
        if not report["ok"]:  # the cause of an error a visitor saw as one sentence is in the server's log
            print(f"the run did not go right; the server's log:\n{logged_tracebacks(server_log)}", file=sys.stderr)
    print(json.dumps(report))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())

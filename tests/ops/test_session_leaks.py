"""Fifty sessions open and close against one server; none leaves a training thread or memory behind.

Websocket clients from ``bench/load.py`` (the browser's protocol, far lighter than 50 browser
contexts) come and go in waves against one ``streamlit run app.py`` server of this module's own.
Some only look at a page and change its widget; some start a training run (a long one, so it is
mid-training, or queued behind the global cap) and then vanish: a clean websocket close, or the
connection simply cut, as a laptop lid does. Afterwards:

* no training thread is alive in the server process. Python 3.11 does not give OS threads the
  ``threading`` name (``/proc/PID/task/*/comm`` says ``python`` for all of them), so the count
  comes from the training page itself: with ``TP_TRAINING_DEBUG=1`` it prints
  ``training-threads-alive: N`` (``ui.training.session.alive_training_threads``);
* the server's RSS is back near its baseline (see :data:`RSS_SLACK_MB`);
* the server counts no connected session (``/_stcore/metrics``).

Streamlit keeps a disconnected session (its session state, and with it the stopped run's model)
for ``server.disconnectedSessionTTL`` seconds (default 120) in case the tab reconnects, and
drops expired ones only when it next stores a disconnected session. The server here runs with
a TTL of :data:`TTL_S` seconds (``STREAMLIT_SERVER_DISCONNECTED_SESSION_TTL``), and the test
closes one last short session after the TTL so that the expired ones are dropped.
"""
from __future__ import annotations

import random
import threading
import time
from contextlib import contextmanager
from typing import Iterator

import pytest

from bench import load
from tests.e2e import conftest as _conftest  # the server starter and timeouts of the browser tests

pytestmark = pytest.mark.slow

SESSIONS = 50
WAVE = 10  # sessions connected at once
TRAINERS_PER_WAVE = 3  # the global cap is the CPU count: on a 2-core machine one of them queues
TTL_S = 3
# Baseline: RSS after a warm-up that opened every page and trained once (torch, the shipped
# models, compiled scripts, figure caches and the training code paths all loaded), with that
# session gone. After the 50 sessions the process may hold more than that without leaking:
# CPython and the allocator keep freed arenas, the per-process figure / attention / decoding
# caches fill with the views the sessions asked for (up to 256 entries per function), and torch
# keeps its allocator caches. Measured on 2026-11-22: 467 MB -> 508 MB. 150 MB leaves room for
# that on a noisier machine while still catching a gross leak (runs that keep training and
# growing their histories, models copied per session and never freed). A small per-session leak
# would fit under it (a connected session costs ~1.3 MB, bench/load.py), which is why the test
# also checks the training threads, the OS threads and the connected-session count.
RSS_SLACK_MB = 150
TRAIN_STEPS = 20_000  # far more than a session lives: every run is stopped mid-training
CLEANUP_WAIT_S = 90



@contextmanager
def debug_server(log_name: str, **env: str) -> Iterator[tuple[object, str]]:
    """``(process, url)`` of a server that reports its live training threads, with ``env`` set."""
    with pytest.MonkeyPatch.context() as mp:
        for name, value in {"TP_TRAINING_DEBUG": "1", **env}.items():
            mp.setenv(name, value)
        proc, url = _conftest.start_server(log_name)
    try:
        yield proc, url
    finally:
        _conftest.stop_server(proc)


@pytest.fixture(scope="module")
def leak_server():
    with debug_server("server-leaks", STREAMLIT_SERVER_DISCONNECTED_SESSION_TTL=str(TTL_S)) as server:
        yield server


def mb(n_bytes: int) -> float:
    return n_bytes / 2**20


def training_threads_alive(url: str) -> int:
    """The server's live training threads, as a fresh session's training page reports them."""
    probe = load.Session(url, "probe").connect()
    try:
        probe.open("training", "lang=en")
        assert probe.errors == [], probe.errors
        assert probe.threads_alive is not None, "the training page printed no training-threads-alive line"
        return probe.threads_alive
    finally:
        probe.close()


def wait_for_no_training_threads(url: str, timeout: float) -> int:
    end = time.monotonic() + timeout
    alive = training_threads_alive(url)
    while alive and time.monotonic() < end:
        time.sleep(1.0)
        alive = training_threads_alive(url)
    return alive


def expire_disconnected_sessions(url: str) -> None:
    """Wait out the TTL, then close one short session: storing it drops the expired ones."""
    time.sleep(TTL_S + 1)
    reaper = load.Session(url, "reaper").connect()
    try:
        reaper.open("", "lang=en")
    finally:
        reaper.close()
    time.sleep(1.0)


def visit(url: str, n: int, order: list[str], failures: list[str], runs_seen: list[str]) -> None:
    """Session ``n``: look at a page and change its widget, or start a run; then go away."""
    rng = random.Random(n)
    s = load.Session(url, f"v{n:02d}", locale="zh-CN" if n % 4 == 3 else "en-US", request_timeout=120, rng=rng)
    trainer = n % WAVE < TRAINERS_PER_WAVE
    try:
        s.connect()
        if trainer:
            s.open("training", f"training_steps={TRAIN_STEPS}")
            s.click(load.START_BUTTON)
            # Mid-training (a few steps done) when it goes away; all but the wave's first may also
            # go while still queued behind the global cap.
            may_leave_queued = n % WAVE != 0
            end = time.monotonic() + 60
            while time.monotonic() < end and not (
                s.run_stats and ((s.run_stats[0] == "running" and s.run_stats[1] >= 3)
                                 or (may_leave_queued and s.run_stats[0] == "queued"))):
                s.idle(0.5)
            runs_seen.append(s.run_stats[0] if s.run_stats else "none")
        else:
            path = order[n % len(order)]
            s.open(path, "")
            s.change(load.PAGE_WIDGETS[path])
            s.idle(rng.uniform(0.1, 0.5))
        failures.extend(s.errors)
    except load.SessionError as exc:
        failures.append(f"{s.name}: {exc}")
    finally:
        if n % 2:
            s.drop()  # the connection is cut: no closing handshake
        else:
            s.close()


def test_fifty_sessions_leave_no_thread_and_no_memory_behind(leak_server):
    proc, url = leak_server
    pid = proc.pid

    # Warm-up: every page once, and one short run trained to its end, then that session gone.
    order = load.warm_up(url, 120)
    warm = load.Session(url, "warm-train").connect()
    try:
        warm.open("training", "training_steps=30")
        warm.click(load.START_BUTTON)
        warm.watch_run(120)
        assert warm.run_stats == ("finished", 30), warm.run_stats
        assert warm.errors == [], warm.errors
    finally:
        warm.close()
    assert wait_for_no_training_threads(url, CLEANUP_WAIT_S) == 0
    expire_disconnected_sessions(url)
    baseline = load.rss_bytes(pid)
    baseline_threads = load.thread_count(pid)

    failures: list[str] = []
    runs_seen: list[str] = []
    peak = baseline
    for wave in range(0, SESSIONS, WAVE):
        threads = [threading.Thread(target=visit, args=(url, n, order, failures, runs_seen), daemon=True)
                   for n in range(wave, min(wave + WAVE, SESSIONS))]
        for th in threads:
            th.start()
        for th in threads:
            th.join(300)
        assert not any(th.is_alive() for th in threads), "a session did not finish in 300 s"
        peak = max(peak, load.rss_bytes(pid))

    assert failures == []
    trainers = SESSIONS // WAVE * TRAINERS_PER_WAVE
    assert len(runs_seen) == trainers
    assert runs_seen.count("running") >= SESSIONS // WAVE, runs_seen  # runs really trained when cut off
    assert "none" not in runs_seen, runs_seen

    # Every run ends once its session is gone (Streamlit releases the session's cache).
    alive = wait_for_no_training_threads(url, CLEANUP_WAIT_S)
    assert alive == 0, f"{alive} training threads still alive {CLEANUP_WAIT_S} s after their sessions ended"

    expire_disconnected_sessions(url)
    assert load.active_sessions(url) == 0
    rss = load.rss_bytes(pid)
    end = time.monotonic() + 30  # the cyclic garbage collector may need a moment (runner.postScriptGC is off)
    while mb(rss - baseline) > RSS_SLACK_MB and time.monotonic() < end:
        time.sleep(2.0)
        rss = load.rss_bytes(pid)
    threads_now = load.thread_count(pid)
    print(f"RSS baseline {mb(baseline):.0f} MB, peak {mb(peak):.0f} MB, after {mb(rss):.0f} MB; "
          f"OS threads {baseline_threads} -> {threads_now}; runs when cut off: {runs_seen}")
    assert mb(rss - baseline) <= RSS_SLACK_MB, (
        f"RSS {mb(rss):.0f} MB after 50 sessions vs baseline {mb(baseline):.0f} MB (peak {mb(peak):.0f} MB)")
    # No thread per session is left either (script runners, training threads): a few pool threads may start.
    assert threads_now <= baseline_threads + 8, (baseline_threads, threads_now)



# Pressing Start and vanishing a few milliseconds later: the click's callback can run after
# Streamlit has released the disconnected session's cache, so session_training() makes a new
# TrainingSession that nobody will ever release. Reproduced on 2026-11-22 before the fix: 2-5
# orphaned runs out of 7 such tabs. TrainingSession.start now stops a run whose browser session is
# no longer active (0 of 7 orphaned on a patched copy); a tiny window remains inside Streamlit's
# own disconnect handling, so this test keeps a short time cap as the backstop and checks that no
# run outlives it.
ORPHAN_CAP_S = 8


def test_a_tab_gone_right_after_pressing_start_leaves_no_run_behind_its_cap():
    with debug_server("server-leaks-start-race", TP_TRAINING_MAX_SECONDS=str(ORPHAN_CAP_S)) as (_, url):
        load.warm_up(url, 120)
        delays = (0.0, 0.005, 0.01, 0.02, 0.05)
        for delay in delays:
            s = load.Session(url, "racer").connect()
            try:
                s.open("training", f"training_steps={TRAIN_STEPS}")
                assert s.errors == [], s.errors
                s.click(load.START_BUTTON, wait=False)
                time.sleep(delay)
            finally:
                s.drop()
        # Orphans queue behind the cap (the CPU count) and each trains at most ORPHAN_CAP_S.
        alive = wait_for_no_training_threads(url, len(delays) * ORPHAN_CAP_S + CLEANUP_WAIT_S)
        assert alive == 0, f"{alive} training runs outlived the tabs that started them"


# Eight batch-512 translation runs (two training, six queued), as a class that all pressed Start with the largest
# batch (#33 item 7). Measured on 2026-11-27 with /tmp's script of this test: baseline 506 MB, 1,541 MB while two
# trained, and still 1,563 MB 30 s after every session had expired: the objects were gone but glibc kept the freed
# activations. With a run's gradients and optimizer moments dropped and malloc_trim when it ends (model/memory.py):
# 512 MB 8 s after the tabs closed, the same as the baseline.
TRANSLATION_RUNS = 8
TRANSLATION_QUERY = "training_task=en-zh&training_size=small&training_batch=512&training_steps=20000"
AFTER_TRAINING_SLACK_MB = 100


def test_memory_returns_near_its_baseline_after_a_class_of_big_translation_runs(leak_server):
    proc, url = leak_server
    pid = proc.pid
    load.warm_up(url, 120)
    expire_disconnected_sessions(url)
    baseline = load.rss_bytes(pid)
    sessions = []
    try:
        for n in range(TRANSLATION_RUNS):
            s = load.Session(url, f"mt{n}", request_timeout=120).connect()
            sessions.append(s)
            s.open("training", TRANSLATION_QUERY)
            s.click(load.START_BUTTON)
        end, peak = time.monotonic() + 120, baseline
        while True:  # until every running run has taken 10 steps of batch 512
            for s in sessions:
                s.idle(0.2)
            peak = max(peak, load.rss_bytes(pid))
            steps = [s.run_stats[1] for s in sessions if s.run_stats and s.run_stats[0] == "running"]
            if steps and min(steps) >= 10:
                break
            assert time.monotonic() < end, [s.run_stats for s in sessions]
        states = sorted(s.run_stats[0] for s in sessions)
        assert states.count("running") >= 1 and states.count("queued") >= 1, states
        assert all(s.errors == [] for s in sessions), [s.errors for s in sessions]
    finally:
        for s in sessions:
            s.close()
    assert wait_for_no_training_threads(url, CLEANUP_WAIT_S) == 0
    expire_disconnected_sessions(url)
    rss = load.rss_bytes(pid)
    print(f"RSS baseline {mb(baseline):.0f} MB, peak {mb(peak):.0f} MB, after {mb(rss):.0f} MB")
    assert mb(peak - baseline) > 3 * AFTER_TRAINING_SLACK_MB, "the runs never took the memory this test is about"
    assert mb(rss - baseline) <= AFTER_TRAINING_SLACK_MB, (
        f"RSS {mb(rss):.0f} MB after the runs vs baseline {mb(baseline):.0f} MB (peak {mb(peak):.0f} MB)")

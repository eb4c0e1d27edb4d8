"""What watching a run live costs it: steps/s through the training page against the same run headless.

Both runs use the same config (the page's settings for ``--task``/``--preset``/``--steps``, the
page's eval and probe intervals, one torch thread on CPU, the best device) in the same
invocation:

* headless: ``TrainingRun.start()`` + wait in a fresh Python process, as the page would, nobody
  watching;
* ui: a real ``streamlit run app.py`` server on 127.0.0.1 and a Playwright chromium tab on
  ``/training``: the page redraws its numbers and charts once a second and the attention heads
  every two seconds, and the tab reads the page once a second, until the run finishes.

The headless process and the server each run in a session of their own (``start_new_session``),
and the browser in this one. On Linux with autogroup scheduling a busy machine shares the CPU
fairly between sessions; without this the browser would take its share from the training thread
itself, which measures the machine rather than the page (and in a classroom the browser is on
another computer). The server is given a few seconds after its first page to finish its
background warm-up (loading the shipped models) before the first UI run starts.

Steps/s is the engine's own measure (steps / seconds spent training: queueing and pauses do not
count), read for the UI run from the page's debug line (``TP_TRAINING_DEBUG=1``). Headless and UI
runs alternate ``--repeats`` times (one server, one browser, a new tab per UI run) and the
medians are compared, so a machine whose load drifts during the benchmark hits both alike.
Wall-clock figures (click to "finished" in the browser, start to end headless) are reported too.

    python bench/train_ui_overhead.py [--steps 300] [--repeats 3] [--task copy] [--preset tiny]

The last stdout line is one JSON object with ``ratio`` = ui steps/s ÷ headless steps/s (target >= 0.9).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import server  # noqa: E402

CHROMIUM = os.environ.get("TP_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
STATS = re.compile(r"training-run-stats: state=(\w+) step=(\d+) elapsed_s=([\d.]+)")
TIMEOUT_S = 1800
WARMUP_SETTLE_S = 10.0
OPEN_ATTEMPTS = 3


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--repeats", type=int, default=3, help="headless / UI pairs, alternating")
    p.add_argument("--task", default="copy")
    p.add_argument("--preset", default="tiny")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--client", choices=("websocket", "browser"), default="websocket",
                   help="who watches the live page: a websocket client answering its refreshes as a "
                        "browser does (default; the drawing is on the student's computer), or a "
                        "chromium tab on this machine (its rendering then competes for these cores)")
    p.add_argument("--headless-once", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def page_settings(args: argparse.Namespace):
    from ui.training.settings import Settings

    return Settings(task=args.task, preset=args.preset, batch_size=args.batch_size, warmup=args.warmup,
                    max_steps=args.steps)


def headless(args: argparse.Namespace) -> dict[str, float]:
    """The page's run with nobody watching, in a fresh process and session (see the module docstring)."""
    command = [sys.executable, str(Path(__file__).resolve()), "--headless-once", "--steps", str(args.steps),
               "--task", args.task, "--preset", args.preset, "--batch-size", str(args.batch_size),
               "--warmup", str(args.warmup)]
    out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT_S,
                         start_new_session=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def headless_here(args: argparse.Namespace) -> dict[str, float]:
    """One headless run in this process: start() and wait, as the page's session object does."""
    from model.training import TrainingRun
    from ui.training.session import configure_threads_once

    config = page_settings(args).to_config(max_seconds=TIMEOUT_S)
    run = TrainingRun(config)
    configure_threads_once(str(run.device))
    start = time.perf_counter()
    run.start()
    while run.alive:
        time.sleep(0.05)
    wall = time.perf_counter() - start
    snap = run.snapshot()
    if snap.state != "finished" or snap.step != args.steps:
        raise RuntimeError(f"headless run ended {snap.state} at step {snap.step}: {snap.reason}")
    return {"steps_per_s": snap.step / snap.elapsed_s, "wall_steps_per_s": snap.step / wall,
            "elapsed_s": snap.elapsed_s, "device": str(run.device)}


def start_server() -> tuple[subprocess.Popen, str]:
    env = {"TP_TRAINING_DEBUG": "1", "TP_TRAINING_MAX_SECONDS": str(TIMEOUT_S)}
    return server.start_server("app.py", env=env)


def page_query(args: argparse.Namespace) -> str:
    s = page_settings(args)
    return (f"lang=en&training_task={s.task}&training_size={s.preset}&training_batch={s.batch_size}&training_warmup={s.warmup}"
            f"&training_steps={s.max_steps}&training_factor={s.factor}&training_eps={s.label_smoothing}&training_seed={s.seed}")


def through_the_page(args: argparse.Namespace, browser, url: str, settle_s: float = 0.0) -> dict[str, float]:
    """The same run started in a new tab and watched there until it finishes; then the tab closes."""
    from ui.i18n import translate

    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    try:
        page = context.new_page()
        page.set_default_timeout(120_000)
        page.goto(f"{url}/training?{page_query(args)}")
        page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]')
        page.wait_for_timeout(settle_s * 1000)
        page.get_by_role("button", name=translate("training.control.start", "en")).click()
        start = time.perf_counter()
        while True:  # the visitor watching: read the page once a second
            time.sleep(1.0)
            stats = page.get_by_text(STATS)
            found = STATS.search(stats.first.inner_text()) if stats.count() else None
            if found and found.group(1) == "finished":
                wall = time.perf_counter() - start
                break
            if found and found.group(1) == "failed":
                raise RuntimeError("the UI run failed")
            if time.perf_counter() - start > TIMEOUT_S:
                raise RuntimeError("the UI run did not finish in time")
    finally:
        context.close()
    steps, elapsed = int(found.group(2)), float(found.group(3))
    if steps != args.steps:
        raise RuntimeError(f"the UI run stopped at step {steps}, not {args.steps}")
    return {"steps_per_s": steps / elapsed, "wall_steps_per_s": steps / wall, "elapsed_s": elapsed}


def through_websocket(args: argparse.Namespace, url: str, settle_s: float = 0.0) -> dict[str, float]:
    """The same run started and watched by a websocket client that speaks to the server as the
    browser does (``bench/load.py``: it answers the page's once-a-second fragment reruns), without
    drawing anything: in a classroom the drawing happens on the student's computer."""
    from bench.load import START_BUTTON, Session, SessionError

    for attempt in range(1, OPEN_ATTEMPTS + 1):
        session = Session(url, "watcher", request_timeout=120).connect()
        try:
            session.open("training", page_query(args))
            if session.errors:
                raise RuntimeError(f"the training page failed: {session.errors}")
            # Wait as a browser tab does: reading the socket, so the server's websocket pings get
            # their pongs (a bare sleep longer than the ping interval gets the connection dropped).
            session.idle(settle_s)
            break
        except SessionError as exc:
            # A server still warming up on a busy machine can miss a pong and drop the connection;
            # a browser tab reconnects then, and so does this client (before the run, never during).
            session.close()
            if attempt == OPEN_ATTEMPTS:
                raise
            print(f"watcher dropped before the run ({exc}); reconnecting", file=sys.stderr, flush=True)
    try:
        start = time.perf_counter()
        session.click(START_BUTTON)
        session.watch_run(TIMEOUT_S)
        wall = time.perf_counter() - start
    finally:
        session.close()
    found = STATS.search(session.run_stats_line)
    if found is None or found.group(1) != "finished" or int(found.group(2)) != args.steps:
        raise RuntimeError(f"the UI run did not finish its {args.steps} steps: {session.run_stats_line!r}")
    steps, elapsed = int(found.group(2)), float(found.group(3))
    return {"steps_per_s": steps / elapsed, "wall_steps_per_s": steps / wall, "elapsed_s": elapsed}


def main(argv: list[str] | None = None) -> int:
    from playwright.sync_api import sync_playwright

    args = parse_args(argv)
    if args.headless_once:
        print(json.dumps(headless_here(args)))
        return 0
    runs: dict[str, list[dict[str, float]]] = {"headless": [], "ui": []}
    proc, url = start_server()
    try:
        with sync_playwright() as pw:
            browser = (pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                       if args.client == "browser" else None)
            for i in range(args.repeats):
                for kind in ("headless", "ui"):
                    if kind == "headless":
                        result = headless(args)
                    elif args.client == "websocket":
                        result = through_websocket(args, url, settle_s=WARMUP_SETTLE_S if i == 0 else 0.0)
                    else:
                        result = through_the_page(args, browser, url, settle_s=WARMUP_SETTLE_S if i == 0 else 0.0)
                    runs[kind].append(result)
                    print(f"{i + 1}/{args.repeats} {kind:<8} {result['steps_per_s']:6.2f} steps/s", file=sys.stderr,
                          flush=True)
            if browser is not None:
                browser.close()
    finally:
        server.stop_server(proc)

    def median(kind: str, key: str) -> float:
        return statistics.median(r[key] for r in runs[kind])

    result = {
        "ratio": round(median("ui", "steps_per_s") / median("headless", "steps_per_s"), 3),
        "client": args.client,
        "wall_ratio": round(median("ui", "wall_steps_per_s") / median("headless", "wall_steps_per_s"), 3),
        "ui_steps_per_s": round(median("ui", "steps_per_s"), 3),
        "headless_steps_per_s": round(median("headless", "steps_per_s"), 3),
        "ui_runs_steps_per_s": [round(r["steps_per_s"], 3) for r in runs["ui"]],
        "headless_runs_steps_per_s": [round(r["steps_per_s"], 3) for r in runs["headless"]],
        "steps": args.steps, "repeats": args.repeats, "task": args.task, "preset": args.preset,
        "batch_size": args.batch_size, "device": runs["headless"][0]["device"], "cpu_count": os.cpu_count(),
        "load_avg_1min": round(os.getloadavg()[0], 2), "target": 0.9,
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

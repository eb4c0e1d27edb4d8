"""How long a page takes to rerun after a widget change, and how long the app takes to start.

Both are ratios against a reference measured in the same run, so they mean the same thing on a
laptop and on a busy CI machine:

* rerun (``--mode server``, the default): the time of the script run a server executes after
  one widget change on each page (``bench/timed_server.py``; a widget inside an ``st.fragment``
  reruns only its fragment, as for a visitor), next to the same kind of change on a one-widget
  script served the same way: ``--runs`` pairs, each page change followed by a reference change,
  and the median of the pairs' ratios. The change is sent by a
  websocket client that draws nothing (``bench/ws_rerun.py``, the default ``--client``; it keeps
  and reports the messages it was sent as a browser does, so an unchanged chart comes back as a
  short reference) or by a chromium tab on this machine (``--client browser``,
  ``bench/browser_rerun.py``). ``--clock cpu`` times each run by the CPU time the server process
  used during it instead of the wall clock (measured here: no steadier; the target is on the
  wall clock). The whole
  measurement is made ``--repeat`` times (default 3), each with fresh servers, and a page's ratio
  is the median of its repeats: on a shared 2-core machine one measurement can be 15% off.
  ``--mode apptest`` times ``AppTest.run()`` of the whole script instead, with compiled scripts
  cached across runs as a real server does. Target <= 2x.
* cold start: ``streamlit run app.py`` until its first script run has finished (a websocket
  client asks for the run and waits for ``script_finished``), next to a one-line app that only
  imports torch, plotly and pandas, started the same way. Target <= 1.2x.

Run ``python bench/page_latency.py`` (``--help`` for options). The last line of stdout is one JSON
object: ``ratio`` (worst page), ``cold_start_ratio``, the client and mode, and the raw figures
(``--mode apptest``/``both`` add ``apptest_ratio`` and ``script_ratio``).

Page authors: add or replace your page's entry in :data:`WIDGET_CHANGES` (AppTest mode) with a
function that changes ONE widget that defines the view (it must not run the app), and the same
widget in ``bench/ws_rerun.WIDGET_KEYS`` and ``bench/browser_rerun.BROWSER_CHANGES``, e.g.::

    "attention": lambda at, i: at.slider(key="attention.heads").set_value(2 if i % 2 else 4),
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import streamlit.testing.v1.app_test as _app_test  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from ui.tour import TOUR, stop  # noqa: E402

# A server compiles each script once per process and keeps the bytecode; AppTest makes a new
# ScriptCache for every run and so recompiles app.py and the page each time, which is not what
# a visitor waits for. Share one cache, as the server does (for the page and the reference).
# (AppTest builds one for app.py and its LocalScriptRunner another for the page files: patch both.)
import streamlit.testing.v1.local_script_runner as _local_runner  # noqa: E402

_SHARED_SCRIPT_CACHE = _app_test.ScriptCache()
_app_test.ScriptCache = lambda: _SHARED_SCRIPT_CACHE
_local_runner.ScriptCache = lambda: _SHARED_SCRIPT_CACHE

# The script-run part alone (Streamlit's ScriptRunner executing app.py and the page, without
# AppTest's own set-up and result parsing), reported beside the at.run() figure.
from streamlit.runtime.scriptrunner import script_runner as _script_runner  # noqa: E402

_script_seconds: list[float] = []
_original_run_script = _script_runner.ScriptRunner._run_script


def _timed_run_script(self, *args, **kwargs):
    start = time.perf_counter()
    try:
        return _original_run_script(self, *args, **kwargs)
    finally:
        _script_seconds.append(time.perf_counter() - start)


_script_runner.ScriptRunner._run_script = _timed_run_script

Change = Callable[[AppTest, int], object]


def toggle_language(at: AppTest, i: int) -> object:
    """Flip the sidebar's language: the whole page reruns in the other language."""
    return at.radio(key="lang").set_value("zh" if i % 2 == 0 else "en")


# One widget change per page; pages with view widgets of their own should use one of them.
WIDGET_CHANGES: dict[str, Change] = {
    "home": toggle_language,
    "tokens": lambda at, i: at.segmented_control(key="tokens.side").set_value("decoder_in" if i % 2 == 0 else "source"),
    "masks": lambda at, i: at.pills(key="masks.switches").set_value(["padding", "look_ahead"][i % 2 == 0:]),
    "positional": lambda at, i: at.slider(key="positional.pair").set_value(5 if i % 2 == 0 else 0),
    "attention": lambda at, i: at.segmented_control(key="attention.head").set_value(2 if i % 2 == 0 else 1),
    "decoding": lambda at, i: at.slider(key="dec_step").set_value(2 if i % 2 == 0 else 3),
    "training": lambda at, i: at.slider(key="training.warmup").set_value(100 if i % 2 else 300),
}

TRIVIAL_RERUN_SCRIPT = 'import streamlit as st\nst.radio("x", ["en", "zh"], key="lang")\n'
TRIVIAL_COLD_SCRIPT = "import torch, plotly, pandas, streamlit as st\nst.write('hello')\n"
RUN_TIMEOUT_S = 120


def open_page(key: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=RUN_TIMEOUT_S)
    at.query_params["lang"] = "en"
    at.run()
    s = stop(key)
    if not s.is_default:
        at.switch_page(s.script).run()
    if at.exception:
        raise RuntimeError(f"{key}: {[e.value for e in at.exception]}")
    return at


def timed_rerun(at: AppTest, change: Change, i: int) -> tuple[float, float]:
    """``(seconds of at.run(), seconds of the script run inside it)`` after ``change``."""
    change(at, i)
    _script_seconds.clear()
    start = time.perf_counter()
    at.run()
    elapsed = time.perf_counter() - start
    if at.exception:
        raise RuntimeError([e.value for e in at.exception])
    return elapsed, sum(_script_seconds)


def rerun_ratios(runs: int, keys: list[str] | None = None) -> dict[str, dict[str, float]]:
    """Per page: medians of the page's and the reference's reruns, as at.run() and script-only."""
    from ui.warmup import wait_for_warmup

    results: dict[str, dict[str, float]] = {}
    for s in TOUR:
        if keys is not None and s.key not in keys:
            continue
        change = WIDGET_CHANGES.get(s.key, toggle_language)
        try:
            page_app = open_page(s.key)
            timed_rerun(page_app, change, 0)
        except Exception as exc:  # a broken page is reported, and the others are still measured
            print(f"{s.key:<12} FAILED: {exc}", flush=True)
            results[s.key] = {"error": str(exc)[:300]}
            continue
        wait_for_warmup(RUN_TIMEOUT_S)  # the background warm-up must not land inside a timing
        trivial = AppTest.from_string(TRIVIAL_RERUN_SCRIPT, default_timeout=RUN_TIMEOUT_S).run()
        for i in range(3):  # warm both (imports, caches) before timing
            timed_rerun(page_app, change, i)
            timed_rerun(trivial, toggle_language, i)
        page_times, trivial_times = [], []
        for i in range(3, 3 + runs):  # i carries on, so every change flips the widget
            page_times.append(timed_rerun(page_app, change, i))
            trivial_times.append(timed_rerun(trivial, toggle_language, i))
        page_ms, page_script_ms = (statistics.median(x) * 1e3 for x in zip(*page_times))
        trivial_ms, trivial_script_ms = (statistics.median(x) * 1e3 for x in zip(*trivial_times))
        results[s.key] = {
            "ms": round(page_ms, 2), "trivial_ms": round(trivial_ms, 2), "ratio": round(page_ms / trivial_ms, 3),
            "script_ms": round(page_script_ms, 2), "trivial_script_ms": round(trivial_script_ms, 2),
            "script_ratio": round(page_script_ms / trivial_script_ms, 3),
        }
        print(f"{s.key:<12} at.run {page_ms:6.1f} ms vs {trivial_ms:5.1f} ms = {page_ms / trivial_ms:4.2f}x"
              f"   script only {page_script_ms:6.1f} ms vs {trivial_script_ms:5.1f} ms"
              f" = {page_script_ms / trivial_script_ms:4.2f}x", flush=True)
    return results


def first_run_seconds(script: Path) -> float:
    """Seconds from ``streamlit run script`` to the end of its first script run."""
    import websocket
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    from bench.server import start_server, stop_server

    start = time.perf_counter()
    proc, url = start_server(script, timeout_s=RUN_TIMEOUT_S)
    try:
        ws = websocket.create_connection(url.replace("http", "ws", 1) + "/_stcore/stream",
                                         subprotocols=["streamlit"], timeout=RUN_TIMEOUT_S)
        request = BackMsg()
        request.rerun_script.query_string = "lang=en"
        request.rerun_script.page_script_hash = ""
        ws.send_binary(request.SerializeToString())
        while True:
            message = ForwardMsg()
            message.ParseFromString(ws.recv())
            if message.WhichOneof("type") == "script_finished":
                break
        elapsed = time.perf_counter() - start
        ws.close()
        return elapsed
    finally:
        stop_server(proc)


def cold_start(runs: int) -> dict[str, float]:
    """Median first-run time of app.py and of the import-only reference, interleaved."""
    with tempfile.TemporaryDirectory() as tmp:
        reference = Path(tmp) / "reference_app.py"
        reference.write_text(TRIVIAL_COLD_SCRIPT)
        app_times, ref_times = [], []
        for _ in range(runs):
            ref_times.append(first_run_seconds(reference))
            app_times.append(first_run_seconds(ROOT / "app.py"))
    app_s, ref_s = statistics.median(app_times), statistics.median(ref_times)
    print(f"cold start   app {app_s:6.2f} s   reference {ref_s:6.2f} s   ratio {app_s / ref_s:5.2f}", flush=True)
    return {"app_s": round(app_s, 3), "reference_s": round(ref_s, 3), "ratio": round(app_s / ref_s, 3)}


def repeated(measure, times: int) -> dict[str, dict]:
    """``measure()`` (per page: ms, trivial_ms, ratio, run) ``times`` times; per page the repeat whose
    ratio is the median, with every repeat's ratio (``ratios``) beside it. A page that failed once
    is reported failed."""
    rounds = []
    for n in range(times):
        if times > 1:
            print(f"-- repeat {n + 1} of {times}", flush=True)
        rounds.append(measure())
    pages: dict[str, dict] = {}
    for key in rounds[0]:
        results = [r.get(key, {"error": "not measured"}) for r in rounds]
        failed = [r for r in results if "ratio" not in r]
        if failed:
            pages[key] = failed[0]
            continue
        ordered = sorted(results, key=lambda r: r["ratio"])
        pages[key] = {**ordered[(len(ordered) - 1) // 2], "ratios": [r["ratio"] for r in results]}
    if times > 1:
        for key, page in pages.items():
            if "ratio" in page:
                print(f"{key:<12} median of {times}: {page['ratio']:4.2f}x   (each: "
                      + ", ".join(f"{r:.2f}" for r in page["ratios"]) + ")", flush=True)
    return pages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=31, help="timed reruns per page (median)")
    parser.add_argument("--cold-runs", type=int, default=3, help="cold starts of each app (median)")
    parser.add_argument("--skip-cold", action="store_true", help="measure reruns only")
    parser.add_argument("--mode", choices=("server", "apptest", "both"), default="server",
                        help="server: a browser changes the widget on a real server, whose script runs "
                             "are timed (fragments rerun alone, as for a visitor; the `ratio`); apptest: "
                             "the whole script rerun in AppTest; both: the two, `ratio` from server")
    parser.add_argument("--client", choices=("websocket", "browser"), default="websocket",
                        help="server mode: who makes the change (websocket: bench/ws_rerun.py, a client "
                             "that draws nothing, as when the browsers are on other computers; browser: "
                             "a chromium tab on this machine, bench/browser_rerun.py)")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="server mode: time a run by the wall clock (the target's measure) or by the CPU "
                             "time the server process used during it (bench/timed_server.py)")
    parser.add_argument("--pages", nargs="*", help="only these page keys")
    parser.add_argument("--repeat", type=int, default=3,
                        help="server mode: measure this many times, each with fresh servers; a page's ratio is "
                             "the median of its repeats (on a shared machine one measurement can be 15%% off)")
    args = parser.parse_args()
    os.chdir(ROOT)

    keys = [s.key for s in TOUR if not args.pages or s.key in args.pages]
    result: dict[str, object] = {"ratio_target": 2.0, "cold_start_target": 1.2, "mode": args.mode,
                                 "client": args.client, "clock": args.clock}
    if args.mode in ("apptest", "both"):
        pages = rerun_ratios(args.runs, keys)
        measured = [k for k in pages if "ratio" in pages[k]]
        worst = max(measured, key=lambda k: pages[k]["ratio"])
        worst_script = max(measured, key=lambda k: pages[k]["script_ratio"])
        result.update(apptest_ratio=pages[worst]["ratio"], apptest_worst_page=worst,
                      script_ratio=pages[worst_script]["script_ratio"], apptest_pages=pages)
        result.update(ratio=pages[worst]["ratio"], worst_page=worst, pages=pages,
                      failed_pages=[k for k in pages if k not in measured])
    if args.mode in ("server", "both"):
        if args.client == "browser":
            from bench.browser_rerun import rerun_ratios as server_rerun_ratios
        else:
            from bench.ws_rerun import rerun_ratios as server_rerun_ratios

        paths = {s.key: f"{s.url_path}?lang=en" for s in TOUR if s.key in keys}
        if args.client == "websocket":  # and the reruns some pages have beside their view widget's
            from bench.ws_rerun import EXTRA_CHANGES

            paths.update({extra: paths[extra.partition(":")[0]] for extra in EXTRA_CHANGES
                          if extra.partition(":")[0] in paths})
        pages = repeated(lambda: server_rerun_ratios(args.runs, paths, args.clock), max(1, args.repeat))
        measured = [k for k in pages if "ratio" in pages[k]]
        worst = max(measured, key=lambda k: pages[k]["ratio"])
        result.update(ratio=pages[worst]["ratio"], worst_page=worst, pages=pages,
                      failed_pages=[k for k in pages if k not in measured])
    if not args.skip_cold:
        cold = cold_start(args.cold_runs)
        result.update(cold_start_ratio=cold["ratio"], cold_start_s=cold["app_s"],
                      cold_start_reference_s=cold["reference_s"])
    print(json.dumps(result))


if __name__ == "__main__":
    main()

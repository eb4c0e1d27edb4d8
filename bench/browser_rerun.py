"""Server-side time of the rerun a visitor's widget change causes, on a real server.

A real browser (Debian chromium through Playwright) changes one view-defining widget on a page
of ``streamlit run app.py``; the server runs under :mod:`bench.timed_server`, which logs the
duration of every script run it executes. So the figure is exactly the server's work for that
change, the way a browser asks for it: a widget inside an ``st.fragment`` reruns only its
fragment, one outside reruns the whole app. The reference is the same change on a one-widget
script served the same way, measured alternately in the same run.

Used by ``bench/page_latency.py --client browser``. The default client there is
``bench/ws_rerun.py``: a chromium tab on this 2-core machine renders each chart while the server
is still running the script, and that CPU counts in the server's time.
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.server import serving  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("TP_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync",
                 # two tabs take turns: the one in the background must not be throttled
                 "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
                 "--disable-backgrounding-occluded-windows"]
TRIVIAL_SCRIPT = 'import streamlit as st\nst.radio("x", ["en", "zh"], key="lang")\n'
START_TIMEOUT_S = 90
RUN_TIMEOUT_MS = 90_000
SETTLE_S = 0.4
CHANGE_TIMEOUT_S = 60  # a change that starts no run within this is reported as broken


def _key(key: str) -> str:
    """CSS selector of the element Streamlit renders for widget ``key`` (dots become dashes)."""
    return ".st-key-" + key.replace(".", "-")


def _click_nth(key: str, role: str) -> Callable:
    return lambda page, i: page.locator(f"{_key(key)} {role}").nth((i + 1) % 2).click()  # i = 0: the other one


def _press_slider(key: str) -> Callable:
    return lambda page, i: page.locator(_key(key)).get_by_role("slider").press(
        "ArrowRight" if i % 2 == 0 else "ArrowLeft")


def _flip_first(key: str, role: str) -> Callable:
    return lambda page, i: page.locator(f"{_key(key)} {role}").first.click()  # a pill: on, off, on...


# The same widget the AppTest mode changes on each page (see page_latency.WIDGET_CHANGES).
BROWSER_CHANGES: dict[str, Callable] = {
    "home": _click_nth("lang", "[data-testid=stRadioOption]"),
    "tokens": _click_nth("tokens.side", "button"),
    "masks": _flip_first("masks.switches", "button"),
    "positional": _press_slider("positional.pair"),
    "attention": _click_nth("attention.head", "button"),
    "decoding": _press_slider("dec_step"),
    "training": _press_slider("training.warmup"),
}
TRIVIAL_CHANGE = _click_nth("lang", "[data-testid=stRadioOption]")


@contextmanager
def timed_server(script: Path) -> Iterator[tuple[str, Path]]:
    """``(base_url, run_log)`` of ``streamlit run script`` under :mod:`bench.timed_server`."""
    with tempfile.TemporaryDirectory() as tmp:
        log, output = Path(tmp) / "runs.log", Path(tmp) / "server.out"
        log.touch()
        launcher = (sys.executable, str(ROOT / "bench" / "timed_server.py"), str(log), "--")
        with serving(script, launcher=launcher, timeout_s=START_TIMEOUT_S, log_path=output) as url:
            try:
                yield url, log
            except BaseException:  # say what the server said, when a measurement fails
                tail = output.read_text(errors="replace").splitlines()[-20:]
                print(f"-- the last lines of {Path(script).name}'s server:", *tail, sep="\n", file=sys.stderr)
                raise


def _wait_idle(page) -> None:
    page.wait_for_selector('[data-test-script-state="notRunning"]', timeout=RUN_TIMEOUT_MS)


def _runs(log: Path, clock: str = "wall") -> list[tuple[float, str]]:
    """``(seconds, kind)`` of every run in ``log``: wall-clock seconds, or with ``clock="cpu"`` the
    CPU seconds the server process used during the run."""
    out = []
    for line in log.read_text().splitlines():
        seconds, kind, cpu = line.split()
        out.append((float(cpu if clock == "cpu" else seconds), kind))
    return out


def self_url(page) -> str:
    return page.url


def _change_and_time(page, log: Path, change: Callable, i: int, clock: str = "wall") -> tuple[float, str]:
    """Make change ``i``; return ``(seconds, kind)`` of the script run it caused (``clock``: see :func:`_runs`)."""
    before = len(_runs(log))
    change(page, i)
    deadline = time.monotonic() + CHANGE_TIMEOUT_S
    while len(runs := _runs(log)) == before:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the change {i} caused no script run on {self_url(page)}: "
                               + page.locator("[data-testid=stRadioOption]").evaluate_all(
                                   "els => els.map(e => e.innerText + ':' + e.dataset.selected).join(' ')"))
        time.sleep(0.01)
    _wait_idle(page)
    # Let the browser apply the run's result before the next change (a click on a widget the
    # browser is still redrawing can be lost), and let a run the first one triggered (st.rerun)
    # land in the log too.
    time.sleep(SETTLE_S)
    _wait_idle(page)
    runs = _runs(log, clock)[before:]
    return sum(s for s, _ in runs), ",".join(sorted({k for _, k in runs}))


class _Session:
    def __init__(self, browser, base_url: str, log: Path, path: str) -> None:
        self.log = log
        self.context = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="en-US")
        self.page = self.context.new_page()
        self.page.goto(f"{base_url}/{path}")
        _wait_idle(self.page)
        self.page.wait_for_timeout(500)
        _wait_idle(self.page)

    def time(self, change: Callable, i: int, clock: str = "wall") -> tuple[float, str]:
        self.page.bring_to_front()
        return _change_and_time(self.page, self.log, change, i, clock)

    def close(self) -> None:
        self.context.close()


def summarize(key: str, page_s: list[float], ref_s: list[float], kinds: set[str], client: str = "") -> dict:
    """One page's timed reruns against the reference's, printed as a line.

    ``page_s[i]`` and ``ref_s[i]`` were measured one right after the other, so the ratio is the
    median of the pairs' ratios: load that comes and goes on a shared machine hits both sides of a
    pair alike. The medians of each side are reported too."""
    page_ms, ref_ms = statistics.median(page_s) * 1e3, statistics.median(ref_s) * 1e3
    ratio = statistics.median(p / r for p, r in zip(page_s, ref_s))
    run = "+".join(sorted(kinds))
    print(f"{key:<12} server rerun {page_ms:6.1f} ms vs {ref_ms:5.1f} ms: {ratio:4.2f}x"
          f"   ({run} run{', ' + client if client else ''})", flush=True)
    return {"ms": round(page_ms, 2), "trivial_ms": round(ref_ms, 2), "ratio": round(ratio, 3), "run": run}


def rerun_ratios(runs: int, pages: dict[str, str], clock: str = "wall") -> dict[str, dict]:
    """Per page key (``{key: url path with query}``): medians of page and reference reruns."""
    from playwright.sync_api import sync_playwright

    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        trivial = Path(tmp) / "trivial_app.py"
        trivial.write_text(TRIVIAL_SCRIPT)
        with timed_server(ROOT / "app.py") as (app_url, app_log), \
                timed_server(trivial) as (ref_url, ref_log), sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            reference = _Session(browser, ref_url, ref_log, "")
            for key, path in pages.items():
                change = BROWSER_CHANGES[key]
                try:
                    session = _Session(browser, app_url, app_log, path)
                    for i in range(3):  # warm both sides
                        session.time(change, i, clock)
                        reference.time(TRIVIAL_CHANGE, i, clock)
                    page_s, ref_s, kinds = [], [], set()
                    for i in range(3, 3 + runs):  # i carries on, so every change flips the widget
                        seconds, kind = session.time(change, i, clock)
                        page_s.append(seconds)
                        kinds.add(kind)
                        ref_s.append(reference.time(TRIVIAL_CHANGE, i, clock)[0])
                    session.close()
                except Exception as exc:  # a broken page is reported; the others are still measured
                    print(f"{key:<12} FAILED: {exc}", flush=True)
                    results[key] = {"error": str(exc)[:300]}
                    continue
                results[key] = summarize(key, page_s, ref_s, kinds, "server CPU time" if clock == "cpu" else "")
            browser.close()
    return results

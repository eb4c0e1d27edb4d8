"""Real-browser fixtures: a ``streamlit run app.py`` server and Debian's chromium via Playwright.

Page authors reuse these in ``tests/e2e/test_<page>_browser.py``::

    from ui.i18n import translate

    def test_attention_heads_slider(page, wait_for_app, screenshot):
        p = page("/attention?lang=zh&heads=2")        # a new tab on the shared server, app run finished
        assert p.locator("h1").first.inner_text() == translate("attention.title", "zh")
        p.get_by_role("slider").first.press("ArrowRight")
        wait_for_app(p)                                  # the rerun that the change caused has finished
        screenshot(p, "attention_heads_zh")              # test-artifacts/attention_heads_zh.png

Fixtures:

* ``server_url``: base URL (no trailing slash) of one server shared by the whole session;
* ``fresh_server_url``: a server of its own, started for one test (deep links on a fresh server);
* ``browser``: Debian chromium (``/usr/bin/chromium``, or ``$TP_CHROMIUM``), headless, shared;
* ``page``: factory ``page(path="", *, locale="en-US", base_url=None) -> playwright Page`` that
  opens ``path`` in a new browser context and waits for the app's run to finish;
* ``wait_for_app`` / ``screenshot``: the module functions below, as fixtures.

No chromium: the tests skip with the reason, except under ``CI=true`` where that (and any other
skip in tests/e2e and tests/ops: ``tests/conftest.py``) is a failure. ``playwright install`` is
never needed. The servers run with ``TP_I18N_STRICT=1``, so a missing translation shows up as an
exception element. Under pytest-xdist each worker has its own ``server_url`` and ``browser``.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Callable, Iterator

import pytest
from playwright.sync_api import expect

from bench import server as bench_server
from tests.conftest import in_ci  # noqa: F401 (tests/ops import it from here too)
from tests.e2e.widgets import PHONE_USER_AGENT

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = Path(os.environ.get("TP_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SERVER_START_TIMEOUT_S = 90
APP_RUN_TIMEOUT_MS = 90_000  # a first run imports torch; the test machine may be busy
EXCEPTION = '[data-testid="stException"]'

# Assertions retry for this long (Playwright's default is 5 s, too short on a busy CI machine).
expect.set_options(timeout=60_000)


# ------------------------------------------------------------------ the Streamlit server


def start_server(log_name: str) -> tuple[subprocess.Popen, str]:
    """Start ``streamlit run app.py`` on a free port; return the process and its base URL once healthy.

    Its output goes to ``test-artifacts/<log_name>.log``; it runs with ``TP_I18N_STRICT=1`` plus
    whatever the calling test put in the environment.
    """
    ARTIFACTS.mkdir(exist_ok=True)
    return bench_server.start_server("app.py", env={"TP_I18N_STRICT": "1"}, log_path=ARTIFACTS / f"{log_name}.log",
                                     timeout_s=SERVER_START_TIMEOUT_S, new_session=False)


stop_server = bench_server.stop_server


def logged_failures(log_name: str, limit: int = 4000) -> str:
    """The tracebacks ``ui.page_errors`` wrote to ``test-artifacts/<log_name>.log`` (a visitor sees one
    sentence; the log holds the cause), the last ``limit`` characters: for a failing test's message."""
    return bench_server.logged_tracebacks(ARTIFACTS / f"{log_name}.log", limit)


@pytest.fixture(scope="session")
def server_url() -> Iterator[str]:
    proc, url = start_server(f"server-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}")  # one per xdist worker
    try:
        yield url
    finally:
        stop_server(proc)


@pytest.fixture
def fresh_server_url(request) -> Iterator[str]:
    proc, url = start_server(f"server-{request.node.name}")
    try:
        yield url
    finally:
        stop_server(proc)


# ------------------------------------------------------------------ the browser


@pytest.fixture(scope="session")
def browser():
    if not CHROMIUM.exists():
        message = f"{CHROMIUM} is missing: apt-get install chromium fonts-noto-cjk (or run .ci/run)"
        if in_ci():
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        instance = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield instance
        instance.close()


def wait_for_app(page, timeout: float = APP_RUN_TIMEOUT_MS) -> None:
    """Wait until the page is connected and Streamlit's script run has finished (no sleeps).

    After an action that starts a rerun, first wait for something the action must change (the
    URL, a heading: ``expect(...)`` retries) and then call this, so an old "notRunning" is not
    mistaken for the new one.
    """
    page.wait_for_selector('[data-testid="stApp"][data-test-connection-state="CONNECTED"]', timeout=timeout)
    page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]', timeout=timeout)


def screenshot(page, name: str) -> Path:
    """Save the whole page as ``test-artifacts/<name>.png`` (git-ignored) and return its path.

    Streamlit scrolls inside its main section, not the document, so the viewport is made as tall
    as the content for the shot (at most 5000 px) and then restored.
    """
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    viewport = page.viewport_size
    content = page.evaluate(
        "() => { const m = document.querySelector('[data-testid=\"stMain\"]');"
        " return m ? m.scrollHeight : document.body.scrollHeight; }"
    )
    tall = min(max(viewport["height"], int(content)), 5000)
    if tall != viewport["height"]:
        page.set_viewport_size({"width": viewport["width"], "height": tall})
    try:
        page.screenshot(path=str(path), full_page=True)
    finally:
        if tall != viewport["height"]:
            page.set_viewport_size(viewport)
    return path


@pytest.fixture(name="wait_for_app")
def wait_for_app_fixture() -> Callable:
    return wait_for_app


@pytest.fixture(name="screenshot")
def screenshot_fixture() -> Callable:
    return screenshot


@pytest.fixture
def page(browser, server_url) -> Iterator[Callable]:
    """Factory: ``page("/attention?lang=zh", locale="zh-CN")`` -> a Page whose first run finished.
    ``phone=True``: a phone's browser (390 px, a phone's User-Agent, touch) from the first request."""
    contexts = []

    def open_page(path: str = "", *, locale: str = "en-US", base_url: str | None = None, phone: bool = False):
        options = dict(viewport={"width": 390, "height": 844}, user_agent=PHONE_USER_AGENT, is_mobile=True,
                       has_touch=True) if phone else dict(viewport={"width": 1440, "height": 1000})
        context = browser.new_context(locale=locale, **options)
        context.set_default_timeout(APP_RUN_TIMEOUT_MS)
        contexts.append(context)
        tab = context.new_page()
        tab.goto(f"{base_url or server_url}{path if path.startswith('/') or not path else '/' + path}")
        # The title first: before the first run starts, the app can already read "notRunning".
        tab.locator('[data-testid="stMain"] h1').first.wait_for()
        wait_for_app(tab)
        return tab

    yield open_page
    for context in contexts:
        context.close()

"""The training page in a real browser: a live run, its charts updating in place, a page switch
and back, stop; a closed tab's run ends; a finished run used elsewhere, downloaded, uploaded.

These tests use a server of their own, started with ``TP_TRAINING_DEBUG=1`` so that the page
prints how many training threads are alive in the server process (``training-threads-alive: N``).
"""
from __future__ import annotations

import re
import time

import pytest

from tests.e2e import conftest as _conftest  # the server starter and timeouts of the browser tests
from tests.e2e.widgets import wait_for
from playwright.sync_api import expect

from ui.i18n import LANGS, translate


EXCEPTION = '[data-testid="stException"]'
MAIN = '[data-testid="stMain"]'
CHART = '[data-testid="stVegaLiteChart"]'
THREADS = re.compile(r"training-threads-alive: (\d+)")
MS = 1000




@pytest.fixture(scope="module")
def training_server():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TP_TRAINING_DEBUG", "1")
        mp.setenv("TP_MAX_TRAINING_RUNS", "4")
        proc, url = _conftest.start_server("server-training")
    try:
        yield url
    finally:
        _conftest.stop_server(proc)


@pytest.fixture
def open_tab(browser, training_server, wait_for_app):
    """Factory: ``open_tab(path, locale=...)`` -> (context, page) on the training server, run finished."""
    contexts = []

    def open_(path: str, locale: str = "en-US"):
        context = browser.new_context(locale=locale, viewport={"width": 1440, "height": 2400})
        context.set_default_timeout(_conftest.APP_RUN_TIMEOUT_MS)
        contexts.append(context)
        tab = context.new_page()
        tab.goto(f"{training_server}{path}")
        wait_for_app(tab)
        tab.locator('[data-testid="stMain"] h1').first.wait_for()
        return context, tab

    yield open_
    for context in contexts:
        try:
            context.close()
        except Exception:
            pass


def step_now(p) -> int:
    """The run's current step, from the first metric ("Step (of 20,000)  123")."""
    text = p.locator('[data-testid="stMetricValue"]').first.inner_text(timeout=5 * MS)
    return int(text.replace(",", "").strip())


def threads_alive(p) -> int:
    return int(THREADS.search(p.get_by_text(THREADS).first.inner_text(timeout=5 * MS)).group(1))


def test_live_run_charts_page_switch_and_stop(open_tab, wait_for_app, screenshot):
    _, p = open_tab("/training?lang=en&training_steps=20000")
    p.get_by_role("button", name=translate("training.control.start", "en")).click()
    # The exact-match chart comes with the first evaluation, at step 100 of a 20,000-step run
    # (ui/training/settings.py: every max_steps // 20 steps, at most 100): on a loaded machine that is minutes.
    wait_for(lambda: step_now(p) >= 100, 300)
    expect(p.locator(CHART)).to_have_count(5 + 2 + 1)  # planned, 4 live charts, 2 heads, the copy's alignment
    loss = p.locator(CHART).nth(1)
    canvases = [p.locator(CHART).nth(i).locator("canvas, svg").first.element_handle() for i in range(8)]
    first_loss = loss.screenshot()  # (it waits for the chart to stand still: read the step after it)
    first_step = step_now(p)
    wait_for(lambda: step_now(p) >= first_step + 5)
    assert loss.screenshot() != first_loss  # the loss chart changed...
    assert all(c.evaluate("e => e.isConnected") for c in canvases)  # ...in place, nothing remounted
    assert p.locator(EXCEPTION).count() == 0
    screenshot(p, "training_live_en")

    sidebar = p.locator('[data-testid="stSidebar"]')
    sidebar.get_by_role("link", name=translate("attention.title", "en"), exact=True).click()
    expect(p.locator('[data-testid="stMain"] h1').first).to_have_text(translate("attention.title", "en"))
    status = sidebar.get_by_text(re.compile(r"Training copy-tiny-1: step \d+ of 20,000"))
    expect(status).to_be_visible()
    seen = status.inner_text()
    expect(status).not_to_have_text(seen, timeout=30 * MS)  # it refreshes itself on the other page
    screenshot(p, "training_sidebar_on_attention_en")
    away_step = int(re.search(r"step (\d+)", status.inner_text()).group(1))

    sidebar.get_by_role("link", name=translate("training.title", "en"), exact=True).click()
    expect(p.locator('[data-testid="stMain"] h1').first).to_have_text(translate("training.title", "en"))
    wait_for_app(p)
    wait_for(lambda: step_now(p) >= away_step)  # the same run, still going
    assert threads_alive(p) == 1
    p.get_by_role("button", name=translate("training.control.stop", "en")).click()
    expect(p.get_by_text(re.compile(r"Stopped at step \d+"))).to_be_visible()
    stopped = re.compile(r"Training of copy-tiny-1 stopped at step \d+ of 20,000, loss \d")
    expect(sidebar.get_by_text(stopped)).to_be_visible()  # the sidebar says stopped, not finished
    wait_for_app(p)
    p.reload()
    wait_for_app(p)
    wait_for(lambda: threads_alive(p) == 0, 30)


SIDEBAR_AND_METRIC = """() => {
    const status = [...document.querySelectorAll('[data-testid="stSidebar"] [data-testid="stCaptionContainer"]')]
        .map(e => e.innerText.trim()).find(text => text.includes("copy-tiny-1"));
    const metric = document.querySelector('[data-testid="stMain"] [data-testid="stMetricValue"]');
    return [status || "", metric ? metric.innerText.trim() : ""];
}"""


@pytest.mark.parametrize("lang", LANGS)
def test_the_sidebar_counts_with_the_page_while_training(open_tab, wait_for_app, screenshot, lang):
    """On the training page the sidebar's status moves with the live panel, step for step and
    written alike (it used to say step 0 for the whole run), and agrees with it once paused."""
    _, p = open_tab(f"/training?lang={lang}&training_steps=20000", locale="zh-CN" if lang == "zh" else "en-US")
    p.get_by_role("button", name=translate("training.control.start", lang)).click()
    wait_for(lambda: step_now(p) >= 1)

    def agree_at_step_above(lowest: int) -> int:
        status, metric = p.evaluate(SIDEBAR_AND_METRIC)  # read together: one moment of the page
        prefix = translate("common.training.running", lang, model="copy-tiny-1", step=metric, total="20,000",
                           loss="")
        assert status.startswith(prefix.rstrip()), (status, metric)
        assert int(metric.replace(",", "")) > lowest
        return int(metric.replace(",", ""))

    seen = []
    wait_for(lambda: seen.append(agree_at_step_above(0)) is None, timeout=60)
    wait_for(lambda: seen.append(agree_at_step_above(seen[-1] + 2)) is None, timeout=60)  # and again, further on
    screenshot(p, f"training_sidebar_live_{lang}")
    p.get_by_role("button", name=translate("training.control.pause", lang)).click()
    expect(p.get_by_text(translate("training.run.paused", lang))).to_be_visible()
    wait_for_app(p)

    def paused_alike() -> bool:
        status, metric = p.evaluate(SIDEBAR_AND_METRIC)
        return status.startswith(translate("common.training.paused", lang, model="copy-tiny-1", step=metric,
                                           total="20,000", loss="").rstrip())

    wait_for(paused_alike, timeout=20)
    screenshot(p, f"training_sidebar_paused_{lang}")
    p.get_by_role("button", name=translate("training.control.stop", lang)).click()
    wait_for_app(p)


@pytest.mark.parametrize("lang", LANGS)
def test_a_link_to_a_model_of_another_session_says_so_and_how_to_share(open_tab, screenshot, lang):
    """?model= naming a model trained in someone else's session: a notice that stays (a toast used
    to flash by) says such a model lives only in its trainer's session and how to share it."""
    _, p = open_tab(f"/attention?lang={lang}&model=copy-tiny-1", locale="zh-CN" if lang == "zh" else "en-US")
    notice = p.locator(".st-key-model_elsewhere")
    expect(notice).to_be_visible()
    download, upload = translate("training.download.button", lang), translate("training.upload.heading", lang)
    expect(notice).to_contain_text("copy-tiny-1")
    expect(notice).to_contain_text(download)
    expect(notice).to_contain_text(upload)
    time.sleep(6)  # longer than a toast stays
    expect(notice).to_be_visible()
    screenshot(p, f"model_elsewhere_notice_{lang}")
    notice.get_by_role("button", name=translate("common.link_and_paste.model_elsewhere_dismiss", lang)).click()
    expect(notice).to_have_count(0)


def test_closing_the_tab_ends_its_run(open_tab, wait_for_app):
    owner_context, owner = open_tab("/training?lang=en&training_steps=20000")
    owner.get_by_role("button", name=translate("training.control.start", "en")).click()
    wait_for(lambda: step_now(owner) >= 1)
    _, watcher = open_tab("/training?lang=en")
    assert threads_alive(watcher) == 1  # the owner's run; the watcher sees no run of its own
    expect(watcher.get_by_text(translate("training.run.none", "en").replace("**", ""))).to_be_visible()
    owner_context.close()  # the tab (and its browser session) goes away

    def ended() -> bool:
        watcher.reload()
        wait_for_app(watcher)
        return threads_alive(watcher) == 0

    wait_for(ended, timeout=30, pause=1.0)


def test_finished_run_used_elsewhere_downloaded_and_uploaded(open_tab, wait_for_app, screenshot, tmp_path):
    _, p = open_tab("/training?lang=zh&training_steps=12&training_task=reverse", locale="zh-CN")
    p.get_by_role("button", name=translate("training.control.start", "zh")).click()
    done = translate("training.run.finished_step_cap", "zh", step=12)
    expect(p.get_by_text(done)).to_be_visible(timeout=120 * MS)
    wait_for_app(p)
    expect(p.get_by_text(translate("training.results.heading", "zh"))).to_be_visible()
    finished = translate("common.training.finished", "zh", model="reverse-tiny-1", step=12, total=12, loss="").rstrip()
    expect(p.locator('[data-testid="stSidebar"]').get_by_text(finished)).to_be_visible()
    screenshot(p, "training_finished_zh")

    with p.expect_download() as info:
        p.get_by_role("button", name=translate("training.download.button", "zh")).click()
    saved = tmp_path / "reverse-tiny-1.pt"
    info.value.save_as(saved)
    assert saved.stat().st_size > 10_000

    p.get_by_role("button", name=translate("training.use.button", "zh")).click()
    wait_for_app(p)
    sidebar = p.locator('[data-testid="stSidebar"]')
    chosen = sidebar.get_by_role("combobox", name=translate("common.sidebar.model", "zh"))
    label = translate("common.model.label_session", "zh", name="reverse-tiny-1")
    expect(chosen).to_have_value(label)
    sidebar.get_by_role("link", name=translate("attention.title", "zh"), exact=True).click()
    expect(p.locator('[data-testid="stMain"] h1').first).to_have_text(translate("attention.title", "zh"))
    expect(chosen).to_have_value(label)
    sidebar.get_by_role("link", name=translate("training.title", "zh"), exact=True).click()
    # The title first: until the training page's run starts, the app still reads Attention's "notRunning".
    expect(p.locator('[data-testid="stMain"] h1').first).to_have_text(translate("training.title", "zh"))
    wait_for_app(p)

    p.get_by_text(translate("training.upload.heading", "zh")).click()
    wait_for_app(p)  # the panel keeps its open state on the server: opening it is a run
    expect(p.locator('[data-testid="stFileUploaderDropzone"]')).to_be_visible()  # the panel is open
    upload = p.locator('[data-testid="stFileUploader"] input[type="file"]')
    upload.set_input_files(files=[{"name": "junk.pt", "mimeType": "application/octet-stream",
                                   "buffer": b"this is not a checkpoint"}])
    expect(p.get_by_text(translate("training.upload.error.not_checkpoint", "zh"))).to_be_visible()
    wait_for_app(p)
    expect(p.get_by_text(translate("training.upload.error.not_checkpoint", "zh"))).to_be_visible()  # still open
    assert p.locator(EXCEPTION).count() == 0
    screenshot(p, "training_upload_error_zh")
    upload.set_input_files(str(saved))
    expect(p.get_by_text(re.compile("已加载 reverse-tiny-1"))).to_be_visible()
    # The same name, now from a file: the sidebar says so (not "trained here").
    expect(chosen).to_have_value(translate("common.model.label_uploaded", "zh", name="reverse-tiny-1"))
    assert p.locator(EXCEPTION).count() == 0


@pytest.mark.parametrize("lang", LANGS)
def test_a_translation_run_on_bpe_pieces_says_what_changes_and_trains(open_tab, wait_for_app, screenshot, lang):
    """#32: the tokens setting of a translation task, its measured caption, and a short run on the pieces."""
    _, p = open_tab(f"/training?lang={lang}&training_task=en-zh&training_tokens=bpe&training_steps=12",
                    locale="zh-CN" if lang == "zh" else "en-US")
    expect(p.get_by_role("radio", name=translate("training.settings.tokens_bpe", lang))).to_be_checked()
    caption = p.get_by_text(re.compile("▁"))  # the unseen word's pieces, each word start written ▁
    expect(caption.first).to_be_visible()
    named = p.locator(MAIN).get_by_text(re.compile(re.escape(translate("training.compare.setting.tokens.bpe", lang))))
    before = named.count()  # the setting's own option
    p.get_by_role("button", name=translate("training.control.start", lang)).click()
    expect(p.get_by_text(translate("training.run.finished_step_cap", lang, step=12))).to_be_visible(timeout=120 * MS)
    wait_for_app(p)
    expect(named).not_to_have_count(before)  # the run's settings line (and its row in the compare list) name the pieces
    expect(p.get_by_role("heading", name=translate("training.probe.heading", lang))).to_be_visible()
    assert p.locator(EXCEPTION).count() == 0
    screenshot(p, f"training_bpe_run_{lang}")

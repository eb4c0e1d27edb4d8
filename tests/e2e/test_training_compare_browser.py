"""The training page's compare list in a real browser (issue #23): two finished runs and one live run
overlaid in one set of charts that update in place, in English and Chinese, at the normal width and
at 390 px, with screenshots (test-artifacts/training_compare_*.png)."""
from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import expect

from tests.e2e import conftest as _conftest
from tests.e2e.widgets import switch_language, wait_for
from ui.i18n import translate


EXCEPTION = '[data-testid="stException"]'
CHART = '[data-testid="stVegaLiteChart"]'
LEGEND = "ul.training-overlay-legend li"
MS = 1000
WIDE, NARROW = {"width": 1440, "height": 2400}, {"width": 390, "height": 2000}


@pytest.fixture(scope="module")
def compare_server():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TP_MAX_TRAINING_RUNS", "4")
        proc, url = _conftest.start_server("server-training-compare")
    try:
        yield url
    finally:
        _conftest.stop_server(proc)


def step_now(p) -> int:
    """The current run's step, from the first metric ("Step (of 20,000)  123")."""
    return int(p.locator('[data-testid="stMetricValue"]').first.inner_text(timeout=5 * MS).replace(",", "").strip())


def choose(p, label: str) -> None:
    """Click the radio option (or checkbox) whose visible text is ``label``, in the main area."""
    p.locator('[data-testid="stMain"] label').filter(has_text=re.compile(f"^{re.escape(label)}$")).first.click()


def train(p, wait_for_app, steps: int, number: int) -> None:
    """Start a run and wait until it is listed as run ``number`` and has finished its ``steps``."""
    p.get_by_role("button", name=translate("training.control.start", "en")).click()
    expect(p.get_by_text(translate("training.run.finished_step_cap", "en", step=steps))).to_be_visible(
        timeout=180 * MS)
    wait_for_app(p)
    expect(p.get_by_role("checkbox", name=f"copy-tiny-{number}", exact=True)).to_have_count(1)


def section_screenshot(p, heading: str, name: str) -> None:
    """``test-artifacts/<name>.png``: the window scrolled to the compare list (a narrow page is taller
    than the whole-page shot's 5000 px, so that one ends before the list)."""
    p.get_by_role("heading", name=heading).evaluate("e => e.scrollIntoView({block: 'start'})")
    time.sleep(0.5)
    _conftest.ARTIFACTS.mkdir(exist_ok=True)
    p.screenshot(path=str(_conftest.ARTIFACTS / f"{name}.png"))


def check_fits(p, width: int) -> None:
    """Nothing of the compare section sticks out of a ``width``-px window."""
    for element in p.locator(f"{LEGEND}, {CHART}").all():
        box = element.bounding_box()
        if box is not None:
            assert box["x"] >= -1 and box["x"] + box["width"] <= width + 1, box


def test_two_finished_runs_and_a_live_one_overlaid_in_both_languages(browser, compare_server, wait_for_app,
                                                                       screenshot):
    context = browser.new_context(locale="en-US", viewport=WIDE)
    context.set_default_timeout(_conftest.APP_RUN_TIMEOUT_MS)
    try:
        p = context.new_page()
        p.goto(f"{compare_server}/training?lang=en&training_steps=15")
        wait_for_app(p)
        train(p, wait_for_app, 15, 1)
        choose(p, translate("training.variant.norm_first.pre", "en"))
        wait_for_app(p)
        train(p, wait_for_app, 15, 2)
        expect(p.locator(LEGEND)).to_have_count(2)  # both finished runs ticked and overlaid

        steps = p.get_by_role("spinbutton", name=translate("training.settings.steps", "en"))
        steps.fill("20000")
        steps.press("Enter")
        wait_for_app(p)
        choose(p, translate("training.variant.norm_kind.rms", "en"))
        wait_for_app(p)
        p.get_by_role("button", name=translate("training.control.start", "en")).click()
        wait_for(lambda: step_now(p) >= 3, timeout=120)
        legend = p.locator(LEGEND)
        expect(legend).to_have_count(3)
        expect(legend.nth(2)).to_contain_text("copy-tiny-3")
        expect(legend.nth(2)).to_contain_text("RMSNorm")
        expect(legend.nth(0)).to_contain_text("post-norm")
        expect(legend.nth(1)).to_contain_text("pre-norm")
        colors = [legend.nth(i).locator("span").evaluate("e => getComputedStyle(e).backgroundColor")
                  for i in range(3)]
        assert len(set(colors)) == 3

        overlay_loss = p.locator(CHART).nth(-3)  # the overlay's loss, exact match and rate charts come last
        canvas = overlay_loss.locator("canvas, svg").first.element_handle()
        before = overlay_loss.screenshot()
        first = step_now(p)
        # past step 50, the second attention snapshot: nothing may appear above the overlay then
        wait_for(lambda: step_now(p) >= max(first + 20, 60), timeout=120)
        assert overlay_loss.screenshot() != before  # the live run's curve grows in the overlay...
        assert canvas.evaluate("e => e.isConnected"), (first, step_now(p))  # ...in place, not remounted
        assert p.locator(EXCEPTION).count() == 0
        check_fits(p, WIDE["width"])
        screenshot(p, "training_compare_en")
        p.set_viewport_size(NARROW)
        time.sleep(1.5)  # the charts resize to the narrow column
        check_fits(p, NARROW["width"])
        screenshot(p, "training_compare_en_390px")
        section_screenshot(p, translate("training.compare.heading", "en"), "training_compare_en_390px_list")
        p.set_viewport_size(WIDE)

        switch_language(p, "zh", translate("training.title", "zh"))
        expect(legend).to_have_count(3)
        expect(legend.nth(1)).to_contain_text(translate("training.compare.setting.norm_first.on", "zh"))
        expect(p.get_by_role("heading", name=translate("training.compare.heading", "zh"))).to_be_visible()
        wait_for(lambda: step_now(p) >= first + 30, timeout=120)  # still training, still live
        assert p.locator(EXCEPTION).count() == 0
        screenshot(p, "training_compare_zh")
        p.set_viewport_size(NARROW)
        time.sleep(1.5)
        check_fits(p, NARROW["width"])
        screenshot(p, "training_compare_zh_390px")
        section_screenshot(p, translate("training.compare.heading", "zh"), "training_compare_zh_390px_list")
        p.set_viewport_size(WIDE)
        p.get_by_role("button", name=translate("training.control.stop", "zh")).click()
        wait_for_app(p)
    finally:
        context.close()

"""Every page on a 390×844 phone screen, in both languages: nothing wider than the screen (a wide
formula or table scrolls inside its own box), and every control's accessible name is plain text
(a label with ``**`` or LaTeX would be read out as markup). Screenshots in test-artifacts/."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from ui.i18n import LANGS


PHONE = {"width": 390, "height": 844}
VIEWS = (  # every page, and the sections of a page that draw something else
    "/", "/tokens", "/masks", "/masks?masks_view=printout", "/masks?masks_view=effect", "/masks?masks_view=row", "/masks?masks_view=sparse", "/masks?masks_view=families",
    "/positional-encoding", "/attention", "/attention?attention_view=heads", "/attention?attention_view=inside",
    "/attention?attention_view=stats", "/attention?attention_view=ablation", "/decoding", "/decoding?decoding_view=compare",
    "/decoding?decoding_view=forcing", "/training", "/training?training_task=en-zh&training_tokens=bpe&training_head_dim=256",
    "/feed-forward", "/feed-forward?feed_forward_view=position", "/feed-forward?feed_forward_view=params", "/residual-stream",
    "/residual-stream?residual_stream_view=off", "/residual-stream?residual_stream_view=dropout", "/layer-norm", "/output-and-loss", "/output-and-loss?output_and_loss_view=seed",
    "/output-and-loss?output_and_loss_view=loss", "/output-and-loss?output_and_loss_view=smoothing", "/bleu", "/bleu?bleu_view=worked", "/bleu?bleu_view=int8",
    "/attention-cost", "/paper-vs-code", "/paper-vs-code?paper_vs_code_row=shared_layer",
)
MARKUP = re.compile(r"\*\*|\$|\\|`|:material/")

# Elements wider than the screen whose own box does not scroll, outside formulas' hidden MathML.
OVERFLOW_JS = """() => {
  const limit = window.innerWidth + 1;
  const main = document.querySelector('[data-testid="stMain"]');
  const sticking = [];
  for (const el of main.querySelectorAll('*')) {
    if (el.closest('.katex-mathml')) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.right <= limit) continue;
    let scroller = el.parentElement, contained = false;
    while (scroller && scroller !== main) {
      const style = getComputedStyle(scroller);
      if (/(auto|scroll|hidden)/.test(style.overflowX) && scroller.getBoundingClientRect().right <= limit) {
        contained = true; break;
      }
      scroller = scroller.parentElement;
    }
    if (!contained) sticking.push(`${el.tagName}.${String(el.className.baseVal ?? el.className).slice(0, 30)}`);
  }
  return {page: Math.max(document.documentElement.scrollWidth, main.scrollWidth), sticking: sticking.slice(0, 5)};
}"""


def overflow_once_settled(page, timeout_ms: int = 15_000) -> dict:
    """OVERFLOW_JS's measure once the layout has settled. After a run or a change of the window's size, Streamlit
    resizes tables, canvases and charts from a ResizeObserver: for a moment (0.3 s here, seconds under a loaded CI)
    they keep their old width. So this waits, polling, until the page fits, and measures again: a layout that stays
    too wide still fails, with what sticks out."""
    fits = f"() => {{ const w = ({OVERFLOW_JS})(); return w.page <= window.innerWidth + 1 && !w.sticking.length; }}"
    try:
        page.wait_for_function(fits, timeout=timeout_ms, polling=100)
    except PlaywrightTimeoutError:
        pass  # measured below, and reported by the caller's assertion
    return page.evaluate(OVERFLOW_JS)


def view_name(path: str) -> str:
    return re.sub(r"\W+", "_", path.strip("/")) or "home"


@pytest.mark.parametrize("lang", LANGS)
def test_every_view_fits_a_phone_and_names_its_controls_in_plain_text(page, server_url, wait_for_app, screenshot,
                                                                        lang):
    p = page(f"/?lang={lang}")
    p.set_viewport_size(PHONE)
    problems = []
    for path in VIEWS:
        p.goto(f"{server_url}{path}{'&' if '?' in path else '?'}lang={lang}")
        wait_for_app(p)
        p.locator('[data-testid="stMain"] h1').first.wait_for()
        width = overflow_once_settled(p)
        if width["page"] > PHONE["width"] + 1 or width["sticking"]:
            problems.append((path, "too wide", width))
        names = p.evaluate("() => [...document.querySelectorAll('[aria-label]')].map(e => e.getAttribute('aria-label'))")
        marked = [name for name in names if name and MARKUP.search(name)]
        if marked:
            problems.append((path, "markup in accessible names", marked))
        screenshot(p, f"phone_{view_name(path)}_{lang}")
    assert problems == []

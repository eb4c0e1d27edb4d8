"""The browser code the other pages will need, loaded while the visitor reads the first one (#35 item 22).

Streamlit's frontend loads each kind of element's code the first time a page shows one: a fresh tab's
first page with a chart waits for plotly's 4.7 MB chunk (and 0.3 s of chromium's time to evaluate it),
the first page with a table for the data grid's, and so on. So a class's first click from Home to
Tokens took 1.7-1.8 s where the same click later takes about 0.4 s.

Every page therefore carries a small script (our own text, never a visitor's) that, once the tab's
first page has finished and the browser is idle, imports those chunks one by one, each in an idle
moment of its own. They are the very modules the frontend would import later (the same URLs, next to
Streamlit's ``index.*.js``), so the browser keeps them and a page that needs one finds it ready. It
downloads nothing a visitor would not download anyway on the pages they open, and nothing at all for a
browser that asked to save data. The script runs once per tab.

The chunks are found by name in the installed Streamlit's static folder when the app starts; a name
that is not there (another Streamlit) is left out, and ``tests/unit/test_prefetch.py`` says so for the
pinned one.
"""
from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

import streamlit as st

# The element code the app's pages use beyond Home's (measured: the chunks a tab fetched on its first
# visit of each page), in the order a class meets them; the biggest ones first among equals.
CHUNKS = (
    "PlotlyChart",  # every page's charts
    "rehype-katex",  # formulas
    "TextArea", "ButtonGroup",  # Tokens' sentences and pills
    "Slider", "TextInput", "Metric",  # Positional encoding on
    "StreamlitSyntaxHighlighter",  # the code behind every picture
    "DataFrame", "arrowFormatUtils",  # tables (LayerNorm, BLEU, Training)
    "NumberInput", "Table",  # BLEU, the cost of attention
    "ArrowVegaLiteChart", "embed",  # Training's live charts (vega-embed is the second)
    "FileUploader",  # Training's checkpoint upload
)
CONTAINER_KEY = "tp_prefetch"  # hidden by ui/page_css.py
QUIET_MS = 2000  # start once the tab's first page has finished its run this long ago (its charts drawn)
LOOK_MS = 250
IDLE_TIMEOUT_MS = 4000  # a chunk waits at most this long for an idle moment


def static_js_dir() -> Path:
    return Path(st.__file__).parent / "static" / "static" / "js"


@lru_cache(maxsize=1)
def chunk_files(folder: Path | None = None) -> tuple[str, ...]:
    """The file names of :data:`CHUNKS` in the installed Streamlit (``Name.hash.js``), in that order."""
    folder = folder or static_js_dir()
    names = sorted(p.name for p in folder.glob("*.js")) if folder.is_dir() else []
    found = []
    for chunk in CHUNKS:
        pattern = re.compile(rf"{re.escape(chunk)}\.[A-Za-z0-9_-]+\.js")
        found.extend(name for name in names if pattern.fullmatch(name))
    return tuple(found)


SCRIPT = """<script>
(() => {
  if (window.__tpPrefetch) return;  // once per tab
  window.__tpPrefetch = true;
  if (navigator.connection && navigator.connection.saveData) return;
  const index = document.querySelector('script[type="module"][src*="/static/js/index."]');
  if (!index) return;
  const base = new URL(".", index.src);  // where Streamlit's own chunks are served (any base URL path)
  const files = %(files)s;
  const idle = window.requestIdleCallback || ((run) => setTimeout(run, 50));
  const next = (i) => {
    if (i >= files.length) { window.__tpPrefetched = files.length; return; }
    idle(() => import(new URL(files[i], base).href).catch(() => {}).finally(() => next(i + 1)),
         {timeout: %(idle_timeout)d});
  };
  let quiet = 0;  // the page's run has been over for this many looks in a row (its charts drawing meanwhile)
  const start = () => {
    const app = document.querySelector('[data-testid="stApp"]');
    quiet = app && app.getAttribute("data-test-script-state") !== "running" ? quiet + 1 : 0;
    if (quiet * %(look_ms)d < %(quiet_ms)d) { setTimeout(start, %(look_ms)d); return; }
    next(0);
  };
  start();
})();
</script>"""


@lru_cache(maxsize=1)
def script() -> str:
    return SCRIPT % {"files": json.dumps(list(chunk_files())), "idle_timeout": IDLE_TIMEOUT_MS,
                     "quiet_ms": QUIET_MS, "look_ms": LOOK_MS}


def prefetch_page_code() -> None:
    """app.py, every run: the hidden element whose script loads :data:`CHUNKS` (once per tab)."""
    if not chunk_files():
        return
    with st.container(key=CONTAINER_KEY):
        st.html(script(), unsafe_allow_javascript=True)

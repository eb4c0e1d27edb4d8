"""AppTest fixtures: a fresh simulated session of ``app.py`` per test, strict about translations."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import pytest
from streamlit.testing.v1 import AppTest

from ui.code_panel import open_key
from ui.tour import TOUR

# Set before any catalog lookup: a missing key must fail the test, not show the key.
os.environ["TP_I18N_STRICT"] = "1"

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app.py"
RUN_TIMEOUT_S = 60  # the first run imports torch; on a busy 2-core machine that can take a while


PANEL_NAMES = ("code", "rope_code", "cache_code", "sparse_code")  # the ``name`` of every code panel a page draws


def new_app(query: dict[str, str] | None = None, locale: str | None = None, *, code_open: bool = True) -> AppTest:
    """An AppTest of ``app.py`` with ``query`` in the URL and ``locale`` as the browser's language.

    ``code_open``: every page's code panels start open (a closed panel draws nothing; most tests read them),
    as if the visitor had opened them."""
    at = AppTest.from_file(str(APP), default_timeout=RUN_TIMEOUT_S)
    at.query_params.update(query or {})
    if locale is not None:
        at.context["locale"] = locale
    if code_open:
        for stop in TOUR:
            for name in PANEL_NAMES:
                at.session_state[open_key(stop.key, name)] = True
    return at


@pytest.fixture
def app() -> Callable[..., AppTest]:
    """Factory: ``app(query={"lang": "zh"}, locale="zh-CN")`` gives an AppTest not yet run."""
    return new_app


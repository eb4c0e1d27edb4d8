"""A short version of ``bench/load.py``: a few websocket sessions walk the whole tour together.

The same client and driver as the benchmark (:func:`bench.load.run_load`), against a server of
this module's own (``tests/e2e/conftest.py``'s ``start_server``, with ``TP_TRAINING_DEBUG=1`` so
the training page reports its run, and ``TP_I18N_STRICT=1`` so a missing translation is an
exception element). Two sessions start a short training run at the same moment while the
others move through the pages; every session changes each page's view widget and follows the
"Next" links. Nothing here is timed: the assertions are about errors and completeness only.
"""
from __future__ import annotations

import re

import pytest

from bench import load
from tests.e2e import conftest as _conftest  # the server starter and timeouts of the browser tests


SESSIONS = 5
ROUNDS = 2
TRAINERS = 2
TRAIN_STEPS = 30




@pytest.fixture(scope="module")
def load_server():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TP_TRAINING_DEBUG", "1")
        proc, url = _conftest.start_server("server-load-short")
    try:
        yield proc, url
    finally:
        _conftest.stop_server(proc)


def test_a_few_sessions_walk_every_page_together(load_server):
    proc, url = load_server
    report = load.run_load(url, proc.pid, sessions=SESSIONS, rounds=ROUNDS, trainers=TRAINERS,
                           train_steps=TRAIN_STEPS, think=(0.2, 0.6), ramp=1.0, timeout=420.0, settle=1.0,
                           log=print)
    print({k: report[k] for k in ("sessions", "reruns", "p50_ms", "p95_ms", "errors", "auto_reruns",
                                  "rss_before_mb", "rss_after_mb")})
    assert report["errors"] == 0, (report["error_samples"], _conftest.logged_failures("server-load-short"))
    assert report["sessions"] == SESSIONS
    assert report["pages"] == len(load.PAGE_WIDGETS)
    # every session drew every page of the tour without an exception
    assert report["sessions_with_all_pages"] == SESSIONS, report["min_pages_visited"]
    # per round and session: one widget change on each page, the "Next" link on all but the last,
    # and the sidebar back home between rounds (and for the trainers, from /training to start)
    pages = report["pages"]
    assert report["by_kind"]["widget"]["n"] == SESSIONS * ROUNDS * pages
    assert report["by_kind"]["link"]["n"] == SESSIONS * ROUNDS * (pages - 1)
    assert report["by_kind"]["nav"]["n"] == SESSIONS * (ROUNDS - 1) + TRAINERS
    # both runs started together (one press each) and trained to their step cap
    assert report["by_kind"]["click"]["n"] == TRAINERS
    assert report["training"] == {
        f"s{i:02d}": {"state": "finished", "step": TRAIN_STEPS, "wall_s": report["training"][f"s{i:02d}"]["wall_s"]}
        for i in range(TRAINERS)
    }
    assert report["auto_reruns"] >= 1  # the live page's fragments asked for refreshes and got them


def test_a_session_sends_widget_states_as_the_browser_does(load_server):
    """The client's widget changes reach the app: the URL the server writes back follows them."""
    _, url = load_server
    session = load.Session(url, "probe").connect()
    try:
        session.open("masks", "lang=en")
        assert "masks_pad=true" in session.query_string
        session.change("masks.padding")  # the padding switch: off
        assert "masks_pad=false" in session.query_string
        session.follow_link("positional-encoding")
        assert session.current_path == "positional-encoding"
        session.change("positional_encoding.pair")
        assert "positional_encoding_pair=1" in session.query_string
        session.navigate("attention")
        widget = session.widgets["attention.head"]
        assert widget.fragment_id  # the head picker lives in a fragment: its rerun names it
        opened_on = re.search(r"attention_head=(\d+)", session.query_string).group(1)  # the most focused head
        session.change("attention.head")
        assert f"attention_head={opened_on}" not in session.query_string and "attention_head=" in session.query_string
        assert session.records[-1].kind == "widget"
        assert session.errors == []
        assert session.visited >= {"masks", "positional-encoding", "attention"}
    finally:
        session.close()

"""A short version of ``bench/learners.py``: learners press Check and Use mine on the Masks page while
other sessions walk the tour, against a server of this module's own with ``TP_LEARNER_CODE=on``.

Every press draws a report, nobody gets an error, and the sandbox leaves no process behind (the server's
processes after the load are the ones before it: the sandbox's warm mother and its bubblewrap). Nothing
here is timed (``bench/learners.py`` is the benchmark; its figures are in bench/RESULTS.md).
"""
from __future__ import annotations

import pytest

from bench.learners import run_learners
from sandbox import runner
from tests.e2e import conftest as _conftest

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not runner.available(), reason="bubblewrap cannot start a sandbox here")]

LEARNERS, BROWSERS, CHECKS = 3, 4, 3


@pytest.fixture(scope="module")
def learner_server():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TP_LEARNER_CODE", "on")
        proc, url = _conftest.start_server("server-learners")
    try:
        yield proc, url
    finally:
        _conftest.stop_server(proc)


def test_learners_checking_while_others_browse_get_every_report_and_leave_no_process(learner_server):
    proc, url = learner_server
    report = run_learners(url, proc.pid, learners=LEARNERS, browsers=BROWSERS, checks=CHECKS, think=(0.2, 0.6),
                          browse_think=(0.2, 0.6), ramp=1.0, timeout=480.0, settle=2.0)
    print(report)
    assert report["errors"] == 0, (report["error_samples"], _conftest.logged_failures("server-learners"))
    assert report["checks_sent"] == LEARNERS * CHECKS
    assert report["checks_with_a_report"] == LEARNERS * CHECKS
    assert report["use_mine"]["n"] == LEARNERS
    assert report["browsing"]["n"] > BROWSERS * 10  # the tour went on (a widget and a link on every page)
    assert report["processes_left"] == [] and report["processes_after"] == report["processes_before"]

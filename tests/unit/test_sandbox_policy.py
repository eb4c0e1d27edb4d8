"""TP_LEARNER_CODE: who may run code (sandbox.policy), and that ``off`` never starts a process."""
from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from sandbox import policy

NO_HEADERS: dict[str, str] = {}


@pytest.mark.parametrize("host, headers, expected", [
    (None, NO_HEADERS, True),  # Streamlit reports 127.0.0.1 and ::1 as None
    ("127.0.0.1", NO_HEADERS, True),
    ("127.0.0.2", NO_HEADERS, True),
    ("::1", NO_HEADERS, True),
    ("[::1]", NO_HEADERS, True),
    ("::ffff:127.0.0.1", NO_HEADERS, True),
    ("192.168.1.20", NO_HEADERS, False),
    ("10.0.0.5", NO_HEADERS, False),
    ("fe80::1%eth0", NO_HEADERS, False),
    ("2001:db8::1", NO_HEADERS, False),
    ("localhost-ish", NO_HEADERS, False),
    ("", NO_HEADERS, False),
    ("127.0.0.1", {"X-Forwarded-For": "203.0.113.9"}, False),
    ("127.0.0.1", {"x-forwarded-for": "127.0.0.1"}, False),  # a proxy, whatever it claims
    (None, {"Forwarded": "for=203.0.113.9"}, False),
    ("::1", {"X-Real-IP": "203.0.113.9"}, False),
    ("127.0.0.1", {"Host": "localhost:8501", "User-Agent": "x"}, True),
])
def test_local_runs_code_only_for_a_browser_on_this_machine(host, headers, expected):
    assert policy.allowed(host, headers, environ={}) is expected
    assert policy.allowed(host, headers, environ={"TP_LEARNER_CODE": "local"}) is expected


@pytest.mark.parametrize("host, headers", [
    (None, NO_HEADERS), ("127.0.0.1", NO_HEADERS), ("192.168.1.20", NO_HEADERS),
    ("127.0.0.1", {"X-Forwarded-For": "203.0.113.9"}),
])
def test_on_is_everyone_and_off_no_one(host, headers):
    assert policy.allowed(host, headers, environ={"TP_LEARNER_CODE": "on"})
    assert policy.allowed(host, headers, environ={"TP_LEARNER_CODE": " ON "})
    assert not policy.allowed(host, headers, environ={"TP_LEARNER_CODE": "off"})


def test_an_unknown_value_is_off_and_says_so(caplog):
    with caplog.at_level(logging.WARNING, logger="sandbox.policy"):
        assert policy.mode({"TP_LEARNER_CODE": "yes"}) == "off"
        assert not policy.allowed("127.0.0.1", NO_HEADERS, environ={"TP_LEARNER_CODE": "yes"})
    assert "TP_LEARNER_CODE" in caplog.text


def test_the_default_is_local():
    assert policy.mode({}) == "local"
    assert policy.mode({"TP_LEARNER_CODE": ""}) == "local"


def test_importing_the_runner_starts_no_process():
    """The sandbox starts lazily (first ``run`` or ``prestart``): with ``off`` the UI never calls either, so a server
    that only imports the runner has no sandbox process."""
    probe = ("import os, sandbox.runner\n"
             "me = str(os.getpid())\n"
             "kids = [p for p in os.listdir('/proc') if p.isdigit() and\n"
             "        open(f'/proc/{p}/stat').read().rsplit(')', 1)[1].split()[1] == me]\n"
             "print(len(kids), int(sandbox.runner.MOTHER.process is not None))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["0", "0"]

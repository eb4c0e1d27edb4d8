"""The first guess of a phone's window, from the request's User-Agent (ui.viewport)."""
from __future__ import annotations

import pytest

from ui.viewport import guessed_narrow

PHONES = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/18.0 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0 Mobile Safari/537.36",
)
WIDE = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/130.0 Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:132.0) Gecko/20100101 Firefox/132.0",
    "Mozilla/5.0 (iPad; CPU OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
    "Mozilla/5.0 (Linux; Android 14; SM-X710) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0 Safari/537.36",
)


@pytest.mark.parametrize("agent", PHONES)
def test_a_phone_is_guessed_narrow(agent):
    assert guessed_narrow({"User-Agent": agent})


@pytest.mark.parametrize("agent", WIDE)
def test_a_desktop_or_a_tablet_is_guessed_wide(agent):
    assert not guessed_narrow({"User-Agent": agent})


def test_no_headers_is_a_desktop():
    assert not guessed_narrow({}) and not guessed_narrow(None)

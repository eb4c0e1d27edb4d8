"""Nothing is fetched from anywhere but the app's own server: a classroom without internet gets the
whole app, and "nothing is sent anywhere" holds for the browser too (icons, fonts, scripts)."""
from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from ui.i18n import LANGS, translate
from ui.tour import TOUR



@pytest.mark.parametrize("lang", LANGS)
def test_every_page_loads_only_from_the_apps_own_server(page, server_url, wait_for_app, lang):
    own = urlsplit(server_url).netloc
    elsewhere: list[str] = []
    p = page(f"/?lang={lang}")
    p.context.on("request", lambda r: elsewhere.append(r.url)
                 if r.url.split(":", 1)[0] in ("http", "https", "ws", "wss") and urlsplit(r.url).netloc != own
                 else None)
    p.reload()  # the first load's requests too (the listener was added after it)
    wait_for_app(p)
    for stop in TOUR:
        p.goto(f"{server_url}/{stop.url_path}?lang={lang}")
        wait_for_app(p)
        p.locator('[data-testid="stMain"] h1').first.wait_for()
        p.wait_for_timeout(500)  # late requests: the favicon, fonts, a component's code
    assert elsewhere == [], elsewhere
    icon = p.locator('link[rel~="icon"]').first.get_attribute("href")
    assert icon and not icon.startswith(("http://", "https://")) or urlsplit(icon).netloc == own, icon
    assert translate("common.app_title", lang) in p.title()

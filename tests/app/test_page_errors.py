"""A page that raises shows visitors one translated sentence and no traceback in the deployed
configuration (``client.showErrorDetails = "none"`` in ``.streamlit/config.toml``); the traceback
goes to the server's log. At ``"full"`` (a developer's laptop) the exception shows whole.
"""
from __future__ import annotations

import logging
import tomllib
from pathlib import Path

import pytest
from streamlit import config

from ui import home_view
from ui.i18n import translate

ROOT = Path(__file__).resolve().parents[2]
SECRET = f"{ROOT}/ui/home_view.py: injected failure"


@pytest.fixture
def failing_home(monkeypatch):
    """The home page raises an exception whose message holds a server path."""
    def explode(*args, **kwargs):
        raise RuntimeError(SECRET)

    monkeypatch.setattr(home_view, "map_html", explode)


@pytest.fixture
def error_details():
    """Set ``client.showErrorDetails`` for one test, then put the configured value back."""
    before = config.get_option("client.showErrorDetails")
    yield lambda value: config.set_option("client.showErrorDetails", value)
    config.set_option("client.showErrorDetails", before)


def shown(at) -> str:
    """Everything the exception elements and texts of a run show, as one string."""
    parts = [f"{e.value} {e.message} {' '.join(e.stack_trace)}" for e in at.exception]
    parts += [m.value for m in at.markdown] + [e.value for e in at.error]
    return "\n".join(parts)


def test_the_shipped_config_hides_error_details():
    settings = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert settings["client"]["showErrorDetails"] == "none"
    assert config.get_option("client.showErrorDetails") == "none"  # what AppTest (and the server) read


@pytest.mark.parametrize("locale, lang", [("en-US", "en"), ("zh-CN", "zh")])
def test_a_failing_page_shows_one_translated_sentence_and_logs_the_traceback(
        app, failing_home, error_details, caplog, locale, lang):
    error_details("none")
    with caplog.at_level(logging.ERROR, logger="ui.page_errors"):
        at = app(locale=locale).run()
    sentence = translate("common.server_error.page_failed", lang)
    assert [e.value for e in at.exception] == [sentence]
    assert list(at.exception[0].stack_trace) == [] and not at.exception[0].proto.type
    text = shown(at)
    assert str(ROOT) not in text and "RuntimeError" not in text and "Traceback" not in text
    logged = [r for r in caplog.records if r.name == "ui.page_errors"]
    assert len(logged) == 1 and logged[0].exc_info[1].args == (SECRET,)  # the server keeps the details
    assert at.sidebar.radio  # the sidebar (language choice) is still drawn above the failed page


def test_at_full_details_the_developer_sees_the_exception(app, failing_home, error_details):
    error_details("full")
    at = app().run()
    assert len(at.exception) == 1 and at.exception[0].value == SECRET
    assert any("home" in line for line in at.exception[0].stack_trace)


def test_a_page_that_works_shows_no_error(app, error_details):
    error_details("none")
    at = app().run()
    assert not at.exception and not at.error


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_failing_fragment_rerun_shows_the_same_one_sentence(app, error_details, monkeypatch, caplog, lang):
    """A control inside a fragment reruns only the fragment, not app.py: it fails the same way."""
    import figures.heatmap

    error_details("none")
    at = app({"lang": lang}).switch_page("app_pages/masks.py").run()
    assert not at.exception

    def explode(*args, **kwargs):
        raise RuntimeError(SECRET)

    monkeypatch.setattr(figures.heatmap, "bool_matrix", explode)
    with caplog.at_level(logging.ERROR, logger="ui.page_errors"):
        at.toggle(key="masks.padding").set_value(False).run()
    assert [e.value for e in at.exception] == [translate("common.server_error.page_failed", lang)]
    text = shown(at)
    assert str(ROOT) not in text and "RuntimeError" not in text and "Traceback" not in text
    assert any(r.exc_info and r.exc_info[1].args == (SECRET,) for r in caplog.records if r.name == "ui.page_errors")

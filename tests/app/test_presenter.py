"""Presenter mode and "reset this page" under AppTest, on small random models (no training)."""
from __future__ import annotations

import json

import pytest

from tests.app.apptest_helpers import clean, open_script, query, random_model_fixtures
from ui.i18n import translate

checkpoint_dir, random_models = random_model_fixtures(("copy", 3), ("reverse", 4), folder="presenter_checkpoints",
                                                      d_model=16, n_heads=2, n_layers=1, d_ff=32)


def button(at, key: str):
    found = [b for b in at.button if b.key == key]
    assert len(found) == 1, [b.key for b in at.button]
    return found[0]


def presenter_css(at) -> bool:
    return any("font-size: 22px" in str(getattr(h, "value", "")) for h in at.get("html"))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_presenter_mode_from_a_link_shows_the_bar_and_larger_lettering(app, lang):
    at = open_script(app, "app_pages/masks.py", {"lang": lang, "present": "1"})
    assert at.session_state["present"] is True
    leave = button(at, "presenter.leave")
    assert leave.label == translate("common.presenter.leave", lang)
    assert button(at, "presenter.reset_bar").label == translate("common.presenter.reset", lang)
    assert presenter_css(at)
    assert query(at, "present") == "1"


def test_presenter_mode_is_off_by_default_and_leaves_no_trace_in_the_url(app):
    at = open_script(app, "app_pages/masks.py", {"lang": "en"})
    assert not presenter_css(at)
    assert not [b for b in at.button if b.key == "presenter.leave"]
    assert "present" not in at.query_params


def test_the_sidebar_switch_turns_it_on_and_the_bar_turns_it_off(app):
    at = open_script(app, "app_pages/masks.py", {"lang": "en"})
    toggle = [w for w in at.sidebar.toggle if w.key == "present"][0]
    clean(toggle.set_value(True).run())
    assert presenter_css(at) and query(at, "present") == "1"
    clean(button(at, "presenter.leave").click().run())
    assert not presenter_css(at)
    assert "present" not in at.query_params


def test_presenter_mode_enlarges_every_chart_letter(app):
    plain = open_script(app, "app_pages/masks.py", {"lang": "en"})
    shown = open_script(app, "app_pages/masks.py", {"lang": "en", "present": "1"})
    specs = lambda at: [json.loads(c.proto.spec)["layout"] for c in at.get("plotly_chart")]
    plain_sizes = [layout.get("font", {}).get("size", 12) for layout in specs(plain)]
    shown_sizes = [layout["font"]["size"] for layout in specs(shown)]
    assert plain_sizes and len(plain_sizes) == len(shown_sizes)
    assert all(b >= round(a * 1.5) for a, b in zip(plain_sizes, shown_sizes))


def test_a_bad_present_value_means_off(app):
    at = open_script(app, "app_pages/masks.py", {"lang": "en", "present": "<script>"})
    assert not presenter_css(at)
    assert "present" not in at.query_params


def test_page_links_carry_presenter_mode(app):
    at = open_script(app, "app_pages/masks.py", {"lang": "en", "present": "1"})
    links = at.get("page_link")
    assert links and all("present=1" in e.proto.query_string.split("&") for e in links)
    plain = open_script(app, "app_pages/masks.py", {"lang": "en"})
    assert all("present" not in e.proto.query_string for e in plain.get("page_link"))


def test_reset_puts_the_page_back_to_its_defaults_and_keeps_language_model_and_other_pages(app):
    at = open_script(app, "app_pages/masks.py", {"lang": "zh", "model": "reverse"})
    default_section = at.segmented_control(key="masks.section").value
    other = "effect" if default_section != "effect" else "matrices"
    clean(at.segmented_control(key="masks.section").set_value(other).run())
    clean(at.text_area(key="batch.text").input("abc\ncab").run())
    assert query(at, "masks_view") == other and query(at, "batch") == "abc\ncab"
    clean(button(at, "presenter.reset_sidebar").click().run())
    assert at.segmented_control(key="masks.section").value == default_section
    assert at.text_area(key="batch.text").value != "abc\ncab"
    assert query(at, "masks_view") == default_section
    assert query(at, "lang") == "zh" and query(at, "model") == "reverse"
    assert at.session_state["model"] == "reverse"

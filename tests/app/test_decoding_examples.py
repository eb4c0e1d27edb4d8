"""Decoding's shortcuts to the translation examples (as on Attention), on the shipped en-zh / zh-en models."""
from __future__ import annotations

import pytest

from explain.examples import PRONOUN_SENTENCES, REORDER
from tests.app.apptest_helpers import clean, open_script, query
from ui.i18n import translate


def open_decoding(app, **values: str):
    return open_script(app, "app_pages/decoding.py", values, home_first=True)


def button(at, key: str):
    return next(b for b in at.button if b.key == key)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_pronoun_buttons_open_the_step_that_writes_the_referent(app, lang):
    at = open_decoding(app, lang=lang, model="en-zh", decoding_view="compare")
    assert button(at, "decoding.try_wide_button").label == translate("decoding.examples.wide_button", lang)
    for key, sentence, referent in (("decoding.try_tired_button", PRONOUN_SENTENCES[0], "猫"),
                                    ("decoding.try_wide_button", PRONOUN_SENTENCES[1], "马")):
        clean(button(at, key).click().run())
        assert at.session_state["decoding.text"] == sentence
        assert query(at, "decoding_view") == "steps" and query(at, "decoding_strategy") == "greedy"
        status = next(m.value for m in at.markdown if "因" in m.value and "**" in m.value)
        # The step opened reads ... 因 为 and writes the referent.
        assert status.split("**")[-2].endswith("因为" + referent), status


def test_the_reordering_button_follows_the_model_and_switches_to_a_translation_model(app):
    at = open_decoding(app, lang="zh", model="zh-en")
    clean(button(at, "decoding.try_reorder").click().run())
    assert at.session_state["decoding.text"] == REORDER["zh-en"][0]
    assert at.session_state["model"] == "zh-en" and query(at, "decoding_step") == "1"

    at = open_decoding(app, lang="en", model="copy")
    assert translate("decoding.examples.other_model", "en") in [c.value for c in at.caption]
    clean(button(at, "decoding.try_reorder").click().run())
    assert at.session_state["model"] == "en-zh"
    assert at.session_state["decoding.text"] == REORDER["en-zh"][0]

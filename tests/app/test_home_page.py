"""The home page under AppTest: the three families of Transformer beside the tour (#32)."""
from __future__ import annotations

import pytest

from tests.app.apptest_helpers import clean
from ui.home_view import family_table
from ui.i18n import LANGS, translate


@pytest.mark.parametrize("lang", LANGS)
def test_home_names_the_three_families_and_links_to_their_masks(app, lang):
    """A closed expander under the prerequisites: one sentence on each family, the table of which pages apply
    to each, and a link to the Masks page's families section that keeps the language."""
    at = clean(app(query={"lang": lang}).run())
    (box,) = [e for e in at.expander if e.label == translate("home.families.heading", lang)]
    (text,) = [m.value for m in box.markdown]
    assert text == translate("home.families.body", lang) + "\n\n" + family_table(lang)
    for family in ("encoder_decoder", "encoder_only", "decoder_only"):
        assert translate(f"masks.families.{family}.name", lang) in text
    (link,) = box.get("page_link")
    assert link.proto.label == translate("home.families.link", lang)
    assert link.proto.page.strip("/") == "masks"
    assert f"lang={lang}" in link.proto.query_string and "masks_view=families" in link.proto.query_string
    assert at.info[0].value.startswith(f"**{translate('home.prereq.heading', lang)}**")  # still first


def test_the_link_opens_the_families_section(app):
    at = clean(app(query={"lang": "en", "masks_view": "families"}).run())
    clean(at.switch_page("app_pages/masks.py").run())
    assert at.segmented_control(key="masks.section").value == "families"
    assert len(at.get("plotly_chart")) == 5

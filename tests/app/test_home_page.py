"""The home page under AppTest: the three families of Transformer beside the tour (#32), and the paper's numbers
beside the sidebar's model (#31)."""
from __future__ import annotations

import threading

import pytest

from explain.paper_card import of_checkpoint, rows
from model.checkpoint import load_checkpoint
from tests.app.apptest_helpers import clean
from ui import models
from ui.home_view import family_table
from ui.i18n import LANGS, translate
from ui.url_state import markdown_literal


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


def card_rows(at, lang: str) -> list[list[str]]:
    """The paper card's table, row by row (setting, paper, this model, "=" or "")."""
    heading = translate("common.paper_card.setting", lang)
    table = next(str(m.value) for m in at.markdown if str(m.value).startswith(f"| {heading} |"))
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in table.splitlines()[2:]]


def expected_rows(name: str, lang: str) -> list[list[str]]:
    mine = of_checkpoint(load_checkpoint(models.checkpoint_path(name), map_location="cpu"))
    return [[translate(f"common.paper_card.row.{row}", lang), paper, this, "=" if same else ""]
            for row, paper, this, same in rows(mine)]


@pytest.fixture
def no_model_loads(monkeypatch) -> list[str]:
    """The shipped models a page's run loads (the warm-up thread's own loads are not the page's)."""
    loads: list[str] = []
    real = models.load_shipped

    def spy(task: str):
        if threading.current_thread().name != "tp-warmup":
            loads.append(task)
        return real(task)

    monkeypatch.setattr(models, "load_shipped", spy)
    return loads


@pytest.mark.skipif(not models.shipped_models(), reason="no shipped model in assets/checkpoints")
@pytest.mark.parametrize("lang, query, name", [("en", {}, "en-zh"), ("zh", {}, "zh-en"), ("en", {"model": "dates"}, "dates"),
                                               ("zh", {"model": "copy"}, "copy")])
def test_home_shows_the_papers_numbers_beside_the_sidebars_model_without_loading_it(app, no_model_loads, lang, query,
                                                                                     name):
    """The language's default model until one is picked (en-zh in English, zh-en in 中文), named in the caption; its
    numbers are a full load's, read from the file's header: Home's run loads no model."""
    at = clean(app(query={"lang": lang, **query}).run())
    (box,) = [e for e in at.expander if e.label == translate("common.paper_card.heading", lang)]
    assert card_rows(box, lang) == expected_rows(name, lang)
    caption = translate(f"home.paper_card.caption.{name}", lang)
    assert f"**{name}**" in caption and [c.value for c in box.caption] == [caption]
    d_k = translate("common.paper_card.row.d_k", lang)
    assert [row for row in card_rows(box, lang) if row[0] == d_k][0][1] == "64"  # the paper's d_k = 512 / 8
    assert no_model_loads == []


def test_a_damaged_model_file_is_a_notice_not_a_traceback(app, monkeypatch, tmp_path):
    """A truncated en-zh.pt (the English default): one translated sentence where the card would be; the page goes on."""
    (tmp_path / "en-zh.pt").write_bytes(models.checkpoint_path("en-zh").read_bytes()[:4096])
    monkeypatch.setattr(models, "CHECKPOINT_DIR", tmp_path)
    at = clean(app(query={"lang": "en"}).run())
    assert [w.value for w in at.warning] == [translate("common.model.unavailable_broken", "en", name=markdown_literal("en-zh"))]
    assert translate("common.paper_card.heading", "en") not in [e.label for e in at.expander]
    assert translate("home.families.heading", "en") in [e.label for e in at.expander]

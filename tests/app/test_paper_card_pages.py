"""The paper's numbers beside this model's (#31), on Training (the planned run) and on Paper vs this code
(the model in the sidebar), in both languages."""
from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from explain.paper_card import of_checkpoint, of_planned_run, rows
from tests.app.apptest_helpers import clean, open_script
from ui import models
from ui.i18n import LANGS, translate


def card_rows(at: AppTest, lang: str) -> list[list[str]]:
    """The card's table, row by row (setting, paper, this model, "=" or "")."""
    heading = translate("common.paper_card.setting", lang)
    table = next(str(m.value) for m in at.markdown if str(m.value).startswith(f"| {heading} |"))
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in table.splitlines()[2:]]


def expected(mine: dict, lang: str) -> list[list[str]]:
    return [[translate(f"common.paper_card.row.{name}", lang), paper, this, "=" if same else ""]
            for name, paper, this, same in rows(mine)]


@pytest.mark.parametrize("lang", LANGS)
def test_training_compares_the_run_it_would_start_and_follows_the_warmup(app, lang):
    at = open_script(app, "app_pages/training.py", {"lang": lang}, home_first=True)
    assert card_rows(at, lang) == expected(of_planned_run("tiny", dropout=0.1, label_smoothing=0.1, warmup=200), lang)
    assert translate("common.paper_card.caption_training", lang) in [str(c.value) for c in at.caption]
    clean(at.slider(key="training.warmup").set_value(4000).run())
    warmup_row = card_rows(at, lang)[7]
    assert warmup_row[1:] == ["4,000", "4,000", "="]
    clean(at.slider(key="training.dropout").set_value(0.0).run())  # the dropout setting is the card's
    assert card_rows(at, lang)[5][2:] == ["0", ""]
    clean(at.radio(key="training.heads").set_value("8").run())  # and so is the heads setting: d_k = 32 / 8
    assert [row[2] for row in card_rows(at, lang)[2:4]] == ["8", "4"]
    clean(at.radio(key="training.preset").set_value("small").run())
    assert card_rows(at, lang)[1][2] == "64"  # d_model of the small preset
    assert not at.exception


@pytest.mark.parametrize("lang", LANGS)
def test_paper_vs_code_compares_the_model_in_the_sidebar(app, lang):
    at = open_script(app, "app_pages/paper_vs_code.py", {"lang": lang, "model": "en-zh"}, home_first=True)
    assert card_rows(at, lang) == expected(of_checkpoint(models.get_model("en-zh")), lang)
    assert not at.exception

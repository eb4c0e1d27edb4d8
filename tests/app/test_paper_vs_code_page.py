"""The Paper vs this code page under AppTest, on a small random model written for the test (no training)."""
from __future__ import annotations

import pytest
import torch
from streamlit.testing.v1 import AppTest

from explain import paper_vs_code as pvc
from model.checkpoint import load_checkpoint
from tests.app.apptest_helpers import clean, open_script, random_model_fixtures, texts
from ui import models
from ui.i18n import LANGS, translate

SCRIPT = "app_pages/paper_vs_code.py"
N_LAYERS = 2
FILL = f"{torch.finfo(torch.float32).min:.4g}"  # the masked score this code writes, as the text names it
checkpoint_dir, random_model = random_model_fixtures(("copy", 7), folder="pvc_checkpoints", d_model=16, n_heads=2,
                                                     n_layers=N_LAYERS, d_ff=32)


def open_page(app, lang: str = "en", **query: str) -> AppTest:
    # The URL path (paper-vs-code) differs from the file name: the default page runs first.
    return open_script(app, SCRIPT, {"lang": lang, **query}, home_first=True)


def row_text(key: str, name: str, lang: str = "en", **fmt) -> str:
    return translate(f"paper_vs_code.rows.{key}.{name}", lang, **fmt)


CARD_HEADINGS = {translate("common.paper_card.heading", lang) for lang in LANGS}


def expanders(at: AppTest) -> list:
    """The rows' expanders, then the exercise's: the paper's-numbers card above the rows left out."""
    return [e for e in at.expander if e.label not in CARD_HEADINGS]


def opened(at: AppTest) -> list[str]:
    """The row keys whose expander is open."""
    return [key for key, e in zip(pvc.ROW_KEYS, expanders(at)) if e.proto.expanded]


def markdown(at: AppTest) -> str:
    return "\n".join(m.value for m in at.markdown)


@pytest.mark.parametrize("lang", LANGS)
def test_every_row_is_there_in_both_languages(app, lang):
    at = open_page(app, lang)
    assert at.title[0].value == translate("paper_vs_code.title", lang)
    assert [e.label for e in at.expander][0] == translate("common.paper_card.heading", lang)  # the card comes first
    rows = [e.label for e in expanders(at)][:len(pvc.ROW_KEYS)]  # then the page's exercise (the shared-layer trap)
    assert rows == [row_text(key, "title", lang) for key in pvc.ROW_KEYS]
    assert [e.label for e in expanders(at)][len(pvc.ROW_KEYS):] == [
        translate("exercises.panel.heading", lang, title=translate("exercises.clones.title", lang))]
    shown = markdown(at)
    for key in pvc.ROW_KEYS:
        for part in ("paper", "code", "common"):
            assert row_text(key, part, lang, **({"fill": FILL} if key == "neg_inf" else {})) in shown, (key, part)
    assert shown.count(f"**{translate('paper_vs_code.label.live', lang)}**") == len(pvc.ROW_KEYS)
    assert opened(at) == [pvc.ROW_KEYS[0]]  # a fresh visit opens the first row
    assert at.query_params["paper_vs_code_row"] in (pvc.ROW_KEYS[0], [pvc.ROW_KEYS[0]])


@pytest.mark.parametrize("key", pvc.ROW_KEYS)
def test_the_url_opens_one_row(app, key):
    at = open_page(app, paper_vs_code_row=key)
    assert opened(at) == [key]
    assert at.selectbox(key="paper_vs_code.row").value == key
    assert not at.toast


def test_picking_a_row_opens_it_and_puts_it_in_the_url(app):
    at = open_page(app)
    clean(at.selectbox(key="paper_vs_code.row").set_value("shared_layer").run())
    assert opened(at) == ["shared_layer"]
    assert at.query_params["paper_vs_code_row"] in ("shared_layer", ["shared_layer"])


@pytest.mark.parametrize("bad", ["bogus", "", "NORM", "<script>", "x" * 300])
def test_a_bad_row_falls_back_to_the_first_with_a_notice(app, bad):
    at = open_page(app, paper_vs_code_row=bad)
    assert opened(at) == [pvc.ROW_KEYS[0]]
    assert len(at.toast) == 1 and "paper" in texts(at.toast)[0]


def test_the_live_numbers_are_the_loaded_models(app, checkpoint_dir):
    at = open_page(app)
    facts = pvc.model_facts(load_checkpoint(checkpoint_dir / "copy.pt"))
    shown = markdown(at)
    assert f"= **{facts.out_proj_params:,}**" in shown and facts.out_proj_params == 16 * 16 + 16
    assert "√16 = **4**" in shown
    assert f"= **{facts.output_tie_saving:,}**" in shown and facts.output_tie_saving == facts.tgt_vocab * 16
    sites = facts.dropout_sites
    assert row_text("dropout", "live", emb=1, sub=5 * N_LAYERS, ffn=2 * N_LAYERS, att=0, p="0",
                    mode=row_text("dropout", "mode_eval")) in shown
    assert sites["sublayers"] == 5 * N_LAYERS
    demo = pvc.shared_layer_demo()
    assert f"**{demo.shared_params:,}**" in shown and f"**{demo.separate_params:,}**" in shown
    assert row_text("shared_layer", "model", enc=N_LAYERS, dec=N_LAYERS, n=N_LAYERS) in shown


def test_the_demos_are_shown_as_tables(app):
    at = open_page(app)
    frames = [d.value for d in at.dataframe]
    mask, rows, smoothing = frames[:3]
    assert list(mask.iloc[:, 1]) == [False] * 3 + [True] * 2  # key_padding_mask: the last two keys are <pad>
    assert mask.iloc[3:, 2].eq(0).all() and mask.iloc[:3, 4].eq(0).all()  # torch ignores pads; un-inverted sees only them
    assert rows.iloc[1, 1:].isna().all() and rows.iloc[5, 1:].eq(0).all()  # −∞: NaN; this code: zeros
    assert smoothing.iloc[0, 1] == 0 and smoothing.iloc[pvc.SMOOTHING_TARGET, 1] == pytest.approx(0.9)
    assert len(frames) == 3
    demo = pvc.shared_layer_demo()
    names = [row_text("shared_layer", "layer_name", n=n + 1) for n in range(pvc.LAYER_N)]
    assert [c.value for c in at.code] == [pvc.maps_side_by_side(demo.shared_maps, names),
                                          pvc.maps_side_by_side(demo.separate_maps, names)]


def test_the_page_runs_without_a_model(app, monkeypatch, tmp_path):
    monkeypatch.setattr(models, "CHECKPOINT_DIR", tmp_path)  # no checkpoint at all
    at = open_page(app, "zh", paper_vs_code_row="mask_polarity")
    assert opened(at) == ["mask_polarity"]
    assert translate("paper_vs_code.no_model", "zh") in [c.value for c in at.caption]
    assert len(at.dataframe) == 3 and len(at.code) == 2  # the demos need no model

"""The tour table and the architecture diagram: every page has its file, URL and links."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from ui.i18n import LANGS
from ui.tour import TOUR, by_url_path, stop

ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------ the tour table


def test_tour_is_consistent_with_the_files():
    assert TOUR[0].key == "home" and TOUR[0].is_default
    assert [s.url_path for s in TOUR] == [
        "", "tokens", "masks", "positional-encoding", "attention", "feed-forward", "residual-stream", "layer-norm",
        "decoding", "output-and-loss", "bleu", "attention-cost", "training",
    ]
    assert len({s.key for s in TOUR}) == len(TOUR)
    for s in TOUR:
        assert (ROOT / s.script).is_file(), s.script
        assert s.script.startswith("app_pages/")
        assert by_url_path(s.url_path) == s
    assert not (ROOT / "pages").exists(), "a pages/ folder puts Streamlit in legacy discovery mode"


# ------------------------------------------------------------------ the architecture diagram

LINK = re.compile(r'<a href="\./([^"]*)" data-page="([^"]+)">')


@pytest.mark.parametrize("lang", LANGS)
def test_diagram_links_point_at_their_pages(lang):
    svg = (ROOT / "assets" / f"architecture_{lang}.svg").read_text(encoding="utf-8")
    links = LINK.findall(svg)
    assert links
    for url_path, key in links:
        assert stop(key).url_path == url_path
    not_drawn = {"bleu", "cost"}  # scoring and cost are about the whole model, not a block of the drawing
    assert {key for _, key in links} == {s.key for s in TOUR[1:]} - not_drawn


BLOCK = re.compile(r'<a href="\./([^"]*)" data-page="([^"]+)"><title>[^<]*</title>\s*<(?:rect|path) class="(?:box )?(\w+)"')


@pytest.mark.parametrize("lang", LANGS)
def test_every_block_of_a_layer_opens_its_page(lang):
    """Feed Forward, Add & Norm, the residual arrows, Linear and Softmax each open the page that explains them."""
    svg = (ROOT / "assets" / f"architecture_{lang}.svg").read_text(encoding="utf-8")
    pages_by_kind: dict[str, set[str]] = {}
    for _, key, kind in BLOCK.findall(svg):
        pages_by_kind.setdefault(kind, set()).add(key)
    assert pages_by_kind["ffn"] == {"ffn"}
    assert pages_by_kind["norm"] == {"layernorm"}
    assert pages_by_kind["res"] == {"residual"}
    assert pages_by_kind["lin"] == pages_by_kind["soft"] == {"output"}
    assert svg.count('data-page="ffn"') == 2 and svg.count('data-page="layernorm"') == 5
    assert svg.count('data-page="residual"') == 5


def test_both_diagrams_have_the_same_links_and_labels():
    en, zh = ((ROOT / "assets" / f"architecture_{lang}.svg").read_text(encoding="utf-8") for lang in LANGS)
    assert LINK.findall(en) == LINK.findall(zh)
    for label in ["Input Embedding", "Positional", "Multi-Head", "Self-Attention", "Add &amp; Norm",
                  "Feed Forward", "Masked Multi-Head", "Cross-Attention", "Encoder–Decoder Attention",
                  "Linear", "Softmax", "N×"]:
        assert label in en, label
    for label in ["输入嵌入", "位置编码", "多头自注意力", "残差相加与层归一化", "前馈网络", "带掩码的",
                  "交叉注意力", "编码器-解码器注意力", "线性层", "Softmax", "N×"]:
        assert label in zh, label

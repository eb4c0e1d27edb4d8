"""The tour table and the architecture diagram: every page has its file, URL and links."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from ui.i18n import LANGS, translate
from ui.tour import OLD_KEYS, TOUR, by_url_path, current_name, old_names, stop

ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------ the tour table


def test_tour_is_consistent_with_the_files():
    """One name per page: the key is the file stem, the i18n namespace and (``_`` as ``-``) the URL path."""
    assert TOUR[0].key == "home" and TOUR[0].is_default
    assert len({s.key for s in TOUR}) == len(TOUR)
    assert {p.stem for p in (ROOT / "app_pages").glob("*.py")} == {s.key for s in TOUR}
    for s in TOUR:
        assert s.script == f"app_pages/{s.key}.py" and (ROOT / s.script).is_file(), s.script
        assert (ROOT / "assets" / "i18n" / "en" / f"{s.key}.json").is_file(), s.key
        assert s.url_path == ("" if s.is_default else s.key.replace("_", "-"))
        assert by_url_path(s.url_path) == s
    assert not (ROOT / "pages").exists(), "a pages/ folder puts Streamlit in legacy discovery mode"


# Every URL path and URL value name a teacher could have shared before the pages were renamed.
SHARED_PATHS = ["", "tokens", "masks", "positional-encoding", "attention", "feed-forward", "residual-stream",
                "layer-norm", "decoding", "output-and-loss", "bleu", "attention-cost", "training",
                "paper-vs-code"]
OLD_URL_NAMES = {  # old name -> (page, its name today)
    "tok_side": ("tokens", "tokens_side"),
    "mask_view": ("masks", "masks_view"), "mask_pad": ("masks", "masks_pad"), "mask_ahead": ("masks", "masks_ahead"),
    "mask_kind": ("masks", "masks_kind"), "mask_layer": ("masks", "masks_layer"), "mask_head": ("masks", "masks_head"),
    "mask_query": ("masks", "masks_query"),
    "pe_d": ("positional_encoding", "positional_encoding_d"), "pe_len": ("positional_encoding", "positional_encoding_len"),
    "pe_base": ("positional_encoding", "positional_encoding_base"),
    "pe_text": ("positional_encoding", "positional_encoding_text"),
    "pe_on": ("positional_encoding", "positional_encoding_on"),
    "pe_shuffle": ("positional_encoding", "positional_encoding_shuffle"),
    "pe_pair": ("positional_encoding", "positional_encoding_pair"),
    "att_view": ("attention", "attention_view"), "att_kind": ("attention", "attention_kind"),
    "att_scale": ("attention", "attention_scale"), "att_all": ("attention", "attention_all"),
    "att_layer": ("attention", "attention_layer"), "att_head": ("attention", "attention_head"),
    "att_off": ("attention", "attention_off"), "att_text": ("attention", "attention_text"),
    "ff_view": ("feed_forward", "feed_forward_view"), "ff_stack": ("feed_forward", "feed_forward_stack"),
    "ff_layer": ("feed_forward", "feed_forward_layer"), "ff_from": ("feed_forward", "feed_forward_from"),
    "ff_to": ("feed_forward", "feed_forward_to"), "ff_text": ("feed_forward", "feed_forward_text"),
    "rs_view": ("residual_stream", "residual_stream_view"), "rs_stack": ("residual_stream", "residual_stream_stack"),
    "rs_tok": ("residual_stream", "residual_stream_tok"), "rs_off": ("residual_stream", "residual_stream_off"),
    "rs_text": ("residual_stream", "residual_stream_text"),
    "ln_pads": ("layer_norm", "layer_norm_pads"), "ln_seed": ("layer_norm", "layer_norm_seed"),
    "ln_at": ("layer_norm", "layer_norm_at"), "ln_tok": ("layer_norm", "layer_norm_tok"),
    "dec_view": ("decoding", "decoding_view"), "dec_strategy": ("decoding", "decoding_strategy"),
    "dec_beam": ("decoding", "decoding_beam"), "dec_temp": ("decoding", "decoding_temp"),
    "dec_topk": ("decoding", "decoding_topk"), "dec_seed": ("decoding", "decoding_seed"),
    "dec_layer": ("decoding", "decoding_layer"), "dec_head": ("decoding", "decoding_head"),
    "dec_step": ("decoding", "decoding_step"), "dec_target": ("decoding", "decoding_target"),
    "dec_text": ("decoding", "decoding_text"),
    "out_view": ("output_and_loss", "output_and_loss_view"), "out_temp": ("output_and_loss", "output_and_loss_temp"),
    "out_eps": ("output_and_loss", "output_and_loss_eps"), "out_target": ("output_and_loss", "output_and_loss_target"),
    "out_pos": ("output_and_loss", "output_and_loss_pos"), "out_text": ("output_and_loss", "output_and_loss_text"),
    "cst_log": ("attention_cost", "attention_cost_log"),
    **{f"tr_{name}": ("training", f"training_{name}") for name in (
        "task", "size", "prenorm", "norm", "ffn", "pos", "warmup", "factor", "eps", "batch", "seed", "steps", "pad",
        "ahead", "cmp")},
}
URL_NAME = re.compile(r'Param\(\s*"([a-z_]+)"')
TEXT_BOX = re.compile(r'sentence_input\(\w+, "([a-z_]+)"\)')  # binds ?<key>_text=
SHARED_NAMES = {"lang", "model", "batch", "sent"}


def url_names(key: str) -> set[str]:
    """The URL value names the page ``key`` binds: every ``*Param("name", ...)`` in its file (the Training
    page's come from their one declaration on ``TrainingConfig``, through ``ui.training.settings``)."""
    source = (ROOT / "app_pages" / f"{key}.py").read_text(encoding="utf-8")
    names = set(URL_NAME.findall(source)) | {f"{page}_text" for page in TEXT_BOX.findall(source)}
    if key == "training":
        from ui.training import settings

        names |= {param.name for param in settings.PARAMS.values()} | {settings.COMPARE.name}
    return names


def test_shared_url_paths_open_the_same_pages():
    assert [s.url_path for s in TOUR] == SHARED_PATHS


def test_old_page_keys_name_the_same_pages():
    for old, new in OLD_KEYS.items():
        assert stop(old) is stop(new) and current_name(old) == new
    assert translate("ffn.title", "en") == translate("feed_forward.title", "en")  # old text keys (bench, links)


def test_every_old_url_name_still_opens_the_same_view():
    for old, (key, new) in OLD_URL_NAMES.items():
        assert current_name(old) == new, old
        assert old in old_names(new), new
        assert new in url_names(key), (key, new)


@pytest.mark.parametrize("key", [s.key for s in TOUR])
def test_every_url_value_of_a_page_starts_with_its_key(key):
    """One name per page: ``?<key>_<name>=`` (the values every page shares have no prefix)."""
    for name in url_names(key) - SHARED_NAMES:
        assert name.startswith(f"{key}_"), (key, name)
        assert current_name(name) == name, name  # no new name reads as an old one


# ------------------------------------------------------------------ the architecture diagram

LINK = re.compile(r'<a href="\./([^"]*)" data-page="([^"]+)">')


@pytest.mark.parametrize("lang", LANGS)
def test_diagram_links_point_at_their_pages(lang):
    svg = (ROOT / "assets" / f"architecture_{lang}.svg").read_text(encoding="utf-8")
    links = LINK.findall(svg)
    assert links
    for url_path, key in links:
        assert stop(key).url_path == url_path
    not_drawn = {"bleu", "attention_cost", "paper_vs_code"}  # about the whole model, not a block of the drawing
    assert {key for _, key in links} == {s.key for s in TOUR[1:]} - not_drawn


BLOCK = re.compile(r'<a href="\./([^"]*)" data-page="([^"]+)"><title>[^<]*</title>\s*<(?:rect|path) class="(?:box )?(\w+)"')


@pytest.mark.parametrize("lang", LANGS)
def test_every_block_of_a_layer_opens_its_page(lang):
    """Feed Forward, Add & Norm, the residual arrows, Linear and Softmax each open the page that explains them."""
    svg = (ROOT / "assets" / f"architecture_{lang}.svg").read_text(encoding="utf-8")
    pages_by_kind: dict[str, set[str]] = {}
    for _, key, kind in BLOCK.findall(svg):
        pages_by_kind.setdefault(kind, set()).add(key)
    assert pages_by_kind["ffn"] == {"feed_forward"}
    assert pages_by_kind["norm"] == {"layer_norm"}
    assert pages_by_kind["res"] == {"residual_stream"}
    assert pages_by_kind["lin"] == pages_by_kind["soft"] == {"output_and_loss"}
    assert svg.count('data-page="feed_forward"') == 2 and svg.count('data-page="layer_norm"') == 5
    assert svg.count('data-page="residual_stream"') == 5


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

"""The catalogs: same keys in both languages, every key the code asks for exists, safe fallbacks."""
from __future__ import annotations

import ast
import json
import re
import string
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from ui import i18n
from ui.i18n import LANGS, MissingTranslation, lang_from_accept_language, lang_from_locale, load_catalogs, translate
from ui.models import ModelUnavailable
from ui.tour import TOUR

ROOT = Path(__file__).resolve().parents[2]
CATALOGS = load_catalogs()
SOURCES = [ROOT / "app.py", *sorted((ROOT / "app_pages").glob("*.py")), *sorted((ROOT / "ui").rglob("*.py"))]


def namespaces(lang: str) -> set[str]:
    return {p.stem for p in (i18n.CATALOG_DIR / lang).glob("*.json")}


def keys_of(lang: str, namespace: str) -> set[str]:
    return {k for k in CATALOGS[lang] if k.split(".", 1)[0] == namespace}


def fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


def test_both_languages_have_the_same_namespaces():
    assert namespaces("en") == namespaces("zh")
    assert {"common", "home", "tokens", "masks", "positional_encoding", "attention", "decoding", "training"} <= namespaces("en")


@pytest.mark.parametrize("namespace", sorted(namespaces("en")))
def test_both_languages_have_exactly_the_same_keys(namespace):
    en, zh = keys_of("en", namespace), keys_of("zh", namespace)
    assert en - zh == set(), f"only in English: {sorted(en - zh)}"
    assert zh - en == set(), f"only in Chinese: {sorted(zh - en)}"


def test_every_text_is_non_empty_and_has_the_same_placeholders():
    for key, en in CATALOGS["en"].items():
        zh = CATALOGS["zh"][key]
        assert en.strip() and zh.strip(), key
        assert fields(en) == fields(zh), f"{key}: {fields(en)} vs {fields(zh)}"


def test_catalog_files_are_plain_json_objects():
    for path in i18n.CATALOG_DIR.glob("*/*.json"):
        assert isinstance(json.loads(path.read_text(encoding="utf-8")), dict), path


def test_every_page_has_a_title_in_both_languages():
    cjk = re.compile(r"[\u4e00-\u9fff]")
    for s in TOUR:
        assert s.title_key in CATALOGS["en"]
        assert cjk.search(CATALOGS["zh"][s.title_key]) or s.key == "home", s.title_key
        assert s.section in CATALOGS["en"]


def t_calls(path: Path) -> list[ast.expr]:
    """The first argument of every call to ``t(...)`` in ``path`` (code only: docstrings are skipped)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [
        node.args[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "t" and node.args
    ]


def literal_keys() -> set[tuple[str, str]]:
    """``(file, key)`` for every ``t("ns.key")`` whose key is a string literal."""
    return {
        (path.relative_to(ROOT).as_posix(), arg.value)
        for path in SOURCES
        for arg in t_calls(path)
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
    }


def computed_key_patterns() -> set[tuple[str, str]]:
    """``(file, regex)`` for every ``t(f"ns.{x}")``: the literal parts, with ``[^.]+`` for each field."""
    found = set()
    for path in SOURCES:
        for arg in t_calls(path):
            if isinstance(arg, ast.JoinedStr):
                parts = [re.escape(v.value) if isinstance(v, ast.Constant) else "[^.]+" for v in arg.values]
                found.add((path.name, "".join(parts)))
    return found


def test_the_scan_finds_keys():
    assert ("app.py", "common.app_title") in literal_keys()
    assert any(path.startswith("app_pages/") for path, _ in literal_keys())


@pytest.mark.parametrize("lang", LANGS)
def test_every_literal_key_in_the_code_exists(lang):
    missing = sorted(f"{path}: {key}" for path, key in literal_keys() if key not in CATALOGS[lang])
    assert not missing, missing


def test_every_computed_key_matches_some_catalog_key():
    patterns = computed_key_patterns()
    assert patterns, "the scan should see the sidebar's t(f'common.language_name.{code}')"
    for name, pattern in patterns:
        assert any(re.fullmatch(pattern, key) for key in CATALOGS["en"]), f"{name}: {pattern}"


def test_the_computed_keys_of_the_shell_all_exist():
    wanted = [f"common.language_name.{lang}" for lang in LANGS]
    wanted += [f"home.tour.{s.key}" for s in TOUR[1:]]
    wanted += [f"common.model.unavailable_{kind}" for kind in ModelUnavailable.KINDS]
    for lang in LANGS:
        assert [k for k in wanted if k not in CATALOGS[lang]] == []


def test_missing_key_raises_in_strict_mode(monkeypatch):
    monkeypatch.setenv(i18n.STRICT_ENV_VAR, "1")
    with pytest.raises(MissingTranslation):
        translate("home.no_such_key", "en")
    with pytest.raises(MissingTranslation):
        translate("common.nav.next", "en")  # its {title} is not given


def test_missing_key_shows_the_key_at_runtime(monkeypatch):
    monkeypatch.delenv(i18n.STRICT_ENV_VAR, raising=False)
    assert translate("home.no_such_key", "zh") == "home.no_such_key"
    assert translate("common.nav.next", "en") == CATALOGS["en"]["common.nav.next"]


def test_format_arguments_are_filled():
    assert translate("common.nav.next", "zh", title="掩码") == "下一页：掩码"


@pytest.mark.parametrize(
    ("locale", "lang"),
    [("zh", "zh"), ("zh-CN", "zh"), ("zh_TW", "zh"), ("ZH-hans", "zh"), ("en-US", "en"), ("de-DE", None),
     ("", None), (None, None)],
)
def test_lang_from_locale(locale, lang):
    assert lang_from_locale(locale) == lang


@pytest.mark.parametrize(
    ("header", "lang"),
    [("zh-CN,zh;q=0.9,en;q=0.8", "zh"), ("de-DE,de;q=0.9,en;q=0.5,zh;q=0.4", "en"), ("en;q=0.2,zh;q=0.8", "zh"),
     ("fr", None), ("zh;q=0", None), ("zh;q=abc,en", "en"), (None, None)],
)
def test_lang_from_accept_language(header, lang):
    assert lang_from_accept_language(header) == lang


@pytest.mark.parametrize("lang", LANGS)
def test_every_bold_and_italic_marker_is_rendered(lang):
    """Streamlit renders texts as CommonMark, whose rules for ``**`` look at the characters around it:
    a closing ``**`` right after full-width punctuation and right before a Han character does not
    close (``**你看到的是：**这些`` shows its asterisks). Render every text as CommonMark and check that
    no asterisk is left over (a literal one would be written ``\\*``)."""
    markdown = MarkdownIt("commonmark")
    left_over = {}
    for key, text in CATALOGS[lang].items():
        if "*" not in text or "\\*" in text:
            continue
        shown = re.sub(r"<[^>]+>", "", markdown.render(text))
        if "*" in shown:
            left_over[key] = shown[max(shown.index("*") - 20, 0):shown.index("*") + 20]
    assert left_over == {}


def test_the_markdown_check_catches_punctuation_before_a_closing_marker():
    markdown = MarkdownIt("commonmark")
    assert "**" in markdown.render("一个向量。**你看到的是：**这些向量")
    assert "**" not in markdown.render("一个向量。**你看到的是**：这些向量")

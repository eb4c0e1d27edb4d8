"""Every user-visible string, in English and 中文, from the JSON catalogs in ``assets/i18n``.

Catalogs live in ``assets/i18n/<lang>/<namespace>.json``, one namespace per page (``common``,
``home``, ``tokens``, ...). Files are discovered by glob, so a page author adds a namespace by
dropping ``en/<ns>.json`` and ``zh/<ns>.json`` beside the others, with exactly the same keys
(``tests/unit/test_i18n.py`` checks that, and that every literal ``t("ns.key")`` in the code
exists). A value may be a string or a nested object; nested keys are joined with dots, so
``{"sidebar": {"language": "Language"}}`` in ``common.json`` is ``t("common.sidebar.language")``.

Usage in a page::

    from ui.i18n import t

    st.title(t("attention.title"))
    st.caption(t("attention.heads_caption", heads=4))   # str.format placeholders: "{heads} heads"

Every text is a ``str.format`` template (write ``{{`` for a literal brace).
A missing key (or a missing format argument) shows the key itself at runtime, so a classroom
never sees a traceback because of a typo; with ``TP_I18N_STRICT=1`` in the environment (the
test suites set it) it raises :class:`MissingTranslation` instead, which AppTest and the
browser tests report as an exception element.

The catalogs are read once per process and shared read-only by every session.
"""
from __future__ import annotations

import functools
import json
import logging
import os
from pathlib import Path
from typing import Any, Mapping

LANGS: tuple[str, ...] = ("en", "zh")
DEFAULT_LANG = "en"
LANG_STATE_KEY = "lang"  # session_state key the sidebar's language widget owns
CATALOG_DIR = Path(__file__).resolve().parents[1] / "assets" / "i18n"
STRICT_ENV_VAR = "TP_I18N_STRICT"

_log = logging.getLogger(__name__)


class MissingTranslation(KeyError):
    """A key (or one of its format arguments) is missing from a catalog; raised in strict mode."""


def _flatten(prefix: str, value: Any, out: dict[str, str], source: Path) -> None:
    if isinstance(value, dict):
        for key, child in value.items():
            _flatten(f"{prefix}.{key}", child, out, source)
    elif isinstance(value, str):
        out[prefix] = value
    else:
        raise ValueError(f"{source}: {prefix!r} must be a string or an object, not {type(value).__name__}.")


def load_catalogs(root: Path = CATALOG_DIR) -> dict[str, dict[str, str]]:
    """All catalogs under ``root`` as ``{lang: {"namespace.key": text}}`` (not cached)."""
    catalogs: dict[str, dict[str, str]] = {}
    for lang in LANGS:
        flat: dict[str, str] = {}
        for path in sorted((root / lang).glob("*.json")):
            with path.open(encoding="utf-8") as f:
                _flatten(path.stem, json.load(f), flat, path)
        catalogs[lang] = flat
    return catalogs


@functools.cache
def catalogs() -> Mapping[str, Mapping[str, str]]:
    """The catalogs of this process, read once on first use."""
    return load_catalogs()


def strict() -> bool:
    """True when missing keys must raise (tests), False when they must show the key (classroom)."""
    return os.environ.get(STRICT_ENV_VAR, "") not in ("", "0", "false")


def translate(key: str, lang: str, /, **fmt: Any) -> str:
    """The text of ``key`` in ``lang``, formatted with ``fmt``; works outside a Streamlit run."""
    text = catalogs().get(lang, {}).get(key)
    if text is None:
        text = catalogs().get(lang, {}).get(_current_namespace(key))
    if text is None:
        if strict():
            raise MissingTranslation(f"No {lang!r} text for {key!r} in {CATALOG_DIR}.")
        _log.warning("missing translation %s:%s", lang, key)
        return key
    try:
        return text.format(**fmt)
    except (KeyError, IndexError, ValueError) as exc:
        if strict():
            raise MissingTranslation(f"{lang}:{key} cannot be formatted with {sorted(fmt)}: {exc!r}") from exc
        _log.warning("bad format arguments for %s:%s: %r", lang, key, exc)
        return text


def _current_namespace(key: str) -> str:
    """``key`` under its page's namespace of today when it names an old one (``"ffn.title"`` is
    ``"feed_forward.title"``: see :data:`ui.tour.OLD_KEYS`), for text keys written before a renaming."""
    from ui.tour import OLD_KEYS

    namespace, dot, rest = key.partition(".")
    return f"{OLD_KEYS[namespace]}.{rest}" if dot and namespace in OLD_KEYS else key


def lang_from_locale(locale: str | None) -> str | None:
    """``"zh"`` for any Chinese tag (``zh``, ``zh-CN``, ``zh-Hant-TW``), ``"en"`` for English, else None."""
    if not locale:
        return None
    primary = locale.strip().split(",")[0].split(";")[0].replace("_", "-").split("-")[0].lower()
    return primary if primary in LANGS else None


def lang_from_accept_language(header: str | None) -> str | None:
    """The first supported language in an ``Accept-Language`` header, honouring ``q`` weights."""
    if not header:
        return None
    weighted: list[tuple[float, int, str]] = []
    for index, part in enumerate(header.split(",")):
        tag, _, params = part.strip().partition(";")
        q = 1.0
        if params.strip().startswith("q="):
            try:
                q = float(params.strip()[2:])
            except ValueError:
                q = 0.0
        lang = lang_from_locale(tag)
        if lang and q > 0:
            weighted.append((-q, index, lang))
    return min(weighted)[2] if weighted else None


def browser_lang() -> str:
    """The language the visitor's browser asks for: ``st.context.locale``, then Accept-Language."""
    import streamlit as st

    try:
        lang = lang_from_locale(st.context.locale)
        if lang is None:  # the browser has not sent its locale (first message, or AppTest)
            lang = lang_from_accept_language(st.context.headers.get("Accept-Language"))
    except Exception:  # no script-run context (bare python); fall back quietly
        lang = None
    return lang or DEFAULT_LANG


_last_run_lang = DEFAULT_LANG


def current_lang() -> str:
    """The language of this session: the sidebar's choice, else the browser's.

    Outside a script run (no session: a worker thread, or AppTest formatting an option label
    with a widget's ``format_func`` after the run) it is the language of the most recent run in
    this process, so option labels match the ones that run produced.
    """
    global _last_run_lang
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    if get_script_run_ctx(suppress_warning=True) is None:
        return _last_run_lang
    import streamlit as st

    lang = st.session_state.get(LANG_STATE_KEY)
    if lang not in LANGS:
        lang = browser_lang()
    _last_run_lang = lang
    return lang


def t(key: str, /, **fmt: Any) -> str:
    """The text of ``"namespace.key"`` in the current language, formatted with ``fmt``."""
    return translate(key, current_lang(), **fmt)

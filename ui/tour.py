"""The page registry: every page, in teaching order, in one table, and the old names of each.

``app.py`` builds ``st.navigation`` from it, :func:`ui.nav.tour_links` walks it for the
"← previous / next →" links, the home page lists it and the tests derive their page lists from it.

One name per page: its ``key`` is the file stem (``app_pages/<key>.py``), the i18n namespace
(``assets/i18n/{en,zh}/<key>.json``), the prefix of its URL values (``?<key>_<name>=``, see
:meth:`Stop.url_name`) and, with ``_`` written ``-`` (URLs use hyphens), its URL path
(``/feed-forward`` for ``feed_forward``). To add a page, add one :class:`Stop` here; CONTRIBUTING.md
lists the other files a green run needs.

URL paths and URL names are part of the app's public interface (teachers bookmark them): a page
renamed since a link was shared keeps its old names in :data:`OLD_KEYS` / :data:`OLD_PREFIXES`,
and :func:`stop`, :func:`current_name` and the URL binding read them as the new ones.
"""
from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from ui.i18n import t


@dataclass(frozen=True)
class Stop:
    """One page of the tour: its ``key`` (file stem, i18n namespace, URL prefix, URL path), its sidebar
    ``icon`` and ``section`` (the i18n key of the sidebar group it belongs to)."""

    key: str
    icon: str
    section: str

    @property
    def script(self) -> str:
        """The page's file, relative to ``app.py``."""
        return f"app_pages/{self.key}.py"

    @property
    def url_path(self) -> str:
        """The stable URL: the key with ``-`` for ``_``; ``""`` (the root) for the home page."""
        return "" if self.key == "home" else self.key.replace("_", "-")

    @property
    def title_key(self) -> str:
        return f"{self.key}.title"

    @property
    def title(self) -> str:
        return t(self.title_key)

    @property
    def is_default(self) -> bool:
        return self.url_path == ""

    def url_name(self, name: str) -> str:
        """The query-string name of this page's value ``name``: ``stop("feed_forward").url_name("view")``
        is ``"feed_forward_view"``."""
        return f"{self.key}_{name}"


TOUR: tuple[Stop, ...] = (
    Stop("home", ":material/home:", "common.section.start"),
    Stop("tokens", ":material/text_fields:", "common.section.blocks"),
    Stop("masks", ":material/grid_on:", "common.section.blocks"),
    Stop("positional_encoding", ":material/waves:", "common.section.blocks"),
    Stop("attention", ":material/hub:", "common.section.blocks"),
    Stop("feed_forward", ":material/lan:", "common.section.blocks"),
    Stop("residual_stream", ":material/merge:", "common.section.blocks"),
    Stop("layer_norm", ":material/tune:", "common.section.blocks"),
    Stop("decoding", ":material/output:", "common.section.action"),
    Stop("output_and_loss", ":material/functions:", "common.section.action"),
    Stop("bleu", ":material/grading:", "common.section.action"),
    Stop("attention_cost", ":material/speed:", "common.section.action"),
    Stop("training", ":material/model_training:", "common.section.action"),
    Stop("paper_vs_code", ":material/difference:", "common.section.action"),
)

# ------------------------------------------------------------------ old names (links shared before the renaming)

# A page's key before it became its file stem (it was also its i18n namespace). URL paths did not change.
OLD_KEYS: dict[str, str] = {
    "positional": "positional_encoding",
    "ffn": "feed_forward",
    "residual": "residual_stream",
    "layernorm": "layer_norm",
    "output": "output_and_loss",
    "cost": "attention_cost",
}
# The prefix of a page's URL values before it became ``<key>_`` (``?ff_view=`` is ``?feed_forward_view=``).
# ``bleu_`` was already its key; the shared values (``lang``, ``model``, ``batch``, ``sent``) have no page prefix.
OLD_PREFIXES: dict[str, str] = {
    "tok_": "tokens_",
    "mask_": "masks_",
    "pe_": "positional_encoding_",
    "att_": "attention_",
    "ff_": "feed_forward_",
    "rs_": "residual_stream_",
    "ln_": "layer_norm_",
    "dec_": "decoding_",
    "out_": "output_and_loss_",
    "cst_": "attention_cost_",
    "tr_": "training_",
}


def current_name(name: str) -> str:
    """Today's name of a URL value or page key that may be an old one (``"ff_view"`` →
    ``"feed_forward_view"``, ``"ffn"`` → ``"feed_forward"``); other names as they are."""
    if name in OLD_KEYS:
        return OLD_KEYS[name]
    for old, new in OLD_PREFIXES.items():
        if name.startswith(old):
            return new + name[len(old):]
    return name


def old_names(name: str) -> tuple[str, ...]:
    """The old names of the URL value ``name`` (``"feed_forward_view"`` → ``("ff_view",)``)."""
    return tuple(old + name[len(new):] for old, new in OLD_PREFIXES.items() if name.startswith(new))


def stop(key: str) -> Stop:
    """The stop named ``key`` (an old key too); ``KeyError`` naming the known keys otherwise."""
    key = OLD_KEYS.get(key, key)
    for s in TOUR:
        if s.key == key:
            return s
    raise KeyError(f"No tour stop {key!r}; known: {', '.join(s.key for s in TOUR)}")


def neighbours(key: str) -> tuple[Stop | None, Stop | None]:
    """``(previous, next)`` around ``key`` in the tour; None at either end."""
    i = TOUR.index(stop(key))
    return (TOUR[i - 1] if i > 0 else None, TOUR[i + 1] if i + 1 < len(TOUR) else None)


def by_url_path(url_path: str) -> Stop | None:
    """The stop served at ``url_path`` (``""`` for the root), or None."""
    return next((s for s in TOUR if s.url_path == url_path.strip("/")), None)


def st_page(s: Stop) -> st.Page:
    """The ``st.Page`` of a stop, titled in the current language."""
    return st.Page(s.script, title=s.title, icon=s.icon, url_path=s.url_path or None, default=s.is_default)


def navigation_sections() -> dict[str, list[st.Page]]:
    """``{section title: [pages]}`` in tour order, for ``st.navigation``."""
    sections: dict[str, list[st.Page]] = {}
    for s in TOUR:
        sections.setdefault(t(s.section), []).append(st_page(s))
    return sections

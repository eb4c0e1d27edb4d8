"""The classroom tour: every page, in teaching order, in one table.

``app.py`` builds ``st.navigation`` from it, :func:`ui.nav.tour_links` walks it for the
"← previous / next →" links, and the home page lists it. To add a page, add one :class:`Stop`
here, its file in ``app_pages/``, and its ``title`` key in ``assets/i18n/{en,zh}/<key>.json``.
URL paths are part of the app's public interface (teachers bookmark them): never rename one.
"""
from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from ui.i18n import t


@dataclass(frozen=True)
class Stop:
    """One page of the tour.

    ``key`` is the stable id and the i18n namespace (its title is ``t(f"{key}.title")``);
    ``script`` is relative to ``app.py``; ``url_path`` is the stable URL (``""`` = the root, the
    default page); ``section`` is the i18n key of the sidebar group it belongs to.
    """

    key: str
    script: str
    url_path: str
    icon: str
    section: str

    @property
    def title_key(self) -> str:
        return f"{self.key}.title"

    @property
    def title(self) -> str:
        return t(self.title_key)

    @property
    def is_default(self) -> bool:
        return self.url_path == ""


TOUR: tuple[Stop, ...] = (
    Stop("home", "app_pages/home.py", "", ":material/home:", "common.section.start"),
    Stop("tokens", "app_pages/tokens.py", "tokens", ":material/text_fields:", "common.section.blocks"),
    Stop("masks", "app_pages/masks.py", "masks", ":material/grid_on:", "common.section.blocks"),
    Stop(
        "positional",
        "app_pages/positional_encoding.py",
        "positional-encoding",
        ":material/waves:",
        "common.section.blocks",
    ),
    Stop("attention", "app_pages/attention.py", "attention", ":material/hub:", "common.section.blocks"),
    Stop("ffn", "app_pages/feed_forward.py", "feed-forward", ":material/lan:", "common.section.blocks"),
    Stop("residual", "app_pages/residual_stream.py", "residual-stream", ":material/merge:", "common.section.blocks"),
    Stop("layernorm", "app_pages/layer_norm.py", "layer-norm", ":material/tune:", "common.section.blocks"),
    Stop("decoding", "app_pages/decoding.py", "decoding", ":material/output:", "common.section.action"),
    Stop("output", "app_pages/output_and_loss.py", "output-and-loss", ":material/functions:", "common.section.action"),
    Stop("bleu", "app_pages/bleu.py", "bleu", ":material/grading:", "common.section.action"),
    Stop("cost", "app_pages/attention_cost.py", "attention-cost", ":material/speed:", "common.section.action"),
    Stop("training", "app_pages/training.py", "training", ":material/model_training:", "common.section.action"),
)


def stop(key: str) -> Stop:
    """The stop named ``key``; ``KeyError`` naming the known keys otherwise."""
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


def page(s: Stop) -> st.Page:
    """The ``st.Page`` of a stop, titled in the current language."""
    return st.Page(s.script, title=s.title, icon=s.icon, url_path=s.url_path or None, default=s.is_default)


def navigation_sections() -> dict[str, list[st.Page]]:
    """``{section title: [pages]}`` in tour order, for ``st.navigation``."""
    sections: dict[str, list[st.Page]] = {}
    for s in TOUR:
        sections.setdefault(t(s.section), []).append(page(s))
    return sections

"""The home page's map: the architecture diagram beside the tour, as one piece of markup.

Drawn by :func:`ui.nav.linked_html` as a single element (the diagram's blocks and the tour's
entries are ``<a href="./<url_path>" data-page="<stop key>">`` links that switch pages inside the
session): a list of page links and captions would be a dozen elements, and the language switch,
which reruns the whole app, sends every one of them again.
"""
from __future__ import annotations

import functools
import html
import re
from pathlib import Path
from urllib.parse import urlencode

from explain.masks import FAMILIES, FAMILY_PAGES
from ui.i18n import translate
from ui.tour import TOUR, stop

ASSETS = Path(__file__).resolve().parents[1] / "assets"

# Inside the component's shadow root: applies to this markup only. Colours from the theme (--st-*).
MAP_CSS = """
.tp-diagram svg { width: 100%; height: auto; }
/* On a phone the 780-unit drawing at 358 px writes its smallest labels (12.5 units) at 5.7 px: it keeps
   600 px (labels of 9.6 px and more) and its box scrolls sideways, with its scrollbar shown. */
@media (max-width: 640px) {
  .tp-diagram { overflow-x: auto; scrollbar-width: thin; scrollbar-color: rgba(128, 128, 128, 0.6) transparent; }
  .tp-diagram svg { min-width: 600px; }
  .tp-map > section { min-width: 0; }  /* a grid item would otherwise grow to the drawing's width */
}
.tp-map { display: grid; grid-template-columns: 7fr 4fr; gap: 1rem 3rem; align-items: start; }
@media (max-width: 760px) { .tp-map { grid-template-columns: 1fr; } }
.tp-map h3 { font-size: 1.75rem; font-weight: 700; line-height: 1.2; margin: 0.5rem 0 1rem; }
.tp-caption, .tp-tour p { font-size: 0.875rem; line-height: 1.6; opacity: 0.65; margin: 0 0 0.75rem; }
.tp-tour { list-style: none; padding: 0; margin: 0; }
.tp-tour li { margin: 0 0 0.5rem; }
.tp-tour a { display: inline-flex; align-items: center; gap: 0.5rem; padding: 0.25rem 0.5rem; margin-left: -0.5rem;
             border-radius: 0.5rem; color: inherit; text-decoration: none; font-size: 0.875rem; }
.tp-tour a:hover, .tp-tour a:focus-visible { background: var(--st-secondary-background-color); }
.tp-tour a:hover strong { color: var(--st-primary-color); }
.tp-tour strong { font-weight: 600; }
.tp-icon { font-family: "Material Symbols Rounded"; font-size: 1.15rem; line-height: 1; font-weight: 400;
           font-feature-settings: "liga"; -webkit-font-smoothing: antialiased; }
"""


# The view each block of the diagram names, found by where the block stands (the same in every
# language's drawing): (x, y) of its box, of its text where it has no box, or of the start of its arrow
# (the residual connections) -> (stop key, URL values, the catalog key of the view's name, for the tooltip).
BLOCK_VIEWS: dict[tuple[str, str], tuple[str, dict[str, str], str]] = {
    ("230", "975"): ("tokens", {"tokens_side": "source"}, "tokens.batch.side_source"),  # Inputs
    ("140", "895"): ("tokens", {"tokens_side": "source"}, "tokens.batch.side_source"),  # Input Embedding
    ("470", "895"): ("tokens", {"tokens_side": "decoder_in"}, "tokens.batch.side_decoder_in"),  # Output Embedding
    ("140", "760"): ("attention", {"attention_kind": "encoder"}, "attention.kind.encoder"),  # Multi-Head Self-Attention
    ("470", "760"): ("attention", {"attention_kind": "decoder"}, "attention.kind.decoder"),  # Masked Multi-Head ...
    ("470", "620"): ("attention", {"attention_kind": "cross"}, "attention.kind.cross"),  # Cross-Attention
    ("140", "640"):  # encoder Feed Forward
        ("feed_forward", {"feed_forward_stack": "encoder"}, "feed_forward.stack.encoder"),
    ("470", "500"):  # decoder Feed Forward
        ("feed_forward", {"feed_forward_stack": "decoder"}, "feed_forward.stack.decoder"),
    ("140", "710"):  # Add & Norm
        ("layer_norm", {"layer_norm_at": "encoder.0.self_attn"}, "layer_norm.token.sublayer_self_attn"),
    ("140", "590"): ("layer_norm", {"layer_norm_at": "encoder.0.ffn"}, "layer_norm.token.sublayer_ffn"),  # Add & Norm
    ("470", "710"):  # Add & Norm
        ("layer_norm", {"layer_norm_at": "decoder.0.self_attn"}, "layer_norm.token.sublayer_self_attn"),
    ("470", "570"):  # Add & Norm
        ("layer_norm", {"layer_norm_at": "decoder.0.cross_attn"}, "layer_norm.token.sublayer_cross_attn"),
    ("470", "450"): ("layer_norm", {"layer_norm_at": "decoder.0.ffn"}, "layer_norm.token.sublayer_ffn"),  # Add & Norm
    ("470", "370"): ("output_and_loss", {"output_and_loss_view": "logits"}, "output_and_loss.section.logits"),  # Linear
    ("470", "310"):  # Softmax
        ("output_and_loss", {"output_and_loss_view": "logits"}, "output_and_loss.section.logits"),
    **{(x, y): ("residual_stream", {"residual_stream_stack": stack}, f"residual_stream.stack.{stack}")  # residual arrows
       for stack, x, ys in (("encoder", "230", ("828", "702")), ("decoder", "560", ("828", "700", "562"))) for y in ys},
}
_BLOCK = re.compile(r'<a href="\./[^"]*" data-page="([^"]+)">(.*?)</a>', re.DOTALL)
_TITLE = re.compile(r"<title>.*?</title>", re.DOTALL)
_PLACE = re.compile(r'<(?:rect|text)\b[^>]*?\bx="([^"]+)" y="([^"]+)"|<path\b[^>]*?\bd="M ([\d.]+) ([\d.]+)')


def block_link(match: re.Match, lang: str) -> str:
    """One ``<a>`` of the drawing, pointed at the view its block names (see :data:`BLOCK_VIEWS`).

    The URL values ride in the href (for a new tab) and in ``data-query`` (for a click in the
    session); the tooltip names the page and the view.
    """
    key, body = match.group(1), match.group(2)
    place = _PLACE.search(body)
    view = BLOCK_VIEWS.get(tuple(g for g in place.groups() if g is not None) if place else ("", ""))
    if view is None:
        return match.group(0)
    key, values, name_key = view
    query = html.escape(urlencode(values))
    tooltip = translate("home.diagram.open_view", lang, page=translate(stop(key).title_key, lang),
                        view=translate(name_key, lang))
    body = _TITLE.sub(f"<title>{html.escape(tooltip)}</title>", body, count=1)
    return f'<a href="./{stop(key).url_path}?{query}" data-page="{key}" data-query="{query}">{body}</a>'


@functools.cache
def _svg(lang: str) -> str:
    """The architecture drawing in ``lang``, each block's link opening the view it names."""
    drawing = (ASSETS / f"architecture_{lang}.svg").read_text(encoding="utf-8")
    return _BLOCK.sub(lambda match: block_link(match, lang), drawing)


def _icon(icon: str) -> str:
    """A stop's icon as markup: a Material Symbols ligature (``:material/name:``) or the emoji itself."""
    if icon.startswith(":material/") and icon.endswith(":"):
        return f'<span class="tp-icon" aria-hidden="true">{html.escape(icon[10:-1])}</span>'
    return f'<span class="tp-icon-emoji" aria-hidden="true">{html.escape(icon)}</span>'


def tour_html(lang: str) -> str:
    """The tour in order (home left out): numbered links to the pages, each with its one-line summary."""
    items = "".join(
        f'<li><a href="./{s.url_path}" data-page="{s.key}">{_icon(s.icon)}'
        f"<strong>{n}. {html.escape(translate(s.title_key, lang))}</strong></a>"
        f"<p>{html.escape(translate(f'home.tour.{s.key}', lang))}</p></li>"
        for n, s in enumerate(TOUR[1:], start=1)
    )
    return f'<ol class="tp-tour">{items}</ol>'


@functools.lru_cache(maxsize=8)
def map_html(lang: str) -> str:
    """The diagram (``assets/architecture_<lang>.svg``) with its heading and caption, and the tour
    beside it, all in ``lang``. Built once per language per process."""

    def e(key: str) -> str:
        return html.escape(translate(key, lang))

    return (
        f"<style>{MAP_CSS}</style>"
        '<div class="tp-map">'
        f'<section class="tp-map-diagram"><h3>{e("home.diagram.heading")}</h3>'
        f'<p class="tp-caption">{e("home.diagram.caption")}</p>'
        f'<div class="tp-diagram">{_svg(lang)}</div></section>'
        f'<section class="tp-map-tour"><h3>{e("home.tour.heading")}</h3>'
        f'<p class="tp-caption">{e("home.tour.intro")}</p>{tour_html(lang)}</section>'
        "</div>"
    )



def family_table(lang: str) -> str:
    """A markdown table of the app's pages (rows) and the three families (encoder-decoder, encoder-only,
    decoder-only): ✓ where a page applies, — where it does not, a few words where a part of it does.
    Shown on Home and on the Masks page's families section."""

    def cell(value: str) -> str:
        return {"yes": "✓", "no": "—"}.get(value) or translate(f"masks.families.note.{value}", lang)

    names = [translate(f"masks.families.{family}.name", lang) for family in FAMILIES]
    lines = ["| " + " | ".join([translate("masks.families.table_page", lang), *names]) + " |",
             "|" + " --- |" * (len(FAMILIES) + 1)]
    lines += ["| " + " | ".join([translate(stop(key).title_key, lang), *map(cell, values)]) + " |"
              for key, values in FAMILY_PAGES]
    return "\n".join(lines)

"""ui.home_view: the home page's diagram and tour, built as one piece of markup per language."""
import re

import pytest

from ui import home_view
from ui.i18n import LANGS, translate
from ui.tour import TOUR

LINK = re.compile(r'<a href="\./([^"]*)" data-page="([^"]+)">')


@pytest.mark.parametrize("lang", LANGS)
def test_the_tour_links_every_page_after_home_in_order(lang):
    tour = home_view.tour_html(lang)
    assert LINK.findall(tour) == [(s.url_path, s.key) for s in TOUR[1:]]
    assert tour.count("<li>") == len(TOUR) - 1


@pytest.mark.parametrize("lang", LANGS)
def test_the_map_holds_the_diagram_then_the_tour(lang):
    markup = home_view.map_html(lang)
    svg = home_view._svg(lang)
    assert markup.index(svg) < markup.index('<ol class="tp-tour">')
    assert translate("home.tour.heading", lang) in markup
    # every page is reachable from both the diagram and the tour
    assert {key for _, key in LINK.findall(markup)} == {s.key for s in TOUR[1:]}


def test_icons_are_ligatures_or_escaped_text():
    assert home_view._icon(":material/hub:") == '<span class="tp-icon" aria-hidden="true">hub</span>'
    assert home_view._icon("<🧪>") == '<span class="tp-icon-emoji" aria-hidden="true">&lt;🧪&gt;</span>'


def test_texts_are_escaped(monkeypatch):
    monkeypatch.setattr(home_view, "translate", lambda key, lang: "<b>&</b>")
    tour = home_view.tour_html("en")
    assert "<b>" not in tour and "&lt;b&gt;&amp;&lt;/b&gt;" in tour


@pytest.mark.parametrize("lang", LANGS)
def test_every_block_the_diagram_names_opens_its_view_in_both_drawings(lang):
    """A redrawn diagram that moved a block would silently lose its link: each BLOCK_VIEWS place must
    still be a linked block of the drawing, and its link must carry that view."""
    svg = home_view._svg(lang)
    for (x, y), (key, values, _) in home_view.BLOCK_VIEWS.items():
        query = "&amp;".join(f"{name}={value}" for name, value in values.items())
        assert f'data-page="{key}" data-query="{query}"' in svg, (lang, x, y, key)
    assert svg.count("data-query=") == len(home_view.BLOCK_VIEWS)


@pytest.mark.parametrize("lang", LANGS)
def test_the_decoder_residual_arrows_open_the_decoder_stack(lang):
    """#35 item 15: the decoder side's residual arrows opened the Residual stream page on the encoder stack."""
    svg = home_view._svg(lang)
    arrows = re.findall(r'<a href="\./residual-stream\?([^"]*)" data-page="residual_stream"[^>]*>.*?d="M (\d+) ', svg,
                        re.DOTALL)
    assert sorted(arrows) == sorted([("residual_stream_stack=encoder", "230")] * 2
                                    + [("residual_stream_stack=decoder", "560")] * 3)


@pytest.mark.parametrize("lang", LANGS)
def test_the_family_table_lists_the_pages_and_the_three_families(lang):
    """#32: which pages apply to encoder-decoder, encoder-only and decoder-only models, in ``lang``."""
    from explain.masks import FAMILIES, FAMILY_PAGES
    from ui.tour import stop

    lines = home_view.family_table(lang).splitlines()
    assert len(lines) == 2 + len(FAMILY_PAGES)
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    assert header == [translate("masks.families.table_page", lang),
                      *(translate(f"masks.families.{family}.name", lang) for family in FAMILIES)]
    rows = {cells[0]: cells[1:] for cells in ([c.strip() for c in line.strip("|").split("|")] for line in lines[2:])}
    no_cross = translate("masks.families.note.no_cross", lang)
    assert rows[translate(stop("attention").title_key, lang)] == ["✓", no_cross, no_cross]
    assert rows[translate(stop("decoding").title_key, lang)] == ["✓", "—", "✓"]
    assert all(len(cells) == len(FAMILIES) for cells in rows.values())

"""The app shell under AppTest: every page in both languages, the language and model from the URL and
the sidebar, bad URL values, the tour's links, the model choice across pages."""
from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from model.tasks import DEFAULT_ALPHABET
from tests.app.apptest_helpers import clean, open_script, texts
from ui import models
from ui import home_view
from ui.i18n import LANGS, translate
from ui.tour import TOUR, neighbours, stop
from ui.url_state import markdown_literal

ROOT = Path(__file__).resolve().parents[2]


def open_page(app, key: str, **kwargs) -> AppTest:
    """Open page ``key`` in a fresh session, as a deep link would where AppTest can do that.

    Before its first run AppTest finds a page by its file name, so a page whose URL path differs
    from its file name (``positional-encoding``) is reached by running the default page first
    and then switching, as a click in the sidebar would. The browser tests open every page by
    its real deep link.
    """
    s = stop(key)
    if s.is_default:
        return clean(app(**kwargs).run())
    return open_script(app, s.script, kwargs.get("query"), locale=kwargs.get("locale"),
                       home_first=Path(s.script).stem != s.url_path)


def titles(at: AppTest) -> list[str]:
    return [e.value for e in at.title]


def heading(key: str, lang: str) -> str:
    """The h1 of page ``key``: its title, except on home, which shows the app's name."""
    return translate("common.app_title" if key == "home" else f"{key}.title", lang)


def toasts(at: AppTest) -> list[str]:
    return texts(at.toast)


def page_links(at: AppTest) -> list[tuple[str, str, str]]:
    """``(label, url path, query string)`` of every page link on the page."""
    return [(p.proto.label, p.proto.page, p.proto.query_string) for p in at.get("page_link")]


# ------------------------------------------------------------------ every page, both languages


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("key", [s.key for s in TOUR])
def test_every_page_runs_in_both_languages(app, key, lang):
    at = open_page(app, key, query={"lang": lang})
    assert titles(at)[0] == heading(key, lang)
    assert at.query_params["lang"] in (lang, [lang])
    assert at.radio(key="lang").value == lang
    assert not toasts(at)


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("key", ["tokens", "masks", "attention", "decoding"])
def test_a_page_that_takes_text_lists_the_characters_the_model_knows(app, key, lang):
    """The shipped models are character-level over a small Latin alphabet: a class typing Chinese
    must be told, beside the box, that those characters become <unk>."""
    at = open_page(app, key, query={"lang": lang, "model": "copy"})
    note = translate("common.alphabet.note", lang, chars=markdown_literal(DEFAULT_ALPHABET.replace(" ", ""), 200))
    assert note in [c.value for c in at.caption], key


@pytest.mark.parametrize("key, query", [("tokens", {}), ("masks", {"masks_view": "effect"}), ("positional_encoding", {}),
                                        ("attention", {"attention_view": "inside"}), ("decoding", {})])
def test_chinese_vertical_axis_titles_read_across(app, key, query):
    """Plotly turns a y-axis title on its side, which lays Chinese characters down: in 中文 every such
    title is written across, above its axis, instead."""
    at = open_page(app, key, query={"lang": "zh", **query})
    cjk = re.compile(r"[\u4e00-\u9fff]")
    moved = 0
    for chart in at.get("plotly_chart"):
        layout = json.loads(chart.proto.spec)["layout"]
        for name, axis in layout.items():
            if name.startswith("yaxis"):
                assert not cjk.search(str(axis.get("title", {}).get("text") or "")), (key, name)
        moved += sum(1 for note in layout.get("annotations", []) if note.get("yref", "").endswith("domain")
                     and note.get("yanchor") == "bottom" and cjk.search(note.get("text", "")))
    assert moved, key  # each of these views has at least one titled vertical axis


@pytest.mark.parametrize("key", [s.key for s in TOUR])
def test_every_page_runs_with_no_query_at_all(app, key):
    at = open_page(app, key)
    assert titles(at)[0] == heading(key, "en")


@pytest.mark.parametrize(
    ("locale", "expected"), [("zh-CN", "zh"), ("zh-Hant-TW", "zh"), ("en-GB", "en"), ("fr-FR", "en")]
)
def test_language_defaults_from_the_browser_locale(app, locale, expected):
    at = clean(app(locale=locale).run())
    assert at.radio(key="lang").value == expected
    assert titles(at)[0] == heading("home", expected)


def test_url_language_beats_browser_locale(app):
    at = clean(app(query={"lang": "en"}, locale="zh-CN").run())
    assert at.radio(key="lang").value == "en"


# ------------------------------------------------------------------ malformed URL values


@pytest.mark.parametrize("bad", ["fr", "", "ZH", "en<script>", "x" * 500])
@pytest.mark.parametrize("key", ["home", "attention"])
def test_bad_language_falls_back_with_a_notice(app, key, bad):
    at = open_page(app, key, query={"lang": bad}, locale="zh-CN")
    assert at.radio(key="lang").value == "zh"
    assert at.query_params["lang"] in ("zh", ["zh"])
    notices = toasts(at)
    assert len(notices) == 1 and "lang" in notices[0]


def elsewhere_notice(name: str, used: str, lang: str) -> str:
    """The lasting notice about a linked model that is not in this session."""
    return translate("common.link_and_paste.model_elsewhere", lang, name=markdown_literal(name),
                     used=markdown_literal(used), download=translate("training.download.button", lang),
                     upload=translate("training.upload.heading", lang))


def test_bad_model_falls_back_with_a_notice(app):
    at = clean(app(query={"model": "no-such-model", "lang": "en"}).run())
    names = models.available_models()
    notices = toasts(at)
    assert len(notices) == 1 and "no-such-model" in notices[0].replace("\\", "")
    lasting = [w.value for w in at.main.warning]
    assert len(lasting) == 1 and "no-such-model" in lasting[0].replace("\\", "")
    if names:
        assert at.selectbox(key="model").value == names[0]
        assert at.query_params["model"] in (names[0], [names[0]])
    else:
        assert "model" not in at.query_params


@pytest.mark.parametrize("lang", LANGS)
def test_a_model_from_another_session_gets_a_lasting_notice(app, tiny_checkpoints, lang):
    """A link naming a model trained in someone else's session: the page opens on the first model
    and says, until the visitor picks a model or hides it, that such a model lives only in its
    trainer's session and how to share it (download the checkpoint, upload it)."""
    at = clean(app(query={"model": "copy-tiny-1", "lang": lang}).run())
    expected = elsewhere_notice("copy-tiny-1", "copy", lang)
    assert [w.value for w in at.main.warning] == [expected] and len(toasts(at)) == 1  # the toast passes, it stays
    assert at.selectbox(key="model").value == "copy" and at.query_params["model"] in ("copy", ["copy"])
    clean(at.run())
    assert expected in texts(at.main.warning)  # it stays on the next run...
    clean(at.switch_page("app_pages/attention.py").run())
    assert expected in texts(at.main.warning)  # ...and on the next page
    clean(at.selectbox(key="model").set_value("reverse").run())
    assert not any("copy-tiny-1" in w for w in texts(at.main.warning))  # a model picked: it has done its job


@pytest.mark.parametrize("blank", ["", "   "])
def test_a_blank_model_in_the_link_gets_the_passing_notice_only(app, tiny_checkpoints, blank):
    at = clean(app(query={"model": blank, "lang": "en"}).run())
    assert len(toasts(at)) == 1
    assert not at.main.warning, [w.value for w in at.main.warning]  # no "the model ****" lasting notice
    assert at.selectbox(key="model").value == "copy"


def test_the_model_notice_can_be_hidden(app, tiny_checkpoints):
    at = clean(app(query={"model": "someone-elses-model", "lang": "en"}).run())
    assert elsewhere_notice("someone-elses-model", "copy", "en") in texts(at.main.warning)
    clean(at.button(key="model_elsewhere.dismiss").click().run())
    assert not at.main.warning and at.selectbox(key="model").value == "copy"


@pytest.mark.parametrize("name", models.shipped_models() or ["copy"])
def test_model_from_the_url(app, name):
    at = clean(app(query={"model": name}).run())
    if name in models.available_models():
        assert at.selectbox(key="model").value == name
        assert not toasts(at)
    else:  # no shipped checkpoint yet: a notice, not a crash
        assert len(toasts(at)) == 1


def test_unknown_query_keys_are_ignored(app):
    at = clean(app(query={"utm_source": "mail", "lang": "en"}).run())
    assert titles(at)[0] == heading("home", "en")


# ------------------------------------------------------------------ state across pages


def test_language_choice_survives_page_switches(app):
    at = clean(app(query={"lang": "en"}).run())
    clean(at.radio(key="lang").set_value("zh").run())
    assert titles(at)[0] == heading("home", "zh")
    assert at.query_params["lang"] in ("zh", ["zh"])
    for s in TOUR[1:]:
        clean(at.switch_page(s.script).run())
        assert titles(at)[0] == heading(s.key, "zh")
        assert at.radio(key="lang").value == "zh"


def test_switch_page_walks_the_whole_tour_with_next_links(app):
    at = clean(app(query={"lang": "zh"}).run())
    for s in TOUR:
        if not s.is_default:
            clean(at.switch_page(s.script).run())
        assert titles(at)[0] == heading(s.key, "zh")
        previous, following = neighbours(s.key)
        links = page_links(at)[-2:] if previous and following else page_links(at)[-1:]
        expected = [x for x in (previous, following) if x is not None]
        assert [path for _, path, _ in links] == [x.url_path for x in expected]
        assert all(query == "lang=zh" or query.startswith("lang=zh&") for _, _, query in links)
        if following is not None:
            assert links[-1][0] == translate("common.nav.next", "zh", title=translate(following.title_key, "zh"))


@pytest.mark.parametrize("lang", LANGS)
def test_home_lists_the_tour_in_order(app, lang):
    at = clean(app(query={"lang": lang}).run())
    (element,) = at.get("bidi_component")  # the diagram and the tour: one element
    markup = json.loads(element.proto.json)["html"]
    tour = markup[markup.index('<ol class="tp-tour">'):]
    assert re.findall(r'<a href="\./([^"]*)" data-page="([^"]+)">', tour) == [(s.url_path, s.key) for s in TOUR[1:]]
    for n, s in enumerate(TOUR[1:], start=1):
        assert f"{n}. {html.escape(translate(s.title_key, lang))}" in tour
        assert html.escape(translate(f"home.tour.{s.key}", lang)) in tour
    assert f"<h3>{html.escape(translate('home.diagram.heading', lang))}</h3>" in markup
    assert home_view._svg(lang) in markup  # the drawing, each block linked to the view it names
    assert markup.count("data-query=") == len(home_view.BLOCK_VIEWS)
    assert at.info[0].value.startswith(f"**{translate('home.prereq.heading', lang)}**")


# ------------------------------------------------------------------ the model, chosen in the URL and the sidebar

def test_model_choice_from_url_and_sidebar(app, tiny_checkpoints):
    assert models.available_models() == ["copy", "reverse", "sort"]
    at = clean(app(query={"model": "reverse", "lang": "en"}).run())
    assert at.selectbox(key="model").value == "reverse" and not toasts(at)
    clean(at.selectbox(key="model").set_value("copy").run())
    assert at.query_params["model"] in ("copy", ["copy"])
    clean(at.switch_page("app_pages/attention.py").run())
    assert at.selectbox(key="model").value == "copy"
    assert at.query_params["model"] in ("copy", ["copy"])

"""The decoding page under AppTest, on small random models written for the test (no training).

Checks read what the page shows: the step's figure, the outputs side by side, the teacher-forcing
table, and the URL.
"""
from __future__ import annotations

import html

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from explain.decoding import count_differences
from model import decoding
from model.tasks import get_task
from tests.app.apptest_helpers import chart, clean, open_script, query, random_model_fixtures, values
from ui import models
from ui.i18n import LANGS, catalogs, translate
from ui.url_state import markdown_literal

N_LAYERS, N_HEADS = 2, 2
STRATEGIES = ("greedy", "beam", "sample")
SECTIONS = ("steps", "compare", "forcing", "parallel")
checkpoint_dir, random_models = random_model_fixtures(
    ("copy", 3), ("dates", 4), folder="decoding_checkpoints", d_model=32, n_heads=N_HEADS, n_layers=N_LAYERS,
    d_ff=64, max_len=40, label_smoothing=0.2)


def open_decoding(app, lang: str = "en", **query: str) -> AppTest:
    return open_script(app, "app_pages/decoding.py", {"lang": lang, **query})


def outputs(at: AppTest) -> list[str]:
    """The texts in code blocks: in 'side by side', the greedy, beam and sampling outputs in order."""
    return [c.value for c in at.code]


def step_parts(at: AppTest) -> tuple[np.ndarray, dict, np.ndarray]:
    """(triangle z, first bar trace, cross-attention z) of the step figure (one chart, three cells)."""
    data = chart(at, "decoding.step_figure")["data"]
    heatmaps = [values(t["z"]) for t in data if t["type"] == "heatmap" and t.get("hoverinfo") != "skip"]  # not the grey layer
    assert len(heatmaps) == 2, "the triangle and the cross-attention"
    return heatmaps[0], next(t for t in data if t["type"] == "bar"), heatmaps[1]


def step_slider(at: AppTest):
    return at.slider(key="decoding.step")


def step(at: AppTest) -> int:
    return step_slider(at).value


def move_step(at: AppTest, value: int) -> AppTest:
    """Move the step slider to ``value`` and rerun."""
    return clean(step_slider(at).set_value(value).run())


def url_step(at: AppTest) -> str | None:
    """The step in the URL (``?decoding_step=``), None when the URL has none."""
    return query(at, "decoding_step") if "decoding_step" in at.query_params else None


def status(at: AppTest) -> str:
    """The step's status line ("Step 2 of 9. The decoder reads ...")."""
    found = [m.value for m in at.markdown if m.value.startswith("**") and r"\<bos\>" in m.value]
    assert len(found) == 1, [m.value for m in at.markdown]
    return found[0]


# ------------------------------------------------------------------ step by step


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_step_shows_a_growing_triangle_and_its_next_tokens(app, strategy):
    at = open_decoding(app, dec_strategy=strategy)
    assert step(at) == 1
    n = step_slider(at).max
    last = min(n, 4)
    for expected in range(1, last + 1):
        assert step(at) == expected and url_step(at) == str(expected)
        assert status(at).startswith(translate("decoding.steps.status", "en", step=expected, n=n, prefix="",
                                               chosen="", p="").split(".")[0])
        heat, bars, cross = step_parts(at)
        filled = ~np.isnan(heat)
        assert filled.sum() == expected * expected, "the prefix has one token per step so far"
        assert filled[:expected, :expected].all()
        prefix = heat[:expected, :expected]
        assert np.allclose(prefix.sum(axis=1), 1.0, atol=1e-3)
        assert np.allclose(np.triu(prefix, k=1), 0.0)
        probs = values(bars["x"])
        assert (np.diff(probs) <= 1e-9).all() and probs.max() <= 1.0
        assert cross.shape == (N_HEADS, len(get_task("copy").example))
        assert np.allclose(cross.sum(axis=1), 1.0, atol=1e-3)
        if expected < last:
            clean(at.button(key="decoding.next").click().run())
    clean(at.button(key="decoding.prev").click().run())
    assert step(at) == last - 1 and url_step(at) == str(last - 1)


def test_the_last_step_ends_with_eos_or_the_length_limit(app):
    at = open_decoding(app)
    n = step_slider(at).max
    move_step(at, n)
    ended = [s.value for s in at.success] + [w.value for w in at.warning]
    assert len(ended) == 1
    assert at.button(key="decoding.next").disabled


def test_step_in_a_link_and_a_step_too_far(app):
    at = open_decoding(app, dec_step="2", dec_layer="2", dec_head="2")
    assert step(at) == 2 and url_step(at) == "2" and not at.toast
    assert at.segmented_control(key="decoding.layer").value == 2
    too_far = open_decoding(app, dec_step="999")
    assert step(too_far) == 1 and len(too_far.toast) == 1
    assert "999" in too_far.toast[0].value and url_step(too_far) == "1", "the link now says what is shown"
    for bad in ("0", "abc", "2.5"):
        shown = open_decoding(app, dec_step=bad)
        assert step(shown) == 1 and len(shown.toast) == 1 and url_step(shown) == "1"


def test_a_repeated_step_in_a_link_counts_once(app):
    """``?decoding_step=2&decoding_step=3``: the last value counts, as for every value bound to the URL."""
    at = open_decoding(app, dec_step=["2", "3"])
    assert step(at) == 3 and at.query_params["decoding_step"][-1] == "3"
    assert not at.toast


def test_the_step_is_kept_across_a_page_switch(app):
    at = open_decoding(app)
    for _ in range(2):
        clean(at.button(key="decoding.next").click().run())
    assert step(at) == 3 and url_step(at) == "3"
    clean(at.switch_page("app_pages/home.py").run())
    for name in [name for name in at.query_params if name.startswith("decoding_")]:
        del at.query_params[name]  # as the browser does on a page switch (AppTest keeps them)
    clean(at.switch_page("app_pages/decoding.py").run())
    assert step(at) == 3 and url_step(at) == "3"


def test_a_decoding_without_the_step_shown_keeps_its_nearest_step(app):
    at = open_decoding(app, dec_text="a longer sentence")
    n = int(step_slider(at).max)
    move_step(at, n)
    assert url_step(at) == str(n)
    clean(at.text_input(key="decoding.text").set_value("ab").run())
    shorter = int(step_slider(at).max)
    assert shorter < n
    assert step(at) == shorter and url_step(at) == str(shorter), "the view and its link agree"
    assert status(at).startswith(f"**Step {shorter} of {shorter}.")
    assert not at.toast, "nothing the visitor typed in the URL was ignored"
    move_step(at, 2)
    clean(at.text_input(key="decoding.text").set_value("a longer sentence").run())
    assert step(at) == 2 and url_step(at) == "2", "a step that the new decoding has is kept"


def test_moving_the_step_slider_does_not_decode_again(app, monkeypatch):
    calls = []
    original = decoding.greedy_decode

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(decoding, "greedy_decode", counting)
    at = open_decoding(app, dec_text="cache me once")
    assert len(calls) == 1
    for value in (2, 3, 1):
        move_step(at, value)
    clean(at.radio(key="lang").set_value("zh").run())
    assert len(calls) == 1
    written = translate("decoding.steps.written", "zh", written="").removesuffix("**")  # "目前已写出：**"
    assert written.startswith("目前已写出：") and written in status(at)
    assert step(at) == 1 and url_step(at) == "1"


# ------------------------------------------------------------------ strategies side by side


def test_beam_of_one_is_greedy(app):
    at = open_decoding(app, dec_view="compare")
    clean(at.slider(key="decoding.beam").set_value(1).run())
    assert query(at, "decoding_beam") == "1"
    greedy, beam, _ = outputs(at)[:3]
    assert beam == greedy
    scores = [float(m.value) for m in at.metric]
    assert scores[0] == pytest.approx(scores[1])
    table = at.dataframe[0].value
    assert set(table[translate("decoding.beams.rank", "en")]) == {1}


def test_wider_beams_never_score_worse_than_their_own_first_beam(app):
    at = open_decoding(app, dec_view="compare", dec_beam="4")
    table = at.dataframe[0].value
    ranks = table.groupby(translate("decoding.beams.step", "en"))[translate("decoding.beams.rank", "en")].max()
    assert ranks.max() >= 2, "a beam of 4 keeps several hypotheses per step"
    assert all(score <= 0 for score in table[translate("decoding.beams.score", "en")])


def test_sampling_is_repeatable_and_temperature_zero_is_greedy(app):
    at = open_decoding(app, dec_view="compare", dec_temp="1.5", dec_seed="7")
    first = outputs(at)[2]
    again = open_decoding(app, dec_view="compare", dec_temp="1.5", dec_seed="7")
    assert outputs(again)[2] == first
    clean(at.slider(key="decoding.temperature").set_value(0.0).run())
    greedy, _, sample = outputs(at)[:3]
    assert sample == greedy
    clean(at.select_slider(key="decoding.top_k").set_value("3").run())
    assert query(at, "decoding_topk") == "3"
    clean(at.number_input(key="decoding.seed").set_value(11).run())
    assert query(at, "decoding_seed") == "11"


# ------------------------------------------------------------------ beam search as a tree


def tree_nodes(at: AppTest) -> dict[str, dict]:
    """The beam tree's node traces by (escaped) legend name."""
    return {t["name"]: t for t in chart(at, "decoding.beam_tree")["data"] if t.get("hovertext")}


def ranking(at: AppTest):
    """The table of the hypotheses the answer is chosen among (after the per-step beams table)."""
    return at.dataframe[1].value


@pytest.mark.parametrize("lang", LANGS)
def test_the_beam_tree_and_its_ranking_in_both_languages(app, lang):
    at = open_decoding(app, lang=lang, decoding_view="compare", decoding_beam="3")
    nodes = tree_nodes(at)
    names = {html.escape(translate(f"decoding.tree.status.{s}", lang)) for s in ("kept", "pruned", "finished", "open")}
    assert set(nodes) <= names and html.escape(translate("decoding.tree.status.kept", lang)) in nodes
    data = chart(at, "decoding.beam_tree")["data"]
    path = next(t for t in data if t.get("name") == html.escape(translate("decoding.tree.chosen", lang)))
    on_path = sorted({x for x in path["x"] if x is not None})
    beam_steps = int(at.dataframe[0].value[translate("decoding.beams.step", lang)].max())
    assert on_path == list(range(len(on_path))) and 1 < len(on_path) <= beam_steps + 1, "<bos>, then one a step"
    hovers = [h for t in nodes.values() for h in t["hovertext"]]
    assert html.escape(translate("decoding.tree.hover_root", lang)) in hovers
    others = [h for h in hovers if "<br>" in h]
    assert len(others) == len(hovers) - 1 and all("^0 = " in h for h in others), "each gives score / length^α"
    captions = " ".join(c.value for c in at.caption)
    assert translate("decoding.tree.not_drawn", lang) in captions
    table = ranking(at)
    columns = {name: translate(f"decoding.tree.rcol_{name}", lang) for name in
               ("score", "normalised", "rank_sum", "rank_normalised", "chosen")}
    assert set(columns.values()) <= set(table.columns)
    assert np.allclose(table[columns["normalised"]], table[columns["score"]]), "α = 0 by default: the plain sum"
    assert list(table[columns["chosen"]]) == [True] + [False] * (len(table) - 1)
    assert query(at, "decoding_length_penalty") == "0.0"


def test_the_length_penalty_through_its_slider_and_a_link(app):
    at = open_decoding(app, decoding_view="compare", decoding_beam="4")
    clean(at.slider(key="decoding.length_penalty").set_value(1.0).run())
    assert query(at, "decoding_length_penalty") == "1.0"
    table = ranking(at)
    score, length, normalised = (table[translate(f"decoding.tree.rcol_{name}", "en")]
                                 for name in ("score", "length", "normalised"))
    assert np.allclose(normalised, score / length, atol=2e-3), "α = 1: the mean log-probability per token"
    assert (np.diff(normalised) <= 1e-9).all(), "best by the normalised score first"
    linked = open_decoding(app, decoding_view="compare", decoding_beam="4", decoding_length_penalty="1.0")
    assert linked.slider(key="decoding.length_penalty").value == 1.0 and not linked.toast
    assert outputs(linked)[1] == outputs(at)[1], "the link shows the same beam answer"
    steps = open_decoding(app, decoding_strategy="beam", decoding_length_penalty="1.5")
    assert steps.slider(key="decoding.length_penalty").value == 1.5, "the step-by-step beam uses it too"


@pytest.mark.parametrize("bad", ["abc", "-1", "2.5", "nan", "inf", "<script>"])
def test_a_hostile_length_penalty_in_the_url_falls_back_to_zero(app, bad):
    at = open_decoding(app, decoding_view="compare", decoding_length_penalty=bad)
    assert at.slider(key="decoding.length_penalty").value == 0.0
    assert len(at.toast) == 1 and query(at, "decoding_length_penalty") == "0.0", "said, and the link corrected"
    assert tree_nodes(at)


def test_a_beam_of_one_draws_one_chain(app):
    at = open_decoding(app, decoding_view="compare", decoding_beam="1")
    assert translate("decoding.tree.greedy", "en") in [i.value for i in at.info]
    data = chart(at, "decoding.beam_tree")["data"]
    kept = [(x, y) for t in data if t.get("hovertext") and t["marker"]["symbol"] != "square"
            for x, y in zip(t["x"], t["y"])]
    steps = [x for x, _ in kept]
    assert sorted(steps) == list(range(len(steps))), "one hypothesis in the beam at every step, <bos> at 0"
    clean(at.slider(key="decoding.length_penalty").set_value(0.5).run())
    assert translate("decoding.tree.greedy_alpha", "en") in [i.value for i in at.info]


@pytest.mark.parametrize("lang", LANGS)
def test_stepping_through_beam_search_marks_the_step_on_its_tree(app, lang):
    """Step by step, beam search draws its tree too, with a band over the step on screen; the other strategies
    have no tree."""
    at = open_decoding(app, lang=lang, decoding_strategy="beam", decoding_beam="3", decoding_step="2")

    def band(a: AppTest) -> tuple[float, float]:
        (shape,) = chart(a, "decoding.step_tree")["layout"]["shapes"]
        return shape["x0"], shape["x1"]

    def hovers(a: AppTest, key: str) -> list[str]:
        return sorted(h for trace in chart(a, key)["data"] for h in trace.get("hovertext") or [])

    assert band(at) == (2 - 0.45, 2 + 0.45)
    side_by_side = open_decoding(app, lang=lang, decoding_view="compare", decoding_beam="3")
    assert hovers(at, "decoding.step_tree") == hovers(side_by_side, "decoding.beam_tree"), "the same search"
    clean(at.button(key="decoding.next").click().run())
    assert band(at) == (3 - 0.45, 3 + 0.45), "the band follows the step"
    assert translate("decoding.steps.tree_caption", lang, step=3) in [c.value for c in at.caption]
    greedy = open_decoding(app, lang=lang, decoding_strategy="greedy")
    assert not [c for c in greedy.get("plotly_chart") if c.proto.id.endswith("-decoding.step_tree")]


# ------------------------------------------------------------------ teacher forcing


def test_teacher_forcing_against_free_running_with_a_known_target(app):
    at = open_decoding(app, dec_view="forcing")
    source = get_task("copy").example
    assert outputs(at)[0] == source, "the copy task's target is the source itself"
    table = at.dataframe[0].value
    assert len(table) == len(source) + 1  # every character and <eos>
    reads = list(table[translate("decoding.forcing.col_reads_true", "en")])
    assert reads[0] == "<bos>" and "".join(reads[1:]).replace("␣", " ") == source
    probs = table[translate("decoding.forcing.col_p_true", "en")]
    assert ((probs >= 0) & (probs <= 1)).all()
    bars = values(chart(at, "decoding.forcing_chart")["data"][0]["y"])
    assert np.allclose(bars, probs, atol=1e-3)


def test_a_target_can_be_typed_when_the_task_has_none(app):
    at = open_decoding(app, dec_view="forcing")
    clean(at.selectbox(key="model").set_value("dates").run())
    clean(at.text_input(key="decoding.text").set_value("31 feb 2026").run())
    assert not at.dataframe and at.info, "no correct date exists: the page asks for a target"
    clean(at.text_input(key="decoding.target").set_value("2026-03-03").run())
    assert query(at, "decoding_target") == "2026-03-03"
    assert len(at.dataframe[0].value) == len("2026-03-03") + 1


# ------------------------------------------------------------------ all at once vs one at a time


def parallel_rows(at: AppTest) -> tuple[list[list[str]], np.ndarray]:
    """(the two rows' tokens: step by step, all at once; which positions differ) from the chart."""
    cells = chart(at, "decoding.parallel_chart")["data"][0]
    return cells["text"], values(cells["z"])


@pytest.mark.parametrize("lang", LANGS)
def test_all_at_once_beside_step_by_step_with_the_passes_each_needs(app, lang):
    at = open_decoding(app, lang=lang, decoding_view="parallel")
    assert at.segmented_control(key="decoding.placeholder").value == "unk"
    (greedy, parallel), differs = parallel_rows(at)
    n = len(greedy)
    assert len(parallel) == n and differs.shape == (2, n)
    assert (differs[0] == differs[1]).all() and (differs[0] == [a != b for a, b in zip(greedy, parallel)]).all()
    assert n == step_slider(open_decoding(app, lang=lang)).max, "as many positions as greedy decoding took steps"
    passes = [m.value for m in at.metric]
    assert passes == [str(n), "1"], "step by step: one pass per token written; all at once: one"
    assert [m.label for m in at.metric] == [
        translate("decoding.parallel.passes", lang, name=translate(f"decoding.parallel.{name}", lang))
        for name in ("greedy", "parallel")]
    inputs = translate("decoding.parallel.inputs", lang, n=n, placeholder=r"\<unk\>", many=n - 1)
    assert inputs in [m.value for m in at.markdown]
    assert translate("decoding.parallel.why", lang) in [m.value for m in at.markdown]
    if differs.any():
        first = translate("decoding.parallel.first_difference", lang, position=int(np.argmax(differs[0])))
        assert first in at.warning[0].value
        shown = [[html.unescape(tok) for tok in row] for row in (parallel, greedy)]
        too_often, missing = count_differences(*shown)
        for c in too_often:
            assert translate("decoding.parallel.count", lang, token=markdown_literal(c.token), parallel=c.parallel,
                             greedy=c.greedy) in at.warning[0].value
        for c in missing:
            assert f"**{markdown_literal(c.token)}**" in at.warning[0].value
    else:
        assert at.success[0].value == translate("decoding.parallel.all_same", lang)
    assert query(at, "decoding_view") == "parallel"


def test_copies_of_bos_as_placeholders_through_the_control_and_the_url(app):
    at = open_decoding(app, decoding_view="parallel")
    clean(at.segmented_control(key="decoding.placeholder").set_value("bos").run())
    assert query(at, "decoding_placeholder") == "bos"
    (greedy, parallel), _ = parallel_rows(at)
    n = len(greedy)
    inputs = translate("decoding.parallel.inputs", "en", n=n, placeholder=r"\<bos\>", many=n - 1)
    assert inputs in [m.value for m in at.markdown]
    linked = open_decoding(app, decoding_view="parallel", decoding_placeholder="bos")
    assert parallel_rows(linked)[0][1] == parallel, "the link shows the same pass"


@pytest.mark.parametrize("bad", ["pad", "<script>alert(1)</script>", ""])
def test_a_hostile_placeholder_in_the_url_falls_back_to_unk(app, bad):
    at = open_decoding(app, decoding_view="parallel", decoding_placeholder=bad)
    assert at.segmented_control(key="decoding.placeholder").value == "unk"
    assert len(at.toast) == 1 and query(at, "decoding_placeholder") == "unk", "said, and the link corrected"
    assert chart(at, "decoding.parallel_chart")


# ------------------------------------------------------------------ languages, bad input, no model


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("section", SECTIONS)
def test_every_section_in_both_languages(app, lang, section):
    at = open_decoding(app, lang=lang, dec_view=section)
    assert at.title[0].value == translate("decoding.title", lang)
    assert at.segmented_control(key="decoding.section").value == section
    assert translate("decoding.try.heading", lang) in " ".join(m.value for m in at.markdown)


@pytest.mark.parametrize(("text", "notice"), [("", "common.input.empty"), ("x" * 100, "common.input.truncated"),
                                              ("héllo ☃", "common.input.unknown_chars")])
def test_bad_input_gets_a_clear_notice(app, text, notice):
    at = open_decoding(app)
    clean(at.text_input(key="decoding.text").set_value(text).run())
    opening = catalogs()["en"][notice].split("{")[0]
    assert any(w.value.startswith(opening) for w in at.warning), [w.value for w in at.warning]
    assert bool(at.get("plotly_chart")) == (notice != "common.input.empty")


def test_no_model_gives_a_notice_not_a_traceback(app, monkeypatch, tmp_path):
    monkeypatch.setattr(models, "CHECKPOINT_DIR", tmp_path)
    at = open_decoding(app)
    assert [i.value for i in at.info] == [translate("common.model.none_available", "en")]


# ------------------------------------------------------------------ issue #24: what the probabilities mean


def test_the_sampled_token_is_always_among_the_bars_with_its_value(app):
    """At temperature 2 sampling draws tokens outside the 8 most likely; each step's bars still list the
    chosen token (red label), with its value written at the end of its bar."""
    at = open_decoding(app, dec_strategy="sample", dec_temp="2.0", dec_seed="1")
    n, outside = int(step_slider(at).max), 0
    for number in range(1, n + 1):
        if number > 1:
            move_step(at, number)
        data = chart(at, "decoding.step_figure")
        bars = [t for t in data["data"] if t["type"] == "bar"]
        assert len(bars) == 2 and all(len(bar["text"]) == len(values(bar["x"])) for bar in bars)
        chosen = [text for text in data["layout"]["yaxis2"]["ticktext"] if "<b>" in text]
        assert len(chosen) == 1, "the chosen token's label is marked"
        outside += len(values(bars[0]["x"])) > 8
    assert outside, "a temperature of 2 draws a token outside the 8 most likely at least once"


@pytest.mark.parametrize("section", ["steps", "forcing"])
def test_a_note_says_why_right_answers_stop_near_1_minus_the_models_epsilon(app, section):
    """ε is read from the checkpoint (these were saved with 0.2), not the shipped models' 0.1 for every model."""
    at = open_decoding(app, dec_view=section)
    note = translate("decoding.smoothing_note", "en", epsilon="0.2", p="0.8")
    assert any(note in caption.value for caption in at.caption)
    assert "ε = 0.2" in note and "near 0.8" in note


@pytest.mark.parametrize("lang", LANGS)
def test_the_label_smoothing_note_links_to_the_output_page(app, lang):
    """Issue #21: where the page shows a probability, a note links to the output page's label-smoothing view."""
    at = open_decoding(app, lang, model="copy")
    links = [e.proto for e in at.get("page_link")]
    smoothing = [l for l in links if l.label == translate("common.smoothing_link", lang)]
    assert smoothing, [l.label for l in links]
    assert "output-and-loss" in smoothing[0].page and "output_and_loss_view=smoothing" in smoothing[0].query_string


# ------------------------------------------------------------------ what the key/value cache saves


@pytest.mark.parametrize("lang", LANGS)
def test_the_cache_section_counts_the_pairs_of_the_real_greedy_decode(app, lang):
    at = open_decoding(app, lang=lang)
    assert translate("decoding.cache.heading", lang) in [h.value for h in at.subheader]
    computed, reused = chart(at, "decoding.cache_chart")["data"]
    assert computed["name"] == translate("decoding.cache.computed", lang)
    computed, reused = values(computed["y"]), values(reused["y"])
    n = int(step_slider(at).max)  # the greedy decode's steps
    S = len(get_task("copy").example)  # the copy task's example is the default sentence, one token per character
    steps = np.arange(1, n + 1)
    assert len(computed) == n
    assert (computed + reused == N_LAYERS * (steps + S)).all(), "with reuse, as many pairs as without the cache"
    assert computed[0] == N_LAYERS * (1 + S) and (computed[1:] == N_LAYERS).all()
    total = translate("decoding.cache.total", lang, steps=n, computed=int(computed.sum()),
                      without=int((computed + reused).sum()), ratio="").split("(")[0].split("（")[0]
    assert any(m.value.startswith(total) for m in at.markdown), total

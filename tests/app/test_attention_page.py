"""The attention page under AppTest, on small random models written for the test (no training).

Checks read what the page actually shows: the plotly figures' JSON, metrics, tables and the URL.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from explain.attention import KINDS
from model.tasks import get_task
from tests.app.apptest_helpers import (chart, clean, open_script, query, random_model_fixtures, texts, values,
                                      write_random_checkpoint)
from ui import models
from ui.i18n import LANGS, catalogs, translate

N_LAYERS, N_HEADS, D_MODEL = 2, 2, 32
D_K = D_MODEL // N_HEADS
SECTIONS = ("overview", "heads", "inside", "stats", "ablation")
checkpoint_dir, random_models = random_model_fixtures(
    ("copy", 1), ("dates", 2), folder="attention_checkpoints", d_model=D_MODEL, n_heads=N_HEADS, n_layers=N_LAYERS,
    d_ff=64, max_len=40)


def open_attention(app, **query: str) -> AppTest:
    return open_script(app, "app_pages/attention.py", {"lang": "en", **query})


def all_heatmaps(figure: dict) -> list[np.ndarray]:
    """z of every heatmap trace of ``figure``, in drawing order."""
    return [values(trace["z"]) for trace in figure["data"] if trace["type"] == "heatmap"]


def head_panels(figure: dict) -> list[str]:
    """The head view's panel titles (one per head drawn), without their bold markup."""
    return [a["text"].replace("<b>", "").replace("</b>", "") for a in figure["layout"].get("annotations", [])
            if a["text"].replace("<b>", "").startswith("Head ")]


def expected_focus(checkpoint_dir, task: str, kind: str) -> tuple[int, int]:
    """The most focused head of ``kind`` for the task's example, computed outside the page."""
    from explain.attention import attention_maps, attention_view, most_focused_head
    from model.checkpoint import load_checkpoint
    ckpt = load_checkpoint(checkpoint_dir / f"{task}.pt")
    return most_focused_head(attention_maps(attention_view(ckpt, get_task(task).example), kind))


def set_section(at: AppTest, section: str) -> AppTest:
    return clean(at.segmented_control(key="attention.section").set_value(section).run())


def metric_values(at: AppTest) -> list[float]:
    return [float(m.value) for m in at.metric]


# ------------------------------------------------------------------ what the page shows


def test_page_shows_the_task_example_and_the_answer(app):
    at = open_attention(app)
    assert at.text_input(key="attention.text").value == get_task("copy").example
    assert query(at, "attention_text") == get_task("copy").example
    assert at.code, "the model's answer is shown"
    assert any("\\sqrt{d_k}" in latex.value for latex in at.latex)


@pytest.mark.parametrize("kind", KINDS)
def test_overview_every_row_of_every_map_sums_to_one(app, kind):
    at = open_attention(app, att_kind=kind)
    maps = all_heatmaps(chart(at, "attention.grid"))
    assert len(maps) == N_LAYERS * N_HEADS
    for z in maps:
        assert np.allclose(z.sum(axis=1), 1.0, atol=1e-3)
        assert (z >= 0).all()
    zoom = all_heatmaps(chart(at, "attention.zoom"))[0]
    assert np.allclose(zoom.sum(axis=1), 1.0, atol=1e-3)
    if kind == "decoder":  # the look-ahead mask: nothing above the diagonal
        assert np.allclose(np.triu(zoom, k=1), 0.0)
    if kind == "cross":  # one row per decoder position, one column per source character
        source = get_task("copy").example
        assert zoom.shape[1] == len(source)


@pytest.mark.parametrize("layer", range(1, N_LAYERS + 1))
@pytest.mark.parametrize("head", range(1, N_HEADS + 1))
def test_each_layer_and_head_zooms_into_its_own_map(app, layer, head):
    at = open_attention(app, att_kind="cross")
    clean(at.segmented_control(key="attention.layer").set_value(layer).run())
    clean(at.segmented_control(key="attention.head").set_value(head).run())
    assert (query(at, "attention_layer"), query(at, "attention_head")) == (str(layer), str(head))
    grid = all_heatmaps(chart(at, "attention.grid"))
    zoom_figure = chart(at, "attention.zoom")
    zoom = all_heatmaps(zoom_figure)[0]
    assert np.allclose(zoom, grid[(layer - 1) * N_HEADS + (head - 1)], atol=1e-3)
    assert f"layer {layer}, head {head}" in zoom_figure["layout"]["title"]["text"]
    assert at.get("download_button"), "the shown map can be downloaded"


def test_a_link_opens_the_same_view(app):
    at = open_attention(app, att_kind="decoder", att_layer="2", att_head="2", att_view="heads", att_all="false")
    assert at.segmented_control(key="attention.kind").value == "decoder"
    assert at.segmented_control(key="attention.layer").value == 2
    assert at.segmented_control(key="attention.head").value == 2
    assert head_panels(chart(at, "attention.head_view")) == ["Head 2"]


@pytest.mark.parametrize(("name", "bad"), [("attention_layer", "9"), ("attention_head", "0"), ("attention_kind", "self"),
                                           ("attention_view", "<b>x</b>")])
def test_bad_link_values_fall_back_with_a_notice(app, name, bad):
    at = open_attention(app, **{name: bad})
    assert len(at.toast) == 1
    assert query(at, name) != bad


def test_head_view_draws_one_colour_per_head(app):
    at = open_attention(app, att_view="heads", att_kind="encoder")
    figure = chart(at, "attention.head_view")
    assert head_panels(figure) == [f"Head {h}" for h in range(1, N_HEADS + 1)]
    chosen = at.segmented_control(key="attention.head").value
    framed = [shape for shape in figure["layout"].get("shapes", []) if shape["type"] == "rect"]
    assert len(framed) == 1, "the chosen head's panel is framed"
    bold = [a["text"] for a in figure["layout"]["annotations"] if a["text"].startswith("<b>Head")]
    assert bold == [f"<b>Head {chosen}</b>"]
    clean(at.toggle(key="attention.all_heads").set_value(False).run())
    assert query(at, "attention_all") == "false"
    assert head_panels(chart(at, "attention.head_view")) == [f"Head {chosen}"]


@pytest.mark.parametrize("kind", KINDS)
def test_the_page_opens_on_the_most_focused_head(app, checkpoint_dir, kind):
    """Not layer 1 head 1: the head whose rows put the most weight on one key (computed, per kind)."""
    at = open_attention(app, att_kind=kind)
    layer, head = expected_focus(checkpoint_dir, "copy", kind)
    assert (at.segmented_control(key="attention.layer").value, at.segmented_control(key="attention.head").value) \
        == (layer, head)
    assert (query(at, "attention_layer"), query(at, "attention_head")) == (str(layer), str(head))


def test_a_link_or_a_click_on_a_head_wins_over_the_focused_one(app, checkpoint_dir):
    focused = {kind: expected_focus(checkpoint_dir, "copy", kind) for kind in KINDS}
    other = next((layer, head) for layer in range(1, N_LAYERS + 1) for head in range(1, N_HEADS + 1)
                 if (layer, head) != focused["cross"])
    at = open_attention(app, att_kind="cross", att_layer=str(other[0]), att_head=str(other[1]))
    assert (at.segmented_control(key="attention.layer").value,
            at.segmented_control(key="attention.head").value) == other
    # Until a head is chosen, another kind opens on its own focused head; after a click, the choice stays.
    at = open_attention(app, att_kind="encoder")
    clean(at.segmented_control(key="attention.kind").set_value("cross").run())
    assert (at.segmented_control(key="attention.layer").value,
            at.segmented_control(key="attention.head").value) == focused["cross"]
    clean(at.segmented_control(key="attention.head").set_value(other[1]).run())
    clean(at.segmented_control(key="attention.kind").set_value("decoder").run())
    assert at.segmented_control(key="attention.head").value == other[1]


def test_inside_one_head_scores_are_scaled_by_the_square_root_of_d_k(app):
    """Encoder layer 1 reads the embeddings, which the switch does not change: only the division does."""
    at = open_attention(app, att_view="inside", att_kind="encoder", att_layer="1", att_head="1")
    scaled = all_heatmaps(chart(at, "attention.scores"))[0]
    weights_on = all_heatmaps(chart(at, "attention.weights"))[0]
    entropy_on = metric_values(at)[0]
    clean(at.toggle(key="attention.scale").set_value(False).run())
    assert query(at, "attention_scale") == "false"
    raw = all_heatmaps(chart(at, "attention.scores"))[0]
    weights_off = all_heatmaps(chart(at, "attention.weights"))[0]
    entropy_off = metric_values(at)[0]
    assert np.allclose(raw, scaled * math.sqrt(D_K), atol=0.05)
    for weights in (weights_on, weights_off):
        assert np.allclose(weights.sum(axis=1), 1.0, atol=1e-3)
    # Without the division the softmax is sharper: every row's largest weight grows, entropy falls.
    assert (weights_off.max(axis=1) >= weights_on.max(axis=1) - 1e-3).all()
    assert entropy_off < entropy_on


@pytest.mark.parametrize("kind", KINDS)
def test_inside_one_head_shows_q_k_v_scores_and_weights(app, kind):
    at = open_attention(app, att_view="inside", att_kind=kind, att_layer="2", att_head="2")
    q, k, v = all_heatmaps(chart(at, "attention.vectors"))
    assert q.shape[1] == k.shape[1] == v.shape[1] == D_K
    assert k.shape == v.shape
    scores = all_heatmaps(chart(at, "attention.scores"))[0]
    weights = all_heatmaps(chart(at, "attention.weights"))[0]
    assert scores.shape == weights.shape == (q.shape[0], k.shape[0])
    assert np.allclose(weights.sum(axis=1), 1.0, atol=1e-3)
    if kind == "decoder":  # masked scores are left out of the picture
        assert np.isnan(np.triu(scores, k=1)[np.triu_indices(len(scores), k=1)]).all()
    entropy_bars = [t for t in chart(at, "attention.weights")["data"] if t["type"] == "bar"][0]
    entropy = values(entropy_bars["x"])
    assert len(entropy) == q.shape[0]
    assert ((entropy >= 0) & (entropy <= math.log2(k.shape[0]) + 1e-3)).all()


def test_statistics_table_has_one_row_per_head(app):
    at = open_attention(app, att_view="stats", att_kind="encoder")
    table = at.dataframe[0].value
    assert len(table) == N_LAYERS * N_HEADS
    entropy = table[translate("attention.stats.col_entropy", "en")]
    largest = table[translate("attention.stats.col_max_entropy", "en")]
    assert ((entropy >= 0) & (entropy <= largest + 1e-6)).all()
    diagonal = table[translate("attention.stats.col_diagonal", "en")]
    assert ((diagonal >= 0) & (diagonal <= 1)).all()
    focus = table[translate("attention.stats.col_focus", "en")]
    assert ((focus > 0) & (focus <= 1)).all()
    bars = chart(at, "attention.stats_chart")["data"]
    assert [bar["type"] for bar in bars] == ["bar"] * N_LAYERS
    assert np.allclose(np.concatenate([values(bar["y"]) for bar in bars]), focus.to_numpy())


def test_switching_heads_off_changes_the_answers_probability(app):
    at = open_attention(app, att_view="ablation")
    assert len(at.metric) == 1
    # these random checkpoints do not say which label smoothing trained them: no note claims one
    assert not any("label smoothing" in c.value for c in at.caption)
    before = metric_values(at)[0]
    clean(at.multiselect(key="attention.ablate").set_value(["cross-1-1", "cross-2-1", "cross-2-2"]).run())
    assert query(at, "attention_off") == "cross-1-1,cross-2-1,cross-2-2"
    base, same = metric_values(at)
    assert base == pytest.approx(before, rel=1e-3)
    assert not math.isclose(same, before, rel_tol=1e-2), "switching heads off must change the probability"
    bars = [t for t in chart(at, "attention.ablation_chart")["data"] if t["type"] == "bar"]
    assert len(bars) == 2 and len(values(bars[0]["y"])) == len(values(bars[1]["y"]))
    clean(at.multiselect(key="attention.ablate").set_value([]).run())
    assert len(at.metric) == 1 and metric_values(at)[0] == pytest.approx(before, rel=1e-3)


def test_ablation_from_a_link(app):
    at = open_attention(app, att_view="ablation", att_off="enc-1-2")
    assert at.multiselect(key="attention.ablate").value == ["enc-1-2"]
    bad = open_attention(app, att_view="ablation", att_off="enc-9-9")
    assert bad.multiselect(key="attention.ablate").value == [] and len(bad.toast) == 1


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("section", SECTIONS)
def test_every_section_in_both_languages(app, lang, section):
    at = app(query={"lang": lang, "attention_view": section})
    clean(at.switch_page("app_pages/attention.py").run())
    assert at.title[0].value == translate("attention.title", lang)
    assert at.segmented_control(key="attention.section").value == section
    markdown = " ".join(m.value for m in at.markdown)
    assert translate("attention.try.heading", lang) in markdown


def test_another_model_brings_its_own_example(app):
    at = open_attention(app)
    clean(at.selectbox(key="model").set_value("dates").run())
    assert at.text_input(key="attention.text").value == get_task("dates").example
    clean(at.text_input(key="attention.text").set_value("1 jan 2000").run())
    clean(at.selectbox(key="model").set_value("copy").run())
    assert at.text_input(key="attention.text").value == "1 jan 2000", "typed text is never replaced"


@pytest.mark.parametrize(("text", "notice"), [("", "common.input.empty"), ("   ", "common.input.empty"),
                                              ("x" * 100, "common.input.truncated"),
                                              ("héllo ☃", "common.input.unknown_chars")])
def test_bad_input_gets_a_clear_notice(app, text, notice):
    at = open_attention(app)
    clean(at.text_input(key="attention.text").set_value(text).run())
    opening = catalogs()["en"][notice].split("{")[0]
    assert any(w.value.startswith(opening) for w in at.warning), [w.value for w in at.warning]
    if notice == "common.input.empty":
        assert not at.get("plotly_chart")
    else:
        assert at.get("plotly_chart")


def test_user_text_is_escaped_in_the_figures(app):
    at = open_attention(app)
    clean(at.text_input(key="attention.text").set_value("<b>x</b>").run())
    spec = json.dumps(chart(at, "attention.zoom"))
    assert "&lt;" in spec and "<b>x" not in spec


def test_no_model_gives_a_notice_not_a_traceback(app, monkeypatch, tmp_path):
    monkeypatch.setattr(models, "CHECKPOINT_DIR", tmp_path)
    at = open_attention(app)
    offline = translate("exercises.panel.offline", "en")  # the exercises' own notice (no code runs in AppTest)
    assert [i.value for i in at.info if i.value != offline] == [translate("common.model.none_available", "en")]
    assert not at.get("plotly_chart")


@pytest.mark.parametrize("lang", LANGS)
def test_the_label_smoothing_note_reads_epsilon_from_the_checkpoint(app, checkpoint_dir, lang):
    """#35 item 9: the note said "trained with label smoothing 0.1" under every model, one trained with ε = 0 too."""
    written = {"sort": (0.3, True), "reverse": (0.0, False)}
    try:
        for task, (epsilon, shown) in written.items():
            write_random_checkpoint(checkpoint_dir / f"{task}.pt", task, seed=5, n_layers=N_LAYERS,
                                    label_smoothing=epsilon)
            at = open_attention(app, lang=lang, model=task, att_view="ablation")
            note = translate("attention.ablation.smoothing_note", lang, epsilon="0.3", p="0.7")
            assert (note in [c.value for c in at.caption]) is shown
            links = [e.proto.label for e in at.get("page_link")]
            assert (translate("common.smoothing_link", lang) in links) is shown
    finally:  # the module's other tests see its two models only
        for task in written:
            (checkpoint_dir / f"{task}.pt").unlink(missing_ok=True)


@pytest.mark.parametrize("lang", LANGS)
def test_inside_one_head_says_why_the_paper_divides_by_sqrt_d_k(app, lang):
    """#35 item 10: the switch's text promised "the saturation the scaling prevents" while it only removes the
    division from a trained model. The texts say it is a temperature change; the reason is measured on random
    vectors, this model's d_k (32 / 2 heads = 16) among the rows."""
    at = open_attention(app, lang=lang, att_view="inside", att_scale="false")
    assert translate("attention.inside.compare_raw", lang) in [c.value for c in at.caption]
    (box,) = [e for e in at.expander if e.label == translate("attention.why_scale.heading", lang)]
    assert not box.children  # closed: drawn only once opened
    at.session_state["attention.why_scale_open"] = True  # what a click on its title does
    (box,) = [e for e in clean(at.run()).expander if e.label == translate("attention.why_scale.heading", lang)]
    assert translate("attention.why_scale.intro", lang, d_k=D_MODEL // N_HEADS) in [m.value for m in box.markdown]
    table = box.dataframe[0].value
    assert list(table[translate("attention.why_scale.col_d_k", lang)]) == [4, 16, 64, 256]
    variance = table[translate("attention.why_scale.col_var_raw", lang)].to_numpy()
    assert variance == pytest.approx([4, 16, 64, 256], rel=0.1)


def test_the_issues_bad_link_says_what_it_shows_instead(app):
    """#35 item 17: ``att_layer=9&att_kind=bogus`` (old names, still honoured) opens with a notice for each value."""
    at = open_attention(app, att_layer="9", att_kind="bogus")
    toasts = [str(toast.value) for toast in at.toast]
    assert len(toasts) == 2 and any("bogus" in s and "encoder" in s for s in toasts) and any("9" in s for s in toasts)
    assert query(at, "attention_kind") == "encoder" and query(at, "attention_layer") in ("1", str(N_LAYERS))


@pytest.mark.parametrize("lang", LANGS)
def test_cross_attention_statistics_leave_out_positional_measures(app, lang):
    """#35 item 7: "mean distance |query − key|" and "diagonal share" compared positions of two sentences."""
    at = open_attention(app, lang=lang, att_view="stats", att_kind="cross")
    columns = list(at.dataframe[0].value.columns)
    assert translate("attention.stats.col_distance", lang) not in columns
    assert translate("attention.stats.col_diagonal", lang) not in columns
    assert translate("attention.stats.col_focus", lang) in columns
    assert translate("attention.stats.cross_note", lang) in [c.value for c in at.caption]
    hover = chart(at, "attention.stats_chart")["data"][0]["hovertemplate"]
    assert translate("attention.stats.col_distance", lang) not in hover
    at = open_attention(app, lang=lang, att_view="stats", att_kind="encoder")  # one sentence: they mean something
    assert translate("attention.stats.col_distance", lang) in list(at.dataframe[0].value.columns)


# ------------------------------------------------------------------ warmed when the model loads (#35 item 22)


def counting(monkeypatch, module, name: str) -> list:
    """Replace ``module.name`` by a wrapper (same name, so the same cache key) that records each call."""
    import functools

    calls, real = [], getattr(module, name)

    @functools.wraps(real)
    def spy(*args, **kwargs):
        calls.append(args[1:3])
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return calls


def test_inside_one_head_computes_nothing_new_once_the_warm_up_has_run(app, monkeypatch):
    """The warm-up computes, when a model loads, the views "Inside one head" reads on the model's example
    (both scalings, with the details) and the √d_k table: the first switch to that view runs no forward."""
    import ui.cache

    import explain.attention
    from ui.warmup import start_warmup, warm_views

    at = open_attention(app)
    assert start_warmup().views_done.wait(120)  # the process's own warm-up (started by the app) is over
    views = counting(monkeypatch, explain.attention, "attention_view")
    tables = counting(monkeypatch, explain.attention, "why_scale")
    ui.cache.clear()
    warm_views(models.load_shipped("copy"))
    assert len(views) == 3 and len(tables) == 1  # the overview's, and the two "inside" reads
    del views[:], tables[:]
    clean(at.button_group(key="attention.section").set_value("inside").run())
    assert at.metric, "the inside view was not drawn"
    assert views == [] and tables == []


# ------------------------------------------------------------------ additive vs dot-product compatibility (section 3.2.1)


def chart_keys(at: AppTest) -> set[str]:
    """The attention page's chart keys shown, e.g. ``{"attention.scores", ...}``."""
    return {"attention." + c.proto.id.rsplit("-attention.", 1)[-1] for c in at.get("plotly_chart")
            if "-attention." in c.proto.id}


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("kind", KINDS)
def test_the_additive_function_scores_the_same_q_and_k_with_seeded_weights(app, lang, kind):
    from explain.compatibility import CompatibilityCost, additive_params, additive_scores

    at = open_attention(app, lang=lang, attention_view="inside", attention_kind=kind, attention_layer="2",
                        attention_head="1", attention_compat="additive")
    assert at.segmented_control(key="attention.compat").value == "additive"
    q, k, _ = all_heatmaps(chart(at, "attention.vectors"))
    scores = all_heatmaps(chart(at, "attention.additive_scores"))[0]
    expected = additive_scores(q, k, additive_params(D_K, D_K))  # from the Q and K the page drew, independently
    shown = ~np.isnan(scores)
    np.testing.assert_allclose(scores[shown], expected[shown], atol=1e-4)
    assert shown.all() if kind != "decoder" else not shown[np.triu_indices(len(q), k=1)].any()
    weights = all_heatmaps(chart(at, "attention.additive_weights"))[0]
    assert weights.shape == (len(q), len(k)) and np.allclose(weights.sum(axis=1), 1.0, atol=1e-3)
    assert "attention.scores" not in chart_keys(at) and "attention.weights" not in chart_keys(at)
    assert translate("attention.compat.honest", lang, d_a=D_K) in texts(at.info)
    table = at.table[0].value
    cost = CompatibilityCost(len(q), len(k), D_K, D_K).table()
    assert list(table[translate("attention.compat.cost.col_additive", lang)]) == list(cost["additive"])
    assert list(table[translate("attention.compat.cost.col_dot", lang)]) == list(cost["dot"])
    assert f"{(len(q) + len(k)) * D_K * D_K + len(q) * len(k) * D_K:,}" in table.iloc[0, 1]
    assert translate("attention.compat.cost.paper", lang) in texts(at.caption)
    assert not at.exception


@pytest.mark.parametrize("lang", LANGS)
def test_the_dot_product_stays_the_default_and_states_its_cost(app, lang):
    at = open_attention(app, lang=lang, attention_view="inside", attention_kind="encoder")
    assert at.segmented_control(key="attention.compat").value == "dot" and query(at, "attention_compat") == "dot"
    assert {"attention.scores", "attention.weights"} <= chart_keys(at)
    assert "attention.additive_scores" not in chart_keys(at) and not at.table
    q, k, _ = all_heatmaps(chart(at, "attention.vectors"))
    n_q, n_k = len(q), len(k)
    assert translate("attention.compat.dot_cost", lang, tq=n_q, tk=n_k, d_k=D_K, mults=f"{n_q * n_k * D_K:,}") \
        in texts(at.caption)
    clean(at.segmented_control(key="attention.compat").set_value("additive").run())
    assert query(at, "attention_compat") == "additive"
    assert {"attention.additive_scores", "attention.additive_weights"} <= chart_keys(at)
    clean(at.segmented_control(key="attention.compat").set_value("dot").run())
    assert "attention.scores" in chart_keys(at) and not at.exception


@pytest.mark.parametrize("bad", ["bahdanau", "<script>x</script>", ""])
def test_a_bad_compatibility_in_the_link_falls_back_to_the_dot_product(app, bad):
    at = open_attention(app, attention_view="inside", attention_compat=bad)
    assert at.segmented_control(key="attention.compat").value == "dot"
    assert query(at, "attention_compat") == "dot"
    assert "attention.scores" in chart_keys(at) and not at.exception
    if bad:
        assert len(at.toast) == 1


# ------------------------------------------------------------------ the gold alignment on cross-attention

SHIPPED_DIR = models.CHECKPOINT_DIR  # the module's fixture points the app at random models; these need the real ones
EN_ZH = "the cat ate two apples in the garden yesterday ."


@pytest.fixture
def shipped_translation(monkeypatch, random_models) -> None:
    """The app's model list on the shipped checkpoints (en-zh, zh-en, the character models)."""
    if not (SHIPPED_DIR / "en-zh.pt").exists() or not (SHIPPED_DIR / "zh-en.pt").exists():
        pytest.skip("the shipped en-zh / zh-en checkpoints are not in assets/checkpoints")
    monkeypatch.setattr(models, "CHECKPOINT_DIR", SHIPPED_DIR)


def outline_cells(figure: dict) -> set[tuple[int, int]]:
    """The (row, column) cells the zoom's alignment outline frames (read from the line's meta)."""
    from figures.attention import ALIGNMENT_EDGE
    lines = [trace for trace in figure["data"] if trace["type"] == "scatter"
             and trace.get("line", {}).get("color") == ALIGNMENT_EDGE]
    return {tuple(cell) for trace in lines for cell in trace["meta"]}


def expected_alignment(model: str, source: str):
    from explain.alignment import head_alignment
    from model.checkpoint import load_checkpoint
    return head_alignment(load_checkpoint(SHIPPED_DIR / f"{model}.pt"), source)


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("model, source", [("en-zh", EN_ZH), ("zh-en", "猫昨天在花园里吃了两个苹果。")])
def test_cross_attention_outlines_the_gold_alignment_and_names_the_best_heads(app, shipped_translation, lang,
                                                                             model, source):
    at = open_script(app, "app_pages/attention.py", {"lang": lang, "model": model, "attention_kind": "cross"})
    expected = expected_alignment(model, source)
    assert at.toggle(key="attention.alignment").value is True
    framed = outline_cells(chart(at, "attention.zoom"))
    assert framed == {tuple(cell) for cell in np.argwhere(expected.cells).tolist()}
    # en-zh: the <bos> row writes 猫 and frames "cat"; zh-en: the <bos> row writes "the" (no frame), the next "cat" ↔ 猫
    assert {"en-zh": (0, 1), "zh-en": (1, 0)}[model] in framed and (0, 0) not in framed
    bars = [values(trace["y"]) for trace in chart(at, "attention.alignment_chart")["data"] if trace["type"] == "bar"]
    assert np.allclose(np.stack(bars), expected.scores, atol=1e-4)
    layer, head, score = expected.best[0]
    best = translate("attention.alignment.best", lang, layer=layer, head=head, score=f"{score:.2f}")
    assert any(best in text for text in texts(at.markdown))
    assert score > expected.chance
    assert any(translate("attention.alignment.heading", lang) in text for text in texts(at.markdown))


def test_the_outline_toggle_lives_in_the_url(app, shipped_translation):
    at = open_script(app, "app_pages/attention.py", {"lang": "en", "model": "en-zh", "attention_kind": "cross",
                                                     "attention_alignment": "false"})
    assert at.toggle(key="attention.alignment").value is False
    assert not outline_cells(chart(at, "attention.zoom"))
    assert chart(at, "attention.alignment_chart"), "the scores stay without the outline"
    clean(at.toggle(key="attention.alignment").set_value(True).run())
    assert query(at, "attention_alignment") == "true"
    assert outline_cells(chart(at, "attention.zoom"))


def test_a_hostile_outline_value_falls_back_to_on(app, shipped_translation):
    at = open_script(app, "app_pages/attention.py", {"lang": "en", "model": "en-zh", "attention_kind": "cross",
                                                     "attention_alignment": "<script>1</script>"})
    assert at.toggle(key="attention.alignment").value is True
    assert query(at, "attention_alignment") != "<script>1</script>"


def test_the_best_head_button_shows_it(app, shipped_translation):
    expected = expected_alignment("en-zh", EN_ZH)
    layer, head, _ = expected.best[0]
    other = next((lay, hd) for lay in (1, 2, 3) for hd in (1, 2, 3, 4) if (lay, hd) != (layer, head))
    at = open_script(app, "app_pages/attention.py", {"lang": "en", "model": "en-zh", "attention_kind": "cross",
                                                     "attention_layer": str(other[0]),
                                                     "attention_head": str(other[1])})
    clean(at.button(key="attention.alignment_best").click().run())
    assert (query(at, "attention_layer"), query(at, "attention_head")) == (str(layer), str(head))
    assert f"layer {layer}, head {head}" in chart(at, "attention.zoom")["layout"]["title"]["text"]


@pytest.mark.parametrize("lang", LANGS)
def test_a_sentence_the_grammar_cannot_write_says_so(app, shipped_translation, lang):
    at = open_script(app, "app_pages/attention.py", {"lang": lang, "model": "en-zh", "attention_kind": "cross",
                                                     "attention_text": "the cat ate two aples ."})
    assert translate("attention.alignment.no_sentence", lang) in texts(at.caption)
    assert "attention.alignment" not in [toggle.key for toggle in at.toggle]  # nothing to outline
    assert not outline_cells(chart(at, "attention.zoom"))


def test_a_character_model_is_scored_on_its_own_alignment(app, checkpoint_dir):
    """The random copy model: the diagonal is its gold alignment; its (wrong) answer gets no outline, said so."""
    from explain.alignment import head_alignment
    from model.checkpoint import load_checkpoint
    source = get_task("copy").example
    expected = head_alignment(load_checkpoint(checkpoint_dir / "copy.pt"), source)
    at = open_attention(app, attention_kind="cross")
    bars = [values(trace["y"]) for trace in chart(at, "attention.alignment_chart")["data"] if trace["type"] == "bar"]
    assert np.allclose(np.stack(bars), expected.scores, atol=1e-4)
    assert expected.chance == pytest.approx(1 / len(source))
    answer = at.code[0].value
    if answer == source:
        assert outline_cells(chart(at, "attention.zoom")) == {(j, j) for j in range(len(source))}
    else:
        assert any(text.startswith(translate("attention.alignment.other_answer", "en", expected="")[:20])
                   for text in texts(at.caption))
        assert not outline_cells(chart(at, "attention.zoom"))


def test_the_dates_model_says_it_has_no_alignment(app):
    at = open_attention(app, model="dates", attention_kind="cross")
    assert translate("attention.alignment.no_task", "en") in texts(at.caption)

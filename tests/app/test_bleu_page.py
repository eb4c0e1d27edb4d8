"""The BLEU page under AppTest, on small random models written for the test (no training): their
answers are mostly wrong, so BLEU, exact match and the worked sentence all have something to show.

Checks read what the page shows (metrics, tables, formulas, the URL) and recompute it with sacrebleu.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from sacrebleu.metrics import BLEU
from streamlit.testing.v1 import AppTest

from model.checkpoint import save_checkpoint
from model.config import TransformerConfig
from model.tasks import get_task
from model.transformer import Transformer
from tests.app.apptest_helpers import chart, clean, open_script, query, random_model_fixtures, texts
from ui import models
from ui.i18n import LANGS, translate

checkpoint_dir, random_models = random_model_fixtures(("copy", 3), ("dates", 4), folder="bleu_checkpoints",
                                                      d_model=16, n_heads=2, n_layers=1, d_ff=32, max_len=64)


def open_bleu(app, lang: str = "en", **query_: str) -> AppTest:
    return open_script(app, "app_pages/bleu.py", {"lang": lang, **query_})


def metric(at: AppTest, key: str, lang: str = "en") -> str:
    label = translate(f"bleu.metric.{key}", lang)
    found = [m.value for m in at.metric if m.label == label]
    assert len(found) == 1, [m.label for m in at.metric]
    return found[0]


def samples_table(at: AppTest, lang: str = "en"):
    """The samples table, with the catalog's column names turned back into the code's."""
    names = {translate(f"bleu.samples.{c}", lang): c for c in ("number", "source", "reference", "output", "exact",
                                                                 "bleu")}
    frames = [d.value for d in at.dataframe if set(names) <= set(d.value.columns)]
    assert len(frames) == 1
    return frames[0].rename(columns=names)


def order_table(at: AppTest):
    names = {translate(f"bleu.worked.order_col.{c}", "en"): c for c in ("n", "matches", "total", "precision")}
    frames = [d.value for d in at.dataframe if set(names) <= set(d.value.columns)]
    assert len(frames) == 1
    return frames[0].rename(columns=names)


def markdown_starting(at: AppTest, start: str) -> list[str]:
    return [m.value for m in at.markdown if m.value.startswith(start)]


# ------------------------------------------------------------------ the model on N samples


@pytest.mark.parametrize("lang", LANGS)
def test_default_view_in_both_languages(app, lang):
    at = open_bleu(app, lang)
    assert at.title[0].value == translate("bleu.title", lang)
    assert translate("bleu.tokenize_page.char", lang) in texts(at.info)
    assert len(at.metric) == 4 and float(metric(at, "bleu", lang)) >= 0
    assert len(samples_table(at, lang)) == 50
    assert any(c.proto.id.endswith("-bleu.corpus_chart") for c in at.get("plotly_chart"))
    assert (query(at, "bleu_view"), query(at, "bleu_n"), query(at, "bleu_seed"), query(at, "bleu_noise")) == \
        ("corpus", "50", "0", "none")


def test_the_metrics_are_sacrebleus_and_exact_match_of_the_table_shown(app):
    at = open_bleu(app)
    table = samples_table(at)
    library = BLEU(tokenize="char").corpus_score(table["output"].tolist(), [table["reference"].tolist()])
    assert metric(at, "bleu") == f"{library.score:.1f}"
    assert metric(at, "bp") == f"{library.bp:.3f}"
    assert metric(at, "ratio") == f"{library.sys_len / library.ref_len:.3f}"
    exact = (table["output"] == table["reference"]).mean()
    assert metric(at, "exact") == f"{exact:.1%}"
    assert ((table["exact"] == "✓") == (table["output"] == table["reference"])).all()
    for _, row in table.head(10).iterrows():  # each row's BLEU: sacrebleu's unsmoothed sentence score
        own = BLEU(tokenize="char", smooth_method="none").sentence_score(row["output"], [row["reference"]]).score
        assert row["bleu"] == pytest.approx(round(own, 1))


def test_url_values_choose_the_samples_and_the_changes(app):
    plain = samples_table(open_bleu(app, bleu_n="20", bleu_seed="5"))
    assert len(plain) == 20
    assert plain["source"].tolist() != samples_table(open_bleu(app, bleu_n="20"))["source"].tolist()
    short = samples_table(open_bleu(app, bleu_n="20", bleu_seed="5", bleu_noise="short"))
    assert short["source"].tolist() == plain["source"].tolist()
    assert all(len(s) < len(p) or not p for s, p in zip(short["output"], plain["output"]))
    assert all(p.startswith(s) for s, p in zip(short["output"], plain["output"]))
    swapped = open_bleu(app, bleu_n="20", bleu_noise="swap")
    assert (samples_table(swapped)["exact"] == "✗").all() and metric(swapped, "exact") == "0.0%"


def test_bad_url_values_fall_back_with_a_notice(app):
    at = open_bleu(app, bleu_n="7", bleu_noise="loud", bleu_view="nope", bleu_seed="-1")
    assert len(at.toast) == 4
    assert (query(at, "bleu_n"), query(at, "bleu_noise"), query(at, "bleu_view"), query(at, "bleu_seed")) == \
        ("50", "none", "corpus", "0")
    assert len(samples_table(at)) == 50


def test_each_control_of_the_corpus_view(app):
    at = open_bleu(app)
    first = samples_table(at)
    clean(at.slider(key="bleu.n").set_value(30).run())
    assert len(samples_table(at)) == 30 and query(at, "bleu_n") == "30"
    assert samples_table(at)["source"].tolist() == first["source"].tolist()[:30]  # the same stream, cut
    clean(at.number_input(key="bleu.seed").set_value(2).run())
    assert query(at, "bleu_seed") == "2" and samples_table(at)["source"].tolist() != first["source"].tolist()[:30]
    clean(at.radio(key="bleu.noise").set_value("swap").run())
    assert query(at, "bleu_noise") == "swap" and metric(at, "exact") == "0.0%"
    clean(at.slider(key="bleu.n").set_value(120).run())  # several chunks, the last one cut
    assert len(samples_table(at)) == 120


SHIPPED = Path(__file__).resolve().parents[2] / "assets" / "checkpoints"


@pytest.mark.skipif(not (SHIPPED / "copy.pt").exists(), reason="no shipped copy model")
def test_one_wrong_token_makes_exact_match_0_while_bleu_stays_high(app, monkeypatch):
    monkeypatch.setattr(models, "CHECKPOINT_DIR", SHIPPED)  # a trained model: its answers are right
    right = open_bleu(app, model="copy", bleu_n="10")
    assert float(metric(right, "bleu")) > 90 and float(metric(right, "exact").rstrip("%")) >= 90
    at = open_bleu(app, model="copy", bleu_noise="swap", bleu_n="10")
    assert metric(at, "exact") == "0.0%" and 50 < float(metric(at, "bleu")) < 100
    table = samples_table(at)
    best = table["bleu"].idxmax()
    wrong = markdown_starting(at, f"Sample {best + 1} is wrong")
    assert len(wrong) == 1 and f"its own BLEU is {table['bleu'][best]:.1f}" in wrong[0]


# ------------------------------------------------------------------ one sentence by hand


def test_the_worked_view_opens_on_the_first_wrong_answer_and_agrees_with_sacrebleu(app):
    at = open_bleu(app, bleu_view="worked")
    table = samples_table(open_bleu(app))
    wrong = table.index[table["exact"] == "✗"]
    first = int(wrong[0]) if len(wrong) else 0
    assert at.selectbox(key="bleu.pick").value == first and query(at, "bleu_pick") == str(first)
    row = table.iloc[first]
    library = BLEU(tokenize="char", smooth_method="none").sentence_score(row["output"], [row["reference"]])
    orders = order_table(at)
    assert orders["matches"].tolist() == library.counts and orders["total"].tolist() == library.totals
    assert markdown_starting(at, translate("bleu.worked.library_same", "en", tokenize="char",
                                           bleu=f"{library.score:.2f}"))
    assert any(c.proto.id.endswith("-bleu.worked_chart") for c in at.get("plotly_chart"))


def test_each_control_of_the_worked_view(app):
    at = open_bleu(app, bleu_view="worked", bleu_n="10")
    clean(at.selectbox(key="bleu.pick").set_value(3).run())
    assert query(at, "bleu_pick") == "3"
    assert markdown_starting(at, translate("bleu.worked.sample_intro", "en", number=4))
    clean(at.segmented_control(key="bleu.order").set_value(3).run())
    assert query(at, "bleu_order") == "3" and any(r"p_3 = \frac" in x.value for x in at.latex)
    clean(at.radio(key="bleu.pair").set_value("typed").run())
    assert query(at, "bleu_pair") == "typed"
    clean(at.text_input(key="bleu.reference").input("the cat is on the mat").run())
    clean(at.text_input(key="bleu.candidate").input("the the the the").run())
    clean(at.radio(key="bleu.tokenize").set_value("13a").run())
    assert (query(at, "bleu_ref"), query(at, "bleu_cand"), query(at, "bleu_tok")) == \
        ("the cat is on the mat", "the the the the", "13a")
    orders = order_table(at)
    assert orders["matches"].tolist() == [2, 0, 0, 0] and orders["total"].tolist() == [4, 3, 2, 1]
    assert len(at.warning) == 1 and "2-gram, 3-gram, 4-gram" in at.warning[0].value
    assert markdown_starting(at, translate("bleu.worked.library_same", "en", tokenize="13a", bleu="0.00"))


def test_the_default_typed_pair_is_short_and_the_brevity_penalty_is_worked(app):
    at = open_bleu(app, "zh", bleu_view="worked", bleu_pair="typed")
    library = BLEU(tokenize="char", smooth_method="none").sentence_score("thank you so much",
                                                                        ["thank you so much, my brother"])
    assert library.bp < 1
    assert any(r"\mathrm{BP} = e^{1 - 24/14}" in x.value and f"{library.bp:.4f}" in x.value for x in at.latex)
    assert any(f"{library.score:.2f}" in x.value for x in at.latex)
    assert markdown_starting(at, translate("bleu.worked.library_same", "zh", tokenize="char",
                                           bleu=f"{library.score:.2f}"))


def test_a_model_of_an_unknown_task_still_works_a_typed_pair(app, checkpoint_dir, monkeypatch, tmp_path):
    torch.manual_seed(0)
    task = get_task("copy")
    tokenizer = task.source_tokenizer()
    config = TransformerConfig(tokenizer.vocab_size, tokenizer.vocab_size, d_model=16, n_heads=2, n_layers=1, d_ff=32,
                               dropout=0.0, max_len=64)
    save_checkpoint(tmp_path / "mystery.pt", Transformer(config).eval(), tokenizer, {"name": "mystery"})
    monkeypatch.setattr(models, "CHECKPOINT_DIR", tmp_path)
    at = open_bleu(app, model="mystery")
    assert translate("bleu.no_task", "en") in texts(at.info) and not at.metric
    at = open_bleu(app, model="mystery", bleu_view="worked")
    assert translate("bleu.no_task", "en") in texts(at.info)
    assert at.text_input(key="bleu.candidate").value == "thank you so much" and len(order_table(at)) == 4


@pytest.mark.parametrize("task,tokenize", [("en-zh", "zh"), ("zh-en", "13a")])
def test_translation_models_are_scored_at_their_tokenisation(app, monkeypatch, tmp_path, task, tokenize):
    torch.manual_seed(1)
    source, target = get_task(task).source_tokenizer(), get_task(task).target_tokenizer()
    config = TransformerConfig(source.vocab_size, target.vocab_size, d_model=16, n_heads=2, n_layers=1, d_ff=32,
                               dropout=0.0, max_len=64)
    save_checkpoint(tmp_path / f"{task}.pt", Transformer(config).eval(), source, {"name": task},
                    target_tokenizer=target)
    monkeypatch.setattr(models, "CHECKPOINT_DIR", tmp_path)
    at = open_bleu(app, model=task, bleu_n="10", bleu_noise="swap")
    assert translate(f"bleu.tokenize_page.{tokenize}", "en") in texts(at.info)
    table = samples_table(at)
    library = BLEU(tokenize=tokenize).corpus_score(table["output"].tolist(), [table["reference"].tolist()])
    assert metric(at, "bleu") == f"{library.score:.1f}"
    at = open_bleu(app, model=task, bleu_n="10", bleu_view="worked", bleu_pair="typed")
    assert at.radio(key="bleu.tokenize").value == tokenize


def test_a_model_change_at_200_samples_decodes_and_scores_nothing_once_the_warm_up_has_run(app, monkeypatch):
    """The warm-up decodes seed 0's first 200 samples of every model with a task and scores them at N = 50
    and N = 200 when the model loads (#35 item 22): switching models on the page then computes nothing."""
    import functools

    import ui.cache

    import explain.bleu
    from ui.warmup import start_warmup, warm_views

    at = open_bleu(app, bleu_n="200", model="dates")
    assert start_warmup().views_done.wait(120)  # the process's own warm-up (started by the app) is over
    calls = []
    for name in ("decode_chunk", "score_samples"):
        real = getattr(explain.bleu, name)

        def spy(*args, _real=real, _name=name, **kwargs):
            calls.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(explain.bleu, name, functools.wraps(real)(spy))
    ui.cache.clear()
    for task in ("copy", "dates"):
        warm_views(models.load_shipped(task))
    assert calls.count("decode_chunk") == 2 * 8 and calls.count("score_samples") == 2 * 2
    del calls[:]
    clean(at.selectbox(key="model").set_value("copy").run())
    assert query(at, "model") == "copy" and metric(at, "bleu")
    assert calls == []


def test_scoring_the_answers_runs_under_a_spinner_that_says_so(app, monkeypatch):
    """Scoring N answers is the part of a seed change the progress bar does not cover (#35 item 22):
    it runs inside a spinner with a translated message (shown by Streamlit only if it lasts 0.5 s)."""
    import contextlib

    import streamlit as st

    shown, real = [], st.spinner

    @contextlib.contextmanager
    def spinner(text="", *args, **kwargs):
        shown.append(text)
        with real(text, *args, **kwargs):
            yield

    monkeypatch.setattr(st, "spinner", spinner)
    at = open_bleu(app, bleu_n="30", lang="zh")
    assert translate("bleu.scoring", "zh", n=30) in shown


# ------------------------------------------------------------------ int8 weights


def size_rows(at: AppTest, lang: str = "en") -> dict[str, list[str]]:
    """The size table: {row name: [float32, int8, ratio]} with the catalog's names turned back into the code's."""
    what = translate("bleu.int8.size.what", lang)
    frames = [d.value for d in at.dataframe if what in d.value.columns]
    assert len(frames) == 1
    names = {translate(f"bleu.int8.size.{k}", lang): k for k in ("tensors", "saved")}
    columns = [translate(f"bleu.int8.size.{k}", lang) for k in ("before", "after", "ratio")]
    return {names[row[what]]: [row[c] for c in columns] for _, row in frames[0].iterrows()}


def int8_metric(at: AppTest, key: str, lang: str = "en") -> str:
    label = translate(f"bleu.int8.metric.{key}", lang)
    found = [m.value for m in at.metric if m.label == label]
    assert len(found) == 1, [m.label for m in at.metric]
    return found[0]


def int8_report():
    from explain.quantise import quantisation_report

    return quantisation_report(models.load_shipped("copy"))


@pytest.mark.parametrize("lang", LANGS)
def test_int8_view_in_both_languages(app, lang):
    at = open_bleu(app, lang, bleu_view="int8", bleu_n="20")
    report = int8_report()
    sizes = size_rows(at, lang)
    assert sizes["tensors"] == [f"{report.float_bytes / 1e6:.2f} MB", f"{report.int8_total_bytes / 1e6:.2f} MB",
                                f"{report.ratio:.1%}"]
    assert sizes["saved"][2] == f"{report.saved_ratio:.1%}"
    assert translate("bleu.int8.others.heading", lang) in texts(at.subheader)
    for name in ("float32", "int8"):
        assert any(c.proto.id.endswith(f"-bleu.int8_map_{name}") for c in at.get("plotly_chart"))
    assert int8_metric(at, "changed", lang).endswith(("of 20", "个"))
    assert query(at, "bleu_view") == "int8" and query(at, "bleu_q_kind") == "cross"


def test_int8_numbers_are_the_models_and_the_scores_are_the_pages_own(app):
    """The 'before' scores are the corpus view's for the same samples; the changed count is the table's length."""
    at = open_bleu(app, bleu_view="int8", bleu_n="30", bleu_seed="4")
    corpus = open_bleu(app, bleu_n="30", bleu_seed="4")
    before_bleu, after_bleu = int8_metric(at, "bleu").split(" → ")
    before_exact, _ = int8_metric(at, "exact").split(" → ")
    assert (before_bleu, before_exact) == (metric(corpus, "bleu"), metric(corpus, "exact"))
    changed = int(int8_metric(at, "changed").split(" of ")[0])
    number = translate("bleu.int8.changes.number", "en")
    tables = [d.value for d in at.dataframe if translate("bleu.int8.changes.after", "en") in d.value.columns]
    if changed:
        assert len(tables) == 1 and len(tables[0]) == changed
        assert at.selectbox(key="bleu.q_pick").value == int(tables[0][number].iloc[0]) - 1  # the first change
    else:
        assert not tables and translate("bleu.int8.changes.none", "en", n=30) in texts(at.success)
        assert at.selectbox(key="bleu.q_pick").value == 0
    report = int8_report()
    assert metric_value(at, "bleu.int8.error.step") == f"{report.max_relative_error:.3f}"
    assert float(metric_value(at, "bleu.int8.error.step")) <= 0.5


def metric_value(at: AppTest, key: str) -> str:
    found = [m.value for m in at.metric if m.label == translate(key, "en")]
    assert len(found) == 1
    return found[0]


def test_int8_controls_via_the_url_and_by_hand(app):
    source = samples_table(open_bleu(app, bleu_n="10"))["source"][3]
    at = open_bleu(app, "zh", bleu_view="int8", bleu_n="10", bleu_q_kind="encoder", bleu_q_pick="3",
                   bleu_q_layer="1", bleu_q_head="2")
    assert not at.toast
    assert at.segmented_control(key="bleu.q_kind").value == "encoder"
    assert (at.selectbox(key="bleu.q_pick").value, at.segmented_control(key="bleu.q_head").value) == (3, 2)
    title = chart(at, "bleu.int8_map_int8")["layout"]["title"]["text"]
    assert title == translate("bleu.int8.attention.title", "zh", model="int8", layer=1, head=2)
    assert len(chart(at, "bleu.int8_map_float32")["layout"]["xaxis"]["ticktext"]) == len(source)  # the source's chars
    clean(at.segmented_control(key="bleu.q_kind").set_value("decoder").run())
    clean(at.segmented_control(key="bleu.q_head").set_value(1).run())
    assert (query(at, "bleu_q_kind"), query(at, "bleu_q_head")) == ("decoder", "1")
    shown = json.dumps(chart(at, "bleu.int8_map_int8")["layout"], ensure_ascii=False)  # Chinese y titles: across
    assert translate("bleu.int8.attention.queries.decoder", "zh") in shown


def test_hostile_int8_values_fall_back_with_a_notice(app):
    at = open_bleu(app, bleu_view="int8", bleu_n="10", bleu_q_kind="<script>", bleu_q_layer="9", bleu_q_head="-1",
                   bleu_q_pick="99999")
    assert len(at.toast) == 4
    assert (query(at, "bleu_q_kind"), query(at, "bleu_q_layer"), query(at, "bleu_q_head")) == ("cross", "1", "1")
    assert int(query(at, "bleu_q_pick")) < 10
    assert any(c.proto.id.endswith("-bleu.int8_map_int8") for c in at.get("plotly_chart"))


def test_int8_view_of_a_model_without_a_task_shows_its_size_only(app, monkeypatch, tmp_path):
    torch.manual_seed(0)
    tokenizer = get_task("copy").source_tokenizer()
    config = TransformerConfig(tokenizer.vocab_size, tokenizer.vocab_size, d_model=16, n_heads=2, n_layers=1, d_ff=32,
                               dropout=0.0, max_len=64)
    save_checkpoint(tmp_path / "mystery.pt", Transformer(config).eval(), tokenizer, {"name": "mystery"})
    monkeypatch.setattr(models, "CHECKPOINT_DIR", tmp_path)
    at = open_bleu(app, model="mystery", bleu_view="int8")
    assert translate("bleu.int8.no_task", "en") in texts(at.info)
    assert size_rows(at)["tensors"][2].endswith("%") and not at.get("plotly_chart")

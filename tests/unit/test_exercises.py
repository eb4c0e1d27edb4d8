"""The exercises: every reference passes, every planted bug fails with its own hint, every kind of
wrong answer gets its own sentence, the starters run, and every text exists in both languages.

Only trusted code runs here (the references as the code panel shows them, our planted bugs, our
starters), through :func:`explain.exercises.run_trusted`; learner code goes to the sandbox.
"""
from __future__ import annotations

import ast
import math

import numpy as np
import pytest
import torch

from explain.exercises import (
    EXERCISES, PAGES, LearnerOutput, calls, catalog_text, check, expected, for_page, reference_source, run_function,
    run_trusted, to_numpy, to_torch_args,
)
from explain.exercises import reference as ref
from explain.exercises.core import _catalog

LANGS = ("en", "zh")
BUGS = [(e.key, b.key) for e in EXERCISES.values() for b in e.bugs]
PROBLEM_HINTS = ("passed", "all_passed", "not_implemented", "returned_none", "error", "timeout", "memory", "count",
                 "not_array", "shape", "dtype", "nan", "values")


def reference_answers(key: str) -> list[LearnerOutput]:
    """What a learner who pasted the code panel's function (imports + text) would get back."""
    return run_trusted(reference_source(EXERCISES[key]), EXERCISES[key])


# ------------------------------------------------------------------ the list

def test_the_issue_s_exercises_are_all_there_each_on_a_page():
    functions = {e.function for e in EXERCISES.values()}
    assert {"scaled_dot_product_attention", "look_ahead_mask", "padding_mask", "positional_encoding", "split_heads",
            "merge_heads", "layer_norm", "feed_forward", "label_smoothed_cross_entropy", "noam_lr",
            "modified_precision", "brevity_penalty"} <= functions
    assert {e.page for e in EXERCISES.values()} <= set(PAGES)
    assert [e.key for e in for_page("masks")] == ["look_ahead_mask", "padding_mask"]
    assert all(len(e.bugs) >= 2 and len(e.cases()) >= 3 for e in EXERCISES.values())


def test_calls_cross_as_plain_data_in_the_order_of_the_cases():
    for exercise in EXERCISES.values():
        plan = calls(exercise)
        assert len(plan) == len(exercise.cases())
        for (name, args, kwargs), case in zip(plan, exercise.cases()):
            assert name == exercise.function
            for a in (*args, *kwargs.values()):
                assert a is None or isinstance(a, (np.ndarray, int, float, list)), (exercise.key, case.label, type(a))
                assert not isinstance(a, np.ndarray) or a.dtype in (np.float32, np.int64, np.bool_), a.dtype
    args, _ = to_torch_args(*EXERCISES["attention"].cases()[0].args_numpy())
    assert [a.dtype for a in args] == [torch.float32, torch.float32, torch.float32, torch.bool]


def test_the_edge_cases_are_there():
    labels = {e.key: {c.label for c in e.cases()} for e in EXERCISES.values()}
    assert {"all_masked_row", "length_1", "no_mask_odd_d_k"} <= labels["attention"]
    assert {"pads", "pad_id_not_0", "all_pad_row", "batch_1_no_pad"} <= labels["padding_mask"]
    assert {"constant_row", "odd_size", "batch_1_length_1"} <= labels["layer_norm"]
    assert {"step_0", "peak"} <= labels["noam"]
    assert {"clipping", "too_short"} <= labels["modified_precision"]


# ------------------------------------------------------------------ references and bugs

@pytest.mark.parametrize("key", sorted(EXERCISES))
def test_the_reference_as_the_code_panel_shows_it_passes_every_case(key):
    report = check(EXERCISES[key], reference_answers(key))
    assert report.passed, [(c.case.label, c.problem, c.hint) for c in report.cases if not c.passed]
    assert report.hint.key == "exercises.hint.all_passed" and report.bug is None
    assert all(c.max_diff is not None and c.max_diff <= 1e-5 for c in report.cases)


@pytest.mark.parametrize("key,bug", BUGS)
def test_every_planted_bug_fails_with_its_own_hint(key, bug):
    exercise = EXERCISES[key]
    report = check(exercise, run_trusted(exercise.bug(bug).source, exercise))
    assert not report.passed
    assert report.bug == bug
    assert report.hint.key == f"exercises.{key}.bug.{bug}"
    for lang in LANGS:
        assert report.hint.text(lang).strip()
        assert all(c.hint.text(lang).strip() and "{" not in c.hint.text(lang) for c in report.cases)
    assert catalog_text(exercise.text_key(f"bug_name.{bug}"), "zh")


def test_the_classic_traps_show_their_symptoms():
    attention = EXERCISES["attention"]
    minus_inf = check(attention, run_trusted(attention.bug("minus_inf").source, attention))
    by_label = {c.case.label: c for c in minus_inf.cases}
    assert by_label["all_masked_row"].problem == "nan" and by_label["padding"].passed
    view = check(EXERCISES["merge_heads"], run_trusted(EXERCISES["merge_heads"].bug("view_not_contiguous").source,
                                                       EXERCISES["merge_heads"]))
    assert {c.problem for c in view.cases} == {"error", "ok"}
    assert "view" in dict(next(c for c in view.cases if c.problem == "error").hint.params)["error"]


def test_a_value_mismatch_no_bug_explains_gets_the_exercise_s_hint_with_where_and_a_heatmap():
    exercise = EXERCISES["attention"]
    answers = [LearnerOutput((out + 0.5, w)) for out, w in expected(exercise)]
    report = check(exercise, answers)
    assert report.bug is None and report.hint.key == "exercises.attention.hint"
    first = report.cases[0]
    assert first.problem == "values" and first.output == "output"
    assert math.isclose(first.max_diff, 0.5, rel_tol=1e-6)
    assert first.diff is not None and first.diff.ndim == 2
    assert len(first.diff_slice) == 2 and first.diff.shape == expected(exercise)[0][0].shape[2:]
    weights = expected(exercise)[0][1].copy()
    weights[1, 0, 2, 3] += 0.25
    report = check(exercise, [LearnerOutput((expected(exercise)[0][0], weights))] + answers[1:])
    worst = report.cases[0]
    assert worst.output == "weights" and worst.where == (1, 0, 2, 3) and worst.diff_slice == (1, 0)
    assert worst.diff[2, 3] == pytest.approx(0.25)
    noam = check(EXERCISES["noam"], [LearnerOutput(np.asarray(v[0] * 2)) for v in expected(EXERCISES["noam"])])
    assert noam.cases[0].diff is None and noam.cases[0].where == ()


# ------------------------------------------------------------------ each kind of wrong answer, its own sentence

def _answers_with_first(key: str, first: LearnerOutput) -> list[LearnerOutput]:
    rest = [LearnerOutput(v if len(v) > 1 else v[0]) for v in expected(EXERCISES[key])[1:]]
    return [first, *rest]


def test_an_exception_is_one_line_without_a_traceback():
    exercise = EXERCISES["layer_norm"]
    def layer_norm(x, gamma, beta, eps=1e-5):
        raise ValueError("shapes do not fit")

    report = check(exercise, run_function(layer_norm, exercise))
    assert {c.problem for c in report.cases} == {"error"}
    assert report.hint.key == "exercises.hint.error"
    text = report.hint.text("en")
    assert "ValueError: shapes do not fit" in text and "Traceback" not in text and "/" not in text
    long = LearnerOutput(None, "Traceback (most recent call last):\n  File ...\nRuntimeError: " + "x" * 1000)
    shown = dict(check(exercise, _answers_with_first("layer_norm", long)).hint.params)["error"]
    assert shown.startswith("RuntimeError") and len(shown) <= 300


@pytest.mark.parametrize("problem,answer,key", [
    ("shape", LearnerOutput(np.zeros((3, 3), dtype=bool)), "look_ahead_mask"),
    ("dtype", LearnerOutput(np.tril(np.ones((4, 4), dtype=np.float32))), "look_ahead_mask"),
    ("nan", LearnerOutput(np.full((16, 8), np.nan, dtype=np.float32)), "positional_encoding"),
    ("count", LearnerOutput(np.zeros((2, 2, 4, 8), dtype=np.float32)), "attention"),
    ("not_array", LearnerOutput("a string"), "noam"),
    ("not_implemented", LearnerOutput(None), "feed_forward"),
    ("timeout", LearnerOutput(None, "CPU time limit", kind="timeout"), "feed_forward"),
    ("memory", LearnerOutput(None, "MemoryError", kind="memory"), "feed_forward"),
])
def test_each_kind_of_wrong_answer_gets_its_own_sentence(problem, answer, key):
    report = check(EXERCISES[key], _answers_with_first(key, answer))
    first = report.cases[0]
    assert first.problem == problem and not first.passed
    assert all(c.passed for c in report.cases[1:])
    assert report.hint == first.hint
    expected_key = "returned_none" if answer.value is None and answer.error is None else problem
    assert first.hint.key == f"exercises.hint.{expected_key}"
    for lang in LANGS:
        assert "{" not in first.hint.text(lang)


def test_a_scalar_in_a_one_element_tensor_and_an_int_for_a_float_are_accepted():
    exercise = EXERCISES["brevity_penalty"]
    answers = [LearnerOutput(np.asarray([v[0]], dtype=np.float32)) for v in expected(exercise)]
    answers[0] = LearnerOutput(np.asarray(1))  # `return 1`
    assert check(exercise, answers).passed
    assert to_numpy(torch.ones(2)).dtype == np.float32 and isinstance(to_numpy((torch.ones(1), 2.0)), tuple)


def test_the_number_of_answers_must_match_the_cases():
    with pytest.raises(ValueError):
        check(EXERCISES["noam"], [])


# ------------------------------------------------------------------ starters

@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("key", sorted(EXERCISES))
def test_every_starter_is_python_that_defines_the_function_and_says_not_implemented(key, lang):
    exercise = EXERCISES[key]
    source = exercise.starter(lang)
    tree = ast.parse(source)
    assert exercise.function in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert "TODO" in source and "#>" not in source
    report = check(exercise, run_trusted(source, exercise))
    assert not report.passed and {c.problem for c in report.cases} == {"not_implemented"}
    assert report.hint.key == "exercises.hint.not_implemented"


def test_the_chinese_starter_comments_are_in_chinese():
    assert any("\u4e00" <= ch <= "\u9fff" for ch in EXERCISES["attention"].starter("zh"))
    assert not any("\u4e00" <= ch <= "\u9fff" for ch in EXERCISES["attention"].starter("en"))


# ------------------------------------------------------------------ the references hold to the model's code

def test_the_small_references_compute_what_the_model_computes():
    from explain.bleu import work_sentence
    from model.attention import MultiHeadAttention
    from model.layers import FeedForward

    torch.manual_seed(0)
    x = torch.randn(2, 5, 12)
    norm = torch.nn.LayerNorm(12)
    torch.nn.init.normal_(norm.weight)
    torch.nn.init.normal_(norm.bias)
    torch.testing.assert_close(ref.layer_norm(x, norm.weight, norm.bias, norm.eps), norm(x))
    ffn = FeedForward(12, 20).eval()
    got = ref.feed_forward(x, ffn.linear1.weight.T, ffn.linear1.bias, ffn.linear2.weight.T, ffn.linear2.bias)
    torch.testing.assert_close(got, ffn(x))
    mha = MultiHeadAttention(12, 3)
    torch.testing.assert_close(ref.split_heads(x, 3), mha._split_heads(x))
    torch.testing.assert_close(ref.merge_heads(ref.split_heads(x, 3)), x)
    worked = work_sentence("the cat the cat on the mat", "the cat is on the mat", "13a")
    cand, refr = worked.candidate, worked.reference
    for order in worked.orders:
        assert ref.modified_precision(list(cand), list(refr), order.n) == pytest.approx(order.precision)
    assert ref.brevity_penalty(worked.c, worked.r) == pytest.approx(worked.bp)
    assert ref.brevity_penalty(3, 6) == pytest.approx(worked.__class__(("a",) * 3, ("a",) * 6, (), "13a").bp)


# ------------------------------------------------------------------ texts

@pytest.mark.parametrize("lang", LANGS)
def test_every_text_the_exercises_ask_for_exists(lang):
    catalog = _catalog(lang)
    needed = {f"exercises.hint.{h}" for h in PROBLEM_HINTS} | {"exercises.title"}
    for e in EXERCISES.values():
        needed |= {f"exercises.{e.key}.{part}" for part in ("title", "task", "hint", "starter.doc", "starter.todo")}
        needed |= {f"exercises.{e.key}.bug.{b.key}" for b in e.bugs}
        needed |= {f"exercises.{e.key}.bug_name.{b.key}" for b in e.bugs}
        needed |= {f"exercises.case.{c.label}" for c in e.cases()}
    assert needed - set(catalog) == set()
    assert catalog_text("exercises.hint.shape", lang, name="y", expected="(2, 3)", got="(3, 2)").count("(") == 2


def test_the_texts_never_name_the_notes_or_a_seed():
    for lang in LANGS:
        for key, text in _catalog(lang).items():
            assert "the notes" not in text.lower() and "seed 0" not in text.lower(), key


def test_run_trusted_refuses_any_source_the_project_did_not_write():
    """The one exec in the server's process runs only an exercise's own reference, planted bugs and starters."""
    exercise = EXERCISES["layer_norm"]
    hostile = reference_source(exercise) + "\nimport os\nos.system('true')\n"
    with pytest.raises(ValueError, match="sandbox"):
        run_trusted(hostile, exercise)
    with pytest.raises(ValueError, match="sandbox"):
        run_trusted(EXERCISES["attention"].bug("minus_inf").source, exercise)  # another exercise's code

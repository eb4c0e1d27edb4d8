"""The "Write it yourself" panel of a page: the learner writes a function of the Transformer, **Check**
runs it on the exercise's cases in the sandbox (never in this process) and says, case by case, what
differs from the reference and the likely mistake.

    exercise_panel("attention")      # every exercise of the page, one expander each

Who may run code is the operator's setting (:mod:`sandbox.policy`, ``TP_LEARNER_CODE``); where code
does not run, the panel offers a test file instead, to run on the learner's own machine. The editor's
text, the chosen common bug and the last report live in the session: nothing is lost when the page
is switched.
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import streamlit as st

from explain.exercises import Exercise, LearnerOutput, Report, calls, check, for_page, offline_test, reference_source
from explain.exercises.use_mine import ENTRY, attention_in_model
from explain.tokens import target_tokenizer
from figures.heatmap import heatmap
from figures.style import DIVERGING
from sandbox import policy
from sandbox.runner import Call, Result, run
from ui.cache import computed
from ui.i18n import current_lang, t
from ui.models import get_model, shipped_models
from ui.scaffold import PLOT_CONFIG
from ui.url_state import markdown_literal
from ui.widgets import plot

MAX_SOURCE_CHARS = 20_000  # a function of the notes is a few hundred characters
# The editors (keys "<page>.exercise_<key>_code") in a monospace font, so indentation reads as Python.
EDITOR_STYLE = ("<style>[class*='-exercise_'][class*='_code'] textarea {font-family: ui-monospace, SFMono-Regular, "
                "Menlo, Consolas, monospace; font-size: .85rem; tab-size: 4;}</style>")


@dataclass(frozen=True)
class UseMine:
    """What the page shows, for "use mine": the selected model's name, its sentence and its answer."""

    model: str | None
    source: str
    target: str


USE_MINE = ("attention",)  # the exercises whose function the model can run in place of its own


def _key(page: str, exercise: Exercise, part: str) -> str:
    return f"{page}.exercise_{exercise.key}_{part}"


def code_may_run() -> bool:
    """The operator's setting applied to this browser session's connection (loopback only by default)."""
    return policy.allowed(st.context.ip_address, st.context.headers)


def learner_outputs(result: Result, n: int) -> list[LearnerOutput]:
    """The sandbox's answer as the check reads it: one output per call (a whole-run error for each)."""
    if result.error is not None:
        kind = result.error.kind if result.error.kind in ("timeout", "memory") else "exception"
        return [LearnerOutput(None, result.error.message, kind)] * n
    outputs = []
    for out in result.outputs[:n]:
        if out.ok:
            value = tuple(out.value) if isinstance(out.value, list) else out.value
            outputs.append(LearnerOutput(value))
        else:
            outputs.append(LearnerOutput(None, out.message, out.kind if out.kind in ("timeout", "memory") else
                                         "exception"))
    missing = n - len(outputs)
    return outputs + [LearnerOutput(None, t("exercises.panel.not_reached"), "exception")] * missing


def run_check(exercise: Exercise, source: str) -> Report:
    """The learner's ``source`` on every case, in the sandbox, checked against the reference here."""
    planned = calls(exercise)
    result = run(source, [Call(name, tuple(args), dict(kwargs)) for name, args, kwargs in planned])
    return check(exercise, learner_outputs(result, len(planned)))


def _load_bug(page: str, exercise: Exercise) -> None:
    bug = st.session_state.get(_key(page, exercise, "bug"))
    if bug:
        st.session_state[_key(page, exercise, "code")] = exercise.bug(bug).source
        st.session_state.pop(_key(page, exercise, "report"), None)


def _reset(page: str, exercise: Exercise) -> None:
    st.session_state[_key(page, exercise, "code")] = exercise.starter(current_lang())
    st.session_state.pop(_key(page, exercise, "report"), None)


def _number(x: float | None) -> str:
    return "" if x is None else f"{x:.3g}"


def cases_html(report: Report) -> str:
    """One row per case: passed or not, the largest |difference| and where."""
    head = "".join(f"<th style='text-align:left;padding:.2rem .5rem'>{html.escape(t(f'exercises.panel.col.{c}'))}</th>"
                   for c in ("case", "result", "diff", "where"))
    rows = []
    for c in report.cases:
        mark = "✅" if c.passed else "❌"
        where = "" if c.where is None else html.escape(str(tuple(int(i) for i in c.where)))
        cells = (html.escape(t(f"exercises.case.{c.case.label}")), f"{mark} {html.escape(t(c.hint.key, **dict(c.hint.params)))}",
                 _number(c.max_diff), where)
        rows.append(f"<tr data-passed='{str(c.passed).lower()}'>" + "".join(
            f"<td style='padding:.2rem .5rem;vertical-align:top'>{cell}</td>" for cell in cells) + "</tr>")
    return ("<div class='tp-cases' style='overflow-x:auto;font-size:.85rem'><table style='border-collapse:collapse'>"
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>")


def show_report(page: str, exercise: Exercise, report: Report) -> None:
    hint = t(report.hint.key, **dict(report.hint.params))
    summary = t("exercises.panel.summary", passed=report.n_passed, total=len(report.cases))
    (st.success if report.passed else st.warning)(f"{summary} {hint}",
                                                   icon=":material/check:" if report.passed else ":material/lightbulb:")
    st.html(cases_html(report))
    worst = [c for c in report.cases if not c.passed and c.diff is not None and np.isfinite(c.diff).any()]
    if worst:
        case = max(worst, key=lambda c: c.max_diff or 0.0)
        diff = np.nan_to_num(np.asarray(case.diff, dtype=float), nan=np.nan)
        fig = heatmap(diff, title=t("exercises.panel.diff_title", case=t(f"exercises.case.{case.case.label}"),
                                    output=case.output or ""),
                      colorscale=DIVERGING if (diff < 0).any() else "Reds", hover="%{y}, %{x}: %{z:.3g}")
        plot(fig, key=_key(page, exercise, "diff"), config=PLOT_CONFIG)


def use_mine_section(page: str, ex: Exercise, source: str, where: UseMine) -> None:
    """The learner's attention computing every attention of the selected shipped model (in the sandbox),
    beside the model's own: the answer each gives and encoder layer 1, head 1."""
    if where.model not in shipped_models():
        st.caption(t("exercises.panel.use_mine_shipped"))
        return
    result_key = _key(page, ex, "use_mine_result")
    if st.button(t("exercises.panel.use_mine"), key=_key(page, ex, "use_mine"), icon=":material/swap_horiz:",
                 help=t("exercises.panel.use_mine_help")):
        with st.spinner(t("exercises.panel.running")):
            result = run(source, [Call(ex.function, (where.model, where.source, where.target))], entry=ENTRY)
        error = result.error.message if result.error else (None if result.outputs[0].ok else result.outputs[0].message)
        st.session_state[result_key] = (where, error, None if error else result.outputs[0].value)
    kept = st.session_state.get(result_key)
    if kept is None or kept[0] != where:  # nothing yet, or made for another sentence or model
        return
    _, error, value = kept
    if error:
        st.error(t("exercises.panel.use_mine_error", error=error), icon=":material/error:")
        return
    ours = computed(attention_in_model, None, where.model, where.source, where.target)
    tokenizer = target_tokenizer(get_model(where.model))
    answers = [tokenizer.decode([int(i) for i in ids]) for ids in (ours[2], value[2])]
    left, right = st.columns(2)
    for column, name, answer, maps in ((left, "reference", answers[0], ours[0]), (right, "yours", answers[1], value[0])):
        with column:
            st.markdown(t(f"exercises.panel.use_mine_{name}", answer=markdown_literal(answer, limit=80) if answer else "∅"))
            fig = heatmap(np.asarray(maps[0, 0], dtype=float), title=t("exercises.panel.use_mine_map"), zmin=0, zmax=1)
            plot(fig, key=_key(page, ex, f"use_mine_{name}"), config=PLOT_CONFIG)
    gap = float(np.nanmax(np.abs(np.asarray(value[0], dtype=float) - ours[0]))) if value[0].shape == ours[0].shape \
        else float("nan")
    st.caption(t("exercises.panel.use_mine_gap", gap=f"{gap:.3g}"))


def offline(page: str, exercise: Exercise, source: str) -> None:
    """Where code may not run here: the same checks as a test file for the learner's own machine."""
    st.info(t("exercises.panel.offline"), icon=":material/download:")
    st.download_button(t("exercises.panel.download"), offline_test(exercise, source, current_lang()),
                       file_name=f"test_{exercise.function}.py", mime="text/x-python",
                       key=_key(page, exercise, "download"), icon=":material/download:")


def exercise(page: str, ex: Exercise, use_mine: UseMine | None = None) -> None:
    """One exercise: the task, the editor, Check (or the download), common bugs, the report, the reference."""
    code_key, report_key = _key(page, ex, "code"), _key(page, ex, "report")
    with st.expander(t("exercises.panel.heading", title=t(ex.text_key("title"))), icon=":material/edit_note:"):
        st.markdown(t(ex.text_key("task")))
        if code_key not in st.session_state:
            st.session_state[code_key] = ex.starter(current_lang())
        source = st.text_area(t("exercises.panel.editor", function=ex.function), key=code_key, height=300,
                              max_chars=MAX_SOURCE_CHARS, help=t("exercises.panel.editor_help"))
        may_run = code_may_run()
        left, middle, right = st.columns([2, 3, 2], vertical_alignment="bottom")
        with left:
            checked = st.button(t("exercises.panel.check"), type="primary", icon=":material/play_arrow:",
                                key=_key(page, ex, "check"), disabled=not may_run)
        with middle:
            st.selectbox(t("exercises.panel.bug_label"), [b.key for b in ex.bugs], index=None,
                         key=_key(page, ex, "bug"), placeholder=t("exercises.panel.bug_placeholder"),
                         format_func=lambda b: t(f"{ex.text_key('bug_name')}.{b}"), on_change=_load_bug,
                         args=(page, ex), help=t("exercises.panel.bug_help"))
        with right:
            st.button(t("exercises.panel.reset"), key=_key(page, ex, "reset"), on_click=_reset, args=(page, ex),
                      icon=":material/restart_alt:")
        if not may_run:
            offline(page, ex, source)
        elif checked:
            with st.spinner(t("exercises.panel.running")):
                st.session_state[report_key] = run_check(ex, source)
        report = st.session_state.get(report_key)
        if report is not None:
            show_report(page, ex, report)
            if st.toggle(t("exercises.panel.show_reference"), key=_key(page, ex, "reference")):
                st.code(reference_source(ex), language="python")
            if use_mine is not None and ex.key in USE_MINE:
                use_mine_section(page, ex, source, use_mine)


def exercise_panel(page: str, use_mine: UseMine | None = None) -> None:
    """Every exercise of ``page`` (none: nothing drawn); ``use_mine``: the view the learner's function may
    run in (the Attention page's sentence and answer on its model)."""
    exercises: Sequence[Exercise] = for_page(page)
    if not exercises:
        return
    st.subheader(t("exercises.title"))
    st.caption(t("exercises.panel.intro"))
    st.html(EDITOR_STYLE)
    for ex in exercises:
        exercise(page, ex, use_mine)

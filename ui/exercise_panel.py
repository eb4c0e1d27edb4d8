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
import threading
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import streamlit as st

from explain.exercises import (Exercise, LearnerOutput, Report, calls, check, for_page, offline_test, reference_source,
                               to_numpy)
from explain.attention import greedy_answer
from explain.exercises.use_mine import ENTRY, FUNCTIONS as USE_MINE, LOSS, Ids, batch_ids, in_model, sentence_ids
from explain.tokens import target_tokenizer
from figures.labels import display_token, readable_number
from figures.heatmap import heatmap
from figures.style import DIVERGING
from figures.use_mine import loss_bars
from sandbox import policy
from sandbox import runner
from sandbox.runner import Call, Result, run
from ui.cache import computed
from ui.i18n import current_lang, t
from ui.models import MODEL_STATE_KEY, get_model, shipped_models
from ui.scaffold import PLOT_CONFIG
from ui.url_state import markdown_literal
from ui.widgets import plot

MAX_SOURCE_CHARS = 20_000  # a function of the notes is a few hundred characters
# The editors (keys "<page>.exercise_<key>_code") in a monospace font, so indentation reads as Python.
EDITOR_STYLE = ("<style>[class*='-exercise_'][class*='_code'] textarea {font-family: ui-monospace, SFMono-Regular, "
                "Menlo, Consolas, monospace; font-size: .85rem; tab-size: 4;}</style>")


@dataclass(frozen=True)
class UseMine:
    """What the page shows, for "use mine": the selected model's name and the batch it runs (token ids:
    source, decoder input, labels; one row a sentence) with the row the page looks at."""

    model: str | None
    src: Ids
    tgt_in: Ids
    labels: Ids
    row: int = 0

    @classmethod
    def sentence(cls, ckpt, source: str, target: str | None = None) -> "UseMine":
        """One sentence of the selected model and its target: ``target``, or the model's own greedy answer."""
        if target is None:
            target = computed(greedy_answer, source, model=ckpt)
        return cls(st.session_state.get(MODEL_STATE_KEY), *sentence_ids(ckpt, source, target))

    @classmethod
    def batch(cls, batch, row: int) -> "UseMine":
        """A padded batch (:class:`explain.tokens.SentenceBatch`) of the selected model, and the row picked."""
        return cls(st.session_state.get(MODEL_STATE_KEY), *batch_ids(batch), row)

    def call(self, function: str) -> Call:
        arrays = (np.asarray(ids, dtype=np.int64) for ids in (self.src, self.tgt_in, self.labels))
        return Call(function, (function, self.model, *arrays, self.row))


# which map "use mine" draws for a function (an index into in_model's answer), and its title's key
MAP_SHOWN = {"look_ahead_mask": (1, "decoder")}
DEFAULT_MAP = (0, "encoder")


def _key(page: str, exercise: Exercise, part: str) -> str:
    return f"{page}.exercise_{exercise.key}_{part}"


def code_may_run() -> bool:
    """The operator's setting applied to this browser session's connection (loopback only by default)."""
    return policy.allowed(st.context.ip_address, st.context.headers)


# what the sandbox itself reports (not Python's own errors): one translated sentence each
SANDBOX_KINDS = ("unavailable", "timeout", "memory", "output_too_large", "no_function", "not_allowed", "crashed")


def sandbox_message(kind: str, message: str, function: str) -> str:
    """The sandbox's report in the visitor's language. Python's own message (an exception the code raised,
    a syntax error, a result that cannot cross back) stays as Python wrote it, as the learner's own
    terminal would show it."""
    return t(f"exercises.sandbox.{kind}", function=function) if kind in SANDBOX_KINDS else message


def learner_outputs(result: Result, n: int, function: str = "") -> list[LearnerOutput]:
    """The sandbox's answer as the check reads it: one output per call (a whole-run error for each)."""
    if result.error is not None:
        kind = result.error.kind if result.error.kind in ("timeout", "memory") else "exception"
        return [LearnerOutput(None, sandbox_message(result.error.kind, result.error.message, function), kind)] * n
    outputs = []
    for out in result.outputs[:n]:
        if out.ok:  # a number, a list of them: as the in-process check reads a result (core.to_numpy)
            outputs.append(LearnerOutput(to_numpy(out.value)))
        else:
            outputs.append(LearnerOutput(None, sandbox_message(out.kind or "exception", out.message or "", function),
                                         out.kind if out.kind in ("timeout", "memory") else "exception"))
    missing = n - len(outputs)
    return outputs + [LearnerOutput(None, t("exercises.panel.not_reached"), "exception")] * missing


def run_check(exercise: Exercise, source: str) -> Report:
    """The learner's ``source`` on every case, in the sandbox, checked against the reference here."""
    planned = calls(exercise)
    result = run(source, [Call(name, tuple(args), dict(kwargs)) for name, args, kwargs in planned],
                 entry=exercise.probe)  # a probe (trusted) turns modules into arrays inside the sandbox
    return check(exercise, learner_outputs(result, len(planned), exercise.function))


def _load_bug(page: str, exercise: Exercise) -> None:
    bug = st.session_state.get(_key(page, exercise, "bug"))
    if bug:
        st.session_state[_key(page, exercise, "code")] = exercise.bug(bug).source
        st.session_state.pop(_key(page, exercise, "report"), None)


def _reset(page: str, exercise: Exercise) -> None:
    st.session_state[_key(page, exercise, "code")] = exercise.starter(current_lang())
    st.session_state.pop(_key(page, exercise, "report"), None)


def _number(x: float | None) -> str:
    return "" if x is None else readable_number(x)


def hint_text(hint) -> str:
    """A check's sentence in the page's language, its numbers written as :func:`readable_number` does."""
    return t(hint.key, **{name: readable_number(value) if isinstance(value, float) else value
                          for name, value in hint.params})


def cases_html(report: Report) -> str:
    """One row per case: passed or not, the largest |difference| and where."""
    head = "".join(f"<th style='text-align:left;padding:.2rem .5rem'>{html.escape(t(f'exercises.panel.col.{c}'))}</th>"
                   for c in ("case", "result", "diff", "where"))
    rows = []
    for c in report.cases:
        mark = "✅" if c.passed else "❌"
        where = "" if c.where is None else html.escape(str(tuple(int(i) for i in c.where)))
        cells = (html.escape(t(f"exercises.case.{c.case.label}")), f"{mark} {html.escape(hint_text(c.hint))}",
                 _number(c.max_diff), where)
        rows.append(f"<tr data-passed='{str(c.passed).lower()}'>" + "".join(
            f"<td style='padding:.2rem .5rem;vertical-align:top'>{cell}</td>" for cell in cells) + "</tr>")
    return ("<div class='tp-cases' style='overflow-x:auto;font-size:.85rem'><table style='border-collapse:collapse'>"
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>")


def show_report(page: str, exercise: Exercise, report: Report) -> None:
    hint = hint_text(report.hint)
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
                      colorscale=DIVERGING if (diff < 0).any() else "Reds", hover="%{y}, %{x}: %{z:.3~r}")
        plot(fig, key=_key(page, exercise, "diff"), config=PLOT_CONFIG)


def use_mine_section(page: str, ex: Exercise, source: str, where: UseMine) -> None:
    """The learner's function inside the selected shipped model (in the sandbox), beside the model's own:
    the answer each gives and the attention map the function changes most visibly (the loss: per position)."""
    if where.model not in shipped_models():
        st.caption(t("exercises.panel.use_mine_shipped"))
        return
    result_key = _key(page, ex, "use_mine_result")
    if st.button(t("exercises.panel.use_mine"), key=_key(page, ex, "use_mine"), icon=":material/swap_horiz:",
                 help=t(f"exercises.panel.use_mine_does.{ex.function}")):
        with st.spinner(t("exercises.panel.running")):
            result = run(source, [where.call(ex.function)], entry=ENTRY)
        if result.error:
            error = sandbox_message(result.error.kind, result.error.message, ex.function)
        else:
            out = result.outputs[0]
            error = None if out.ok else sandbox_message(out.kind or "exception", out.message or "", ex.function)
        st.session_state[result_key] = (where, error, None if error else result.outputs[0].value)
    kept = st.session_state.get(result_key)
    if kept is None or kept[0] != where:  # nothing yet, or made for another sentence or model
        return
    _, error, value = kept
    if error:
        st.error(t("exercises.panel.use_mine_error", error=error), icon=":material/error:")
        return
    ours = computed(in_model, None, ex.function, where.model, where.src, where.tgt_in, where.labels, where.row)
    tokenizer = target_tokenizer(get_model(where.model))
    if ex.function == LOSS:
        _loss_view(page, ex, where, tokenizer, ours, value)
        return
    index, stack = MAP_SHOWN.get(ex.function, DEFAULT_MAP)
    answers = [tokenizer.decode([int(i) for i in ids]) for ids in (ours[3], value[3])]
    left, right = st.columns(2)
    for column, name, answer, maps in ((left, "reference", answers[0], ours[index]),
                                       (right, "yours", answers[1], value[index])):
        with column:
            st.markdown(t(f"exercises.panel.use_mine_{name}", answer=markdown_literal(answer, limit=80) if answer else "∅"))
            fig = heatmap(np.asarray(maps[0, 0], dtype=float), title=t(f"exercises.panel.use_mine_map_{stack}"),
                          zmin=0, zmax=1)
            plot(fig, key=_key(page, ex, f"use_mine_{name}"), config=PLOT_CONFIG)
    mine = np.asarray(value[index], dtype=float)
    gap = float(np.nanmax(np.abs(mine - ours[index]))) if mine.shape == ours[index].shape and np.isfinite(mine).any() \
        else float("nan")
    st.caption(t(f"exercises.panel.use_mine_gap_{stack}", gap=readable_number(gap)))


def _loss_view(page: str, ex: Exercise, where: UseMine, tokenizer, ours, value) -> None:
    """The learner's loss beside the reference, position by position, on the model's own logits."""
    labels = [int(i) for i in where.labels[where.row]]
    tokens = [tokenizer.decode([i], skip_special=False) for i in labels]
    yours = np.asarray(value[0], dtype=float)
    if yours.shape != ours[0].shape:
        st.error(t("exercises.panel.use_mine_error", error=t("exercises.sandbox.shape")), icon=":material/error:")
        return
    st.markdown(t("exercises.panel.use_mine_loss_total", ours=f"{float(np.ravel(ours[1])[0]):.4f}",
                  yours=f"{float(np.ravel(value[1])[0]):.4f}"))
    fig = loss_bars(tokens, ours[0], yours, names=(t("exercises.panel.use_mine_loss_ours"),
                                                   t("exercises.panel.use_mine_loss_yours")),
                    title=t("exercises.panel.use_mine_loss_title"), x_title=t("exercises.panel.use_mine_loss_x"),
                    y_title=t("exercises.panel.use_mine_loss_y"))
    plot(fig, key=_key(page, ex, "use_mine_loss"), config=PLOT_CONFIG)
    both = np.isfinite(ours[0]) & np.isfinite(yours)
    gap = float(np.max(np.abs(yours[both] - ours[0][both]))) if both.any() else float("nan")
    st.caption(t("exercises.panel.use_mine_gap_loss", gap=readable_number(gap)))


def offline(page: str, exercise: Exercise, source: str) -> None:
    """Where code may not run here: the same checks as a test file for the learner's own machine."""
    st.info(t("exercises.panel.offline"), icon=":material/download:")
    st.download_button(t("exercises.panel.download"), offline_test(exercise, source, current_lang()),
                       file_name=f"test_{exercise.function}.py", mime="text/x-python",
                       key=_key(page, exercise, "download"), icon=":material/download:")


def exercise(page: str, ex: Exercise, use_mine: UseMine | None = None) -> None:
    """One exercise: the task, the editor, Check (or the download), common bugs, the report, the reference.

    The learner's code outlives the editor (another page shown): Streamlit forgets a widget's value
    once it is not drawn, so every run keeps a copy under the ``kept`` key, and the editor starts from it."""
    code_key, kept_key, report_key = _key(page, ex, "code"), _key(page, ex, "kept"), _key(page, ex, "report")
    with st.expander(t("exercises.panel.heading", title=t(ex.text_key("title"))), icon=":material/edit_note:"):
        st.markdown(t(ex.text_key("task")))
        if code_key not in st.session_state:
            st.session_state[code_key] = st.session_state.get(kept_key) or ex.starter(current_lang())
        source = st.text_area(t("exercises.panel.editor", function=ex.function), key=code_key, height=300,
                              max_chars=MAX_SOURCE_CHARS, help=t("exercises.panel.editor_help"))
        st.session_state[kept_key] = source
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
            if use_mine is not None and ex.function in USE_MINE:
                use_mine_section(page, ex, source, use_mine)


def _warm_the_sandbox() -> None:
    """Start the sandbox's waiting process (bubblewrap, torch imported: 2-3 s) in the background the first
    time a visitor who may run code sees an exercise, so that their first Check pays only a fork."""
    if not runner.MOTHER_STARTING.is_set():
        runner.MOTHER_STARTING.set()
        threading.Thread(target=runner.prestart, name="tp-sandbox-prestart", daemon=True).start()


def exercise_panel(page: str, use_mine: UseMine | None = None) -> None:
    """Every exercise of ``page`` (none: nothing drawn); ``use_mine``: the view the learner's function may
    run in (the Attention page's sentence and answer on its model)."""
    exercises: Sequence[Exercise] = for_page(page)
    if not exercises:
        return
    if code_may_run():
        _warm_the_sandbox()
    st.subheader(t("exercises.title"))
    st.caption(t("exercises.panel.intro"))
    st.html(EDITOR_STYLE)
    for ex in exercises:
        exercise(page, ex, use_mine)

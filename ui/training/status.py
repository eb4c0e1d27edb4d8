"""The live status of this session's training run, shown in the sidebar of every page.

:func:`current_run` reads the run's :class:`~model.training.RunStatus` (state, reason, step, last
loss, place in the queue: no history is copied), so it is cheap enough for every rerun of every
page and for a refresh once a second. The sidebar says in one line which of these the session's
run is in:

* **queued** (with its place in the server's queue when the slot queue knows it) and **running**
  (step of total, loss): the line sits in a fragment that refreshes itself every
  :data:`REFRESH_SECONDS` without rerunning the page under it; when the run leaves those states the
  fragment triggers one full rerun so every page sees the new state;
* **paused**, **finished**, **stopped** (by its owner, or before it left the queue) and **failed**
  (with the engine's reason, escaped so it shows literally): drawn once, no refresh.

On the training page the page itself draws this line into the sidebar, from the snapshot its live
panel shows (:func:`render`), so the two never disagree. Steps are written by :func:`format_count`
in both places.
"""
from __future__ import annotations

from datetime import timedelta

import streamlit as st

from model.training import RunStatus
from ui.i18n import t
from ui.page_errors import fragment
from ui.training import session as training
from ui.url_state import markdown_literal

REFRESH_SECONDS = 1.0
STOPPED_REASONS = {"stopped": "stopped", "stopped before it started": "stopped_queued"}  # engine reason -> key
REASON_LIMIT = 160  # characters of a failure's reason shown in the sidebar (the training page shows more)
FAILURE_REASON_LIMIT = 600  # characters of a failed run's reason shown on the training page (escaped, shown literally)


def format_count(n: int) -> str:
    """A step or step total as both the sidebar and the training page write it: ``2,415``."""
    return f"{n:,}"


def format_duration(seconds: float | None) -> str:
    """A run's training time as the page writes it: ``42 s``, ``3 min 05 s`` (``–`` when unknown)."""
    if seconds is None:
        return "–"
    seconds = int(round(seconds))
    if seconds < 60:
        return t("training.duration.seconds", s=seconds)
    return t("training.duration.minutes", m=seconds // 60, s=f"{seconds % 60:02d}")


def run_model_name(session: training.TrainingSession) -> str:
    """The name the sidebar gives the session's current run, e.g. ``copy-tiny-1``."""
    config = session.run.config
    return training.default_model_name({"task": config.task, "preset": config.preset}, session.run_number)


def current_run() -> tuple[str, RunStatus] | None:
    """``(model name, status)`` of this session's run right now, or None when there is none."""
    session = training.peek_session()
    run = session.run if session is not None else None
    if run is None:
        return None
    status = run.status()
    if status.state == "idle":
        return None
    return run_model_name(session), status


def kind(status: RunStatus) -> str:
    """What the sidebar says: queued, running, paused, finished, stopped, stopped_queued or failed."""
    if status.state == "finished":
        return STOPPED_REASONS.get(status.reason, "finished")
    return status.state


def status_text(model: str, status: RunStatus) -> str:
    """The sidebar's sentence for the run of ``model``, in the session's language."""
    said = kind(status)
    if said == "queued":
        if status.queue_position > 0:
            return t("common.training.queued", model=model, position=status.queue_position,
                     waiting=status.queue_waiting)
        return t("common.training.queued_no_place", model=model)
    if said == "stopped_queued":
        return t("common.training.stopped_queued", model=model)
    if said == "failed":
        reason = markdown_literal(status.reason, REASON_LIMIT) or "?"
        return t("common.training.failed", model=model, step=format_count(status.step), reason=reason)
    loss = f"{status.loss:.4f}" if status.loss is not None else "–"
    return t(f"common.training.{said}", model=model, step=format_count(status.step),
             total=format_count(status.max_steps), loss=loss)


def render(model: str, status: RunStatus) -> None:
    """Draw the status line (and its progress bar) of ``model``'s run where it is called."""
    text = status_text(model, status)
    if status.state == "failed":
        st.error(text, icon=":material/error:")
        return
    st.caption(text)
    if status.max_steps and status.state != "queued":
        st.progress(min(status.step / status.max_steps, 1.0))


def _changing(current: tuple[str, RunStatus] | None) -> bool:
    """True while the run changes by itself: it trains or queues, or an experiment's next run is due."""
    session = training.peek_session()
    return (current is not None and current[1].live) or (session is not None and session.queued_runs > 0)


@fragment(run_every=timedelta(seconds=REFRESH_SECONDS))
def _live_status() -> None:
    current = current_run()
    if not _changing(current):
        st.rerun(scope="app")  # it paused, ended or failed: redraw the whole page once, then stay still
    if current is not None:
        render(*current)


def sidebar_status() -> None:
    """Render the run's status where it is called (the sidebar does so on every page but training).

    The training page draws it itself, into the sidebar, from the very snapshot its live panel shows
    (``app_pages/training.py``): one source for both, refreshed together.
    """
    current = current_run()
    if _changing(current):
        _live_status()
    elif current is not None:
        render(*current)

"""The live status of this session's training run, shown in the sidebar of every page.

:func:`current_run_snapshot` reads the run's :meth:`~model.training.TrainingRun.status` (state,
reason, step, last loss, place in the queue: no history is copied), so it is cheap enough for every
rerun of every page and for a refresh once a second. The sidebar says in one line which of these
the session's run is in:

* **queued** (with its place in the server's queue when the slot queue knows it) and **running**
  (step of total, loss): the line sits in a fragment that refreshes itself every
  :data:`REFRESH_SECONDS` without rerunning the page under it; when the run leaves those states the
  fragment triggers one full rerun so every page sees the new state;
* **paused**, **finished**, **stopped** (by its owner, or before it left the queue) and **failed**
  (with the engine's reason, escaped so it shows literally): drawn once, no refresh.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from datetime import timedelta

import streamlit as st

from ui.i18n import t
from ui.url_state import markdown_literal

REFRESH_SECONDS = 1.0
LIVE_STATES = ("queued", "running")  # the states that change without anyone clicking
STOPPED_REASONS = {"stopped": "stopped", "stopped before it started": "stopped_queued"}  # engine reason -> key
REASON_LIMIT = 160  # characters of a failure's reason shown in the sidebar (the training page shows more)


@dataclass(frozen=True)
class RunSnapshot:
    """A plain-data view of one training run: no tensors, no history, safe to read from any page."""

    model_name: str
    state: str  # one of model.training.STATES except "idle"
    step: int
    total_steps: int | None
    loss: float | None
    reason: str = ""
    queue_position: int = 0  # 1-based place in the queue while queued; 0 when unknown or not queued
    queue_waiting: int = 0

    @property
    def running(self) -> bool:
        """True while the run can change by itself (queued or training): the line keeps refreshing."""
        return self.state in LIVE_STATES

    @property
    def kind(self) -> str:
        """What the sidebar says: queued, running, paused, finished, stopped, stopped_queued or failed."""
        if self.state == "finished":
            return STOPPED_REASONS.get(self.reason, "finished")
        return self.state


def current_run_snapshot() -> RunSnapshot | None:
    """This session's run right now, or None when there is none."""
    training = sys.modules.get("ui.training_session")  # not imported yet: no session can own a run
    if training is None:
        return None
    session = training.peek_session()
    run = session.run if session is not None else None
    if run is None:
        return None
    status = run.status()
    if status.state == "idle":
        return None
    names = {"task": run.config.task, "preset": run.config.preset}
    return RunSnapshot(
        model_name=training.default_model_name(names, session.run_number),
        state=status.state,
        step=status.step,
        total_steps=status.max_steps,
        loss=status.loss,
        reason=status.reason,
        queue_position=status.queue_position,
        queue_waiting=status.queue_waiting,
    )


def status_text(snapshot: RunSnapshot) -> str:
    """The sidebar's sentence for ``snapshot``, in the session's language."""
    total = snapshot.total_steps if snapshot.total_steps is not None else "?"
    loss = f"{snapshot.loss:.4f}" if snapshot.loss is not None else "–"
    kind = snapshot.kind
    args = dict(model=snapshot.model_name, step=snapshot.step, total=total, loss=loss)
    if kind == "queued":
        if snapshot.queue_position > 0:
            return t("common.training.queued", model=snapshot.model_name, position=snapshot.queue_position,
                     waiting=snapshot.queue_waiting)
        return t("common.training.queued_no_place", model=snapshot.model_name)
    if kind == "running":
        return t("common.training.running", **args)
    if kind == "paused":
        return t("common.training.paused", **args)
    if kind == "stopped":
        return t("common.training.stopped", **args)
    if kind == "stopped_queued":
        return t("common.training.stopped_queued", model=snapshot.model_name)
    if kind == "failed":
        reason = markdown_literal(snapshot.reason, REASON_LIMIT) or "?"
        return t("common.training.failed", model=snapshot.model_name, step=snapshot.step, reason=reason)
    return t("common.training.finished", **args)


def _render(snapshot: RunSnapshot) -> None:
    text = status_text(snapshot)
    if snapshot.state == "failed":
        st.error(text, icon=":material/error:")
        return
    st.caption(text)
    if snapshot.total_steps and snapshot.state != "queued":
        st.progress(min(snapshot.step / snapshot.total_steps, 1.0))


@st.fragment(run_every=timedelta(seconds=REFRESH_SECONDS))
def _live_status() -> None:
    snapshot = current_run_snapshot()
    if snapshot is None or not snapshot.running:
        st.rerun(scope="app")  # it paused, ended or failed: redraw the whole page once, then stay still
    _render(snapshot)


def sidebar_status(*, live: bool = True) -> None:
    """Render the run's status where it is called (the sidebar does so on every page).

    ``live=False`` draws it once without the refreshing fragment: the training page passes it,
    because its own live panel already shows the step and loss every second, and a second
    fragment rerun per second would take time from the training thread (they share the GIL).
    """
    snapshot = current_run_snapshot()
    if snapshot is None:
        return
    if snapshot.running and live:
        _live_status()
    else:
        _render(snapshot)

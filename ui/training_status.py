"""The live status of this session's training run, shown in the sidebar of every page.

Hook for the training page's author: make :func:`current_run_snapshot` return a
:class:`RunSnapshot` while a run exists in this session (read it from wherever the trainer
lives, e.g. ``st.session_state``; it must be cheap: it is called on every rerun of every page,
and once a second while a run is going). Nothing else here needs to change:

* while ``running`` is True, the sidebar shows step and loss in a fragment that refreshes itself
  every :data:`REFRESH_SECONDS` without rerunning the page under it;
* when the run stops, the fragment triggers one full rerun so every page sees the final state,
  and the sidebar then shows the finished run statically.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from datetime import timedelta

import streamlit as st

from ui.i18n import t

REFRESH_SECONDS = 1.0


@dataclass(frozen=True)
class RunSnapshot:
    """A plain-data view of one training run: no tensors, safe to read from any page."""

    model_name: str
    step: int
    total_steps: int | None
    loss: float | None
    running: bool


def current_run_snapshot() -> RunSnapshot | None:
    """This session's run right now, or None when there is none (training page fills this in)."""
    training = sys.modules.get("ui.training_session")  # not imported yet: no session can own a run
    if training is None:
        return None
    session = training.peek_session()
    snap = session.snapshot() if session is not None else None
    if snap is None:
        return None
    return RunSnapshot(
        model_name=training.default_model_name(snap.config, session.run_number),
        step=snap.step,
        total_steps=snap.max_steps,
        loss=snap.loss,
        running=snap.state in ("queued", "running"),
    )


def _render(snapshot: RunSnapshot) -> None:
    total = snapshot.total_steps if snapshot.total_steps is not None else "?"
    loss = f"{snapshot.loss:.4f}" if snapshot.loss is not None else "–"
    key = "common.training.running" if snapshot.running else "common.training.finished"
    st.caption(t(key, model=snapshot.model_name, step=snapshot.step, total=total, loss=loss))
    if snapshot.total_steps:
        st.progress(min(snapshot.step / snapshot.total_steps, 1.0))


@st.fragment(run_every=timedelta(seconds=REFRESH_SECONDS))
def _live_status() -> None:
    snapshot = current_run_snapshot()
    if snapshot is None or not snapshot.running:
        st.rerun(scope="app")
    _render(snapshot)


def sidebar_status() -> None:
    """Render the run's status where it is called (the sidebar does so on every page)."""
    snapshot = current_run_snapshot()
    if snapshot is None:
        return
    if snapshot.running:
        _live_status()
    else:
        _render(snapshot)

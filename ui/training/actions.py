"""What the training page's buttons do: start a run, use its model on the other pages, load a file.

Each is a widget callback (it runs before the page's next rerun) and leaves its outcome in session
state for the page to show once (:func:`take_flash`), or, for an upload, to show under the uploader.
The page's layout is ``app_pages/training.py``.
"""
from __future__ import annotations

from typing import Any

import streamlit as st

from model.checkpoint import CheckpointError
from model.config import InvalidConfig
from ui import models
from ui.training import session as ts
from ui.training.settings import KEYS, problem_message, read_settings
from ui.training.status import FAILURE_REASON_LIMIT
from ui.url_state import markdown_literal

FLASH_KEY = "_training.flash"  # (where, kind, i18n key, args) shown once after a button's callback
UPLOAD_KEY = "training.upload"
UPLOAD_RESULT_KEY = "_training.upload_result"
UPLOAD_PANEL_KEY = "training.upload_panel"  # the upload expander's open state
NAME_KEY = "training.model_name"
PROBE_KEY = "training.probe_step"


def redraws_page(drawn: str, now: str) -> bool:
    """Whether a click in the controls row (a fragment of its own) changed the run so that the whole page
    must be drawn again: ``drawn`` is the run's state when the page was last drawn, ``now`` its state
    after the click ("idle" without a run). A run that trains or queues may pause (or go on) without
    it: the page then shows the live panel, which redraws the page by itself on its next tick once the
    run has paused, and the row alone puts Resume in Pause's place at once."""
    live = ("queued", "running")
    return now != drawn and not (drawn in live and now in (*live, "paused"))


def flash(kind: str, key: str, where: str = "controls", **args: Any) -> None:
    st.session_state[FLASH_KEY] = (where, kind, key, args)


def take_flash(where: str) -> tuple[str, str, dict[str, Any]] | None:
    """``(kind, i18n key, args)`` of the message a callback left for this place on the page, once."""
    flashed = st.session_state.get(FLASH_KEY)
    if flashed is None or flashed[0] != where:
        return None
    del st.session_state[FLASH_KEY]
    return flashed[1], flashed[2], flashed[3]


def dropped_args(dropped: list[str]) -> dict[str, Any]:
    """The words for the models a session let go to stay under its cap (none: no words)."""
    if not dropped:
        return {}
    return {"dropped": ", ".join(markdown_literal(n) for n in dropped), "limit": models.MAX_SESSION_MODELS}


def on_start(cheat: bool = False) -> None:
    """Start a run with the page's settings (``cheat``: without the look-ahead mask)."""
    if cheat:
        st.session_state[KEYS["use_look_ahead_mask"]] = False
    try:
        config = read_settings().to_config()
    except InvalidConfig as exc:
        key, args = problem_message(exc.problem)
        flash("error", key, **args)
        return
    try:
        ts.session_training().start(config)
    except ValueError as exc:  # e.g. a TP_DEVICE the machine does not have
        flash("error", "training.start_failed", detail=markdown_literal(str(exc), FAILURE_REASON_LIMIT))
        return
    st.session_state.pop(PROBE_KEY, None)


def on_use() -> None:
    """Register the run's model under the name typed, and select it on every page."""
    session = ts.session_training()
    name = str(st.session_state.get(NAME_KEY, "")).strip()
    problem = ts.model_name_problem(name)
    if problem is not None:
        args = {k: markdown_literal(str(v)) for k, v in problem[1].items()}
        flash("error", problem[0], where="results", **args)
        return
    try:
        ckpt = session.checkpoint_copy()
    except ts.FailedRunError:  # it failed after the page drew the button
        flash("error", "training.use.failed")  # the results (and their flash) are gone: say it above
        return
    except CheckpointError as exc:  # e.g. the very last update made a weight NaN
        flash("error", ts.checkpoint_error_key(exc), where="results")
        return
    dropped = models.register_session_model(name, ckpt)
    st.session_state[models.MODEL_STATE_KEY] = name
    flash("success", "training.use.done_dropped" if dropped else "training.use.done", where="results",
          name=markdown_literal(name), **dropped_args(dropped))


def on_upload() -> None:
    """Load the uploaded checkpoint (validated by the engine) and select it on every page."""
    uploaded = st.session_state.get(UPLOAD_KEY)
    st.session_state[UPLOAD_PANEL_KEY] = True  # the answer shows in the panel: keep it open
    if uploaded is None:
        st.session_state.pop(UPLOAD_RESULT_KEY, None)
        return
    try:
        ckpt = ts.read_upload(uploaded.getvalue())
    except CheckpointError as exc:
        st.session_state[UPLOAD_RESULT_KEY] = ("error", ts.checkpoint_error_key(exc), {})
        return
    name = ts.name_from_upload(uploaded.name)
    dropped = models.register_session_model(name, ckpt, uploaded=True)
    st.session_state[models.MODEL_STATE_KEY] = name
    facts = ts.checkpoint_summary(ckpt)
    steps = facts["steps"] if isinstance(facts["steps"], int) else "?"
    done = "training.upload.done_dropped" if dropped else "training.upload.done"
    st.session_state[UPLOAD_RESULT_KEY] = ("ok", done, {
        "name": markdown_literal(name), "task": markdown_literal(facts["task"]), "params": f"{facts['params']:,}",
        "steps": steps, **dropped_args(dropped),
    })

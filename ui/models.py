"""Which trained models the pages can use, and loading them once per process.

Two kinds of model have a name:

* shipped ones, ``assets/checkpoints/<task>.pt`` (``copy``, ``reverse``, ``sort``, ``dates``),
  loaded once per process and shared read-only by every session (eval mode, never trained);
* one trained in this session on the training page, registered with
  :func:`register_session_model` and visible only to that session.

Pages use::

    from ui.models import selected_model

    ckpt = selected_model()          # the sidebar's choice, or None (a notice is already shown)
    if ckpt is not None:
        ...                          # hand ckpt to a ui/ helper that runs it; pages never touch torch

A checkpoint is what ``model.checkpoint.load_checkpoint(path)`` returns: ``.model`` (a
Transformer in eval mode), ``.tokenizer``, ``.task`` and ``.config``.

The process-wide cache is a plain dict behind a lock rather than ``st.cache_resource`` so that
the warm-up thread (``ui.warmup``) can fill it without a script-run context; a second session
asking for a model that is still loading waits for that one load instead of starting another.
"""
from __future__ import annotations

import functools
import os
import threading
from pathlib import Path
from typing import Any

CHECKPOINT_DIR = Path(__file__).resolve().parents[1] / "assets" / "checkpoints"
SHIPPED_TASKS: tuple[str, ...] = ("copy", "reverse", "sort", "dates")
MODEL_STATE_KEY = "model"  # session_state key the sidebar's model widget owns
_SESSION_MODELS_KEY = "_models.session"

_cache: dict[tuple[str, int], Any] = {}
_cache_lock = threading.Lock()
_load_locks: dict[str, threading.Lock] = {}


class ModelUnavailable(RuntimeError):
    """A named model cannot be used.

    ``kind`` is one of ``"unknown"`` (no such name), ``"missing"`` (no checkpoint file),
    ``"code"`` (``model.checkpoint`` cannot be imported) or ``"broken"`` (the file does not load);
    the UI turns it into a sentence with ``t(f"common.model.unavailable_{kind}", name=...)``.
    ``detail`` is the technical cause, for logs.
    """

    KINDS = ("unknown", "missing", "code", "broken")

    def __init__(self, name: str, kind: str, detail: str = "") -> None:
        assert kind in self.KINDS, kind
        super().__init__(f"Model {name!r} is unavailable ({kind}): {detail}")
        self.name = name
        self.kind = kind
        self.detail = detail


def checkpoint_path(task: str) -> Path:
    return CHECKPOINT_DIR / f"{task}.pt"


def shipped_models() -> list[str]:
    """Shipped tasks whose checkpoint file is present, in the tour's order; then any other ``*.pt``.

    Called on every rerun of every page: the folder is listed again only when its modification
    time changes (a file added or removed), which costs one ``stat``.
    """
    try:
        mtime = os.stat(CHECKPOINT_DIR).st_mtime_ns
    except OSError:
        return []
    return list(_list_checkpoints(CHECKPOINT_DIR, mtime))


@functools.lru_cache(maxsize=8)
def _list_checkpoints(folder: Path, mtime_ns: int) -> tuple[str, ...]:
    present = {p.stem for p in folder.glob("*.pt")}
    return tuple([task for task in SHIPPED_TASKS if task in present] + sorted(present - set(SHIPPED_TASKS)))


def _session_models() -> dict[str, Any]:
    import streamlit as st

    return st.session_state.setdefault(_SESSION_MODELS_KEY, {})


def session_models() -> list[str]:
    """Names of the models trained in this session, oldest first."""
    try:
        return list(_session_models())
    except Exception:  # outside a Streamlit run there is no session
        return []


def available_models() -> list[str]:
    """Every model name this session may pick: shipped ones first, then this session's own."""
    shipped = shipped_models()
    return shipped + [name for name in session_models() if name not in shipped]


def is_session_model(name: str) -> bool:
    return name in session_models()


def register_session_model(name: str, checkpoint: Any) -> None:
    """Make ``checkpoint`` (trained on the training page) selectable as ``name`` in this session.

    ``name`` must not be a shipped model's name (``ValueError``); registering the same name again
    replaces the earlier model. The training page may then set ``st.session_state["model"] =
    name`` before the sidebar renders (e.g. from a button callback) to select it.
    """
    name = name.strip()
    if not name or len(name) > 40:
        raise ValueError("A model name must have 1 to 40 characters.")
    if name in shipped_models():
        raise ValueError(f"{name!r} is the name of a shipped model; choose another name.")
    _session_models()[name] = checkpoint


def load_shipped(task: str) -> Any:
    """The shipped checkpoint of ``task``, loaded once per process (thread-safe, read-only)."""
    path = checkpoint_path(task)
    try:
        stamp = path.stat().st_mtime_ns
    except FileNotFoundError:
        raise ModelUnavailable(task, "missing", f"{path.name} is not in {CHECKPOINT_DIR}") from None
    with _cache_lock:
        if (task, stamp) in _cache:
            return _cache[(task, stamp)]
        lock = _load_locks.setdefault(task, threading.Lock())
    with lock:
        with _cache_lock:
            if (task, stamp) in _cache:
                return _cache[(task, stamp)]
        try:
            from model.checkpoint import load_checkpoint
        except ImportError as exc:
            raise ModelUnavailable(task, "code", f"model.checkpoint cannot be imported: {exc}") from exc
        try:
            checkpoint = load_checkpoint(path)
        except Exception as exc:  # a bad file must not take the app down
            raise ModelUnavailable(task, "broken", f"{path.name}: {exc!r}") from exc
        checkpoint.model.eval()
        with _cache_lock:
            _cache[(task, stamp)] = checkpoint
        return checkpoint


def get_model(name: str) -> Any:
    """The checkpoint called ``name``: this session's trained model or a shipped one.

    Raises :class:`ModelUnavailable` (see its ``kind``) when it cannot be had.
    Shipped models are shared by all sessions: never train or modify them.
    """
    session = _session_models_or_empty()
    if name in session:
        return session[name]
    if name not in shipped_models():
        raise ModelUnavailable(name, "unknown", "neither shipped nor trained in this session")
    return load_shipped(name)


def _session_models_or_empty() -> dict[str, Any]:
    try:
        return _session_models()
    except Exception:
        return {}


def selected_model_name() -> str | None:
    """The name the sidebar selected (kept in ``st.session_state["model"]`` and ``?model=``)."""
    import streamlit as st

    names = available_models()
    chosen = st.session_state.get(MODEL_STATE_KEY)
    if chosen in names:
        return chosen
    return names[0] if names else None


def selected_model() -> Any | None:
    """The selected checkpoint, or None after showing why in the current language."""
    import streamlit as st

    from ui.i18n import t

    name = selected_model_name()
    if name is None:
        st.info(t("common.model.none_available"), icon=":material/info:")
        return None
    try:
        return get_model(name)
    except ModelUnavailable as exc:
        st.error(t(f"common.model.unavailable_{exc.kind}", name=name), icon=":material/error:")
        return None

"""Which trained models the pages can use, loading them once per process, and their cache keys.

Two kinds of model have a name:

* shipped ones, ``assets/checkpoints/<task>.pt`` (the translation models ``en-zh`` and ``zh-en``
  first, then ``copy``, ``reverse``, ``sort``, ``dates``), loaded once per process with ``st.cache_resource`` and shared read-only by every session (eval
  mode, never trained);
* one trained or uploaded in this session on the training page, registered with
  :func:`register_session_model` and visible only to that session.

Pages use::

    from ui.models import selected_model

    ckpt = selected_model()          # the sidebar's choice, or None (a notice is already shown)
    if ckpt is not None:
        ...                          # hand ckpt to explain/ through ui.cache.computed

Every checkpoint the pages see has a cache key, :func:`model_key`, that says what the model *is*:
a shipped file is its name plus a hash of its bytes, a session's model gets a random id when it is
registered. The key is never ``id()`` of the object (ids are reused once an object is freed) and
never the name alone (two sessions may each train a model called ``copy-tiny-1``). The keys are
held weakly: a session's model can be freed when its session ends.

The default model follows the language (:func:`default_model`): ``en-zh`` in English, ``zh-en`` in
中文, when their files are present; otherwise the first model.
"""
from __future__ import annotations

import functools
import hashlib
import os
import uuid
import weakref
from pathlib import Path
from typing import Any

import streamlit as st

CHECKPOINT_DIR = Path(__file__).resolve().parents[1] / "assets" / "checkpoints"
SHIPPED_TASKS: tuple[str, ...] = ("en-zh", "zh-en", "copy", "reverse", "sort", "dates")
LANGUAGE_DEFAULTS: dict[str, str] = {"en": "en-zh", "zh": "zh-en"}  # the model a visitor starts on, by UI language
MODEL_STATE_KEY = "model"  # session_state key the sidebar's model widget owns
_SESSION_MODELS_KEY = "_models.session"
_UPLOADED_KEY = "_models.uploaded"  # names of this session's models that came from a file, not a run here
MAX_SESSION_MODELS = 4  # models of its own a session keeps (trained or uploaded); a fifth lets the oldest go

_keys: "weakref.WeakKeyDictionary[Any, str]" = weakref.WeakKeyDictionary()  # checkpoint -> cache key


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


def register_session_model(name: str, checkpoint: Any, *, uploaded: bool = False) -> list[str]:
    """Make ``checkpoint`` (trained or uploaded on the training page) selectable as ``name`` in this session.

    ``name`` must not be a shipped model's name (``ValueError``); registering the same name again
    replaces the earlier model. A session keeps at most :data:`MAX_SESSION_MODELS` models: the
    oldest ones beyond it are let go, and their names returned (oldest first) for the page to say so.
    The training page may then set ``st.session_state["model"] = name`` before the sidebar renders
    (e.g. from a button callback) to select it. ``uploaded``: it came from a file (the sidebar says so).
    """
    name = name.strip()
    if not name or len(name) > 40:
        raise ValueError("A model name must have 1 to 40 characters.")
    if name in shipped_models():
        raise ValueError(f"{name!r} is the name of a shipped model; choose another name.")
    _keys[checkpoint] = f"session:{uuid.uuid4().hex}"
    held = _session_models()
    held.pop(name, None)  # a name registered again becomes the newest
    held[name] = checkpoint
    files: set[str] = st.session_state.setdefault(_UPLOADED_KEY, set())
    (files.add if uploaded else files.discard)(name)
    dropped = []
    while len(held) > MAX_SESSION_MODELS:
        oldest = next(iter(held))
        del held[oldest]
        files.discard(oldest)
        dropped.append(oldest)
    return dropped


def is_uploaded_model(name: str) -> bool:
    """Whether this session's model ``name`` came from an uploaded file (False outside a Streamlit run)."""
    try:
        return name in st.session_state.get(_UPLOADED_KEY, ())
    except Exception:  # outside a Streamlit run there is no session
        return False


def model_key(checkpoint: Any) -> str:
    """The cache key of ``checkpoint``: ``"<name>@<content hash>"`` for a shipped file,
    ``"session:<random id>"`` for a model registered in a session. A checkpoint that came from
    neither (a test's) gets a random id of its own on first use."""
    key = _keys.get(checkpoint)
    if key is None:
        key = _keys[checkpoint] = f"unregistered:{uuid.uuid4().hex}"
    return key


def is_session_key(key: str) -> bool:
    """Whether ``key`` (from :func:`model_key`) is a session's model (or a test's), not a shipped file."""
    return key.startswith(("session:", "unregistered:"))


@functools.lru_cache(maxsize=32)
def _content_hash(path: str, mtime_ns: int, size: int) -> str:
    """A hash of the file's bytes, read again only when its modification time or size changes."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def shipped_key(task: str) -> str:
    """``"<task>@<hash of the file>"``; :class:`ModelUnavailable` (missing) if there is no file."""
    path = checkpoint_path(task)
    try:
        stat = path.stat()
    except FileNotFoundError:
        raise ModelUnavailable(task, "missing", f"{path.name} is not in {CHECKPOINT_DIR}") from None
    return f"{task}@{_content_hash(str(path), stat.st_mtime_ns, stat.st_size)}"


@st.cache_resource(show_spinner=False, max_entries=32)
def _load_shipped(task: str, key: str) -> Any:
    """The checkpoint file of ``task`` whose content is ``key``, loaded once per process."""
    try:
        from model.checkpoint import load_checkpoint
    except ImportError as exc:
        raise ModelUnavailable(task, "code", f"model.checkpoint cannot be imported: {exc}") from exc
    path = checkpoint_path(task)
    try:
        checkpoint = load_checkpoint(path)
    except Exception as exc:  # a bad file must not take the app down
        raise ModelUnavailable(task, "broken", f"{path.name}: {exc!r}") from exc
    checkpoint.model.eval()
    _keys[checkpoint] = key
    return checkpoint


def load_shipped(task: str) -> Any:
    """The shipped checkpoint of ``task``, loaded once per process (thread-safe, read-only)."""
    return _load_shipped(task, shipped_key(task))


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


def default_model(names: list[str], lang: str | None) -> str | None:
    """The model a visitor starts on: the translation model that reads the UI's language (English →
    ``en-zh``, 中文 → ``zh-en``) when it is among ``names``; otherwise the first of ``names``."""
    preferred = LANGUAGE_DEFAULTS.get(lang or "")
    if preferred in names:
        return preferred
    return names[0] if names else None


def selected_model_name() -> str | None:
    """The name the sidebar selected (kept in ``st.session_state["model"]`` and ``?model=``)."""
    from ui.i18n import LANG_STATE_KEY

    names = available_models()
    chosen = st.session_state.get(MODEL_STATE_KEY)
    if chosen in names:
        return chosen
    return default_model(names, st.session_state.get(LANG_STATE_KEY))


def selected_model() -> Any | None:
    """The selected checkpoint, or None after showing why in the current language."""
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

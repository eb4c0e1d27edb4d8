"""The one cache for what the pages compute: ``st.cache_data`` over explain/'s functions.

A page asks for a result through :func:`computed`, never by calling a model itself::

    from explain.attention import attention_view
    from ui.cache import computed

    view = computed(attention_view, source, model=ckpt, scale_scores=False)

The result is computed once per process for the same function, model and arguments and shared by
every session (Streamlit hands each caller its own copy). The model enters the key as
:func:`ui.models.model_key` (what the model *is*, not its name or its ``id()``), and the cache
never holds the model itself, so a session's model can be freed when the session ends.
Loaded models are cached separately, with ``st.cache_resource`` (:mod:`ui.models`).

A function that takes ``should_stop`` (the decoders) is handed one that says True once the
browser session that asked has gone away, so a long decode stops at its next step instead of
keeping a core busy for nobody. It is not part of the cache key.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, TypeVar

import streamlit as st
from streamlit.runtime import Runtime
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from ui.models import model_key

R = TypeVar("R")
MAX_ENTRIES = 512  # per process; a view of one sentence is at most a few hundred kB


@st.cache_data(max_entries=MAX_ENTRIES, show_spinner=False)
def _cached_call(function_name: str, key: str, args: tuple, kwargs: dict, _function: Callable, _model: Any,
                 _should_stop: Callable[[], bool] | None = None) -> Any:
    if _should_stop is not None:
        kwargs = {**kwargs, "should_stop": _should_stop}
    if _model is None:
        return _function(*args, **kwargs)
    return _function(_model, *args, **kwargs)


def session_gone_check() -> Callable[[], bool] | None:
    """A ``should_stop`` that says True once this script run's browser session is no longer active
    (None outside a running server: AppTest, scripts)."""
    ctx = get_script_run_ctx(suppress_warning=True)
    if ctx is None or not Runtime.exists():
        return None
    runtime, session_id = Runtime.instance(), ctx.session_id
    return lambda: not runtime.is_active_session(session_id)


@functools.cache
def _takes_should_stop(function: Callable) -> bool:
    """Whether ``function`` accepts ``should_stop`` (read once per function, not on every rerun)."""
    return "should_stop" in inspect.signature(function).parameters


def computed(function: Callable[..., R], *args: Any, model: Any = None, **kwargs: Any) -> R:
    """``function(model, *args, **kwargs)`` (``function(*args, **kwargs)`` without a model), cached.

    ``function`` must be a module-level function of explain/ whose result depends only on its
    arguments; the arguments must be hashable by Streamlit (numbers, strings, tuples, arrays).
    """
    name = f"{function.__module__}.{function.__qualname__}"
    key = model_key(model) if model is not None else ""
    stop = session_gone_check() if _takes_should_stop(function) else None
    return _cached_call(name, key, args, kwargs, function, model, stop)

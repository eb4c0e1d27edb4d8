"""The one cache for what the pages compute: explain/'s results, bounded in bytes, shared by every session.

A page asks for a result through :func:`computed`, never by calling a model itself::

    from explain.attention import attention_view
    from ui.cache import computed

    view = computed(attention_view, source, model=ckpt, scale_scores=False)

The result is computed once per process for the same function, model and arguments and shared by
every session. It is kept pickled, so its size is known exactly, and every caller gets its own copy
(as ``st.cache_data`` would hand out). Sessions asking for the same missing result at once wait for
one computation instead of each running it.

**The bound is in bytes** (``TP_PAGE_CACHE_MB``, default 256 MB per process), least recently used
first out; a result bigger than the whole bound is handed out but not kept. A model trained or
uploaded in a session may hold at most a quarter of the bound (its own oldest views go first), so
one visitor typing sentences into a big uploaded model cannot push out everybody's views of the
shipped ones; and when such a model is freed (replaced, dropped, or its session ended) its views
leave with it.

The model enters the key as :func:`ui.models.model_key` (what the model *is*, not its name or its
``id()``), and the cache never holds the model itself, so a session's model can be freed when the
session ends. Loaded models are cached separately, with ``st.cache_resource`` (:mod:`ui.models`).

A function that takes ``should_stop`` (the decoders) is handed one that says True once the
browser session that asked has gone away, so a long decode stops at its next step instead of
keeping a core busy for nobody. It is not part of the cache key; a computation that stops raises,
and nothing is kept.
"""
from __future__ import annotations

import functools
import hashlib
import inspect
import os
import pickle
import threading
import weakref
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Callable, TypeVar

from streamlit.runtime import Runtime
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from model.env import positive_int
from ui.models import is_session_key, model_key

R = TypeVar("R")
ENV_MAX_MB = "TP_PAGE_CACHE_MB"
DEFAULT_MAX_MB = 256
SESSION_MODEL_SHARE = 4  # a session's model may hold at most 1/4 of the bound


def max_bytes(environ: Mapping[str, str] = os.environ) -> int:
    """The page cache's bound: ``TP_PAGE_CACHE_MB`` megabytes (a whole number ≥ 1), else 256."""
    return positive_int(environ, ENV_MAX_MB, DEFAULT_MAX_MB) * 1024 * 1024


class ByteBoundedCache:
    """Pickled results under a key, least recently used out first, at most ``limit`` bytes in all.

    ``model_share`` bounds the bytes of one *session* model's entries (``limit // model_share``).
    Thread-safe: one lock guards the table; a computation runs outside it, under a lock of its own
    key, so two callers of the same key compute once and callers of other keys never wait.
    """

    def __init__(self, limit: int, model_share: int = SESSION_MODEL_SHARE) -> None:
        self.limit = limit
        self.model_limit = max(1, limit // model_share)
        self._entries: "OrderedDict[str, tuple[bytes, str]]" = OrderedDict()  # key -> (blob, model key)
        self._bytes = 0
        self._model_bytes: dict[str, int] = {}
        self._lock = threading.Lock()
        self._computing: dict[str, list] = {}  # key -> [lock, number of callers holding or waiting]

    # ------------------------------------------------------------------ reading
    @property
    def nbytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def model_bytes(self, model: str) -> int:
        return self._model_bytes.get(model, 0)

    def __contains__(self, key: str) -> bool:
        with self._lock:
            return key in self._entries

    def _hit(self, key: str) -> bytes | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            self._entries.move_to_end(key)
            return entry[0]

    def get_or_compute(self, key: str, model: str, compute: Callable[[], R]) -> R:
        """The value kept under ``key`` (a fresh copy), or ``compute()``'s, kept if it fits."""
        blob = self._hit(key)
        if blob is not None:
            return pickle.loads(blob)
        with self._lock:
            slot = self._computing.setdefault(key, [threading.Lock(), 0])
            slot[1] += 1
        try:
            with slot[0]:
                blob = self._hit(key)  # another caller may have computed it while this one waited
                if blob is not None:
                    return pickle.loads(blob)
                value = compute()
                self._put(key, model, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
                return value
        finally:
            with self._lock:
                slot[1] -= 1
                if slot[1] == 0:
                    self._computing.pop(key, None)

    # ------------------------------------------------------------------ writing
    def _put(self, key: str, model: str, blob: bytes) -> None:
        size = len(blob)
        session_model = is_session_key(model)
        if size > self.limit or (session_model and size > self.model_limit):
            return  # handed out, never kept: keeping it would empty the cache for one view
        with self._lock:
            self._drop(key)
            self._entries[key] = (blob, model)
            self._bytes += size
            self._model_bytes[model] = self._model_bytes.get(model, 0) + size
            if session_model:
                while self._model_bytes[model] > self.model_limit:
                    oldest = next(k for k, (_, m) in self._entries.items() if m == model)
                    self._drop(oldest)
            while self._bytes > self.limit:
                self._drop(next(iter(self._entries)))

    def _drop(self, key: str) -> None:
        """Remove ``key`` (the caller holds the lock)."""
        entry = self._entries.pop(key, None)
        if entry is None:
            return
        blob, model = entry
        self._bytes -= len(blob)
        left = self._model_bytes[model] - len(blob)
        if left:
            self._model_bytes[model] = left
        else:
            del self._model_bytes[model]

    def forget_model(self, model: str) -> int:
        """Drop every entry computed with the model keyed ``model``; how many were dropped."""
        with self._lock:
            keys = [k for k, (_, m) in self._entries.items() if m == model]
            for k in keys:
                self._drop(k)
            return len(keys)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._model_bytes.clear()
            self._bytes = 0


_CACHE = ByteBoundedCache(max_bytes())
_watched: "weakref.WeakSet[Any]" = weakref.WeakSet()  # session models whose freeing empties their views
_watched_lock = threading.Lock()


def clear() -> None:
    """Empty the page cache (tests that count computations start from nothing)."""
    _CACHE.clear()


def _watch(model: Any, key: str) -> None:
    """Once ``model`` (a session's) is freed, drop its views: nobody can ask for them again."""
    with _watched_lock:
        if model in _watched:
            return
        _watched.add(model)
    weakref.finalize(model, _CACHE.forget_model, key)


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


def _key(name: str, model: str, args: tuple, kwargs: dict) -> str:
    blob = pickle.dumps((name, model, args, sorted(kwargs.items())), protocol=pickle.HIGHEST_PROTOCOL)
    return hashlib.blake2b(blob, digest_size=20).hexdigest()


def _call_key(function: Callable, args: tuple, model: Any, kwargs: dict) -> tuple[str, str]:
    """The cache key of ``function(model, *args, **kwargs)``, and the model's key."""
    mkey = model_key(model) if model is not None else ""
    return _key(f"{function.__module__}.{function.__qualname__}", mkey, args, kwargs), mkey


def is_cached(function: Callable, *args: Any, model: Any = None, **kwargs: Any) -> bool:
    """Whether :func:`computed` with these arguments would be answered from the cache now."""
    return _call_key(function, args, model, kwargs)[0] in _CACHE


def computed(function: Callable[..., R], *args: Any, model: Any = None, **kwargs: Any) -> R:
    """``function(model, *args, **kwargs)`` (``function(*args, **kwargs)`` without a model), cached.

    ``function`` must be a module-level function of explain/ whose result depends only on its
    arguments; the arguments and the result must pickle (numbers, strings, tuples, arrays, tensors).
    """
    key, mkey = _call_key(function, args, model, kwargs)
    if is_session_key(mkey):
        _watch(model, mkey)
    call_kwargs = kwargs
    if _takes_should_stop(function):
        stop = session_gone_check()
        if stop is not None:
            call_kwargs = {**kwargs, "should_stop": stop}

    def compute() -> R:
        return function(*args, **call_kwargs) if model is None else function(model, *args, **call_kwargs)

    return _CACHE.get_or_compute(key, mkey, compute)

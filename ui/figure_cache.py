"""Plotly figures built once per process and cheap to draw on every rerun.

Two costs dominate a chart on a rerun, and both are paid again for a figure that has not changed:

* building it (plotly validates every property): :func:`cached_figure` builds a figure once per
  process for the same builder and arguments, shared read-only by every session;
* ``st.plotly_chart`` calling ``figure.to_dict()``, which deep-copies the whole figure, template
  included: a cached figure is frozen (:mod:`ui.frozen_figure`), its dict computed once.

Usage in a page::

    from ui.figure_cache import cached_figure

    st.plotly_chart(cached_figure(build_zoom_figure, weights, queries, keys, title=...), key="zoom")

The cache key is a digest of the pickled arguments, far cheaper than Streamlit's own hashing of
tuples of strings (about 0.1 ms instead of 1 ms per call), and the cache is a plain process-wide
LRU dict: ``st.cache_resource`` costs about 0.3 ms per call even on a hit (its replay and
statistics machinery), which is more than a fragment rerun can spend on a figure.
"""
from __future__ import annotations

import hashlib
import pickle
import threading
import time
from collections import OrderedDict
from typing import Any, Callable

import plotly.graph_objects as go

from ui.frozen_figure import freeze

# A grid of every head of a 48-character sentence is about 1 MB once frozen; most figures are far smaller.
CACHE_ENTRIES = 256
CACHE_TTL_S = 3600


def figure_digest(build: Callable[..., go.Figure], args: tuple, kwargs: dict) -> str:
    """A digest of the builder's name and its arguments (numpy arrays, strings, tuples, frames)."""
    payload = (build.__module__, build.__qualname__, args, sorted(kwargs.items()))
    return hashlib.blake2b(pickle.dumps(payload, protocol=5), digest_size=20).hexdigest()


_figures: OrderedDict[str, tuple[float, go.Figure]] = OrderedDict()  # digest -> (built at, figure)
_lock = threading.Lock()


def _cached(digest: str, build: Callable[..., go.Figure], args: tuple, kwargs: dict) -> go.Figure:
    now = time.monotonic()
    with _lock:
        hit = _figures.get(digest)
        if hit is not None and now - hit[0] < CACHE_TTL_S:
            _figures.move_to_end(digest)
            return hit[1]
    figure = freeze(build(*args, **kwargs))  # built outside the lock: two sessions may both build once
    with _lock:
        _figures[digest] = (now, figure)
        _figures.move_to_end(digest)
        while len(_figures) > CACHE_ENTRIES:
            _figures.popitem(last=False)
    return figure


def clear() -> None:
    """Forget every cached figure (tests)."""
    with _lock:
        _figures.clear()


def cached_figure(build: Callable[..., go.Figure], *args: Any, **kwargs: Any) -> go.Figure:
    """``build(*args, **kwargs)``, frozen, built once per process for the same builder and arguments.

    The returned figure is shared by every session: never change it.
    """
    return _cached(figure_digest(build, args, kwargs), build, args, kwargs)

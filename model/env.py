"""The operator's whole-number settings, read from the environment (``TP_MAX_TRAINING_RUNS``, ``TP_PAGE_CACHE_MB``, ...).

A value that is missing falls back to its default; one that is not a whole number of at least 1 falls
back too, with a warning in the server's log (a typo must not take the server down, nor be silent).
"""
from __future__ import annotations

import logging
from collections.abc import Mapping

_log = logging.getLogger(__name__)


def positive_int(environ: Mapping[str, str], name: str, default: int) -> int:
    """``environ[name]`` as a whole number ≥ 1, else ``default``."""
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        _log.warning("%s=%r is not a positive whole number; using %d", name, raw, default)
        return default
    return value

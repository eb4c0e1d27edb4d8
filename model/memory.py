"""Giving freed memory back to the operating system.

A training step at batch 512 allocates and frees hundreds of megabytes of activations. glibc's allocator
keeps what was freed for the next allocation instead of returning it (its mmap threshold grows after
the first large frees), so a server whose runs have all ended can still hold a gigabyte it no longer
uses. :func:`trim` asks the allocator to return every free page it can (``malloc_trim(0)``, glibc
only; elsewhere it does nothing). It takes milliseconds, and is called when a run ends and when a
run's objects are freed, never per step.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc


@functools.cache
def _malloc_trim():
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        return ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to trim
        return None


def trim(collect: bool = False) -> bool:
    """Return free heap pages to the OS (``collect``: first free unreachable cycles); True if the allocator can."""
    if collect:
        gc.collect()
    malloc_trim = _malloc_trim()
    if malloc_trim is None:
        return False
    malloc_trim(0)
    return True

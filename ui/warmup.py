"""Once per process, in the background: load the shipped models and wake up the optimizer code.

``app.py`` calls :func:`start_warmup` at the end of every run; ``st.cache_resource`` makes only
the first call start the thread. It runs after the first page has been drawn, so the first
visitor does not wait for it, and it:

* sets torch's CPU thread count to the training runs' (one by default,
  :func:`ui.training.session.training_threads`) before anything else, so the pages' inference and
  the training runs share the cores the same way from the first minute: with torch's default (one
  thread per core) a class's worth of sessions decoding at once fight over the cores;
* loads every shipped checkpoint into the shared cache of :mod:`ui.models` (eval mode);
* builds one throwaway ``torch.optim.Adam`` on a tiny parameter and takes one step, because the
  first optimizer of a process imports ``torch._dynamo`` lazily (2-7 s on a laptop) and that
  stall would otherwise land on the first "Start training" click;
* then moves every object alive at that point (torch, plotly, pandas, the models: ~400k objects)
  out of the garbage collector's reach with ``gc.freeze()``. Python's automatic full collection
  walks them all, and it stops every session at once while it does: 0.25-0.74 s each, three or
  four times in 90 s of 10 busy sessions (``bench/load.py``); after the freeze the same
  collections took 30-74 ms. Those objects live as long as the process anyway.

The training page (or a benchmark) may call :func:`wait_for_warmup` before it starts. A missing
``model.checkpoint`` module or missing checkpoint files are skipped and noted, never raised.
"""
from __future__ import annotations

import atexit
import gc
import logging
import threading
import time
from dataclasses import dataclass, field

import streamlit as st

_log = logging.getLogger(__name__)


@dataclass
class WarmUp:
    """What the warm-up thread did; read it after :meth:`wait` returns True."""

    done: threading.Event = field(default_factory=threading.Event)
    loaded: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # model name -> why
    optimizer_seconds: float | None = None
    threads: int | None = None  # torch's intra-op threads once the warm-up set them
    frozen_objects: int = 0  # objects gc.freeze() took out of the collector's reach
    seconds: float | None = None

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the warm-up has finished (True) or ``timeout`` seconds passed (False)."""
        return self.done.wait(timeout)


def _warm_optimizer() -> float:
    import torch

    start = time.perf_counter()
    weight = torch.nn.Parameter(torch.zeros(2))
    optimizer = torch.optim.Adam([weight], lr=1e-3)
    weight.square().sum().backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return time.perf_counter() - start


def _set_threads() -> int:
    import torch

    from model.device import pick_device
    from ui.training.session import configure_threads_once

    configure_threads_once(str(pick_device()))
    return torch.get_num_threads()


def run_warmup(report: WarmUp) -> None:
    """The warm-up itself (synchronous); fills ``report`` and sets ``report.done``."""
    from ui.models import ModelUnavailable, load_shipped, shipped_models

    start = time.perf_counter()
    try:
        report.threads = _set_threads()
        for name in shipped_models():
            try:
                load_shipped(name)
                report.loaded.append(name)
            except ModelUnavailable as exc:
                report.skipped[name] = str(exc)
                _log.warning("warm-up skipped %s: %s", name, exc)
        report.optimizer_seconds = _warm_optimizer()
    except Exception:  # the app must keep serving even if warming up fails
        _log.exception("warm-up failed")
    finally:
        gc.collect()  # what is garbage now is not frozen with the rest
        gc.freeze()
        report.frozen_objects = gc.get_freeze_count()
        report.seconds = time.perf_counter() - start
        report.done.set()


@st.cache_resource(show_spinner=False)
def start_warmup() -> WarmUp:
    """Start the warm-up thread once per process and return its report (cheap on later calls)."""
    report = WarmUp()
    threading.Thread(target=run_warmup, args=(report,), name="tp-warmup", daemon=True).start()
    # A daemon thread killed inside torch at interpreter exit aborts the process ("terminate
    # called without an active exception", exit 134): a short test run can end that early.
    atexit.register(report.wait, 120)
    return report


def wait_for_warmup(timeout: float | None = None) -> bool:
    """Start the warm-up if needed and wait for it; True when it has finished."""
    return start_warmup().wait(timeout)

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
* then (``done`` is already set: the training page does not wait for this) learns the Tokens page's BPE
  merges on its default corpus (:func:`warm_model_free_views`) and computes, per shipped
  model, what a page's first click on its example sentence would otherwise compute while the visitor
  waits (:func:`warm_views`): the BLEU page's answers to the first 200 samples of seed 0 and their
  scores (a model change on that page decodes nothing), the Attention page's "Inside one head"
  views and the √d_k table, the Feed-forward page's decoder layer. Each goes through
  :func:`ui.cache.computed` with the page's own arguments, so it lands in the cache the pages read
  (the pages' AppTests, ``test_*_once_the_warm_up_has_run``, pin that they then compute nothing new).

The training page (or a benchmark) may call :func:`wait_for_warmup` before it starts. A missing
``model.checkpoint`` module or missing checkpoint files are skipped and noted, never raised.
"""
from __future__ import annotations

import atexit
import gc
import logging
import os
import threading
import time
from dataclasses import dataclass, field

import streamlit as st

_log = logging.getLogger(__name__)
BPE_DEFAULT_CORPUS = "english"  # the Tokens page's BPE corpus on a first visit (app_pages/tokens.py BPE_CORPUS)


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
    views_done: threading.Event = field(default_factory=threading.Event)  # warm_views ran for every model
    stopping: threading.Event = field(default_factory=threading.Event)  # the process exits: warm no more views
    warmed: list[str] = field(default_factory=list)  # models whose first-click views are cached

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
    _yield_the_cpu()  # what follows only saves a visitor's first click: every request goes first
    try:
        if not report.stopping.is_set():
            warm_model_free_views()
        for name in report.loaded:
            if report.stopping.is_set():
                break
            try:
                warm_views(load_shipped(name), should_stop=report.stopping.is_set)
                report.warmed.append(name)
            except Exception:  # a view that cannot be computed is computed (and reported) by its page
                _log.exception("warming the pages' views of %s failed", name)
    finally:
        report.views_done.set()


def _yield_the_cpu() -> None:
    """Lowest CPU priority for this thread (Linux sets it per thread; elsewhere nothing changes)."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    except (AttributeError, OSError):
        pass


BLEU_SEED, BLEU_NOISE = 0, "none"  # the BLEU page's default seed and noise
BLEU_NS = (50, 200)  # its default and its largest N
WHY_SCALE_DIMS = (4, 16, 64, 256)  # the d_k the √d_k table always shows (the model's own is added)


def example_source(ckpt) -> str | None:
    """The sentence a page's one-sentence box starts with (``ui.widgets.sentence_input``), as the model reads it."""
    from explain.tasks import task_example
    from explain.text import MAX_CHARS, prepare_sentence

    prepared = prepare_sentence(task_example(ckpt), ckpt.tokenizer,
                                max_chars=min(MAX_CHARS, ckpt.model.config.max_len))
    return prepared.sentences[0] if prepared.sentences else None


def warm_model_free_views() -> None:
    """What a page computes on its first visit whatever the model: the Tokens page's BPE merges learnt on
    its default corpus (the grammar's English sentences; about 0.5 s on a quiet core)."""
    from explain.bpe import learn_bpe
    from ui.cache import computed

    try:
        computed(learn_bpe, BPE_DEFAULT_CORPUS, "")
    except Exception:  # the page computes (and reports) it itself
        _log.exception("warming the BPE merges failed")


def warm_views(ckpt, should_stop=lambda: False) -> None:
    """Compute, into the pages' cache, what their first clicks on ``ckpt``'s example would compute:
    the same :func:`ui.cache.computed` calls, with the same arguments, as the pages make.
    ``should_stop`` is asked between the BLEU page's chunks (the longest part)."""
    from explain.attention import attention_view, why_scale
    from explain.bleu import chunks_for, decode_chunk, has_samples, bleu_tokenize, score_samples
    from explain.ffn import ffn_view
    from ui.cache import computed

    source = example_source(ckpt)
    if source is not None:
        base = computed(attention_view, source, None, model=ckpt, scale_scores=True, ablate_heads=(),
                        need_details=False)  # the Attention page's overview
        for scale, details in ((True, True), (False, False)):  # "Inside one head": this scaling, and the other
            computed(attention_view, source, base.answer, model=ckpt, scale_scores=scale, ablate_heads=(),
                     need_details=details)
        for stack in ("encoder", "decoder"):  # the Feed-forward page's first layer
            computed(ffn_view, source, stack, 0, model=ckpt)
    cfg = ckpt.model.config
    computed(why_scale, tuple(sorted({*WHY_SCALE_DIMS, cfg.d_k})))
    if has_samples(ckpt):  # the BLEU page: seed 0's answers up to the largest N, scored at its default and largest N
        samples = []
        for chunk in range(chunks_for(max(BLEU_NS))):
            if should_stop():
                return
            samples.extend(computed(decode_chunk, BLEU_SEED, chunk, model=ckpt))
        triples = tuple((s.source, s.reference, s.output) for s in samples)
        for n in BLEU_NS:
            computed(score_samples, triples[:n], BLEU_NOISE, BLEU_SEED, bleu_tokenize(ckpt))


@st.cache_resource(show_spinner=False)
def start_warmup() -> WarmUp:
    """Start the warm-up thread once per process and return its report (cheap on later calls)."""
    report = WarmUp()
    threading.Thread(target=run_warmup, args=(report,), name="tp-warmup", daemon=True).start()
    # A daemon thread killed inside torch at interpreter exit aborts the process ("terminate
    # called without an active exception", exit 134): a short test run can end that early.
    atexit.register(_finish, report)
    return report


def _finish(report: WarmUp) -> None:
    """At exit: let the thread end between two steps (the views are not needed any more)."""
    report.stopping.set()
    report.wait(120)
    report.views_done.wait(120)


def wait_for_warmup(timeout: float | None = None) -> bool:
    """Start the warm-up if needed and wait for it; True when it has finished."""
    return start_warmup().wait(timeout)

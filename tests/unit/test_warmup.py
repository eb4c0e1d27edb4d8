"""The background warm-up: it reports what it did, and leaves the process's long-lived objects frozen."""
from __future__ import annotations

import gc

import pytest
import torch

import ui.models
import ui.warmup as warmup
from ui.training import session


@pytest.fixture(autouse=True)
def threads_restored(monkeypatch):
    """The warm-up sets torch's thread count once per process: undo it for the tests after these."""
    before = torch.get_num_threads()
    monkeypatch.setattr(session, "_threads_set", False)
    yield
    torch.set_num_threads(before)


def test_the_warm_up_gives_page_inference_the_training_runs_thread_count(monkeypatch):
    monkeypatch.setattr(ui.models, "shipped_models", lambda: [])
    monkeypatch.setenv(session.ENV_THREADS, "1")
    torch.set_num_threads(2)
    gc.unfreeze()
    try:
        report = warmup.WarmUp()
        warmup.run_warmup(report)
        assert report.threads == torch.get_num_threads() == 1
    finally:
        gc.unfreeze()


def test_the_warm_up_freezes_the_objects_alive_when_it_ends(monkeypatch):
    monkeypatch.setattr(ui.models, "shipped_models", lambda: [])
    gc.unfreeze()
    try:
        report = warmup.WarmUp()
        warmup.run_warmup(report)
        assert report.done.is_set() and report.optimizer_seconds is not None
        assert report.frozen_objects == gc.get_freeze_count() > 10_000  # torch and friends, at least
    finally:
        gc.unfreeze()


def test_a_failing_warm_up_still_finishes_and_freezes(monkeypatch):
    def broken():
        raise RuntimeError("no models here")

    monkeypatch.setattr(ui.models, "shipped_models", broken)
    gc.unfreeze()
    try:
        report = warmup.WarmUp()
        warmup.run_warmup(report)  # logs the failure, never raises
        assert report.done.is_set() and report.frozen_objects > 0
    finally:
        gc.unfreeze()


def test_the_views_are_warmed_after_done_and_stop_when_the_process_exits(monkeypatch):
    """``done`` (what the training page waits for) does not wait for the pages' views; at exit the
    view warm-up ends between two models instead of being killed inside torch."""
    monkeypatch.setattr(ui.models, "shipped_models", lambda: ["copy", "reverse"])
    monkeypatch.setattr(ui.models, "load_shipped", lambda name: name)
    report = warmup.WarmUp()
    seen = []

    def warm(ckpt, should_stop):
        assert report.done.is_set()  # the models and the optimizer are ready before any view is warmed
        seen.append(ckpt)
        report.stopping.set()  # the process exits while the first model's views are warmed

    monkeypatch.setattr(warmup, "warm_views", warm)
    gc.unfreeze()
    try:
        warmup.run_warmup(report)
    finally:
        gc.unfreeze()
    assert report.views_done.is_set() and seen == ["copy"] and report.warmed == ["copy"]


def test_the_tokens_pages_bpe_merges_are_learnt_by_the_warm_up(monkeypatch):
    """The Tokens page's first visit reads its BPE merges from the cache instead of learning them (~0.5 s)."""
    from explain.bpe import learn_bpe
    from ui import cache

    monkeypatch.setattr(ui.models, "shipped_models", lambda: [])
    cache.clear()
    assert not cache.is_cached(learn_bpe, warmup.BPE_DEFAULT_CORPUS, "")
    gc.unfreeze()
    try:
        warmup.run_warmup(warmup.WarmUp())
    finally:
        gc.unfreeze()
    assert cache.is_cached(learn_bpe, warmup.BPE_DEFAULT_CORPUS, "")

"""The background warm-up: it reports what it did, and leaves the process's long-lived objects frozen."""
from __future__ import annotations

import gc

import ui.models
import ui.warmup as warmup


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

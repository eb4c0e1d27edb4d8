"""The page cache is bounded in bytes, a session's model holds at most a quarter of it, and a freed
model's views leave with it (#33 item 1)."""
from __future__ import annotations

import gc
import threading
import time

import numpy as np
import pytest

from ui import cache, models
from ui.cache import ByteBoundedCache

SHIPPED, SESSION = "en-zh@0123456789abcdef", "session:feedface"


def blob_of(n_bytes: int) -> np.ndarray:
    return np.zeros(n_bytes, dtype=np.uint8)


def fill(store: ByteBoundedCache, prefix: str, model: str, count: int, size: int) -> None:
    for i in range(count):
        store.get_or_compute(f"{prefix}{i}", model, lambda: blob_of(size))


def test_the_bound_is_in_bytes_and_the_least_recently_used_go_first():
    store = ByteBoundedCache(limit=1_000_000)
    fill(store, "a", SHIPPED, 5, 150_000)
    store.get_or_compute("a0", SHIPPED, pytest.fail)  # a0 read again: now the most recently used
    fill(store, "b", SHIPPED, 5, 150_000)
    assert store.nbytes <= 1_000_000 and len(store) == 6
    kept = {k for k in ("a0", "a1", "a2", "a3", "a4")
            if store.get_or_compute(k, SHIPPED, lambda: None) is not None}
    assert "a0" in kept and "a1" not in kept


def test_a_result_bigger_than_the_bound_is_handed_out_but_not_kept():
    store = ByteBoundedCache(limit=100_000)
    fill(store, "small", SHIPPED, 3, 10_000)
    assert store.get_or_compute("huge", SHIPPED, lambda: blob_of(500_000)).nbytes == 500_000
    assert len(store) == 3 and store.nbytes < 100_000  # nobody's views were pushed out for it


def test_one_session_model_typing_cannot_push_out_the_shipped_models_views():
    store = ByteBoundedCache(limit=1_000_000)
    fill(store, "shipped", SHIPPED, 4, 100_000)
    fill(store, "typed", SESSION, 200, 50_000)  # a visitor typing 200 sentences into an uploaded model
    assert store.model_bytes(SESSION) <= 250_000
    assert store.model_bytes(SHIPPED) >= 4 * 100_000
    assert all(store.get_or_compute(f"shipped{i}", SHIPPED, pytest.fail) is not None for i in range(4))
    assert store.get_or_compute("typed199", SESSION, pytest.fail) is not None  # its latest views stay


def test_every_caller_gets_a_copy():
    store = ByteBoundedCache(limit=1_000_000)
    first = store.get_or_compute("k", SHIPPED, lambda: [1, 2, 3])
    first.append(4)
    second = store.get_or_compute("k", SHIPPED, pytest.fail)
    second.append(5)
    assert store.get_or_compute("k", SHIPPED, pytest.fail) == [1, 2, 3]


def test_callers_of_one_missing_result_compute_it_once():
    store = ByteBoundedCache(limit=1_000_000)
    runs: list[int] = []

    def slow():
        runs.append(1)
        time.sleep(0.2)
        return "view"

    got: list[str] = []
    threads = [threading.Thread(target=lambda: got.append(store.get_or_compute("k", SHIPPED, slow)))
               for _ in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert got == ["view"] * 6 and runs == [1]


def test_a_computation_that_fails_keeps_nothing_and_the_next_caller_computes_again():
    store = ByteBoundedCache(limit=1_000_000)
    with pytest.raises(RuntimeError):
        store.get_or_compute("k", SHIPPED, lambda: (_ for _ in ()).throw(RuntimeError("stopped")))
    assert len(store) == 0
    assert store.get_or_compute("k", SHIPPED, lambda: "fine") == "fine"


def test_the_bound_comes_from_the_environment():
    assert cache.max_bytes({}) == 256 * 2**20
    assert cache.max_bytes({"TP_PAGE_CACHE_MB": "64"}) == 64 * 2**20
    for bad in ("0", "-3", "lots", "1.5"):
        assert cache.max_bytes({"TP_PAGE_CACHE_MB": bad}) == 256 * 2**20


def test_a_freed_session_models_views_leave_the_cache(monkeypatch):
    from explain.attention import attention_view
    from model.checkpoint import Checkpoint
    from tests.untrained import untrained_checkpoint

    def untrained(seed: int) -> Checkpoint:  # a Checkpoint, as a session's model is (weakly referable)
        plain = untrained_checkpoint(seed=seed)
        return Checkpoint(model=plain.model, tokenizer=plain.tokenizer, task=plain.task, config=plain.model.config,
                          history={}, format_version=1)

    store = ByteBoundedCache(limit=50 * 2**20)
    monkeypatch.setattr(cache, "_CACHE", store)
    checkpoint = untrained(3)
    models._keys[checkpoint] = "session:freed-model"  # the kind of key a session's model gets
    shipped = untrained(4)
    models._keys[shipped] = SHIPPED
    for sentence in ("abc", "bca", "cab"):
        cache.computed(attention_view, sentence, model=checkpoint)
        cache.computed(attention_view, sentence, model=shipped)
    assert store.model_bytes("session:freed-model") > 0 and len(store) == 6
    del checkpoint
    gc.collect()
    assert store.model_bytes("session:freed-model") == 0 and len(store) == 3
    assert store.model_bytes(SHIPPED) > 0  # a shipped model is never freed: its views stay

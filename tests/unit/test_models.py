"""Loading models once per process, their stable cache keys, and the one cache of computed views."""
from __future__ import annotations

import pytest

from ui import models


def test_models_load_once_and_bad_files_are_reported(tiny_checkpoints):
    first = models.get_model("copy")
    assert models.get_model("copy") is first
    assert not first.model.training
    with pytest.raises(models.ModelUnavailable) as broken:
        models.get_model("sort")
    assert broken.value.kind == "broken"
    with pytest.raises(models.ModelUnavailable) as unknown:
        models.get_model("dates")
    assert unknown.value.kind == "unknown"


def test_warmup_loads_the_shipped_models(tiny_checkpoints, monkeypatch):
    import torch

    from ui.training import session
    from ui.warmup import WarmUp, run_warmup

    monkeypatch.setattr(session, "_threads_set", False)  # the warm-up sets torch's threads: undone below
    threads = torch.get_num_threads()
    report = WarmUp()
    try:
        run_warmup(report)
    finally:
        torch.set_num_threads(threads)
    assert report.wait(0) and report.loaded == ["copy", "reverse"]
    assert set(report.skipped) == {"sort"}
    assert report.optimizer_seconds is not None


# ------------------------------------------------------------------ cache keys


def test_a_shipped_key_is_its_name_and_a_hash_of_its_bytes(tiny_checkpoints):
    key = models.shipped_key("copy")
    name, digest = key.split("@")
    assert name == "copy" and len(digest) == 16
    assert models.model_key(models.get_model("copy")) == key
    assert models.shipped_key("reverse") != key  # same model size, other weights on disk
    with pytest.raises(models.ModelUnavailable):
        models.shipped_key("dates")


def test_a_replaced_file_is_a_new_model(tiny_checkpoints):
    first = models.get_model("copy")
    (tiny_checkpoints / "copy.pt").write_bytes((tiny_checkpoints / "reverse.pt").read_bytes())
    replaced = models.get_model("copy")
    assert replaced is not first
    assert models.model_key(replaced) != models.model_key(first)


def test_an_unregistered_checkpoint_gets_a_key_of_its_own(tiny_checkpoints):
    from model.checkpoint import load_checkpoint

    a, b = (load_checkpoint(tiny_checkpoints / "copy.pt") for _ in range(2))
    assert models.model_key(a) == models.model_key(a) != models.model_key(b)


# A session that trains (here: builds) a model, registers it under a fixed name, and shows what the
# one cache computes from it. The seed comes from the URL, so two sessions hold two different models.
SESSION_SCRIPT = '''
import streamlit as st
import torch

from explain.attention import attention_view
from model.config import TransformerConfig
from model.checkpoint import Checkpoint
from model.tokenizer import CharTokenizer
from model.transformer import Transformer
from tests.unit import test_models
from ui.cache import computed
from ui.models import get_model, model_key, register_session_model

if "made" not in st.session_state:
    torch.manual_seed(int(st.query_params["seed"]))
    tokenizer = CharTokenizer("abc")
    config = TransformerConfig(src_vocab_size=tokenizer.vocab_size, tgt_vocab_size=tokenizer.vocab_size,
                               d_model=8, n_heads=2, n_layers=1, d_ff=16, max_len=16, pad_id=tokenizer.pad_id)
    checkpoint = Checkpoint(model=Transformer(config).eval(), tokenizer=tokenizer, task={"name": "copy"},
                            config=config, history={}, format_version=1)
    register_session_model("copy-tiny-1", checkpoint)
    test_models.SESSION_MODELS.append(__import__("weakref").ref(checkpoint))
    st.session_state["made"] = True
checkpoint = get_model("copy-tiny-1")
view = computed(attention_view, "abc", "abc", model=checkpoint)
st.text(model_key(checkpoint))
st.text(repr(float(view.next_token_probs[0, 0])))
'''
SESSION_MODELS: list = []


def session_app(seed: int):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_string(SESSION_SCRIPT, default_timeout=60)
    at.query_params["seed"] = str(seed)
    return at.run()


def test_two_sessions_models_of_one_name_never_share_a_cached_view():
    from explain.attention import attention_view

    first, second = session_app(1), session_app(2)
    assert not first.exception and not second.exception
    (key_1, p_1), (key_2, p_2) = ([e.value for e in at.text] for at in (first, second))
    assert key_1.startswith("session:") and key_2.startswith("session:") and key_1 != key_2
    assert p_1 != p_2
    for at, p in ((first, p_1), (second, p_2)):  # each session sees its own model's numbers, on every rerun
        assert at.run().text[1].value == p
    direct = attention_view(SESSION_MODELS[-1](), "abc", "abc")
    assert repr(float(direct.next_token_probs[0, 0])) == p_2


def test_a_session_model_can_be_freed_when_its_session_ends():
    import gc

    at = session_app(3)
    assert not at.exception
    ref = SESSION_MODELS[-1]
    assert ref() is not None
    del at
    # Streamlit leaves the last script run's module in sys.modules["__main__"] until the next run
    # of any session: the model is free once another visitor's page has run.
    from streamlit.testing.v1 import AppTest

    assert not AppTest.from_string("import streamlit as st\nst.text('another visitor')").run().exception
    gc.collect()
    assert ref() is None


def test_a_decode_stops_when_its_session_is_gone_and_the_check_is_not_part_of_the_key(monkeypatch):
    """A decode asked for by a session that has gone away stops at its next step; a live session's
    decode is cached as usual, and a later caller (with its own check) gets the cached trace."""
    from explain.decoding import decode
    from model.decoding import DecodingStopped
    from tests.untrained import untrained_checkpoint
    from ui import cache

    from model.checkpoint import Checkpoint

    plain = untrained_checkpoint(seed=7)
    checkpoint = Checkpoint(model=plain.model, tokenizer=plain.tokenizer, task=plain.task, config=plain.model.config,
                            history={}, format_version=1)
    asked: list[int] = []

    def gone_after(steps: int):
        return lambda: (asked.append(1), len(asked) > steps)[1]

    monkeypatch.setattr(cache, "session_gone_check", lambda: gone_after(2))
    with pytest.raises(DecodingStopped):
        cache.computed(decode, "stop me early", "beam", model=checkpoint, beam_size=3)
    assert len(asked) == 3  # asked before each step: two steps ran, the third was refused

    monkeypatch.setattr(cache, "session_gone_check", lambda: (lambda: False))
    trace = cache.computed(decode, "stop me early", "beam", model=checkpoint, beam_size=3)
    monkeypatch.setattr(cache, "session_gone_check", lambda: (lambda: True))
    cached = cache.computed(decode, "stop me early", "beam", model=checkpoint, beam_size=3)  # would stop if run
    assert cached.output == trace.output and len(cached.steps) == len(trace.steps) > 3

"""Sessions typing sentences into a maximum-size uploaded model keep the page cache under its bound, the
model's views under its share, and the shipped model's views in place (#33 item 1). That a freed model's views
leave with it: tests/unit/test_page_cache.py."""
from __future__ import annotations

import io

import torch

from model.checkpoint import load_checkpoint, save_checkpoint
from model.config import LIMITS, TransformerConfig
from model.tasks import get_task
from model.tokenizer import CharTokenizer
from model.transformer import Transformer
from tests.app.apptest_helpers import clean
from ui import cache, models
from ui.cache import ByteBoundedCache
from ui.tour import stop

BOUND = 24 * 2**20


def biggest_copy_model():
    """A copy model at every size limit (d_model, heads, layers, d_ff, positions), as an upload may be."""
    torch.manual_seed(0)
    tokenizer = CharTokenizer(get_task("copy").alphabet)
    config = TransformerConfig(src_vocab_size=tokenizer.vocab_size, tgt_vocab_size=tokenizer.vocab_size,
                               d_model=LIMITS.d_model, n_heads=LIMITS.n_heads, n_layers=LIMITS.n_layers,
                               d_ff=LIMITS.d_ff, dropout=0.0, max_len=LIMITS.max_len)
    buffer = io.BytesIO()
    save_checkpoint(buffer, Transformer(config).eval(), tokenizer, {"name": "copy"})
    return load_checkpoint(buffer.getvalue(), map_location="cpu")


def test_typing_into_a_maximum_size_model_keeps_the_cache_bounded(app, monkeypatch):
    store = ByteBoundedCache(BOUND)
    monkeypatch.setattr(cache, "_CACHE", store)
    monkeypatch.setattr(models, "is_session_model", lambda shown: shown == "big")

    shipped = clean(app(query={"lang": "en", "model": "copy"}).switch_page(stop("attention").script).run())
    shipped_bytes = store.model_bytes(models.shipped_key("copy"))
    assert shipped_bytes > 0

    at = app(query={"lang": "en", "model": "big"})
    at.session_state[models._SESSION_MODELS_KEY] = {"big": biggest_copy_model()}
    clean(at.run())
    at = clean(at.switch_page(stop("attention").script).run())
    big_key = models.model_key(at.session_state[models._SESSION_MODELS_KEY]["big"])
    sizes = []
    for n in range(12):  # each sentence a new view of every layer and head
        clean(at.text_input(key="attention.text").set_value(f"sentence {n} " + "abc" * (4 + n)).run())
        assert not at.error, [e.value for e in at.error]
        sizes.append(store.nbytes)
        assert store.nbytes <= BOUND and store.model_bytes(big_key) <= BOUND // 4
    assert store.model_bytes(big_key) > 0
    # the class's views were not pushed out (the warm-up may have added more)
    assert store.model_bytes(models.shipped_key("copy")) >= shipped_bytes
    assert clean(shipped.run()).title  # and the class's page still answers

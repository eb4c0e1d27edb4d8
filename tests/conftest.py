"""Fixtures shared by the unit and AppTest suites."""
from __future__ import annotations

import pytest


@pytest.fixture
def tiny_checkpoints(tmp_path, monkeypatch):
    """Two small untrained checkpoints (``copy``, ``reverse``) in a temporary checkpoint folder."""
    checkpoint = pytest.importorskip("model.checkpoint")
    from model.config import TransformerConfig
    from model.tokenizer import CharTokenizer
    from model.transformer import Transformer

    tokenizer = CharTokenizer("abc")
    config = TransformerConfig(src_vocab_size=tokenizer.vocab_size, tgt_vocab_size=tokenizer.vocab_size,
                               d_model=8, n_heads=2, n_layers=1, d_ff=16, max_len=16, pad_id=tokenizer.pad_id)
    for task in ("copy", "reverse"):
        checkpoint.save_checkpoint(tmp_path / f"{task}.pt", Transformer(config), tokenizer, {"name": task})
    (tmp_path / "sort.pt").write_bytes(b"not a checkpoint")
    from ui import models

    monkeypatch.setattr(models, "CHECKPOINT_DIR", tmp_path)
    return tmp_path

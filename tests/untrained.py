"""An untrained model with the default task alphabet, as the explain/ tests use one."""
from __future__ import annotations

from types import SimpleNamespace

import torch

from model.config import TransformerConfig
from model.tasks import DEFAULT_ALPHABET
from model.tokenizer import CharTokenizer
from model.transformer import Transformer


def untrained_checkpoint(*, n_layers: int = 2, seed: int = 0) -> SimpleNamespace:
    """What explain/ reads of a checkpoint: ``.model`` (eval mode), ``.tokenizer`` and ``.task``."""
    torch.manual_seed(seed)
    tokenizer = CharTokenizer(DEFAULT_ALPHABET)
    vocab = tokenizer.vocab_size
    config = TransformerConfig(src_vocab_size=vocab, tgt_vocab_size=vocab, d_model=16, n_heads=2, n_layers=n_layers,
                               d_ff=32, max_len=64)
    return SimpleNamespace(model=Transformer(config).eval(), tokenizer=tokenizer, task={"name": "copy"})

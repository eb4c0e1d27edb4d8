"""Every page of the model's insides, with a modern-variant model selected as this session's model.

The model is pre-norm + RMSNorm + SwiGLU + RoPE, with heads wider than d_model / heads, on the ``copy`` task, untrained (random weights are
enough: the pages must draw what any model of these kinds returns), saved and loaded back as the
Training page's "use this model" would leave it. Each page view must run without an exception and
draw its charts.
"""
from __future__ import annotations

import io

import pytest
import torch

from explain.positional import order_blindness
from model.checkpoint import Checkpoint, load_checkpoint, save_checkpoint
from model.config import TransformerConfig
from model.tasks import get_task
from model.tokenizer import CharTokenizer
from model.transformer import Transformer
from tests.app.apptest_helpers import clean
from ui import models
from ui.i18n import translate
from ui.tour import stop

NAME = "modern-copy"
# head_dim: 2 heads of 12 (24 wide together, not d_model 16), so no page may assume H·d_k = d_model.
MODERN = dict(norm_first=True, norm_kind="rms", ffn_kind="swiglu", position_kind="rope", head_dim=12)
NO_CHART = [  # views that print or tabulate instead of drawing (with the paper's model too)
    ("masks", {"masks_view": "printout"}), ("attention", {"attention_view": "ablation"}), ("decoding", {"decoding_view": "compare"}),
]
VIEWS = [  # (page, URL query): the sections of the pages that read the model
    ("tokens", {}), ("positional_encoding", {}), ("positional_encoding", {"positional_encoding_on": "true"}),
    *[("masks", {"masks_view": view}) for view in ("matrices", "printout", "effect", "row")],
    *[("attention", {"attention_view": view}) for view in ("overview", "heads", "inside", "stats", "ablation")],
    ("attention", {"attention_view": "overview", "attention_kind": "cross"}),
    *[("decoding", {"decoding_view": view}) for view in ("steps", "compare", "forcing")],
    ("decoding", {"decoding_strategy": "beam"}),
    ("feed_forward", {}), ("residual_stream", {}), ("layer_norm", {}), ("output_and_loss", {}),
]


def modern_checkpoint() -> Checkpoint:
    """A random pre-norm + RMSNorm + SwiGLU + RoPE copy model, through save and load like an upload."""
    torch.manual_seed(0)
    tokenizer = CharTokenizer(get_task("copy").alphabet)
    config = TransformerConfig(src_vocab_size=tokenizer.vocab_size, tgt_vocab_size=tokenizer.vocab_size, d_model=16,
                               n_heads=2, n_layers=2, d_ff=32, dropout=0.0, max_len=64, **MODERN)
    buffer = io.BytesIO()
    save_checkpoint(buffer, Transformer(config).eval(), tokenizer, {"name": "copy"})
    return load_checkpoint(buffer.getvalue(), map_location="cpu")


@pytest.fixture(scope="module")
def checkpoint() -> Checkpoint:
    return modern_checkpoint()


@pytest.fixture(autouse=True)
def labels_outside_a_run(monkeypatch):
    """AppTest labels the sidebar's options again outside the script run, where no session state can be
    read; answer from the name instead."""
    monkeypatch.setattr(models, "is_session_model", lambda name: name == NAME)


def test_the_checkpoint_is_the_modern_variant(checkpoint):
    assert {k: getattr(checkpoint.config, k) for k in MODERN} == MODERN


@pytest.mark.parametrize("use_pe, verdict", [(False, "blind"), (True, "sees_order")])
def test_the_order_blindness_demo_switches_rope_off_and_on(checkpoint, use_pe, verdict):
    assert order_blindness(checkpoint, "abc def ghi", seed=1, use_pe=use_pe).verdict == verdict


@pytest.mark.parametrize(("key", "query"), VIEWS, ids=[f"{k}-{'-'.join(q.values()) or 'default'}" for k, q in VIEWS])
def test_every_page_draws_with_a_modern_variant_model(app, checkpoint, key, query):
    at = app(query={"lang": "en", "model": NAME, **query})
    at.session_state[models._SESSION_MODELS_KEY] = {NAME: checkpoint}  # what register_session_model leaves
    clean(at.run())
    at = clean(at.switch_page(stop(key).script).run())
    assert at.title[0].value == translate(f"{key}.title", "en")
    assert at.session_state[models.MODEL_STATE_KEY] == NAME
    if (key, query) not in NO_CHART:
        assert at.get("plotly_chart"), "no chart drawn"


def test_the_tokens_page_says_a_rope_model_adds_no_positional_table(app, checkpoint):
    at = app(query={"lang": "en", "model": NAME})
    at.session_state[models._SESSION_MODELS_KEY] = {NAME: checkpoint}
    clean(at.run())
    at = clean(at.switch_page(stop("tokens").script).run())
    assert translate("tokens.embed.no_table_rope", "en") in [str(e.value) for e in at.info]

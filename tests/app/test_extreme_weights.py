"""Every page, every view, with a model whose weights are extreme but finite, selected as a session model.

Two models of the ``copy`` task: ``at-the-limit`` has every weight at ±``MAX_ABS_WEIGHT`` (the
largest a checkpoint may hold; it loads through ``load_checkpoint`` like an upload), and
``diverged`` has weights near 1e37, far past what loading accepts, put straight into the session
as a run that diverged could be: its forward pass overflows float32 and every number it makes is
inf or NaN. Neither may crash a page: no exception element, the title shown, sampling and the
statistics included.
"""
from __future__ import annotations

import io

import pytest
import torch

from model.checkpoint import MAX_ABS_WEIGHT, Checkpoint, load_checkpoint, save_checkpoint
from model.config import TransformerConfig
from model.tasks import get_task
from model.tokenizer import CharTokenizer
from model.transformer import Transformer
from tests.app.apptest_helpers import clean
from ui import models
from ui.i18n import translate
from ui.tour import stop

MODELS_KEY = "_models.session"  # ui.models keeps a session's own models here


def extreme_model(scale: float, seed: int = 0) -> Transformer:
    """A copy-task model whose every weight is ``±scale`` (random signs), eval mode."""
    torch.manual_seed(seed)
    tokenizer = CharTokenizer(get_task("copy").alphabet)
    config = TransformerConfig(src_vocab_size=tokenizer.vocab_size, tgt_vocab_size=tokenizer.vocab_size, d_model=16,
                               n_heads=2, n_layers=2, d_ff=32, dropout=0.0, max_len=64)
    model = Transformer(config).eval()
    with torch.no_grad():
        for weight in model.parameters():
            weight.copy_(torch.randn_like(weight).sign() * scale)
    return model


def at_the_limit() -> Checkpoint:
    """Weights at ±MAX_ABS_WEIGHT, saved and loaded back: what an upload at the limit becomes."""
    buffer = io.BytesIO()
    save_checkpoint(buffer, extreme_model(MAX_ABS_WEIGHT), CharTokenizer(get_task("copy").alphabet), {"name": "copy"})
    return load_checkpoint(buffer.getvalue(), map_location="cpu")


def diverged() -> Checkpoint:
    """Weights at ±1e37: finite, refused by loading, overflowing in the first layer."""
    model = extreme_model(1e37)
    return Checkpoint(model=model, tokenizer=CharTokenizer(get_task("copy").alphabet), config=model.config,
                      task={"name": "copy"}, history={}, format_version=1)


CHECKPOINTS = {"at-the-limit": at_the_limit, "diverged": diverged}

VIEWS = [  # (page, URL query): every section of every page, and every decoding strategy
    ("home", {}), ("tokens", {}), ("tokens", {"tokens_side": "target"}), ("positional_encoding", {}),
    ("positional_encoding", {"positional_encoding_on": "true"}), ("training", {}),
    *[("masks", {"masks_view": view}) for view in ("matrices", "printout", "effect", "row")],
    *[("attention", {"attention_view": view}) for view in ("overview", "heads", "inside", "stats", "ablation")],
    ("attention", {"attention_view": "overview", "attention_scale": "false", "attention_kind": "cross"}),
    *[("decoding", {"decoding_view": view, "decoding_strategy": strategy}) for view in ("steps", "compare", "forcing")
      for strategy in ("greedy", "beam", "sample")],
    ("decoding", {"decoding_strategy": "sample", "decoding_temp": "0.1", "decoding_topk": "2"}),
    ("decoding", {"decoding_strategy": "sample", "decoding_temp": "2.0", "decoding_topk": "all", "decoding_seed": "7"}),
    ("decoding", {"decoding_strategy": "sample", "decoding_temp": "0.0"}),
    ("decoding", {"decoding_strategy": "beam", "decoding_beam": "8"}),
]


@pytest.fixture(scope="module")
def checkpoints() -> dict[str, Checkpoint]:
    return {name: make() for name, make in CHECKPOINTS.items()}


@pytest.fixture(autouse=True)
def labels_outside_a_run(monkeypatch):
    """AppTest labels the sidebar's model options again outside the script run, where no session state
    can be read, and would call a session model "pretrained"; answer from the names instead."""
    monkeypatch.setattr(models, "is_session_model", lambda name: name in CHECKPOINTS)


def test_the_model_at_the_limit_computes_finite_outputs(checkpoints):
    ckpt = checkpoints["at-the-limit"]
    assert float(max(p.abs().max() for p in ckpt.model.parameters())) == MAX_ABS_WEIGHT
    src = torch.tensor([ckpt.tokenizer.encode("hello world")])
    with torch.inference_mode():
        out = ckpt.model(src, torch.tensor([[ckpt.tokenizer.bos_id] + ckpt.tokenizer.encode("hello")]))
    assert bool(torch.isfinite(out.logits).all())


def test_the_diverged_model_overflows(checkpoints):
    ckpt = checkpoints["diverged"]
    src = torch.tensor([ckpt.tokenizer.encode("hello world")])
    with torch.inference_mode():
        out = ckpt.model(src, torch.tensor([[ckpt.tokenizer.bos_id]]))
    assert not bool(torch.isfinite(out.logits).all())  # the control: this model really breaks the arithmetic


@pytest.mark.parametrize("name", list(CHECKPOINTS))
@pytest.mark.parametrize(("key", "query"), VIEWS, ids=[f"{k}-{'-'.join(q.values()) or 'default'}" for k, q in VIEWS])
def test_every_view_survives_extreme_weights(app, checkpoints, name, key, query):
    lang = "zh" if len(query) % 2 else "en"
    at = app(query={"lang": lang, "model": name, **query})
    at.session_state[MODELS_KEY] = {name: checkpoints[name]}  # as the Training page's "use" or upload leaves it
    s = stop(key)
    if s.is_default:
        at = clean(at.run())
    else:
        at = clean(at.run())
        at = clean(at.switch_page(s.script).run())
    title = translate("common.app_title" if key == "home" else f"{key}.title", lang)
    assert at.title[0].value == title
    assert at.session_state[models.MODEL_STATE_KEY] == name

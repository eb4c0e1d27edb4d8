"""Uploaded checkpoints that load but do not match what a page assumed (#33 item 6): every page is built
from the checkpoint's own tokenizers, and a file whose tokenizers contradict its task is refused at upload.

* ``word-poems``: the en-zh word tokenizers under a task this app does not know (the pages built a
  character tokenizer of an empty alphabet for it);
* ``tiny-en-zh``: a translation task whose word lists are not the shipped ones (the page built the
  task's tokenizers, whose ids run past the model's table; the grammar's words are missing, so the
  pronoun example has nothing to show and says so);
* word tokenizers under a character task, or a character tokenizer where a translation task reads
  words, are refused at upload with one sentence.
"""
from __future__ import annotations

import io

import pytest
import torch

from model.checkpoint import Checkpoint, CheckpointError, load_checkpoint, save_checkpoint
from model.config import TransformerConfig
from model.tasks import get_task
from model.tokenizer import CharTokenizer, WordTokenizer
from model.transformer import Transformer
from tests.app.apptest_helpers import clean
from ui import models
from ui.i18n import translate
from ui.tour import stop

VIEWS = [
    ("tokens", {}),
    *[("masks", {"masks_view": view}) for view in ("matrices", "printout", "effect", "row")],
    *[("attention", {"attention_view": view}) for view in ("overview", "heads", "inside", "stats", "ablation")],
    ("attention", {"attention_view": "overview", "attention_kind": "cross"}),
    ("decoding", {}), ("output_and_loss", {}),
]


def crafted(source, target, task: dict) -> bytes:
    torch.manual_seed(0)
    config = TransformerConfig(src_vocab_size=source.vocab_size, tgt_vocab_size=target.vocab_size, d_model=16,
                               n_heads=2, n_layers=1, d_ff=32, dropout=0.0, max_len=64)
    buffer = io.BytesIO()
    save_checkpoint(buffer, Transformer(config).eval(), source, task, target_tokenizer=target)
    return buffer.getvalue()


def en_zh_words_as(task: str) -> bytes:
    en_zh = get_task("en-zh")
    return crafted(en_zh.source_tokenizer(), en_zh.target_tokenizer(), {"name": task})


def tiny_en_zh() -> bytes:
    return crafted(WordTokenizer(["a", "b", "c"]), CharTokenizer("一二"), {"name": "en-zh"})


CRAFTED = {"word-poems": lambda: en_zh_words_as("poems"), "tiny-en-zh": tiny_en_zh}
CONTRADICTING = {  # (file, the side that contradicts its task)
    "words under copy": (lambda: en_zh_words_as("copy"), "source"),
    "characters under en-zh": (lambda: crafted(CharTokenizer("abc"), CharTokenizer("一二"), {"name": "en-zh"}), "source"),
    "characters for zh-en's English": (lambda: crafted(CharTokenizer("一二"), CharTokenizer("abc"), {"name": "zh-en"}),
                                       "target"),
}


@pytest.fixture(scope="module")
def loaded() -> dict[str, Checkpoint]:
    return {name: load_checkpoint(make(), map_location="cpu") for name, make in CRAFTED.items()}


@pytest.mark.parametrize("name", list(CRAFTED))
@pytest.mark.parametrize(("key", "query"), VIEWS, ids=[f"{k}-{'-'.join(q.values()) or 'default'}" for k, q in VIEWS])
def test_every_page_draws_a_crafted_model_that_loads(app, loaded, monkeypatch, name, key, query):
    monkeypatch.setattr(models, "is_session_model", lambda shown: shown in CRAFTED)  # labels outside the run
    at = app(query={"lang": "en", "model": name, **query})
    at.session_state[models._SESSION_MODELS_KEY] = dict(loaded)
    clean(at.run())
    at = clean(at.switch_page(stop(key).script).run())
    assert at.title[0].value == translate(f"{key}.title", "en")
    assert at.session_state[models.MODEL_STATE_KEY] == name
    assert not at.error, [e.value for e in at.error]


def test_the_pronoun_example_says_why_it_is_left_out_for_an_en_zh_model_without_the_grammars_words(app, loaded,
                                                                                                  monkeypatch):
    monkeypatch.setattr(models, "is_session_model", lambda shown: shown in CRAFTED)
    at = app(query={"lang": "zh", "model": "tiny-en-zh"})
    at.session_state[models._SESSION_MODELS_KEY] = dict(loaded)
    clean(at.run())
    at = clean(at.switch_page(stop("attention").script).run())
    captions = [str(c.value) for c in at.caption]
    said = [c for c in captions if c.startswith(translate("attention.translation.pronoun_unknown_words", "zh",
                                                          words="").split("（")[0])]
    assert len(said) == 1 and "it" in said[0] and "cat" in said[0]
    assert "because" in said[0] and "…" not in said[0]  # the words whole, none cut


@pytest.mark.parametrize("name", list(CONTRADICTING))
def test_a_checkpoint_whose_tokenizers_contradict_its_task_is_refused_with_one_sentence(name):
    make, side = CONTRADICTING[name]
    with pytest.raises(CheckpointError) as caught:
        load_checkpoint(make(), map_location="cpu")
    assert caught.value.reason == "task_mismatch" and f"on its {side} side" in str(caught.value)
    assert str(caught.value).count(". ") == 0 and str(caught.value).endswith(").")
    for lang in ("en", "zh"):
        assert translate(f"training.upload.error.{caught.value.reason}", lang)

"""The Training page's tokens setting (``?training_tokens=``): BPE pieces for a translation task, what they
change in a caption, a hostile value clamped; and a BPE-trained model used on the pages that read a model."""
from __future__ import annotations

import pytest

from model.checkpoint import Checkpoint, load_checkpoint
from model.training import TrainingConfig, TrainingRun
from tests.app.apptest_helpers import clean, open_script
from ui import models
from ui.i18n import translate
from ui.tour import stop

PAGE = "app_pages/training.py"
NAME = "bpe-en-zh"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_bpe_tokens_render_with_what_they_change(app, lang):
    at = open_script(app, PAGE, {"lang": lang, "training_task": "en-zh", "training_tokens": "bpe"})
    assert at.session_state["training.tokens"] == "bpe"
    radio = next(r for r in at.radio if r.key == "training.tokens")
    assert radio.value == "bpe"
    captions = [str(c.value) for c in at.caption]
    heading = {"en": "What BPE changes", "zh": "BPE 改变了什么"}[lang]
    caption = next(c for c in captions if heading in c)
    assert "catfish" in caption and "`▁cat`" in caption
    assert not at.error


def test_a_hostile_tokens_value_is_clamped(app):
    at = open_script(app, PAGE, {"lang": "en", "training_task": "en-zh", "training_tokens": "zzz"})
    assert at.session_state["training.tokens"] == "words"
    assert not at.error


def test_a_character_task_offers_no_tokens_and_trains_on_characters(app):
    at = open_script(app, PAGE, {"lang": "en", "training_task": "copy", "training_tokens": "bpe"})
    assert all(r.key != "training.tokens" for r in at.radio)
    assert not at.error  # the engine would refuse BPE for copy: the page reads its characters instead
    assert not at.button(key="training.start").disabled


@pytest.fixture(scope="module")
def bpe_checkpoint() -> Checkpoint:
    """A BPE en-zh model trained a few steps, through its checkpoint bytes as "use this model" leaves it."""
    config = TrainingConfig(task="en-zh", tokens="bpe", max_steps=3, batch_size=8, eval_every=1000, eval_size=4,
                            probe_every=1000)
    run = TrainingRun(config, device="cpu")
    run.train_until_done()
    return load_checkpoint(run.checkpoint_bytes(), map_location="cpu")


@pytest.fixture
def bpe_model(monkeypatch) -> None:
    monkeypatch.setattr(models, "is_session_model", lambda name: name == NAME)


BPE_VIEWS = [  # (page, URL query): every page that reads the model, and the views that read its tokens
    ("tokens", {}), ("masks", {}), ("positional_encoding", {}), ("attention", {}),
    ("attention", {"attention_kind": "cross"}), ("attention", {"attention_view": "inside"}),
    ("feed_forward", {}), ("residual_stream", {}), ("layer_norm", {}), ("decoding", {}),
    ("decoding", {"decoding_strategy": "beam"}), ("output_and_loss", {}), ("bleu", {}),
]


@pytest.mark.parametrize(("key", "query"), BPE_VIEWS, ids=[f"{k}-{'-'.join(q.values()) or 'default'}" for k, q in BPE_VIEWS])
def test_pages_read_a_bpe_trained_model(app, bpe_checkpoint, bpe_model, key, query):
    at = app(query={"lang": "en", "model": NAME, **query})
    at.session_state[models._SESSION_MODELS_KEY] = {NAME: bpe_checkpoint}  # what register_session_model leaves
    clean(at.run())
    at = clean(at.switch_page(stop(key).script).run())
    assert at.session_state[models.MODEL_STATE_KEY] == NAME
    assert at.title[0].value == translate(f"{key}.title", "en")
    if key == "attention" and not query:  # the pronoun pair reads whole words: left out, and it says why
        assert translate("attention.translation.pronoun_needs_words", "en") in [c.value for c in at.caption]


def test_without_positions_a_bpe_model_is_blind_to_word_order_its_pieces_moving_with_their_words(bpe_checkpoint):
    """The Positional encoding page's shuffle on pieces: a word's pieces move as a block, so the attention of the
    shuffled sentence put back in order is the original's exactly when nothing tells the model the order."""
    from explain.positional import order_blindness

    blind = order_blindness(bpe_checkpoint, "the catfish chased the dog", seed=0, use_pe=False)
    assert sorted(blind.tokens) == sorted(blind.shuffled_tokens) and blind.tokens != blind.shuffled_tokens
    assert len(blind.tokens) > len("the catfish chased the dog".split())  # an unseen word fell into pieces
    assert blind.verdict == "blind"
    assert order_blindness(bpe_checkpoint, "the catfish chased the dog", seed=0, use_pe=True).verdict == "sees_order"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_text_box_says_a_bpe_model_reads_pieces(app, bpe_checkpoint, bpe_model, lang):
    at = app(query={"lang": lang, "model": NAME})
    at.session_state[models._SESSION_MODELS_KEY] = {NAME: bpe_checkpoint}
    clean(at.run())
    at = clean(at.switch_page(stop("tokens").script).run())
    count = len(bpe_checkpoint.tokenizer.known_units)
    assert translate("common.vocabulary.pieces_note", lang, count=count) in [c.value for c in at.caption]
    assert translate("common.vocabulary.list_pieces", lang, count=count) in [e.label for e in at.expander]

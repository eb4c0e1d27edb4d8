"""The BPE tokenizer of the translation tasks (``model.bpe_tokenizer``), the tasks read in its pieces
(``model.tasks.bpe_task``), a run that trains on them, its checkpoint, and what the Training page measures
about them (``explain.tasks.bpe_change``)."""
from __future__ import annotations

import io
import random

import pytest
import torch

from explain.tasks import bpe_change
from model.bpe_tokenizer import MAX_MERGES, WORD_START, BpeTokenizer, normalize
from model.checkpoint import CheckpointError, load_checkpoint
from model.config import InvalidConfig
from model.tasks import BPE_CORPUS_PAIRS, BPE_MERGES, bpe_task, get_task
from model.tokenizer import BOS_ID, EOS_ID, PAD_ID, SPECIAL_TOKENS, UNK_ID, tokenizer_from_dict
from model.training import TrainingConfig, TrainingRun, greedy_batch

ENGLISH = ("the cat ate two apples in the garden yesterday .", "did you see the dog ?",
           "the happiest dogs ate the catfish .")  # happiest, catfish: words the grammar never writes
CHINESE = ("猫昨天在花园里吃了两个苹果。", "你看见了狗吗？", "小猫明天早上在公园里喝牛奶。")


@pytest.fixture(scope="module")
def en_zh() -> object:
    return bpe_task("en-zh", 0)


def test_the_task_reads_both_sides_in_learnt_pieces(en_zh):
    source, target = en_zh.source_tokenizer(), en_zh.target_tokenizer()
    assert isinstance(source, BpeTokenizer) and isinstance(target, BpeTokenizer)
    assert len(source.merges) == len(target.merges) == BPE_MERGES
    # every character the side's words or characters use, and nothing else but the word mark
    assert set(source.alphabet) == set("".join(get_task("en-zh").source_tokenizer().known_units)) | {WORD_START}
    assert set(target.alphabet) == set(get_task("en-zh").target_tokenizer().known_units) | {WORD_START}
    assert source.vocab_size == len(SPECIAL_TOKENS) + len(source.alphabet) + BPE_MERGES


def test_specials_keep_their_ids(en_zh):
    for tokenizer in (en_zh.source_tokenizer(), en_zh.target_tokenizer()):
        assert tokenizer.token_strings([PAD_ID, BOS_ID, EOS_ID, UNK_ID]) == list(SPECIAL_TOKENS)
        assert (tokenizer.pad_id, tokenizer.bos_id, tokenizer.eos_id, tokenizer.unk_id) == (0, 1, 2, 3)
        ids = tokenizer.encode(ENGLISH[0] if tokenizer is en_zh.source_tokenizer() else CHINESE[0],
                               add_bos=True, add_eos=True)
        assert ids[0] == BOS_ID and ids[-1] == EOS_ID and min(ids[1:-1]) >= len(SPECIAL_TOKENS)


@pytest.mark.parametrize("name", ["en-zh", "zh-en"])
def test_decode_gives_back_every_sentence_of_the_task(name):
    task = bpe_task(name, 0)
    for source, target in get_task(name).sample_pairs(random.Random(7), 300):
        for tokenizer, text in ((task.source_tokenizer(), source), (task.target_tokenizer(), target)):
            ids = tokenizer.encode(text)
            assert UNK_ID not in ids
            assert tokenizer.decode(ids) == text
            assert len(ids) <= (task.max_src_len if text == source else task.max_tgt_len)


def test_an_unseen_word_falls_into_pieces_not_unk(en_zh):
    english = en_zh.source_tokenizer()
    encoding = english.encode_with_report("the catfish .")
    pieces = english.token_strings(encoding.ids)
    assert encoding.unknown == () and UNK_ID not in encoding.ids
    assert "".join(pieces).replace(WORD_START, " ").strip() == "the catfish ."
    assert len(pieces) > 3  # catfish is more than one piece
    words = get_task("en-zh").source_tokenizer()
    assert UNK_ID in words.encode("the catfish .")  # where the word tokenizer has <unk>


def test_an_unknown_character_is_unk_with_its_place(en_zh):
    english = en_zh.source_tokenizer()
    encoding = english.encode_with_report("The café")
    assert [u.char for u in encoding.unknown] == ["é"]
    assert encoding.ids[encoding.unknown[0].position] == UNK_ID
    assert english.decode(encoding.ids) == "the caf\ufffd"
    assert english.encode("") == [] and english.encode("  ") == []
    assert english.encode_with_report("a\ud800b").unknown[0].char == "\ufffd"  # a lone surrogate never raises
    assert normalize("The Cat▁ATE.") == "the cat ate ."


def test_round_trip_gives_identical_ids(en_zh):
    for tokenizer, sentences in ((en_zh.source_tokenizer(), ENGLISH), (en_zh.target_tokenizer(), CHINESE)):
        again = tokenizer_from_dict(tokenizer.to_dict())
        assert isinstance(again, BpeTokenizer) and again == tokenizer
        for sentence in sentences:
            assert again.encode(sentence) == tokenizer.encode(sentence)
            assert again.token_strings(again.encode(sentence)) == tokenizer.token_strings(tokenizer.encode(sentence))


def test_the_same_seed_learns_the_same_merges_and_another_seed_others():
    first = bpe_task("zh-en", 5)
    bpe_task.cache_clear()
    second = bpe_task("zh-en", 5)
    assert first is not second
    assert first.source_tokenizer().merges == second.source_tokenizer().merges
    assert first.target_tokenizer().merges == second.target_tokenizer().merges
    assert bpe_task("zh-en", 6).source_tokenizer().merges != first.source_tokenizer().merges


@pytest.mark.parametrize("bad", [
    {"alphabet": "ab▁"}, {"alphabet": ["ab", "▁"]}, {"alphabet": ["a", 1, "▁"]}, {"alphabet": ["a", "b"]},
    {"merges": [["a", "b"]] * (MAX_MERGES + 1)}, {"merges": [["a", 5]]}, {"merges": [["a"]]},
    {"merges": [["a", "zz"]]}, {"word_start": "_"}, {"merges": "ab"},
], ids=lambda bad: "-".join(bad))
def test_a_hostile_description_is_refused(bad):
    good = {"kind": "bpe", "alphabet": ["a", "b", WORD_START], "merges": [["a", "b"]], "word_start": WORD_START}
    BpeTokenizer.from_dict(good)
    with pytest.raises(ValueError):
        BpeTokenizer.from_dict({**good, **bad})


# ------------------------------------------------------------------ a run, its checkpoint


@pytest.fixture(scope="module")
def trained() -> TrainingRun:
    config = TrainingConfig(task="en-zh", tokens="bpe", preset="tiny", max_steps=4, batch_size=8, eval_every=1000,
                            eval_size=4, probe_every=1000, dropout=0.0)
    run = TrainingRun(config, device="cpu")
    run.train_until_done()
    return run


def test_a_short_run_checkpoints_its_tokenizers_and_answers_the_same_after_loading(trained):
    assert trained.snapshot().state == "finished" and trained.snapshot().step == 4
    assert isinstance(trained.tokenizer, BpeTokenizer)
    assert trained.probe_src_tokens[:2] == ["▁the", "▁cat"]  # the attention probe shows pieces
    loaded = load_checkpoint(trained.checkpoint_bytes(), map_location="cpu")
    assert loaded.tokenizer == trained.tokenizer and loaded.target_tokenizer == trained.target_tokenizer
    for sentence in ENGLISH:
        assert loaded.tokenizer.encode(sentence) == trained.tokenizer.encode(sentence)
    src, _ = loaded.tokenizer.encode_batch(list(ENGLISH))
    out = greedy_batch(loaded.model, src, trained.task.max_tgt_len + 1, trained.options)
    assert [loaded.target_tokenizer.decode(row) for row in out.tolist()] == trained.predict(list(ENGLISH))
    assert loaded.history["config"]["tokens"] == "bpe"


def test_the_same_config_and_seed_give_the_same_loss_history(trained):
    again = TrainingRun(trained.config, device="cpu")
    again.train_until_done()
    assert again.snapshot().losses == trained.snapshot().losses


def _payload(run: TrainingRun) -> dict:
    return torch.load(io.BytesIO(run.checkpoint_bytes()), weights_only=True)


def _saved(payload: dict) -> bytes:
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    return buffer.getvalue()


@pytest.mark.parametrize("change", [
    lambda t: t.update(merges=[["a", "b"]] * 3000),  # huge
    lambda t: t.update(merges=[[1, 2]]),  # not strings
    lambda t: t.update(alphabet=[["x"]] + t["alphabet"]),  # not characters
    lambda t: t.update(word_start="_"),
    lambda t: t.update(merges=[["zz", "q"]] + t["merges"]),  # pieces the vocabulary does not have
    lambda t: t.update(alphabet="abc"),
], ids=["huge", "non_string", "nested", "word_start", "unknown_piece", "alphabet_string"])
def test_a_hostile_checkpoint_tokenizer_is_refused(trained, change):
    payload = _payload(trained)
    change(payload["tokenizer"])
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(_saved(payload), map_location="cpu")
    assert info.value.reason == "bad_tokenizer"


def test_bpe_is_refused_for_a_character_task_and_an_unknown_choice():
    with pytest.raises(InvalidConfig) as info:
        TrainingConfig(task="copy", tokens="bpe")
    assert info.value.problem.code == "tokens_task"
    with pytest.raises(InvalidConfig) as info:
        TrainingConfig(task="en-zh", tokens="zzz")
    assert info.value.problem.code == "tokens"


# ------------------------------------------------------------------ what the page measures


def test_bpe_change_counts_vocabularies_and_lengths_on_the_learnt_pairs():
    change = bpe_change("zh-en", 0)
    words, pieces = get_task("zh-en"), bpe_task("zh-en", 0)
    pairs = words.sample_pairs(random.Random(0), BPE_CORPUS_PAIRS)
    assert (change.source.language, change.target.language) == ("zh", "en")
    assert change.source.vocab_own == 4 + len(words.source_tokenizer().known_units)
    assert change.target.vocab_bpe == pieces.target_tokenizer().vocab_size
    assert change.source.mean_own == pytest.approx(sum(len(s) for s, _ in pairs) / len(pairs))  # characters
    assert change.target.mean_own == pytest.approx(sum(len(t.split()) for _, t in pairs) / len(pairs))  # words
    english = pieces.target_tokenizer()
    assert change.target.mean_bpe == pytest.approx(sum(len(english.encode(t)) for _, t in pairs) / len(pairs))
    assert change.source.mean_bpe < change.source.mean_own and change.target.mean_bpe > change.target.mean_own
    assert "".join(change.unseen_pieces) == WORD_START + change.unseen_word and len(change.unseen_pieces) > 1

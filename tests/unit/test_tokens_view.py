"""ui.tokens_view: the batch as the model builds it, escaped tables, the embedding steps."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from model.config import TransformerConfig
from model.tasks import DEFAULT_ALPHABET, batch_from_pairs
from model.tokenizer import CharTokenizer
from model.transformer import Transformer
from ui import tokens_view as tv

SENTENCES = ["hello world", "attention is all you need", "hi!"]


class FakeCheckpoint:
    def __init__(self) -> None:
        torch.manual_seed(0)
        self.tokenizer = CharTokenizer(DEFAULT_ALPHABET)
        vocab = self.tokenizer.vocab_size
        self.model = Transformer(TransformerConfig(src_vocab_size=vocab, tgt_vocab_size=vocab, d_model=16,
                                                   n_heads=2, n_layers=1, d_ff=32, max_len=64)).eval()
        self.task = {"name": "copy"}


@pytest.fixture(scope="module")
def tokenizer() -> CharTokenizer:
    return CharTokenizer(DEFAULT_ALPHABET)


def test_batch_is_the_training_batch(tokenizer):
    batch = tv.sentence_batch(SENTENCES, tokenizer, "reverse")
    reference = batch_from_pairs([(s, s[::-1]) for s in SENTENCES], tokenizer)
    assert [r.ids for r in batch.source] == reference.src.tolist()
    assert [r.ids for r in batch.decoder_in] == reference.tgt_in.tolist()
    assert [r.ids for r in batch.labels] == reference.tgt_out.tolist()
    assert batch.targets == [s[::-1] for s in SENTENCES]


def test_rows_know_their_kinds(tokenizer):
    batch = tv.sentence_batch(["ab", "abcd", "a你"], tokenizer, "copy")
    assert batch.source[0].kinds == ["char", "char", "pad", "pad"]
    assert batch.source[0].length == 2
    assert batch.decoder_in[1].kinds[0] == "special" and batch.decoder_in[1].tokens[0] == "<bos>"
    assert batch.labels[0].tokens[:3] == ["a", "b", "<eos>"]
    assert batch.source[2].kinds[:2] == ["char", "unk"]
    assert batch.source[2].tokens[1] == "<unk>"


def test_unknown_task_falls_back_to_copy_and_dates_may_have_no_answer(tokenizer):
    assert tv.task_target("no such task", "abc") == "abc"
    assert tv.task_target(None, "abc") == "abc"
    batch = tv.sentence_batch(["hello"], tokenizer, "dates")
    assert batch.targets == [None]
    assert batch.decoder_in[0].tokens == ["<bos>"] and batch.labels[0].tokens == ["<eos>"]


def test_side_frames_shape_and_visible_space(tokenizer):
    batch = tv.sentence_batch(SENTENCES, tokenizer, "copy")
    tokens, ids, kinds = tv.side_frames(batch.source, ["s1", "s2", "s3"])
    assert tokens.shape == ids.shape == kinds.shape == (3, 25)
    assert tokens.iloc[0, 5] == tv.VISIBLE_SPACE
    assert (kinds == "pad").sum() == (25 - 11) + 0 + (25 - 3)
    assert int(ids.iloc[2, 3]) == 0


def test_table_html_escapes_and_marks_cells(tokenizer):
    batch = tv.sentence_batch(["<b>x</b>", "ab"], tokenizer, "copy")
    tokens, _, kinds = tv.side_frames(batch.source, ["<i>row</i>", "row 2"])
    html = tv.table_html(tokens, kinds, "t1")
    assert "<b>x" not in html and "<i>row" not in html
    assert "&lt;unk&gt;" in html and "&lt;pad&gt;" in html and "&lt;i&gt;row&lt;/i&gt;" in html
    assert html.count(" pad\"") == (kinds == "pad").sum()
    assert html.count(" unk\"") == (kinds == "unk").sum()


def test_sentence_frame_shows_the_shift(tokenizer):
    batch = tv.sentence_batch(["abc"], tokenizer, "reverse")
    labels = {k: k for k in ("chars", "source", "source_ids", "decoder_in", "decoder_in_ids", "labels", "labels_ids")}
    frame, kinds = tv.sentence_frame(batch, 0, labels)
    assert list(frame.loc["chars"]) == ["a", "b", "c", ""]
    assert list(frame.loc["decoder_in"]) == ["<bos>", "c", "b", "a"]
    assert list(frame.loc["labels"]) == ["c", "b", "a", "<eos>"]
    assert frame.loc["source_ids"].iloc[0] == str(tokenizer.encode("a")[0])
    assert kinds.shape == frame.shape


def test_embedding_stages_are_what_the_model_feeds_its_encoder():
    ckpt = FakeCheckpoint()
    ids = ckpt.tokenizer.encode("hello") + [0, 0]
    stages = tv.embedding_stages(ckpt, ids)
    assert stages.tokens[-1] == "<pad>" and stages.scale == pytest.approx(4.0)
    np.testing.assert_allclose(stages.scaled, stages.lookup * 4.0)
    with torch.inference_mode():
        reference = ckpt.model.embed(torch.tensor([ids]), "src")[0].double().numpy()
    np.testing.assert_allclose(stages.total, reference, atol=1e-5)
    np.testing.assert_array_equal(stages.lookup[2], stages.lookup[3])  # "l" twice: the same row
    assert stages.matrix.shape == (ckpt.tokenizer.vocab_size, 16)


def test_stage_figures_share_one_colour_scale():
    ckpt = FakeCheckpoint()
    ids = tuple(ckpt.tokenizer.encode("hi"))
    figures = tv.stage_figures(ckpt, ids, ("a", "b", "c", "d"), ("x", "y", "%{z}"))
    ranges = {(f.to_dict()["data"][0]["zmin"], f.to_dict()["data"][0]["zmax"]) for f in figures}
    assert len(ranges) == 1


def test_markdown_safe_escapes_only_text():
    assert tv.markdown_safe({"chars": "* _ <b>", "limit": 48}) == {"chars": r"\* \_ \<b\>", "limit": 48}


def test_code_spans_become_code_and_everything_else_is_escaped():
    from ui.tokens_view import code_spans_html

    assert code_spans_html("no `<bos>`/`<eos>` here & <b>x</b>") == (
        "no <code>&lt;bos&gt;</code>/<code>&lt;eos&gt;</code> here &amp; &lt;b&gt;x&lt;/b&gt;")

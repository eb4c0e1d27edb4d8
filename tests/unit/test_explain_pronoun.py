"""explain.pronoun on the shipped en-zh model: which head tells what "it" is in the tired / wide pair."""
from __future__ import annotations

import pytest

from explain.attention import attention_view
from explain.pronoun import KINDS, PAIR, SENTENCES, pronoun_frame, pronoun_heads
from model.checkpoint import load_checkpoint
from model.translation import english_to_chinese
from ui.models import checkpoint_path

pytestmark = pytest.mark.skipif(not checkpoint_path("en-zh").exists(), reason="no shipped en-zh checkpoint")


@pytest.fixture(scope="module")
def result():
    return pronoun_heads(load_checkpoint(checkpoint_path("en-zh")))


def test_the_pair_is_the_grammars_own_wording_and_referents(result):
    tired, wide = result.cases
    assert (tired.sentence, wide.sentence) == SENTENCES
    assert SENTENCES == ("the cat did not cross the road because it was too tired .",
                         "the cat did not cross the road because it was too wide .")
    assert (tired.referent, tired.other, tired.referent_zh) == ("cat", "road", "猫")
    assert (wide.referent, wide.other, wide.referent_zh) == ("road", "cat", "马路")
    assert [c.expected for c in result.cases] == [english_to_chinese(s) for s in SENTENCES]
    assert all(c.correct for c in result.cases), "the shipped model translates both sentences"


def test_every_head_is_read_and_the_best_is_the_strongest_in_both_sentences(result):
    for kind in KINDS:
        readings = result.every[kind]
        assert len(readings) == 3 * 4  # the shipped model: 3 layers × 4 heads
        best = result.best[kind]
        assert best.score == min(best.right)
        rivals = [r for r in readings if r.resolves == best.resolves]
        assert best.score == max(r.score for r in rivals)
        assert not any(r.resolves for r in readings) or best.resolves


def test_the_found_cross_head_attends_to_the_right_referent_in_both_sentences(result):
    """Recomputed from the attention maps, not taken from the function: at the step that writes the
    referent, the found head's largest weight among the two nouns is on the right one, in both sentences."""
    ckpt = load_checkpoint(checkpoint_path("en-zh"))
    best = result.best["cross"]
    assert best.resolves
    for case in result.cases:
        view = attention_view(ckpt, case.sentence, case.expected)
        step = list(view.tgt_tokens).index("为")  # the row whose input is 为 writes the referent
        row = view.cross[best.layer - 1, best.head - 1, step]
        src = list(view.src_tokens)
        assert row[src.index(case.referent)] > row[src.index(case.other)]
        assert row[src.index(case.referent)] == pytest.approx(best.right[result.cases.index(case)], abs=1e-6)


def test_the_encoder_reading_is_reported_as_it_is(result):
    """The shipped model's encoder: from "it", no head tells cat from road in both sentences (the weights
    hardly move between tired and wide); the page says so rather than naming a head."""
    encoder = result.best["encoder"]
    assert result.resolved_by("encoder") == encoder.resolves
    assert result.resolved_by("encoder") == any(r.resolves for r in result.every["encoder"])


def test_the_csv_has_a_row_per_head(result):
    frame = pronoun_frame(result)
    assert len(frame) == 2 * 12 and set(frame["kind"]) == set(KINDS)
    assert frame["resolves"].sum() == sum(r.resolves for kind in KINDS for r in result.every[kind])


def test_pair_clauses_name_it_as_the_grammar_does():
    assert [c.refers_to_animal for c in PAIR] == [True, False]

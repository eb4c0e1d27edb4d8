"""explain.decoding: traces of the three strategies and teacher forcing as plain data, and their tables."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from explain import decoding as dec
from figures.labels import display_token
from model import decoding
from model.checkpoint import load_checkpoint, pretrained_path
from model.config import TransformerConfig
from model.tokenizer import CharTokenizer
from model.transformer import Transformer

COLUMNS = {name: name for name in dec.FORCING_COLUMNS}
BEAM_COLUMNS = {name: name for name in dec.BEAM_COLUMNS}


class Ckpt:
    def __init__(self, seed: int = 0) -> None:
        torch.manual_seed(seed)
        self.tokenizer = CharTokenizer("abcdef ")
        v = self.tokenizer.vocab_size
        self.model = Transformer(TransformerConfig(v, v, d_model=16, n_heads=2, n_layers=2, d_ff=32, dropout=0.0,
                                                   max_len=20)).eval()
        self.task = {"name": "copy"}


@pytest.fixture(scope="module")
def ckpt() -> Ckpt:
    return Ckpt()


def test_small_helpers():
    assert dec.parse_top_k("all") is None and dec.parse_top_k("5") == 5
    assert all(choice == "all" or dec.parse_top_k(choice) == int(choice) for choice in dec.TOP_K_CHOICES)
    assert dec.first_difference("abc", "abc") is None
    assert dec.first_difference("abx", "abc") == 2
    assert dec.first_difference("ab", "abc") == 2


def test_decode_limit_fits_the_model(ckpt):
    assert dec.decode_limit(ckpt, "abc") == 3 + 16
    assert dec.decode_limit(ckpt, "a" * 30) == ckpt.model.config.max_len


@pytest.mark.parametrize("strategy", dec.STRATEGIES)
def test_traces_are_plain_data_with_one_growing_prefix_per_step(ckpt, strategy):
    trace = dec.decode(ckpt, "face", strategy, beam_size=2 if strategy == "beam" else 1)
    assert trace.strategy == strategy and trace.src_tokens == list("face")
    assert 1 <= len(trace.steps) <= trace.max_len
    for number, step in enumerate(trace.steps, start=1):
        assert step.prefix[0] == dec.BOS and len(step.prefix) == number
        assert isinstance(step.decoder_attention, np.ndarray) and step.decoder_attention.dtype == np.float32
        assert step.decoder_attention.shape == (2, 2, number, number)
        assert step.cross_attention.shape == (2, 2, 4)
        assert np.allclose(step.decoder_attention.sum(axis=-1), 1.0, atol=1e-5)
        assert step.top_probs == sorted(step.top_probs, reverse=True)  # a chosen token listed last is the least likely
        appended = step.top_tokens.index(step.chosen) == dec.TRACE_K
        assert len(step.top_tokens) == len(step.top_probs) == dec.TRACE_K + appended
        assert step.chosen in step.top_tokens
        if number > 1:
            assert step.prefix[:-1] == trace.steps[number - 2].prefix
    assert trace.finished == (trace.steps[-1].chosen == dec.EOS)
    assert dec.EOS not in [s.chosen for s in trace.steps[:-1]]
    ordinary = [s.chosen for s in trace.steps if len(s.chosen) == 1]  # an untrained model also writes <bos>, <unk>
    assert "".join(ordinary) == trace.output.replace("\ufffd", "")
    assert trace.score == pytest.approx(sum(np.log(s.chosen_prob) for s in trace.steps), abs=1e-4)
    assert dec.generated_tokens(trace) == [s.chosen for s in trace.steps]
    assert dec.generated_tokens(trace, 1) == [trace.steps[0].chosen]


def test_beam_of_one_is_greedy_and_sampling_repeats_with_its_seed(ckpt):
    greedy = dec.decode(ckpt, "bead", "greedy")
    assert dec.decode(ckpt, "bead", "beam", beam_size=1).output == greedy.output
    first = dec.decode(ckpt, "bead", "sample", temperature=1.5, top_k=None, seed=3)
    again = dec.decode(ckpt, "bead", "sample", temperature=1.5, top_k=None, seed=3)
    assert first.output == again.output
    assert dec.decode(ckpt, "bead", "sample", temperature=0.0, seed=9).output == greedy.output
    with pytest.raises(ValueError):
        dec.decode(ckpt, "bead", "nucleus")


def test_beams_table(ckpt):
    trace = dec.decode(ckpt, "cafe", "beam", beam_size=3)
    table = dec.beams_table(trace, BEAM_COLUMNS)
    assert list(table.columns) == list(BEAM_COLUMNS)
    assert table["step"].max() == len(trace.beams)
    assert (table["score"] <= 0).all()
    one = dec.beams_table(trace, BEAM_COLUMNS, step=1)
    assert set(one["step"]) == {1} and list(one["rank"]) == list(range(1, len(one) + 1))
    shown = dec.beams_table(trace, {name: name.upper() for name in dec.BEAM_COLUMNS})
    assert list(shown.columns) == [name.upper() for name in dec.BEAM_COLUMNS]


def test_teacher_forcing_against_free_running(ckpt):
    tf = dec.teacher_forcing(ckpt, "a cab", "a cab")
    assert tf.input_tokens == ["<bos>", "a", " ", "c", "a", "b"]
    assert tf.target_tokens == ["a", " ", "c", "a", "b", "<eos>"]
    assert tf.n_correct == sum(p == t for p, t in zip(tf.predicted_tokens, tf.target_tokens))
    free = dec.decode(ckpt, "a cab", "greedy")
    table = dec.forcing_table(tf, free, COLUMNS, show=display_token)
    assert len(table) == 6
    assert table["reads_true"].tolist()[:3] == ["<bos>", "a", "␣"]
    assert set(table["ok"]) <= {"✓", "✗"}
    own = dec.generated_tokens(free)
    assert table["writes_own"].tolist()[: len(own)] == [display_token(t) for t in own][:6]
    raw = dec.forcing_table(tf, free, COLUMNS)
    assert raw["reads_true"].tolist()[:3] == ["<bos>", "a", " "], "tokens as they are unless told how to show them"


def test_a_sampled_token_outside_the_most_likely_is_listed_last_with_both_probabilities(ckpt):
    """At a high temperature sampling draws tokens the model finds unlikely; the step still lists the
    chosen one (last), with its probability under the model and in the distribution sampled from."""
    steps = [step for seed in range(10)
             for step in dec.decode(ckpt, "abcabc", "sample", temperature=2.0, seed=seed).steps]
    outside = [step for step in steps if step.top_tokens.index(step.chosen) >= dec.TRACE_K]
    assert outside, "a temperature of 2 should draw at least one unlikely token"
    for step in steps:
        assert step.chosen in step.top_tokens and len(step.top_probs) == len(step.sampling_probs) == len(step.top_tokens)
    for step in outside:
        assert len(step.top_tokens) == dec.TRACE_K + 1 and step.top_tokens[-1] == step.chosen
        assert step.top_probs[-1] == pytest.approx(step.chosen_prob)
        # P_τ(a) / P_τ(b) = (P(a) / P(b))^(1/τ) for any two tokens of the distribution sampled from
        assert step.sampling_probs[-1] / step.sampling_probs[0] == pytest.approx(
            (step.top_probs[-1] / step.top_probs[0]) ** 0.5, rel=1e-4)


def test_cache_savings_are_read_off_the_real_cached_greedy_decode(ckpt):
    savings = dec.cache_savings(ckpt, "face")
    greedy = dec.decode(ckpt, "face", "greedy")
    assert savings.tokens == dec.generated_tokens(greedy)  # the same answer as the page's greedy decode
    L, S = ckpt.model.config.n_layers, savings.source_len
    assert (L, S) == (2, 4)
    for t, (computed, reused, without) in enumerate(zip(savings.computed, savings.reused, savings.without), start=1):
        # per layer: the newest position's pair (+ the memory's S pairs at the first step); the rest is reused
        assert computed == L * (1 + (S if t == 1 else 0))
        assert reused == L * ((t - 1) + (S if t > 1 else 0))
        assert without == computed + reused == L * (t + S)
    assert savings.total_computed < savings.total_without or len(savings.tokens) == 1
    table = dec.cache_table(savings, {name: name.upper() for name in dec.CACHE_COLUMNS}, show=display_token)
    assert list(table.columns) == [name.upper() for name in dec.CACHE_COLUMNS]
    assert table["STEP"].tolist() == list(range(1, len(savings.tokens) + 1))
    assert table["COMPUTED"].sum() == savings.total_computed


# ------------------------------------------------------------------ all at once vs one at a time


@pytest.fixture(scope="module")
def shipped_copy():
    return load_checkpoint(pretrained_path("copy"), map_location="cpu")


def test_token_counts_name_what_is_written_too_often_and_what_is_missing():
    too_often, missing = dec.count_differences(["a", "a", "b", dec.EOS, "c"], ["a", "b", "c", dec.EOS])
    assert too_often == [dec.TokenCount("a", 2, 1)], "after its <eos> the answer is not read"
    assert missing == [dec.TokenCount("c", 0, 1)]
    too_often, missing = dec.count_differences(["x", "x", "x"], ["x", "y", dec.EOS])
    assert too_often == [dec.TokenCount("x", 3, 1)]
    assert missing == [dec.TokenCount("y", 0, 1), dec.TokenCount(dec.EOS, 0, 1)]
    assert dec.count_differences(["a", dec.EOS], ["a", dec.EOS]) == ([], [])


def test_all_at_once_is_one_pass_of_the_model_over_bos_and_placeholders(shipped_copy):
    """The shipped copy model on "hello world": one pass over <bos> + 11 × <unk>, checked against the model's
    own forward (its fast path, the look-ahead mask on), and beside the greedy decode of the same source."""
    ckpt, source = shipped_copy, "hello world"
    shown = dec.all_at_once(ckpt, source, "unk")
    greedy = dec.decode(ckpt, source, "greedy")
    n = len(greedy.steps)
    assert shown.greedy == dec.generated_tokens(greedy) == list(source) + [dec.EOS]
    assert shown.greedy_output == greedy.output == source
    assert shown.greedy_probs == pytest.approx([s.chosen_prob for s in greedy.steps], abs=1e-5)
    assert shown.placeholder == "<unk>" and shown.inputs == ["<bos>"] + ["<unk>"] * (n - 1)
    assert shown.passes == (1, n) == (1, 12)
    tgt = ckpt.tokenizer
    ids = [tgt.bos_id] + [tgt.unk_id] * (n - 1)
    assert tgt.pad_id not in ids, "no placeholder is hidden by the padding mask"
    with torch.inference_mode():
        logits = ckpt.model(torch.tensor([tgt.encode(source)]), torch.tensor([ids]), need_weights=False).logits[0]
    probs = logits.float().softmax(-1)
    assert shown.parallel == tgt.token_strings(probs.argmax(-1).tolist())
    assert shown.parallel_probs == pytest.approx(probs.max(-1).values.tolist(), abs=1e-4)
    # Position 0 reads only <bos> in both (the look-ahead mask): the same token with the same probability.
    assert shown.parallel[0] == shown.greedy[0] == "h"
    assert shown.parallel_probs[0] == pytest.approx(shown.greedy_probs[0], abs=1e-5)
    # What the shipped model writes all at once: repeats, and no <eos>.
    assert "".join(shown.parallel) == "hlo  wworrll"
    assert shown.differs == [a != b for a, b in zip("hlo  wworrll", list(source) + [dec.EOS])]
    assert not shown.parallel_finished and shown.parallel_output == "hlo  wworrll"
    assert shown.too_often == [dec.TokenCount(" ", 2, 1), dec.TokenCount("w", 2, 1), dec.TokenCount("r", 2, 1)]
    assert shown.missing == [dec.TokenCount("e", 0, 1), dec.TokenCount("d", 0, 1), dec.TokenCount(dec.EOS, 0, 1)]


def test_fed_its_own_answer_one_pass_gives_every_greedy_token(shipped_copy):
    """Why the placeholders fail: with the right prefix (teacher forcing on greedy's own answer) the same
    single pass writes every greedy token; with placeholders each position guesses what came before it."""
    ckpt, source = shipped_copy, "hello world"
    shown = dec.all_at_once(ckpt, source)
    forced = dec.teacher_forcing(ckpt, source, shown.greedy_output)
    assert forced.predicted_tokens == shown.greedy and forced.n_correct == len(shown.greedy)


def test_copies_of_bos_as_placeholders_and_a_bad_placeholder(shipped_copy):
    shown = dec.all_at_once(shipped_copy, "hello world", "bos")
    assert shown.placeholder == "<bos>" and set(shown.inputs) == {"<bos>"} and len(shown.inputs) == 12
    assert shown.parallel == ["h"] * 12, "every position reads the same tokens: the first one's answer, again"
    assert shown.too_often == [dec.TokenCount("h", 12, 1)]
    assert [c.token for c in shown.missing] == ["e", "l", "o", " ", "w", "r", "d", dec.EOS]
    with pytest.raises(ValueError):
        dec.all_at_once(shipped_copy, "hello world", "pad")
    table = shown.table({name: name.upper() for name in dec.PARALLEL_COLUMNS}, show=display_token)
    assert list(table.columns) == [name.upper() for name in dec.PARALLEL_COLUMNS]
    assert table["POSITION"].tolist() == list(range(12))
    assert table["GREEDY"].tolist() == [display_token(c) for c in "hello world"] + ["<eos>"]
    assert table["SAME"].tolist() == ["✓"] + ["✗"] * 11


# ------------------------------------------------------------------ beam search as a tree


@pytest.fixture(scope="module")
def shipped_sort():
    return load_checkpoint(pretrained_path("sort"), map_location="cpu")


def labels(tree: dec.BeamTree, indices) -> list[str]:
    return [tree.nodes[i].label for i in indices]


def test_the_tree_of_a_small_beam_run_on_the_shipped_sort_model(shipped_sort):
    """sort on "zyx" with a beam of 3 (α = 0): every hypothesis, its status, the one it extends; each edge's
    log-probability checked against one teacher-forced pass over the parent's tokens."""
    ckpt = shipped_sort
    trace = dec.decode(ckpt, "zyx", "beam", beam_size=3)
    tree = dec.beam_tree(trace)
    text = ["".join(n.tokens) + ("$" if n.status == "finished" else "") for n in tree.nodes]  # $ = <eos>
    shown = [(n.step, n.rank, written, n.status) for n, written in zip(tree.nodes, text)]
    assert shown == [
        (0, 1, "", "kept"),
        (1, 1, "x", "kept"), (1, 2, "y", "kept"), (1, 3, "'", "kept"),
        (2, 1, "xy", "kept"), (2, 2, "yz", "kept"), (2, 3, "'x", "pruned"),
        (3, 1, "xyz", "kept"), (3, 2, "xyy", "kept"), (3, 3, "yz$", "finished"), (3, 4, "xy?", "pruned"),
        (4, 1, "xyz$", "finished"), (4, 2, "xyzy", "open"), (4, 3, "xyyz", "open"), (4, 4, "xyzz", "open"),
    ]
    assert sorted((text[p], text[c]) for p, c in tree.edges) == sorted([
        ("", "x"), ("", "y"), ("", "'"), ("x", "xy"), ("y", "yz"), ("'", "'x"), ("xy", "xyz"), ("xy", "xyy"),
        ("yz", "yz$"), ("xy", "xy?"), ("xyz", "xyz$"), ("xyz", "xyzy"), ("xyy", "xyyz"), ("xyz", "xyzz")])
    tgt = ckpt.tokenizer
    src = tgt.encode("zyx")
    for parent, child in tree.edges:
        p, c = tree.nodes[parent], tree.nodes[child]
        forced = decoding.teacher_forced_predictions(ckpt.model, src, tgt.encode("".join(p.tokens)),
                                                     bos_id=tgt.bos_id, eos_id=tgt.eos_id)
        token = tgt.eos_id if c.label == dec.EOS else tgt.encode(c.label)[0]
        assert c.score - p.score == pytest.approx(float(forced.logprobs[len(p.tokens), token]), abs=1e-4)
    # The answer: xyz, then <eos>, on the path root → x → xy → xyz → xyz<eos>.
    assert trace.output == "xyz" and labels(tree, tree.path) == [dec.BOS, "x", "y", "z", dec.EOS]
    assert [tree.nodes[i].step for i in tree.path] == list(range(5)) and tree.path[-1] == tree.winner
    assert {i for i, n in enumerate(tree.nodes) if n.chosen} == set(tree.path)


def test_statuses_follow_from_the_edges(shipped_sort):
    """kept: has a child at the next step; pruned: has none; open: in the beam at the last step."""
    for alpha in (0.0, 1.0):
        tree = dec.beam_tree(dec.decode(shipped_sort, "zyx", "beam", beam_size=3, length_penalty=alpha))
        parents = {p for p, _ in tree.edges}
        for i, node in enumerate(tree.nodes):
            if node.status == "finished":
                assert i not in parents and node.label == dec.EOS
                assert node.tokens == tree.nodes[node.parent].tokens, "<eos> adds no token"
            elif node.status == "open":
                assert node.step == tree.n_steps and i not in parents
            else:
                assert node.step < tree.n_steps and (i in parents) == (node.status == "kept")
            if node.parent is not None and node.status != "finished":
                assert node.tokens == tree.nodes[node.parent].tokens + (node.label,)
            if node.chosen:
                assert node.status != "pruned"


@pytest.mark.parametrize("source", ["zyx", "banana", "mississippi"])
def test_a_beam_of_one_is_one_chain_and_that_chain_is_greedy(shipped_sort, source):
    greedy = dec.decode(shipped_sort, source, "greedy")
    tree = dec.beam_tree(dec.decode(shipped_sort, source, "beam", beam_size=1))
    for step in range(1, tree.n_steps + 1):
        assert sum(n.step == step and n.status != "finished" for n in tree.nodes) == 1, "one hypothesis kept a step"
    assert labels(tree, tree.path)[1:] == dec.generated_tokens(greedy)
    assert tree.nodes[tree.winner].score == pytest.approx(greedy.score, abs=1e-4)


def test_the_length_penalty_divides_by_length_to_the_alpha_and_can_change_the_answer(shipped_sort):
    """sort on "zyx", beam 3: α = 0 picks xyz<eos> (the highest sum); α = 1 ranks by the mean log-probability,
    and the longer xyzyz<eos> (sum -1.90 over 6 tokens) beats xyz<eos> (-1.47 over 4)."""
    columns = {name: name for name in dec.RANKING_COLUMNS}
    plain = dec.beam_tree(dec.decode(shipped_sort, "zyx", "beam", beam_size=3))
    table = dec.ranking_table(plain, columns)
    assert table["text"].tolist() == ["xyz <eos>", "yz <eos>"]
    assert table["rank_sum"].tolist() == table["rank_normalised"].tolist() == [1, 2], "α = 0 is the sum itself"
    assert table["chosen"].tolist() == [True, False]

    mean = dec.decode(shipped_sort, "zyx", "beam", beam_size=3, length_penalty=1.0)
    tree = dec.beam_tree(mean)
    for node in tree.nodes[1:]:
        assert node.rank_score == pytest.approx(node.score / node.length, abs=1e-6)
    assert mean.output == "xyzyz" and tree.nodes[tree.winner].length == 6
    table = dec.ranking_table(tree, columns)
    assert table["text"].tolist()[:2] == ["xyzyz <eos>", "xyz <eos>"]
    assert table["rank_normalised"].tolist()[:2] == [1, 2] and table["rank_sum"].tolist()[:2] == [2, 1]
    assert table["normalised"].tolist()[:2] == pytest.approx([-1.903 / 6, -1.469 / 4], abs=2e-3)
    assert table["chosen"].tolist()[0] and not any(table["chosen"].tolist()[1:])
    assert (table["normalised"].diff().dropna() <= 0).all()
    assert tree.n_steps > plain.n_steps, "the search goes on while an open hypothesis could still rank higher"

    squared = dec.beam_tree(dec.decode(shipped_sort, "zyx", "beam", beam_size=3, length_penalty=2.0))
    for node in squared.nodes[1:]:
        assert node.rank_score == pytest.approx(node.score / node.length ** 2, abs=1e-6)


def test_the_tree_table_and_a_trace_without_a_tree(shipped_sort):
    tree = dec.beam_tree(dec.decode(shipped_sort, "zyx", "beam", beam_size=2))
    table = dec.tree_table(tree, {name: name.upper() for name in dec.TREE_COLUMNS}, show=display_token,
                           status_names={"finished": "done"})
    assert list(table.columns) == [name.upper() for name in dec.TREE_COLUMNS]
    assert len(table) == len(tree.nodes) - 1, "every hypothesis but the root"
    assert table["STEP"].tolist() == [n.step for n in tree.nodes[1:]]
    assert table["LENGTH"].tolist() == [n.length for n in tree.nodes[1:]]
    assert "done" in set(table["STATUS"]) and "kept" in set(table["STATUS"])
    assert table["CHOSEN"].sum() == len(tree.path) - 1
    with pytest.raises(ValueError):
        dec.beam_tree(dec.decode(shipped_sort, "zyx", "greedy"))

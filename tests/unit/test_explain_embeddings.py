"""explain.embeddings: the steps from token ids to the encoder's input, with the model's own weights."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from explain.embeddings import embedding_stages, rms
from tests.untrained import untrained_checkpoint


def test_embedding_stages_are_what_the_model_feeds_its_encoder():
    ckpt = untrained_checkpoint(n_layers=1)
    ids = tuple(ckpt.tokenizer.encode("hello") + [0, 0])
    stages = embedding_stages(ckpt, ids)
    assert stages.tokens[-1] == "<pad>" and stages.scale == pytest.approx(4.0)
    np.testing.assert_allclose(stages.scaled, stages.lookup * 4.0)
    with torch.inference_mode():
        reference = ckpt.model.embed(torch.tensor([ids]), "src")[0].double().numpy()
    np.testing.assert_allclose(stages.total, reference, atol=1e-5)
    np.testing.assert_array_equal(stages.lookup[2], stages.lookup[3])  # "l" twice: the same row
    assert stages.matrix.shape == (ckpt.tokenizer.vocab_size, 16)
    assert stages.vocab[:4] == ["<pad>", "<bos>", "<eos>", "<unk>"] and len(stages.vocab) == stages.matrix.shape[0]


def test_rms_is_the_typical_entry():
    assert rms(np.array([[3.0, -3.0], [3.0, 3.0]])) == pytest.approx(3.0)
    assert rms(np.zeros((0, 4))) == 0.0


@pytest.mark.parametrize("position_kind", ["rope", "none"])
def test_a_model_without_an_added_table_shows_no_positional_term(position_kind):
    """RoPE turns Q and K inside attention and "none" has no position: neither adds anything to the embedding."""
    from types import SimpleNamespace

    from model.config import TransformerConfig
    from model.transformer import Transformer

    plain = untrained_checkpoint(n_layers=1)
    config = TransformerConfig(**{**plain.model.config.to_dict(), "position_kind": position_kind})
    ckpt = SimpleNamespace(model=Transformer(config).eval(), tokenizer=plain.tokenizer, task=plain.task)
    ids = tuple(ckpt.tokenizer.encode("hello"))
    stages = embedding_stages(ckpt, ids)
    assert stages.position_kind == position_kind
    assert not stages.positional.any()
    with torch.inference_mode():
        reference = ckpt.model.embed(torch.tensor([ids]), "src")[0].double().numpy()
    np.testing.assert_allclose(stages.total, reference, atol=1e-5)


# ------------------------------------------------------------------ a lookup is a product with a one-hot matrix (#31)


def test_the_table_is_nn_embeddings_own_at_seed_42_and_the_global_random_state_is_untouched():
    import torch

    from explain.embeddings import lookup_is_product

    before = torch.random.get_rng_state()
    shown = lookup_is_product((0, 2, 4))
    assert torch.equal(torch.random.get_rng_state(), before)  # a generator of its own
    np.testing.assert_allclose(shown.weight, [[0.3367, 0.1288, 0.2345], [0.2303, -1.1229, -0.1863],
                                              [2.2082, -0.6380, 0.4617], [0.2674, 0.5349, 0.8094],
                                              [1.1103, -1.6898, -0.9890]], atol=5e-5)
    torch.manual_seed(42)
    np.testing.assert_array_equal(shown.weight, torch.nn.Embedding(5, 3).weight.detach().numpy())
    torch.random.set_rng_state(before)
    np.testing.assert_array_equal(shown.lookup, shown.weight[[0, 2, 4]])
    np.testing.assert_array_equal(shown.product, shown.lookup)
    assert shown.difference == 0.0 and shown.one_hot.tolist() == [[1, 0, 0, 0, 0], [0, 0, 1, 0, 0], [0, 0, 0, 0, 1]]


@pytest.mark.parametrize("typed, expected", [("0, 2, 4", ((0, 2, 4), None)), ("3 3 1", ((3, 3, 1), None)),
                                             ("4；0", ((4, 0), None)), ("", (None, "empty")), ("5", (None, "out_of_range")),
                                             ("-1", (None, "out_of_range")), ("1.5", (None, "not_int")),
                                             ("٣", (None, "not_int")), ("0 " * 7, (None, "too_many")),
                                             ("9" * 400, (None, "not_int"))])
def test_typed_ids_are_read_or_named_as_wrong(typed, expected):
    from explain.embeddings import parse_ids

    assert parse_ids(typed) == expected


# ------------------------------------------------------------------ what an embedding means: cosine, neighbours, PCA


def test_a_vector_s_cosine_with_itself_is_1_and_the_matrix_is_the_formula():
    from explain.embeddings import cosine_matrix

    rng = np.random.default_rng(5)
    a = rng.normal(size=(6, 9))
    cos = cosine_matrix(torch.from_numpy(a)).numpy()
    np.testing.assert_allclose(np.diag(cos), 1.0, atol=1e-12)
    reference = np.array([[x @ y / (np.linalg.norm(x) * np.linalg.norm(y)) for y in a] for x in a])
    np.testing.assert_allclose(cos, reference, atol=1e-12)
    np.testing.assert_allclose(cos, cos.T, atol=1e-12)
    scaled = cosine_matrix(torch.from_numpy(a * np.arange(1, 7)[:, None])).numpy()
    np.testing.assert_allclose(scaled, cos, atol=1e-12)  # lengths do not count
    pair = cosine_matrix(torch.tensor([[1.0, 0.0]]), torch.tensor([[0.0, 2.0], [-3.0, 0.0]]))
    assert pair.tolist() == [[0.0, -1.0]]
    with_zero = cosine_matrix(torch.tensor([[0.0, 0.0], [1.0, 1.0]])).numpy()
    assert with_zero[0].tolist() == [0.0, 0.0] and not np.isnan(with_zero).any()  # no direction, no NaN


def test_neighbours_are_sorted_leave_the_word_out_and_break_ties_by_row():
    from explain.embeddings import nearest

    vectors = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 0.1], [-1.0, 0.0], [1.0, 1.0]],
                           dtype=torch.float64)
    rows, cosines = nearest(vectors, 0, 4)
    assert rows == [3, 2, 5, 1] and 0 not in rows  # rows 2 and 5 are equal: row order
    assert cosines == sorted(cosines, reverse=True)
    assert cosines[0] == pytest.approx(2 / np.hypot(2, 0.1)) and cosines[1] == pytest.approx(np.sqrt(0.5))
    assert nearest(vectors, 4, 99)[0] == [1, 2, 5, 3, 0]  # at most the other rows, the opposite one last
    assert nearest(vectors, 4, 99)[1][-1] == pytest.approx(-1.0)


def test_pca_shares_sum_to_at_most_1_and_match_an_independent_numpy_svd():
    from explain.embeddings import pca_2d

    rng = np.random.default_rng(7)
    table = rng.normal(size=(40, 12)) @ np.diag(np.linspace(3.0, 0.2, 12)) + 5.0  # an offset: PCA centres it
    found = pca_2d(torch.from_numpy(table))
    centred = table - table.mean(axis=0)
    u, s, vt = np.linalg.svd(centred, full_matrices=False)
    variance = s ** 2 / np.sum(s ** 2)
    np.testing.assert_allclose(found.shares, variance[:2], rtol=1e-10)
    assert 0 < sum(found.shares) <= 1 and found.shares[0] >= found.shares[1]
    # the same total variance as the covariance's trace, by a second route
    assert found.shares[0] == pytest.approx(np.linalg.eigvalsh(np.cov(centred.T))[-1] / np.trace(np.cov(centred.T)))
    reference = centred @ vt[:2].T
    for k in range(2):  # an SVD's sign is free: the same axis, maybe flipped
        assert min(np.abs(found.points[:, k] - reference[:, k]).max(),
                   np.abs(found.points[:, k] + reference[:, k]).max()) < 1e-9
        loading = vt[k] * np.sign(found.points[:, k] @ reference[:, k])
        assert loading[np.abs(loading).argmax()] > 0  # flipped so that the largest loading is positive
    np.testing.assert_allclose(found.points.var(axis=0) / centred.var(axis=0).sum(), found.shares, rtol=1e-10)
    np.testing.assert_array_equal(pca_2d(torch.from_numpy(table)).points, found.points)  # deterministic


def test_pca_of_a_table_on_one_line_puts_everything_on_the_first_axis():
    from explain.embeddings import pca_2d

    line = torch.tensor([[t, 2 * t, -t] for t in (0.0, 1.0, 2.0, 5.0)], dtype=torch.float64)
    found = pca_2d(line)
    assert found.shares[0] == pytest.approx(1.0) and found.shares[1] == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(np.abs(found.points[:, 0]), np.abs(np.array([0.0, 1, 2, 5]) - 2.0) * np.sqrt(6))
    one_row = pca_2d(torch.ones(1, 3, dtype=torch.float64))  # nothing varies: no share, no NaN
    assert one_row.shares == (0.0, 0.0) and one_row.points.tolist() == [[0.0, 0.0]]


def test_a_random_table_is_the_same_every_time_and_leaves_the_global_random_state_alone():
    from explain.embeddings import random_cosine_spread, random_table

    before = torch.random.get_rng_state()
    first = random_table(300, 128)
    assert torch.equal(torch.random.get_rng_state(), before)
    assert random_table(300, 128) == first
    spread = random_cosine_spread(128)
    assert spread == pytest.approx(0.0884, abs=1e-4)
    assert 2 * spread < first.nearest < 4 * spread  # the best of 299 random cosines: about 3 standard deviations
    assert 1 / 128 < first.shares[1] <= first.shares[0] < 3 / 128  # a random table has no strong axis


def test_the_tables_rows_are_the_model_s_own_and_the_special_tokens_stay_out_unless_asked():
    from explain.embeddings import embedding_table, table_pca, word_neighbours, word_similarities

    ckpt = untrained_checkpoint(n_layers=1)
    source = embedding_table(ckpt, "source")
    assert source.tokens[0] == "a" and not {"<pad>", "<bos>", "<eos>", "<unk>"} & set(source.tokens)
    weight = ckpt.model.src_embed.lookup.weight.detach().double().numpy()
    np.testing.assert_array_equal(source.vectors, weight[list(source.ids)])
    target = embedding_table(ckpt, "target", specials=True)
    assert target.tokens[:4] == ("<pad>", "<bos>", "<eos>", "<unk>") and target.unit == "char"
    np.testing.assert_array_equal(target.vectors, ckpt.model.tgt_embed.lookup.weight.detach().double().numpy())
    with pytest.raises(ValueError):
        embedding_table(ckpt, "decoder")

    near = word_neighbours(ckpt, "source", "e", k=5)
    row = source.vectors[source.tokens.index("e")]
    reference = {tok: v @ row / (np.linalg.norm(v) * np.linalg.norm(row))
                 for tok, v in zip(source.tokens, source.vectors)}
    del reference["e"]
    best = sorted(reference, key=reference.get, reverse=True)[:5]
    assert list(near.tokens) == best and near.word == "e"
    np.testing.assert_allclose(near.cosines, [reference[t] for t in best], atol=1e-12)
    assert near.spread == pytest.approx(0.25) and 0 < near.chance < 1  # d_model = 16

    pairs = word_similarities(ckpt, "source", ("e", "a", "z"))
    np.testing.assert_allclose(np.diag(pairs), 1.0, atol=1e-12)
    assert pairs[0, 1] == pytest.approx(reference["a"]) and pairs[1, 0] == pytest.approx(reference["a"])

    found = table_pca(ckpt, "target")
    assert found.points.shape == (len(found.tokens), 2) and found.d_model == 16 and sum(found.shares) <= 1
    assert list(found.table().columns) == ["token", "pc1", "pc2"] and len(found.table()) == len(found.tokens)


def test_the_defaults_are_cat_dog_apple_where_the_table_has_them():
    from explain.embeddings import default_word, default_words

    assert default_words(("a", "apple", "cat", "dog")) == ["cat", "dog", "apple"]
    assert default_words(("。", "猫", "苹", "果", "狗")) == ["猫", "狗", "苹", "果"]  # 苹果 is two characters
    assert default_words(("a", "b", "c", "d")) == ["a", "b", "c"] and default_words(("x",)) == ["x"]
    assert default_word(("a", "cat", "dog")) == "dog" and default_word(("猫", "狗")) == "狗"
    assert default_word(("a", "b")) == "a" and default_word(()) is None


SHIPPED = Path(__file__).resolve().parents[2] / "assets" / "checkpoints"


@pytest.mark.skipif(not (SHIPPED / "en-zh.pt").exists(),
                    reason="the shipped en-zh checkpoint is not in assets/checkpoints")
def test_the_shipped_en_zh_tables_hold_the_defaults_and_dog_s_nearest_is_dogs():
    """The trained English table: dog's nearest row is its plural, well above a random table's nearest."""
    from explain.embeddings import default_words, embedding_table, word_neighbours
    from model.checkpoint import load_checkpoint

    ckpt = load_checkpoint(SHIPPED / "en-zh.pt")
    assert default_words(embedding_table(ckpt, "source").tokens) == ["cat", "dog", "apple"]
    assert default_words(embedding_table(ckpt, "target").tokens) == ["猫", "狗", "苹", "果"]
    near = word_neighbours(ckpt, "source", "dog")
    assert near.tokens[0] == "dogs" and near.cosines[0] > near.chance + 0.1

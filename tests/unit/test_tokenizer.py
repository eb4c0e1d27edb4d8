"""Tests for the character-level tokenizer (model/tokenizer.py)."""

from __future__ import annotations

import json
import string

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from model.tokenizer import (
    BOS_ID,
    EOS_ID,
    PAD_ID,
    SPECIAL_TOKENS,
    UNK_ID,
    CharTokenizer,
    Encoding,
    UnknownChar,
)

ASCII = string.ascii_lowercase + string.digits + " .,!?'-:;"
FFFD = "\ufffd"


@pytest.fixture
def tok() -> CharTokenizer:
    return CharTokenizer(ASCII)


def test_special_ids_and_vocab() -> None:
    t = CharTokenizer("abca")  # duplicate dropped, order kept
    assert (PAD_ID, BOS_ID, EOS_ID, UNK_ID) == (0, 1, 2, 3)
    assert SPECIAL_TOKENS == ("<pad>", "<bos>", "<eos>", "<unk>")
    assert t.alphabet == "abc"
    assert t.vocab_size == 7
    assert (t.pad_id, t.bos_id, t.eos_id, t.unk_id) == (0, 1, 2, 3)
    assert t.encode("abc") == [4, 5, 6]
    assert t.token_strings(range(7)) == ["<pad>", "<bos>", "<eos>", "<unk>", "a", "b", "c"]


def test_round_trip_in_alphabet(tok: CharTokenizer) -> None:
    text = "hello, world! it's 10:30; ok?"
    ids = tok.encode(text, add_bos=True, add_eos=True)
    assert ids[0] == BOS_ID and ids[-1] == EOS_ID
    assert len(ids) == len(text) + 2
    assert UNK_ID not in ids
    assert tok.decode(ids) == text


def test_cjk_and_space_alphabet() -> None:
    t = CharTokenizer("年月日 0123456789")
    text = "2026年11月22日 "
    assert t.decode(t.encode(text)) == text
    assert UNK_ID not in t.encode(text)


def test_unknown_chars_reported_at_positions(tok: CharTokenizer) -> None:
    enc = tok.encode_with_report("héllo wörld", add_bos=True)
    assert isinstance(enc, Encoding)
    assert enc.unknown == (UnknownChar(1, "é"), UnknownChar(7, "ö"))
    assert enc.ids[0] == BOS_ID
    assert enc.ids[2] == UNK_ID and enc.ids[8] == UNK_ID
    assert tok.decode(enc.ids) == f"h{FFFD}llo w{FFFD}rld"
    assert tok.encode_with_report("hello").unknown == ()


def test_decode_stops_at_eos_and_drops_pad_bos(tok: CharTokenizer) -> None:
    a, b = tok.encode("ab")
    ids = [BOS_ID, a, PAD_ID, b, EOS_ID, a, a]
    assert tok.decode(ids) == "ab"
    assert tok.decode(ids, skip_special=False) == "<bos>a<pad>b<eos>aa"
    assert tok.decode(torch.tensor(ids)) == "ab"
    assert tok.decode([UNK_ID], skip_special=False) == "<unk>"


def test_out_of_range_ids_never_raise(tok: CharTokenizer) -> None:
    bad = [-1, tok.vocab_size, 10**9]
    assert tok.token_strings(bad) == ["<unk>"] * 3
    assert tok.decode(bad) == FFFD * 3
    assert tok.decode(bad, skip_special=False) == "<unk>" * 3


def test_encode_batch_padding_and_lengths(tok: CharTokenizer) -> None:
    ids, lengths = tok.encode_batch(["ab", "", "hello"], add_bos=True, add_eos=True)
    assert ids.dtype == torch.long and lengths.dtype == torch.long
    assert ids.shape == (3, 7)
    assert lengths.tolist() == [4, 2, 7]
    assert ids[0].tolist() == [BOS_ID, *tok.encode("ab"), EOS_ID, PAD_ID, PAD_ID, PAD_ID]
    assert ids[1].tolist() == [BOS_ID, EOS_ID] + [PAD_ID] * 5
    for row, n in zip(ids, lengths):
        assert (row[n:] == PAD_ID).all()
        assert (row[:n] != PAD_ID).all()


def test_encode_batch_max_len_truncates_including_specials(tok: CharTokenizer) -> None:
    ids, lengths = tok.encode_batch(["hello", "hi"], add_bos=True, add_eos=True, max_len=4)
    assert ids.shape == (2, 4)
    assert lengths.tolist() == [4, 4]
    assert ids[0].tolist() == [BOS_ID, *tok.encode("hel")]  # <eos> cut off
    assert ids[1].tolist() == [BOS_ID, *tok.encode("hi"), EOS_ID]


def test_encode_batch_errors(tok: CharTokenizer) -> None:
    with pytest.raises(ValueError, match="empty"):
        tok.encode_batch([])
    with pytest.raises(ValueError, match="max_len"):
        tok.encode_batch(["a"], max_len=0)


def test_to_dict_from_dict_round_trip(tok: CharTokenizer) -> None:
    d = json.loads(json.dumps(tok.to_dict()))
    assert d == {"alphabet": ASCII}
    assert CharTokenizer.from_dict(d) == tok
    assert CharTokenizer("ab") != CharTokenizer("ba")


@pytest.mark.parametrize(
    "bad, words",
    [
        ("abc", "must be a dict"),
        (["abc"], "must be a dict"),
        ({}, "no 'alphabet'"),
        ({"alphabet": 5}, "must be a string"),
        ({"alphabet": None}, "must be a string"),
        ({"alphabet": ""}, "at least one character"),
    ],
)
def test_from_dict_validation(bad: object, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        CharTokenizer.from_dict(bad)  # type: ignore[arg-type]


def test_constructor_rejects_non_string() -> None:
    with pytest.raises(ValueError):
        CharTokenizer(None)  # type: ignore[arg-type]


# ---------------------------------------------------------------- properties
_FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_ANY_TEXT = st.one_of(
    st.text(max_size=50),
    st.text(alphabet=st.sampled_from(list(ASCII) + ["\x00", "\n", "\x7f", "😀", "é", "\u0301", "中", "\ufffd", "\u202e"]), max_size=50),
    st.text(min_size=2000, max_size=5000),
)


def _expected(text: str, alphabet: str) -> str:
    return "".join(ch if ch in alphabet else FFFD for ch in text)


@_FAST
@given(text=_ANY_TEXT)
def test_property_any_text(text: str) -> None:
    t = CharTokenizer(ASCII)
    ids = t.encode(text)
    assert len(ids) == len(text)
    assert all(0 <= i < t.vocab_size for i in ids)
    assert t.decode(ids) == _expected(text, ASCII)
    enc = t.encode_with_report(text, add_bos=True, add_eos=True)
    assert len(enc.ids) == len(text) + 2
    assert [u.position for u in enc.unknown] == [i for i, ch in enumerate(text) if ch not in ASCII]
    assert all(text[u.position] == u.char for u in enc.unknown)


@_FAST
@given(alphabet=st.text(min_size=1, max_size=40), text=st.text(max_size=200))
def test_property_arbitrary_alphabet(alphabet: str, text: str) -> None:
    t = CharTokenizer(alphabet)
    assert t.vocab_size == 4 + len(set(alphabet))
    ids = t.encode(text, add_bos=True, add_eos=True)
    assert len(ids) == len(text) + 2
    assert all(0 <= i < t.vocab_size for i in ids)
    assert t.decode(ids) == _expected(text, alphabet)
    assert t.decode(t.encode(t.alphabet)) == t.alphabet
    assert CharTokenizer.from_dict(t.to_dict()) == t


@_FAST
@given(texts=st.lists(st.text(max_size=30), min_size=1, max_size=12), add_bos=st.booleans(),
       add_eos=st.booleans(), max_len=st.one_of(st.none(), st.integers(1, 40)))
def test_property_encode_batch_is_each_row_encoded_and_padded(texts: list[str], add_bos: bool, add_eos: bool,
                                                              max_len: int | None) -> None:
    t = CharTokenizer("abc xyz")
    ids, lengths = t.encode_batch(texts, add_bos=add_bos, add_eos=add_eos, max_len=max_len)
    rows = [t.encode(text, add_bos=add_bos, add_eos=add_eos)[:max_len] for text in texts]
    assert ids.dtype == lengths.dtype == torch.long
    assert lengths.tolist() == [len(r) for r in rows]
    assert ids.shape == (len(texts), max(len(r) for r in rows))
    assert ids.tolist() == [r + [PAD_ID] * (ids.shape[1] - len(r)) for r in rows]


def test_encode_batch_rejects_what_is_not_text(tok: CharTokenizer) -> None:
    with pytest.raises(TypeError, match="Only text"):
        tok.encode_batch(["ab", 3])  # type: ignore[list-item]

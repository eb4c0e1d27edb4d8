"""Byte-pair-encoding tokenizer for the translation tasks: sub-word pieces instead of whole words or characters.

BPE (Sennrich, Haddow & Birch 2016) is what the Transformer paper's WMT 2014 data was cut into: learn from a
corpus which adjacent pair of pieces to merge next (the most frequent one), then cut any text with those
merges. Hugging Face ``tokenizers`` learns the merges and cuts the text; :class:`BpeTokenizer` wraps its
``BPE`` model in the interface of :class:`~model.tokenizer.WordTokenizer` (same special-token ids, same
``encode``/``decode``/``encode_batch``/``to_dict``), so a model and a checkpoint use it like any other.

Every word is written with a ``▁`` in front (``Metaspace``, as SentencePiece writes it), so a piece never
spans two words and :meth:`BpeTokenizer.decode` gives the sentence back: a ``▁`` is a space, less the one
in front of the first word. Chinese writes no spaces, so a Chinese sentence is one "word" whose pieces are
runs of characters, and it comes back without spaces. A character outside the alphabet is ``<unk>``; an
unseen word made of known characters falls into known pieces instead.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import torch
from tokenizers import Tokenizer as LibraryTokenizer
from tokenizers import models, pre_tokenizers, trainers

from model.tokenizer import (BOS_ID, EOS_ID, REPLACEMENT_CHAR, SPECIAL_TOKENS, UNK_ID, BaseTokenizer, Encoding,
                             UnknownChar, checked_text, shown_tokens, split_words)

WORD_START = "▁"  # U+2581, written in front of every word (SentencePiece's mark)
UNK = SPECIAL_TOKENS[UNK_ID]
MAX_ALPHABET = 512  # characters a BPE tokenizer may start from (a checkpoint's is checked against it)
MAX_MERGES = 2000  # merges it may apply
MAX_PIECE_CHARS = 64  # characters in one piece
MIN_PAIR_COUNT = 2  # a pair seen once is not worth a token of its own (the library's min_frequency)
_SURROGATE = re.compile("[\ud800-\udfff]")  # lone surrogates: no text holds them, and the library refuses them


def metaspace() -> pre_tokenizers.PreTokenizer:
    """The pre-tokenizer: split at spaces, ``▁`` written in front of every word (the first one too)."""
    return pre_tokenizers.Metaspace(replacement=WORD_START, prepend_scheme="always", split=True)


def library_bpe(alphabet: Iterable[str], merges: Iterable[Sequence[str]],
                specials: Sequence[str] = (UNK,)) -> LibraryTokenizer:
    """The library's BPE with ids ``specials`` first, then ``alphabet``, then each merge's result in order,
    applying ``merges`` (a repeated token keeps its first id). ``<unk>`` must be among ``specials``."""
    merges = [(a, b) for a, b in merges]
    vocab: dict[str, int] = {}
    for token in [*specials, *alphabet, *(a + b for a, b in merges)]:
        vocab.setdefault(token, len(vocab))
    tokenizer = LibraryTokenizer(models.BPE(vocab=vocab, merges=merges, unk_token=UNK))
    tokenizer.pre_tokenizer = metaspace()
    return tokenizer


def train_library_bpe(sentences: Iterable[str], max_merges: int, alphabet: Iterable[str] = (),
                      min_pair_count: int = MIN_PAIR_COUNT) -> LibraryTokenizer:
    """The library's BPE trained on ``sentences`` (in memory, offline): at most ``max_merges`` merges of pairs
    seen at least ``min_pair_count`` times; its alphabet is every character of the corpus and of ``alphabet``."""
    sentences = list(sentences)
    chars = set("".join(sentences).replace(" ", WORD_START)) | set(alphabet) | {WORD_START}  # a space reads as ▁
    tokenizer = LibraryTokenizer(models.BPE(unk_token=UNK))
    tokenizer.pre_tokenizer = metaspace()
    trainer = trainers.BpeTrainer(vocab_size=1 + len(chars) + max_merges, min_frequency=min_pair_count,
                                  special_tokens=[UNK], initial_alphabet=sorted(chars), show_progress=False)
    tokenizer.train_from_iterator(sentences, trainer)
    return tokenizer


def learnt_merges(tokenizer: LibraryTokenizer) -> tuple[tuple[str, str], ...]:
    """The merges a trained library BPE learnt, in the order learnt."""
    return tuple((a, b) for a, b in json.loads(tokenizer.to_str())["model"]["merges"])


def merge_problem(alphabet: Sequence[str], merges: Sequence[Sequence[str]]) -> str | None:
    """Why ``merges`` cannot be applied from ``alphabet`` (a merge joining a piece that neither the alphabet
    nor an earlier merge makes, or making one over :data:`MAX_PIECE_CHARS`), or None."""
    known = set(alphabet)
    for k, (a, b) in enumerate(merges):
        if a not in known or b not in known:
            return f"merge {k + 1} joins a piece that the alphabet and the merges before it do not make"
        if len(a) + len(b) > MAX_PIECE_CHARS:
            return f"merge {k + 1} makes a piece longer than {MAX_PIECE_CHARS} characters"
        known.add(a + b)
    return None


def _checked(alphabet: object, merges: object) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """``alphabet`` and ``merges`` as tuples, or ValueError saying what is wrong with them."""
    if isinstance(alphabet, str) or not isinstance(alphabet, (list, tuple)):
        raise ValueError("A BPE tokenizer's alphabet must be a list of single characters.")
    if not 0 < len(alphabet) <= MAX_ALPHABET or not all(isinstance(c, str) and len(c) == 1 for c in alphabet):
        raise ValueError(f"A BPE tokenizer's alphabet must be 1 to {MAX_ALPHABET} single characters.")
    if WORD_START not in alphabet:
        raise ValueError(f"A BPE tokenizer's alphabet must hold the word mark {WORD_START}.")
    if isinstance(merges, str) or not isinstance(merges, (list, tuple)) or len(merges) > MAX_MERGES:
        raise ValueError(f"A BPE tokenizer's merges must be a list of at most {MAX_MERGES} pairs.")
    if not all(isinstance(m, (list, tuple)) and len(m) == 2 and all(isinstance(p, str) and p for p in m)
               for m in merges):
        raise ValueError("Each merge of a BPE tokenizer must be a pair of pieces (non-empty strings).")
    alphabet = tuple(dict.fromkeys(alphabet))
    merges = tuple((a, b) for a, b in merges)
    problem = merge_problem(alphabet, merges)
    if problem is not None:
        raise ValueError(f"The BPE tokenizer's {problem}.")
    return alphabet, merges


def normalize(text: str) -> str:
    """``text`` as the tokenizer reads it: cut as the word tokenizer cuts it (lower case, ``. , ? ! ; :`` split
    off, single spaces), a typed ``▁`` read as a space (it is the word mark), lone surrogates as U+FFFD."""
    return " ".join(split_words(_SURROGATE.sub(REPLACEMENT_CHAR, text).replace(WORD_START, " ")))


class BpeTokenizer(BaseTokenizer):
    """Maps text to sub-word pieces learnt by BPE; the same interface as :class:`~model.tokenizer.WordTokenizer`.

    Ids 0..3 are the special tokens; then the ``alphabet`` (single characters, ``▁`` among them), then the
    piece each merge makes, in order. Text is first normalised as the word tokenizer reads it
    (:func:`normalize`), so ``decode(encode(t)) == normalize(t)`` when every character is known.
    """

    unit = "piece"

    def __init__(self, alphabet: Sequence[str], merges: Sequence[Sequence[str]]) -> None:
        self._alphabet, self._merges = _checked(alphabet, merges)
        self._library = library_bpe(self._alphabet, self._merges, specials=SPECIAL_TOKENS)
        vocab = self._library.get_vocab(with_added_tokens=False)
        self._itos: tuple[str, ...] = tuple(sorted(vocab, key=vocab.__getitem__))

    @classmethod
    def learn(cls, sentences: Iterable[str], merges: int, alphabet: Iterable[str] = ()) -> BpeTokenizer:
        """A tokenizer whose at most ``merges`` merges are learnt from ``sentences`` (normalised first); its
        alphabet is every character of them and of ``alphabet`` (so text of those characters is never <unk>)."""
        sentences = [normalize(s) for s in sentences]
        chars = set("".join(sentences).replace(" ", "")) | set(alphabet) - {" "} | {WORD_START}
        library = train_library_bpe(sentences, merges, chars)
        return cls(sorted(chars), learnt_merges(library))

    # ------------------------------------------------------------------ basics
    @property
    def alphabet(self) -> tuple[str, ...]:
        """The single characters the pieces are made of, ``▁`` among them."""
        return self._alphabet

    @property
    def merges(self) -> tuple[tuple[str, str], ...]:
        """The merges, in the order they apply."""
        return self._merges

    @property
    def known_units(self) -> tuple[str, ...]:
        """The pieces the tokenizer knows (characters, then merged pieces), in id order."""
        return self._itos[len(SPECIAL_TOKENS):]

    def _identity(self) -> tuple:
        return self._alphabet, self._merges

    def __repr__(self) -> str:
        return f"BpeTokenizer({len(self._alphabet)} characters, {len(self._merges)} merges)"

    # ---------------------------------------------------------------- encoding
    def encode_with_report(self, text: str, add_bos: bool = False, add_eos: bool = False) -> Encoding:
        """One id per piece of ``text`` (normalised); ``unknown`` lists the characters that became ``<unk>``,
        each with its position among the pieces (as a word tokenizer counts words)."""
        text = normalize(checked_text(text))
        encoding = self._library.encode(text) if text else None
        pieces = list(zip(encoding.ids, encoding.offsets)) if encoding is not None else []
        ids = ([BOS_ID] if add_bos else []) + [i for i, _ in pieces] + ([EOS_ID] if add_eos else [])
        unknown = tuple(UnknownChar(position, text[start:end])
                        for position, (i, (start, end)) in enumerate(pieces) if i == UNK_ID)
        return Encoding(ids=tuple(ids), unknown=unknown)

    # ---------------------------------------------------------------- decoding
    def decode(self, ids: Iterable[int] | torch.Tensor, skip_special: bool = True) -> str:
        """The pieces joined, each ``▁`` a space, less the first word's; with ``skip_special`` (default) stop at
        ``<eos>``, drop ``<pad>``/``<bos>`` and write ``<unk>`` (or an id out of range) as U+FFFD. Without it,
        the pieces as :meth:`token_strings` writes them, joined."""
        if not skip_special:
            return "".join(self.token_strings(ids))
        text = "".join(shown_tokens(self._as_int_list(ids), self._itos)).replace(WORD_START, " ")
        return text[1:] if text.startswith(" ") else text

    # ----------------------------------------------------------- serialisation
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able description: ``{"kind": "bpe", "alphabet": [...], "merges": [[a, b], ...], "word_start": "▁"}``."""
        return {"kind": "bpe", "alphabet": list(self._alphabet), "merges": [list(m) for m in self._merges],
                "word_start": WORD_START}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> BpeTokenizer:
        """Rebuild a tokenizer from :meth:`to_dict` output, validating it (ValueError)."""
        if not isinstance(d, Mapping) or d.get("kind") != "bpe":
            raise ValueError("A BPE tokenizer description must be a dict with kind 'bpe'.")
        if d.get("word_start") != WORD_START:
            raise ValueError(f"A BPE tokenizer's word mark must be {WORD_START}.")
        return cls(d.get("alphabet"), d.get("merges"))

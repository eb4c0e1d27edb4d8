"""Character-level tokenizer (and, at the end, the word-level one of the translation tasks; the sub-word
one, BPE, is :mod:`model.bpe_tokenizer`).

Ids 0..3 are the special tokens ``<pad> <bos> <eos> <unk>``; ids 4.. are the
alphabet characters in the order given. Text is split into Python characters
(Unicode code points), so ``len(encode(text)) == len(text)`` when no
``<bos>``/``<eos>`` is added. Any ``str`` can be encoded: characters outside
the alphabet become ``<unk>``; nothing raises.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

PAD_ID = 0
BOS_ID = 1
EOS_ID = 2
UNK_ID = 3
SPECIAL_TOKENS: tuple[str, ...] = ("<pad>", "<bos>", "<eos>", "<unk>")

#: What ``decode(..., skip_special=True)`` writes for ``<unk>`` (and for ids out of range).
REPLACEMENT_CHAR = "\ufffd"


@dataclass(frozen=True)
class UnknownChar:
    """A character of the input text that is not in the alphabet.

    ``position`` is its index in the original text (not counting ``<bos>``).
    """

    position: int
    char: str


@dataclass(frozen=True)
class Encoding:
    """Result of :meth:`CharTokenizer.encode_with_report`.

    ``ids`` has length ``len(text)`` plus one per added ``<bos>``/``<eos>``;
    ``unknown`` lists the characters that were mapped to ``<unk>``, in order.
    """

    ids: tuple[int, ...]
    unknown: tuple[UnknownChar, ...]


def shown_tokens(ids: Iterable[int], itos: Sequence[str]) -> list[str]:
    """The tokens a decoded text is made of: up to the first ``<eos>``, without ``<pad>``/``<bos>``, with
    ``<unk>`` (or an id out of range) as U+FFFD. Every tokenizer's ``decode`` joins these its own way."""
    out: list[str] = []
    for i in ids:
        if i == EOS_ID:
            break
        if i in (PAD_ID, BOS_ID):
            continue
        out.append(REPLACEMENT_CHAR if i == UNK_ID or not 0 <= i < len(itos) else itos[i])
    return out


def checked_text(text: object) -> str:
    """``text`` itself when it is a str (what every tokenizer encodes), else a TypeError saying what it got."""
    if not isinstance(text, str):
        raise TypeError(f"Only text (str) can be encoded, got {type(text).__name__}.")
    return text


class BaseTokenizer:
    """What every tokenizer shares: the special ids 0..3, then one id per unit it knows (``_itos``, set by the
    subclass, specials first); encoding through the subclass's ``encode_with_report``, batches, and ids shown
    as strings."""

    _itos: tuple[str, ...]
    _stoi: dict[str, int]  # unit -> id, for :meth:`_looked_up` (the BPE tokenizer's library looks pieces up itself)

    def encode_with_report(self, text: str, add_bos: bool = False, add_eos: bool = False) -> Encoding:
        raise NotImplementedError

    def _looked_up(self, units: Sequence[str], unknown: Callable[[int, str], Any], add_bos: bool,
                   add_eos: bool) -> Encoding:
        """``units`` (characters or words) as ids through ``self._stoi``; ``unknown(position, unit)`` records each
        one it lacks (``<unk>``)."""
        ids: list[int] = [BOS_ID] if add_bos else []
        missing = []
        for position, unit in enumerate(units):
            idx = self._stoi.get(unit)
            if idx is None:
                idx = UNK_ID
                missing.append(unknown(position, unit))
            ids.append(idx)
        if add_eos:
            ids.append(EOS_ID)
        return Encoding(ids=tuple(ids), unknown=tuple(missing))

    def _identity(self) -> tuple:
        """What makes two tokenizers of a kind the same (their alphabet, words or merges)."""
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._identity()))

    @property
    def vocab_size(self) -> int:
        return len(self._itos)

    @property
    def pad_id(self) -> int:
        return PAD_ID

    @property
    def bos_id(self) -> int:
        return BOS_ID

    @property
    def eos_id(self) -> int:
        return EOS_ID

    @property
    def unk_id(self) -> int:
        return UNK_ID

    # ---------------------------------------------------------------- encoding
    def encode(self, text: str, add_bos: bool = False, add_eos: bool = False) -> list[int]:
        """The ids of ``text``: one per unit (character, word or piece), plus the specials asked for."""
        return list(self.encode_with_report(text, add_bos=add_bos, add_eos=add_eos).ids)

    def encode_batch(
        self,
        texts: Sequence[str],
        add_bos: bool = False,
        add_eos: bool = False,
        max_len: int | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Encode ``B`` texts into a padded ``(B, S)`` LongTensor and ``(B,)`` lengths.

        ``S`` is the longest encoded length (specials included); shorter rows are
        right-padded with ``PAD_ID``. With ``max_len``, every encoded sequence
        (``<bos>``/``<eos>`` included) is cut to its first ``max_len`` tokens, so
        a trailing ``<eos>`` can be cut off. ``lengths[i]`` counts the real
        (non-pad) tokens of row ``i``.
        """
        if isinstance(texts, str):
            raise ValueError("encode_batch expects a list of texts, not a single string.")
        if len(texts) == 0:
            raise ValueError("encode_batch needs at least one text; the list is empty.")
        if max_len is not None and (isinstance(max_len, bool) or not isinstance(max_len, int) or max_len < 1):
            raise ValueError(f"max_len must be a positive integer or None, got {max_len!r}.")
        rows = [self.encode(t, add_bos=add_bos, add_eos=add_eos)[:max_len] for t in texts]
        # Padded as plain lists, one tensor at the end: a training step encodes three batches, and
        # a tensor per row cost more than the rest of building them (6 ms of 7 for 64 rows).
        lengths = [len(r) for r in rows]
        width = max(lengths)
        padded = [r + [PAD_ID] * (width - len(r)) for r in rows]
        return torch.tensor(padded, dtype=torch.long), torch.tensor(lengths, dtype=torch.long)

    @staticmethod
    def _as_int_list(ids: Iterable[int] | torch.Tensor) -> list[int]:
        if isinstance(ids, torch.Tensor):
            if ids.dim() > 1:
                raise ValueError(f"Expected a 1-D sequence of ids, got a tensor of shape {tuple(ids.shape)}.")
            return [int(i) for i in ids.tolist()] if ids.dim() == 1 else [int(ids.item())]
        return [int(i) for i in ids]

    def token_strings(self, ids: Iterable[int] | torch.Tensor) -> list[str]:
        """Display string for each id of a 1-D sequence: ``"<bos>"``, ``"a"``, ``" "``...

        Ids outside ``[0, vocab_size)`` are shown as ``"<unk>"``.
        """
        n = len(self._itos)
        return [self._itos[i] if 0 <= i < n else SPECIAL_TOKENS[UNK_ID] for i in self._as_int_list(ids)]


class CharTokenizer(BaseTokenizer):
    """Maps each character of a fixed alphabet to one id.

    ``CharTokenizer("abc")`` has ``vocab_size == 7``: 4 specials + 3 characters.
    Duplicate characters in ``alphabet`` are dropped (first occurrence wins).
    """

    unit = "char"

    def __init__(self, alphabet: str) -> None:
        if not isinstance(alphabet, str):
            raise ValueError(
                f"The tokenizer alphabet must be a string of characters, got {type(alphabet).__name__}."
            )
        deduped = "".join(dict.fromkeys(alphabet))
        if not deduped:
            raise ValueError("The tokenizer alphabet must contain at least one character.")
        self._alphabet = deduped
        self._itos: tuple[str, ...] = SPECIAL_TOKENS + tuple(deduped)
        self._stoi: dict[str, int] = {ch: i + len(SPECIAL_TOKENS) for i, ch in enumerate(deduped)}

    # ------------------------------------------------------------------ basics
    @property
    def alphabet(self) -> str:
        return self._alphabet

    @property
    def known_units(self) -> tuple[str, ...]:
        """The characters the tokenizer knows, in id order."""
        return tuple(self._alphabet)

    def _identity(self) -> tuple:
        return (self._alphabet,)

    def __repr__(self) -> str:
        return f"CharTokenizer(alphabet={self._alphabet!r})"

    # ---------------------------------------------------------------- encoding
    def encode_with_report(
        self, text: str, add_bos: bool = False, add_eos: bool = False
    ) -> Encoding:
        """Like :meth:`encode`, but also report which characters became ``<unk>``."""
        return self._looked_up(checked_text(text), UnknownChar, add_bos, add_eos)

    # ---------------------------------------------------------------- decoding
    def decode(self, ids: Iterable[int] | torch.Tensor, skip_special: bool = True) -> str:
        """Turn a 1-D sequence of ids back into text.

        With ``skip_special`` (default): stop at the first ``<eos>``, drop
        ``<pad>``/``<bos>``, and write ``<unk>`` (or an out-of-range id) as
        U+FFFD. Without it: concatenate :meth:`token_strings` literally.
        """
        if not skip_special:
            return "".join(self.token_strings(ids))
        return "".join(shown_tokens(self._as_int_list(ids), self._itos))

    # ----------------------------------------------------------- serialisation
    def to_dict(self) -> dict[str, str]:
        """Plain JSON-able description: ``{"alphabet": ...}``."""
        return {"alphabet": self._alphabet}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CharTokenizer:
        """Rebuild a tokenizer from :meth:`to_dict` output, validating it."""
        if not isinstance(d, Mapping):
            raise ValueError(
                f"A tokenizer description must be a dict like {{'alphabet': 'abc'}}, got {type(d).__name__}."
            )
        if "alphabet" not in d:
            raise ValueError("The tokenizer description has no 'alphabet' entry.")
        alphabet = d["alphabet"]
        if not isinstance(alphabet, str):
            raise ValueError(
                f"The tokenizer 'alphabet' entry must be a string, got {type(alphabet).__name__}."
            )
        return cls(alphabet)


# ---------------------------------------------------------------------------------------------------
# words
# ---------------------------------------------------------------------------------------------------
_PUNCTUATION = re.compile(r"([.,?!;:])")


def split_words(text: str) -> list[str]:
    """Lower-case words with ``. , ? ! ; :`` split off as words of their own: "Hi, Tom." → hi , tom ."""
    return _PUNCTUATION.sub(r" \1 ", text.lower()).split()


@dataclass(frozen=True)
class UnknownWord:
    """A word of the input that is not in the vocabulary; ``position`` counts words (not characters)."""

    position: int
    word: str

    @property
    def char(self) -> str:
        """The unknown text, under the name :class:`UnknownChar` uses (code that lists unknowns reads both)."""
        return self.word


class WordTokenizer(BaseTokenizer):
    """Maps each word of a fixed vocabulary to one id; the same interface as :class:`CharTokenizer`.

    Text is split by :func:`split_words` (lower case, punctuation split off), and :meth:`decode`
    joins words with single spaces, so ``decode(encode(t)) == " ".join(split_words(t))`` when
    every word is known. Ids 0..3 are the special tokens; ids 4.. are the words in the order given.
    """

    unit = "word"

    def __init__(self, words: Sequence[str]) -> None:
        if isinstance(words, str) or not all(isinstance(w, str) for w in words):
            raise ValueError("The tokenizer vocabulary must be a list of words.")
        deduped = tuple(dict.fromkeys(words))
        if not deduped:
            raise ValueError("The tokenizer vocabulary must contain at least one word.")
        for word in deduped:
            if split_words(word) != [word]:
                raise ValueError(f"{word!r} is not one lower-case word as the tokenizer splits text.")
        self._words = deduped
        self._itos: tuple[str, ...] = SPECIAL_TOKENS + deduped
        self._stoi: dict[str, int] = {w: i + len(SPECIAL_TOKENS) for i, w in enumerate(deduped)}

    @property
    def known_units(self) -> tuple[str, ...]:
        """The words the tokenizer knows, in id order."""
        return self._words

    def _identity(self) -> tuple:
        return self._words

    def __repr__(self) -> str:
        return f"WordTokenizer({len(self._words)} words)"

    def encode_with_report(self, text: str, add_bos: bool = False, add_eos: bool = False) -> Encoding:
        """One id per word of ``text``; ``unknown`` lists the words that became ``<unk>``."""
        return self._looked_up(split_words(checked_text(text)), UnknownWord, add_bos, add_eos)

    def decode(self, ids: Iterable[int] | torch.Tensor, skip_special: bool = True) -> str:
        """Words joined by single spaces; with ``skip_special`` stop at ``<eos>`` and write ``<unk>`` as U+FFFD."""
        if not skip_special:
            return " ".join(self.token_strings(ids))
        return " ".join(shown_tokens(self._as_int_list(ids), self._itos))

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able description: ``{"kind": "word", "words": [...]}``."""
        return {"kind": "word", "words": list(self._words)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> WordTokenizer:
        """Rebuild a tokenizer from :meth:`to_dict` output, validating it."""
        if not isinstance(d, Mapping) or not isinstance(d.get("words"), (list, tuple)):
            raise ValueError("A word tokenizer description must be a dict with a 'words' list.")
        return cls(list(d["words"]))


# Any of the three kinds: characters, words, or model.bpe_tokenizer.BpeTokenizer (sub-word pieces).
Tokenizer = BaseTokenizer


def tokenizer_from_dict(d: Mapping[str, Any]) -> Tokenizer:
    """Any kind of tokenizer from its ``to_dict`` output (no ``kind`` means a character tokenizer; ``"bpe"``
    a :class:`~model.bpe_tokenizer.BpeTokenizer`)."""
    if isinstance(d, Mapping) and d.get("kind") == "word":
        return WordTokenizer.from_dict(d)
    if isinstance(d, Mapping) and d.get("kind") == "bpe":
        from model.bpe_tokenizer import BpeTokenizer  # here: that module imports this one

        return BpeTokenizer.from_dict(d)
    return CharTokenizer.from_dict(d)

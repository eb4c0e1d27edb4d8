"""What the positional-encoding page shows, as plain numpy / pandas data.

The sinusoidal table comes from :func:`model.positional.positional_encoding` and RoPE from
:func:`model.positional.rope_rotate`, so the page shows exactly what the model computes.
:func:`wavelength` (positions per turn of a pair of columns) is the model's, re-exported here
for the page.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from model.arrays import to_numpy
from model.checkpoint import Checkpoint
from model.positional import positional_encoding, rope_rotate, wavelength  # noqa: F401 (re-exported)
from model.tokenizer import split_words
from model.transformer import ForwardOptions

BASES: tuple[str, ...] = ("10", "100", "1000", "10000", "100000")
SEED_EXAMPLE = dict(d_model=8, position=2, base=10000.0)  # seed 002's worked example
RELATIVE_STARTS = 3  # how many start positions p the offset plot overlays
ROPE_MAX_POSITIONS = 48  # the RoPE matrices stay readable up to this size
ROPE_CIRCLE_POSITIONS = 12  # positions drawn on the rotation circle
ORDER_TOLERANCE = 1e-4  # attention weights closer than this after un-shuffling count as unchanged


def pe_table(positions: int, d_model: int, base: float) -> np.ndarray:
    """(positions, d_model) float64: the sinusoidal table the model adds to its embeddings."""
    return positional_encoding(positions, d_model, base).double().numpy()


def pair_columns(pair: int) -> tuple[int, int]:
    """The two table columns of dimension pair ``pair``: (2i, 2i+1), sine then cosine."""
    return 2 * pair, 2 * pair + 1


def binary_digits(positions: int) -> np.ndarray:
    """(positions, bits) 0/1: the binary digits of 0 … positions − 1, lowest (fastest-flipping) bit first;
    as many bits as the largest position needs (at least one)."""
    bits = max(1, int(positions - 1).bit_length())
    p = np.arange(positions)[:, None]
    return ((p >> np.arange(bits)[None, :]) & 1).astype(np.int8)


def sine_columns(positions: int, d_model: int, base: float) -> np.ndarray:
    """(positions, d_model / 2): each pair's sine column of the table, fastest pair first."""
    return pe_table(positions, d_model, base)[:, 0::2]


def position_similarity(positions: int, d_model: int, base: float) -> np.ndarray:
    """(positions, positions): PE(p) · PE(q) for every pair of positions of the table."""
    table = pe_table(positions, d_model, base)
    return table @ table.T


def offset_similarity(d_model: int, base: float, offsets: int, starts: tuple[int, ...]) -> np.ndarray:
    """(len(starts), offsets): PE(p) · PE(p + k) for each start p and k = 0..offsets-1.

    Read off the table itself (not the closed form Σ cos(k ω_i)), so the plot shows a fact about
    the numbers the model uses.
    """
    table = pe_table(max(starts) + offsets, d_model, base)
    return np.stack([table[p : p + offsets] @ table[p] for p in starts])


def relative_starts(positions: int) -> tuple[int, ...]:
    """Start positions p for the offset plot: 0 and two more spread over the table."""
    return tuple(sorted({0, positions // 3, (2 * positions) // 3}))[:RELATIVE_STARTS]


def worked_example() -> pd.DataFrame:
    """Seed 002's example, computed: PE(pos=2) for d_model=8, one row per dimension.

    Columns: dimension, i (pair), function (sin/cos), angle = pos / 10000^(2i/d), value.
    """
    d, pos, base = SEED_EXAMPLE["d_model"], SEED_EXAMPLE["position"], SEED_EXAMPLE["base"]
    row = pe_table(pos + 1, d, base)[pos]
    dims = np.arange(d)
    pairs = dims // 2
    return pd.DataFrame({
        "dimension": dims,
        "i": pairs,
        "function": np.where(dims % 2 == 0, "sin", "cos"),
        "angle": pos / base ** (2 * pairs / d),
        "value": row,
    })


def word_shuffle(sentence: str, seed: int) -> tuple[str, list[int]]:
    """Shuffle the words of ``sentence`` (its letters if it has one word); never the identity
    when another order spells a different sentence.

    Returns ``(shuffled, order)`` with ``shuffled[j] == normalised[order[j]]`` for every
    character position j, where ``normalised`` is ``sentence`` with single spaces between words.
    Spaces are matched to spaces in order, so ``order`` is a permutation of the positions. When
    every order spells the same sentence (``aaaa``, ``ab ab``), the shuffle is that sentence and
    ``order`` is the identity: which of two equal tokens went where cannot be seen, so it is not guessed.
    """
    words = sentence.split()
    text = " ".join(words)
    rng = random.Random(seed)
    if len(words) >= 2:
        units = list(range(len(words)))
        for _ in range(20):
            rng.shuffle(units)
            if units != sorted(units) and [words[u] for u in units] != words:
                break
        starts, pos = [], 0
        for w in words:
            starts.append(pos)
            pos += len(w) + 1
        spaces = [i for i, ch in enumerate(text) if ch == " "]
        order: list[int] = []
        for n, u in enumerate(units):
            if n:
                order.append(spaces[n - 1])
            order.extend(range(starts[u], starts[u] + len(words[u])))
    else:
        order = list(range(len(text)))
        for _ in range(20):
            rng.shuffle(order)
            if len(text) < 2 or "".join(text[i] for i in order) != text:
                break
    shuffled = "".join(text[i] for i in order)
    if shuffled == text:
        return text, list(range(len(text)))
    return shuffled, order


@dataclass(frozen=True)
class OrderBlindness:
    """Encoder self-attention of a sentence and of its shuffle, layer 0 / head 0 for the pictures.

    ``restored`` is the shuffled sentence's map with rows and columns put back in the original
    order; without positional encoding it equals ``original`` (up to float rounding).
    ``max_attention_diff`` / ``max_output_diff`` compare every layer and head / the encoder
    outputs after the same un-shuffling. :attr:`verdict` says what these numbers show, as a code
    the page translates, so the sentence beside them always follows them.
    """

    tokens: list[str]
    shuffled_tokens: list[str]
    order: list[int]
    original: np.ndarray  # (S, S)
    shuffled: np.ndarray  # (S, S)
    restored: np.ndarray  # (S, S)
    max_attention_diff: float
    max_output_diff: float
    use_pe: bool

    @property
    def same_sentence(self) -> bool:
        """True when the shuffle spells the sentence itself (all its words, or letters, are equal)."""
        return self.shuffled_tokens == self.tokens

    @property
    def verdict(self) -> str:
        """``same_sentence``; ``blind`` / ``changed_without_pe`` (encoding off) or ``sees_order`` /
        ``no_change`` (on), by whether the measured attention changed beyond :data:`ORDER_TOLERANCE`."""
        if self.same_sentence:
            return "same_sentence"
        changed = self.max_attention_diff > ORDER_TOLERANCE
        if self.use_pe:
            return "sees_order" if changed else "no_change"
        return "changed_without_pe" if changed else "blind"


@torch.inference_mode()
def _encoder_pass(ckpt: Checkpoint, ids: list[int], use_pe: bool) -> tuple[np.ndarray, np.ndarray]:
    """((L, H, S, S) encoder attention, (S, d) encoder output) for one unpadded sentence."""
    model = ckpt.model
    src = torch.tensor([ids], device=model.device)
    out = model.encode(src, ForwardOptions(use_positional_encoding=use_pe, need_weights=True))
    return np.stack([to_numpy(a[0]) for a in out.attention]), to_numpy(out.memory[0])


def order_blindness(ckpt: Checkpoint, sentence: str, seed: int, use_pe: bool) -> OrderBlindness:
    """Run the encoder on ``sentence`` and on its word shuffle, with or without positional encoding."""
    tok = ckpt.tokenizer
    unit = getattr(tok, "unit", "char")
    word_level = unit in ("word", "piece")  # a word is one token, or (BPE) pieces that never cross a space
    text = " ".join(split_words(sentence) if word_level else sentence.split())
    shuffled, order = word_shuffle(text, seed)
    if word_level and len(text.split()) < 2:  # one word (or a text with no spaces the model reads as one): its
        shuffled, order = text, list(range(len(tok.encode(text))))  # letters shuffled would be another word
    elif word_level:  # the permutation of the words, read off where each word's first letter went
        starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == " "]
        order = [starts.index(order[j]) for j in [0] + [i + 1 for i, ch in enumerate(shuffled) if ch == " "]]
        if unit == "piece":  # each word's pieces move together: the permutation of the pieces
            sizes = [len(tok.encode(word)) for word in text.split()]
            first = [sum(sizes[:w]) for w in range(len(sizes))]
            order = [first[w] + k for w in order for k in range(sizes[w])]
    ids, shuffled_ids = tok.encode(text), tok.encode(shuffled)
    att, out = _encoder_pass(ckpt, ids, use_pe)
    s_att, s_out = _encoder_pass(ckpt, shuffled_ids, use_pe)
    inverse = np.argsort(order)  # original position -> where it went
    restored_all = s_att[:, :, inverse][:, :, :, inverse]  # (L, H, S, S) back in original order
    return OrderBlindness(
        tokens=tok.token_strings(ids),
        shuffled_tokens=tok.token_strings(shuffled_ids),
        order=list(order),
        original=att[0, 0],
        shuffled=s_att[0, 0],
        restored=restored_all[0, 0],
        max_attention_diff=float(np.abs(restored_all - att).max()),
        max_output_diff=float(np.abs(s_out[inverse] - out).max()),
        use_pe=use_pe,
    )


def rope_starts(positions: int) -> tuple[int, ...]:
    """Query positions whose score-vs-offset lines the RoPE plot overlays."""
    P = min(positions, ROPE_MAX_POSITIONS)
    return tuple(sorted({0, P // 4, P // 2}))


def rope_vectors(d_model: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A fixed query and key of size d_model (standard normal, seeded): the same on every run."""
    g = np.random.default_rng(seed)
    return g.standard_normal(d_model), g.standard_normal(d_model)


def rope_scores(d_model: int, base: float, positions: int) -> tuple[np.ndarray, np.ndarray]:
    """((P, P) RoPE scores, (P, P) additive-PE scores) of one query/key pair placed at every position.

    RoPE: rot(q, p) · rot(k, s). Additive: (q + PE(p)) · (k + PE(s)). Row p = query position,
    column s = key position.
    """
    q, k = rope_vectors(d_model)
    pos = torch.arange(positions)
    qs = rope_rotate(torch.tensor(q, dtype=torch.float32).expand(positions, d_model), pos, base).double()
    ks = rope_rotate(torch.tensor(k, dtype=torch.float32).expand(positions, d_model), pos, base).double()
    rope = (qs @ ks.T).numpy()
    table = pe_table(positions, d_model, base)
    additive = (q + table) @ (k + table).T
    return rope, additive


def rope_circle(d_model: int, base: float, pair: int, positions: int) -> np.ndarray:
    """(positions, 2): the query's pair (2i, 2i+1) after RoPE's rotation at positions 0..positions-1."""
    q, _ = rope_vectors(d_model)
    pos = torch.arange(positions)
    rotated = rope_rotate(torch.tensor(q, dtype=torch.float32).expand(positions, d_model), pos, base)
    a, b = pair_columns(pair)
    return rotated[:, [a, b]].double().numpy()


def rope_rotate_half(x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """RoPE with the other common layout: dimension i pairs with i + d/2 (the "rotate half" form of
    GPT-NeoX and LLaMA) instead of 2i with 2i+1 (this model's :func:`model.positional.rope_rotate`).

    x: (..., P, d) with d even; positions: (P,). The same rotation angles, another pairing: the
    numbers differ from the interleaved layout's, the property does not (scores depend on the offset).
    """
    d = x.size(-1)
    frequency = torch.exp(-math.log(base) * torch.arange(0, d, 2, dtype=torch.float32, device=x.device) / d)
    angle = positions.to(torch.float32)[:, None] * frequency  # (P, d/2)
    cos, sin = torch.cat([angle.cos(), angle.cos()], -1), torch.cat([angle.sin(), angle.sin()], -1)  # (P, d)
    first, second = x[..., : d // 2], x[..., d // 2:]
    rotated_half = torch.cat([-second, first], dim=-1)  # (..., P, d)
    return x * cos + rotated_half * sin


@dataclass(frozen=True)
class RopeLayouts:
    """Both RoPE layouts on one query and key: how far apart the two layouts' scores are, and how
    much each one's score for a fixed offset varies with where the pair sits (0 = offset only)."""

    layouts_differ: float  # max |interleaved score − half-split score| over all (p, s)
    interleaved_spread: float  # max over offsets of (max − min) of the scores at that offset
    half_spread: float


def rope_layouts(d_model: int, base: float, positions: int) -> RopeLayouts:
    """Scores rot(q, p) · rot(k, s) of one seeded query and key at every p, s, in both layouts."""
    q, k = rope_vectors(d_model)
    pos = torch.arange(positions)

    def scores(rotate) -> np.ndarray:
        qs = rotate(torch.tensor(q, dtype=torch.float64).expand(positions, d_model), pos, base)
        ks = rotate(torch.tensor(k, dtype=torch.float64).expand(positions, d_model), pos, base)
        return (qs @ ks.T).double().numpy()  # (P, P)

    def spread(m: np.ndarray) -> float:
        return max(float(np.ptp(np.diagonal(m, offset))) for offset in range(-positions + 1, positions))

    inter, half = scores(rope_rotate), scores(rope_rotate_half)
    return RopeLayouts(float(np.abs(inter - half).max()), spread(inter), spread(half))

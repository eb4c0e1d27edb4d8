"""The masks of one sentence of a batch, and what they do to the model's real attention.

Masks are bool, **True = may attend** (see :mod:`model.masks`). A switch that is off means the
model gets no mask at all, which the views show as a matrix of True. ``kind`` is one of
:data:`SELF_ATTENTION_KINDS`: the encoder's self-attention (the padding mask acts on it) or the decoder's (the
look-ahead mask, and the padding of the decoder input).

A view draws a sentence as the lesson needs it, not as wide as the batch: its real tokens and at
most :data:`SHOWN_PADS` of its ``<pad>`` positions (:meth:`PairTokens.cropped`, :meth:`HeadMap.cropped`,
:meth:`RowSteps.cropped`). The model still runs on the whole padded sentence, so every number
(a leak's share, a row's weights) is that of the real padded input; only the picture is cropped.

Beyond the paper: sparse patterns (:class:`Pattern`: a sliding window, blocks, strided, global tokens
plus a window), how many scores each computes (:func:`pattern_count`) and what AND-ing one into the
model's masks does to its greedy answer (:func:`restricted_answers`); and the masks of the three
families, encoder-decoder, encoder-only and decoder-only (:func:`family_masks`, :data:`FAMILY_PAGES`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from explain.tokens import SentenceBatch, target_tokenizer
from model import decoding
from model.arrays import layer_stack
from model.attention import scaled_dot_product_attention
from model.checkpoint import Checkpoint
from model.masks import (block_mask, decoder_mask, global_window_mask, look_ahead_mask, padding_mask, strided_mask,
                         window_mask)
from model.trace import Trace
from model.transformer import ForwardOptions

SEED_EXAMPLE_IDS = (1, 2, 3, 0, 0)  # seed 004's target batch [[1, 2, 3, 0, 0]], 0 = <pad>
SELF_ATTENTION_KINDS: tuple[str, ...] = ("encoder", "decoder")
SHOWN_PADS = 3  # <pad> positions a view draws: enough to see what the padding mask hides, not a wall of them


@dataclass(frozen=True)
class PairTokens:
    """The chosen sentence of the batch: source and decoder-input tokens and ids, with their padding."""

    src_tokens: tuple[str, ...]
    tgt_tokens: tuple[str, ...]
    src_ids: tuple[int, ...]
    tgt_ids: tuple[int, ...]
    src_pads: int
    tgt_pads: int

    def tokens(self, kind: str) -> tuple[str, ...]:
        """The tokens that ``kind``'s self-attention reads: the source or the decoder input."""
        return self.src_tokens if kind == "encoder" else self.tgt_tokens

    def pads(self, kind: str) -> int:
        """How many ``<pad>`` end ``kind``'s side."""
        return self.src_pads if kind == "encoder" else self.tgt_pads

    def real(self, kind: str) -> np.ndarray:
        """(n,) bool: which of ``kind``'s positions hold a real token (padding comes last)."""
        n = len(self.tokens(kind))
        return np.arange(n) < n - self.pads(kind)

    def drawn(self, kind: str) -> int:
        """How many of ``kind``'s positions a view draws: the real tokens and at most :data:`SHOWN_PADS` ``<pad>``."""
        pads = self.pads(kind)
        return len(self.tokens(kind)) - pads + min(pads, SHOWN_PADS)

    def not_drawn(self, kind: str) -> int:
        """How many of ``kind``'s ``<pad>`` positions a view leaves out."""
        return len(self.tokens(kind)) - self.drawn(kind)

    def cropped(self) -> PairTokens:
        """This pair as a view draws it: each side cut after its first :data:`SHOWN_PADS` ``<pad>``."""
        s, t = self.drawn("encoder"), self.drawn("decoder")
        return PairTokens(self.src_tokens[:s], self.tgt_tokens[:t], self.src_ids[:s], self.tgt_ids[:t],
                          min(self.src_pads, SHOWN_PADS), min(self.tgt_pads, SHOWN_PADS))


    def unpadded(self) -> PairTokens:
        """This pair without its ``<pad>``: the sentence alone, as the model reads it when decoding."""
        s, t = len(self.src_ids) - self.src_pads, len(self.tgt_ids) - self.tgt_pads
        return PairTokens(self.src_tokens[:s], self.tgt_tokens[:t], self.src_ids[:s], self.tgt_ids[:t], 0, 0)


def pair_tokens(batch: SentenceBatch, index: int) -> PairTokens:
    """Sentence ``index`` of ``batch``, padded as in the batch."""
    src, tgt = batch.source[index], batch.decoder_in[index]
    return PairTokens(tuple(src.tokens), tuple(tgt.tokens), tuple(src.ids), tuple(tgt.ids),
                      len(src.ids) - src.length, len(tgt.ids) - tgt.length)


def flipped(kind: str, use_padding: bool, use_look_ahead: bool) -> tuple[bool, bool]:
    """The switches with the one that acts on ``kind``'s self-attention flipped."""
    if kind == "encoder":
        return not use_padding, use_look_ahead
    return use_padding, not use_look_ahead


@dataclass(frozen=True)
class MaskSet:
    """The masks of one (source, decoder input) pair as the switches make them.

    ``padding`` is (S, S): the stored (1, 1, 1, S) row broadcast over the queries. ``look_ahead``
    and ``combined`` are (T, T). A switched-off mask is all True. ``printouts`` holds PyTorch's
    own printing of the tensors the model builds (``"None"`` when a switch is off).
    """

    padding: np.ndarray
    look_ahead: np.ndarray
    combined: np.ndarray
    printouts: dict[str, str]


def _printout(mask: torch.Tensor | None) -> str:
    return "None" if mask is None else str(mask)


def _square(mask: torch.Tensor | None, size: int) -> np.ndarray:
    """A (1, 1, 1|size, size) mask as (size, size) bool; no mask is all True."""
    if mask is None:
        return np.ones((size, size), bool)
    return np.broadcast_to(mask.reshape(-1, size).numpy(), (size, size)).copy()


def mask_set(src_ids: tuple[int, ...], tgt_ids: tuple[int, ...], pad_id: int, use_padding: bool,
             use_look_ahead: bool) -> MaskSet:
    """Build the masks with :mod:`model.masks`, exactly as :class:`model.transformer.Transformer` does."""
    src = torch.tensor([list(src_ids)])
    tgt = torch.tensor([list(tgt_ids)])
    S, T = len(src_ids), len(tgt_ids)
    pad = padding_mask(src, pad_id) if use_padding else None  # (1, 1, 1, S)
    ahead = look_ahead_mask(T) if use_look_ahead else None  # (T, T)
    if use_padding and use_look_ahead:
        combined = decoder_mask(tgt, pad_id)  # (1, 1, T, T)
    elif use_padding:
        combined = padding_mask(tgt, pad_id)  # (1, 1, 1, T)
    elif use_look_ahead:
        combined = ahead[None, None]
    else:
        combined = None
    return MaskSet(
        padding=_square(pad, S),
        look_ahead=_square(ahead, T),
        combined=_square(combined, T),
        printouts={"padding": _printout(pad), "look_ahead": _printout(ahead), "combined": _printout(combined)},
    )


def seed_example() -> tuple[str, np.ndarray]:
    """Seed 004's combined-mask example, computed: (PyTorch's printout, (5, 5) bool)."""
    mask = decoder_mask(torch.tensor([SEED_EXAMPLE_IDS]), 0)
    return str(mask), mask[0, 0].numpy()


@dataclass(frozen=True)
class MaskedAttention:
    """Self-attention of one padded sentence pair. Arrays are (L, H, T_q, T_k) float64.

    ``*_mask`` is the mask the forward pass used ((S, S) / (T, T), all True when none was);
    ``*_hideable`` marks the cells the full mask would hide, whether or not it was on.
    """

    encoder: np.ndarray
    decoder: np.ndarray
    encoder_scores: np.ndarray
    decoder_scores: np.ndarray
    encoder_mask: np.ndarray
    decoder_mask: np.ndarray
    encoder_hideable: np.ndarray
    decoder_hideable: np.ndarray


@torch.inference_mode()
def masked_attention(ckpt: Checkpoint, src_ids: tuple[int, ...], tgt_ids: tuple[int, ...], use_padding: bool,
                     use_look_ahead: bool) -> MaskedAttention:
    """One forward pass of the model on (source, decoder input), padding included, with the switches."""
    model = ckpt.model
    limit = model.config.max_len
    src_ids, tgt_ids = tuple(src_ids)[:limit], tuple(tgt_ids)[:limit]
    src = torch.tensor([src_ids], device=model.device)
    tgt = torch.tensor([tgt_ids], device=model.device)
    out = model(src, tgt, use_padding, use_look_ahead, need_details=True)
    used = mask_set(src_ids, tgt_ids, model.config.pad_id, use_padding, use_look_ahead)
    full = mask_set(src_ids, tgt_ids, model.config.pad_id, True, True)
    return MaskedAttention(
        encoder=layer_stack(out.encoder_attention),
        decoder=layer_stack(out.decoder_attention),
        encoder_scores=layer_stack([d.scores for d in out.encoder_details]),
        decoder_scores=layer_stack([d.scores for d in out.decoder_details]),
        encoder_mask=used.padding,
        decoder_mask=used.combined,
        encoder_hideable=~full.padding,
        decoder_hideable=~full.combined,
    )


@dataclass(frozen=True)
class HeadMap:
    """One head's self-attention of one kind, with its masks. Every array is (T, T).

    ``mask``: what the pass used (True = may attend); ``hideable``: what the full mask would hide.
    """

    weights: np.ndarray
    mask: np.ndarray
    hideable: np.ndarray

    @property
    def leaks(self) -> np.ndarray:
        """(T, T) bool: cells the full mask would hide but this pass let through."""
        return self.hideable & self.mask

    def cropped(self, n: int) -> HeadMap:
        """The first ``n`` queries and keys (see :meth:`PairTokens.drawn`)."""
        return HeadMap(self.weights[:n, :n], self.mask[:n, :n], self.hideable[:n, :n])


def head_map(attention: MaskedAttention, kind: str, layer: int, head: int) -> HeadMap:
    """Head ``head`` of layer ``layer`` of ``kind``'s self-attention in ``attention``."""
    if kind == "encoder":
        return HeadMap(attention.encoder[layer, head], attention.encoder_mask, attention.encoder_hideable)
    return HeadMap(attention.decoder[layer, head], attention.decoder_mask, attention.decoder_hideable)


def leak_share(weights: np.ndarray, hideable: np.ndarray, query_real: np.ndarray) -> float:
    """Average attention weight a real query puts on the cells the full mask would hide.

    weights, hideable: (T_q, T_k); query_real: (T_q,) bool. 0 when the mask is on.
    """
    rows = np.asarray(query_real, bool)
    if not rows.any():
        return 0.0
    return float((weights * hideable)[rows].sum(axis=1).mean())


@dataclass(frozen=True)
class RowSteps:
    """One query row from scores to weights, each (T_k,): raw scores, masked scores (−inf where
    hidden), softmax weights, and which keys the mask allowed."""

    raw: np.ndarray
    masked: np.ndarray
    weights: np.ndarray
    allowed: np.ndarray

    def cropped(self, n: int) -> RowSteps:
        """The first ``n`` keys (see :meth:`PairTokens.drawn`); the weights stay those of the whole row."""
        return RowSteps(self.raw[:n], self.masked[:n], self.weights[:n], self.allowed[:n])


def row_steps(attention: MaskedAttention, kind: str, layer: int, head: int, query: int) -> RowSteps:
    """Row ``query`` of head ``head`` of layer ``layer`` of ``kind``'s self-attention, step by step."""
    scores = attention.encoder_scores if kind == "encoder" else attention.decoder_scores
    weights = attention.encoder if kind == "encoder" else attention.decoder
    mask = attention.encoder_mask if kind == "encoder" else attention.decoder_mask
    raw = scores[layer, head, query]
    allowed = mask[query]
    return RowSteps(raw=raw, masked=np.where(allowed, raw, -np.inf), weights=weights[layer, head, query],
                    allowed=allowed)


# -- cheaper attention: fixed sparse patterns, their cost, and what they do to the answer ------------------

PATTERNS: tuple[str, ...] = ("window", "block", "strided", "global")


@dataclass(frozen=True)
class Pattern:
    """One sparse attention pattern: ``kind`` (one of :data:`PATTERNS`) and its sizes. ``radius`` is the
    window's (window, global), ``block`` the block size, ``stride`` the stride, ``n_global`` how many
    first positions are global tokens; a kind reads only its own sizes."""

    kind: str
    radius: int = 1
    block: int = 4
    stride: int = 4
    n_global: int = 1

    def __post_init__(self) -> None:
        if self.kind not in PATTERNS:
            raise ValueError(f"Unknown pattern {self.kind!r}; use one of {PATTERNS}.")

    def tensor(self, size: int, device: torch.device | str | None = None) -> torch.Tensor:
        """(size, size) bool, True = may attend (built by :mod:`model.masks`)."""
        if self.kind == "window":
            return window_mask(size, self.radius, device)
        if self.kind == "block":
            return block_mask(size, self.block, device)
        if self.kind == "strided":
            return strided_mask(size, self.stride, device)
        return global_window_mask(size, self.n_global, self.radius, device)

    def matrix(self, size: int) -> np.ndarray:
        """(size, size) bool: the pattern for a sequence of ``size`` positions."""
        return self.tensor(size).numpy()


@dataclass(frozen=True)
class PatternCount:
    """How many of a sequence's (query, key) scores a pattern computes: ``cells`` of the full n²,
    ``causal_cells`` of the causal (look-ahead) mask's n(n+1)/2 once both apply."""

    n: int
    cells: int
    causal_cells: int

    @property
    def full(self) -> int:
        return self.n * self.n

    @property
    def causal(self) -> int:
        return self.n * (self.n + 1) // 2


def pattern_count(pattern: Pattern, n: int) -> PatternCount:
    """Count the cells ``pattern`` keeps for ``n`` positions, alone and AND-ed with the look-ahead mask."""
    mask = pattern.tensor(n)
    return PatternCount(n=n, cells=int(mask.sum()), causal_cells=int((mask & look_ahead_mask(n)).sum()))


@dataclass(frozen=True)
class PatternView:
    """A pattern on one sentence: the encoder's (n, n) mask and the decoder's (T, T) mask (the pattern AND
    the look-ahead mask), their counts, and how many layers the encoder's needs to connect every pair
    (None: never, e.g. blocks never talk to each other)."""

    encoder: np.ndarray
    decoder: np.ndarray
    encoder_count: PatternCount
    decoder_count: PatternCount
    connect: int | None


def pattern_view(pattern: Pattern, n_src: int, n_tgt: int) -> PatternView:
    """``pattern`` drawn for a source of ``n_src`` and a decoder input of ``n_tgt`` positions."""
    encoder = pattern.matrix(n_src)
    return PatternView(encoder=encoder, decoder=pattern.matrix(n_tgt) & look_ahead_mask(n_tgt).numpy(),
                       encoder_count=pattern_count(pattern, n_src), decoder_count=pattern_count(pattern, n_tgt),
                       connect=layers_to_connect(encoder, max(n_src, 1)))


def mask_frame(mask: np.ndarray, rows: tuple[str, ...], cols: tuple[str, ...]) -> pd.DataFrame:
    """A mask as a table of 1 (may attend) and 0, queries down and keys across (for a CSV)."""
    return pd.DataFrame(np.asarray(mask, bool).astype(int), index=list(rows), columns=list(cols))


def layers_to_connect(mask: np.ndarray, limit: int) -> int | None:
    """How many attention layers with ``mask`` (n, n) it takes before every position has heard from every
    other one (information moves one allowed step per layer); None when ``limit`` layers do not do it."""
    step = np.asarray(mask, bool).astype(np.int64)
    heard = np.eye(len(step), dtype=bool)
    for layers in range(1, limit + 1):
        heard = (heard.astype(np.int64) @ step) > 0
        if heard.all():
            return layers
    return None


@dataclass(frozen=True)
class Answer:
    """One greedy answer: its tokens (``<eos>`` left out), its text, and its probability under the model
    (the product of every chosen token's probability, ``<eos>`` included when reached)."""

    tokens: tuple[str, ...]
    text: str
    probability: float
    finished: bool


@dataclass(frozen=True)
class RestrictedAnswers:
    """The greedy answer of one sentence with the full masks and with a pattern AND-ed into them."""

    full: Answer
    restricted: Answer

    @property
    def first_difference(self) -> int | None:
        """The first position (0-based) where the two answers write different tokens, None if they agree."""
        a, b = self.full.tokens, self.restricted.tokens
        differ = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
        if differ:
            return differ[0]
        return None if len(a) == len(b) and self.full.finished == self.restricted.finished else min(len(a), len(b))


def restricted_attention(pattern: Pattern):
    """An attention function (the trace's ``"attention"``) that ANDs ``pattern`` into a self-attention's mask."""

    def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None):
        allowed = pattern.tensor(q.size(-2), q.device)  # (S, S): encoder self-attention, queries = keys
        out, weights, _ = scaled_dot_product_attention(q, k, v, allowed if mask is None else mask & allowed)
        return out, weights

    return attend


def restricted_look_ahead(pattern: Pattern):
    """A look-ahead mask builder (the trace's ``"look_ahead_mask"``): the causal mask AND ``pattern``."""
    return lambda size, device=None: look_ahead_mask(size, device) & pattern.tensor(size, device)


@torch.inference_mode()
def greedy_answer(ckpt: Checkpoint, source: str, pattern: Pattern | None = None, decoder: bool = False,
                  should_stop: decoding.StopCheck | None = None) -> Answer:
    """Greedy decoding of ``source``, with ``pattern`` AND-ed into the encoder's self-attention mask (and,
    with ``decoder``, into the decoder's, the look-ahead mask kept); cross-attention keeps every source word.

    The encoder runs once with its attention replaced (:data:`model.trace.REPLACEABLE`), the decoder steps
    through :func:`model.decoding.decode_loop` with its look-ahead builder replaced."""
    model, tgt_tok = ckpt.model, target_tokenizer(ckpt)
    src = ckpt.tokenizer.encode(source)[:model.config.max_len]
    opts = ForwardOptions(need_weights=False)
    encoder_run = Trace(record=False, replace={"attention": restricted_attention(pattern)}) if pattern else None
    decoder_run = (Trace(record=False, replace={"look_ahead_mask": restricted_look_ahead(pattern)})
                   if pattern and decoder else None)
    chosen: list[int] = []
    logprob = 0.0

    def pick(step) -> decoding.Pick:
        nonlocal logprob
        token = int(step.logprobs[0].argmax())
        chosen.append(token)
        logprob += float(step.logprobs[0, token])
        return decoding.Pick(torch.tensor([token]), stop=token == tgt_tok.eos_id)

    encoded = model.encode(torch.tensor([src], dtype=torch.long, device=model.device), opts, encoder_run)
    start = torch.tensor([[tgt_tok.bos_id]], dtype=torch.long, device=model.device)
    decoding.decode_loop(model, encoded, start, decoding.decode_bound(len(src), model.config.max_len), pick,
                         opts=opts, trace=decoder_run, should_stop=should_stop)
    finished = bool(chosen) and chosen[-1] == tgt_tok.eos_id
    tokens = chosen[:-1] if finished else chosen
    return Answer(tokens=tuple(tgt_tok.token_strings(tokens)), text=tgt_tok.decode(tokens),
                  probability=float(np.exp(logprob)), finished=finished)


def restricted_answers(ckpt: Checkpoint, source: str, pattern: Pattern, decoder: bool,
                       should_stop: decoding.StopCheck | None = None) -> RestrictedAnswers:
    """The greedy answer of ``source`` with the full masks beside the one with ``pattern`` (see
    :func:`greedy_answer`)."""
    return RestrictedAnswers(full=greedy_answer(ckpt, source, should_stop=should_stop),
                             restricted=greedy_answer(ckpt, source, pattern, decoder, should_stop))


# -- the three families: which mask each uses --------------------------------------------------------------

FAMILIES: tuple[str, ...] = ("encoder_decoder", "encoder_only", "decoder_only")
CLS, SEP, STREAM_SEP = "[CLS]", "[SEP]", "<sep>"  # BERT's markers; the separator of a decoder-only stream
# Which of the app's pages (tour keys) apply to each family, in FAMILIES order: "yes", "no", or the name of
# a note saying what part applies (a catalog key: masks.families.note.<name>).
FAMILY_PAGES: tuple[tuple[str, tuple[str, str, str]], ...] = (
    ("tokens", ("yes", "yes", "yes")),
    ("masks", ("yes", "padding_only", "one_causal")),
    ("positional_encoding", ("yes", "yes", "yes")),
    ("attention", ("yes", "no_cross", "no_cross")),
    ("feed_forward", ("yes", "yes", "yes")),
    ("residual_stream", ("yes", "yes", "yes")),
    ("layer_norm", ("yes", "yes", "yes")),
    ("decoding", ("yes", "no", "yes")),
    ("output_and_loss", ("yes", "class_head", "yes")),
    ("bleu", ("yes", "no", "yes")),
    ("attention_cost", ("yes", "yes", "yes")),
    ("training", ("yes", "ideas_only", "ideas_only")),
    ("paper_vs_code", ("yes", "yes", "yes")),
)


@dataclass(frozen=True)
class FamilyMask:
    """One attention mask of one family for one sentence: (len(rows), len(cols)) bool, True = may attend;
    ``rows`` are the query tokens, ``cols`` the key tokens."""

    family: str
    part: str
    mask: np.ndarray
    rows: tuple[str, ...]
    cols: tuple[str, ...]


def family_masks(src_tokens: tuple[str, ...], tgt_tokens: tuple[str, ...]) -> tuple[FamilyMask, ...]:
    """The masks each family uses for one sentence (its real tokens: one sentence alone has no ``<pad>``).

    ``src_tokens``: the source; ``tgt_tokens``: the decoder input, ``<bos>`` + the answer. Encoder-decoder:
    encoder self-attention (padding only: all True here), decoder self-attention (causal) and cross-attention
    (decoder queries over source keys, padding only). Encoder-only (BERT): one bidirectional matrix over
    ``[CLS]`` source ``[SEP]``. Decoder-only (GPT): one causal matrix over source ``<sep>`` answer."""
    src, tgt = tuple(src_tokens), tuple(tgt_tokens)
    bert = (CLS, *src, SEP)
    gpt = (*src, STREAM_SEP, *tgt[1:])

    def square(tokens: tuple[str, ...], causal: bool) -> np.ndarray:
        full = np.ones((len(tokens), len(tokens)), bool)
        return np.tril(full) if causal else full

    return (
        FamilyMask("encoder_decoder", "encoder_self", square(src, False), src, src),
        FamilyMask("encoder_decoder", "decoder_self", square(tgt, True), tgt, tgt),
        FamilyMask("encoder_decoder", "cross", np.ones((len(tgt), len(src)), bool), tgt, src),
        FamilyMask("encoder_only", "bidirectional", square(bert, False), bert, bert),
        FamilyMask("decoder_only", "causal", square(gpt, True), gpt, gpt),
    )

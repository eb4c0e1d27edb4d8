"""The masks of one sentence of a batch, and what they do to the model's real attention.

Masks are bool, **True = may attend** (see :mod:`model.masks`). A switch that is off means the
model gets no mask at all, which the pictures show as a matrix of True.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import torch

from model.masks import decoder_mask, look_ahead_mask, padding_mask
from figures.labels import axis_labels, heatmap, token_label
from ui.figure_grid import combine
from ui.frozen_figure import FrozenFigure, freeze
from ui.lean_charts import MASKED_COLOR, PALETTE, bool_matrix, lean, lean_figure

SEED_EXAMPLE_IDS = (1, 2, 3, 0, 0)  # seed 004's target batch [[1, 2, 3, 0, 0]], 0 = <pad>
KINDS: tuple[str, ...] = ("encoder", "decoder")
LEAK_COLOR = "#ff8700"


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


def _print(mask: torch.Tensor | None) -> str:
    return "None" if mask is None else str(mask)


def mask_set(src_ids: list[int], tgt_ids: list[int], pad_id: int, use_padding: bool, use_look_ahead: bool) -> MaskSet:
    """Build the masks with :mod:`model.masks`, exactly as :class:`model.transformer.Transformer` does."""
    src = torch.tensor([src_ids])
    tgt = torch.tensor([tgt_ids])
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
        padding=np.broadcast_to(pad[0, 0].numpy(), (S, S)).copy() if pad is not None else np.ones((S, S), bool),
        look_ahead=ahead.numpy() if ahead is not None else np.ones((T, T), bool),
        combined=(np.broadcast_to(combined[0, 0].numpy(), (T, T)).copy() if combined is not None
                  else np.ones((T, T), bool)),
        printouts={"padding": _print(pad), "look_ahead": _print(ahead), "combined": _print(combined)},
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
def masked_attention(ckpt, src_ids: list[int], tgt_ids: list[int], use_padding: bool,
                     use_look_ahead: bool) -> MaskedAttention:
    """One forward pass of the model on (source, decoder input), padding included, with the switches."""
    model = ckpt.model
    limit = model.config.max_len
    src_ids, tgt_ids = list(src_ids)[:limit], list(tgt_ids)[:limit]
    src = torch.tensor([src_ids], device=model.device)
    tgt = torch.tensor([tgt_ids], device=model.device)
    out = model(src, tgt, use_padding, use_look_ahead, need_details=True)
    used = mask_set(src_ids, tgt_ids, model.config.pad_id, use_padding, use_look_ahead)
    full = mask_set(src_ids, tgt_ids, model.config.pad_id, True, True)

    def stack(items) -> np.ndarray:
        return torch.stack([item[0] for item in items]).double().cpu().numpy()

    return MaskedAttention(
        encoder=stack(out.encoder_attention),
        decoder=stack(out.decoder_attention),
        encoder_scores=stack([d.scores for d in out.encoder_details]),
        decoder_scores=stack([d.scores for d in out.decoder_details]),
        encoder_mask=used.padding,
        decoder_mask=used.combined,
        encoder_hideable=~full.padding,
        decoder_hideable=~full.combined,
    )


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
    """One query row from scores to weights: raw scores, masked scores (−inf where hidden), weights."""

    keys: list[str]
    raw: np.ndarray
    masked: np.ndarray
    weights: np.ndarray
    allowed: np.ndarray  # (T_k,) bool


def row_steps(attention: MaskedAttention, kind: str, layer: int, head: int, query: int,
              keys: list[str]) -> RowSteps:
    scores = attention.encoder_scores if kind == "encoder" else attention.decoder_scores
    weights = attention.encoder if kind == "encoder" else attention.decoder
    mask = attention.encoder_mask if kind == "encoder" else attention.decoder_mask
    raw = scores[layer, head, query]
    allowed = mask[query]
    return RowSteps(keys=list(keys), raw=raw, masked=np.where(allowed, raw, -np.inf),
                    weights=weights[layer, head, query], allowed=allowed)


# ------------------------------------------------------------------ cached for the page
# ``functools.lru_cache`` rather than ``st.cache_*``: a lookup costs microseconds instead of about a
# millisecond of argument hashing, and a rerun after a switch must stay cheap. Results are shared
# by every session and never changed (figures are frozen); a checkpoint is keyed by identity.


@functools.lru_cache(maxsize=64)
def cached_mask_set(src_ids: tuple[int, ...], tgt_ids: tuple[int, ...], pad_id: int, use_padding: bool,
                    use_look_ahead: bool) -> MaskSet:
    return mask_set(list(src_ids), list(tgt_ids), pad_id, use_padding, use_look_ahead)


@functools.lru_cache(maxsize=1)
def cached_seed_example() -> tuple[str, np.ndarray]:
    return seed_example()


@functools.lru_cache(maxsize=128)
def cached_attention(ckpt, src_ids: tuple[int, ...], tgt_ids: tuple[int, ...],
                     use_padding: bool, use_look_ahead: bool) -> MaskedAttention:
    """:func:`masked_attention`, once per checkpoint (keyed by identity) and input."""
    return masked_attention(ckpt, list(src_ids), list(tgt_ids), use_padding, use_look_ahead)


@functools.lru_cache(maxsize=64)
def mask_figures(src_tokens: tuple[str, ...], tgt_tokens: tuple[str, ...], src_ids: tuple[int, ...],
                 tgt_ids: tuple[int, ...], use_padding: bool, use_look_ahead: bool,
                 labels: tuple[str, ...]) -> tuple[go.Figure, go.Figure, go.Figure]:
    """(padding, look-ahead, combined) as True/False matrices, rows = queries, columns = keys."""
    title_pad, title_ahead, title_combined, true_text, false_text, x_title, y_title, hover = labels
    masks = mask_set(list(src_ids), list(tgt_ids), 0, use_padding, use_look_ahead)
    common = dict(true_text=true_text, false_text=false_text, x_title=x_title, y_title=y_title, hover=hover)
    return (
        freeze(bool_matrix(masks.padding, src_tokens, src_tokens, title=title_pad, **common)),
        freeze(bool_matrix(masks.look_ahead, tgt_tokens, tgt_tokens, title=title_ahead, **common)),
        freeze(bool_matrix(masks.combined, tgt_tokens, tgt_tokens, title=title_combined, **common)),
    )


@functools.lru_cache(maxsize=256)
def attention_figure(ckpt, src_ids: tuple[int, ...], tgt_ids: tuple[int, ...],
                     tokens: tuple[str, ...], kind: str, use_padding: bool, use_look_ahead: bool,
                     layer: int, head: int, labels: tuple[str, str, str]) -> go.Figure:
    """One self-attention map; cells the used mask hid get ✕ (they are exactly 0), cells the full
    mask would hide but this pass let through get an orange frame (the leak)."""
    title, x_title, y_title = labels
    att = cached_attention(ckpt, src_ids, tgt_ids, use_padding, use_look_ahead)
    weights = (att.encoder if kind == "encoder" else att.decoder)[layer, head]
    mask = att.encoder_mask if kind == "encoder" else att.decoder_mask
    hideable = att.encoder_hideable if kind == "encoder" else att.decoder_hideable
    fig = lean(heatmap(weights, list(tokens), list(tokens), title=title, x_title=x_title, y_title=y_title,
                       masked=~mask, hover="%{y} → %{x}: %{z:.3f}", height=max(280, min(560, 22 * len(tokens) + 140))))
    leaks = hideable & mask
    if leaks.any():
        rows, cols = np.nonzero(leaks)
        fig.add_trace(go.Scatter(x=cols, y=rows, mode="markers", hoverinfo="skip", showlegend=False,
                                 marker=dict(symbol="square-open", size=max(6, min(16, 300 // len(tokens))),
                                             color=LEAK_COLOR, line=dict(width=1.5, color=LEAK_COLOR))))
    return freeze(fig)


@functools.lru_cache(maxsize=256)
def row_figures(ckpt, src_ids: tuple[int, ...], tgt_ids: tuple[int, ...],
                tokens: tuple[str, ...], kind: str, use_padding: bool, use_look_ahead: bool, layer: int,
                head: int, query: int, labels: tuple[str, ...]) -> tuple[go.Figure, go.Figure, go.Figure]:
    """Bar charts of one query row: raw scores, scores with −∞ where masked, softmax weights."""
    title_raw, title_masked, title_weights, x_title, minus_inf = labels
    att = cached_attention(ckpt, src_ids, tgt_ids, use_padding, use_look_ahead)
    steps = row_steps(att, kind, layer, head, query, list(tokens))
    x = np.arange(len(tokens))
    hidden = ~steps.allowed
    colors = np.where(steps.allowed, PALETTE[0], "#b8bcc6").tolist()
    hover = [f"{token_label(tok)}: %{{y:.3f}}<extra></extra>" for tok in tokens]

    def bars(values, title, marker_colors) -> go.Figure:
        fig = lean_figure(go.Bar(x=x, y=values, marker_color=marker_colors, hovertemplate=hover), title=title,
                          height=300, showlegend=False, bargap=0.2)
        fig.update_xaxes(title=x_title, **axis_labels(tokens))
        return fig

    raw = bars(steps.raw, title_raw, colors)
    masked_values = np.where(steps.allowed, steps.raw, np.nan)
    masked = bars(masked_values, title_masked, PALETTE[0])
    weights = bars(steps.weights, title_weights, PALETTE[2])
    if hidden.any():
        cols = x[hidden]
        few = len(cols) <= 8  # beyond that the −∞ labels overlap; the title says what ✕ means
        masked.add_trace(go.Scatter(x=cols, y=np.zeros(len(cols)), mode="markers+text" if few else "markers",
                                    text=[minus_inf] * len(cols) if few else None,
                                    textposition="bottom center", hoverinfo="skip", showlegend=False,
                                    marker=dict(symbol="x-thin", size=10, line=dict(width=2, color=MASKED_COLOR)),
                                    textfont=dict(color=MASKED_COLOR)))
        weights.add_trace(go.Scatter(x=cols, y=np.zeros(len(cols)), mode="markers", hoverinfo="skip",
                                     showlegend=False,
                                     marker=dict(symbol="x-thin", size=10, line=dict(width=2, color=MASKED_COLOR))))
    weights.update_yaxes(range=[0, max(1.0, float(steps.weights.max()) * 1.05)])
    return freeze(raw), freeze(masked), freeze(weights)


# ------------------------------------------------------------------ one figure per view (ui.figure_grid)


@dataclass(frozen=True)
class PairTokens:
    """The chosen sentence of the batch: source and decoder-input tokens and ids, with their padding."""

    src_tokens: tuple[str, ...]
    tgt_tokens: tuple[str, ...]
    src_ids: tuple[int, ...]
    tgt_ids: tuple[int, ...]
    src_pads: int
    tgt_pads: int

    @classmethod
    def of(cls, batch, index: int) -> "PairTokens":
        src, tgt = batch.source[index], batch.decoder_in[index]
        return cls(tuple(src.tokens), tuple(tgt.tokens), tuple(src.ids), tuple(tgt.ids),
                   len(src.ids) - src.length, len(tgt.ids) - tgt.length)


@functools.lru_cache(maxsize=64)
def matrices_figure(src_tokens: tuple[str, ...], tgt_tokens: tuple[str, ...], src_ids: tuple[int, ...],
                    tgt_ids: tuple[int, ...], use_padding: bool, use_look_ahead: bool,
                    labels: tuple[str, ...]) -> FrozenFigure:
    """The three masks of :func:`mask_figures` side by side, as one figure."""
    return combine([list(mask_figures(src_tokens, tgt_tokens, src_ids, tgt_ids, use_padding, use_look_ahead,
                                      labels))], gap_x=0.08, y_title_first_only=True)


@functools.lru_cache(maxsize=256)
def effect_figure(ckpt, src_ids: tuple[int, ...], tgt_ids: tuple[int, ...], src_tokens: tuple[str, ...],
                  tgt_tokens: tuple[str, ...], use_padding: bool, use_look_ahead: bool, layer: int, head: int,
                  titles: tuple[str, str, str, str], axis: tuple[str, str]) -> FrozenFigure:
    """Encoder (top) and decoder (bottom) self-attention, each with its mask as switched (left) and
    flipped (right): :func:`attention_figure` four times, as one figure."""
    cells = []
    for row, kind in enumerate(KINDS):
        tokens = src_tokens if kind == "encoder" else tgt_tokens
        flipped = (not use_padding, use_look_ahead) if kind == "encoder" else (use_padding, not use_look_ahead)
        cells.append([attention_figure(ckpt, src_ids, tgt_ids, tokens, kind, pad_on, ahead_on, layer, head,
                                       (titles[2 * row + n],) + axis)
                      for n, (pad_on, ahead_on) in enumerate(((use_padding, use_look_ahead), flipped))])
    return combine(cells, gap_x=0.1, row_gap=120, y_title_first_only=True)  # room for turned token labels


@functools.lru_cache(maxsize=256)
def row_figure(ckpt, src_ids: tuple[int, ...], tgt_ids: tuple[int, ...], tokens: tuple[str, ...], kind: str,
               use_padding: bool, use_look_ahead: bool, layer: int, head: int, query: int,
               labels: tuple[str, ...]) -> FrozenFigure:
    """The three steps of :func:`row_figures` side by side, as one figure."""
    return combine([list(row_figures(ckpt, src_ids, tgt_ids, tokens, kind, use_padding, use_look_ahead, layer,
                                     head, query, labels))], gap_x=0.06, y_title_first_only=True)

"""Data and figures for the positional-encoding page, as plain numpy / pandas / plotly.

Pure functions first (testable without Streamlit), then the cached versions the page calls. The
sinusoidal table comes from :func:`model.positional.positional_encoding` and RoPE from
:func:`model.positional.rope_rotate`, so the page shows exactly what the model computes.
"""
from __future__ import annotations

import math
import random
import functools
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import torch

from model.positional import positional_encoding, rope_rotate, wavelength
from model.transformer import ForwardOptions
from figures.labels import heatmap
from ui.frozen_figure import freeze
from ui.lean_charts import PALETTE, lean, lean_figure, value_heatmap
from ui.prepared_html import compact

BASES: tuple[str, ...] = ("10", "100", "1000", "10000", "100000")
SEED_EXAMPLE = dict(d_model=8, position=2, base=10000.0)  # seed 002's worked example
RELATIVE_STARTS = 3  # how many start positions p the offset plot overlays
ROPE_MAX_POSITIONS = 48  # the RoPE matrices stay readable (and cheap) up to this size
ROPE_CIRCLE_POSITIONS = 12  # positions drawn on the rotation circle


# ------------------------------------------------------------------ pure computations


def pe_table(positions: int, d_model: int, base: float) -> np.ndarray:
    """(positions, d_model) float64: the sinusoidal table the model adds to its embeddings."""
    return positional_encoding(positions, d_model, base).double().numpy()


def pair_columns(pair: int) -> tuple[int, int]:
    """The two table columns of dimension pair ``pair``: (2i, 2i+1), sine then cosine."""
    return 2 * pair, 2 * pair + 1


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
    angles = pos / base ** (2 * pairs / d)
    return pd.DataFrame(
        {
            "dimension": dims,
            "i": pairs,
            "function": np.where(dims % 2 == 0, "sin", "cos"),
            "angle": angles,
            "value": row,
        }
    )


@functools.lru_cache(maxsize=4)
def worked_example_html(headers: tuple[str, ...]) -> str:
    """:func:`worked_example` as an HTML table (pandas Styler) with ``headers`` as column names."""
    frame = worked_example()
    frame.columns = list(headers)
    styler = (frame.style.hide(axis="index").set_uuid("pe_example")
              .format({headers[3]: "{:.4f}", headers[4]: "{:.6f}"}, escape="html")
              .format_index(escape="html", axis=1)
              .set_table_styles([
                  {"selector": "", "props": "border-collapse: collapse; font-size: 0.9rem; margin-bottom: 0.5rem"},
                  {"selector": "th, td", "props": "border: 1px solid #dfe1e6; padding: 3px 10px; text-align: right"},
                  {"selector": "th", "props": "background: #f4f4f7; color: #5c6070; font-weight: 500"},
                  {"selector": "td", "props": "font-family: 'Source Code Pro', monospace"},
              ]))
    return compact(styler.to_html())


def word_shuffle(sentence: str, seed: int) -> tuple[str, list[int]]:
    """Shuffle the words of ``sentence`` (its letters if it has one word); never the identity.

    Returns ``(shuffled, order)`` with ``shuffled[j] == normalised[order[j]]`` for every
    character position j, where ``normalised`` is ``sentence`` with single spaces between words.
    Spaces are matched to spaces in order, so ``order`` is a permutation of the positions.
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
    return "".join(text[i] for i in order), order


@dataclass(frozen=True)
class OrderBlindness:
    """Encoder self-attention of a sentence and of its shuffle, layer 0 / head 0 for the pictures.

    ``restored`` is the shuffled sentence's map with rows and columns put back in the original
    order; without positional encoding it equals ``original`` (up to float rounding).
    ``max_attention_diff`` / ``max_output_diff`` compare every layer and head / the encoder
    outputs after the same un-shuffling.
    """

    tokens: list[str]
    shuffled_tokens: list[str]
    order: list[int]
    original: np.ndarray  # (S, S)
    shuffled: np.ndarray  # (S, S)
    restored: np.ndarray  # (S, S)
    max_attention_diff: float
    max_output_diff: float


@torch.inference_mode()
def _encoder_pass(ckpt, ids: list[int], use_pe: bool) -> tuple[np.ndarray, np.ndarray]:
    """((L, H, S, S) encoder attention, (S, d) encoder output) for one unpadded sentence."""
    model = ckpt.model
    src = torch.tensor([ids], device=model.device)
    out = model.encode(src, ForwardOptions(use_positional_encoding=use_pe, need_weights=True))
    attention = torch.stack([a[0] for a in out.attention]).double().cpu().numpy()
    return attention, out.memory[0].double().cpu().numpy()


def order_blindness(ckpt, sentence: str, seed: int, use_pe: bool) -> OrderBlindness:
    """Run the encoder on ``sentence`` and on its word shuffle, with or without positional encoding."""
    tok = ckpt.tokenizer
    text = " ".join(sentence.split())
    shuffled, order = word_shuffle(text, seed)
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


# ------------------------------------------------------------------ cached for the page
# Plain ``functools.lru_cache``: a lookup costs microseconds, where ``st.cache_*`` spends about a
# millisecond hashing arguments, and a rerun after a slider move must stay cheap. Results are
# shared by every session, so they are never changed: figures are frozen, arrays only read. A
# checkpoint argument is keyed by identity (the shipped ones are loaded once per process).


@functools.lru_cache(maxsize=64)
def table_figure(positions: int, d_model: int, base: float, pair: int, labels: tuple[str, str, str]) -> go.Figure:
    """The table as a heatmap (positions down, dimensions across) with pair ``pair`` framed."""
    x_title, y_title, hover = labels
    table = pe_table(positions, d_model, base)
    fig = value_heatmap(table, x_title=x_title, y_title=y_title, zmin=-1, zmax=1, hover=hover,
                        height=min(520, max(300, 4 * positions + 140)))
    a, _ = pair_columns(pair)
    fig.add_shape(type="rect", x0=a - 0.5, x1=a + 1.5, y0=-0.5, y1=positions - 0.5,
                  line=dict(color="#111111", width=2))
    return freeze(fig)


@functools.lru_cache(maxsize=64)
def waves_figure(positions: int, d_model: int, base: float, pair: int, labels: tuple[str, str, str, str]) -> go.Figure:
    """sin and cos of pair ``pair`` over positions, with the wavelength marked when it fits."""
    sin_name, cos_name, x_title, wave_label = labels
    table = pe_table(positions, d_model, base)
    a, b = pair_columns(pair)
    x = np.arange(positions)
    mode = "lines+markers" if positions <= 80 else "lines"
    fig = lean_figure(
        go.Scatter(x=x, y=table[:, a], name=sin_name, mode=mode, marker=dict(size=5)),
        go.Scatter(x=x, y=table[:, b], name=cos_name, mode=mode, marker=dict(size=5)),
        height=300, legend=dict(orientation="h", y=1.12, x=0),
    )
    lam = wavelength(pair, d_model, base)
    for n in range(1, int((positions - 1) // lam) + 1):
        fig.add_vline(x=n * lam, line=dict(color="#888888", dash="dot", width=1))
    if lam < positions:
        fig.add_annotation(x=lam, y=1.05, text=wave_label, showarrow=False, yanchor="bottom", font=dict(size=11))
    fig.update_xaxes(title=x_title)
    fig.update_yaxes(range=[-1.15, 1.3])
    return freeze(fig)


@functools.lru_cache(maxsize=32)
def similarity_figure(positions: int, d_model: int, base: float, labels: tuple[str, str, str]) -> go.Figure:
    """PE(p) · PE(q) for every pair of positions."""
    x_title, y_title, hover = labels
    table = pe_table(positions, d_model, base)
    half = d_model / 2
    return freeze(value_heatmap(table @ table.T, x_title=x_title, y_title=y_title, zmin=-half, zmax=half,
                                hover=hover, height=min(460, max(300, 3 * positions + 140))))


@functools.lru_cache(maxsize=32)
def offset_figure(positions: int, d_model: int, base: float, names: tuple[str, ...],
                  labels: tuple[str, str]) -> go.Figure:
    """PE(p) · PE(p+k) against k for the :func:`relative_starts` p (one name each): the lines coincide."""
    x_title, y_title = labels
    starts = relative_starts(positions)
    values = offset_similarity(d_model, base, positions, starts)
    k = np.arange(positions)
    dashes, widths = ("solid", "dash", "dot"), (6, 3.5, 2)
    traces = [
        go.Scatter(x=k, y=values[n], mode="lines", name=names[n],
                   line=dict(dash=dashes[n % 3], width=widths[n % 3], color=PALETTE[n]))
        for n in range(len(starts))
    ]
    fig = lean_figure(*traces, height=300, legend=dict(orientation="h", y=1.12, x=0))
    fig.update_xaxes(title=x_title)
    fig.update_yaxes(title=y_title)
    return freeze(fig)


@functools.lru_cache(maxsize=64)
def cached_order_blindness(ckpt, sentence: str, seed: int, use_pe: bool) -> OrderBlindness:
    """:func:`order_blindness`, once per checkpoint and setting."""
    return order_blindness(ckpt, sentence, seed, use_pe)


@functools.lru_cache(maxsize=64)
def blindness_figures(ckpt, sentence: str, seed: int, use_pe: bool,
                      labels: tuple[str, ...]) -> tuple[go.Figure, go.Figure, go.Figure]:
    """(original, shuffled, shuffled put back in order) encoder attention maps, layer 0 / head 0."""
    title_original, title_shuffled, title_restored, x_title, y_title = labels
    result = cached_order_blindness(ckpt, sentence, seed, use_pe)
    top = float(max(result.original.max(), result.shuffled.max(), 1e-9))  # one scale for all three
    common = dict(x_title=x_title, y_title=y_title, hover="%{y} → %{x}: %{z:.3f}", zmax=top, height=400)
    return (
        freeze(lean(heatmap(result.original, result.tokens, result.tokens, title=title_original, **common))),
        freeze(lean(heatmap(result.shuffled, result.shuffled_tokens, result.shuffled_tokens, title=title_shuffled,
                            **common))),
        freeze(lean(heatmap(result.restored, result.tokens, result.tokens, title=title_restored, **common))),
    )


@functools.lru_cache(maxsize=32)
def rope_figures(d_model: int, base: float, positions: int, pair: int, labels: tuple[str, ...],
                 rope_names: tuple[str, ...],
                 additive_names: tuple[str, ...]) -> tuple[go.Figure, go.Figure, go.Figure]:
    """(rotation circle of pair ``pair``, RoPE score matrix, score-vs-offset lines) for one setting.

    ``rope_names`` / ``additive_names`` name the lines of the :func:`rope_starts` positions.
    """
    circle_title, rope_title, additive_title, x_query, x_key, hover, offset_x, offset_y = labels
    P = min(positions, ROPE_MAX_POSITIONS)
    points = rope_circle(d_model, base, pair, min(P, ROPE_CIRCLE_POSITIONS))
    radius = float(np.hypot(*points[0]))
    theta = np.linspace(0, 2 * math.pi, 121)
    circle = lean_figure(
        go.Scatter(x=radius * np.cos(theta), y=radius * np.sin(theta), mode="lines", hoverinfo="skip",
                   line=dict(color="#bbbbbb", width=1), showlegend=False),
        *[go.Scatter(x=[0, px], y=[0, py], mode="lines+markers+text", text=["", str(p)], textposition="top center",
                     marker=dict(size=[0, 8], color=PALETTE[0]), line=dict(color=PALETTE[0], width=1),
                     hovertemplate=f"p = {p}<extra></extra>", showlegend=False)
          for p, (px, py) in enumerate(points)],
        title=circle_title, height=340,
    )
    circle.update_xaxes(scaleanchor="y", scaleratio=1, zeroline=True, showticklabels=False)
    circle.update_yaxes(zeroline=True, showticklabels=False)

    rope, additive = rope_scores(d_model, base, P)
    lim = float(max(np.abs(rope).max(), 1e-9))
    matrix = value_heatmap(rope, title=rope_title, x_title=x_key, y_title=x_query, zmin=-lim, zmax=lim,
                           hover=hover, height=340)

    starts = rope_starts(positions)
    offsets = np.arange(P - max(starts))
    dashes, widths = ("solid", "dash", "dot"), (6, 3.5, 2)
    traces = []
    for n, p in enumerate(starts):
        traces.append(go.Scatter(x=offsets, y=rope[p, p + offsets], mode="lines", name=rope_names[n],
                                 line=dict(color=PALETTE[0], dash=dashes[n], width=widths[n])))
    for n, p in enumerate(starts):
        traces.append(go.Scatter(x=offsets, y=additive[p, p + offsets], mode="lines", name=additive_names[n],
                                 line=dict(color=PALETTE[3], dash=dashes[n], width=widths[n] / 2)))
    lines = lean_figure(*traces, title=additive_title, height=400,
                        legend=dict(font=dict(size=10), orientation="h", y=-0.25, x=0))
    lines.update_xaxes(title=offset_x)
    lines.update_yaxes(title=offset_y)
    return freeze(circle), freeze(matrix), freeze(lines)


"""The attention explorer's data and figures: per-head maps, statistics, ablation, as plain numpy.

Pages call the cached functions (``cached_view``, ``grid_figure``, ...); the pure builders under
them take numpy arrays and already-translated labels, so they are tested without Streamlit.
Attention arrays are ``(L, H, T_q, T_k)``: layers, heads, query positions, key positions; every
row of a map is a softmax over the keys and sums to 1.
"""
from __future__ import annotations

import html
import io
import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from figures.labels import axis_labels, heatmap, token_label
from ui.i18n import t
from explain.text import MAX_CHARS, prepare_sentence
from ui.tokens_view import show_notices
from ui.url_state import BadValue, Param, TextParam, bind

KINDS: tuple[str, ...] = ("encoder", "decoder", "cross")
KIND_CODES: dict[str, str] = {"encoder": "enc", "decoder": "dec", "cross": "cross"}  # short, for URLs
KIND_OF_CODE: dict[str, str] = {code: kind for kind, code in KIND_CODES.items()}
CACHE_ENTRIES = 256  # per cached function, shared by every session of the process
TICK_LABEL_LIMIT = 16  # the overview grid writes token labels only up to this many tokens


# ------------------------------------------------------------------ which model, which example


def model_key(ckpt: Any) -> tuple[str, int]:
    """A hashable name for the checkpoint in caches: (sidebar name, identity of the loaded object).

    The identity tells apart two sessions that trained different models under the same name, and a
    shipped file that was replaced (it is loaded again as a new object).
    """
    from ui.models import selected_model_name

    return (selected_model_name() or "", id(ckpt))


def task_example(ckpt: Any) -> str:
    """The example sentence of the checkpoint's task, one it handles well ("hello world" if unknown)."""
    from model.tasks import UnknownTaskError, get_task

    try:
        return get_task(str(ckpt.task.get("name"))).example
    except (UnknownTaskError, AttributeError):
        return "hello world"


def task_target(ckpt: Any, source: str) -> str | None:
    """The correct output of the checkpoint's task for ``source``, or None when there is none."""
    from model.tasks import UnknownTaskError, get_task

    try:
        return get_task(str(ckpt.task.get("name"))).target_for(source)
    except (UnknownTaskError, AttributeError):
        return None


def follow_example(text_key: str, example: str) -> None:
    """Before the text box ``text_key`` is drawn: if the model's example changed (another model was
    picked) and the box still holds the previous example, put the new example in it.

    Text the visitor typed is never replaced. Call right before ``bind`` of that text box.
    """
    state = st.session_state
    seen_key, last_key = f"{text_key}._example", f"{text_key}._last"
    previous = state.get(seen_key)
    if previous is not None and previous != example and state.get(last_key, previous) == previous:
        state[text_key] = example
    state[seen_key] = example


def remember_text(text_key: str, text: str) -> None:
    """After the text box: note what it showed, for :func:`follow_example` on a later run."""
    st.session_state[f"{text_key}._last"] = text


def sentence_input(ckpt, text_key: str, url_name: str) -> str | None:
    """The sentence box of the attention and decoding pages: the model's example by default (and
    again when another model is picked), bound to ``?<url_name>=``, cut to what the model takes,
    with its notices shown. Returns the sentence, or None when there is nothing to run.

    Its label and help are ``<page>.input_label`` / ``<page>.input_help``, ``<page>`` being the
    first part of ``text_key`` (e.g. ``"attention.text"``).
    """
    page = text_key.split(".")[0]
    example = task_example(ckpt)
    follow_example(text_key, example)
    text = st.text_input(t(f"{page}.input_label"), key=bind(TextParam(url_name, example, max_len=200), key=text_key),
                         max_chars=200, help=t(f"{page}.input_help", example=example))
    remember_text(text_key, text)
    prepared = prepare_sentence(text, ckpt.tokenizer, max_chars=min(MAX_CHARS, ckpt.model.config.max_len))
    show_notices(prepared)
    return prepared.sentences[0] if prepared.sentences else None


# ------------------------------------------------------------------ forward passes, cached


@st.cache_data(max_entries=CACHE_ENTRIES, show_spinner=False)
def cached_view(
    _ckpt: Any,
    key: tuple[str, int],
    source: str,
    target: str | None = None,
    *,
    scale_scores: bool = True,
    ablate: tuple[tuple[str, int, int], ...] = (),
    need_details: bool = False,
):
    """``ui.inference.attention_view`` of ``source``, cached on ``key`` (see :func:`model_key`)."""
    from explain.attention import attention_view

    return attention_view(_ckpt, source, target, scale_scores=scale_scores, ablate_heads=ablate,
                          need_details=need_details)


def attention_maps(view, kind: str) -> np.ndarray:
    """(L, H, T_q, T_k) weights of ``kind`` in ``view`` (an ``AttentionView``)."""
    return {"encoder": view.encoder, "decoder": view.decoder, "cross": view.cross}[kind]


def query_key_tokens(view, kind: str) -> tuple[list[str], list[str]]:
    """(query tokens, key tokens) of ``kind``: the encoder reads the source, the decoder its input."""
    if kind == "encoder":
        return list(view.src_tokens), list(view.src_tokens)
    if kind == "decoder":
        return list(view.tgt_tokens), list(view.tgt_tokens)
    return list(view.tgt_tokens), list(view.src_tokens)


def blocked_cells(kind: str, n_queries: int, n_keys: int) -> np.ndarray | None:
    """(T_q, T_k) bool, True where the look-ahead mask hides a key (decoder only); else None."""
    if kind != "decoder":
        return None
    return np.triu(np.ones((n_queries, n_keys), dtype=bool), k=1)


# ------------------------------------------------------------------ statistics


def row_entropy(weights: np.ndarray) -> np.ndarray:
    """Entropy in bits of every row (last axis) of ``weights``; 0 * log 0 counts as 0.

    A row that puts all its weight on one key has entropy 0; a uniform row over n keys has log2(n).
    """
    w = np.asarray(weights, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(w > 0, -w * np.log2(np.where(w > 0, w, 1.0)), 0.0)
    return terms.sum(axis=-1)


def mean_distance(weights: np.ndarray) -> np.ndarray:
    """(..., T_q) expected |query position - key position| under each row's weights."""
    w = np.asarray(weights, dtype=float)
    tq, tk = w.shape[-2:]
    distance = np.abs(np.arange(tq)[:, None] - np.arange(tk)[None, :])  # (T_q, T_k)
    return (w * distance).sum(axis=-1)


def diagonal_share(weights: np.ndarray) -> np.ndarray:
    """(...,) mean weight a query puts on the key at its own position (rows past T_k are skipped)."""
    w = np.asarray(weights, dtype=float)
    n = min(w.shape[-2], w.shape[-1])
    return np.diagonal(w[..., :n, :n], axis1=-2, axis2=-1).mean(axis=-1)


def head_statistics(maps: np.ndarray) -> pd.DataFrame:
    """One row per (layer, head) of ``maps`` (L, H, T_q, T_k), 1-based, with

    ``entropy`` (mean row entropy, bits), ``max_entropy`` (log2 of the number of keys),
    ``distance`` (mean attended distance, positions) and ``diagonal`` (mean weight on the same
    position, 0..1).
    """
    maps = np.asarray(maps, dtype=float)
    L, H, _, tk = maps.shape
    entropy = row_entropy(maps).mean(axis=-1)  # (L, H)
    distance = mean_distance(maps).mean(axis=-1)  # (L, H)
    diagonal = diagonal_share(maps)  # (L, H)
    rows = [
        {"layer": layer + 1, "head": head + 1, "entropy": round(float(entropy[layer, head]), 3),
         "max_entropy": round(math.log2(tk), 3) if tk else 0.0,
         "distance": round(float(distance[layer, head]), 3), "diagonal": round(float(diagonal[layer, head]), 3)}
        for layer in range(L) for head in range(H)
    ]
    return pd.DataFrame(rows, columns=["layer", "head", "entropy", "max_entropy", "distance", "diagonal"])


# ------------------------------------------------------------------ ablation


@dataclass(frozen=True)
class HeadId:
    """One attention head: ``kind`` in KINDS, ``layer`` and ``head`` 1-based (as shown)."""

    kind: str
    layer: int
    head: int

    @property
    def code(self) -> str:
        """``enc-1-2``: the form used in the URL and as a widget option."""
        return f"{KIND_CODES[self.kind]}-{self.layer}-{self.head}"

    @classmethod
    def parse(cls, code: str) -> "HeadId":
        kind, layer, head = code.split("-")
        return cls(KIND_OF_CODE[kind], int(layer), int(head))

    def as_ablation(self) -> tuple[str, int, int]:
        """The 0-based triple ``ForwardOptions.ablate_heads`` wants."""
        return (self.kind, self.layer - 1, self.head - 1)


@dataclass(frozen=True)
class HeadSetParam(Param[list]):
    """A set of head codes in the URL, comma-separated (``enc-1-2,cross-2-1``; empty = none).

    The value is a list (what ``st.multiselect`` holds) of distinct members of ``choices``.
    """

    choices: tuple[str, ...] = ()

    def parse(self, text: str) -> list:
        codes = [code for code in text.strip().split(",") if code] if text.strip() else []
        if len(set(codes)) != len(codes) or any(code not in self.choices for code in codes):
            raise BadValue(text)
        return codes

    def format(self, value: list) -> str:
        return ",".join(value)

    def accepts(self, value: Any) -> bool:
        return (isinstance(value, list) and len(set(value)) == len(value)
                and all(code in self.choices for code in value))


def all_heads(n_layers: int, n_heads: int) -> list[str]:
    """Codes of every head of the model, encoder first, then decoder, then cross-attention."""
    return [HeadId(kind, layer, head).code for kind in KINDS
            for layer in range(1, n_layers + 1) for head in range(1, n_heads + 1)]


def ablation_triples(codes: Sequence[str]) -> tuple[tuple[str, int, int], ...]:
    """Sorted 0-based ablation triples for head codes (sorted, so the cache sees one key per set)."""
    return tuple(sorted(HeadId.parse(code).as_ablation() for code in codes))


def answer_ids(tokenizer: Any, answer: str) -> list[int]:
    """Token ids of ``answer`` followed by <eos>: what the decoder must predict to write it."""
    return list(tokenizer.encode(answer)) + [tokenizer.eos_id]


def format_probability(p: float, *, sign: bool = False) -> str:
    """``0.276`` for ordinary probabilities, ``3.1e-07`` for the tiny ones of long or unlikely answers."""
    text = f"{p:+.3f}" if sign else f"{p:.3f}"
    if p != 0 and abs(p) < 0.001:
        text = f"{p:+.2e}" if sign else f"{p:.2e}"
    return text


def sequence_probability(view, ids: Sequence[int]) -> tuple[float, np.ndarray]:
    """(product, per-position probabilities) the model gives ``ids`` (target + <eos>) in ``view``.

    ``view`` must have been computed with that target as the decoder input (``<bos>`` + target),
    so position i's prediction is read from the true prefix (teacher forcing).
    """
    probs = view.next_token_probs  # (T, V)
    per_token = np.array([probs[i, t] for i, t in enumerate(ids) if i < len(probs)], dtype=float)
    return float(np.prod(per_token)) if per_token.size else 0.0, per_token


# ------------------------------------------------------------------ CSV export


def attention_csv(weights: np.ndarray, query_tokens: Sequence[str], key_tokens: Sequence[str]) -> str:
    """(T_q, T_k) weights as CSV: one row per query, one column per key, labelled ``position:token``.

    The position prefix keeps repeated tokens apart and stops a spreadsheet from reading a token
    such as ``=`` as the start of a formula.
    """
    frame = pd.DataFrame(
        np.round(np.asarray(weights, dtype=float), 6),
        index=[f"{i}:{tok}" for i, tok in enumerate(query_tokens)],
        columns=[f"{j}:{tok}" for j, tok in enumerate(key_tokens)],
    )
    frame.index.name = "query\\key"
    buffer = io.StringIO()
    frame.to_csv(buffer)
    return buffer.getvalue()


def long_attention_csv(maps: np.ndarray, query_tokens: Sequence[str], key_tokens: Sequence[str],
                       heads: Sequence[int], layer: int) -> str:
    """Weights of ``heads`` (1-based) of one layer, ``maps`` (H, T_q, T_k), one line per (head, query, key)."""
    return _long_csv(_long_rows(maps, query_tokens, key_tokens, heads, layer))


LONG_COLUMNS = ["layer", "head", "query_position", "query_token", "key_position", "key_token", "weight"]


def _long_rows(maps: np.ndarray, query_tokens: Sequence[str], key_tokens: Sequence[str], heads: Sequence[int],
               layer: int) -> list[tuple]:
    return [(layer, head, i, query_tokens[i], j, key_tokens[j], round(float(maps[head - 1, i, j]), 6))
            for head in heads for i in range(maps.shape[1]) for j in range(maps.shape[2])]


def _long_csv(rows: list[tuple]) -> str:
    return pd.DataFrame(rows, columns=LONG_COLUMNS).to_csv(index=False)


def every_head_csv(maps: np.ndarray, query_tokens: Sequence[str], key_tokens: Sequence[str]) -> str:
    """Weights of every head of every layer, ``maps`` (L, H, T_q, T_k), in the long format of
    :func:`long_attention_csv` (one line per layer, head, query and key)."""
    heads = range(1, maps.shape[1] + 1)
    return _long_csv([row for layer in range(1, maps.shape[0] + 1)
                      for row in _long_rows(maps[layer - 1], query_tokens, key_tokens, heads, layer)])


# ------------------------------------------------------------------ figures (pure builders)


def _round(z: np.ndarray, digits: int = 4) -> np.ndarray:
    return np.round(np.asarray(z, dtype=float), digits)


def build_grid_figure(
    maps: np.ndarray,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    *,
    titles: Sequence[str],
    hover: str,
) -> go.Figure:
    """Layers x heads small heatmaps of ``maps`` (L, H, T_q, T_k) on one shared colour scale.

    ``titles``: L*H subplot titles, row by row.
    ``hover``: a template with ``{layer}``, ``{head}`` placeholders filled per subplot, and
    ``%{customdata[0]}`` (query), ``%{customdata[1]}`` (key), ``%{customdata[2]:.3f}`` (weight).
    Each subplot has an invisible scatter point on every cell: clicking one selects the point, and
    its ``customdata[3]``/``[4]`` are the layer and head (1-based).
    """
    maps = np.asarray(maps, dtype=float)
    L, H, tq, tk = maps.shape
    fig = make_subplots(rows=L, cols=H, subplot_titles=list(titles), horizontal_spacing=0.03,
                        vertical_spacing=0.12 if L > 1 else 0.0)
    qs = [token_label(t) for t in query_tokens]
    ks = [token_label(t) for t in key_tokens]
    ii, jj = np.meshgrid(np.arange(tq), np.arange(tk), indexing="ij")
    cmax = max(float(maps.max()) if maps.size else 1.0, 1e-6)
    show_ticks = max(tq, tk) <= TICK_LABEL_LIMIT
    for layer in range(L):
        for head in range(H):
            z = _round(maps[layer, head])
            fig.add_trace(go.Heatmap(z=z, x=list(range(tk)), y=list(range(tq)), coloraxis="coloraxis",
                                     hoverinfo="skip"), row=layer + 1, col=head + 1)
            custom = np.empty((tq * tk, 5), dtype=object)  # numpy: plotly validates it without a walk
            custom[:, 0] = np.asarray(qs, dtype=object)[ii.ravel()]
            custom[:, 1] = np.asarray(ks, dtype=object)[jj.ravel()]
            custom[:, 2] = z.ravel()
            custom[:, 3] = layer + 1
            custom[:, 4] = head + 1
            fig.add_trace(go.Scatter(
                x=jj.ravel(), y=ii.ravel(), mode="markers", customdata=custom, showlegend=False,
                marker=dict(size=10, opacity=0, color="#000"),
                selected=dict(marker=dict(opacity=0)), unselected=dict(marker=dict(opacity=0)),
                hovertemplate=hover.replace("{layer}", str(layer + 1)).replace("{head}", str(head + 1))
                + "<extra></extra>",
            ), row=layer + 1, col=head + 1)
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(showticklabels=False)
    fig.update_yaxes(showticklabels=False)
    if show_ticks:  # labels on the outer edges only: inner ones would run into the next map
        fig.update_xaxes(**axis_labels(key_tokens), tickfont=dict(size=9), tickangle=0, showticklabels=True,
                         row=L)
        fig.update_yaxes(**axis_labels(query_tokens), tickfont=dict(size=9), showticklabels=True, col=1)
    fig.update_xaxes(showgrid=False, zeroline=False, range=[-0.5, tk - 0.5])
    fig.update_yaxes(showgrid=False, zeroline=False)
    fig.update_layout(
        coloraxis=dict(colorscale="Blues", cmin=0.0, cmax=round(cmax, 4), colorbar=dict(thickness=12)),
        height=max(220, int(L * (150 if H > 4 else 190) + 60)),
        margin=dict(l=10, r=10, t=40, b=10), clickmode="event+select", dragmode=False,
    )
    for annotation in fig.layout.annotations:
        annotation.font = dict(size=12)
    return fig


def build_zoom_figure(weights: np.ndarray, query_tokens: Sequence[str], key_tokens: Sequence[str], *,
                      blocked: np.ndarray | None, title: str, x_title: str, y_title: str, hover: str) -> go.Figure:
    """One head's (T_q, T_k) weights, large, tokens on both axes; ``blocked`` cells get an ✕."""
    weights = _round(weights)
    return heatmap(weights, key_tokens, query_tokens, title=title, x_title=x_title, y_title=y_title,
                   masked=blocked, hover=hover, text_values=max(weights.shape) <= 14,
                   height=max(320, 30 * len(query_tokens) + 140))


def build_vectors_figure(q: np.ndarray, k: np.ndarray, v: np.ndarray, query_tokens: Sequence[str],
                         key_tokens: Sequence[str], *, titles: Sequence[str], x_title: str,
                         hover: str) -> go.Figure:
    """Q (T_q, d_k), K and V (T_k, d_k) side by side on one diverging colour scale centred on 0."""
    mats = [_round(m, 3) for m in (q, k, v)]
    bound = max(float(np.abs(m).max()) if m.size else 1.0 for m in mats) or 1.0
    fig = make_subplots(rows=1, cols=3, subplot_titles=list(titles), horizontal_spacing=0.08)
    for col, (m, tokens) in enumerate(zip(mats, (query_tokens, key_tokens, key_tokens)), start=1):
        labels = [token_label(t) for t in tokens]
        custom = [[labels[i]] * m.shape[1] for i in range(m.shape[0])]
        fig.add_trace(go.Heatmap(z=m, x=list(range(m.shape[1])), y=list(range(m.shape[0])), coloraxis="coloraxis",
                                 customdata=custom, hovertemplate=hover + "<extra></extra>"), row=1, col=col)
        fig.update_yaxes(**axis_labels(tokens), autorange="reversed", row=1, col=col)
        fig.update_xaxes(title=x_title, row=1, col=col)
    fig.update_layout(coloraxis=dict(colorscale="RdBu", cmid=0.0, cmin=-bound, cmax=bound,
                                     colorbar=dict(thickness=12)),
                      height=max(260, 24 * max(len(query_tokens), len(key_tokens)) + 120),
                      margin=dict(l=10, r=10, t=40, b=10))
    return fig


def _cell_text(values: np.ndarray, blocked: np.ndarray | None, fmt: str) -> list[list[str]]:
    """Values written in the cells, left blank where the mask hides the cell (an ✕ goes there)."""
    return [["" if blocked is not None and blocked[i, j] else format(float(x), fmt) for j, x in enumerate(row)]
            for i, row in enumerate(np.asarray(values))]


def _masked_markers(fig: go.Figure, blocked: np.ndarray | None, **where) -> None:
    if blocked is not None and blocked.any():
        rows, cols = np.nonzero(blocked)
        fig.add_trace(go.Scatter(x=cols, y=rows, mode="markers", hoverinfo="skip", showlegend=False,
                                 marker=dict(symbol="x-thin", size=9, line=dict(width=1.5, color="#d62728"))),
                      **where)


def build_scores_figure(scores: np.ndarray, query_tokens: Sequence[str], key_tokens: Sequence[str], *,
                        blocked: np.ndarray | None, title: str, x_title: str, y_title: str,
                        hover: str) -> go.Figure:
    """Scores before the softmax (T_q, T_k), on a diverging scale centred on 0.

    Cells the mask hides are left empty with an ✕: the softmax never sees their score.
    """
    scores = _round(scores, 3)
    shown = scores if blocked is None else np.where(blocked, np.nan, scores)
    visible = shown[~np.isnan(shown)]
    bound = float(np.abs(visible).max()) if visible.size else 1.0
    qs = [token_label(t) for t in query_tokens]
    ks = [token_label(t) for t in key_tokens]
    custom = [[[qs[i], ks[j]] for j in range(len(ks))] for i in range(len(qs))]
    with_text = max(scores.shape) <= 12
    fig = go.Figure(go.Heatmap(
        z=shown, x=list(range(len(ks))), y=list(range(len(qs))), zmin=-bound, zmax=bound, colorscale="RdBu_r",
        zmid=0.0, customdata=custom if len(qs) and len(ks) else None, hoverongaps=False,
        hovertemplate=hover.replace("%{y}", "%{customdata[0]}").replace("%{x}", "%{customdata[1]}") + "<extra></extra>",
        text=_cell_text(scores, blocked, ".2f") if with_text else None, texttemplate="%{text}" if with_text else None,
        colorbar=dict(thickness=12),
    ))
    _masked_markers(fig, blocked)
    fig.update_xaxes(title=x_title, **axis_labels(key_tokens), showgrid=False, zeroline=False)
    fig.update_yaxes(title=y_title, **axis_labels(query_tokens), autorange="reversed", showgrid=False, zeroline=False)
    fig.update_layout(title=title, height=max(320, 30 * len(query_tokens) + 140), margin=dict(l=10, r=10, t=40, b=10),
                      plot_bgcolor="#f4f4f7")
    return fig


def build_weights_entropy_figure(weights: np.ndarray, query_tokens: Sequence[str], key_tokens: Sequence[str], *,
                                 blocked: np.ndarray | None, titles: Sequence[str], x_title: str, y_title: str,
                                 entropy_title: str, hover: str, entropy_hover: str) -> go.Figure:
    """Softmax weights (T_q, T_k) with each row's entropy (bits) as a bar beside the row."""
    weights = _round(weights)
    entropy = np.round(row_entropy(weights), 3)
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, column_widths=[0.8, 0.2], horizontal_spacing=0.02,
                        subplot_titles=list(titles))
    qs = [token_label(t) for t in query_tokens]
    ks = [token_label(t) for t in key_tokens]
    custom = [[[qs[i], ks[j]] for j in range(len(ks))] for i in range(len(qs))]
    with_text = max(weights.shape) <= 12
    fig.add_trace(go.Heatmap(
        z=weights, x=list(range(len(ks))), y=list(range(len(qs))), zmin=0.0, zmax=1.0, colorscale="Blues",
        customdata=custom if len(qs) and len(ks) else None, colorbar=dict(thickness=12, x=1.01),
        hovertemplate=hover.replace("%{y}", "%{customdata[0]}").replace("%{x}", "%{customdata[1]}") + "<extra></extra>",
        text=_cell_text(weights, blocked, ".2f") if with_text else None, texttemplate="%{text}" if with_text else None,
    ), row=1, col=1)
    _masked_markers(fig, blocked, row=1, col=1)
    fig.add_trace(go.Bar(x=entropy, y=list(range(len(qs))), orientation="h", marker_color="#ff7f0e",
                         customdata=qs, hovertemplate=entropy_hover + "<extra></extra>", showlegend=False),
                  row=1, col=2)
    max_bits = math.log2(len(ks)) if len(ks) > 1 else 1.0
    fig.update_xaxes(title=x_title, **axis_labels(key_tokens), row=1, col=1)
    fig.update_xaxes(title=entropy_title, range=[0, max_bits * 1.05], row=1, col=2)
    fig.update_yaxes(title=y_title, **axis_labels(query_tokens), autorange="reversed", row=1, col=1)
    fig.update_layout(height=max(320, 30 * len(query_tokens) + 140), margin=dict(l=10, r=10, t=40, b=10))
    return fig


def build_stats_figure(stats: pd.DataFrame, *, x_title: str, y_title: str, layer_label: str,
                       hover: str) -> go.Figure:
    """Each head as a dot: mean attended distance (x) against mean entropy (y), one colour per layer."""
    fig = go.Figure()
    for layer, group in stats.groupby("layer"):
        fig.add_trace(go.Scatter(
            x=group["distance"], y=group["entropy"], mode="markers+text",
            text=[f"H{h}" for h in group["head"]], textposition="top center",
            name=f"{html.escape(layer_label)} {layer}", marker=dict(size=10 + 14 * group["diagonal"].to_numpy()),
            customdata=np.stack([group["layer"], group["head"], group["diagonal"]], axis=1),
            hovertemplate=hover + "<extra></extra>",
        ))
    fig.update_xaxes(title=x_title, rangemode="tozero")
    fig.update_yaxes(title=y_title, rangemode="tozero")
    fig.update_layout(height=360, margin=dict(l=10, r=10, t=20, b=10), legend=dict(orientation="h", y=1.12))
    return fig


def build_ablation_figure(tokens: Sequence[str], before: np.ndarray, after: np.ndarray, *, names: Sequence[str],
                          x_title: str, y_title: str, hover: str) -> go.Figure:
    """Per-position probability of the same answer tokens, all heads on vs the chosen heads off."""
    fig = go.Figure()
    for name, values, colour in zip(names, (before, after), ("#1f77b4", "#d62728")):
        fig.add_trace(go.Bar(x=list(range(len(tokens))), y=_round(values), name=html.escape(name),
                             marker_color=colour, hovertemplate=hover + "<extra></extra>"))
    fig.update_xaxes(title=x_title, **axis_labels(tokens))
    fig.update_yaxes(title=y_title, range=[0, 1.02])
    fig.update_layout(barmode="group", height=320, margin=dict(l=10, r=10, t=20, b=10),
                      legend=dict(orientation="h", y=1.15))
    return fig

"""The decoding page's data and figures: per-step traces of greedy, beam and sampling decoding, and
teacher forcing, as plain Python/numpy (pages never see a tensor).

Traces are cached per process (``st.cache_data``) on the model's key and every input, so moving the
step slider or switching language never decodes again.
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from figures.labels import axis_labels, heatmap, token_label

STRATEGIES: tuple[str, ...] = ("greedy", "beam", "sample")
TOP_K_CHOICES: tuple[str, ...] = ("1", "2", "3", "5", "10", "20", "all")
TRACE_K = 8  # candidates listed per step
CACHE_ENTRIES = 256
EOS, BOS = "<eos>", "<bos>"
VISIBLE_SPACE = "␣"


def visible(token: str) -> str:
    """A token as shown in tables and sentences: a space becomes ␣ so it cannot vanish."""
    return VISIBLE_SPACE if token == " " else token


@dataclass(frozen=True)
class StepView:
    """One decoding step. Attention: decoder (L, H, t, t) over the prefix, cross (L, H, S) float32."""

    prefix: list[str]  # decoder input at this step, starting with <bos> (t tokens)
    chosen: str  # the token appended after this step (may be <eos>)
    chosen_prob: float  # its probability under the model (temperature 1)
    top_tokens: list[str]
    top_probs: list[float]
    sampling_probs: list[float]  # sampling only: the same tokens' probabilities after temperature/top-k
    decoder_attention: np.ndarray
    cross_attention: np.ndarray


@dataclass(frozen=True)
class BeamRow:
    text: str  # generated so far, without <bos>/<eos>
    score: float  # summed log-probability
    finished: bool
    rank_score: float


@dataclass(frozen=True)
class DecodeTrace:
    """A whole decoding run. ``score`` is the summed natural-log probability of the chosen tokens."""

    strategy: str
    src_tokens: list[str]
    output: str
    finished: bool  # <eos> was reached (else the length limit stopped it)
    score: float
    steps: list[StepView]
    beams: list[list[BeamRow]] = field(default_factory=list)  # beam search: per step, best first
    max_len: int = 0


@dataclass(frozen=True)
class TeacherForcingView:
    """Every position predicted from the TRUE previous tokens in one pass (how training sees it)."""

    input_tokens: list[str]  # <bos> + target
    target_tokens: list[str]  # target + <eos>
    predicted_tokens: list[str]
    predicted_probs: list[float]
    true_probs: list[float]
    n_correct: int
    score: float


def decode_limit(ckpt: Any, source: str) -> int:
    """Longest output to generate, <eos> included: room for the source's length and some slack."""
    return max(1, min(ckpt.model.config.max_len, len(source) + 16))


def parse_top_k(choice: str) -> int | None:
    """``"all"`` -> None (no filter), ``"5"`` -> 5."""
    return None if choice == "all" else int(choice)


# ------------------------------------------------------------------ cached runs


def _step_view(tokenizer, step) -> StepView:
    return StepView(
        prefix=tokenizer.token_strings(step.prefix),
        chosen=tokenizer.token_strings([step.chosen])[0],
        chosen_prob=float(np.exp(step.chosen_logprob)),
        top_tokens=tokenizer.token_strings(step.top_ids),
        top_probs=[float(p) for p in step.top_probs],
        sampling_probs=[float(p) for p in step.sampling_probs],
        decoder_attention=step.decoder_attention.numpy().astype(np.float32),
        cross_attention=step.cross_attention.numpy().astype(np.float32),
    )


@st.cache_data(max_entries=CACHE_ENTRIES, show_spinner=False)
def decode(
    _ckpt: Any,
    key: tuple[str, int],
    source: str,
    strategy: str,
    *,
    beam_size: int = 1,
    temperature: float = 1.0,
    top_k: int | None = None,
    seed: int = 0,
) -> DecodeTrace:
    """Decode ``source`` with ``strategy`` (one of STRATEGIES), cached on ``key`` and the inputs.

    Only the parameters of the chosen strategy matter; pass the others at their defaults so that
    changing, say, the temperature does not invalidate the greedy trace.
    """
    from model import decoding

    tok, model = _ckpt.tokenizer, _ckpt.model
    src = tok.encode(source)[: model.config.max_len]
    limit = decode_limit(_ckpt, source)
    ids = dict(bos_id=tok.bos_id, eos_id=tok.eos_id)
    if strategy == "greedy":
        result = decoding.greedy_decode(model, src, max_len=limit, top_k=TRACE_K, **ids)
    elif strategy == "beam":
        result = decoding.beam_search(model, src, beam_size=beam_size, max_len=limit, top_k=TRACE_K, **ids)
    elif strategy == "sample":
        result = decoding.sample_decode(model, src, temperature=temperature, top_k=top_k, seed=seed, max_len=limit,
                                        trace_k=TRACE_K, **ids)
    else:
        raise ValueError(f"Unknown decoding strategy {strategy!r}; use one of {STRATEGIES}.")
    beams = [[BeamRow(tok.decode(b.tokens), float(b.score), bool(b.finished), float(b.rank_score)) for b in row]
             for row in result.beams]
    return DecodeTrace(
        strategy=strategy,
        src_tokens=tok.token_strings(src),
        output=tok.decode(result.tokens),
        finished=bool(result.finished),
        score=float(result.score),
        steps=[_step_view(tok, step) for step in result.steps],
        beams=beams,
        max_len=limit,
    )


@st.cache_data(max_entries=CACHE_ENTRIES, show_spinner=False)
def teacher_forcing(_ckpt: Any, key: tuple[str, int], source: str, target: str) -> TeacherForcingView:
    """The model's prediction at every position of ``target`` when fed the true prefix."""
    from model import decoding

    tok, model = _ckpt.tokenizer, _ckpt.model
    limit = model.config.max_len
    src = tok.encode(source)[:limit]
    tgt = tok.encode(target)[: limit - 1]
    result = decoding.teacher_forced_predictions(model, src, tgt, bos_id=tok.bos_id, eos_id=tok.eos_id)
    return TeacherForcingView(
        input_tokens=tok.token_strings(result.input_ids),
        target_tokens=tok.token_strings(result.target_ids),
        predicted_tokens=tok.token_strings(result.predicted_ids),
        predicted_probs=[float(p) for p in result.predicted_probs],
        true_probs=[float(p) for p in result.true_probs],
        n_correct=int(result.n_correct),
        score=float(result.score),
    )


# ------------------------------------------------------------------ plain tables


def generated_tokens(trace: DecodeTrace, upto: int | None = None) -> list[str]:
    """Tokens chosen in the first ``upto`` steps (all by default), <eos> included if it was chosen."""
    return [step.chosen for step in trace.steps[:upto]]


def beams_table(trace: DecodeTrace, columns: dict[str, str], step: int | None = None) -> pd.DataFrame:
    """Beam-search hypotheses per step (or of one 1-based ``step``), best first; ``columns`` names them.

    ``columns`` maps ``step``, ``rank``, ``text``, ``score``, ``finished`` to the shown headers.
    """
    rows = []
    for number, row in enumerate(trace.beams, start=1):
        if step is not None and number != step:
            continue
        for rank, beam in enumerate(row, start=1):
            rows.append({"step": number, "rank": rank, "text": beam.text + (" " + EOS if beam.finished else ""),
                         "score": round(beam.score, 3), "finished": beam.finished})
    frame = pd.DataFrame(rows, columns=["step", "rank", "text", "score", "finished"])
    return frame.rename(columns=columns)


def forcing_table(tf: TeacherForcingView, free: DecodeTrace, columns: dict[str, str]) -> pd.DataFrame:
    """Position by position: what teacher forcing reads and predicts next to what free running does.

    ``columns`` maps ``position``, ``reads_true``, ``should``, ``predicts``, ``p_true``, ``ok``,
    ``reads_own``, ``writes_own`` to the shown headers. Free-running cells past its end are empty.
    """
    own = generated_tokens(free)
    own_inputs = [BOS] + own
    rows = []
    for i, target in enumerate(tf.target_tokens):
        rows.append({
            "position": i,
            "reads_true": visible(tf.input_tokens[i]),
            "should": visible(target),
            "predicts": visible(tf.predicted_tokens[i]),
            "p_true": round(tf.true_probs[i], 3),
            "ok": "✓" if tf.predicted_tokens[i] == target else "✗",
            "reads_own": visible(own_inputs[i]) if i < len(own) else "",
            "writes_own": visible(own[i]) if i < len(own) else "",
        })
    frame = pd.DataFrame(rows, columns=["position", "reads_true", "should", "predicts", "p_true", "ok",
                                        "reads_own", "writes_own"])
    return frame.rename(columns=columns)


def first_difference(a: Sequence[str], b: Sequence[str]) -> int | None:
    """First index where ``a`` and ``b`` differ (a shorter one differs at its end); None if equal."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


# ------------------------------------------------------------------ figures (pure builders)


def build_triangle_figure(weights: np.ndarray, prefix: Sequence[str], final_length: int, *, title: str,
                          x_title: str, y_title: str, hover: str) -> go.Figure:
    """The masked self-attention (t, t) of this step inside the frame of the last step (N, N).

    Positions not written yet are left empty (no label, no colour), so the triangle grows step by
    step in a fixed frame; the newest row, the one that predicts the next token, is outlined.
    """
    t = len(prefix)
    n = max(final_length, t)
    z = np.full((n, n), np.nan)
    z[:t, :t] = np.round(np.asarray(weights, dtype=float), 4)
    tokens = list(prefix) + [""] * (n - t)
    blocked = np.zeros((n, n), dtype=bool)
    blocked[:t, :t] = np.triu(np.ones((t, t), dtype=bool), k=1)
    fig = heatmap(z, tokens, tokens, title=title, x_title=x_title, y_title=y_title, masked=blocked, hover=hover,
                  text_values=False, height=max(320, 26 * n + 140))
    fig.update_traces(hoverongaps=False, selector=dict(type="heatmap"))
    fig.add_shape(type="rect", x0=-0.5, x1=t - 0.5, y0=t - 1.5, y1=t - 0.5, line=dict(color="#d62728", width=2))
    fig.update_layout(plot_bgcolor="#f4f4f7")
    fig.update_xaxes(showgrid=False, zeroline=False)
    fig.update_yaxes(showgrid=False, zeroline=False)
    return fig


def build_cross_figure(cross: np.ndarray, src_tokens: Sequence[str], head_labels: Sequence[str], *, title: str,
                       x_title: str, hover: str) -> go.Figure:
    """(H, S): how each head of one layer spreads the newest position's attention over the source."""
    cross = np.round(np.asarray(cross, dtype=float), 4)
    return heatmap(cross, src_tokens, head_labels, title=title, x_title=x_title, hover=hover,
                   text_values=len(src_tokens) <= 20, height=max(200, 34 * len(head_labels) + 130))


def build_topk_figure(tokens: Sequence[str], probs: Sequence[float], chosen: str, *, sampling: Sequence[float] = (),
                      names: tuple[str, str], x_title: str, hover: str) -> go.Figure:
    """The most likely next tokens as horizontal bars, most likely on top; the chosen one in red.

    With ``sampling``, a second bar per token shows the distribution actually sampled from.
    """
    k = len(tokens)
    colours = ["#d62728" if tok == chosen else "#1f77b4" for tok in tokens]
    labels = [token_label(tok) for tok in tokens]
    fig = go.Figure(go.Bar(x=np.round(probs, 4), y=list(range(k)), orientation="h", marker_color=colours,
                           name=html.escape(names[0]), customdata=labels, hovertemplate=hover + "<extra></extra>",
                           text=[f"{p:.2f}" for p in probs], textposition="outside", cliponaxis=False))
    if sampling:
        fig.add_trace(go.Bar(x=np.round(sampling, 4), y=list(range(k)), orientation="h", marker_color="#ff7f0e",
                             opacity=0.7, name=html.escape(names[1]), customdata=labels,
                             hovertemplate=hover + "<extra></extra>"))
    fig.update_yaxes(**axis_labels(tokens), autorange="reversed", tickfont=dict(size=14))
    fig.update_xaxes(title=x_title, range=[0, 1.12])
    fig.update_layout(barmode="group", height=max(260, 34 * k + 100), margin=dict(l=10, r=10, t=30, b=10),
                      showlegend=bool(sampling), legend=dict(orientation="h", y=1.12))
    return fig


def build_forcing_figure(tokens: Sequence[str], true_probs: Sequence[float], correct: Sequence[bool], *,
                         x_title: str, y_title: str, hover: str) -> go.Figure:
    """Probability of the true next token at each position under teacher forcing (red where wrong)."""
    colours = ["#2ca02c" if ok else "#d62728" for ok in correct]
    fig = go.Figure(go.Bar(x=list(range(len(tokens))), y=np.round(true_probs, 4), marker_color=colours,
                           customdata=[token_label(t) for t in tokens], hovertemplate=hover + "<extra></extra>"))
    fig.update_xaxes(title=x_title, **axis_labels(tokens))
    fig.update_yaxes(title=y_title, range=[0, 1.02])
    fig.update_layout(height=300, margin=dict(l=10, r=10, t=20, b=10))
    return fig

"""A batch of typed sentences as the model sees it, and the embedding lookup, as plain data.

The tokens and masks pages share the batch: the sentences (one per line) become the encoder's
source ids, the decoder's input (``<bos>`` + the task's answer) and its labels (the answer +
``<eos>``), each padded with ``<pad>`` to the batch's longest row, exactly as
:func:`model.tasks.batch_from_pairs` builds a training batch.
"""
from __future__ import annotations

import functools
import html
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd
from pandas.io.formats.style import Styler
import plotly.graph_objects as go
import streamlit as st
import torch

from model.tasks import DEFAULT_ALPHABET, get_task
from model.tokenizer import BOS_ID, EOS_ID, PAD_ID, UNK_ID, CharTokenizer
from figures.labels import VISIBLE_SPACE, token_label
from ui.frozen_figure import freeze
from ui.i18n import t
from ui.lean_charts import value_heatmap
from ui.prepared_html import compact
from explain.text import MAX_CHARS
from ui.url_state import IntParam, TextParam, bind, clamp_state, markdown_literal

DEFAULT_BATCH = "hello world\nattention is all you need\nhi!"
BATCH_PARAM = TextParam("batch", default=DEFAULT_BATCH, max_len=2000)
BATCH_KEY = "batch.text"
SENTENCE_KEY = "batch.sentence"
SIDES: tuple[str, ...] = ("source", "decoder_in", "labels")
KINDS: tuple[str, ...] = ("char", "special", "unk", "pad")

# How the tables show each kind of cell: padding greyed out, <bos>/<eos> blue, <unk> red.
TABLE_STYLES = [
    {"selector": "", "props": "border-collapse: collapse; font-size: 0.85rem; margin-bottom: 0.5rem"},
    {"selector": "th, td", "props": "border: 1px solid #dfe1e6; padding: 3px 7px; text-align: center; "
                                    "white-space: pre; min-width: 1.6em"},
    {"selector": "td", "props": "font-family: 'Source Code Pro', monospace"},
    {"selector": "th", "props": "background: #f4f4f7; color: #5c6070; font-weight: 500"},
    {"selector": "td.special", "props": "background: #dbe9fb; color: #0b4a8b; font-weight: 600"},
    {"selector": "td.unk", "props": "background: #fde0df; color: #a1131c; font-weight: 600"},
    {"selector": "td.pad", "props": "background: #e4e5e9; color: #8a8d96; font-style: italic"},
]


@dataclass(frozen=True)
class Row:
    """One padded sequence: display tokens, ids and the kind of each cell (see :data:`KINDS`)."""

    tokens: list[str]
    ids: list[int]
    kinds: list[str]

    @property
    def length(self) -> int:
        """Tokens before the padding."""
        return sum(kind != "pad" for kind in self.kinds)


@dataclass(frozen=True)
class SentenceBatch:
    """B sentences as three padded (B, S) / (B, T) / (B, T) batches; ``targets[b]`` None = no answer."""

    sentences: list[str]
    targets: list[str | None]
    source: list[Row]
    decoder_in: list[Row]
    labels: list[Row]

    def side(self, name: str) -> list[Row]:
        return {"source": self.source, "decoder_in": self.decoder_in, "labels": self.labels}[name]


def display_token(token: str) -> str:
    """A token as a table cell shows it: spaces and control characters made visible, never escaped.

    Table cells are plain text (unlike plotly labels, see :func:`ui.charts.token_label`), so
    ``<pad>`` and ``<b>`` stay literal without escaping.
    """
    if token == " ":
        return VISIBLE_SPACE
    return "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in token)


def _kind(token_id: int) -> str:
    if token_id == PAD_ID:
        return "pad"
    if token_id in (BOS_ID, EOS_ID):
        return "special"
    return "unk" if token_id == UNK_ID else "char"


def _padded(tokenizer: CharTokenizer, sequences: list[list[int]]) -> list[Row]:
    width = max((len(s) for s in sequences), default=0)
    rows = []
    for ids in sequences:
        ids = ids + [PAD_ID] * (width - len(ids))
        rows.append(Row(tokens=tokenizer.token_strings(ids), ids=ids, kinds=[_kind(i) for i in ids]))
    return rows


def task_target(task_name: str | None, sentence: str) -> str | None:
    """The task's correct answer to ``sentence`` (the copy task's when the task is unknown)."""
    try:
        task = get_task(task_name or "copy")
    except (KeyError, ValueError):
        task = get_task("copy")
    return task.target_for(sentence)


def sentence_batch(sentences: list[str], tokenizer: CharTokenizer, task_name: str | None) -> SentenceBatch:
    """The batch the model would get for ``sentences`` (already cleaned by ``prepare_sentences``)."""
    targets = [task_target(task_name, s) for s in sentences]
    return SentenceBatch(
        sentences=list(sentences),
        targets=targets,
        source=_padded(tokenizer, [tokenizer.encode(s) for s in sentences]),
        decoder_in=_padded(tokenizer, [tokenizer.encode(t or "", add_bos=True) for t in targets]),
        labels=_padded(tokenizer, [tokenizer.encode(t or "", add_eos=True) for t in targets]),
    )


@functools.lru_cache(maxsize=64)
def cached_batch(sentences: tuple[str, ...], tokenizer: CharTokenizer, task_name: str | None) -> SentenceBatch:
    """:func:`sentence_batch`, once per process for each input (shared: never change the result)."""
    return sentence_batch(list(sentences), tokenizer, task_name)


@functools.lru_cache(maxsize=128)
def side_table_html(sentences: tuple[str, ...], tokenizer: CharTokenizer, task_name: str | None, side: str,
                    row_labels: tuple[str, ...], values: str) -> str:
    """One side of the batch as an HTML table of ``values`` ("tokens" or "ids"), cached."""
    batch = cached_batch(sentences, tokenizer, task_name)
    tokens, ids, kinds = side_frames(batch.side(side), list(row_labels))
    return table_html(tokens if values == "tokens" else ids, kinds, f"batch_{side}_{values}")


@functools.lru_cache(maxsize=128)
def side_tables_html(sentences: tuple[str, ...], tokenizer: CharTokenizer, task_name: str | None, side: str,
                     row_labels: tuple[str, ...], headings: tuple[str, str], caption: str = "") -> str:
    """One side of the batch as two HTML tables, tokens then ids, each under its heading, and
    ``caption`` (Markdown with `code` spans) below them, cached: one element for the page to send."""
    parts = [f'<div class="tp-batch-{values}"><p><strong>{html.escape(heading)}</strong></p>'
             f"{side_table_html(sentences, tokenizer, task_name, side, row_labels, values)}</div>"
             for values, heading in zip(("tokens", "ids"), headings)]
    if caption:
        parts.append(f'<p class="tp-caption" style="font-size: 0.875rem; opacity: 0.7; margin-top: 0.5rem">'
                     f"{code_spans_html(caption)}</p>")
    return "".join(parts)


def code_spans_html(text: str) -> str:
    """``text`` escaped for HTML, its Markdown `code` spans drawn as ``<code>``."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


@functools.lru_cache(maxsize=128)
def sentence_table_html(sentences: tuple[str, ...], tokenizer: CharTokenizer, task_name: str | None, index: int,
                        labels: tuple[tuple[str, str], ...]) -> str:
    """Characters → tokens → ids of sentence ``index`` as an HTML table, cached."""
    frame, kinds = sentence_frame(cached_batch(sentences, tokenizer, task_name), index, dict(labels))
    return table_html(frame, kinds, "sentence")


def char_limit(ckpt) -> int:
    """Characters per sentence the pages accept: 48, or fewer if the model's positions run out first.

    The decoder reads ``<bos>`` + the answer, so a sentence may use ``max_len - 1`` positions.
    """
    if ckpt is None:
        return MAX_CHARS
    return max(1, min(MAX_CHARS, ckpt.model.config.max_len - 1))


def markdown_safe(values: dict) -> dict:
    """Format values for a catalog text shown as Markdown: user text escaped, numbers untouched."""
    return {k: markdown_literal(v, 80) if isinstance(v, str) else v for k, v in values.items()}


def show_notices(prepared) -> None:
    """One warning per notice of a :class:`ui.text_input.PreparedText` (every page's text boxes)."""
    for notice in prepared.notices:
        st.warning(t(notice.key, **markdown_safe(notice.values)), icon=":material/warning:")


@functools.lru_cache(maxsize=1)
def fallback_tokenizer() -> CharTokenizer:
    """The default task alphabet's tokenizer, for showing tokens when no model is available."""
    return CharTokenizer(DEFAULT_ALPHABET)


# ------------------------------------------------------------------ the shared widgets


_SHARED_OWNER_KEY = "_tokens_view.widget_page"  # {widget key: page that drew it last}


def _shared_key(param, key: str, page: str) -> str:
    """``bind(param, key=key)`` for a widget that two pages create under the same key.

    Streamlit gives each page's widget its own id, so on the first run after a switch the state
    left by the other page's widget would not reach this one (it would start empty). Assigning
    the value again in that run hands it over; later runs leave the widget alone.
    """
    bind(param, key=key)
    owners = st.session_state.setdefault(_SHARED_OWNER_KEY, {})
    if owners.get(key) != page:
        st.session_state[key] = st.session_state[key]
        owners[key] = page
    return key


def batch_input(label: str, help_text: str, page: str) -> str:
    """The batch's text box (``?batch=``), shared by the tokens and masks pages (``page``: which)."""
    return st.text_area(label, key=_shared_key(BATCH_PARAM, BATCH_KEY, page), max_chars=BATCH_PARAM.max_len,
                        height=120, help=help_text)


def sentence_picker(label: str, sentences: tuple[str, ...], option: str, page: str) -> int:
    """Which sentence of the batch the page looks at (``?sent=``); ``option`` formats ``{n}``, ``{text}``.

    Kept inside the batch when it shrinks; shared by both pages like :func:`batch_input`.
    """
    param = IntParam("sent", default=0, lo=0, hi=len(sentences) - 1)
    clamp_state(SENTENCE_KEY, param.hi)
    return st.selectbox(label, range(len(sentences)), key=_shared_key(param, SENTENCE_KEY, page),
                        format_func=lambda n: option.format(n=n + 1, text=sentences[n]))


# ------------------------------------------------------------------ tables


def side_frames(rows: list[Row], row_labels: list[str]) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:
    """(tokens, ids, kinds) of one side of the batch: B rows, one column per position 0..S-1."""
    width = len(rows[0].ids) if rows else 0
    columns = list(range(width))
    tokens = pd.DataFrame([[display_token(tok) for tok in r.tokens] for r in rows], index=row_labels,
                          columns=columns, dtype=object)
    ids = pd.DataFrame([r.ids for r in rows], index=row_labels, columns=columns)
    kinds = np.array([r.kinds for r in rows], dtype=object).reshape(len(rows), width)
    return tokens, ids, kinds


def table_html(frame: pd.DataFrame, kinds: np.ndarray, uuid: str) -> str:
    """``frame`` as an HTML table (pandas Styler) whose cells carry their kind as a CSS class.

    Cell text and row labels are HTML-escaped, so ``<pad>`` and typed ``<b>`` show literally;
    ``uuid`` scopes the table's CSS (use one per table on a page).
    """
    classes = pd.DataFrame(np.where(kinds == "char", "", kinds), index=frame.index, columns=frame.columns)
    styler = (Styler(frame, cell_ids=False).set_uuid(uuid).set_td_classes(classes).set_table_styles(TABLE_STYLES)
              .format(escape="html").format_index(escape="html", axis=0).format_index(escape="html", axis=1))
    return f'<div style="overflow-x: auto">{compact(styler.to_html())}</div>'


def sentence_frame(batch: SentenceBatch, index: int, labels: dict[str, str]) -> tuple[pd.DataFrame, np.ndarray]:
    """Characters → tokens → ids of sentence ``index``, one column per position, as text cells.

    ``labels`` names the rows: keys ``chars``, ``source``, ``source_ids``, ``decoder_in``,
    ``decoder_in_ids``, ``labels``, ``labels_ids``. Padding is left out (it is the batch's, not
    the sentence's). Returns the frame and the kinds of its cells for :func:`table_html`.
    """
    sentence = batch.sentences[index]
    parts = [(batch.source[index], "source"), (batch.decoder_in[index], "decoder_in"), (batch.labels[index], "labels")]
    width = max([len(sentence)] + [row.length for row, _ in parts])
    cells: list[list[str]] = []
    kinds: list[list[str]] = []

    def add(values: list[str], row_kinds: list[str]) -> None:
        cells.append(values + [""] * (width - len(values)))
        kinds.append(row_kinds + ["char"] * (width - len(row_kinds)))

    add([display_token(ch) for ch in sentence], ["char"] * len(sentence))
    for row, _ in parts:
        n = row.length
        add([display_token(tok) for tok in row.tokens[:n]], row.kinds[:n])
        add([str(i) for i in row.ids[:n]], row.kinds[:n])
    index_labels = [labels[k] for k in ("chars", "source", "source_ids", "decoder_in", "decoder_in_ids",
                                        "labels", "labels_ids")]
    frame = pd.DataFrame(cells, index=index_labels, columns=list(range(width)), dtype=object)
    return frame, np.array(kinds, dtype=object).reshape(len(cells), width)


# ------------------------------------------------------------------ embeddings
# Cached with ``functools.lru_cache`` (microseconds per lookup, unlike ``st.cache_*``): results
# are shared by every session and never changed; a checkpoint is keyed by identity.


@dataclass(frozen=True)
class EmbeddingStages:
    """The four steps from ids to the encoder's input, each (T, d_model) float64.

    ``total == lookup * scale + positional``, which is ``model.embed(ids, "src")`` in eval mode.
    ``matrix`` is the whole source embedding table (V, d_model) and ``vocab`` its row labels.
    """

    tokens: list[str]
    ids: list[int]
    scale: float
    lookup: np.ndarray
    scaled: np.ndarray
    positional: np.ndarray
    total: np.ndarray
    matrix: np.ndarray
    vocab: list[str]


@torch.inference_mode()
def embedding_stages(ckpt, ids: list[int]) -> EmbeddingStages:
    """Look ``ids`` up in the model's real source embedding, scale, add the model's PE table."""
    model = ckpt.model
    embed = model.src_embed
    matrix = embed.lookup.weight.detach().double().cpu().numpy()  # (V, d)
    ids = list(ids)[: model.config.max_len]
    lookup = matrix[ids]  # (T, d)
    scale = float(embed.scale)
    positional = model.pe[: len(ids)].double().cpu().numpy()  # (T, d)
    scaled = lookup * scale
    return EmbeddingStages(
        tokens=ckpt.tokenizer.token_strings(ids), ids=ids, scale=scale, lookup=lookup, scaled=scaled,
        positional=positional, total=scaled + positional, matrix=matrix,
        vocab=ckpt.tokenizer.token_strings(range(matrix.shape[0])),
    )


def rms(values: np.ndarray) -> float:
    """Root mean square: the typical size of one entry."""
    return float(np.sqrt(np.mean(np.square(values)))) if values.size else 0.0


@functools.lru_cache(maxsize=64)
def cached_stages(ckpt, ids: tuple[int, ...]) -> EmbeddingStages:
    """:func:`embedding_stages`, once per checkpoint (keyed by identity) and sentence."""
    return embedding_stages(ckpt, list(ids))


@functools.lru_cache(maxsize=64)
def stage_figures(ckpt, ids: tuple[int, ...], titles: tuple[str, ...],
                  axis: tuple[str, str, str]) -> tuple[go.Figure, ...]:
    """(lookup, × sqrt(d), + PE, encoder input) heatmaps on one colour scale, tokens down the side."""
    stages = cached_stages(ckpt, ids)
    x_title, y_title, hover = axis
    lim = max(float(np.abs(s).max()) for s in (stages.scaled, stages.positional, stages.total, stages.lookup))
    return tuple(
        freeze(value_heatmap(values, title=title, y_tokens=stages.tokens, x_title=x_title, y_title=y_title,
                      zmin=-lim, zmax=lim, hover=hover, height=max(240, min(560, 16 * len(ids) + 130)),
                      show_scale=n == 3))
        for n, (values, title) in enumerate(zip(
            (stages.lookup, stages.scaled, stages.positional, stages.total), titles))
    )


@functools.lru_cache(maxsize=32)
def matrix_figure(ckpt, ids: tuple[int, ...], axis: tuple[str, str, str]) -> go.Figure:
    """The whole embedding table (V, d), the rows this sentence looks up framed and marked ▶."""
    stages = cached_stages(ckpt, ids)
    x_title, y_title, hover = axis
    used = sorted(set(ids))
    lim = float(np.abs(stages.matrix).max()) or 1.0
    fig = value_heatmap(stages.matrix, y_tokens=stages.vocab, x_title=x_title, y_title=y_title,
                        zmin=-lim, zmax=lim, hover=hover, height=max(360, min(900, 11 * len(stages.vocab) + 120)))
    ticktext = [("▶ <b>" + token_label(tok) + "</b>") if i in used else token_label(tok)
                for i, tok in enumerate(stages.vocab)]
    fig.update_yaxes(ticktext=ticktext, tickfont=dict(size=10))
    width = stages.matrix.shape[1]
    for i in used:
        fig.add_shape(type="rect", x0=-0.5, x1=width - 0.5, y0=i - 0.5, y1=i + 0.5,
                      line=dict(color="#111111", width=1.5))
    return freeze(fig)

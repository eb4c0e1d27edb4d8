""""Use mine": a learner's function inside a shipped model, beside the model's own.

:func:`in_model` is trusted project code. In the server it runs with ``function=None`` (the model's own
functions); in the sandbox (``sandbox.runner.run(..., entry=ENTRY)``) the worker calls it with the
learner's function, which the forward then calls in place of the model's through the trace's
``replace`` (model/trace.py): their attention computes every attention, their masks mask every
attention, their positional table is added to both stacks' embeddings, their LayerNorm is every norm.
Their loss is not part of a forward: it scores the model's own teacher-forced logits, position by
position. Only shipped checkpoints are read (``assets/checkpoints``, bound read-only inside the
sandbox), by a name checked here; the ids are plain arrays the page made.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from model.checkpoint import load_checkpoint
from model.trace import Trace

CHECKPOINTS = Path(__file__).resolve().parents[2] / "assets" / "checkpoints"
ENTRY = "explain.exercises.use_mine:in_model"
LOSS = "label_smoothed_cross_entropy"
EPSILON = 0.1  # the paper's label smoothing, used to score the logits
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,40}")


def _attention(attention: Callable) -> Callable:
    """The learner's (output, weights[, more]) as the model's replaceable attention returns them."""
    def call(q, k, v, mask):
        result = attention(q, k, v, mask)
        if not isinstance(result, (tuple, list)) or len(result) < 2:
            raise TypeError("scaled_dot_product_attention must return (output, weights).")
        return result[0], result[1]
    return call


def _on(device: Any, value: Any) -> Any:
    return value.to(device) if isinstance(value, torch.Tensor) else value


# exercise function -> (the trace's replaceable name, the adapter from the model's signature to the learner's)
INTERVENTIONS: dict[str, tuple[str, Callable[[Callable], Callable]]] = {
    "scaled_dot_product_attention": ("attention", _attention),
    "look_ahead_mask": ("look_ahead_mask", lambda f: lambda size, device=None: _on(device, f(size))),
    "padding_mask": ("padding_mask", lambda f: lambda ids, pad_id: f(ids, pad_id)),
    "positional_encoding": ("positional", lambda f: lambda length, d_model, base: f(length, d_model)),
    "layer_norm": ("norm", lambda f: lambda x, weight, bias, eps: f(x, weight, bias, eps)),
}
FUNCTIONS = (*INTERVENTIONS, LOSS)  # every exercise function "use mine" can run


def _ids(value: Any, vocab: int, name: str) -> torch.Tensor:
    ids = torch.as_tensor(np.asarray(value), dtype=torch.long)
    if ids.ndim != 2 or ids.numel() == 0 or int(ids.min()) < 0 or int(ids.max()) >= vocab:
        raise ValueError(f"{name}: not a (B, T) batch of this model's token ids")
    return ids


def _model(model: str):
    if not _NAME.fullmatch(model):
        raise ValueError(f"Not a shipped model's name: {model!r}.")
    return load_checkpoint((CHECKPOINTS / f"{model}.pt").read_bytes(), map_location="cpu")  # no temp file: none is writable in the sandbox


@torch.inference_mode()
def in_model(function: Callable | None, name: str, model: str, src: Any, tgt_in: Any, labels: Any,
             row: int = 0) -> tuple[np.ndarray, ...]:
    """One teacher-forced forward of shipped ``model`` on the padded batch ``src`` (B, S) / ``tgt_in`` (B, T)
    with ``function`` (the learner's ``name``; None: the model's own) in its place. Returns, for batch row
    ``row``:

    * a forward function: (encoder self-attention (L, H, S, S), decoder self-attention (L, H, T, T),
      cross-attention (L, H, T, S), the predicted next token id at each target position (T,));
    * the loss: (the loss at each target position (T,), NaN where the label is padding; the mean loss of
      the batch (1,)), both with label smoothing ε = 0.1 on the model's own logits.
    """
    if name not in FUNCTIONS:
        raise ValueError(f"'use mine' does not run {name!r}.")
    ckpt = _model(model)
    config = ckpt.model.config
    src, tgt_in = _ids(src, config.src_vocab_size, "src"), _ids(tgt_in, config.tgt_vocab_size, "tgt_in")
    labels = _ids(labels, config.tgt_vocab_size, "labels")
    if src.size(0) != tgt_in.size(0) or labels.shape != tgt_in.shape or not 0 <= row < src.size(0):
        raise ValueError("the batch's shapes do not agree")
    if name == LOSS:
        return _loss(function, ckpt.model(src, tgt_in).logits, labels, row, config.pad_id)
    replace = {} if function is None else {INTERVENTIONS[name][0]: INTERVENTIONS[name][1](function)}
    trace = Trace(replace=replace)
    out = ckpt.model(src, tgt_in, trace=trace)
    layers = range(config.n_layers)

    def maps(at: str) -> np.ndarray:
        return torch.stack([trace[at.format(i=i)][row] for i in layers]).float().numpy()

    return (maps("encoder.{i}.self_attn.weights"), maps("decoder.{i}.self_attn.weights"),
            maps("decoder.{i}.cross_attn.weights"), out.logits[row].argmax(-1).numpy())


def _loss(function: Callable | None, logits: torch.Tensor, labels: torch.Tensor, row: int,
          pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    if function is None:
        from explain.exercises import LABEL_SMOOTHING, reference_function
        function = reference_function(LABEL_SMOOTHING)

    def scalar(value: Any) -> float:
        value = torch.as_tensor(value)
        if value.numel() != 1:
            raise TypeError(f"{LOSS} must return one number (the mean loss), not shape {tuple(value.shape)}.")
        return float(value)

    # The loss at position t: the whole row's logits, every label but t's made padding, so that the function sees
    # the shapes it sees in training (a softmax over the wrong axis stays wrong, as it would not on one position).
    each = np.full(labels.size(1), np.nan, dtype=np.float32)
    for t in range(labels.size(1)):
        if int(labels[row, t]) != pad_id:
            only_t = torch.full_like(labels[row:row + 1], pad_id)
            only_t[0, t] = labels[row, t]
            each[t] = scalar(function(logits[row:row + 1], only_t, EPSILON, pad_id))
    return each, np.asarray([scalar(function(logits, labels, EPSILON, pad_id))], dtype=np.float32)


Ids = tuple[tuple[int, ...], ...]


def sentence_ids(ckpt: Any, source: str, target: str) -> tuple[Ids, Ids, Ids]:
    """(src, tgt_in, labels) of one sentence and its target, as :func:`in_model` reads them: the source's ids,
    ``<bos>`` + the target's, and the target's + ``<eos>`` (what each position must predict)."""
    from explain.tokens import EOS_ID, source_ids, target_ids, target_tokenizer

    src = tuple(source_ids(ckpt, source)[0].tolist())
    tgt_in = tuple(target_ids(ckpt, target)[0].tolist())
    labels = (tuple(target_tokenizer(ckpt).encode(target)) + (EOS_ID,))[:len(tgt_in)]
    return (src,), (tgt_in,), (labels,)


def batch_ids(batch: Any) -> tuple[Ids, Ids, Ids]:
    """(src, tgt_in, labels) of a padded :class:`explain.tokens.SentenceBatch`."""
    return tuple(tuple(side_row.ids) for side_row in batch.source), \
        tuple(tuple(side_row.ids) for side_row in batch.decoder_in), tuple(tuple(side_row.ids) for side_row in batch.labels)

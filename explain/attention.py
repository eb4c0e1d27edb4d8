"""Attention of a checkpoint on typed text, as plain numpy data (pages never touch torch).

All functions take the checkpoint returned by :func:`ui.models.selected_model` and never change
it: the shipped models are shared read-only by every session. Attention arrays are
``(L, H, T_q, T_k)``: layers, heads, query positions, key positions; every row of a map is a
softmax over the keys and sums to 1.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from model.arrays import layer_stack, to_numpy
from model.tokenizer import BOS_ID, EOS_ID
from model.training import greedy_batch
from model.transformer import ForwardOptions


@dataclass(frozen=True)
class AttentionView:
    """One forward pass, as plain data. Attention arrays are (L, H, T_q, T_k) float64."""

    src_tokens: list[str]
    tgt_tokens: list[str]  # decoder input: <bos> + target
    answer: str  # the model's greedy output for the source
    encoder: np.ndarray
    decoder: np.ndarray
    cross: np.ndarray
    next_token_probs: np.ndarray  # (T, V) softmax of the logits
    vocab: list[str]
    details: dict = field(default_factory=dict)  # kind -> {"q","k","v","scores"}: (L, H, ...) arrays


@torch.inference_mode()
def greedy_answer(ckpt, source: str, options: ForwardOptions | None = None) -> str:
    """The model's greedy answer to ``source`` (characters outside its alphabet become <unk>)."""
    tok, model = ckpt.tokenizer, ckpt.model
    ids = tok.encode(source)[: model.config.max_len]
    if not ids:
        return ""
    src = torch.tensor([ids], device=model.device)
    opts = options or ForwardOptions(need_weights=False)
    out = greedy_batch(model, src, model.config.max_len - 1, opts)
    return tok.decode(out[0].tolist())


@torch.inference_mode()
def attention_view(
    ckpt,
    source: str,
    target: str | None = None,
    *,
    use_padding_mask: bool = True,
    use_look_ahead_mask: bool = True,
    use_positional_encoding: bool = True,
    scale_scores: bool = True,
    ablate_heads: tuple[tuple[str, int, int], ...] = (),
    need_details: bool = False,
    pad_source_to: int | None = None,
) -> AttentionView:
    """Every attention map of one forward pass of ``source`` (and ``target``, default: the answer).

    ``pad_source_to`` appends <pad> tokens to the source so the padding mask has something to
    hide (a batch of one sentence has no padding of its own).
    """
    tok, model = ckpt.tokenizer, ckpt.model
    limit = model.config.max_len
    src_ids = tok.encode(source)[:limit]
    if pad_source_to is not None and pad_source_to > len(src_ids):
        src_ids = src_ids + [tok.pad_id] * (min(pad_source_to, limit) - len(src_ids))
    answer = greedy_answer(ckpt, source, ForwardOptions(  # the answer needs no attention maps: fast path
        use_padding_mask=use_padding_mask, use_look_ahead_mask=use_look_ahead_mask,
        use_positional_encoding=use_positional_encoding, scale_scores=scale_scores,
        need_weights=False, ablate_heads=tuple(ablate_heads)))
    target = answer if target is None else target
    tgt_ids = ([BOS_ID] + tok.encode(target))[:limit]
    src = torch.tensor([src_ids], device=model.device)
    tgt = torch.tensor([tgt_ids], device=model.device)
    out = model(src, tgt, use_padding_mask, use_look_ahead_mask, use_positional_encoding=use_positional_encoding,
                scale_scores=scale_scores, need_details=need_details, ablate_heads=tuple(ablate_heads))
    details = {}
    if need_details:
        for kind, dets in (("encoder", out.encoder_details), ("decoder", out.decoder_details),
                           ("cross", out.cross_details)):
            details[kind] = {name: layer_stack([getattr(d, name) for d in dets]) for name in ("q", "k", "v", "scores")}
    return AttentionView(
        src_tokens=tok.token_strings(src_ids),
        tgt_tokens=tok.token_strings(tgt_ids),
        answer=answer,
        encoder=layer_stack(out.encoder_attention),
        decoder=layer_stack(out.decoder_attention),
        cross=layer_stack(out.cross_attention),
        next_token_probs=to_numpy(out.logits[0].softmax(-1)),
        vocab=tok.token_strings(range(tok.vocab_size)),
        details=details,
    )


def answer_probability(view: AttentionView, tokenizer) -> float:
    """Probability the model gives, under teacher forcing, to its answer (+ <eos>) in ``view``."""
    ids = tokenizer.encode(view.answer) + [EOS_ID]
    probs = view.next_token_probs[: len(ids)]
    return float(np.prod([probs[i, t] for i, t in enumerate(ids) if i < len(probs)]))

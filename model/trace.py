"""One record of a forward pass, and the interventions the pages make, on one object.

``model(src, tgt, trace=t)`` (or ``model.encode(src, opts, t)`` / ``model.decode(tgt, enc, opts, t)``) fills
``t`` with every intermediate of the pass, keyed by dotted names; with no trace the forward is the plain one
(SDPA when no weights are asked for). The same object carries the interventions: heads off, a residual
connection off, the √d_k scaling off, and ``replace``, which swaps one function of the model for this forward.
``ForwardOptions``' switches are mapped onto these interventions by :meth:`Trace.with_options` (one
implementation): padding / look-ahead mask off = a mask builder that returns None, positions off = a
positional table and a RoPE rotation that do nothing.

Names (``{stack}`` is "encoder" or "decoder", ``{i}`` a 0-based layer; B batch, S source, T target length)::

    {stack}.embed.token            (B, T, d)  token embedding · √d_model
    {stack}.embed.position         (T, d)     the sinusoidal rows added (only when the model adds a table)
    {stack}.embed.sum              (B, T, d)  what layer 0 reads (token + position, after dropout)
    {stack}.mask                   bool mask the stack's self-attention used (absent when None)
    {stack}.{i}.self_attn.*        attention, see below; the decoder also has {i}.cross_attn.*
    {stack}.{i}.ffn.hidden_pre     (B, T, h)  x W1 (+ b1): before the activation (SwiGLU: the gate's input)
    {stack}.{i}.ffn.value          (B, T, h)  SwiGLU only: x V, what the gate scales
    {stack}.{i}.ffn.hidden         (B, T, h)  after the activation (ReLU, or SiLU(x W1) ⊙ x V)
    {stack}.{i}.ffn.out            (B, T, d)  the feed-forward's output (before the connection's dropout)
    {stack}.{i}.{sub}_sublayer.*   one residual connection, sub in self_attn, cross_attn, ffn:
        .x_in          the stream entering        .sublayer_in   what the sublayer reads (x_in or Norm(x_in))
        .update        what is added (dropout(sublayer out))
        .norm_in       what the norm reads (post-norm x_in + update, pre-norm x_in)
        .x_out         the stream leaving
        .norm.in / .norm.out, and .norm.mean + .norm.var (LayerNorm) or .norm.rms (RMSNorm)
    {stack}.final_norm.*           pre-norm models only: in, out, mean + var or rms, as above
    memory                         (B, S, d)  the encoder's output
    decoder.state                  (B, T, d)  what the output layer reads
    logits                         (B, T, V)

Attention ``{att}`` = ``{stack}.{i}.self_attn`` or ``decoder.{i}.cross_attn``::

    {att}.q, .k, .v    (B, H, T_q|T_k, d_k)  after RoPE's rotation when the model uses RoPE
    {att}.scores       (B, H, T_q, T_k)      q kᵀ (/ √d_k), before the mask (absent when attention is replaced)
    {att}.weights      (B, H, T_q, T_k)      softmax of the masked scores
    {att}.heads        (B, H, T_q, d_k)      weights · v per head (zero for a head switched off)
    {att}.concat       (B, T_q, H·d_k)       the heads side by side (d unless the config sets head_dim)
    {att}.out          (B, T_q, d)           concat W^O + b^O

Norm statistics are over the last dimension: ``mean`` and ``var`` (population variance, what LayerNorm
divides by after adding eps) or ``rms`` = sqrt(mean(x²) + eps), what RMSNorm divides by.

Interventions: ``heads_off`` holds (kind, layer, head) with kind in "encoder", "decoder", "cross";
``residual_off`` holds (stack, layer, sublayer) with sublayer in "self_attn", "cross_attn", "ffn"
(post-norm becomes Norm(update), pre-norm becomes update); ``scale_scores=False`` drops the 1/√d_k.
``replace`` maps a name to a function with the signature of the model's own:

    "attention"        (q, k, v, mask) -> (out (B, H, T_q, d_k), weights (B, H, T_q, T_k))
                       (the function does its own scaling: scale_scores does not reach it)
    "padding_mask"     (ids (B, S), pad_id) -> bool (B, 1, 1, S) or None   (model.masks.padding_mask)
    "look_ahead_mask"  (size, device) -> bool (size, size) or None          (model.masks.look_ahead_mask)
    "positional"       (length, d_model, base) -> (length, d_model) or None (model.positional.positional_encoding)
    "rope"             (x (..., T, d), base, start) -> x rotated            (model.positional.rope_rotate_sequence)
    "norm"             (x, weight, bias or None, eps) -> normalised x       (every norm of the model)

``Trace(record=False, ...)`` intervenes without keeping any tensor. Example::

    t = Trace(heads_off={("encoder", 0, 1)})
    out = model(src, tgt, trace=t)
    t["encoder.0.self_attn.weights"]       # (B, H, S, S)
    t.layer("decoder", 1)                  # {"self_attn.q": ..., "ffn_sublayer.update": ..., ...}
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Collection, Iterator, Mapping

import torch

ATTENTION_KINDS = ("encoder", "decoder", "cross")
REPLACEABLE = ("attention", "padding_mask", "look_ahead_mask", "positional", "rope", "norm")


@dataclass(frozen=True)
class ForwardOptions:
    """Switches that change what a forward pass computes or returns (not the weights).

    ablate_heads: (kind, layer, head) triples to switch off, kind in ATTENTION_KINDS.
    use_positional_encoding=False switches off whichever position signal the model has: the
    sinusoidal table added to the embeddings, or RoPE's rotation of Q and K.
    The switches become a :class:`Trace`'s interventions (:meth:`Trace.with_options`).
    """

    use_padding_mask: bool = True
    use_look_ahead_mask: bool = True
    use_positional_encoding: bool = True
    scale_scores: bool = True
    need_weights: bool = True
    need_details: bool = False
    ablate_heads: Collection[tuple[str, int, int]] = ()


def no_mask(*_args) -> None:
    """A mask builder that masks nothing (a switched-off mask)."""
    return None


def no_table(*_args) -> None:
    """A positional table that adds nothing (positions switched off)."""
    return None


def no_rotation(x: torch.Tensor, *_args) -> torch.Tensor:
    """A RoPE rotation that leaves x as it is (positions switched off)."""
    return x


@dataclass
class Trace:
    """The named intermediates of one forward pass, and the interventions applied to it (module docstring)."""

    heads_off: Collection[tuple[str, int, int]] = frozenset()
    residual_off: Collection[tuple[str, int, str]] = frozenset()
    scale_scores: bool = True
    replace: Mapping[str, Callable] = field(default_factory=dict)
    record: bool = True
    tensors: dict[str, torch.Tensor] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.replace) - set(REPLACEABLE))
        if unknown:
            raise ValueError(
                f"Cannot replace {', '.join(unknown)}: the replaceable functions are {', '.join(REPLACEABLE)}."
            )
        self.heads_off = frozenset(self.heads_off)
        self.residual_off = frozenset(self.residual_off)

    # -- reading ---------------------------------------------------------------------------------
    def __getitem__(self, name: str) -> torch.Tensor:
        try:
            return self.tensors[name]
        except KeyError:
            starts = sorted({n.split(".")[0] for n in self.tensors})
            raise KeyError(f"No {name!r} in this trace; its names start with: {', '.join(starts)}.") from None

    def __contains__(self, name: object) -> bool:
        return name in self.tensors

    def __iter__(self) -> Iterator[str]:
        return iter(self.tensors)

    def names(self, prefix: str = "") -> list[str]:
        """Every recorded name that starts with ``prefix`` (all by default), in the order the forward ran."""
        return [n for n in self.tensors if n.startswith(prefix)]

    def layer(self, stack: str, index: int) -> dict[str, torch.Tensor]:
        """Everything recorded in layer ``index`` of ``stack``, keyed by the name after "{stack}.{index}."."""
        prefix = f"{stack}.{index}."
        return {n[len(prefix):]: t for n, t in self.tensors.items() if n.startswith(prefix)}

    # -- used by the model -------------------------------------------------------------------------
    def put(self, name: str, tensor: torch.Tensor | None) -> None:
        """Keep ``tensor`` under ``name`` when this trace records (None is skipped)."""
        if self.record and tensor is not None:
            self.tensors[name] = tensor

    def head_keep(self, kind: str, layer: int, n_heads: int, device: torch.device) -> torch.Tensor | None:
        """(H,) float, 0 for the heads of attention ``kind`` in ``layer`` that are off; None when all are on."""
        off = [h for k, l, h in self.heads_off if k == kind and l == layer]
        if not off:
            return None
        keep = torch.ones(n_heads, device=device)
        keep[off] = 0.0
        return keep

    def residual(self, stack: str, layer: int, sublayer: str) -> bool:
        return (stack, layer, sublayer) not in self.residual_off

    def with_options(self, opts: ForwardOptions) -> "Trace":
        """This trace with ``opts``' switches added as interventions; records into the same ``tensors``."""
        replace = dict(self.replace)
        if not opts.use_padding_mask:
            replace["padding_mask"] = no_mask
        if not opts.use_look_ahead_mask:
            replace["look_ahead_mask"] = no_mask
        if not opts.use_positional_encoding:
            replace["positional"], replace["rope"] = no_table, no_rotation
        return Trace(
            heads_off=self.heads_off | frozenset(opts.ablate_heads),
            residual_off=self.residual_off,
            scale_scores=self.scale_scores and opts.scale_scores,
            replace=replace,
            record=self.record,
            tensors=self.tensors,
        )


def resolve(opts: ForwardOptions, trace: Trace | None) -> Trace:
    """The interventions of one forward: the caller's trace (or none) plus the switches of ``opts``."""
    return (trace if trace is not None else Trace(record=False)).with_options(opts)

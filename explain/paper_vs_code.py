"""Paper vs this code: the live numbers and small demonstrations behind each row of the comparison.

Each row of the page compares what "Attention Is All You Need" says, what this code does and what a
common hand-written version does (``nn.Transformer``, the Annotated Transformer). The numbers come
from here: read from a loaded model (:func:`model_facts`) or computed by a tiny, seeded run of the
real functions (:func:`mask_polarity_demo`, :func:`masked_row_demo`, :func:`smoothing_targets`,
:func:`shared_layer_demo`). Torch in, plain Python / numpy / pandas out.

:data:`ROW_KEYS` names the rows; another page links to one with ``paper-vs-code?paper_vs_code_row=<key>``.
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass, fields

import numpy as np
import pandas as pd
import torch
from torch import nn
from torch.nn import functional as F

from model.attention import masked_softmax, scaled_dot_product_attention
from model.config import TransformerConfig
from model.layers import Dropout
from model.loss import label_smoothed_cross_entropy
from model.positional import positional_encoding
from model.trace import Trace
from model.training import TrainingConfig
from model.transformer import EncoderLayer

ROW_KEYS: tuple[str, ...] = (
    "norm",  # post-norm vs pre-norm, and the final norm
    "w_o",  # the output projection W^O
    "embed_scale",  # embeddings × √d_model
    "shared_embeddings",  # one matrix for both embeddings and the output layer (§3.4)
    "mask_polarity",  # True = may attend, or True = do not attend
    "neg_inf",  # −inf vs the most negative finite number
    "label_smoothing",  # ε/C over all classes vs ε over V − 2
    "dropout",  # where dropout goes, and when it is on
    "shared_layer",  # nn.ModuleList([layer for _ in range(N)])
)

TRAINING_DEFAULTS = {f.name: f.default for f in fields(TrainingConfig)}  # what the Training page's runs start from
DEMO_SEED = 0
DEMO_D, DEMO_HEADS, DEMO_KEYS, DEMO_PADS = 8, 2, 5, 2  # mask demo: width, heads, keys, of which the last are <pad>
SMOOTHING_VOCAB, SMOOTHING_TARGET, SMOOTHING_PAD = 6, 3, 0  # label-smoothing demo: a vocabulary of six tokens
PAPER_EPSILON = 0.1  # §5.4
LAYER_D, LAYER_HEADS, LAYER_FF, LAYER_N, LAYER_T = 16, 2, 32, 3, 5  # the shared-layer demo's sizes


def _count(module: nn.Module) -> int:
    """Trainable parameters of ``module``; a tensor reached twice counts once (as ``parameters()`` does)."""
    return sum(p.numel() for p in module.parameters())


# ------------------------------------------------------------------ numbers read from the loaded model


@dataclass(frozen=True)
class ModelFacts:
    """What a loaded model does at each place where implementations differ (its config and its modules)."""

    d_model: int
    n_layers: int
    n_heads: int
    total_params: int
    # 1. norm placement
    norm_first: bool
    final_norms: int  # 0 (post-norm) or 2 (one after each stack)
    final_norm_params: int  # both together
    # 2. W^O
    out_proj_params: int  # one attention's W^O and b^O: d·d + d
    n_attentions: int  # 3N: encoder self, decoder self, decoder cross
    # 3. × √d_model
    embed_scale: float  # the factor TokenEmbedding multiplies by
    embed_rms: float  # root mean square of the source embedding matrix, before the scale
    scaled_rms: float  # ... after it
    position_rms: float  # root mean square of the sinusoidal table (≈ 1/√2)
    # 4. shared embeddings
    src_vocab: int
    tgt_vocab: int
    pad_id: int
    same_vocab: bool  # one tokenizer for both sides (source and target embeddings could be one matrix)
    shares_src_tgt: bool
    shares_output: bool
    # 8. dropout
    dropout_p: float  # the p its Dropout modules hold now
    dropout_sites: dict[str, int]  # where: how many Dropout modules at each kind of place
    training_mode: bool  # the loaded model's .training (False: eval mode, dropout off)
    trained_dropout: float | None  # the dropout its training used (its saved training config), None if unknown
    # 9. N separate layers
    distinct_encoder_layers: int
    distinct_decoder_layers: int

    @property
    def output_tie_saving(self) -> int:
        """Parameters saved by using the target embedding as the output layer's weight: V_tgt·d."""
        return 0 if self.shares_output else self.tgt_vocab * self.d_model

    @property
    def src_tgt_tie_saving(self) -> int:
        """Parameters saved by one embedding matrix for both sides: V·d (only with one vocabulary)."""
        return self.src_vocab * self.d_model if self.same_vocab and not self.shares_src_tgt else 0

    @property
    def out_proj_total(self) -> int:
        return self.out_proj_params * self.n_attentions


def dropout_sites(model: nn.Module) -> dict[str, int]:
    """Where ``model``'s dropout layers sit (whatever their p): ``{"embeddings", "sublayers", "ffn_hidden",
    "attention_weights"}`` → how many modules (the last is 0 here: attention weights are never dropped)."""
    sites = {"embeddings": 0, "sublayers": 0, "ffn_hidden": 0, "attention_weights": 0}
    for name, module in model.named_modules():
        if not isinstance(module, (Dropout, nn.Dropout)):
            continue
        if name == "embed_dropout":
            sites["embeddings"] += 1
        elif "sublayer" in name:
            sites["sublayers"] += 1
        elif "feed_forward" in name:
            sites["ffn_hidden"] += 1
        else:
            sites["attention_weights"] += 1
    return sites


def trained_setting(ckpt, name: str) -> float | None:
    """Training setting ``name`` (e.g. "dropout") from the checkpoint's saved training config, or None."""
    history = getattr(ckpt, "history", None)
    config = history.get("config") if isinstance(history, dict) else None
    value = config.get(name) if isinstance(config, dict) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def model_facts(ckpt) -> ModelFacts:
    """Everything the rows read from the checkpoint ``ckpt`` (its model is only read, never changed)."""
    model, cfg = ckpt.model, ckpt.model.config
    d = cfg.d_model
    final = [n for n in (model.encoder_norm, model.decoder_norm) if n is not None]
    attention = model.encoder_layers[0].self_attn
    with torch.no_grad():
        table = model.src_embed.lookup.weight.float()  # (V_src, d)
        rms = float(table.square().mean().sqrt())
        pe = positional_encoding(cfg.max_len, d, cfg.pe_base)  # (max_len, d)
    target = ckpt.target_tokenizer if ckpt.target_tokenizer is not None else ckpt.tokenizer
    return ModelFacts(
        d_model=d, n_layers=cfg.n_layers, n_heads=cfg.n_heads, total_params=_count(model),
        norm_first=cfg.norm_first, final_norms=len(final), final_norm_params=sum(_count(n) for n in final),
        out_proj_params=_count(attention.out_proj), n_attentions=3 * cfg.n_layers,
        embed_scale=float(model.src_embed.scale), embed_rms=rms, scaled_rms=rms * float(model.src_embed.scale),
        position_rms=float(pe.square().mean().sqrt()),
        src_vocab=cfg.src_vocab_size, tgt_vocab=cfg.tgt_vocab_size, pad_id=cfg.pad_id,
        same_vocab=cfg.src_vocab_size == cfg.tgt_vocab_size and (target is ckpt.tokenizer or target == ckpt.tokenizer),
        shares_src_tgt=model.src_embed.lookup.weight is model.tgt_embed.lookup.weight,
        shares_output=model.generator.weight is model.tgt_embed.lookup.weight,
        dropout_p=float(cfg.dropout), dropout_sites=dropout_sites(model), training_mode=bool(model.training),
        trained_dropout=trained_setting(ckpt, "dropout"),
        distinct_encoder_layers=len({id(layer) for layer in model.encoder_layers}),
        distinct_decoder_layers=len({id(layer) for layer in model.decoder_layers}),
    )


# ------------------------------------------------------------------ 5. mask polarity


@dataclass(frozen=True)
class PolarityDemo:
    """``nn.MultiheadAttention`` with ``key_padding_mask`` (True = ignore) next to this code's attention
    with the same weights, once with the mask inverted (True = may attend) and once passed as it is."""

    key_padding_mask: list[bool]  # (S,) what nn.MultiheadAttention was given: True on the <pad> keys
    torch_weights: np.ndarray  # (S,) query 0's weights over the keys, averaged over the heads
    inverted_weights: np.ndarray  # (S,) this code, mask = ~key_padding_mask
    uninverted_weights: np.ndarray  # (S,) this code, mask = key_padding_mask (the mistake)
    diff_inverted: float  # max |output difference| over every position, with the inverted mask
    diff_uninverted: float  # ... with the mask passed as it is
    diff_sdpa: float  # F.scaled_dot_product_attention with the inverted mask vs nn.MultiheadAttention

    def table(self, columns: dict[str, str], key_names: list[str]) -> pd.DataFrame:
        """One row per key: the mask torch was given and the three weight rows (``columns``: headers)."""
        return pd.DataFrame({
            columns["key"]: key_names,
            columns["mask"]: self.key_padding_mask,
            columns["torch"]: np.round(self.torch_weights, 4),
            columns["inverted"]: np.round(self.inverted_weights, 4),
            columns["uninverted"]: np.round(self.uninverted_weights, 4),
        })


def _heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    B, T, d = x.shape
    return x.view(B, T, n_heads, d // n_heads).transpose(1, 2)  # (B, H, T, d_k)


def mask_polarity_demo(seed: int = DEMO_SEED) -> PolarityDemo:
    """One sequence of ``DEMO_KEYS`` positions, the last ``DEMO_PADS`` padding, through both conventions."""
    torch.manual_seed(seed)
    d, H, S = DEMO_D, DEMO_HEADS, DEMO_KEYS
    mha = nn.MultiheadAttention(d, H, batch_first=True).eval()
    x = torch.randn(1, S, d)  # (B, S, d)
    key_padding_mask = torch.zeros(1, S, dtype=torch.bool)  # (B, S) True = ignore this key (PyTorch's nn.)
    key_padding_mask[:, S - DEMO_PADS:] = True
    with torch.no_grad():
        expected, torch_w = mha(x, x, x, key_padding_mask=key_padding_mask, need_weights=True)  # (B, S, d), (B, S, S)
        q, k, v = (_heads(t, H) for t in F.linear(x, mha.in_proj_weight, mha.in_proj_bias).chunk(3, dim=-1))

        def ours(mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            out, weights, _ = scaled_dot_product_attention(q, k, v, mask[:, None, None, :])  # (B, H, S, d_k)
            return mha.out_proj(out.transpose(1, 2).reshape(1, S, d)), weights.mean(dim=1)  # (B, S, d), (B, S, S)

        inverted, inverted_w = ours(~key_padding_mask)  # True = may attend
        uninverted, uninverted_w = ours(key_padding_mask)  # the mask handed over as it is
        sdpa = F.scaled_dot_product_attention(q, k, v, attn_mask=~key_padding_mask[:, None, None, :])
        sdpa = mha.out_proj(sdpa.transpose(1, 2).reshape(1, S, d))
    return PolarityDemo(
        key_padding_mask=key_padding_mask[0].tolist(), torch_weights=torch_w[0, 0].numpy(),
        inverted_weights=inverted_w[0, 0].numpy(), uninverted_weights=uninverted_w[0, 0].numpy(),
        diff_inverted=float((inverted - expected).abs().max()),
        diff_uninverted=float((uninverted - expected).abs().max()),
        diff_sdpa=float((sdpa - expected).abs().max()),
    )


# ------------------------------------------------------------------ 6. −inf vs the most negative finite number


@dataclass(frozen=True)
class MaskedRowDemo:
    """Two query rows of four keys: the first with two keys masked, the second with all four masked."""

    mask: np.ndarray  # (2, 4) bool, True = may attend
    scores: np.ndarray  # (2, 4)
    with_inf: np.ndarray  # (2, 4) masked_fill(-inf) then softmax: NaN in the fully masked row
    with_big: np.ndarray  # (2, 4) masked_fill(-1e9) then softmax: the fully masked row is uniform
    this_code: np.ndarray  # (2, 4) model.attention.masked_softmax: zeros in the fully masked row
    fill_value: float  # torch.finfo(float32).min, what this code writes into masked scores

    def outcome(self, method: str) -> str:
        """What ``method`` ("with_inf", "with_big", "this_code") makes of the fully masked row: "nan",
        "zeros" or "uniform" (every key the same weight)."""
        weights = getattr(self, method)[1]
        if np.isnan(weights).any():
            return "nan"
        if not weights.any():
            return "zeros"
        return "uniform"  # every key was filled with the same finite number: a softmax of equal scores

    def table(self, method_names: dict[str, str], row_names: tuple[str, str]) -> pd.DataFrame:
        """One row per (method, query row); the keys as columns k1..k4 (NaN shown as NaN)."""
        rows = []
        for method in ("with_inf", "with_big", "this_code"):
            for r, row_name in enumerate(row_names):
                rows.append({"": f"{method_names[method]} · {row_name}",
                             **{f"k{j + 1}": float(getattr(self, method)[r, j]) for j in range(4)}})
        return pd.DataFrame(rows).round(4)


def masked_row_demo(seed: int = DEMO_SEED) -> MaskedRowDemo:
    """The same scores and mask through the three ways of masking a softmax."""
    torch.manual_seed(seed)
    scores = torch.randn(2, 4)  # (T_q, T_k)
    mask = torch.tensor([[True, True, False, False], [False, False, False, False]])  # row 2: nothing to attend to
    with_inf = scores.masked_fill(~mask, float("-inf")).softmax(dim=-1)
    with_big = scores.masked_fill(~mask, -1e9).softmax(dim=-1)  # the Annotated Transformer's constant
    return MaskedRowDemo(mask=mask.numpy(), scores=scores.numpy(), with_inf=with_inf.numpy(),
                         with_big=with_big.numpy(), this_code=masked_softmax(scores, mask).numpy(),
                         fill_value=float(torch.finfo(scores.dtype).min))


# ------------------------------------------------------------------ 7. label smoothing


def implied_target(loss_fn, vocab_size: int, target: int) -> np.ndarray:
    """(V,) the target distribution q a loss aims at, read off its gradient: for a loss −Σ q log softmax(z),
    ∂loss/∂z = softmax(z) − q, so at z = 0, q = 1/V − ∂loss/∂z. ``loss_fn(logits (1, V), target (1,))``."""
    logits = torch.zeros(1, vocab_size, dtype=torch.float64, requires_grad=True)
    loss_fn(logits, torch.tensor([target])).backward()
    return (1.0 / vocab_size - logits.grad[0]).numpy()


@dataclass(frozen=True)
class SmoothingTargets:
    """The target distribution of one position under both conventions, each read off the real loss."""

    vocab_size: int
    target: int
    pad_id: int
    epsilon: float
    this_code: np.ndarray  # (V,) model.loss.label_smoothed_cross_entropy: 1 − ε, ε/(V−2) on others, 0 on <pad>
    over_all: np.ndarray  # (V,) F.cross_entropy(label_smoothing=ε): (1 − ε)·one-hot + ε/V on every class

    def table(self, columns: dict[str, str], token_names: list[str]) -> pd.DataFrame:
        return pd.DataFrame({columns["token"]: token_names, columns["this_code"]: np.round(self.this_code, 4),
                             columns["over_all"]: np.round(self.over_all, 4)})


def smoothing_targets(vocab_size: int = SMOOTHING_VOCAB, target: int = SMOOTHING_TARGET, pad_id: int = SMOOTHING_PAD,
                      epsilon: float = PAPER_EPSILON) -> SmoothingTargets:
    """Both conventions on a vocabulary of ``vocab_size`` tokens, ``target`` the right one."""
    ours = implied_target(lambda z, y: label_smoothed_cross_entropy(z, y, epsilon=epsilon, pad_id=pad_id),
                          vocab_size, target)
    torch_all = implied_target(lambda z, y: F.cross_entropy(z, y, label_smoothing=epsilon), vocab_size, target)
    return SmoothingTargets(vocab_size, target, pad_id, epsilon, ours, torch_all)


def other_token_shares(vocab_size: int, epsilon: float = PAPER_EPSILON, pad_id: int = 0) -> tuple[float, float]:
    """What each wrong, non-padding token of a ``vocab_size`` vocabulary gets: ``(this code, ε/C)``."""
    return epsilon / max(vocab_size - 2, 1), epsilon / vocab_size


# ------------------------------------------------------------------ 9. one layer object N times


@dataclass(frozen=True)
class SharedLayerDemo:
    """``nn.ModuleList([layer for _ in range(N)])`` next to N separate layers (this project's EncoderLayer)."""

    n: int
    layer_params: int  # one EncoderLayer
    shared_params: int  # the list that repeats one object: counts it once
    separate_params: int  # N separate layers
    same_object: bool  # shared[0] is shared[1]
    shared_diffs: list[float]  # max |weights of layer i − weights of layer 0|, each reading the same input
    separate_diffs: list[float]
    shared_maps: list[np.ndarray]  # per layer: head 0's (T, T) attention map
    separate_maps: list[np.ndarray]


def _maps(stack: nn.ModuleList, x: torch.Tensor) -> list[torch.Tensor]:
    """Each layer's self-attention weights (B, H, T, T) with every layer reading the same ``x``, via a Trace."""
    run = Trace()
    for i, layer in enumerate(stack):
        layer(x, None, run, i)
    return [run[f"encoder.{i}.self_attn.weights"] for i in range(len(stack))]


def _columns(text: str) -> int:
    """How many monospace columns ``text`` takes (a Chinese character takes two)."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def maps_side_by_side(maps: list[np.ndarray], names: list[str], decimals: int = 2) -> str:
    """Attention maps (T, T) as text, side by side under their ``names``: one line per query row."""
    cells = [[" ".join(f"{w:.{decimals}f}" for w in row) for row in weights] for weights in maps]
    width = max(len(cells[0][0]), *(_columns(name) for name in names))

    def line(parts: list[str]) -> str:
        return "   ".join(part + " " * (width - _columns(part)) for part in parts).rstrip()

    return "\n".join([line(names), *(line([block[i] for block in cells]) for i in range(len(cells[0])))])


def shared_layer_demo(n: int = LAYER_N, seed: int = DEMO_SEED) -> SharedLayerDemo:
    """Build both stacks from one seed, count their parameters and compare their attention maps."""
    cfg = TransformerConfig(src_vocab_size=8, tgt_vocab_size=8, d_model=LAYER_D, n_heads=LAYER_HEADS, n_layers=n,
                            d_ff=LAYER_FF, dropout=0.0)
    torch.manual_seed(seed)
    layer = EncoderLayer(cfg)
    shared = nn.ModuleList([layer for _ in range(n)])  # the trap: one object, N entries
    separate = nn.ModuleList(EncoderLayer(cfg) for _ in range(n))  # N objects, N sets of weights
    x = torch.randn(1, LAYER_T, LAYER_D)  # (B, T, d)
    with torch.no_grad():
        shared_w, separate_w = _maps(shared.eval(), x), _maps(separate.eval(), x)
    return SharedLayerDemo(
        n=n, layer_params=_count(layer), shared_params=_count(shared), separate_params=_count(separate),
        same_object=shared[0] is shared[1] if n > 1 else True,
        shared_diffs=[float((w - shared_w[0]).abs().max()) for w in shared_w],
        separate_diffs=[float((w - separate_w[0]).abs().max()) for w in separate_w],
        shared_maps=[w[0, 0].numpy() for w in shared_w], separate_maps=[w[0, 0].numpy() for w in separate_w],
    )


"""The one frozen config every Transformer in the app is built from, and how a config says what is wrong.

A config that cannot be used names its :class:`Problem`: a stable ``code`` and the ``values`` its
sentence needs. The constructor raises :class:`InvalidConfig` with that problem and one English
sentence (the command line and checkpoint loading show the sentence); the app translates the code
instead, as it does for ``CheckpointError.reason``.
"""
from __future__ import annotations

import numbers
from dataclasses import asdict, dataclass, fields
from typing import Any, Mapping, NamedTuple

SIZE_FIELDS = ("src_vocab_size", "tgt_vocab_size", "d_model", "n_heads", "n_layers", "d_ff", "max_len")
NORM_KINDS = ("layer", "rms")  # LayerNorm (the paper's) or RMSNorm
FFN_KINDS = ("relu", "swiglu")  # the paper's two-layer ReLU MLP or the gated SwiGLU
POSITION_KINDS = ("sinusoidal", "rope", "none")  # added to the embeddings, rotating Q and K, or nothing
VARIANT_KINDS = {"norm_kind": NORM_KINDS, "ffn_kind": FFN_KINDS, "position_kind": POSITION_KINDS}


@dataclass(frozen=True)
class SizeLimits:
    """The largest model a checkpoint may describe: about twice the largest training preset in every size.

    The largest preset ("small" in ``model.training.MODEL_PRESETS``) is d_model 64, 4 heads, 2
    layers, d_ff 256, 64 positions, a vocabulary of at most 66 tokens and 246,210 parameters.
    Loading checks a checkpoint's config against these limits before anything is allocated, so
    an upload can never make the server build a model bigger than this.
    """

    vocab_size: int = 512  # tokens in each vocabulary (the tasks use 49 to 66)
    d_model: int = 128
    n_heads: int = 8
    n_layers: int = 4  # per stack: encoder and decoder each
    d_ff: int = 512
    max_len: int = 256  # positions: the longest sequence the model reads or writes
    parameters: int = 2_000_000  # trainable parameters in all: 8 MB of float32, eight times the small preset
    head_dim: int = 512  # one head's width d_k, when a config sets it (else d_model / n_heads)
    attention_width: int = 1024  # all heads side by side, n_heads · d_k (what W^O reads)

    def size_limit(self, name: str) -> int:
        """The limit on config field ``name`` (one of SIZE_FIELDS)."""
        return getattr(self, "vocab_size" if name.endswith("vocab_size") else name)


LIMITS = SizeLimits()

MESSAGES = {  # problem code -> English sentence, formatted with the problem's values
    "not_whole": "{name} must be a whole number of at least 1, got {value}.",
    "heads_split": (
        "d_model ({d_model}) must split evenly across n_heads ({n_heads}): each head gets d_model / n_heads "
        "dimensions, and {d_model} / {n_heads} is not a whole number."
    ),
    "odd_d_model": "d_model must be even for the sinusoidal positional encoding (sin and cos pairs), got {d_model}.",
    "dropout": "dropout is a probability in [0, 1), got {value}.",
    "pe_base": "pe_base must be greater than 1 (the paper uses 10000), got {value}.",
    "pad_id": "pad_id ({pad_id}) must be a token id inside both vocabularies.",
    "head_dim": ("head_dim (each head's width d_k) must be a whole number from 1 to {limit}, with n_heads · head_dim "
                 "at most {width}, got {value}."),
    "variant": "{name} must be one of {choices}, got {value}.",
}


class Problem(NamedTuple):
    """Why a config cannot be used: a stable ``code`` and the ``values`` its sentence names."""

    code: str
    values: dict[str, Any]


class InvalidConfig(ValueError):
    """A config that cannot be used: ``str(error)`` is one English sentence, ``problem`` says it as data."""

    def __init__(self, problem: Problem, messages: Mapping[str, str] = MESSAGES) -> None:
        self.problem = problem
        super().__init__(messages[problem.code].format(**problem.values))


def is_number(value: object) -> bool:
    """A real number that is not a bool (True would otherwise pass as 1)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def is_whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def size_problem(d_model: int, n_heads: int) -> Problem | None:
    """What is wrong with a model width and head count (heads split d_model; sin/cos pairs need it even)."""
    if d_model % n_heads != 0:
        return Problem("heads_split", {"d_model": d_model, "n_heads": n_heads})
    if d_model % 2 != 0:
        return Problem("odd_d_model", {"d_model": d_model})
    return None


def head_dim_problem(d_model: int, n_heads: int, head_dim: object,
                     limits: SizeLimits = LIMITS) -> Problem | None:
    """What is wrong with a width and head count when each head's width is set apart (heads need not split
    d_model then; sin/cos pairs still need it even)."""
    if not (is_whole(head_dim) and 1 <= head_dim <= limits.head_dim and n_heads * head_dim <= limits.attention_width):
        return Problem("head_dim", {"value": repr(head_dim), "limit": limits.head_dim,
                                    "width": limits.attention_width})
    if d_model % 2 != 0:
        return Problem("odd_d_model", {"d_model": d_model})
    return None


def dropout_problem(dropout: object) -> Problem | None:
    if not (is_number(dropout) and 0 <= dropout < 1):
        return Problem("dropout", {"value": repr(dropout)})
    return None


def variant_problem(name: str, value: object) -> Problem | None:
    """What is wrong with variant switch ``name`` (a key of VARIANT_KINDS) set to ``value``, or None."""
    kinds = VARIANT_KINDS[name]
    if not (isinstance(value, str) and value in kinds):
        return Problem("variant", {"name": name, "value": repr(value), "choices": ", ".join(kinds)})
    return None


def swiglu_hidden(d_ff: int) -> int:
    """Hidden width of a SwiGLU feed-forward that has about as many parameters as a ReLU one of width d_ff.

    SwiGLU has three d_model x hidden matrices (and no biases) where the ReLU MLP has two (with
    biases), so the hidden width is 2/3 of d_ff, rounded to the nearest whole number (at least 1):
    d_ff 256 -> 171, d_ff 64 -> 43. The counts then stay within 2 % (:func:`ffn_parameter_count`):
    d_model 64 with d_ff 256 gives 33,088 (ReLU) vs 32,832 (SwiGLU), d_model 32 with d_ff 64 gives
    4,192 vs 4,128.
    """
    return max(1, round(2 * d_ff / 3))


def ffn_parameter_count(d_model: int, d_ff: int, ffn_kind: str) -> int:
    """Trainable parameters of one feed-forward block.

    ReLU: W1 (d_model x d_ff) + b1 + W2 (d_ff x d_model) + b2 = 2·d_model·d_ff + d_ff + d_model.
    SwiGLU: W1, V (d_model x h) and W2 (h x d_model), no biases = 3·d_model·h, h = swiglu_hidden(d_ff).
    """
    if ffn_kind == "swiglu":
        return 3 * d_model * swiglu_hidden(d_ff)
    if ffn_kind == "relu":
        return 2 * d_model * d_ff + d_ff + d_model
    raise ValueError(f"ffn_kind must be one of {', '.join(FFN_KINDS)}, got {ffn_kind!r}.")


def norm_parameter_count(d_model: int, norm_kind: str) -> int:
    """Trainable parameters of one normalisation: LayerNorm has a gain and a bias (2·d_model), RMSNorm a gain."""
    if norm_kind == "layer":
        return 2 * d_model
    if norm_kind == "rms":
        return d_model
    raise ValueError(f"norm_kind must be one of {', '.join(NORM_KINDS)}, got {norm_kind!r}.")


@dataclass(frozen=True)
class TransformerConfig:
    """Sizes and switches of an encoder-decoder Transformer.

    ``n_layers`` is used for both the encoder and the decoder stack. The defaults are the paper's
    model; four switches make the modern variants (a checkpoint without them means the defaults):

    * ``norm_first``: False is the paper's post-norm ``Norm(x + sublayer(x))``; True is pre-norm
      ``x + sublayer(Norm(x))`` with a final Norm after each stack.
    * ``norm_kind``: "layer" is LayerNorm ``(x - mean(x)) / sqrt(var(x) + eps) · γ + β``; "rms" is
      RMSNorm ``x / sqrt(mean(x²) + eps) · γ`` (no centring, no β).
    * ``ffn_kind``: "relu" is ``max(0, x W1 + b1) W2 + b2`` of width d_ff; "swiglu" is
      ``(SiLU(x W1) ⊙ x V) W2`` of width ``swiglu_hidden(d_ff)`` (about the same parameter count).
    * ``position_kind``: "sinusoidal" adds the paper's sin/cos table to the embeddings; "rope"
      rotates every head's queries and keys by their positions in every attention, self and cross
      (the scores then depend only on the offset between query and key); "none" gives no order at all.
    """

    src_vocab_size: int
    tgt_vocab_size: int
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    d_ff: int = 256
    dropout: float = 0.1
    max_len: int = 256
    norm_first: bool = False
    norm_kind: str = "layer"
    ffn_kind: str = "relu"
    position_kind: str = "sinusoidal"
    pe_base: float = 10000.0
    pad_id: int = 0
    # Each head's width d_k. None is the paper's split, d_model / n_heads (the heads together as wide as the model);
    # set, it unties the two: 1 head of width 4·d_model, say (``MultiHeadAttention``'s projections widen with it).
    head_dim: int | None = None

    def __post_init__(self) -> None:
        problem = self.problem()
        if problem is not None:
            raise InvalidConfig(problem)

    def problem(self) -> Problem | None:
        """The first thing that makes this config unusable, or None."""
        for name in SIZE_FIELDS:
            value = getattr(self, name)
            if not (is_whole(value) and value >= 1):
                return Problem("not_whole", {"name": name, "value": repr(value)})
        problem = (size_problem(self.d_model, self.n_heads) if self.head_dim is None
                   else head_dim_problem(self.d_model, self.n_heads, self.head_dim)) or dropout_problem(self.dropout)
        if problem is not None:
            return problem
        for name in VARIANT_KINDS:
            problem = variant_problem(name, getattr(self, name))
            if problem is not None:
                return problem
        if not (is_number(self.pe_base) and self.pe_base > 1):
            return Problem("pe_base", {"value": repr(self.pe_base)})
        if not (is_whole(self.pad_id) and 0 <= self.pad_id < min(self.src_vocab_size, self.tgt_vocab_size)):
            return Problem("pad_id", {"pad_id": self.pad_id})
        return None

    @property
    def d_k(self) -> int:
        """Size of one head's queries, keys and values: ``head_dim``, else d_model / n_heads."""
        return self.d_model // self.n_heads if self.head_dim is None else self.head_dim

    @property
    def attention_width(self) -> int:
        """The heads side by side, n_heads · d_k (d_model unless ``head_dim`` unties them)."""
        return self.n_heads * self.d_k

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "TransformerConfig":
        if not isinstance(data, dict):
            raise ValueError("A model config must be a dictionary of sizes.")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"Unknown config fields: {', '.join(unknown)}.")
        return cls(**data)

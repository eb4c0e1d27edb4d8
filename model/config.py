"""The one frozen config every Transformer in the app is built from."""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields


@dataclass(frozen=True)
class TransformerConfig:
    """Sizes and switches of an encoder-decoder Transformer.

    ``n_layers`` is used for both the encoder and the decoder stack. ``norm_first=False`` is the
    paper's post-norm (``LayerNorm(x + sublayer(x))``); ``True`` is pre-norm
    (``x + sublayer(LayerNorm(x))``) with a final LayerNorm after each stack.
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
    pe_base: float = 10000.0
    pad_id: int = 0

    def __post_init__(self) -> None:
        for name in ("src_vocab_size", "tgt_vocab_size", "d_model", "n_heads", "n_layers", "d_ff", "max_len"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a whole number of at least 1, got {value!r}.")
        if self.d_model % self.n_heads != 0:
            raise ValueError(
                f"d_model ({self.d_model}) must split evenly across n_heads ({self.n_heads}): "
                f"each head gets d_model / n_heads dimensions, and {self.d_model} / {self.n_heads} "
                "is not a whole number."
            )
        if self.d_model % 2 != 0:
            raise ValueError(
                f"d_model must be even for the sinusoidal positional encoding (sin and cos pairs), got {self.d_model}."
            )
        if not 0.0 <= float(self.dropout) < 1.0:
            raise ValueError(f"dropout is a probability in [0, 1), got {self.dropout!r}.")
        if not float(self.pe_base) > 1.0:
            raise ValueError(f"pe_base must be greater than 1 (the paper uses 10000), got {self.pe_base!r}.")
        if not 0 <= self.pad_id < min(self.src_vocab_size, self.tgt_vocab_size):
            raise ValueError(f"pad_id ({self.pad_id}) must be a token id inside both vocabularies.")

    @property
    def d_k(self) -> int:
        """Size of one head's queries, keys and values."""
        return self.d_model // self.n_heads

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

"""The paper's base model and training recipe beside a model of this app, one setting a row.

The paper's numbers are those of its base model (§3.1–3.3, Table 3) and its training (§5.3 the optimizer and
the warmup, §5.4 dropout and label smoothing). This app's are read from a checkpoint (its architecture, and
the training settings its history saved) or from the Training page's planned run; the optimizer's are the
engine's own constants, the same for every run.
"""
from __future__ import annotations

from typing import Any

from explain.ffn import PAPER_D_FF, PAPER_D_MODEL, PAPER_LAYERS
from explain.paper_vs_code import PAPER_EPSILON, trained_setting
from model.training import ADAM_BETAS, ADAM_EPS, ALL_PRESETS, PRESET_HEADS, SPLIT_WIDTH

PAPER_HEADS = 8
PAPER_WARMUP = 4000  # §5.3, the learning rate's warmup steps
PAPER_STEPS = 100_000  # §5.3, the base models' training steps
PAPER_BASE: dict[str, Any] = {
    "n_layers": PAPER_LAYERS, "d_model": PAPER_D_MODEL, "n_heads": PAPER_HEADS, "d_k": PAPER_D_MODEL // PAPER_HEADS,
    "d_ff": PAPER_D_FF, "dropout": 0.1, "label_smoothing": PAPER_EPSILON, "warmup": PAPER_WARMUP,
    "adam_betas": (0.9, 0.98), "adam_eps": 1e-9,  # the paper's own, written apart from the engine's (a test compares)
}
SETTINGS = tuple(PAPER_BASE)


def ours(*, n_layers: int, d_model: int, n_heads: int, d_ff: int, dropout: float | None,
         label_smoothing: float | None, warmup: float | None, d_k: int | None = None) -> dict[str, Any]:
    """This app's values for :data:`SETTINGS` (None where the model does not say); ``d_k`` d_model / n_heads
    unless the model sets each head's width apart."""
    d_k = d_model // n_heads if d_k is None else d_k
    return {"n_layers": n_layers, "d_model": d_model, "n_heads": n_heads, "d_k": d_k, "d_ff": d_ff,
            "dropout": dropout, "label_smoothing": label_smoothing,
            "warmup": int(warmup) if warmup is not None else None, "adam_betas": ADAM_BETAS, "adam_eps": ADAM_EPS}


def of_checkpoint(ckpt) -> dict[str, Any]:
    """A loaded model's values: its architecture, and the training settings its history saved (the
    dropout it was trained with, not the 0 a model in eval mode reads)."""
    return of_saved(ckpt)


def of_planned_run(preset: str, *, dropout: float, label_smoothing: float, warmup: int,
                   heads: str = PRESET_HEADS, head_dim: str = SPLIT_WIDTH) -> dict[str, Any]:
    """The values of a run the Training page would start: its size preset's architecture (with the page's
    heads) and the page's dropout, label smoothing and warmup."""
    sizes = {**ALL_PRESETS[preset], **({} if heads == PRESET_HEADS else {"n_heads": int(heads)})}
    return ours(n_layers=sizes["n_layers"], d_model=sizes["d_model"], n_heads=sizes["n_heads"], d_ff=sizes["d_ff"],
                d_k=None if head_dim == SPLIT_WIDTH else int(head_dim), dropout=dropout,
                label_smoothing=label_smoothing, warmup=warmup)


def written(value: Any) -> str:
    """A value as the card writes it: ``(0.9, 0.98)``, ``1e-9``, ``0.1``, ``2,048``; ``–`` for None."""
    if value is None:
        return "–"
    if isinstance(value, tuple):
        return "(" + ", ".join(written(v) for v in value) + ")"
    if isinstance(value, int):
        return f"{value:,}"
    if value != 0 and abs(value) < 1e-3:
        mantissa, exponent = f"{value:.0e}".split("e")
        return f"{mantissa}e{int(exponent)}"
    return f"{value:g}"


def rows(mine: dict[str, Any]) -> list[tuple[str, str, str, bool]]:
    """(setting, the paper's, this model's, equal?) for every setting."""
    pairs = [(name, written(PAPER_BASE[name]), written(mine.get(name))) for name in SETTINGS]
    return [(name, paper, this, paper == this) for name, paper, this in pairs]


def of_saved(saved) -> dict[str, Any]:
    """The values of what a checkpoint saved, its ``config`` and ``history``: a loaded checkpoint
    (the same values as :func:`of_checkpoint`) or only its header (``model.checkpoint_header``, no model built)."""
    config = saved.config
    dropout = trained_setting(saved, "dropout")
    return ours(n_layers=config.n_layers, d_model=config.d_model, n_heads=config.n_heads, d_ff=config.d_ff,
                d_k=config.d_k, dropout=dropout if dropout is not None else config.dropout,
                label_smoothing=trained_setting(saved, "label_smoothing"), warmup=trained_setting(saved, "warmup"))


def of_checkpoint_file(path: str, content_key: str) -> dict[str, Any] | None:
    """The values of the checkpoint file at ``path``, from its header alone: no weights copied, no model built
    (Home shows the card without the second a model's first load takes); None when the file is refused (damaged,
    hostile, another version: ``model.checkpoint_header``). ``content_key`` names the file's content
    (``ui.models.shipped_key``), so the page cache reads a changed file again."""
    from model.checkpoint import CheckpointError
    from model.checkpoint_header import read_header

    try:
        return of_saved(read_header(path))
    except CheckpointError:
        return None

"""A checkpoint's header: its model config, task and training history, read without building the model.

What a page that only *describes* a model needs (Home's card of the paper's numbers: the sizes, and the dropout,
label smoothing and warmup its history saved) is in the payload beside the weights. :func:`read_header` reads the
file exactly as :func:`model.checkpoint.load_checkpoint` does (the same size bound, ``weights_only`` unpickling,
refusal of code) and checks the payload with the same function, so the same rules, in the same order, with the same
:class:`~model.checkpoint.CheckpointError`: format and version, the schema of config, tokenizers, task and history,
the config's own rules, the tokenizers, their vocabulary sizes and their task. A hostile or damaged file is refused
here as a full load refuses it.

Two checks of a full load are left out, because they concern what is not done here. The weights (names, shapes,
finite values) are never copied into a model. The limit on the total parameter count guards the memory of the
model a full load builds, and counting needs that model built (on the meta device): the first such build in a
process imports ``torch._dynamo``, 1.1–1.3 s measured, which is the cost a page that loads no model avoids.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from model.checkpoint import MAX_BYTES, _check_payload, _read_bounded, _unpickle
from model.config import TransformerConfig


@dataclass(frozen=True)
class CheckpointHeader:
    """A checkpoint's description without its weights: ``config``, ``task`` and ``history`` as a loaded
    :class:`~model.checkpoint.Checkpoint` has them."""

    config: TransformerConfig
    task: dict
    history: dict
    format_version: int


def read_header(source: str | Path | bytes | BinaryIO, max_bytes: int = MAX_BYTES) -> CheckpointHeader:
    """The header of the checkpoint at ``source`` (a path, bytes or a binary file), checked as a full load checks
    it; raises :class:`~model.checkpoint.CheckpointError` (one sentence, ``reason`` a stable code)."""
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise ValueError(f"max_bytes must be a positive whole number, got {max_bytes!r}.")
    payload = _unpickle(_read_bounded(source, max_bytes), max_bytes)
    config, _, _, task, history, version = _check_payload(payload, count_parameters=False)
    return CheckpointHeader(config=config, task=task, history=history, format_version=version)

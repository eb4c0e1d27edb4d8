"""A checkpoint's header: its model config, task and training history, read without building the model.

What a page that only *describes* a model needs (Home's card of the paper's numbers: the sizes, and the dropout,
label smoothing and warmup its history saved) is in the payload beside the weights. :func:`read_header` reads the
file exactly as :func:`model.checkpoint.load_checkpoint` does (the same size bound, ``weights_only`` unpickling,
refusal of code) and checks the payload with the same rules, in the same order, with the same
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

from model.checkpoint import (
    FORMAT,
    FORMAT_VERSION,
    MAX_BYTES,
    CheckpointError,
    _check_task_tokenizers,
    _describe_type,
    _read_bounded,
    _schema_error,
    _shown,
    _unpickle,
)
from model.checkpoint_schema import check_payload
from model.config import TransformerConfig
from model.tokenizer import tokenizer_from_dict


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
    if not isinstance(payload, dict) or not isinstance(payload.get("format"), str) or payload["format"] != FORMAT:
        raise CheckpointError("not_checkpoint")
    version = payload.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise CheckpointError("bad_version", found=_shown(version))
    if version > FORMAT_VERSION:
        raise CheckpointError("newer_version", found=version, supported=FORMAT_VERSION)
    for entry in ("task", "history"):
        if not isinstance(payload.get(entry), dict):
            raise CheckpointError("bad_metadata", entry=entry, found=_describe_type(payload.get(entry)))
    problem = check_payload(payload)
    if problem is not None:
        raise _schema_error(problem)
    try:
        config = TransformerConfig.from_dict(payload["config"])
    except (TypeError, ValueError) as err:
        raise CheckpointError("bad_config", problem=str(err).rstrip(".")) from None
    try:
        tokenizer = tokenizer_from_dict(payload["tokenizer"])
        target = payload.get("target_tokenizer")
        target_tokenizer = tokenizer if target is None else tokenizer_from_dict(target)
    except (TypeError, ValueError) as err:
        raise CheckpointError("bad_tokenizer", problem=str(err).rstrip(".")) from None
    for vocab, side in ((config.src_vocab_size, tokenizer), (config.tgt_vocab_size, target_tokenizer)):
        if vocab != side.vocab_size:
            raise CheckpointError("vocab_mismatch", config_vocab=vocab, tokenizer_vocab=side.vocab_size)
    _check_task_tokenizers(payload["task"].get("name"), tokenizer, target_tokenizer)
    return CheckpointHeader(config=config, task=payload["task"], history=payload["history"], format_version=version)

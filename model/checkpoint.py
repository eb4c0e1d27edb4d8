"""Saving and loading a trained model with its tokenizer, task and training history.

A checkpoint is one ``torch.save`` zip holding only plain data (dicts, lists, strings, numbers)
and CPU tensors, so ``torch.load(weights_only=True)`` can read it without running any code from
the file. Loading checks everything before a single weight is copied, and every failure is a
``CheckpointError`` whose message is one sentence a student can act on; ``error.reason`` is a
stable code the UI can translate.
"""
from __future__ import annotations

import io
import numbers
import os
import pickle
import pickletools
import re
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import torch

from model.checkpoint_schema import PayloadProblem, check_payload
from model.config import LIMITS, TransformerConfig
from model.device import pick_device
from model.tasks import TASK_NAMES, TRANSLATION_TASKS, get_task
from model.tokenizer import Tokenizer, tokenizer_from_dict
from model.transformer import Transformer

FORMAT = "transformer-playground"
FORMAT_VERSION = 1
MAX_BYTES = 20 * 2**20
MAX_ABS_WEIGHT = 1000.0
"""No weight of a loadable checkpoint is larger in size: the trained models stay below 11, and a model at
the size limits (model.config.LIMITS) with every weight at ±1000 still computes finite outputs. Far
larger but finite weights (1e38) overflow float32 in the first layer and every page would show NaN."""
WEIGHT_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
REPO_ROOT = Path(__file__).resolve().parent.parent
PRETRAINED_DIR = REPO_ROOT / "assets" / "checkpoints"

MESSAGES = {
    "not_found": "There is no checkpoint file at {path}.",
    "too_large": "The file is larger than the {limit_mb:g} MB a checkpoint may have.",
    "empty": "The file is empty, so it is not a checkpoint.",
    "not_checkpoint": "This file is not a Transformer Playground checkpoint.",
    "truncated": "The checkpoint is damaged or incomplete (truncated file).",
    "unsafe": "The file contains code, not just weights; it was refused and nothing in it was run.",
    "newer_version": (
        "This checkpoint was written by a newer Transformer Playground (format {found}); this one reads "
        "format {supported} and older."
    ),
    "bad_version": "The checkpoint has an unknown format version ({found}).",
    "bad_config": "The model description in the checkpoint is invalid ({problem}).",
    "bad_tokenizer": "The tokenizer description in the checkpoint is invalid ({problem}).",
    "bad_metadata": "The checkpoint's {entry} entry must be a dictionary, got {found}.",
    "vocab_mismatch": (
        "The model expects a vocabulary of {config_vocab} tokens but the checkpoint's tokenizer has "
        "{tokenizer_vocab}."
    ),
    "bad_weights": "The checkpoint's weights are not a table of named tensors.",
    "missing_weights": "The checkpoint is missing weights the model needs ({keys}).",
    "unexpected_weights": "The checkpoint has weights this model does not have ({keys}).",
    "shape_mismatch": (
        "The weights do not fit the model described in the checkpoint ({key} has shape {found}, expected {expected})."
    ),
    "non_finite": "The checkpoint's weights contain NaN or infinite values ({key}); training probably diverged.",
    "too_big": "The model description in the checkpoint is invalid ({problem}).",
    "bad_entry": "The checkpoint's {entry} entry is invalid ({problem}).",
    "hollow_weights": (
        "The checkpoint's weights are not stored in full ({key} has shape {shape} but holds {stored} numbers)."
    ),
    "task_mismatch": (
        "The checkpoint's tokenizers do not fit its task ({task} reads {wanted} on its {side} side; the file's "
        "tokenizer there reads {found})."
    ),
    "huge_weights": (
        "The checkpoint's weights are far too large for a trained model ({key} reaches {value:.3g}; the limit is "
        "{limit:g}); training probably diverged."
    ),
}


class CheckpointError(ValueError):
    """A checkpoint could not be loaded. ``str(error)`` is one sentence; ``reason`` keys MESSAGES."""

    def __init__(self, reason: str, **details: object) -> None:
        self.reason = reason
        self.details = details
        super().__init__(MESSAGES[reason].format(**details))


@dataclass(frozen=True, eq=False)
class Checkpoint:
    """A loaded checkpoint: the model in eval mode on its device, and what it was trained on.

    ``tokenizer`` is the source side's; ``target_tokenizer`` the target side's (the same object for
    a checkpoint with one tokenizer, as every character task has).
    """

    model: Transformer
    tokenizer: Tokenizer
    config: TransformerConfig
    task: dict
    history: dict
    format_version: int
    target_tokenizer: Tokenizer | None = None

    def __post_init__(self) -> None:
        if self.target_tokenizer is None:
            object.__setattr__(self, "target_tokenizer", self.tokenizer)


# -- saving --------------------------------------------------------------------------------------
def _plain(value: object, where: str) -> object:
    """A copy of value made only of dict/list/str/int/float/bool/None (what weights_only reads back).

    Numbers from numpy or 0-d tensors become Python numbers; anything else is refused, because
    it would make the file unreadable with weights_only=True.
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().tolist()
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{where} has a key {key!r} that is not a string; a checkpoint stores text keys only.")
            out[key] = _plain(item, f"{where}[{key!r}]")
        return out
    if isinstance(value, (list, tuple)):
        return [_plain(item, f"{where}[{i}]") for i, item in enumerate(value)]
    raise TypeError(
        f"{where} holds a {type(value).__name__}, which a checkpoint cannot store; use numbers, text, lists and dicts."
    )


def save_checkpoint(
    dest: str | Path | BinaryIO,
    model: Transformer,
    tokenizer: Tokenizer,
    task: dict,
    history: dict | None = None,
    target_tokenizer: Tokenizer | None = None,
) -> None:
    """Write model + tokenizer + task description + training history to a path or a binary file.

    ``tokenizer`` is the source side's; a different ``target_tokenizer`` is stored next to it
    (``"target_tokenizer"``), and without one the file has a single tokenizer for both sides.

    task is a plain dict such as {"name": "copy", "min_len": 1, "max_len": 32, "alphabet": "..."};
    history is plain data (loss lists etc.). Weights are stored on the CPU. A path is written
    through a temporary file and renamed, so a crash never leaves half a checkpoint behind.
    """
    cfg = model.config
    target = tokenizer if target_tokenizer is None else target_tokenizer
    if cfg.src_vocab_size != tokenizer.vocab_size or cfg.tgt_vocab_size != target.vocab_size:
        raise ValueError(
            f"The model's vocabularies ({cfg.src_vocab_size}, {cfg.tgt_vocab_size}) do not match the tokenizers' "
            f"({tokenizer.vocab_size}, {target.vocab_size} tokens)."
        )
    if not isinstance(task, dict):
        raise TypeError(f"task must be a dict describing the task, got {type(task).__name__}.")
    payload = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "config": cfg.to_dict(),
        "state_dict": {name: t.detach().cpu() for name, t in model.state_dict().items()},
        "tokenizer": tokenizer.to_dict(),
        **({"target_tokenizer": target.to_dict()} if target != tokenizer else {}),
        "task": _plain(task, "task"),
        "history": _plain(history or {}, "history"),
    }
    if not isinstance(dest, (str, Path)):
        torch.save(payload, dest)
        return
    path = Path(dest)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(payload, f)
        # mkstemp makes the file private (0600); a checkpoint is an ordinary file (shipped in
        # assets/, read by a non-root server user), so give it the usual permissions.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# -- loading -------------------------------------------------------------------------------------
def _too_large(max_bytes: int) -> CheckpointError:
    return CheckpointError("too_large", limit_mb=round(max_bytes / 2**20, 3))


def _read_bounded(source: str | Path | bytes | BinaryIO, max_bytes: int) -> bytes:
    """The file's bytes, refusing anything over max_bytes before reading it."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        if len(data) > max_bytes:
            raise _too_large(max_bytes)
        return data
    if isinstance(source, (str, Path)):
        try:
            with open(source, "rb") as f:
                if os.fstat(f.fileno()).st_size > max_bytes:
                    raise _too_large(max_bytes)
                data = f.read(max_bytes + 1)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise CheckpointError("not_found", path=str(source)) from None
    else:
        try:
            here = source.tell()
            size = source.seek(0, io.SEEK_END) - here
            source.seek(here)
            if size > max_bytes:
                raise _too_large(max_bytes)
        except (AttributeError, OSError):  # a stream that cannot seek: read one byte past the limit
            pass
        data = source.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise _too_large(max_bytes)
    return data


_CODE_REFERENCE = re.compile(r"unsupported (global|class)|not an allowed global|is blocked", re.IGNORECASE)


def _pickles(data: bytes) -> list[bytes]:
    """The pickle streams of a file: a torch zip's ``.pkl`` members, else the bytes themselves."""
    if not data.startswith(b"PK\x03\x04"):
        return [data]
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return [archive.read(m) for m in archive.infolist() if m.filename.endswith(".pkl")]
    except (zipfile.BadZipFile, EOFError, ValueError, OSError):
        return []


def _global_names(stream: bytes) -> set[str]:
    """Every ``module.name`` a pickle stream would import, read with pickletools (nothing is run)."""
    names, strings = set(), []
    try:
        for opcode, arg, _ in pickletools.genops(stream):
            if opcode.name in ("GLOBAL", "INST"):
                names.add(str(arg).replace(" ", "."))
            elif opcode.name == "STACK_GLOBAL" and len(strings) >= 2:
                names.add(f"{strings[-2]}.{strings[-1]}")
            elif isinstance(arg, str):
                strings.append(arg)
    except (ValueError, EOFError, OverflowError):  # a damaged stream: judge what was read before the damage
        return names
    return names


def _refers_to_code(data: bytes, error: Exception) -> bool:
    """True when a refused pickle names a function or class beyond the tensors and containers torch allows."""
    if _CODE_REFERENCE.search(str(error)):
        return True
    try:  # what torch.load(weights_only=True) may import: tensors, storages, dtypes, OrderedDict
        from torch._weights_only_unpickler import _get_allowed_globals
        allowed = set(_get_allowed_globals())
    except (ImportError, AttributeError):  # a torch without it: rely on its message alone
        return False
    return any(_global_names(stream) - allowed for stream in _pickles(data))


def _unpickle(data: bytes, max_bytes: int) -> object:
    """torch.load(weights_only=True) of the bytes, every failure turned into one CheckpointError."""
    if not data:
        raise CheckpointError("empty")
    is_zip = data.startswith(b"PK\x03\x04")
    if is_zip:
        # torch.save never compresses; refusing compressed members stops a small file from
        # expanding into gigabytes in memory.
        try:
            members = zipfile.ZipFile(io.BytesIO(data)).infolist()
        except (zipfile.BadZipFile, EOFError, ValueError):
            raise CheckpointError("truncated") from None
        if any(m.compress_type != zipfile.ZIP_STORED for m in members):
            raise CheckpointError("not_checkpoint")
        if sum(m.file_size for m in members) > max_bytes:
            raise _too_large(max_bytes)
    try:
        return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        if _refers_to_code(data, err):
            raise CheckpointError("unsafe") from None
        if "truncated" in str(err):
            raise CheckpointError("truncated") from None
        raise CheckpointError("not_checkpoint") from None
    except EOFError:
        raise CheckpointError("truncated") from None
    except RuntimeError as err:
        if "central directory" in str(err) or "failed reading" in str(err):
            raise CheckpointError("truncated") from None
        raise CheckpointError("not_checkpoint") from None
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError, MemoryError, UnicodeError,
            zipfile.BadZipFile, OSError):
        raise CheckpointError("not_checkpoint") from None


def _describe_type(value: object) -> str:
    return "nothing" if value is None else f"a {type(value).__name__}"


def _shown(value: object) -> str:
    """``repr`` of a number or short text; only the type of anything else (a deep list has no printable repr)."""
    if value is None or isinstance(value, (bool, int, float)) or (isinstance(value, str) and len(value) <= 40):
        return repr(value)
    return type(value).__name__


def _shape(t: torch.Size) -> str:
    return str(tuple(t))


def _name_keys(keys: list[str]) -> str:
    shown = ", ".join(keys[:3])
    return shown if len(keys) <= 3 else f"{shown} and {len(keys) - 3} more"


def _schema_error(problem: PayloadProblem) -> CheckpointError:
    """The CheckpointError of the first problem the payload schema found."""
    if problem.too_big:
        return CheckpointError("too_big", problem=problem.text)
    if problem.entry == "config":
        return CheckpointError("bad_config", problem=problem.text)
    if problem.entry in ("tokenizer", "target_tokenizer"):
        return CheckpointError("bad_tokenizer", problem=problem.text)
    return CheckpointError("bad_entry", entry=problem.entry, problem=problem.text)


def _parameter_count(config: TransformerConfig) -> int:
    """Trainable parameters of the model ``config`` describes (built on the meta device: no memory)."""
    with torch.device("meta"):
        return sum(p.numel() for p in Transformer(config).parameters())


def _check_payload(payload: object, *, count_parameters: bool = True,
                   ) -> tuple[TransformerConfig, Tokenizer, Tokenizer, dict, dict, int]:
    """Everything but the weights, checked against the schema and the limits before anything is built.
    ``count_parameters=False`` leaves out the limit on the parameter count, which guards the memory of a model
    about to be built and needs one built on the meta device to count (``model.checkpoint_header`` builds none)."""
    if not isinstance(payload, dict) or not isinstance(payload.get("format"), str) or payload["format"] != FORMAT:
        raise CheckpointError("not_checkpoint")
    version = payload.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise CheckpointError("bad_version", found=_shown(version))
    if version > FORMAT_VERSION:
        raise CheckpointError("newer_version", found=version, supported=FORMAT_VERSION)
    for entry in ("task", "history"):  # the old sentence for an entry that is not a table at all
        if not isinstance(payload.get(entry), dict):
            raise CheckpointError("bad_metadata", entry=entry, found=_describe_type(payload.get(entry)))
    problem = check_payload(payload)
    if problem is not None:
        raise _schema_error(problem)
    try:
        config = TransformerConfig.from_dict(payload["config"])
    except (TypeError, ValueError) as err:
        raise CheckpointError("bad_config", problem=str(err).rstrip(".")) from None
    params = _parameter_count(config) if count_parameters else 0
    if params > LIMITS.parameters:
        raise CheckpointError("too_big", problem=f"{params:,} parameters, over this app's limit of "
                                                  f"{LIMITS.parameters:,}")
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
    return config, tokenizer, target_tokenizer, payload["task"], payload["history"], version


def _check_task_tokenizers(name: object, source: Tokenizer, target: Tokenizer) -> None:
    """A task this app knows reads words or characters on each side; a file whose tokenizer there reads the
    other kind contradicts its task (its pages would split sentences one way and its task's answers the
    other). Its words may differ from the task's (a model trained on other sentences): those become <unk>.
    A translation model may read either side in BPE pieces (the Training page's tokens setting)."""
    if name not in TASK_NAMES:
        return  # a task this app does not know: its pages use the copy task's answers
    task = get_task(name)
    sides = (("source", source, task.source_tokenizer()), ("target", target, task.target_tokenizer()))
    for side, ours, theirs in sides:
        if ours.unit != theirs.unit and not (ours.unit == "piece" and name in TRANSLATION_TASKS):
            raise CheckpointError("task_mismatch", task=name, side=side, wanted=f"{theirs.unit}s",
                                  found=f"{ours.unit}s")


def _stored_numbers(t: torch.Tensor) -> int:
    """How many of the tensor's numbers its storage really holds (a stride-0 view of one zero holds 1)."""
    available = t.untyped_storage().nbytes() // t.element_size() - t.storage_offset()
    return max(0, min(t.numel(), available))


def _check_tensor(key: str, got: torch.Tensor, want: torch.Tensor) -> None:
    """One weight: its shape, that its storage holds every number, finite, and not absurdly large."""
    if got.shape != want.shape:
        raise CheckpointError("shape_mismatch", key=key, found=_shape(got.shape), expected=_shape(want.shape))
    if got.dtype not in WEIGHT_DTYPES or got.layout != torch.strided or got.device.type != "cpu":
        raise CheckpointError("bad_weights")
    stored = _stored_numbers(got)
    if stored < got.numel():
        raise CheckpointError("hollow_weights", key=key, shape=_shape(got.shape), stored=stored)
    if got.numel() == 0:
        return
    if not bool(torch.isfinite(got).all()):
        raise CheckpointError("non_finite", key=key)
    largest = float(got.abs().max())
    if largest > MAX_ABS_WEIGHT:
        raise CheckpointError("huge_weights", key=key, value=largest, limit=MAX_ABS_WEIGHT)


def _check_weights(state_dict: object, config: TransformerConfig) -> dict[str, torch.Tensor]:
    """The weights, checked against the model the config describes (built on the meta device: no memory)."""
    if not isinstance(state_dict, dict) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state_dict.items()
    ):
        raise CheckpointError("bad_weights")
    with torch.device("meta"):
        expected = Transformer(config).state_dict()
    missing = [k for k in expected if k not in state_dict]
    if missing:
        raise CheckpointError("missing_weights", keys=_name_keys(missing))
    unexpected = [k for k in state_dict if k not in expected]
    if unexpected:
        raise CheckpointError("unexpected_weights", keys=_name_keys(unexpected))
    for key, want in expected.items():
        _check_tensor(key, state_dict[key], want)
    return state_dict


def load_checkpoint(
    source: str | Path | bytes | BinaryIO,
    map_location: str | torch.device | None = None,
    max_bytes: int = MAX_BYTES,
) -> Checkpoint:
    """Read a checkpoint from a path, bytes or a binary file (e.g. a Streamlit upload).

    The size is checked before the file is read; the file is read with weights_only=True (no code
    from it can run); the format marker, version, config, tokenizer, vocabulary sizes, weight
    names and shapes are all checked before the weights are copied in. The model comes back in
    eval mode on map_location (default: pick_device()). Raises CheckpointError, one sentence each.
    """
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise ValueError(f"max_bytes must be a positive whole number, got {max_bytes!r}.")
    device = pick_device(None if map_location is None else str(map_location))
    payload = _unpickle(_read_bounded(source, max_bytes), max_bytes)
    config, tokenizer, target_tokenizer, task, history, version = _check_payload(payload)
    state_dict = _check_weights(payload.get("state_dict"), config)
    model = Transformer(config)
    model.load_state_dict(state_dict, strict=True)
    return Checkpoint(
        model=model.to(device).eval(),
        tokenizer=tokenizer,
        config=config,
        task=task,
        history=history,
        format_version=version,
        target_tokenizer=target_tokenizer,
    )


# -- shipped checkpoints ---------------------------------------------------------------------------
def pretrained_path(task_name: str) -> Path:
    """Where the shipped checkpoint for a task lives: assets/checkpoints/<task>.pt in the repo."""
    if task_name not in TASK_NAMES:
        raise ValueError(f"Unknown task {task_name!r}; the tasks are: {', '.join(TASK_NAMES)}.")
    return PRETRAINED_DIR / f"{task_name}.pt"


def available_pretrained() -> list[str]:
    """Task names that have a shipped checkpoint, in the order copy, reverse, sort, dates, en-zh, zh-en."""
    return [name for name in TASK_NAMES if pretrained_path(name).is_file()]

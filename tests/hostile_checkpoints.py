"""Hostile checkpoint files, as someone who wants to take the class server down would write them.

Each :class:`Hostile` is a file's bytes and the ``CheckpointError.reason`` loading must refuse it
with. They are built from a real (tiny, untrained) checkpoint of this app and then edited: weights
that are stride-0 views of a single number, configs far over the size limits, values nested 20,000
lists deep, metadata of the wrong types, huge finite weights, and pickles that would run
``posix.system``. Nothing here runs the code it writes: the pickles are assembled opcode by opcode.

Use :func:`hostile_checkpoints` for the whole suite (``{name: Hostile}``).
"""
from __future__ import annotations

import io
import pickle
import struct
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from model.checkpoint import save_checkpoint
from model.config import TransformerConfig
from model.tokenizer import CharTokenizer
from model.transformer import Transformer

DEPTH = 20_000  # lists inside lists: far past Python's recursion limit
PLACEHOLDER = "HOSTILE-NESTED-VALUE"
ALPHABET = "abcdefgh"
COMMAND = "touch /tmp/tp-hostile-pwned"  # what the code-carrying pickles would run


@dataclass(frozen=True)
class Hostile:
    """A hostile file: its bytes and the reason loading must give for refusing it."""

    data: bytes
    reason: str


# ------------------------------------------------------------------ a real checkpoint to start from


def small_config(**sizes: Any) -> dict:
    """The config dict of a tiny model over :data:`ALPHABET`, with ``sizes`` changed."""
    vocab = CharTokenizer(ALPHABET).vocab_size
    config = TransformerConfig(src_vocab_size=vocab, tgt_vocab_size=vocab, d_model=16, n_heads=2, n_layers=1,
                               d_ff=32, max_len=32, dropout=0.0).to_dict()
    config.update(sizes)
    return config


def good_payload(history: dict | None = None) -> dict:
    """The payload of a valid checkpoint (what ``torch.load`` gives back), ready to be spoilt."""
    torch.manual_seed(0)
    model = Transformer(TransformerConfig(**small_config())).eval()
    buffer = io.BytesIO()
    save_checkpoint(buffer, model, CharTokenizer(ALPHABET), {"name": "copy"},
                    history if history is not None else {"losses": [2.0, 1.0], "steps": 2})
    return torch.load(io.BytesIO(buffer.getvalue()), weights_only=True)


def saved(payload: dict) -> bytes:
    """``payload`` as ``torch.save`` writes it."""
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    return buffer.getvalue()


def expected_shapes(config: dict) -> dict[str, torch.Size]:
    """The weight names and shapes of the model ``config`` describes (meta device: nothing allocated)."""
    with torch.device("meta"):
        return {k: v.shape for k, v in Transformer(TransformerConfig(**config)).state_dict().items()}


def stride_zero_weights(config: dict) -> dict[str, torch.Tensor]:
    """Every weight a view of one stored zero: a few bytes on disk, any shape in memory."""
    one = torch.zeros(1)
    return {key: one.expand(shape) for key, shape in expected_shapes(config).items()}


def with_config(weights: Callable[[dict], dict] | None = None, **sizes: Any) -> bytes:
    """A checkpoint whose config has ``sizes`` changed (tokenizer to match), weights from ``weights``."""
    payload = good_payload()
    config = small_config(**sizes)
    vocab = config["src_vocab_size"]
    if vocab != payload["config"]["src_vocab_size"]:
        payload["tokenizer"] = {"alphabet": "".join(chr(0x4E00 + i) for i in range(vocab - 4))}
    payload["config"] = config
    if weights is not None:
        payload["state_dict"] = weights(config)
    return saved(payload)


# ------------------------------------------------------------------ values nested deeper than Python can print


def _pickled_placeholder(text: str) -> bytes:
    """The opcode ``torch.save`` writes for a short string (BINUNICODE)."""
    raw = text.encode()
    return b"X" + struct.pack("<I", len(raw)) + raw


def _nested_list_opcodes(depth: int) -> bytes:
    """Pickle opcodes that build ``[[[...]]]`` ``depth`` lists deep without recursion: push, then append."""
    return pickle.EMPTY_LIST * depth + pickle.APPEND * (depth - 1)


def with_nested(place: Callable[[dict, str], None]) -> bytes:
    """A checkpoint with a list nested :data:`DEPTH` deep where ``place(payload, marker)`` puts a marker.

    ``torch.save`` cannot write such a value (pickling recurses), so the marker string is swapped
    for the nested list's opcodes in the zip's ``data.pkl``.
    """
    payload = good_payload()
    place(payload, PLACEHOLDER)
    source = zipfile.ZipFile(io.BytesIO(saved(payload)))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as target:
        for member in source.infolist():
            data = source.read(member)
            if member.filename.endswith("data.pkl"):
                marker = _pickled_placeholder(PLACEHOLDER)
                assert data.count(marker) == 1
                data = data.replace(marker, _nested_list_opcodes(DEPTH))
            target.writestr(member.filename, data)
    return out.getvalue()


# ------------------------------------------------------------------ pickles that would run a command


def _posix_system_reduce(protocol: int) -> bytes:
    """``posix.system(COMMAND)`` as GLOBAL + REDUCE, the classic form."""
    command = pickle.dumps(COMMAND, protocol=protocol)[2 if protocol >= 2 else 0:-1]
    header = pickle.PROTO + bytes([protocol]) if protocol >= 2 else b""
    return header + b"cposix\nsystem\n" + pickle.MARK + command + pickle.TUPLE + pickle.REDUCE + pickle.STOP


def _posix_system_stack_global() -> bytes:
    """``posix.system(COMMAND)`` with protocol 4's STACK_GLOBAL (names pushed as strings first)."""
    body = (pickle.SHORT_BINUNICODE + bytes([5]) + b"posix" + pickle.SHORT_BINUNICODE + bytes([6]) + b"system"
            + pickle.STACK_GLOBAL + pickle.SHORT_BINUNICODE + bytes([len(COMMAND)]) + COMMAND.encode()
            + pickle.TUPLE1 + pickle.REDUCE + pickle.STOP)
    return pickle.PROTO + b"\x04" + body


def _posix_system_inst() -> bytes:
    """``posix.system(COMMAND)`` with protocol 0's INST opcode (no REDUCE at all)."""
    return pickle.MARK + b"V" + COMMAND.encode() + b"\n" + b"iposix\nsystem\n" + pickle.STOP


class _System:
    """Unpickled normally this would run COMMAND: only ever saved, never loaded without weights_only."""

    def __reduce__(self):
        import posix

        return (posix.system, (COMMAND,))


def _torch_zip_with_system() -> bytes:
    """A real checkpoint zip whose history holds a ``posix.system`` call."""
    payload = good_payload()
    payload["history"] = {"losses": _System()}
    return saved(payload)


def _eval_in_checkpoint() -> bytes:
    payload = good_payload()
    payload["task"] = {"name": _Eval()}
    return saved(payload)


class _Eval:
    def __reduce__(self):
        return (eval, ("__import__('posix').system('true')",))


# ------------------------------------------------------------------ the suite


def _edited(**changes: Any) -> bytes:
    payload = good_payload()
    payload.update(changes)
    return saved(payload)


def _scaled_weights(factor: float) -> bytes:
    payload = good_payload()
    payload["state_dict"] = {k: v * factor if v.is_floating_point() else v for k, v in payload["state_dict"].items()}
    return saved(payload)


def _weights_as(convert: Callable[[torch.Tensor], torch.Tensor]) -> bytes:
    payload = good_payload()
    payload["state_dict"] = {k: convert(v) for k, v in payload["state_dict"].items()}
    return saved(payload)


def _memo_bomb() -> bytes:
    """One 150,000-entry list referenced by every history entry: small on disk, huge if copied."""
    shared = [0.5] * 150_000
    return _edited(history={"losses": shared, "lrs": shared, **{f"extra{i}": shared for i in range(40)}})


def hostile_checkpoints() -> dict[str, Hostile]:
    """Every hostile file of the suite, by name."""
    huge = {"d_model": 1024, "n_heads": 16, "n_layers": 12, "d_ff": 4096}
    return {
        "stride_zero_weights": Hostile(with_config(stride_zero_weights), "hollow_weights"),
        "stride_zero_1024x12": Hostile(with_config(stride_zero_weights, **huge), "too_big"),
        "d_model_65536": Hostile(with_config(stride_zero_weights, d_model=65536, n_heads=2), "too_big"),
        "many_layers": Hostile(with_config(stride_zero_weights, n_layers=64), "too_big"),
        "wide_ff": Hostile(with_config(stride_zero_weights, d_ff=2**20), "too_big"),
        "many_heads": Hostile(with_config(stride_zero_weights, d_model=16, n_heads=16), "too_big"),
        "huge_vocabulary": Hostile(with_config(stride_zero_weights, src_vocab_size=2004, tgt_vocab_size=2004),
                                   "too_big"),
        "too_many_parameters": Hostile(with_config(stride_zero_weights, src_vocab_size=504, tgt_vocab_size=504,
                                                   d_model=128, n_heads=8, n_layers=4, d_ff=512), "too_big"),
        "long_max_len": Hostile(with_config(stride_zero_weights, max_len=2**24 // 16), "too_big"),
        "nested_config_value": Hostile(with_nested(lambda p, m: p["config"].update(d_model=m)), "bad_config"),
        "nested_history_value": Hostile(with_nested(lambda p, m: p["history"].update(notes=m)), "bad_entry"),
        "nested_task_value": Hostile(with_nested(lambda p, m: p["task"].update(name=m)), "bad_entry"),
        "nested_version": Hostile(with_nested(lambda p, m: p.update(format_version=m)), "bad_version"),
        "nested_alphabet": Hostile(with_nested(lambda p, m: p["tokenizer"].update(alphabet=m)), "bad_tokenizer"),
        "task_name_is_a_list": Hostile(_edited(task={"name": ["copy", "sort"]}), "bad_entry"),
        "history_evals_text": Hostile(_edited(history={"evals": "all good", "steps": 3}), "bad_entry"),
        "history_eval_pairs_short": Hostile(_edited(history={"evals": [[50]], "steps": 50}), "bad_entry"),
        "history_steps_text": Hostile(_edited(history={"steps": "many"}), "bad_entry"),
        "history_config_list": Hostile(_edited(history={"config": [1, 2, 3]}), "bad_entry"),
        "history_memo_bomb": Hostile(_memo_bomb(), "bad_entry"),
        "huge_finite_weights": Hostile(_scaled_weights(1e37), "huge_weights"),
        "meta_weights": Hostile(_weights_as(lambda v: torch.empty(v.shape, device="meta")), "bad_weights"),
        "sparse_weights": Hostile(_weights_as(lambda v: v.to_sparse() if v.dim() == 2 else v), "bad_weights"),
        "integer_weights": Hostile(_weights_as(lambda v: v.long()), "bad_weights"),
        "posix_system_protocol_0": Hostile(_posix_system_reduce(0), "unsafe"),
        "posix_system_protocol_2": Hostile(_posix_system_reduce(2), "unsafe"),
        "posix_system_stack_global": Hostile(_posix_system_stack_global(), "unsafe"),
        "posix_system_inst": Hostile(_posix_system_inst(), "unsafe"),
        "posix_system_in_torch_zip": Hostile(_torch_zip_with_system(), "unsafe"),
        "eval_in_torch_zip": Hostile(_eval_in_checkpoint(), "unsafe"),
    }

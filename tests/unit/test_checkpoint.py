"""Checkpoints: exact round trips, and one clear sentence for every kind of bad file."""
import io
import os
import pathlib
import pickle

import pytest
import torch

from model import Transformer, TransformerConfig
from model.checkpoint import (
    FORMAT_VERSION,
    Checkpoint,
    CheckpointError,
    available_pretrained,
    load_checkpoint,
    pretrained_path,
    save_checkpoint,
)
from model.tokenizer import CharTokenizer

TOK = CharTokenizer("abcd")
TASK = {"name": "copy", "min_len": 3, "max_len": 5, "alphabet": "abcd"}
HISTORY = {"step": [1, 2, 3], "loss": [2.5, 1.25, 0.5], "notes": {"lr": 0.003, "done": True, "tag": None}}


def make_model(d_model=32, seed=0, **kw) -> Transformer:
    torch.manual_seed(seed)
    cfg = TransformerConfig(TOK.vocab_size, TOK.vocab_size, d_model=d_model, n_heads=4, n_layers=2, d_ff=64,
                            dropout=0.1, max_len=16, **kw)
    return Transformer(cfg).eval()


def saved_bytes(model=None, **kw) -> bytes:
    buf = io.BytesIO()
    save_checkpoint(buf, model or make_model(), TOK, TASK, HISTORY, **kw)
    return buf.getvalue()


def raw_payload(data: bytes) -> dict:
    return torch.load(io.BytesIO(data), weights_only=True)


def torch_saved(payload) -> bytes:
    buf = io.BytesIO()
    torch.save(payload, buf)
    return buf.getvalue()


def assert_refused(source, sentence: str, reason: str | None = None, **kw) -> CheckpointError:
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(source, map_location="cpu", **kw)
    assert str(info.value) == sentence
    if reason is not None:
        assert info.value.reason == reason
    assert isinstance(info.value, ValueError)
    return info.value


def assert_same_model(a: Transformer, b: Transformer) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for key in sa:
        assert torch.equal(sa[key], sb[key]), key
    src = torch.tensor([[4, 5, 6, 7, 0]])
    tgt = torch.tensor([[1, 4, 5, 6]])
    with torch.inference_mode():
        out_a, out_b = a(src, tgt), b(src, tgt)
    assert torch.equal(out_a.logits, out_b.logits)
    for x, y in zip(out_a.cross_attention, out_b.cross_attention):
        assert torch.equal(x, y)


# -- round trips ---------------------------------------------------------------------------------
@pytest.mark.parametrize("norm_first", [False, True])
def test_round_trip_through_a_path(tmp_path, norm_first):
    model = make_model(norm_first=norm_first)
    path = tmp_path / "copy.pt"
    save_checkpoint(path, model, TOK, TASK, HISTORY)
    assert [p.name for p in tmp_path.iterdir()] == ["copy.pt"]  # no temporary file left behind
    ckpt = load_checkpoint(path, map_location="cpu")
    assert isinstance(ckpt, Checkpoint)
    assert_same_model(model, ckpt.model)
    assert not ckpt.model.training
    assert ckpt.config == model.config
    assert ckpt.tokenizer == TOK
    assert ckpt.task == TASK and ckpt.history == HISTORY
    assert ckpt.format_version == FORMAT_VERSION
    assert load_checkpoint(str(path), map_location="cpu").config == model.config


def test_round_trip_through_bytesio_and_bytes():
    model = make_model()
    buf = io.BytesIO()
    save_checkpoint(buf, model, TOK, TASK)
    buf.seek(0)
    from_stream = load_checkpoint(buf, map_location=torch.device("cpu"))
    assert_same_model(model, from_stream.model)
    assert from_stream.history == {}
    assert_same_model(model, load_checkpoint(buf.getvalue(), map_location="cpu").model)


def test_default_device_is_pick_device():
    from model.device import pick_device

    assert load_checkpoint(saved_bytes()).model.device.type == pick_device().type


def test_history_is_stored_as_plain_data():
    history = {"loss": torch.tensor([1.5, 0.5]), "step": torch.tensor(7), "pairs": [("ab", "ab")]}
    ckpt = load_checkpoint(_save(history), map_location="cpu")
    assert ckpt.history == {"loss": [1.5, 0.5], "step": 7, "pairs": [["ab", "ab"]]}
    with pytest.raises(TypeError, match="history\\['bad'\\] holds a object"):
        _save({"bad": object()})


def _save(history) -> bytes:
    buf = io.BytesIO()
    save_checkpoint(buf, make_model(), TOK, TASK, history)
    return buf.getvalue()


def test_saving_refuses_a_tokenizer_that_does_not_fit():
    with pytest.raises(ValueError, match="do not match the tokenizer"):
        save_checkpoint(io.BytesIO(), make_model(), CharTokenizer("abcde"), TASK)


# -- files that are not checkpoints ----------------------------------------------------------------
NOT_A_CHECKPOINT = "This file is not a Transformer Playground checkpoint."
TRUNCATED = "The checkpoint is damaged or incomplete (truncated file)."
UNSAFE = "The file contains code, not just weights; it was refused and nothing in it was run."


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
def test_random_bytes_and_text_are_not_checkpoints(tmp_path):
    assert_refused(os.urandom(4000), NOT_A_CHECKPOINT, "not_checkpoint")
    text = tmp_path / "notes.txt"
    text.write_text("Attention is all you need.\n" * 20)
    assert_refused(text, NOT_A_CHECKPOINT, "not_checkpoint")
    assert_refused(pickle.dumps({"x": 1}), NOT_A_CHECKPOINT, "not_checkpoint")


def test_empty_and_missing_files(tmp_path):
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    assert_refused(empty, "The file is empty, so it is not a checkpoint.", "empty")
    assert_refused(io.BytesIO(), "The file is empty, so it is not a checkpoint.", "empty")
    missing = tmp_path / "nope.pt"
    assert_refused(missing, f"There is no checkpoint file at {missing}.", "not_found")


def test_a_plain_torch_file_is_not_a_checkpoint():
    assert_refused(torch_saved({"weights": torch.zeros(3)}), NOT_A_CHECKPOINT)
    assert_refused(torch_saved(make_model().state_dict()), NOT_A_CHECKPOINT)


def test_wrong_format_marker():
    payload = raw_payload(saved_bytes())
    payload["format"] = "someone-else"
    assert_refused(torch_saved(payload), NOT_A_CHECKPOINT, "not_checkpoint")


@pytest.mark.parametrize("fraction", [0.5, 0.9, 0.05])
def test_truncated_checkpoint(tmp_path, fraction):
    data = saved_bytes()
    cut = tmp_path / "cut.pt"
    cut.write_bytes(data[: int(len(data) * fraction)])
    assert_refused(cut, TRUNCATED, "truncated")


def test_oversized_file_is_refused_before_reading(tmp_path):
    data = saved_bytes()
    path = tmp_path / "big.pt"
    path.write_bytes(data)
    sentence = "The file is larger than the 0.001 MB a checkpoint may have."
    assert_refused(path, sentence, "too_large", max_bytes=1024)
    assert_refused(data, sentence, "too_large", max_bytes=1024)
    stream = io.BytesIO(data)
    assert_refused(stream, sentence, "too_large", max_bytes=1024)
    assert stream.tell() == 0  # the size came from seeking, nothing was read
    assert str(CheckpointError("too_large", limit_mb=20)) == "The file is larger than the 20 MB a checkpoint may have."


class _Pwn:
    """Unpickling this would create a file: proof that code from the checkpoint ran."""

    def __init__(self, target: pathlib.Path) -> None:
        self.target = target

    def __reduce__(self):
        return (pathlib.Path.touch, (self.target,))


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
def test_pickle_with_code_is_refused_and_nothing_runs(tmp_path):
    target = tmp_path / "pwned"
    payload = raw_payload(saved_bytes())
    payload["history"] = {"loss": _Pwn(target)}
    evil_zip = tmp_path / "evil.pt"
    torch.save(payload, evil_zip)
    assert_refused(evil_zip, UNSAFE, "unsafe")
    assert_refused(pickle.dumps(_Pwn(target), protocol=2), UNSAFE, "unsafe")
    with pytest.raises(CheckpointError):  # newer pickle protocols are refused even earlier
        load_checkpoint(pickle.dumps(_Pwn(target)), map_location="cpu")
    assert not target.exists()
    pickle.loads(pickle.dumps(_Pwn(target)))  # the control: unpickled normally, it DOES run
    assert target.exists()


# -- checkpoints that do not hold together -------------------------------------------------------------
def test_weights_that_do_not_fit_the_config():
    model = make_model(d_model=32)
    first = next(iter(model.state_dict()))  # the source embedding table, (vocab, d_model)
    payload = raw_payload(saved_bytes(model))
    payload["config"]["d_model"] = 64
    err = assert_refused(
        torch_saved(payload),
        f"The weights do not fit the model described in the checkpoint ({first} has shape (8, 32), expected (8, 64)).",
        "shape_mismatch",
    )
    assert err.details["key"] == first


def test_a_single_wrong_shape_is_named():
    payload = raw_payload(saved_bytes())
    key = "decoder_layers.0.self_attn.in_proj.weight"
    payload["state_dict"][key] = torch.zeros(96, 16)
    assert_refused(
        torch_saved(payload),
        f"The weights do not fit the model described in the checkpoint ({key} has shape (96, 16), expected (96, 32)).",
    )


def test_missing_and_unexpected_weights():
    payload = raw_payload(saved_bytes())
    del payload["state_dict"]["generator.weight"]
    assert_refused(torch_saved(payload), "The checkpoint is missing weights the model needs (generator.weight).",
                   "missing_weights")
    payload = raw_payload(saved_bytes())
    payload["state_dict"]["extra.weight"] = torch.zeros(2)
    assert_refused(torch_saved(payload), "The checkpoint has weights this model does not have (extra.weight).",
                   "unexpected_weights")
    payload = raw_payload(saved_bytes())
    for key in [k for k in payload["state_dict"] if k.startswith("decoder_layers.1.")]:
        del payload["state_dict"][key]
    with pytest.raises(CheckpointError, match=r"missing weights the model needs \(decoder_layers\.1\..*and \d+ more\)"):
        load_checkpoint(torch_saved(payload), map_location="cpu")


def test_pre_norm_weights_in_a_post_norm_config():
    payload = raw_payload(saved_bytes(make_model(norm_first=True)))
    payload["config"]["norm_first"] = False
    assert_refused(
        torch_saved(payload),
        "The checkpoint has weights this model does not have (encoder_norm.weight, encoder_norm.bias, "
        "decoder_norm.weight and 1 more).",
    )


def test_bad_pieces_of_the_payload():
    def edited(**changes) -> bytes:
        payload = raw_payload(saved_bytes())
        payload.update(changes)
        return torch_saved(payload)

    assert_refused(edited(format_version=FORMAT_VERSION + 1),
                   f"This checkpoint was written by a newer Transformer Playground (format {FORMAT_VERSION + 1}); "
                   f"this one reads format {FORMAT_VERSION} and older.", "newer_version")
    assert_refused(edited(format_version="1"), "The checkpoint has an unknown format version ('1').", "bad_version")
    assert_refused(edited(config={"d_model": 32}), 
                   "The model description in the checkpoint is invalid (TransformerConfig.__init__() missing 2 "
                   "required positional arguments: 'src_vocab_size' and 'tgt_vocab_size').", "bad_config")
    config = raw_payload(saved_bytes())["config"]
    assert_refused(edited(config={**config, "n_heads": 5}), 
                   "The model description in the checkpoint is invalid (d_model (32) must split evenly across "
                   "n_heads (5): each head gets d_model / n_heads dimensions, and 32 / 5 is not a whole number).")
    assert_refused(edited(config={**config, "max_len": 10**7}),
                   "The model description in the checkpoint is invalid (max_len 10000000 is far longer than any "
                   "task needs).")
    assert_refused(edited(tokenizer={"letters": "abcd"}),
                   "The tokenizer description in the checkpoint is invalid (The tokenizer description has no "
                   "'alphabet' entry).", "bad_tokenizer")
    assert_refused(edited(tokenizer={"alphabet": "abc"}),
                   "The model expects a vocabulary of 8 tokens but the checkpoint's tokenizer has 7.", "vocab_mismatch")
    assert_refused(edited(task="copy"), "The checkpoint's task entry must be a dictionary, got a str.", "bad_metadata")
    assert_refused(edited(history=None), "The checkpoint's history entry must be a dictionary, got nothing.")
    assert_refused(edited(state_dict=[1, 2]), "The checkpoint's weights are not a table of named tensors.",
                   "bad_weights")


def test_diverged_weights_are_refused():
    model = make_model()
    with torch.no_grad():
        model.generator.bias[0] = float("nan")
    assert_refused(saved_bytes(model),
                   "The checkpoint's weights contain NaN or infinite values (generator.bias); training probably "
                   "diverged.", "non_finite")


# -- shipped checkpoints -------------------------------------------------------------------------------
def test_pretrained_paths():
    root = pathlib.Path(__file__).resolve().parents[2]
    assert pretrained_path("copy") == root / "assets" / "checkpoints" / "copy.pt"
    with pytest.raises(ValueError, match="Unknown task"):
        pretrained_path("../secrets")
    names = available_pretrained()
    assert names == [n for n in ("copy", "reverse", "sort", "dates", "en-zh", "zh-en") if n in names]
    assert all(pretrained_path(n).is_file() for n in names)


def test_available_pretrained_checkpoints_load():
    for name in available_pretrained():
        ckpt = load_checkpoint(pretrained_path(name), map_location="cpu")
        assert ckpt.task.get("name") == name

"""Hostile checkpoints (tests/hostile_checkpoints.py): each refused with its one sentence in both languages,
before anything big is built, with no code run and no memory kept; and the decode bound."""
from __future__ import annotations

import gc
import io
import os
import re
from pathlib import Path

import pytest
import torch

from model import decoding
from model.checkpoint import MAX_ABS_WEIGHT, MESSAGES, CheckpointError, load_checkpoint, save_checkpoint
from model.config import LIMITS, SIZE_FIELDS, TransformerConfig
from model.tasks import get_task
from model.tokenizer import CharTokenizer
from model.training import MODEL_PRESETS, TrainingConfig
from model.transformer import Transformer
from tests.hostile_checkpoints import COMMAND, hostile_checkpoints
from ui.i18n import LANGS, translate
from ui.training import session as ts

pytestmark = pytest.mark.filterwarnings("ignore:Detected pickle protocol")

SUITE = hostile_checkpoints()
PWNED = Path(COMMAND.split()[-1])
PAGE = os.sysconf("SC_PAGE_SIZE")


def refusal(data: bytes) -> CheckpointError:
    with pytest.raises(CheckpointError) as info:
        ts.read_upload(data)
    return info.value


# ------------------------------------------------------------------ each file: its reason, its sentence


@pytest.mark.parametrize("name", list(SUITE))
def test_each_hostile_file_is_refused_with_its_one_sentence(name):
    PWNED.unlink(missing_ok=True)
    hostile = SUITE[name]
    error = refusal(hostile.data)
    assert error.reason == hostile.reason, str(error)
    assert str(error).count(". ") == 0 and "\n" not in str(error) and len(str(error)) < 300
    key = ts.checkpoint_error_key(error)
    assert key == f"training.upload.error.{hostile.reason}"
    sentences = {lang: translate(key, lang) for lang in LANGS}
    assert all(text and "\n" not in text and text != key for text in sentences.values())
    assert sentences["en"] != sentences["zh"]
    assert not PWNED.exists()  # the code-carrying pickles ran nothing


def test_every_reason_of_the_suite_is_one_the_ui_translates():
    assert {h.reason for h in SUITE.values()} <= set(MESSAGES)
    assert {"too_big", "bad_entry", "hollow_weights", "huge_weights", "unsafe"} <= {h.reason for h in SUITE.values()}


def test_the_stride_zero_file_is_tiny_and_names_what_it_lacks():
    hostile = SUITE["stride_zero_1024x12"]
    assert len(hostile.data) < 64_000  # the 43 kB upload that became a 1.4 GB model
    assert "d_model is 1024, over this app's limit of 128" in str(refusal(hostile.data))
    error = refusal(SUITE["stride_zero_weights"].data)
    assert error.details["stored"] == 1 and error.details["key"].endswith("weight")


def test_nested_values_are_refused_without_printing_them():
    for name in ("nested_config_value", "nested_history_value", "nested_task_value", "nested_version",
                 "nested_alphabet"):
        assert "[[" not in str(refusal(SUITE[name].data))


# ------------------------------------------------------------------ memory: nothing kept, nothing big built


def resident_bytes() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * PAGE


def peak_bytes_since_reset() -> int:
    return int(re.search(r"VmHWM:\s+(\d+) kB", Path("/proc/self/status").read_text()).group(1)) * 1024


def reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")


def attempt(data: bytes) -> None:
    try:
        load_checkpoint(data, map_location="cpu")
    except CheckpointError:
        pass


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux's /proc")
def test_refusals_keep_no_memory_and_never_build_anything_big():
    attempts = 8
    for name, hostile in SUITE.items():
        attempt(hostile.data)  # warm: imports, caches, allocator pools
        gc.collect()
        before = resident_bytes()
        reset_peak()
        for _ in range(attempts):
            attempt(hostile.data)
        peak = peak_bytes_since_reset() - before
        gc.collect()
        kept = (resident_bytes() - before) / attempts
        assert kept < 2 * 2**20, f"{name}: {kept / 2**20:.2f} MB kept per attempt"
        assert peak < 64 * 2**20, f"{name}: {peak / 2**20:.0f} MB at the peak of an attempt"


# ------------------------------------------------------------------ the limits


def test_every_preset_fits_the_limits_with_room_to_spare():
    for preset in MODEL_PRESETS:
        for task in ("copy", "dates"):
            settings = TrainingConfig(task=task, preset=preset)
            made = settings.make_task()
            config = settings.model_config(CharTokenizer(made.alphabet), made)
            for name in SIZE_FIELDS:
                assert getattr(config, name) * 2 <= LIMITS.size_limit(name), (preset, name)
            with torch.device("meta"):
                params = sum(p.numel() for p in Transformer(config).parameters())
            assert params * 4 <= LIMITS.parameters


def model_bytes(config: TransformerConfig, scale: float | None = None, task: str = "copy") -> bytes:
    torch.manual_seed(0)
    model = Transformer(config).eval()
    if scale is not None:
        with torch.no_grad():
            for weight in model.parameters():
                weight.copy_(torch.randn_like(weight).sign() * scale)
    buffer = io.BytesIO()
    alphabet = "".join(chr(0x4E00 + i) for i in range(config.src_vocab_size - 4))
    save_checkpoint(buffer, model, CharTokenizer(alphabet), {"name": task})
    return buffer.getvalue()


def limit_config(**sizes) -> TransformerConfig:
    values = {"src_vocab_size": 40, "tgt_vocab_size": 40, "d_model": LIMITS.d_model, "n_heads": LIMITS.n_heads,
              "n_layers": LIMITS.n_layers, "d_ff": LIMITS.d_ff, "max_len": LIMITS.max_len, "dropout": 0.0}
    return TransformerConfig(**{**values, **sizes})


def test_a_model_at_every_limit_loads_and_its_outputs_stay_finite_at_the_weight_limit():
    ckpt = load_checkpoint(model_bytes(limit_config(n_heads=1), scale=MAX_ABS_WEIGHT), map_location="cpu")
    assert ckpt.model.num_params() <= LIMITS.parameters
    src = torch.randint(4, 40, (1, 48))
    tgt = torch.randint(4, 40, (1, 50))
    for norm_first in (False, True):
        model = Transformer(limit_config(n_heads=1, norm_first=norm_first)).eval()
        model.load_state_dict(ckpt.model.state_dict(), strict=False)
        with torch.inference_mode():
            assert bool(torch.isfinite(model(src, tgt).logits).all())


def test_one_past_a_limit_is_refused():
    assert refusal(model_bytes(limit_config(max_len=LIMITS.max_len + 2))).reason == "too_big"
    assert refusal(model_bytes(limit_config(src_vocab_size=LIMITS.vocab_size + 1,
                                            tgt_vocab_size=LIMITS.vocab_size + 1, n_layers=1))).reason == "too_big"
    error = refusal(model_bytes(limit_config(n_layers=1), scale=MAX_ABS_WEIGHT * 1.01))
    assert error.reason == "huge_weights" and error.details["limit"] == MAX_ABS_WEIGHT


def test_metadata_that_fits_the_schema_comes_back_as_it_was_saved():
    history = {"losses": [2.0, 1.5], "lrs": [1e-4, 2e-4], "evals": [[50, 0.5]], "steps": 2, "seconds": 1.5,
               "config": {"task": "copy", "seed": 0, "probe_source": None}, "notes": {"tag": None},
               "pairs": [["ab", "ab"]]}
    buffer = io.BytesIO()
    tokenizer = CharTokenizer("abcd")
    config = TransformerConfig(tokenizer.vocab_size, tokenizer.vocab_size, d_model=8, n_heads=2, n_layers=1, d_ff=16,
                               max_len=16)
    save_checkpoint(buffer, Transformer(config), tokenizer, {"name": "copy", "min_len": 3}, history)
    ckpt = ts.read_upload(buffer.getvalue())
    assert ckpt.history == history and ckpt.task == {"name": "copy", "min_len": 3}
    summary = ts.checkpoint_summary(ckpt)
    assert (summary["task"], summary["steps"], summary["accuracy"]) == ("copy", 2, 0.5)


# ------------------------------------------------------------------ the decode bound


def never_ending_model(max_len: int) -> tuple:
    """A model of ``max_len`` positions that never writes <eos> (its bias is -1000 there)."""
    tokenizer = CharTokenizer(get_task("copy").alphabet)
    config = TransformerConfig(tokenizer.vocab_size, tokenizer.vocab_size, d_model=16, n_heads=2, n_layers=1, d_ff=32,
                               max_len=max_len, dropout=0.0)
    torch.manual_seed(0)
    model = Transformer(config).eval()
    with torch.no_grad():
        model.generator.bias[tokenizer.eos_id] = -1000.0
    return model, tokenizer


def test_decode_bound_is_the_source_plus_a_margin_within_the_model():
    assert decoding.decode_bound(5, 256) == 5 + decoding.DECODE_MARGIN
    assert decoding.decode_bound(250, 256) == 256
    assert decoding.decode_bound(0, 256) == decoding.DECODE_MARGIN
    assert decoding.decode_bound(0, 1) == 1


def test_no_page_decodes_further_than_the_bound(monkeypatch):
    from explain import attention
    from explain.decoding import decode

    model, tokenizer = never_ending_model(LIMITS.max_len)
    ckpt = type("Ckpt", (), {"model": model, "tokenizer": tokenizer, "task": {"name": "copy"}})()
    bound = len("hello") + decoding.DECODE_MARGIN
    asked = []
    decode_loop = attention.decode_loop  # (model, encoded, prefixes, max_steps, pick, ...)
    monkeypatch.setattr(attention, "decode_loop", lambda *args, **kw: asked.append(args[3]) or decode_loop(*args, **kw))
    assert 0 < len(attention.greedy_answer(ckpt, "hello")) <= bound
    assert asked == [bound]  # before: max_len - 1 = 255 tokens
    for strategy in ("greedy", "beam", "sample"):
        trace = decode(ckpt, "hello", strategy, beam_size=2)
        assert trace.max_len == bound and len(trace.steps) == bound and not trace.finished


def test_decoding_stops_when_asked():
    model, tokenizer = never_ending_model(64)
    src = tokenizer.encode("hello")
    for run in (lambda stop: decoding.greedy_decode(model, src, max_len=60, should_stop=stop),
                lambda stop: decoding.beam_search(model, src, beam_size=2, max_len=60, should_stop=stop),
                lambda stop: decoding.sample_decode(model, src, temperature=1.0, top_k=None, seed=0, max_len=60,
                                                    should_stop=stop)):
        asked: list[int] = []

        def fourth_time(asked: list[int] = asked) -> bool:
            asked.append(1)
            return len(asked) > 3

        with pytest.raises(decoding.DecodingStopped):
            run(fourth_time)
        assert len(asked) == 4  # asked before every step; the fourth answer stopped it


# ------------------------------------------------------------------ extreme numbers never raise


def test_log_probabilities_are_finite_whatever_the_logits():
    logits = torch.tensor([[float("nan"), 1.0, 2.0], [float("inf"), float("-inf"), 0.0], [3e38, -3e38, 0.0]])
    logprobs = decoding.safe_logprobs(logits)
    assert bool(torch.isfinite(logprobs).all())
    assert torch.allclose(logprobs.exp().sum(-1), torch.ones(3))
    assert int(logprobs[1].argmax()) == 0 and int(logprobs[2].argmax()) == 0


@pytest.mark.parametrize("temperature", [1e-5, 0.5, 1.0, 2.0])
@pytest.mark.parametrize("top_k", [None, 2])
def test_sampling_distribution_is_a_distribution_even_from_broken_log_probabilities(temperature, top_k):
    for logprobs in (torch.tensor([float("nan")] * 4), torch.tensor([0.0, -2e30, -2e30, -1.0]),
                     torch.tensor([float("-inf"), float("-inf"), 0.0, float("inf")])):
        probs = decoding.sampling_distribution(logprobs, temperature, top_k)
        assert bool(torch.isfinite(probs).all()) and bool((probs >= 0).all())
        assert float(probs.sum()) == pytest.approx(1.0)
        torch.multinomial(probs, 1)  # what raised "probability tensor contains inf" before

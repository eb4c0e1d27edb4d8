"""The cost of attention: the complexity table of the paper, and the cost measured live on this server.

The table (seed 004, the paper's Table 1) compares a self-attention layer with a recurrent and a
convolutional one: operations per layer, operations that must run one after another, and the
longest path a signal travels between two positions. n is the sequence length, d the
representation size, k the kernel width, r the neighbourhood of restricted self-attention.

The measurement builds a fresh, randomly initialised Transformer of the chosen model's sizes (the
shipped models read at most 64 tokens; this one takes up to :data:`MAX_LENGTH`), and times one
encoder forward of a batch of one random sentence per length, on the explicit path that returns
every attention map (``need_weights=True``) and on the fused ``F.scaled_dot_product_attention``
path (``need_weights=False``). It is bounded: lengths stop at a cap, the run stops after a length
whose forward took over :data:`LENGTH_BUDGET_S` or once it has taken :data:`TOTAL_BUDGET_S`, and a
length predicted (n² from the one before) to take over :data:`START_LIMIT` × that budget is not started. One measurement runs at a time in the process (:func:`measure_once`); its
result is kept per model size and device for every later visitor.
"""
from __future__ import annotations

import dataclasses
import math
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Iterator, TypeVar

import numpy as np
import pandas as pd
import torch

from explain.turns import TICK_S, Turns
from model.config import TransformerConfig
from model.transformer import ForwardOptions, Transformer

T = TypeVar("T")

# (layer kind, operations per layer, sequential operations, maximum path length), in plain Unicode: a table
# cell that a phone can scroll (LaTeX in a Markdown table cannot).
COMPLEXITY: tuple[tuple[str, str, str, str], ...] = (
    ("self_attention", "O(n²·d)", "O(1)", "O(1)"),
    ("recurrent", "O(n·d²)", "O(n)", "O(n)"),
    ("convolution", "O(k·n·d²)", "O(1)", "O(logₖ n)"),
    ("restricted", "O(r·n·d)", "O(1)", "O(n/r)"),
)

LENGTHS = (8, 16, 32, 64, 128, 256, 512, 1024)  # tokens; each twice the one before
MAX_LENGTH = 1024  # never longer, whatever the lengths asked for
LENGTH_BUDGET_S = 1.5  # the run stops after a length whose slowest forward took longer than this
TOTAL_BUDGET_S = 10.0  # the run stops once it has taken this long
START_LIMIT = 2.0  # a length predicted to take over START_LIMIT × LENGTH_BUDGET_S per forward is not started
# Each time is the best of several forwards: at least MIN_REPEATS while they take under REPEAT_MAX_S in all,
# more (up to MAX_REPEATS) while under REPEAT_S. The best of several is the least disturbed by other work.
MIN_REPEATS, MAX_REPEATS, REPEAT_S, REPEAT_MAX_S = 3, 10, 0.1, 1.0
VOCAB = 32  # random token ids 1..31 (0 is <pad>: none here, so no padding mask is needed)
PATHS = ("explicit", "sdpa")
COLUMNS = ["length", "path", "seconds", "memory_bytes"]
SLOPE_MIN_POINTS = 3
CPU_THREADS = 1  # on the CPU the measurement runs on one thread: a second one stalls whenever a busy server
# deschedules it (measured on a shared 2-core box: 0.2-0.3 s for an 8-token forward with two threads, under
# 1 ms with one), which would hide the n² trend under noise. The pages' own inference is not affected after.


@dataclass(frozen=True)
class CostMeasurement:
    """One measurement: ``rows`` has :data:`COLUMNS`, one row per (length, path).

    ``memory`` says what ``memory_bytes`` is: ``"cuda_peak"`` (``torch.cuda.max_memory_allocated``
    during the forward, beyond what was allocated before it, both paths) or ``"maps"`` (the bytes of
    the scores and weights the explicit path materialises, layers · heads · n² · 4 bytes each,
    counted from the maps it returned; NaN for the fused path, which keeps no map).
    ``stopped``: ``"done"`` (every length up to the cap), ``"length_budget"`` or ``"total_budget"``.
    """

    config: TransformerConfig
    device: str
    rows: pd.DataFrame
    memory: str
    stopped: str
    seconds_taken: float

    @property
    def lengths(self) -> list[int]:
        return sorted(int(n) for n in self.rows["length"].unique())

    def series(self, path: str, column: str) -> tuple[np.ndarray, np.ndarray]:
        """(lengths, values of ``column``) of ``path``, by length."""
        part = self.rows[self.rows["path"] == path].sort_values("length")
        return part["length"].to_numpy(dtype=float), part[column].to_numpy(dtype=float)

    def slope(self, path: str) -> float | None:
        """The fitted slope of log(time) against log(n) of ``path`` over the larger lengths (:func:`fitted_slope`)."""
        lengths, seconds = self.series(path, "seconds")
        return fitted_slope(lengths, seconds)

    def csv(self) -> str:
        return self.rows.to_csv(index=False)


def measured_config(config: TransformerConfig, max_length: int = MAX_LENGTH) -> TransformerConfig:
    """``config``'s sizes and variants with room for ``max_length`` tokens, a small vocabulary and no dropout."""
    return dataclasses.replace(config, src_vocab_size=VOCAB, tgt_vocab_size=VOCAB, pad_id=0, dropout=0.0,
                               max_len=max_length)


def fitted_slope(lengths: np.ndarray, seconds: np.ndarray) -> float | None:
    """Least-squares slope of log(seconds) against log(length) over the larger half of the lengths
    (at least :data:`SLOPE_MIN_POINTS`); None with fewer points. 2 means: twice the length, four times the time."""
    lengths, seconds = np.asarray(lengths, dtype=float), np.asarray(seconds, dtype=float)
    keep = np.isfinite(seconds) & (seconds > 0) & (lengths > 0)
    lengths, seconds = lengths[keep], seconds[keep]
    if len(lengths) < SLOPE_MIN_POINTS:
        return None
    order = np.argsort(lengths)
    top = order[-max(SLOPE_MIN_POINTS, math.ceil(len(order) / 2)):]
    return float(np.polyfit(np.log(lengths[top]), np.log(seconds[top]), 1)[0])


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work, so a clock read after it counts the work."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def _one_forward(model: Transformer, ids: torch.Tensor, need_weights: bool) -> tuple[float, tuple[torch.Tensor, ...]]:
    """(seconds, attention maps returned) of one encoder forward of ``ids``."""
    opts = ForwardOptions(use_padding_mask=False, need_weights=need_weights)
    synchronize(ids.device)
    start = time.perf_counter()
    out = model.encode(ids, opts)
    synchronize(ids.device)
    return time.perf_counter() - start, out.attention


def _map_bytes(maps: tuple[torch.Tensor, ...]) -> int:
    """Bytes of the scores and the weights of every layer: one (B, H, n, n) tensor each, as returned."""
    return 2 * sum(m.numel() * m.element_size() for m in maps)


def _cuda_peak(model: Transformer, ids: torch.Tensor, need_weights: bool) -> int:
    """Bytes allocated on the GPU at the peak of one forward, beyond what was allocated before it."""
    torch.cuda.synchronize(ids.device)
    torch.cuda.reset_peak_memory_stats(ids.device)
    before = torch.cuda.memory_allocated(ids.device)
    _, maps = _one_forward(model, ids, need_weights)
    peak = torch.cuda.max_memory_allocated(ids.device) - before
    del maps
    return int(peak)


def best_time(once: Callable[[], float]) -> float:
    """The least of several timings ``once()`` (seconds each): at least :data:`MIN_REPEATS` while they take
    under :data:`REPEAT_MAX_S` in all, more (up to :data:`MAX_REPEATS`) while under :data:`REPEAT_S`."""
    times, spent = [], 0.0
    while not times or (len(times) < MAX_REPEATS and (spent < REPEAT_S or
                                                       (len(times) < MIN_REPEATS and spent < REPEAT_MAX_S))):
        times.append(once())
        spent += times[-1]
    return min(times)


def _time_path(model: Transformer, ids: torch.Tensor, need_weights: bool) -> tuple[float, float]:
    """(best time of several forwards, memory bytes) of one path at one length."""
    last: list[tuple[torch.Tensor, ...]] = [()]  # the maps of the latest forward

    def once() -> float:
        seconds, last[0] = _one_forward(model, ids, need_weights)
        return seconds

    seconds = best_time(once)
    if ids.device.type == "cuda":
        memory = float(_cuda_peak(model, ids, need_weights))
    else:
        memory = float(_map_bytes(last[0])) if need_weights else math.nan
    return seconds, memory


@contextmanager
def cpu_threads(device: torch.device, threads: int) -> Iterator[None]:
    """Run the block with ``threads`` torch threads on the CPU, then put the process's setting back (unless
    something else changed it meanwhile, such as the first training run of the process)."""
    before = torch.get_num_threads()
    if device.type != "cpu" or before == threads:
        yield
        return
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        if torch.get_num_threads() == threads:
            torch.set_num_threads(before)


def measure_cost(config: TransformerConfig, device: str = "cpu", *, lengths: tuple[int, ...] | None = None,
                 max_length: int | None = None, length_budget_s: float | None = None,
                 total_budget_s: float | None = None,
                 on_progress: Callable[[float, int], None] | None = None) -> CostMeasurement:
    """Time one encoder forward (batch 1) of a fresh model of ``config``'s sizes at each of ``lengths``
    up to ``max_length``, on both paths, under the budgets (None: this module's constants, read at the
    call). ``on_progress(fraction done, length)`` is called after each length. The first length is
    always measured."""
    lengths = LENGTHS if lengths is None else lengths
    max_length = MAX_LENGTH if max_length is None else max_length
    length_budget_s = LENGTH_BUDGET_S if length_budget_s is None else length_budget_s
    total_budget_s = TOTAL_BUDGET_S if total_budget_s is None else total_budget_s
    config = measured_config(config, max(max_length, 1))
    torch_device = torch.device(device)
    with torch.inference_mode(), cpu_threads(torch_device, CPU_THREADS):
        return _measure(config, torch_device, lengths, max_length, length_budget_s, total_budget_s, on_progress)


def _measure(config: TransformerConfig, torch_device: torch.device, lengths: tuple[int, ...], max_length: int,
             length_budget_s: float, total_budget_s: float,
             on_progress: Callable[[float, int], None] | None) -> CostMeasurement:
    """:func:`measure_cost` once its arguments are settled."""
    generator = torch.Generator().manual_seed(0)  # the token ids; the weights are whatever the init draws
    model = Transformer(config).to(torch_device).eval()
    todo = sorted(n for n in set(lengths) if 1 <= n <= max_length)
    memory_kind = "cuda_peak" if torch_device.type == "cuda" else "maps"
    rows, stopped, previous = [], "done", None  # previous: (length, slowest single forward)
    start = time.perf_counter()
    warm = torch.randint(1, VOCAB, (1, todo[0] if todo else 1), generator=generator).to(torch_device)
    for need_weights in (True, False):  # the first forward of a new model pays one-off costs: not timed
        _one_forward(model, warm, need_weights)
    for i, n in enumerate(todo):
        if previous is not None and previous[1] * (n / previous[0]) ** 2 > START_LIMIT * length_budget_s:
            stopped = "length_budget"
            break
        ids = torch.randint(1, VOCAB, (1, n), generator=generator).to(torch_device)
        slowest = 0.0
        for path in PATHS:
            seconds, memory = _time_path(model, ids, need_weights=path == "explicit")
            rows.append({"length": n, "path": path, "seconds": seconds, "memory_bytes": memory})
            slowest = max(slowest, seconds)
        previous = (n, slowest)
        if on_progress is not None:
            on_progress((i + 1) / len(todo), n)
        if i + 1 == len(todo):
            break
        if slowest > length_budget_s:
            stopped = "length_budget"
            break
        if time.perf_counter() - start > total_budget_s:
            stopped = "total_budget"
            break
    return CostMeasurement(config=config, device=str(torch_device), rows=pd.DataFrame(rows, columns=COLUMNS),
                           memory=memory_kind, stopped=stopped, seconds_taken=time.perf_counter() - start)


# ------------------------------------------------------------------ one at a time, in turn, kept for everyone

WAIT_TICK_S = TICK_S  # a waiting visitor hears their place this often (and their script can be stopped between)
_LINE = Turns(1)  # one measurement at a time in the process, so each is timed alone
_RESULTS_LOCK = threading.Lock()
_RESULTS: dict[Hashable, Any] = {}  # key -> a measurement (this page's and explain.latent's)


class _MeasuredMeanwhile(Exception):
    """A waiting caller's key was measured by someone ahead of it: it leaves the line with that result."""


def _key(config: TransformerConfig, device: str) -> tuple[TransformerConfig, str]:
    """What changes the cost: the sizes and variants, and the device (not the vocabulary, the length limit,
    dropout or the positional base, which an uploaded file may set to any value)."""
    return dataclasses.replace(measured_config(config), pe_base=TransformerConfig.pe_base), str(torch.device(device))


def kept(key: Hashable) -> Any | None:
    """The measurement already made in this process under ``key``, or None."""
    with _RESULTS_LOCK:
        return _RESULTS.get(key)


def cached_cost(config: TransformerConfig, device: str = "cpu") -> CostMeasurement | None:
    """The measurement already made in this process for ``config``'s sizes on ``device``, or None."""
    return kept(_key(config, device))


def is_measuring() -> bool:
    """True while some visitor's measurement is running (or waiting) in this process."""
    return len(_LINE) > 0


def once(key: Hashable, measure: Callable[[], T], on_wait: Callable[[int], None] | None = None) -> T:
    """``measure()``, one at a time in the process, in arrival order, once per ``key``; kept for everyone.

    A caller behind others is told its place every :data:`WAIT_TICK_S` (``on_wait(n)``: n measurements
    are ahead of it), never blocks longer than that, and leaves the line if ``on_wait`` or ``measure``
    raises (a Streamlit script stopped by a rerun or a closed tab does, from its next ``st`` call). A result
    of the same key made meanwhile is returned at once, without measuring again.
    """
    done = kept(key)
    if done is not None:
        return done

    def waiting(ahead: int) -> None:
        if kept(key) is not None:
            raise _MeasuredMeanwhile
        if on_wait is not None:
            on_wait(ahead)

    try:
        with _LINE.turn(on_wait=waiting):
            done = kept(key)
            if done is not None:
                return done
            result = measure()
            with _RESULTS_LOCK:
                _RESULTS[key] = result
            return result
    except _MeasuredMeanwhile:
        return kept(key)


def measure_once(config: TransformerConfig, device: str = "cpu", *,
                 on_progress: Callable[[float, int], None] | None = None,
                 on_wait: Callable[[int], None] | None = None, **limits) -> CostMeasurement:
    """:func:`measure_cost` by :func:`once`: in turn, once per model size and device (``on_progress`` raising
    leaves the line too). ``limits``: the keyword budgets of :func:`measure_cost`."""
    return once(_key(config, device), lambda: measure_cost(config, device, on_progress=on_progress, **limits),
                on_wait=on_wait)


def forget_measurements() -> None:
    """Drop every kept measurement (tests)."""
    with _RESULTS_LOCK:
        _RESULTS.clear()

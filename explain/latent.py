"""Latent attention: k latent vectors read the n tokens, then the tokens read the latents.

Step 1, the latents read the sentence: ``R = softmax(Q_lat K^T / √d_k)`` (k × n); each latent becomes
the R-weighted mean of the token vectors, so (the projections being linear, their bias included since
every row of R sums to 1) its key and value are ``R K`` and ``R V``. Step 2, the tokens read the latents:
``W = softmax(Q (R K)^T / √d_k)`` (n × k), and the output is ``W (R V) = (W R) V``. So ``W R`` (n × n,
rows summing to 1, rank at most k) is the token-to-token attention that latent attention implies,
and neither step ever forms an n × n matrix: 5·n·k·d multiply-adds against full attention's 2·n²·d.

The shipped models were trained with full attention, so they have no learnt latents. Here latent j
starts as the mean of the token vectors of the j-th of k equal stretches of the sentence; projected by
the head's own W_Q, its query is the mean of those tokens' queries (:func:`stretch_means`). Everything
else is the model's: the q, k, v of one encoder head, read from the forward's trace, and that head's
real map beside the implied one.

:func:`measure_latent_cost` times one latent attention against one full attention at n = 8 … 1024
with random vectors of the selected model's sizes, one at a time in the process with the cost page's
other measurement (:func:`explain.cost.once`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd
import torch

from explain import cost
from explain.attention import attention_view
from explain.cost import CostMeasurement
from model.attention import scaled_dot_product_attention
from model.checkpoint import Checkpoint
from model.config import TransformerConfig

LATENTS_MIN, LATENTS_MAX, LATENTS_DEFAULT = 1, 32, 4
PATHS = ("full", "latent")
RANK_TOLERANCE = 1e-9  # singular values below this (relative to the largest) do not count towards the rank
MAP_CSV_COLUMNS = ["map", "row", "row_label", "column", "column_label", "weight"]


# ------------------------------------------------------------------ the computation


def stretch_means(n: int, k: int) -> np.ndarray:
    """(k, n): row j averages the j-th of k contiguous, as-equal-as-possible stretches of n positions.
    Needs 1 ≤ k ≤ n. Every row sums to 1, so M·(X W + b) = (M X) W + b: the mean of the projections."""
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got k={k}, n={n}")
    means = np.zeros((k, n))
    for j, part in enumerate(np.array_split(np.arange(n), k)):
        means[j, part] = 1.0 / len(part)
    return means


def latent_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                     latent_q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One latent attention per head. q, k, v: (..., n, d_k) the tokens'; latent_q: (..., k, d_k) the latents'.
    Returns (output (..., n, d_k), read (..., k, n): the latents reading the tokens, write (..., n, k): the
    tokens reading the latents). Both steps are the model's own scaled dot-product attention."""
    d_k = k.size(-1)
    mixed, read, _ = scaled_dot_product_attention(latent_q, k, torch.cat([k, v], dim=-1))  # (..., k, 2·d_k)
    latent_k, latent_v = mixed[..., :d_k], mixed[..., d_k:]
    out, write, _ = scaled_dot_product_attention(q, latent_k, latent_v)
    return out, read, write


def full_multiply_adds(n: int, d: int) -> int:
    """Full attention over all heads (H·d_k = d): Q Kᵀ (n²·d) and A V (n²·d)."""
    return 2 * n * n * d


def latent_multiply_adds(n: int, k: int, d: int) -> int:
    """Latent attention over all heads: the latents' scores (k·n·d), their keys and values (2·k·n·d), the
    tokens' scores (n·k·d) and their mix of the latents' values (n·k·d): 5·n·k·d."""
    return 5 * n * k * d


def full_map_floats(n: int, heads: int) -> int:
    """Weights one full attention keeps: an n × n map per head."""
    return heads * n * n


def latent_map_floats(n: int, k: int, heads: int) -> int:
    """Weights one latent attention keeps: a k × n and an n × k map per head."""
    return heads * 2 * n * k


# ------------------------------------------------------------------ on the selected model's sentence


@dataclass(frozen=True)
class LatentMaps:
    """Latent attention of one encoder head on one sentence, beside the head's real map (float64).

    ``latents`` may be fewer than asked: at most one per token."""

    tokens: tuple[str, ...]
    layer: int  # 1-based
    head: int  # 1-based
    stretches: tuple[tuple[int, int], ...]  # latent j starts as the mean of tokens first..last (0-based)
    read: np.ndarray  # (k, n): the latents reading the tokens
    write: np.ndarray  # (n, k): the tokens reading the latents
    full: np.ndarray  # (n, n): the head's own map, full attention as the model computed it

    @property
    def latents(self) -> int:
        return self.read.shape[0]

    @property
    def implied(self) -> np.ndarray:
        """(n, n) = write · read: how much each token's output takes from each token's value."""
        return self.write @ self.read

    @property
    def rank(self) -> int:
        return int(np.linalg.matrix_rank(self.implied, tol=RANK_TOLERANCE * max(1.0, np.abs(self.implied).max())))

    @property
    def distance(self) -> float:
        """Mean over the tokens of half the summed |implied − full| of their row: 0 same, 1 no overlap."""
        return float(0.5 * np.abs(self.implied - self.full).sum(axis=1).mean())

    def latent_labels(self) -> list[str]:
        """"L1 (0–3)": latent and the positions it started from."""
        return [f"L{j + 1} ({a}–{b})" if a != b else f"L{j + 1} ({a})" for j, (a, b) in enumerate(self.stretches)]

    def csv(self) -> str:
        """Every weight of the four maps, one line each."""
        tokens, latents = list(self.tokens), self.latent_labels()
        frames = []
        maps = (("read", self.read, latents, tokens), ("write", self.write, tokens, latents),
                ("implied", self.implied, tokens, tokens), ("full", self.full, tokens, tokens))
        for name, matrix, rows, cols in maps:
            r, c = np.indices(matrix.shape)
            frames.append(pd.DataFrame({"map": name, "row": r.ravel(), "row_label": [rows[i] for i in r.ravel()],
                                        "column": c.ravel(), "column_label": [cols[j] for j in c.ravel()],
                                        "weight": np.round(matrix.ravel(), 6)}))
        return pd.concat(frames, ignore_index=True)[MAP_CSV_COLUMNS].to_csv(index=False)


def latent_maps_of(q: np.ndarray, k: np.ndarray, v: np.ndarray, latents: int) -> tuple[np.ndarray, np.ndarray]:
    """(read (k, n), write (n, k)) for one head's q, k, v (n, d_k) and ``latents`` stretch-mean latents."""
    q, k, v = (torch.as_tensor(np.asarray(a, dtype=np.float64)) for a in (q, k, v))
    means = torch.as_tensor(stretch_means(q.shape[0], latents))
    _, read, write = latent_attention(q, k, v, means @ q)
    return read.numpy(), write.numpy()


def latent_maps(ckpt: Checkpoint, sentence: str, latents: int, layer: int = 1, head: int = 1) -> LatentMaps:
    """Latent attention with ``latents`` latents (at most one per token) in encoder ``layer``'s ``head``
    (1-based) on ``sentence``, from one forward's q, k, v, and the head's real map."""
    view = attention_view(ckpt, sentence, "", need_details=True)  # the encoder's details; no answer needed
    details = view.details["encoder"]
    q, k, v = (details[name][layer - 1, head - 1] for name in ("q", "k", "v"))  # (n, d_k)
    n = q.shape[0]
    count = max(1, min(latents, n))
    read, write = latent_maps_of(q, k, v, count)
    parts = np.array_split(np.arange(n), count)
    return LatentMaps(tokens=tuple(view.src_tokens), layer=layer, head=head,
                      stretches=tuple((int(p[0]), int(p[-1])) for p in parts), read=read, write=write,
                      full=view.encoder[layer - 1, head - 1])


# ------------------------------------------------------------------ measured on this server


def _time(run: Callable[[], torch.Tensor], device: torch.device) -> float:
    """Seconds of one ``run()``, the device's queued work included."""
    cost.synchronize(device)
    start = time.perf_counter()
    run()
    cost.synchronize(device)
    return time.perf_counter() - start


def measure_latent_cost(config: TransformerConfig, latents: int, device: str = "cpu", *,
                        lengths: tuple[int, ...] | None = None,
                        on_progress: Callable[[float, int], None] | None = None) -> CostMeasurement:
    """Time one full and one latent attention (all heads, batch 1, random q, k, v of ``config``'s sizes)
    at each of ``lengths`` (None: the cost page's, read at the call) under the cost page's budgets.
    ``memory_bytes`` counts the weights each keeps (``"maps"``): float32, H·n² against H·2·n·k."""
    lengths = cost.LENGTHS if lengths is None else lengths
    torch_device = torch.device(device)
    heads, d_k = config.n_heads, config.d_k
    generator = torch.Generator().manual_seed(0)
    todo = sorted(n for n in set(lengths) if 1 <= n <= cost.MAX_LENGTH)
    rows, stopped, start = [], "done", time.perf_counter()
    with torch.inference_mode(), cost.cpu_threads(torch_device, cost.CPU_THREADS):
        latent_q = torch.randn(1, heads, latents, d_k, generator=generator).to(torch_device)
        for i, n in enumerate(todo):
            q, k, v = torch.randn(3, 1, heads, n, d_k, generator=generator).to(torch_device).unbind(0)
            runs = {"full": lambda: scaled_dot_product_attention(q, k, v)[0],
                    "latent": lambda: latent_attention(q, k, v, latent_q)[0]}
            maps = {"full": full_map_floats(n, heads), "latent": latent_map_floats(n, latents, heads)}
            slowest = 0.0
            for path in PATHS:
                runs[path]()  # a first call pays one-off costs: not timed
                seconds = cost.best_time(lambda: _time(runs[path], torch_device))
                rows.append({"length": n, "path": path, "seconds": seconds, "memory_bytes": 4.0 * maps[path]})
                slowest = max(slowest, seconds)
            if on_progress is not None:
                on_progress((i + 1) / len(todo), n)
            if i + 1 == len(todo):
                break
            if slowest > cost.LENGTH_BUDGET_S:
                stopped = "length_budget"
                break
            if time.perf_counter() - start > cost.TOTAL_BUDGET_S:
                stopped = "total_budget"
                break
    return CostMeasurement(config=config, device=str(torch_device), rows=pd.DataFrame(rows, columns=cost.COLUMNS),
                           memory="maps", stopped=stopped, seconds_taken=time.perf_counter() - start)


def _key(config: TransformerConfig, latents: int, device: str) -> tuple:
    return ("latent", config.d_model, config.n_heads, int(latents), str(torch.device(device)))


def cached_latent_cost(config: TransformerConfig, latents: int, device: str = "cpu") -> CostMeasurement | None:
    """The latent measurement already made in this process for these sizes, ``latents`` and ``device``, or None."""
    return cost.kept(_key(config, latents, device))


def measure_latent_once(config: TransformerConfig, latents: int, device: str = "cpu", *,
                        on_progress: Callable[[float, int], None] | None = None,
                        on_wait: Callable[[int], None] | None = None) -> CostMeasurement:
    """:func:`measure_latent_cost` in turn with every other measurement of the process, once per key."""
    return cost.once(_key(config, latents, device),
                     lambda: measure_latent_cost(config, latents, device, on_progress=on_progress), on_wait=on_wait)


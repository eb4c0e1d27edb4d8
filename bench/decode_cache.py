"""Decode time against output length, with and without the key/value cache (model/decoding.py).

The reference is the same decoder loop without the cache (``use_cache=False``: the whole prefix is
re-run at every step), measured in the same run, on the same model and source, interleaved, median
of several calls; the number to read is the ratio uncached / cached. The model is the largest
training preset's size (d_model 64, 4 heads, 2+2 layers, d_ff 256) with random weights and
<eos> made impossible, so every decode runs exactly ``length`` steps. Two paths are timed:
``greedy_ids`` (batch greedy without attention maps: training-time evaluation, a batch of 32) and
``greedy_decode`` (one sentence with every attention map, as the Decoding page asks). Prints a
markdown table; the last stdout line is JSON.

One thread by default (``--threads``): the app serves many visitors from one process, and on a
shared machine more threads mostly measure the contention.

    python bench/decode_cache.py [--quick] [--device cpu] [--threads 1]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from model import Transformer, TransformerConfig, pick_device  # noqa: E402
from bench.forward import time_calls  # noqa: E402
from model.decoding import greedy_decode, greedy_ids  # noqa: E402

EOS_ID = 2


def median_ms(fn, calls: int, device: torch.device) -> float:
    return statistics.median(time_calls(fn, calls, device)) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="lengths 8, 16, 32 and fewer calls (under a minute)")
    parser.add_argument("--device", default=None)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = pick_device(args.device)
    lengths = (8, 16, 32) if args.quick else (8, 16, 32, 64, 128)
    calls = 3 if args.quick else 5
    torch.manual_seed(0)
    cfg = TransformerConfig(66, 66, d_model=64, n_heads=4, n_layers=2, d_ff=256, dropout=0.1, max_len=256)
    model = Transformer(cfg).to(device).eval()
    with torch.no_grad():
        model.generator.bias[EOS_ID] = -1e4  # never ends early: every decode is exactly `length` steps
    batch = torch.randint(3, 66, (32, 20), device=device)
    sentence = batch[0].tolist()
    paths = {
        "greedy_ids, batch 32, no attention maps": lambda n, cache: greedy_ids(model, batch, n, use_cache=cache),
        "greedy_decode, 1 sentence, all attention maps": lambda n, cache: greedy_decode(
            model, sentence, max_len=n, use_cache=cache),
    }
    rows = []
    for name, run in paths.items():
        for n in lengths:
            if n == lengths[0]:
                run(n, True), run(n, False)  # warm-up
            cached, full = [], []
            for _ in range(calls):  # interleave so drift hits both alike
                cached.append(median_ms(lambda: run(n, True), 1, device))
                full.append(median_ms(lambda: run(n, False), 1, device))
            c, f = statistics.median(cached), statistics.median(full)
            rows.append({"path": name, "length": n, "cached_ms": round(c, 2), "uncached_ms": round(f, 2),
                         "speedup": round(f / c, 2)})
    print(f"device {device}, {torch.get_num_threads()} threads, median of {calls} interleaved calls\n")
    print("| path | output length | without cache (ms) | with cache (ms) | uncached / cached |")
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['path']} | {r['length']} | {r['uncached_ms']:.1f} | {r['cached_ms']:.1f} | {r['speedup']:.2f}× |")
    print(json.dumps({"device": str(device), "threads": torch.get_num_threads(), "rows": rows}))


if __name__ == "__main__":
    main()

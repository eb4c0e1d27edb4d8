"""Forward-pass speed: our Transformer returning every attention map vs plain torch.nn.Transformer.

Both models have the same size (d_model 128, 8 heads, 2+2 layers, d_ff 512, vocab 5000) and are
wrapped with the same embeddings, positional encoding and output projection, so the only
difference is the encoder/decoder stack. Timed in one run, on the same inputs, interleaved,
median of many calls, in eval mode under inference_mode. The last stdout line is JSON.

    python bench/forward.py [--calls 300] [--device cpu]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from model import Transformer, TransformerConfig, pick_device  # noqa: E402


class ReferenceTransformer(nn.Module):
    """nn.Transformer behind our embeddings and generator (its bool masks: True = do NOT attend)."""

    def __init__(self, ours: Transformer) -> None:
        super().__init__()
        cfg = ours.config
        self.ours = ours
        self.core = nn.Transformer(cfg.d_model, cfg.n_heads, cfg.n_layers, cfg.n_layers, cfg.d_ff,
                                   dropout=cfg.dropout, batch_first=True)

    def forward(self, src, tgt):
        T = tgt.size(1)
        causal = torch.ones(T, T, dtype=torch.bool, device=tgt.device).triu(1)
        out = self.core(self.ours.embed(src, "src"), self.ours.embed(tgt, "tgt"), tgt_mask=causal,
                        src_key_padding_mask=src == 0, tgt_key_padding_mask=tgt == 0,
                        memory_key_padding_mask=src == 0)
        return self.ours.generator(out)


def time_calls(fn, calls: int, device: torch.device) -> list[float]:
    times = []
    for _ in range(calls):
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--device", default=None)
    args = parser.parse_args()
    device = pick_device(args.device)
    torch.manual_seed(0)
    cfg = TransformerConfig(5000, 5000, d_model=128, n_heads=8, n_layers=2, d_ff=512, dropout=0.1, max_len=128)
    ours = Transformer(cfg).to(device).eval()
    ref = ReferenceTransformer(ours).to(device).eval()
    results = {}
    for length in (12, 64):
        src = torch.randint(4, 5000, (1, length), device=device)
        tgt = torch.randint(4, 5000, (1, length), device=device)
        with torch.inference_mode():
            out = ours(src, tgt)  # every attention map: 2 encoder, 2 decoder, 2 cross
            assert len(out.encoder_attention) == len(out.decoder_attention) == len(out.cross_attention) == 2
            for _ in range(20):  # warm-up both
                ours(src, tgt), ref(src, tgt)
            ours_t, ref_t = [], []
            for _ in range(20):  # interleave blocks so drift hits both alike
                ours_t += time_calls(lambda: ours(src, tgt), args.calls // 20, device)
                ref_t += time_calls(lambda: ref(src, tgt), args.calls // 20, device)
        o, r = statistics.median(ours_t), statistics.median(ref_t)
        results[length] = {"ours_ms": round(o * 1e3, 4), "torch_ms": round(r * 1e3, 4), "ratio": round(o / r, 4)}
        print(f"length {length:3d}: ours (all attention maps) {o*1e3:.3f} ms   nn.Transformer {r*1e3:.3f} ms   "
              f"ratio {o/r:.3f}", file=sys.stderr)
    summary = {
        "device": str(device),
        "threads": torch.get_num_threads(),
        "ratio": max(v["ratio"] for v in results.values()),
        **{f"len{k}": v for k, v in results.items()},
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()

"""Training speed: our engine to 0.99 on the copy task vs a plain torch.nn.Transformer loop.

The Annotated Transformer's copy task (fixed length 10, alphabet 1-9), d_model 64, 4 heads, 2+2
layers, d_ff 256, dropout 0.1, batch 64, label smoothing 0.1, Adam(0.9, 0.98, 1e-9) on the Noam
schedule (factor 1, warmup 400), trained until greedy exact match on 1000 held-out sequences
reaches 0.99, checked every 50 steps. Each seed trains twice in the same process:

* ours: ``TrainingRun(...).train_until_done()``, the engine the app and the CLI use;
* torch: ``nn.Transformer`` (batch_first, post-norm) behind its own embeddings * sqrt(d),
  sinusoidal positional encoding and output Linear, written the way its users write it (bool
  masks True = do NOT attend, ``F.cross_entropy(label_smoothing=0.1, ignore_index=pad)``, greedy
  evaluation re-running the decoder on the growing prefix over all 1000 sequences).

Both see identical data (the same batches from the same ``random.Random(seed)``, the same eval
set), the same optimizer, schedule, stopping rule, thread count and init seed. The order of the
two alternates seed by seed so drift on a busy machine hits both alike; the ratio is of medians.
Seconds are wall-clock from the first step to the stop, model construction excluded; the CPU
seconds of the same span and the part spent evaluating are reported beside them, because on a
shared machine the wall clock mostly measures the neighbours.

The models are not step-for-step identical, as each side is written the usual way: nn.Transformer
also drops out attention weights and ends each stack with a LayerNorm, its label smoothing spreads
epsilon over every class (ours, as in the Annotated Transformer, over the non-target, non-pad
ones), and the dropout masks come from different generators. Our evaluation stops a 250-sequence
chunk early once 0.99 is out of reach; the reference decodes all 1000 every time.

Extra rows, ours only (``--variants``, all of them by default; ``--variants`` alone for none): the
same run with the model's switches set to a modern variant (pre-norm, RMSNorm, SwiGLU, RoPE, and
all four at once), so their speed is on record beside the paper's model. They run after each
seed's ours/torch pair and change nothing in it. The no-position variant is not among them: its
encoder cannot see order, so it never learns to copy.

    python bench/train_speed.py [--seeds 0 1 2 3 4 | --quick] [--threads 1] [--device cpu] [--variants rope ...]

The last stdout line is JSON: ratio (ours / torch, median seconds), both medians, step medians,
cpu_ratio, per-step ratios, convergence, seeds, threads, device, every run, and ``variants``
(per variant: median seconds, steps, ms per step and convergence, and its ratio to torch).
"""
from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import time
import warnings
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from model import pick_device  # noqa: E402
from model.tasks import batch_from_pairs  # noqa: E402
from model.tokenizer import BOS_ID, EOS_ID, PAD_ID, CharTokenizer  # noqa: E402
from model.training import TrainingConfig, TrainingRun  # noqa: E402

TARGET_ACCURACY = 0.99
EVAL_SIZE = 1000
EVAL_CHUNK = 250  # sequences decoded at once, the engine's chunk size
EVAL_SEED_OFFSET = 1_000_003  # the engine samples its held-out set from random.Random(seed + this)
SMALL = dict(d_model=64, n_heads=4, n_layers=2, d_ff=256)
VARIANTS = {  # row name -> the model switches it sets (model.config.TransformerConfig); the rest stay the paper's
    "pre-norm": dict(norm_first=True),
    "rmsnorm": dict(norm_kind="rms"),
    "swiglu": dict(ffn_kind="swiglu"),
    "rope": dict(position_kind="rope"),
    "modern": dict(norm_first=True, norm_kind="rms", ffn_kind="swiglu", position_kind="rope"),
}
# nn.TransformerEncoder's eval fast path packs the batch into a nested tensor and says so once.
warnings.filterwarnings("ignore", message="The PyTorch API of nested tensors")


@dataclass(frozen=True)
class RunResult:
    """One training run to the target (or to a cap)."""

    engine: str  # "ours", "torch", or "ours:<variant>"
    seed: int
    seconds: float
    cpu_seconds: float  # process CPU time over the same span: what a busy machine's waiting does not inflate
    eval_seconds: float  # of ``seconds``, the part spent in greedy evaluation
    steps: int
    converged: bool
    reason: str
    accuracy: float | None


def copy_config(seed: int, max_steps: int, max_seconds: float) -> TrainingConfig:
    return TrainingConfig(
        task="copy", task_min_len=10, task_max_len=10, task_alphabet="123456789", preset="small",
        dropout=0.1, batch_size=64, warmup=400, factor=1.0, label_smoothing=0.1, seed=seed,
        eval_every=50, eval_size=EVAL_SIZE, target_accuracy=TARGET_ACCURACY, max_steps=max_steps,
        max_seconds=max_seconds, probe_every=10**9,
    )


# -- ours ------------------------------------------------------------------------------------
def train_ours(cfg: TrainingConfig, device: torch.device, engine: str = "ours") -> RunResult:
    run = TrainingRun(cfg, device=device)
    sizes = {k: getattr(run.model_config, k) for k in SMALL}
    if sizes != SMALL:
        raise SystemExit(f"preset 'small' is {sizes}, not {SMALL}: the comparison would be unfair.")
    # The reference rebuilds the data from the seed; check it rebuilds the engine's exactly.
    if run._data_rng.getstate() != random.Random(cfg.seed).getstate() or run._eval_pairs != eval_pairs(cfg):
        raise SystemExit("the engine no longer samples its data the way this benchmark rebuilds it.")
    eval_seconds = [0.0]
    evaluate = run.evaluate

    def timed_evaluate(*args, **kwargs):
        start = time.perf_counter()
        try:
            return evaluate(*args, **kwargs)
        finally:
            eval_seconds[0] += time.perf_counter() - start

    run.evaluate = timed_evaluate
    t0, c0 = time.perf_counter(), time.process_time()
    snap = run.train_until_done()
    seconds, cpu_seconds = time.perf_counter() - t0, time.process_time() - c0
    if snap.state == "failed":
        raise SystemExit(f"our run failed: {snap.reason}")
    converged = snap.reason == "target accuracy reached"
    return RunResult(engine, cfg.seed, seconds, cpu_seconds, eval_seconds[0], snap.step, converged, snap.reason,
                     snap.accuracy)


def train_variant(cfg: TrainingConfig, device: torch.device, name: str) -> RunResult:
    """Our engine on the same run with the model switches of VARIANTS[name]."""
    return train_ours(replace(cfg, **VARIANTS[name]), device, engine=f"ours:{name}")


# -- the reference ---------------------------------------------------------------------------
def eval_pairs(cfg: TrainingConfig) -> list[tuple[str, str]]:
    return cfg.make_task().sample_pairs(random.Random(cfg.seed + EVAL_SEED_OFFSET), cfg.eval_size)


def sinusoidal_table(max_len: int, d_model: int) -> torch.Tensor:
    """(max_len, d_model): sin on even columns, cos on odd, as in the paper."""
    position = torch.arange(max_len, dtype=torch.float32)[:, None]  # (P, 1)
    div = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(position * div)
    table[:, 1::2] = torch.cos(position * div)
    return table


class ReferenceSeq2Seq(nn.Module):
    """nn.Transformer with its own embeddings, positional encoding and generator.

    Its bool masks mean True = do NOT attend (the opposite of ours), so they are built that way.
    """

    def __init__(self, vocab: int, d_model: int, n_heads: int, n_layers: int, d_ff: int, dropout: float,
                 max_len: int) -> None:
        super().__init__()
        self.d_model = d_model
        self.src_embed = nn.Embedding(vocab, d_model)
        self.tgt_embed = nn.Embedding(vocab, d_model)
        self.register_buffer("pe", sinusoidal_table(max_len, d_model), persistent=False)
        self.dropout = nn.Dropout(dropout)
        self.core = nn.Transformer(d_model, n_heads, n_layers, n_layers, d_ff, dropout=dropout, batch_first=True)
        self.generator = nn.Linear(d_model, vocab)
        for p in self.parameters():  # as the PyTorch translation tutorial does
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    def embed(self, table: nn.Embedding, ids: torch.Tensor) -> torch.Tensor:
        return self.dropout(table(ids) * math.sqrt(self.d_model) + self.pe[: ids.size(1)])  # (B, T, d)

    @staticmethod
    def causal_mask(T: int, device: torch.device) -> torch.Tensor:
        return torch.ones(T, T, dtype=torch.bool, device=device).triu(1)  # (T, T), True above the diagonal

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        """src (B, S), tgt (B, T) -> logits (B, T, V)."""
        out = self.core(self.embed(self.src_embed, src), self.embed(self.tgt_embed, tgt),
                        tgt_mask=self.causal_mask(tgt.size(1), tgt.device),
                        src_key_padding_mask=src == PAD_ID, tgt_key_padding_mask=tgt == PAD_ID,
                        memory_key_padding_mask=src == PAD_ID)
        return self.generator(out)

    def encode(self, src: torch.Tensor) -> torch.Tensor:
        return self.core.encoder(self.embed(self.src_embed, src), src_key_padding_mask=src == PAD_ID)  # (B, S, d)

    def decode(self, tgt: torch.Tensor, memory: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
        out = self.core.decoder(self.embed(self.tgt_embed, tgt), memory,
                                tgt_mask=self.causal_mask(tgt.size(1), tgt.device),
                                tgt_key_padding_mask=tgt == PAD_ID, memory_key_padding_mask=src == PAD_ID)
        return self.generator(out)  # (B, T, V)


@torch.inference_mode()
def reference_greedy(model: ReferenceSeq2Seq, src: torch.Tensor, max_new: int) -> torch.Tensor:
    """src (B, S) -> generated ids (B, <= max_new); finished rows emit <pad>."""
    memory = model.encode(src)
    ys = torch.full((src.size(0), 1), BOS_ID, dtype=torch.long, device=src.device)  # (B, t)
    done = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
    for _ in range(max_new):
        next_id = model.decode(ys, memory, src)[:, -1].argmax(-1).masked_fill(done, PAD_ID)  # (B,)
        ys = torch.cat([ys, next_id[:, None]], dim=1)
        done |= next_id == EOS_ID
        if bool(done.all()):
            break
    return ys[:, 1:]


def reference_accuracy(model, pairs, tokenizer: CharTokenizer, max_new: int, device: torch.device) -> float:
    model.eval()
    correct = 0
    for i in range(0, len(pairs), EVAL_CHUNK):
        part = pairs[i:i + EVAL_CHUNK]
        out = reference_greedy(model, batch_from_pairs(part, tokenizer).src.to(device), max_new)
        correct += sum(tokenizer.decode(row) == t for row, (_, t) in zip(out.tolist(), part))
    return correct / len(pairs)


def train_torch(cfg: TrainingConfig, device: torch.device) -> RunResult:
    task = cfg.make_task()
    tokenizer = CharTokenizer(task.alphabet)
    mcfg = cfg.model_config(tokenizer, task)
    V, d = tokenizer.vocab_size, mcfg.d_model
    torch.manual_seed(cfg.seed)
    model = ReferenceSeq2Seq(V, d, mcfg.n_heads, mcfg.n_layers, mcfg.d_ff, cfg.dropout, mcfg.max_len).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    noam = lambda i: cfg.factor * d ** -0.5 * min((i + 1) ** -0.5, (i + 1) * cfg.warmup ** -1.5)  # noqa: E731
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, noam)
    data_rng = random.Random(cfg.seed)
    held_out = eval_pairs(cfg)
    max_new = task.max_tgt_len + 1
    step, accuracy, losses, eval_seconds = 0, None, [], 0.0
    t0, c0 = time.perf_counter(), time.process_time()
    while True:
        batch = batch_from_pairs(task.sample_pairs(data_rng, cfg.batch_size), tokenizer)
        src, tgt_in, tgt_out = (x.to(device) for x in (batch.src, batch.tgt_in, batch.tgt_out))
        model.train()
        logits = model(src, tgt_in)  # (B, T, V)
        loss = F.cross_entropy(logits.reshape(-1, V), tgt_out.reshape(-1),
                               label_smoothing=cfg.label_smoothing, ignore_index=PAD_ID)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        step += 1
        reason = None
        if step % cfg.eval_every == 0:
            start = time.perf_counter()
            accuracy = reference_accuracy(model, held_out, tokenizer, max_new, device)
            eval_seconds += time.perf_counter() - start
            if accuracy >= cfg.target_accuracy:
                reason = "target accuracy reached"
        if reason is None and step >= cfg.max_steps:
            reason = "step cap reached"
        if reason is None and time.perf_counter() - t0 >= cfg.max_seconds:
            reason = "time cap reached"
        if reason:
            seconds, cpu_seconds = time.perf_counter() - t0, time.process_time() - c0
            return RunResult("torch", cfg.seed, seconds, cpu_seconds, eval_seconds, step,
                             reason == "target accuracy reached", reason, accuracy)


# -- driver ----------------------------------------------------------------------------------
def spread(values: list[float]) -> tuple[float, float, float]:
    return min(values), statistics.median(values), max(values)


def print_run(result: RunResult) -> None:
    flag = "" if result.converged else "   NOT CONVERGED"
    print(f"seed {result.seed} {result.engine:5s}: {result.seconds:8.2f} s (evaluation {result.eval_seconds:6.2f} s, "
          f"CPU {result.cpu_seconds:7.2f} s) "
          f"{result.steps:5d} steps ({result.seconds / result.steps * 1e3:.2f} ms/step)  "
          f"accuracy {result.accuracy}  {result.reason}{flag}", file=sys.stderr, flush=True)


def variant_summary(runs: list[RunResult], torch_median_s: float, torch_median_cpu_s: float) -> dict:
    """Per variant row: median seconds, CPU seconds, steps and ms per step, convergence, ratios to torch's medians."""
    rows = {}
    for name in dict.fromkeys(r.engine.removeprefix("ours:") for r in runs if r.engine.startswith("ours:")):
        mine = [r for r in runs if r.engine == f"ours:{name}"]
        seconds, cpu_seconds = statistics.median(r.seconds for r in mine), statistics.median(r.cpu_seconds for r in mine)
        rows[name] = {"median_s": round(seconds, 3), "median_steps": statistics.median(r.steps for r in mine),
                      "median_ms_per_step": round(statistics.median(r.seconds / r.steps for r in mine) * 1e3, 3),
                      "converged": f"{sum(r.converged for r in mine)}/{len(mine)}",
                      "ratio_to_torch": round(seconds / torch_median_s, 4), "median_cpu_s": round(cpu_seconds, 3),
                      "cpu_ratio_to_torch": round(cpu_seconds / torch_median_cpu_s, 4)}
        print(f"{name:9s}: median {seconds:.2f} s (CPU {cpu_seconds:.2f} s), {rows[name]['median_steps']:g} steps, "
              f"{rows[name]['median_ms_per_step']:.2f} ms/step, converged {rows[name]['converged']}, "
              f"ratio to torch {rows[name]['ratio_to_torch']:.3f} (CPU seconds {rows[name]['cpu_ratio_to_torch']:.3f})",
              file=sys.stderr)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--quick", action="store_true", help="seed 0 only (a smoke run)")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads, the same for both")
    parser.add_argument("--max-steps", type=int, default=5000, help="step cap per run")
    parser.add_argument("--max-seconds", type=float, default=600.0, help="time cap per run")
    parser.add_argument("--device", default=None)
    parser.add_argument("--variants", nargs="*", choices=list(VARIANTS), default=list(VARIANTS),
                        help="extra rows, ours only, with the model's switches set to these variants")
    args = parser.parse_args()
    seeds = [0] if args.quick else args.seeds
    device = pick_device(args.device)
    torch.set_num_threads(args.threads)
    runs: list[RunResult] = []
    for i, seed in enumerate(seeds):
        cfg = copy_config(seed, args.max_steps, args.max_seconds)
        order = (train_ours, train_torch) if i % 2 == 0 else (train_torch, train_ours)
        for train in order:
            result = train(cfg, device)
            runs.append(result)
            print_run(result)
        for name in args.variants:
            result = train_variant(cfg, device, name)
            runs.append(result)
            print_run(result)
    summary: dict = {"device": str(device), "threads": torch.get_num_threads(), "seeds": seeds,
                     "max_steps": args.max_steps, "max_seconds": args.max_seconds}
    for engine in ("ours", "torch"):
        mine = [r for r in runs if r.engine == engine]
        s, n = spread([r.seconds for r in mine]), spread([r.steps for r in mine])
        per_step = statistics.median(r.seconds / r.steps for r in mine)
        train_per_step = statistics.median((r.seconds - r.eval_seconds) / r.steps for r in mine)
        eval_s = statistics.median(r.eval_seconds for r in mine)
        cpu_s = statistics.median(r.cpu_seconds for r in mine)
        converged = sum(r.converged for r in mine)
        print(f"{engine:5s}: seconds min/median/max {s[0]:.2f} / {s[1]:.2f} / {s[2]:.2f}   "
              f"steps min/median/max {n[0]} / {n[1]:g} / {n[2]}   median {per_step * 1e3:.2f} ms/step "
              f"({train_per_step * 1e3:.2f} without evaluation), evaluation {eval_s:.2f} s, CPU {cpu_s:.2f} s   "
              f"converged {converged}/{len(mine)}", file=sys.stderr)
        summary.update({f"{engine}_median_s": round(s[1], 3), f"{engine}_min_s": round(s[0], 3),
                        f"{engine}_max_s": round(s[2], 3), f"{engine}_median_steps": n[1],
                        f"{engine}_min_steps": n[0], f"{engine}_max_steps": n[2],
                        f"{engine}_median_ms_per_step": round(per_step * 1e3, 3),
                        f"{engine}_median_train_ms_per_step": round(train_per_step * 1e3, 3),
                        f"{engine}_median_eval_s": round(eval_s, 3), f"{engine}_median_cpu_s": round(cpu_s, 3),
                        f"{engine}_converged": f"{converged}/{len(mine)}"})
    summary["ratio"] = round(summary["ours_median_s"] / summary["torch_median_s"], 4)
    summary["per_step_ratio"] = round(summary["ours_median_ms_per_step"] / summary["torch_median_ms_per_step"], 4)
    summary["train_step_ratio"] = round(summary["ours_median_train_ms_per_step"]
                                        / summary["torch_median_train_ms_per_step"], 4)
    summary["cpu_ratio"] = round(summary["ours_median_cpu_s"] / summary["torch_median_cpu_s"], 4)
    summary["variants"] = variant_summary(runs, summary["torch_median_s"], summary["torch_median_cpu_s"])
    summary["all_converged"] = all(r.converged for r in runs if r.engine in ("ours", "torch"))
    summary["runs"] = [{k: (round(v, 3) if isinstance(v, float) else v) for k, v in asdict(r).items()} for r in runs]
    print(f"ratio of medians (ours / torch, seconds): {summary['ratio']:.3f}   per step: "
          f"{summary['per_step_ratio']:.3f} (training only: {summary['train_step_ratio']:.3f})   "
          f"CPU seconds: {summary['cpu_ratio']:.3f}   "
          f"threads {summary['threads']}   device {device}"
          + ("" if summary["all_converged"] else "   (some runs did NOT converge)"), file=sys.stderr)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()

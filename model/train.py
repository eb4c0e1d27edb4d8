"""Command line: train a model on a toy task and (optionally) save a checkpoint.

    python -m model.train --task copy --seed 0 --target-accuracy 0.99 --eval-size 1000 \
        --max-seconds 300 [--out assets/checkpoints/copy.pt]

Progress goes to stderr; the LAST stdout line is one JSON object with at least
task, seed, steps, seconds, accuracy, steps_per_s.

The defaults here are the command line's own, the recipe of the shipped models (the small preset,
batch 64, warmup 400, 1,000 held-out examples, a step cap it never reaches before the time cap):
``TrainingConfig``'s defaults are the Training page's (a tiny model that trains live in a minute),
so every value is passed explicitly below.
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from typing import Callable

import torch

from model.tasks import TASKS, TRANSLATION_TASKS
from model.training import ALL_PRESETS, TrainingConfig, TrainingRun


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m model.train", description=__doc__.splitlines()[0])
    p.add_argument("--task", default="copy", choices=sorted(TASKS))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--preset", default="small", choices=sorted(ALL_PRESETS))
    p.add_argument("--min-len", type=int, default=None, help="shortest source (copy/reverse/sort)")
    p.add_argument("--max-len", type=int, default=None, help="longest source (copy/reverse/sort)")
    p.add_argument("--alphabet", default=None, help="source alphabet (copy/reverse/sort)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--warmup", type=int, default=400)
    p.add_argument("--factor", type=float, default=1.0)
    p.add_argument("--label-smoothing", type=float, default=0.1)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--max-steps", type=int, default=100_000)
    p.add_argument("--max-seconds", type=float, default=300.0)
    p.add_argument("--eval-every", type=int, default=50)
    p.add_argument("--eval-size", type=int, default=1000)
    p.add_argument("--target-accuracy", type=float, default=None)
    p.add_argument("--no-look-ahead-mask", action="store_true", help="train without the look-ahead mask")
    p.add_argument("--no-padding-mask", action="store_true", help="train without the padding mask")
    p.add_argument("--device", default=None, help="cuda, mps or cpu (default: best available)")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads (1 is fastest for these tiny models on a shared CPU)")
    p.add_argument("--out", default=None, help="write a checkpoint here (also on Ctrl-C / SIGTERM)")
    p.add_argument("--init-from", default=None,
                   help="start from this checkpoint's weights (same task and size) instead of a random init; "
                        "the optimizer and schedule start afresh, e.g. a second, low-lr stage")
    return p.parse_args(argv)


def held_out_bleu(run: TrainingRun) -> float:
    """BLEU of the run's greedy answers on its held-out pairs (sacrebleu, "zh" tokenisation for Chinese output)."""
    from model.bleu import TOKENIZE_FOR, corpus_bleu

    pairs = run._eval_pairs
    hypotheses = run.predict([source for source, _ in pairs])
    language = run.config.task.split("-")[1]
    return corpus_bleu(hypotheses, [target for _, target in pairs], tokenize=TOKENIZE_FOR[language])


def progress_printer(every_s: float = 5.0) -> Callable[[TrainingRun], None]:
    """An "on_step_end" callback that prints the step, loss, rate and accuracy to stderr every ``every_s`` seconds."""
    last = [time.monotonic()]

    def progress(run: TrainingRun) -> None:
        if time.monotonic() - last[0] < every_s:
            return
        last[0] = time.monotonic()
        now = run.metrics_since(max(run.status().step - 1, 0), evals=0, probes=10**9)
        acc = f"{now.evals[-1][1]:.3f}" if now.evals else "-"
        print(f"step {now.step:6d}  loss {now.loss:.4f}  lr {now.lrs[-1]:.2e}  acc {acc}  "
              f"{now.elapsed_s:6.1f}s", file=sys.stderr)

    return progress


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        config = TrainingConfig(
            task=args.task, task_min_len=args.min_len, task_max_len=args.max_len, task_alphabet=args.alphabet,
            preset=args.preset, dropout=args.dropout, batch_size=args.batch_size, warmup=args.warmup,
            factor=args.factor, label_smoothing=args.label_smoothing, seed=args.seed, max_steps=args.max_steps,
            max_seconds=args.max_seconds, eval_every=args.eval_every, eval_size=args.eval_size,
            target_accuracy=args.target_accuracy, use_padding_mask=not args.no_padding_mask,
            use_look_ahead_mask=not args.no_look_ahead_mask, probe_every=10**9,
        )
        run = TrainingRun(config, device=args.device)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.init_from:
        from model.checkpoint import CheckpointError, load_checkpoint

        try:
            start = load_checkpoint(args.init_from, map_location=run.device)
        except CheckpointError as exc:
            print(f"error: {args.init_from}: {exc}", file=sys.stderr)
            return 2
        if (start.config != run.model_config or start.tokenizer != run.tokenizer
                or start.target_tokenizer != run.target_tokenizer):
            print(f"error: {args.init_from} is a different task or model size than this run.", file=sys.stderr)
            return 2
        run.model.load_state_dict(start.model.state_dict())
    print(f"training {args.task} on {run.device} ({run.num_params:,} parameters)", file=sys.stderr)
    # Ctrl-C or SIGTERM ends the run like a cap does: what was learnt so far is still saved.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: run.stop(timeout=0))
    run.add_callback("on_step_end", progress_printer())
    snap = run.train_until_done()
    if snap.state == "failed":
        print(f"error: training failed: {snap.reason}", file=sys.stderr)
    accuracy = snap.accuracy
    if args.out and snap.state != "failed":
        from model.checkpoint import save_checkpoint

        save_checkpoint(args.out, run.model, run.tokenizer, config.task_dict(), run.history(),
                        target_tokenizer=run.target_tokenizer)
        print(f"saved {args.out}", file=sys.stderr)
    result = {
        "task": args.task, "seed": args.seed, "steps": snap.step, "seconds": round(snap.elapsed_s, 3),
        "accuracy": accuracy, "steps_per_s": round(snap.step / max(snap.elapsed_s, 1e-9), 3),
        "state": snap.state, "reason": snap.reason, "device": snap.device, "out": args.out,
    }
    if args.task in TRANSLATION_TASKS and snap.state != "failed":
        result["bleu"] = round(held_out_bleu(run), 2)
    print(json.dumps(result))
    return 0 if snap.state == "finished" else 1


if __name__ == "__main__":
    raise SystemExit(main())

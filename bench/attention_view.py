"""Server time of one Attention-page view: the explain/ calls the page makes for a sentence it has not
seen yet (nothing cached), as a ratio to one plain forward of the same model in the same run.

Three views, as app_pages/attention.py calls them (the default controls: scaled scores, one head off):

- ``overview``: the base view (the model's answer and every map), the task's expected output and
  the most focused head;
- ``inside``: the overview, then one head's Q/K/V and scores, the other scaling's maps for the
  comparison, and W^O's mixing of the heads (as the page calls them at this commit);
- ``ablation``: the overview, then the answer's probability with the head off and the answer the
  model writes with it off.

The reference is one ``model(src, tgt, need_weights=False)`` on the sentence and its answer (the
fast path, no maps): ``ratio`` = median view time / median reference time. Calls are interleaved
in blocks so drift on a shared machine hits both alike. One thread (the machine is shared).
The last stdout line is JSON.

    python bench/attention_view.py [--calls 30] [--models en-zh copy]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from explain import attention as xa  # noqa: E402
from explain.head_output import head_outputs  # noqa: E402
from explain.tasks import expected_output, task_of  # noqa: E402
from explain.tokens import target_tokenizer  # noqa: E402
from model.checkpoint import load_checkpoint, pretrained_path  # noqa: E402
from model.tokenizer import BOS_ID  # noqa: E402


def overview(ckpt, source: str) -> xa.AttentionView:
    base = xa.attention_view(ckpt, source)
    expected_output(ckpt, source)
    xa.most_focused_head(xa.attention_maps(base, "encoder"))
    return base


def inside(ckpt, source: str, kind: str = "cross", layer: int = 1) -> None:
    base = overview(ckpt, source)
    view = xa.attention_view(ckpt, source, base.answer, scale_scores=True, need_details=True)
    xa.attention_view(ckpt, source, base.answer, scale_scores=False)
    head_outputs(view, kind, layer)


def ablation(ckpt, source: str, off: str = "cross-1-1") -> None:
    base = overview(ckpt, source)
    ids = xa.answer_ids(target_tokenizer(ckpt), base.answer)
    xa.sequence_probability(base, ids)
    triples = xa.ablation_triples([off])
    same = xa.attention_view(ckpt, source, base.answer, ablate_heads=triples)
    own = xa.attention_view(ckpt, source, ablate_heads=triples)
    xa.sequence_probability(same, ids)
    xa.sequence_probability(own, xa.answer_ids(target_tokenizer(ckpt), own.answer))


VIEWS = {"overview": overview, "inside": inside, "ablation": ablation}


def reference(ckpt, source: str):
    """One plain forward of ``source`` and its answer: the same work a training step's forward does."""
    model = ckpt.model
    answer = xa.greedy_answer(ckpt, source)
    src = torch.tensor([ckpt.tokenizer.encode(source)], device=model.device)
    tgt = torch.tensor([[BOS_ID] + target_tokenizer(ckpt).encode(answer)], device=model.device)

    @torch.inference_mode()
    def forward():
        model(src, tgt, need_weights=False)
    return forward


def median_ms(fn, calls: int) -> list[float]:
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--models", nargs="+", default=["en-zh", "copy"])
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = []
    for name in args.models:
        ckpt = load_checkpoint(pretrained_path(name), map_location="cpu")
        source = task_of(ckpt).example
        ref = reference(ckpt, source)
        blocks = 5
        timings = {"reference": [], **{view: [] for view in VIEWS}}
        for fn in [ref, *(lambda f=f: f(ckpt, source) for f in VIEWS.values())]:
            fn()  # warm-up
        for _ in range(blocks):
            timings["reference"] += median_ms(ref, max(1, args.calls // blocks))
            for view, fn in VIEWS.items():
                timings[view] += median_ms(lambda: fn(ckpt, source), max(1, args.calls // blocks))
        ref_ms = statistics.median(timings["reference"]) * 1e3
        for view in VIEWS:
            ms = statistics.median(timings[view]) * 1e3
            rows.append({"model": name, "view": view, "median_ms": round(ms, 2), "reference_ms": round(ref_ms, 3),
                         "ratio": round(ms / ref_ms, 1)})
            print(f"{name:6s} {view:9s} {ms:8.2f} ms  = {ms / ref_ms:6.1f} x one plain forward ({ref_ms:.3f} ms)")
    print(json.dumps({"calls": args.calls, "rows": rows}))


if __name__ == "__main__":
    main()

"""A class that opens BLEU at N = 200 all at once, and what everyone else feels meanwhile (#33 item 3).

Against one ``streamlit run app.py`` server (started here, or ``--url``), with the websocket visitors of
:mod:`bench.load`:

1. **quiet**: ``--others`` visitors click through Tokens, Masks, Attention and Feed-forward (each page's view
   widget, ``--think`` seconds apart) for ``--quiet`` seconds: the reference, measured in this run;
2. **storm**: the same visitors go on while ``--bleu`` more sessions open ``/bleu?bleu_n=200&bleu_seed=<fresh>``
   at the same moment (every seed new, so nothing is cached), until the last BLEU page has finished.

Reported (the last stdout line is one JSON object): the BLEU pages' p50/p95/max, the others' p50/p95 in both
phases and **the storm/quiet ratio of the others' p95** (what a class feels while BLEU decodes), how many BLEU
visitors were told their place in the line, errors, and the server's RSS.

    nice -n 10 python bench/bleu_storm.py [--bleu 10] [--others 5] [--quiet 30]
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import load  # noqa: E402
from ui.i18n import translate  # noqa: E402

OTHER_PAGES = ("tokens", "masks", "attention", "feed-forward")
QUEUED_EN = translate("bleu.queued", "en", ahead=0).split(":")[0]  # "Waiting for other visitors' decodes"


def other_visitor(url: str, index: int, stop: threading.Event, phase: list[str], records: dict[str, list[float]],
                  errors: list[str], think: tuple[float, float], request_timeout: float) -> None:
    rng = random.Random(index)
    session = load.Session(url, f"other-{index}", stop=stop, rng=rng, request_timeout=request_timeout).connect()
    try:
        session.open("")
        while not stop.is_set():
            for path in OTHER_PAGES:
                if stop.is_set():
                    break
                for kind, act in (("nav", lambda: session.navigate(path)),
                                  ("widget", lambda: session.change(load.PAGE_WIDGETS[path]))):
                    ms = act()
                    records.setdefault(phase[0], []).append(ms)
                    stop.wait(rng.uniform(*think))
                    if stop.is_set():
                        break
    except load.SessionError as exc:
        if not stop.is_set():
            errors.append(f"other-{index}: {exc}")
    finally:
        errors.extend(session.errors)
        session.close()


def bleu_visitor(url: str, seed: int, start: threading.Event, pages_ms: list[float], told: list[int],
                 errors: list[str], request_timeout: float) -> None:
    session = load.Session(url, f"bleu-{seed}", request_timeout=request_timeout).connect()
    try:
        start.wait()
        pages_ms.append(session.open("bleu", f"bleu_n=200&bleu_seed={seed}"))
        if any(QUEUED_EN in alert for alert in session.alerts):
            told.append(seed)
    except load.SessionError as exc:
        errors.append(f"bleu-{seed}: {exc}")
    finally:
        errors.extend(session.errors)
        session.close()


def stats(values: list[float]) -> dict:
    return {"n": len(values), "p50_ms": load._ms(load.percentile(values, 50)),
            "p95_ms": load._ms(load.percentile(values, 95)), "max_ms": load._ms(max(values) if values else None)}


def run(url: str | None, pid: int | None, *, bleu: int, others: int, quiet: float, think: tuple[float, float],
        request_timeout: float, first_seed: int) -> dict:
    own = None
    if url is None:
        own = load.start_server()
        url, pid = own[1], own[0].pid
    try:
        load.warm_up(url, request_timeout)
        time.sleep(5)  # the server's own warm-up
        rss_before = load.rss_bytes(pid) if pid else None
        stop, phase, records, errors = threading.Event(), ["quiet"], {}, []
        threads = [threading.Thread(target=other_visitor, args=(url, i, stop, phase, records, errors, think,
                                                                request_timeout), daemon=True)
                   for i in range(others)]
        for th in threads:
            th.start()
        time.sleep(quiet)
        phase[0] = "storm"
        start, pages_ms, told = threading.Event(), [], []
        storm = [threading.Thread(target=bleu_visitor, args=(url, first_seed + i, start, pages_ms, told, errors,
                                                             request_timeout), daemon=True) for i in range(bleu)]
        for th in storm:
            th.start()
        time.sleep(1)  # every BLEU session connected
        t0 = time.monotonic()
        start.set()
        for th in storm:
            th.join(request_timeout + 30)
        storm_s = time.monotonic() - t0
        stop.set()
        for th in threads:
            th.join(request_timeout + 30)
        quiet_stats, storm_stats = stats(records.get("quiet", [])), stats(records.get("storm", []))
        ratio = (storm_stats["p95_ms"] / quiet_stats["p95_ms"]
                 if storm_stats["p95_ms"] and quiet_stats["p95_ms"] else None)
        return {
            "bleu_sessions": bleu, "others": others, "bleu": stats(pages_ms), "storm_s": round(storm_s, 1),
            "told_their_place": len(told), "others_quiet": quiet_stats, "others_storm": storm_stats,
            "others_p95_ratio_storm_over_quiet": round(ratio, 2) if ratio else None, "errors": errors[:20],
            "rss_before_mb": load._mb(rss_before), "rss_after_mb": load._mb(load.rss_bytes(pid) if pid else None),
        }
    finally:
        if own is not None:
            load.stop_server(own[0])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="a running server (loopback); default: start one")
    parser.add_argument("--pid", type=int, help="the running server's process id (for RSS)")
    parser.add_argument("--bleu", type=int, default=10, help="sessions opening BLEU at N = 200 at once")
    parser.add_argument("--others", type=int, default=5, help="sessions clicking other pages throughout")
    parser.add_argument("--quiet", type=float, default=30.0, help="seconds of the reference phase")
    parser.add_argument("--think", type=float, nargs=2, default=(0.5, 1.5), help="seconds between two clicks")
    parser.add_argument("--request-timeout", type=float, default=240.0)
    parser.add_argument("--first-seed", type=int, default=int(time.time()) % 9000,
                        help="the first BLEU seed (fresh ones: nothing cached)")
    args = parser.parse_args(argv)
    report = run(args.url, args.pid, bleu=args.bleu, others=args.others, quiet=args.quiet, think=tuple(args.think),
                 request_timeout=args.request_timeout, first_seed=args.first_seed)
    print(json.dumps(report))
    return 0 if not report["errors"] else 1


if __name__ == "__main__":
    raise SystemExit(main())

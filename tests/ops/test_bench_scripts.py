"""Every benchmark in ``bench/`` still runs: each script, as its README line runs it, at a tiny size.

Nothing here is timed (``bench/RESULTS.md`` holds the measurements): a script must exit 0 and end
its output with its one-line JSON summary. A new script in ``bench/`` fails the first test until it
has its quick arguments in :data:`QUICK`, so none can rot unnoticed.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
LIBRARIES = {"__init__.py", "server.py"}  # imported by the scripts, not run
QUICK: dict[str, list[str]] = {  # script -> the arguments of a smoke run (seconds, not minutes)
    "attention_view.py": ["--calls", "2", "--models", "copy"],
    "bleu_storm.py": ["--bleu", "10", "--others", "1", "--quiet", "2", "--think", "0.2", "0.4"],
    "decode_cache.py": ["--quick"],
    "felt_latency.py": ["--only", "home:language", "--flips", "1"],
    "forward.py": ["--calls", "20"],  # 20 blocks of calls // 20
    "learners.py": ["--learners", "1", "--browsers", "1", "--checks", "1", "--think", "0.1", "0.2",
                    "--browse-think", "0.1", "0.2", "--ramp", "0.5", "--timeout", "300"],
    "load.py": ["--sessions", "2", "--rounds", "1", "--think", "0.1", "0.3", "--ramp", "0.5", "--trainers", "1",
                "--train-steps", "5", "--timeout", "300"],
    "replicas.py": ["--sessions", "4", "--uploaders", "1", "--trainers", "1", "--train-steps", "5", "--think",
                    "0.1", "0.3", "--ramp", "1"],
    "train_speed.py": ["--quick", "--max-steps", "50", "--variants"],
    # The first UI run waits WARMUP_SETTLE_S (10 s, two websocket pings) on the open page before its
    # Start click: a client that stops reading the socket while it waits is dropped there.
    "train_ui_overhead.py": ["--steps", "20", "--repeats", "1"],
}
TIMEOUT_S = 420
OWN_TESTS = {"train_ui_overhead.py", "bleu_storm.py"}  # run by a test of their own below
SCRIPTS = sorted(p.name for p in BENCH.glob("*.py") if p.name not in LIBRARIES)

pytestmark = pytest.mark.slow


def test_every_script_has_quick_arguments():
    missing = [name for name in SCRIPTS if name not in QUICK]
    assert not missing, f"add a smoke run of {missing} to QUICK in {Path(__file__).name}"


def run_script(name: str) -> dict:
    """Run ``bench/<name>`` with its quick arguments; its last stdout line, parsed as JSON."""
    out = subprocess.run([sys.executable, str(BENCH / name), *QUICK[name]], cwd=ROOT, capture_output=True,
                         text=True, timeout=TIMEOUT_S)
    # The summary says why a run failed (``ok``: its errors, unanswered presses, processes left): show it whole.
    assert out.returncode == 0, f"{name} exited {out.returncode}:\n{out.stderr[-4000:]}\n{out.stdout[-4000:]}"
    lines = out.stdout.strip().splitlines()
    assert lines, f"{name} printed nothing"
    summary = json.loads(lines[-1])
    assert isinstance(summary, dict) and summary, lines[-1]
    return summary


# Each script is a group of its own: pytest-xdist may run two of them at once (tests/conftest.py).
@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.xdist_group(f"bench-{name}"))
                                  for name in SCRIPTS if name in QUICK and name not in OWN_TESTS])
def test_the_script_runs_at_a_tiny_size(name):
    if name == "replicas.py":
        from bench import replicas
        if not replicas.HAPROXY.exists():
            pytest.skip(f"{replicas.HAPROXY} is missing: apt-get install haproxy (or run .ci/run)")
    run_script(name)


@pytest.mark.xdist_group("bench-train_ui_overhead.py")
def test_the_training_page_benchmark_survives_its_warm_up_wait():
    """Its first UI run sat 10 s on the page without reading the socket, and the server (pinging every
    5 s) dropped it at the Start click (issue #36); the summary has both runs' speeds."""
    summary = run_script("train_ui_overhead.py")
    assert summary["steps"] == 20
    assert summary["ui_steps_per_s"] > 0 and summary["headless_steps_per_s"] > 0
    assert summary["ratio"] > 0


@pytest.mark.xdist_group("bench-load.py")
def test_a_class_clicking_random_controls_runs_and_names_its_slowest_controls(monkeypatch):
    """``load.py --random-controls`` (#33 item 4): 1 to 3 random controls a page, typed sentences, random pages."""
    monkeypatch.setitem(QUICK, "load.py", ["--sessions", "2", "--duration", "20", "--think", "0.1", "0.3", "--ramp",
                                           "0.5", "--trainers", "0", "--random-controls", "--timeout", "300"])
    summary = run_script("load.py")
    assert summary["random_controls"] is True and summary["errors"] == 0, summary["error_samples"]
    assert summary["slowest_controls"] and all(row["n"] >= 1 for row in summary["slowest_controls"])
    assert sum(summary["by_kind"].get(kind, {"n": 0})["n"] for kind in ("widget", "click")) >= 4



@pytest.mark.xdist_group("bench-bleu_storm.py")
def test_ten_fresh_bleu_pages_at_once_all_finish_and_the_waiting_are_told_their_place():
    """#33 item 3: ten sessions open BLEU at N = 200 with fresh seeds at the same moment while another clicks
    through other pages; every page finishes (within the script's request timeout), nobody sees an error, and
    those behind the first are shown their place in the line. (How long they take: bench/RESULTS.md.)"""
    summary = run_script("bleu_storm.py")
    assert summary["errors"] == [] and summary["bleu"]["n"] == 10
    assert summary["told_their_place"] >= 3, summary
    assert summary["others_storm"]["n"] >= 1  # the other visitor went on clicking during the storm

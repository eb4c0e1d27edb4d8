"""``streamlit run`` with every script run timed, for the benchmarks.

``python bench/timed_server.py LOG -- <streamlit run arguments>`` starts the ordinary Streamlit
server in this process after wrapping ``ScriptRunner._run_script``, the method that executes one
run of the app (a full rerun or a fragment rerun), and appends one line per run to ``LOG``:
``<seconds> <full|fragment> <cpu seconds>``, the last being the CPU time the whole server process
used during the run (its script thread, and the event loop sending the run's messages beside it).
Nothing else changes, so the figures are what a visitor's rerun costs the server (the websocket
traffic is flushed by the server's event loop beside it). On this shared 2-core machine the CPU
time turned out no steadier than the wall clock (bench/RESULTS.md, session 6).
"""
from __future__ import annotations

import sys
import threading
import time


def install(log_path: str) -> None:
    from streamlit.runtime.scriptrunner import script_runner

    original = script_runner.ScriptRunner._run_script
    lock = threading.Lock()

    def timed(self, rerun_data, *args, **kwargs):
        kind = "fragment" if getattr(rerun_data, "fragment_id_queue", None) else "full"
        cpu_start, start = time.process_time(), time.perf_counter()
        try:
            return original(self, rerun_data, *args, **kwargs)
        finally:
            elapsed = time.perf_counter() - start
            cpu = time.process_time() - cpu_start
            with lock, open(log_path, "a", encoding="utf-8") as log:
                log.write(f"{elapsed:.6f} {kind} {cpu:.6f}\n")

    script_runner.ScriptRunner._run_script = timed


def main(argv: list[str]) -> None:
    if len(argv) < 2 or argv[1] != "--":
        raise SystemExit(__doc__)
    install(argv[0])
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", *argv[2:]]
    cli.main()


if __name__ == "__main__":
    main(sys.argv[1:])

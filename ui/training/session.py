"""Who owns a training run: one per browser session, stopped when that session goes away.

A run trains in a background thread (``model.training.TrainingRun``). A thread kept only in
``st.session_state`` would outlive a closed tab, so the run lives in a :class:`TrainingSession`
returned by a session-scoped ``st.cache_resource``: Streamlit drops that cache when the browser
session disconnects and calls :func:`_release`, which stops the thread (at most one step later).
The server learns of a closed tab at once; of a connection that died silently only when its
websocket ping goes unanswered (``server.websocketPingInterval`` T, then T more for the pong:
T to 2T seconds, 5-10 s with this project's config).
The same object is also kept in ``st.session_state`` so that

* the sidebar of every page can read the run's progress without creating anything
  (:func:`peek_session`), and
* after a dropped connection the stopped run's curves, samples and checkpoint stay on the page.

Every run of the process shares one :class:`~model.run_slots.RunSlots` (:func:`shared_slots`):
at most ``TP_MAX_TRAINING_RUNS`` (default: the CPU cores) train at once, the rest queue in
arrival order. A paused run holds no slot: it gives its slot back (or leaves the queue) and
queues again on Resume. Each run has a step cap (a page setting) and a time cap
(``TP_TRAINING_MAX_SECONDS``, seconds of training: time spent paused or queued does not count).
The page's settings (:mod:`ui.training.settings`) are checked by the engine alone. Two sessions
never share a run; a run
never touches the shared pretrained models (a model "used on the other pages" is a copy loaded
from the run's checkpoint).
A run that failed (an exception in a step, a loss that became NaN) hands out no checkpoint: its
weights may be broken, so it can be neither used on the other pages nor downloaded
(:class:`FailedRunError`), as the command line saves no checkpoint of a failed run either.

Everything handed to a page is plain data (numbers, strings, lists, snapshots of plain data).
"""
from __future__ import annotations

import logging
import os
import random
import re
import threading
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

import streamlit as st

from model.checkpoint import MESSAGES as CHECKPOINT_MESSAGES
from model.checkpoint import Checkpoint, CheckpointError, load_checkpoint
from model.env import positive_int
from model.run_slots import RunSlots
from model.training import RunMetrics, RunSnapshot, RunStatus, TrainingConfig, TrainingRun

_log = logging.getLogger(__name__)

ENV_MAX_RUNS = "TP_MAX_TRAINING_RUNS"
ENV_MAX_SECONDS = "TP_TRAINING_MAX_SECONDS"
ENV_THREADS = "TP_TRAINING_THREADS"
ENV_DEBUG = "TP_TRAINING_DEBUG"
THREAD_NAME = "training-run"  # the name model.training gives every run's thread
DEFAULT_MAX_SECONDS = 300.0
SAMPLE_COUNT = 8
MAX_COMPARED = 8  # runs a session's compare list keeps (the oldest is dropped, with a note)
QUEUE_THREAD_NAME = "training-queue"  # the thread that starts an experiment's next run
QUEUE_POLL_S = 0.1
_STATE_KEY = "_training.session"


# ------------------------------------------------------------------ process-wide limits


def max_concurrent_runs(environ: Mapping[str, str] = os.environ) -> int:
    """How many runs may train at once in this process: ``TP_MAX_TRAINING_RUNS``, else the CPU cores."""
    return positive_int(environ, ENV_MAX_RUNS, os.cpu_count() or 1)


def max_run_seconds(environ: Mapping[str, str] = os.environ) -> float:
    """Each run's time cap in seconds of training: ``TP_TRAINING_MAX_SECONDS``, else 300."""
    return float(positive_int(environ, ENV_MAX_SECONDS, int(DEFAULT_MAX_SECONDS)))


def training_threads(environ: Mapping[str, str] = os.environ) -> int:
    """torch intra-op threads for CPU runs: ``TP_TRAINING_THREADS``, else 1.

    These models are tiny, so a second thread buys little and, on a busy machine, costs a lot: on
    a shared 2-core box the tiny preset made 5.6-7.0 steps/s with one thread and 0.9-1.4 with two.
    With one thread each, concurrent runs share the cores instead of fighting over them. The
    setting is process-wide (torch has one pool), so it also applies to the pages' inference; the
    warm-up (:mod:`ui.warmup`) sets it when the server starts, before any run.
    """
    return positive_int(environ, ENV_THREADS, 1)


@st.cache_resource(show_spinner=False)
def shared_slots() -> RunSlots:
    """The one queue of training slots of this server process."""
    return RunSlots(max_concurrent_runs())


_threads_lock = threading.Lock()
_threads_set = False


def configure_threads_once(device: str) -> None:
    """Set torch's thread count once per process, before the first CPU run (process-wide)."""
    global _threads_set
    if not device.startswith("cpu"):
        return
    with _threads_lock:
        if _threads_set:
            return
        import torch

        torch.set_num_threads(training_threads())
        _threads_set = True


def alive_training_threads() -> int:
    """Training threads alive in this process (a diagnostic for tests and benchmarks)."""
    return sum(1 for th in threading.enumerate() if th.name == THREAD_NAME and th.is_alive())


def debug_enabled(environ: Mapping[str, str] = os.environ) -> bool:
    return environ.get(ENV_DEBUG, "") not in ("", "0", "false")


# ------------------------------------------------------------------ one session's runs


class FailedRunError(RuntimeError):
    """The run failed, so its model is not handed out (not used on other pages, not downloaded)."""


@dataclass(frozen=True)
class Sample:
    """One fresh example and the model's greedy answer to it."""

    source: str
    target: str
    output: str

    @property
    def correct(self) -> bool:
        return self.output == self.target


@dataclass(frozen=True)
class ComparedRun:
    """One run of the session's compare list: its name, settings and curves, never its model."""

    number: int  # the run's number in this session (its name ends with it)
    name: str
    snapshot: RunSnapshot  # its final curves (the latest while it trains), without the attention snapshots
    shown: bool  # ticked: drawn in the overlay

    @property
    def config(self) -> dict:
        return self.snapshot.config


@dataclass
class _Listed:
    """A compare-list entry as the session keeps it (``final`` is set once the run is over)."""

    number: int
    name: str
    final: RunSnapshot | None = None
    shown: bool = True


def curves_only(snap: RunSnapshot) -> RunSnapshot:
    """``snap`` without its attention snapshots (its largest part): what the compare list keeps."""
    return replace(snap, probes=[])


class _Drawn:
    """The current run's history as this session has read it: each look asks the run only for what
    it recorded since the last one (``TrainingRun.metrics_since``: under the run's lock it copies only
    the new steps, so the training thread never waits for a copy of its whole history), and the run's
    fixed facts (probe tokens, parameter count, config) are read once.

    The snapshot it hands out has lists of its own (copied here, off the training thread, in
    microseconds even for a 20,000-step run): a snapshot stays what it was when taken.
    """

    def __init__(self, run: TrainingRun) -> None:
        self.run = run
        self.losses: list[float] = []
        self.lrs: list[float] = []
        self.tokens_per_s: list[float] = []
        self.evals: list[tuple[int, float]] = []
        self.held_out: list = []
        self.probes: list = []
        self.config = run.config.to_dict()
        self._lock = threading.Lock()

    def snapshot(self) -> RunSnapshot:
        """The run now: its status and everything recorded so far (the new part read from the run)."""
        with self._lock:
            new: RunMetrics = self.run.metrics_since(len(self.losses), len(self.evals), len(self.probes))
            self.losses += new.losses
            self.lrs += new.lrs
            self.tokens_per_s += new.tokens_per_s
            self.evals += new.evals
            self.held_out += new.held_out
            self.probes += new.probes
            run = self.run
            return RunSnapshot(
                state=new.state, reason=new.reason, step=new.step, max_steps=new.max_steps, loss=new.loss,
                queue_position=new.queue_position, queue_waiting=new.queue_waiting, elapsed_s=new.elapsed_s,
                losses=list(self.losses), lrs=list(self.lrs), tokens_per_s=list(self.tokens_per_s),
                evals=list(self.evals), probes=list(self.probes), probe_src_tokens=run.probe_src_tokens, probe_tgt_tokens=run.probe_tgt_tokens,
                device=str(run.device), num_params=run.num_params, config=self.config, held_out=list(self.held_out),
            )


@dataclass
class TrainingSession:
    """The runs of one browser session: the current one, the compare list of this session's runs
    (at most :data:`MAX_COMPARED`, curves and settings only) and an experiment's queued runs.

    A visitor trains one run at a time: an experiment of several runs (:meth:`start_queue`) starts
    its first run at once and each next one when the one before it ends, from a small thread of
    its own, so the queue goes on while the visitor is on another page.

    Thread-safe for the calls a page makes; :meth:`close` may come from any thread (Streamlit
    calls it when the session disconnects).
    """

    slots: RunSlots
    device: str | None = None
    run: TrainingRun | None = None
    released: bool = False  # the browser session went away and the run was stopped
    run_number: int = 0
    experiment: str | None = None  # the suggested experiment whose runs were queued last
    dropped: tuple[str, ...] = ()  # runs the full compare list dropped when the last run started
    _listed: list[_Listed] = field(default_factory=list)
    _queue: list[TrainingConfig] = field(default_factory=list)
    _queue_cancel: threading.Event | None = None
    _samples: dict[tuple[int, int, int], list[Sample]] = field(default_factory=dict)
    _drawn: _Drawn | None = None  # the current run's history as read so far
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _start_lock: threading.Lock = field(default_factory=threading.Lock)  # one start at a time

    # -- control -------------------------------------------------------------------------------
    def start(self, config: TrainingConfig) -> TrainingRun:
        """Stop any current run and any queued experiment, and start a new run (listed for comparison)."""
        with self._start_lock:
            self._cancel_queue()
            self.experiment = None
            return self._start(config)

    def start_queue(self, configs: Sequence[TrainingConfig], experiment: str) -> TrainingRun:
        """Start the first of ``configs`` now and each next one when the run before it ends."""
        if not configs:
            raise ValueError("An experiment needs at least one run.")
        with self._start_lock:
            self._cancel_queue()
            run = self._start(configs[0])
            self.experiment = experiment
            if len(configs) > 1 and not self.released:
                cancel = threading.Event()
                with self._lock:
                    self._queue, self._queue_cancel = list(configs[1:]), cancel
                threading.Thread(target=self._run_queue, args=(cancel,), name=QUEUE_THREAD_NAME,
                                 daemon=True).start()
        return run

    def _start(self, config: TrainingConfig) -> TrainingRun:
        with self._lock:
            old = self.run
            if old is not None:
                old.stop()
                self._freeze_current(old.snapshot())
            run = TrainingRun(config, device=self.device, slots=self.slots)
            configure_threads_once(str(run.device))
            self.run_number += 1
            self.run = run
            self.released = False
            self._samples.clear()
            self._listed.append(_Listed(self.run_number, default_model_name(config.to_dict(), self.run_number)))
            dropped = len(self._listed) - MAX_COMPARED
            self.dropped = tuple(entry.name for entry in self._listed[:max(dropped, 0)])
            del self._listed[:max(dropped, 0)]
        run.start()
        if not _browser_session_connected():
            # The tab closed between the click and this callback: Streamlit may already have
            # released this session's resources, so nobody would ever stop the run.
            self.close()
        return run

    def _run_queue(self, cancel: threading.Event) -> None:
        """The queue's thread: start the next queued run whenever the current one has ended."""
        while not cancel.is_set():
            run = self.run
            if run is not None and run.alive:
                cancel.wait(QUEUE_POLL_S)
                continue
            with self._start_lock:
                with self._lock:
                    if cancel.is_set() or not self._queue:
                        break
                    config = self._queue.pop(0)
                started = self._start(config)
            if cancel.is_set():  # the session closed while the run started: nobody else would stop it
                started.stop(timeout=0)
        with self._lock:
            if self._queue_cancel is cancel:
                self._queue, self._queue_cancel = [], None

    def _cancel_queue(self) -> None:
        with self._lock:
            cancel, self._queue_cancel = self._queue_cancel, None
            self._queue = []
        if cancel is not None:
            cancel.set()

    @property
    def queued_runs(self) -> int:
        """Runs of an experiment still waiting for the current run to end."""
        return len(self._queue)

    def pause(self) -> None:
        if self.run is not None:
            self.run.pause()

    def resume(self) -> None:
        if self.run is not None:
            self.run.resume()

    def stop(self) -> None:
        """Stop the run, and the rest of an experiment's queue with it."""
        self._cancel_queue()
        if self.run is not None:
            self.run.stop()

    def reset(self) -> None:
        """Stop the run and any queue, and forget the run and the compare list."""
        self._cancel_queue()
        with self._lock:
            if self.run is not None:
                self.run.stop()
            self.run = self._drawn = None
            self._listed.clear()
            self.experiment, self.dropped = None, ()
            self._samples.clear()

    def close(self) -> None:
        """Stop the run because the browser session ended (called by Streamlit, any thread).

        Does not wait for the thread: Streamlit calls this on its event loop when a tab closes,
        and the thread ends by itself after at most one step.
        """
        self._cancel_queue()
        run = self.run
        self.released = True
        if run is not None and run.alive:
            run.stop(timeout=0)
            _log.info("training run asked to stop: its browser session ended")

    # -- reading -------------------------------------------------------------------------------
    def snapshot(self) -> RunSnapshot | None:
        """The current run now (None before the first): the run is asked only for the metrics since
        the step this session last read (the curves read before are kept here), so the live panel's
        redraw once a second costs the training thread only the new steps."""
        run = self.run
        if run is None:
            return None
        drawn = self._drawn
        if drawn is None or drawn.run is not run:
            drawn = self._drawn = _Drawn(run)
        return drawn.snapshot()

    def status(self) -> RunStatus | None:
        """State, step, last loss and queue place of the current run, without its history (cheap)."""
        run = self.run
        return run.status() if run is not None else None

    @property
    def live(self) -> bool:
        """True while the run trains or waits, or an experiment has runs still to start."""
        run = self.run
        return (run is not None and run.alive) or bool(self._queue)

    # -- the compare list ----------------------------------------------------------------------
    def _freeze_current(self, snap: RunSnapshot) -> None:
        """Keep the current run's final curves in its list entry, or drop it if it never trained (lock held)."""
        for entry in self._listed:
            if entry.number == self.run_number and entry.final is None:
                if snap.step > 0:
                    entry.final = curves_only(snap)
                else:
                    self._listed.remove(entry)
                return

    def compared(self, current: RunSnapshot | None = None) -> list[ComparedRun]:
        """The compare list, oldest first: every run of this session that trained (at most
        :data:`MAX_COMPARED`); the current run with its latest curves (``current``, if the caller
        has just taken its snapshot)."""
        with self._lock:
            run, number = self.run, self.run_number
            if current is not None and not self._taken_of(run, current):
                # The page took ``current`` just before an experiment's queue started the next run:
                # it is the run before's, which its own entry froze when the next one started.
                current = None
            snap = current if current is not None else (run.snapshot() if run is not None else None)
            if snap is not None and snap.state in ("finished", "failed"):
                self._freeze_current(snap)
            listed = [(e.number, e.name, e.final, e.shown) for e in self._listed]
        compared = []
        for n, name, final, shown in listed:
            if final is None:
                if n != number or snap is None or snap.step == 0:
                    continue
                final = curves_only(snap)
            compared.append(ComparedRun(n, name, final, shown))
        return compared

    def _taken_of(self, run: TrainingRun | None, snap: RunSnapshot) -> bool:
        """True if ``snap`` came from :meth:`snapshot` while ``run`` was the current run: every
        snapshot of one run shares that run's one settings dict."""
        drawn = self._drawn
        return run is not None and drawn is not None and drawn.run is run and snap.config is drawn.config

    def show(self, number: int, shown: bool) -> None:
        """Tick (or untick) run ``number`` for the overlay."""
        with self._lock:
            for entry in self._listed:
                if entry.number == number:
                    entry.shown = bool(shown)

    def remove(self, number: int) -> bool:
        """Take run ``number`` off the compare list (not the run still training); True if it was removed."""
        with self._lock:
            if number == self.run_number and self.run is not None and self.run.alive:
                return False
            kept = [entry for entry in self._listed if entry.number != number]
            removed, self._listed = len(kept) < len(self._listed), kept
        return removed

    @property
    def previous(self) -> RunSnapshot | None:
        """The final curves of the newest listed run before the current one (None if there is none)."""
        with self._lock:
            earlier = [e.final for e in self._listed if e.number != self.run_number and e.final is not None]
        return earlier[-1] if earlier else None

    def samples(self, step: int, batch: int = 0, n: int = SAMPLE_COUNT) -> list[Sample]:
        """Greedy answers of the current model to ``n`` fresh examples (the latest answer is kept)."""
        run = self.run
        if run is None:
            return []
        key = (self.run_number, step, batch)
        if key not in self._samples:
            rng = random.Random(run.config.seed * 7919 + 2_000_003 + batch)
            pairs = run.task.sample_pairs(rng, n)
            outputs = run.predict([source for source, _ in pairs])
            self._samples = {key: [Sample(s, t, o) for (s, t), o in zip(pairs, outputs)]}
        return self._samples[key]

    def checkpoint_bytes(self) -> bytes:
        """The current model as checkpoint-file bytes (:class:`FailedRunError` if the run failed)."""
        run = self.run
        if run is None:
            raise RuntimeError("There is no run to save.")
        status = run.status()
        if status.state == "failed":
            raise FailedRunError(f"The run failed at step {status.step}: {status.reason}")
        return run.checkpoint_bytes()

    def checkpoint_copy(self) -> Checkpoint:
        """An independent eval-mode copy of the current model (for the other pages; not of a failed run)."""
        return load_checkpoint(self.checkpoint_bytes())


def _browser_session_connected() -> bool:
    """False when the browser session of this script run is gone (True outside a server)."""
    try:
        from streamlit.runtime import Runtime
        from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

        ctx = get_script_run_ctx(suppress_warning=True)
        if ctx is None or not Runtime.exists():
            return True  # AppTest, scripts, unit tests
        return Runtime.instance().is_active_session(ctx.session_id)
    except Exception:  # never let this check break a start
        return True


def _release(session: TrainingSession) -> None:
    session.close()


@st.cache_resource(scope="session", on_release=_release, show_spinner=False)
def _owned_session() -> TrainingSession:
    return TrainingSession(slots=shared_slots())


def session_training() -> TrainingSession:
    """This browser session's :class:`TrainingSession` (made on first use, stopped when the session ends).

    If Streamlit released an earlier one (the connection dropped and came back), the new one
    keeps the stopped run so its curves and checkpoint are still there.
    """
    owned = _owned_session()
    earlier = st.session_state.get(_STATE_KEY)
    if earlier is not None and earlier is not owned:
        if owned.run is None and earlier.run is not None:
            owned.run, owned.run_number, owned.released = earlier.run, earlier.run_number, earlier.released
            owned._listed, owned.experiment, owned.dropped = earlier._listed, earlier.experiment, earlier.dropped
    st.session_state[_STATE_KEY] = owned
    return owned


def peek_session() -> TrainingSession | None:
    """The session's :class:`TrainingSession` if the training page made one, without creating one."""
    try:
        return st.session_state.get(_STATE_KEY)
    except Exception:  # no script-run context
        return None


# ------------------------------------------------------------------ names and checkpoints

_NAME_UNSAFE = re.compile(r"[^\w\-. ]+", re.UNICODE)


def default_model_name(config: Mapping[str, Any], number: int) -> str:
    return f"{config.get('task', 'model')}-{config.get('preset', '')}-{number}".replace("--", "-")


def model_name_problem(name: str) -> tuple[str, dict[str, Any]] | None:
    """``(i18n key, args)`` when ``name`` cannot name a model of this session, else None."""
    from ui.models import shipped_models

    name = name.strip()
    if not name or len(name) > 40:
        return "training.use.bad_name", {}
    if name in shipped_models():
        return "training.use.shipped_name", {"name": name}
    return None


def name_from_upload(file_name: str) -> str:
    """A model name from an uploaded file's name: its stem, tidied, never a shipped model's name."""
    from ui.models import shipped_models

    stem = file_name.rsplit("/", 1)[-1]
    stem = stem[: -len(".pt")] if stem.lower().endswith(".pt") else stem
    name = _NAME_UNSAFE.sub("-", stem).strip(" -.")[:31] or "uploaded"
    return f"{name}-uploaded" if name in shipped_models() else name


def read_upload(data: bytes) -> Checkpoint:
    """Validate and load an uploaded checkpoint (``CheckpointError`` with ``.reason`` when it is bad).

    Everything is checked before the model is built: sizes against ``model.config.LIMITS``, the
    task and history against one schema, every weight's storage, range and shape.
    """
    return load_checkpoint(data)


def checkpoint_error_key(error: CheckpointError) -> str:
    """The i18n key of the one sentence that explains ``error`` to a student."""
    reason = error.reason if error.reason in CHECKPOINT_MESSAGES else "not_checkpoint"
    return f"training.upload.error.{reason}"


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def checkpoint_summary(ckpt: Checkpoint) -> dict[str, Any]:
    """Plain facts about a loaded checkpoint: task, size, parameters and how long it trained."""
    history = ckpt.history if isinstance(ckpt.history, dict) else {}
    evals = history.get("evals")
    last = evals[-1] if isinstance(evals, list) and evals else None
    accuracy = _number(last[1]) if isinstance(last, list) and len(last) == 2 else None
    steps = history.get("steps")
    task = ckpt.task.get("name", "?") if isinstance(ckpt.task, dict) else "?"
    return {
        "task": task if isinstance(task, str) else "?",
        "d_model": ckpt.config.d_model,
        "layers": ckpt.config.n_layers,
        "heads": ckpt.config.n_heads,
        "params": int(ckpt.model.num_params()),
        "steps": steps if isinstance(steps, int) and not isinstance(steps, bool) else None,
        "accuracy": accuracy,
    }

"""Training engine: a run that owns its model, optimizer and schedule, and trains in a thread.

It knows nothing about Streamlit or any other caller: there is one training loop,
``train_until_done()``, which reports through callbacks (``add_callback("on_step_end", fn)``, as
minGPT's trainer does). The command line (``python -m model.train``), the tests and the benchmarks
run it in their own thread; a UI runs it in a daemon thread (``start()``), pauses, resumes and
stops it, and polls ``status()``, ``metrics_since()`` or ``snapshot()`` for plain Python data.
"""
from __future__ import annotations

import functools
import io
import math
import random
import threading
import time
import weakref
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Callable

import numpy as np
import torch

from model.checkpoint import save_checkpoint
from model.config import MESSAGES as CONFIG_MESSAGES
from model.config import (InvalidConfig, Problem, TransformerConfig, dropout_problem, head_dim_problem, is_number,
                          is_whole, size_problem)
from model.config import FFN_KINDS, NORM_KINDS, POSITION_KINDS, VARIANT_KINDS, variant_problem
from model.device import pick_device
from model.layers import dropout_generator
from model.loss import label_smoothed_cross_entropy
from model.memory import trim
from model.run_slots import RunSlots
from model.schedule import noam_lr, noam_scheduler
from model.bleu import TOKENIZE_FOR, corpus_bleu
from model.tasks import TASK_NAMES, TRANSLATION_TASKS, Task, batch_from_pairs, bpe_task, make_task
from model.tokenizer import BOS_ID, EOS_ID, PAD_ID, Tokenizer
from model.transformer import ForwardOptions, Transformer

STATES = ("idle", "queued", "running", "paused", "finished", "failed")
EVENTS = ("on_step_end",)  # what a callback can be added for (TrainingRun.add_callback)
LIVE_STATES = ("queued", "running")  # the states that change without anyone clicking
ENDED_STATES = ("finished", "failed")  # a run in one of these never trains again
ADAM_BETAS, ADAM_EPS = (0.9, 0.98), 1e-9  # the paper's Adam (§5.3), for every run
MODEL_PRESETS = {
    "tiny": dict(d_model=32, n_heads=2, n_layers=1, d_ff=64),
    "small": dict(d_model=64, n_heads=4, n_layers=2, d_ff=256),
}
# Sizes for the command line only (the app's training page offers MODEL_PRESETS): "base-mt" trains the
# shipped en-zh / zh-en models, within model.config.LIMITS but too slow to train live on a shared server.
COMMAND_LINE_PRESETS = {
    "base-mt": dict(d_model=128, n_heads=4, n_layers=3, d_ff=512),
}
ALL_PRESETS = {**MODEL_PRESETS, **COMMAND_LINE_PRESETS}
PRESET_HEADS = "preset"  # the heads setting's "as the size preset has it"
HEAD_CHOICES = (PRESET_HEADS, "1", "2", "4", "8")  # each divides every preset's d_model
SPLIT_WIDTH = "split"  # the head-width setting's "d_k = d_model / heads" (the paper's)
HEAD_DIM_CHOICES = (SPLIT_WIDTH, "8", "16", "32", "64", "128", "256")  # or each head this wide, whatever the heads
TOKEN_CHOICES = ("words", "bpe")  # a translation task's own tokens, or BPE pieces (model.tasks.bpe_task)
MAX_BATCH_SIZE = 512
MAX_STEPS = 200_000

MESSAGES = {  # problem code -> English sentence; the model's own codes first (see model.config)
    **CONFIG_MESSAGES,
    "task": "Unknown task {task!r}; the valid task names are: {tasks}.",
    "task_options": "{detail}",
    "preset": "Unknown model size {preset!r}; choose one of {presets}.",
    "heads": "Unknown number of heads {heads!r}; choose one of {choices}.",
    "head_dim_choice": "Unknown head width {head_dim!r}; choose one of {choices}.",
    "batch_size": "The batch size must be between 1 and {limit}.",
    "warmup": "Warmup must be at least 1 step (the schedule divides by it).",
    "factor": "The learning-rate factor must be a positive number.",
    "label_smoothing": "Label smoothing ε must be at least 0 and below 1.",
    "max_steps": "The step cap must be between 1 and {limit}.",
    "max_seconds": "The time cap must be positive.",
    "evaluation": "Evaluation needs at least 1 example, every step or more.",
    "probe_every": "The attention probe interval must be at least 1 step.",
    "target_accuracy": "The target accuracy is a fraction in (0, 1].",
    "seed": "The seed must be a whole number, 0 or more.",
    "tokens": "Unknown tokens {tokens!r}; choose one of {choices}.",
    "tokens_task": "BPE pieces are for the translation tasks ({tasks}); the {task} task reads characters.",
}


PAGE_MAX_STEPS = 20_000  # the Training page's step box goes this far (the engine allows MAX_STEPS)


@dataclass(frozen=True)
class PageSetting:
    """How the Training page offers one :class:`TrainingConfig` field (the field's default is what the page opens with).

    ``url`` is its query-string name (links already shared carry it: never rename one), ``key`` its
    widget's session-state key, ``label`` and ``help`` the i18n keys of its label and help text;
    ``choices`` are a choice's options, ``lo``/``hi`` a number's range and ``step`` its grid (for a
    whole number, only the widget's +/- increment: a link may carry any whole number in range).
    The ranges are the page's; the engine's own limits are :meth:`TrainingConfig.problem`'s.
    """

    url: str
    key: str
    label: str
    help: str | None = None
    choices: tuple = ()
    lo: float | None = None
    hi: float | None = None
    step: float | None = None


def setting(default: Any, **page: Any) -> Any:
    """A :class:`TrainingConfig` field the Training page offers: its default and its :class:`PageSetting`."""
    return field(default=default, metadata={"page": PageSetting(**page)})


@dataclass(frozen=True)
class TrainingConfig:
    """Everything that defines a run; the same config and seed replay the same loss history.

    The constructor refuses a config that cannot train (:class:`~model.config.InvalidConfig`
    naming the :meth:`problem`): this is the one place where training settings are checked.

    The fields made with :func:`setting` are the Training page's settings, declared here once: their
    defaults are what the page opens with (a small model that trains live on a shared CPU in about a
    minute), and everything else the page needs (URL name, widget key, label, range) is their
    :class:`PageSetting` (:data:`PAGE_SETTINGS`). They come first, in the order the page's compare
    list names them. The command line (``python -m model.train``) has defaults of its own, the
    shipped models' recipe (the small preset, batch 64, warmup 400, no step cap to speak of).
    """

    task: str = setting("copy", url="training_task", key="training.task", label="training.settings.task",
                        help="training.settings.task_help", choices=TASK_NAMES)
    # A translation task's tokens: its own (English words, Chinese characters) or BPE pieces learnt from its pairs.
    tokens: str = setting("words", url="training_tokens", key="training.tokens", label="training.settings.tokens",
                          help="training.settings.tokens_help", choices=TOKEN_CHOICES)
    preset: str = setting("tiny", url="training_size", key="training.preset", label="training.settings.preset",
                          help="training.settings.preset_help", choices=tuple(MODEL_PRESETS))
    # Attention heads: the size preset's count, or another that divides d_model (d_k = d_model / heads, so the
    # parameter count stays the same: the question "is it the heads or the parameters?").
    heads: str = setting(PRESET_HEADS, url="training_heads", key="training.heads", label="training.settings.heads",
                         help="training.settings.heads_help", choices=HEAD_CHOICES)
    # Each head's width d_k: d_model / heads (the paper's split, equal parameters whatever the heads), or set apart
    # (1 head of 4·d_model: "is it the heads or the parameters?" with more parameters in one head).
    head_dim: str = setting(SPLIT_WIDTH, url="training_head_dim", key="training.head_dim",
                            label="training.settings.head_dim", help="training.settings.head_dim_help",
                            choices=HEAD_DIM_CHOICES)
    # The model variants (see model.config.TransformerConfig): norm placement (post = the paper), norm, FFN, positions.
    norm_first: bool = setting(False, url="training_prenorm", key="training.norm_first",
                               label="training.variant.norm_first.label", choices=(False, True))
    norm_kind: str = setting("layer", url="training_norm", key="training.norm_kind", label="training.variant.norm_kind.label",
                             choices=NORM_KINDS)
    ffn_kind: str = setting("relu", url="training_ffn", key="training.ffn_kind", label="training.variant.ffn_kind.label",
                            choices=FFN_KINDS)
    position_kind: str = setting("sinusoidal", url="training_pos", key="training.position_kind",
                                 label="training.variant.position_kind.label", choices=POSITION_KINDS)
    warmup: int = setting(200, url="training_warmup", key="training.warmup", label="training.settings.warmup",
                          help="training.settings.warmup_help", lo=1, hi=4000)
    factor: float = setting(1.0, url="training_factor", key="training.factor", label="training.settings.factor",
                            help="training.settings.factor_help", lo=0.1, hi=5.0, step=0.1)
    label_smoothing: float = setting(0.1, url="training_eps", key="training.eps", label="training.settings.smoothing",
                                     help="training.settings.smoothing_help", lo=0.0, hi=0.5, step=0.05)
    dropout: float = setting(0.1, url="training_dropout", key="training.dropout", label="training.settings.dropout",
                             help="training.settings.dropout_help", lo=0.0, hi=0.5, step=0.05)
    batch_size: int = setting(32, url="training_batch", key="training.batch", label="training.settings.batch",
                              help="training.settings.batch_help", lo=1, hi=MAX_BATCH_SIZE, step=8)
    seed: int = setting(0, url="training_seed", key="training.seed", label="training.settings.seed",
                        help="training.settings.seed_help", lo=0, hi=2**31 - 1, step=1)
    max_steps: int = setting(600, url="training_steps", key="training.steps", label="training.settings.steps",
                             help="training.settings.steps_help", lo=1, hi=PAGE_MAX_STEPS, step=100)
    use_padding_mask: bool = setting(True, url="training_pad", key="training.pad", label="training.settings.padding",
                                     help="training.settings.padding_help")
    use_look_ahead_mask: bool = setting(True, url="training_ahead", key="training.ahead", label="training.settings.look_ahead",
                                        help="training.settings.look_ahead_help")
    # What the page does not offer (it fixes these itself: ui.training.settings.Settings.to_config).
    task_min_len: int | None = None
    task_max_len: int | None = None
    task_alphabet: str | None = None
    max_seconds: float = 300.0
    eval_every: int = 50
    eval_size: int = 200
    target_accuracy: float | None = None
    probe_every: int = 50
    probe_source: str | None = None

    def __post_init__(self) -> None:
        problem = self.problem()
        if problem is not None:
            raise InvalidConfig(problem, MESSAGES)

    def problem(self) -> Problem | None:
        """The first thing that keeps this config from training (a code of :data:`MESSAGES`), or None."""
        if self.task not in TASK_NAMES:
            return Problem("task", {"task": self.task, "tasks": ", ".join(TASK_NAMES)})
        if self.tokens not in TOKEN_CHOICES:
            return Problem("tokens", {"tokens": self.tokens, "choices": ", ".join(TOKEN_CHOICES)})
        if self.tokens == "bpe" and self.task not in TRANSLATION_TASKS:
            return Problem("tokens_task", {"task": self.task, "tasks": ", ".join(TRANSLATION_TASKS)})
        if self.preset not in ALL_PRESETS:
            return Problem("preset", {"preset": self.preset, "presets": ", ".join(ALL_PRESETS)})
        if self.heads not in HEAD_CHOICES:
            return Problem("heads", {"heads": self.heads, "choices": ", ".join(HEAD_CHOICES)})
        if self.head_dim not in HEAD_DIM_CHOICES:
            return Problem("head_dim_choice", {"head_dim": self.head_dim, "choices": ", ".join(HEAD_DIM_CHOICES)})
        sizes = self.sizes()
        problem = (size_problem(sizes["d_model"], sizes["n_heads"]) if "head_dim" not in sizes
                   else head_dim_problem(sizes["d_model"], sizes["n_heads"], sizes["head_dim"]))
        problem = problem or dropout_problem(self.dropout)
        for name in VARIANT_KINDS:
            problem = problem or variant_problem(name, getattr(self, name))
        if problem is not None:
            return problem

        def whole_at_least(value: object, lo: int, hi: int | None = None) -> bool:
            return is_whole(value) and value >= lo and (hi is None or value <= hi)

        checks = [
            (whole_at_least(self.batch_size, 1, MAX_BATCH_SIZE), "batch_size", {"limit": MAX_BATCH_SIZE}),
            (whole_at_least(self.warmup, 1), "warmup", {}),
            (is_number(self.factor) and 0 < self.factor < math.inf, "factor", {}),
            (is_number(self.label_smoothing) and 0 <= self.label_smoothing < 1, "label_smoothing", {}),
            (whole_at_least(self.max_steps, 1, MAX_STEPS), "max_steps", {"limit": MAX_STEPS}),
            (is_number(self.max_seconds) and self.max_seconds > 0, "max_seconds", {}),
            (whole_at_least(self.eval_every, 1) and whole_at_least(self.eval_size, 1), "evaluation", {}),
            (whole_at_least(self.probe_every, 1), "probe_every", {}),
            (self.target_accuracy is None or (is_number(self.target_accuracy) and 0 < self.target_accuracy <= 1),
             "target_accuracy", {}),
            (whole_at_least(self.seed, 0), "seed", {}),
        ]
        for ok, code, values in checks:
            if not ok:
                return Problem(code, values)
        try:
            self.make_task()  # a bad task option fails here, not in the thread
        except ValueError as exc:
            return Problem("task_options", {"detail": str(exc)})
        return None

    def sizes(self) -> dict[str, int]:
        """The model's sizes: the preset's, with ``heads`` heads unless it is :data:`PRESET_HEADS`, each
        ``head_dim`` wide unless it is :data:`SPLIT_WIDTH`."""
        sizes = dict(ALL_PRESETS[self.preset])
        if self.heads != PRESET_HEADS:
            sizes["n_heads"] = int(self.heads)
        if self.head_dim != SPLIT_WIDTH:
            sizes["head_dim"] = int(self.head_dim)
        return sizes

    def make_task(self) -> Task:
        """The task, read in BPE pieces learnt from this run's training pairs when ``tokens`` is "bpe"."""
        task = make_task(self.task, self.task_min_len, self.task_max_len, self.task_alphabet)
        return bpe_task(self.task, self.seed) if self.tokens == "bpe" else task

    def task_dict(self) -> dict:
        return {"name": self.task, "min_len": self.task_min_len, "max_len": self.task_max_len,
                "alphabet": self.task_alphabet}

    def model_config(self, tokenizer: Tokenizer, task: Task,
                     target_tokenizer: Tokenizer | None = None) -> TransformerConfig:
        """The model for ``task``: source vocabulary from ``tokenizer``, target from ``target_tokenizer`` (default the same)."""
        longest = max(task.max_src_len, task.max_tgt_len) + 2
        target_tokenizer = tokenizer if target_tokenizer is None else target_tokenizer
        return TransformerConfig(
            src_vocab_size=tokenizer.vocab_size, tgt_vocab_size=target_tokenizer.vocab_size,
            dropout=self.dropout, norm_first=self.norm_first, max_len=max(64, longest), pad_id=PAD_ID,
            norm_kind=self.norm_kind, ffn_kind=self.ffn_kind, position_kind=self.position_kind,
            **self.sizes(),
        )

    def to_dict(self) -> dict:
        return asdict(self)


# The Training page's settings in declaration order: field name -> (default, PageSetting).
PAGE_SETTINGS: dict[str, tuple[Any, PageSetting]] = {
    f.name: (f.default, f.metadata["page"]) for f in fields(TrainingConfig) if "page" in f.metadata
}


@dataclass(frozen=True)
class ProbeAttention:
    """Cross-attention of the fixed probe example at one step: (L, H, T, S) as nested lists."""

    step: int
    cross_attention: list
    output: str

    def weights(self) -> np.ndarray:
        """The cross-attention as a float array (L, H, T, S)."""
        return np.asarray(self.cross_attention, dtype=float)


def pattern_score(weights: np.ndarray, pattern: str) -> float | None:
    """Mean attention on the cells a perfect copy (``"diagonal"``) or reverse (``"anti"``) would use.

    weights: (T, S) for one head; row i (decoder input i, which predicts target character i)
    ideally looks at source position i (copy) or S-1-i (reverse). None if there are no such cells.
    """
    T, S = weights.shape
    cols = [(i if pattern == "diagonal" else S - 1 - i) for i in range(min(T, S))]
    values = [weights[i, c] for i, c in enumerate(cols) if 0 <= c < S]
    return float(np.mean(values)) if values else None


@dataclass(frozen=True)
class RunStatus:
    """The few facts a one-line status needs, without the history: cheap to take on every rerun.

    ``queue_position`` is the run's 1-based place in the slot queue while it waits there, else 0
    (also for the instant between ``start()`` and joining the queue, and between leaving the queue
    and the state turning to "running"); ``queue_waiting`` is how many wait, read with it.
    """

    state: str  # one of STATES
    reason: str  # why it finished or failed: "step cap reached", "stopped", an exception's text...
    step: int
    max_steps: int
    loss: float | None  # the last step's loss
    queue_position: int = 0
    queue_waiting: int = 0

    @property
    def live(self) -> bool:
        """True while the run changes by itself (queued or training)."""
        return self.state in LIVE_STATES


@dataclass(frozen=True)
class HeldOut:
    """What one evaluation measured on the held-out set besides exact match: the perplexity, exp of the plain
    (unsmoothed) cross-entropy per target token with teacher forcing, and for a translation task the corpus
    BLEU of the greedy answers (None otherwise)."""

    step: int
    perplexity: float
    bleu: float | None


@dataclass(frozen=True, kw_only=True)
class RunSnapshot(RunStatus):
    """The status with the whole history: plain data, safe to hand to any thread or UI."""

    elapsed_s: float
    losses: list[float]
    lrs: list[float]
    tokens_per_s: list[float]
    evals: list[tuple[int, float]]  # (step, exact-match accuracy)
    probes: list[ProbeAttention]
    probe_src_tokens: list[str]
    probe_tgt_tokens: list[str]
    device: str
    num_params: int
    config: dict
    held_out: list[HeldOut] = field(default_factory=list)  # one per evaluation, as ``evals``

    @property
    def accuracy(self) -> float | None:
        return self.evals[-1][1] if self.evals else None

    @property
    def eta_s(self) -> float | None:
        if self.step < 1 or self.state not in ("running", "paused"):
            return None
        return self.elapsed_s / self.step * (self.max_steps - self.step)


@dataclass(frozen=True, kw_only=True)
class RunMetrics(RunStatus):
    """The status with only what the run recorded after a reader's last look (:meth:`TrainingRun.metrics_since`):
    the per-step values of steps ``first_step``.., and the evaluations and probes past the counts it gave."""

    elapsed_s: float
    first_step: int  # the step of losses[0] (1-based)
    losses: list[float]
    lrs: list[float]
    tokens_per_s: list[float]
    evals: list[tuple[int, float]]
    probes: list[ProbeAttention]
    held_out: list[HeldOut] = field(default_factory=list)


@torch.inference_mode()
def greedy_batch(model: Transformer, src: torch.Tensor, max_new: int, opts: ForwardOptions,
                 use_cache: bool = True) -> torch.Tensor:
    """Greedy decoding of a whole batch at once: src (B, S) -> generated ids (B, <= max_new).

    The one decoder loop (:func:`model.decoding.greedy_ids`, with the key/value cache): the encoder
    runs once; rows that produced <eos> keep emitting <pad>; stops when all are done.
    """
    from model.decoding import greedy_ids  # here, not at the top: model.decoding is the loop's one home

    return greedy_ids(model, src, max_new, opts, use_cache=use_cache, bos_id=BOS_ID, eos_id=EOS_ID)


class TrainingRun:
    """One training run. ``train_until_done()`` trains in this thread; ``start()`` runs it in a daemon thread.

    Thread-safety: the training thread holds ``_lock`` while it changes the model or the
    history; ``snapshot()``, ``checkpoint_bytes()`` and the probe take the same lock.
    """

    def __init__(self, config: TrainingConfig, device: str | torch.device | None = None,
                 slots: RunSlots | None = None) -> None:
        self.config = config
        self.device = torch.device(device) if device is not None else pick_device()
        self.task = config.make_task()
        self.tokenizer = self.task.source_tokenizer()
        self.target_tokenizer = self.task.target_tokenizer()
        self.model_config = config.model_config(self.tokenizer, self.task, self.target_tokenizer)
        self._slots = slots
        with torch.random.fork_rng(devices=[]):  # init from the run's seed without touching others
            torch.manual_seed(config.seed)
            self.model = Transformer(self.model_config).to(self.device)
        # fused: one kernel for the whole update (7 ms -> 1.3 ms per step for the small model on CPU)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=1.0, betas=ADAM_BETAS, eps=ADAM_EPS, fused=True)
        self.scheduler = noam_scheduler(self.optimizer, self.model_config.d_model, config.warmup, config.factor)
        self._generator = torch.Generator(device=self.device).manual_seed(config.seed)
        self._data_rng = random.Random(config.seed)
        self._eval_pairs = self.task.sample_pairs(random.Random(config.seed + 1_000_003), config.eval_size)
        self.options = ForwardOptions(
            use_padding_mask=config.use_padding_mask, use_look_ahead_mask=config.use_look_ahead_mask,
            need_weights=False,
        )
        probe = config.probe_source or self.task.example
        self._probe = (probe, self.task.target_for(probe) or probe)
        self.probe_src_tokens = self.tokenizer.token_strings(self.tokenizer.encode(self._probe[0]))
        self.probe_tgt_tokens = self.target_tokenizer.token_strings(
            self.target_tokenizer.encode(self._probe[1], add_bos=True))
        self.num_params = self.model.num_params()
        weakref.finalize(self, trim)  # when a session that kept this run ends, its memory goes back to the OS
        self._callbacks: dict[str, list[Callable[[TrainingRun], None]]] = {event: [] for event in EVENTS}
        # Re-entrant: the command line's Ctrl-C handler calls stop() in the thread that trains, maybe inside a step's lock.
        self._lock = threading.RLock()
        self._wake = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None
        self._state, self._reason = "idle", ""
        self._stop_requested = self._pause_requested = False
        self._holding = False  # the run holds one of ``slots`` now
        self._had_slot = False  # the run has trained, or held a slot to train, at some point
        self._step = 0
        self._elapsed = 0.0
        self._losses: list[float] = []
        self._lrs: list[float] = []
        self._tokens_per_s: list[float] = []
        self._evals: list[tuple[int, float]] = []
        self._held_out: list[HeldOut] = []
        self._probes: list[ProbeAttention] = []

    # -- one step, one evaluation ----------------------------------------------------------
    def train_step(self) -> float:
        """One optimizer step on a fresh batch; returns the loss. Caller holds no lock."""
        t0 = time.perf_counter()
        pairs = self.task.sample_pairs(self._data_rng, self.config.batch_size)
        batch = batch_from_pairs(pairs, self.tokenizer, self.target_tokenizer)
        src, tgt_in, tgt_out = (x.to(self.device, non_blocking=True) for x in (batch.src, batch.tgt_in, batch.tgt_out))
        self.model.train()
        with dropout_generator(self._generator):
            logits = self.model(src, tgt_in, self.options.use_padding_mask, self.options.use_look_ahead_mask,
                                need_weights=False).logits
        loss = label_smoothed_cross_entropy(logits, tgt_out, self.config.label_smoothing, PAD_ID)
        value = loss.item()
        if not math.isfinite(value):
            raise FloatingPointError(f"the loss became {value} at step {self._step + 1}")
        with self._lock:
            lr = self.optimizer.param_groups[0]["lr"]
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            self.scheduler.step()
            self._step += 1
            dt = time.perf_counter() - t0
            self._losses.append(value)
            self._lrs.append(lr)
            self._tokens_per_s.append(int((tgt_out != PAD_ID).sum()) / max(dt, 1e-9))
        return value

    def evaluate(self, pairs: list[tuple[str, str]] | None = None, stop_below: float | None = None) -> float:
        """Greedy exact-match accuracy on ``pairs`` (default: the run's held-out set).

        With ``stop_below``, evaluation goes in chunks and ends as soon as the accuracy can no longer
        reach that value; the answer is then the accuracy on the chunks evaluated (below the target
        either way, so the stopping rule is unchanged).
        """
        return self._answers(pairs if pairs is not None else self._eval_pairs, stop_below)[0]

    def _answers(self, pairs: list[tuple[str, str]], stop_below: float | None) -> tuple[float, list[str]]:
        """:meth:`evaluate`'s accuracy, and the greedy answers it read (the first ones only if it stopped early)."""
        errors = 0
        answers: list[str] = []
        chunk = 250
        self.model.eval()
        for i in range(0, len(pairs), chunk):
            part = pairs[i:i + chunk]
            batch = batch_from_pairs(part, self.tokenizer, self.target_tokenizer)
            out = greedy_batch(self.model, batch.src.to(self.device), self.task.max_tgt_len + 1, self.options)
            predictions = [self.target_tokenizer.decode(row) for row in out.tolist()]
            errors += sum(p != t for p, (_, t) in zip(predictions, part))
            answers += predictions
            if stop_below is not None and 1 - errors / len(pairs) < stop_below:
                break  # the same expression as the final check, so rounding cannot stop it early
        return 1 - errors / len(answers), answers

    @torch.inference_mode()
    def held_out_perplexity(self, pairs: list[tuple[str, str]] | None = None) -> float:
        """exp of the plain cross-entropy (no label smoothing) per target token of ``pairs`` (default: the
        held-out set), teacher forcing, eval mode: how surprised the model is by the right answers."""
        pairs = pairs if pairs is not None else self._eval_pairs
        total = tokens = 0.0
        self.model.eval()
        for i in range(0, len(pairs), 250):
            batch = batch_from_pairs(pairs[i:i + 250], self.tokenizer, self.target_tokenizer)
            src, tgt_in, tgt_out = (x.to(self.device) for x in (batch.src, batch.tgt_in, batch.tgt_out))
            logits = self.model(src, tgt_in, self.options.use_padding_mask, self.options.use_look_ahead_mask,
                                need_weights=False).logits
            total += float(torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), tgt_out.flatten(),
                                                             ignore_index=PAD_ID, reduction="sum"))
            tokens += int((tgt_out != PAD_ID).sum())
        return math.exp(total / max(tokens, 1))

    def _held_out_scores(self, answers: list[str]) -> HeldOut:
        bleu = None
        if self.config.task in TRANSLATION_TASKS and answers:
            references = [target for _, target in self._eval_pairs[:len(answers)]]
            bleu = corpus_bleu(answers, references, tokenize=TOKENIZE_FOR[self.config.task.split("-")[1]])
        return HeldOut(self._step, self.held_out_perplexity(), bleu)

    def predict(self, sources: list[str]) -> list[str]:
        """Greedy answers for typed sources (characters outside the alphabet become <unk>)."""
        with self._lock:
            self.model.eval()
            src, _ = self.tokenizer.encode_batch(sources, max_len=self.model_config.max_len)
            out = greedy_batch(self.model, src.to(self.device), self.task.max_tgt_len + 1, self.options)
        return [self.target_tokenizer.decode(row) for row in out.tolist()]

    @torch.inference_mode()
    def _probe_attention(self) -> ProbeAttention:
        source, target = self._probe
        self.model.eval()
        src = torch.tensor([self.tokenizer.encode(source)], device=self.device)
        tgt = torch.tensor([self.target_tokenizer.encode(target, add_bos=True)], device=self.device)
        out = self.model(src, tgt, self.options.use_padding_mask, self.options.use_look_ahead_mask)
        cross = torch.stack(out.cross_attention)[:, 0]  # (L, H, T, S)
        answer = self.target_tokenizer.decode(greedy_batch(self.model, src, self.task.max_tgt_len + 1, self.options)[0])
        return ProbeAttention(self._step, cross.cpu().tolist(), answer)

    def _after_step(self) -> None:
        cfg = self.config
        if self._step % cfg.probe_every == 0 or self._step == 1:
            probe = self._probe_attention()
            with self._lock:
                self._probes.append(probe)
        if self._step % cfg.eval_every == 0:
            accuracy, answers = self._answers(self._eval_pairs, cfg.target_accuracy)
            held_out = self._held_out_scores(answers)
            with self._lock:
                self._evals.append((self._step, accuracy))
                self._held_out.append(held_out)

    def _done_reason(self) -> str | None:
        cfg = self.config
        if cfg.target_accuracy is not None and self._evals and self._evals[-1][0] == self._step \
                and self._evals[-1][1] >= cfg.target_accuracy:
            return "target accuracy reached"
        if self._step >= cfg.max_steps:
            return "step cap reached"
        if self._elapsed >= cfg.max_seconds:
            return "time cap reached"
        return None

    # -- the training loop ----------------------------------------------------------------
    def add_callback(self, event: str, callback: Callable[["TrainingRun"], None]) -> None:
        """Call ``callback(run)`` at ``event`` (one of :data:`EVENTS`): "on_step_end" after every step,
        its evaluation and probe. It runs in the training thread; an exception in it fails the run."""
        self._callbacks[event].append(callback)

    def _trigger(self, event: str) -> None:
        for callback in self._callbacks[event]:
            callback(self)

    def train_until_done(self) -> RunSnapshot:
        """The training loop: step until a cap, the target accuracy or :meth:`stop`; returns the final snapshot.

        The command line, the tests and the benchmarks call it in their own thread; :meth:`start`
        calls it in a daemon thread. Between steps it waits while the run is paused or queued for a
        slot (a run without ``slots`` never queues); a failing step ends the run ("failed"), it
        does not kill the caller's thread or process.
        """
        ending = ("failed", "the training thread ended unexpectedly")
        try:
            while (stopped := self._wait_until_it_may_train()) is None:
                t0 = time.perf_counter()
                self.train_step()
                self._after_step()
                with self._lock:
                    self._elapsed += time.perf_counter() - t0
                self._trigger("on_step_end")
                reason = self._done_reason()
                if reason:
                    ending = ("finished", reason)
                    break
            else:
                ending = ("finished", stopped)
        except Exception as exc:
            ending = ("failed", _describe(exc))
        finally:
            # The ending is published last: a reader who sees "finished" may start the next run at
            # once, so by then this thread holds no slot and no training state (nor runs anything).
            self._give_slot_back()
            self._drop_training_state()
            self._set_state(*ending)
        return self.snapshot()

    def _drop_training_state(self) -> None:
        """A run that has ended never steps again: free its gradients and the optimizer's moments (the
        model, curves and samples stay), and give the step's freed activations back to the OS."""
        with self._lock:
            for parameter in self.model.parameters():
                parameter.grad = None
            self.optimizer.state.clear()
        trim()

    # -- the background thread ----------------------------------------------------------------
    def start(self) -> None:
        """Start training in a daemon thread (queued first when the slots are all taken)."""
        with self._lock:
            if self._thread is not None:
                raise RuntimeError("This run has already been started; make a new run to train again.")
            self._state = "queued" if self._slots is not None else "running"
            self._thread = threading.Thread(target=self.train_until_done, name="training-run", daemon=True)
        self._thread.start()

    def pause(self) -> None:
        """Pause after the current step; a paused run gives its training slot back (or leaves the queue)."""
        with self._lock:
            if self._state in ("running", "queued"):
                self._pause_requested = True
                self._state = "paused"
        if self._slots is not None:
            self._slots.cancel(self)  # a run waiting in the queue leaves it now, not at the next poll

    def resume(self) -> None:
        """Go on from the same step; a run that gave its slot back queues for one again."""
        with self._lock:
            self._pause_requested = False
            if self._state == "paused":
                self._state = "queued" if self._slots is not None and not self._holding else "running"
            self._wake.notify_all()

    def stop(self, timeout: float = 2.0) -> None:
        """Ask the run to stop and wait for its thread to end (prompt: at most one step)."""
        with self._lock:
            self._stop_requested = True
            self._wake.notify_all()
        if self._slots is not None:
            self._slots.cancel(self)
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    @property
    def alive(self) -> bool:
        """True from :meth:`start` until the run has ended. The ending is published only after the
        thread let go of its slot and training state, so a run that is not alive costs nothing; the
        thread itself may live a moment longer, returning."""
        with self._lock:
            return self._thread is not None and self._state not in ENDED_STATES

    def _wait_until_it_may_train(self) -> str | None:
        """Block until the next step may run (None) or the run was stopped (why, as the run's reason).

        A paused run holds no slot: it gives its slot back (or leaves the queue) and waits; on resume
        it joins the back of the queue and trains on from the same step once it has a slot again.
        """
        while True:
            with self._lock:
                paused = self._pause_requested and not self._stop_requested
            if paused:
                self._give_slot_back()
                with self._lock:
                    while self._pause_requested and not self._stop_requested:
                        self._state = "paused"
                        self._wake.wait(0.25)
            with self._lock:
                if self._stop_requested:
                    return "stopped" if self._had_slot else "stopped before it started"
                if self._pause_requested:
                    continue
                if self._slots is None or self._holding:
                    self._state, self._had_slot = "running", True
                    return None
                self._state = "queued"
            got = self._slots.acquire(self, should_give_up=lambda: self._stop_requested or self._pause_requested)
            with self._lock:
                self._holding = got

    def _give_slot_back(self) -> None:
        with self._lock:
            holding, self._holding = self._holding, False
        if holding:
            self._slots.release(self)

    def _set_state(self, state: str, reason: str = "") -> None:
        with self._lock:
            self._state, self._reason = state, reason

    # -- reading ----------------------------------------------------------------------------
    def snapshot(self) -> RunSnapshot:
        position, waiting = self._slots.place(self) if self._slots is not None else (0, 0)
        with self._lock:
            return RunSnapshot(
                state=self._state, reason=self._reason, step=self._step, max_steps=self.config.max_steps,
                loss=self._losses[-1] if self._losses else None, elapsed_s=self._elapsed,
                losses=list(self._losses), lrs=list(self._lrs),
                tokens_per_s=list(self._tokens_per_s), evals=list(self._evals), probes=list(self._probes),
                held_out=list(self._held_out),
                probe_src_tokens=self.probe_src_tokens, probe_tgt_tokens=self.probe_tgt_tokens,
                queue_position=position, queue_waiting=waiting,
                device=str(self.device), num_params=self.num_params, config=self.config.to_dict(),
            )

    def metrics_since(self, step: int, evals: int = 0, probes: int = 0) -> RunMetrics:
        """The status, and what the run recorded after its first ``step`` steps, ``evals`` evaluations
        and ``probes`` probes: a live view asks only for what it has not drawn yet.

        (Counts, not steps, for the evaluations and probes: step s's loss is recorded before its
        evaluation, so a reader may see the step and only on its next look the evaluation.)
        """
        position, waiting = self._slots.place(self) if self._slots is not None else (0, 0)
        with self._lock:
            return RunMetrics(
                state=self._state, reason=self._reason, step=self._step, max_steps=self.config.max_steps,
                loss=self._losses[-1] if self._losses else None, elapsed_s=self._elapsed,
                queue_position=position, queue_waiting=waiting, first_step=step + 1,
                losses=self._losses[step:], lrs=self._lrs[step:], tokens_per_s=self._tokens_per_s[step:],
                evals=self._evals[evals:], probes=self._probes[probes:], held_out=self._held_out[evals:],
            )

    def status(self) -> RunStatus:
        """State, reason, step and last loss only (no copies of the history): for status lines."""
        with self._lock:
            state, reason, step = self._state, self._reason, self._step
            loss = self._losses[-1] if self._losses else None
        position = waiting = 0
        if self._slots is not None and state == "queued":
            position, waiting = self._slots.place(self)
        return RunStatus(state=state, reason=reason, step=step, max_steps=self.config.max_steps, loss=loss,
                         queue_position=position, queue_waiting=waiting)

    def history(self) -> dict[str, Any]:
        snap = self.snapshot()
        return {"losses": snap.losses, "lrs": snap.lrs, "evals": snap.evals, "steps": snap.step,
                "seconds": snap.elapsed_s, "config": snap.config}

    def checkpoint_bytes(self) -> bytes:
        """The model as checkpoint-file bytes (``save_checkpoint``), taken under the lock: safe mid-run."""
        history = self.history()
        buffer = io.BytesIO()
        with self._lock:
            save_checkpoint(buffer, self.model, self.tokenizer, self.config.task_dict(), history,
                            target_tokenizer=self.target_tokenizer)
        return buffer.getvalue()

    def planned_lr(self, steps: int | None = None) -> list[float]:
        """The Noam curve this run follows, step 1..steps (default: its step cap)."""
        n = steps or self.config.max_steps
        return [noam_lr(s, self.model_config.d_model, self.config.warmup, self.config.factor) for s in range(1, n + 1)]


@functools.cache
def parameter_count(task: str, preset: str, *, norm_first: bool = False, norm_kind: str = "layer",
                    ffn_kind: str = "relu", position_kind: str = "sinusoidal", heads: str = PRESET_HEADS,
                    head_dim: str = SPLIT_WIDTH, tokens: str = "words") -> int:
    """Trainable parameters of a ``preset`` model for ``task`` with the given variant switches (and tokens: BPE
    changes the vocabularies, so the embeddings; counted with seed 0's merges, 200 a side as every seed has).

    Built on the meta device (no memory). The variants change the count: pre-norm adds a final
    norm per stack, RMSNorm has d_model parameters where LayerNorm has 2·d_model, SwiGLU's three
    bias-free matrices of width swiglu_hidden(d_ff) replace the ReLU MLP, the position kinds have none.
    """
    config = TrainingConfig(task=task, preset=preset, norm_first=norm_first, norm_kind=norm_kind,
                            ffn_kind=ffn_kind, position_kind=position_kind, heads=heads, head_dim=head_dim,
                            tokens=tokens)
    task_obj = config.make_task()
    with torch.device("meta"):
        model = Transformer(config.model_config(task_obj.source_tokenizer(), task_obj, task_obj.target_tokenizer()))
    return model.num_params()


@functools.lru_cache(maxsize=64)
def vocab_size(task: str, tokens: str = "words", seed: int = 0) -> int:
    """Tokens in the target vocabulary of ``task`` (its alphabet, words or BPE pieces, plus the special tokens)."""
    return (bpe_task(task, seed) if tokens == "bpe" else make_task(task)).target_tokenizer().vocab_size


def loss_floor(task: str, epsilon: float, tokens: str = "words", seed: int = 0) -> float:
    """The lowest loss label smoothing allows: the entropy of the smoothed target distribution.

    The right token gets 1 - ε and the V - 2 others (all but it and <pad>) get ε / (V - 2) each,
    as in ``model.loss``; even a perfect model pays -(1-ε)·ln(1-ε) - ε·ln(ε / (V-2)) per token.
    """
    if epsilon <= 0:
        return 0.0
    others = vocab_size(task, tokens, seed) - 2
    return -(1 - epsilon) * math.log(1 - epsilon) - epsilon * math.log(epsilon / others)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"

"""The Training page's settings, derived from their one declaration on ``model.training.TrainingConfig``.

Each setting is a :class:`~model.training.TrainingConfig` field made with ``model.training.setting``:
its default is what the page opens with, and its :class:`~model.training.PageSetting` gives its URL
name, widget key, label and range. Everything here is derived from that: :data:`PARAMS` (the URL
parameters, ``?training_task=copy&training_warmup=200...``), :data:`KEYS` (the widgets' session-state keys),
:data:`COMPARED_FIELDS`, :class:`Settings` (what a visitor chose, checked by the engine alone) and
:func:`read_settings`. Adding a setting is adding a field there (and its label in both catalogs).
"""
from __future__ import annotations

import dataclasses
from typing import Any

import streamlit as st

from explain.tasks import bpe_change
from model.config import VARIANT_KINDS, InvalidConfig, Problem, ffn_parameter_count, swiglu_hidden
from model.tasks import BPE_CORPUS_PAIRS, BPE_MERGES, TRANSLATION_TASKS
from model.training import MODEL_PRESETS, PAGE_SETTINGS, SPLIT_WIDTH, PageSetting, TrainingConfig, parameter_count
from ui.cache import computed
from ui.i18n import t
from ui.training.session import max_run_seconds
from ui.url_state import BoolParam, ChoiceParam, FloatParam, IntParam, Param, markdown_literal

EVAL_SIZE = 100  # held-out examples answered greedily at each evaluation of a page's run

SPECS: dict[str, PageSetting] = {name: spec for name, (_, spec) in PAGE_SETTINGS.items()}
DEFAULTS: dict[str, Any] = {name: default for name, (default, _) in PAGE_SETTINGS.items()}
KEYS: dict[str, str] = {name: spec.key for name, spec in SPECS.items()}  # setting -> its widget's session key
# The settings a run is described by, in the order the compare list names them (the task has a column of its own).
COMPARED_FIELDS: tuple[str, ...] = tuple(name for name in SPECS if name != "task")
VARIANT_FIELDS: tuple[str, ...] = ("norm_first", *VARIANT_KINDS)  # the model-variant switches
# A second warmup drawn beside the planned curve: a view of the page, not a setting of the run.
COMPARE = IntParam("training_cmp", default=800, lo=0, hi=4000)
COMPARE_KEY = "training.compare"
# The paper's own schedule (d_model 512, warmup 4000) drawn beside it: a view too.
PAPER_LR = BoolParam("training_paper_lr", default=False)
PAPER_LR_KEY = "training.paper_lr"


def _param(name: str) -> Param:
    """The URL parameter of setting ``name``, from its type and its declared range or choices."""
    default, spec = DEFAULTS[name], SPECS[name]
    if isinstance(default, bool):
        return BoolParam(spec.url, default=default)
    if spec.choices:
        return ChoiceParam(spec.url, default=default, choices=spec.choices)
    if isinstance(default, int):  # any whole number in range: the step is the widget's increment only
        return IntParam(spec.url, default=default, lo=int(spec.lo), hi=int(spec.hi))
    return FloatParam(spec.url, default=default, lo=spec.lo, hi=spec.hi, step=spec.step)


PARAMS: dict[str, Param] = {name: _param(name) for name in SPECS}  # setting -> its URL parameter


def _to_config(self: Any, max_seconds: float | None = None) -> TrainingConfig:
    """The engine's config (:class:`~model.config.InvalidConfig` when the engine refuses these settings):
    the settings plus the server's fixed knobs (time cap, evaluation and probe intervals)."""
    return TrainingConfig(
        **{**dataclasses.asdict(self), "tokens": effective_tokens(self)},
        max_seconds=max_seconds if max_seconds is not None else max_run_seconds(),
        eval_every=min(max(self.max_steps // 20, 10), 100), eval_size=EVAL_SIZE,
        probe_every=min(max(self.max_steps // 40, 5), 50),
    )


def _problem(self: Any) -> Problem | None:
    """Why the engine would refuse these settings (``TrainingConfig.problem``), or None if they can train."""
    try:
        self.to_config()
    except InvalidConfig as exc:
        return exc.problem
    return None


# What the page lets a visitor choose: the page's fields of TrainingConfig with the same defaults, unchecked
# (the widgets may hold a combination the engine refuses; :meth:`problem` says which).
Settings = dataclasses.make_dataclass(
    "Settings", [(name, type(default), dataclasses.field(default=default)) for name, default in DEFAULTS.items()],
    frozen=True, namespace={"to_config": _to_config, "problem": _problem,
                            "__doc__": "What the page lets a visitor choose; ``to_config`` adds the server's fixed knobs."},
)
Settings.__module__ = __name__


def read_settings() -> Settings:
    """The settings as the widgets hold them now (also usable inside a button callback)."""
    state = st.session_state
    return Settings(**{name: state.get(key, DEFAULTS[name]) for name, key in KEYS.items()})


def is_translation(task: str) -> bool:
    return task in TRANSLATION_TASKS


def effective_tokens(settings: Any) -> str:
    """The tokens a run of ``settings`` reads: the tokens setting for a translation task; a character task
    always reads its own characters (the page does not offer the setting there, but the URL may carry it)."""
    return settings.tokens if is_translation(settings.task) else DEFAULTS["tokens"]


def token_fields(config: dict[str, Any]) -> tuple[str, ...]:
    """("tokens",) for a run of a translation task (its settings line names them), () for a character task."""
    return ("tokens",) if is_translation(config.get("task")) else ()


# ------------------------------------------------------------------ the settings in words


def problem_message(problem: Problem) -> tuple[str, dict[str, Any]]:
    """``(i18n key, args)`` of the engine's ``problem``: its code names the sentence, text values are escaped."""
    args = {name: markdown_literal(value) if isinstance(value, str) else value
            for name, value in problem.values.items()}
    return f"training.invalid.{problem.code}", args


def problem_text(problem: Problem) -> str:
    """The engine's ``problem`` as one sentence in the session's language."""
    key, args = problem_message(problem)
    return t(key, **args)


def preset_label(preset: str) -> str:
    """A model size's option: its name and shape. The parameter count, which also depends on the task and
    the switches, is the sentence under the switches: a radio's labels must not change while it is on
    screen (the browser would send back the old label, which is no longer an option)."""
    p = MODEL_PRESETS[preset]
    return t("training.settings.preset_option", name=preset_name(preset), d_model=p["d_model"],
             layers=p["n_layers"], heads=p["n_heads"])


def head_width_label(choice: str) -> str:
    """The head-width setting's option: "d_model / heads" (the paper's split) or a width."""
    return t("training.settings.head_dim_split") if choice == SPLIT_WIDTH else choice


def preset_name(preset: str) -> str:
    """A model size's name in the session's language (``tiny`` is 微型 in Chinese)."""
    return t(f"training.preset_name.{preset}")


def preset_width(preset: str) -> int:
    """d_model of a model size."""
    return MODEL_PRESETS[preset]["d_model"]


def variant_fields(settings: Settings) -> dict[str, Any]:
    """The model-variant switches of ``settings``, as ``parameter_count`` takes them."""
    return {name: getattr(settings, name) for name in VARIANT_FIELDS}


def parameter_text(settings: Settings) -> str | None:
    """The model's parameter count with these switches, and what one feed-forward block costs with SwiGLU
    and ReLU (None when the task or size is not one the page offers)."""
    if settings.task not in SPECS["task"].choices or settings.preset not in MODEL_PRESETS:
        return None
    sizes = MODEL_PRESETS[settings.preset]
    d_model, d_ff = sizes["d_model"], sizes["d_ff"]
    params = parameter_count(settings.task, settings.preset, heads=settings.heads, head_dim=settings.head_dim,
                             tokens=effective_tokens(settings), **variant_fields(settings))
    return t("training.variant.params", params=f"{params:,}", d_ff=d_ff, hidden=swiglu_hidden(d_ff),
             relu=f"{ffn_parameter_count(d_model, d_ff, 'relu'):,}",
             swiglu=f"{ffn_parameter_count(d_model, d_ff, 'swiglu'):,}")


def bpe_text(settings: Settings) -> str:
    """What reading the translation task in BPE pieces changes, measured on the pairs the merges are learnt
    from: each side's vocabulary and tokens per sentence (its own tokens → BPE pieces), and an unseen word's pieces."""
    change = computed(bpe_change, settings.task, settings.seed)
    sides = {}
    for prefix, side in (("src", change.source), ("tgt", change.target)):
        sides.update({f"{prefix}_lang": t(f"training.tokens.lang_{side.language}"),
                      f"{prefix}_own_unit": t(f"training.tokens.own_unit_{side.language}"),
                      f"{prefix}_vocab_own": side.vocab_own, f"{prefix}_vocab_bpe": side.vocab_bpe,
                      f"{prefix}_mean_own": f"{side.mean_own:.1f}", f"{prefix}_mean_bpe": f"{side.mean_bpe:.1f}"})
    return t("training.tokens.caption", merges=BPE_MERGES, pairs=f"{BPE_CORPUS_PAIRS:,}", word=change.unseen_word,
             pieces=" ".join(f"`{piece}`" for piece in change.unseen_pieces), **sides)

"""Suggested experiments: one click sets the settings, queues the runs and says what to look for.

A visitor trains one run at a time, so an experiment's runs go one after another
(:meth:`ui.training.session.TrainingSession.start_queue`): the same task, seed and step cap, each
run changing one setting. They all appear in the compare list, ticked, so the overlay draws them
as they come. The step caps are small enough for each run to finish in a minute or two on one CPU
core; ``seconds`` is the longest one run took on one quiet core of the project's 2-core machine
(session 17, load average 1; a server busy with a class takes longer, and the texts say so). The numbers
in the comments were measured with the page's settings (seed 0).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

import streamlit as st

from ui.i18n import t
from ui.training import session as ts
from ui.training.settings import KEYS, Settings
from ui.url_state import markdown_literal

_FLASH_KEY = "_training.experiment_error"


@dataclass(frozen=True)
class Experiment:
    """Runs that differ in one setting: ``shared`` is what they all use (the rest are the page's
    defaults, so an experiment gives the same curves whatever the page showed before)."""

    key: str  # its texts: training.experiment.<key>.{button,what,look}
    shared: Mapping[str, Any]
    runs: tuple[Mapping[str, Any], ...]
    seconds: int  # the longest run's training time on one quiet CPU core (measured, session 17)

    def settings(self) -> list[Settings]:
        """The settings of each run, in the order they train."""
        base = replace(Settings(), **self.shared)
        return [replace(base, **run) for run in self.runs]


EXPERIMENTS: tuple[Experiment, ...] = (
    # Warmup 1 is the schedule's "no warmup" (it divides by warmup); factor 0.2 starts the rate at
    # 0.2 · 32^-0.5 = 0.035. Measured (seed 0, step 600): post-norm loss 3.51, exact match 0 %;
    # pre-norm 1.77, 19 %. At factor 0.4 (and 1.0) both stall.
    Experiment("norm", {"task": "copy", "preset": "tiny", "warmup": 1, "factor": 0.2, "max_steps": 600},
               ({"norm_first": False}, {"norm_first": True}), seconds=15),
    # Step 700: sinusoidal loss 2.60, RoPE 1.27 (9 % exact match), no positions 3.27.
    Experiment("position", {"task": "reverse", "preset": "tiny", "max_steps": 700},
               ({"position_kind": "sinusoidal"}, {"position_kind": "rope"}, {"position_kind": "none"}), seconds=20),
    # Step 800: ReLU (26,129 parameters) loss 1.24, 15 %; SwiGLU (26,001) 1.21, 19 %.
    Experiment("ffn", {"task": "sort", "preset": "tiny", "max_steps": 800},
               ({"ffn_kind": "relu"}, {"ffn_kind": "swiglu"}), seconds=18),
    # Step 800: ε 0.1 loss 0.99 (its floor is 0.71), 65 %; ε 0: loss 0.30, 76 %.
    Experiment("smoothing", {"task": "copy", "preset": "tiny", "max_steps": 800},
               ({"label_smoothing": 0.1}, {"label_smoothing": 0.0}), seconds=14),
    # Session 23, on the page (load average ~10, so a quiet core is faster), step 400, held out: ε 0.1 exact
    # match 91 %, perplexity 1.103, BLEU 97.9; ε 0: 91 %, 1.032, 96.8 (12 s and 16 s).
    Experiment("smoothing_mt", {"task": "en-zh", "preset": "tiny", "max_steps": 400},
               ({"label_smoothing": 0.1}, {"label_smoothing": 0.0}), seconds=16),
    # Session 23, through the page's settings, step 800, equal parameters (242,929): 1 head (d_k 64) loss 1.10,
    # exact match 48 %; 4 heads (d_k 16) loss 1.36, 28 % (37 s on a nearly quiet core). Session 24, the same runs
    # again (identical), and 1 head of d_k 256 (541,297 parameters): loss 2.94, 0 % (384 s at load average ~5);
    # seed 1: d_k 256 loss 2.43, 1 %; 1 head of d_k 64 loss 1.04, 53 %.
    Experiment("heads", {"task": "reverse", "preset": "small", "max_steps": 800},
               ({"heads": "1"}, {"heads": "preset"}, {"heads": "1", "head_dim": "256"}), seconds=40),
)
BY_KEY = {experiment.key: experiment for experiment in EXPERIMENTS}


def button_key(key: str) -> str:
    return f"training.experiment_{key}"


def _on_experiment(key: str) -> None:
    """Set the page's widgets to the experiment's first run and queue all its runs."""
    experiment = BY_KEY[key]
    runs = experiment.settings()
    for name, widget_key in KEYS.items():
        st.session_state[widget_key] = getattr(runs[0], name)
    try:
        ts.session_training().start_queue([settings.to_config() for settings in runs], key)
    except ValueError as exc:  # e.g. a TP_DEVICE the machine does not have
        st.session_state[_FLASH_KEY] = str(exc)


def experiments_section(session: ts.TrainingSession) -> None:
    """One button per suggested experiment, with what it compares and how long it takes."""
    with st.expander(t("training.experiment.heading"), icon=":material/science:", expanded=True):
        st.caption(t("training.experiment.caption"))
        for experiment in EXPERIMENTS:
            with st.container(horizontal=True, vertical_alignment="center", key=f"training_exp_{experiment.key}"):
                st.button(t(f"training.experiment.{experiment.key}.button"), key=button_key(experiment.key),
                          icon=":material/science:", disabled=session.live, on_click=_on_experiment,
                          args=(experiment.key,))
                st.markdown(t(f"training.experiment.{experiment.key}.what", runs=len(experiment.runs),
                              seconds=experiment.seconds, steps=experiment.shared["max_steps"]), width="stretch")
        error = st.session_state.pop(_FLASH_KEY, None)
        if error is not None:
            st.error(t("training.start_failed", detail=markdown_literal(error, 600)))


def experiment_status(session: ts.TrainingSession) -> None:
    """What to look for in the experiment whose runs were queued last, and how many runs are still to come."""
    if session.experiment not in BY_KEY:
        return
    st.info(t(f"training.experiment.{session.experiment}.look"), icon=":material/science:")
    if session.queued_runs:
        st.caption(t("training.experiment.queued", n=session.queued_runs))

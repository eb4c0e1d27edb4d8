"""Write-it-yourself exercises: the learner's function, its cases, its check and its hints.

No Streamlit and no execution of learner code here (the sandbox runs it; see :mod:`.core` for the
flow). One concept per file; :data:`EXERCISES` lists them all, :func:`for_page` those of a page.
"""
from __future__ import annotations

from explain.exercises.attention import ATTENTION, MERGE_HEADS, SPLIT_HEADS
from explain.exercises.bleu import BREVITY_PENALTY, MODIFIED_PRECISION
from explain.exercises.core import (
    CATALOG, PAGES, Bug, Case, CaseResult, Exercise, Hint, LearnerOutput, Report, calls, catalog_text, check,
    expected, matching_bug, reference_function, reference_source, run_function, run_trusted, to_numpy, to_torch,
    to_torch_args, trusted_sources,
)
from explain.exercises.feed_forward import FEED_FORWARD
from explain.exercises.layer_norm import LAYER_NORM
from explain.exercises.layers import CLONES
from explain.exercises.loss import LABEL_SMOOTHING, SHIFT_TARGETS
from explain.exercises.masks import LOOK_AHEAD_MASK, PADDING_MASK
from explain.exercises.offline import offline_test
from explain.exercises.positional import POSITIONAL_ENCODING
from explain.exercises.schedule import NOAM

EXERCISES: dict[str, Exercise] = {e.key: e for e in (
    ATTENTION, SPLIT_HEADS, MERGE_HEADS, LOOK_AHEAD_MASK, PADDING_MASK, POSITIONAL_ENCODING, LAYER_NORM,
    FEED_FORWARD, SHIFT_TARGETS, LABEL_SMOOTHING, NOAM, MODIFIED_PRECISION, BREVITY_PENALTY, CLONES,
)}


def for_page(page: str) -> tuple[Exercise, ...]:
    """The exercises shown on ``page`` (a key of ui.tour), in teaching order."""
    return tuple(e for e in EXERCISES.values() if e.page == page)


__all__ = [
    "CATALOG", "EXERCISES", "PAGES", "Bug", "Case", "CaseResult", "Exercise", "Hint", "LearnerOutput", "Report",
    "calls", "catalog_text", "check", "expected", "for_page", "matching_bug", "offline_test", "reference_function",
    "reference_source", "run_function", "run_trusted", "to_numpy", "to_torch", "to_torch_args", "trusted_sources",
]

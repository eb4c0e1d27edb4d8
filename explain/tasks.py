"""What a checkpoint's task says about a sentence: its example, and the answer it should give."""
from __future__ import annotations

from typing import Any

from model.tasks import Task, UnknownTaskError, get_task

FALLBACK_EXAMPLE = "hello world"


def task_of(checkpoint: Any) -> Task | None:
    """The task a checkpoint was trained on, or None when its metadata names no known task."""
    try:
        return get_task(str(checkpoint.task.get("name")))
    except (UnknownTaskError, AttributeError, KeyError, ValueError):
        return None


def task_example(checkpoint: Any) -> str:
    """The example sentence of the checkpoint's task, one it handles well."""
    task = task_of(checkpoint)
    return task.example if task is not None else FALLBACK_EXAMPLE


def expected_output(checkpoint: Any, source: str) -> str | None:
    """The correct output of the checkpoint's task for ``source``, or None when there is none."""
    task = task_of(checkpoint)
    return task.target_for(source) if task is not None else None

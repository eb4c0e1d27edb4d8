"""Choose the device every tensor of the app lives on: CUDA, then Apple MPS, then CPU."""
from __future__ import annotations

import os

import torch

_ENV_VAR = "TP_DEVICE"
_KNOWN = ("cuda", "mps", "cpu")


def _available(kind: str) -> bool:
    if kind == "cuda":
        return torch.cuda.is_available()
    if kind == "mps":
        return bool(getattr(torch.backends, "mps", None)) and torch.backends.mps.is_available()
    return kind == "cpu"


def pick_device(preferred: str | None = None) -> torch.device:
    """The device to run on.

    Order of precedence: the ``preferred`` argument, then the ``TP_DEVICE`` environment
    variable, then the best one present (cuda > mps > cpu). Asking for a device that is not
    present raises ``ValueError`` with a sentence saying what is available.
    """
    choice = (preferred or os.environ.get(_ENV_VAR, "")).strip().lower()
    if not choice or choice == "auto":
        return torch.device(next(k for k in _KNOWN if _available(k)))
    kind = choice.split(":")[0]
    if kind not in _KNOWN:
        raise ValueError(f"Unknown device {choice!r}: use one of cuda, mps, cpu or auto.")
    if not _available(kind):
        present = ", ".join(k for k in _KNOWN if _available(k))
        raise ValueError(f"Device {choice!r} is not available on this machine; available: {present}.")
    return torch.device(choice)

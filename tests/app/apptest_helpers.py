"""Helpers shared by the AppTest suites of ``tests/app``: running a page, reading what it shows, and
small random checkpoints for the pages to load (no training).

Import them as ``from tests.app.apptest_helpers import ...`` (the repository root is on the path,
see ``pythonpath`` in ``pyproject.toml``). The ``app`` fixture itself lives in ``conftest.py``.
"""
from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from model.checkpoint import save_checkpoint
from model.config import TransformerConfig
from model.tasks import get_task
from model.tokenizer import CharTokenizer
from model.transformer import Transformer
from ui import models

# Batch texts (one sentence a line) that the tokens and masks pages must explain, never crash on.
BAD_INPUTS: dict[str, str] = {
    "empty": "",
    "spaces": "   \n  \n ",
    "long": "abc " * 40,
    "many_lines": "\n".join(f"line {n}" for n in range(12)),
    "emoji": "hi 👍🏽 there 🇫🇷",
    "chinese": "你好，世界\n注意力",
    "html": "<b>bold</b> <script>alert(1)</script>\n<s>x</s>",
}


# ------------------------------------------------------------------ running a page


def clean(at: AppTest) -> AppTest:
    """``at``, after checking that the run ended without an exception element."""
    assert not at.exception, [e.value for e in at.exception]
    return at


def open_script(app: Callable[..., AppTest], script: str, query: dict[str, str] | None = None, *,
                locale: str | None = None, home_first: bool = False) -> AppTest:
    """A fresh session on page ``script`` (``"app_pages/<file>.py"``) with ``query`` in the URL.

    Before its first run AppTest finds a page by its file name, so a page whose URL path differs
    from its file name is reached with ``home_first``: the default page runs first, then the
    test switches, as a click in the sidebar would.
    """
    at = app(query=query, locale=locale)
    if home_first:
        clean(at.run())
    return clean(at.switch_page(script).run())


# ------------------------------------------------------------------ reading what it shows


def texts(elements) -> list[str]:
    """The values of ``elements`` (``at.toast``, ``at.warning``, ...) as strings."""
    return [str(e.value) for e in elements]


def query(at: AppTest, name: str) -> str:
    """The URL's value of ``name`` (AppTest keeps it as a string or a one-item list)."""
    value = at.query_params[name]
    return value[0] if isinstance(value, list) else value


def chart(at: AppTest, key: str) -> dict:
    """The plotly figure (as JSON) of the one chart whose widget key ends with ``key``."""
    found = [c for c in at.get("plotly_chart") if c.proto.id.endswith(f"-{key}")]
    assert len(found) == 1, [c.proto.id for c in at.get("plotly_chart")]
    return json.loads(found[0].proto.spec)


def values(data: Any) -> np.ndarray:
    """A figure's array as floats, whether plotly wrote a list (None = empty cell = NaN) or a typed array."""
    if isinstance(data, dict):  # plotly's typed-array form {"dtype", "bdata", "shape"}
        flat = np.frombuffer(base64.b64decode(data["bdata"]), dtype=np.dtype(data["dtype"]))
        return flat.reshape([int(n) for n in str(data.get("shape", len(flat))).split(",")]).astype(float)
    return np.array(data, dtype=float)


# ------------------------------------------------------------------ random checkpoints


def write_random_checkpoint(path: Path, task: str, *, seed: int, d_model: int = 16, n_heads: int = 2,
                            n_layers: int = 1, d_ff: int = 32, max_len: int = 64, alphabet: str | None = None,
                            label_smoothing: float | None = None) -> None:
    """An untrained model of ``task`` at ``path``: every invariant the pages show holds for it too.
    ``alphabet`` replaces the task's (an uploaded model's characters may be anything); ``label_smoothing``: the ε
    its saved training config says (None: the checkpoint does not say, as an uploaded file may not)."""
    torch.manual_seed(seed)
    tokenizer = CharTokenizer(get_task(task).alphabet if alphabet is None else alphabet)
    config = TransformerConfig(src_vocab_size=tokenizer.vocab_size, tgt_vocab_size=tokenizer.vocab_size,
                               d_model=d_model, n_heads=n_heads, n_layers=n_layers, d_ff=d_ff, dropout=0.0,
                               max_len=max_len)
    history = None if label_smoothing is None else {"config": {"label_smoothing": label_smoothing}}
    save_checkpoint(path, Transformer(config).eval(), tokenizer, {"name": task}, history=history)


def random_model_fixtures(*models_: tuple[str, int], folder: str = "checkpoints", **config: int):
    """Two fixtures for a test module: ``checkpoint_dir`` and the autouse ``random_models``.

    ``checkpoint_dir`` is a folder written once per module with ``<task>.pt`` for every
    ``(task, seed)`` in ``models_`` (``config``: see :func:`write_random_checkpoint`);
    ``random_models`` points the app's model list at it for every test. Use it as::

        checkpoint_dir, random_models = random_model_fixtures(("copy", 3), d_model=16)
    """

    @pytest.fixture(scope="module", name="checkpoint_dir")
    def checkpoint_dir(tmp_path_factory) -> Path:
        path = tmp_path_factory.mktemp(folder)
        for task, seed in models_:
            write_random_checkpoint(path / f"{task}.pt", task, seed=seed, **config)
        return path

    @pytest.fixture(autouse=True, name="random_models")
    def random_models(monkeypatch, checkpoint_dir) -> None:
        monkeypatch.setattr(models, "CHECKPOINT_DIR", checkpoint_dir)

    return checkpoint_dir, random_models

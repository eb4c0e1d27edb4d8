"""The house's layers: data flows one way, app.py → app_pages → ui → explain/figures → model.

Each module's imports are read from its source (``ast``, nothing is run), so a layer that reaches
up or sideways fails here with the file and the import named.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# For each folder: the top-level packages its modules must never import.
FORBIDDEN: dict[str, set[str]] = {
    "model": {"streamlit", "plotly", "pandas", "ui", "explain", "figures", "app_pages", "sandbox"},
    "explain": {"streamlit", "plotly", "ui", "figures", "app_pages", "sandbox"},
    "figures": {"streamlit", "torch", "model", "explain", "ui", "app_pages", "sandbox"},
    "ui": {"app_pages"},  # ui/ may import sandbox (policy, runner)
    "app_pages": {"torch", "model"},
    # Learner code's sandbox: no UI; model / explain only inside the worker (a request's trusted ``entry``),
    # never imported by the modules the server loads.
    "sandbox": {"streamlit", "plotly", "ui", "figures", "app_pages", "model", "explain"},
}


def imported_packages(path: Path) -> set[str]:
    """The top-level names of every module ``path`` imports, at any depth of its code."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def modules(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("folder", sorted(FORBIDDEN))
def test_no_layer_reaches_up_or_sideways(folder):
    offences = {
        str(path.relative_to(ROOT)): sorted(imported_packages(path) & FORBIDDEN[folder])
        for path in modules(folder)
    }
    offences = {path: names for path, names in offences.items() if names}
    assert not offences, f"{folder}/ must not import {sorted(FORBIDDEN[folder])}: {offences}"


def test_every_layer_has_modules():
    for folder in FORBIDDEN:
        assert modules(folder), f"{folder}/ has no Python modules"


def test_the_reader_sees_nested_and_from_imports(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import os.path\nfrom plotly import graph_objects\n\ndef f():\n    import streamlit as st\n")
    assert imported_packages(probe) == {"os", "plotly", "streamlit"}

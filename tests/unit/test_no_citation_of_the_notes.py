"""Nothing a visitor reads cites the study notes the app was written from ("the notes", "seed 004", 笔记):
visitors do not have them, and "seed" is also the random-seed control on the same pages. The paper or the
worked example itself is cited instead. Read: every catalog text in both languages, every function a code
panel shows, and every exercise's starter, planted mistakes and reference."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from explain.code import SNIPPETS, source_of
from explain.exercises import EXERCISES
from explain.exercises.core import reference_source
from ui.i18n import LANGS

CATALOG = Path(__file__).resolve().parents[2] / "assets" / "i18n"
# "seed 004", "seed note(s)", "the notes", "notes'"; 笔记 but not 笔记本 (notebook, a word of the en-zh vocabulary)
CITATION = re.compile(r"\bseed\s*(note|0\d\d)|\bseed's\b|\bthe notes\b|\bnotes'|笔记(?!本)", re.IGNORECASE)


def _strings(node, key: str = ""):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _strings(v, f"{key}.{k}" if key else k)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _strings(v, f"{key}[{i}]")
    elif isinstance(node, str):
        yield key, node


def citations(text: str) -> list[str]:
    return [text[max(0, m.start() - 30):m.end() + 30] for m in CITATION.finditer(text)]


def test_the_pattern_catches_what_it_is_for_and_spares_the_seed_control():
    assert citations("Seed 004 prints tensor(...)") and citations("the worked example from the notes")
    assert citations("种子笔记 004 打印的是") and citations("(seed 001's example)")
    assert not citations("Seed 3 draws other samples") and not citations("随机种子") and not citations("笔记本")


@pytest.mark.parametrize("lang", LANGS)
def test_no_catalog_text_cites_the_notes(lang):
    found = {f"{f.stem}.{key}": citations(text) for f in sorted((CATALOG / lang).glob("*.json"))
             for key, text in _strings(json.loads(f.read_text(encoding="utf-8"))) if citations(text)}
    assert found == {}


def test_no_code_panel_cites_the_notes():
    found = {key: citations(source_of(s.path).text) for key, s in SNIPPETS.items() if citations(source_of(s.path).text)}
    assert found == {}


def test_no_exercise_source_cites_the_notes():
    found = {}
    for key, ex in EXERCISES.items():
        texts = {"reference": reference_source(ex), **{f"bug.{b.key}": b.source for b in ex.bugs},
                 **{f"starter.{lang}": ex.starter(lang) for lang in LANGS}}
        found.update({f"{key}.{name}": citations(t) for name, t in texts.items() if citations(t)})
    assert found == {}

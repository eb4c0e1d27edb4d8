"""The "Write it yourself" panels under AppTest (issue #34), in both languages: the starter, Check in
the sandbox (a separate process), a common mistake loaded and named by its hint, the reference passing
every case; and, where the operator's setting runs no visitor code, the download instead of Check.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from explain.exercises import EXERCISES, for_page, reference_source
from sandbox import runner
from tests.app.apptest_helpers import clean, open_script, random_model_fixtures
from ui.i18n import translate

ROOT = Path(__file__).resolve().parents[2]


def _gap_pattern(stack: str) -> str:
    return (re.escape(translate(f"exercises.panel.use_mine_gap_{stack}", "en", gap="@"))
            .replace("@", r"(-?[0-9.,]+(?: × 10[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)?|nan)"))


def number(text: str) -> float:
    """A number as ``figures.labels.readable_number`` writes it (``0.25``, ``8 × 10⁻⁸``, ``nan``)."""
    head, _, power = text.replace(",", "").partition(" × 10")
    return float(head) * 10 ** int(power.translate(str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")) or 0)


GAP = re.compile("|".join(f"(?:{_gap_pattern(stack)})" for stack in ("encoder", "decoder", "loss")))

checkpoint_dir, random_models = random_model_fixtures(("copy", 1), folder="exercise_checkpoints", d_model=32,
                                                      n_heads=2, n_layers=1, d_ff=64, max_len=40)
needs_sandbox = pytest.mark.skipif(not runner.available(), reason="bubblewrap cannot start a sandbox here")


def panel(at: AppTest, key: str, lang: str):
    title = translate("exercises.panel.heading", lang, title=translate(f"exercises.{key}.title", lang))
    found = [e for e in at.expander if e.label == title]
    assert len(found) == 1, [e.label for e in at.expander]
    return found[0]


def report_text(at: AppTest) -> str:
    return " ".join(str(e.value) for e in [*at.success, *at.warning])


@pytest.mark.parametrize("page", sorted({e.page for e in EXERCISES.values()}))
def test_every_exercise_page_shows_its_exercises_with_their_starters(app, page, monkeypatch):
    monkeypatch.setenv("TP_LEARNER_CODE", "off")
    script = "app_pages/training.py" if page == "training" else f"app_pages/{page}.py"
    at = open_script(app, script, {"lang": "zh"}, home_first=True)
    for ex in for_page(page):
        box = panel(at, ex.key, "zh")
        assert box.text_area[0].value == ex.starter("zh")
        assert box.button[0].disabled  # Check: this setting runs no visitor code
        assert box.get("download_button")


def test_the_learners_code_outlives_another_page(app, monkeypatch):
    """What the learner wrote is there again after another page was shown (Streamlit forgets an editor
    that is not drawn)."""
    monkeypatch.setenv("TP_LEARNER_CODE", "off")
    ex = EXERCISES["look_ahead_mask"]
    at = open_script(app, "app_pages/masks.py", {"lang": "en"}, home_first=True)
    mine = "def look_ahead_mask(size, device=None):\n    return 'mine'\n"
    clean(panel(at, ex.key, "en").text_area[0].set_value(mine).run())
    clean(at.switch_page("app_pages/tokens.py").run())
    clean(at.switch_page("app_pages/masks.py").run())
    assert panel(at, ex.key, "en").text_area[0].value == mine


@needs_sandbox
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_check_names_a_planted_mistake_and_passes_the_reference(app, monkeypatch, lang):
    monkeypatch.setenv("TP_LEARNER_CODE", "on")
    ex = EXERCISES["look_ahead_mask"]
    at = open_script(app, "app_pages/masks.py", {"lang": lang}, home_first=True)
    box = panel(at, ex.key, lang)
    clean(box.button[0].click().run())  # the starter as it is
    box = panel(at, ex.key, lang)
    assert translate("exercises.panel.summary", lang, passed=0, total=len(ex.cases())) in report_text(at)

    bug = ex.bugs[0]
    clean(box.selectbox[0].set_value(bug.key).run())
    box = panel(at, ex.key, lang)
    assert box.text_area[0].value == bug.source
    clean(box.button[0].click().run())
    hint = translate(f"exercises.{ex.key}.bug.{bug.key}", lang)
    assert hint in report_text(at), report_text(at)

    box = panel(at, ex.key, lang)
    clean(box.text_area[0].set_value(reference_source(ex)).run())
    clean(panel(at, ex.key, lang).button[0].click().run())
    total = len(ex.cases())
    assert translate("exercises.panel.summary", lang, passed=total, total=total) in report_text(at)
    box = panel(at, ex.key, lang)
    clean(box.toggle[0].set_value(True).run())
    assert reference_source(ex).rstrip() in [c.value.rstrip() for c in panel(at, ex.key, lang).code]


@needs_sandbox
def test_hostile_code_gets_one_sentence_and_the_page_keeps_working(app, monkeypatch):
    monkeypatch.setenv("TP_LEARNER_CODE", "on")
    ex = EXERCISES["look_ahead_mask"]
    at = open_script(app, "app_pages/masks.py", {"lang": "en"}, home_first=True)
    hostile = "import os\n\ndef look_ahead_mask(size, device=None):\n    os.system('touch /tmp/pwned')\n" \
              "    return open('/etc/passwd').read()\n"
    clean(panel(at, ex.key, "en").text_area[0].set_value(hostile).run())
    clean(panel(at, ex.key, "en").button[0].click().run())
    text = report_text(at)
    assert translate("exercises.panel.summary", "en", passed=0, total=len(ex.cases())) in text
    assert "Traceback" not in text and "/work" not in text
    clean(at.run())  # the page still draws


# every function "use mine" runs: its page, a planted mistake, the query string of a view that shows it
USE_MINE_CASES = [
    ("attention", "attention", "mask_polarity", {}),
    ("masks", "look_ahead_mask", "polarity", {}),
    ("masks", "padding_mask", "polarity", {"sent": "1"}),
    ("positional_encoding", "positional_encoding", "sin_cos_swapped", {}),
    ("layer_norm", "layer_norm", "gamma_beta_swapped", {}),  # "unbiased" moves the maps by < 0.01
    ("output_and_loss", "label_smoothing", "softmax_axis", {}),
]


@needs_sandbox
@pytest.mark.parametrize(("page", "key", "bug", "query"), USE_MINE_CASES, ids=[c[1] for c in USE_MINE_CASES])
def test_use_mine_runs_the_learners_function_in_the_shipped_model(app, monkeypatch, page, key, bug, query):
    """A planted mistake, checked, then used in the model: other maps or losses (a difference above 0);
    the reference used in the model: the model's own answer and maps (no difference)."""
    from ui import models

    monkeypatch.setenv("TP_LEARNER_CODE", "on")
    monkeypatch.setattr(models, "CHECKPOINT_DIR", ROOT / "assets" / "checkpoints")
    ex = EXERCISES[key]
    bug = bug or ex.bugs[0].key
    at = open_script(app, f"app_pages/{page}.py", {"lang": "en", "model": "copy", **query}, home_first=True)

    def use_mine() -> tuple[float, list[str]]:
        clean(panel(at, ex.key, "en").button[0].click().run())  # Check
        use = [b for b in panel(at, ex.key, "en").button if b.label == translate("exercises.panel.use_mine", "en")]
        clean(use[0].click().run())
        box = panel(at, ex.key, "en")
        assert not box.error, [e.value for e in box.error]
        gap = [number(next(g for g in m.groups() if g)) for c in box.caption for m in [GAP.search(str(c.value))] if m]
        bold = [str(m.value).split("**")[1::2] for m in box.markdown if "**" in str(m.value)]
        charts = [c for c in at.get("plotly_chart") if "use_mine" in c.proto.id]
        assert len(gap) == 1, [c.value for c in box.caption]
        assert len(charts) == (1 if ex.function == "label_smoothed_cross_entropy" else 2)
        return gap[0], [b for pair in bold for b in pair]

    clean(panel(at, ex.key, "en").selectbox[0].set_value(bug).run())
    gap, _ = use_mine()
    assert gap > 0.01 or gap != gap, gap  # NaN: the mistake gives no number at all (e.g. a row all masked)
    clean(panel(at, ex.key, "en").text_area[0].set_value(reference_source(ex)).run())
    gap, shown = use_mine()
    assert gap < 1e-4, gap
    assert shown[-2] == shown[-1]  # the answers (the model's, with yours inside), or the mean losses


@needs_sandbox
def test_what_the_sandbox_reports_is_said_in_the_visitors_language(app, monkeypatch):
    """An endless loop, a function under another name, a forbidden call: the sandbox's own report in 中文
    (Python's own error messages stay as Python writes them)."""
    monkeypatch.setenv("TP_LEARNER_CODE", "on")
    ex = EXERCISES["look_ahead_mask"]
    at = open_script(app, "app_pages/masks.py", {"lang": "zh"}, home_first=True)
    for source, kind in (("def look_ahead_mask(size):\n    while True:\n        pass\n", None),
                         ("def mask(size):\n    return None\n", "no_function"),
                         ("import os\ndef look_ahead_mask(size):\n    os.fork()\n", "not_allowed")):
        clean(panel(at, ex.key, "zh").text_area[0].set_value(source).run())
        clean(panel(at, ex.key, "zh").button[0].click().run())
        page_text = " ".join(str(e.value) for e in [*at.success, *at.warning, *at.markdown, *at.error]) + \
            " ".join(e.proto.body for e in at.get("html"))
        if kind is not None:
            assert translate(f"exercises.sandbox.{kind}", "zh", function=ex.function) in page_text, kind
        assert "the code" not in page_text and "system call" not in page_text  # the sandbox's English

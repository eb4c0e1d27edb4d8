"""BLEU's fresh samples are decoded in turn with other visitors (#33 item 3): a visitor whose samples are not
cached waits in line and is told their place; a view already decoded never waits, even while the line is held."""
from __future__ import annotations

import threading

import pytest

import explain.bleu
from explain.turns import Turns
from tests.app.apptest_helpers import clean, open_script, random_model_fixtures

checkpoint_dir, random_models = random_model_fixtures(("dates", 5), folder="bleu_queue_checkpoints",
                                                      d_model=16, n_heads=2, n_layers=1, d_ff=32, max_len=64)


class TellingTurns(Turns):
    """A line that also records the places it tells its callers."""

    def __init__(self) -> None:
        super().__init__(1)
        self.told: list[int] = []

    def turn(self, on_wait=None, tick=0.05):
        def tell(ahead: int) -> None:
            self.told.append(ahead)
            if on_wait is not None:
                on_wait(ahead)
        return super().turn(on_wait=tell, tick=0.05)


@pytest.fixture
def line(monkeypatch) -> TellingTurns:
    turns = TellingTurns()
    monkeypatch.setattr(explain.bleu, "decode_turns", lambda: turns)
    return turns


def hold(turns: Turns, release: threading.Event) -> threading.Thread:
    """Another visitor's decode: holds the line's one turn until ``release``."""
    entered = threading.Event()

    def other() -> None:
        with turns.turn():
            entered.set()
            release.wait(60)

    thread = threading.Thread(target=other, daemon=True)
    thread.start()
    assert entered.wait(10)
    return thread


def test_a_view_already_decoded_never_waits_in_line(app, line):
    at = open_script(app, "app_pages/bleu.py", {"lang": "en", "model": "dates", "bleu_n": "60", "bleu_seed": "11"})
    release = threading.Event()
    holder = hold(line, release)
    try:
        for noise in ("swap", "short", "none"):  # another look at the same samples: no decode, no wait
            clean(at.radio(key="bleu.noise").set_value(noise).run())
        assert line.told == [] and len(line) == 1
    finally:
        release.set()
        holder.join(10)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_fresh_samples_wait_their_turn_told_their_place(app, line, lang):
    at = open_script(app, "app_pages/bleu.py", {"lang": lang, "model": "dates", "bleu_n": "60", "bleu_seed": "12"})
    release = threading.Event()
    holder = hold(line, release)
    decoded_while_held: list[bool] = []
    real = explain.bleu.decode_chunk

    def spy(*args, **kwargs):
        decoded_while_held.append(not release.is_set())
        return real(*args, **kwargs)

    def let_go_once_told() -> None:
        while not line.told:
            threading.Event().wait(0.01)
        release.set()

    threading.Thread(target=let_go_once_told, daemon=True).start()
    explain.bleu.decode_chunk, saved = spy, real
    try:
        at.number_input(key="bleu.seed").set_value(13 if lang == "en" else 14)  # samples nobody has decoded
        clean(at.run())
    finally:
        explain.bleu.decode_chunk = saved
        release.set()
        holder.join(10)
    assert line.told and line.told[0] == 1  # one visitor was ahead
    assert decoded_while_held and not any(decoded_while_held)  # nothing decoded before the other's turn ended
    assert at.metric and not at.error

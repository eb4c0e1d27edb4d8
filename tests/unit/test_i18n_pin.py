"""The language of a script run is settled once: by app.py's pin, or on first use in a fragment rerun."""
from __future__ import annotations

import streamlit as st
import streamlit.runtime.scriptrunner as scriptrunner

import ui.i18n as i18n


def test_a_run_without_a_pin_reads_the_session_once_and_keeps_it(monkeypatch):
    monkeypatch.setattr(i18n, "_last_run_lang", i18n._last_run_lang)  # restored afterwards
    ctx = object()  # one script run's context
    state = {i18n.LANG_STATE_KEY: "zh"}
    monkeypatch.setattr(scriptrunner, "get_script_run_ctx", lambda suppress_warning=False: ctx)
    monkeypatch.setattr(st, "session_state", state)
    i18n.pin_run_lang(None)  # a fragment rerun: app.py did not run, nothing is pinned

    assert i18n.current_lang() == "zh"
    state[i18n.LANG_STATE_KEY] = "en"  # cannot happen inside one run; shows the pin is used
    assert i18n.current_lang() == "zh"
    assert i18n.t("common.sidebar.language") == i18n.translate("common.sidebar.language", "zh")

    i18n.pin_run_lang(None)  # the next full run starts by un-pinning (ui.sidebar.bind_shared_state)
    assert i18n.current_lang() == "en"
    i18n.pin_run_lang("zh")  # ...and pins what the sidebar settled
    assert i18n.current_lang() == "zh"


def test_another_run_context_does_not_see_the_pin(monkeypatch):
    monkeypatch.setattr(i18n, "_last_run_lang", i18n._last_run_lang)  # restored afterwards
    contexts = [object()]
    monkeypatch.setattr(scriptrunner, "get_script_run_ctx", lambda suppress_warning=False: contexts[0])
    monkeypatch.setattr(st, "session_state", {i18n.LANG_STATE_KEY: "en"})
    i18n.pin_run_lang("zh")
    assert i18n.current_lang() == "zh"
    contexts[0] = object()  # another session's run on this thread
    assert i18n.current_lang() == "en"

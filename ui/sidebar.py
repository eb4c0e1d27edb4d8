"""The sidebar every page shares: language, model, device, and the training run's status.

``app.py`` calls :func:`bind_shared_state` before ``st.navigation`` (page titles need the
language) and :func:`render` after it. Both the language and the model live in session state
(keys ``"lang"`` and ``"model"``) and in the URL (``?lang=en|zh&model=<name>``); page links
carry them (:data:`CARRIED_PARAMS`), and the sidebar writes them back after a switch through the
navigation menu, which clears the query string.

A link naming a model this session does not have (one trained or uploaded in someone else's
session: such models live only in their trainer's session) opens on the first model with the link
binding's passing toast and a lasting notice above the page (:func:`model_elsewhere_notice`) that
says so and how to share a model instead (download the checkpoint, upload it), until the visitor
picks a model or hides it.

The model a visitor starts on follows the language (:func:`ui.models.default_model`: ``en-zh`` in
English, ``zh-en`` in 中文). While the visitor is still on that default, switching the language
switches the model too; a model the visitor picked, or one a link names, always stays (the model is
a value that follows a default: :func:`ui.url_state.bind` with ``follows``).
"""
from __future__ import annotations

import functools

import streamlit as st

from ui import models, presenter
from ui.training import status as training_status
from ui.i18n import LANG_STATE_KEY, LANGS, browser_lang, current_lang, t, translate
from ui.tour import by_url_path, stop
from ui.url_state import ChoiceParam, bind, markdown_literal, pick

CARRIED_PARAMS: tuple[str, ...] = ("lang", "model", presenter.PARAM.name)  # present: only while it is on
ELSEWHERE_KEY = "_sidebar.model_elsewhere"  # the ?model= name this session does not have, while its notice shows


def language_param() -> ChoiceParam:
    """``?lang=``; its default is the session's language once chosen, else the browser's."""
    chosen = st.session_state.get(LANG_STATE_KEY)
    return ChoiceParam("lang", default=chosen if chosen in LANGS else browser_lang(), choices=LANGS)


def model_param(names: list[str], default: str | None = None) -> ChoiceParam:
    return ChoiceParam("model", default=default if default in names else names[0], choices=names)


def mark_model_picked() -> None:
    """The visitor chose a model: from now on a language switch leaves it alone."""
    pick(models.MODEL_STATE_KEY)


def bind_shared_state() -> None:
    """Settle this run's language and model from the URL / session (no drawing except notices)."""
    lang = st.session_state[bind(language_param(), key=LANG_STATE_KEY)]
    presenter.bind_presenter()
    names = models.available_models()
    _note_model_elsewhere(names)
    if names:
        default = models.default_model(names, lang)  # the language's model, until one is picked or linked
        bind(model_param(names, default), key=models.MODEL_STATE_KEY, follows=models.MODEL_STATE_KEY)
    elif (asked := st.query_params.get("model")) is not None:
        st.toast(
            t("common.model.url_unavailable", name=markdown_literal(asked)),
            icon=":material/link_off:",
            duration="long",
        )
        del st.query_params["model"]


def _note_model_elsewhere(names: list[str]) -> None:
    """A ``?model=`` that names no model here and no shipped one: remember it for the lasting notice
    (the URL binding still shows its passing toast, as for every rejected link value)."""
    asked = st.query_params.get("model")
    if asked is None or not asked.strip() or asked in names or asked in models.SHIPPED_TASKS:
        return  # a blank name names no model: the binding's toast about the bad value is enough
    st.session_state[ELSEWHERE_KEY] = asked


def _forget_model_elsewhere() -> None:
    st.session_state.pop(ELSEWHERE_KEY, None)


def _model_picked() -> None:
    """The sidebar's model box changed: the visitor picked a model (and the link's notice has done its job)."""
    _forget_model_elsewhere()
    mark_model_picked()


def model_elsewhere_notice() -> None:
    """The lasting notice about a linked model that lives in another session (see the module docstring)."""
    asked = st.session_state.get(ELSEWHERE_KEY)
    if asked is None:
        return
    if asked in models.available_models():  # it was uploaded under that name since
        _forget_model_elsewhere()
        return
    with st.container(key="model_elsewhere"):
        st.warning(t("common.link_and_paste.model_elsewhere", name=markdown_literal(asked),
                     used=markdown_literal(models.selected_model_name() or "–"),
                     download=t("training.download.button"), upload=t("training.upload.heading")),
                   icon=":material/link_off:")
        st.button(t("common.link_and_paste.model_elsewhere_dismiss"), key="model_elsewhere.dismiss",
                  on_click=_forget_model_elsewhere)


@functools.cache
def device_label() -> tuple[str, str | None]:
    """``(device, error)``: the device ``model.device.pick_device()`` chose, once per process."""
    try:
        from model.device import pick_device

        return str(pick_device()), None
    except ValueError as exc:  # a bad TP_DEVICE: say so, run on the CPU
        return "cpu", str(exc)


def _model_label(name: str, lang: str) -> str:
    if not models.is_session_model(name):
        return translate("common.model.label_shipped", lang, name=name)
    kind = "label_uploaded" if models.is_uploaded_model(name) else "label_session"
    return translate(f"common.model.{kind}", lang, name=name)


def render(page_url_path: str = "") -> None:
    """Draw the shared sidebar (call after :func:`bind_shared_state`, on every page).

    ``page_url_path`` is the page being shown; on the training page the run's status is left to
    the page, which draws it into the sidebar from the snapshot its live panel shows.
    """
    with st.sidebar:
        st.radio(
            t("common.sidebar.language"),
            LANGS,
            key=LANG_STATE_KEY,
            format_func=lambda code: t(f"common.language_name.{code}"),
            horizontal=True,
            help=t("common.sidebar.language_help"),
        )
        names = models.available_models()
        if names:
            lang = current_lang()
            st.selectbox(
                t("common.sidebar.model"),
                names,
                key=models.MODEL_STATE_KEY,
                # The labels of this run's language, even when Streamlit formats an option outside the
                # run (where t() would read the language of the process's latest run: another session's).
                format_func=lambda name: _model_label(name, lang),
                help=t("common.sidebar.model_help"),
                on_change=_model_picked,
            )
        else:
            st.caption(t("common.model.none_available"))
        device, error = device_label()
        st.caption(t("common.sidebar.device", device=device), help=t("common.sidebar.device_help"))
        if error:
            st.warning(t("common.sidebar.device_error"), icon=":material/warning:")
        shown = by_url_path(page_url_path)
        presenter.sidebar_controls(shown.key if shown is not None else None)
        if page_url_path != stop("training").url_path:  # the training page draws it from its own snapshot
            training_status.sidebar_status()
    model_elsewhere_notice()

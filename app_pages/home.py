"""Home: what the playground is for, the architecture (click a block to open its page), the tour.

The diagram and the tour are one element (:func:`ui.home_view.map_html`): changing the language
reruns the whole app, and every element is one more message to send.
"""
import streamlit as st

from ui.code_panel import code_panel
from ui.home_view import map_html
from ui.i18n import current_lang, t
from ui.nav import linked_html
from ui.scaffold import page

with page("home", title=t("common.app_title"), model=False):
    lang = current_lang()
    # One element per language: a language switch mounts a fresh one. With a single key, one full test
    # run in a fresh venv saw the tour stay in English after the switch (its links already carried
    # ?lang=zh), i.e. the component kept its old markup; a new key cannot.
    linked_html(map_html(lang), key=f"home_map_{lang}")
    st.info(f"**{t('home.prereq.heading')}**\n\n{t('home.prereq.body')}", icon=":material/school:")
    code_panel("home", ("forward", "encode", "decode"), paper_rows=("norm", "shared_layer"))

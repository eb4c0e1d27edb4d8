"""Home: what the playground is for, the architecture (click a block to open its page), the tour, and the
three families of Transformer (which of the pages apply to encoder-only and decoder-only models).

The diagram and the tour are one element (:func:`ui.home_view.map_html`): changing the language
reruns the whole app, and every element is one more message to send.
"""
import streamlit as st

from ui.code_panel import code_panel
from ui.home_view import family_table, map_html
from ui.i18n import current_lang, t
from ui.nav import link, linked_html
from ui.scaffold import page
from ui.tour import stop

with page("home", title=t("common.app_title"), model=False):
    lang = current_lang()
    # One element per language: a language switch mounts a fresh one. With a single key, one full test
    # run in a fresh venv saw the tour stay in English after the switch (its links already carried
    # ?lang=zh), i.e. the component kept its old markup; a new key cannot.
    linked_html(map_html(lang), key=f"home_map_{lang}")
    st.info(f"**{t('home.prereq.heading')}**\n\n{t('home.prereq.body')}", icon=":material/school:")
    with st.expander(t("home.families.heading"), icon=":material/account_tree:"):  # #32: beyond this app's model
        st.markdown(t("home.families.body") + "\n\n" + family_table(lang))
        link(stop("masks"), t("home.families.link"), icon=":material/grid_on:", view={"masks_view": "families"})
    code_panel("home", ("forward", "encode", "decode"), paper_rows=("norm", "shared_layer"))

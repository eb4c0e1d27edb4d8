"""Home: what the playground is for, the architecture (click a block to open its page), the tour.

The diagram and the tour are one element (:func:`ui.home_view.map_html`): changing the language
reruns the whole app, and every element is one more message to send.
"""
import streamlit as st

from ui.home_view import map_html
from ui.i18n import current_lang, t
from ui.nav import linked_html, tour_links

st.title(t("common.app_title"))
st.markdown(t("home.intro"))
linked_html(map_html(current_lang()), key="home_map")
st.info(f"**{t('home.prereq.heading')}**\n\n{t('home.prereq.body')}", icon=":material/school:")
tour_links("home")

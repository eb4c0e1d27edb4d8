"""Home: what the playground is for, the architecture (click a block to open its page), the tour."""
from pathlib import Path

import streamlit as st

from ui.i18n import current_lang, t
from ui.nav import link, linked_diagram, tour_links
from ui.tour import TOUR

ASSETS = Path(__file__).resolve().parents[1] / "assets"

st.title(t("common.app_title"))
st.markdown(t("home.intro"))

diagram_col, side_col = st.columns([7, 4], gap="medium")
with diagram_col:
    st.subheader(t("home.diagram.heading"))
    st.caption(t("home.diagram.caption"))
    linked_diagram(ASSETS / f"architecture_{current_lang()}.svg", key="home_architecture")
with side_col:
    st.subheader(t("home.tour.heading"))
    st.caption(t("home.tour.intro"))
    for number, stop in enumerate(TOUR[1:], start=1):
        link(stop, f"**{number}. {stop.title}**")  # page links never wrap: the sentence goes below
        st.caption(t(f"home.tour.{stop.key}"))
    with st.container(border=True):
        st.markdown(f"**{t('home.prereq.heading')}**")
        st.markdown(t("home.prereq.body"))

tour_links("home")

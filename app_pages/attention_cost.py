"""The cost of attention."""
import streamlit as st

from ui.i18n import t
from ui.nav import tour_links

st.title(t("cost.title"))

tour_links("cost")

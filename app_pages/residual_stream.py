"""The residual stream."""
import streamlit as st

from ui.i18n import t
from ui.nav import tour_links

st.title(t("residual.title"))

tour_links("residual")

"""Output and loss."""
import streamlit as st

from ui.i18n import t
from ui.nav import tour_links

st.title(t("output.title"))

tour_links("output")

"""Feed-forward network."""
import streamlit as st

from ui.i18n import t
from ui.nav import tour_links

st.title(t("ffn.title"))

tour_links("ffn")

"""LayerNorm and where it goes."""
import streamlit as st

from ui.i18n import t
from ui.nav import tour_links

st.title(t("layernorm.title"))

tour_links("layernorm")

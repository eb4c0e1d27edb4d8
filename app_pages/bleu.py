"""Scoring translations: BLEU."""
import streamlit as st

from ui.i18n import t
from ui.nav import tour_links

st.title(t("bleu.title"))

tour_links("bleu")

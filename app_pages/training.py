"""Training: watch a small Transformer learn a toy task live, following the warmup learning-rate schedule."""
import streamlit as st

from ui import training_view as view
from ui.i18n import t
from ui.nav import tour_links
from ui.training_session import session_training

st.title(t("training.title"))
st.markdown(t("training.intro"))

settings = view.settings_form()
session = session_training()
view.controls(session, settings)
view.run_panel(session)
view.results(session)
view.upload_section()

with st.container(border=True):
    st.markdown(f"**{t('training.try.heading')}**")
    st.markdown(t("training.try.items"))

tour_links("training")

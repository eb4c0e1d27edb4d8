"""Training: watch a small Transformer learn a toy task live, following the warmup learning-rate schedule."""
import streamlit as st

from ui.i18n import t
from ui.nav import tour_links
from ui.training import panel
from ui.training.session import session_training


def things_to_try() -> None:
    with st.container(border=True):
        st.markdown(f"**{t('training.try.heading')}**")
        st.markdown(t("training.try.items"))


st.title(t("training.title"))
st.markdown(t("training.intro"))

settings = panel.settings_form()
session = session_training()
panel.controls(session, settings)
panel.suggested_experiments(session)
panel.run_panel(session)
panel.results(session)
panel.upload_section()
things_to_try()

tour_links("training")

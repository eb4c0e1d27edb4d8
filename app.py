"""Transformer Playground: the router. Run with ``streamlit run app.py``.

Page files live in ``app_pages/`` (not ``pages/``: see the README); their order, URL paths and
sections come from ``ui/tour.py``.
"""
from pathlib import Path

import streamlit as st

from ui import prefetch, sidebar, tour, upload_cap, warmup
from ui.i18n import t
from ui.page_css import inject_page_css
from ui.page_errors import one_sentence_on_failure

ICON = Path(__file__).parent / "assets" / "icon.png"  # served by the app itself: a font-server icon needs the internet

sidebar.bind_shared_state()
st.set_page_config(page_title=t("common.app_title"), page_icon=str(ICON), layout="wide")
inject_page_css()  # formulas that wrap or scroll on a phone, views drawn for the width (ui/page_css.py)
current = st.navigation(tour.navigation_sections(), expanded=True)  # every stop of the tour listed, no "View more"
with one_sentence_on_failure(current.url_path):  # the deployed config shows no traceback: see ui/page_errors.py
    sidebar.render(current.url_path)
    current.run()
warmup.start_warmup()
upload_cap.limit_uploads()  # a session holds at most two uploaded files (ui/upload_cap.py)
prefetch.prefetch_page_code()  # the other pages' browser code, loaded while this one is read (ui/prefetch.py)

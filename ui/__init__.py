"""Streamlit-side helpers shared by every page: i18n, URL state, the tour, the sidebar, models."""

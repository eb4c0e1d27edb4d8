"""The paper's numbers beside this model's (explain/paper_card.py), as one table in a closed expander.

A Markdown table, not a data grid: ten rows need no sorting or scrolling, and a grid would make a tab
load the grid's code for them.
"""
from __future__ import annotations

from typing import Any

import streamlit as st

from explain.paper_card import rows
from ui.i18n import t


def paper_card(mine: dict[str, Any], *, caption_key: str, key: str) -> None:
    """The card for the values ``mine`` (:func:`explain.paper_card.ours`), ``caption_key`` under it."""
    with st.expander(t("common.paper_card.heading"), icon=":material/menu_book:", key=key):
        lines = [f"| {t('common.paper_card.setting')} | {t('common.paper_card.paper')} | "
                 f"{t('common.paper_card.this')} | |", "|---|---:|---:|:---:|"]
        for name, paper, this, same in rows(mine):
            lines.append(f"| {t(f'common.paper_card.row.{name}')} | {paper} | {this} | {'=' if same else ''} |")
        st.markdown("\n".join(lines))
        st.caption(t(caption_key))

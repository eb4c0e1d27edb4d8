"""Home: what the playground is for, the architecture (click a block to open its page), the tour, the paper's
numbers beside the sidebar's model, and the three families of Transformer (which of the pages apply to
encoder-only and decoder-only models).

The diagram and the tour are one element (:func:`ui.home_view.map_html`): changing the language
reruns the whole app, and every element is one more message to send.
"""
import streamlit as st

from explain.paper_card import of_checkpoint, of_checkpoint_file
from ui.cache import computed
from ui.code_panel import code_panel
from ui.home_view import family_table, map_html
from ui.i18n import current_lang, t
from ui.models import (
    SHIPPED_TASKS,
    ModelUnavailable,
    checkpoint_path,
    get_model,
    is_session_model,
    selected_model_name,
    shipped_key,
)
from ui.nav import link, linked_html
from ui.paper_card import paper_card
from ui.scaffold import page
from ui.tour import stop
from ui.url_state import markdown_literal


def paper_numbers() -> None:
    """The paper's numbers beside the sidebar's model (until one is picked, the language's default). Home loads no
    model: a shipped one's numbers come from its checkpoint's header (config and training history, checked as a
    full load checks them, ~20 ms once per file), a model of this session's is in memory already."""
    name = selected_model_name()
    if name is None:
        return  # no model at all: the sidebar says so
    try:
        if is_session_model(name):
            mine = computed(of_checkpoint, model=get_model(name))
        else:
            mine = computed(of_checkpoint_file, str(checkpoint_path(name)), shipped_key(name))
    except ModelUnavailable as exc:
        st.warning(t(f"common.model.unavailable_{exc.kind}", name=markdown_literal(name)), icon=":material/warning:")
        return
    if mine is None:
        st.warning(t("common.model.unavailable_broken", name=markdown_literal(name)), icon=":material/warning:")
        return
    caption = ("home.paper_card.caption.session" if is_session_model(name)
               else f"home.paper_card.caption.{name}" if name in SHIPPED_TASKS else "common.paper_card.caption_model")
    paper_card(mine, caption_key=caption, key="home_paper_card")


with page("home", title=t("common.app_title"), model=False):
    lang = current_lang()
    # One element per language: a language switch mounts a fresh one. With a single key, one full test
    # run in a fresh venv saw the tour stay in English after the switch (its links already carried
    # ?lang=zh), i.e. the component kept its old markup; a new key cannot.
    linked_html(map_html(lang), key=f"home_map_{lang}")
    st.info(f"**{t('home.prereq.heading')}**\n\n{t('home.prereq.body')}", icon=":material/school:")
    paper_numbers()  # #31: the paper's N, d_model, h, d_k, d_ff, dropout, ε_ls, warmup and Adam beside this model's
    with st.expander(t("home.families.heading"), icon=":material/account_tree:"):  # #32: beyond this app's model
        st.markdown(t("home.families.body") + "\n\n" + family_table(lang))
        link(stop("masks"), t("home.families.link"), icon=":material/grid_on:", view={"masks_view": "families"})
    code_panel("home", ("forward", "encode", "decode"), paper_rows=("norm", "shared_layer"))

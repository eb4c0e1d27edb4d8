"""What a visitor sees when a page fails: one translated sentence, while the traceback goes to the server's log.

``client.showErrorDetails`` decides. At ``"full"`` (a developer's laptop: ``streamlit run app.py
--client.showErrorDetails=full``) an exception passes through and Streamlit shows it whole. At any
other value (``"none"`` in ``.streamlit/config.toml``, the deployed setting) :func:`one_sentence_on_failure`
logs the traceback and shows ``common.server_error.page_failed`` in an exception box with no type
name and no traceback, so the tests and load clients that look for exception elements still see it.
``st.rerun``/``st.stop`` are not ``Exception`` s and pass through untouched.
"""
from __future__ import annotations

import functools
import logging
from contextlib import contextmanager
from typing import Iterator

import streamlit as st
from streamlit import config
from streamlit.errors import FragmentHandledException

from ui.i18n import t

_log = logging.getLogger(__name__)


class PageFailed(Exception):
    """The one sentence shown in place of a failed page's exception."""

    alternate_name = ""  # Streamlit shows this instead of the class name: no type name at all


def error_details_shown() -> bool:
    """True when ``client.showErrorDetails`` asks for whole tracebacks in the browser ("full")."""
    value = config.get_option("client.showErrorDetails")
    return value == config.ShowErrorDetailsConfigOptions.FULL or \
        config.ShowErrorDetailsConfigOptions.is_true_variation(value)


@contextmanager
def one_sentence_on_failure(where: str) -> Iterator[None]:
    """Run the block; if it raises (and details are hidden), log the traceback and show one sentence."""
    try:
        yield
    except FragmentHandledException:
        raise  # a fragment's failure that Streamlit has already shown (redacted) and logged
    except Exception as exc:
        if error_details_shown():
            raise
        _log.error("page %r failed", where, exc_info=exc)
        st.exception(PageFailed(t("common.server_error.page_failed")))


def fragment(func=None, **options):
    """``st.fragment`` whose reruns fail like a page does: one translated sentence, the traceback in the
    log. (A fragment's own rerun does not pass through ``app.py``.) Use as ``@fragment`` or
    ``@fragment(run_every=...)``."""
    if func is None:
        return lambda f: fragment(f, **options)

    @functools.wraps(func)
    def guarded(*args, **kwargs):
        with one_sentence_on_failure(func.__qualname__):
            return func(*args, **kwargs)

    return st.fragment(guarded, **options)

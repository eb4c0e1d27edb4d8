"""At most a few uploaded files held per session, whatever a client sends.

Streamlit keeps every file a browser uploads in the server's memory, per session, until the widget
lets go of it or the session ends. The page's uploader holds one file; a scripted client can PUT
file after file to the upload URL without ever using them (40 files of 3.7 MB: 165 MB held for the
session's whole life). :func:`limit_uploads` wraps the server's upload manager once per process so
that a session holds at most :data:`MAX_UPLOADS_HELD` files: a newer one lets the oldest go. The
uploader's current file is always the newest, so a visitor never notices.
"""
from __future__ import annotations

from typing import Any

import streamlit as st
from streamlit.runtime import Runtime

MAX_UPLOADS_HELD = 2  # files one session's uploads may hold in memory at once (each at most server.maxUploadSize)


def cap_manager(manager: Any, limit: int = MAX_UPLOADS_HELD) -> None:
    """Make ``manager`` (Streamlit's ``MemoryUploadedFileManager``) keep at most ``limit`` files per session."""
    add_file = manager.add_file

    def add_file_capped(session_id: str, file: Any) -> None:
        add_file(session_id, file)
        with manager._lock:
            held = list(manager.file_storage.get(session_id, {}))
        for file_id in held[:-limit] if len(held) > limit else []:
            manager.remove_file(session_id, file_id)  # the oldest first: dicts keep arrival order

    manager.add_file = add_file_capped


@st.cache_resource(show_spinner=False)
def limit_uploads() -> bool:
    """Cap the running server's uploads, once per process (False outside a server: AppTest, scripts)."""
    if not Runtime.exists():
        return False
    manager = Runtime.instance().uploaded_file_mgr
    if not hasattr(manager, "file_storage") or not hasattr(manager, "remove_file"):
        return False  # another kind of manager: leave it alone
    cap_manager(manager)
    return True

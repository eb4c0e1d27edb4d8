"""A session holds at most two uploaded files in the server's memory, whatever a client PUTs (#33 item 2)."""
from __future__ import annotations

from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager
from streamlit.runtime.uploaded_file_manager import UploadedFileRec

from ui.upload_cap import MAX_UPLOADS_HELD, cap_manager, limit_uploads

MB = 2**20


def held_bytes(manager: MemoryUploadedFileManager) -> int:
    stats = manager.get_stats()
    return sum(s.byte_length for family in stats.values() for s in family)


def test_a_scripted_client_putting_forty_files_holds_two_and_other_sessions_keep_theirs():
    manager = MemoryUploadedFileManager("/_stcore/upload_file")
    cap_manager(manager)
    manager.add_file("teacher", UploadedFileRec("t1", "model.pt", "application/octet-stream", b"t" * MB))
    for n in range(40):
        manager.add_file("script", UploadedFileRec(f"f{n}", f"f{n}.pt", "application/octet-stream", b"x" * (4 * MB)))
    assert MAX_UPLOADS_HELD == 2
    assert [r.file_id for r in manager.get_files("script", [f"f{n}" for n in range(40)])] == ["f38", "f39"]
    assert held_bytes(manager) == 2 * 4 * MB + MB  # 9 MB held, not 161 MB
    assert [r.file_id for r in manager.get_files("teacher", ["t1"])] == ["t1"]
    manager.remove_session_files("script")
    assert held_bytes(manager) == MB


def test_the_running_servers_manager_is_capped_once(monkeypatch):
    from types import SimpleNamespace

    from ui import upload_cap

    manager = MemoryUploadedFileManager("/_stcore/upload_file")
    monkeypatch.setattr(upload_cap.Runtime, "exists", staticmethod(lambda: False))
    limit_uploads.clear()
    assert limit_uploads() is False  # AppTest, scripts: nothing to wrap
    monkeypatch.setattr(upload_cap.Runtime, "exists", staticmethod(lambda: True))
    monkeypatch.setattr(upload_cap.Runtime, "instance", staticmethod(lambda: SimpleNamespace(uploaded_file_mgr=manager)))
    limit_uploads.clear()
    assert limit_uploads() is True and limit_uploads() is True  # once per process
    for n in range(5):
        manager.add_file("s", UploadedFileRec(f"f{n}", "f.pt", "application/octet-stream", b"x"))
    assert [r.file_id for r in manager.get_files("s", [f"f{n}" for n in range(5)])] == ["f3", "f4"]
    limit_uploads.clear()

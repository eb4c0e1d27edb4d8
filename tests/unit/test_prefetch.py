"""ui/prefetch.py: the chunks it loads exist in the pinned Streamlit, and its script is our fixed text."""
from __future__ import annotations

import json
import re

from ui import page_css, prefetch


def test_every_chunk_named_is_in_the_pinned_streamlit():
    files = prefetch.chunk_files()
    found = {re.sub(r"\.[A-Za-z0-9_-]+\.js$", "", name) for name in files}
    assert found == set(prefetch.CHUNKS), set(prefetch.CHUNKS) - found  # a Streamlit upgrade renamed one
    assert files[0].startswith("PlotlyChart.")  # the one every page after Home needs comes first
    assert all((prefetch.static_js_dir() / name).is_file() for name in files)


def test_a_folder_without_them_gives_nothing_to_load(tmp_path):
    (tmp_path / "PlotlyChart.abc_1-2.js").write_text("")
    (tmp_path / "PlotlyChartOld.abc.js").write_text("")  # another name that only starts the same
    (tmp_path / "Slider.x.js.map").write_text("")
    assert prefetch.chunk_files.__wrapped__(tmp_path) == ("PlotlyChart.abc_1-2.js",)
    assert prefetch.chunk_files.__wrapped__(tmp_path / "missing") == ()


def test_the_script_lists_the_files_and_waits_for_a_quiet_page():
    text = prefetch.script()
    listed = json.loads(re.search(r"const files = (\[.*?\]);", text).group(1))
    assert listed == list(prefetch.chunk_files())
    assert "window.__tpPrefetch" in text and "saveData" in text and "requestIdleCallback" in text
    assert f"< {prefetch.QUIET_MS}" in text and "%(" not in text  # every placeholder filled


def test_its_container_takes_no_room():
    assert f".st-key-{prefetch.CONTAINER_KEY} {{ display: none; }}" in page_css.PAGE_CSS

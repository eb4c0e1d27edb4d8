"""The heads switched off on the attention page, as a URL value."""
from __future__ import annotations

from explain.attention import all_heads
from ui.head_set import HeadSetParam
from ui.url_state import read


def test_head_set_param_reads_good_links_and_refuses_bad_ones():
    param = HeadSetParam("attention_off", default=[], choices=tuple(all_heads(2, 2)))
    assert read(param, {"attention_off": "enc-1-2,cross-2-1"}) == (["enc-1-2", "cross-2-1"], None)
    assert read(param, {"attention_off": ""}) == ([], None)
    for bad in ("enc-3-1", "enc-1-2,enc-1-2", "dec-1", "<script>"):
        assert read(param, {"attention_off": bad}) == ([], bad)
    assert param.format(["dec-1-1", "enc-2-2"]) == "dec-1-1,enc-2-2"
    assert param.accepts(["dec-1-1"]) and not param.accepts(["dec-9-1"]) and not param.accepts("dec-1-1")

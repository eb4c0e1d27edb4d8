"""The set of heads switched off on the attention page, as a URL value (``?attention_off=enc-1-2,cross-2-1``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ui.url_state import BadValue, Param


@dataclass(frozen=True)
class HeadSetParam(Param[list]):
    """Head codes (``explain.attention.HeadId.code``), comma-separated; empty = none.

    The value is a list (what ``st.multiselect`` holds) of distinct members of ``choices``.
    """

    choices: tuple[str, ...] = ()

    def parse(self, text: str) -> list:
        codes = [code for code in text.strip().split(",") if code] if text.strip() else []
        if len(set(codes)) != len(codes) or any(code not in self.choices for code in codes):
            raise BadValue(text)
        return codes

    def format(self, value: list) -> str:
        return ",".join(value)

    def accepts(self, value: Any) -> bool:
        return (isinstance(value, list) and len(set(value)) == len(value)
                and all(code in self.choices for code in value))

"""Mirror the widgets that define a view in the URL, so a teacher can paste a link to that view.

A *param* says how one query-string value is named, parsed, checked and written back;
:func:`bind` connects it to a widget's session-state key::

    import streamlit as st
    from ui.i18n import t
    from ui.url_state import IntParam, ChoiceParam, bind

    HEADS = IntParam("attention_heads", default=4, lo=1, hi=8)
    LAYER = ChoiceParam("attention_layer", default="enc", choices=("enc", "dec", "cross"))

    heads = st.slider(t("attention.heads"), 1, 8, key=bind(HEADS, key="attention.heads"))
    layer = st.radio(t("attention.layer"), LAYER.choices, key=bind(LAYER, key="attention.layer"),
                     format_func=lambda c: t(f"attention.layer_{c}"))

Rules for page authors:

* Call :func:`bind` right before the widget, every run, and give the widget ``key=`` what it
  returns. Do **not** pass ``value=`` / ``index=`` to that widget: its value comes from session
  state (Streamlit warns when both are given).
* Query-string names are unique across the app: ``<page key>_<name>`` (``lang``, ``model``,
  ``batch`` and ``sent`` are shared by every page); session keys are ``<page key>.<name>``.
* Changes to the widget reach the URL on the rerun the change causes; nothing else to do.

What :func:`bind` does, once per run:

1. Decides the value. A value in the URL that differs from what this session last wrote there
   wins (a pasted link, or ``st.page_link(..., query_params=...)``); otherwise the widget's own
   state; otherwise the last value this session chose on this page (kept across page switches,
   since Streamlit forgets the state of widgets that are not on screen); otherwise the default.
2. Puts that value in ``st.session_state[key]`` before the widget is created.
3. Writes its text form back to ``st.query_params[name]``, so the address bar always shows the
   view.

A value whose default moves (the model's example sentence, the task's answer, the most focused
head, the language's model) is bound with ``bind(param, key=..., follows="<choice>")`` and
``param.default`` set to the current default: it shows that default until the visitor picks a
value (types, clicks, or :func:`pick` from a callback) or opens a link that names one. A text box
also remembers a paste it cut to ``max_len`` (:func:`box_cut`). Everything :func:`bind` keeps lives in
one record per session key; nothing else needs a "last value" or "previous default" key.

A page's URL names are ``<page key>_<name>`` (``ui/tour.py``); a link shared before a page was
renamed still works: :func:`bind` reads a value under its old name (``?ff_view=``) and writes it
under the new one (``?feed_forward_view=``).

A malformed or out-of-range value never raises: the widget keeps its value (the default on a
fresh visit) and a toast in the current language says which value was ignored and what is
shown instead. Parsing and formatting are pure functions
(``param.parse(text)``, ``param.format(value)``) and can be unit-tested without Streamlit.
"""
from __future__ import annotations

import math
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Generic, Iterator, Sequence, TypeVar

T = TypeVar("T")

_MEMO_KEY = "_url_state"  # a _Memo: the values this session chose, the URL text it wrote
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$])")
# Bidi embeddings, overrides, isolates and marks: in a notice they would reorder the sentence around them.
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


class BadValue(ValueError):
    """A query-string value that a param cannot accept."""


@dataclass(frozen=True)
class Param(Generic[T]):
    """One query-string value: its ``name`` in the URL and the ``default`` used when absent or bad."""

    name: str
    default: T

    def parse(self, text: str) -> T:
        """The value written as ``text`` in the URL; raises :class:`BadValue` if it is not allowed."""
        raise NotImplementedError

    def format(self, value: T) -> str:
        """The text that :meth:`parse` reads back as ``value``."""
        return str(value)

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` (e.g. a widget's state) is a legal value of this param."""
        try:
            return self.parse(self.format(value)) == value
        except (BadValue, TypeError, ValueError):
            return False


@dataclass(frozen=True)
class IntParam(Param[int]):
    """An integer in ``[lo, hi]``, e.g. ``IntParam("layer", default=0, lo=0, hi=5)``; with ``step``,
    only ``lo + k * step`` (a slider's grid: an even ``d_model`` is ``lo=2, step=2``)."""

    lo: int = 0
    hi: int = 100
    step: int = 1

    def parse(self, text: str) -> int:
        try:
            value = int(text.strip(), 10)
        except ValueError:
            raise BadValue(text) from None
        if not self.accepts(value):
            raise BadValue(text)
        return value

    def accepts(self, value: Any) -> bool:
        return (isinstance(value, int) and not isinstance(value, bool) and self.lo <= value <= self.hi
                and (value - self.lo) % self.step == 0)


@dataclass(frozen=True)
class FloatParam(Param[float]):
    """A finite float in ``[lo, hi]``; with ``step``, snapped to ``lo + k * step`` (slider grids)."""

    lo: float = 0.0
    hi: float = 1.0
    step: float | None = None

    def parse(self, text: str) -> float:
        try:
            value = float(text.strip())
        except ValueError:
            raise BadValue(text) from None
        if not math.isfinite(value) or not self.lo <= value <= self.hi:
            raise BadValue(text)
        if self.step:
            value = round(self.lo + round((value - self.lo) / self.step) * self.step, 10)
            value = min(max(value, self.lo), self.hi)
        return value

    def format(self, value: float) -> str:
        return repr(float(value))

    def accepts(self, value: Any) -> bool:
        return (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and math.isfinite(value)
            and self.lo <= value <= self.hi
        )


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


@dataclass(frozen=True)
class BoolParam(Param[bool]):
    """``true``/``false`` (also ``1``/``0``, ``yes``/``no``, ``on``/``off``)."""

    def parse(self, text: str) -> bool:
        word = text.strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
        raise BadValue(text)

    def format(self, value: bool) -> str:
        return "true" if value else "false"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, bool)


@dataclass(frozen=True)
class ChoiceParam(Param[str]):
    """One of ``choices`` (exact, case-sensitive strings), e.g. a task or a layer name."""

    choices: Sequence[str] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        object.__setattr__(self, "choices", tuple(self.choices))
        if self.default not in self.choices:
            raise ValueError(f"default {self.default!r} of {self.name!r} is not one of {self.choices!r}")

    def parse(self, text: str) -> str:
        if text not in self.choices:
            raise BadValue(text)
        return text

    def accepts(self, value: Any) -> bool:
        return value in self.choices


@dataclass(frozen=True)
class TextParam(Param[str]):
    """Free text of at most ``max_len`` characters, without control characters (``\\n``, ``\\t`` allowed)."""

    max_len: int = 200

    def parse(self, text: str) -> str:
        if len(text) > self.max_len or _CONTROL.search(text):
            raise BadValue(text)
        return text

    def accepts(self, value: Any) -> bool:
        return isinstance(value, str) and len(value) <= self.max_len and not _CONTROL.search(value)

    def clean(self, value: Any) -> Any:
        """Typed or pasted text made acceptable: control characters (a vertical tab or NUL from a
        word processor) become spaces and the text is cut to ``max_len``. Other values as they are."""
        if not isinstance(value, str):
            return value
        return _CONTROL.sub(" ", value)[: self.max_len]


def read(param: Param[T], query: dict[str, str] | None = None) -> tuple[T, str | None]:
    """``(value, rejected_text)`` for ``param`` from ``query`` (default: ``st.query_params``).

    ``rejected_text`` is None when the URL had no value or a good one; otherwise it is the text
    that was ignored in favour of the default. Pure when ``query`` is given.
    """
    if query is None:
        import streamlit as st

        query = st.query_params
    raw = query.get(param.name)
    if raw is None:
        return param.default, None
    try:
        return param.parse(raw), None
    except BadValue:
        return param.default, raw


def markdown_literal(text: str, limit: int = 40) -> str:
    """``text`` shortened to ``limit`` characters and escaped so Markdown shows it verbatim.

    Control and bidi characters are dropped and line breaks become spaces: the text stays inside
    the sentence it is put in (a line break could start a heading, a bidi override reverse the rest).
    """
    short = text if len(text) <= limit else text[: limit - 1] + "…"
    return _MD_SPECIAL.sub(r"\\\1", _BIDI.sub("", _CONTROL.sub("", short)).replace("\n", " "))


def notify_bad_value(param: Param[T], rejected: str, used: T) -> None:
    """A toast, in the current language, saying that ``rejected`` was ignored and ``used`` shown."""
    import streamlit as st

    from ui.i18n import t

    st.toast(
        t(
            "common.url_bad_value",
            name=markdown_literal(param.name),
            value=markdown_literal(rejected),
            used=markdown_literal(param.format(used)) or "∅",
        ),
        icon=":material/link_off:",
        duration="long",
    )


@dataclass
class _Bound:
    """What :func:`bind` keeps of one widget across runs."""

    value: Any = None  # the value settled last (survives page switches, when Streamlit forgets the widget)
    default: Any = None  # a moving default: the one it followed last run (``follows``)
    cut: tuple[int, str] | None = None  # a paste longer than the box: (its length, the text kept)


@dataclass
class _Memo:
    """What :func:`bind` keeps in a session, under one session-state key (one lookup per call)."""

    bound: dict[str, _Bound] = field(default_factory=dict)  # {session key: its record}
    written: dict[str, str] = field(default_factory=dict)  # {query name: text this session last wrote}
    picked: set[str] = field(default_factory=set)  # choices (``follows`` names) the visitor or a link made
    page: str | None = None  # the page whose body is running (:func:`page_scope`), None outside it
    # {page key: {session key: (query name, ``follows`` name or None)}}: what each page has bound (:func:`forget_page`)
    owned: dict[str, dict[str, tuple[str, str | None]]] = field(default_factory=dict)


_MISSING = object()


def _memo() -> _Memo:
    import streamlit as st

    memo = st.session_state.get(_MEMO_KEY)
    if not isinstance(memo, _Memo):
        memo = st.session_state[_MEMO_KEY] = _Memo()
    return memo


def pick(*choices: str) -> None:
    """The visitor made the choice(s) named ``choices`` (a click, a button): their moving defaults no
    longer move them. Use as a widget's ``on_change=pick, args=(name,)``."""
    _memo().picked.update(choices)


def is_picked(choice: str) -> bool:
    return choice in _memo().picked


def bind(param: Param[T], *, key: str | None = None, follows: str | None = None) -> str:
    """Tie ``param`` to the session-state ``key`` of a widget; return the key to pass as ``key=``.

    See the module docstring for the precedence of URL, widget state, the page's last value and
    the default. Never raises on user input: a bad URL value is ignored (the widget keeps its
    value, the default on a fresh visit) and a toast says so. Text longer than a
    :class:`TextParam`'s ``max_len`` is cut to it (:func:`box_cut` then says by how much).

    ``follows``: ``param.default`` moves (the model's example, the model's answer, the most focused
    head, the language's model), and ``follows`` names the visitor's choice this value belongs to.
    Until that choice is made the widget shows the current default; it is made by a value other
    than the default the widget showed (typed or set by a callback), by :func:`pick`, or, for a
    value other than text, by a link that names one. Typed text that equals the default follows it
    again. A followed value other than text is written to the widget on every run, so the widget's
    own state (e.g. a select box's label in the language it was drawn in) never decides it.
    """
    import streamlit as st

    key = key or f"url.{param.name}"
    state = st.session_state
    memo = _memo()
    if memo.page is not None:
        memo.owned.setdefault(memo.page, {})[key] = (param.name, follows)
    record = memo.bound.setdefault(key, _Bound())
    is_text = isinstance(param, TextParam)
    raw = st.query_params.get(param.name)
    in_url = raw is not None
    if raw is None:
        raw = _read_old_name(param.name)
    current = state.get(key, _MISSING)

    url_is_new = raw is not None and raw != memo.written.get(param.name)
    from_url, rejected = read(param, {param.name: raw}) if url_is_new else (None, None)
    if current is not _MISSING and is_text and not param.accepts(current):
        if isinstance(current, str) and len(current) > param.max_len:
            record.cut = (len(current), param.clean(current))
        current = state[key] = param.clean(current)  # what the visitor typed, minus control characters
    following = False
    if follows is not None:
        previous = current if current is not _MISSING else record.value
        changed = (record.default is not None and param.accepts(previous) and previous != record.default)
        if url_is_new and rejected is None and not is_text:
            memo.picked.add(follows)  # a link named it
        elif changed and not is_text:
            memo.picked.add(follows)
        following = follows not in memo.picked and not changed and not (url_is_new and rejected is None)
        record.default = param.default
    if url_is_new and rejected is None:
        value = from_url
    elif following:
        value = param.default
    elif current is not _MISSING and param.accepts(current):
        value = current
    elif record.value is not None and param.accepts(record.value):
        value = record.value
    else:
        value = param.default

    if current is _MISSING or current != value or (follows is not None and not is_text):
        state[key] = value
    record.value = value
    text = param.format(value)
    if raw != text or not in_url:
        st.query_params[param.name] = text
    memo.written[param.name] = text
    if url_is_new and rejected is not None:
        notify_bad_value(param, rejected, value)
    return key


@contextmanager
def page_scope(page: str) -> Iterator[None]:
    """While the body of page ``page`` runs: every :func:`bind` is remembered as that page's (for
    :func:`forget_page`). The language and the model, bound before any page runs, belong to no page."""
    memo = _memo()
    memo.page = page
    try:
        yield
    finally:
        memo.page = None


def forget_page(page: str) -> None:
    """Put page ``page`` back to its defaults (call from a callback: the next run draws it fresh).

    Every value the page has bound (its own, and the shared sentence box and picker it draws) leaves
    session state, the URL and :func:`bind`'s memory, and a moving default it follows is followed
    again. Language and model stay, and so does any other page's view."""
    import streamlit as st

    memo = _memo()
    for key, (name, follows) in memo.owned.pop(page, {}).items():
        st.session_state.pop(key, None)
        memo.bound.pop(key, None)
        memo.written.pop(name, None)
        if follows is not None:
            memo.picked.discard(follows)
        if name in st.query_params:
            del st.query_params[name]


def box_cut(key: str, text: str | None) -> int | None:
    """The length of the paste that the text box ``key`` cut to its ``max_len``, while the box still
    holds the cut text (None otherwise)."""
    record = _memo().bound.get(key)
    if record is None or record.cut is None:
        return None
    count, kept = record.cut
    if kept != text:  # the visitor has changed the text since
        record.cut = None
        return None
    return count


def _read_old_name(name: str) -> str | None:
    """The value a link shared before a page was renamed gives under an old name of ``name``
    (``?ff_view=`` for ``feed_forward_view``, :data:`ui.tour.OLD_PREFIXES`); the old name leaves the URL."""
    import streamlit as st

    from ui.tour import old_names

    for old in old_names(name):
        raw = st.query_params.get(old)
        if raw is not None:
            del st.query_params[old]
            return raw
    return None


def clamp_state(key: str, hi: int) -> None:
    """Keep a bound index inside a range that just shrank (fewer sentences, layers, steps or pairs):
    call before the widget, so :func:`bind` keeps the nearest valid value instead of the default.

    A value that is not an index is dropped, so that :func:`bind` falls back on the last good one.
    (After a language switch a select box can hand back the label it showed, e.g. "3：hi!", which its
    translated options no longer contain.) A value in range is written back too: a widget whose range
    changed is a new widget to Streamlit, which would otherwise open it on its default (the pair slider
    went back to 0 when d_model grew)."""
    import streamlit as st

    if key not in st.session_state:
        return
    value = st.session_state[key]
    if not isinstance(value, int) or isinstance(value, bool):
        del st.session_state[key]
    else:
        st.session_state[key] = min(value, hi)


def current_query(*names: str) -> dict[str, str]:
    """The present URL values of ``names`` (those that are set), e.g. to carry into a page link."""
    import streamlit as st

    present = st.query_params.to_dict()
    return {name: present[name] for name in names if name in present}

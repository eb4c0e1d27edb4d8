"""Synthetic, seeded, unlimited toy tasks for the encoder-decoder Transformer.

Every task turns a source string into a target string:

* ``copy``    -- the target is the source.
* ``reverse`` -- the target is the source backwards.
* ``sort``    -- the target is the source's characters sorted by Unicode code
  point (Python's ``sorted``), repeats kept.
* ``dates``   -- the source is a date written the way people write it
  ("22 nov 2026", "Sunday 22 November 2026", "22/11/2026", "2026年11月22日"...),
  the target is ISO ``YYYY-MM-DD``. All-numeric ``dd/mm/yyyy`` and
  ``dd.mm.yyyy`` are read day first.
* ``en-zh`` / ``zh-en`` -- translate a sentence of :mod:`model.translation`'s
  grammar between English (a word per token) and Chinese (a character per token).

Pairs come from a caller-supplied ``random.Random``: the same seed gives the
same pairs. The character tasks' source and target share one alphabet
(``Task.alphabet``) and so one :class:`~model.tokenizer.CharTokenizer`; the
translation tasks have a tokenizer per side (``Task.source_tokenizer()`` /
``Task.target_tokenizer()``).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from model import translation
from model.bpe_tokenizer import BpeTokenizer
from model.tokenizer import CharTokenizer, Tokenizer

DEFAULT_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789 .,!?'-:;"
DEFAULT_MIN_LEN = 1
DEFAULT_MAX_LEN = 32

Pair = tuple[str, str]


class UnknownTaskError(KeyError, ValueError):
    """Raised for a task name that is not in :data:`TASKS`."""

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class Task:
    """A toy task: how to sample (source, target) pairs and how to answer a source.

    ``max_src_len`` / ``max_tgt_len`` bound the generated strings in tokens of
    their side's tokenizer (characters, or words for English), without
    ``<bos>``/``<eos>``. ``alphabet`` holds every character that can appear in a
    generated source or target. ``source_tok`` / ``target_tok`` are the
    tokenizers of a task whose sides are not one ``CharTokenizer(alphabet)``.
    """

    name: str
    alphabet: str
    description: dict[str, str] = field(hash=False)
    example: str
    max_src_len: int
    max_tgt_len: int
    min_src_len: int
    generate: Callable[[random.Random], Pair] = field(repr=False, compare=False)
    solve: Callable[[str], str | None] = field(repr=False, compare=False)
    source_tok: Tokenizer | None = field(default=None, repr=False, compare=False)
    target_tok: Tokenizer | None = field(default=None, repr=False, compare=False)

    def source_tokenizer(self) -> Tokenizer:
        """The tokenizer of the source side."""
        return self.source_tok if self.source_tok is not None else CharTokenizer(self.alphabet)

    def target_tokenizer(self) -> Tokenizer:
        """The tokenizer of the target side (the source's for the character tasks)."""
        return self.target_tok if self.target_tok is not None else CharTokenizer(self.alphabet)

    def sample_pairs(self, rng: random.Random, n: int) -> list[Pair]:
        """Draw ``n`` fresh (source, target) pairs using ``rng``."""
        if not isinstance(rng, random.Random):
            raise TypeError(
                f"rng must be a random.Random instance (e.g. random.Random(0)), got {type(rng).__name__}."
            )
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"The number of pairs must be a non-negative integer, got {n!r}.")
        return [self.generate(rng) for _ in range(n)]

    def target_for(self, source: str) -> str | None:
        """The correct target for a (user-typed) source, or None if there is none.

        Always a string for copy/reverse/sort; for dates, None when ``source`` is
        not a valid date in one of the generator's formats (case and extra
        spaces are ignored), or when a written weekday contradicts the date.
        """
        if not isinstance(source, str):
            return None
        return self.solve(source)


# --------------------------------------------------------------------------
# copy / reverse / sort
# --------------------------------------------------------------------------
_SEQUENCE_TASKS: dict[str, tuple[Callable[[str], str], dict[str, str]]] = {
    "copy": (
        lambda s: s,
        {
            "en": "Repeat the input exactly as written. It is the simplest check that "
            "attention can find the right source position.",
            "zh": "把输入原样复制输出。这是检验注意力能否找到正确源位置的最简单任务。",
        },
    ),
    "reverse": (
        lambda s: s[::-1],
        {
            "en": "Write the input backwards, last character first.",
            "zh": "把输入倒过来写，最后一个字符排在最前面。",
        },
    ),
    "sort": (
        lambda s: "".join(sorted(s)),
        {
            "en": "Output the input's characters in ascending Unicode code-point order "
            "(space first, digits before letters), keeping repeated characters.",
            "zh": "按 Unicode 码位从小到大输出输入中的字符（空格最先，数字排在字母前），重复的字符都保留。",
        },
    ),
}

_DEFAULT_EXAMPLE = "hello world"


def _sequence_task(name: str, min_len: int, max_len: int, alphabet: str) -> Task:
    fn, description = _SEQUENCE_TASKS[name]
    chars = alphabet

    def generate(rng: random.Random) -> Pair:
        length = rng.randint(min_len, max_len)
        src = "".join(rng.choice(chars) for _ in range(length))
        return src, fn(src)

    if min_len <= len(_DEFAULT_EXAMPLE) <= max_len and set(_DEFAULT_EXAMPLE) <= set(alphabet):
        example = _DEFAULT_EXAMPLE
    else:  # a fixed, in-distribution example for custom configurations
        length = min(max(len(_DEFAULT_EXAMPLE), min_len), max_len)
        ex_rng = random.Random(0)
        example = "".join(ex_rng.choice(chars) for _ in range(length))

    return Task(
        name=name,
        alphabet=alphabet,
        description=dict(description),
        example=example,
        max_src_len=max_len,
        max_tgt_len=max_len,
        min_src_len=min_len,
        generate=generate,
        solve=fn,
    )


# --------------------------------------------------------------------------
# dates
# --------------------------------------------------------------------------
MONTHS = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
DATE_MIN = _dt.date(1900, 1, 1)
DATE_MAX = _dt.date(2099, 12, 31)

# Generator formats. Fields: d/m = day/month unpadded, dd/mm = maybe zero-padded
# (chosen at random), DD/MM = always padded, y = 4-digit year, mon = 3-letter
# month, month = full month name, wd = full weekday name.
_WORD_FORMATS = (
    "{d} {mon} {y}",              # 22 nov 2026
    "{d} {month} {y}",            # 22 november 2026
    "{month} {d}, {y}",           # november 22, 2026
    "{mon} {d} {y}",              # nov 22 2026
    "{mon} {d}, {y}",             # nov 22, 2026
    "{wd} {d} {month} {y}",       # sunday 22 november 2026
    "{wd}, {month} {d}, {y}",     # sunday, november 22, 2026
)
_NUMERIC_FORMATS = (
    "{dd}/{mm}/{y}",              # 22/11/2026 (day first)
    "{y}/{mm}/{dd}",              # 2026/11/22
    "{dd}.{mm}.{y}",              # 22.11.2026 (day first)
    "{y}年{m}月{d}日",             # 2026年11月22日
    "{y}-{MM}-{DD}",              # 2026-11-22 (identity)
)
DATE_FORMATS = _WORD_FORMATS + _NUMERIC_FORMATS
_CASES: tuple[Callable[[str], str], ...] = (str.lower, str.title, str.upper)


def _dates_alphabet() -> str:
    words = "".join(MONTHS + WEEKDAYS)
    chars = set(words) | set(words.upper()) | set("0123456789 ,/.-年月日")
    return "".join(sorted(chars))


DATES_ALPHABET = _dates_alphabet()


def _format_width(fmt: str, widest: bool) -> int:
    num = "00" if widest else "0"
    pick = max if widest else min
    return len(
        fmt.format(
            d=num, m=num, dd=num, mm=num, DD="00", MM="00", y="0000", mon="xxx",
            month="x" * pick(map(len, MONTHS)), wd="x" * pick(map(len, WEEKDAYS)),
        )
    )


# Widest: "wednesday, september 22, 2026" (29); narrowest: "1/1/1900" (8).
DATES_MAX_SRC_LEN = max(_format_width(f, widest=True) for f in DATE_FORMATS)
DATES_MIN_SRC_LEN = min(_format_width(f, widest=False) for f in DATE_FORMATS)


def format_date(date: _dt.date, fmt: str, rng: random.Random | None = None) -> str:
    """Write ``date`` in format ``fmt`` (one of :data:`DATE_FORMATS`), lower case.

    ``rng`` decides the optional zero padding of ``{dd}``/``{mm}`` (padded when None).
    """
    pad_d = rng.random() < 0.5 if rng is not None else True
    pad_m = rng.random() < 0.5 if rng is not None else True
    return fmt.format(
        d=date.day,
        m=date.month,
        dd=f"{date.day:02d}" if pad_d else str(date.day),
        mm=f"{date.month:02d}" if pad_m else str(date.month),
        DD=f"{date.day:02d}",
        MM=f"{date.month:02d}",
        y=f"{date.year:04d}",
        mon=MONTHS[date.month - 1][:3],
        month=MONTHS[date.month - 1],
        wd=WEEKDAYS[date.weekday()],
    )


def _generate_date(rng: random.Random) -> Pair:
    ordinal = rng.randint(DATE_MIN.toordinal(), DATE_MAX.toordinal())
    date = _dt.date.fromordinal(ordinal)
    fmt = rng.choice(DATE_FORMATS)
    src = format_date(date, fmt, rng)
    if fmt in _WORD_FORMATS:
        src = rng.choice(_CASES)(src)
    return src, date.isoformat()


_MONTH_NUMBER = {**{m: i for i, m in enumerate(MONTHS, 1)}, **{m[:3]: i for i, m in enumerate(MONTHS, 1)}}
_MONTH_RE = "|".join(sorted(_MONTH_NUMBER, key=len, reverse=True))
_WEEKDAY_RE = "|".join(WEEKDAYS)
_WORD_DATE = re.compile(
    rf"^(?:(?P<wd>{_WEEKDAY_RE}),? )?"
    rf"(?:(?P<d1>\d{{1,2}}) (?P<m1>{_MONTH_RE})|(?P<m2>{_MONTH_RE}) (?P<d2>\d{{1,2}}),?) "
    rf"(?P<y>\d{{4}})$"
)
_NUMERIC_DATES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^(\d{1,2})/(\d{1,2})/(\d{4})$"), "dmy"),
    (re.compile(r"^(\d{4})/(\d{1,2})/(\d{1,2})$"), "ymd"),
    (re.compile(r"^(\d{1,2})\.(\d{1,2})\.(\d{4})$"), "dmy"),
    (re.compile(r"^(\d{4})年(\d{1,2})月(\d{1,2})日$"), "ymd"),
    (re.compile(r"^(\d{4})-(\d{2})-(\d{2})$"), "ymd"),
)


def parse_date(text: str) -> _dt.date | None:
    """Read a date written in one of the generator's formats; None if impossible.

    Case and repeated/surrounding spaces are ignored. A weekday that does not
    match the date gives None.
    """
    s = " ".join(text.split()).lower()
    try:
        for pattern, order in _NUMERIC_DATES:
            m = pattern.match(s)
            if m:
                a, b, c = (int(g) for g in m.groups())
                return _dt.date(c, b, a) if order == "dmy" else _dt.date(a, b, c)
        m = _WORD_DATE.match(s)
        if not m:
            return None
        day = int(m["d1"] or m["d2"])
        month = _MONTH_NUMBER[m["m1"] or m["m2"]]
        date = _dt.date(int(m["y"]), month, day)
    except ValueError:  # e.g. 31 February or year 0
        return None
    if m["wd"] is not None and WEEKDAYS[date.weekday()] != m["wd"]:
        return None
    return date


def _solve_date(source: str) -> str | None:
    date = parse_date(source)
    return None if date is None else date.isoformat()


def _dates_task() -> Task:
    return Task(
        name="dates",
        alphabet=DATES_ALPHABET,
        description={
            "en": "Rewrite a date written in everyday form, such as '22 nov 2026', "
            "'November 22, 2026' or '2026年11月22日', as ISO 'YYYY-MM-DD'. "
            "All-numeric dates like 22/11/2026 and 22.11.2026 are read day first.",
            "zh": "把日常写法的日期（如“22 nov 2026”“November 22, 2026”或“2026年11月22日”）"
            "改写成 ISO 格式 YYYY-MM-DD。22/11/2026、22.11.2026 这类纯数字日期按“日在前”理解。",
        },
        example="22 nov 2026",
        max_src_len=DATES_MAX_SRC_LEN,
        max_tgt_len=10,
        min_src_len=DATES_MIN_SRC_LEN,
        generate=_generate_date,
        solve=_solve_date,
    )


# --------------------------------------------------------------------------
# translation
# --------------------------------------------------------------------------
_TRANSLATION_DESCRIPTIONS = {
    "en-zh": {
        "en": "Translate a short English sentence into Chinese. The sentences come from a small grammar "
        "(a few hundred words): Chinese puts the time after the subject and the place before the verb, so "
        "the words are reordered, and in '... because it was too tired / too wide' the Chinese has to say "
        "what 'it' is.",
        "zh": "把一个简短的英文句子翻译成中文。句子来自一个小语法（几百个词）：中文把时间放在主语后面、"
        "地点放在动词前面，所以词序要调换；在“……because it was too tired / too wide”这类句子里，"
        "中文必须说出“it”指的是什么。",
    },
    "zh-en": {
        "en": "Translate a short Chinese sentence into English (the same grammar as en-zh, the other way). "
        "English puts the place and the time at the end of the sentence.",
        "zh": "把一个简短的中文句子翻译成英文（与 en-zh 同一个语法，方向相反）。英文把地点和时间放在句末。",
    },
}


def _translation_task(name: str) -> Task:
    english, chinese = translation.english_tokenizer(), translation.chinese_tokenizer()
    en_len, zh_len = translation.MAX_ENGLISH_WORDS, translation.MAX_CHINESE_CHARS
    alphabet = "".join(dict.fromkeys("".join(translation.ENGLISH_WORDS) + " " + translation.CHINESE_CHARACTERS))
    common = dict(name=name, alphabet=alphabet, description=dict(_TRANSLATION_DESCRIPTIONS[name]))
    if name == "en-zh":
        return Task(**common, example="the cat ate two apples in the garden yesterday .", max_src_len=en_len,
                    max_tgt_len=zh_len, min_src_len=1, generate=translation.sample_en_zh,
                    solve=translation.english_to_chinese, source_tok=english, target_tok=chinese)
    return Task(**common, example="猫昨天在花园里吃了两个苹果。", max_src_len=zh_len, max_tgt_len=en_len,
                min_src_len=1, generate=translation.sample_zh_en, solve=translation.chinese_to_english,
                source_tok=chinese, target_tok=english)


TRANSLATION_TASKS: tuple[str, ...] = ("en-zh", "zh-en")

# --------------------------------------------------------------------------
# registry
# --------------------------------------------------------------------------
TASK_NAMES: tuple[str, ...] = ("copy", "reverse", "sort", "dates", *TRANSLATION_TASKS)


def _unknown(name: object) -> UnknownTaskError:
    return UnknownTaskError(
        f"Unknown task {name!r}; the valid task names are: {', '.join(TASK_NAMES)}."
    )


def _check_len(label: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{label} must be a whole number, got {value!r}.")
    if value < 1:
        raise ValueError(f"{label} must be at least 1, got {value}.")
    return value


def make_task(
    name: str,
    min_len: int | None = None,
    max_len: int | None = None,
    alphabet: str | None = None,
) -> Task:
    """Build a task, optionally configured.

    For copy/reverse/sort, source lengths are drawn uniformly from
    ``[min_len, max_len]`` (defaults 1..32) and characters uniformly from
    ``alphabet`` (default: lowercase letters, digits, space and ``.,!?'-:;``;
    duplicates dropped). The classic Annotated-Transformer copy task is
    ``make_task("copy", min_len=10, max_len=10, alphabet="123456789")``.
    The dates and translation tasks have fixed formats and accept no options.
    """
    if name not in TASK_NAMES:
        raise _unknown(name)
    if name in TRANSLATION_TASKS:
        if min_len is not None or max_len is not None or alphabet is not None:
            raise ValueError(
                f"The {name} task has a fixed grammar; min_len, max_len and alphabet cannot be changed."
            )
        return _translation_task(name)
    if name == "dates":
        if min_len is not None or max_len is not None or alphabet is not None:
            raise ValueError(
                "The dates task has fixed formats; min_len, max_len and alphabet cannot be changed."
            )
        return _dates_task()
    lo = _check_len("min_len", DEFAULT_MIN_LEN if min_len is None else min_len)
    hi = _check_len("max_len", DEFAULT_MAX_LEN if max_len is None else max_len)
    if lo > hi:
        raise ValueError(f"min_len ({lo}) must not be larger than max_len ({hi}).")
    if alphabet is None:
        alphabet = DEFAULT_ALPHABET
    if not isinstance(alphabet, str) or not alphabet:
        raise ValueError(f"The alphabet must be a non-empty string of characters, got {alphabet!r}.")
    return _sequence_task(name, lo, hi, "".join(dict.fromkeys(alphabet)))


TASKS: dict[str, Task] = {n: make_task(n) for n in TASK_NAMES}


def get_task(name: str) -> Task:
    """Return the default-configured task ``name`` or raise :class:`UnknownTaskError`."""
    try:
        return TASKS[name]
    except (KeyError, TypeError):
        raise _unknown(name) from None


# --------------------------------------------------------------------------
# translation in BPE pieces
# --------------------------------------------------------------------------
BPE_MERGES = 200  # merges each side learns (en: 28 characters + 200 pieces; zh: 256 + 200, under the 512 cap)
BPE_CORPUS_PAIRS = 2000  # the training pairs the merges are learnt from


def _piece_bound(tokenizer: Tokenizer, bound: int, pieces: BpeTokenizer) -> int:
    """Pieces in the longest sentence of a side that has at most ``bound`` tokens of ``tokenizer``: BPE cuts
    each word alone, so a sentence of words has at most ``bound`` times its longest word's pieces; a run of
    characters has at most one piece per character, plus a lone ``▁`` in front."""
    if tokenizer.unit != "word":
        return bound + 1
    return bound * max(len(pieces.encode(word)) for word in tokenizer.known_units)


@functools.lru_cache(maxsize=16)
def bpe_task(name: str, seed: int, merges: int = BPE_MERGES) -> Task:
    """Translation task ``name`` read in BPE pieces on both sides (:class:`~model.bpe_tokenizer.BpeTokenizer`).

    Each side's merges are learnt from that side of the first :data:`BPE_CORPUS_PAIRS` training pairs a run
    with ``seed`` draws (``random.Random(seed)``, the run's own data stream), so the same seed gives the same
    merges; its alphabet is every character the side's words or characters are made of, so no sentence of the
    grammar has an ``<unk>``. ``max_src_len`` / ``max_tgt_len`` bound the sentences in pieces.
    """
    if name not in TRANSLATION_TASKS:
        raise ValueError(f"BPE pieces are for the translation tasks ({', '.join(TRANSLATION_TASKS)}), not {name!r}.")
    task = get_task(name)
    pairs = task.sample_pairs(random.Random(seed), BPE_CORPUS_PAIRS)
    sides = []
    for side, bound in ((0, task.max_src_len), (1, task.max_tgt_len)):
        words = task.source_tokenizer() if side == 0 else task.target_tokenizer()
        pieces = BpeTokenizer.learn([pair[side] for pair in pairs], merges, "".join(words.known_units))
        sides.append((pieces, _piece_bound(words, bound, pieces)))
    (source, src_len), (target, tgt_len) = sides
    return dataclasses.replace(task, source_tok=source, target_tok=target, max_src_len=src_len, max_tgt_len=tgt_len)


# --------------------------------------------------------------------------
# batches and metrics
# --------------------------------------------------------------------------
@dataclass
class Batch:
    """A padded training batch (``PAD_ID`` fills the tails).

    * ``src``: ``(B, S)`` source ids, no ``<bos>``/``<eos>``.
    * ``tgt_in``: ``(B, T)`` decoder input, ``<bos>`` + target.
    * ``tgt_out``: ``(B, T)`` decoder labels, target + ``<eos>`` (``tgt_in`` shifted left).
    * ``src_lengths`` / ``tgt_lengths``: ``(B,)`` real lengths of ``src`` / ``tgt_in``.
    * ``pairs``: the raw (source, target) strings.
    """

    src: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor
    pairs: list[Pair]
    src_lengths: torch.Tensor
    tgt_lengths: torch.Tensor


def batch_from_pairs(pairs: Sequence[Pair], tokenizer: Tokenizer,
                     target_tokenizer: Tokenizer | None = None) -> Batch:
    """Tokenize and pad ``B`` (source, target) pairs into a :class:`Batch`.

    The sources go through ``tokenizer``; the targets through ``target_tokenizer`` (default: the same one).
    """
    pairs = [(str(s), str(t)) for s, t in pairs]
    if not pairs:
        raise ValueError("A batch needs at least one (source, target) pair; got none.")
    target_tokenizer = tokenizer if target_tokenizer is None else target_tokenizer
    sources = [s for s, _ in pairs]
    targets = [t for _, t in pairs]
    src, src_lengths = tokenizer.encode_batch(sources)
    tgt_in, tgt_lengths = target_tokenizer.encode_batch(targets, add_bos=True)
    tgt_out, _ = target_tokenizer.encode_batch(targets, add_eos=True)
    return Batch(src, tgt_in, tgt_out, pairs, src_lengths, tgt_lengths)


def make_batch(task: Task, tokenizer: Tokenizer, n: int, rng: random.Random,
               target_tokenizer: Tokenizer | None = None) -> Batch:
    """Sample ``n`` pairs of ``task`` with ``rng`` and return them as a :class:`Batch`."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"The batch size must be a positive integer, got {n!r}.")
    return batch_from_pairs(task.sample_pairs(rng, n), tokenizer, target_tokenizer)


def exact_match(predictions: Sequence[str], targets: Sequence[str]) -> float:
    """Fraction of predictions exactly equal to their target (0.0 .. 1.0)."""
    if len(predictions) != len(targets):
        raise ValueError(
            f"exact_match needs as many predictions as targets, got {len(predictions)} and {len(targets)}."
        )
    if len(targets) == 0:
        raise ValueError("exact_match needs at least one prediction; the lists are empty.")
    return sum(p == t for p, t in zip(predictions, targets)) / len(targets)

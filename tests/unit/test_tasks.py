"""Tests for the synthetic toy tasks (model/tasks.py)."""

from __future__ import annotations

import datetime as dt
import random
import re

import pytest
import torch

from model.tasks import (
    DATE_FORMATS,
    TASKS,
    Batch,
    Task,
    UnknownTaskError,
    batch_from_pairs,
    exact_match,
    format_date,
    get_task,
    make_batch,
    make_task,
)
from model.tokenizer import BOS_ID, EOS_ID, PAD_ID, UNK_ID, CharTokenizer

N = 300
MONTHS = ["january", "february", "march", "april", "may", "june", "july",
          "august", "september", "october", "november", "december"]
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]


def _pairs(name: str, seed: int = 0, n: int = N) -> list[tuple[str, str]]:
    return get_task(name).sample_pairs(random.Random(seed), n)


def test_registry_and_fields() -> None:
    assert set(TASKS) == {"copy", "reverse", "sort", "dates", "en-zh", "zh-en"}
    for name, task in TASKS.items():
        assert isinstance(task, Task) and task.name == name
        assert set(task.description) == {"en", "zh"}
        assert task.description["en"] and re.search(r"[\u4e00-\u9fff]", task.description["zh"])
        assert set(task.example) <= set(task.alphabet)
        assert task.min_src_len <= len(task.source_tokenizer().encode(task.example)) <= task.max_src_len
        assert task.target_for(task.example) is not None
    assert TASKS["copy"].example == "hello world"
    assert TASKS["dates"].example == "22 nov 2026"
    assert TASKS["copy"].max_src_len >= 32


@pytest.mark.parametrize("name", sorted(TASKS))
def test_pairs_within_alphabet_and_bounds(name: str) -> None:
    task = get_task(name)
    alphabet = set(task.alphabet)
    for src, tgt in _pairs(name):
        assert set(src) <= alphabet, src
        assert set(tgt) <= alphabet, tgt
        # lengths in tokens: characters, or words for the English side of a translation task
        assert task.min_src_len <= len(task.source_tokenizer().encode(src)) <= task.max_src_len
        assert 1 <= len(task.target_tokenizer().encode(tgt)) <= task.max_tgt_len
        assert task.target_for(src) == tgt


@pytest.mark.parametrize(
    "name, fn",
    [("copy", lambda s: s), ("reverse", lambda s: s[::-1]), ("sort", lambda s: "".join(sorted(s)))],
)
def test_sequence_targets(name: str, fn) -> None:
    lengths = set()
    for src, tgt in _pairs(name):
        assert tgt == fn(src)
        lengths.add(len(src))
    assert min(lengths) <= 3 and max(lengths) >= 30  # the whole 1..32 range is used


def test_sort_is_by_code_point_and_keeps_repeats() -> None:
    sort = get_task("sort")
    assert sort.target_for("b a1!a") == " !1aab"
    assert sort.target_for("hello world") == " dehllloorw"
    for src, tgt in _pairs("sort"):
        assert list(tgt) == sorted(tgt) and sorted(src) == sorted(tgt)


def test_target_for_arbitrary_text() -> None:
    assert get_task("reverse").target_for("héllo 😀") == "😀 olléh"
    assert get_task("copy").target_for("") == ""


def _check_date_pair(src: str, tgt: str) -> dt.date:
    date = dt.date.fromisoformat(tgt)
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", tgt)
    assert 1900 <= date.year <= 2099
    low = src.lower()
    if re.search(r"[a-z]", low):
        first = low.split()[0].rstrip(",")
        if first in WEEKDAYS:
            assert first == WEEKDAYS[date.weekday()]
        # month names and the day and year appear as written
        assert MONTHS[date.month - 1][:3] in low
        assert str(date.year) in low and str(date.day) in re.findall(r"\d+", low)
    elif "年" in src:
        assert src == f"{date.year}年{date.month}月{date.day}日"
    else:
        fields = re.split(r"[/.\-]", src)
        nums = [int(x) for x in fields]
        if len(fields[0]) == 4:
            assert nums == [date.year, date.month, date.day]
        else:  # day first
            assert nums == [date.day, date.month, date.year]
    return date


def test_dates_targets_are_real_dates() -> None:
    cases = set()
    weekday_seen = 0
    for src, tgt in _pairs("dates", n=600):
        _check_date_pair(src, tgt)
        if src.strip()[0].isalpha():
            cases.add("upper" if src.isupper() else "lower" if src.islower() else "title")
        if src.lower().split()[0].rstrip(",") in WEEKDAYS:
            weekday_seen += 1
    assert cases == {"upper", "lower", "title"}
    assert weekday_seen > 20


def test_dates_cover_every_format() -> None:
    shapes = {
        "d mon y": r"\d{1,2} [a-z]{3} \d{4}",
        "d month y": r"\d{1,2} [a-z]{4,} \d{4}",
        "month d, y": r"[a-z]+ \d{1,2}, \d{4}",
        "mon d y": r"[a-z]{3} \d{1,2} \d{4}",
        "dd/mm/y": r"\d{1,2}/\d{1,2}/\d{4}",
        "y/mm/dd": r"\d{4}/\d{1,2}/\d{1,2}",
        "dd.mm.y": r"\d{1,2}\.\d{1,2}\.\d{4}",
        "wd d month y": r"[a-z]+day \d{1,2} [a-z]+ \d{4}",
        "wd, month d, y": r"[a-z]+day, [a-z]+ \d{1,2}, \d{4}",
        "cjk": r"\d{4}年\d{1,2}月\d{1,2}日",
        "iso": r"\d{4}-\d{2}-\d{2}",
    }
    seen = set()
    for src, _ in _pairs("dates", seed=1, n=800):
        for key, pat in shapes.items():
            if re.fullmatch(pat, src.lower()):
                seen.add(key)
    assert seen == set(shapes)


@pytest.mark.parametrize(
    "src, iso",
    [
        ("22 nov 2026", "2026-11-22"),
        ("22 November 2026", "2026-11-22"),
        ("November 22, 2026", "2026-11-22"),
        ("nov 22 2026", "2026-11-22"),
        ("22/11/2026", "2026-11-22"),
        ("2026/11/22", "2026-11-22"),
        ("22.11.2026", "2026-11-22"),
        ("Sunday 22 November 2026", "2026-11-22"),
        ("sunday, november 22, 2026", "2026-11-22"),
        ("SUNDAY 22 NOVEMBER 2026", "2026-11-22"),
        ("2026年11月22日", "2026-11-22"),
        ("2026-11-22", "2026-11-22"),
        ("  3 Feb   1999 ", "1999-02-03"),
        ("03/02/1999", "1999-02-03"),  # day first
        ("1/1/1900", "1900-01-01"),
    ],
)
def test_dates_target_for(src: str, iso: str) -> None:
    assert get_task("dates").target_for(src) == iso


@pytest.mark.parametrize(
    "src",
    ["", "hello", "31 feb 2026", "Monday 22 November 2026", "2026-13-01", "22 nov", "30/02/2000", "tomorrow"],
)
def test_dates_target_for_none(src: str) -> None:
    assert get_task("dates").target_for(src) is None


def test_format_date_weekday_and_longest() -> None:
    d = dt.date(2026, 11, 22)
    assert d.weekday() == 6
    out = {format_date(d, f) for f in DATE_FORMATS}
    assert "sunday 22 november 2026" in out and "2026年11月22日" in out and "22/11/2026" in out
    longest = format_date(dt.date(2026, 9, 30), "{wd}, {month} {d}, {y}")
    assert longest == "wednesday, september 30, 2026"
    assert len(longest) == get_task("dates").max_src_len


@pytest.mark.parametrize("name", sorted(TASKS))
def test_seeded_reproducibility(name: str) -> None:
    assert _pairs(name, seed=7, n=50) == _pairs(name, seed=7, n=50)
    assert _pairs(name, seed=7, n=50) != _pairs(name, seed=8, n=50)


def test_classic_copy_configuration() -> None:
    task = make_task("copy", min_len=10, max_len=10, alphabet="123456789")
    assert task.alphabet == "123456789"
    assert task.max_src_len == task.max_tgt_len == 10
    assert len(task.example) == 10 and set(task.example) <= set("123456789")
    pairs = task.sample_pairs(random.Random(0), 200)
    assert all(len(s) == 10 and s == t and set(s) <= set("123456789") for s, t in pairs)
    assert len({c for s, _ in pairs for c in s}) == 9
    tok = CharTokenizer(task.alphabet)
    assert tok.vocab_size == 13


def test_make_task_custom_lengths() -> None:
    task = make_task("reverse", min_len=3, max_len=5, alphabet="abba")
    assert task.alphabet == "ab"
    assert {len(s) for s, _ in task.sample_pairs(random.Random(0), 100)} == {3, 4, 5}


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"min_len": 5, "max_len": 4}, "must not be larger"),
        ({"min_len": 0}, "at least 1"),
        ({"max_len": -3}, "at least 1"),
        ({"min_len": 2.5}, "whole number"),
        ({"alphabet": ""}, "non-empty"),
        ({"min_len": 40}, "must not be larger"),
    ],
)
def test_make_task_validation(kwargs: dict, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        make_task("copy", **kwargs)


def test_make_task_dates_rejects_options() -> None:
    with pytest.raises(ValueError, match="fixed formats"):
        make_task("dates", max_len=5)
    assert make_task("dates") == get_task("dates")


def test_get_task_unknown() -> None:
    with pytest.raises(UnknownTaskError) as info:
        get_task("translate")
    err = info.value
    assert isinstance(err, ValueError) and isinstance(err, KeyError)
    msg = str(err)
    assert "'translate'" in msg
    for name in ("copy", "reverse", "sort", "dates"):
        assert name in msg
    with pytest.raises(UnknownTaskError):
        make_task("nope")


def test_sample_pairs_arguments() -> None:
    task = get_task("copy")
    assert task.sample_pairs(random.Random(0), 0) == []
    with pytest.raises(ValueError):
        task.sample_pairs(random.Random(0), -1)
    with pytest.raises(TypeError, match="random.Random"):
        task.sample_pairs(0, 3)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(TASKS))
def test_make_batch_layout(name: str) -> None:
    task = get_task(name)
    tok = CharTokenizer(task.alphabet)
    batch = make_batch(task, tok, 16, random.Random(3))
    assert isinstance(batch, Batch) and len(batch.pairs) == 16
    B, S = batch.src.shape
    assert B == 16 and batch.tgt_in.shape == batch.tgt_out.shape and batch.tgt_in.shape[0] == 16
    for t in (batch.src, batch.tgt_in, batch.tgt_out):
        assert t.dtype == torch.long
    assert S == max(len(s) for s, _ in batch.pairs)
    assert batch.tgt_in.shape[1] == max(len(t) for _, t in batch.pairs) + 1
    assert (batch.tgt_in[:, 0] == BOS_ID).all()
    assert not (batch.src == UNK_ID).any() and not (batch.tgt_in == UNK_ID).any()
    for i, (src, tgt) in enumerate(batch.pairs):
        assert tok.decode(batch.src[i]) == src
        assert batch.tgt_in[i, : len(tgt) + 1].tolist() == [BOS_ID, *tok.encode(tgt)]
        assert batch.tgt_out[i, : len(tgt) + 1].tolist() == [*tok.encode(tgt), EOS_ID]
        assert (batch.tgt_out[i, len(tgt) + 1 :] == PAD_ID).all()
        assert (batch.src[i, len(src) :] == PAD_ID).all()
        assert batch.src_lengths[i] == len(src) and batch.tgt_lengths[i] == len(tgt) + 1
    # tgt_out is tgt_in shifted left by one on the real tokens
    assert torch.equal(batch.tgt_in[:, 1:][batch.tgt_out[:, :-1] != EOS_ID],
                       batch.tgt_out[:, :-1][batch.tgt_out[:, :-1] != EOS_ID])


def test_make_batch_seeded_and_from_pairs() -> None:
    task = get_task("reverse")
    tok = CharTokenizer(task.alphabet)
    a = make_batch(task, tok, 8, random.Random(5))
    b = make_batch(task, tok, 8, random.Random(5))
    assert a.pairs == b.pairs and torch.equal(a.src, b.src) and torch.equal(a.tgt_out, b.tgt_out)
    c = batch_from_pairs([("ab", "ba"), ("abc", "cba")], tok)
    assert c.src.shape == (2, 3) and c.tgt_in.shape == (2, 4)
    with pytest.raises(ValueError, match="at least one"):
        batch_from_pairs([], tok)
    with pytest.raises(ValueError):
        make_batch(task, tok, 0, random.Random(0))


def test_exact_match() -> None:
    assert exact_match(["a", "b", "c", "d"], ["a", "x", "c", "y"]) == 0.5
    assert exact_match(["2026-11-22"], ["2026-11-22"]) == 1.0
    with pytest.raises(ValueError, match="empty"):
        exact_match([], [])
    with pytest.raises(ValueError, match="as many"):
        exact_match(["a"], ["a", "b"])

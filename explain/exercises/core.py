"""Exercises: what a learner writes, the inputs it is called on, and how its answers are checked.

An :class:`Exercise` names the function the learner defines, the project's reference for it (a key
of :data:`explain.code.SNIPPETS` or a small function of :mod:`explain.exercises.reference`), a
starter (the signature and a TODO, commented in the visitor's language), seeded :class:`Case` s
with the edge cases that catch real bugs, and planted :class:`Bug` s (classic wrong versions).

Nothing here runs learner code. The flow is::

    calls(exercise)              -> [(function_name, args, kwargs), ...]   # one per case, same order
    (the sandbox runs the learner's source on them, in another process, and answers per call)
    LearnerOutput(value, error)  <- one per call, filled from the sandbox's result
    check(exercise, outputs)     -> Report                                  # per case and overall hint

Arguments cross as plain data: a ``np.ndarray`` is a tensor the function receives as a torch tensor
(:func:`to_torch_args` converts, same dtype: float32, int64 or bool); an ``int`` / ``float`` / ``None``
/ ``list[str]`` (tokens) goes as it is. A result crosses back through :func:`to_numpy`: a tensor or a
Python number becomes an array, a tuple of them a tuple of arrays.

Only trusted code (the references, the planted bugs, the starters, all written here) is ever run
in this process, by :func:`run_trusted`.
"""
from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
CATALOG = "exercises"  # the i18n namespace of every text here
PAGES = ("attention", "masks", "positional_encoding", "layer_norm", "feed_forward", "output_and_loss",
         "training", "bleu", "paper_vs_code")
MAX_ERROR_CHARS = 300  # an error message shown to the learner is cut here


# ------------------------------------------------------------------ what crosses to the sandbox and back

Arg = Any  # np.ndarray | int | float | bool | None | list[str]


def to_torch(value: Arg) -> Any:
    """One argument as the learner's function receives it: an array becomes a tensor (a copy)."""
    return torch.from_numpy(np.array(value, copy=True)) if isinstance(value, np.ndarray) else value


def to_torch_args(args: Sequence[Arg], kwargs: Mapping[str, Arg] | None = None) -> tuple[tuple, dict]:
    """:func:`to_torch` over a call's positional and keyword arguments."""
    return tuple(to_torch(a) for a in args), {k: to_torch(v) for k, v in (kwargs or {}).items()}


def to_numpy(result: Any) -> Any:
    """A function's result as plain data: a tensor or number -> np.ndarray, a tuple/list of them -> a
    tuple of arrays, None -> None; anything else is returned as it is (and fails the check as 'not an
    array')."""
    if result is None:
        return None
    if isinstance(result, (tuple, list)) and not all(isinstance(x, str) for x in result):
        return tuple(to_numpy(x) for x in result)
    if isinstance(result, torch.Tensor):
        return result.detach().cpu().numpy()
    if isinstance(result, (bool, int, float, np.number, np.bool_, np.ndarray)):
        return np.asarray(result)
    return result


@dataclass(frozen=True)
class LearnerOutput:
    """What one call of the learner's function gave, as the sandbox hands it back.

    ``value``: the result through :func:`to_numpy` (an array, a tuple of arrays, or None when it
    returned nothing). ``error``: a one-line message when it did not return ("ValueError: ...",
    no traceback, no paths), with ``kind``: "exception" (it raised), "timeout" (CPU time ran out),
    "memory" (the memory limit), or another word of the sandbox's ("killed", "output"...).
    """

    value: Any = None
    error: str | None = None
    kind: str = "exception"


def _copy(value: Arg) -> Arg:
    if isinstance(value, np.ndarray):
        return np.array(value, copy=True)
    return list(value) if isinstance(value, list) else value


@dataclass(frozen=True)
class Case:
    """One call: its arguments as plain data and what it tests (``label``: exercises.case.<label>)."""

    label: str
    args: tuple[Arg, ...]
    kwargs: tuple[tuple[str, Arg], ...] = ()

    def args_numpy(self) -> tuple[tuple[Arg, ...], dict[str, Arg]]:
        """(args, kwargs) as they cross to the sandbox (copies)."""
        return tuple(_copy(a) for a in self.args), {k: _copy(v) for k, v in self.kwargs}

    def args_torch(self) -> tuple[tuple, dict]:
        """(args, kwargs) as the function receives them (arrays -> tensors)."""
        return to_torch_args(*self.args_numpy())


@dataclass(frozen=True)
class Bug:
    """A classic wrong version: its source (trusted, ours) and the hint that names the mistake
    (exercises.<exercise>.bug.<key>; exercises.<exercise>.bug_name.<key> is its short name)."""

    key: str
    source: str


@dataclass(frozen=True)
class Exercise:
    """One function the learner writes.

    ``reference``: a key of :data:`explain.code.SNIPPETS` or the dotted path of a function (e.g.
    ``explain.exercises.reference.layer_norm``). ``outputs``: the names of what it returns (a
    function returning several values returns a tuple in this order; extra values are ignored).
    ``starter_template``: the starter's code, where a line ``#> name`` becomes the catalog's text
    exercises.<key>.starter.<name>, commented, at that line's indentation. ``probe``: for a function whose
    answer is not an array (``clones`` returns modules), a trusted ``"module:function"`` called as
    ``probe(learner_function, *args)`` wherever the function is checked (here, in the sandbox as its
    ``entry``, in the offline test file), which turns the answer into arrays.
    """

    key: str
    page: str
    function: str
    reference: str
    outputs: tuple[str, ...]
    starter_template: str
    make_cases: Callable[[], list[Case]]
    bugs: tuple[Bug, ...] = ()
    atol: float = 1e-5
    rtol: float = 1e-4
    probe: str | None = None

    def cases(self) -> list[Case]:
        """The calls the check makes, built once (seeded: the same inputs every time)."""
        return list(_cases(self))

    def text_key(self, part: str) -> str:
        """The i18n key of one of its texts: "title", "task", "hint", "bug.<bug>", "bug_name.<bug>"."""
        return f"{CATALOG}.{self.key}.{part}"

    def starter(self, lang: str) -> str:
        """The code the editor starts with: the signature, what to return, a TODO, in ``lang``."""
        lines = []
        for line in self.starter_template.strip("\n").split("\n"):
            stripped = line.strip()
            if stripped.startswith("#> "):
                indent = line[:len(line) - len(line.lstrip())]
                text = catalog_text(f"{CATALOG}.{self.key}.starter.{stripped[3:]}", lang)
                lines += [f"{indent}# {part}".rstrip() for part in text.split("\n")]
            else:
                lines.append(line)
        return "\n".join(lines) + "\n"

    def bug(self, key: str) -> Bug:
        return next(b for b in self.bugs if b.key == key)


@functools.cache
def _cases(exercise: Exercise) -> tuple[Case, ...]:
    return tuple(exercise.make_cases())


def calls(exercise: Exercise) -> list[tuple[str, tuple[Arg, ...], dict[str, Arg]]]:
    """What the sandbox runs, one (function_name, args, kwargs) per case, in the cases' order."""
    return [(exercise.function, *case.args_numpy()) for case in exercise.cases()]


# ------------------------------------------------------------------ texts (read here: explain imports no ui)

@functools.cache
def _catalog(lang: str) -> dict[str, str]:
    flat: dict[str, str] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}.{k}", v)
        else:
            flat[prefix] = value

    walk(CATALOG, json.loads((ROOT / "assets" / "i18n" / lang / f"{CATALOG}.json").read_text(encoding="utf-8")))
    return flat


def catalog_text(key: str, lang: str, **fmt: Any) -> str:
    """The text of an ``exercises.*`` key in ``lang`` (the UI may use ui.i18n.t instead: same catalogs)."""
    text = _catalog(lang)[key]
    return text.format(**fmt) if fmt else text


@dataclass(frozen=True)
class Hint:
    """A sentence for the learner: an i18n key and its format arguments (plain strings and numbers)."""

    key: str
    params: tuple[tuple[str, Any], ...] = ()

    def text(self, lang: str) -> str:
        return catalog_text(self.key, lang, **dict(self.params))


def _hint(sentence: str, /, **params: Any) -> Hint:
    return Hint(f"{CATALOG}.hint.{sentence}", tuple(params.items()))


# ------------------------------------------------------------------ running trusted code here

def reference_function(exercise: Exercise) -> Callable:
    """The reference the check trusts, looked up now (so it is the code that runs in the model)."""
    from explain.code import SNIPPETS, find
    return find(SNIPPETS[exercise.reference].path if exercise.reference in SNIPPETS else exercise.reference)


def reference_source(exercise: Exercise) -> str:
    """The reference as a learner would paste it: its imports, a blank line, the function."""
    from explain.code import SNIPPETS, source_of
    source = source_of(SNIPPETS[exercise.reference].path if exercise.reference in SNIPPETS else exercise.reference)
    return f"{source.imports}\n\n\n{source.text}\n"


def probe_function(exercise: Exercise) -> Callable | None:
    """The exercise's trusted probe (see :class:`Exercise`), or None."""
    if exercise.probe is None:
        return None
    import importlib
    module, _, name = exercise.probe.partition(":")
    return getattr(importlib.import_module(module), name)


def _probed(exercise: Exercise, function: Callable) -> Callable:
    probe = probe_function(exercise)
    return function if probe is None else functools.partial(probe, function)


def _call(function: Callable, case: Case) -> LearnerOutput:
    args, kwargs = case.args_torch()
    try:
        return LearnerOutput(to_numpy(function(*args, **kwargs)))
    except Exception as exc:  # noqa: BLE001 - an error is an answer here
        return LearnerOutput(None, f"{type(exc).__name__}: {exc}")


@functools.cache
def trusted_sources(exercise: Exercise) -> frozenset[str]:
    """Every source this project wrote for ``exercise``: its reference, its planted bugs, its starter in each
    language of the catalog. Nothing else is ever executed in this process."""
    langs = sorted(p.name for p in (ROOT / "assets" / "i18n").iterdir() if (p / f"{CATALOG}.json").is_file())
    return frozenset((reference_source(exercise), *(bug.source for bug in exercise.bugs),
                      *(exercise.starter(lang) for lang in langs)))


def run_function(function: Callable, exercise: Exercise) -> list[LearnerOutput]:
    """Call ``function`` (an object of this process, never text) on every case of ``exercise``."""
    return [_call(_probed(exercise, function), case) for case in exercise.cases()]


def run_trusted(source: str, exercise: Exercise) -> list[LearnerOutput]:
    """Exec ``source`` here and call its function on every case. ``source`` must be one of
    :func:`trusted_sources` (ValueError otherwise): learner code goes to the sandbox."""
    if source not in trusted_sources(exercise):
        raise ValueError(f"Only the reference, planted bugs and starters of {exercise.key!r} run in this process; "
                         "other code goes to the sandbox.")
    namespace: dict[str, Any] = {"__name__": f"exercise_{exercise.key}"}
    from explain.code import PARSE_LOCK
    with PARSE_LOCK:  # CPython 3.11's compiler is not safe for two threads at once (explain.code.source_of)
        code = compile(source, f"<{exercise.key}>", "exec")
    exec(code, namespace)  # noqa: S102 - one of trusted_sources, checked above
    return run_function(namespace[exercise.function], exercise)


@functools.cache
def expected(exercise: Exercise) -> tuple[tuple[np.ndarray, ...], ...]:
    """The reference's outputs per case (only the named outputs)."""
    out = []
    for case, value in zip(exercise.cases(), run_function(reference_function(exercise), exercise)):
        if value.error:
            raise RuntimeError(f"the reference of {exercise.key} fails on case {case.label}: {value.error}")
        out.append(_as_outputs(value.value, len(exercise.outputs)))
    return tuple(out)


@functools.cache
def bug_outputs(exercise: Exercise, key: str) -> tuple[LearnerOutput, ...]:
    return tuple(run_trusted(exercise.bug(key).source, exercise))


# ------------------------------------------------------------------ the check

@dataclass(frozen=True)
class CaseResult:
    """One case checked. ``problem``: "ok", "not_implemented", "error", "timeout", "memory", "count",
    "not_array", "shape", "dtype", "nan" or "values". ``output``: the name of the output that differs
    most; ``where``: the index of its largest |difference|; ``diff``: |learner − reference| of that
    output as a 2-D array for a heatmap (the slice through ``where`` when it has more dims; None for
    a scalar or when the values cannot be compared); ``diff_slice``: the leading indices of that slice."""

    case: Case
    passed: bool
    problem: str
    hint: Hint
    output: str | None = None
    max_diff: float | None = None
    where: tuple[int, ...] | None = None
    diff: np.ndarray | None = field(default=None, compare=False)
    diff_slice: tuple[int, ...] = ()


@dataclass(frozen=True)
class Report:
    """All cases of one check. ``hint``: the one sentence to show first: "all passed", the planted
    bug the answers match (``bug``), or the first failing case's problem (a value mismatch no bug
    explains gets the exercise's own generic hint)."""

    exercise: str
    cases: tuple[CaseResult, ...]
    hint: Hint
    bug: str | None = None

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.cases)

    @property
    def n_passed(self) -> int:
        return sum(c.passed for c in self.cases)


def _as_outputs(value: Any, n: int) -> tuple[Any, ...] | None:
    """The first ``n`` outputs of a result, or None when it has fewer."""
    if isinstance(value, (tuple, list)):
        return tuple(value[:n]) if len(value) >= n else None
    return (value,) if n == 1 else None


def _kind(dtype: np.dtype) -> str:
    return "bool" if dtype.kind == "b" else "float" if dtype.kind in "fc" else "int" if dtype.kind in "iu" else "other"


def _short(error: str) -> str:
    line = error.strip().splitlines()[-1] if error.strip() else error
    return line if len(line) <= MAX_ERROR_CHARS else line[:MAX_ERROR_CHARS - 1] + "…"


def _diff_2d(diff: np.ndarray, where: tuple[int, ...]) -> tuple[np.ndarray | None, tuple[int, ...]]:
    if diff.ndim == 0:
        return None, ()
    if diff.ndim == 1:
        return diff[None, :], ()
    lead = where[:diff.ndim - 2]
    return diff[lead], tuple(lead)


def _check_case(exercise: Exercise, case: Case, got: LearnerOutput, want: tuple[np.ndarray, ...]) -> CaseResult:
    if got.error is not None:
        if "NotImplementedError" in got.error:
            return CaseResult(case, False, "not_implemented", _hint("not_implemented"))
        if got.kind in ("timeout", "memory"):
            return CaseResult(case, False, got.kind, _hint(got.kind))
        return CaseResult(case, False, "error", _hint("error", error=_short(got.error)))
    if got.value is None:
        return CaseResult(case, False, "not_implemented", _hint("returned_none"))
    values = _as_outputs(got.value, len(want))
    if values is None:
        got_n = len(got.value) if isinstance(got.value, (tuple, list)) else 1
        return CaseResult(case, False, "count", _hint("count", expected=len(want), got=got_n,
                                                      names=", ".join(exercise.outputs)))
    compared: list[CaseResult] = []  # one per output, when every output has the right form
    for name, value, ref in zip(exercise.outputs, values, want):
        arr = value if isinstance(value, np.ndarray) else None
        if arr is None or _kind(arr.dtype) == "other":
            return CaseResult(case, False, "not_array", _hint("not_array", name=name, type=type(value).__name__),
                              output=name)
        if ref.shape == () and arr.size == 1:
            arr = arr.reshape(())
        if arr.shape != ref.shape:
            return CaseResult(case, False, "shape", _hint("shape", name=name, expected=str(tuple(ref.shape)),
                                                          got=str(tuple(arr.shape))), output=name)
        want_kind, got_kind = _kind(ref.dtype), _kind(arr.dtype)
        if want_kind != got_kind and not (want_kind == "float" and got_kind == "int"):
            return CaseResult(case, False, "dtype", _hint("dtype", name=name, expected=want_kind,
                                                          got=str(arr.dtype)), output=name)
        a, r = arr.astype(np.float64), ref.astype(np.float64)
        diff = np.abs(a - r)
        bad = np.isnan(diff) | (diff > exercise.atol + exercise.rtol * np.abs(r))
        nan = bool(np.isnan(a).any())
        if nan:
            where = tuple(int(i) for i in np.argwhere(np.isnan(a))[0])
            max_diff = math.nan
        else:
            where = tuple(int(i) for i in np.unravel_index(int(np.argmax(diff)), diff.shape)) if diff.size else ()
            max_diff = float(diff.max()) if diff.size else 0.0
        heat, lead = _diff_2d(diff, where)
        ok = not bad.any()
        problem = "ok" if ok else "nan" if nan else "values"
        hint = _hint("passed") if ok else _hint("nan", name=name) if nan else \
            _hint("values", name=name, max_diff=max_diff, where=str(list(where)))
        compared.append(CaseResult(case, ok, problem, hint, name, max_diff, where, heat, lead))
    # the output to show: one with NaN first, then the one that differs most
    return max(compared, key=lambda r: (not r.passed, r.problem == "nan", 0.0 if r.problem == "nan" else r.max_diff))


def _same(a: LearnerOutput, b: LearnerOutput, n: int) -> bool:
    """Whether two answers to one call agree: both raised the same error, or the same values (NaN = NaN)."""
    if a.error is not None or b.error is not None:
        return a.error is not None and b.error is not None and _short(b.error) in a.error
    va, vb = _as_outputs(a.value, n), _as_outputs(b.value, n)
    if va is None or vb is None:
        return False
    for x, y in zip(va, vb):
        if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray)) or x.shape != y.shape:
            return False
        if _kind(x.dtype) == "other" or _kind(x.dtype) != _kind(y.dtype):
            return False
        if not np.allclose(x.astype(np.float64), y.astype(np.float64), rtol=1e-4, atol=1e-5, equal_nan=True):
            return False
    return True


def matching_bug(exercise: Exercise, outputs: Sequence[LearnerOutput]) -> str | None:
    """The planted bug whose answers agree with ``outputs`` on every case, if any."""
    for bug in exercise.bugs:
        theirs = bug_outputs(exercise, bug.key)
        if all(_same(got, their, len(exercise.outputs)) for got, their in zip(outputs, theirs)):
            return bug.key
    return None


def check(exercise: Exercise, outputs: Sequence[LearnerOutput]) -> Report:
    """The learner's answers (one :class:`LearnerOutput` per call of :func:`calls`, same order; a call
    the sandbox never reached gets one with its error) against the reference's, computed here on the
    same inputs."""
    cases = exercise.cases()
    if len(outputs) != len(cases):
        raise ValueError(f"{exercise.key} has {len(cases)} cases, got {len(outputs)} outputs.")
    results = tuple(_check_case(exercise, case, got, want)
                    for case, got, want in zip(cases, outputs, expected(exercise)))
    failed = [r for r in results if not r.passed]
    if not failed:
        return Report(exercise.key, results, _hint("all_passed", n=len(results)))
    if all(r.problem == "not_implemented" for r in failed):
        return Report(exercise.key, results, failed[0].hint)
    bug = matching_bug(exercise, outputs)
    if bug is not None:
        return Report(exercise.key, results, Hint(f"{CATALOG}.{exercise.key}.bug.{bug}"), bug)
    first = failed[0]
    if first.problem == "values":
        return Report(exercise.key, results, Hint(f"{CATALOG}.{exercise.key}.hint"))
    return Report(exercise.key, results, first.hint)

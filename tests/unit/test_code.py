"""explain.code: the code panel shows the source of the objects that run, its copy runs on its own, and every
intermediate a snippet names is in the trace of a forward of every model, with the shape the panel prints."""
from __future__ import annotations

import ast
import importlib
import inspect
import itertools
import math
import string
import sys
import textwrap
import types
from collections import Counter
from pathlib import Path

import pytest
import torch
from torch import nn

import explain.code as code
import model.masks
from explain.code import ROOT, SNIPPETS, Snippet, find, forward_trace, fully_masked_row, live_steps, source_of
from model.attention import masked_softmax
from model.checkpoint import available_pretrained, load_checkpoint, pretrained_path
from model.config import FFN_KINDS, NORM_KINDS, POSITION_KINDS, TransformerConfig, swiglu_hidden
from model.trace import Trace
from model.transformer import Transformer

pytestmark = pytest.mark.usefixtures("one_torch_thread")

THIS_FILE = Path(__file__).resolve().relative_to(ROOT).as_posix()


def steps_of(snippet: Snippet):
    return [(snippet.key, step) for step in snippet.steps]


ALL_STEPS = [pair for snippet in SNIPPETS.values() for pair in steps_of(snippet)]


def step_id(pair) -> str:
    return f"{pair[0]}.{pair[1].key}"


# ------------------------------------------------------------------ the source is the running object's


@pytest.mark.parametrize("key", list(SNIPPETS))
def test_source_of_is_what_inspect_gives(key):
    """Every SNIPPETS path names an object; source_of gives its file (the file of the module the path starts with),
    qualified name, first line and dedented lines exactly as inspect reads them from that object."""
    snippet = SNIPPETS[key]
    obj = inspect.unwrap(find(snippet.path))
    lines, first = inspect.getsourcelines(obj)
    src = source_of(snippet.path)
    module = inspect.getmodule(obj)
    assert snippet.path.startswith(module.__name__ + ".")
    assert src.file == Path(module.__file__).resolve().relative_to(ROOT).as_posix()
    assert src.file == Path(inspect.getsourcefile(obj)).resolve().relative_to(ROOT).as_posix()
    assert src.qualname == obj.__qualname__ == snippet.path[len(module.__name__) + 1:]
    assert src.first_line == first
    assert src.text == textwrap.dedent("".join(lines)).rstrip("\n")
    assert src.last_line == first + len(lines) - 1
    assert src.lines[0].lstrip().startswith(("def ", "@"))
    assert src.is_method == ("." in src.qualname)


def test_find_names_no_object_outside_the_project():
    with pytest.raises(ValueError):
        find("nowhere.at.all")
    with pytest.raises(AttributeError):
        find("model.masks.no_such_function")


def _swapped_look_ahead_mask(size, device=None):
    """A look-ahead mask that lets every query see every key (what a swap makes the panel show)."""
    return torch.ones(size, size, dtype=torch.bool, device=device)


class _SwappedFeedForward:
    def forward(self, x, trace=None, name="ffn"):
        return x  # the identity instead of the MLP


def test_the_panel_follows_a_swapped_function(monkeypatch):
    """Swap the module attribute and source_of reads the new function (its file, name, first line), not the
    original; undo the swap and it reads the original again."""
    original = source_of("model.masks.look_ahead_mask")
    monkeypatch.setattr(model.masks, "look_ahead_mask", _swapped_look_ahead_mask)
    swapped = source_of("model.masks.look_ahead_mask")
    assert swapped.file == THIS_FILE
    assert swapped.qualname == "_swapped_look_ahead_mask"
    assert swapped.first_line == inspect.getsourcelines(_swapped_look_ahead_mask)[1]
    assert "torch.ones(size, size, dtype=torch.bool, device=device)" in swapped.text
    assert ".tril()" not in swapped.text and ".tril()" in original.text
    assert original.file == "model/masks.py"
    monkeypatch.undo()
    assert source_of("model.masks.look_ahead_mask") == original


def test_the_panel_follows_a_swapped_method(monkeypatch):
    from model.layers import FeedForward
    original = source_of("model.layers.FeedForward.forward")
    monkeypatch.setattr(FeedForward, "forward", _SwappedFeedForward.forward)
    swapped = source_of("model.layers.FeedForward.forward")
    assert (swapped.file, swapped.qualname) == (THIS_FILE, "_SwappedFeedForward.forward")
    assert "return x  # the identity" in swapped.text
    assert (original.file, original.qualname) == ("model/layers.py", "FeedForward.forward")


# ------------------------------------------------------------------ every marker marks the line that makes its step


def _function_node(text: str) -> ast.FunctionDef:
    node = ast.parse(text).body[0]
    assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    return node


def _suffix(node: ast.expr) -> str | None:
    """The last dotted part of a trace name written as a string or an f-string ending in text, e.g. f"{name}.in" -> in."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.rsplit(".", 1)[-1]
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[-1], ast.Constant):
        return str(node.values[-1].value).rsplit(".", 1)[-1]
    return None


def _is_put(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "put"


def _recorded(fn: ast.FunctionDef) -> dict[str, str]:
    """What the function records under which last name part: ``trace.put("x.name", var)`` and the recording
    loops' ``("name", var)`` pairs -> {name: var}."""
    out = {}
    for node in ast.walk(fn):
        if _is_put(node) and len(node.args) == 2 and isinstance(node.args[1], ast.Name):
            suffix = _suffix(node.args[0])
            if suffix:
                out[suffix] = node.args[1].id
        if isinstance(node, ast.Tuple) and len(node.elts) == 2 and isinstance(node.elts[1], ast.Name):
            suffix = _suffix(node.elts[0])
            if suffix and isinstance(node.elts[0], ast.Constant):
                out[suffix] = node.elts[1].id
    return out


def _targets(stmt: ast.stmt) -> set[str]:
    """The names a statement assigns: plain names, tuple elements, and the base of a subscript (``table[:, 0::2] =``)."""
    raw = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    names = set()
    for target in raw:
        for node in ast.walk(target):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
                names.add(node.value.id)
    return names


def _statement_at(fn: ast.FunctionDef, line: int) -> ast.stmt:
    """The innermost simple statement on ``line`` (1-based in the snippet), or the def when it is the def line."""
    if fn.lineno == line:
        return fn
    found = [node for node in ast.walk(fn) if isinstance(node, ast.stmt) and not hasattr(node, "body")
             and node.lineno <= line <= node.end_lineno]
    assert found, f"no statement on line {line}"
    return max(found, key=lambda node: node.lineno)


def _returned_names(fn: ast.FunctionDef) -> set[str]:
    return {name.id for node in ast.walk(fn) if isinstance(node, ast.Return) and node.value is not None
            for name in ast.walk(node.value) if isinstance(name, ast.Name)}


@pytest.mark.parametrize("pair", ALL_STEPS, ids=step_id)
def test_marker_marks_the_line_that_makes_the_step(pair):
    """Each Step.marker is on at least one line of its snippet's live source, and every marked line makes that
    intermediate. "Makes" is read from the function's own AST, in this order:

    * a step the function takes as an argument (the mask ``masked_softmax`` applies, the stream ``x`` a sublayer
      connection reads) is marked where it is bound (the def line) or read;
    * a step the function records (``trace.put("<...>.name", var)`` or a recording loop's ``("name", var)`` pair)
      is marked on that ``put`` or on a line assigning ``var``;
    * otherwise the step is what the function returns: a step with a variable of its own name that the function
      returns is marked where that variable is assigned (``scores = q @ k.transpose(...)``, not the ``return``
      that passes it on); any other is marked on a ``return`` or on a line assigning a name the function
      returns (``table[:, 0::2] = torch.sin(angle)`` in ``positional_encoding``, which returns ``table``).

    So a marker that drifts onto a neighbouring line (one that only reads a step, or makes another) fails.
    """
    key, step = pair
    src = source_of(SNIPPETS[key].path)
    lines = src.lines_of(step.marker)  # raises when the marker is on no line
    fn = _function_node(src.text)
    last = step.name.rsplit(".", 1)[-1]
    params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
    recorded = _recorded(fn)
    var = recorded.get(last, last)
    bound = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    for line in lines:
        stmt = _statement_at(fn, line - src.first_line + 1)
        where = f"{src.qualname} line {line}: {src.lines[line - src.first_line].strip()!r}"
        if var in params and stmt is fn:
            continue
        if var in params:
            used = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
            assert var in used, f"{where} does not read {var}"
            continue
        if isinstance(stmt, ast.Expr) and _is_put(stmt.value):
            assert _suffix(stmt.value.args[0]) == last, f"{where} records another name than {last}"
            continue
        if last in recorded:
            assert isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)), f"{where} assigns nothing"
            assert var in _targets(stmt), f"{where} does not assign {var} (recorded as {last})"
            continue
        returned = _returned_names(fn)
        if var in bound and var in returned:  # e.g. scores: the line that assigns it, not the return that passes it on
            assert isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)), f"{where} does not assign {var}"
            assert var in _targets(stmt), f"{where} does not assign {var}"
            continue
        if isinstance(stmt, ast.Return):
            continue
        assert isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)), f"{where} neither assigns nor returns"
        assert _targets(stmt) & returned, f"{where} assigns nothing the function returns"


@pytest.mark.parametrize("key", ["q", "k", "v"])
def test_multi_head_marks_the_cross_attention_branch_too(key):
    """MultiHeadAttention.forward makes q, k, v on two branches (``if memory is None``: self-attention; else:
    cross-attention); the panel shows the same snippet for both, so each step's marked lines must include a line
    of each branch that assigns it."""
    src = source_of(SNIPPETS["multi_head"].path)
    fn = _function_node(src.text)
    branch = next(node for node in ast.walk(fn) if isinstance(node, ast.If)
                  and ast.unparse(node.test) == "memory is None")
    marked = {line - src.first_line + 1 for line in src.lines_of(
        next(step.marker for step in SNIPPETS["multi_head"].steps if step.key == key))}
    for body in (branch.body, branch.orelse):
        lines = {n.lineno for stmt in body for n in ast.walk(stmt) if isinstance(n, ast.Assign) and key in _targets(n)}
        assert lines & marked, f"{key}: no marked line in the branch at lines {sorted(lines)}"


# ------------------------------------------------------------------ the copy runs in a fresh notebook


def notebook() -> dict:
    """The namespace of an empty notebook module (registered, as a notebook's ``__main__`` is: a dataclass
    defined in it looks its module up)."""
    module = types.ModuleType("__notebook__")
    sys.modules["__notebook__"] = module
    return module.__dict__


def _fresh(key: str):
    """Source.imports + Source.text exec'd in an empty namespace, as a learner pastes them into a notebook."""
    src = source_of(SNIPPETS[key].path)
    namespace = notebook()
    exec(compile(src.imports + "\n\n" + src.text, f"<copy of {key}>", "exec"), namespace)
    project = inspect.unwrap(find(SNIPPETS[key].path))
    copied = namespace[project.__name__]
    assert copied is not project and copied.__code__ is not project.__code__
    assert copied.__module__ == "__notebook__"
    return copied, project


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _attention_inputs():
    g = _gen(3)
    q, k, v = torch.randn(2, 3, 5, 4, generator=g), torch.randn(2, 3, 6, 4, generator=g), torch.randn(2, 3, 6, 4, generator=g)
    mask = torch.rand(2, 1, 5, 6, generator=g) > 0.4
    mask[0, 0, 2] = False  # a query with no key at all
    return q, k, v, mask


def _scores_mask():
    g = _gen(4)
    scores = torch.randn(2, 3, 4, 5, generator=g)
    mask = torch.rand(2, 3, 4, 5, generator=g) > 0.5
    mask[1, 2, 0] = False
    return scores, mask


def _logits_target():
    g = _gen(5)
    logits = torch.randn(2, 5, 11, generator=g)
    target = torch.randint(0, 11, (2, 5), generator=g)
    target[0, -2:] = 0
    return logits, target


def _norm_call(norm_kind):
    def call(fn):
        torch.manual_seed(6)
        norm = nn.LayerNorm(8) if norm_kind == "layer" else importlib.import_module("model.layers").RMSNorm(8)
        with torch.no_grad():
            norm.weight.uniform_(0.5, 1.5)
        x = torch.randn(2, 3, 8, generator=_gen(7))
        trace = Trace()
        y = fn(norm, x, trace, "n")
        return y, {name: trace[name] for name in trace}
    return call


def _self_attention_inputs():
    g = _gen(8)
    q, k, v = (torch.randn(2, 3, 6, 4, generator=g) for _ in range(3))
    return q, k, v, torch.rand(2, 1, 6, 6, generator=g) > 0.3


def _restricted(pattern: str, **sizes):
    """A call of restricted_attention / restricted_look_ahead: build the replacement for ``pattern``, then use it."""
    from explain.masks import Pattern
    return lambda f: f(Pattern(pattern, **sizes))


# key -> calls, each a function of the snippet's function; the result of the copy must equal the project's exactly
CALLS = {
    "window_mask": [lambda f: f(7, 1), lambda f: f(5, 0)],
    "block_mask": [lambda f: f(7, 3), lambda f: f(4, 4)],
    "strided_mask": [lambda f: f(9, 3), lambda f: f(5, 1)],
    "global_window_mask": [lambda f: f(8, 1, 1), lambda f: f(6, 2, 0)],
    "restricted_attention": [lambda f: _restricted("window", radius=1)(f)(*_self_attention_inputs()),
                             lambda f: _restricted("strided", stride=2)(f)(*_self_attention_inputs()[:3], None)],
    "restricted_look_ahead": [lambda f: _restricted("block", block=2)(f)(6),
                              lambda f: _restricted("global", n_global=1, radius=1)(f)(4)],
    "scaled_dot_product_attention": [
        lambda f: f(*_attention_inputs()),
        lambda f: f(*_attention_inputs(), scale_scores=False),
        lambda f: f(*_attention_inputs()[:3]),
    ],
    "fast_attention": [
        lambda f: f(*_attention_inputs()),
        lambda f: f(*_attention_inputs()[:3], scale_scores=False),
    ],
    "masked_softmax": [lambda f: f(*_scores_mask()), lambda f: f(_scores_mask()[0], None)],
    "padding_mask": [
        lambda f: f(torch.randint(0, 5, (3, 7), generator=_gen(1))),
        lambda f: f(torch.randint(0, 5, (3, 7), generator=_gen(1)), pad_id=2),
    ],
    "look_ahead_mask": [lambda f: f(6), lambda f: f(1)],
    "positional_encoding": [lambda f: f(20, 8), lambda f: f(7, 6, base=100.0)],
    "rope": [lambda f: f(torch.randn(2, 3, 5, 8, generator=_gen(2)), torch.arange(5) + 3),
             lambda f: f(torch.randn(4, 6, generator=_gen(2)), torch.arange(4), base=50.0)],
    "label_smoothing": [
        lambda f: f(*_logits_target()),
        lambda f: f(*_logits_target(), epsilon=0.0),
        lambda f: f(*_logits_target(), epsilon=0.2, pad_id=None),
    ],
    "noam": [lambda f: [f(step, 64, 400) for step in (0, 1, 399, 400, 401, 10_000)],
             lambda f: f(50, 32, 10, factor=2.0)],
    "ngrams": [lambda f: f(list("abcabca"), 2), lambda f: f("the cat sat on the mat".split(), 1),
               lambda f: f(["a"], 3)],
    "layer_norm": [_norm_call("layer"), _norm_call("rms")],
    "bleu_count": [lambda f: f("the cat sat on a mat", "the cat sat on the mat", "13a")],
    "rope_half": [lambda f: f(torch.randn(2, 3, 5, 8, generator=_gen(2)), torch.arange(5) + 3),
                  lambda f: f(torch.randn(4, 6, generator=_gen(2)), torch.arange(4), base=50.0)],
}
NEEDS_A_MODEL = {"greedy", "decode_loop", "beam_search"}  # take a Transformer: defined only, not called
CLASSES = [key for key, s in SNIPPETS.items() if inspect.isclass(find(s.path))]
MODULE_FUNCTIONS = [key for key, s in SNIPPETS.items() if not source_of(s.path).is_method and key not in CLASSES]


def test_every_module_function_snippet_is_called_or_needs_a_model():
    assert set(MODULE_FUNCTIONS) == set(CALLS) | NEEDS_A_MODEL


def _same(actual, expected):
    if isinstance(actual, torch.Tensor):
        assert isinstance(expected, torch.Tensor) and actual.dtype == expected.dtype
        assert torch.equal(actual.nan_to_num(-7.0), expected.nan_to_num(-7.0))  # exactly, bit for bit
    elif isinstance(actual, (tuple, list)):
        assert type(actual) is type(expected) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            _same(a, e)
    elif isinstance(actual, dict):
        assert actual.keys() == expected.keys()
        for name in actual:
            _same(actual[name], expected[name])
    else:
        assert actual == expected


@pytest.mark.parametrize("key", MODULE_FUNCTIONS)
def test_the_copy_defines_the_function_in_a_fresh_namespace(key):
    """Source.imports then Source.text, exec'd in an empty namespace (a notebook whose path has the repo root),
    define the function."""
    copied, project = _fresh(key)
    assert inspect.signature(copied).parameters.keys() == inspect.signature(project).parameters.keys()
    if key in CALLS:  # calling is what surfaces a name used only in the body (e.g. work_sentence's MAX_ORDER)
        for call in CALLS[key]:
            call(copied)


@pytest.mark.parametrize("key", sorted(CALLS))
def test_the_copy_computes_exactly_what_the_project_computes(key):
    """The copied function, called on seeded random tensors (or plain values), returns exactly the project's result."""
    copied, project = _fresh(key)
    for call in CALLS[key]:
        _same(call(copied), call(project))


@pytest.mark.parametrize("key", [key for key, s in SNIPPETS.items() if source_of(s.path).is_method])
def test_a_method_copy_imports_its_class(key):
    """A method alone does not run: its imports line imports the class, which is the running one."""
    src = source_of(SNIPPETS[key].path)
    cls_name = src.qualname.split(".")[0]
    namespace: dict = {}
    exec(src.imports, namespace)
    module = inspect.getmodule(inspect.unwrap(find(SNIPPETS[key].path)))
    assert namespace[cls_name] is getattr(module, cls_name)


# ------------------------------------------------------------------ every step is in the trace of every model

S_TEXT_LEN, T_TEXT_LEN = 7, 5  # a source longer than the target: shapes that mix S and T up fail
VARIANTS = [dict(norm_first=nf, norm_kind=nk, ffn_kind=fk, position_kind=pk)
            for nf, nk, fk, pk in itertools.product((False, True), NORM_KINDS, FFN_KINDS, POSITION_KINDS)]


def absent_steps(cfg: TransformerConfig) -> set[str]:
    """The step keys a model of ``cfg`` legitimately does not record: exactly these and no more."""
    out = set()
    out |= {"mean", "var"} if cfg.norm_kind == "rms" else {"rms"}
    if cfg.ffn_kind == "relu":
        out.add("value")
    if cfg.position_kind != "sinusoidal":
        out.add("position")
    return out


def places(cfg: TransformerConfig) -> list[dict]:
    """Every place a page may look: each stack, layer, sublayer and attention of the model."""
    out = []
    for stack in ("encoder", "decoder"):
        attentions = ("self_attn", "cross_attn") if stack == "decoder" else ("self_attn",)
        for i in range(cfg.n_layers):
            for sub, att in itertools.product((*attentions, "ffn"), attentions):
                out.append({"stack": stack, "i": i, "sub": sub, "att": f"{stack}.{i}.{att}",
                            "norm": f"{stack}.{i}.{sub}_sublayer.norm"})
        if cfg.norm_first:  # a pre-norm stack ends with a norm of its own
            out.append({"stack": stack, "i": cfg.n_layers - 1, "sub": "ffn", "att": f"{stack}.0.self_attn",
                        "norm": f"{stack}.final_norm"})
    return out


def fields_of(snippet: Snippet) -> set[str]:
    return {f for step in snippet.steps for _, f, _, _ in string.Formatter().parse(step.name) if f}


def expected_shape(key: str, place: dict, cfg: TransformerConfig, S: int, T: int) -> tuple[int, ...]:
    """The shape model/trace.py's docstring gives each intermediate (batch 1)."""
    d, H = cfg.d_model, cfg.n_heads
    h = swiglu_hidden(cfg.d_ff) if cfg.ffn_kind == "swiglu" else cfg.d_ff
    att_stack, _, att_sub = place["att"].split(".")
    Tq = S if att_stack == "encoder" else T
    Tk = T if (att_stack, att_sub) == ("decoder", "self_attn") else S
    L = S if place["stack"] == "encoder" else T
    return {
        "q": (1, H, Tq, d // H), "k": (1, H, Tk, d // H), "v": (1, H, Tk, d // H),
        "scores": (1, H, Tq, Tk), "weights": (1, H, Tq, Tk), "heads": (1, H, Tq, d // H),
        "concat": (1, Tq, d), "out": (1, Tq, d),
        "mask": (1, 1, 1, S) if place["stack"] == "encoder" else (1, 1, T, T),
        "padding": (1, 1, 1, S), "combined": (1, 1, T, T),
        "position": (L, d), "token": (1, L, d), "sum": (1, L, d),
        "hidden_pre": (1, L, h), "value": (1, L, h), "hidden": (1, L, h), "ffn_out": (1, L, d),
        "norm_in": (1, L, d), "norm_out": (1, L, d), "mean": (1, L), "var": (1, L), "rms": (1, L),
        "x_in": (1, L, d), "update": (1, L, d), "x_out": (1, L, d),
        "memory": (1, S, d), "state": (1, T, d), "logits": (1, T, cfg.tgt_vocab_size),
    }[key]


def check_trace(trace: Trace, cfg: TransformerConfig, S: int, T: int) -> int:
    """Every snippet at every place: live_steps reports exactly the steps the variant has, each in the trace with
    the expected shape and the lines of its marker. Returns how many steps were checked."""
    absent = absent_steps(cfg)
    checked = 0
    for snippet in SNIPPETS.values():
        if not snippet.steps:
            continue
        src = code.source_of(snippet.path)
        needed = fields_of(snippet)
        seen = set()
        for place in places(cfg):
            where = {f: str(place[f]) for f in needed}
            if tuple(sorted(where.items())) in seen:
                continue
            seen.add(tuple(sorted(where.items())))
            if "sub" in where and where["sub"] == "cross_attn" and place["stack"] != "decoder":
                continue
            live = {step.key: step for step in live_steps(trace, snippet, where)}
            wanted = {step.key for step in snippet.steps} - absent
            assert set(live) == wanted, f"{snippet.key} at {where}: {sorted(live)} != {sorted(wanted)}"
            for step in snippet.steps:
                name = step.name.format(**where)
                assert (name in trace) == (step.key not in absent), (snippet.key, name)
                if step.key in absent:
                    continue
                got = live[step.key]
                assert got.name == name
                assert got.shape == tuple(trace[name].shape) == expected_shape(step.key, place, cfg, S, T), name
                assert got.lines == src.lines_of(step.marker)
                assert len(got.preview) == min(code.PREVIEW, math.prod(got.shape))
                checked += 1
    return checked


def test_absent_steps_are_each_one_variant_s_own():
    """The legitimate absences are exactly mean/var under RMSNorm, rms under LayerNorm, value under ReLU and the
    table under RoPE or no position; every other step key is recorded by every variant."""
    every = {step.key for s in SNIPPETS.values() for step in s.steps}
    for kw in VARIANTS:
        absent = absent_steps(TransformerConfig(9, 9, **kw))
        assert absent <= every
    assert set.union(*(absent_steps(TransformerConfig(9, 9, **kw)) for kw in VARIANTS)) == {
        "mean", "var", "rms", "value", "position"}


@pytest.mark.parametrize("kw", VARIANTS, ids=lambda kw: "-".join(str(v) for v in kw.values()))
def test_every_step_is_in_the_trace_of_every_variant(kw):
    torch.manual_seed(0)
    cfg = TransformerConfig(13, 11, d_model=12, n_heads=3, n_layers=2, d_ff=20, dropout=0.1, max_len=16, **kw)
    model_ = Transformer(cfg).eval()
    src = torch.randint(1, 13, (1, S_TEXT_LEN), generator=_gen(8))
    tgt = torch.randint(1, 11, (1, T_TEXT_LEN), generator=_gen(9))
    trace = Trace()
    with torch.inference_mode():
        model_(src, tgt, trace=trace)
    assert check_trace(trace, cfg, S_TEXT_LEN, T_TEXT_LEN) > 0


SENTENCES = {"en-zh": ("the cat sat on the mat .", "猫坐"), "zh-en": ("猫坐在垫子上。", "the cat")}


@pytest.fixture(scope="module")
def shipped():
    return {name: load_checkpoint(pretrained_path(name), map_location="cpu") for name in available_pretrained()}


def test_the_shipped_models_are_char_and_word_models(shipped):
    assert {"copy", "reverse", "sort", "dates", "en-zh", "zh-en"} <= set(shipped)


@pytest.mark.parametrize("name", ["copy", "reverse", "sort", "dates", "en-zh", "zh-en"])
def test_every_step_is_in_the_trace_of_every_shipped_model(shipped, name):
    ckpt = shipped[name]
    source, target = SENTENCES.get(name, ("2024-03-05 hello", "ab"))
    trace = forward_trace(ckpt, source, target)
    S, T = trace["memory"].shape[1], trace["logits"].shape[1]
    assert S > T > 1
    assert check_trace(trace, ckpt.config, S, T) > 0


# ------------------------------------------------------------------ why not -inf


def test_a_fully_masked_row_is_nan_with_minus_inf_and_zeros_here():
    row = fully_masked_row()
    assert len(row.with_minus_inf) == len(row.this_code) == 3
    assert all(math.isnan(x) for x in row.with_minus_inf)
    assert row.this_code == (0.0, 0.0, 0.0)
    other = fully_masked_row((1.0, 2.0, 3.0, 4.0, 5.0))
    assert all(math.isnan(x) for x in other.with_minus_inf) and other.this_code == (0.0,) * 5


def test_masked_softmax_gradient_through_a_fully_masked_row_is_finite():
    """Backward through a row whose every key is masked gives finite gradients (zero for that row) to the scores
    and to the values; the -inf way makes that row NaN, and the NaN reaches the values' gradient."""
    scores = torch.randn(2, 4, 5, generator=_gen(10), requires_grad=True)
    v = torch.randn(2, 5, 3, generator=_gen(13), requires_grad=True)
    mask = torch.rand(2, 4, 5, generator=_gen(11)) > 0.3
    mask[..., 0] = True  # every other query sees at least one key
    mask[0, 1] = False  # query 1 of batch 0 sees no key
    upstream = torch.randn(2, 4, 3, generator=_gen(12))
    out = masked_softmax(scores, mask) @ v  # (2, 4, 3)
    (out * upstream).sum().backward()
    assert torch.isfinite(out).all() and torch.equal(out[0, 1], torch.zeros(3))
    assert torch.isfinite(scores.grad).all() and torch.isfinite(v.grad).all()
    assert torch.equal(scores.grad[0, 1], torch.zeros(5))
    assert scores.grad.abs().sum() > 0
    naive_v = v.detach().clone().requires_grad_(True)
    naive = scores.detach().masked_fill(~mask, float("-inf")).softmax(-1) @ naive_v
    (naive * upstream).sum().backward()
    assert torch.isnan(naive[0, 1]).all() and torch.isnan(naive_v.grad[0]).all()


@pytest.mark.parametrize("key", CLASSES)
def test_the_copy_of_a_class_defines_it_in_a_fresh_namespace(key):
    """A class snippet (BLEU's counts, the key/value cache) pasted after its imports defines the class,
    with the same fields and methods as the project's."""
    src = source_of(SNIPPETS[key].path)
    namespace = notebook()
    exec(compile(src.imports + "\n\n" + src.text, f"<copy of {key}>", "exec"), namespace)
    project = find(SNIPPETS[key].path)
    copied = namespace[project.__name__]
    assert copied is not project and copied.__module__ == "__notebook__"
    assert {n for n in vars(copied) if not n.startswith("__")} == {n for n in vars(project) if not n.startswith("__")}


def test_sources_are_read_safely_by_many_sessions_at_once(monkeypatch):
    """A class opens the pages at once: many threads ask for sources at the same moment. On CPython 3.11
    two threads parsing at once could fail inside the compiler (a load test hit "AST constructor recursion
    depth mismatch"); every answer must be the source, read once per object."""
    import threading

    monkeypatch.setattr(code, "_READ", {})
    errors, answers = [], []

    def read_all():
        try:
            answers.append([code.source_of(s.path).qualname for s in SNIPPETS.values()])
        except Exception as error:  # noqa: BLE001 - the test reports whatever a thread met
            errors.append(repr(error))

    threads = [threading.Thread(target=read_all) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and len(answers) == 8 and all(a == answers[0] for a in answers)
    assert len(code._READ) == len(SNIPPETS)

"""The code behind a picture: the project's own functions, read from the objects that run, and the
intermediates of one forward pass (``model.trace`` names) with the line of source that made each.

A :class:`Snippet` names a function by its dotted path; :func:`source_of` resolves the path at call
time and reads the source with :mod:`inspect`, so what a page shows is what runs (swap the function
and the panel follows). A :class:`Step` is one intermediate: a trace name (a template such as
``{att}.scores``, filled from where the page looks) and a fragment of the one line that computes
it, found in the live source. :func:`live_steps` runs one traced forward and returns, per step, the
tensor's shape and its first numbers.

No Streamlit here (ui/code_panel.py draws it).
"""
from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from explain.residual import Text, forward_trace
from model.attention import masked_softmax
from model.checkpoint import Checkpoint
from model.trace import Trace

ROOT = Path(__file__).resolve().parents[1]
PREVIEW = 4  # numbers shown per intermediate


@dataclass(frozen=True)
class Step:
    """One intermediate a snippet computes: its trace name (a template) and the line that makes it."""

    key: str  # short name, also the i18n key of its description (code.step.<key>)
    name: str  # trace name template: {att} an attention, {stack} encoder/decoder, {i} layer, {sub} sublayer,
    # {norm} a norm (e.g. "encoder.0.ffn_sublayer.norm" or "decoder.final_norm")
    marker: str | tuple[str, ...]  # fragment(s) of the line(s) of the snippet's source that compute it


@dataclass(frozen=True)
class Snippet:
    """A function (or method) of the project that computes what a view shows."""

    key: str
    path: str  # "model.attention.scaled_dot_product_attention" or "model.layers.FeedForward.forward"
    steps: tuple[Step, ...] = ()


def _s(key: str, name: str, marker: str | tuple[str, ...]) -> Step:
    return Step(key, name, marker)


SNIPPETS: dict[str, Snippet] = {s.key: s for s in (
    Snippet("scaled_dot_product_attention", "model.attention.scaled_dot_product_attention", (
        _s("scores", "{att}.scores", "scores = q @ k.transpose"),
        _s("weights", "{att}.weights", "weights = masked_softmax("),
        _s("heads", "{att}.heads", "return weights @ v"),
    )),
    Snippet("masked_softmax", "model.attention.masked_softmax", (
        _s("mask", "{stack}.mask", "masked_fill(~mask"),
    )),
    Snippet("multi_head", "model.attention.MultiHeadAttention.forward", (
        _s("q", "{att}.q", ("q, k, v = self._split_heads(q)", "q = self._split_heads(F.linear(")),
        _s("k", "{att}.k", ("q, k, v = self._split_heads(q)", "k, v = self._split_heads(k)")),
        _s("v", "{att}.v", ("q, k, v = self._split_heads(q)", "k, v = self._split_heads(k)")),
        _s("concat", "{att}.concat", "concat = out.transpose(1, 2)"),
        _s("out", "{att}.out", "result = self.out_proj(concat)"),
    )),
    Snippet("split_heads", "model.attention.MultiHeadAttention._split_heads"),
    Snippet("padding_mask", "model.masks.padding_mask", (
        _s("padding", "encoder.mask", "return (ids != pad_id)"),
    )),
    Snippet("look_ahead_mask", "model.masks.look_ahead_mask"),
    Snippet("window_mask", "model.masks.window_mask"),  # the sparse patterns (Masks, cheaper attention)
    Snippet("block_mask", "model.masks.block_mask"),
    Snippet("strided_mask", "model.masks.strided_mask"),
    Snippet("global_window_mask", "model.masks.global_window_mask"),
    Snippet("restricted_attention", "explain.masks.restricted_attention"),
    Snippet("restricted_look_ahead", "explain.masks.restricted_look_ahead"),
    Snippet("target_mask", "model.transformer.Transformer.target_mask", (
        _s("combined", "decoder.mask", "return ahead if pad is None else ahead & pad"),
    )),
    Snippet("positional_encoding", "model.positional.positional_encoding", (
        _s("position", "{stack}.embed.position", "table[:, 0::2] = torch.sin(angle)"),
    )),
    Snippet("rope", "model.positional.rope_rotate"),
    Snippet("rope_half", "explain.positional.rope_rotate_half"),
    Snippet("token_embedding", "model.layers.TokenEmbedding.forward", (
        _s("token", "{stack}.embed.token", "return self.lookup(ids) * self.scale"),
    )),
    Snippet("embed", "model.transformer.Transformer.embed", (
        _s("token", "{stack}.embed.token", "token = (self.src_embed"),
        _s("position", "{stack}.embed.position", "table = self.pe[start:start + T]"),
        _s("sum", "{stack}.embed.sum", "x = self.embed_dropout("),
    )),
    Snippet("feed_forward", "model.layers.FeedForward.forward", (
        _s("hidden_pre", "{stack}.{i}.ffn.hidden_pre", "pre = self.linear1(x)"),
        _s("hidden", "{stack}.{i}.ffn.hidden", "hidden = F.relu(pre)"),
        _s("ffn_out", "{stack}.{i}.ffn.out", "out = self.linear2(self.dropout(hidden))"),
    )),
    Snippet("swiglu", "model.layers.SwiGLUFeedForward.forward", (
        _s("hidden_pre", "{stack}.{i}.ffn.hidden_pre", "pre, value = self.linear_gate(x)"),
        _s("value", "{stack}.{i}.ffn.value", "pre, value = self.linear_gate(x)"),
        _s("hidden", "{stack}.{i}.ffn.hidden", "hidden = F.silu(pre) * value"),
        _s("ffn_out", "{stack}.{i}.ffn.out", "out = self.linear2(self.dropout(hidden))"),
    )),
    Snippet("layer_norm", "model.layers.apply_norm", (
        _s("norm_in", "{norm}.in", 'trace.put(f"{name}.in", x)'),
        _s("mean", "{norm}.mean", 'trace.put(f"{name}.mean"'),
        _s("var", "{norm}.var", 'trace.put(f"{name}.var"'),
        _s("rms", "{norm}.rms", 'trace.put(f"{name}.rms"'),
        _s("norm_out", "{norm}.out", "y = norm(x) if replaced is None"),
    )),
    Snippet("rms_norm", "model.layers.RMSNorm.forward"),
    Snippet("sublayer", "model.layers.SublayerConnection.forward", (
        _s("x_in", "{stack}.{i}.{sub}_sublayer.x_in", "def forward(self, x"),
        _s("update", "{stack}.{i}.{sub}_sublayer.update", "update = self.dropout(y)"),
        _s("x_out", "{stack}.{i}.{sub}_sublayer.x_out", "x_out = "),
    )),
    Snippet("encoder_layer", "model.transformer.EncoderLayer.forward"),
    Snippet("decoder_layer", "model.transformer.DecoderLayer.forward"),
    Snippet("encode", "model.transformer.Transformer.encode", (
        _s("memory", "memory", 'run.put("memory", x)'),
    )),
    Snippet("decode", "model.transformer.Transformer.decode", (
        _s("state", "decoder.state", 'run.put("decoder.state", y)'),
        _s("logits", "logits", "logits = self.generator(y)"),
    )),
    Snippet("label_smoothing", "model.loss.label_smoothed_cross_entropy"),
    Snippet("greedy", "model.decoding.greedy_ids"),
    Snippet("decode_loop", "model.decoding.decode_loop"),
    Snippet("beam_search", "model.decoding.beam_search"),
    Snippet("noam", "model.schedule.noam_lr"),
    Snippet("bleu_count", "explain.bleu.work_sentence"),
    Snippet("ngrams", "explain.bleu.ngrams"),
    Snippet("bleu_clip", "explain.bleu.NgramCount"),
    Snippet("bleu_score", "explain.bleu.WorkedSentence"),
    Snippet("kv_cache", "model.attention.KVCache"),
    Snippet("forward", "model.transformer.Transformer.forward"),
    Snippet("fast_attention", "model.attention.fast_attention"),
)}


# ------------------------------------------------------------------ reading the source that runs

def find(path: str) -> Any:
    """The object ``path`` names, looked up now (a module attribute, then attributes of it)."""
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ValueError(f"{path!r} names no object of this project.")


@dataclass(frozen=True)
class Source:
    """A function's source as it runs: the file, the qualified name, the first line and the lines."""

    path: str  # the dotted path asked for
    file: str  # relative to the project, e.g. "model/attention.py"
    qualname: str
    first_line: int
    lines: tuple[str, ...]  # dedented
    imports: str  # what a notebook needs before the copied source runs (or before calling a method's class)
    is_method: bool

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    @property
    def last_line(self) -> int:
        return self.first_line + len(self.lines) - 1

    def lines_of(self, marker: str | tuple[str, ...]) -> tuple[int, ...]:
        """The file's line numbers of the lines that contain ``marker`` (or one of several: a pre-norm
        and a post-norm branch, or self- and cross-attention, may each compute the same intermediate)."""
        markers = (marker,) if isinstance(marker, str) else marker
        hits = tuple(n for n, line in enumerate(self.lines, self.first_line) if any(m in line for m in markers))
        if not hits:
            raise ValueError(f"{marker!r} is on no line of {self.qualname}.")
        return hits


PARSE_LOCK = threading.Lock()  # every parse / compile of source text in the server process takes it
_READ: dict[tuple[str, Any], Source] = {}  # (path, the object it named) -> its source, read once


def source_of(path: str) -> Source:
    """The source of the object ``path`` names, read from the object that runs (:func:`find`).

    Read once per object (a swapped function is another object, read anew), under one lock: on
    CPython 3.11 two threads parsing at once can fail inside the compiler ("AST constructor recursion
    depth mismatch"), and a class of students opens the pages at once."""
    obj = inspect.unwrap(find(path))
    with PARSE_LOCK:
        known = _READ.get((path, obj))
        if known is None:
            known = _READ[(path, obj)] = _read(path, obj)
        return known


def _read(path: str, obj: Any) -> Source:
    lines, first = inspect.getsourcelines(obj)
    module = inspect.getmodule(obj)
    file = Path(inspect.getsourcefile(obj) or "").resolve()
    try:
        shown = file.relative_to(ROOT).as_posix()
    except ValueError:
        shown = file.name
    text = textwrap.dedent("".join(lines)).rstrip("\n")
    is_method = "." in obj.__qualname__
    return Source(path=path, file=shown, qualname=obj.__qualname__, first_line=first,
                  lines=tuple(text.split("\n")), imports=_imports(module, obj, text), is_method=is_method)


def _imports(module: Any, obj: Any, text: str) -> str:
    """The import lines the copied source needs: the module's imports of the names it uses, and its
    own module-level functions and classes it calls (imported from the project). A method gets the
    import of its class instead (a method alone does not run)."""
    if module is None:
        return ""
    name = module.__name__
    if "." in obj.__qualname__:
        return f"from {name} import {obj.__qualname__.split('.')[0]}"
    used = {node.id for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Name)}
    used |= {node.value.id for node in ast.walk(ast.parse(text))
             if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)}
    lines: list[str] = ["from __future__ import annotations"]
    tree = ast.parse(inspect.getsource(module))
    for node in tree.body:
        if isinstance(node, ast.Import):
            kept = [a for a in node.names if (a.asname or a.name.split(".")[0]) in used]
            if kept:
                lines.append("import " + ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in kept))
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            kept = [a for a in node.names if (a.asname or a.name) in used]
            if kept:
                names = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in kept)
                lines.append(f"from {'.' * node.level}{node.module or ''} import {names}")
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    defined |= {target.id for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign))
                for target in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(target, ast.Name)}
    own = sorted(defined & used - {obj.__name__})  # its module's functions, classes and constants
    if own:
        lines.append(f"from {name} import {', '.join(own)}")
    return "\n".join(lines)


@dataclass(frozen=True)
class Line:
    """One line of a function as it runs: its file, number and text."""

    file: str
    number: int
    text: str


def line_with(path: str, marker: str) -> Line:
    """The first line of the object ``path`` names that contains ``marker``."""
    source = source_of(path)
    number = source.lines_of(marker)[0]
    return Line(source.file, number, source.lines[number - source.first_line].strip())


# ------------------------------------------------------------------ the live intermediates

@dataclass(frozen=True)
class LiveStep:
    """One intermediate of the forward the page shows: where it is made and what it holds."""

    key: str
    name: str  # the trace name, filled in
    lines: tuple[int, ...]  # the file's lines that compute it
    shape: tuple[int, ...]
    preview: tuple[float, ...]  # its first numbers (flattened)


def step_names(snippet: Snippet, where: Mapping[str, str]) -> dict[str, str]:
    """Each step's trace name for the place ``where`` (e.g. {"att": "encoder.0.self_attn"})."""
    return {step.key: step.name.format(**where) for step in snippet.steps}


def live_steps(trace: Trace, snippet: Snippet, where: Mapping[str, str]) -> tuple[LiveStep, ...]:
    """The steps of ``snippet`` the trace holds, with their shapes, first numbers and lines."""
    source = source_of(snippet.path)
    out = []
    for step in snippet.steps:
        try:
            name = step.name.format(**where)
        except KeyError:
            continue  # the page looks at no such place (e.g. a stack's final norm has no sublayer)
        if name not in trace:
            continue  # e.g. RMSNorm has no mean, a model without a table no position
        tensor = trace[name].detach()
        flat = tensor.float().flatten()[:PREVIEW].cpu().numpy() if tensor.dtype != torch.bool else \
            tensor.flatten()[:PREVIEW].cpu().numpy().astype(np.float64)
        out.append(LiveStep(step.key, name, source.lines_of(step.marker), tuple(tensor.shape),
                            tuple(float(x) for x in flat)))
    return tuple(out)


def traced_steps(ckpt: Checkpoint, source: Text, target: Text, snippet_keys: Sequence[str],
                 where: tuple[tuple[str, str], ...], **switches: bool) -> tuple[tuple[str, tuple[LiveStep, ...]], ...]:
    """Per snippet, its live steps for one forward of ``source`` / ``target`` (plain data, cacheable);
    ``switches``: :func:`forward_trace`'s scale_scores, use_padding_mask, use_look_ahead_mask."""
    trace = forward_trace(ckpt, source, target, **switches)
    places = dict(where)
    return tuple((key, live_steps(trace, SNIPPETS[key], places)) for key in snippet_keys)


def model_dims(ckpt: Checkpoint) -> dict[str, int]:
    """The sizes a step's description may name: d, H, d_k, d_ff, V (the target vocabulary)."""
    cfg = ckpt.model.config
    return {"d": cfg.d_model, "H": cfg.n_heads, "d_k": cfg.d_k, "d_ff": cfg.d_ff,
            "V": cfg.tgt_vocab_size, "L": cfg.n_layers}


# ------------------------------------------------------------------ why not -inf (the NaN, shown)

@dataclass(frozen=True)
class MaskedRow:
    """One query row whose every key is masked, softmaxed two ways."""

    with_minus_inf: tuple[float, ...]  # masked_fill(-inf) then softmax: NaN
    this_code: tuple[float, ...]  # model.attention.masked_softmax: zeros


def fully_masked_row(scores: Sequence[float] = (0.5, -1.0, 2.0)) -> MaskedRow:
    """The row every key of which is masked (e.g. a query whose whole source is padding)."""
    row = torch.tensor([list(scores)])  # (1, T_k)
    mask = torch.zeros_like(row, dtype=torch.bool)  # True = may attend: nothing may
    naive = row.masked_fill(~mask, float("-inf")).softmax(dim=-1)
    return MaskedRow(tuple(naive[0].tolist()), tuple(masked_softmax(row, mask)[0].tolist()))

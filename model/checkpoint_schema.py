"""The typed shape of a checkpoint's payload, checked in one pass before anything is built from it.

A checkpoint file is untrusted: after ``torch.load(weights_only=True)`` it is plain data of any
shape (a number nested 20,000 lists deep, a task name that is a list, a history of a billion
entries). :func:`check_payload` validates everything but the weights against one strict pydantic
schema, with every size bounded (:data:`model.config.LIMITS` for the model, the ``MAX_*``
constants below for the metadata), and reports the first problem as a :class:`PayloadProblem`
whose text never repeats the offending value (a 20,000-deep list has no printable ``repr``).

What the schema does not decide stays with its owner: the cross-field rules of a model config
(heads split d_model, pad id inside the vocabulary, missing sizes) with
:class:`~model.config.TransformerConfig`, the weights with ``model.checkpoint``.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError, model_validator

from model.bpe_tokenizer import MAX_ALPHABET, MAX_MERGES, MAX_PIECE_CHARS, WORD_START, merge_problem
from model.config import FFN_KINDS, LIMITS, NORM_KINDS, POSITION_KINDS, SIZE_FIELDS

MAX_HISTORY_ENTRIES = 200_000  # steps of the longest run the app can train (model.training.MAX_STEPS)
MAX_TEXT = 4096  # characters of any text in the metadata
MAX_EXTRA_KEYS = 16  # free-form entries in the task or the history
MAX_TABLE_KEYS = 64  # keys of a table of scalars (the training settings in the history)
MAX_NESTED_ITEMS = 64  # items of a list inside a free-form history list

Text = Annotated[str, Field(max_length=MAX_TEXT)]
Number = int | float  # strict: never a bool, never a string
Scalar = None | bool | int | float | Text
ScalarList = Annotated[list[Scalar], Field(max_length=MAX_HISTORY_ENTRIES)]
NestedList = Annotated[list[Annotated[list[Scalar], Field(max_length=MAX_NESTED_ITEMS)]],
                       Field(max_length=MAX_NESTED_ITEMS * MAX_NESTED_ITEMS)]
ScalarTable = Annotated[dict[str, Scalar], Field(max_length=MAX_TABLE_KEYS)]
Plain = Scalar | ScalarList | NestedList | ScalarTable  # a free-form entry: at most two levels deep


class _FewExtras(BaseModel):
    """A table with its known fields and at most MAX_EXTRA_KEYS free-form ones."""

    @model_validator(mode="before")
    @classmethod
    def _few_extras(cls, data: Any) -> Any:
        if isinstance(data, dict) and len(set(data) - set(cls.model_fields)) > MAX_EXTRA_KEYS:
            raise ValueError(f"more than {MAX_EXTRA_KEYS} entries besides {', '.join(cls.model_fields)}")
        return data


def _size(name: str):
    """A whole number from 1 to the limit of config field ``name``."""
    return Annotated[int, Field(ge=1, le=LIMITS.size_limit(name))]


class ConfigSchema(BaseModel):
    """A model config: every size bounded by LIMITS. Fields may be missing: TransformerConfig names those."""

    model_config = ConfigDict(strict=True, extra="forbid")
    src_vocab_size: _size("src_vocab_size") = 1
    tgt_vocab_size: _size("tgt_vocab_size") = 1
    d_model: _size("d_model") = 1
    n_heads: _size("n_heads") = 1
    n_layers: _size("n_layers") = 1
    d_ff: _size("d_ff") = 1
    max_len: _size("max_len") = 1
    dropout: Annotated[Number, Field(allow_inf_nan=False)] = 0.0
    norm_first: bool = False
    norm_kind: Literal[NORM_KINDS] = "layer"  # absent in checkpoints older than the variants: the paper's model
    ffn_kind: Literal[FFN_KINDS] = "relu"
    position_kind: Literal[POSITION_KINDS] = "sinusoidal"
    pe_base: Annotated[Number, Field(allow_inf_nan=False)] = 10000.0
    pad_id: Annotated[int, Field(ge=0)] = 0
    head_dim: Annotated[int, Field(ge=1, le=LIMITS.head_dim)] | None = None  # absent: d_model / n_heads


class TokenizerSchema(BaseModel):
    """A tokenizer: its alphabet (one character per token) or its words (kind "word", one word per token).

    A missing alphabet or word list is the tokenizer class's to name.
    """

    model_config = ConfigDict(strict=True, extra="ignore")
    kind: Literal["char", "word"] = "char"
    alphabet: Annotated[str, Field(min_length=1, max_length=LIMITS.vocab_size)] = "?"
    words: Annotated[list[Annotated[str, Field(min_length=1, max_length=64)]],
                     Field(min_length=1, max_length=LIMITS.vocab_size)] | None = None


Piece = Annotated[str, Field(min_length=1, max_length=MAX_PIECE_CHARS)]


class BpeTokenizerSchema(BaseModel):
    """A BPE tokenizer (kind "bpe"): at most MAX_ALPHABET single characters, at most MAX_MERGES pairs of short
    pieces, each made by the alphabet or an earlier merge, and the word mark ▁."""

    model_config = ConfigDict(strict=True, extra="ignore")
    kind: Literal["bpe"]
    alphabet: Annotated[list[Annotated[str, Field(min_length=1, max_length=1)]],
                        Field(min_length=1, max_length=MAX_ALPHABET)]
    merges: Annotated[list[Annotated[list[Piece], Field(min_length=2, max_length=2)]], Field(max_length=MAX_MERGES)]
    word_start: Literal[WORD_START]

    @model_validator(mode="after")
    def _merges_apply(self) -> BpeTokenizerSchema:
        problem = merge_problem(self.alphabet, self.merges)
        if problem is not None:
            raise ValueError(problem)
        return self


_TOKENIZER_TAGS = ("plain", "bpe")  # which schema reads a tokenizer: pydantic puts the tag in an error's location


def _tokenizer_kind(data: Any) -> str:
    return "bpe" if isinstance(data, dict) and data.get("kind") == "bpe" else "plain"


AnyTokenizer = Annotated[Annotated[TokenizerSchema, Tag("plain")] | Annotated[BpeTokenizerSchema, Tag("bpe")],
                         Discriminator(_tokenizer_kind)]


class TaskSchema(_FewExtras):
    """What the model was trained on: a task name and its options, plus a few free-form scalars."""

    model_config = ConfigDict(strict=True, extra="allow")
    __pydantic_extra__: dict[str, Scalar] = Field(init=False)
    name: Annotated[str, Field(max_length=64)] = "?"
    min_len: Annotated[int, Field(ge=0, le=LIMITS.max_len)] | None = None
    max_len: Annotated[int, Field(ge=0, le=LIMITS.max_len)] | None = None
    alphabet: Text | None = None


class HistorySchema(_FewExtras):
    """How the model was trained: the curves the Training page records, plus free-form plain data."""

    model_config = ConfigDict(strict=True, extra="allow")
    __pydantic_extra__: dict[str, Plain] = Field(init=False)
    losses: Annotated[list[Number], Field(max_length=MAX_HISTORY_ENTRIES)] = []
    lrs: Annotated[list[Number], Field(max_length=MAX_HISTORY_ENTRIES)] = []
    evals: Annotated[list[Annotated[list[Number], Field(min_length=2, max_length=2)]],
                     Field(max_length=MAX_HISTORY_ENTRIES)] = []
    steps: Annotated[int, Field(ge=0)] = 0
    seconds: Annotated[Number, Field(ge=0)] = 0.0
    config: ScalarTable = {}


class PayloadSchema(BaseModel):
    """Everything in a checkpoint but its weights, in the order the problems are reported."""

    model_config = ConfigDict(strict=True, extra="ignore")
    config: ConfigSchema
    tokenizer: AnyTokenizer
    target_tokenizer: AnyTokenizer | None = None  # absent: the target side uses ``tokenizer`` too
    task: TaskSchema
    history: HistorySchema


class PayloadProblem(NamedTuple):
    """The first thing wrong with a payload: the ``entry`` it is in, and what is wrong with it.

    ``too_big`` is True when a model size is over its limit; ``text`` says it in one English
    clause without repeating the value.
    """

    entry: str
    text: str
    too_big: bool = False


_UNION_TAGS = ("none", "bool", "int", "float", "str")


def _is_union_tag(part: object) -> bool:
    """True for the member names pydantic puts in a location inside a union (``list[...]``, ``int``)."""
    return isinstance(part, str) and ("[" in part or part in _UNION_TAGS)


def _where(loc: tuple) -> str:
    """``history.evals[3]`` from pydantic's location tuple (union member names dropped)."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not _is_union_tag(part):
            out += f".{part}" if out else str(part)
    return out


def _first_problem(error: ValidationError) -> PayloadProblem:
    first = error.errors(include_url=False, include_context=True)[0]
    loc, kind = tuple(first["loc"]), first["type"]
    if len(loc) > 1 and loc[0] in ("tokenizer", "target_tokenizer") and loc[1] in _TOKENIZER_TAGS:
        loc = loc[:1] + loc[2:]  # the schema that read it is no part of where the problem is
    entry, field = str(loc[0]) if loc else "payload", _where(loc[1:])
    if entry == "config" and kind == "less_than_equal" and field in SIZE_FIELDS:
        value, limit = first["input"], first["ctx"]["le"]  # an int: the schema checked its type first
        if field == "max_len":
            return PayloadProblem(entry, f"max_len {value} is far longer than any task needs", too_big=True)
        return PayloadProblem(entry, f"{field} is {value}, over this app's limit of {limit}", too_big=True)
    if len(loc) == 1 and kind in ("model_type", "dict_type", "model_attributes_type"):
        return PayloadProblem(entry, "not a dictionary")
    if any(_is_union_tag(part) for part in loc):
        return PayloadProblem(entry, f"{field or entry} holds a value of the wrong kind")
    message = first["msg"].removeprefix("Value error, ")
    return PayloadProblem(entry, f"{field or entry}: {message[:1].lower()}{message[1:]}")


def check_payload(payload: dict[str, Any]) -> PayloadProblem | None:
    """None when config, tokenizer, task and history all fit the schema, else the first problem."""
    try:
        PayloadSchema.model_validate(payload)
    except ValidationError as error:
        return _first_problem(error)
    return None

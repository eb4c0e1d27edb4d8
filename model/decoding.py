"""Turning a trained Transformer into text: greedy, beam search and sampling, each with a trace.

The source is encoded ONCE (``model.encode``); then :func:`decode_loop`, the one decoder loop,
extends the prefix ``[<bos>, y_1, ..., y_t]`` a token at a time. Greedy, sampling, beam search and
batch greedy (:func:`greedy_ids`, used by training-time evaluation and the pages) differ only in
the ``pick`` they give it. With the key/value cache (the default) each step runs the decoder on the
newest position only: per layer, self-attention appends that position's key and value to the
cache, and cross-attention computes the memory's keys and values once; RoPE rotates the new query
and key at their absolute position. ``use_cache=False`` re-runs the whole prefix every step (same
tokens and log-probabilities within float rounding; kept for the parity test and the benchmark).
The attention triangle a step shows is then built from the rows of the earlier steps.
Every function runs under ``torch.inference_mode`` and needs an eval-mode model (dropout
would make the same input decode differently each time).

``max_len`` counts generated tokens, ``<eos>`` included, so the longest decoder input is
``max_len`` tokens (``<bos>`` + ``max_len - 1``); it must fit the model's ``config.max_len``.
:func:`decode_bound` is the limit the pages use: the source's length plus :data:`DECODE_MARGIN`.
Scores are natural-log probabilities under the model at temperature 1.

A model with extreme weights (finite, but large enough to overflow float32) never makes decoding
raise: logits are read with NaN as 0 and clamped to ±:data:`LOGIT_CLAMP`, so every step has a
proper distribution. Every loop takes an optional ``should_stop()``, asked before each step; when
it says True, decoding raises :class:`DecodingStopped` (a visitor who left needs no answer).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

import torch

from model.trace import Trace
from model.transformer import DecoderCache, EncoderOutput, ForwardOptions, Transformer

DEFAULT_BOS_ID = 1
DEFAULT_EOS_ID = 2
GREEDY_TEMPERATURE = 1e-6  # at or below this, sampling is argmax (greedy)
DECODE_MARGIN = 16  # tokens an answer may have beyond its source (the tasks need at most 2 more)
LOGIT_CLAMP = 1e30  # logits are clamped to ±this: log-probabilities stay finite, even scaled by 1/temperature

StopCheck = Callable[[], bool]


class DecodingStopped(RuntimeError):
    """``should_stop()`` said True: whoever asked for this decoding has gone away."""


def decode_bound(source_len: int, max_len: int) -> int:
    """Most tokens to generate for a source of ``source_len`` tokens, <eos> included: its length plus
    DECODE_MARGIN, and never more than a model of ``max_len`` positions holds."""
    return max(1, min(int(max_len), int(source_len) + DECODE_MARGIN))


def safe_logprobs(logits: torch.Tensor) -> torch.Tensor:
    """log_softmax over the last axis of float32 ``logits``, finite whatever the logits (NaN counts as 0)."""
    clean = torch.nan_to_num(logits.float(), nan=0.0, posinf=LOGIT_CLAMP, neginf=-LOGIT_CLAMP)
    return clean.clamp(-LOGIT_CLAMP, LOGIT_CLAMP).log_softmax(dim=-1)


def _check_stop(should_stop: StopCheck | None) -> None:
    if should_stop is not None and should_stop():
        raise DecodingStopped("Decoding was stopped: nobody is waiting for it any more.")


@dataclass(frozen=True)
class DecodeStep:
    """One decoding step: what the decoder saw, what it predicted, where it looked.

    prefix: the decoder input at this step, starting with <bos> (length t).
    chosen / chosen_logprob: the token appended after this step and its log-probability
        under the model (temperature 1, no top-k filter).
    top_ids / top_probs: the k most likely next tokens under the model, probabilities descending.
    sampling_probs: sample_decode only, the probabilities of ``top_ids`` in the distribution the
        token was actually drawn from (after temperature and top-k); empty otherwise.
    decoder_attention: (n_layers, H, t, t) CPU float, masked self-attention over the prefix.
    cross_attention: (n_layers, H, S) CPU float, the newest position's attention over the source.
    """

    prefix: list[int]
    chosen: int
    chosen_logprob: float
    top_ids: list[int]
    top_probs: list[float]
    decoder_attention: torch.Tensor
    cross_attention: torch.Tensor
    sampling_probs: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class Beam:
    """One hypothesis of beam search after a step.

    tokens: generated ids without <bos> and without <eos>; finished says whether <eos> ended it.
    score: sum of the log-probabilities of its tokens (<eos> included when finished).
    rank_score: score / length ** length_penalty, the number beams are ranked by at the end
        (length counts <eos> when finished).
    """

    tokens: list[int]
    score: float
    finished: bool
    rank_score: float


@dataclass(frozen=True)
class DecodeResult:
    """tokens: generated ids without <bos>, up to and excluding <eos>; finished: <eos> was reached.

    score: sum of the log-probabilities of the chosen tokens, <eos> included when reached.
    steps: one DecodeStep per generated token (<eos> included); for beam search they follow the
        final best hypothesis.
    beams: beam search only, per step the live beams (best first) followed by the hypotheses that
        finished at that step; empty for greedy and sampling.
    """

    tokens: list[int]
    finished: bool
    score: float
    steps: list[DecodeStep]
    beams: list[list[Beam]] = field(default_factory=list)


@dataclass(frozen=True)
class TeacherForcing:
    """Every position predicted at once from the TRUE previous tokens (how the model is trained).

    input_ids: [<bos>] + target (T tokens), what the decoder reads.
    target_ids: target + [<eos>] (T tokens), what it should predict at each position.
    predicted_ids / predicted_probs: the model's most likely token per position and its probability.
    true_probs: the probability the model gives the true next token per position.
    score: sum of the log-probabilities of the true tokens (<eos> included).
    decoder_attention: (n_layers, H, T, T), cross_attention: (n_layers, H, T, S), CPU float.
    logprobs: (T, V) CPU float, every token's log-probability at every position (temperature 1).
    """

    input_ids: list[int]
    target_ids: list[int]
    predicted_ids: list[int]
    predicted_probs: list[float]
    true_probs: list[float]
    score: float
    decoder_attention: torch.Tensor
    cross_attention: torch.Tensor
    logprobs: torch.Tensor | None = None

    def chance(self, temperature: float, top_k: int | None = None) -> float:
        """The probability that :func:`sample_decode` at ``temperature`` and ``top_k`` writes exactly the target,
        <eos> included: the product over positions of the sampled distribution's probability of the true token."""
        if self.logprobs is None:
            raise ValueError("This teacher-forcing result kept no log-probabilities.")
        total = 0.0
        for row, target in zip(self.logprobs, self.target_ids):
            p = float(sampling_distribution(row, temperature, top_k)[target])
            if p <= 0.0:
                return 0.0
            total += math.log(p)
        return math.exp(total)

    @property
    def n_correct(self) -> int:
        return sum(p == t for p, t in zip(self.predicted_ids, self.target_ids))


# -- checks -----------------------------------------------------------------------------------
def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_model(model: Transformer) -> None:
    if model.training:
        raise ValueError(
            "The model is in training mode (dropout on), so decoding would not be repeatable; call model.eval() first."
        )


def _check_ids(ids: Sequence[int] | torch.Tensor, what: str, model: Transformer, *, allow_empty: bool) -> list[int]:
    if isinstance(ids, torch.Tensor):
        if ids.dim() != 1:
            raise ValueError(f"The {what} must be one sequence of token ids, got a tensor of shape {tuple(ids.shape)}.")
        ids = ids.tolist()
    ids = [int(i) for i in ids]
    if not ids and not allow_empty:
        raise ValueError(f"The {what} is empty: give it at least one token.")
    vocab = model.config.src_vocab_size if what == "source" else model.config.tgt_vocab_size
    bad = [i for i in ids if not 0 <= i < vocab]
    if bad:
        raise ValueError(f"The {what} has token id {bad[0]}, outside this model's vocabulary of {vocab} tokens.")
    return ids


def _check_source(model: Transformer, src_ids: Sequence[int] | torch.Tensor) -> list[int]:
    src = _check_ids(src_ids, "source", model, allow_empty=False)
    if len(src) > model.config.max_len:
        raise ValueError(
            f"The source has {len(src)} tokens but this model reads at most {model.config.max_len}."
        )
    return src


def _check_max_len(model: Transformer, max_len: int) -> None:
    if not _whole(max_len) or max_len < 1:
        raise ValueError(f"max_len must be a whole number of at least 1, got {max_len!r}.")
    if max_len > model.config.max_len:
        raise ValueError(
            f"max_len ({max_len}) is longer than the longest sequence this model handles ({model.config.max_len})."
        )


def _check_top_k(top_k: int, name: str = "top_k") -> None:
    if not _whole(top_k) or top_k < 1:
        raise ValueError(f"{name} must be a whole number of at least 1, got {top_k!r}.")


def _trace_options(options: ForwardOptions | None) -> ForwardOptions:
    """The caller's switches, with attention weights always on (the trace needs them)."""
    return replace(options or ForwardOptions(), need_weights=True, need_details=False)


# -- the one decoder loop -----------------------------------------------------------------------
def _encode(model: Transformer, src: list[int], opts: ForwardOptions, trace: Trace | None = None) -> EncoderOutput:
    return model.encode(torch.tensor([src], dtype=torch.long, device=model.device), opts, trace)


def _repeat(encoded: EncoderOutput, n: int) -> EncoderOutput:
    """The (1, S, d) encoder output seen by n hypotheses at once (views, no copies)."""
    if n == 1:
        return encoded
    mask = None if encoded.src_mask is None else encoded.src_mask.expand(n, -1, -1, -1)
    return EncoderOutput(encoded.memory.expand(n, -1, -1), mask, (), ())


def _rows(encoded: EncoderOutput, rows: torch.Tensor) -> EncoderOutput:
    """The encoder output of batch rows ``rows`` (B',), e.g. beam search's parents."""
    mask = None if encoded.src_mask is None else encoded.src_mask.index_select(0, rows)
    return EncoderOutput(encoded.memory.index_select(0, rows), mask, (), ())


def cache_is_exact(opts: ForwardOptions, trace: Trace | None = None) -> bool:
    """Whether cached decoding computes what the full prefix would: only when no position sees a later one.

    Without the look-ahead mask (or with a replaced mask builder or attention function, which may
    ignore it) earlier positions change as the prefix grows, so their cached keys would be stale.
    """
    replaced = set(trace.replace) if trace is not None else set()
    return opts.use_look_ahead_mask and not replaced & {"look_ahead_mask", "attention"}


@dataclass(frozen=True)
class _StepOutput:
    logprobs: torch.Tensor  # (B, V) float32 on the model's device, next-token log-probabilities at temperature 1
    decoder_attention: torch.Tensor | None  # (B, L, H, t, t) CPU float, the whole triangle so far; None without weights
    cross_attention: torch.Tensor | None  # (B, L, H, S) CPU float, last query row only
    computed: int  # decoder positions computed at this step (1 with the cache, t without)


@dataclass(frozen=True)
class Pick:
    """What a decoding strategy does after a step.

    next_ids: (B',) tokens appended to the rows (None: append nothing); rows: (B',) which rows they
    extend, in order (beam search's parents; None: every row, as it is); stop: end after this.
    """

    next_ids: torch.Tensor | None
    rows: torch.Tensor | None = None
    stop: bool = False


def _grow(triangle: torch.Tensor | None, new_rows: torch.Tensor) -> torch.Tensor:
    """(B, L, H, t-1, t-1) triangle + (B, L, H, 1, t) newest row -> (B, L, H, t, t)."""
    if triangle is None:
        return new_rows
    grown = torch.nn.functional.pad(triangle, (0, 1, 0, 1))  # (B, L, H, t, t), a new tensor
    grown[..., -1:, :] = new_rows
    return grown


def decode_loop(
    model: Transformer,
    encoded: EncoderOutput,
    prefixes: torch.Tensor,
    max_steps: int,
    pick: Callable[[_StepOutput], Pick],
    *,
    opts: ForwardOptions,
    trace: Trace | None = None,
    use_cache: bool = True,
    should_stop: StopCheck | None = None,
    cache: DecoderCache | None = None,
) -> torch.Tensor:
    """THE decoder loop: run the decoder, let ``pick`` choose, append; at most ``max_steps`` steps.

    encoded: the source's encoder output, one row or one per prefix; prefixes: (B, t0) decoder
    inputs (usually [[<bos>]]). Each step hands ``pick`` the next-token log-probabilities of every
    row (and, when ``opts.need_weights``, the attention); its :class:`Pick` says what to append and
    to which rows. With ``use_cache`` (and :func:`cache_is_exact`) the decoder computes only the new
    position; the cache and the rows follow ``Pick.rows``. Returns the final (B', t) prefixes.
    ``cache``: an empty DecoderCache to use (so the caller can look into it), else a new one.
    Runs under the caller's no-grad / inference mode.
    """
    if not (use_cache and cache_is_exact(opts, trace)):
        cache = None
    elif cache is None:
        cache = DecoderCache.empty(model.config.n_layers)
    if encoded.memory.size(0) != prefixes.size(0):
        encoded = _repeat(encoded, prefixes.size(0))
    triangle = None
    for _ in range(max_steps):
        _check_stop(should_stop)
        computed = prefixes.size(1) - (cache.length if cache is not None else 0)
        out = model.decode(prefixes, encoded, opts, trace, cache)
        self_attn = cross_row = None
        if opts.need_weights:
            rows = torch.stack(out.decoder_attention, dim=1).float().cpu()  # (B, L, H, t_new, t)
            triangle = _grow(triangle, rows) if cache is not None else rows
            self_attn = triangle
            cross_row = torch.stack(out.cross_attention, dim=1)[:, :, :, -1].float().cpu()  # (B, L, H, S)
        choice = pick(_StepOutput(safe_logprobs(out.logits[:, -1]), self_attn, cross_row, computed))
        if choice.rows is not None:
            rows = choice.rows.to(prefixes.device)
            prefixes, encoded = prefixes.index_select(0, rows), _rows(encoded, rows)
            if triangle is not None:
                triangle = triangle.index_select(0, choice.rows.cpu())
            if cache is not None:
                cache.reorder(rows)
        if choice.next_ids is not None:
            prefixes = torch.cat([prefixes, choice.next_ids.to(prefixes)[:, None]], dim=1)  # (B', t + 1)
        if choice.stop:
            break
    return prefixes


def greedy_ids(
    model: Transformer,
    src: torch.Tensor,
    max_new: int,
    opts: ForwardOptions = ForwardOptions(need_weights=False),
    *,
    trace: Trace | None = None,
    use_cache: bool = True,
    bos_id: int = DEFAULT_BOS_ID,
    eos_id: int = DEFAULT_EOS_ID,
    should_stop: StopCheck | None = None,
) -> torch.Tensor:
    """Greedy decoding of a whole batch at once: src (B, S) padded -> generated ids (B, <= max_new).

    The encoder runs once; a row that produced <eos> (kept) emits <pad> after it; decoding stops
    when every row is done or after max_new tokens. No attention is kept (the fast path). ``trace``
    carries interventions (its tensors are not recorded step by step: pass ``Trace(record=False, ...)``).
    """
    fast = replace(opts, need_weights=False, need_details=False)
    B, pad_id = src.size(0), model.config.pad_id
    done = torch.zeros(B, dtype=torch.bool, device=src.device)

    def pick(step: _StepOutput) -> Pick:
        nonlocal done
        next_id = step.logprobs.argmax(-1).masked_fill(done, pad_id)  # (B,)
        done = done | (next_id == eos_id)
        return Pick(next_id, stop=bool(done.all()))

    with torch.inference_mode():
        encoded = model.encode(src, fast, trace)
        start = torch.full((B, 1), bos_id, dtype=torch.long, device=src.device)
        out = decode_loop(model, encoded, start, max_new, pick, opts=fast, trace=trace, use_cache=use_cache,
                          should_stop=should_stop)
    return out[:, 1:]


@dataclass(frozen=True)
class CacheStep:
    """What one step of greedy decoding computed and reused, in key/value pairs summed over the layers.

    One pair is one position's key and value in one attention of one layer. With the cache,
    self-attention computes the newest position's pair and reuses the earlier ones; cross-attention
    computes the memory's S pairs at the first step and reuses them after. Without it, every step
    computes all t + S pairs per layer again (``uncached``).
    """

    step: int  # 1-based
    token: int  # the token written at this step
    self_computed: int
    self_reused: int
    cross_computed: int
    cross_reused: int
    uncached: int  # pairs the same step computes without the cache


def cache_usage(model: Transformer, src_ids: Sequence[int], *, max_len: int, bos_id: int = DEFAULT_BOS_ID,
                eos_id: int = DEFAULT_EOS_ID) -> list[CacheStep]:
    """Greedy decoding of ``src_ids`` with the cache, read off the cache itself after every step."""
    _check_model(model)
    src = _check_source(model, src_ids)
    _check_max_len(model, max_len)
    opts = ForwardOptions(need_weights=False)
    cache = DecoderCache.empty(model.config.n_layers)
    rows: list[CacheStep] = []
    before = {"self": [0] * model.config.n_layers, "cross": [0] * model.config.n_layers}

    def pick(step: _StepOutput) -> Pick:
        self_now = [c.length for c in cache.self_attn]
        cross_now = [c.length for c in cache.cross_attn]
        chosen = int(step.logprobs[0].argmax())
        rows.append(CacheStep(
            step=len(rows) + 1, token=chosen,
            self_computed=sum(n - b for n, b in zip(self_now, before["self"])), self_reused=sum(before["self"]),
            cross_computed=sum(n - b for n, b in zip(cross_now, before["cross"])), cross_reused=sum(before["cross"]),
            uncached=sum(self_now) + sum(cross_now),
        ))
        before["self"], before["cross"] = self_now, cross_now
        return Pick(torch.tensor([chosen]), stop=chosen == eos_id)

    with torch.inference_mode():
        start = torch.tensor([[bos_id]], dtype=torch.long, device=model.device)
        decode_loop(model, _encode(model, src, opts), start, max_len, pick, opts=opts, cache=cache)
    return rows


def _make_step(
    prefix: list[int], chosen: int, step: _StepOutput, row: int, top_k: int, sampling_probs: torch.Tensor | None = None,
    logprobs: torch.Tensor | None = None,
) -> DecodeStep:
    logprobs = (step.logprobs if logprobs is None else logprobs)[row].cpu()  # (V,)
    top = logprobs.topk(min(top_k, logprobs.numel()))
    return DecodeStep(
        prefix=list(prefix),
        chosen=chosen,
        chosen_logprob=float(logprobs[chosen]),
        top_ids=top.indices.tolist(),
        top_probs=top.values.exp().tolist(),
        decoder_attention=step.decoder_attention[row],
        cross_attention=step.cross_attention[row],
        sampling_probs=[] if sampling_probs is None else sampling_probs[top.indices].tolist(),
    )


def _run_single(
    model: Transformer,
    src_ids: Sequence[int],
    max_len: int,
    bos_id: int,
    eos_id: int,
    top_k: int,
    options: ForwardOptions | None,
    choose: Callable[[torch.Tensor], tuple[int, torch.Tensor | None]],
    should_stop: StopCheck | None = None,
    use_cache: bool = True,
) -> DecodeResult:
    """Greedy and sampling: one hypothesis, ``choose(logprobs (V,) CPU) -> (id, probs | None)``."""
    _check_model(model)
    src = _check_source(model, src_ids)
    _check_max_len(model, max_len)
    _check_top_k(top_k)
    opts = _trace_options(options)
    steps: list[DecodeStep] = []
    prefix = [bos_id]

    def pick(step: _StepOutput) -> Pick:
        logprobs = step.logprobs.cpu()  # (1, V)
        chosen, sampling_probs = choose(logprobs[0])
        steps.append(_make_step(prefix, chosen, step, 0, top_k, sampling_probs, logprobs))
        if chosen == eos_id:
            return Pick(None, stop=True)
        prefix.append(chosen)
        return Pick(torch.tensor([chosen]))

    with torch.inference_mode():
        start = torch.tensor([[bos_id]], dtype=torch.long, device=model.device)
        decode_loop(model, _encode(model, src, opts), start, max_len, pick, opts=opts, use_cache=use_cache,
                    should_stop=should_stop)
    finished = bool(steps) and steps[-1].chosen == eos_id
    return DecodeResult(tokens=prefix[1:], finished=finished, score=sum(s.chosen_logprob for s in steps), steps=steps)


# -- greedy ---------------------------------------------------------------------------------------
def greedy_decode(
    model: Transformer,
    src_ids: Sequence[int],
    *,
    max_len: int,
    bos_id: int = DEFAULT_BOS_ID,
    eos_id: int = DEFAULT_EOS_ID,
    top_k: int = 5,
    options: ForwardOptions | None = None,
    should_stop: StopCheck | None = None,
    use_cache: bool = True,
) -> DecodeResult:
    """Always append the single most likely next token; stop at <eos> or after max_len tokens.

    top_k is how many candidates each step's trace lists; it does not change the output.
    """
    return _run_single(
        model, src_ids, max_len, bos_id, eos_id, top_k, options, lambda logprobs: (int(logprobs.argmax()), None),
        should_stop, use_cache,
    )


# -- sampling -------------------------------------------------------------------------------------
def sampling_distribution(logprobs: torch.Tensor, temperature: float, top_k: int | None) -> torch.Tensor:
    """(V,) log-probabilities -> (V,) probabilities actually sampled from.

    Divide the log-probabilities by the temperature (< 1 sharpens, > 1 flattens), keep only the
    top_k most likely tokens (None keeps all), renormalise. At temperature <= 1e-6 all the mass
    goes to the argmax.
    """
    if temperature <= GREEDY_TEMPERATURE:
        probs = torch.zeros_like(logprobs)
        probs[logprobs.argmax()] = 1.0
        return probs
    scaled = logprobs / temperature
    if top_k is not None and top_k < scaled.numel():
        cutoff = scaled.topk(top_k).values[-1]
        scaled = scaled.masked_fill(scaled < cutoff, float("-inf"))
    probs = scaled.softmax(dim=-1)
    if not bool(torch.isfinite(probs).all()) or float(probs.sum()) <= 0:  # only from non-finite log-probabilities
        probs = torch.zeros_like(logprobs)
        probs[torch.nan_to_num(logprobs, nan=-math.inf).argmax()] = 1.0
    return probs


def sample_decode(
    model: Transformer,
    src_ids: Sequence[int],
    *,
    temperature: float,
    top_k: int | None,
    seed: int,
    max_len: int,
    bos_id: int = DEFAULT_BOS_ID,
    eos_id: int = DEFAULT_EOS_ID,
    trace_k: int = 5,
    options: ForwardOptions | None = None,
    should_stop: StopCheck | None = None,
    use_cache: bool = True,
) -> DecodeResult:
    """Draw each next token at random from the model's distribution, reshaped by temperature and top-k.

    Uses its own ``torch.Generator`` seeded with ``seed`` (never the global RNG, which other users of
    the process share): the same seed and inputs give the same sample. temperature <= 1e-6 (0
    included) is argmax, i.e. greedy. top_k=None samples from the whole vocabulary. The score and
    chosen_logprob are under the model at temperature 1 (comparable with greedy and beam search);
    each step's ``sampling_probs`` shows the reshaped distribution. trace_k is how many candidates
    each step's trace lists.
    """
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not math.isfinite(temperature):
        raise ValueError(f"temperature must be a number, got {temperature!r}.")
    if temperature < 0:
        raise ValueError(f"temperature must be 0 or more (0 means always the most likely token), got {temperature}.")
    if top_k is not None:
        _check_top_k(top_k)
    if not _whole(seed):
        raise ValueError(f"seed must be a whole number, got {seed!r}.")
    generator = torch.Generator().manual_seed(seed)

    def choose(logprobs: torch.Tensor) -> tuple[int, torch.Tensor]:
        probs = sampling_distribution(logprobs, float(temperature), top_k)
        if temperature <= GREEDY_TEMPERATURE:
            return int(logprobs.argmax()), probs
        return int(torch.multinomial(probs, 1, generator=generator)), probs

    return _run_single(model, src_ids, max_len, bos_id, eos_id, trace_k, options, choose, should_stop, use_cache)


# -- beam search ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Hypothesis:
    tokens: list[int]  # without <bos>, without <eos>
    score: float
    steps: list[DecodeStep]
    finished: bool = False

    def length(self) -> int:
        return len(self.tokens) + self.finished

    def rank_score(self, length_penalty: float) -> float:
        return self.score / max(self.length(), 1) ** length_penalty

    def as_beam(self, length_penalty: float) -> Beam:
        return Beam(list(self.tokens), self.score, self.finished, self.rank_score(length_penalty))


def beam_search(
    model: Transformer,
    src_ids: Sequence[int],
    *,
    beam_size: int,
    max_len: int,
    bos_id: int = DEFAULT_BOS_ID,
    eos_id: int = DEFAULT_EOS_ID,
    length_penalty: float = 0.0,
    top_k: int = 5,
    options: ForwardOptions | None = None,
    should_stop: StopCheck | None = None,
    use_cache: bool = True,
) -> DecodeResult:
    """Keep the beam_size best prefixes at every step instead of only the best one.

    Each step extends every live beam by every token and ranks the candidates by their summed
    log-probability. Among the 2 * beam_size best candidates, one ending in <eos> is set aside as a
    finished hypothesis if it ranks within the first beam_size; the best beam_size that do not end
    in <eos> become the new live beams.

    Length handling: hypotheses are finally ranked by ``score / length ** length_penalty``
    (GNMT-style length normalisation, with length = tokens generated, <eos> included).
    ``length_penalty = 0`` ranks by the raw sum, which favours short outputs because every token
    adds a negative log-probability; 1 ranks by the mean log-probability per token. The search stops
    when the best finished hypothesis ranks at least as high as the best that any live beam could
    still reach (its score only falls, its length can grow up to max_len), or after max_len steps.
    The best finished hypothesis wins; if none finished, the best live one (finished=False).

    With beam_size=1 and length_penalty=0 this is exactly greedy decoding. A wider beam usually,
    but not always, finds a higher score than greedy: a prefix it prunes can be the one that
    would have ended best. top_k is how many candidates each step's trace lists.
    """
    _check_model(model)
    src = _check_source(model, src_ids)
    _check_max_len(model, max_len)
    _check_top_k(top_k)
    if not _whole(beam_size) or beam_size < 1:
        raise ValueError(f"beam_size must be a whole number of at least 1, got {beam_size!r}.")
    if isinstance(length_penalty, bool) or not isinstance(length_penalty, (int, float)) or not (
        0 <= length_penalty < math.inf
    ):
        raise ValueError(f"length_penalty must be a number of 0 or more, got {length_penalty!r}.")
    opts = _trace_options(options)

    def best_reachable(h: _Hypothesis) -> float:
        # Log-probs are <= 0, so the sum only falls; dividing by the longest possible length is the best case.
        return h.score / max_len**length_penalty

    live = [_Hypothesis([], 0.0, [])]
    finished: list[_Hypothesis] = []
    history: list[list[Beam]] = []

    def pick(step: _StepOutput) -> Pick:
        nonlocal live
        logprobs = step.logprobs.cpu()  # (B, V), one row per live beam
        scores = torch.tensor([h.score for h in live], dtype=torch.float64)
        candidates = scores[:, None] + logprobs.double()  # (B, V) summed log-probs
        V = candidates.size(1)
        best = candidates.flatten().topk(min(2 * beam_size, candidates.numel()))
        new_live, new_finished, parents = [], [], []
        for rank, (total, flat) in enumerate(zip(best.values.tolist(), best.indices.tolist())):
            row, token = divmod(flat, V)
            parent = live[row]
            if token == eos_id and rank >= beam_size:
                continue
            if token != eos_id and len(new_live) == beam_size:
                continue
            trace = parent.steps + [_make_step([bos_id] + parent.tokens, token, step, row, top_k, None, logprobs)]
            if token == eos_id:
                new_finished.append(_Hypothesis(parent.tokens, total, trace, finished=True))
            else:
                new_live.append(_Hypothesis(parent.tokens + [token], total, trace))
                parents.append(row)
        finished.extend(new_finished)
        live = new_live
        history.append([h.as_beam(length_penalty) for h in live + new_finished])
        if not live:
            return Pick(None, stop=True)
        if finished and max(h.rank_score(length_penalty) for h in finished) >= max(best_reachable(h) for h in live):
            return Pick(None, stop=True)
        return Pick(torch.tensor([h.tokens[-1] for h in live]), rows=torch.tensor(parents))

    with torch.inference_mode():
        start = torch.tensor([[bos_id]], dtype=torch.long, device=model.device)
        decode_loop(model, _encode(model, src, opts), start, max_len, pick, opts=opts, use_cache=use_cache,
                    should_stop=should_stop)
    pool = finished or live
    winner = max(pool, key=lambda h: h.rank_score(length_penalty))
    return DecodeResult(
        tokens=list(winner.tokens), finished=winner.finished, score=winner.score, steps=winner.steps, beams=history
    )


# -- teacher forcing ------------------------------------------------------------------------------
def teacher_forced_predictions(
    model: Transformer,
    src_ids: Sequence[int],
    tgt_ids: Sequence[int],
    *,
    bos_id: int = DEFAULT_BOS_ID,
    eos_id: int = DEFAULT_EOS_ID,
    options: ForwardOptions | None = None,
) -> TeacherForcing:
    """Feed [<bos>] + target in one pass and read every position's prediction.

    This is how the model is trained: position i predicts target token i from the TRUE tokens
    before it, all positions in parallel. Contrast with greedy decoding, which must live with its
    own earlier choices (a single early mistake changes everything after it).
    """
    _check_model(model)
    src = _check_source(model, src_ids)
    tgt = _check_ids(tgt_ids, "target", model, allow_empty=True)
    if len(tgt) + 1 > model.config.max_len:
        raise ValueError(
            f"The target has {len(tgt)} tokens; with <bos> that is more than the {model.config.max_len} "
            "this model handles."
        )
    opts = _trace_options(options)
    inputs, targets = [bos_id] + tgt, tgt + [eos_id]
    with torch.inference_mode():
        out = model.decode(torch.tensor([inputs], device=model.device), _encode(model, src, opts), opts)
        logprobs = safe_logprobs(out.logits[0]).cpu()  # (T, V)
        best = logprobs.max(dim=-1)
        true = logprobs.gather(1, torch.tensor(targets)[:, None]).squeeze(1)  # (T,)
        return TeacherForcing(
            input_ids=inputs,
            target_ids=targets,
            predicted_ids=best.indices.tolist(),
            predicted_probs=best.values.exp().tolist(),
            true_probs=true.exp().tolist(),
            score=float(true.double().sum()),
            decoder_attention=torch.stack(out.decoder_attention, dim=1)[0].float().cpu(),  # (L, H, T, T)
            cross_attention=torch.stack(out.cross_attention, dim=1)[0].float().cpu(),  # (L, H, T, S)
            logprobs=logprobs.float(),
        )

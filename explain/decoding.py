"""The decoding page's numbers: per-step traces of greedy, beam and sampling decoding, and teacher
forcing, as plain Python/numpy, plus the tables the page shows of them; beam search's hypotheses as a tree.

:func:`decode` and :func:`teacher_forcing` take the checkpoint first (the page calls them through
:func:`ui.cache.computed`, so moving through the steps or switching language never decodes again).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from explain.tokens import target_tokenizer
from model import decoding

STRATEGIES: tuple[str, ...] = ("greedy", "beam", "sample")
TOP_K_CHOICES: tuple[str, ...] = ("1", "2", "3", "5", "10", "20", "all")
TRACE_K = 8  # candidates listed per step
EOS, BOS = "<eos>", "<bos>"
BEAM_COLUMNS = ("step", "rank", "text", "score", "finished")
FORCING_COLUMNS = ("position", "reads_true", "should", "predicts", "p_true", "ok", "reads_own", "writes_own")
CACHE_COLUMNS = ("step", "writes", "computed", "reused", "without")
PLACEHOLDERS: tuple[str, ...] = ("unk", "bos")  # what fills the positions of the all-at-once pass after <bos>
PARALLEL_COLUMNS = ("position", "greedy", "greedy_p", "parallel", "parallel_p", "same")


@dataclass(frozen=True)
class StepView:
    """One decoding step. Attention: decoder ``(L, H, t, t)`` over the prefix, cross ``(L, H, S)``, float32."""

    prefix: list[str]  # decoder input at this step, starting with <bos> (t tokens)
    chosen: str  # the token appended after this step (may be <eos>)
    chosen_prob: float  # its probability under the model (temperature 1)
    top_tokens: list[str]  # the most likely next tokens, then the chosen one if it is not among them
    top_probs: list[float]
    sampling_probs: list[float]  # sampling only: the same tokens' probabilities after temperature/top-k
    decoder_attention: np.ndarray
    cross_attention: np.ndarray


@dataclass(frozen=True)
class BeamRow:
    text: str  # generated so far, without <bos>/<eos>
    score: float  # summed log-probability
    finished: bool
    rank_score: float  # score / length ** length_penalty (length counts <eos> when finished)
    tokens: tuple[str, ...]  # the tokens of ``text`` (the text alone can join them ambiguously)


@dataclass(frozen=True)
class DecodeTrace:
    """A whole decoding run. ``score`` is the summed natural-log probability of the chosen tokens."""

    strategy: str
    src_tokens: list[str]
    output: str
    finished: bool  # <eos> was reached (else the length limit stopped it)
    score: float
    steps: list[StepView]
    beams: list[list[BeamRow]] = field(default_factory=list)  # beam search: per step, best first
    max_len: int = 0


@dataclass(frozen=True)
class TeacherForcingView:
    """Every position predicted from the TRUE previous tokens in one pass (how training sees it)."""

    input_tokens: list[str]  # <bos> + target
    target_tokens: list[str]  # target + <eos>
    predicted_tokens: list[str]
    predicted_probs: list[float]
    true_probs: list[float]
    n_correct: int
    score: float


def decode_limit(checkpoint: Any, source: str) -> int:
    """Longest output to generate, <eos> included: the source's tokens plus ``decoding.DECODE_MARGIN``."""
    return decoding.decode_bound(len(checkpoint.tokenizer.encode(source)), checkpoint.model.config.max_len)


def parse_top_k(choice: str) -> int | None:
    """``"all"`` -> None (no filter), ``"5"`` -> 5."""
    return None if choice == "all" else int(choice)


def _step_view(tokenizer: Any, step: decoding.DecodeStep, temperature: float = 1.0) -> StepView:
    """One step as plain data; the chosen token is always among the listed candidates (see :func:`_listed`)."""
    ids, probs, sampling = _listed(step, temperature)
    return StepView(
        prefix=tokenizer.token_strings(step.prefix),
        chosen=tokenizer.token_strings([step.chosen])[0],
        chosen_prob=float(np.exp(step.chosen_logprob)),
        top_tokens=tokenizer.token_strings(ids),
        top_probs=probs,
        sampling_probs=sampling,
        decoder_attention=step.decoder_attention.cpu().numpy().astype(np.float32),
        cross_attention=step.cross_attention.cpu().numpy().astype(np.float32),
    )


def _listed(step: decoding.DecodeStep, temperature: float) -> tuple[list[int], list[float], list[float]]:
    """The step's candidates (ids, model probabilities, sampling probabilities), with the chosen token
    appended last when it is not among the most likely (sampling can draw an unlikely one).

    Its sampling probability follows from the first candidate's: dividing log-probabilities by the
    temperature makes P_τ(a) / P_τ(b) = (P(a) / P(b))^(1/τ), and a drawn token is never cut by top-k.
    """
    ids, probs = list(step.top_ids), [float(p) for p in step.top_probs]
    sampling = [float(p) for p in step.sampling_probs]
    if step.chosen in ids:
        return ids, probs, sampling
    ids.append(step.chosen)
    probs.append(float(np.exp(step.chosen_logprob)))
    if sampling:
        ratio = (step.chosen_logprob - np.log(step.top_probs[0])) / max(temperature, 1e-6)
        sampling.append(float(sampling[0] * np.exp(ratio)))
    return ids, probs, sampling


def decode(
    checkpoint: Any,
    source: str,
    strategy: str,
    *,
    beam_size: int = 1,
    temperature: float = 1.0,
    top_k: int | None = None,
    seed: int = 0,
    length_penalty: float = 0.0,
    should_stop: decoding.StopCheck | None = None,
) -> DecodeTrace:
    """Decode ``source`` with ``strategy`` (one of STRATEGIES), at most :func:`decode_limit` tokens.

    Only the parameters of the chosen strategy matter; pass the others at their defaults so that a
    cached greedy trace does not depend on, say, the temperature. ``length_penalty`` (beam search) is
    α in the final ranking ``score / length ** α``. ``should_stop`` is asked before every step
    (``decoding.DecodingStopped`` when it says True).
    """
    tok, tgt_tok, model = checkpoint.tokenizer, target_tokenizer(checkpoint), checkpoint.model
    src = tok.encode(source)[: model.config.max_len]
    limit = decode_limit(checkpoint, source)
    ids = dict(bos_id=tgt_tok.bos_id, eos_id=tgt_tok.eos_id, should_stop=should_stop)
    if strategy == "greedy":
        result = decoding.greedy_decode(model, src, max_len=limit, top_k=TRACE_K, **ids)
    elif strategy == "beam":
        result = decoding.beam_search(model, src, beam_size=beam_size, max_len=limit, length_penalty=length_penalty,
                                      top_k=TRACE_K, **ids)
    elif strategy == "sample":
        result = decoding.sample_decode(model, src, temperature=temperature, top_k=top_k, seed=seed, max_len=limit,
                                        trace_k=TRACE_K, **ids)
    else:
        raise ValueError(f"Unknown decoding strategy {strategy!r}; use one of {STRATEGIES}.")
    beams = [[BeamRow(tgt_tok.decode(b.tokens), float(b.score), bool(b.finished), float(b.rank_score),
                      tuple(tgt_tok.token_strings(b.tokens))) for b in row]
             for row in result.beams]
    return DecodeTrace(
        strategy=strategy,
        src_tokens=tok.token_strings(src),
        output=tgt_tok.decode(result.tokens),
        finished=bool(result.finished),
        score=float(result.score),
        steps=[_step_view(tgt_tok, step, temperature) for step in result.steps],
        beams=beams,
        max_len=limit,
    )


def teacher_forcing(checkpoint: Any, source: str, target: str) -> TeacherForcingView:
    """The model's prediction at every position of ``target`` when fed the true prefix."""
    tok, tgt_tok, model = checkpoint.tokenizer, target_tokenizer(checkpoint), checkpoint.model
    limit = model.config.max_len
    src = tok.encode(source)[:limit]
    tgt = tgt_tok.encode(target)[: limit - 1]
    result = decoding.teacher_forced_predictions(model, src, tgt, bos_id=tgt_tok.bos_id, eos_id=tgt_tok.eos_id)
    return TeacherForcingView(
        input_tokens=tgt_tok.token_strings(result.input_ids),
        target_tokens=tgt_tok.token_strings(result.target_ids),
        predicted_tokens=tgt_tok.token_strings(result.predicted_ids),
        predicted_probs=[float(p) for p in result.predicted_probs],
        true_probs=[float(p) for p in result.true_probs],
        n_correct=int(result.n_correct),
        score=float(result.score),
    )


def sample_chance(checkpoint: Any, source: str, answer: str, temperature: float, top_k: int | None) -> float:
    """The probability that sampling at ``temperature`` (and ``top_k``) writes exactly ``answer`` for ``source``,
    <eos> included: each step must draw that answer's token from the reshaped distribution (one teacher-forced
    pass reads every step's distribution)."""
    tok, tgt_tok, model = checkpoint.tokenizer, target_tokenizer(checkpoint), checkpoint.model
    limit = model.config.max_len
    src = tok.encode(source)[:limit]
    tgt = tgt_tok.encode(answer)[: limit - 1]
    result = decoding.teacher_forced_predictions(model, src, tgt, bos_id=tgt_tok.bos_id, eos_id=tgt_tok.eos_id)
    return result.chance(temperature, top_k)


@dataclass(frozen=True)
class TokenCount:
    """A token written a different number of times by the all-at-once pass than by greedy decoding."""

    token: str
    parallel: int  # times in the all-at-once answer (up to its first <eos>, included)
    greedy: int  # times in the greedy answer (<eos> included)


@dataclass(frozen=True)
class AllAtOnce:
    """One decoder pass over ``<bos>`` + placeholders, the argmax taken at every position, beside greedy
    decoding of the same source (``n`` positions each: as many as greedy took steps).

    ``parallel[i]`` / ``greedy[i]`` is the token each writes at position ``i`` (0-based), with its
    probability. The answers are read up to the first ``<eos>`` (included); ``too_often`` and ``missing``
    compare how often each token occurs in them, so a repeated token shows up as written too often.
    """

    placeholder: str  # the filler token, as shown ("<unk>" or "<bos>")
    inputs: list[str]  # the one pass's decoder input: <bos> + n - 1 placeholders
    parallel: list[str]
    parallel_probs: list[float]
    greedy: list[str]
    greedy_probs: list[float]
    parallel_output: str  # the text up to the first <eos>
    greedy_output: str
    parallel_finished: bool  # the pass wrote <eos> somewhere
    too_often: list[TokenCount]
    missing: list[TokenCount]

    @property
    def differs(self) -> list[bool]:
        return [a != b for a, b in zip(self.parallel, self.greedy)]

    @property
    def passes(self) -> tuple[int, int]:
        """Decoder passes: (all at once, step by step). The encoder runs once for each."""
        return 1, len(self.greedy)

    def table(self, columns: dict[str, str], *, show: Callable[[str], str] = str) -> pd.DataFrame:
        """Position by position (what the chart shows, for its CSV); ``columns`` maps each of
        :data:`PARALLEL_COLUMNS` to its shown header."""
        rows = [{"position": i, "greedy": show(g), "greedy_p": round(gp, 4), "parallel": show(a),
                 "parallel_p": round(ap, 4), "same": "✓" if a == g else "✗"}
                for i, (g, gp, a, ap) in enumerate(zip(self.greedy, self.greedy_probs, self.parallel,
                                                       self.parallel_probs))]
        return pd.DataFrame(rows, columns=list(PARALLEL_COLUMNS)).rename(columns=columns)


def _through_eos(tokens: Sequence[str]) -> list[str]:
    """``tokens`` up to and including the first <eos> (all of them without one)."""
    return list(tokens[: tokens.index(EOS) + 1]) if EOS in tokens else list(tokens)


def count_differences(parallel: Sequence[str], greedy: Sequence[str]) -> tuple[list[TokenCount], list[TokenCount]]:
    """(written too often, missing): the tokens the two answers (each read up to its first <eos>) write a
    different number of times, in the order they first appear in the answer that has more of them."""
    mine, theirs = _through_eos(parallel), _through_eos(greedy)
    have, want = Counter(mine), Counter(theirs)
    too_often = [TokenCount(tok, have[tok], want[tok]) for tok in dict.fromkeys(mine) if have[tok] > want[tok]]
    missing = [TokenCount(tok, have[tok], want[tok]) for tok in dict.fromkeys(theirs) if want[tok] > have[tok]]
    return too_often, missing


def all_at_once(checkpoint: Any, source: str, placeholder: str = "unk") -> AllAtOnce:
    """The non-autoregressive question: ONE decoder pass reads ``<bos>`` followed by placeholders
    (``placeholder``: "unk" for ``<unk>``, "bos" for copies of ``<bos>``), the look-ahead mask on as in
    training, and the argmax is taken at every position; beside it, greedy decoding of the same source.

    The pass has as many positions as greedy took steps (a length the pass is given, not one it finds).
    Neither placeholder is ``<pad>``, so the padding mask hides none of them. The forward is the model's
    own one-pass decoder (:func:`model.decoding.teacher_forced_predictions`, with placeholders for the target).
    """
    if placeholder not in PLACEHOLDERS:
        raise ValueError(f"Unknown placeholder {placeholder!r}; use one of {PLACEHOLDERS}.")
    tok, tgt_tok, model = checkpoint.tokenizer, target_tokenizer(checkpoint), checkpoint.model
    src = tok.encode(source)[: model.config.max_len]
    greedy = decoding.greedy_decode(model, src, max_len=decode_limit(checkpoint, source), bos_id=tgt_tok.bos_id,
                                    eos_id=tgt_tok.eos_id, top_k=1)
    filler = tgt_tok.unk_id if placeholder == "unk" else tgt_tok.bos_id
    n = len(greedy.steps)
    one_pass = decoding.teacher_forced_predictions(model, src, [filler] * (n - 1), bos_id=tgt_tok.bos_id,
                                                   eos_id=tgt_tok.eos_id)
    parallel = tgt_tok.token_strings(one_pass.predicted_ids)
    greedy_tokens = tgt_tok.token_strings([step.chosen for step in greedy.steps])
    too_often, missing = count_differences(parallel, greedy_tokens)
    return AllAtOnce(
        placeholder=tgt_tok.token_strings([filler])[0],
        inputs=tgt_tok.token_strings(one_pass.input_ids),
        parallel=parallel,
        parallel_probs=[float(p) for p in one_pass.predicted_probs],
        greedy=greedy_tokens,
        greedy_probs=[float(np.exp(step.chosen_logprob)) for step in greedy.steps],
        parallel_output=tgt_tok.decode(one_pass.predicted_ids),
        greedy_output=tgt_tok.decode(greedy.tokens),
        parallel_finished=EOS in parallel,
        too_often=too_often,
        missing=missing,
    )


@dataclass(frozen=True)
class CacheSavings:
    """Per step of the real cached greedy decode: key/value pairs (one position's key and value in one
    attention of one layer) computed, reused from the cache, and computed again without the cache."""

    tokens: list[str]  # the token written at each step
    computed: list[int]  # with the cache: the newest position's pairs (+ the memory's at step 1)
    reused: list[int]  # read from the cache instead
    without: list[int]  # the same step without a cache: every pair again
    n_layers: int
    source_len: int

    @property
    def total_computed(self) -> int:
        return sum(self.computed)

    @property
    def total_without(self) -> int:
        return sum(self.without)


def cache_savings(checkpoint: Any, source: str) -> CacheSavings:
    """What the key/value cache saved when greedy decoding ``source``, read off the cache at every step."""
    tok, tgt_tok, model = checkpoint.tokenizer, target_tokenizer(checkpoint), checkpoint.model
    src = tok.encode(source)[: model.config.max_len]
    steps = decoding.cache_usage(model, src, max_len=decode_limit(checkpoint, source), bos_id=tgt_tok.bos_id,
                                 eos_id=tgt_tok.eos_id)
    return CacheSavings(
        tokens=tgt_tok.token_strings([s.token for s in steps]),
        computed=[s.self_computed + s.cross_computed for s in steps],
        reused=[s.self_reused + s.cross_reused for s in steps],
        without=[s.uncached for s in steps],
        n_layers=model.config.n_layers,
        source_len=len(src),
    )


def cache_table(savings: CacheSavings, columns: dict[str, str], *, show: Callable[[str], str] = str) -> pd.DataFrame:
    """One row per step; ``columns`` maps each of :data:`CACHE_COLUMNS` to its shown header."""
    rows = [{"step": i + 1, "writes": show(token), "computed": c, "reused": r, "without": w}
            for i, (token, c, r, w) in enumerate(zip(savings.tokens, savings.computed, savings.reused,
                                                     savings.without))]
    return pd.DataFrame(rows, columns=list(CACHE_COLUMNS)).rename(columns=columns)


def generated_tokens(trace: DecodeTrace, upto: int | None = None) -> list[str]:
    """Tokens chosen in the first ``upto`` steps (all by default), <eos> included if it was chosen."""
    return [step.chosen for step in trace.steps[:upto]]


def beams_table(trace: DecodeTrace, columns: dict[str, str], step: int | None = None) -> pd.DataFrame:
    """Beam-search hypotheses per step (or of one 1-based ``step``), best first.

    ``columns`` maps each of :data:`BEAM_COLUMNS` to its shown header.
    """
    rows = []
    for number, row in enumerate(trace.beams, start=1):
        if step is not None and number != step:
            continue
        for rank, beam in enumerate(row, start=1):
            rows.append({"step": number, "rank": rank, "text": beam.text + (" " + EOS if beam.finished else ""),
                         "score": round(beam.score, 3), "finished": beam.finished})
    return pd.DataFrame(rows, columns=list(BEAM_COLUMNS)).rename(columns=columns)


BEAM_STATUSES: tuple[str, ...] = ("kept", "pruned", "finished", "open")
TREE_COLUMNS = ("step", "rank", "text", "token", "status", "score", "length", "normalised", "chosen")
RANKING_COLUMNS = ("text", "length", "score", "normalised", "rank_sum", "rank_normalised", "chosen")


@dataclass(frozen=True)
class BeamNode:
    """One hypothesis of beam search, as a node of its tree.

    ``status``: "kept" (in the beam after its step and extended at the next), "pruned" (in the beam after its
    step, but none of its extensions made the next step's beam), "finished" (ended by ``<eos>`` at its step) or
    "open" (in the beam when the search stopped). The root, step 0, is ``<bos>`` alone.
    """

    step: int  # the step that wrote it (0: the root)
    rank: int  # its place among its step's hypotheses by summed log-probability, 1 = best
    tokens: tuple[str, ...]  # written so far, without <bos>/<eos>
    text: str  # the same, as text
    label: str  # the token its step added: the last of ``tokens``, <eos> when finished, <bos> for the root
    score: float  # summed log-probability (<eos> included when finished)
    rank_score: float  # score / length ** length_penalty
    status: str
    parent: int | None  # index of the hypothesis it extends (None: the root)
    chosen: bool  # on the path of the answer beam search returns

    @property
    def length(self) -> int:
        """Tokens it counts for the length normalisation: <eos> too when finished."""
        return len(self.tokens) + (self.status == "finished")


@dataclass(frozen=True)
class BeamTree:
    """Every hypothesis beam search kept or finished, step by step, with the edge to the one it extends.

    Candidates that were scored but never kept are not in :attr:`DecodeResult.beams`, so not here either.
    """

    nodes: list[BeamNode]  # the root first, then step by step, each step best first
    winner: int  # index of the answer beam search returns

    @property
    def edges(self) -> list[tuple[int, int]]:
        """(parent, child) index pairs."""
        return [(node.parent, i) for i, node in enumerate(self.nodes) if node.parent is not None]

    @property
    def path(self) -> list[int]:
        """The winner's path, root first."""
        path, at = [], self.winner
        while at is not None:
            path.append(at)
            at = self.nodes[at].parent
        return path[::-1]

    @property
    def n_steps(self) -> int:
        return max(node.step for node in self.nodes)

    def candidates(self) -> list[BeamNode]:
        """The hypotheses the answer is chosen among: the finished ones (the last step's open ones when none
        finished), best by score / length ** α first."""
        finished = [node for node in self.nodes if node.status == "finished"]
        pool = finished or [node for node in self.nodes if node.step == self.n_steps and node.status == "open"]
        return sorted(pool, key=lambda node: node.rank_score, reverse=True)


def beam_tree(trace: DecodeTrace) -> BeamTree:
    """The tree of a beam-search ``trace``: a kept hypothesis extends the previous step's hypothesis
    with its tokens minus the last, a finished one the previous step's with the same tokens (its last
    token, <eos>, is not among them); the winner is the hypothesis whose tokens are the trace's answer.
    """
    if trace.strategy != "beam" or not trace.beams:
        raise ValueError("Only a beam-search trace has a tree of hypotheses.")
    nodes = [BeamNode(0, 1, (), "", BOS, 0.0, 0.0, "kept", None, False)]
    previous = {(): 0}  # the live hypotheses of the step before, by their tokens
    last = len(trace.beams)
    for step, row in enumerate(trace.beams, start=1):
        live: dict[tuple[str, ...], int] = {}
        ranked = sorted(row, key=lambda beam: beam.score, reverse=True)
        for rank, beam in enumerate(ranked, start=1):
            tokens = tuple(beam.tokens)
            parent = previous[tokens if beam.finished else tokens[:-1]]
            label = EOS if beam.finished else tokens[-1]
            status = "finished" if beam.finished else "open" if step == last else "pruned"
            nodes.append(BeamNode(step, rank, tokens, beam.text, label, beam.score, beam.rank_score, status, parent,
                                  False))
            if not beam.finished:
                live[tokens] = len(nodes) - 1
        for index in {node.parent for node in nodes if node.step == step}:
            if nodes[index].status == "pruned":
                nodes[index] = replace(nodes[index], status="kept")
        previous = live
    chosen = [step.chosen for step in trace.steps]
    answer = tuple(chosen[:-1]) if trace.finished else tuple(chosen)
    winner = next(i for i, node in enumerate(nodes) if node.step == len(chosen) and node.tokens == answer
                  and (node.status == "finished") == trace.finished)
    tree = BeamTree(nodes, winner)
    on_path = set(tree.path)
    return BeamTree([replace(node, chosen=i in on_path) for i, node in enumerate(nodes)], winner)


def tree_table(tree: BeamTree, columns: dict[str, str], *, show: Callable[[str], str] = str,
               status_names: dict[str, str] | None = None) -> pd.DataFrame:
    """Every hypothesis of ``tree`` (what the tree chart shows, for its CSV), the root left out;
    ``columns`` maps each of :data:`TREE_COLUMNS` to its shown header."""
    names = status_names or {}
    rows = [{"step": node.step, "rank": node.rank, "text": node.text, "token": show(node.label),
             "status": names.get(node.status, node.status), "score": round(node.score, 4), "length": node.length,
             "normalised": round(node.rank_score, 4), "chosen": node.chosen}
            for node in tree.nodes if node.step > 0]
    return pd.DataFrame(rows, columns=list(TREE_COLUMNS)).rename(columns=columns)


def ranking_table(tree: BeamTree, columns: dict[str, str]) -> pd.DataFrame:
    """The hypotheses the answer is chosen among (:meth:`BeamTree.candidates`), best by score / length ** α
    first, with their rank by the summed log-probability alone beside it; ``columns`` maps each of
    :data:`RANKING_COLUMNS` to its shown header."""
    pool = tree.candidates()
    rows = [{"text": node.text + (" " + EOS if node.status == "finished" else ""), "length": node.length,
             "score": round(node.score, 3), "normalised": round(node.rank_score, 3),
             "rank_sum": 1 + sum(other.score > node.score for other in pool), "rank_normalised": rank,
             "chosen": node.chosen}
            for rank, node in enumerate(pool, start=1)]
    return pd.DataFrame(rows, columns=list(RANKING_COLUMNS)).rename(columns=columns)


def forcing_table(tf: TeacherForcingView, free: DecodeTrace, columns: dict[str, str], *,
                  show: Callable[[str], str] = str) -> pd.DataFrame:
    """Position by position: what teacher forcing reads and predicts next to what free running does.

    ``columns`` maps each of :data:`FORCING_COLUMNS` to its shown header; ``show`` writes a token
    for a cell (the page makes spaces visible). Free-running cells past its end are empty.
    """
    own = generated_tokens(free)
    own_inputs = [BOS] + own
    rows = []
    for i, target in enumerate(tf.target_tokens):
        rows.append({
            "position": i,
            "reads_true": show(tf.input_tokens[i]),
            "should": show(target),
            "predicts": show(tf.predicted_tokens[i]),
            "p_true": round(tf.true_probs[i], 3),
            "ok": "✓" if tf.predicted_tokens[i] == target else "✗",
            "reads_own": show(own_inputs[i]) if i < len(own) else "",
            "writes_own": show(own[i]) if i < len(own) else "",
        })
    return pd.DataFrame(rows, columns=list(FORCING_COLUMNS)).rename(columns=columns)


def first_difference(a: Sequence[str], b: Sequence[str]) -> int | None:
    """First index where ``a`` and ``b`` differ (a shorter one differs at its end); None if equal."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def step_after(trace: DecodeTrace, text: str) -> int | None:
    """The first step (1-based) whose decoder input, after ``<bos>``, ends with ``text`` (the step that writes
    what follows it, e.g. the referent after 因为), or None when the output never writes ``text``."""
    for number, step in enumerate(trace.steps, start=1):
        if "".join(step.prefix[1:]).replace(" ", "").endswith(text.replace(" ", "")):
            return number
    return None

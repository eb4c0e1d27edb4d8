"""Two compatibility functions on one head's queries and keys ("Attention Is All You Need", section 3.2.1):
the scaled dot product q·k/√d_k the model uses, and additive attention vᵀ tanh(W_q q + W_k k) (Bahdanau et al.).

The model was trained with the dot product, so it has no W_q, W_k or v for the additive function: they are
drawn once, as PyTorch draws a new ``nn.Linear`` layer's weights, from a fixed seed and a generator of their own
(the server's global random state is never touched), and never trained. The additive map therefore shows how
the function scores the head's Q and K, and what it costs, not what a trained additive head would look at.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

COMPATIBILITIES = ("dot", "additive")
ADDITIVE_SEED = 0
COST_ROWS = ("mults", "per_score", "tanh", "params", "held")


@dataclass(frozen=True)
class AdditiveParams:
    """The additive function's weights: ``w_q`` and ``w_k`` (d_a, d_k), ``v`` (d_a,)."""
    w_q: np.ndarray
    w_k: np.ndarray
    v: np.ndarray

    @property
    def bound(self) -> float:
        """Σ|v_i|: tanh keeps every term in [−1, 1], so no additive score is larger than this in size."""
        return float(np.abs(self.v).sum())


@torch.inference_mode()
def additive_params(d_k: int, d_a: int, seed: int = ADDITIVE_SEED) -> AdditiveParams:
    """W_q, W_k and v as ``nn.Linear(d_k, d_a, bias=False)`` twice and then ``nn.Linear(d_a, 1, bias=False)``
    draw them after ``torch.manual_seed(seed)``: uniform in ±1/√fan_in, in that order."""
    generator = torch.Generator().manual_seed(seed)

    def linear(fan_out: int, fan_in: int) -> np.ndarray:
        bound = 1 / math.sqrt(fan_in)
        return torch.empty(fan_out, fan_in).uniform_(-bound, bound, generator=generator).double().numpy()

    w_q, w_k, v = linear(d_a, d_k), linear(d_a, d_k), linear(1, d_a)
    return AdditiveParams(w_q=w_q, w_k=w_k, v=v[0])


def additive_scores(q: np.ndarray, k: np.ndarray, params: AdditiveParams) -> np.ndarray:
    """(T_q, T_k) scores vᵀ tanh(W_q q_i + W_k k_j) for queries ``q`` (T_q, d_k) and keys ``k`` (T_k, d_k).

    Each query and each key is projected once; every pair then needs its own d_a-vector, tanh and dot with v:
    the (T_q, T_k, d_a) tensor below is what the dot product never holds."""
    projected_q = np.asarray(q, dtype=float) @ params.w_q.T  # (T_q, d_a)
    projected_k = np.asarray(k, dtype=float) @ params.w_k.T  # (T_k, d_a)
    return np.tanh(projected_q[:, None, :] + projected_k[None, :, :]) @ params.v


def masked_softmax(scores: np.ndarray, blocked: np.ndarray | None) -> np.ndarray:
    """Softmax of every row of ``scores`` (T_q, T_k) over the keys not ``blocked`` (True = hidden, weight 0)."""
    s = np.asarray(scores, dtype=float)
    if blocked is not None:
        s = np.where(blocked, -np.inf, s)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@dataclass(frozen=True)
class AdditiveView:
    """One head's Q and K scored by the additive function: the weights used, scores and softmax weights (T_q, T_k)."""
    params: AdditiveParams
    scores: np.ndarray
    weights: np.ndarray


def additive_view(q: np.ndarray, k: np.ndarray, blocked: np.ndarray | None, d_a: int | None = None,
                  seed: int = ADDITIVE_SEED) -> AdditiveView:
    """The additive scores and weights of queries ``q`` and keys ``k`` with hidden size ``d_a`` (default d_k),
    keys ``blocked`` by a mask left out of the softmax."""
    d_k = np.shape(q)[-1]
    params = additive_params(d_k, d_a or d_k, seed)
    scores = additive_scores(q, k, params)
    return AdditiveView(params=params, scores=scores, weights=masked_softmax(scores, blocked))


@dataclass(frozen=True)
class CompatibilityCost:
    """What scoring ``n_q`` queries against ``n_k`` keys costs each way, with d_k and a hidden size d_a.

    Dot product: QKᵀ, n_q·n_k·d_k multiplications in one matrix product, no weights of its own, only the
    (n_q, n_k) scores held. Additive: each query and key projected to d_a ((n_q + n_k)·d_a·d_k), then for every
    pair a sum, d_a tanh and a dot with v (n_q·n_k·d_a); 2·d_a·d_k + d_a weights; an (n_q, n_k, d_a) tensor held.
    The 1/√d_k division (n_q·n_k more) is left out: it can be folded into W^Q."""
    n_q: int
    n_k: int
    d_k: int
    d_a: int

    @property
    def dot_mults(self) -> int:
        return self.n_q * self.n_k * self.d_k

    @property
    def additive_mults(self) -> int:
        return (self.n_q + self.n_k) * self.d_a * self.d_k + self.n_q * self.n_k * self.d_a

    @property
    def additive_tanh(self) -> int:
        return self.n_q * self.n_k * self.d_a

    @property
    def additive_params(self) -> int:
        return 2 * self.d_a * self.d_k + self.d_a

    @property
    def dot_held(self) -> int:
        return self.n_q * self.n_k

    @property
    def additive_held(self) -> int:
        return self.n_q * self.n_k * self.d_a

    def per_score(self) -> tuple[float, float]:
        """Multiplications per score, dot and additive (the projections shared out over the n_q·n_k scores)."""
        pairs = self.n_q * self.n_k
        return self.dot_mults / pairs, self.additive_mults / pairs

    def table(self) -> pd.DataFrame:
        """One row per quantity of :data:`COST_ROWS`: its formula and its number, dot product and additive."""
        dot_each, additive_each = self.per_score()
        rows = {
            "mults": (("n_q·n_k·d_k", self.dot_mults),
                      ("(n_q + n_k)·d_a·d_k + n_q·n_k·d_a", self.additive_mults)),
            "per_score": (("d_k", dot_each), ("d_a + (n_q + n_k)·d_a·d_k / (n_q·n_k)", additive_each)),
            "tanh": (("0", 0), ("n_q·n_k·d_a", self.additive_tanh)),
            "params": (("0", 0), ("2·d_a·d_k + d_a", self.additive_params)),
            "held": (("n_q·n_k", self.dot_held), ("n_q·n_k·d_a", self.additive_held)),
        }
        return pd.DataFrame([{"quantity": name, "dot": _cell(*rows[name][0]), "additive": _cell(*rows[name][1])}
                             for name in COST_ROWS])


def _cell(formula: str, value: float) -> str:
    """``formula = value`` (the value alone where the formula is the number), thousands separated."""
    number = f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"
    return number if formula == number else f"{formula} = {number}"

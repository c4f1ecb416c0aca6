"""Hidden Markov models learned by EM from unlabeled text; their states are features.

Huang & Yates (2009) tag each token of a sentence with its most probable
state under an HMM trained on raw text: unlike a word's cluster, the state
depends on the sentence, and a word seen once or never still gets one from
its neighbours. :class:`sscrf.WordRepresentations` trains them
(``hmm_states``) and adds the states as features.

Each symbol is emitted by a few states only, its *support*
(:class:`HiddenMarkovModel`): a step of the forward-backward passes then
costs ``|support(previous)| · |support(next)|`` rather than ``K²``, and EM
keeps every zero emission zero, so an HMM started on supports stays on
them. The compiled kernel (``_core.SparseHmm``) runs the E-step with the
same bits at any thread count; EM is stepwise (Liang & Klein 2009),
re-estimating the model after each small batch of sentences, which reaches
in 3 passes over the text a likelihood that batch EM needs over 10 for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from . import _core
from .progress import Progress

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["HiddenMarkovModel", "fit_hmm", "most_probable_states"]

#: Pseudo-counts added to the expected counts in the M-step, so that no
#: probability on a support becomes 0: a symbol that a state stops
#: emitting, the symbol of shapes the text lacks, a transition that EM
#: drives out. The BC2GM study (bench/HISTORY.md) used these values.
_EMISSION_PSEUDO_COUNT = 1e-4
_TRANSITION_PSEUDO_COUNT = 1e-6
#: Tokens per batch of stepwise EM, and the exponent α of its step sizes
#: (k + 2)^-α: 3 passes so reached a log-likelihood of -6.02 per token on
#: 0.77M tokens of text, where 10 iterations of batch EM in about the same
#: time reached -6.13 (the alternatives: bench/HISTORY.md).
_BATCH_TOKENS = 5000
_STEP_EXPONENT = 0.7


class HiddenMarkovModel(NamedTuple):
    """An HMM of ``K`` states over ``n_symbols`` symbols, in probabilities.

    Symbol ``s`` is emitted only by the states
    ``support[support_ptr[s]:support_ptr[s + 1]]`` (increasing), with the
    probabilities ``emission[support_ptr[s]:support_ptr[s + 1]]``.
    """

    start: NDArray[Any]        #: (K,) π
    transitions: NDArray[Any]  #: (K, K) A, indexed [previous, next]
    support_ptr: NDArray[Any]  #: (n_symbols + 1,) int64
    support: NDArray[Any]      #: int32 states
    emission: NDArray[Any]     #: float64 p(symbol | state), aligned with ``support``

    def kernel(self) -> Any:
        """The compiled, validated model (``_core.SparseHmm``)."""
        return _core.SparseHmm(self.start, self.transitions, self.support_ptr, self.support,
                               self.emission)


def fit_hmm(symbols: NDArray[Any], offsets: NDArray[Any], support_ptr: NDArray[Any],
            support: NDArray[Any], emission_weights: NDArray[Any], n_states: int,
            n_passes: int, rng: np.random.Generator, n_threads: int, progress: Progress,
            name: str = "HMM") -> tuple[HiddenMarkovModel, float]:
    """An HMM fitted by stepwise EM (Liang & Klein 2009) to the sentences
    ``symbols[offsets[i]:offsets[i+1]]`` (int32 ids below ``len(support_ptr) - 1``).

    EM starts from uniform start and transition probabilities and emissions
    proportional to ``emission_weights`` (> 0, aligned with ``support``) in
    each state. Each of ``n_passes`` passes reads the sentences in an order
    drawn from ``rng``, in batches of about ``_BATCH_TOKENS`` tokens; after
    each batch, the running expected counts move towards the batch's (scaled
    to the text) by ``η_k = (k + 2)^-α`` and the model is re-estimated from
    them. Returns the model and the log-likelihood per token of the last
    pass (each batch's under the model of its time).
    """
    K = n_states
    symbols = np.ascontiguousarray(symbols, dtype=np.int32)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    support_ptr = np.ascontiguousarray(support_ptr, dtype=np.int64)
    support = np.ascontiguousarray(support, dtype=np.int32)
    lengths = np.diff(offsets)
    # the supports; StepwiseEm sets every probability from its counts
    supports = HiddenMarkovModel(np.full(K, 1.0 / K), np.full((K, K), 1.0 / K), support_ptr,
                                 support, np.zeros(len(support)))
    em = _core.StepwiseEm(supports.kernel(), emission_weights, max(len(symbols), 1),
                          max(int(np.count_nonzero(lengths)), 1), _STEP_EXPONENT,
                          _EMISSION_PSEUDO_COUNT, _TRANSITION_PSEUDO_COUNT)
    per_token = 0.0
    for p in range(n_passes):
        order = rng.permutation(len(lengths))
        # batches of about _BATCH_TOKENS tokens, cut at sentence ends
        ends = np.cumsum(lengths[order])
        cuts = np.searchsorted(ends, np.arange(_BATCH_TOKENS, ends[-1] if len(ends) else 0,
                                               _BATCH_TOKENS), side="left") + 1
        batch_ptr = np.unique(np.concatenate([[0], cuts, [len(order)]])).astype(np.int64)
        per_token = em.run(symbols, offsets, order, batch_ptr, n_threads) / max(len(symbols), 1)
        progress.step(p + 1, f"{name}: pass {p + 1}/{n_passes}, log-likelihood "
                             f"{per_token:.4f} per token")
    start, transitions, emission = em.model()
    return HiddenMarkovModel(start, transitions, support_ptr, support, emission), per_token


def most_probable_states(kernel: Any, symbols: NDArray[Any], offsets: Any = None,
                         n_threads: int = 1) -> NDArray[Any]:
    """Each token's state of largest posterior probability given its whole
    sentence (ties: the lower state), under ``kernel`` (:meth:`HiddenMarkovModel.kernel`);
    ``symbols`` is one sentence, or the sentences ``symbols[offsets[i]:offsets[i+1]]``."""
    symbols = np.ascontiguousarray(symbols, dtype=np.int32)
    if offsets is None:
        offsets = np.array([0, len(symbols)], dtype=np.int64)
    return kernel.posterior_states(symbols, offsets, n_threads)


def viterbi_states(kernels: list[Any], symbols: NDArray[Any], offsets: Any = None,
                   n_threads: int = 1) -> NDArray[Any]:
    """Each sentence's most probable state sequence under each of ``kernels``
    (ties: the lower last state, then the lower predecessor), int32 of shape
    ``(len(kernels), len(symbols))``; ``symbols`` as :func:`most_probable_states`'."""
    symbols = np.ascontiguousarray(symbols, dtype=np.int32)
    if offsets is None:
        offsets = np.array([0, len(symbols)], dtype=np.int64)
    return _core.hmm_viterbi_states(list(kernels), symbols, offsets, n_threads)

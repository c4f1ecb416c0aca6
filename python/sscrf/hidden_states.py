"""Hidden Markov models learned by EM from unlabeled text; their states are features.

Huang & Yates (2009) tag each token of a sentence with its most probable
state under an HMM trained on raw text: unlike a word's cluster, the state
depends on the sentence, and a word seen once or never still gets one from
its neighbours. :class:`sscrf.WordRepresentations` trains them
(``hmm_states``) and adds the states as features.

The E-step runs in the lattice kernels. An HMM is a linear-chain CRF whose
one feature per token is its word (weight ``log p(w | k)`` at state ``k``),
with transitions ``log A`` and start weights ``log π``: its log-partition
``log Z`` is ``log p(x)``, and ``∇ log Z`` is the expected count of each
emission, transition and start (Baum-Welch's sufficient statistics). The
likelihood kernel, given every label 0, returns ``log Z - score(y)`` and
``E[f] - f(y)``; adding ``f(y)`` back gives both, bit-identical at any
thread count.
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
#: probability becomes 0 and no weight log 0 = -inf: a symbol that a state
#: stops emitting, the symbol of shapes the text lacks, a transition that
#: EM drives out. The BC2GM study (bench/HISTORY.md) used these values.
_EMISSION_PSEUDO_COUNT = 1e-4
_TRANSITION_PSEUDO_COUNT = 1e-6


class HiddenMarkovModel(NamedTuple):
    """Log-probabilities of an HMM over ``n_symbols`` symbols and ``K`` states."""

    log_start: NDArray[Any]        #: (K,) log π
    log_transitions: NDArray[Any]  #: (K, K) log A, indexed [previous, next]
    log_emissions: NDArray[Any]    #: (n_symbols, K) log p(symbol | state)


def _theta(hmm: HiddenMarkovModel, rows: Any = None) -> NDArray[Any]:
    """The CRF parameter vector of ``hmm``: emission rows (all, or ``rows``),
    transitions, start, and a zero end."""
    K = len(hmm.log_start)
    emissions = hmm.log_emissions if rows is None else hmm.log_emissions[rows]
    return np.concatenate([emissions.ravel(), hmm.log_transitions.ravel(), hmm.log_start,
                           np.zeros(K)])


def _dense_layout(n_symbols: int, K: int) -> Any:
    return _core.Layout(np.arange(0, n_symbols * K + 1, K, dtype=np.int64),
                        np.tile(np.arange(K, dtype=np.int32), n_symbols), K)


def _one_hot_corpus(symbols: NDArray[Any], offsets: NDArray[Any], n_symbols: int,
                    labels: bool) -> Any:
    T = len(symbols)
    return _core.Corpus(np.arange(T + 1, dtype=np.int64), symbols, np.broadcast_to(1.0, T),
                        offsets, n_symbols,
                        labels=np.zeros(T, dtype=np.int32) if labels else None)


def expected_counts(hmm: HiddenMarkovModel, corpus: Any, layout: Any, symbols: NDArray[Any],
                    lengths: NDArray[Any], n_threads: int
                    ) -> tuple[float, NDArray[Any], NDArray[Any], NDArray[Any]]:
    """The E-step: (log p(text), expected emission counts (n_symbols, K),
    expected transition counts (K, K), expected start counts (K,)).

    ``corpus`` holds ``symbols`` one-hot with every label 0 and sentences of
    ``lengths`` tokens; ``layout`` is dense over the symbols.
    """
    K = len(hmm.log_start)
    n_symbols = hmm.log_emissions.shape[0]
    theta = _theta(hmm)
    loss, grad = _core.likelihood(corpus, layout, theta, n_threads)
    # f(y) of the all-0 labeling: each token's symbol at state 0, the
    # transitions 0 -> 0, one start and one end at 0.
    n_sentences = int(np.count_nonzero(lengths))
    n_edges = float(np.sum(np.maximum(lengths - 1, 0)))
    emissions = grad[:n_symbols * K].reshape(n_symbols, K).copy()
    emissions[:, 0] += np.bincount(symbols, minlength=n_symbols)
    at = n_symbols * K
    transitions = grad[at:at + K * K].reshape(K, K).copy()
    transitions[0, 0] += n_edges
    start = grad[at + K * K:at + K * K + K].copy()
    start[0] += n_sentences
    score = float(np.sum(hmm.log_emissions[symbols, 0])) + n_edges * hmm.log_transitions[0, 0] \
        + n_sentences * hmm.log_start[0]
    return float(loss) + score, emissions, transitions, start


def fit_hmm(symbols: NDArray[Any], offsets: NDArray[Any], n_symbols: int, n_states: int,
            n_iterations: int, rng: np.random.Generator, n_threads: int,
            progress: Progress, name: str = "HMM") -> tuple[HiddenMarkovModel, float]:
    """An HMM fitted by ``n_iterations`` of EM to the sentences ``symbols[offsets[i]:
    offsets[i+1]]`` (int32 ids below ``n_symbols``), started at random from ``rng``.

    Returns the model and the log-likelihood per token of its last E-step.
    """
    K = n_states
    transitions = rng.random((K, K)) + 1.0
    emissions = rng.random((n_symbols, K)) + 1.0
    hmm = HiddenMarkovModel(np.full(K, -np.log(K)),
                            np.log(transitions / transitions.sum(1, keepdims=True)),
                            np.log(emissions / emissions.sum(0, keepdims=True)))
    symbols = np.ascontiguousarray(symbols, dtype=np.int32)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    lengths = np.diff(offsets)
    corpus = _one_hot_corpus(symbols, offsets, n_symbols, labels=True)
    layout = _dense_layout(n_symbols, K)
    n_tokens = max(len(symbols), 1)
    per_token = 0.0
    for it in range(n_iterations):
        log_p, e, t, s = expected_counts(hmm, corpus, layout, symbols, lengths, n_threads)
        per_token = log_p / n_tokens
        e += _EMISSION_PSEUDO_COUNT
        t += _TRANSITION_PSEUDO_COUNT
        s += _TRANSITION_PSEUDO_COUNT
        hmm = HiddenMarkovModel(np.log(s / s.sum()), np.log(t / t.sum(1, keepdims=True)),
                                np.log(e / e.sum(0, keepdims=True)))
        progress.step(it + 1, f"{name}: iteration {it + 1}/{n_iterations}, log-likelihood "
                              f"{per_token:.4f} per token")
    return hmm, per_token


def most_probable_states(hmm: HiddenMarkovModel, symbols: NDArray[Any]) -> NDArray[Any]:
    """Each token's state of largest posterior probability given the whole
    sentence ``symbols`` (ties: the lower state)."""
    n = len(symbols)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    # only the sentence's own emission rows: the model's whole table would
    # be checked for finiteness on every call
    rows, local = np.unique(symbols, return_inverse=True)
    K = len(hmm.log_start)
    corpus = _one_hot_corpus(local.astype(np.int32), np.array([0, n], dtype=np.int64),
                             len(rows), labels=False)
    node, _ = _core.marginals_corpus(corpus, _dense_layout(len(rows), K), _theta(hmm, rows), 1)
    return np.argmax(node, axis=1)

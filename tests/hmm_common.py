"""Random sparse HMMs and packed sentences for the HMM kernels' tests."""

import numpy as np

from sscrf.hidden_states import HiddenMarkovModel


def random_hmm(rng, n_symbols, K, full=False):
    """An HMM whose symbols each have a random support (every state with ``full``)."""
    supports = [np.arange(K) if full else
                np.sort(rng.choice(K, rng.integers(1, K + 1), replace=False))
                for _ in range(n_symbols)]
    ptr = np.concatenate([[0], np.cumsum([len(x) for x in supports])]).astype(np.int64)
    support = np.concatenate(supports).astype(np.int32)
    B = np.zeros((n_symbols, K))
    for s, states in enumerate(supports):
        B[s, states] = rng.random(len(states)) + 0.1
    B /= B.sum(0, keepdims=True)
    A = rng.random((K, K)) + 0.1
    pi = rng.random(K) + 0.1
    emission = np.concatenate([B[s, states] for s, states in enumerate(supports)])
    return HiddenMarkovModel(pi / pi.sum(), A / A.sum(1, keepdims=True), ptr, support, emission)


def dense_emissions(hmm):
    n_symbols, K = len(hmm.support_ptr) - 1, len(hmm.start)
    B = np.zeros((n_symbols, K))
    for s in range(n_symbols):
        lo, hi = hmm.support_ptr[s], hmm.support_ptr[s + 1]
        B[s, hmm.support[lo:hi]] = hmm.emission[lo:hi]
    return B


def packed(sentences):
    symbols = np.array([w for s in sentences for w in s], dtype=np.int32)
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in sentences])]).astype(np.int64)
    return symbols, offsets

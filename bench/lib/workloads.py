"""The inputs of the objective terms that the suite's scaling item times, shared
with the probes that time the same terms apart.

On real features (e.g. CoNLL-2000 train): ``partial_likelihood`` with about
half of the tokens, drawn at random, allowed every label and the rest their
gold label; ``ge`` with the most frequent ``w[0]:`` attributes as
constraints and their smoothed empirical label distributions as targets;
``alternatives`` with two labelings per sentence, the gold one and one with a
random token relabeled.
"""

import numpy as np

from sscrf import _core

__all__ = ["corpus", "partial_mask", "ge_setup", "alternatives_setup"]


def corpus(features, labels=None, mask=None, chunk_tokens=None):
    """The ``_core.Corpus`` of ``features`` (default chunking unless ``chunk_tokens``)."""
    extra = {} if chunk_tokens is None else {"chunk_tokens": chunk_tokens}
    return _core.Corpus(features.indptr, features.indices, features.values, features.offsets,
                        features.n_attributes, labels, None, mask, **extra)


def partial_mask(y, S, rng):
    """Allowed labels (N, S) of the partial_likelihood term: about half the
    tokens all-allowed, the rest one-hot gold; returns (mask, free)."""
    N = len(y)
    free = rng.random(N) < 0.5
    mask = np.zeros((N, S), dtype=bool)
    mask[np.arange(N), y] = True
    mask[free] = True
    return mask, free


def ge_setup(features, attributes, y, S, n_constraints):
    """The ``n_constraints`` most frequent ``w[0]:`` attributes and their label
    distributions: (constraint of each attribute or -1, targets (C, S), facts)."""
    A = features.n_attributes
    freq = np.bincount(features.indices, minlength=A)
    candidates = np.array([i for i, a in enumerate(attributes)
                           if a.startswith(("w[0]:", "w[0]="))], dtype=np.int64)
    chosen = candidates[np.argsort(-freq[candidates], kind="stable")[:n_constraints]]
    cmap = np.full(A, -1, dtype=np.int64)
    cmap[chosen] = np.arange(len(chosen))
    tok = np.repeat(np.arange(features.n_tokens), np.diff(features.indptr))
    m = cmap[features.indices]
    hit = m >= 0
    counts = np.zeros((len(chosen), S))
    np.add.at(counts, (m[hit], y[tok[hit]]), 1.0)
    targets = (counts + 0.1) / (counts + 0.1).sum(axis=1, keepdims=True)
    firing = np.zeros(features.n_tokens, dtype=bool)
    firing[tok[hit]] = True
    return cmap, targets, {"constraints": int(len(chosen)),
                           "tokens_with_a_constraint": float(firing.mean())}


def alternatives_setup(features, y, S, rng):
    """Two labelings per sentence for the ``alternatives`` term: the gold one and
    the gold one with one random token relabeled. Returns (their label ids,
    one after another; the sentence of each labeling)."""
    offsets = np.asarray(features.offsets)
    alt = []
    for s in range(features.n_sentences):
        seq = y[offsets[s]:offsets[s + 1]]
        other = seq.copy()
        if len(other):
            t = rng.integers(len(other))
            other[t] = (other[t] + 1 + rng.integers(S - 1)) % S
        alt += [seq, other]
    return np.concatenate(alt).astype(np.int32), np.repeat(np.arange(features.n_sentences), 2)

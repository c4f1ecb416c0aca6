"""Slow, obviously correct numpy references for the linear-chain lattice.

Everything here is written for clarity, not speed: ``brute_force`` enumerates
all S**n labelings, and ``log_forward`` / ``log_viterbi_score`` reduce the
chain with log-semiring (max-plus) matrix products. The compiled kernels in
``sscrf.lattice`` are tested against these.

Conventions (the same as ``sscrf.lattice``):

- ``E``: (n, S) emission scores; ``T``: (S, S) transition scores indexed
  ``[previous, next]``; ``start``, ``end``: (S,) or None (zeros).
- ``mask``: (n, S) bool, True = label allowed at that token, or None.
- ``edge_mask``: (n-1, S, S) bool, ``edge_mask[t, a, b]`` True = the
  transition ``y_t = a -> y_{t+1} = b`` is allowed, or None.
- score of a labeling y:
  ``start[y_0] + sum_t E[t, y_t] + sum_{t>=1} T[y_{t-1}, y_t] + end[y_{n-1}]``.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from sscrf.layout import ParameterLayout


def all_labelings(n, S):
    """All S**n labelings of a chain of n tokens, as an (S**n, n) int64 array.

    Rows are in lexicographic order (itertools.product).
    """
    rows = list(itertools.product(range(S), repeat=n))
    return np.array(rows, dtype=np.int64).reshape(len(rows), n)


def _zeros_if_none(v, S):
    return np.zeros(S) if v is None else np.asarray(v, dtype=np.float64)


def labeling_score(E, T, start, end, y):
    """Score of one labeling y (length n), correctly rounded (math.fsum)."""
    E = np.asarray(E, dtype=np.float64)
    T = np.asarray(T, dtype=np.float64)
    S = T.shape[0]
    start = _zeros_if_none(start, S)
    end = _zeros_if_none(end, S)
    y = [int(v) for v in y]
    n = len(y)
    if n == 0:
        return 0.0
    terms = [start[y[0]], end[y[-1]]]
    terms += [E[t, y[t]] for t in range(n)]
    terms += [T[y[t - 1], y[t]] for t in range(1, n)]
    return math.fsum(float(v) for v in terms)


def labeling_allowed(y, mask=None, edge_mask=None):
    """Whether labeling y is allowed by the node mask and the edge mask."""
    y = [int(v) for v in y]
    if mask is not None and not all(mask[t, y[t]] for t in range(len(y))):
        return False
    if edge_mask is not None and not all(
        edge_mask[t, y[t], y[t + 1]] for t in range(len(y) - 1)
    ):
        return False
    return True


@dataclass
class BruteForce:
    """What ``brute_force`` finds for one chain."""

    n_allowed: int  # number of allowed labelings (0: the masks leave none)
    log_z: float  # log of the sum of exp(score) over allowed labelings
    node: np.ndarray  # (n, S) node marginals P(y_t = b)
    edge: np.ndarray  # (n-1, S, S) edge marginals P(y_t = a, y_{t+1} = b)
    node_support: np.ndarray  # (n, S) bool: some allowed labeling has y_t = b
    edge_support: np.ndarray  # (n-1, S, S) bool: some allowed labeling has y_t=a, y_{t+1}=b
    best_score: float  # max score over allowed labelings
    best: set  # set of tuples: the allowed labelings with exactly the best score
    labelings: np.ndarray  # (K, n) the allowed labelings
    scores: np.ndarray  # (K,) their scores


def brute_force(E, T, start=None, end=None, mask=None, edge_mask=None):
    """Enumerate every labeling of a tiny chain (n <= ~8, S <= ~4).

    Returns a ``BruteForce``. When the masks allow no labeling, ``n_allowed``
    is 0 and the other fields are NaN / empty.
    """
    E = np.asarray(E, dtype=np.float64)
    T = np.asarray(T, dtype=np.float64)
    n, S = E.shape
    start = _zeros_if_none(start, S)
    end = _zeros_if_none(end, S)
    ys = all_labelings(n, S)
    keep = np.ones(len(ys), dtype=bool)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        for t in range(n):
            keep &= mask[t, ys[:, t]]
    if edge_mask is not None:
        edge_mask = np.asarray(edge_mask, dtype=bool)
        for t in range(n - 1):
            keep &= edge_mask[t, ys[:, t], ys[:, t + 1]]
    ys = ys[keep]
    node = np.zeros((n, S))
    edge = np.zeros((max(n - 1, 0), S, S))
    node_support = np.zeros((n, S), dtype=bool)
    edge_support = np.zeros((max(n - 1, 0), S, S), dtype=bool)
    if len(ys) == 0:
        return BruteForce(0, math.nan, node * math.nan, edge * math.nan,
                          node_support, edge_support, math.nan, set(), ys, np.zeros(0))
    # Score of every allowed labeling: the terms of the score, one column
    # each, summed left to right (start, emissions, transitions, end).
    cols = [start[ys[:, 0]]]
    cols += [E[t, ys[:, t]] for t in range(n)]
    cols += [T[ys[:, t - 1], ys[:, t]] for t in range(1, n)]
    cols += [end[ys[:, -1]]]
    scores = np.zeros(len(ys))
    for c in cols:
        scores = scores + c
    best_score = float(scores.max())
    # Stable log-sum-exp: every weight is exp(score - max) in (0, 1].
    w = np.exp(scores - best_score)
    total = math.fsum(w)
    log_z = best_score + math.log(total)
    for t in range(n):
        node[t] = np.bincount(ys[:, t], weights=w, minlength=S) / total
        node_support[t] = np.bincount(ys[:, t], minlength=S) > 0
    for t in range(n - 1):
        pair = ys[:, t] * S + ys[:, t + 1]
        edge[t] = (np.bincount(pair, weights=w, minlength=S * S) / total).reshape(S, S)
        edge_support[t] = (np.bincount(pair, minlength=S * S) > 0).reshape(S, S)
    best = {tuple(int(v) for v in y) for y in ys[scores == best_score]}
    return BruteForce(len(ys), log_z, node, edge, node_support, edge_support,
                      best_score, best, ys, scores)


def random_chain(rng, n, S, scale, start_end=True):
    """Random potentials uniform in [-scale, scale].

    Returns ``(E (n, S), T (S, S), start (S,) or None, end (S,) or None)``.
    """
    E = rng.uniform(-scale, scale, size=(n, S))
    T = rng.uniform(-scale, scale, size=(S, S))
    if not start_end:
        return E, T, None, None
    return E, T, rng.uniform(-scale, scale, size=S), rng.uniform(-scale, scale, size=S)


# ---------------------------------------------------------------------------
# Log-space chain reductions for long sequences.
#
# With edge potentials M_t[a, b] = T[a, b] + E[t, b] (t >= 1), the initial
# vector alpha_0[b] = start[b] + E[0, b] and the final vector end[b],
#     log Z = logsumexp_{a,b} alpha_0[a] + (M_1 (x) ... (x) M_{n-1})[a, b] + end[b]
# where (x) is the log-semiring matrix product
#     (A (x) B)[a, c] = logsumexp_b A[a, b] + B[b, c].
# The product is associative, so it is computed by pairwise tree reduction:
# O(n S^3) work in O(log n) vectorised numpy steps. Replacing logsumexp by max
# gives the Viterbi score.
#
# Every partial product is kept as (offset, A - offset) with max(A - offset)
# = 0: the entries stay small, so rounding does not grow with the length of
# the chain (unnormalised log-alphas of a 10^5-token chain are ~10^5 in size
# and lose ~1e-11 absolute per step). Offsets only add up, into log Z.
# ---------------------------------------------------------------------------


def _logsumexp(x, axis):
    """log(sum(exp(x))) along axis; -inf entries allowed, no warnings."""
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    s = np.sum(np.exp(x - m), axis=axis, keepdims=True)
    out = np.full(s.shape, -np.inf)
    np.log(s, out=out, where=s > 0)
    return np.squeeze(out + m, axis=axis)


def _normalise(M):
    """Split a (K, S, S) stack into per-matrix offsets (K,) and M - offset."""
    m = np.max(M, axis=(1, 2))
    m = np.where(np.isfinite(m), m, 0.0)
    return m, M - m[:, None, None]


def _semiring_product(A, B, semiring):
    """Batched (K, S, S) x (K, S, S) product in the log or max-plus semiring."""
    x = A[:, :, :, None] + B[:, None, :, :]  # (K, a, b, c)
    if semiring == "log":
        return _logsumexp(x, axis=2)
    return np.max(x, axis=2)


def _reduce_chain(M, semiring):
    """Product M[0] (x) M[1] (x) ... (x) M[K-1] of a (K, S, S) stack, by tree.

    Returns ``(offset, P)`` with the product equal to ``offset + P``.
    """
    off, M = _normalise(M)
    while M.shape[0] > 1:
        k = M.shape[0] // 2 * 2  # pair up the first k matrices
        o, P = _normalise(_semiring_product(M[0:k:2], M[1:k:2], semiring))
        o = off[0:k:2] + off[1:k:2] + o
        if k < M.shape[0]:  # an odd one out is carried to the next level
            P = np.concatenate([P, M[k:]], axis=0)
            o = np.concatenate([o, off[k:]])
        off, M = o, P
    return float(off[0]), M[0]


def _potentials(E, T, start, end, mask, edge_mask):
    """alpha_0 (S,), edge stack M (n-1, S, S) and end (S,), masked entries -inf."""
    E = np.asarray(E, dtype=np.float64)
    T = np.asarray(T, dtype=np.float64)
    n, S = E.shape
    start = _zeros_if_none(start, S)
    end = _zeros_if_none(end, S)
    if mask is not None:
        E = np.where(np.asarray(mask, dtype=bool), E, -np.inf)
    alpha0 = start + E[0]
    M = T[None, :, :] + E[1:, None, :]
    if edge_mask is not None:
        M = np.where(np.asarray(edge_mask, dtype=bool), M, -np.inf)
    return alpha0, M, end


def _combine(alpha0, M, end, semiring):
    if M.shape[0] == 0:
        off, P = 0.0, np.zeros((alpha0.shape[0],) * 2)
        P[~np.eye(alpha0.shape[0], dtype=bool)] = -np.inf  # the identity
    else:
        off, P = _reduce_chain(M, semiring)
    x = (alpha0[:, None] + P + end[None, :]).ravel()
    top = _logsumexp(x, axis=0) if semiring == "log" else np.max(x)
    return float(off + top)


def log_forward(E, T, start=None, end=None, mask=None, edge_mask=None):
    """log Z of a chain of any length (log space throughout, tree reduction)."""
    return _combine(*_potentials(E, T, start, end, mask, edge_mask), "log")


def log_viterbi_score(E, T, start=None, end=None, mask=None, edge_mask=None):
    """Best labeling score of a chain of any length (max-plus tree reduction)."""
    return _combine(*_potentials(E, T, start, end, mask, edge_mask), "max")


def node_marginal_at(E, T, t, start=None, end=None):
    """Node marginals P(y_t = .) (S,) of an unmasked chain of any length.

    log alpha_t = alpha_0 (x) M_1 ... M_t, log beta_t = M_{t+1} ... M_{n-1} (x) end,
    P(y_t = b) = exp(log alpha_t[b] + log beta_t[b] - log Z); the offsets of
    the two products cancel in the normalisation and are dropped.
    """
    alpha0, M, end = _potentials(E, T, start, end, None, None)
    n = M.shape[0] + 1
    log_alpha = alpha0
    if t > 0:
        _, left = _reduce_chain(M[:t], "log")
        log_alpha = _logsumexp(alpha0[:, None] + left, axis=0)
    log_beta = end
    if t < n - 1:
        _, right = _reduce_chain(M[t:], "log")
        log_beta = _logsumexp(right + end[None, :], axis=1)
    x = log_alpha + log_beta
    return np.exp(x - _logsumexp(x, axis=0))


def corpus_of_emissions(chains, T, start, end):
    """A compiled corpus whose sentences have the given emission rows (a list
    of (n_s, S) arrays) under the transitions T and start/end weights: token t
    fires attribute t alone, so its emission row is its weight row.

    Returns ``(corpus, layout, theta, offsets)`` for the ``_core`` decoders.
    """
    from sscrf import _core

    E = np.concatenate(chains)
    n_tokens, S = E.shape
    offsets = np.concatenate([[0], np.cumsum([len(c) for c in chains])]).astype(np.int64)
    corpus = _core.Corpus(np.arange(n_tokens + 1, dtype=np.int64),
                          np.arange(n_tokens, dtype=np.int32), np.ones(n_tokens), offsets,
                          n_tokens)
    layout = _core.Layout(np.arange(n_tokens + 1, dtype=np.int64) * S,
                          np.tile(np.arange(S, dtype=np.int32), n_tokens), S)
    theta = np.concatenate([E.ravel(), np.ravel(T), start, end])
    return corpus, layout, theta, offsets


def random_corpus(rng, n_sentences, max_len, A, S, max_attrs=3):
    """CSR arrays of a random labeled corpus plus its dense design matrix.

    Tokens get 0..max_attrs distinct attributes with values in [-2, 2]
    (negatives included); some tokens have none.

    Returns
    -------
    dict with indptr (N+1,) int64, indices (nnz,) int32, values (nnz,),
    offsets (n_sentences+1,) int64, labels (N,) int32, X (N, A) dense.
    """
    lengths = rng.integers(1, max_len + 1, size=n_sentences)
    data = random_rows(rng, lengths, A, max_attrs)
    return dict(data, labels=rng.integers(0, S, size=len(data["X"])).astype(np.int32), S=S)


def random_rows(rng, lengths, A, max_attrs=3):
    """CSR arrays of random feature rows for sentences of the given lengths.

    Tokens get 0..max_attrs distinct attributes with values in [-2, 2];
    returns dict with indptr, indices, values, offsets, X (N, A) dense and A.
    """
    N = int(np.sum(lengths))
    indptr = [0]
    indices, values = [], []
    X = np.zeros((N, A))
    for t in range(N):
        k = int(rng.integers(0, min(max_attrs, A) + 1))
        ids = np.sort(rng.choice(A, size=k, replace=False))
        vals = rng.uniform(-2.0, 2.0, size=k)
        indices.extend(ids.tolist())
        values.extend(vals.tolist())
        X[t, ids] = vals
        indptr.append(len(indices))
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return dict(
        indptr=np.array(indptr, dtype=np.int64),
        indices=np.array(indices, dtype=np.int32),
        values=np.array(values, dtype=np.float64),
        offsets=offsets,
        X=X,
        A=A,
    )


def zipf_rows(rng, lengths, A, max_count, scale):
    """CSR arrays of sentences of the given lengths, each token 1..max_count distinct
    attribute ids below A drawn Zipf-like (``scale`` times a Pareto(1.2) draw), the
    way real text fires a few attributes often and most rarely.

    Returns indptr, indices (int32) and sentence offsets; draws nothing else, so a
    caller draws values, labels and weights after it as it likes.
    """
    N = int(np.sum(lengths))
    counts = rng.integers(1, max_count + 1, size=N)
    token = np.repeat(np.arange(N), counts)
    ids = np.minimum((rng.pareto(1.2, size=len(token)) * scale).astype(np.int64), A - 1)
    # CSR wants distinct, ascending ids within a token: sort, drop repeats.
    order = np.lexsort((ids, token))
    token, ids = token[order], ids[order]
    keep = np.ones(len(ids), dtype=bool)
    keep[1:] = (ids[1:] != ids[:-1]) | (token[1:] != token[:-1])
    token, ids = token[keep], ids[keep]
    indptr = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(np.bincount(token, minlength=N), out=indptr[1:])
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return indptr, ids.astype(np.int32), offsets


def unpack(theta, row_ptr, label_ids, A, S):
    """Dense W (A, S), T (S, S), start (S,), end (S,) from the flat vector θ of a layout."""
    layout = ParameterLayout(row_ptr, label_ids, S)
    assert layout.n_attributes == A and len(theta) == layout.size
    _, T, start, end = layout.split(theta)
    return layout.weight_matrix(theta), T, start, end


def corpus_scores(data, theta, row_ptr, label_ids, S):
    """Emission scores X·W of every token of ``data`` (a :func:`random_corpus`), and T,
    start, end, from the flat vector θ of a layout."""
    W, T, start, end = unpack(theta, row_ptr, label_ids, data["A"], S)
    return data["X"] @ W, T, start, end


def pack_gradient(X, dE_all, dT, dstart, dend, row_ptr, label_ids):
    """A layout's flat gradient from the gradients of every token's emission scores
    (``dE_all``, one row a token of ``X``) and of T, start, end: the inverse of unpack."""
    dW = X.T @ dE_all
    attrs = np.repeat(np.arange(len(row_ptr) - 1), np.diff(row_ptr))
    return np.concatenate([dW[attrs, label_ids], np.ravel(dT), dstart, dend])

"""Lattice kernels on one sequence, with dense arrays.

Conventions shared by every function here:

- ``emissions``: (n, S) float64, ``emissions[t, b]`` scores label ``b`` at token ``t``;
- ``transitions``: (S, S) float64 indexed ``[previous, next]``;
- ``start``, ``end``: (S,) float64 or None (zeros), added to the first and the
  last token's label;
- ``mask``: (n, S) bool or None, True where a label is allowed at a token;
- ``edge_mask``: (n-1, S, S) bool or None, ``edge_mask[t-1, a, b]`` True where
  ``y[t-1] = a, y[t] = b`` is allowed.

The score of a labeling ``y`` is
``start[y0] + Σ_t emissions[t, y_t] + Σ_{t≥1} transitions[y_{t-1}, y_t] + end[y_{n-1}]``
and ``p(y) = exp(score(y) - log Z)`` over the labelings the masks allow.
Wrong shapes, non-finite values, or masks that leave no labeling raise
``ValueError`` naming the argument, a complex array ``TypeError`` (both
SscrfErrors). Integer and float32 inputs are converted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Optional

import numpy as np

from . import _core
from .errors import SscrfError
from .inputs import check_integer, check_real

if TYPE_CHECKING:
    from numpy.typing import NDArray

    #: A dense array (float64; integer and float32 arrays are converted, masks are bool).
    Array = NDArray[Any]

__all__ = [
    "constrained_entropy",
    "entropy_gradient",
    "entropy_lattices",
    "expectation_gradient",
    "log_partition",
    "marginals",
    "nbest",
    "sequence_entropy",
    "span_entropies",
    "span_entropy",
    "viterbi",
]


def log_partition(emissions: Array, transitions: Array, start: Optional[Array] = None,
                  end: Optional[Array] = None, mask: Optional[Array] = None,
                  edge_mask: Optional[Array] = None) -> float:
    """log Z: the log of the summed exp-scores of every allowed labeling.

    Returns
    -------
    float
        0.0 for an empty sequence (its one, empty, labeling scores 0).
    """
    _check_real(emissions=emissions, transitions=transitions, start=start, end=end, mask=mask,
                edge_mask=edge_mask)
    return _core.log_partition(emissions, transitions, start, end, mask, edge_mask)


def marginals(emissions: Array, transitions: Array, start: Optional[Array] = None,
              end: Optional[Array] = None, mask: Optional[Array] = None,
              edge_mask: Optional[Array] = None) -> tuple[Array, Array]:
    """Node and edge marginals by forward-backward.

    Returns
    -------
    node : ndarray (n, S)
        ``node[t, b] = p(y_t = b)``.
    edge : ndarray (n-1, S, S)
        ``edge[t-1, a, b] = p(y_{t-1} = a, y_t = b)``.
    """
    _check_real(emissions=emissions, transitions=transitions, start=start, end=end, mask=mask,
                edge_mask=edge_mask)
    return _core.marginals(emissions, transitions, start, end, mask, edge_mask)


def viterbi(emissions: Array, transitions: Array, start: Optional[Array] = None,
            end: Optional[Array] = None, mask: Optional[Array] = None,
            edge_mask: Optional[Array] = None) -> tuple[Array, float]:
    """The highest-scoring allowed labeling.

    Ties go to the lower label index: at each step the lowest previous label
    among equally good ones, and the lowest final label.

    Returns
    -------
    path : ndarray (n,) int64
    score : float
        ``score(path)``; 0.0 for an empty sequence.
    """
    _check_real(emissions=emissions, transitions=transitions, start=start, end=end, mask=mask,
                edge_mask=edge_mask)
    return _core.viterbi(emissions, transitions, start, end, mask, edge_mask)


def nbest(emissions: Array, transitions: Array, k: int, start: Optional[Array] = None,
          end: Optional[Array] = None, mask: Optional[Array] = None,
          edge_mask: Optional[Array] = None) -> tuple[Array, Array]:
    """The k highest-scoring allowed labelings, best first (exact k-best Viterbi).

    Among labelings of exactly equal score, the lexicographically smaller
    one (label ids read from token 0) comes first. The best one has the same
    score as ``viterbi`` (possibly a different path among exact ties).
    Runs in O(n S (S + k log(S k))) time (up to O(n S² k log(S k)) when many
    scores tie exactly) and O(n S k) memory.

    Parameters
    ----------
    k : int
        How many labelings to return, at least 1; more than there are
        allowed labelings is fine. A ValueError refuses a k whose lattice
        state would pass about 1.3 GB: min(k, S^n)·n·S above 1e8.

    Returns
    -------
    paths : ndarray (m, n) int64
        ``paths[j]`` is the j-th best labeling, ``m = min(k, number of
        allowed labelings)``; an empty sequence has one, empty, labeling
        (shape (1, 0)).
    scores : ndarray (m,) float64
        ``scores[j] = score(paths[j])``, non-increasing.

    Raises
    ------
    ValueError
        ``k < 1``, or the masks allow no labeling, or bad arrays as above.
    TypeError
        ``k`` is not an integer.
    """
    _check_real(emissions=emissions, transitions=transitions, start=start, end=end, mask=mask,
                edge_mask=edge_mask)
    k = check_integer(k, "k", minimum=1)
    # the core takes a C int; no chain can return more labelings anyway
    k = min(k, 2**31 - 1)
    return _core.nbest(emissions, transitions, k, start, end, mask, edge_mask)


# -- entropies and expectations (no masks) -----------------------------------

def sequence_entropy(emissions: Array, transitions: Array, start: Optional[Array] = None,
                     end: Optional[Array] = None) -> float:
    """H(Y | x) of the chain's distribution, >= 0.

    Computed from the H-alpha lattice as a sum of non-negative terms
    (docs/architecture.md, kernel 4), not as ``log Z - E[score]``, which rounding can
    push below zero.
    """
    _check_real(emissions=emissions, transitions=transitions, start=start, end=end)
    return _core.entropy_lattices(emissions, transitions, start, end)[0]


def entropy_lattices(emissions: Array, transitions: Array, start: Optional[Array] = None,
                     end: Optional[Array] = None) -> tuple[float, Array, Array, Array, Array]:
    """Everything the entropy queries are built from, in one O(n S²) pass.

    Returns
    -------
    entropy : float
        H(Y | x).
    token_entropy : ndarray (n,)
        H(Y_t), the entropy of each token's marginal.
    transition_entropy : ndarray (n,)
        H(Y_t | Y_{t-1}) for t >= 1; entry 0 is 0.
    h_alpha : ndarray (n, S)
        ``h_alpha[t, b]``: entropy of the labels before t given ``y_t = b``.
    h_beta : ndarray (n, S)
        ``h_beta[t, a]``: entropy of the labels after t given ``y_t = a``.
    """
    _check_real(emissions=emissions, transitions=transitions, start=start, end=end)
    return _core.entropy_lattices(emissions, transitions, start, end)


def entropy_gradient(emissions: Array, transitions: Array, start: Optional[Array] = None,
                     end: Optional[Array] = None,
                     method: str = "fast") -> tuple[Array, Array, Array, Array]:
    """Gradient of H(Y | x) with respect to every potential.

    Parameters
    ----------
    method : {"fast", "jiao"}
        ``fast``: the O(n S²) covariance kernel (Mann & McCallum 2007);
        ``jiao``: the O(n² S³) nested programme of Jiao et al. (2006) §3, kept
        as an independent reference (it works in scaled probabilities and
        refuses chains whose probabilities underflow them).

    Returns
    -------
    d_emissions : ndarray (n, S)
    d_transitions : ndarray (S, S)
    d_start, d_end : ndarray (S,)
        The start and end weights enter the score as ``emissions[0]`` and
        ``emissions[n-1]`` do, so their gradients are those rows.
    """
    _check_real(emissions=emissions, transitions=transitions, start=start, end=end)
    _, d_e, d_t = _core.entropy_gradient(emissions, transitions, start, end, method)
    return _with_start_end(d_e, d_t)


def expectation_gradient(emissions: Array, transitions: Array, node_scores: Array,
                         edge_scores: Optional[Array], start: Optional[Array] = None,
                         end: Optional[Array] = None) -> tuple[float, Array, Array, Array, Array]:
    """E_p[r(y)] of an additive score and its gradient (the covariance kernel).

    ``r(y) = Σ_t node_scores[t, y_t] + Σ_{t≥1} edge_scores[t-1, y_{t-1}, y_t]``;
    the gradient of ``E_p[r]`` with respect to a potential is ``Cov_p[F, r]``
    for its indicator feature F. Build differentiable objectives on
    expectations with it.

    Parameters
    ----------
    node_scores : ndarray (n, S)
    edge_scores : ndarray (n-1, S, S), or None for a score without edge
        terms (as GE's: the kernel then skips the edge products)

    Returns
    -------
    expectation : float
    d_emissions : ndarray (n, S)
    d_transitions : ndarray (S, S)
    d_start, d_end : ndarray (S,)
    """
    _check_real(emissions=emissions, transitions=transitions, start=start, end=end,
                node_scores=node_scores, edge_scores=edge_scores)
    expectation, d_e, d_t = _core.expectation_gradient(
        emissions, transitions, node_scores, edge_scores, start, end)
    return (expectation,) + _with_start_end(d_e, d_t)


def span_entropy(emissions: Array, transitions: Array, begin: int, stop: int,
                 start: Optional[Array] = None, end: Optional[Array] = None) -> float:
    """Entropy of the posterior over the labels ``y[begin:stop]``.

    ``H(Y_begin) + Σ_{t=begin+1}^{stop-1} H(Y_t | Y_{t-1})`` by the Markov
    property; O(n S²) for the lattice, O(1) for the span.
    """
    _check_real(emissions=emissions, transitions=transitions, start=start, end=end)
    _, token, transition, _, _ = _core.entropy_lattices(emissions, transitions, start, end)
    n = len(token)
    begin, stop = _check_span(begin, stop, n)
    if stop == begin:
        return 0.0
    return max(0.0, float(token[begin] + transition[begin + 1:stop].sum()))


def span_entropies(emissions: Array, transitions: Array, width: int, start: Optional[Array] = None,
                   end: Optional[Array] = None) -> Array:
    """:func:`span_entropy` of every span of ``width`` tokens, in one call.

    Returns
    -------
    ndarray (max(n - width + 1, 0),)
        Entry ``i`` is the entropy of ``y[i:i+width]``.
    """
    _check_real(emissions=emissions, transitions=transitions, start=start, end=end)
    _, token, transition, _, _ = _core.entropy_lattices(emissions, transitions, start, end)
    return spans_from_lattices(token, transition, width)


def constrained_entropy(emissions: Array, transitions: Array, begin: int, labels: Sequence[int],
                        start: Optional[Array] = None, end: Optional[Array] = None) -> float:
    """Entropy of the labels outside ``[begin, begin+len(labels))`` given the span is ``labels``.

    By the Markov property only the span's end labels matter:
    ``h_alpha[begin, labels[0]] + h_beta[last, labels[-1]]``.
    """
    _check_real(emissions=emissions, transitions=transitions, start=start, end=end)
    _, token, _, h_alpha, h_beta = _core.entropy_lattices(emissions, transitions, start, end)
    n, S = h_alpha.shape
    labels = [check_integer(l, "a label id") for l in labels]
    if not labels:
        raise SscrfError("labels must name at least one label")
    begin, stop = _check_span(begin, begin + len(labels), n)
    if any(not 0 <= l < S for l in labels):
        raise SscrfError(f"labels must be label ids in [0, {S})")
    return float(h_alpha[begin, labels[0]] + h_beta[stop - 1, labels[-1]])


def spans_from_lattices(token_entropy: Array, transition_entropy: Array, width: int) -> Array:
    """Entropies of all spans of ``width`` from token and transition entropies (prefix sums)."""
    n = len(token_entropy)
    width = check_integer(width, "width", minimum=1)
    if width > n:
        return np.zeros(0)
    prefix = np.concatenate([[0.0], np.cumsum(transition_entropy)])
    begins = np.arange(n - width + 1)
    out = token_entropy[begins] + prefix[begins + width] - prefix[begins + 1]
    return np.maximum(out, 0.0)


def _check_span(begin: int, stop: int, n: int) -> tuple[int, int]:
    begin, stop = check_integer(begin, "begin"), check_integer(stop, "stop")
    if not 0 <= begin <= stop <= n:
        raise SscrfError(f"span [{begin}, {stop}) is not inside a sequence of {n} tokens")
    return begin, stop


def _with_start_end(d_e: Array, d_t: Array) -> tuple[Array, Array, Array, Array]:
    S = d_t.shape[0]
    if len(d_e) == 0:
        return d_e, d_t, np.zeros(S), np.zeros(S)
    return d_e, d_t, d_e[0].copy(), d_e[-1].copy()


def _check_real(**arrays: Optional[Array]) -> None:
    for name, value in arrays.items():
        check_real(value, name)

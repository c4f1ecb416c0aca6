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
``ValueError`` naming the argument. Integer and float32 inputs are converted.
"""

from . import _core

__all__ = ["log_partition", "marginals", "viterbi"]


def log_partition(emissions, transitions, start=None, end=None, mask=None, edge_mask=None):
    """log Z: the log of the summed exp-scores of every allowed labeling.

    Returns
    -------
    float
        0.0 for an empty sequence (its one, empty, labeling scores 0).
    """
    return _core.log_partition(emissions, transitions, start, end, mask, edge_mask)


def marginals(emissions, transitions, start=None, end=None, mask=None, edge_mask=None):
    """Node and edge marginals by forward-backward.

    Returns
    -------
    node : ndarray (n, S)
        ``node[t, b] = p(y_t = b)``.
    edge : ndarray (n-1, S, S)
        ``edge[t-1, a, b] = p(y_{t-1} = a, y_t = b)``.
    """
    return _core.marginals(emissions, transitions, start, end, mask, edge_mask)


def viterbi(emissions, transitions, start=None, end=None, mask=None, edge_mask=None):
    """The highest-scoring allowed labeling.

    Ties go to the lower label index: at each step the lowest previous label
    among equally good ones, and the lowest final label.

    Returns
    -------
    path : ndarray (n,) int64
    score : float
        ``score(path)``; 0.0 for an empty sequence.
    """
    return _core.viterbi(emissions, transitions, start, end, mask, edge_mask)

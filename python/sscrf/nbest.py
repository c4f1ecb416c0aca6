"""N-best labelings of sentences under a fitted CRF, with their log probabilities.

Kept for its import path; the decoding lives in :mod:`sscrf.decoding`
(:meth:`sscrf.CRF.predict_nbest`).
"""

from __future__ import annotations

from typing import Any

from .decoding import labelings_with_log_p

__all__ = ["labelings_with_log_p", "nbest_from_model"]


def nbest_from_model(model: Any, X: Any, k: int) -> list[list[tuple[list[Any], float]]]:
    """The k most probable labelings of each sentence under a fitted CRF.

    Parameters
    ----------
    model : sscrf.CRF
        A fitted (or loaded) model.
    X : list of sentences
        Tokens in the form the model was trained on; a sentence may be empty.
    k : int
        Labelings per sentence, at least 1.

    Returns
    -------
    list of list of (list of str, float)
        Per sentence, ``min(k, S**n)`` pairs ``(labels, log p(labels | x))``,
        most probable first; among exactly equal scores the labeling whose
        label ids are lexicographically smaller comes first. An empty sentence
        gets ``[([], 0.0)]``.

    Raises
    ------
    SscrfError
        ``k < 1`` (a ValueError).
    SscrfTypeError
        ``k`` is not an integer (a TypeError).
    """
    return model.predict_nbest(X, k)

"""A corpus as one flat token list with sentence lengths, and where token i sits in it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import SscrfTypeError

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["flatten_corpus", "locate"]


def flatten_corpus(X: Any, prefix: str) -> tuple[list[Any], NDArray[np.int64]]:
    """All tokens of a corpus in one list, and the sentence lengths.

    Returns
    -------
    tokens : list
    lengths : ndarray of int64, shape (n_sentences,)
    """
    if isinstance(X, (str, bytes, Mapping)) or not hasattr(X, "__iter__"):
        raise SscrfTypeError(f"{prefix}X must be a list of sentences, not {type(X).__name__}")
    tokens: list[Any] = []
    lengths: list[int] = []
    for s, sentence in enumerate(X):
        if type(sentence) is not list and not isinstance(sentence, (list, tuple)):
            raise SscrfTypeError(
                f"{prefix}sentence {s}: a sentence must be a list or tuple of tokens, "
                f"not {type(sentence).__name__}"
            )
        tokens += sentence
        lengths.append(len(sentence))
    return tokens, np.array(lengths, dtype=np.int64)


def locate(prefix: str, lengths: NDArray[np.int64], i: int) -> str:
    """'[corpus k, ]sentence s, token t' for the i-th token of a corpus."""
    ends = np.cumsum(lengths)
    s = int(np.searchsorted(ends, i, side="right"))
    t = i - int(ends[s] - lengths[s])
    return f"{prefix}sentence {s}, token {t}"

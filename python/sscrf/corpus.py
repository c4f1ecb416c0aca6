"""Compiling a corpus under a frozen vocabulary: feature rows to a ``_core.Corpus``.

The vocabulary (:class:`sscrf.features.FeatureExtractor`) turns sentences into
CSR feature rows (:class:`sscrf.features.Features`); this module turns those
rows, with optional token labels, sentence weights and label masks, into the
compiled corpus the C++ kernels read, and takes row subsets of sentences.
"""

from typing import Any, Optional

import numpy as np
from numpy.typing import NDArray

from . import _core
from .features import Features

__all__ = ["compile_corpus", "subset_features"]


def _ranges(starts: Any, stops: Any) -> NDArray[np.int64]:
    """Concatenation of ``arange(a, b)`` for each pair (vectorised)."""
    starts = np.asarray(starts, dtype=np.int64)
    lengths = np.asarray(stops, dtype=np.int64) - starts
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    keep = lengths > 0
    starts, lengths = starts[keep], lengths[keep]
    ends = np.cumsum(lengths)
    step = np.ones(total, dtype=np.int64)
    step[0] = starts[0]
    step[ends[:-1]] = starts[1:] - (starts[:-1] + lengths[:-1] - 1)
    return np.cumsum(step)


def subset_features(features: Features, sentences: Any
                    ) -> tuple[Features, NDArray[np.int64]]:
    """The rows of ``features`` (a :class:`sscrf.features.Features`) of the given sentences.

    ``sentences`` may repeat a sentence. Returns ``(Features, token_index)``
    where ``token_index`` maps the new tokens to the old ones.
    """
    sentences = np.asarray(sentences, dtype=np.int64)
    offsets = np.asarray(features.offsets)
    tokens = _ranges(offsets[sentences], offsets[sentences + 1])
    indptr = np.asarray(features.indptr)
    entries = _ranges(indptr[tokens], indptr[tokens + 1])
    new_indptr = np.zeros(len(tokens) + 1, dtype=np.int64)
    np.cumsum(indptr[tokens + 1] - indptr[tokens], out=new_indptr[1:])
    new_offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
    np.cumsum(offsets[sentences + 1] - offsets[sentences], out=new_offsets[1:])
    sub = Features(new_indptr, np.ascontiguousarray(features.indices[entries]),
                   np.ascontiguousarray(features.values[entries]), new_offsets,
                   features.n_attributes)
    return sub, tokens


def compile_corpus(features: Features, labels: Any = None,
                   weights: Any = None, mask: Any = None,
                   edge_mask: Any = None, n_labels: Optional[int] = None
                   ) -> _core.Corpus:
    """A :class:`sscrf._core.Corpus` of ``features`` with optional labels, weights and masks;
    with ``n_labels``, chunked for training a model of that many labels."""
    chunk = {} if n_labels is None else {"chunk_tokens": _core.chunk_tokens_for(n_labels)}
    return _core.Corpus(features.indptr, features.indices, features.values, features.offsets,
                        features.n_attributes, labels, weights, mask, edge_mask, **chunk)

"""The attribute vocabulary, built in steps: count, merge in order, cut by frequency, freeze.

:meth:`FeatureExtractor.fit <sscrf.features.FeatureExtractor.fit>` runs these
steps on one machine. They are public so that counting can run on shards of
a corpus, each shard on its own worker, and the vocabulary be the same as
that of one pass::

    fx = FeatureExtractor(default_templates(2), min_freq=2)
    counts = merge_counts([fx.count(shard) for shard in shards])
    fx.set_vocabulary(counts.freeze(fx.min_freq))
    X = fx.transform(corpus)          # a corpus compiled under the frozen vocabulary

Ids go to attributes by frequency, most frequent first, ties in order of
first occurrence. Counts add up, and the first occurrence of an attribute in
shards read one after another is its first occurrence in the first shard that
has it, so merging the shards' counts in shard order gives the vocabulary of
one pass over the shards concatenated in that order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Optional

import numpy as np

from .. import _core
from ..errors import SscrfError
from .csr import renumber

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from .csr import Features

#: Ids per slice in :func:`token_counts`.
_SLICE = 1 << 22

__all__ = ["AttributeCounts", "Vocabulary", "frequency_order", "limit_features", "merge_counts",
           "token_counts"]


class AttributeCounts:
    """Attribute strings in order of first occurrence, and how many tokens each fires at.

    Built by :meth:`FeatureExtractor.count <sscrf.features.FeatureExtractor.count>`;
    combined with :meth:`merge` or :func:`merge_counts`; turned into a
    :class:`Vocabulary` by :meth:`freeze`.

    Parameters
    ----------
    strings : sequence of str
        Distinct attribute strings, in order of first occurrence.
    counts : array-like of int, shape (len(strings),)
        ``counts[i]``: the number of tokens attribute ``strings[i]`` occurs in.

    n_columns : int or None
        Template mode: the fewest columns of any token counted (None in dict
        mode or without tokens).

    Attributes
    ----------
    strings : list of str
    counts : ndarray of int64, shape (len(strings),)
    n_columns : int or None
    """

    def __init__(self, strings: Iterable[str], counts: ArrayLike,
                 n_columns: Optional[int] = None) -> None:
        strings = list(strings)
        counts = np.asarray(counts)
        if counts.ndim != 1 or len(counts) != len(strings):
            raise SscrfError(
                f"attribute counts: {len(strings)} strings but counts of shape {counts.shape}")
        if counts.dtype.kind not in "iu" or (counts < 0).any():
            raise SscrfError("attribute counts must be non-negative integers")
        self.strings = strings
        self.counts = counts.astype(np.int64, copy=False)
        self.n_columns = n_columns

    def __len__(self) -> int:
        """Number of distinct attributes counted."""
        return len(self.strings)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AttributeCounts):
            return NotImplemented
        return (self.strings == other.strings and np.array_equal(self.counts, other.counts)
                and self.n_columns == other.n_columns)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"<AttributeCounts: {len(self.strings)} attributes, "
                f"{int(self.counts.sum())} firings>")

    def merge(self, other: AttributeCounts) -> AttributeCounts:
        """Counts of ``self``'s sentences followed by ``other``'s.

        Parameters
        ----------
        other : AttributeCounts

        Returns
        -------
        AttributeCounts
            ``self``'s strings in their order, then ``other``'s new strings in
            theirs; counts added.
        """
        return merge_counts([self, other])

    def frequency_order(self, min_freq: int = 1, max_features: Optional[int] = None
                        ) -> NDArray[np.int64]:
        """Positions of the attributes kept by ``min_freq`` and ``max_features``, in final
        id order.

        Parameters
        ----------
        min_freq : int
            Attributes occurring in fewer tokens are dropped.
        max_features : int or None
            Keep at most this many attributes, the most frequent (ties to the
            first occurrence).

        Returns
        -------
        ndarray of int64, shape (n_kept,)
            Entry ``i`` is the position in :attr:`strings` of the attribute
            that gets id ``i``: most frequent first, ties in order of first
            occurrence.
        """
        return frequency_order(self.counts, min_freq, max_features)

    def freeze(self, min_freq: int = 1, max_features: Optional[int] = None) -> Vocabulary:
        """The vocabulary these counts give under a ``min_freq`` cutoff and a
        ``max_features`` bound.

        Parameters
        ----------
        min_freq : int
        max_features : int or None
            See :func:`frequency_order`.

        Returns
        -------
        Vocabulary
        """
        order = self.frequency_order(min_freq, max_features)
        return Vocabulary([self.strings[i] for i in order.tolist()], self.n_columns)


def merge_counts(counts: Iterable[AttributeCounts]) -> AttributeCounts:
    """Merge attribute counts in the given order.

    Parameters
    ----------
    counts : sequence of AttributeCounts
        E.g. one per shard of a corpus, in shard order.

    Returns
    -------
    AttributeCounts
        The counts one pass over the shards, read in this order, would give.
    """
    counts = list(counts)
    if not counts:
        raise SscrfError("merge_counts needs at least one AttributeCounts")
    for c in counts:
        if not isinstance(c, AttributeCounts):
            raise SscrfError(f"merge_counts takes AttributeCounts, not {type(c).__name__}")
    strings = list(counts[0].strings)
    try:
        index = _core.AttributeIndex(strings)
    except ValueError:
        raise SscrfError("attribute counts contain repeated strings") from None
    total = counts[0].counts.copy()
    for c in counts[1:]:
        ids = index.intern(c.strings, True, strings)
        grown = np.zeros(len(strings), dtype=np.int64)
        grown[: len(total)] = total
        np.add.at(grown, ids, c.counts)
        total = grown
    widths = [c.n_columns for c in counts if c.n_columns is not None]
    return AttributeCounts(strings, total, min(widths) if widths else None)


def frequency_order(counts: NDArray[np.int64], min_freq: int = 1,
                    max_features: Optional[int] = None) -> NDArray[np.int64]:
    """Ids kept by ``min_freq`` and ``max_features``, most frequent first, ties in id order.

    Parameters
    ----------
    counts : ndarray of int64, shape (n_ids,)
        Tokens each id occurs in; ids in order of first occurrence.
    min_freq : int
    max_features : int or None
        Keep only the first ``max_features`` ids of that order: the most
        frequent, an attribute tied at the cut kept if it occurred first.

    Returns
    -------
    ndarray of int64, shape (n_kept,)
        Entry ``i``: the id that becomes id ``i``.
    """
    kept = np.flatnonzero(counts >= min_freq)
    # Scoring reads an attribute's weights at each of its occurrences;
    # numbered by frequency, the weights read most often share cache lines.
    order = kept[np.argsort(-counts[kept], kind="stable")]
    return order if max_features is None else order[:max_features]


def limit_features(attributes: list[str], features: list[Features],
                   max_features: Optional[int]) -> tuple[list[str], list[Features]]:
    """Keep the first ``max_features`` attributes of a vocabulary numbered by frequency.

    :meth:`FeatureExtractor.fit <sscrf.features.FeatureExtractor.fit>` numbers
    attributes most frequent first (ties to the first occurrence), so the
    first ``max_features`` ids are the ones :func:`frequency_order` keeps
    under that bound; the matrices are renumbered, nothing is extracted again.

    Parameters
    ----------
    attributes : list of str
        Id → attribute string, in frequency order.
    features : list of Features
        Matrices under those ids.
    max_features : int or None
        None keeps everything.

    Returns
    -------
    (list of str, list of Features)
    """
    if max_features is None or max_features >= len(attributes):
        return attributes, features
    new_id = np.full(len(attributes), -1, dtype=np.int64)
    new_id[:max_features] = np.arange(max_features)
    return (attributes[:max_features],
            [renumber(f, new_id, max_features) for f in features])


def token_counts(features: Iterable[Features], n_ids: int) -> NDArray[np.int64]:
    """Number of tokens each attribute id occurs in, over several corpora.

    Parameters
    ----------
    features : iterable of Features
        Corpora under one id space (ids unique within each token).
    n_ids : int

    Returns
    -------
    ndarray of int64, shape (n_ids,)
    """
    counts = np.zeros(n_ids, dtype=np.int64)
    for f in features:
        # a slice at a time: bincount copies its input to intp, and a
        # memory-mapped corpus's ids need not fit in memory at once
        for start in range(0, len(f.indices), _SLICE):
            counts += np.bincount(f.indices[start:start + _SLICE], minlength=n_ids)
    return counts


class Vocabulary:
    """A frozen attribute vocabulary: id → attribute string.

    Parameters
    ----------
    attributes : sequence of str
        Distinct strings; attribute ``i`` gets id ``i``.
    n_columns : int or None
        Template mode: the fewest columns of any token the vocabulary was
        counted on (see :class:`AttributeCounts`).

    Attributes
    ----------
    attributes : list of str
    n_columns : int or None
    """

    def __init__(self, attributes: Iterable[str], n_columns: Optional[int] = None) -> None:
        attributes = list(attributes)
        if not all(isinstance(a, str) for a in attributes):
            raise SscrfError("a vocabulary's attributes must be strings")
        self.attributes = attributes
        self.n_columns = n_columns
        self._index: Optional[_core.AttributeIndex] = None

    def __len__(self) -> int:
        """Number of attributes."""
        return len(self.attributes)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Vocabulary):
            return NotImplemented
        return self.attributes == other.attributes and self.n_columns == other.n_columns

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<Vocabulary: {len(self.attributes)} attributes>"

    def __getstate__(self) -> dict[str, Any]:
        return {"attributes": self.attributes, "n_columns": self.n_columns, "_index": None}

    def index(self) -> _core.AttributeIndex:
        """The compiled string → id table (built once, shared).

        Returns
        -------
        sscrf._core.AttributeIndex

        Raises
        ------
        SscrfError
            If an attribute string is repeated.
        """
        if self._index is None:
            try:
                self._index = _core.AttributeIndex(self.attributes)
            except ValueError:
                raise SscrfError("a vocabulary's attributes contain repeated strings") from None
        return self._index

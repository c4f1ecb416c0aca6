"""The interned corpus: a CSR design matrix of tokens × attributes plus sentence offsets.

``Features`` is what the compiled core multiplies with the weight matrix
(``E = X·W``); the helpers here build and renumber it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple, cast

import numpy as np

from .. import _core

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["Features", "csr_from_matrix", "is_ones", "large_values", "ones", "renumber"]

#: Entries per slice when scanning values: bounds the temporaries.
_SLICE = 1 << 20


class Features(NamedTuple):
    """A corpus as a CSR design matrix plus sentence offsets.

    Attributes
    ----------
    indptr : ndarray of int64, shape (n_tokens + 1,)
        Token t's attributes are ``indices[indptr[t]:indptr[t + 1]]``.
    indices : ndarray of int32, shape (nnz,)
        Attribute ids, unique and ascending within each token.
    values : ndarray of float64, shape (nnz,)
        Attribute values (duplicates of one attribute in a token summed).
        When every value is 1.0 (string and boolean features), a read-only
        view of a single 1.0 (``np.broadcast_to``) that takes no memory.
    offsets : ndarray of int64, shape (n_sentences + 1,)
        Sentence s is tokens ``offsets[s]:offsets[s + 1]``; an empty sentence
        repeats an offset.
    n_attributes : int
        Vocabulary size, the number of columns of the matrix.
    """

    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    offsets: np.ndarray
    n_attributes: int

    @property
    def n_sentences(self) -> int:
        """Number of sentences."""
        return len(self.offsets) - 1

    @property
    def n_tokens(self) -> int:
        """Number of tokens over all sentences."""
        return len(self.indptr) - 1

    @property
    def nnz(self) -> int:
        """Number of stored (token, attribute) entries."""
        return len(self.indices)


def ones(n: int) -> NDArray[np.float64]:
    """A read-only float64 array of ``n`` ones that stores one value (stride 0)."""
    return np.broadcast_to(np.float64(1.0), (n,))


def is_ones(values: NDArray[Any]) -> bool:
    """True for the constant arrays of :func:`ones`."""
    return values.ndim == 1 and values.strides == (0,) and (len(values) == 0 or values[0] == 1.0)


def large_values(features: Features, bound: float
                 ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The attributes whose largest ``|value|`` in ``features`` exceeds ``bound``.

    Returns ``(ids, largest)``: attribute ids in increasing order (int64) and
    their largest absolute values. Constant-one values (:func:`ones`) cost nothing.
    """
    largest: dict[int, float] = {}
    if not is_ones(features.values):
        for start in range(0, features.nnz, _SLICE):
            magnitudes = np.abs(features.values[start:start + _SLICE])
            hits = np.flatnonzero(magnitudes > bound)
            ids, which = np.unique(features.indices[start + hits], return_inverse=True)
            top = np.zeros(len(ids))
            np.maximum.at(top, which, magnitudes[hits])
            for a, m in zip(ids.tolist(), top.tolist()):
                largest[a] = max(m, largest.get(a, 0.0))
    ids = np.array(sorted(largest), dtype=np.int64)
    return ids, np.array([largest[a] for a in ids.tolist()], dtype=np.float64)


def csr_from_matrix(matrix: NDArray[np.int32], offsets: NDArray[np.int64], n_ids: int
                    ) -> Features:
    """CSR from one attribute id per (token, template); -1 means absent.

    Parameters
    ----------
    matrix : ndarray of int32, shape (N, J)
        Sorted in place along rows. An id repeated in a row (two templates
        producing the same string) becomes one entry with the count as value.
    offsets : ndarray of int64, shape (n_sentences + 1,)
    n_ids : int

    Returns
    -------
    Features
    """
    n, width = matrix.shape
    matrix.sort(axis=1)
    flat = matrix.ravel()
    # Runs of equal ids within a row; a row always starts a new run.
    new = np.ones(len(flat), dtype=bool)
    np.not_equal(flat[1:], flat[:-1], out=new[1:])
    new[::width] = True
    starts = np.flatnonzero(new)
    run_lengths = np.diff(starts, append=len(flat))
    ids = flat[starts]
    known = ids >= 0
    starts, run_lengths, ids = starts[known], run_lengths[known], ids[known]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(starts // width, minlength=n), out=indptr[1:])
    # A count above 1 only where two templates give the same string.
    values = ones(len(ids)) if (run_lengths == 1).all() else run_lengths.astype(np.float64)
    return Features(indptr, ids.astype(np.int32), values, offsets, n_ids)


def renumber(features: Features, new_id: NDArray[np.int64], n_ids: int) -> Features:
    """Map provisional ids through ``new_id`` (-1 = dropped) and sort each
    token's ids again (ascending, as every Features has them)."""
    constant = is_ones(features.values)
    indptr, indices, values = _core.renumber_csr(features.indptr, features.indices,
                                                 None if constant else features.values, new_id)
    # the core gives values back whenever it was given some
    return Features(indptr, indices,
                    ones(len(indices)) if constant else cast("NDArray[Any]", values),
                    features.offsets, n_ids)

"""Real-valued word vectors added to template features.

Templates make binary attributes from token columns. A
:class:`~sscrf.representations.WordVectors` adds, to every token whose word
(one column) has a vector, the attributes ``<name>0`` ... ``<name>{d-1}``
with the vector's entries as values: what
:meth:`sscrf.WordRepresentations.features` gives a feature-dict user, for
template users and the command line.

The vector attributes are interned one after another, so that their ids are
consecutive (they occur at the same tokens, so the frequency order keeps
them together); a token's row is then its template ids below the block, the
block, and the rest, with no sort.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from .. import _core
from ..errors import SscrfError, SscrfTypeError
from ..inputs import is_integer
from .csr import Features, is_ones
from .sentences import locate

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import NDArray

__all__ = ["check_vector_spec", "column_words", "vector_names", "with_vectors"]

_SPEC_KEYS = {"name", "column", "scale", "dim", "sha256"}


def check_vector_spec(spec: Any, where: str = "feature state") -> dict[str, Any]:
    """A word-vector spec as model files store it, validated."""
    if not isinstance(spec, Mapping) or set(spec) != _SPEC_KEYS:
        raise SscrfError(f"{where}: 'word_vectors' must be a dict with keys {sorted(_SPEC_KEYS)}")
    if not (isinstance(spec["name"], str) and spec["name"] and "\0" not in spec["name"]):
        raise SscrfError(f"{where}: bad word-vector name {spec['name']!r}")
    for key in ("column", "dim"):
        if not is_integer(spec[key]) or not 0 <= spec[key] <= 1_000_000:
            raise SscrfError(f"{where}: bad word-vector {key} {spec[key]!r}")
    if (not isinstance(spec["scale"], (int, float)) or isinstance(spec["scale"], bool)
            or not 0 < spec["scale"] < 1e6):
        raise SscrfError(f"{where}: bad word-vector scale {spec['scale']!r}")
    if not isinstance(spec["sha256"], str) or len(spec["sha256"]) != 64:
        raise SscrfError(f"{where}: bad word-vector checksum {spec['sha256']!r}")
    return dict(spec)


def vector_names(spec: Mapping[str, Any]) -> list[str]:
    """The attributes of a vector's entries, in order."""
    return [f"{spec['name']}{j}" for j in range(spec["dim"])]


def column_words(tokens: Sequence[Any], lengths: NDArray[np.int64], column: int,
                 prefix: str) -> list[str]:
    """Column ``column`` of every token (a str), or an error naming the token."""
    try:
        words = [token[column] for token in tokens]
    except (IndexError, TypeError, KeyError):
        words = []
    if len(words) == len(tokens) and set(map(type, words)) <= {str}:
        return words
    for i, token in enumerate(tokens):
        if not isinstance(token, (list, tuple)) or len(token) <= column:
            raise SscrfError(f"{locate(prefix, lengths, i)}: the word vectors read column "
                             f"{column}, which the token does not have")
        if not isinstance(token[column], str):
            raise SscrfTypeError(f"{locate(prefix, lengths, i)}: column {column} is "
                                 f"{type(token[column]).__name__}, not str")
    raise AssertionError("unreachable")


def with_vectors(features: Features, rows: NDArray[np.int64], table: NDArray[np.float64],
                 ids: NDArray[np.int64], n_attributes: int) -> Features:
    """``features`` with each token t of ``rows[t] >= 0`` given the attributes
    ``ids`` (the vector's, in dimension order; -1: not in the vocabulary) with
    values ``table[rows[t]]``.

    ``ids`` must not occur among the template ids (whose attributes start
    with ``U``).
    """
    kept = np.flatnonzero(ids >= 0)
    if len(kept) == 0:
        return features._replace(n_attributes=n_attributes)
    vids = ids[kept].astype(np.int32)
    d = len(vids)
    # consecutive ids go in place; others (a vocabulary built elsewhere) at the
    # row's end, the rows sorted after
    in_place = bool((np.diff(vids) == 1).all())
    known = rows >= 0
    indptr = features.indptr
    n_template = np.diff(indptr)
    added = known.astype(np.int64) * d
    out_indptr = np.zeros(len(indptr), dtype=np.int64)
    np.cumsum(n_template + added, out=out_indptr[1:])
    nnz = int(out_indptr[-1])
    indices = np.empty(nnz, dtype=np.int32)
    values = np.empty(nnz, dtype=np.float64)
    # template entries: shifted past the block when their id is above it
    shift = np.repeat(out_indptr[:-1] - indptr[:-1], n_template)
    if in_place:
        below = np.zeros(len(features.indices) + 1, dtype=np.int64)
        np.cumsum(features.indices < vids[0], out=below[1:])
        split = below[indptr[1:]] - below[indptr[:-1]]  # template ids below the block
        shift += np.where(features.indices > vids[0], np.repeat(added, n_template), 0)
    else:
        split = n_template
    at = np.arange(len(features.indices), dtype=np.int64) + shift
    indices[at] = features.indices
    values[at] = 1.0 if is_ones(features.values) else features.values
    # the block: d consecutive slots from the token's split point
    tokens = np.flatnonzero(known)
    start = out_indptr[:-1][tokens] + split[tokens]
    at = (start[:, None] + np.arange(d)).ravel()
    indices[at] = np.tile(vids, len(tokens))
    values[at] = table[rows[tokens]][:, kept].ravel()
    if not (np.abs(values[at]) <= _core.MAX_SCORE).all():
        raise SscrfError(f"a word vector's entry is not finite or above {_core.MAX_SCORE:g}")
    if not in_place:
        out_indptr, indices, sorted_values = _core.renumber_csr(
            out_indptr, indices, values, np.arange(n_attributes, dtype=np.int64))
        values = cast("NDArray[np.float64]", sorted_values)
    return Features(out_indptr, indices, values, features.offsets, n_attributes)

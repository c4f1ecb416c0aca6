"""Feature hashing: attribute strings to ``2**k`` buckets, with no vocabulary.

An attribute string ``s`` goes to bucket
``fnv1a_64(s.encode("utf-8", "surrogatepass")) mod 2**k`` (a lone surrogate, which
a Python str may hold, is encoded like any other code point, as the vocabulary's
keys are),
where ``fnv1a_64`` is the 64-bit FNV-1a hash (offset basis
``0xcbf29ce484222325``, prime ``0x100000001b3``). It is fixed, documented and
platform-independent, so a model trained with ``2**k`` buckets tags text
hashed anywhere else the same way.

Attributes of one token that share a bucket: binary ones (value 1.0, as
every template attribute is) count once, as ``HashingVectorizer(binary=True)``
counts them, so that a binary corpus stays binary and needs no values (4
bytes an entry in a compiled corpus, not 12); if any of them has another
value, the bucket's value is the sum of theirs. Extractors saved before
this rule (their state has no ``hash_collisions``) add every collision up,
and still do.

Example
-------
>>> hash_bucket("U00:the", 2**4) == fnv1a_64(b"U00:the") % 16
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..errors import SscrfError, SscrfTypeError
from ..inputs import is_integer
from .csr import Features, is_ones, ones

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["BucketNames", "COLLISION_RULES", "FNV_OFFSET", "FNV_PRIME", "MAX_HASH_BITS",
           "check_hash_features", "fnv1a_64", "hash_bucket", "hash_buckets", "hashed"]

FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
_MASK = (1 << 64) - 1

#: How attributes of one token that share a bucket combine: "once" (binary
#: ones count once; the rule now) and "sum" (extractors saved before it).
COLLISION_RULES = ("once", "sum")

#: Most bits: bucket ids are int32 in the design matrix.
MAX_HASH_BITS = 30


class BucketNames(Sequence[str]):
    """The names ``"#0"``, ``"#1"``, ... of ``n`` hash buckets, built on access.

    Stands for a hashed extractor's attribute list, which has no strings.

    Parameters
    ----------
    n : int
    """

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [f"#{b}" for b in range(*i.indices(self.n))]
        if not -self.n <= i < self.n:
            raise IndexError("bucket index out of range")
        return f"#{i % self.n}"

    def __repr__(self) -> str:
        return f"BucketNames({self.n})"


def check_hash_features(n_buckets: object, name: str = "hash_features") -> int:
    """Validate a bucket count: a power of two ``2**k`` with ``1 <= k <= 30``.

    Parameters
    ----------
    n_buckets : int
    name : str
        The argument's name in the message.

    Returns
    -------
    int

    Raises
    ------
    SscrfTypeError
        If it is not an integer.
    SscrfError
        If it is not a power of two in range.
    """
    if isinstance(n_buckets, bool) or not is_integer(n_buckets):
        raise SscrfTypeError(f"{name} must be an int power of two such as 2**18, "
                             f"not {type(n_buckets).__name__}")
    value = int(n_buckets)  # type: ignore[call-overload]
    if value < 2 or value > 1 << MAX_HASH_BITS or value & (value - 1):
        raise SscrfError(f"{name} must be a power of two 2**k with 1 <= k <= {MAX_HASH_BITS} "
                         f"(e.g. 2**18), not {value}")
    return value


def fnv1a_64(data: bytes) -> int:
    """64-bit FNV-1a hash of ``data``.

    Parameters
    ----------
    data : bytes

    Returns
    -------
    int
        In ``[0, 2**64)``.
    """
    h = FNV_OFFSET
    for byte in data:
        h = ((h ^ byte) * FNV_PRIME) & _MASK
    return h


def hash_bucket(attribute: str, n_buckets: int) -> int:
    """Bucket of one attribute string: FNV-1a 64 of its UTF-8 bytes mod ``n_buckets``.

    Parameters
    ----------
    attribute : str
    n_buckets : int
        A power of two (see :func:`check_hash_features`).

    Returns
    -------
    int
    """
    return fnv1a_64(attribute.encode("utf-8", "surrogatepass")) & (n_buckets - 1)


def hash_buckets(attributes: Sequence[str], n_buckets: int) -> NDArray[np.int64]:
    """Buckets of many attribute strings (see :func:`hash_bucket`).

    FNV-1a over all strings at once: byte position j of every string at
    least j + 1 bytes long per step, the strings sorted by length so that
    those are a prefix (numpy's uint64 products wrap mod 2**64, as FNV's do).

    Parameters
    ----------
    attributes : sequence of str
    n_buckets : int

    Returns
    -------
    ndarray of int64
    """
    n_buckets = check_hash_features(n_buckets)
    encoded = [a.encode("utf-8", "surrogatepass") for a in attributes]
    lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
    data = np.frombuffer(b"".join(encoded), dtype=np.uint8).astype(np.uint64)
    del encoded
    starts = np.zeros(len(lengths), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    order = np.argsort(-lengths, kind="stable")
    starts, sorted_lengths = starts[order], lengths[order]
    h = np.full(len(lengths), FNV_OFFSET, dtype=np.uint64)
    prime = np.uint64(FNV_PRIME)
    longest = int(sorted_lengths[0]) if len(lengths) else 0
    # how many strings are longer than j, for each j
    longer = np.searchsorted(-sorted_lengths, -np.arange(longest), side="left")
    for j in range(longest):
        m = int(longer[j])
        with np.errstate(over="ignore"):
            h[:m] = (h[:m] ^ data[starts[:m] + j]) * prime
    out = np.empty(len(lengths), dtype=np.int64)
    out[order] = (h & np.uint64(n_buckets - 1)).astype(np.int64)
    return out


def hashed(features: Features, bucket: NDArray[np.int64], n_buckets: int,
           collisions: str = "once") -> Features:
    """Map a matrix's ids to buckets (see the module notes for ids of one token
    in one bucket).

    Parameters
    ----------
    features : Features
        Under some id space; ``bucket[i]`` is id i's bucket.
    bucket : ndarray of int64
    n_buckets : int
    collisions : {"once", "sum"}
        ``"once"``: binary attributes sharing a bucket count once (any other
        value: the sum); ``"sum"``: values always add up (extractors saved
        before the rule).

    Returns
    -------
    Features
        ``n_attributes == n_buckets``; ids ascending within each token.
    """
    n_tokens = features.n_tokens
    rows = np.repeat(np.arange(n_tokens, dtype=np.int64), np.diff(features.indptr))
    keys = rows * n_buckets + bucket[features.indices]
    unique, inverse = np.unique(keys, return_inverse=True)
    out_rows = unique // n_buckets
    indptr = np.zeros(n_tokens + 1, dtype=np.int64)
    np.cumsum(np.bincount(out_rows, minlength=n_tokens), out=indptr[1:])
    indices = (unique - out_rows * n_buckets).astype(np.int32)
    once = collisions == "once"
    if once and is_ones(features.values):
        return Features(indptr, indices, ones(len(indices)), features.offsets, n_buckets)
    inverse = inverse.ravel()
    summed = np.bincount(inverse, weights=features.values, minlength=len(unique)).astype(
        np.float64)
    if once:  # buckets whose attributes are all binary fire once
        n_binary = np.bincount(inverse, weights=features.values == 1.0, minlength=len(unique))
        summed[n_binary == np.bincount(inverse, minlength=len(unique))] = 1.0
    values = ones(len(indices)) if (summed == 1.0).all() else summed
    return Features(indptr, indices, values, features.offsets, n_buckets)

"""The compiled corpus file format: its header, meta section and arrays.

File format (version 1), little-endian throughout::

    offset  size  field
         0     8  magic b"SSCRFCOR"
         8     4  version (uint32) = 1
        12     4  flags (uint32): 1 = every value is 1.0 (no values section),
                  2 = a labels section is present, 4 = the token pointers
                  are uint32 (the corpus has fewer than 2^32 entries)
        16     8  n_tokens (int64)
        24     8  n_sentences (int64)
        32     8  nnz, stored (token, attribute) entries (int64)
        40     8  n_attributes (int64), the vocabulary's size (with feature
                  hashing, the number of buckets)
        48     8  meta_bytes (int64), the length of the meta section
        56    16  the vocabulary's checksum: BLAKE2b-128 of the attribute
                  strings as compact JSON (``vocabulary_checksum``); with
                  hashing, of ``{"hash_features":n}`` (``hashed_checksum``)
        72     8  BLAKE2b-64 of bytes 0..72 (the header's own checksum)
        80    48  zeros
       128        meta: UTF-8 JSON {"features": the extractor's state
                  (templates, min_freq, attributes, n_columns, and with
                  hashing hash_features and attributes []), "labels":
                  label strings or null, "source": str}

followed by the arrays, each starting at a multiple of 64 bytes (zeros
between), so that each maps aligned: ``indptr`` int64 (uint32 with flag
4) ``[n_tokens + 1]``,
``offsets`` int64 ``[n_sentences + 1]``, ``indices`` int32 ``[nnz]``,
``values`` float64 ``[nnz]`` (absent with flag 1) and ``labels`` int32
``[n_tokens]`` (with flag 2, ids into the meta's labels). The file ends
exactly where the last array does.

Binary features thus take 4 bytes per entry and 4 per token (8 past 2^32
entries), and 8 per sentence. :mod:`sscrf.corpus_file` compiles and opens
such files.
"""

import hashlib
import json
import struct
from typing import Any, Callable, Iterable

import numpy as np

from .errors import SscrfError
from .features import FeatureExtractor
from .serialization import replace_file

__all__ = ["ALIGN", "FLAG_LABELS", "FLAG_ONES", "FLAG_POINTERS32", "HEADER", "HEADER_SIZE",
           "MAGIC", "MAX_META_BYTES", "VERSION", "assemble", "hashed_checksum", "read_header",
           "read_meta", "sections", "vocabulary_checksum"]

MAGIC = b"SSCRFCOR"
VERSION = 1
HEADER = struct.Struct("<8sIIqqqqq16s")
HEADER_SIZE = 128
ALIGN = 64
FLAG_ONES, FLAG_LABELS, FLAG_POINTERS32 = 1, 2, 4
#: The meta section holds the vocabulary: 10 million attributes take about 300 MB.
MAX_META_BYTES = 1 << 30


def vocabulary_checksum(attributes: Iterable[str]) -> bytes:
    """BLAKE2b-128 of attribute strings (compact JSON, UTF-8): the id a corpus file and a
    model are compared by.

    Parameters
    ----------
    attributes : list of str

    Returns
    -------
    bytes (16)
    """
    text = json.dumps(list(attributes), ensure_ascii=False, separators=(",", ":"))
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


def _aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def sections(n_tokens: int, n_sentences: int, nnz: int, meta_bytes: int,
             flags: int) -> tuple[list[tuple[str, str, int, int]], int]:
    """(name, dtype, count, offset) of each array, and the file's length (Python ints,
    which a declared size cannot overflow)."""
    at = _aligned(HEADER_SIZE + meta_bytes)
    out = []
    pointers = "<u4" if flags & FLAG_POINTERS32 else "<i8"
    layout = [("indptr", pointers, n_tokens + 1), ("offsets", "<i8", n_sentences + 1),
              ("indices", "<i4", nnz)]
    if not flags & FLAG_ONES:
        layout.append(("values", "<f8", nnz))
    if flags & FLAG_LABELS:
        layout.append(("labels", "<i4", n_tokens))
    end = at
    for name, dtype, count in layout:
        out.append((name, dtype, count, at))
        end = at + count * np.dtype(dtype).itemsize
        at = _aligned(end)
    return out, end


def hashed_checksum(n_buckets: int) -> bytes:
    """The checksum standing for the vocabulary of a corpus hashed into ``n_buckets``
    (:mod:`sscrf.features.hashing`), which has no strings: BLAKE2b-128 of
    ``{"hash_features":n_buckets}`` as compact JSON."""
    text = json.dumps({"hash_features": int(n_buckets)}, separators=(",", ":"))
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


def _vocabulary(features: dict[str, Any]) -> tuple[int, bytes]:
    """(n_attributes, checksum) of an extractor state: its strings', or its buckets'."""
    hashing = features.get("hash_features")
    if hashing is not None:
        return int(hashing), hashed_checksum(hashing)
    attributes = features["attributes"]
    return len(attributes), vocabulary_checksum(attributes)


def read_header(path: str, head: bytes, size: int) -> tuple[tuple[Any, ...], int, int]:
    """The header ``head`` (its first HEADER_SIZE bytes) of the file ``path`` of ``size``
    bytes, checked against that size before anything is allocated.

    Returns
    -------
    ((n_tokens, n_sentences, nnz, n_attributes, checksum), flags, meta_bytes)

    Raises
    ------
    SscrfError
        A foreign, truncated or corrupt header, naming the file.
    """
    if len(head) < HEADER_SIZE:
        if head[:len(MAGIC)] != MAGIC[:len(head)] or not head:
            raise SscrfError(f"{path}: not a compiled sscrf corpus (no {MAGIC!r} magic)")
        raise SscrfError(f"{path}: truncated: {size} bytes, shorter than the "
                         f"{HEADER_SIZE}-byte header")
    (magic, version, flags, n_tokens, n_sentences, nnz, n_attributes, meta_bytes,
     checksum) = HEADER.unpack_from(head)
    if magic != MAGIC:
        raise SscrfError(f"{path}: not a compiled sscrf corpus (no {MAGIC!r} magic)")
    if version != VERSION:
        raise SscrfError(f"{path}: compiled corpus version {version}; this sscrf reads "
                         f"version {VERSION}: compile it again")
    own = hashlib.blake2b(head[:72], digest_size=8).digest()
    if head[72:80] != own:
        raise SscrfError(f"{path}: corrupt header (its checksum does not match)")
    if flags & ~(FLAG_ONES | FLAG_LABELS | FLAG_POINTERS32):
        raise SscrfError(f"{path}: corrupt header (unknown flags {flags:#x})")
    if min(n_tokens, n_sentences, nnz, n_attributes, meta_bytes) < 0 \
            or n_attributes > np.iinfo(np.int32).max or meta_bytes > MAX_META_BYTES \
            or (flags & FLAG_POINTERS32 and nnz > np.iinfo(np.uint32).max):
        raise SscrfError(f"{path}: corrupt header (sizes out of range)")
    # Python integers: a declared size cannot overflow before it is compared.
    _, end = sections(n_tokens, n_sentences, nnz, meta_bytes, flags)
    if end != size:
        what = "truncated" if size < end else "corrupt"
        raise SscrfError(f"{path}: {what}: its header declares {end:,} bytes, the file has "
                         f"{size:,}")
    return (n_tokens, n_sentences, nnz, n_attributes, checksum), flags, meta_bytes


def read_meta(path: str, raw: bytes, header: tuple[Any, ...], flags: int) -> dict[str, Any]:
    """The meta section ``raw``, checked against the header (vocabulary size and
    checksum, labels flag) and as an extractor's state.

    Raises
    ------
    SscrfError
    """
    try:
        meta = json.loads(raw.decode("utf-8"))
        features = meta["features"]
        attributes, hashing = features["attributes"], features.get("hash_features")
        ok = (isinstance(attributes, list) and all(isinstance(a, str) for a in attributes)
              and (len(attributes) == header[3] if hashing is None else
                   type(hashing) is int and hashing == header[3] and not attributes))
    except (UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError):
        ok = False
    if not ok:
        raise SscrfError(f"{path}: corrupt meta section (not the vocabulary the header declares)")
    if _vocabulary(features)[1] != header[4]:
        raise SscrfError(f"{path}: corrupt: the vocabulary does not match its checksum")
    labels = meta.get("labels")
    if bool(flags & FLAG_LABELS) != (labels is not None) or (
            labels is not None and not all(isinstance(x, str) for x in labels)):
        raise SscrfError(f"{path}: corrupt meta section (labels)")
    try:
        FeatureExtractor.from_state(features)
    except SscrfError as e:
        raise SscrfError(f"{path}: corrupt meta section ({e})") from None
    return meta


def assemble(path: str, meta: dict[str, Any], flags: int, sizes: tuple[int, int, int],
             blocks: Callable[[str], Iterable[bytes]]) -> tuple[int, int]:
    """Write a corpus file (through a temporary file and a rename).

    Parameters
    ----------
    path : str
    meta : dict
        The meta section: ``features`` (an extractor's state), ``labels``, ``source``.
    flags : int
        FLAG_ONES, FLAG_LABELS.
    sizes : (n_tokens, n_sentences, nnz)
    blocks : callable
        ``blocks(name)`` yields the bytes of the section ``name``.

    Returns
    -------
    (int, int)
        The file's bytes and its arrays' bytes.
    """
    n_attributes, checksum = _vocabulary(meta["features"])
    raw = json.dumps(meta, ensure_ascii=False).encode("utf-8")
    layout, end = sections(*sizes, len(raw), flags)
    head = HEADER.pack(MAGIC, VERSION, flags, *sizes, n_attributes, len(raw), checksum)
    head += hashlib.blake2b(head, digest_size=8).digest()

    def write(out: Any) -> None:
        out.write(head.ljust(HEADER_SIZE, b"\0"))
        out.write(raw)
        for section, _, _, offset in layout:
            out.write(b"\0" * (offset - out.tell()))
            for block in blocks(section):
                out.write(block)

    replace_file(path, write)
    return end, end - layout[0][3]



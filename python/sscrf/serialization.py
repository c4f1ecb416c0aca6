"""The file container of models: a JSON header plus raw numpy arrays, no pickle.

What a model file holds is :mod:`sscrf.model_file`.

Layout of a file::

    b"SSCRF\\0"  (6 bytes)  magic
    uint32 LE             format version
    uint64 LE             header length H
    H bytes               JSON header (UTF-8)
    arrays                raw little-endian bytes, in the order the header lists
    32 bytes              SHA-256 of everything before it

The header holds ``"arrays": [{"name", "dtype", "shape"}, ...]`` and the
caller's metadata under ``"meta"``. Loading checks the magic, the version,
the checksum (so a truncated or altered file is refused before anything is
parsed), that every declared array fits in the file, and allows only plain
numeric dtypes: nothing in the file can run code. Files are written to a
temporary file beside the target and renamed into place.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import stat
import struct
from collections.abc import Iterator, Mapping
from typing import IO, TYPE_CHECKING, Any, Callable, Optional, Union

import numpy as np

from .errors import SscrfError
from .inputs import check_writable
from .resources import check_memory

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

MAGIC = b"SSCRF\0"
# 2: model files may name their layout instead of storing it, and list their
# non-zero weights (CRF.save); an sscrf that reads version 1 only then says
# so, rather than failing on an array it does not find.
FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)
_ALLOWED_DTYPES = {"<f8", "<i4", "<i8", "|u1", "|b1"}
_PREFIX = struct.Struct("<6sIQ")
_DIGEST_SIZE = 32
#: The largest header a model file may have: it holds the labels and the
#: vocabulary (a model of 10 million attributes has a header of about 300 MB).
MAX_HEADER_BYTES = 1 << 30


def replace_file(path: Union[str, os.PathLike[str]], write: Callable[[IO[Any]], Any],
                 mode: str = "wb", encoding: Optional[str] = None) -> None:
    """Write ``path`` through a temporary file and a rename, so that a reader
    never sees half a file and an interrupted write leaves the old one.

    ``write(f)`` writes the content to the open file ``f``. A symbolic
    link's target is replaced (the link stays a link); a path that exists
    but is no regular file (``/dev/stdout``, ``/dev/null``, a named pipe)
    is written in place, as a rename would put a file where the device or
    pipe was. A new file's permissions follow the umask, as ``open``'s do; a
    replaced file keeps its own. What :func:`sscrf.inputs.check_writable`
    refuses (a read-only file, an empty name, a missing folder) raises
    SscrfError before anything is written; an OSError while writing (a full
    disk) names ``path``.
    """
    path = os.fsdecode(os.fspath(path))
    check_writable(path)
    target = os.path.realpath(path)
    text: dict[str, Any] = {} if "b" in mode else {"encoding": encoding, "newline": ""}
    # Tested on the path itself: /dev/stdout resolves to a name such as
    # /proc/PID/fd/pipe:[N], which names nothing, while the path opens the pipe.
    if os.path.exists(path) and not os.path.isfile(path):
        with _named(path), open(path, mode, **text) as f:
            write(f)
        return
    directory, base = os.path.split(target)
    kept_mode = stat.S_IMODE(os.stat(target).st_mode) if os.path.isfile(target) else None
    tmp = os.path.join(directory, f".{base}.{secrets.token_hex(6)}.tmp")
    # 0o666 lets the umask decide, where tempfile.mkstemp would make it 0600
    with _named(path):
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with _named(path), os.fdopen(fd, mode, **text) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
            if kept_mode is not None:
                os.fchmod(f.fileno(), kept_mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


@contextlib.contextmanager
def _named(path: str) -> Iterator[None]:
    """Add ``path`` to an OSError that names no file ("[Errno 28] No space left on
    device" from a write), so that the message says which file failed."""
    try:
        yield
    except OSError as e:
        if e.filename is not None or not e.strerror:
            raise
        raise type(e)(e.errno, e.strerror, path) from e


def write_atomic(path: Union[str, os.PathLike[str]], data: bytes) -> None:
    """Write bytes to ``path`` through :func:`replace_file`."""
    replace_file(path, lambda f: f.write(data))


def save(path: Union[str, os.PathLike[str]], meta: Mapping[str, Any],
         arrays: Mapping[str, ArrayLike]) -> None:
    """Save ``meta`` (JSON-serialisable dict) and ``arrays`` (name -> ndarray)."""
    entries, blobs = [], []
    for name, array in arrays.items():
        a = np.asarray(array, order="C")  # keeps 0-d arrays 0-d, unlike ascontiguousarray
        dtype = a.dtype.newbyteorder("<") if a.dtype.byteorder == ">" else a.dtype
        a = a.astype(dtype, copy=False)
        if a.dtype.str not in _ALLOWED_DTYPES:
            raise SscrfError(f"cannot save array {name!r} of dtype {a.dtype}")
        entries.append({"name": name, "dtype": a.dtype.str, "shape": list(a.shape)})
        blobs.append(a.tobytes())
    header = json.dumps({"meta": meta, "arrays": entries}, sort_keys=True).encode("utf-8")
    body = _PREFIX.pack(MAGIC, FORMAT_VERSION, len(header)) + header + b"".join(blobs)
    write_atomic(path, body + hashlib.sha256(body).digest())


def load(path: Union[str, os.PathLike[str]],
         kind: str = "model") -> tuple[dict[str, Any], dict[str, NDArray[Any]]]:
    """Load a file written by :func:`save`; returns ``(meta, arrays)``.

    ``kind`` names what the caller expects the file to hold (``"model"``,
    ``"word-representations"``) in the messages.

    Raises
    ------
    SscrfError
        Naming the file and what is wrong with it.
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = _read(f, path, kind)
    except OSError as e:
        raise SscrfError(f"{path}: cannot read {kind} file: {e.strerror}") from None
    if len(data) < _PREFIX.size + _DIGEST_SIZE or not data.startswith(MAGIC):
        raise SscrfError(f"{path}: not an sscrf {kind} file (bad magic or too short)")
    body, digest = data[:-_DIGEST_SIZE], data[-_DIGEST_SIZE:]
    _, version, header_len = _PREFIX.unpack_from(body)
    if version not in READABLE_VERSIONS:
        raise SscrfError(f"{path}: {kind} format version {version} is not supported "
                         f"(this sscrf reads versions {', '.join(map(str, READABLE_VERSIONS))})")
    if hashlib.sha256(body).digest() != digest:
        raise SscrfError(f"{path}: {kind} file is truncated or corrupted (checksum mismatch)")
    _check_header_size(header_len, path, kind)
    if header_len > len(body) - _PREFIX.size:
        raise SscrfError(f"{path}: {kind} header runs past the end of the file")
    try:
        header = json.loads(body[_PREFIX.size:_PREFIX.size + header_len].decode("utf-8"))
        entries, meta = header["arrays"], header["meta"]
    except (ValueError, KeyError, TypeError, RecursionError) as e:
        raise SscrfError(f"{path}: malformed {kind} header: {e!r}") from None
    if not isinstance(entries, list) or not isinstance(meta, dict):
        raise SscrfError(f"{path}: malformed {kind} header (arrays must be a list, meta a dict)")
    arrays = {}
    offset = _PREFIX.size + header_len
    for entry in entries:
        name, dtype, shape = _array_entry(entry)
        if name is None:
            raise SscrfError(f"{path}: malformed array entry in {kind} header")
        if name in arrays:
            raise SscrfError(f"{path}: array {name!r} appears twice in the {kind} header")
        if dtype not in _ALLOWED_DTYPES:
            raise SscrfError(f"{path}: array {name!r} has a disallowed dtype {dtype!r}")
        nbytes = int(np.prod(shape, dtype=object)) * np.dtype(dtype).itemsize
        if offset + nbytes > len(body):
            raise SscrfError(f"{path}: array {name!r} runs past the end of the file")
        try:
            arrays[name] = np.frombuffer(body, dtype=dtype,
                                         count=nbytes // np.dtype(dtype).itemsize,
                                         offset=offset).reshape(shape).copy()
        except (ValueError, MemoryError) as e:  # a shape such as [2**40, 2**40, 0]
            raise SscrfError(f"{path}: array {name!r} has a shape numpy cannot make, "
                             f"{list(shape)}: {e}") from None
        offset += nbytes
    if offset != len(body):
        raise SscrfError(f"{path}: {kind} file has {len(body) - offset} unexpected trailing bytes")
    return meta, arrays


def _read(f: IO[bytes], path: str, kind: str) -> bytes:
    """The bytes of a model file (or of another ``kind`` in its container),
    read no further than its sizes allow.

    A regular file is read whole once its size is known to fit in memory (it
    is held twice: the bytes and the arrays). A stream (a pipe, a device) is
    read as its prefix and header declare, and no further: the header up to
    MAX_HEADER_BYTES, the arrays as the header lists them, the checksum, so
    that ``/dev/zero`` or an endless stream ends in an error.
    """
    status = os.fstat(f.fileno())
    if stat.S_ISREG(status.st_mode):
        check_memory(2 * status.st_size, f"{path}: loading this {kind} file")
        return f.read()
    data = f.read(_PREFIX.size)
    if len(data) < _PREFIX.size or not data.startswith(MAGIC):
        return data  # refused by the caller
    header_len = _PREFIX.unpack(data)[2]
    _check_header_size(header_len, path, kind)
    check_memory(2 * header_len, f"{path}: reading this {kind}'s header")
    data += f.read(header_len)
    try:
        entries = json.loads(data[_PREFIX.size:].decode("utf-8"))["arrays"]
        shapes = [_array_entry(entry) for entry in entries]
        n_bytes = sum(int(np.prod(shape, dtype=object)) * np.dtype(dtype).itemsize
                      for _, dtype, shape in shapes)
    except (ValueError, KeyError, TypeError, RecursionError):
        return data  # refused by the caller (truncated, or a malformed header)
    check_memory(2 * n_bytes, f"{path}: loading this {kind}")
    data += f.read(n_bytes + _DIGEST_SIZE)
    if f.read(1):
        raise SscrfError(f"{path}: {kind} stream goes on past the arrays its header declares")
    return data


def _check_header_size(header_len: int, path: str, kind: str) -> None:
    if header_len > MAX_HEADER_BYTES:
        raise SscrfError(f"{path}: {kind} header of {header_len:,} bytes is larger than the "
                         f"{MAX_HEADER_BYTES >> 20} MiB a {kind} file may have")


def _array_entry(entry: Any) -> tuple[Any, Any, Any]:
    """(name, dtype, shape) of a header entry, or (None, None, None) if malformed."""
    if not isinstance(entry, dict):
        return None, None, None
    name, dtype, shape = entry.get("name"), entry.get("dtype"), entry.get("shape")
    if not isinstance(name, str) or not isinstance(dtype, str) or not isinstance(shape, list):
        return None, None, None
    if not all(type(d) is int and 0 <= d < 1 << 62 for d in shape):
        return None, None, None
    return name, dtype, tuple(shape)

"""What inputs may make sscrf read and allocate: the machine's memory, and bounds on lines.

A small file must not be able to make sscrf ask for gigabytes (a model file
that declares a huge layout, a line that never ends). Every size a file or
an argument declares is checked here against what the machine can hold
before anything that size is allocated, and every reader bounds the length
of a line.

Imports :mod:`sscrf.errors` only.
"""

from __future__ import annotations

import os
from typing import BinaryIO, Optional

try:
    import resource
except ImportError:  # not on Windows
    resource = None  # type: ignore[assignment]

from .errors import SscrfError

__all__ = ["MAX_LINE_BYTES", "NotEnoughMemory", "available_memory", "check_memory", "gib",
           "line_too_long", "read_bounded", "size_text"]

#: The longest line a text reader accepts (CoNLL, CoNLL-U, templates,
#: constraints): 16 MiB. A real CoNLL line is under 1 KB and the longest
#: sentence of CoNLL-U corpora's ``# text`` comments a few KB; a stream
#: with no line end (``/dev/zero``) must end in an error, not fill memory.
MAX_LINE_BYTES = 1 << 24


class NotEnoughMemory(SscrfError):
    """What an input asks for cannot fit the memory available (see :func:`check_memory`)."""


def gib(n_bytes: float) -> str:
    """``n_bytes`` in GiB, for messages (``"0.25"``, ``"6.7"``)."""
    value = n_bytes / (1 << 30)
    return f"{value:.2g}" if value < 10 else f"{value:,.0f}"


def size_text(n_bytes: float) -> str:
    """``n_bytes`` for people: ``"340 KiB"``, ``"12 MiB"``, ``"6.7 GiB"``."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n_bytes >= 1 << shift:
            value = n_bytes / (1 << shift)
            return f"{value:.2g} {unit}" if value < 10 else f"{value:,.0f} {unit}"
    return f"{n_bytes} bytes"


def _meminfo_available() -> Optional[int]:
    """MemAvailable of /proc/meminfo in bytes (the physical memory without it), or None."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def _cgroup_available() -> Optional[int]:
    """What the process's cgroup (v2) still allows, in bytes, or None without a limit."""
    try:
        with open("/sys/fs/cgroup/memory.max", encoding="ascii") as f:
            limit = f.read().strip()
        if limit == "max":
            return None
        with open("/sys/fs/cgroup/memory.current", encoding="ascii") as f:
            used = int(f.read())
        return max(int(limit) - used, 0)
    except (OSError, ValueError):
        return None


def _address_space_available() -> Optional[int]:
    """What RLIMIT_AS (``ulimit -v``) still allows this process, in bytes, or None."""
    if resource is None:
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    used = 0
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    used = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return max(soft - used, 0)


def available_memory() -> Optional[int]:
    """The bytes this process can still allocate: the least of the machine's
    available memory (MemAvailable, else the physical memory), the cgroup's
    limit and the address-space limit. None when none of them is known."""
    known = [v for v in (_meminfo_available(), _cgroup_available(), _address_space_available())
             if v is not None]
    return min(known) if known else None


def check_memory(need: int, what: str) -> None:
    """Raise NotEnoughMemory (an SscrfError) when ``need`` bytes cannot fit the memory
    available.

    ``what`` says what would need them, e.g. ``"training"`` or
    ``"m.model: loading this model"``; the message gives both sizes:
    ``"training would need about 6.7 GiB, this machine has 1.2 GiB available"``.
    """
    available = available_memory()
    if available is not None and need > available:
        raise NotEnoughMemory(f"{what} would need about {gib(need)} GiB, this machine has "
                         f"{gib(available)} GiB available")


def read_bounded(file: BinaryIO, name: str, chunk: int = 1 << 16) -> bytes:
    """All the bytes of the binary ``file``, refusing a line longer than
    :data:`MAX_LINE_BYTES` (SscrfError naming ``name``, the line and the bound),
    so that a stream without line ends (``/dev/zero``) ends in an error."""
    chunks: list[bytes] = []
    lineno, run = 1, 0  # run: bytes since the last line end
    while True:
        data = file.read(chunk)
        if not data:
            return b"".join(chunks)
        first = data.find(b"\n")
        if run + (len(data) if first < 0 else first) > MAX_LINE_BYTES:
            raise line_too_long(name, lineno)
        if first >= 0:
            lineno += data.count(b"\n")
            run = len(data) - data.rfind(b"\n") - 1
        else:
            run += len(data)
        chunks.append(data)


def line_too_long(name: str, lineno: int) -> SscrfError:
    """The SscrfError for line ``lineno`` of ``name`` past :data:`MAX_LINE_BYTES`."""
    return SscrfError(f"{name}:{lineno}: line longer than {MAX_LINE_BYTES >> 20} MiB, the "
                      "longest a reader accepts (is this a text file of the right kind?)")

"""The file container (sscrf.serialization): round trips, and damaged files fail cleanly.

A damaged file — truncated, a flipped byte, random bytes, or a header edited
and the checksum recomputed (tampering, or a buggy writer) — must either
load exactly as written or raise ``SscrfError``; never another exception.
What a container must hold to be a model is tested in ``test_model_file.py``.
"""

import hashlib
import json
import os
import stat
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from sscrf import SscrfError
from sscrf import serialization as ser

FUZZ = settings(max_examples=100, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])
# save() fsyncs every file: fewer examples where each one saves
ROUND_TRIPS = settings(FUZZ, max_examples=40)
# Re-signed header fuzz: the explicit cases below give minimal reproducers,
# so a failure here is reported as found, without minutes of shrinking.
NO_SHRINK = settings(FUZZ, phases=[Phase.explicit, Phase.reuse, Phase.generate])

DTYPES = ["<f8", "<i4", "<i8", "|u1", "|b1"]


def assert_same_arrays(got, expected):
    assert list(got) == list(expected)
    for name, a in expected.items():
        a = np.asarray(a)
        b = got[name]
        assert b.shape == a.shape, name
        assert b.dtype == a.dtype.newbyteorder("<") or b.dtype == a.dtype, name
        assert b.dtype.byteorder in "<|=", name
        assert np.array_equal(b, a, equal_nan=a.dtype.kind == "f"), name
        assert b.flags.writeable and b.flags.c_contiguous


# ---------------------------------------------------------------------------
# Round trips
# ---------------------------------------------------------------------------


def test_round_trip_assorted_arrays(tmp_path):
    path = tmp_path / "a.bin"
    arrays = {
        "floats": np.array([0.0, -0.0, 1.5, np.nan, np.inf, -np.inf, 5e-324,
                            1.7976931348623157e308]),
        "ints32": np.array([[-(2**31), 2**31 - 1], [0, 7]], dtype=np.int32),
        "ints64": np.arange(12, dtype=np.int64).reshape(2, 3, 2) - 2**62,
        "bytes": np.array([0, 255, 17], dtype=np.uint8),
        "flags": np.array([True, False, True]),
        "scalar": np.array(3.25),
        "empty": np.zeros(0),
        "empty2d": np.zeros((3, 0), dtype=np.int32),
        "big_endian": np.array([1.0, -2.0], dtype=">f8"),
        "strided": np.arange(20, dtype=np.int64)[::3],
        "fortran": np.asfortranarray(np.arange(6, dtype=np.float64).reshape(2, 3)),
    }
    meta = {"name": "tëst ✓", "nested": {"a": [1, 2.5, None, True, "x"], "b": {}},
            "float": 0.1, "big": 2**60, "neg": -3}
    ser.save(path, meta, arrays)
    got_meta, got = ser.load(path)
    assert got_meta == meta
    assert_same_arrays(got, arrays)
    assert got["big_endian"].dtype.str == "<f8"
    np.testing.assert_array_equal(got["fortran"], arrays["fortran"])


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63)
    | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=12,
)


@st.composite
def named_arrays(draw):
    names = draw(st.lists(st.text(min_size=1, max_size=6), unique=True, max_size=4))
    out = {}
    for name in names:
        dtype = draw(st.sampled_from(DTYPES))
        # 0-d arrays: test_round_trip_assorted_arrays
        shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4))
        out[name] = draw(hnp.arrays(np.dtype(dtype), shape))
    return out


@ROUND_TRIPS
@given(meta=st.dictionaries(st.text(max_size=6), json_values, max_size=4), arrays=named_arrays())
def test_round_trip_any_arrays_and_meta(tmp_path, meta, arrays):
    path = tmp_path / "fuzz.bin"
    ser.save(path, meta, arrays)
    got_meta, got = ser.load(path)
    assert got_meta == meta
    assert_same_arrays(got, arrays)


@pytest.mark.parametrize("dtype", ["<f4", "<c16", "<U3", "O", "<i2", "<u8"])
def test_disallowed_dtype_is_refused_and_nothing_is_written(tmp_path, dtype):
    path = tmp_path / "keep.bin"
    ser.save(path, {"v": 1}, {"a": np.arange(3)})
    before = path.read_bytes()
    with pytest.raises(SscrfError, match="'bad'"):
        ser.save(path, {"v": 2}, {"bad": np.zeros(2, dtype=dtype)})
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["keep.bin"]


def test_save_is_atomic_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "m.bin"
    for k in range(3):
        ser.save(path, {"k": k}, {"a": np.full(4, k)})
        assert ser.load(path)[0] == {"k": k}
    assert os.listdir(tmp_path) == ["m.bin"]


def test_replacing_a_file_keeps_links_devices_pipes_and_the_umask(tmp_path):
    # A rename over the path would turn a symbolic link, /dev/stdout or a
    # named pipe into a regular file (and mkstemp made every file 0600).
    target = tmp_path / "target.model"
    link = tmp_path / "link.model"
    link.symlink_to(target)
    ser.write_atomic(link, b"model bytes")
    assert link.is_symlink() and target.read_bytes() == b"model bytes"
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    reader = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
    try:
        ser.write_atomic(pipe, b"through the pipe")
        assert os.read(reader, 100) == b"through the pipe"
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(os.stat(pipe).st_mode)
    old = os.umask(0o022)
    try:
        ser.write_atomic(tmp_path / "new.model", b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "new.model").st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "link.model", "new.model", "pipe", "target.model"]  # no temporary left


def test_unreadable_path(tmp_path):
    with pytest.raises(SscrfError, match="nothing-here"):
        ser.load(tmp_path / "nothing-here")
    with pytest.raises(SscrfError, match=str(tmp_path)):
        ser.load(tmp_path)  # a directory


# ---------------------------------------------------------------------------
# Damaged files
# ---------------------------------------------------------------------------


@pytest.fixture
def small_file(tmp_path):
    path = tmp_path / "small.bin"
    meta = {"kind": "test", "labels": ["A", "B"], "x": 1.5}
    arrays = {"coef": np.array([1.0, -2.0, 3.5]), "ids": np.array([0, 1, 1], dtype=np.int32),
              "flag": np.array([True])}
    ser.save(path, meta, arrays)
    return path, path.read_bytes(), meta, arrays


def load_bytes(tmp_path, data, meta, arrays, name="damaged.bin"):
    """Load ``data``: identical to (meta, arrays), or SscrfError naming the file."""
    path = tmp_path / name
    path.write_bytes(data)
    try:
        got_meta, got = ser.load(path)
    except SscrfError as e:
        assert str(path) in str(e)
        return False
    assert got_meta == meta
    assert_same_arrays(got, arrays)
    return True


def test_every_truncation_fails(tmp_path, small_file):
    _, data, meta, arrays = small_file
    assert len(data) < 2000
    for n in range(len(data)):
        assert not load_bytes(tmp_path, data[:n], meta, arrays), n
    assert load_bytes(tmp_path, data, meta, arrays)


def test_every_flipped_byte_fails(tmp_path, small_file):
    _, data, meta, arrays = small_file
    for i in range(len(data)):
        for mask in (0x01, 0x80):
            damaged = bytearray(data)
            damaged[i] ^= mask
            assert not load_bytes(tmp_path, bytes(damaged), meta, arrays), (i, mask)


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes(tmp_path, blob):
    assert not load_bytes(tmp_path, blob, None, None)
    assert not load_bytes(tmp_path, ser.MAGIC + blob, None, None)


@FUZZ
@given(data=st.data())
def test_random_edits(tmp_path, small_file, data):
    _, good, meta, arrays = small_file
    i = data.draw(st.integers(0, len(good)))
    j = data.draw(st.integers(i, min(len(good), i + 16)))
    patch = data.draw(st.binary(max_size=16))
    damaged = good[:i] + patch + good[j:]
    assert load_bytes(tmp_path, damaged, meta, arrays) == (damaged == good)


def resigned(header, tail=b""):
    """A file with a valid checksum around an arbitrary header (bytes or JSON-able)."""
    if not isinstance(header, bytes):
        header = json.dumps(header).encode("utf-8")
    body = struct.pack("<6sIQ", ser.MAGIC, ser.FORMAT_VERSION, len(header)) + header + tail
    return body + hashlib.sha256(body).digest()


def test_resigned_valid_header_loads(tmp_path):
    header = {"meta": {"a": 1}, "arrays": [{"name": "x", "dtype": "|u1", "shape": [2]}]}
    assert load_bytes(tmp_path, resigned(header, b"\x05\x06"), {"a": 1},
                      {"x": np.array([5, 6], dtype=np.uint8)})


@pytest.mark.parametrize("header", [
    b'{"meta": {}, "arrays": 5}',
    b'{"meta": {}, "arrays": null}',
    b'{"meta": {}, "arrays": [{"name": "a", "dtype": ["<f8"], "shape": [1]}]}',
    b'{"meta": {}, "arrays": [{"name": ["a"], "dtype": "|u1", "shape": [1]}]}',
    b'{"meta": {}, "arrays": [{"name": "a", "dtype": "<f8", "shape": [1e400]}]}',
    b'{"meta": {}, "arrays": [{"name": "a", "dtype": "<f8", "shape": [1e300]}]}',
    b'{"meta": {}, "arrays": [{"name": "a", "dtype": "<f8", "shape": 3}]}',
    b'{"meta": {}, "arrays": [5]}',
    b"[" * 100_000 + b"]" * 100_000,
    b'{"meta": {}, "arrays": []',
    b"\xff\xfe",
    b"[1, 2]",
    b"{}",
], ids=lambda h: h[:40].decode("latin-1"))
def test_resigned_malformed_header(tmp_path, header):
    # The checksum is only an integrity check: a file edited and re-summed
    # must still be validated, with an SscrfError on anything malformed.
    assert not load_bytes(tmp_path, resigned(header, b"\0" * 8), None, None)


@pytest.mark.parametrize("arrays, tail", [
    ([{"name": "a", "dtype": "|u1", "shape": [1]}, {"name": "a", "dtype": "|u1", "shape": [1]}],
     b"\1\2"),
    ([{"name": "a", "dtype": "|u1", "shape": "11"}], b"\1"),
], ids=["repeated name", "string shape"])
def test_resigned_ambiguous_header(tmp_path, arrays, tail):
    # A repeated array name (the first array would be silently dropped) or a
    # shape given as a string (read as its characters) is not a valid file.
    header = {"meta": {}, "arrays": arrays}
    assert not load_bytes(tmp_path, resigned(header, tail), None, None)


@NO_SHRINK
@given(header=json_values, tail=st.binary(max_size=24))
def test_resigned_random_header(tmp_path, header, tail):
    path = tmp_path / "resigned.bin"
    path.write_bytes(resigned(header, tail))
    try:
        meta, arrays = ser.load(path)
    except SscrfError:
        return
    # Loaded: then it really was a well-formed file.
    assert isinstance(header, dict) and "meta" in header


@st.composite
def array_entries(draw):
    entry = {"name": draw(st.text(max_size=3) | json_values),
             "dtype": draw(st.sampled_from(DTYPES) | json_values),
             "shape": draw(st.lists(st.integers(-2, 3), max_size=3) | json_values)}
    for key in draw(st.lists(st.sampled_from(list(entry)), max_size=1)):
        del entry[key]
    return entry


@NO_SHRINK
@given(entries=st.lists(array_entries(), max_size=3), tail=st.binary(max_size=24))
def test_resigned_random_array_entries(tmp_path, entries, tail):
    path = tmp_path / "entries.bin"
    path.write_bytes(resigned({"meta": {}, "arrays": entries}, tail))
    try:
        _, arrays = ser.load(path)
    except SscrfError:
        return
    assert sum(a.nbytes for a in arrays.values()) == len(tail)

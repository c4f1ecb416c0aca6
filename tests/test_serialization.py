"""Model files (sscrf.serialization): round trips, and damaged files fail cleanly.

A damaged file — truncated, a flipped byte, random bytes, or a header edited
and the checksum recomputed (tampering, or a buggy writer) — must either
load exactly as written or raise ``SscrfError``; never another exception.
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

from sscrf import CRF, SscrfError
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


# ---------------------------------------------------------------------------
# Model files: a valid container must still be a valid CRF
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_model():
    X = [[{"w": "a"}, {"w": "b"}], [{"w": "b", "x": -1.5}]]
    y = [["A", "B"], ["B"]]
    return CRF(max_iterations=5, verbose=False, n_threads=1).fit(X, y), X


def _model_parts(model, tmp_path):
    path = tmp_path / "model.sscrf"
    model.save(path)
    return ser.load(path)


def _mutations(meta, arrays):
    S = len(meta["labels"])
    yield "kind", dict(meta, kind="sscrf.Other"), arrays
    yield "labels not a list", dict(meta, labels="AB"), arrays
    yield "repeated labels", dict(meta, labels=["A", "A"]), arrays
    yield "no labels", dict(meta, labels=[]), arrays
    yield "one label fewer", dict(meta, labels=meta["labels"][:-1]), arrays
    yield "no features", {k: v for k, v in meta.items() if k != "features"}, arrays
    yield "bad features", dict(meta, features={"attributes": 5}), arrays
    yield "repeated attributes", dict(meta, features=dict(
        meta["features"], attributes=meta["features"]["attributes"][:1] * 2
        + meta["features"]["attributes"][2:])), arrays
    yield "params not a dict", dict(meta, params=[1]), arrays
    yield "meta not a dict", [1, 2], arrays
    yield "NaN coef", meta, dict(arrays, coef=np.where(np.arange(len(arrays["coef"])) == 0,
                                                       np.nan, arrays["coef"]))
    yield "short coef", meta, dict(arrays, coef=arrays["coef"][:-1])
    yield "2-D coef", meta, dict(arrays, coef=arrays["coef"][None, :])
    yield "no coef", meta, {k: v for k, v in arrays.items() if k != "coef"}
    yield "row_ptr decreasing", meta, dict(arrays, row_ptr=arrays["row_ptr"][::-1].copy())
    yield "label id too big", meta, dict(arrays, label_ids=np.full_like(arrays["label_ids"], S))
    yield "negative label id", meta, dict(arrays, label_ids=np.full_like(arrays["label_ids"], -1))
    yield "label id past int32", meta, dict(
        arrays, label_ids=arrays["label_ids"].astype(np.int64) + 2**32)


@pytest.mark.parametrize("what", [m[0] for m in _mutations(
    {"labels": ["A", "B"], "features": {"attributes": ["a", "b", "c"]}},
    {"coef": np.zeros(3), "row_ptr": np.zeros(2, np.int64),
     "label_ids": np.zeros(1, np.int32)})])
def test_invalid_model_in_valid_container(tmp_path, tiny_model, what):
    model, X = tiny_model
    meta, arrays = _model_parts(model, tmp_path)
    (_, bad_meta, bad_arrays), = [m for m in _mutations(meta, arrays) if m[0] == what]
    assert_refused(tmp_path / "bad.sscrf", bad_meta, bad_arrays)


def assert_refused(path, meta, arrays):
    """A valid container holding ``meta`` and ``arrays`` loads as no model, naming the file."""
    ser.save(path, meta, arrays)
    with pytest.raises(SscrfError) as info:
        CRF.load(path)
    assert str(path) in str(info.value)


def test_valid_container_round_trip(tmp_path, tiny_model):
    model, X = tiny_model
    meta, arrays = _model_parts(model, tmp_path)
    path = tmp_path / "again.sscrf"
    ser.save(path, meta, arrays)
    loaded = CRF.load(path)
    assert loaded.predict(X) == model.predict(X)
    assert np.array_equal(loaded.coef_, model.coef_)


@ROUND_TRIPS
@given(data=st.data())
def test_model_file_fuzz(tmp_path, tiny_model, data):
    # Any edit of a real model file: loads and predicts as before, or SscrfError.
    model, X = tiny_model
    path = tmp_path / "fuzz.sscrf"
    model.save(path)
    good = path.read_bytes()
    i = data.draw(st.integers(0, len(good) - 1))
    n = data.draw(st.integers(0, 8))
    damaged = good[:i] + data.draw(st.binary(min_size=n, max_size=n)) + good[i + n:]
    path.write_bytes(damaged)
    try:
        loaded = CRF.load(path)
    except SscrfError as e:
        assert str(path) in str(e)
        return
    assert damaged == good
    assert loaded.predict(X) == model.predict(X)


# ---------------------------------------------------------------------------
# Compact model files: every-pair layouts and mostly-zero weights
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compact_models():
    from sscrf.demo import generate_hmm_corpus

    X, y = generate_hmm_corpus(60, seed=5)
    dense = CRF(templates="default", feature_set="dense", max_iterations=5, verbose=False,
                n_threads=1).fit(X, y)
    sparse = CRF(templates="default", c1=1.0, c2=0.0, max_iterations=30, verbose=False,
                 n_threads=1).fit(X, y)
    return dense, sparse, X


def _bits(a):
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)


def test_compact_model_files_round_trip(tmp_path, compact_models):
    dense, sparse, X = compact_models
    sparse = CRF.load(_saved(sparse, tmp_path / "s0"))  # a copy to edit
    zeros = np.flatnonzero(sparse.coef_ == 0)
    assert len(zeros) > 2 * len(sparse.coef_) // 3  # L1: mostly zeros
    sparse.coef_[zeros[0]] = -0.0  # kept bit for bit, like any weight
    for model, name in ((dense, "dense"), (sparse, "sparse")):
        path = _saved(model, tmp_path / name)
        meta, arrays = ser.load(path)
        loaded = CRF.load(path)
        assert np.array_equal(_bits(loaded.coef_), _bits(model.coef_))
        assert np.array_equal(loaded.row_ptr_, model.row_ptr_)
        assert np.array_equal(loaded.label_ids_, model.label_ids_)
        assert loaded.predict(X) == model.predict(X)
        if model is dense:
            assert meta["layout"] == "every pair" and "label_ids" not in arrays
            assert "coef" in arrays
        else:
            assert "layout" not in meta and "coef" not in arrays
            assert len(arrays["coef_index"]) == np.count_nonzero(_bits(model.coef_))
        full = _saved_with_every_array(model, meta, tmp_path / "full.sscrf")
        assert os.path.getsize(path) < os.path.getsize(full) - 4 * len(model.coef_) // 2


def _saved(model, path):
    model.save(path)
    return path


def _saved_with_every_array(model, meta, path):
    """``model`` in the form every model file had before the compact one."""
    ser.save(path, {k: v for k, v in meta.items() if k not in ("layout", "n_weights")},
             {"row_ptr": model.row_ptr_, "label_ids": model.label_ids_, "coef": model.coef_})
    return path


def test_model_files_with_every_array_still_load(tmp_path, compact_models):
    # the form every model file had before the compact one
    dense, sparse, X = compact_models
    for model in (dense, sparse):
        meta, _ = ser.load(_saved(model, tmp_path / "compact"))
        loaded = CRF.load(_saved_with_every_array(model, meta, tmp_path / "full.sscrf"))
        assert np.array_equal(_bits(loaded.coef_), _bits(model.coef_))
        assert loaded.predict(X) == model.predict(X)


def _compact_mutations(meta, arrays):
    index, values = arrays["coef_index"], arrays["coef_values"]
    yield "unknown layout", dict(meta, layout="diagonal"), arrays
    yield "index decreasing", meta, dict(arrays, coef_index=index[::-1].copy())
    yield "index repeated", meta, dict(arrays, coef_index=np.sort(np.r_[index, index[:1]]),
                                       coef_values=np.r_[values, values[:1]])
    yield "index past the weights", meta, dict(arrays, coef_index=index + meta["n_weights"])
    yield "negative index", meta, dict(arrays, coef_index=index - index[-1] - 1)
    yield "float index", meta, dict(arrays, coef_index=index.astype(np.float64))
    yield "fewer values", meta, dict(arrays, coef_values=values[:-1])
    yield "weight count short", dict(meta, n_weights=meta["n_weights"] - 1), arrays
    yield "weight count huge", dict(meta, n_weights=1 << 50), arrays  # refused, not allocated
    yield "weight count not a number", dict(meta, n_weights="7"), arrays
    yield "no weight count", {k: v for k, v in meta.items() if k != "n_weights"}, arrays
    yield "NaN value", meta, dict(arrays, coef_values=np.r_[np.nan, values[1:]])
    yield "weights in both forms", meta, dict(arrays, coef=np.zeros(meta["n_weights"]))
    yield "layout in both forms", dict(meta, layout="every pair"), dict(
        arrays, row_ptr=np.zeros(1, np.int64))


@pytest.mark.parametrize("what", [m[0] for m in _compact_mutations(
    {"n_weights": 9}, {"coef_index": np.arange(3), "coef_values": np.ones(3)})])
def test_invalid_compact_model_in_valid_container(tmp_path, compact_models, what):
    _, sparse, _ = compact_models
    meta, arrays = ser.load(_saved(sparse, tmp_path / "good"))
    (_, bad_meta, bad_arrays), = [m for m in _compact_mutations(meta, arrays) if m[0] == what]
    assert_refused(tmp_path / "bad.sscrf", bad_meta, bad_arrays)


def test_a_model_too_big_for_memory_is_an_error_not_a_crash(tmp_path, compact_models,
                                                          monkeypatch):
    # a small compact file can describe a large model (a dense layout and
    # few non-zero weights); where memory runs out, loading says so
    import sscrf.model_file

    _, sparse, _ = compact_models
    path = _saved(sparse, tmp_path / "big")

    def out_of_memory(*args):
        raise MemoryError

    monkeypatch.setattr(sscrf.model_file, "_weights_from_nonzero", out_of_memory)
    with pytest.raises(SscrfError, match=f"{path}: not enough memory to load this model "
                                         f"\\({len(sparse.coef_):,} weights\\)"):
        CRF.load(path)


def test_version_1_files_still_load(tmp_path, tiny_model):
    model, X = tiny_model
    path = _saved(model, tmp_path / "v2")
    body = path.read_bytes()[:-32]
    assert struct.unpack_from("<I", body, 6)[0] == ser.FORMAT_VERSION == 2
    body = body[:6] + struct.pack("<I", 1) + body[10:]
    path.write_bytes(body + hashlib.sha256(body).digest())
    assert CRF.load(path).predict(X) == model.predict(X)
    body = body[:6] + struct.pack("<I", 3) + body[10:]
    path.write_bytes(body + hashlib.sha256(body).digest())
    with pytest.raises(SscrfError, match="version 3 is not supported"):
        CRF.load(path)

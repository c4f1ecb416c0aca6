"""Model files (sscrf.model_file): what a valid container must hold to be a CRF.

A container that loads (:mod:`sscrf.serialization`, tested in
``test_serialization.py``) but holds a bad model — wrong kind, bad labels,
weights of the wrong size or non-finite, a layout the core refuses — must
raise ``SscrfError`` naming the file; compact files (every-pair layouts,
mostly-zero weights) round-trip bit for bit.
"""

import hashlib
import os
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sscrf import CRF, SscrfError
from sscrf import serialization as ser

FUZZ = settings(max_examples=100, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])
# save() fsyncs every file: fewer examples where each one saves
ROUND_TRIPS = settings(FUZZ, max_examples=40)


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

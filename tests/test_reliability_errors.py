"""Reliability, unclear errors: inputs that used to end in a RecursionError, an
OverflowError, an AttributeError, a bare numpy message or a warning now raise an
SscrfError (or SscrfTypeError) that names the problem.

The next unclear error of this kind has its test here.
"""

import hashlib
import json
import struct
import warnings
from fractions import Fraction

import numpy as np
import pytest
from cli_common import data, run  # noqa: F401  (data is a fixture)

from sscrf import CRF, SscrfError, SscrfTypeError, inputs, lattice, serialization
from sscrf.active import select, sokolovska_weights
from sscrf.features import FeatureExtractor

X = [[{"w": "the"}, {"w": "dog"}], [{"w": "a"}, {"w": "cat"}, {"w": "runs"}]]
Y = [["D", "N"], ["D", "N", "V"]]


def quiet():
    return CRF(verbose=False, n_threads=1, max_iterations=3)


# -- feature dicts -----------------------------------------------------------------------


def _self_referencing():
    token = {"w": "the"}
    token["self"] = token
    return token


def _deep(levels):
    token = {"x": 1.0}
    for _ in range(levels):
        token = {"n": token}
    return token


@pytest.mark.parametrize("token, message", [
    (_self_referencing(), "nest more than 100 levels"),
    (_deep(10_000), "nest more than 100 levels"),
    ({"big": Fraction(10**400, 3)}, "big: value too large for a float"),
])
def test_a_bad_feature_value_is_an_sscrf_error_naming_the_token(token, message):
    sentences = [[{"w": "a"}, token]]
    with pytest.raises(SscrfError, match=message) as info:
        quiet().fit(sentences, [["D", "N"]])
    assert "sentence 0, token 1" in str(info.value)
    model = quiet().fit(X, Y)
    with pytest.raises(SscrfError, match=message):
        model.predict(sentences)
    with pytest.raises(SscrfError, match=message):
        FeatureExtractor().fit_transform(sentences)


def test_dicts_nested_within_the_bound_still_work():
    model = quiet().fit([[_deep(99), {"w": "b"}]], [["D", "N"]])
    assert "n:" * 99 + "x" in model.attributes_


# -- the estimator's arguments ----------------------------------------------------------


def test_init_42_is_a_type_error():
    with pytest.raises(SscrfTypeError, match="init must be a fitted CRF, the path of a "
                                             "model file or None, not int"):
        quiet().fit(X, Y, init=42)


def test_a_callback_that_is_not_callable_is_refused_before_training(monkeypatch):
    monkeypatch.setattr(FeatureExtractor, "fit_transform", pytest.fail)
    with pytest.raises(SscrfTypeError, match="callback must be callable"):
        quiet().fit(X, Y, callback=True)


@pytest.mark.parametrize("labels", [{"D", "N", "V"}, frozenset("DNV"),
                                    {"D": 0, "N": 1, "V": 2}.keys()])
def test_labels_as_an_unordered_collection_are_refused_before_training(labels):
    with pytest.raises(SscrfTypeError, match="ordered list .* varies from run to run"):
        CRF(verbose=False, labels=labels).fit(X, Y, callback=pytest.fail)


def test_labels_as_a_list_or_array_keep_their_order():
    for labels in (["V", "N", "D"], np.array(["V", "N", "D"]), ("V", "N", "D")):
        assert quiet().set_params(labels=labels).fit(X, Y).classes_ == ["V", "N", "D"]


def test_a_sample_weight_too_large_is_refused_with_the_bound():
    with pytest.raises(SscrfError, match=r"sample_weight 1e\+300 is above 1e\+100"):
        quiet().fit(X, Y, sample_weight=[1.0, 1e300])
    model = quiet().fit(X, Y, sample_weight=[inputs.MAX_SAMPLE_WEIGHT, 1.0])
    assert np.all(np.isfinite(model.coef_))


# -- model files --------------------------------------------------------------------------


def test_a_forged_array_shape_names_the_file(tmp_path):
    path = tmp_path / "forged.model"
    serialization.save(path, {"kind": "x"}, {"a": np.zeros((2, 3, 0))})
    body = path.read_bytes()[:-32]
    prefix = struct.Struct("<6sIQ")
    magic, version, length = prefix.unpack_from(body)
    header = json.loads(body[prefix.size:prefix.size + length])
    header["arrays"][0]["shape"] = [2**40, 2**40, 0]
    text = json.dumps(header, sort_keys=True).encode()
    body = prefix.pack(magic, version, len(text)) + text + body[prefix.size + length:]
    path.write_bytes(body + hashlib.sha256(body).digest())
    for load in (serialization.load, CRF.load):
        with pytest.raises(SscrfError, match=f"{path}: array 'a' has a shape"):
            load(path)


# -- the lattice API ----------------------------------------------------------------------


E = np.zeros((3, 2))
T = np.zeros((2, 2))
S2 = np.zeros(2)
COMPLEX_CALLS = {
    "log_partition emissions": lambda c: lattice.log_partition(c(E), T),
    "marginals transitions": lambda c: lattice.marginals(E, c(T)),
    "viterbi start": lambda c: lattice.viterbi(E, T, start=c(S2)),
    "nbest end": lambda c: lattice.nbest(E, T, 2, end=c(S2)),
    "sequence_entropy emissions": lambda c: lattice.sequence_entropy(c(E), T),
    "entropy_lattices transitions": lambda c: lattice.entropy_lattices(E, c(T)),
    "entropy_gradient emissions": lambda c: lattice.entropy_gradient(c(E), T),
    "expectation_gradient node_scores": lambda c: lattice.expectation_gradient(
        E, T, c(E), None),
    "expectation_gradient edge_scores": lambda c: lattice.expectation_gradient(
        E, T, E, c(np.zeros((2, 2, 2)))),
    "span_entropy emissions": lambda c: lattice.span_entropy(c(E), T, 0, 2),
    "span_entropies emissions": lambda c: lattice.span_entropies(c(E), T, 2),
    "constrained_entropy emissions": lambda c: lattice.constrained_entropy(c(E), T, 0, [1]),
}


@pytest.mark.parametrize("call", sorted(COMPLEX_CALLS))
def test_complex_arrays_into_the_lattice_are_a_type_error(call):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not a ComplexWarning and a wrong answer
        with pytest.raises(SscrfTypeError, match=f"{call.split()[1]} is a complex array"):
            COMPLEX_CALLS[call](lambda a: a.astype(complex))
        COMPLEX_CALLS[call](lambda a: a)  # the real arrays are fine


def test_lattice_positions_and_label_ids_must_be_integers():
    with pytest.raises(SscrfTypeError, match="a label id must be an integer, not 1.7"):
        lattice.constrained_entropy(E, T, 0, [1.7])
    with pytest.raises(SscrfTypeError, match="begin must be an integer"):
        lattice.span_entropy(E, T, 0.5, 2)


# -- seeds -------------------------------------------------------------------------------


def test_a_negative_seed_names_the_value(capsys, data, tmp_path):  # noqa: F811
    with pytest.raises(SscrfError, match="random_state must be an integer ≥ 0, not -1"):
        select(None, [[["a"]], [["b"]]], "random", 1, random_state=-1)
    for argv in (["select", "--pool", data["test_nogold"], "--strategy", "random",
                  "--seed", "-1"], ["demo", "--seed", "-1"]):
        code, _, err = run(capsys, *argv)
        assert code == 2 and "--seed" in err and "not -1" in err, err


def test_complex_weights_and_log_q_are_a_type_error():
    pool = [[["a"]], [["b"]]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(SscrfTypeError, match="sample_weight is a complex array"):
            quiet().fit(X, Y, sample_weight=np.array([1 + 1j, 1]))
        with pytest.raises(SscrfTypeError, match="log_q is a complex array"):
            select(None, pool, "quota_sampling", 1, log_q=np.array([0j, 1j]))
        with pytest.raises(SscrfTypeError, match="log_q is a complex array"):
            sokolovska_weights(pool, np.array([0j, 1j]))

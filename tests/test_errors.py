"""The error discipline: a bad value raises SscrfError (a ValueError), a value of the
wrong type SscrfTypeError (an SscrfError and a TypeError), at every public entry point of
the estimator's modules."""

import numpy as np
import pytest

import sscrf
from sscrf import inputs
from sscrf.annotations import Alternatives, sentence_masks
from sscrf.constraints import (check_constraints, estimate_constraints, majority_constraints,
                               parse_constraints, propose_features)
from sscrf.corpus import compile_corpus
from sscrf.errors import SscrfError, SscrfTypeError
from sscrf.layout import ParameterLayout
from sscrf.model import CRF
from sscrf.nbest import nbest_from_model
from sscrf.objectives import OBJECTIVES, Objective
from sscrf.optim import lbfgs
from sscrf.partial import apply_baseline
from sscrf.self_training import self_train
from sscrf.serialization import load as load_container

X = [[{"w": "the"}, {"w": "dog"}], [{"w": "a"}, {"w": "cat"}, {"w": "runs"}]]
Y = [["D", "N"], ["D", "N", "V"]]


@pytest.fixture(scope="module")
def model():
    return CRF(verbose=False, n_threads=1, max_iterations=5).fit(X, Y)


def fit(**params):
    return lambda: CRF(**{"verbose": False, "n_threads": 1, "max_iterations": 2,
                          **params}).fit(X, Y)


def _layout_and_corpus():
    layout = ParameterLayout.every_pair(6, 3).core
    features = CRF(verbose=False).fit(X, Y).extractor_.transform(X)
    return layout, compile_corpus(features, labels=np.array([0, 1, 0, 1, 2], np.int32))


BAD_VALUES = {
    "fit c2 < 0": fit(c2=-1.0),
    "fit max_iterations < 0": fit(max_iterations=-1),
    "fit n_threads = 0": fit(n_threads=0),
    "fit entropy_method": fit(entropy_method="slow"),
    "fit feature_set": fit(feature_set="sparse"),
    "fit labels repeated": fit(labels=["D", "D", "N", "V"]),
    "fit X and y lengths": lambda: CRF(verbose=False).fit(X, Y[:1]),
    "fit checkpoint_every = 0": lambda: CRF(verbose=False).fit(X, Y, checkpoint="m",
                                                                checkpoint_every=0),
    "fit sample_weight < 0": lambda: CRF(verbose=False).fit(X, Y, sample_weight=[1, -1]),
    "predict allowed length": lambda m: m.predict(X, allowed=[None]),
    "predict_nbest k = 0": lambda m: m.predict_nbest(X, 0),
    "nbest_from_model k = 0": lambda m: nbest_from_model(m, X, 0),
    "most_uncertain_span width = 0": lambda m: m.most_uncertain_span(X, 0),
    "sequence_log_probability unknown label": lambda m: m.sequence_log_probability(
        X, [["D", "N"], ["D", "N", "ADJ"]]),
    "score of no token": lambda m: m.score([[]], [[]]),
    "load not a model": lambda m, tmp: CRF.load(_write(tmp, b"not a model")),
    "container not a model": lambda m, tmp: load_container(_write(tmp, b"SSCRF")),
    "save into a missing folder": lambda m, tmp: m.save(tmp / "missing" / "m.sscrf"),
    "Alternatives of no labeling": lambda: Alternatives([]),
    "Alternatives of two lengths": lambda: Alternatives([["A"], ["A", "B"]]),
    "sentence_masks unknown label": lambda: sentence_masks(["Z"], {"A": 0}),
    "check_constraints sum": lambda: check_constraints({"w=a": {"A": 0.5, "B": 0.2}}),
    "check_constraints probability": lambda: check_constraints({"w=a": {"A": 1.5}}),
    "estimate_constraints n_per_feature": lambda: estimate_constraints(X, Y, ["w=the"], 0),
    "propose_features n_per_label": lambda: propose_features(X, Y, 0),
    "majority_constraints probability": lambda: majority_constraints({"w=a": "A"}, ["A", "B"],
                                                                     probability=0.0),
    "parse_constraints": lambda: parse_constraints("w=a A:0.5 B\n"),
    "Term n_threads = 0": lambda: OBJECTIVES["likelihood"](*_layout_and_corpus()[::-1], 0),
    "Entropy method": lambda: OBJECTIVES["entropy"](*_layout_and_corpus()[::-1], 1,
                                                     method="slow"),
    "Objective out shape": lambda: Objective([], 1.0)(np.zeros(3), np.zeros(2)),
    "lbfgs memory = 0": lambda: lbfgs(lambda x: (0.0, x), np.zeros(2), memory=0),
    "lbfgs c1 < 0": lambda: lbfgs(lambda x: (0.0, x), np.zeros(2), c1=-1.0),
    "self_train max_rounds < 0": lambda: self_train(CRF(verbose=False), X, Y, X, max_rounds=-1),
    "self_train no unlabeled data": lambda: self_train(CRF(verbose=False), X, Y, []),
    "apply_baseline method": lambda: apply_baseline("best", X, Y),
    "check_integer range": lambda: inputs.check_integer(0, "k", minimum=1),
    "check_number non-finite": lambda: inputs.check_number(float("nan"), "c2"),
    "check_threads range": lambda: inputs.check_threads(inputs.MAX_THREADS + 1),
    "check_label_list repeated": lambda: inputs.check_label_list(["A", "A"]),
    "encode_labels unknown": lambda: inputs.encode_labels([["B"]], {"A": 0}),
    "check_writable folder": lambda m, tmp: inputs.check_writable(tmp),
}

WRONG_TYPES = {
    "fit c2 a string": fit(c2="1"),
    "fit max_iterations a float": fit(max_iterations=1.5),
    "fit min_freq a bool": fit(min_freq=True),
    "fit n_threads a string": fit(n_threads="2"),
    "fit labels one string": fit(labels="DNV"),
    "fit X a string": lambda: CRF(verbose=False).fit("the dog", Y),
    "fit y a label a number": lambda: CRF(verbose=False).fit(X, [["D", 1], ["D", "N", "V"]]),
    "fit X_unlabeled a dict": lambda: CRF(verbose=False, entropy_weight=0.1).fit(
        X, Y, X_unlabeled={"a": 1}),
    "fit sample_weight a string": lambda: CRF(verbose=False).fit(X, Y, sample_weight="1"),
    "fit checkpoint_every a float": lambda: CRF(verbose=False).fit(X, Y, checkpoint="m",
                                                                    checkpoint_every=2.5),
    "predict X a number": lambda m: m.predict(5),
    "predict allowed a string": lambda m: m.predict(X, allowed="DN"),
    "predict_nbest k a float": lambda m: m.predict_nbest(X, 1.5),
    "nbest_from_model k a bool": lambda m: nbest_from_model(m, X, True),
    "most_uncertain_span width a string": lambda m: m.most_uncertain_span(X, "2"),
    "predict_marginals X a dict": lambda m: m.predict_marginals({"w": "a"}),
    "Alternatives of a string": lambda: Alternatives("AB"),
    "Alternatives label a number": lambda: Alternatives([["A", 2]]),
    "sentence_masks label a number": lambda: sentence_masks([3], {"A": 0}),
    "check_constraints a list": lambda: check_constraints([("w=a", {"A": 1.0})]),
    "check_constraints target a list": lambda: check_constraints({"w=a": [("A", 1.0)]}),
    "check_constraints probability a string": lambda: check_constraints({"w=a": {"A": "1"}}),
    "estimate_constraints n_per_feature a float": lambda: estimate_constraints(X, Y, ["w=the"],
                                                                               1.5),
    "estimate_constraints smoothing a string": lambda: estimate_constraints(
        X, Y, ["w=the"], 1, smoothing="0.1"),
    "majority_constraints majority a list": lambda: majority_constraints([("w=a", "A")], ["A"]),
    "Term n_threads a float": lambda: OBJECTIVES["likelihood"](*_layout_and_corpus()[::-1], 1.0),
    "Objective out a list": lambda: Objective([], 1.0)(np.zeros(3), [0.0, 0.0, 0.0]),
    "lbfgs fun not callable": lambda: lbfgs(3, np.zeros(2)),
    "lbfgs memory a float": lambda: lbfgs(lambda x: (0.0, x), np.zeros(2), memory=2.0),
    "self_train max_rounds a float": lambda: self_train(CRF(verbose=False), X, Y, X,
                                                        max_rounds=1.5),
    "self_train X_unlabeled a string": lambda: self_train(CRF(verbose=False), X, Y, "a b"),
    "check_integer a bool": lambda: inputs.check_integer(True, "k"),
    "check_number a string": lambda: inputs.check_number("1", "c2"),
    "check_threads a float": lambda: inputs.check_threads(2.0),
    "check_sentences a dict": lambda: inputs.check_sentences({}, "X"),
    "check_label_list not strings": lambda: inputs.check_label_list(["A", 1]),
}


def _write(tmp, data):
    path = tmp / "file"
    path.write_bytes(data)
    return path


def _call(case, model, tmp_path):
    n = case.__code__.co_argcount
    return case(*(model, tmp_path)[:n])


@pytest.mark.parametrize("name", sorted(BAD_VALUES))
def test_a_bad_value_raises_sscrf_error(name, model, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SscrfError) as info:
        _call(BAD_VALUES[name], model, tmp_path)
    assert isinstance(info.value, ValueError)
    assert not isinstance(info.value, SscrfTypeError), info.value


@pytest.mark.parametrize("name", sorted(WRONG_TYPES))
def test_a_wrong_type_raises_sscrf_type_error(name, model, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SscrfTypeError) as info:
        _call(WRONG_TYPES[name], model, tmp_path)
    assert isinstance(info.value, TypeError) and isinstance(info.value, ValueError)
    assert isinstance(info.value, SscrfError)


def test_the_hierarchy():
    assert issubclass(SscrfError, ValueError) and not issubclass(SscrfError, TypeError)
    assert issubclass(SscrfTypeError, SscrfError) and issubclass(SscrfTypeError, TypeError)
    assert sscrf.SscrfError is SscrfError and sscrf.SscrfTypeError is SscrfTypeError


def test_the_same_thread_rule_everywhere(model):
    # one rule and one message for the estimator, the terms and the optimiser
    layout, corpus = _layout_and_corpus()
    for call in (lambda n: CRF(n_threads=n, verbose=False).fit(X, Y),
                 lambda n: OBJECTIVES["likelihood"](corpus, layout, n),
                 lambda n: lbfgs(lambda x: (0.0, x), np.zeros(2), n_threads=n)):
        with pytest.raises(SscrfError, match=rf"n_threads must be a positive integer \(at most "
                                             rf"{inputs.MAX_THREADS}\)"):
            call(inputs.MAX_THREADS + 1)

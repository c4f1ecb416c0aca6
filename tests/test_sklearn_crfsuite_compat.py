"""sklearn-crfsuite code runs on sscrf.CRF: its constructor arguments keep their
meaning, or are refused with a message saying what sscrf supports."""

import copy

import numpy as np
import pytest
from sscrf import CRF
from sscrf.errors import SscrfError, SscrfTypeError

X = [[{"w": w, "bias": 1.0} for w in s.split()] for s in
     ["the cat sat", "a dog ran", "the dog sat", "a cat ran"] * 3]
Y = [["D", "N", "V"]] * 12


def test_quiet_by_default(capfd):
    CRF(max_iterations=5, n_threads=1).fit(X, Y)
    out, err = capfd.readouterr()
    assert out == "" and err == ""


@pytest.mark.parametrize("algorithm", ["l2sgd", "ap", "pa", "arow"])
def test_other_algorithms_are_refused_naming_lbfgs(algorithm):
    with pytest.raises(SscrfError, match="algorithm='lbfgs'") as raised:
        CRF(algorithm=algorithm).fit(X, Y)
    assert algorithm in str(raised.value)


def test_lbfgs_is_accepted():
    crf = CRF(algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=20,
              all_possible_transitions=True, n_threads=1).fit(X, Y)
    assert crf.predict(X[:1]) == [Y[0]]


@pytest.mark.parametrize("linesearch", ["Backtracking", "StrongBacktracking"])
def test_other_linesearches_are_refused_naming_morethuente(linesearch):
    with pytest.raises(SscrfError, match="MoreThuente"):
        CRF(linesearch=linesearch).fit(X, Y)


def test_num_memories_is_the_lbfgs_history():
    a = CRF(num_memories=1, max_iterations=15, n_threads=1).fit(X, Y)
    b = CRF(num_memories=6, max_iterations=15, n_threads=1).fit(X, Y)
    assert not np.array_equal(a.coef_, b.coef_)
    with pytest.raises(SscrfError, match="num_memories"):
        CRF(num_memories=0).fit(X, Y)


@pytest.mark.parametrize("states, feature_set", [(True, "dense"), (False, "observed")])
def test_all_possible_states_is_the_feature_set(states, feature_set):
    crf = CRF(all_possible_states=states, max_iterations=5, n_threads=1).fit(X, Y)
    assert crf.feature_set_ == feature_set


def test_all_possible_states_contradicting_feature_set_is_refused():
    with pytest.raises(SscrfError, match="contradicts"):
        CRF(all_possible_states=True, feature_set="observed").fit(X, Y)
    with pytest.raises(SscrfTypeError):
        CRF(all_possible_transitions="yes").fit(X, Y)


@pytest.mark.parametrize("transitions", [None, True, False])
def test_all_possible_transitions_trains_every_transition(transitions):
    crf = CRF(all_possible_transitions=transitions, max_iterations=5, n_threads=1).fit(X, Y)
    assert crf.transitions_.shape == (3, 3)


def test_new_arguments_follow_the_estimator_protocol():
    crf = CRF(algorithm="lbfgs", num_memories=4, linesearch="MoreThuente",
              all_possible_states=True, all_possible_transitions=False)
    params = crf.get_params()
    assert params["num_memories"] == 4 and params["all_possible_states"] is True
    again = CRF(**params)
    assert again.get_params() == params
    assert crf.set_params(num_memories=3).num_memories == 3
    assert copy.deepcopy(crf).get_params() == crf.get_params()
    sklearn_base = pytest.importorskip("sklearn.base")
    assert sklearn_base.clone(crf).get_params() == crf.get_params()


def test_size_num_attributes_and_training_log(tmp_path):
    crf = CRF(max_iterations=8, n_threads=1).fit(X, Y)
    assert crf.num_attributes_ == len(crf.attributes_) == 7   # bias and six words
    assert crf.size_ >= crf.coef_.nbytes > 0
    log = crf.training_log_
    assert [it["num"] for it in log.iterations] == list(range(1, len(log.iterations) + 1))
    assert log.last_iteration["loss"] == crf.training_["history"][-1]
    crf.save(tmp_path / "m.model")
    loaded = CRF.load(tmp_path / "m.model")
    assert loaded.training_log_ is None and loaded.num_attributes_ == 7

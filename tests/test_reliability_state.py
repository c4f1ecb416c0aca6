"""Reliability, state consistency: a fit that fails leaves the estimator exactly as it was,
Ctrl-C commits the best model so far and then stops the caller, ``save`` writes only a
model that loads back, and two threads fitting one model do not interleave.

The next defect of this kind (a state that a failure, an interrupt or a second thread
leaves half changed) has its test here.
"""

import copy
import pickle
import threading

import numpy as np
import pytest

from sscrf import CRF, SscrfError, SscrfTypeError
from sscrf.active import ActiveLearner
from sscrf.demo import generate_hmm_corpus
from sscrf.objectives import Objective


@pytest.fixture(scope="module")
def data():
    X, y = generate_hmm_corpus(60, seed=5)
    X_unlabeled, _ = generate_hmm_corpus(20, seed=6)
    return X, y, X_unlabeled


def fitted(data, **params):
    X, y, _ = data
    return CRF(templates="default", verbose=False, max_iterations=5, n_threads=1,
               **params).fit(X, y)


def snapshot(model, data, path):
    """Everything a user sees of a fitted model, bit for bit."""
    model.save(path)
    return {"classes_": list(model.classes_), "attributes_": list(model.attributes_),
            "coef_": model.coef_.tobytes(), "training_": repr(model.training_),
            "predict": model.predict(data[0][:10]), "file": path.read_bytes(),
            "fitted names": sorted(k for k in vars(model) if k.endswith("_"))}


def reversed_labels(y):
    return [labels[::-1] for labels in y]


# Each failure: (hyperparameters to set, fit's keyword arguments, expected exception).
FAILURES = {
    "the entropy term with an unknown method": (
        dict(entropy_method="exact", entropy_weight=0.1), "unlabeled", SscrfError),
    "init=42": ({}, dict(init=42), SscrfTypeError),
    "init is an unfitted CRF": ({}, dict(init=CRF()), SscrfError),
    "callback raises": ({}, dict(callback=lambda k, loss, theta: 1 / 0), ZeroDivisionError),
    "labels= is a set": ("label set", {}, SscrfTypeError),
    "sample_weight too large": ({}, "huge weights", SscrfError),
    "checkpoint folder missing": ({}, dict(checkpoint="/nonexistent/folder/m.model"),
                                  SscrfError),
}


@pytest.mark.parametrize("failure", sorted(FAILURES))
def test_a_failed_fit_leaves_the_model_bit_for_bit_as_it_was(data, failure, tmp_path):
    X, y, X_unlabeled = data
    model = fitted(data)
    params = model.get_params()
    before = snapshot(model, data, tmp_path / "before.model")
    settings, kwargs, error = FAILURES[failure]
    if settings == "label set":  # every label of y: on its own, a valid label set
        settings = dict(labels={label for labels in y for label in labels})
    if kwargs == "unlabeled":
        kwargs = dict(X_unlabeled=X_unlabeled)
    elif kwargs == "huge weights":
        kwargs = dict(sample_weight=[1e300] * len(X))
    model.set_params(**settings)
    with pytest.raises(error):
        model.fit(X, reversed_labels(y), **kwargs)
    model.set_params(**params)
    assert snapshot(model, data, tmp_path / "after.model") == before


def test_init_of_the_wrong_type_is_a_type_error_naming_it(data):
    X, y, _ = data
    with pytest.raises(SscrfTypeError, match="init must be a fitted CRF.*not int"):
        CRF(verbose=False).fit(X, y, init=42)


# -- save writes only what loads ----------------------------------------------------------


def _drop_a_label(model, other):
    model.classes_ = model.classes_[:-1]


def _shorter_coef(model, other):
    model.coef_ = model.coef_[:-1]


def _vocabulary_of_another_model(model, other):
    model.extractor_ = other.extractor_


def _labels_setting_outside_the_model(model, other):
    model.labels = list(model.classes_) + ["NOT-A-LABEL"]


def _non_finite_weight(model, other):
    model.coef_ = model.coef_.copy()
    model.coef_[0] = np.nan


@pytest.mark.parametrize("damage, named", [
    (_drop_a_label, "classes_"), (_shorter_coef, "coef_"),
    (_vocabulary_of_another_model, "vocabulary"), (_labels_setting_outside_the_model, "labels="),
    (_non_finite_weight, "non-finite"),
])
def test_save_refuses_an_inconsistent_model_and_keeps_the_old_file(data, tmp_path, damage,
                                                                   named):
    X, y, _ = data
    model = fitted(data)
    other = CRF(templates="default", verbose=False, max_iterations=2).fit(X[:5], y[:5])
    path = tmp_path / "good.model"
    model.save(path)
    good = path.read_bytes()
    damage(model, other)
    with pytest.raises(SscrfError, match=named) as info:
        model.save(path)
    assert str(path) in str(info.value) and "not saved" in str(info.value)
    assert path.read_bytes() == good
    CRF.load(path)


# -- Ctrl-C -----------------------------------------------------------------------------


def _interrupt_at(iteration):
    def callback(k, loss, theta):
        if k == iteration:
            raise KeyboardInterrupt

    return callback


def test_ctrl_c_commits_the_best_model_so_far_then_reraises(data, tmp_path):
    X, y, _ = data
    model = fitted(data)
    with pytest.raises(KeyboardInterrupt, match="after 3 iterations"):
        model.fit(X, reversed_labels(y), callback=_interrupt_at(3))
    assert model.training_["stop_reason"] == "interrupted"
    assert model.training_["iterations"] == 3
    # committed and consistent: predicts the new label order, saves, loads back
    path = tmp_path / "interrupted.model"
    model.save(path)
    loaded = CRF.load(path)
    np.testing.assert_array_equal(loaded.coef_, model.coef_)
    assert loaded.predict(X[:5]) == model.predict(X[:5])


def test_ctrl_c_stops_a_loop_of_fits(data):
    X, y, _ = data
    fits = []
    with pytest.raises(KeyboardInterrupt):
        for seed in range(3):
            fits.append(seed)
            CRF(verbose=False, templates="default", max_iterations=20).fit(
                X, y, callback=_interrupt_at(2))
    assert fits == [0]


def test_ctrl_c_in_the_warm_start_commits_it_then_reraises(data):
    X, y, X_unlabeled = data
    model = CRF(templates="default", verbose=False, max_iterations=20, entropy_weight=0.1)
    with pytest.raises(KeyboardInterrupt):
        model.fit(X, y, X_unlabeled=X_unlabeled, callback=_interrupt_at(2))
    assert model.training_["stages"]["supervised"]["stop_reason"] == "interrupted"
    assert len(model.predict(X[:2])) == 2


def test_ctrl_c_before_the_first_iteration_leaves_the_model_as_it_was(data, tmp_path,
                                                                       monkeypatch):
    X, y, _ = data
    model = fitted(data)
    before = snapshot(model, data, tmp_path / "before.model")

    def interrupted(self, theta, out=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(Objective, "__call__", interrupted)
    with pytest.raises(KeyboardInterrupt):
        model.fit(X, reversed_labels(y))
    monkeypatch.undo()
    assert snapshot(model, data, tmp_path / "after.model") == before


# -- threads ----------------------------------------------------------------------------


def test_two_threads_fitting_one_model_are_serialised(data):
    X, y, _ = data
    model = CRF(templates="default", verbose=False, max_iterations=3, n_threads=1)
    first_trains, second_started, second_trains = (threading.Event() for _ in range(3))
    seen_while_first_trains = []
    errors = []

    def first_callback(k, loss, theta):
        if k == 1:
            first_trains.set()
            second_started.wait(10)
            # the second fit waits for the lock: it cannot reach its optimiser now
            seen_while_first_trains.append(second_trains.wait(2))

    def second_callback(k, loss, theta):
        second_trains.set()

    def run(labels, callback, started=None):
        try:
            if started is not None:
                started.set()
            model.fit(X, labels, callback=callback)
        except Exception as e:  # reported below
            errors.append(e)

    first = threading.Thread(target=run, args=(y, first_callback))
    first.start()
    assert first_trains.wait(60)
    second = threading.Thread(target=run, args=(reversed_labels(y), second_callback,
                                                second_started))
    second.start()
    first.join(60)
    second.join(60)
    assert not errors
    assert seen_while_first_trains == [False]
    assert second_trains.is_set()
    # the second fit came last: the model is its result
    reference = CRF(templates="default", verbose=False, max_iterations=3, n_threads=1).fit(
        X, reversed_labels(y))
    np.testing.assert_array_equal(model.coef_, reference.coef_)


def test_locks_are_not_pickled_copied_or_parameters(data, tmp_path):
    model = fitted(data)
    assert "_fit_lock" in vars(model) and "_state_lock" in vars(model)
    assert set(model.get_params()) == set(CRF().get_params())
    for copied in (pickle.loads(pickle.dumps(model)), copy.deepcopy(model), copy.copy(model)):
        np.testing.assert_array_equal(copied.coef_, model.coef_)
        assert copied.predict(data[0][:3]) == model.predict(data[0][:3])
        assert "_fit_lock" not in vars(copied) or copied._fit_lock is not model._fit_lock
    # what sklearn.base.clone does: a new estimator from get_params, each parameter kept
    params = model.get_params()
    clone = type(model)(**params)
    assert all(clone.get_params()[k] is v for k, v in params.items())
    clone.fit(*data[:2])  # with a lock of its own
    assert clone._fit_lock is not model._fit_lock


# -- siblings: other calls that change an object's state --------------------------------


def test_set_params_with_an_invalid_name_sets_nothing():
    model = CRF(c2=1.0)
    with pytest.raises(ValueError, match="invalid parameter"):
        model.set_params(c2=5.0, no_such_parameter=1)
    assert model.c2 == 1.0


def test_a_failed_teach_leaves_the_active_learner_as_it_was(data):
    X, y, _ = data
    learner = ActiveLearner(CRF(templates="default", verbose=False, max_iterations=3), X[10:],
                            "random", X_labeled=X[:10], y_labeled=y[:10], random_state=0)
    model, whole = learner.model, learner.labeled_indices_.tolist()
    data_before = learner.training_data()
    good = y[10]
    bad = ["X"] * (len(X[11]) + 1)  # one label too many
    with pytest.raises(SscrfError, match="tokens but the answer has"):
        learner.teach([0, 1], [good, bad])
    assert learner.model is model and learner.labeled_indices_.tolist() == whole
    assert learner.training_data() == data_before

    def interrupted(self, theta, out=None):
        raise KeyboardInterrupt

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Objective, "__call__", interrupted)
        with pytest.raises(KeyboardInterrupt):
            learner.teach([0], [good])
    assert learner.model is model and learner.training_data() == data_before

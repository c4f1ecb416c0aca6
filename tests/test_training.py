"""Fitting (sscrf.training): checkpoints and resuming, Ctrl-C, and a failed fit that leaves
the estimator as it was."""

import contextlib

import numpy as np
import pytest

import sscrf
from sscrf.demo import generate_hmm_corpus


@pytest.fixture(scope="module")
def data():
    return generate_hmm_corpus(120, seed=5)


def test_checkpoint_is_written_and_resumes(tmp_path, data):
    X, y = data
    path = tmp_path / "run.model"
    seen = []
    model = sscrf.CRF(templates="default", verbose=False, max_iterations=12, delta=0.0)
    model.fit(X, y, checkpoint=path, checkpoint_every=5,
              callback=lambda k, loss, theta: seen.append(loss) and False)
    saved = sscrf.CRF.load(path)
    assert saved.training_["iterations"] == 10
    assert saved.training_["loss"] == pytest.approx(seen[9])
    # the checkpoint predicts like a model with its own coefficients
    assert saved.predict(X[:3]) == saved.predict(X[:3])
    resumed = sscrf.CRF(templates="default", verbose=False, max_iterations=3)
    resumed.fit(X, y, init=path)
    assert resumed.training_["loss"] <= seen[9] + 1e-9


def test_checkpoint_every_must_be_positive(tmp_path, data):
    X, y = data
    with pytest.raises(sscrf.SscrfError, match="checkpoint_every"):
        sscrf.CRF(templates="default", verbose=False).fit(X, y, checkpoint=tmp_path / "m",
                                                          checkpoint_every=0)


def test_checkpoint_folder_must_exist(tmp_path, data):
    X, y = data
    with pytest.raises(sscrf.SscrfError, match="does not exist"):
        sscrf.CRF(templates="default", verbose=False).fit(
            X, y, checkpoint=tmp_path / "missing" / "m")


def test_interrupt_keeps_best_parameters(data):
    X, y = data

    def interrupt(k, loss, theta):
        if k == 4:
            raise KeyboardInterrupt

    model = sscrf.CRF(templates="default", verbose=False, max_iterations=50)
    with pytest.raises(KeyboardInterrupt):
        model.fit(X, y, callback=interrupt)
    assert model.training_["stop_reason"] == "interrupted"
    assert np.all(np.isfinite(model.coef_)) and np.any(model.coef_ != 0)
    assert len(model.predict(X[:2])) == 2


# -- a fit that raises leaves the estimator as it was -------------------------------


def _fitted_state(model):
    return {k: v for k, v in vars(model).items() if k.endswith("_") and not k.startswith("_")}


@pytest.mark.parametrize("failure", ["late value", "non-finite loss", "callback raises"])
def test_a_failed_fit_leaves_the_fitted_model_as_it_was(data, failure, monkeypatch):
    X, y = data
    model = sscrf.CRF(templates="default", verbose=False, max_iterations=5).fit(X, y)
    before = _fitted_state(model)
    coef = model.coef_.copy()
    predicted = model.predict(X[:3])
    kwargs = {}
    if failure == "late value":  # refused after the vocabulary and the layout are built
        kwargs = dict(X_unlabeled=X[:5], constraints={"no such attribute": {y[0][0]: 1.0}})
        model.set_params(ge_weight=1.0)
        error = sscrf.SscrfError
    elif failure == "non-finite loss":
        def nan_objective(self, theta, out=None):
            return float("nan"), np.zeros_like(theta)

        monkeypatch.setattr(sscrf.objectives.Objective, "__call__", nan_objective)
        error = sscrf.SscrfError
    else:
        class Boom(Exception):
            pass

        def callback(k, loss, theta):
            raise Boom

        kwargs = dict(callback=callback)
        error = Boom
    warns = pytest.warns(UserWarning) if failure == "late value" else contextlib.nullcontext()
    with pytest.raises(error), warns:
        model.fit(X[:40], [labels[::-1] for labels in y[:40]], **kwargs)
    assert _fitted_state(model).keys() == before.keys()
    for name, value in before.items():
        assert _fitted_state(model)[name] is value, name
    np.testing.assert_array_equal(model.coef_, coef)
    assert model.predict(X[:3]) == predicted

"""Reliability: feature values far from unit scale, and a training that cannot move.

A raw count of about 1e6 as a feature value once stopped L-BFGS after 0-1
iterations ("line search failed", training accuracy 0.30 instead of 0.97,
silently with ``verbose=False``), and from about 1e154 the gradient norm
overflowed and every weight stayed exactly 0. The expected accuracy is that of
the same data with the feature divided by its scale, which trains at unit scale.
"""

import math
import warnings

import numpy as np
import pytest

import sscrf
import sscrf.training
from sscrf.demo import generate_hmm_corpus
from sscrf.errors import ConvergenceWarning, FeatureScaleWarning
from sscrf.features import FeatureExtractor
from sscrf.layout import ParameterLayout
from sscrf.optim import lbfgs


@pytest.fixture(scope="module")
def corpus():
    return generate_hmm_corpus(200, seed=0)


def with_length(X, scale):
    """Feature dicts with the word's length times ``scale`` as one numeric feature."""
    return [[{"w": w, "pos": pos, "bias": 1.0, "len": len(w) * scale} for w, pos in sentence]
            for sentence in X]


def fit(X, y):
    return sscrf.CRF(max_iterations=100, verbose=False).fit(X, y)


@pytest.fixture(scope="module")
def unit_accuracy(corpus):
    X, y = corpus
    Xu = with_length(X, 1.0)                     # lengths 1..9: no rescaling, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = fit(Xu, y)
    assert "stalled" not in model.training_
    return model.score(Xu, y)


@pytest.mark.parametrize("scale", [1e6, 1e200])
def test_a_large_feature_trains_to_the_accuracy_of_the_unit_scale_one(corpus, unit_accuracy,
                                                                      scale):
    X, y = corpus
    Xs = with_length(X, scale)
    with pytest.warns(FeatureScaleWarning, match=r"attribute 'len' has values up to 9e\+"):
        model = fit(Xs, y)
    assert unit_accuracy > 0.95
    assert model.score(Xs, y) >= unit_accuracy - 0.005
    assert np.count_nonzero(model.coef_) > model.coef_.size // 2
    assert "stalled" not in model.training_
    assert not model.training_["stop_reason"].startswith("line search failed")


def test_the_scale_warning_comes_once_and_names_the_largest_attribute(corpus):
    X, y = corpus
    Xs = [[dict(token, big=token["len"] * 1e3, huge=-token["len"] * 1e8) for token in s]
          for s in with_length(X, 1.0)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit(Xs, y)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1 and issubclass(caught[0].category, FeatureScaleWarning)
    assert "'huge' has values up to 9e+08" in messages[0]
    assert "1 more attribute above it" in messages[0]


def test_moderate_values_are_rescaled_without_a_warning(corpus):
    X, y = corpus
    Xs = with_length(X, 100.0)                   # up to 900: above 16, below 1024
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = fit(Xs, y)
    assert model.training_["stop_reason"] != "reached max_iterations"
    assert "stalled" not in model.training_


def test_a_training_that_cannot_move_says_so(corpus, monkeypatch, tmp_path):
    """Without the rescaling the feature of 1e6 stalls as it did: a ConvergenceWarning
    and ``training_["stalled"]``, which the saved model keeps."""
    X, y = corpus
    monkeypatch.setattr(sscrf.training, "variable_scale", lambda *args: None)
    model = sscrf.CRF(max_iterations=100, verbose=False)
    with pytest.warns(ConvergenceWarning, match="stopped short of a minimum"):
        model.fit(with_length(X, 1e6), y)
    assert "gradient promised a decrease" in model.training_["stalled"]
    model.save(tmp_path / "stalled.model")
    assert sscrf.CRF.load(tmp_path / "stalled.model").training_["stalled"] == \
        model.training_["stalled"]


@pytest.mark.parametrize("scale", [1e154, 1e200])
def test_no_training_ends_silently_with_all_zero_weights(corpus, monkeypatch, scale):
    """Even without the rescaling of variables, a feature of 1e154 or more either trains
    or warns and says so in the record (it warns: the weights stay 0 at a failed first
    line search, which the record calls stalled); it no longer takes zero steps until
    the delta test stops it as if it had converged."""
    X, y = corpus
    monkeypatch.setattr(sscrf.training, "variable_scale", lambda *args: None)
    model = sscrf.CRF(max_iterations=100, verbose=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(with_length(X, scale), y)
    loud = any(issubclass(w.category, ConvergenceWarning) for w in caught)
    assert loud == ("stalled" in model.training_)
    assert loud or (np.any(model.coef_) and model.score(with_length(X, scale), y) > 0.9)
    assert "improvement over" not in model.training_["stop_reason"]


# -- the optimiser's gradient norm at 1e154 and beyond --------------------------------------

def test_the_gradient_norm_does_not_overflow():
    """‖g‖ of 100 entries of 1e160 is 1e161, not inf: the epsilon test still fires."""
    g = np.full(100, 1e160)

    def fun(x):
        return float(g @ x), g

    result = lbfgs(fun, np.zeros(100), epsilon=1e200)
    assert result.stop_reason == "gradient norm below epsilon" and result.n_iterations == 0
    scaled = lbfgs(fun, np.zeros(100), epsilon=1e200, x_scale=np.full(100, 2.0 ** -500))
    assert scaled.stop_reason == "gradient norm below epsilon" and scaled.n_iterations == 0


@pytest.mark.parametrize("factor", [2.0 ** 520, 2.0 ** 1000])
def test_an_objective_times_a_huge_power_of_two_runs_bit_for_bit_as_the_unit_one(factor):
    """L-BFGS's iterates do not change when F is multiplied by a constant; a power of
    two keeps that exact, so rescaling F where ‖g‖² would overflow changes no bit."""
    rng = np.random.default_rng(3)
    m = rng.standard_normal((20, 20))
    a, b = m @ m.T + np.eye(20), rng.standard_normal(20)

    def quadratic(k):
        return lambda x: (k * (0.5 * x @ a @ x - b @ x), k * (a @ x - b))

    x0 = np.linspace(-1.0, 1.0, 20)             # F(x0) ≠ 0, so that its scale shows
    unit = lbfgs(quadratic(1.0), x0, max_iterations=300, delta=0.0, epsilon=1e-9)
    big = lbfgs(quadratic(factor), x0, max_iterations=300, delta=0.0, epsilon=1e-9)
    assert np.array_equal(unit.x, big.x)
    assert big.history == [factor * h for h in unit.history] and big.fun == factor * unit.fun
    assert (big.n_iterations, big.n_evaluations, big.stop_reason) == \
        (unit.n_iterations, unit.n_evaluations, unit.stop_reason)
    assert big.stalled is None
    assert np.allclose(big.x, np.linalg.solve(a, b), rtol=0, atol=1e-6)
    assert math.isfinite(big.fun)


def test_a_point_whose_squares_overflow_is_not_taken_for_a_minimum():
    """‖x0‖² of entries near 1e200 overflows; ‖g‖ / max(1, ‖x‖) must not read as 0 there
    (here ‖g‖ / ‖x‖ is about 1e-303, above epsilon)."""
    a = np.linspace(1.0, 2.0, 100) * 1e200

    def fun(x):                                  # 1e-300·‖x − a‖² / 2, without overflow
        r = x - a
        return 0.5 * float(np.sum((1e-150 * r) ** 2)), 1e-300 * r

    result = lbfgs(fun, a * 1.001, epsilon=1e-310, max_iterations=3)
    assert result.stop_reason != "gradient norm below epsilon"
    assert result.n_evaluations > 1


def test_huge_sample_weights_train_without_a_false_alarm(corpus):
    """A loss of 1e100 × the likelihood nears 0 on a separable corpus with a rounding
    error of about 1e88: a line search failing there is no stall."""
    X, y = corpus
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = sscrf.CRF(templates="default", max_iterations=100, verbose=False).fit(
            X, y, sample_weight=np.full(len(X), 1e100))
    assert "stalled" not in model.training_
    assert model.score(X, y) > 0.95


def test_variable_scale_covers_exactly_the_weights_of_large_attributes():
    X = [[{"a": 1.0, "b": 20.0, "c": -3e6}, {"a": 2.0, "d": 17.0}], [{"b": -40.0, "e": 16.0}]]
    extractor = FeatureExtractor()
    features = extractor.fit_transform(X)
    layout = ParameterLayout.every_pair(features[0].n_attributes, 3)
    with pytest.warns(FeatureScaleWarning, match="'c' has values up to 3e\\+06"):
        x_scale = sscrf.training.variable_scale(features, extractor, layout)
    want = np.ones(layout.size)
    for name, scale in (("b", 2.0 ** -6), ("c", 2.0 ** -22), ("d", 2.0 ** -5)):
        a = extractor.attribute_index()[name]
        want[layout.row_ptr[a]:layout.row_ptr[a + 1]] = scale
    assert np.array_equal(x_scale, want)
    assert sscrf.training.variable_scale(features, extractor, layout, bound=1e7) is None

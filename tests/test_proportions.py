"""Label proportions (expectation regularisation): the term, its targets, and fit.

References: the expectation by enumeration of every labeling of tiny chains
(``test_ge.Tiny``, ``reference.brute_force``), the gradient by central
finite differences of that brute-force value.
"""

import math
import warnings

import numpy as np
import pytest

import sscrf
from sscrf import _core
from sscrf.features import Features
from sscrf.proportions import always_on_features, proportion_term, target_proportions
from test_dev_selection import chunk_data
from test_ge import SMOOTH, Tiny


def brute_value(tiny, theta, target, penalty):
    raw = tiny.node_marginals(theta).mean(axis=0)  # every token counts once
    if penalty == "l2":
        return math.fsum((raw - target) ** 2)
    S = tiny.S
    p_hat = (raw + SMOOTH) / (1 + S * SMOOTH)
    return math.fsum(p * math.log(p / q) for p, q in zip(target, p_hat) if p > 0)


def tiny_features(tiny):
    return Features(tiny.indptr, tiny.indices, tiny.values, tiny.offsets, tiny.A)


@pytest.mark.parametrize("penalty", ["kl", "l2"])
def test_value_and_gradient_match_brute_force(penalty):
    tiny = Tiny(3, [3, 1, 4, 2], p_fire=0.4)
    assert not all(0 in tiny.indices[a:b] for a, b in zip(tiny.indptr[:-1], tiny.indptr[1:]))
    target = np.array([0.6, 0.0, 0.4])
    weight = 1.3
    term = proportion_term(tiny_features(tiny), tiny.layout, 2, weight, target[None, :],
                           penalty)
    theta = np.random.default_rng(7).normal(scale=1.5, size=tiny.n_params)
    value, grad = term.value_and_gradient(theta)
    assert value == pytest.approx(weight * brute_value(tiny, theta, target, penalty),
                                  rel=1e-10, abs=1e-12)
    assert term.counts.tolist() == [sum(tiny.lengths)]
    h = 1e-5
    fd = np.empty(tiny.n_params)
    for k in range(tiny.n_params):
        e = np.zeros(tiny.n_params)
        e[k] = h
        fd[k] = weight * (brute_value(tiny, theta + e, target, penalty)
                          - brute_value(tiny, theta - e, target, penalty)) / (2 * h)
    assert np.max(np.abs(grad - fd)) <= 1e-7 * max(1.0, np.max(np.abs(fd)))


def test_always_on_features_keep_the_scores():
    tiny = Tiny(4, [2, 5, 1], p_fire=0.3)
    before = tiny_features(tiny)
    after = always_on_features(before)
    for t in range(before.n_tokens):
        row = after.indices[after.indptr[t]:after.indptr[t + 1]].tolist()
        old = before.indices[before.indptr[t]:before.indptr[t + 1]].tolist()
        assert row.count(0) == 1 and row == sorted(row)
        assert sorted(set(row) - {0}) == sorted(set(old) - {0})
    theta = np.random.default_rng(1).normal(size=tiny.n_params)
    scores = [_core.emissions_corpus(_core.Corpus(f.indptr, f.indices, f.values, f.offsets,
                                                  f.n_attributes, None, None, None),
                                     tiny.layout, theta, 1) for f in (before, after)]
    np.testing.assert_array_equal(scores[0], scores[1])


def test_targets():
    y = [["O", "B-X", "I-X"], ["O", "O"], ["O", {"B-X", "O"}]]  # the partial one is left out
    np.testing.assert_allclose(target_proportions("labeled", y, ["B-X", "I-X", "O"]),
                               [[0.2, 0.2, 0.6]])
    np.testing.assert_allclose(target_proportions({"O": 0.75, "B-X": 0.25}, y,
                                                  ["B-X", "I-X", "O"]), [[0.25, 0.0, 0.75]])
    for bad, match in (({"O": 0.5}, "sum"), ({"Z": 1.0}, "not one of"), ("all", "labeled"),
                       ({"O": -1.0, "B-X": 2.0}, "non-negative"), ({}, "non-empty")):
        with pytest.raises(sscrf.SscrfError, match=match):
            target_proportions(bad, y, ["B-X", "I-X", "O"])


def mean_marginals(model, X):
    return np.concatenate(model.predict_marginals_array(X)).mean(axis=0)


def test_proportions_hold_entropy_back_from_the_majority_label():
    X, y = chunk_data(20, 12, noise=0.4)
    XU, _ = chunk_data(21, 120, noise=0.0)
    kw = dict(max_iterations=60, n_threads=1, c2=0.1, entropy_weight=1.0)
    entropy = sscrf.CRF(**kw).fit(X, y, X_unlabeled=XU)
    both = sscrf.CRF(proportion_weight=50.0, **kw).fit(X, y, X_unlabeled=XU)
    target = target_proportions("labeled", y, both.classes_)[0]

    def kl(p):
        return float(np.sum(target * np.log(target / p)))

    assert kl(mean_marginals(both, XU)) < kl(mean_marginals(entropy, XU))
    # two terms on unlabeled data, from the supervised optimum
    assert "supervised" in both.training_["stages"]


def test_fit_errors_and_zero_weight():
    X, y = chunk_data(22, 10)
    XU, _ = chunk_data(23, 10)
    with pytest.raises(sscrf.SscrfError, match="proportion_weight"):
        sscrf.CRF(proportion_weight=1.0).fit(X, y)
    with pytest.raises(sscrf.SscrfError, match="label_proportions"):
        sscrf.CRF(proportion_weight=1.0, label_proportions="some").fit(X, y, X_unlabeled=XU)
    with pytest.raises(sscrf.SscrfError, match="not one of"):
        sscrf.CRF(proportion_weight=1.0, label_proportions={"Z": 1.0}).fit(
            X, y, X_unlabeled=XU)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        zero = sscrf.CRF(proportion_weight=0.0, max_iterations=5).fit(X, y, X_unlabeled=XU)
    assert zero.feature_set_ == "dense" and "stages" not in zero.training_

"""Shared by the sscrf.active tests: a tiny model on feature dicts, and brute force.

Every probability a selector uses is recomputed by enumerating all labelings of tiny
chains, from the trained model's own weights rebuilt into dense emissions
(``E[t, l] = Σ_a value(a, t)·state_features_[(a, l)]``), as tests/test_model.py does.
"""

import numpy as np
import pytest

from sscrf import CRF


# ---------------------------------------------------------------------------
# A tiny model on feature dicts, and brute force from its weights
# ---------------------------------------------------------------------------

WORDS = {"D": ["the", "a"], "N": ["dog", "cat", "park"], "V": ["runs", "sees", "park"]}


SHAPES = [["D", "N", "V"], ["N", "V"], ["D", "N", "V", "D", "N"], ["N", "V", "N"]]


def features(words):
    return [{"w": w, "suf": w[-1], "prev": words[i - 1] if i else "<s>", "bias": 1.0}
            for i, w in enumerate(words)]


def make_data(seed, n):
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n):
        shape = SHAPES[int(rng.integers(len(SHAPES)))]
        labels = list(shape)
        if rng.random() < 0.2:  # label noise keeps the model uncertain
            labels[int(rng.integers(len(labels)))] = str(rng.choice(sorted(WORDS)))
        X.append(features([str(rng.choice(WORDS[l])) for l in shape]))
        y.append(labels)
    return X, y


def tiny_crf(**params):
    return CRF(**{"c2": 0.5, "max_iterations": 40, "verbose": False, "n_threads": 1, **params})


@pytest.fixture(scope="module")
def model():
    return tiny_crf().fit(*make_data(0, 20))

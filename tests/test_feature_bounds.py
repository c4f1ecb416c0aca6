"""Bounded model size: ``max_features`` (Python and command line).

The attributes kept are checked against a count by hand: for each attribute
string (feature dicts of word and tag strings), the number of tokens it
occurs in, ranked by (−count, first occurrence), the first ``K`` kept.
"""

import numpy as np
import pytest

from sscrf import CRF, SscrfError
from sscrf.demo import generate_hmm_corpus
from sscrf.features.vocabulary import AttributeCounts, frequency_order
from cli_common import run
from cli_common import data  # noqa: F401 (fixtures)


def dict_tokens(tokens):
    return [[{"w": w, "p": p} for w, p in sentence] for sentence in tokens]


def ranked_by_hand(*corpora):
    """Attribute strings most frequent first, ties to the first occurrence."""
    counts, first = {}, {}
    for corpus in corpora:
        for sentence in corpus:
            for token in sentence:
                for name, value in token.items():
                    a = f"{name}:{value}"  # python-crfsuite naming
                    first.setdefault(a, len(first))
                    counts[a] = counts.get(a, 0) + 1
    return sorted(counts, key=lambda a: (-counts[a], first[a])), counts


@pytest.mark.parametrize("min_freq,max_features", [(1, 1), (1, 7), (2, 5), (3, 10**6)])
def test_frequency_order_keeps_the_most_frequent(min_freq, max_features):
    rng = np.random.default_rng(min_freq)
    counts = rng.integers(0, 6, size=40)
    expected = sorted((i for i in range(40) if counts[i] >= min_freq),
                      key=lambda i: (-counts[i], i))[:max_features]
    assert frequency_order(counts, min_freq, max_features).tolist() == expected
    frozen = AttributeCounts([f"a{i}" for i in range(40)], counts).freeze(min_freq,
                                                                          max_features)
    assert frozen.attributes == [f"a{i}" for i in expected]


def test_crf_keeps_max_features_attributes():
    X, y = generate_hmm_corpus(60, seed=5)
    X = dict_tokens(X)
    ranked, counts = ranked_by_hand(X)
    k = len(ranked) // 3
    m = CRF(max_features=k, max_iterations=5, verbose=False, n_threads=1).fit(X, y)
    assert m.extractor_.attributes_ == ranked[:k]
    # the model predicts with its bounded vocabulary (attributes cut are ignored)
    assert [len(p) for p in m.predict(X[:5])] == [len(s) for s in X[:5]]
    both = CRF(max_features=k, min_freq=3, max_iterations=2, verbose=False, n_threads=1)
    both.fit(X, y)
    assert both.extractor_.attributes_ == [a for a in ranked if counts[a] >= 3][:k]
    # a bound above the vocabulary changes nothing: the same model, bit for bit
    plain = CRF(max_iterations=5, verbose=False, n_threads=1).fit(X, y)
    big = CRF(max_features=10 * len(ranked), max_iterations=5, verbose=False,
              n_threads=1).fit(X, y)
    assert big.extractor_.attributes_ == plain.extractor_.attributes_
    np.testing.assert_array_equal(big.coef_, plain.coef_)


def test_max_features_bounds_the_unlabeled_vocabulary_too():
    X, y = generate_hmm_corpus(20, seed=6)
    U, _ = generate_hmm_corpus(80, seed=7)
    X, U = dict_tokens(X), dict_tokens(U)
    ranked, _ = ranked_by_hand(X, U)
    m = CRF(max_features=25, entropy_weight=0.01, max_iterations=3, verbose=False,
            n_threads=1).fit(X, y, X_unlabeled=U)
    assert m.feature_set_ == "dense"
    assert m.extractor_.attributes_ == ranked[:25]
    assert len(m.label_ids_) == 25 * len(m.classes_)


@pytest.mark.parametrize("bad", [0, -3, 2.5, "10"])
def test_bad_max_features_is_refused(bad):
    X, y = generate_hmm_corpus(5, seed=1)
    with pytest.raises(SscrfError, match="max_features"):
        CRF(max_features=bad, verbose=False).fit(dict_tokens(X), y)


def test_cli_max_features(capsys, data, tmp_path):
    code, _, err = run(capsys, "train", data["train"], "-m", tmp_path / "m.model",
                       "--max-features", "40", "--max-iterations", "2", "--quiet")
    assert code == 0, err
    assert len(CRF.load(tmp_path / "m.model").extractor_.attributes_) == 40
    code, _, err = run(capsys, "train", data["train"], "-m", tmp_path / "m.model",
                       "--max-features", "0")
    assert code == 2 and "--max-features" in err

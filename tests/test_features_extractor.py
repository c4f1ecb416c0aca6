"""sscrf.features.extractor: FeatureExtractor.

The vocabulary (frequency order, min_freq), the CSR layout, empty and bad
corpora, state round trips, the package example.
"""

import json

import numpy as np
import pytest

from sscrf.errors import SscrfError
from sscrf.features import FeatureExtractor, default_templates
from features_common import check_csr_layout, csr_rows


# ---------------------------------------------------------------------------
# Vocabulary and CSR
# ---------------------------------------------------------------------------


def test_vocabulary_by_frequency_then_first_occurrence():
    fx = FeatureExtractor()
    fx.fit([[{"b": 1, "a": 1}, {"c": 1, "a": 1}]], [[{"d": 1, "b": 1}, {"d": 1, "a": 1}]])
    # tokens per attribute over both corpora: a 3, b 2, d 2, c 1
    assert fx.attributes_ == ["a", "b", "d", "c"]
    assert fx.attribute_index() == {"a": 0, "b": 1, "d": 2, "c": 3}
    f = fx.transform([[{"c": 1.0, "b": 2.0, "a": 3.0}]])
    assert f.indices.tolist() == [0, 1, 3] and f.values.tolist() == [3.0, 2.0, 1.0]


def test_min_freq_counts_tokens_over_all_corpora():
    labeled = [[{"w": "x"}, {"w": "y"}]]
    unlabeled = [[{"w": "x"}], [{"w": "z", "also": "z"}]]
    # Within one token a repeated attribute counts once.
    repeated = [[{"w": "q", "w:q": 1.0}]]
    fx = FeatureExtractor(min_freq=2)
    f_lab, f_unl, f_rep = fx.fit_transform(labeled, unlabeled, repeated)
    assert fx.attributes_ == ["w:x"]
    assert [f.n_attributes for f in (f_lab, f_unl, f_rep)] == [1, 1, 1]
    assert csr_rows(f_lab, fx.attributes_) == [{"w:x": 1.0}, {}]
    assert csr_rows(f_unl, fx.attributes_) == [{"w:x": 1.0}, {}]
    # fit alone gives the same vocabulary; transform then agrees with fit_transform.
    again = FeatureExtractor(min_freq=2).fit(labeled, unlabeled, repeated)
    assert again.attributes_ == fx.attributes_
    corpora = (labeled, unlabeled, repeated)
    for got, want in zip(map(again.transform, corpora), (f_lab, f_unl, f_rep)):
        for a, b in zip(got[:4], want[:4]):
            np.testing.assert_array_equal(a, b)


def test_unseen_attributes_are_ignored_at_transform():
    fx = FeatureExtractor(["U00:%x[0,0]"]).fit([[["a"], ["b"]]])
    f = fx.transform([[["b"], ["new"], ["a"]]])
    check_csr_layout(f)
    assert csr_rows(f, fx.attributes_) == [{"U00:b": 1.0}, {}, {"U00:a": 1.0}]


def test_duplicate_attributes_in_a_token_are_summed():
    fx = FeatureExtractor(["U00:%x[0,0]", "U00:%x[0,0]", "U01:%x[0,0]"])
    (f,) = fx.fit_transform([[["a"]]])
    assert csr_rows(f, fx.attributes_) == [{"U00:a": 2.0, "U01:a": 1.0}]
    fd = FeatureExtractor()
    (g,) = fd.fit_transform([[{"a": "b", "a:b": 1.5, "s": ["t", "t"]}]])
    assert csr_rows(g, fd.attributes_) == [{"a:b": 2.5, "s:t": 2.0}]
    check_csr_layout(f)
    check_csr_layout(g)


def test_csr_layout_and_empty_sentences():
    fx = FeatureExtractor(["U00:%x[0,0]", "U01:%x[-1,0]/%x[0,0]", "U02:bias"])
    corpus = [[], [["z"], ["a"], ["z"]], [], [["a"]], []]
    (f,) = fx.fit_transform(corpus)
    check_csr_layout(f)
    assert f.n_sentences == 5 and f.n_tokens == 4
    np.testing.assert_array_equal(f.offsets, [0, 0, 3, 3, 4, 4])
    np.testing.assert_array_equal(f.indptr, [0, 3, 6, 9, 12])
    assert f.n_attributes == len(fx.attributes_)
    g = fx.transform([[], []])
    check_csr_layout(g)
    assert (g.n_sentences, g.n_tokens, g.nnz) == (2, 0, 0)


def test_empty_corpus():
    for fx in (FeatureExtractor(["U00:%x[0,0]"]), FeatureExtractor()):
        (f,) = fx.fit_transform([])
        check_csr_layout(f)
        assert (f.n_sentences, f.n_tokens, f.n_attributes) == (0, 0, 0)
        assert fx.attributes_ == []
        g = fx.transform([[]])
        assert (g.n_sentences, g.n_tokens, g.nnz) == (1, 0, 0)


@pytest.mark.parametrize(
    "X, message",
    [
        ("not a corpus", r"X must be a list of sentences, not str"),
        ({"a": 1}, r"X must be a list of sentences, not dict"),
        ([[["a"]], "abc"], r"sentence 1: a sentence must be a list or tuple of tokens, not str"),
        ([[["a"]], {"w": "a"}], r"sentence 1: a sentence must be .* not dict"),
        ([["a", "b"]], r"sentence 0, token 0: with templates a token must be a list"),
    ],
)
def test_bad_corpus_shapes_are_named(X, message):
    fx = FeatureExtractor(["U00:%x[0,0]"])
    with pytest.raises(SscrfError, match=message):
        fx.fit(X)


def test_usage_errors():
    with pytest.raises(SscrfError, match="not fitted"):
        FeatureExtractor().transform([])
    with pytest.raises(SscrfError, match="at least one corpus"):
        FeatureExtractor().fit()
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(SscrfError, match="min_freq"):
            FeatureExtractor(min_freq=bad)
    with pytest.raises(SscrfError, match="templates must be"):
        FeatureExtractor(templates=3)


def test_state_round_trip_gives_identical_transform():
    train = [[["He", "PRP"], ["reckons", "VBZ"]], [["the", "DT"], ["current", "JJ"]]]
    test = [[["the", "DT"], ["deficit", "NN"]], []]
    for fx, corpus_train, corpus_test in [
        (FeatureExtractor(default_templates(2), min_freq=1), train, test),
        (
            FeatureExtractor(min_freq=2),
            [[{"w": w, "n": 0.5} for w, _ in s] for s in train + train],
            [[{"w": w, "n": 0.5} for w, _ in s] for s in test],
        ),
    ]:
        fx.fit(corpus_train)
        state = json.loads(json.dumps(fx.to_state()))
        restored = FeatureExtractor.from_state(state)
        assert restored.attributes_ == fx.attributes_
        assert restored.n_columns_ == fx.n_columns_
        a, b = fx.transform(corpus_test), restored.transform(corpus_test)
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize(
    "change",
    [
        {"attributes": ["a", "a"]},
        {"attributes": "a"},
        {"min_freq": 0},
        {"templates": "U00:%x[0,0]"},
        {"templates": ["B01:%x[0,0]", "U00:%x[0,0]"]},
        {"n_columns": -1},
        {"extra": 1},
    ],
)
def test_bad_state_is_rejected(change):
    state = FeatureExtractor(["U00:%x[0,0]"]).fit([[["a"]]]).to_state()
    state.update(change)
    with pytest.raises(SscrfError):
        FeatureExtractor.from_state(state)


def test_module_example():
    import doctest

    import sscrf.features

    assert doctest.testmod(sscrf.features).failed == 0

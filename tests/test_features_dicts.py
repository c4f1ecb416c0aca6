"""sscrf.features.dicts: how each kind of feature-dict value becomes attributes; bad tokens."""

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sscrf.errors import SscrfError
from sscrf.features import FeatureExtractor
from features_common import check_csr_layout, csr_rows, summed


# ---------------------------------------------------------------------------
# Feature dicts
# ---------------------------------------------------------------------------


def test_dict_feature_values():
    token = {
        "w": "the",
        "n": 2,
        "x": -0.5,
        "upper": True,
        "title": False,
        "suffixes": ["he", "e"],
        "tags": {"b", "a"},
        "ctx": {"w": "cat", "len": 3, "deep": {"k": True}},
        "f32": np.float32(0.25),
        "i64": np.int64(4),
        "nb": np.bool_(True),
    }
    fx = FeatureExtractor()
    assert fx.attribute_strings([token]) == [
        [
            ("w:the", 1.0),
            ("n", 2.0),
            ("x", -0.5),
            ("upper", 1.0),
            ("suffixes:he", 1.0),
            ("suffixes:e", 1.0),
            ("tags:a", 1.0),
            ("tags:b", 1.0),
            ("ctx:w:cat", 1.0),
            ("ctx:len", 3.0),
            ("ctx:deep:k", 1.0),
            ("f32", 0.25),
            ("i64", 4.0),
            ("nb", 1.0),
        ]
    ]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, np.float64("nan")])
def test_non_finite_dict_value_names_sentence_token_and_feature(bad):
    corpus = [[{"a": 1.0}], [{"a": 1.0}, {"ok": "x", "score": bad}]]
    with pytest.raises(SscrfError, match=r"sentence 1, token 1: feature score has non-finite"):
        FeatureExtractor().fit(corpus)


@pytest.mark.parametrize(
    "token, message",
    [
        ({"a": None}, r"feature a has a value of type NoneType"),
        ({"a": {"b": object()}}, r"feature a:b has a value of type object"),
        ({"a": ["x", 1]}, r"feature a: list items must be strings"),
        ({1: "x"}, r"feature name 1 is not a string"),
        (["w", 2], r"a token given as a list holds attribute strings \(python-crfsuite's form"),
        ("word", r"a token must be a feature dict or a list of attribute strings .*not str "
                 r"\('word'\); a sentence is a list of tokens"),
        (3.5, r"a token must be a feature dict or a list of attribute strings .*not float"),
    ],
)
def test_bad_dict_tokens(token, message):
    with pytest.raises(SscrfError, match=r"sentence 0, token 0: " + message):
        FeatureExtractor().fit([[token]])


def test_overflowing_dict_values_are_rejected():
    with pytest.raises(SscrfError, match=r"sentence 0, token 0: feature a: integer value too"):
        FeatureExtractor().fit([[{"a": 10**400}]])
    token = {"x": {"y": 1e308}, "x:y": 1e308}
    with pytest.raises(SscrfError, match=r"corpus 1, sentence 1, token 0: summing the values"):
        FeatureExtractor().fit([[{"a": 1.0}]], [[], [token]])
    # finite, but beyond what the lattice sums take (the core's 1e250)
    with pytest.raises(SscrfError, match=r"sentence 0, token 1: .* is 1e\+308, above 1e\+250"):
        FeatureExtractor().fit([[{"a": 1.0}, {"a": 1e308}]])
    token = {"x": {"y": 6e249}, "x:y": 6e249, "b": -1e250}
    with pytest.raises(SscrfError, match=r"token 0: .*repeats in the token\) is 1.2e\+250"):
        FeatureExtractor().fit_transform([[token]])
    FeatureExtractor().fit_transform([[{"x": 1e250, "y": -1e250}]])  # at the limit: accepted


def test_dict_token_with_templates_is_rejected():
    with pytest.raises(SscrfError, match=r"feature dicts need templates=None \(CRF's default"):
        FeatureExtractor(["U00:%x[0,0]"]).fit([[["a"], {"w": "a"}]])


dict_value = st.one_of(
    st.sampled_from(["x", "y"]),
    st.integers(-3, 3),
    st.floats(-2, 2, allow_nan=False),
    st.booleans(),
    st.lists(st.sampled_from(["x", "y"]), max_size=2),
    st.dictionaries(st.sampled_from(["k", "m"]), st.sampled_from(["x", 1.5, True]), max_size=2),
)


dict_token = st.dictionaries(st.sampled_from(["a", "b", "a=x", "c"]), dict_value, max_size=4)


@settings(max_examples=60, deadline=None)
@given(corpus=st.lists(st.lists(dict_token, max_size=4), max_size=4), min_freq=st.integers(1, 2))
def test_dict_csr_matches_attribute_strings(corpus, min_freq):
    fx = FeatureExtractor(min_freq=min_freq)
    (f,) = fx.fit_transform(corpus)
    check_csr_layout(f)
    counts = Counter(
        name for s in corpus for tok in fx.attribute_strings(s) for name in {a for a, _ in tok}
    )
    vocabulary = {a for a, k in counts.items() if k >= min_freq}
    assert set(fx.attributes_) == vocabulary
    want = [summed(tok, vocabulary) for s in corpus for tok in fx.attribute_strings(s)]
    got = csr_rows(f, fx.attributes_)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.keys() == w.keys()
        assert all(math.isclose(g[k], w[k], abs_tol=1e-12) for k in w)

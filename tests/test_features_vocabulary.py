"""The vocabulary in steps: count, merge in order, cut by min_freq, freeze; compile under it."""

import pickle

import numpy as np
import pytest

from sscrf.errors import SscrfError, SscrfTypeError
from sscrf.features import (
    AttributeCounts,
    FeatureExtractor,
    Vocabulary,
    default_templates,
    merge_counts,
)

SENTENCES = [
    [["He", "PRP"], ["reckons", "VBZ"], ["the", "DT"], ["deficit", "NN"]],
    [["the", "DT"], ["pound", "NN"]],
    [["He", "PRP"], ["left", "VBD"]],
    [],
    [["deficit", "NN"], ["the", "DT"], ["pound", "NN"], ["rose", "VBD", "extra"]],
    [["a", "DT"]],
]

DICT_SENTENCES = [
    [{"w": "the", "len": 3}, {"w": "dog", "tags": ["x", "y"]}],
    [{"w": "a", "upper": True}],
    [{"w": "the", "nested": {"k": "v"}}, {"w": "cat", "len": 0.5}],
]


def assert_same_features(a, b):
    assert a.n_attributes == b.n_attributes
    for name in ("indptr", "indices", "values", "offsets"):
        x, y = np.asarray(getattr(a, name)), np.asarray(getattr(b, name))
        assert x.dtype == y.dtype and np.array_equal(x, y), name


@pytest.mark.parametrize("min_freq", [1, 2, 3])
@pytest.mark.parametrize("cut", [0, 1, 2, 4, 6])
def test_counting_two_shards_and_merging_gives_the_one_pass_vocabulary(min_freq, cut):
    templates = default_templates(2)
    one = FeatureExtractor(templates, min_freq=min_freq)
    want = one.fit_transform(SENTENCES)[0]

    fx = FeatureExtractor(templates, min_freq=min_freq)
    counts = merge_counts([fx.count(SENTENCES[:cut]), fx.count(SENTENCES[cut:])])
    assert counts == fx.count(SENTENCES)
    assert counts == fx.count(SENTENCES[:cut]).merge(fx.count(SENTENCES[cut:]))
    vocabulary = counts.freeze(min_freq)
    assert vocabulary.attributes == one.attributes_
    assert vocabulary.n_columns == one.n_columns_
    fx.set_vocabulary(vocabulary)
    assert fx.to_state() == one.to_state()
    assert_same_features(fx.transform(SENTENCES), want)
    assert one.vocabulary() == vocabulary


@pytest.mark.parametrize("min_freq", [1, 2])
def test_dict_shards_merge_to_the_one_pass_vocabulary(min_freq):
    shards = [[s] for s in DICT_SENTENCES]
    one = FeatureExtractor(None, min_freq=min_freq)
    want = one.fit_transform(*shards)
    fx = FeatureExtractor(None, min_freq=min_freq)
    counts = merge_counts([fx.count(shard) for shard in shards])
    assert counts == fx.count(*shards) and counts.n_columns is None
    fx.set_vocabulary(counts.freeze(min_freq))
    assert fx.attributes_ == one.attributes_
    for shard, w in zip(shards, want):
        assert_same_features(fx.transform(shard), w)


def test_counts_are_tokens_per_attribute_in_first_occurrence_order():
    fx = FeatureExtractor(["U0:%x[0,0]"])
    counts = fx.count([[["b"], ["a"], ["b"]]], [[["c"], ["a"]]])
    assert counts.strings == ["U0:b", "U0:a", "U0:c"]
    assert counts.counts.tolist() == [2, 2, 1]
    assert counts.n_columns == 1
    # most frequent first, ties in order of first occurrence
    assert counts.freeze().attributes == ["U0:b", "U0:a", "U0:c"]
    assert counts.freeze(2).attributes == ["U0:b", "U0:a"]
    assert counts.frequency_order(2).tolist() == [0, 1]


def test_merge_order_decides_ties():
    a = AttributeCounts(["x", "y"], [1, 1])
    b = AttributeCounts(["y", "z"], [2, 1], n_columns=2)
    merged = merge_counts([a, b])
    assert merged.strings == ["x", "y", "z"] and merged.counts.tolist() == [1, 3, 1]
    assert merged.n_columns == 2
    assert merge_counts([b, a]).strings == ["y", "z", "x"]
    assert merged.freeze().attributes == ["y", "x", "z"]


def test_vocabulary_and_counts_check_their_input_and_pickle():
    with pytest.raises(SscrfError, match="strings but counts"):
        AttributeCounts(["x"], [1, 2])
    with pytest.raises(SscrfError, match="non-negative"):
        AttributeCounts(["x"], [-1])
    with pytest.raises(SscrfError, match="at least one"):
        merge_counts([])
    with pytest.raises(SscrfError, match="repeated"):
        Vocabulary(["x", "x"]).index()
    with pytest.raises(SscrfTypeError):
        FeatureExtractor().set_vocabulary(["x"])
    with pytest.raises(SscrfError, match="not fitted"):
        FeatureExtractor().vocabulary()
    v = Vocabulary(["a", "b"], 3)
    v.index()
    assert pickle.loads(pickle.dumps(v)) == v and len(v) == 2

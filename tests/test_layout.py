"""The parameter layout: observed pairs, every pair, the views of θ, warm-start remapping."""

import pickle

import numpy as np
import pytest

from sscrf.features import Features
from sscrf.layout import ParameterLayout


def reference_layout(features, token_labels, S):
    token_of_entry = np.repeat(np.arange(features.n_tokens, dtype=np.int64),
                               np.diff(features.indptr))
    labels = token_labels[token_of_entry]
    keep = labels >= 0
    keys = np.unique(features.indices[keep].astype(np.int64) * S + labels[keep])
    row_ptr = np.zeros(features.n_attributes + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys // S, minlength=features.n_attributes), out=row_ptr[1:])
    return row_ptr, (keys % S).astype(np.int32)


@pytest.mark.parametrize("n_attributes", [7, 1 << 21])  # presence table, sorted keys
@pytest.mark.parametrize("slice_tokens", [3, 1 << 16])
def test_observed_layout_matches_the_whole_corpus_computation(n_attributes, slice_tokens):
    rng = np.random.default_rng(n_attributes + slice_tokens)
    S, n = 9, 40
    counts = rng.integers(0, 5, size=n)
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    indices = np.concatenate([np.sort(rng.choice(min(n_attributes, 50), k, replace=False))
                              for k in counts]).astype(np.int32)
    f = Features(indptr, indices, np.ones(len(indices)), np.array([0, 10, 40]), n_attributes)
    token_labels = rng.integers(-1, S, size=n).astype(np.int32)
    got = ParameterLayout.for_feature_set(f, token_labels, S, "observed", slice_tokens)
    want = reference_layout(f, token_labels, S)
    for a, b in zip((got.row_ptr, got.label_ids), want):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    empty = Features(np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0),
                     np.zeros(1, np.int64), n_attributes)
    layout = ParameterLayout.for_feature_set(empty, np.zeros(0, np.int32), S, "observed",
                                             slice_tokens)
    assert layout.row_ptr.tolist() == [0] * (n_attributes + 1) and layout.label_ids.tolist() == []


def test_every_pair_and_its_sizes():
    layout = ParameterLayout.every_pair(4, 3)
    assert layout.row_ptr.tolist() == [0, 3, 6, 9, 12]
    assert layout.label_ids.tolist() == [0, 1, 2] * 4
    assert (layout.n_attributes, layout.n_labels, layout.n_pairs) == (4, 3, 12)
    assert layout.size == 12 + 9 + 6 == layout.core.n_parameters
    assert layout.is_every_pair
    assert not ParameterLayout(np.array([0, 2, 3]), np.array([0, 1, 1], np.int32), 2).is_every_pair
    assert not ParameterLayout(np.array([0, 2, 4]), np.array([1, 0, 0, 1], np.int32),
                               2).is_every_pair


def test_split_gives_writable_views_in_order():
    layout = ParameterLayout(np.array([0, 1, 3], np.int64), np.array([1, 0, 1], np.int32), 2)
    theta = np.arange(layout.size, dtype=np.float64)
    w, T, start, end = layout.split(theta)
    assert w.tolist() == [0, 1, 2]
    assert T.tolist() == [[3, 4], [5, 6]]
    assert start.tolist() == [7, 8] and end.tolist() == [9, 10]
    assert layout.blocks() == {"W": slice(0, 3), "T": slice(3, 7), "start": slice(7, 9),
                               "end": slice(9, 11)}
    T[1, 0] = -1
    assert theta[5] == -1
    W = layout.weight_matrix(theta)
    assert W.tolist() == [[0, 0], [1, 2]]


def test_warm_start_copies_shared_attributes_and_labels():
    # old: attributes (a, b), labels (X, Y); new: attributes (b, c), labels (Y, Z, X)
    old = ParameterLayout.every_pair(2, 2)
    old_theta = np.arange(1, old.size + 1, dtype=np.float64)  # W 1..4, T 5..8, start 9 10, end 11 12
    new = ParameterLayout(np.array([0, 2, 3], np.int64), np.array([0, 2, 1], np.int32), 3)
    theta = np.full(new.size, -7.0)
    new.warm_start(theta, old, old_theta, np.array([-1, 0]), np.array([2, 0]))
    w, T, start, end = new.split(theta)
    # b scores Y (new 0) and X (new 2): old W[b, Y] = 4, W[b, X] = 3; c is new
    assert w.tolist() == [4, 3, -7]
    assert T[np.ix_([2, 0], [2, 0])].tolist() == [[5, 6], [7, 8]]
    assert T[1].tolist() == [-7] * 3 and T[:, 1].tolist() == [-7] * 3
    assert start.tolist() == [10, -7, 9] and end.tolist() == [12, -7, 11]


def test_pickles_without_the_compiled_layout():
    layout = ParameterLayout.every_pair(3, 2)
    layout.core
    copy = pickle.loads(pickle.dumps(layout))
    assert copy.n_pairs == 6 and copy.core.n_parameters == layout.size

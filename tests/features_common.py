"""Shared by the sscrf.features tests: obviously correct references built token by token."""

from collections import defaultdict

import numpy as np

from sscrf.features import Features


def csr_rows(features, attributes):
    """Per-token {attribute string: value} read back from a Features."""
    rows = []
    for t in range(features.n_tokens):
        lo, hi = features.indptr[t], features.indptr[t + 1]
        rows.append(
            {attributes[i]: v for i, v in zip(features.indices[lo:hi], features.values[lo:hi])}
        )
    return rows


def summed(pairs, vocabulary=None):
    """Per-token attribute multiset as {string: summed value}, optionally restricted."""
    out = defaultdict(float)
    for name, value in pairs:
        if vocabulary is None or name in vocabulary:
            out[name] += value
    return dict(out)


def check_csr_layout(f):
    assert isinstance(f, Features)
    assert f.indptr.dtype == np.int64 and f.indptr.shape == (f.n_tokens + 1,)
    assert f.indices.dtype == np.int32 and f.values.dtype == np.float64
    assert f.offsets.dtype == np.int64 and f.offsets.shape == (f.n_sentences + 1,)
    assert f.indices.shape == f.values.shape == (f.indptr[-1],)
    assert f.indptr[0] == 0 and np.all(np.diff(f.indptr) >= 0)
    assert f.offsets[0] == 0 and f.offsets[-1] == f.n_tokens and np.all(np.diff(f.offsets) >= 0)
    assert np.all((f.indices >= 0) & (f.indices < max(f.n_attributes, 1)))
    for t in range(f.n_tokens):
        row = f.indices[f.indptr[t] : f.indptr[t + 1]]
        assert np.all(np.diff(row) > 0), "ids must be unique and ascending within a token"
